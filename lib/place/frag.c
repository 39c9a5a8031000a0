/* The fragmentation-aware policy (GPUSCHED_POLICY_FRAG, doc/resources.md).
 *
 * A node's fragmentation F is the GPU capacity (milli-GPU) it leaves that
 * the workload's pods could not use, expected over the workload's shapes:
 * for a shape the node cannot run at all (class, a resource, too few GPUs)
 * every free milli is lost; for one it can run, the free milli of the GPUs
 * too small for one of its GPUs. A pod goes where F grows least. F's
 * differences of a fraction of a GPU are mostly noise of the workload
 * estimate, so for fractions and pods without GPUs every node within
 * GS_FRAG_BAND of the least growth is as good, and packing decides: the
 * node left with the least free GPU, then the least free resources. Whole-GPU
 * pods keep the exact least growth (ties by packing): their growth counts
 * whole GPUs taken from the shapes that need them. */
#include <string.h>

#include "place-internal.h"

/* milli-GPU: 15% of a GPU, about the smallest common fraction. */
#define GS_FRAG_BAND 150.0
#define GS_WL_MAX 1024u

typedef struct gs_nview {
    uint32_t ngpus;
    uint32_t total;             /* free milli over the node's GPUs */
    uint32_t nfull;             /* fully free GPUs */
    uint32_t maxfree;
    uint32_t cls;
    uint32_t res[GPUSCHED_MAX_RESOURCES];
    uint16_t free[GPUSCHED_MAX_NODE_GPUS];
} gs_nview;

static void view_of(const gpusched_placer *p, uint32_t n, gs_nview *v)
{
    const struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    v->ngpus = t->node_gpus[n];
    v->cls = t->node_class[n];
    for (uint32_t i = 0; i < t->nres; i++)
        v->res[i] = c->res_free[i][n];
    const uint64_t freem = c->node_free[n], shared = c->node_shared ? c->node_shared[n] : 0;
    const uint16_t *used = c->gpu_milli_used ? &c->gpu_milli_used[gs_cl_gpu_base(c, n)] : NULL;
    for (uint32_t g = 0; g < v->ngpus; g++) {
        const uint64_t bit = (uint64_t)1 << g;
        v->free[g] = (freem & bit) ? 1000 : (shared & bit) ? (uint16_t)(1000 - used[g]) : 0;
    }
}

static void view_sums(gs_nview *v)
{
    v->total = v->nfull = v->maxfree = 0;
    for (uint32_t g = 0; g < v->ngpus; g++) {
        v->total += v->free[g];
        v->nfull += v->free[g] == 1000;
        if (v->free[g] > v->maxfree)
            v->maxfree = v->free[g];
    }
}

/* The workload compiled for node_frag, rebuilt when it changes: shapes
 * in a compact array, and the distinct fractions they ask for, so that
 * the free milli a node loses to each fraction size is summed once per
 * node, not once per shape. */
typedef struct gs_cshape {
    double w;
    uint32_t res[GPUSCHED_MAX_RESOURCES];
    uint16_t milli;
    uint8_t kind;               /* 0: no GPU, 1: a fraction, 2: whole GPUs */
    uint8_t gpus;
    uint16_t need;              /* fractions: index into gs_wlc.need */
    uint8_t any_class;
    const gs_pod_shape *src;    /* its class set */
} gs_cshape;

typedef struct gs_wlc {
    uint64_t epoch;
    uint64_t *fb_fp;            /* per node: fingerprint of fb_val's state, 0: none */
    double *fb_val;             /* per node: F as it is */
    uint32_t m, nres, nneed;
    gs_cshape *s;
    uint16_t need[GS_WL_MAX];
} gs_wlc;

