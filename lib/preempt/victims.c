/* The eligible victims of a preemption, per domain of the scope level, in
 * the order the plan takes them. */
#include <string.h>

#include "preempt-internal.h"

static int push(gpusched_preempt_plan *plan, gs_victim v)
{
    if (gs_grow(&plan->alloc, (void **)&plan->v, &plan->vcap, plan->nv + 1, sizeof *plan->v))
        return GPUSCHED_ENOMEM;
    plan->v[plan->nv++] = v;
    return 0;
}

/* One entry per scope domain the job touches (its pairs are ascending by
 * node and domains are node ranges, so a domain's pairs are consecutive). */
static int add_job(gpusched_preempt_plan *plan, const struct gpusched_cluster *c, const gs_hold *h,
                   uint32_t slot, int32_t scope, bool by_rack)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    /* The common case, a job inside one scope domain: one entry, no pass
     * over its pairs. */
    uint32_t first_leaf = t->node_leaf[nodes[0]];
    uint32_t d0 = gs_pp_scope_domain(t, scope, first_leaf);
    if (d0 == gs_pp_scope_domain(t, scope, t->node_leaf[nodes[h->npairs - 1]]))
        return push(plan, (gs_victim){.dom = d0, .slot = slot, .gpus = h->ngpus, .home = by_rack ? first_leaf : 0,
                                      .cost = h->cost_hint, .id = h->id});
    gs_victim cur = {0};
    bool open = false;
    for (uint32_t i = 0; i < h->npairs; i++) {
        uint32_t leaf = t->node_leaf[nodes[i]];
        uint32_t d = gs_pp_scope_domain(t, scope, leaf);
        if (open && d != cur.dom) {
            if (push(plan, cur))
                return GPUSCHED_ENOMEM;
            open = false;
        }
        if (!open) {
            cur = (gs_victim){.dom = d, .slot = slot, .home = by_rack ? leaf : 0, .cost = h->cost_hint, .id = h->id};
            open = true;
        }
        cur.gpus += gs_popcount64(masks[i]);
    }
    return open ? push(plan, cur) : 0;
}

/* The order inside a domain: the racks cheapest to clear first, then
 * the cheapest job, the most GPUs for the cost, the lowest id. */
bool gs_pp_taken_before(const gs_victim *a, const gs_victim *b)
{
    if (a->rank_cost != b->rank_cost)
        return a->rank_cost < b->rank_cost;
    if (a->rank_evict != b->rank_evict)
        return a->rank_evict < b->rank_evict;
    if (a->home != b->home)
        return a->home < b->home;
    if (a->cost != b->cost)
        return a->cost < b->cost;
    if (a->gpus != b->gpus)
        return a->gpus > b->gpus;
    return a->id < b->id;
}

/* A stable merge sort into `tmp`'s room: the library allocates only
 * through its allocator, and the C library's qsort may call malloc. Runs
 * of up to 8 by insertion first (most domains hold a few victims). */
static void sort_victims(gs_victim *a, gs_victim *tmp, uint32_t n)
{
    const uint32_t run = 8;
    for (uint32_t lo = 0; lo < n; lo += run) {
        uint32_t hi = lo + run < n ? lo + run : n;
        for (uint32_t i = lo + 1; i < hi; i++) {
            gs_victim v = a[i];
            uint32_t k = i;
            for (; k > lo && gs_pp_taken_before(&v, &a[k - 1]); k--)
                a[k] = a[k - 1];
            a[k] = v;
        }
    }
    gs_victim *src = a, *dst = tmp;
    for (uint32_t w = run; w < n; w *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * w) {
            uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint32_t i = lo, k = mid, o = lo;
            while (i < mid && k < hi)
                dst[o++] = gs_pp_taken_before(&src[k], &src[i]) ? src[k++] : src[i++];
            while (i < mid)
                dst[o++] = src[i++];
            while (k < hi)
                dst[o++] = src[k++];
        }
        gs_victim *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, (size_t)n * sizeof *a);
}

/* Groups the entries by scope domain (a counting sort: domains ascending),
 * then orders each group. */
