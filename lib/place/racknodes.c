/* Nodes once the search counted down to racks has answered
 * (doc/placement.md, "Counted levels"): the fewest nodes of its racks,
 * and a lower bound of any placement's nodes on as many domains.
 *
 * Inside any n_l domains of level l the nodes holding v units or more
 * number at most the sum of the n_l largest per-domain counts of such
 * nodes; T_v, the least of these over the levels, bounds them in any
 * placement on n_l domains of every level. N nodes hold at most
 * sum_v min(N, T_v) units (a node of u units counts once for each
 * v <= u), so such a placement uses at least the least N for which that
 * reaches the gang. When the search counted down to racks has found the
 * fewest domains any placement needs, every optimal placement uses
 * exactly as many, and its nodes are at least this bound: an answer that
 * meets it is optimal down to nodes.
 *
 * Cost: one pass over the histograms of each level read (domains x node
 * sizes), and only of the levels where that is within a constant of the
 * answer's nodes. */
#include <string.h>

#include "place-internal.h"

/* Largest unit value per node tabled. */
#define RN_UMAX 16
/* Histogram entries read per node of the answer, at most. */
#define RN_READ_PER_NODE 16

/* Largest per-domain node count whose domains are counted, not
 * selected (racks, blocks). */
#define RN_COUNTED_MAX 1024

/* The sum of the n largest of cnt[0, nd), each below `top`: counted (by
 * value, from the top) when the values are few, else a quickselect. */
static uint64_t largest(gpusched_placer *p, uint32_t *cnt, uint32_t nd, uint32_t n, uint32_t top)
{
    if (top > RN_COUNTED_MAX || nd <= 64)
        return gs_pl_largest_sum(cnt, nd, n < nd ? n : nd);
    uint32_t *by = gs_arena_get(&p->arena, ((size_t)top + 1) * 5 * sizeof *by);
    if (!by)
        return gs_pl_largest_sum(cnt, nd, n < nd ? n : nd);
    gs_pl_count_values(cnt, 1, nd, top, by, by + top + 1);
    uint64_t sum = 0, left = n;
    for (uint32_t x = top + 1; x-- > 1 && left;) {
        const uint64_t take = by[x] < left ? by[x] : left;
        sum += take * x;
        left -= take;
    }
    return sum;
}

/* t[v] = min(t[v], the sum of the n largest counts of nodes of v units or
 * more over the domains of level l), v = 1 .. umax. */
static int level_counts(gpusched_placer *p, uint32_t l, uint32_t n, uint32_t umax, uint64_t *t)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    const uint32_t nd = p->t->ndom[l], width = c->hist_width;
    uint32_t *cnt = gs_arena_get(&p->arena, (size_t)(umax + 1) * nd * sizeof *cnt);
    if (!cnt)
        return GPUSCHED_ENOMEM;
    uint32_t top = 0;
    const uint32_t *h = c->agg[l].hist;
    if (r->u0 == 1 && !r->whole_w && umax + 1 == width) {
        /* Units are GPUs, every size tabled: the histogram's suffix sums,
         * written where they are read (gs_pl_hist_at_least's fast path). */
        for (uint32_t d = 0; d < nd; d++, h += width) {
            uint32_t run = 0;
            for (uint32_t k = umax; k >= 1; k--) {
                run += h[k];
                cnt[(size_t)k * nd + d] = run;
            }
            top = run > top ? run : top;
        }
    } else {
        for (uint32_t d = 0; d < nd; d++, h += width) {
            uint32_t at_least[RN_UMAX + 2];
            gs_pl_hist_at_least(r, h, width, umax, at_least);
            for (uint32_t v = 1; v <= umax; v++)
                cnt[(size_t)v * nd + d] = at_least[v];
            top = at_least[1] > top ? at_least[1] : top;
        }
    }
    for (uint32_t v = 1; v <= umax; v++) {
        const uint64_t most = largest(p, cnt + (size_t)v * nd, nd, n, top);
        t[v] = most < t[v] ? most : t[v];
    }
    return 0;
}