static int wlc_build(gpusched_placer *p)
{
    gs_wlc *c = p->wlc;
    if (!c && !(c = p->wlc = gs_calloc(&p->alloc, 1, sizeof *c)))
        return GPUSCHED_ENOMEM;
    if (c->s && c->epoch == p->wl_epoch)
        return 0;
    gs_free(&p->alloc, c->s);
    if (!(c->s = gs_calloc(&p->alloc, p->nwl ? p->nwl : 1, sizeof *c->s)))
        return GPUSCHED_ENOMEM;
    if (c->fb_fp)
        memset(c->fb_fp, 0, (size_t)p->t->nnodes * sizeof *c->fb_fp);
    c->m = p->nwl;
    c->nneed = c->nres = 0;
    /* Weights as probabilities: F is an expectation in milli-GPU, which the
     * band compares with GS_FRAG_BAND. */
    double total = 0;
    for (uint32_t i = 0; i < p->nwl; i++)
        total += p->wl[i].weight;
    for (uint32_t i = 0; i < p->nwl; i++) {
        const gs_pod_shape *w = &p->wl[i];
        gs_cshape *x = &c->s[i];
        x->w = total > 0 ? w->weight / total : 0;
        memcpy(x->res, w->res, sizeof x->res);
        if (w->nres > c->nres)
            c->nres = w->nres;
        x->milli = (uint16_t)w->milli;
        x->kind = w->milli ? 1 : w->pod_gpus ? 2 : 0;
        x->gpus = (uint8_t)w->pod_gpus;
        x->any_class = w->any_class;
        x->src = w;
        if (w->milli) {
            uint32_t k = 0;
            while (k < c->nneed && c->need[k] != w->milli)
                k++;
            if (k == c->nneed)
                c->need[c->nneed++] = (uint16_t)w->milli;
            x->need = (uint16_t)k;
        }
    }
    c->epoch = p->wl_epoch;
    return 0;
}

/* The expected free milli of node view v that the workload's pods cannot
 * use. */
static double node_frag(const gpusched_placer *p, const gs_nview *v)
{
    const gs_wlc *c = p->wlc;
    uint32_t lost[GS_WL_MAX];
    for (uint32_t k = 0; k < c->nneed; k++) {
        uint32_t l = 0;
        for (uint32_t g = 0; g < v->ngpus; g++)
            l += v->free[g] < c->need[k] ? v->free[g] : 0;
        lost[k] = l;
    }
    const uint32_t whole_lost = v->total - 1000 * v->nfull;
    double f = 0;
    for (uint32_t i = 0; i < c->m; i++) {
        const gs_cshape *x = &c->s[i];
        bool ok = x->any_class || gs_shape_class_ok(x->src, v->cls);
        for (uint32_t r = 0; r < c->nres; r++)
            ok &= x->res[r] <= v->res[r];
        uint32_t frag = v->total;
        if (ok)
            frag = x->kind == 0 ? 0
                   : x->kind == 1 ? (v->maxfree >= x->milli ? lost[x->need] : v->total)
                                  : (v->nfull >= x->gpus ? whole_lost : v->total);
        f += x->w * frag;
    }
    return f;
}

/* Free resources left, as shares of capacity, summed: the second packing key. */
static double res_left(const gpusched_placer *p, uint32_t n, const gs_nview *v)
{
    const struct gpusched_topo *t = p->t;
    double s = 0;
    for (uint32_t i = 0; i < t->nres; i++)
        if (t->node_res[i][n])
            s += (double)v->res[i] / t->node_res[i][n];
    return s;
}

typedef struct gs_cand {
    uint32_t node;
    uint32_t fits;              /* the node's state holds the pod (cached with it) */
    uint32_t milli_left;
    uint64_t mask;
    double growth;
    double res_left;
} gs_cand;

/* Everything the candidate of node n depends on: free and shared GPUs,
 * the milli held on shared ones, free resources, health (labels and
 * avoided nodes, which belong to the request, are checked afresh), as a
 * sum of independent products (a few cycles: this runs for every node of
 * every placement). A collision could only make a cached growth stale;
 * the chosen node's candidate is always recomputed, so a placement is
 * never invalid. Never 0. */