static int group_and_order(gpusched_preempt_plan *plan, uint32_t ndom)
{
    if (plan->tmp_cap < plan->vcap) {
        gs_victim *t = gs_realloc_array(&plan->alloc, plan->tmp, plan->vcap, sizeof *t);
        if (!t)
            return GPUSCHED_ENOMEM;
        plan->tmp = t;
        plan->tmp_cap = plan->vcap;
    }
    if (plan->start_cap < ndom + 1) {
        uint32_t *s = gs_realloc_array(&plan->alloc, plan->start, ndom + 1, sizeof *s);
        if (!s)
            return GPUSCHED_ENOMEM;
        plan->start = s;
        plan->start_cap = ndom + 1;
    }
    uint32_t *start = plan->start;
    memset(start, 0, (ndom + 1) * sizeof *start);
    for (uint32_t i = 0; i < plan->nv; i++)
        start[plan->v[i].dom + 1]++;
    for (uint32_t d = 0; d < ndom; d++)
        start[d + 1] += start[d];
    for (uint32_t i = 0; i < plan->nv; i++)
        plan->tmp[start[plan->v[i].dom]++] = plan->v[i];
    /* start[d] is now the end of group d. */
    for (uint32_t d = 0, a = 0; d < ndom; a = start[d++])
        if (start[d] - a > 1)
            sort_victims(plan->tmp + a, plan->v + a, start[d] - a);
    gs_victim *t = plan->v;
    plan->v = plan->tmp;
    plan->tmp = t;
    uint32_t cap = plan->vcap;
    plan->vcap = plan->tmp_cap;
    plan->tmp_cap = cap;
    return 0;
}

/* The rank of a lowest-level domain: what clearing its victims costs per
 * GPU it then has free (the cheapest racks are cleared first, so that a
 * large gang evicts whole racks rather than a little everywhere); at equal
 * cost, the rack that needs the fewest GPUs evicted per GPU gained. */
static int rank_homes(gpusched_preempt_plan *plan, const struct gpusched_cluster *c)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t leaf_level = t->nlevels - 1, nleaf = t->ndom[leaf_level];
    if (plan->nleaf < nleaf) {
        double *lc = gs_realloc_array(&plan->alloc, plan->leaf_cost, nleaf, sizeof *lc);
        if (!lc)
            return GPUSCHED_ENOMEM;
        plan->leaf_cost = lc;
        double *lg = gs_realloc_array(&plan->alloc, plan->leaf_gpus, nleaf, sizeof *lg);
        if (!lg)
            return GPUSCHED_ENOMEM;
        plan->leaf_gpus = lg;
        plan->nleaf = nleaf;
    }
    for (uint32_t i = 0; i < plan->nv; i++)
        plan->leaf_cost[plan->v[i].home] = plan->leaf_gpus[plan->v[i].home] = 0;
    for (uint32_t i = 0; i < plan->nv; i++) {
        plan->leaf_cost[plan->v[i].home] += (double)plan->v[i].cost;
        plan->leaf_gpus[plan->v[i].home] += plan->v[i].gpus;
    }
    for (uint32_t i = 0; i < plan->nv; i++) {
        uint32_t home = plan->v[i].home;
        double evict = plan->leaf_gpus[home];
        double gained = evict + (double)c->agg[leaf_level].free_gpus[home];
        plan->v[i].rank_cost = plan->leaf_cost[home] / gained;
        plan->v[i].rank_evict = evict / gained;
    }
    return 0;
}

/* The entries, unordered; with `prio_key` (scope -1) each entry's dom is
 * its job's priority key. */
static int collect_entries(gpusched_preempt_plan *plan, const struct gpusched_cluster *c, const gs_pl_req *r,
                           int32_t scope, bool by_rack, bool movers, bool prio_key)
{
    plan->nv = 0;
    plan->protected_jobs = 0;
    plan->protected_gpus = 0;
    for (uint32_t i = 0; i < c->jobs.count; i++) {
        uint32_t slot = c->jobs.live[i];
        const gs_hold *h = &c->jobs.rec[slot];
        if (gs_pp_eligible(c, h, r, plan->prio_cap, movers)) {
            if (add_job(plan, c, h, slot, scope, by_rack))
                return GPUSCHED_ENOMEM;
            if (prio_key)
                plan->v[plan->nv - 1].dom = gs_pp_prio_key(h->priority);
        } else if (!movers) {
            gs_pp_count_protected(plan, h, r);
        }
    }
    return by_rack ? rank_homes(plan, c) : 0;
}

int gs_pp_collect_cluster(gpusched_preempt_plan *plan, const struct gpusched_cluster *c, const gs_pl_req *r,
                          bool ranked)
{
    return collect_entries(plan, c, r, -1, ranked, false, true);
}

int gs_pp_collect(gpusched_preempt_plan *plan, const struct gpusched_cluster *c, const gs_pl_req *r,
                  int32_t scope, bool by_rack, bool movers)
{
    int rc = collect_entries(plan, c, r, scope, by_rack, movers, false);
    return rc ? rc : group_and_order(plan, scope < 0 ? 1 : c->topo->ndom[scope]);
}