/* The most units a node gives, when the histograms count the request's
 * units exactly and the tables here hold them; else 0. */
static uint32_t units_tabled(const gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    const uint32_t umax = r->whole_w ? 1 : (p->c->hist_width - 1) / r->u0;
    return r->agg_exact_nodes && p->nlevels && umax <= RN_UMAX ? umax : 0;
}

/* Whether the answer's racks may give other shares: no slice (the
 * required level, a piece of the whole gang, stays in the same domains). */
static bool shares_free(const gs_pl_req *r)
{
    for (uint32_t i = 0; i < r->ncons; i++)
        if (r->cons[i].size < r->gpus)
            return false;
    return true;
}

uint64_t gs_pl_fewest_nodes_in(gpusched_placer *p, const uint32_t *counts)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_topo *t = p->t;
    const uint32_t width = p->c->hist_width;
    const uint32_t umax = units_tabled(p);
    if (!umax)
        return 0;
    uint64_t tv[RN_UMAX + 1];
    for (uint32_t v = 0; v <= umax; v++)
        tv[v] = UINT64_MAX;
    gs_arena_mark m = gs_arena_save(&p->arena);
    /* Only the levels whose histograms cost what the answer does to read. */
    for (uint32_t l = 0; l < p->nlevels; l++)
        if ((uint64_t)t->ndom[l] * width <= RN_READ_PER_NODE * (uint64_t)p->nout &&
            level_counts(p, l, counts[l], umax, tv)) {
            gs_arena_restore(&p->arena, m);
            return 0;
        }
    gs_arena_restore(&p->arena, m);
    uint64_t most = 0;
    for (uint32_t v = 1; v <= umax; v++)
        most += tv[v] == UINT64_MAX ? 0 : tv[v];
    if (tv[1] == UINT64_MAX || most < r->gpus / r->u0)
        return 0;
    return gs_pl_least_nodes(tv, umax, r->gpus / r->u0);
}

/* Rack `rack` and its ancestors recorded as used, after the racks before
 * it in index order (so each level's domains come out sorted and once
 * each: an ancestor already last at its level is the previous rack's,
 * and so are its own ancestors). */
static int use_rack(gpusched_placer *p, uint32_t rack)
{
    const struct gpusched_topo *t = p->t;
    uint32_t d = rack;
    for (uint32_t l = p->nlevels; l-- > 0;) {
        if (p->ndoms[l] && p->out_doms[l][p->ndoms[l] - 1] == d)
            break;
        int rc = gs_pl_use_domain(p, l, d);
        if (rc)
            return rc;
        if (l)
            d = t->dom_parent[l][d];
    }
    return 0;
}

/* The output's nodes handed out again by plan, over racks[0, n)
 * (ascending, so that the nodes come out sorted), and its domains at
 * every level those of the racks that gave nodes. */
static int take_on_racks(gpusched_placer *p, gs_node_plan *plan, const uint32_t *racks, uint32_t n)
{
    const struct gpusched_topo *t = p->t;
    const uint32_t low = p->nlevels - 1;
    p->nout = 0;
    p->ndefer = 0; /* these nodes replace a deferred answer's */
    for (uint32_t l = 0; l < p->nlevels; l++)
        p->ndoms[l] = 0;
    for (uint32_t i = 0; i < n && plan->pending; i++) {
        const uint32_t before = p->nout;
        int rc = gs_pl_node_plan_take(p, plan, t->dom_start[low][racks[i]], t->dom_start[low][racks[i] + 1]);
        if (!rc && p->nout > before)
            rc = use_rack(p, racks[i]);
        if (rc)
            return rc;
    }
    return 0;
}

