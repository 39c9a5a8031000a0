/* The queue tree: quotas, guarantees, occupancy, admission against quota,
 * decayed usage, shares and the fair order (doc/sched.md, "Quota" and
 * "Fair share"). */
#include <math.h>
#include <string.h>

#include "heap.h"
#include "sched-internal.h"

#define GS_SQ_SUM_MAX GPUSCHED_SCHED_QUOTA_MAX

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int gs_sq_init(gpusched_sched *s)
{
    s->nq = 0;
    s->res_set = gs_calloc(&s->alloc, s->nres, sizeof *s->res_set);
    return s->res_set ? 0 : GPUSCHED_ENOMEM;
}

void gs_sq_fini(gpusched_sched *s)
{
    for (uint32_t i = 0; i < s->nq; i++) {
        gs_free(&s->alloc, s->q[i].kids);
        gs_free(&s->alloc, s->q[i].pend);
    }
    gs_free(&s->alloc, s->q);
    void *arrays[] = {s->nominal, s->borrow, s->lend, s->total, s->guar, s->used, s->sumocc, s->ent, s->sument,
                      s->decayed, s->res_set};
    for (size_t i = 0; i < GS_ARRAY_LEN(arrays); i++)
        gs_free(&s->alloc, arrays[i]);
}

/* Subtree quota and guarantee of q from its children's, post order. */
static int recompute_one(gpusched_sched *s, uint32_t q, uint64_t *total)
{
    for (uint32_t r = 0; r < s->nres; r++) {
        uint64_t t = s->nominal[gs_qr(s, q, r)];
        /* Each term is at most 2^62: checking after every add never wraps. */
        for (uint32_t k = 0; k < s->q[q].nkids && t <= GS_SQ_SUM_MAX; k++)
            t += total[gs_qr(s, s->q[q].kids[k], r)];
        if (t > GS_SQ_SUM_MAX)
            return GPUSCHED_ERANGE;
        total[gs_qr(s, q, r)] = t;
    }
    return 0;
}

int gs_sq_recompute(gpusched_sched *s)
{
    s->use_epoch++; /* quotas or the tree change: admissions too */
    /* Post order without recursion: a queue's id is not ordered with its
     * children's once queues move, so walk the tree from the root. */
    uint32_t n = 0, top = 0;
    if (gs_grow(&s->alloc, (void **)&s->stack, &s->stack_cap, 2 * s->nq + 2, sizeof *s->stack))
        return GPUSCHED_ENOMEM;
    uint32_t *post = s->stack + s->nq + 1, *st = s->stack;
    st[top++] = GPUSCHED_SCHED_ROOT;
    while (top) {
        uint32_t q = st[--top];
        post[n++] = q;
        for (uint32_t k = 0; k < s->q[q].nkids; k++)
            st[top++] = s->q[q].kids[k];
    }
    /* `post` is a pre order; its reverse visits children before parents. */
    uint64_t *total = gs_calloc(&s->alloc, (size_t)s->nq * s->nres, sizeof *total);
    if (!total)
        return GPUSCHED_ENOMEM;
    for (uint32_t i = n; i-- > 0;) {
        int rc = recompute_one(s, post[i], total);
        if (rc) {
            gs_free(&s->alloc, total);
            return rc;
        }
    }
    memcpy(s->total, total, (size_t)s->nq * s->nres * sizeof *total);
    gs_free(&s->alloc, total);
    for (uint32_t i = n; i-- > 0;) {
        uint32_t q = post[i];
        for (uint32_t r = 0; r < s->nres; r++) {
            uint32_t qi = gs_qr(s, q, r);
            uint64_t below = s->q[q].nkids ? 0 : s->used[qi];
            for (uint32_t k = 0; k < s->q[q].nkids; k++)
                below += s->ent[gs_qr(s, s->q[q].kids[k], r)];
            s->sument[qi] = below;
            s->ent[qi] = below < s->total[qi] ? below : s->total[qi];
        }
    }
    for (uint32_t q = 0; q < s->nq; q++)
        for (uint32_t r = 0; r < s->nres; r++) {
            uint32_t i = gs_qr(s, q, r);
            uint64_t lendable = s->lend[i] < s->total[i] ? s->lend[i] : s->total[i];
            s->guar[i] = s->total[i] - lendable;
            s->sumocc[i] = 0;
        }
    for (uint32_t q = 1; q < s->nq; q++)
        for (uint32_t r = 0; r < s->nres; r++)
            s->sumocc[gs_qr(s, s->q[q].parent, r)] += gs_sq_occ(s, gs_qr(s, q, r));
    return 0;
}

