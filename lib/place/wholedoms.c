/* Gangs whose only constraint is slices that are each a whole domain of
 * one level (NVL72 racks asked whole, every large gang of the scheduler's
 * simulator): such a gang fits, up to what only a search sees (nodes down,
 * shared GPUs, nodes of another size), once K = G / S domains are wholly
 * free. A caller that frees GPUs job by job in an order of its own (the
 * reservation search: running jobs by expected end; preemption: victims in
 * the plan's order) counts where K is reached from the aggregates and the
 * jobs' GPUs, without lending anyone, and probes there first. It is a
 * hint: the callers' searches are exact whatever it says, since fitting is
 * monotone in the jobs lent. */
#include <string.h>

#include "place-internal.h"

bool gs_pl_whole_begin(const struct gpusched_cluster *c, const gs_pl_req *r, gs_alloc *a, uint32_t **scratch,
                       uint32_t *cap, gs_pl_whole *w)
{
    const struct gpusched_topo *t = c->topo;
    if (r->ncons != 1 || r->stop >= 0 || r->pods_path || r->in.gpu_class != GPUSCHED_NONE ||
        r->in.labels_required || r->in.labels_forbidden)
        return false;
    const uint32_t l = r->cons[0].level, size = r->cons[0].size, nd = t->ndom[l];
    const uint32_t *dom_gpus = c->agg[l].dom_gpus;
    for (uint32_t d = 0; d < nd; d++)
        if (dom_gpus[d] != size)
            return false;
    if (gs_grow(a, (void **)scratch, cap, nd, sizeof **scratch))
        return false;
    uint32_t *free = *scratch;
    memcpy(free, c->agg[l].free_gpus, (size_t)nd * sizeof *free);
    for (uint32_t i = 0; i < r->in.avoid_count; i++)
        free[gs_topo_node_domain(t, r->in.avoid_nodes[i], l)] = GS_PL_WHOLE_OUT;
    uint64_t whole = 0;
    for (uint32_t d = 0; d < nd; d++)
        whole += free[d] == size;
    *w = (gs_pl_whole){.c = c, .level = l, .size = size, .want = r->gpus / size, .whole = whole, .free = free};
    return true;
}

bool gs_pl_whole_add(gs_pl_whole *w, const gs_hold *h)
{
    const struct gpusched_topo *t = w->c->topo;
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++) {
        uint32_t *f = &w->free[gs_topo_node_domain(t, nodes[i], w->level)];
        if (*f == GS_PL_WHOLE_OUT)
            continue;
        const uint32_t before = *f;
        *f += gs_popcount64(masks[i]);
        w->whole += before < w->size && *f >= w->size;
    }
    return w->whole >= w->want;
}