static uint64_t node_fp(const gpusched_placer *p, uint32_t n)
{
    static const uint64_t K[GPUSCHED_MAX_RESOURCES] = {
        0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull,
        0xa0761d6478bd642full, 0xe7037ed1a0b428dbull, 0x8ebc6af09c88c6e3ull, 0x589965cc75374cc3ull};
    const struct gpusched_cluster *c = p->c;
    uint64_t h = c->node_free[n] * 0xff51afd7ed558ccdull;
    if (c->nodes_not_up)
        h += (uint64_t)c->node_health[n] * 0xc4ceb9fe1a85ec53ull;
    if (c->node_shared && c->node_shared[n]) {
        h += c->node_shared[n] * 0x27d4eb2f165667c5ull;
        const uint16_t *used = &c->gpu_milli_used[gs_cl_gpu_base(c, n)];
        for (uint64_t m = c->node_shared[n]; m; m &= m - 1) {
            const uint32_t g = gs_ctz64(m);
            h += (uint64_t)used[g] * K[g & 7] * (2 * g + 1);
        }
    }
    for (uint32_t i = 0; i < p->t->nres; i++)
        h += (uint64_t)c->res_free[i][n] * K[i] * 0x2545f4914f6cdd1dull;
    return h | 1;
}

/* F of node n as it is: shared by every shape's candidates, cached by the
 * node's fingerprint when the cluster is large enough to cache at all. */
static double frag_before(const gpusched_placer *p, uint32_t n, uint64_t fp, const gs_nview *v)
{
    gs_wlc *c = p->wlc;
    if (!c->fb_fp || !fp)
        return node_frag(p, v);
    if (c->fb_fp[n] != fp) {
        c->fb_val[n] = node_frag(p, v);
        c->fb_fp[n] = fp;
    }
    return c->fb_val[n];
}

/* The best GPU choice on node n (the least growth; ties: the fullest GPU)
 * and its candidate record. */
static void node_cand(const gpusched_placer *p, const gs_pl_req *r, uint32_t n, uint64_t fp, gs_cand *out)
{
    const gs_pod_shape *s = &r->shape;
    gs_nview before, v;
    view_of(p, n, &before);
    view_sums(&before);
    v = before;
    for (uint32_t i = 0; i < s->nres; i++)
        v.res[i] -= s->res[i];
    const double f0 = frag_before(p, n, fp, &before);
    out->node = n;
    if (s->milli) {
        double best = 0;
        uint32_t best_g = 64, tried = 0;
        uint16_t seen[GPUSCHED_MAX_NODE_GPUS]; /* one GPU per free amount */
        for (uint32_t g = 0; g < v.ngpus; g++) {
            const uint16_t f = v.free[g];
            if (f < s->milli)
                continue;
            bool dup = false;
            for (uint32_t k = 0; k < tried && !dup; k++)
                dup = seen[k] == f;
            if (dup)
                continue;
            seen[tried++] = f;
            v.free[g] = (uint16_t)(f - s->milli);
            view_sums(&v);
            const double grow = node_frag(p, &v) - f0;
            v.free[g] = f;
            if (best_g == 64 || grow < best - 1e-9 || (grow <= best + 1e-9 && f < v.free[best_g])) {
                best = grow;
                best_g = g;
            }
        }
        out->growth = best;
        out->mask = (uint64_t)1 << best_g;
        out->milli_left = before.total - s->milli;
    } else {
        uint64_t mask = 0;
        for (uint32_t g = 0, k = 0; g < v.ngpus && k < s->pod_gpus; g++)
            if (v.free[g] == 1000 && (p->c->node_free[n] >> g & 1)) {
                v.free[g] = 0;
                mask |= (uint64_t)1 << g;
                k++;
            }
        view_sums(&v);
        out->growth = node_frag(p, &v) - f0;
        out->mask = mask;
        out->milli_left = v.total;
    }
    out->res_left = res_left(p, n, &v);
}

static bool packs_better(const gs_cand *a, const gs_cand *b)
{
    if (a->milli_left != b->milli_left)
        return a->milli_left < b->milli_left;
    if (a->res_left != b->res_left)
        return a->res_left < b->res_left;
    return a->node < b->node;
}

/* ---- the cache --------------------------------------------------------------- */

/* A shape's candidates, per node, as of the node state whose fingerprint
 * is stored: a placement scores only the nodes that changed since the
 * shape was last placed (usually the one the last pod went to). */