uint32_t gs_sj_demand(const gpusched_sched *s, const gs_sj *j, uint32_t *r, uint64_t *amt)
{
    uint32_t n = 0;
    r[n] = 0;
    amt[n++] = j->qgpus;
    if (j->cls_res) {
        r[n] = j->cls_res;
        amt[n++] = j->qgpus;
    }
    for (uint32_t k = 0; j->res_amt && k < s->nres - s->res0; k++)
        if (j->res_amt[k]) {
            r[n] = s->res0 + k;
            amt[n++] = j->res_amt[k];
        }
    return n;
}

static void use_res(gpusched_sched *s, uint32_t leaf, uint32_t r, uint64_t amount, int sign)
{
    for (uint32_t q = leaf; q != GS_SQ_NONE; q = s->q[q].parent) {
        uint32_t i = gs_qr(s, q, r);
        uint64_t before = gs_sq_occ(s, i);
        s->used[i] = sign > 0 ? s->used[i] + amount : s->used[i] - amount;
        if (q == leaf)
            s->sument[i] = s->used[i];
        uint64_t ent_before = s->ent[i];
        s->ent[i] = s->sument[i] < s->total[i] ? s->sument[i] : s->total[i];
        uint32_t parent = s->q[q].parent;
        if (parent != GS_SQ_NONE) {
            uint32_t pi = gs_qr(s, parent, r);
            s->sumocc[pi] = s->sumocc[pi] - before + gs_sq_occ(s, i);
            s->sument[pi] = s->sument[pi] - ent_before + s->ent[i];
        }
    }
}

void gs_sq_use(gpusched_sched *s, const gs_sj *j, int sign)
{
    uint32_t r[GS_SJ_DEMAND_MAX];
    uint64_t amt[GS_SJ_DEMAND_MAX];
    const uint32_t n = gs_sj_demand(s, j, r, amt);
    for (uint32_t k = 0; k < n; k++)
        use_res(s, j->queue, r[k], amt[k], sign);
    s->use_epoch++;
}

/* One resource: within quota on the whole path, counting only usage
 * within quota (others' borrowing is reclaimable: nominal), else within
 * the borrowing rules (what each queue may hold, top down). */
static int admit_res(const gpusched_sched *s, const uint32_t *path, uint32_t depth, uint32_t r, uint64_t g,
                     int *nominal, gpusched_sched_wait *w)
{
    uint32_t leaf = gs_qr(s, path[0], r);
    uint64_t ent = s->used[leaf] + g;
    if (ent > s->total[leaf])
        *nominal = 0;
    /* Borrowing limits hold for every gang: an entitled gang does not push
     * an ancestor whose other children borrow past its limit. */
    for (uint32_t k = 1; k < depth && *nominal; k++) {
        uint32_t i = gs_qr(s, path[k], r);
        if (s->used[i] + g > sat_add(s->total[i], s->borrow[i]))
            *nominal = 0;
    }
    for (uint32_t k = 1; k <= depth && *nominal; k++) {
        uint32_t i = gs_qr(s, path[k], r);
        ent = s->sument[i] - s->ent[gs_qr(s, path[k - 1], r)] + ent;
        if (ent > s->total[i])
            *nominal = 0;
    }
    if (*nominal)
        return 0;
    /* path[depth] is the root: it may hold its subtree quota. */
    uint64_t cap = s->total[gs_qr(s, path[depth], r)];
    int over = 0;
    for (uint32_t k = depth + 1; k-- > 0;) {
        uint32_t q = path[k], i = gs_qr(s, q, r);
        if (k < depth) {
            uint32_t pi = gs_qr(s, path[k + 1], r);
            uint64_t siblings = s->sumocc[pi] - gs_sq_occ(s, i);
            uint64_t avail = cap > siblings ? cap - siblings : 0;
            uint64_t limit = sat_add(s->total[i], s->borrow[i]);
            cap = avail < limit ? avail : limit;
        }
        /* The deepest queue that would pass its limit is the one named. */
        if (s->used[i] + g > cap) {
            w->reason = GPUSCHED_SCHED_WAIT_QUOTA;
            w->queue = q;
            w->resource = r;
            w->used = s->used[i];
            w->requested = g;
            w->limit = cap;
            over = 1;
        }
    }
    return over;
}

