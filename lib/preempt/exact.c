/* The exact mode of preemption: per domain of the scope, a branch and bound
 * over subsets of its candidate victims when they are few, each subset
 * checked by the placement engine; and the lower bound that the plan's
 * optimality is stated with (doc/preempt.md, "Exact mode").
 *
 * The bound of a partial choice S, with `need` GPUs still to be freed in
 * the domain by count: the cost of S plus the cheapest way to free `need`
 * GPUs from the candidates not yet decided, taking fractions of jobs (a
 * fractional knapsack: candidates sorted by cost per GPU, taken greedily).
 * No real plan extending S costs less, so a choice whose bound does not
 * beat the best plan is dropped. The GPUs and the victim count are bounded
 * the same way (S's plus `need`, S's plus one), which makes the bound valid
 * for the whole lexicographic order. */
#include <string.h>

#include "preempt-internal.h"

/* What-if placements one plan may spend on the exact search. Past it the
 * plan is the best found so far, and not claimed optimal. */
#define GS_PP_EXACT_BUDGET 4096u

typedef struct gs_bb {
    gs_pp *x;
    const gs_victim *c;     /* the domain's candidates, cheapest per GPU first */
    uint32_t n;
    uint64_t need;          /* GPUs the domain lacks by count, nothing lent */
    gs_pp_cost *best;       /* the best plan so far (all domains) */
    bool *found;
    uint32_t fits_calls;
    bool aborted;
} gs_bb;

/* Cheapest per GPU first; then more GPUs, then the lower id. */
static bool cheaper_per_gpu(const gs_victim *a, const gs_victim *b)
{
    double ca = (double)a->cost / a->gpus, cb = (double)b->cost / b->gpus;
    if (ca != cb)
        return ca < cb;
    if (a->gpus != b->gpus)
        return a->gpus > b->gpus;
    return a->id < b->id;
}

static void sort_per_gpu(gs_victim *v, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        gs_victim t = v[i];
        uint32_t k = i;
        for (; k > 0 && cheaper_per_gpu(&t, &v[k - 1]); k--)
            v[k] = v[k - 1];
        v[k] = t;
    }
}

/* The least cost of freeing `need` GPUs from candidates i.. of a list
 * sorted cheapest per GPU first, fractions allowed; UINT64_MAX when they
 * cannot free that many. */
static uint64_t fractional_cost(const gs_victim *c, uint32_t i, uint32_t n, uint64_t need)
{
    double cost = 0;
    for (; need && i < n; i++) {
        if (c[i].gpus <= need) {
            cost += (double)c[i].cost;
            need -= c[i].gpus;
        } else {
            cost += (double)c[i].cost * (double)need / c[i].gpus;
            need = 0;
        }
    }
    if (need)
        return UINT64_MAX;
    /* Rounded down: a bound must never exceed the truth. */
    return cost >= 18446744073709549568.0 ? UINT64_MAX - 1 : (uint64_t)cost;
}

static gs_pp_cost bound_of(const gs_bb *b, uint32_t i, gs_pp_cost s, uint64_t freed)
{
    uint64_t need = freed >= b->need ? 0 : b->need - freed;
    uint64_t more = fractional_cost(b->c, i, b->n, need);
    gs_pp_cost lb = s;
    lb.cost = more == UINT64_MAX || s.cost + more < s.cost ? UINT64_MAX : s.cost + more;
    lb.gpus += need;
    lb.count += need > 0;
    return lb;
}

int gs_pp_keep_lent_as_best(gpusched_preempt_plan *plan)
{
    if (gs_grow(&plan->alloc, (void **)&plan->best, &plan->best_cap, plan->nlent, sizeof *plan->best))
        return GPUSCHED_ENOMEM;
    memcpy(plan->best, plan->lent, plan->nlent * sizeof *plan->best);
    plan->nbest = plan->nlent;
    return 0;
}

/* The lent set is S: a new best plan is remembered as its job slots. */
static int remember(gs_bb *b, gs_pp_cost s)
{
    if (gs_pp_keep_lent_as_best(b->x->plan))
        return GPUSCHED_ENOMEM;
    *b->best = s;
    *b->found = true;
    return 0;
}

/* Candidates i.. still open; S (cost s, `freed` GPUs in the domain) lent. */
static int branch(gs_bb *b, uint32_t i, gs_pp_cost s, uint64_t freed)
{
    if (b->aborted)
        return 0;
    if (freed >= b->need && s.count) {
        if (b->fits_calls++ == GS_PP_EXACT_BUDGET) {
            b->aborted = true;
            return 0;
        }
        int rc = gs_pp_feasible(b->x);
        if (rc < 0)
            return rc;
        if (rc) /* every superset costs more */
            return gs_pp_cost_less(s, *b->best) || !*b->found ? remember(b, s) : 0;
    }
    if (i == b->n)
        return 0;
    if (*b->found && !gs_pp_cost_less(bound_of(b, i, s, freed), *b->best))
        return 0;
    /* Take candidate i, then leave it. */
    const gs_hold *h = gs_pp_job(b->x, b->c[i].slot);
    gs_pp_cost with = s;
    gs_pp_cost_add(&with, h->cost_hint, h->ngpus);
    uint32_t mark = b->x->plan->nlent;
    int rc = gs_pp_lend(b->x, b->c[i].slot);
    if (!rc)
        rc = branch(b, i + 1, with, freed + b->c[i].gpus);
    int rc2 = gs_pp_unlend_to(b->x, mark);
    if (rc || rc2)
        return rc ? rc : rc2;
    return branch(b, i + 1, s, freed);
}