typedef struct gs_fslot {
    gs_pod_shape shape;
    uint64_t epoch;             /* wl_epoch the growths were computed in */
    uint64_t used;              /* fclock of the last use: LRU */
    uint64_t *fp;               /* per node: state fingerprint, 0: none */
    gs_cand *cand;              /* per node */
} gs_fslot;

/* Scans of fewer nodes are not cached: a rack costs less to rescore than
 * to fingerprint and store. */
#define GS_FCACHE_MIN_NODES 256u
/* Memory the cache may take: slots of nnodes entries each. */
#define GS_FCACHE_BYTES ((size_t)64 << 20)

static gs_fslot *fslot_for(gpusched_placer *p, const gs_pod_shape *s);

int gs_pl_frag_choose(gpusched_placer *p, const gs_pl_req *r, uint32_t first, uint32_t end, uint32_t *node,
                      uint64_t *mask)
{
    *node = GPUSCHED_NONE;
    if (wlc_build(p))
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    gs_fslot *slot = end - first >= GS_FCACHE_MIN_NODES ? fslot_for(p, &r->shape) : NULL;
    gs_cand *cand = NULL;
    if (!slot && !(cand = gs_arena_get(&p->arena, (size_t)(end - first) * sizeof *cand)))
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    /* Pass 1: every candidate's growth, the least of them. */
    double least = 0;
    uint32_t k = 0;
    for (uint32_t n = first; n < end; n++) {
        gs_cand *x;
        if (slot) {
            x = &slot->cand[n];
            const uint64_t fp = node_fp(p, n);
            if (slot->fp[n] != fp) {
                x->fits = gs_pl_pod_fits_state(p, r, n);
                if (x->fits)
                    node_cand(p, r, n, fp, x);
                slot->fp[n] = fp;
            }
            if (!x->fits || !gs_pl_pod_node_ok(p, r, n))
                continue;
        } else {
            if (!gs_pl_pod_node_ok(p, r, n) || !gs_pl_pod_fits_state(p, r, n))
                continue;
            x = &cand[k];
            node_cand(p, r, n, 0, x);
        }
        if (k == 0 || x->growth < least)
            least = x->growth;
        k++;
    }
    if (!k)
        return 0;
    /* Pass 2: within the band, the node that packs best. */
    const bool whole = r->shape.pod_gpus != 0;
    const double band = (whole ? 0.0 : GS_FRAG_BAND) + 1e-6 * (1.0 + (least < 0 ? -least : least));
    const gs_cand *best = NULL;
    if (slot) {
        for (uint32_t n = first; n < end; n++)
            if (slot->cand[n].fits && slot->cand[n].growth <= least + band &&
                (!best || packs_better(&slot->cand[n], best)) && gs_pl_pod_node_ok(p, r, n))
                best = &slot->cand[n];
    } else {
        for (uint32_t i = 0; i < k; i++)
            if (cand[i].growth <= least + band && (!best || packs_better(&cand[i], best)))
                best = &cand[i];
    }
    *node = best->node;
    *mask = best->mask;
    if (slot) {
        /* The chosen node's candidate afresh: its mask is the state's. */
        gs_cand now;
        if (gs_pl_pod_fits_state(p, r, *node)) {
            node_cand(p, r, *node, 0, &now);
            *mask = now.mask;
        } else {
            slot->fp[*node] = 0;
            return gs_pl_frag_choose(p, r, first, end, node, mask);
        }
    }
    return 0;
}

static bool same_shape(const gs_pod_shape *a, const gs_pod_shape *b);

static void fslot_free(gpusched_placer *p, gs_fslot *f)
{
    gs_free(&p->alloc, f->fp);
    gs_free(&p->alloc, f->cand);
    f->fp = NULL;
    f->cand = NULL;
}

/* The slot of shape s, valid for the current workload: found, or made
 * (the least recently used one reused when the cache is full). NULL when
 * out of memory: the choice is then computed without the cache. */