int gs_sq_admit(const gpusched_sched *s, const gs_sj *j, int *nominal, gpusched_sched_wait *w)
{
    uint32_t path[GPUSCHED_SCHED_MAX_DEPTH + 1], depth = 0;
    for (uint32_t q = j->queue; q != GS_SQ_NONE; q = s->q[q].parent)
        path[depth++] = q;
    depth--;
    *nominal = 1;
    uint32_t r[GS_SJ_DEMAND_MAX];
    uint64_t amt[GS_SJ_DEMAND_MAX];
    const uint32_t n = gs_sj_demand(s, j, r, amt);
    /* GPUs always; a class or a topology resource once some queue has a
     * quota of it. */
    for (uint32_t k = 0; k < n; k++) {
        if (!gs_sq_active(s, r[k]))
            continue;
        int nom = 1;
        if (admit_res(s, path, depth, r[k], amt[k], &nom, w))
            return 1;
        *nominal = *nominal && nom;
    }
    return 0;
}

/* `a + g > b` is `g > thr(b, a)` for amounts below 2^62. */
static int64_t thr(uint64_t b, uint64_t a)
{
    if (b < a)
        return -1;
    return b - a > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(b - a);
}

/* admit_res() as thresholds, level by level in the same order. */
static void prof_fill(const gpusched_sched *s, uint32_t leafq, uint32_t r, gs_sq_prof *p)
{
    uint32_t path[GPUSCHED_SCHED_MAX_DEPTH + 1], depth = 0;
    for (uint32_t q = leafq; q != GS_SQ_NONE; q = s->q[q].parent)
        path[depth++] = q;
    depth--;
    const uint32_t leaf = gs_qr(s, path[0], r);
    int64_t nom = thr(s->total[leaf], s->used[leaf]);
    for (uint32_t k = 1; k < depth; k++) {
        const uint32_t i = gs_qr(s, path[k], r);
        const int64_t t = thr(sat_add(s->total[i], s->borrow[i]), s->used[i]);
        nom = t < nom ? t : nom;
    }
    uint64_t base = s->used[leaf];
    for (uint32_t k = 1; k <= depth; k++) {
        const uint32_t i = gs_qr(s, path[k], r);
        base = s->sument[i] - s->ent[gs_qr(s, path[k - 1], r)] + base;
        const int64_t t = thr(s->total[i], base);
        nom = t < nom ? t : nom;
    }
    p->nominal_max = nom;
    uint64_t cap = s->total[gs_qr(s, path[depth], r)];
    for (uint32_t k = depth + 1; k-- > 0;) {
        const uint32_t q = path[k], i = gs_qr(s, q, r);
        if (k < depth) {
            const uint32_t pi = gs_qr(s, path[k + 1], r);
            const uint64_t siblings = s->sumocc[pi] - gs_sq_occ(s, i);
            const uint64_t avail = cap > siblings ? cap - siblings : 0;
            const uint64_t limit = sat_add(s->total[i], s->borrow[i]);
            cap = avail < limit ? avail : limit;
        }
        p->queue[k] = q;
        p->used[k] = s->used[i];
        p->cap[k] = cap;
        p->head[k] = thr(cap, s->used[i]);
    }
    p->admit_max = p->head[0];
    for (uint32_t k = 1; k <= depth; k++)
        p->admit_max = p->head[k] < p->admit_max ? p->head[k] : p->admit_max;
    p->n = depth + 1;
    p->epoch = s->use_epoch + 1;
}

uint32_t gs_sq_prof_level(const gs_sq_prof *p, int64_t amount)
{
    uint32_t l = 0;
    while (l < p->n && amount <= p->head[l])
        l++;
    return l;
}

const gs_sq_prof *gs_sq_prof_of(gpusched_sched *s, uint32_t q, uint32_t r)
{
    gs_sq_prof *p = &s->prof[gs_qr(s, q, r)];
    if (p->epoch != s->use_epoch + 1)
        prof_fill(s, q, r, p);
    return p;
}

int gs_sq_admit_fast(gpusched_sched *s, const gs_sj *j, int *nominal, gpusched_sched_wait *w)
{
    const uint32_t r[2] = {0, j->cls_res};
    *nominal = 1;
    for (uint32_t k = 0; k < (j->cls_res ? 2u : 1u); k++) {
        if (!gs_sq_active(s, r[k]))
            continue;
        const gs_sq_prof *p = gs_sq_prof_of(s, j->queue, r[k]);
        const int64_t g = j->qgpus;
        if (g <= p->nominal_max)
            continue;
        const uint32_t l = gs_sq_prof_level(p, g);
        if (l < p->n) {
            w->reason = GPUSCHED_SCHED_WAIT_QUOTA;
            w->queue = p->queue[l];
            w->resource = r[k];
            w->used = p->used[l];
            w->requested = (uint64_t)g;
            w->limit = p->cap[l];
            return 1; /* *nominal as gs_sq_admit() leaves it then */
        }
        *nominal = 0;
    }
    return 0;
}

