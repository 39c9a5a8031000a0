/* Preemption for a gang of pods (cpu, memory, other resources, GPU
 * fractions, class lists). Its victims may free cpu or memory rather than
 * GPUs, which the GPU-counting domain searches do not see, so it takes the
 * generic path: the eligible jobs in one order, the shortest prefix of
 * them whose lending lets the gang fit (galloping, then bisection: fitting
 * is monotone in what is lent), then pruned (doc/preempt.md, "Gangs of
 * pods").
 *
 * The order: priority first (under PRIORITY_FIRST), so the shortest
 * fitting prefix ends in the least tier that lets the gang fit; then the
 * racks cheapest to clear per GPU gained, a rack's victims together
 * (gs_pp_collect's by-rack order), so that whole nodes come free early.
 * Only the prefix is ordered: the galloping takes the candidates in
 * batches of at least 64, each found by one pass over them, so a plan
 * usually costs two passes over the jobs, O(log n) searches and about
 * twice the victims it needs in lends. */
#include <string.h>

#include "heap.h"
#include "preempt-internal.h"

/* Whether candidate a comes before b in the plan's order (total: the
 * ids break ties). */
static bool first(const gs_victim *a, const gs_victim *b, const gs_pp *x)
{
    if (x->r->in.preempt_policy == GPUSCHED_PREEMPT_PRIORITY_FIRST && a->dom != b->dom)
        return a->dom < b->dom; /* the priority keys (gs_pp_collect_cluster) */
    return gs_pp_taken_before(a, b);
}

/* A heap whose root is the last of its elements in the plan's order. */
GS_HEAP_DEFINE(worst, gs_victim, const gs_pp *, first)

/* The candidates in order, found a batch at a time: plan->tmp[0, taken)
 * are the first `taken` of the n in plan->v. */
typedef struct pod_order {
    gs_pp *x;
    uint32_t n, taken;
} pod_order;

/* The next `m` candidates after those taken, appended to plan->tmp: one
 * pass keeping the m first in a heap whose root is the last of them (most
 * candidates compare once with it), then that heap sorted. */
static void take_batch(pod_order *o, uint32_t m)
{
    gpusched_preempt_plan *plan = o->x->plan;
    gs_victim *h = plan->tmp + o->taken;
    const gs_victim *last = o->taken ? &plan->tmp[o->taken - 1] : NULL;
    uint32_t k = 0;
    for (uint32_t i = 0; i < o->n; i++) {
        const gs_victim *v = &plan->v[i];
        if (last && !first(last, v, o->x))
            continue; /* taken already */
        if (k < m) {
            h[k] = *v;
            worst_up(h, k++, o->x);
        } else if (first(v, &h[0], o->x)) {
            h[0] = *v;
            worst_sift(h, k, 0, o->x);
        }
    }
    worst_sort(h, k, o->x);
    o->taken += k;
}

/* The first `upto` candidates in plan->tmp (fewer if there are not). */
static void take(pod_order *o, uint32_t upto)
{
    while (o->taken < upto && o->taken < o->n) {
        const uint32_t want = upto - o->taken, m = want > 64 ? want : 64;
        take_batch(o, m < o->n - o->taken ? m : o->n - o->taken);
    }
}

/* Lends candidates [from, to) (the lent stack is the prefix). */
static int lend_range(pod_order *o, uint32_t from, uint32_t to)
{
    take(o, to);
    int rc = 0;
    for (uint32_t i = from; !rc && i < to; i++)
        rc = gs_pp_lend(o->x, o->x->plan->tmp[i].slot);
    return rc;
}

/* The shortest prefix that fits, left lent: *k candidates; *k = 0 if even
 * all of them do not do (then all are lent). */
static int shortest_prefix(pod_order *o, uint32_t n, uint32_t *k)
{
    gs_pp *x = o->x;
    uint32_t lo = 0, hi = 0, step = 1; /* the prefix of lo candidates does not fit */
    int rc;
    for (;;) {
        if (lo == n) {
            *k = 0;
            return 0;
        }
        hi = lo + step < n ? lo + step : n;
        if ((rc = lend_range(o, lo, hi)) || (rc = gs_pp_fits(x)) < 0)
            return rc;
        if (rc)
            break;
        lo = hi;
        step *= 2;
    }
    /* [0, hi) is lent and fits. */
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if ((rc = gs_pp_unlend_to(x, mid)) || (rc = gs_pp_fits(x)) < 0)
            return rc;
        if (rc) {
            hi = mid;
        } else {
            lo = mid;
            if ((rc = lend_range(o, mid, hi)))
                return rc;
        }
    }
    *k = hi;
    return 0;
}

int gs_pp_plan_pods(gs_pp *x, uint32_t *nvictims)
{
    gpusched_preempt_plan *plan = x->plan;
    plan->exact = 0;
    plan->prio_cap = INT32_MAX;
    /* plan->v holds the candidates unordered: no collected variant. */
    x->collected = INT32_MIN;
    int rc = gs_pp_collect_cluster(plan, x->c, x->r, true);
    if (rc || gs_grow(&plan->alloc, (void **)&plan->tmp, &plan->tmp_cap, plan->nv + 1, sizeof *plan->tmp))
        return rc ? rc : GPUSCHED_ENOMEM;
    const uint32_t n = plan->nv;
    pod_order o = {x, n, 0};
    if ((rc = shortest_prefix(&o, n, nvictims)) || !*nvictims)
        return rc;
    return gs_pp_prune(x);
}