static gs_fslot *fslot_for(gpusched_placer *p, const gs_pod_shape *s)
{
    const uint32_t nn = p->t->nnodes;
    gs_wlc *c = p->wlc;
    if (!c->fb_fp) {
        c->fb_val = gs_malloc(&p->alloc, (size_t)nn * sizeof *c->fb_val);
        c->fb_fp = c->fb_val ? gs_calloc(&p->alloc, nn, sizeof *c->fb_fp) : NULL;
        if (!c->fb_fp) {
            gs_free(&p->alloc, c->fb_val);
            c->fb_val = NULL;
            return NULL;
        }
    }
    if (!p->max_fslots) {
        size_t per = (size_t)nn * (sizeof(uint64_t) + sizeof(gs_cand));
        size_t m = GS_FCACHE_BYTES / (per ? per : 1);
        p->max_fslots = m > 256 ? 256 : m < 1 ? 1 : (uint32_t)m;
        if (!(p->fslots = gs_calloc(&p->alloc, p->max_fslots, sizeof *p->fslots)))
            return NULL;
    }
    gs_fslot *f = NULL;
    for (uint32_t i = 0; i < p->nfslots && !f; i++)
        if (same_shape(&p->fslots[i].shape, s))
            f = &p->fslots[i];
    if (!f) {
        if (p->nfslots < p->max_fslots) {
            f = &p->fslots[p->nfslots];
            if (!(f->fp = gs_calloc(&p->alloc, nn, sizeof *f->fp)) ||
                !(f->cand = gs_malloc(&p->alloc, (size_t)nn * sizeof *f->cand))) {
                fslot_free(p, f);
                return NULL;
            }
            p->nfslots++;
        } else {
            f = &p->fslots[0];
            for (uint32_t i = 1; i < p->nfslots; i++)
                if (p->fslots[i].used < f->used)
                    f = &p->fslots[i];
            memset(f->fp, 0, (size_t)nn * sizeof *f->fp);
        }
        f->shape = *s;
        f->epoch = p->wl_epoch;
    }
    if (f->epoch != p->wl_epoch) {
        memset(f->fp, 0, (size_t)nn * sizeof *f->fp);
        f->epoch = p->wl_epoch;
    }
    f->used = ++p->fclock;
    return f;
}

void gs_pl_frag_free(gpusched_placer *p)
{
    if (p->wlc) {
        gs_free(&p->alloc, p->wlc->s);
        gs_free(&p->alloc, p->wlc->fb_fp);
        gs_free(&p->alloc, p->wlc->fb_val);
    }
    gs_free(&p->alloc, p->wlc);
    p->wlc = NULL;
    for (uint32_t i = 0; i < p->nfslots; i++)
        fslot_free(p, &p->fslots[i]);
    gs_free(&p->alloc, p->fslots);
    p->fslots = NULL;
    p->nfslots = p->max_fslots = 0;
}

/* ---- the workload ---------------------------------------------------------- */

static bool same_shape(const gs_pod_shape *a, const gs_pod_shape *b)
{
    if (a->pod_gpus != b->pod_gpus || a->milli != b->milli || a->any_class != b->any_class)
        return false;
    if (!a->any_class && memcmp(a->classes, b->classes, sizeof a->classes))
        return false;
    uint32_t n = a->nres > b->nres ? a->nres : b->nres;
    for (uint32_t i = 0; i < n; i++)
        if ((i < a->nres ? a->res[i] : 0) != (i < b->nres ? b->res[i] : 0))
            return false;
    return true;
}

static int shapes_add(gpusched_placer *p, gs_pod_shape **arr, uint32_t *n, uint32_t *cap, const gs_pod_shape *s,
                      double weight)
{
    for (uint32_t i = 0; i < *n; i++)
        if (same_shape(&(*arr)[i], s)) {
            (*arr)[i].weight += weight;
            return 0;
        }
    if (*n == GS_WL_MAX)
        return GPUSCHED_ELIMIT;
    if (gs_grow(&p->alloc, (void **)arr, cap, *n + 1, sizeof **arr))
        return GPUSCHED_ENOMEM;
    (*arr)[*n] = *s;
    (*arr)[(*n)++].weight = weight;
    return 0;
}