/* A bound for a domain too large to sort: `need` GPUs at the least cost
 * per GPU among its candidates v[a, a + n), rounded down; UINT64_MAX when
 * they cannot free that many. */
static uint64_t cheap_bound(const gs_victim *v, uint32_t n, uint64_t need)
{
    double per_gpu = -1;
    uint64_t gpus = 0;
    for (uint32_t i = 0; i < n; i++) {
        double r = (double)v[i].cost / v[i].gpus;
        per_gpu = per_gpu < 0 || r < per_gpu ? r : per_gpu;
        gpus += v[i].gpus;
    }
    if (gpus < need)
        return UINT64_MAX;
    double lb = per_gpu * (double)need;
    return lb >= 18446744073709549568.0 ? UINT64_MAX - 1 : (uint64_t)lb;
}

int gs_pp_exact_domain(gs_pp *x, const gs_victim *cands, uint32_t n, uint64_t need, gs_pp_cost *best,
                       bool *found, uint32_t *calls, bool *complete, uint64_t *lb)
{
    gpusched_preempt_plan *plan = x->plan;
    if (gs_grow(&plan->alloc, (void **)&plan->order, &plan->order_cap, n, sizeof *plan->order))
        return GPUSCHED_ENOMEM;
    memcpy(plan->order, cands, n * sizeof *plan->order);
    sort_per_gpu(plan->order, n);
    gs_bb b = {x, plan->order, n, need, best, found, *calls, false};
    gs_pp_cost root = bound_of(&b, 0, (gs_pp_cost){0, 0, 0}, 0);
    *lb = root.cost;
    if (root.cost == UINT64_MAX || (*found && !gs_pp_cost_less(root, *best)))
        return 0; /* the domain cannot free enough GPUs, or cannot beat the best plan */
    if (*calls >= GS_PP_EXACT_BUDGET) {
        *complete = false;
        return 0;
    }
    int rc = gs_pp_unlend_to(x, 0);
    if (rc)
        return rc;
    x->best_lent = false;
    rc = branch(&b, 0, (gs_pp_cost){0, 0, 0}, 0);
    *calls = b.fits_calls;
    *complete = !b.aborted;
    return rc;
}

int gs_pp_exact(gs_pp *x, int32_t scope, gs_pp_cost *best, bool *found)
{
    gpusched_preempt_plan *plan = x->plan;
    /* Any order of the scope's candidates will do (each domain's are sorted
     * here): the heuristic's collection is reused when it has this scope.
     * What is lent (the heuristic's plan) stays lent until a domain is
     * searched: usually none is, and the caller keeps it. */
    int rc = 0;
    x->best_lent = *found;
    if (!gs_pp_collected_scope(x, scope)) {
        if ((rc = gs_pp_unlend_to(x, 0)) || (rc = gs_pp_collect_as(x, scope, false)))
            return rc;
        x->best_lent = false;
    }
    const gs_hold *own = gs_cluster_resv_find(x->c, x->r->job.id);
    const uint64_t G = x->r->gpus;
    bool exact = true;
    uint64_t lb = UINT64_MAX;
    uint32_t own_i = 0, calls = 0;
    for (uint32_t a = 0; a < plan->nv && !rc;) {
        uint32_t e = a;
        while (e < plan->nv && plan->v[e].dom == plan->v[a].dom)
            e++;
        const uint32_t dom = plan->v[a].dom, n = e - a;
        uint64_t have = gs_pp_own_in(x->c->topo, own, scope, dom, &own_i) +
                        (scope < 0 ? x->c->root_free_gpus : x->c->agg[scope].free_gpus[dom]);
        /* The heuristic's plan may still be lent: its GPUs count as free
         * in the aggregates, not in the domain as it is. */
        for (uint32_t i = a; i < e; i++)
            if (gs_pp_job(x, plan->v[i].slot)->lent)
                have -= plan->v[i].gpus;
        a = e;
        const uint64_t need = have >= G ? 0 : G - have;
        /* The one-pass bound first: most domains end here, unsorted. */
        uint64_t cb = cheap_bound(plan->v + a - n, n, need);
        if (cb == UINT64_MAX || (*found && cb > best->cost))
            continue;
        if (n > GPUSCHED_PREEMPT_EXACT_MAX) {
            if (!*found || cb < best->cost) {
                exact = false;
                lb = cb < lb ? cb : lb;
            }
            continue;
        }
        uint64_t dom_lb = 0;
        bool complete = true;
        rc = gs_pp_exact_domain(x, plan->v + a - n, n, need, best, found, &calls, &complete, &dom_lb);
        if (!complete) {
            exact = false;
            lb = dom_lb < lb ? dom_lb : lb;
        }
    }
    if (rc)
        return rc;
    plan->exact = exact;
    plan->lower_bound = *found && best->cost < lb ? best->cost : lb;
    return x->best_lent ? 0 : gs_pp_unlend_to(x, 0);
}
