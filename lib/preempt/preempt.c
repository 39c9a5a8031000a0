/* The preemption planner: the cheapest domain's cheapest victims, found by
 * what-if searches of the placement engine with victims lent, then pruned
 * to the victims needed. doc/preempt.md has the argument. */
#include <string.h>

#include "preempt-internal.h"

typedef struct gs_pp {
    gpusched_placer *p;
    struct gpusched_cluster *c;
    gpusched_preempt_plan *plan;
    const gs_pl_req *r;
    int32_t collected;          /* variant of the entries in plan->v; INT32_MIN: none */
    bool defrag;                /* movers instead of victims (defrag.c) */
    bool done;                  /* defrag: a plan is lent and held */
} gs_pp;

static int try_moves(gs_pp *x);
static int prune(gs_pp *x);

static gs_hold *job_at(const gs_pp *x, uint32_t slot) { return &x->c->jobs.rec[slot]; }

/* ---- the lent set: a stack of job slots ---------------------------------- */

static int lend(gs_pp *x, uint32_t slot)
{
    gpusched_preempt_plan *plan = x->plan;
    if (plan->nlent == plan->lent_cap) {
        uint32_t cap = plan->lent_cap ? 2 * plan->lent_cap : 64;
        uint32_t *n = gs_realloc_array(&plan->alloc, plan->lent, cap, sizeof *n);
        if (!n)
            return GPUSCHED_ENOMEM;
        plan->lent = n;
        plan->lent_cap = cap;
    }
    plan->lent[plan->nlent++] = slot;
    gs_cluster_job_lend(x->c, job_at(x, slot));
    return 0;
}

static void unlend_to(gs_pp *x, uint32_t k)
{
    while (x->plan->nlent > k)
        gs_cluster_job_unlend(x->c, job_at(x, x->plan->lent[--x->plan->nlent]));
}

/* Lends exactly the first k entries of the domain's list. */
static int set_prefix(gs_pp *x, const gs_pp_dom *d, uint32_t k)
{
    unlend_to(x, k < x->plan->nlent ? k : x->plan->nlent);
    for (uint32_t i = x->plan->nlent; i < k; i++)
        if (lend(x, x->plan->v[d->a + i].slot))
            return GPUSCHED_ENOMEM;
    return 0;
}

/* 1 if the gang fits with what is lent now, 0 if not, or an error. */
static int fits(gs_pp *x)
{
    int rc = gs_pl_fits(x->p, x->r, x->plan->probe);
    return rc == 0 ? 1 : rc == GPUSCHED_ENOSPC ? 0 : rc;
}

static int fits_prefix(gs_pp *x, const gs_pp_dom *d, uint32_t k)
{
    int rc = set_prefix(x, d, k);
    return rc ? rc : fits(x);
}

/* ---- the domains of a scope ---------------------------------------------- */

static gs_pp_cost prefix_cost(const gs_pp *x, const gs_pp_dom *d, uint32_t k)
{
    gs_pp_cost s = {0, 0, 0};
    for (uint32_t i = 0; i < k; i++) {
        const gs_hold *h = job_at(x, x->plan->v[d->a + i].slot);
        gs_pp_cost_add(&s, h->cost_hint, h->ngpus);
    }
    return s;
}

/* Domains are visited by increasing lower bound, ties by index, from a
 * binary heap: the search usually stops at the first few, so sorting all
 * of them (thousands of racks) would be most of a small plan's cost. */
static bool dom_before(const gs_pp_dom *a, const gs_pp_dom *b)
{
    if (gs_pp_cost_less(a->lb, b->lb))
        return true;
    if (gs_pp_cost_less(b->lb, a->lb))
        return false;
    return a->dom < b->dom;
}