void gs_sq_decay(gpusched_sched *s, int64_t now)
{
    if (s->half_life == 0) {
        for (size_t i = 0, n = (size_t)s->nq * s->nres; i < n; i++)
            s->decayed[i] = (double)s->used[i];
        s->decay_time = now > s->decay_time ? now : s->decay_time;
        return;
    }
    if (now <= s->decay_time) {
        s->decay_time = now > s->decay_time ? now : s->decay_time;
        return;
    }
    size_t n = (size_t)s->nq * s->nres;
    /* Usage was constant since decay_time: the average moves towards it.
     * The difference is taken in double: decay_time starts at INT64_MIN
     * (no history, keep is 0) and int64_t subtraction would overflow. */
    double keep = exp2(-((double)now - (double)s->decay_time) / (double)s->half_life);
    for (size_t i = 0; i < n; i++)
        s->decayed[i] = (double)s->used[i] + (s->decayed[i] - (double)s->used[i]) * keep;
    s->decay_time = now;
}

static double share_of(const gpusched_sched *s, uint32_t q)
{
    double best = 0;
    for (uint32_t r = 0; r < s->nres; r++) {
        if (!gs_sq_active(s, r))
            continue;
        uint32_t i = gs_qr(s, q, r);
        double u = (double)s->used[i];
        /* Half-life 0: the decayed usage is the usage, now (the array is
         * brought to it at events and cycles only, and lags a usage that
         * changed since at the same time: a job end before the cycle, an
         * eviction in it). */
        if (s->half_life && s->decayed[i] > u)
            u = s->decayed[i];
        /* Without quota, usage itself orders (far above any quota's share). */
        double v = s->total[i] ? u / (double)s->total[i] : u * 1e12;
        if (v > best)
            best = v;
    }
    return best / (double)s->q[q].weight;
}

void gs_sq_shares(gpusched_sched *s)
{
    for (uint32_t q = 0; q < s->nq; q++)
        s->q[q].share = share_of(s, q);
}

void gs_sq_shares_path(gpusched_sched *s, uint32_t leaf)
{
    for (uint32_t q = leaf; q != GS_SQ_NONE; q = s->q[q].parent)
        s->q[q].share = share_of(s, q);
}

static bool kid_before(const uint32_t *a, const uint32_t *b, const gpusched_sched *s)
{
    const gs_sq *x = &s->q[*a], *y = &s->q[*b];
    if (x->priority != y->priority)
        return x->priority > y->priority;
    if (x->share != y->share)
        return x->share < y->share;
    return *a < *b;
}

GS_HEAP_DEFINE(kids_heap, uint32_t, const gpusched_sched *, kid_before)

/* Insertion sort first: between two orders only the shares on one path
 * move, so each list is sorted but for an element or two, and this is one
 * compare per child (a heap sort every time was a tenth of a 10k-gang
 * cycle's instructions when thousands start). A list far from sorted
 * (more shifts than 8 per child) is finished by the heap sort: the order
 * is total, so both give the same result. */
static void kids_sort(uint32_t *k, uint32_t n, const gpusched_sched *s)
{
    uint64_t shifts = 0;
    for (uint32_t i = 1; i < n; i++) {
        const uint32_t v = k[i];
        uint32_t j = i;
        for (; j > 0 && kid_before(&v, &k[j - 1], s); j--)
            k[j] = k[j - 1];
        k[j] = v;
        if ((shifts += i - j) > 8 * (uint64_t)n) {
            kids_heap_sort(k, n, s);
            return;
        }
    }
}

int gs_sq_leaf_order(gpusched_sched *s, uint32_t *n)
{
    if (gs_grow(&s->alloc, (void **)&s->order, &s->order_cap, s->nq + 1, sizeof *s->order) ||
        gs_grow(&s->alloc, (void **)&s->stack, &s->stack_cap, 2 * s->nq + 2, sizeof *s->stack))
        return GPUSCHED_ENOMEM;
    uint32_t top = 0, count = 0, *st = s->stack;
    st[top++] = GPUSCHED_SCHED_ROOT;
    while (top) {
        uint32_t q = st[--top];
        gs_sq *x = &s->q[q];
        if (!x->sub_pending)
            continue;
        if (!x->nkids) {
            s->order[count++] = q;
            continue;
        }
        kids_sort(x->kids, x->nkids, s);
        /* Pushed last first, so the first child pops first. */
        for (uint32_t k = x->nkids; k-- > 0;)
            st[top++] = x->kids[k];
    }
    *n = count;
    return 0;
}