static int wl_add(gpusched_placer *p, const gs_pod_shape *s, double weight)
{
    return shapes_add(p, &p->wl, &p->nwl, &p->wl_cap, s, weight);
}

/* The learned counts become the workload after 1, 2, 4, ... 1024 requests,
 * then every 1024: often enough to follow a changing mix, rarely enough
 * that cached growths stay valid between refreshes. */
void gs_pl_wl_learn(gpusched_placer *p, const gs_pod_shape *s)
{
    if (shapes_add(p, &p->learn, &p->nlearn, &p->learn_cap, s, 1.0))
        return; /* a full table keeps what it learned */
    if (p->next_refresh == 0)
        p->next_refresh = 1;
    if (++p->learned < p->next_refresh)
        return;
    p->next_refresh = p->next_refresh < 1024 ? 2 * p->next_refresh : p->next_refresh + 1024;
    if (gs_grow(&p->alloc, (void **)&p->wl, &p->wl_cap, p->nlearn, sizeof *p->wl))
        return;
    memcpy(p->wl, p->learn, (size_t)p->nlearn * sizeof *p->wl);
    p->nwl = p->nlearn;
    p->wl_epoch++;
}

void gs_pl_wl_free(gpusched_placer *p)
{
    gs_free(&p->alloc, p->wl);
    gs_free(&p->alloc, p->learn);
    p->wl = p->learn = NULL;
    p->nwl = p->wl_cap = p->nlearn = p->learn_cap = 0;
    p->learned = p->next_refresh = 0;
}

GPUSCHED_API int gpusched_placer_workload_set(gpusched_placer *p, uint32_t n,
                                              const gpusched_place_request *const *shapes, const double *weights)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (n && (!shapes || !weights))
        return gs_error(&p->err, GPUSCHED_EINVAL, "workload: %s is NULL", shapes ? "weights" : "shapes");
    if (n > GS_WL_MAX)
        return gs_error(&p->err, GPUSCHED_ELIMIT, "workload: %u shapes, at most %u", n, GS_WL_MAX);
    gs_pod_shape *keep = p->wl;
    uint32_t keep_n = p->nwl, keep_cap = p->wl_cap;
    p->wl = NULL;
    p->nwl = p->wl_cap = 0;
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        gs_pl_req r;
        if (!shapes[i]) {
            rc = gs_error(&p->err, GPUSCHED_EINVAL, "workload: shape %u is NULL", i);
        } else if (!(weights[i] >= 0) || weights[i] > 1e300) {
            rc = gs_error(&p->err, GPUSCHED_EINVAL, "workload: weight %u is %g, a finite number >= 0 expected", i,
                          weights[i]);
        } else if ((rc = gs_pl_req_load(p, shapes[i], &r)) == 0) {
            if (!r.pods_path) {
                /* A whole-GPU request is a shape too: pods of pod_gpus GPUs. */
                memset(&r.shape, 0, sizeof r.shape);
                r.shape.pod_gpus = r.u0;
                r.shape.any_class = r.in.gpu_class == GPUSCHED_NONE;
                if (!r.shape.any_class)
                    r.shape.classes[r.in.gpu_class >> 6] |= (uint64_t)1 << (r.in.gpu_class & 63);
            }
            if (weights[i] > 0 && (rc = wl_add(p, &r.shape, weights[i])))
                rc = gs_error(&p->err, rc, "workload: out of memory");
        } else {
            char msg[GS_ERRMSG_MAX];
            memcpy(msg, p->err.msg, sizeof msg);
            rc = gs_error(&p->err, rc, "workload: shape %u: %s", i, msg);
        }
    }
    if (rc) {
        gs_free(&p->alloc, p->wl);
        p->wl = keep;
        p->nwl = keep_n;
        p->wl_cap = keep_cap;
        return rc;
    }
    gs_free(&p->alloc, keep);
    p->wl_fixed = n > 0;
    p->wl_epoch++;
    /* Learning starts afresh from the next request. */
    gs_free(&p->alloc, p->learn);
    p->learn = NULL;
    p->nlearn = p->learn_cap = 0;
    p->learned = p->next_refresh = 0;
    return gs_ok(&p->err);
}