static void heap_down(gs_pp_dom *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t m = i, l = 2 * i + 1, r = l + 1;
        if (l < n && dom_before(&h[l], &h[m]))
            m = l;
        if (r < n && dom_before(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        gs_pp_dom t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static gs_pp_dom heap_pop(gs_pp_dom *h, uint32_t *n)
{
    gs_pp_dom top = h[0];
    h[0] = h[--*n];
    heap_down(h, *n, 0);
    return top;
}

/* The GPUs of the job's own reservation inside domain `dom`, walking its
 * pairs (ascending, as the domains are visited) from *i on. */
static uint64_t own_in(const struct gpusched_topo *t, const gs_hold *own, int32_t scope, uint32_t dom, uint32_t *i)
{
    if (!own)
        return 0;
    const uint32_t *nodes = gs_hold_nodes(own);
    const uint64_t *masks = gs_hold_masks(own);
    while (*i < own->npairs && gs_pp_scope_domain(t, scope, t->node_leaf[nodes[*i]]) < dom)
        ++*i;
    uint64_t g = 0;
    for (; *i < own->npairs && gs_pp_scope_domain(t, scope, t->node_leaf[nodes[*i]]) == dom; ++*i)
        g += gs_popcount64(masks[*i]);
    return g;
}

/* The domains whose victims could free enough GPUs by count (free GPUs
 * plus the victims' GPUs inside, plus the job's own reservation there),
 * as a heap, cheapest lower bound first. */
static int scope_domains(gs_pp *x, int32_t scope, uint32_t *ndoms)
{
    gpusched_preempt_plan *plan = x->plan;
    const struct gpusched_cluster *c = x->c;
    const gs_hold *own = gs_cluster_resv_find(c, x->r->in.job_id);
    const uint64_t G = x->r->gpus;
    uint32_t n = 0, own_i = 0;
    for (uint32_t a = 0; a < plan->nv;) {
        uint32_t b = a;
        while (b < plan->nv && plan->v[b].dom == plan->v[a].dom)
            b++;
        uint32_t dom = plan->v[a].dom;
        uint64_t have = own_in(c->topo, own, scope, dom, &own_i) +
                        (scope < 0 ? c->root_free_gpus : c->agg[scope].free_gpus[dom]);
        uint32_t k0 = 0;
        while (have < G && a + k0 < b)
            have += plan->v[a + k0++].gpus;
        if (have >= G) {
            if (n == plan->doms_cap) {
                uint32_t cap = plan->doms_cap ? 2 * plan->doms_cap : 64;
                gs_pp_dom *d = gs_realloc_array(&plan->alloc, plan->doms, cap, sizeof *d);
                if (!d)
                    return GPUSCHED_ENOMEM;
                plan->doms = d;
                plan->doms_cap = cap;
            }
            gs_pp_dom d = {dom, a, b, k0 ? k0 : 1, {0, 0, 0}};
            d.lb = prefix_cost(x, &d, k0);
            plan->doms[n++] = d;
        }
        a = b;
    }
    for (uint32_t i = n / 2; i-- > 0;)
        heap_down(plan->doms, n, i);
    *ndoms = n;
    return 0;
}

/* The shortest feasible prefix of a domain's list, from k0 on: galloping,
 * then bisection (lending more never makes a gang fit less). *k = 0: none. */
static int shortest_prefix(gs_pp *x, const gs_pp_dom *d, uint32_t *k)
{
    const uint32_t n = d->b - d->a;
    uint32_t bad = d->k0 - 1, good = 0, step = 1;
    for (uint32_t t = d->k0;; t = t + step < n ? t + step : n, step *= 2) {
        int rc = fits_prefix(x, d, t);
        if (rc < 0)
            return rc;
        if (rc) {
            good = t;
            break;
        }
        bad = t;
        if (t == n)
            break;
    }
    while (good && good - bad > 1) {
        uint32_t mid = bad + (good - bad) / 2;
        int rc = fits_prefix(x, d, mid);
        if (rc < 0)
            return rc;
        if (rc)
            good = mid;
        else
            bad = mid;
    }
    *k = good;
    return 0;
}

/* A scope and an order, as one number (for `collected`). */
static int32_t variant(int32_t scope, bool by_rack) { return scope * 2 + by_rack; }

static int collect(gs_pp *x, int32_t scope, bool by_rack)
{
    if (x->collected == variant(scope, by_rack))
        return 0;
    int rc = gs_pp_collect(x->plan, x->c, x->r, scope, by_rack, x->defrag);
    x->collected = rc ? INT32_MIN : variant(scope, by_rack);
    return rc;
}

typedef struct gs_pp_best {
    bool found;
    bool by_rack;
    int32_t scope;
    uint32_t dom, k;
    gs_pp_cost cost;
} gs_pp_best;

/* Branch and bound over the scope's domains: a domain whose lower bound
 * cannot beat the best plan found is not searched. */
static int search_scope(gs_pp *x, int32_t scope, bool by_rack, gs_pp_best *best)
{
    uint32_t ndoms;
    int rc = collect(x, scope, by_rack);
    if (rc || (rc = scope_domains(x, scope, &ndoms)))
        return rc;
    while (ndoms) {
        const gs_pp_dom d = heap_pop(x->plan->doms, &ndoms);
        if (best->found && !gs_pp_cost_less(d.lb, best->cost))
            break;
        uint32_t k = 0;
        rc = shortest_prefix(x, &d, &k);
        if (!rc && k && x->defrag) {
            /* The first domain whose movers can all go elsewhere wins. */
            rc = set_prefix(x, &d, k);
            if (!rc)
                rc = prune(x);
            if (!rc) {
                int moved = try_moves(x);
                if (moved == 1) {
                    x->done = true;
                    return 0;
                }
                rc = moved;
            } else if (rc == GPUSCHED_ENOSPC) {
                rc = 0;
            }
            k = 0;
        }
        unlend_to(x, 0);
        if (rc < 0)
            return rc;
        if (!k)
            continue;
        gs_pp_cost cost = prefix_cost(x, &d, k);
        if (!best->found || gs_pp_cost_less(cost, best->cost))
            *best = (gs_pp_best){true, by_rack, scope, d.dom, k, cost};
    }
    return 0;
}

/* ---- pruning ------------------------------------------------------------- */

/* Whether the probe's placement uses a GPU of job h. */
static bool placement_uses(const gpusched_place_result *probe, const gs_hold *h)
{
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++) {
        uint32_t lo = 0, hi = probe->n;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (probe->nodes[mid] < nodes[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < probe->n && probe->nodes[lo] == nodes[i] && (probe->masks[lo] & masks[i]))
            return true;
    }
    return false;
}

static void drop_lent_at(gs_pp *x, uint32_t i)
{
    gpusched_preempt_plan *plan = x->plan;
    gs_cluster_job_unlend(x->c, job_at(x, plan->lent[i]));
    memmove(&plan->lent[i], &plan->lent[i + 1], (plan->nlent - i - 1) * sizeof *plan->lent);
    plan->nlent--;
}

/* Most expensive first: the victims most worth sparing are tried first. */
static bool spare_before(const gs_hold *a, const gs_hold *b)
{
    if (a->cost_hint != b->cost_hint)
        return a->cost_hint > b->cost_hint;
    if (a->ngpus != b->ngpus)
        return a->ngpus > b->ngpus;
    return a->id > b->id;
}

/* Insertion sort: at most GPUSCHED_PREEMPT_PRUNE_MAX slots. */
static void sort_spare_first(gs_pp *x)
{
    uint32_t *s = x->plan->lent;
    for (uint32_t i = 1; i < x->plan->nlent; i++) {
        uint32_t v = s[i], j = i;
        for (; j > 0 && spare_before(job_at(x, v), job_at(x, s[j - 1])); j--)
            s[j] = s[j - 1];
        s[j] = v;
    }
}

/* Drops the lent victims the gang does not need: first those its placement
 * does not touch (the same placement stays valid without them), then, for
 * small plans, each victim whose absence still lets the gang fit. */
static int prune(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    int rc = fits(x);
    if (rc <= 0)
        return rc < 0 ? rc : GPUSCHED_ENOSPC;
    for (uint32_t i = plan->nlent; i-- > 0;)
        if (!placement_uses(plan->probe, job_at(x, plan->lent[i])))
            drop_lent_at(x, i);
    if (plan->nlent > GPUSCHED_PREEMPT_PRUNE_MAX)
        return 0;
    sort_spare_first(x);
    for (uint32_t i = 0; i < plan->nlent;) {
        gs_hold *h = job_at(x, plan->lent[i]);
        gs_cluster_job_unlend(x->c, h);
        rc = fits(x);
        if (rc < 0)
            return rc;
        if (rc) {
            memmove(&plan->lent[i], &plan->lent[i + 1], (plan->nlent - i - 1) * sizeof *plan->lent);
            plan->nlent--;
        } else {
            gs_cluster_job_lend(x->c, h);
            i++;
        }
    }
    return 0;
}

/* ---- the plan and its execution ------------------------------------------ */

/* Heap sort in place: no allocation outside the plan's allocator. */
static void sift_ids(uint64_t *a, uint32_t n, uint32_t i)
{
    for (uint32_t m; (m = 2 * i + 1) < n; i = m) {
        if (m + 1 < n && a[m + 1] > a[m])
            m++;
        if (a[i] >= a[m])
            return;
        uint64_t t = a[i];
        a[i] = a[m];
        a[m] = t;
    }
}

static void sort_ids(uint64_t *a, uint32_t n)
{
    for (uint32_t i = n / 2; i-- > 0;)
        sift_ids(a, n, i);
    for (uint32_t end = n; end > 1; end--) {
        uint64_t t = a[0];
        a[0] = a[end - 1];
        a[end - 1] = t;
        sift_ids(a, end - 1, 0);
    }
}

static int record_victims(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    if (plan->nlent > plan->cap) {
        uint64_t *ids = gs_realloc_array(&plan->alloc, plan->ids, plan->nlent, sizeof *ids);
        if (!ids)
            return GPUSCHED_ENOMEM;
        plan->ids = ids;
        plan->cap = plan->nlent;
    }
    gs_pp_cost s = {0, 0, 0};
    for (uint32_t i = 0; i < plan->nlent; i++) {
        const gs_hold *h = job_at(x, plan->lent[i]);
        plan->ids[i] = h->id;
        gs_pp_cost_add(&s, h->cost_hint, h->ngpus);
    }
    sort_ids(plan->ids, plan->nlent);
    plan->n = plan->nlent;
    plan->cost = s.cost;
    plan->gpus = s.gpus;
    return 0;
}

/* The commit's step between its allocations and its application: the
 * victims go (their GPUs are free already, being lent). */
static void release_victims(void *ctx)
{
    gs_pp *x = ctx;
    for (uint32_t i = 0; i < x->plan->nlent; i++)
        gs_cluster_job_drop(x->c, job_at(x, x->plan->lent[i]));
    x->plan->nlent = 0;
}

static int place_final(gs_pp *x, gpusched_place_result *res)
{
    x->p->before_commit = release_victims;
    x->p->before_commit_ctx = x;
    int rc = gs_pl_place_loaded(x->p, x->r, res);
    x->p->before_commit = NULL;
    x->p->before_commit_ctx = NULL;
    return rc;
}

/* Every eligible victim lent: if the gang fits then, a plan exists. */
static int lend_all_eligible(gs_pp *x)
{
    int rc = collect(x, -1, false);
    for (uint32_t i = 0; !rc && i < x->plan->nv; i++)
        rc = lend(x, x->plan->v[i].slot);
    return rc;
}

/* Why the gang does not fit even with every eligible victim gone. */
static int explain_failure(gs_pp *x, gpusched_place_result *res)
{
    gs_pl_req plan_only = *x->r;
    plan_only.in.flags &= ~GPUSCHED_PLACE_COMMIT;
    x->r = &plan_only;
    int rc = gs_pl_place_loaded(x->p, x->r, res);
    return rc == 0 ? GPUSCHED_ENOSPC : rc;
}

static int plan_and_place(gs_pp *x, gpusched_place_result *res)
{
    int rc = fits(x);
    if (rc < 0)
        return rc;
    if (rc)
        return place_final(x, res); /* no victim needed */
    /* The variants tried, the first found winning ties: the scope is the
     * required level, or for a gang without one each lowest-level domain
     * (when one can hold it) and the whole cluster; above the lowest
     * level, victims by rack, and for a gang a rack can hold, by cost
     * alone too (a small gang needs the cheapest jobs, not a cheap rack). */
    gs_pp_best best = {0};
    const int32_t leaf = (int32_t)x->p->nlevels - 1;
    const bool small = x->r->gpus <= x->p->max_dom_gpus[LV(leaf)];
    const int32_t scope = x->r->in.required_level != GPUSCHED_NONE ? (int32_t)x->r->in.required_level : -1;
    if (scope < 0 && small)
        rc = search_scope(x, leaf, false, &best);
    if (!rc && scope != leaf)
        rc = search_scope(x, scope, true, &best);
    if (!rc && (small || scope == leaf))
        rc = search_scope(x, scope, false, &best);
    if (rc)
        return rc;
    if (best.found) {
        if ((rc = collect(x, best.scope, best.by_rack)))
            return rc;
        uint32_t i = 0;
        while (x->plan->v[i].dom != best.dom)
            i++;
        gs_pp_dom d = {best.dom, i, i, 0, {0, 0, 0}};
        rc = set_prefix(x, &d, best.k);
    } else {
        /* The domain search is complete by construction; this is the
         * guarantee that stays true whatever the order above. */
        rc = lend_all_eligible(x);
        if (!rc && (rc = fits(x)) == 0)
            return explain_failure(x, res);
        rc = rc < 0 ? rc : 0;
    }
    if (rc || (rc = prune(x)) || (rc = record_victims(x)))
        return rc;
    return place_final(x, res);
}

/* ---- defragmentation ------------------------------------------------------ */

static int grow(const gs_alloc *a, void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c = c > UINT32_MAX / 2 ? need : 2 * c;
    void *n = gs_realloc_array(a, *arr, c, elem);
    if (!n)
        return GPUSCHED_ENOMEM;
    *arr = n;
    *cap = c;
    return 0;
}

/* GPUs claimed for a planned placement without a job (claim 0: given
 * back), so that the next search sees them taken. */
static void hold(gs_pp *x, uint32_t n, const uint32_t *nodes, const uint64_t *masks, int claim)
{
    gs_cluster_nodes_set(x->c, n, nodes, masks, claim, GS_HOLDER_KEEP);
}

static void unhold_all(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    for (uint32_t i = plan->nmoves; i-- > 0;) {
        uint32_t a = plan->move_off[i];
        hold(x, plan->move_off[i + 1] - a, plan->move_nodes + a, plan->move_masks + a, 0);
    }
    plan->nmoves = 0;
    plan->move_pairs = 0;
    if (plan->ngang)
        hold(x, plan->ngang, plan->gang_nodes, plan->gang_masks, 0);
    plan->ngang = 0;
}

/* The probe's placement appended as move `id` (or, id 0 and gang, kept
 * as the gang's), then held. */
static int keep_probe(gs_pp *x, bool gang, uint64_t id)
{
    gpusched_preempt_plan *plan = x->plan;
    const gpusched_place_result *pr = plan->probe;
    const gs_alloc *a = &plan->alloc;
    uint32_t cap;
    if (gang) {
        cap = plan->gang_cap;
        if (grow(a, (void **)&plan->gang_nodes, &cap, pr->n, sizeof *plan->gang_nodes))
            return GPUSCHED_ENOMEM;
        cap = plan->gang_cap;
        if (grow(a, (void **)&plan->gang_masks, &cap, pr->n, sizeof *plan->gang_masks))
            return GPUSCHED_ENOMEM;
        plan->gang_cap = cap;
        memcpy(plan->gang_nodes, pr->nodes, pr->n * sizeof *pr->nodes);
        memcpy(plan->gang_masks, pr->masks, pr->n * sizeof *pr->masks);
        plan->ngang = pr->n;
        hold(x, pr->n, pr->nodes, pr->masks, 1);
        return 0;
    }
    uint32_t need = plan->move_pairs + pr->n;
    cap = plan->move_pairs_cap;
    if (grow(a, (void **)&plan->move_nodes, &cap, need, sizeof *plan->move_nodes))
        return GPUSCHED_ENOMEM;
    cap = plan->move_pairs_cap;
    if (grow(a, (void **)&plan->move_masks, &cap, need, sizeof *plan->move_masks))
        return GPUSCHED_ENOMEM;
    plan->move_pairs_cap = cap;
    if (grow(a, (void **)&plan->move_ids, &plan->moves_cap, plan->nmoves + 1, sizeof *plan->move_ids) ||
        grow(a, (void **)&plan->move_off, &plan->off_cap, plan->nmoves + 2, sizeof *plan->move_off))
        return GPUSCHED_ENOMEM;
    memcpy(plan->move_nodes + plan->move_pairs, pr->nodes, pr->n * sizeof *pr->nodes);
    memcpy(plan->move_masks + plan->move_pairs, pr->masks, pr->n * sizeof *pr->masks);
    plan->move_off[plan->nmoves] = plan->move_pairs;
    plan->move_ids[plan->nmoves++] = id;
    plan->move_pairs = need;
    plan->move_off[plan->nmoves] = need;
    hold(x, pr->n, pr->nodes, pr->masks, 1);
    return 0;
}

/* Largest movers first (they are the hardest to place), then by id. */
static bool move_before(const gs_hold *a, const gs_hold *b)
{
    return a->ngpus != b->ngpus ? a->ngpus > b->ngpus : a->id < b->id;
}

static void sift_movers(gs_pp *x, uint32_t *s, uint32_t n, uint32_t i)
{
    for (uint32_t m; (m = 2 * i + 1) < n; i = m) {
        if (m + 1 < n && move_before(job_at(x, s[m]), job_at(x, s[m + 1])))
            m++;
        if (!move_before(job_at(x, s[i]), job_at(x, s[m])))
            return;
        uint32_t t = s[i];
        s[i] = s[m];
        s[m] = t;
    }
}

static void sort_movers(gs_pp *x)
{
    uint32_t *s = x->plan->lent, n = x->plan->nlent;
    for (uint32_t i = n / 2; i-- > 0;)
        sift_movers(x, s, n, i);
    for (uint32_t end = n; end > 1; end--) {
        uint32_t t = s[0];
        s[0] = s[end - 1];
        s[end - 1] = t;
        sift_movers(x, s, end - 1, 0);
    }
}

/* With the movers lent: the gang's placement held, then each mover placed
 * with its shape and held. 1 when every mover has a place (all held), 0
 * when one has none (nothing held), or an error. */
static int try_moves(gs_pp *x)
{
    int rc = fits(x);
    if (rc <= 0)
        return rc;
    if ((rc = keep_probe(x, true, 0)))
        return rc;
    sort_movers(x);
    for (uint32_t i = 0; i < x->plan->nlent; i++) {
        const gs_hold *h = job_at(x, x->plan->lent[i]);
        gpusched_place_request q;
        gs_pp_shape(x->c, h, &q);
        gs_pl_req r;
        rc = gs_pl_req_load(x->p, &q, &r);
        if (!rc)
            rc = gs_pl_fits(x->p, &r, x->plan->probe);
        if (!rc)
            rc = keep_probe(x, false, h->id);
        if (rc) {
            unhold_all(x);
            return rc == GPUSCHED_ENOSPC ? 0 : rc;
        }
    }
    return 1;
}

static void record_moves(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    gs_pp_cost s = {0, 0, 0};
    for (uint32_t i = 0; i < plan->nlent; i++) {
        const gs_hold *h = job_at(x, plan->lent[i]);
        gs_pp_cost_add(&s, h->cost_hint, h->ngpus);
    }
    plan->cost = s.cost;
    plan->gpus = s.gpus;
}

static void job_of_request(const gs_pl_req *r, gpusched_job *j)
{
    *j = (gpusched_job)GPUSCHED_JOB_INIT;
    j->id = r->in.job_id;
    j->flags = r->in.job_flags;
    j->priority = r->in.priority;
    j->tenant = r->in.tenant;
    j->start_time = r->in.start_time;
    j->cost_hint = r->in.cost_hint;
}

/* Everything that can fail first (the job table's room, every pair block,
 * the movers' descriptors), then the movers go, the gang comes and the
 * movers come back at their new places. */
static int commit_moves(gs_pp *x, gpusched_place_result *res)
{
    gpusched_preempt_plan *plan = x->plan;
    struct gpusched_cluster *c = x->c;
    const uint32_t nm = plan->nmoves;
    uint32_t cap = 0;
    void **blocks = NULL;
    if (grow(&plan->alloc, (void **)&blocks, &cap, nm + 1, sizeof *blocks))
        return GPUSCHED_ENOMEM;
    cap = 0;
    gpusched_job *jobs = NULL;
    int rc = grow(&plan->alloc, (void **)&jobs, &cap, nm + 1, sizeof *jobs);
    if (!rc)
        rc = gs_holdtab_prepare(&c->jobs, &c->alloc, 1);
    for (uint32_t i = 0; i <= nm; i++)
        blocks[i] = NULL;
    for (uint32_t i = 0; !rc && i <= nm; i++) {
        uint32_t n = i == 0 ? res->n : plan->move_off[i] - plan->move_off[i - 1];
        blocks[i] = gs_pairs_block(&c->alloc, n);
        if (n > GS_HOLD_INLINE && !blocks[i])
            rc = GPUSCHED_ENOMEM;
    }
    if (rc) {
        for (uint32_t i = 0; i <= nm; i++)
            gs_free(&c->alloc, blocks[i]);
        gs_free(&plan->alloc, blocks);
        gs_free(&plan->alloc, jobs);
        return rc;
    }
    /* Moves were recorded in the order of plan->lent (tried in that order). */
    for (uint32_t i = 0; i < nm; i++) {
        const gs_hold *h = job_at(x, plan->lent[i]);
        jobs[i + 1] = (gpusched_job){sizeof(gpusched_job), h->flags, h->id, h->priority, h->tenant,
                                     h->start_time, h->cost_hint};
    }
    job_of_request(x->r, &jobs[0]);
    for (uint32_t i = 0; i < nm; i++)
        gs_cluster_job_drop(c, job_at(x, plan->lent[i]));
    plan->nlent = 0;
    gs_cluster_commit_apply(c, &jobs[0], res->n, res->nodes, res->masks, blocks[0]);
    for (uint32_t i = 0; i < nm; i++) {
        uint32_t a = plan->move_off[i];
        gs_cluster_commit_apply(c, &jobs[i + 1], plan->move_off[i + 1] - a, plan->move_nodes + a,
                                plan->move_masks + a, blocks[i + 1]);
    }
    gs_free(&plan->alloc, blocks);
    gs_free(&plan->alloc, jobs);
    res->committed = 1;
    return 0;
}

static int defrag_and_place(gs_pp *x, gpusched_place_result *res)
{
    gs_pl_req plan_only = *x->r;
    plan_only.in.flags &= ~GPUSCHED_PLACE_COMMIT;
    const bool commit = x->r->in.flags & GPUSCHED_PLACE_COMMIT;
    int rc = fits(x);
    if (rc < 0)
        return rc;
    if (rc)
        return gs_pl_place_loaded(x->p, x->r, res); /* nothing to move */
    const int32_t leaf = (int32_t)x->p->nlevels - 1;
    const bool small = x->r->gpus <= x->p->max_dom_gpus[LV(leaf)];
    const int32_t scope = x->r->in.required_level != GPUSCHED_NONE ? (int32_t)x->r->in.required_level : -1;
    gs_pp_best best = {0};
    rc = 0;
    if (scope < 0 && small)
        rc = search_scope(x, leaf, false, &best);
    if (!rc && !x->done && scope != leaf)
        rc = search_scope(x, scope, true, &best);
    if (!rc && !x->done && (small || scope == leaf))
        rc = search_scope(x, scope, false, &best);
    if (rc)
        return rc;
    if (!x->done) {
        /* Why the gang does not fit as the cluster is. */
        rc = gs_pl_place_loaded(x->p, &plan_only, res);
        return rc == 0 ? GPUSCHED_ENOSPC : rc;
    }
    record_moves(x);
    /* The plan is checked; the gang's own placement, on the state with the
     * movers gone and nothing held, is the one it was checked with. */
    uint32_t nm = x->plan->nmoves;
    uint32_t mp = x->plan->move_pairs;
    unhold_all(x);
    x->plan->nmoves = nm;
    x->plan->move_pairs = mp;
    rc = gs_pl_place_loaded(x->p, &plan_only, res);
    if (rc || !commit)
        return rc;
    return commit_moves(x, res);
}

GPUSCHED_API int gpusched_placer_defrag(gpusched_placer *p, const gpusched_place_request *req,
                                        gpusched_place_result *res, gpusched_preempt_plan *plan)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (!req || !res || !plan)
        return gs_error(&p->err, GPUSCHED_EINVAL, "defrag: %s is NULL",
                        !req ? "request" : !res ? "result" : "plan");
    gs_pl_req r;
    int rc = gs_pl_req_load(p, req, &r);
    if (rc || (rc = gs_pl_req_not_running(p, &r)))
        return rc;
    gs_pp x = {p, p->c, plan, &r, INT32_MIN, true, false};
    plan->n = plan->nmoves = plan->move_pairs = plan->ngang = 0;
    plan->cost = plan->gpus = 0;
    plan->nlent = 0;
    rc = defrag_and_place(&x, res);
    unlend_to(&x, 0);
    if (rc) {
        plan->nmoves = plan->move_pairs = 0;
        plan->cost = plan->gpus = 0;
        if (rc == GPUSCHED_ENOSPC)
            return rc;
        gs_pl_result_reset(res, p->nlevels);
        return gs_error(&p->err, rc, "defrag: %s",
                        rc == GPUSCHED_ENOMEM   ? "out of memory"
                        : rc == GPUSCHED_ELIMIT ? "too many jobs"
                                                : p->c->err.msg);
    }
    gs_err_clear(&p->err);
    return 0;
}

GPUSCHED_API uint32_t gpusched_preempt_plan_move_count(const gpusched_preempt_plan *plan)
{
    return plan ? plan->nmoves : 0;
}

GPUSCHED_API int gpusched_preempt_plan_move(const gpusched_preempt_plan *plan, uint32_t index, uint64_t *job_id,
                                            const uint32_t **nodes, const uint64_t **masks, uint32_t *n)
{
    if (!plan || !job_id || !nodes || !masks || !n)
        return GPUSCHED_EINVAL;
    if (index >= plan->nmoves)
        return GPUSCHED_ERANGE;
    uint32_t a = plan->move_off[index];
    *job_id = plan->move_ids[index];
    *nodes = plan->move_nodes + a;
    *masks = plan->move_masks + a;
    *n = plan->move_off[index + 1] - a;
    return 0;
}

GPUSCHED_API int gpusched_placer_preempt(gpusched_placer *p, const gpusched_place_request *req,
                                         gpusched_place_result *res, gpusched_preempt_plan *plan)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (!req || !res || !plan)
        return gs_error(&p->err, GPUSCHED_EINVAL, "preempt: %s is NULL",
                        !req ? "request" : !res ? "result" : "plan");
    gs_pl_req r;
    int rc = gs_pl_req_load(p, req, &r);
    if (rc || (rc = gs_pl_req_not_running(p, &r)))
        return rc;
    gs_pp x = {p, p->c, plan, &r, INT32_MIN, false, false};
    plan->n = plan->nmoves = plan->move_pairs = plan->ngang = 0;
    plan->cost = plan->gpus = 0;
    plan->nlent = 0;
    rc = plan_and_place(&x, res);
    unlend_to(&x, 0);
    if (rc) {
        plan->n = 0;
        plan->cost = plan->gpus = 0;
        if (rc == GPUSCHED_ENOSPC)
            return rc;
        gs_pl_result_reset(res, p->nlevels);
        return gs_error(&p->err, rc, "preempt: %s", rc == GPUSCHED_ENOMEM ? "out of memory" : p->c->err.msg);
    }
    gs_err_clear(&p->err);
    return 0;
}