bool gs_sj_before(const gs_sj *a, const gs_sj *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    if (a->submit != b->submit)
        return a->submit < b->submit;
    return a->id < b->id;
}

bool gs_sj_global_before(const gpusched_sched *s, uint32_t a, uint32_t b)
{
    const gs_sj *x = &s->j[a], *y = &s->j[b];
    if (s->gpend_mode == GPUSCHED_SCHED_ORDER_PRIORITY)
        return gs_sj_before(x, y);
    return x->submit != y->submit ? x->submit < y->submit : x->id < y->id;
}

static bool gbefore(const uint32_t *a, const uint32_t *b, const gpusched_sched *s)
{
    return gs_sj_global_before(s, *a, *b);
}

GS_HEAP_DEFINE(gpend, uint32_t, const gpusched_sched *, gbefore)

int gs_sq_gpend_build(gpusched_sched *s)
{
    if (gs_grow(&s->alloc, (void **)&s->gpend, &s->gpend_cap, s->npending + s->nrunning + 1, sizeof *s->gpend))
        return GPUSCHED_ENOMEM;
    uint32_t n = 0;
    for (uint32_t q = 0; q < s->nq; q++)
        for (uint32_t k = 0; k < s->q[q].npend; k++)
            s->gpend[n++] = s->q[q].pend[k];
    s->gpend_mode = s->order_mode;
    gpend_sort(s->gpend, n, s);
    s->ngpend = n;
    return 0;
}

/* Position of `slot` (or where it goes) in s->gpend. */
static uint32_t gpend_pos(const gpusched_sched *s, uint32_t slot)
{
    uint32_t lo = 0, hi = s->ngpend;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (gs_sj_global_before(s, s->gpend[mid], slot))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool gpend_kept(const gpusched_sched *s)
{
    return s->gpend_mode == s->order_mode && s->order_mode != GPUSCHED_SCHED_ORDER_FAIR;
}

int gs_sq_pend_insert(gpusched_sched *s, uint32_t slot)
{
    gs_sj *j = &s->j[slot];
    gs_sq *x = &s->q[j->queue];
    /* Room for every job of the queue, so that a requeue never allocates. */
    if (gs_grow(&s->alloc, (void **)&x->pend, &x->pend_cap, x->npend + x->nrunning + 1, sizeof *x->pend))
        return GPUSCHED_ENOMEM;
    uint32_t lo = 0, hi = x->npend;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (gs_sj_before(&s->j[x->pend[mid]], j))
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(x->pend + lo + 1, x->pend + lo, (x->npend - lo) * sizeof *x->pend);
    x->pend[lo] = slot;
    x->npend++;
    gs_sd_wake_pend(s, slot);
    if (lo < x->cursor)
        x->cursor++;
    for (uint32_t q = j->queue; q != GS_SQ_NONE; q = s->q[q].parent)
        s->q[q].sub_pending++;
    s->npending++;
    if (gpend_kept(s)) {
        if (s->ngpend + 1 > s->gpend_cap) {
            s->gpend_mode = -1; /* rebuilt by the next cycle */
        } else {
            uint32_t at = gpend_pos(s, slot);
            memmove(s->gpend + at + 1, s->gpend + at, (s->ngpend - at) * sizeof *s->gpend);
            s->gpend[at] = slot;
            s->ngpend++;
        }
    }
    return 0;
}

void gs_sq_pend_remove(gpusched_sched *s, uint32_t slot)
{
    gs_sj *j = &s->j[slot];
    gs_sq *x = &s->q[j->queue];
    uint32_t lo = 0, hi = x->npend;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (gs_sj_before(&s->j[x->pend[mid]], j))
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(x->pend + lo, x->pend + lo + 1, (x->npend - lo - 1) * sizeof *x->pend);
    x->npend--;
    if (lo < x->cursor)
        x->cursor--;
    for (uint32_t q = j->queue; q != GS_SQ_NONE; q = s->q[q].parent)
        s->q[q].sub_pending--;
    s->npending--;
    if (gpend_kept(s)) {
        uint32_t at = gpend_pos(s, slot);
        memmove(s->gpend + at, s->gpend + at + 1, (s->ngpend - at - 1) * sizeof *s->gpend);
        s->ngpend--;
    }
}