uint64_t gs_pl_racks_plan(const gpusched_placer *p, gs_node_plan *plan)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    const uint32_t umax = units_tabled(p);
    plan->pending = p->nout;
    if (!umax || !shares_free(r))
        return p->nout;
    const uint32_t low = p->nlevels - 1, width = c->hist_width;
    const uint32_t *racks = p->out_doms[low], nracks = p->ndoms[low];
    uint64_t avail_of[GPUSCHED_MAX_NODE_GPUS + 1] = {0};
    for (uint32_t i = 0; i < nracks; i++) {
        if (i && racks[i] <= racks[i - 1])
            return p->nout; /* not in index order: the nodes would not be */
        gs_pl_hist_add_units(r, &c->agg[low].hist[(size_t)racks[i] * width], width, avail_of);
    }
    if (!gs_pl_node_plan_make(plan, avail_of, umax, r->gpus / r->u0) || plan->pending >= p->nout)
        plan->pending = p->nout;
    return plan->pending;
}

int gs_pl_take_racks_plan(gpusched_placer *p, gs_node_plan *plan)
{
    const uint32_t low = p->nlevels - 1;
    if (plan->pending >= p->nout)
        return 0;
    return take_on_racks(p, plan, p->out_doms[low], p->ndoms[low]);
}

int gs_pl_fuller_racks(gpusched_placer *p, uint64_t target, bool *done)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    *done = false;
    const uint32_t umax = units_tabled(p);
    if (p->nlevels < 2 || !umax || !shares_free(r))
        return 0;
    const uint32_t low = p->nlevels - 1, width = c->hist_width;
    const uint32_t *racks = p->out_doms[low], nracks = p->ndoms[low];
    const uint32_t *blocks = p->out_doms[low - 1], nblocks = p->ndoms[low - 1];
    gs_arena_mark m = gs_arena_save(&p->arena);
    uint32_t *pick = gs_arena_get(&p->arena, (size_t)nracks * sizeof *pick);
    uint32_t npick = 0;
    uint64_t avail_of[GPUSCHED_MAX_NODE_GPUS + 1] = {0};
    int rc = pick ? 0 : GPUSCHED_ENOMEM;
    for (uint32_t i = 0, at = 0; !rc && i < nblocks; i++) {
        /* The chosen racks of block i (racks ascend, so do blocks). */
        uint32_t ra, rb, k = 0;
        gs_pl_children(p, (int32_t)low - 1, blocks[i], &ra, &rb);
        while (at < nracks && racks[at] < rb) {
            k += racks[at] >= ra;
            at++;
        }
        gs_rack_rank *x = gs_arena_get(&p->arena, (size_t)(rb - ra) * sizeof *x);
        if (!x) {
            rc = GPUSCHED_ENOMEM;
            break;
        }
        /* By nodes of the most units, then of fewer (the top four values,
         * 16 bits each). */
        for (uint32_t y = ra; y < rb; y++) {
            uint32_t at_least[RN_UMAX + 2];
            gs_pl_hist_at_least(r, &c->agg[low].hist[(size_t)y * width], width, umax, at_least);
            uint64_t order = 0;
            for (uint32_t v = umax; v >= 1 && v + 4 > umax; v--)
                order = order << 16 | (at_least[v] < 0xffff ? at_least[v] : 0xffff);
            x[y - ra] = (gs_rack_rank){order, y};
        }
        gs_rack_rank_heap_sort(x, rb - ra, NULL);
        for (uint32_t j = 0; j < k; j++) {
            pick[npick++] = x[j].idx;
            gs_pl_hist_add_units(r, &c->agg[low].hist[(size_t)x[j].idx * width], width, avail_of);
        }
    }
    gs_node_plan plan;
    if (rc || npick != nracks || !gs_pl_node_plan_make(&plan, avail_of, umax, r->gpus / r->u0) ||
        plan.pending > target || plan.pending >= p->nout) {
        gs_arena_restore(&p->arena, m);
        return rc;
    }
    /* Ascending racks, so that the nodes come out sorted. */
    gs_pl_sort_u32_desc(pick, npick);
    for (uint32_t i = 0; i < npick / 2; i++) {
        const uint32_t tmp = pick[i];
        pick[i] = pick[npick - 1 - i];
        pick[npick - 1 - i] = tmp;
    }
    rc = take_on_racks(p, &plan, pick, npick);
    gs_arena_restore(&p->arena, m);
    *done = !rc;
    p->fuller_racks += *done;
    return rc;
}
