/* The fewest nodes any R racks can hold the gang on, from the racks'
 * histograms of nodes by free GPUs (no node read): doc/placement.md,
 * "Counted levels".
 *
 * Inside any R racks (racks: the lowest domain level) the nodes holding v
 * units or more number at most T_v, the sum of the R largest per-rack
 * counts of such nodes. N nodes hold at most sum_v min(N, T_v) units (a
 * node of u units counts once for each v <= u), so a placement on R racks
 * uses at least the least N for which that reaches the gang. When the
 * search counted down to racks has found the fewest racks any placement
 * needs, every optimal placement uses exactly R of them, and its nodes are
 * at least this bound: an answer that meets it is optimal down to nodes.
 *
 * Cost: one pass over the racks' histograms (racks x node sizes), far
 * below the budget of a gang spanning as many racks. */
#include "place-internal.h"

/* Largest unit value per node tabled, and largest per-rack node count. */
#define RN_UMAX 16
#define RN_COUNT_MAX 256
/* Histogram entries read per node of the answer, at most. */
#define RN_READ_PER_NODE 16

uint64_t gs_pl_fewest_nodes_in_racks(gpusched_placer *p, uint64_t racks)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    const uint32_t low = p->nlevels - 1, width = c->hist_width;
    const uint32_t umax = r->whole_w ? 1 : (width - 1) / r->u0;
    if (!r->agg_exact_nodes || !p->nlevels || umax > RN_UMAX || umax == 0)
        return 0;
    /* Only where reading every rack costs what the answer does. */
    if ((uint64_t)t->ndom[low] * width > RN_READ_PER_NODE * (uint64_t)p->nout)
        return 0;
    /* by_count[v][n]: racks with exactly n nodes of v units or more. */
    gs_arena_mark m = gs_arena_save(&p->arena);
    uint32_t *by_count = gs_arena_get(&p->arena, (size_t)(umax + 1) * RN_COUNT_MAX * sizeof *by_count);
    if (!by_count)
        return 0;
    for (size_t i = 0; i < (size_t)(umax + 1) * RN_COUNT_MAX; i++)
        by_count[i] = 0;
    const uint32_t *h = c->agg[low].hist;
    for (uint32_t d = 0; d < t->ndom[low]; d++, h += width) {
        uint32_t at_least[RN_UMAX + 2] = {0};
        for (uint32_t k = r->u0; k < width; k++) {
            const uint32_t v = gs_pl_hist_units(r, k);
            at_least[v] += h[k];
        }
        for (uint32_t v = umax; v >= 1; v--) {
            at_least[v] += at_least[v + 1];
            if (at_least[v] >= RN_COUNT_MAX) {
                gs_arena_restore(&p->arena, m);
                return 0;
            }
            by_count[(size_t)v * RN_COUNT_MAX + at_least[v]]++;
        }
    }
    uint64_t tv[RN_UMAX + 1] = {0};
    for (uint32_t v = 1; v <= umax; v++) {
        uint64_t left = racks;
        for (uint32_t n = RN_COUNT_MAX; n-- > 1 && left;) {
            const uint64_t take = by_count[(size_t)v * RN_COUNT_MAX + n] < left ? by_count[(size_t)v * RN_COUNT_MAX + n]
                                                                                : left;
            tv[v] += take * n;
            left -= take;
        }
    }
    gs_arena_restore(&p->arena, m);
    uint64_t most = 0;
    for (uint32_t v = 1; v <= umax; v++)
        most += tv[v];
    return most < r->gpus / r->u0 ? 0 : gs_pl_least_nodes(tv, umax, r->gpus / r->u0);
}

/* The domains at every level of the nodes in the result (sorted, so each
 * level's domains come out sorted and once each). */
static int domains_of_nodes(gpusched_placer *p)
{
    const struct gpusched_topo *t = p->t;
    const gpusched_place_result *res = p->res;
    for (uint32_t l = 0; l < p->nlevels; l++)
        p->ndoms[l] = 0;
    for (uint32_t i = 0; i < p->nout; i++) {
        uint32_t d = t->node_leaf[res->nodes[i]];
        for (uint32_t l = p->nlevels; l-- > 0;) {
            if (p->ndoms[l] && p->out_doms[l][p->ndoms[l] - 1] == d)
                break; /* and so are its ancestors */
            int rc = gs_pl_use_domain(p, l, d);
            if (rc)
                return rc;
            if (l)
                d = t->dom_parent[l][d];
        }
    }
    return 0;
}

int gs_pl_fewest_nodes_of_racks(gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    const uint32_t low = p->nlevels - 1, width = c->hist_width;
    const uint32_t umax = r->whole_w ? 1 : (width - 1) / r->u0;
    if (!r->agg_exact_nodes || !p->nlevels || umax > RN_UMAX || !umax)
        return 0;
    for (uint32_t i = 0; i < r->ncons; i++)
        if (r->cons[i].size < r->gpus)
            return 0; /* a slice: the racks' shares are not free to move */
    const uint32_t *racks = p->out_doms[low], nracks = p->ndoms[low];
    uint64_t avail_of[GPUSCHED_MAX_NODE_GPUS + 1] = {0};
    for (uint32_t i = 0; i < nracks; i++) {
        if (i && racks[i] <= racks[i - 1])
            return 0; /* not in index order: the nodes would not be */
        const uint32_t *h = &c->agg[low].hist[(size_t)racks[i] * width];
        for (uint32_t k = r->u0; k < width; k++)
            avail_of[gs_pl_hist_units(r, k)] += h[k];
    }
    gs_node_plan plan;
    if (!gs_pl_node_plan_make(&plan, avail_of, umax, r->gpus / r->u0) || plan.pending >= p->nout)
        return 0;
    p->nout = 0;
    for (uint32_t i = 0; i < nracks && plan.pending; i++) {
        int rc = gs_pl_node_plan_take(p, &plan, t->dom_start[low][racks[i]], t->dom_start[low][racks[i] + 1]);
        if (rc)
            return rc;
    }
    return domains_of_nodes(p);
}
