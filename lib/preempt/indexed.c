/* Preemption that costs what its answer costs: for a gang required inside
 * one lowest-level domain (a rack), a best-first search down the domain
 * tree over the cluster's preemption index (gs_cluster_pindex). A domain's
 * bound is the least cost of freeing the GPUs it lacks from its
 * preemptible jobs, fractions allowed; domains are opened cheapest bound
 * first, a rack is searched exactly (exact.c) when opened, and the search
 * ends when no bound left can beat the best plan. So a small plan on a
 * full cluster of a million GPUs visits a few racks, not every job
 * (doc/preempt.md, "Cost follows the answer"). */
#include <math.h>

#include "heap.h"
#include "preempt-internal.h"

/* A domain waiting to be opened, with the bound of every plan inside it. */
typedef struct gs_pp_open {
    uint64_t cost;      /* least cost, rounded down */
    uint64_t need;      /* GPUs it lacks by count (a bound of the GPUs evicted) */
    uint32_t level, dom;
} gs_pp_open;

static gs_pp_cost bound_cost(const gs_pp_open *o)
{
    return (gs_pp_cost){o->cost, o->need, o->need > 0};
}

/* Cheapest bound first; then the deeper domain (a rack is an answer, a
 * block only a promise), then the lower index. */
static bool opened_before(const gs_pp_open *a, const gs_pp_open *b)
{
    gs_pp_cost ca = bound_cost(a), cb = bound_cost(b);
    if (gs_pp_cost_less(ca, cb) || gs_pp_cost_less(cb, ca))
        return gs_pp_cost_less(ca, cb);
    if (a->level != b->level)
        return a->level > b->level;
    return a->dom < b->dom;
}

static bool opened_after(const gs_pp_open *a, const gs_pp_open *b, void *unused)
{
    (void)unused;
    return opened_before(b, a);
}

GS_HEAP_DEFINE(opens, gs_pp_open, void *, opened_after)

typedef struct gs_ix {
    gs_pp *x;
    const gs_pindex *ix;
    uint64_t gpus;          /* the gang's */
    int32_t prio;           /* the gang's */
    uint32_t n;             /* domains waiting */
} gs_ix;

/* Queues domain d of level l unless its jobs cannot make room. */
static int push(gs_ix *s, uint32_t l, uint32_t d)
{
    const gs_psum *sum = &s->ix->sum[l][d];
    if (sum->min_prio >= s->prio)
        return 0; /* no preemptible job of lower priority */
    const uint64_t free_gpus = s->x->c->agg[l].free_gpus[d];
    const uint64_t need = s->gpus > free_gpus ? s->gpus - free_gpus : 0;
    double b = gs_psum_bound(sum, need);
    if (isinf(b))
        return 0; /* its preemptible jobs hold too few GPUs */
    /* Rounded down, with room for the rounding of the sums behind it. */
    b = b * (1 - 1e-12);
    gs_pp_open o = {b >= 18446744073709549568.0 ? UINT64_MAX - 1 : (uint64_t)b, need, l, d};
    gpusched_preempt_plan *plan = s->x->plan;
    if (gs_grow(&plan->alloc, (void **)&plan->opens, &plan->opens_cap, s->n + 1, sizeof *plan->opens))
        return GPUSCHED_ENOMEM;
    plan->opens[s->n] = o;
    opens_up(plan->opens, s->n++, NULL);
    return 0;
}

static gs_pp_open pop(gs_ix *s)
{
    gs_pp_open *h = s->x->plan->opens;
    gs_pp_open top = h[0];
    h[0] = h[--s->n];
    opens_sift(h, s->n, 0, NULL);
    return top;
}

/* The candidates of rack d, from the holders of its GPUs, into plan->v
 * (which then holds no collection). */
static int rack_candidates(gs_ix *s, uint32_t d, uint32_t *count)
{
    gs_pp *x = s->x;
    gpusched_preempt_plan *plan = x->plan;
    const struct gpusched_topo *t = x->c->topo;
    const uint32_t l = t->nlevels - 1;
    const uint32_t n0 = t->dom_start[l][d], n1 = t->dom_start[l][d + 1];
    const uint64_t g0 = t->node_gpu_base[n0], g1 = n1 < t->nnodes ? t->node_gpu_base[n1] : t->ngpus;
    x->collected = INT32_MIN;
    plan->nv = 0;
    for (uint64_t g = g0; g < g1; g++) {
        uint32_t holder = x->c->gpu_holder[g];
        const gs_hold *h = gs_cluster_holder_job(x->c, holder);
        if (!h)
            continue;
        uint32_t slot = holder - 1, k = plan->nv;
        while (k > 0 && plan->v[k - 1].slot != slot)
            k--;
        if (k) {
            plan->v[k - 1].gpus++;
            continue;
        }
        /* A job that is not a candidate stays listed (home 1), so that it
         * is looked at once, then goes. */
        bool candidate = gs_pp_eligible(x->c, h, x->r, plan->prio_cap, false);
        if (!candidate)
            gs_pp_count_protected(plan, h, x->r);
        if (gs_grow(&plan->alloc, (void **)&plan->v, &plan->vcap, plan->nv + 1, sizeof *plan->v))
            return GPUSCHED_ENOMEM;
        plan->v[plan->nv++] =
            (gs_victim){.dom = d, .slot = slot, .gpus = 1, .home = !candidate, .cost = h->cost_hint, .id = h->id};
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < plan->nv; i++)
        if (!plan->v[i].home)
            plan->v[kept++] = plan->v[i];
    plan->nv = kept;
    *count = kept;
    return 0;
}

/* Whether this request is one the index answers: a gang required inside
 * one lowest-level domain, without a reservation of its own (whose GPUs
 * the bounds would not count), with one priority tier among the
 * preemptible jobs below it (or the cost-first policy). */
static bool indexed_shape(const gs_pp *x)
{
    const gs_pl_req *r = x->r;
    return r->in.required_level == x->c->topo->nlevels - 1 && !gs_cluster_resv_find(x->c, r->job.id);
}

static bool indexed_tier(const gs_pp *x, const gs_pindex *ix)
{
    const gs_pl_req *r = x->r;
    if (ix->root.min_prio >= r->job.priority)
        return false; /* nothing to evict: the collecting path explains */
    return r->in.preempt_policy == GPUSCHED_PREEMPT_COST_FIRST || ix->root.min_prio == ix->root.max_prio;
}

int gs_pp_indexed(gs_pp *x, gs_pp_cost *best, bool *found)
{
    /* The index is brought up to date (or built) only for the requests it
     * answers: other plans never pay for it. */
    if (!indexed_shape(x))
        return 0;
    const gs_pindex *ix;
    int rc = gs_cluster_pindex(x->c, &ix);
    if (rc)
        return rc;
    if (!indexed_tier(x, ix))
        return 0;
    const struct gpusched_topo *t = x->c->topo;
    const uint32_t leaf = t->nlevels - 1;
    gs_ix s = {x, ix, x->r->gpus, x->r->job.priority, 0};
    for (uint32_t d = 0; !rc && d < t->ndom[0]; d++)
        rc = push(&s, 0, d);
    bool exact = true;
    uint64_t lb = UINT64_MAX;
    uint32_t calls = 0;
    while (!rc && s.n) {
        gs_pp_open o = pop(&s);
        if (*found && !gs_pp_cost_less(bound_cost(&o), *best)) {
            lb = o.cost < lb ? o.cost : lb; /* every domain left is bounded by it */
            break;
        }
        if (o.level < leaf) {
            for (uint32_t k = t->child_start[o.level][o.dom]; !rc && k < t->child_start[o.level][o.dom + 1]; k++)
                rc = push(&s, o.level + 1, k);
            continue;
        }
        uint32_t n;
        if ((rc = rack_candidates(&s, o.dom, &n)) || !n)
            continue;
        if (n > GPUSCHED_PREEMPT_EXACT_MAX) {
            /* Not searched: the collecting path would be the heuristic;
             * a rack this crowded is rare, so hand the request over. */
            return 0;
        }
        bool complete = true;
        uint64_t dom_lb;
        rc = gs_pp_exact_domain(x, x->plan->v, n, o.need, best, found, &calls, &complete, &dom_lb);
        if (!complete) {
            exact = false;
            lb = dom_lb < lb ? dom_lb : lb;
        }
    }
    if (rc)
        return rc;
    if (!*found)
        return 0;
    x->plan->exact = exact;
    x->plan->lower_bound = best->cost < lb ? best->cost : lb;
    return 1;
}
