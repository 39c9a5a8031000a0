/* The cluster handle: lifetime, node and GPU state queries. */
#include <string.h>

#include "cluster-write.h"

/* Each field is set only when the arrays agree with the arithmetic
 * everywhere, so the shortcuts give exactly what the arrays hold. */
void gs_cluster_find_regular(struct gpusched_cluster *c)
{
    const struct gpusched_topo *t = c->topo;
    uint32_t g = t->nnodes ? t->node_gpus[0] : 0;
    for (uint32_t n = 0; g && n < t->nnodes; n++)
        if (t->node_gpus[n] != g || t->node_gpu_base[n] != n * g)
            g = 0;
    c->reg_node_gpus = g;
    for (uint32_t l = 0; l < t->nlevels; l++) {
        uint32_t nd = t->ndom[l];
        uint32_t size = nd && t->nnodes % nd == 0 ? t->nnodes / nd : 0;
        for (uint32_t d = 0; size && d <= nd; d++)
            if (t->dom_start[l][d] != d * size)
                size = 0;
        c->reg_dom_nodes[l] = size;
        uint32_t fan = 0;
        if (l > 0 && t->ndom[l - 1] && nd % t->ndom[l - 1] == 0) {
            fan = nd / t->ndom[l - 1];
            for (uint32_t d = 0; fan && d < nd; d++)
                if (t->dom_parent[l][d] != d / fan)
                    fan = 0;
        }
        c->reg_fan[l] = fan;
    }
    uint32_t leaf = t->nlevels ? c->reg_dom_nodes[t->nlevels - 1] : 0;
    for (uint32_t n = 0; leaf && n < t->nnodes; n++)
        if (t->node_leaf[n] != n / leaf)
            leaf = 0;
    c->reg_leaf_nodes = leaf;
}

int gs_cluster_create(gpusched_topo *topo, const gs_alloc *a, gpusched_cluster **out)
{
    gpusched_cluster *c = gs_calloc(a, 1, sizeof *c);
    if (!c)
        return GPUSCHED_ENOMEM;
    c->alloc = *a;
    c->refs = 1;
    c->topo = topo;
    c->nlevels = topo->nlevels;
    c->hist_width = topo->max_node_gpus + 1;
    gs_cluster_find_regular(c);
    c->node_free = gs_malloc(a, (size_t)topo->nnodes * sizeof *c->node_free);
    c->node_resv = gs_calloc(a, topo->nnodes, sizeof *c->node_resv);
    c->node_health = gs_calloc(a, topo->nnodes, sizeof *c->node_health);
    c->gpu_holder = gs_calloc(a, (size_t)topo->ngpus, sizeof *c->gpu_holder);
    if (!c->node_free || !c->node_resv || !c->node_health || !c->gpu_holder ||
        gs_aggs_alloc(c, a) || gs_pods_create(c)) {
        c->topo = NULL;
        gpusched_cluster_unref(c);
        return GPUSCHED_ENOMEM;
    }
    for (uint32_t n = 0; n < topo->nnodes; n++)
        c->node_free[n] = gs_node_all_mask(topo->node_gpus[n]);
    gs_aggs_compute(c, c);
    gpusched_topo_ref(topo);
    *out = c;
    return 0;
}

GPUSCHED_API int gpusched_cluster_new(gpusched_topo *topo, const gpusched_allocator *alloc,
                                      gpusched_cluster **out)
{
    if (!topo || !out)
        return GPUSCHED_EINVAL;
    gs_alloc a;
    int rc = gs_alloc_init(&a, alloc);
    if (rc)
        return GPUSCHED_EINVAL;
    return gs_cluster_create(topo, &a, out);
}

GPUSCHED_API gpusched_cluster *gpusched_cluster_ref(gpusched_cluster *c)
{
    if (c)
        c->refs++;
    return c;
}

/* Frees the cluster whatever its count: its creator's failure paths. */
void gs_cluster_destroy(gpusched_cluster *c)
{
    if (!c)
        return;
    gs_alloc a = c->alloc;
    gs_txn_free(c);
    gs_journal_free(c);
    gs_pindex_free(c);
    gs_holdtab_free(&c->jobs, &a);
    gs_holdtab_free(&c->resv, &a);
    gs_aggs_free(c, &a);
    gs_free(&a, c->node_free);
    gs_free(&a, c->node_resv);
    gs_free(&a, c->node_health);
    gs_free(&a, c->gpu_holder);
    gs_pods_destroy(c);
    gs_stamps_free(c);
    gpusched_topo_unref(c->topo);
    gs_free(&a, c);
}

GPUSCHED_API void gpusched_cluster_unref(gpusched_cluster *c)
{
    if (c && --c->refs == 0)
        gs_cluster_destroy(c);
}

GPUSCHED_API const char *gpusched_cluster_errmsg(const gpusched_cluster *c)
{
    return c ? c->err.msg : "cluster is NULL";
}

GPUSCHED_API gpusched_topo *gpusched_cluster_topo(const gpusched_cluster *c)
{
    return c ? c->topo : NULL;
}

GPUSCHED_API size_t gpusched_cluster_memory_bytes(const gpusched_cluster *c)
{
    if (!c)
        return 0;
    const struct gpusched_topo *t = c->topo;
    return sizeof *c + (size_t)t->nnodes * (2 * sizeof(uint64_t) + sizeof(uint8_t)) +
           (size_t)t->ngpus * sizeof(uint32_t) + gs_aggs_bytes(c) + gs_holdtab_bytes(&c->jobs) +
           gs_holdtab_bytes(&c->resv) + gs_txn_bytes(c) + gs_journal_bytes(c) + gs_pindex_bytes(c) + gs_pods_bytes(c) +
           gs_stamps_bytes(c);
}

int gs_cluster_node_arg(gpusched_cluster *c, uint32_t node)
{
    if (node >= c->topo->nnodes)
        return gs_error(&c->err, GPUSCHED_ERANGE, "node %u out of range (the topology has %u)", node,
                        c->topo->nnodes);
    return 0;
}

GPUSCHED_API int gpusched_cluster_node_state(gpusched_cluster *c, uint32_t node, uint64_t *free_mask,
                                             uint64_t *reserved_mask, uint64_t *allocated_mask,
                                             uint32_t *health)
{
    if (!c)
        return GPUSCHED_EINVAL;
    int rc = gs_cluster_node_arg(c, node);
    if (rc)
        return rc;
    if (free_mask)
        *free_mask = c->node_free[node];
    if (reserved_mask)
        *reserved_mask = c->node_resv[node];
    if (allocated_mask)
        *allocated_mask = gs_cluster_node_allocated(c, node);
    if (health)
        *health = c->node_health[node];
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_nodes_state(gpusched_cluster *c, uint32_t first, uint32_t count,
                                              uint64_t *free_masks, uint64_t *reserved_masks,
                                              uint64_t *allocated_masks, uint32_t *health)
{
    if (!c)
        return GPUSCHED_EINVAL;
    const uint32_t nn = c->topo->nnodes;
    if (first > nn || count > nn - first)
        return gs_error(&c->err, GPUSCHED_ERANGE, "nodes %u to %llu out of range (the topology has %u)", first,
                        (unsigned long long)first + count - 1, nn);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t n = first + i;
        if (free_masks)
            free_masks[i] = c->node_free[n];
        if (reserved_masks)
            reserved_masks[i] = c->node_resv[n];
        if (allocated_masks)
            allocated_masks[i] = gs_cluster_node_allocated(c, n);
        if (health)
            health[i] = c->node_health[n];
    }
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_gpu_state(gpusched_cluster *c, uint32_t node, uint32_t gpu,
                                            uint32_t *state, uint64_t *job_id)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (!state)
        return gs_error(&c->err, GPUSCHED_EINVAL, "state is NULL");
    int rc = gs_cluster_node_arg(c, node);
    if (rc)
        return rc;
    if (gpu >= c->topo->node_gpus[node])
        return gs_error(&c->err, GPUSCHED_ERANGE, "gpu %u out of range (node %u has %u)", gpu, node,
                        c->topo->node_gpus[node]);
    uint32_t h = c->gpu_holder[c->topo->node_gpu_base[node] + gpu];
    uint64_t id = 0;
    if (h == GS_HOLDER_SHARED) {
        *state = GPUSCHED_GPU_SHARED;
    } else if (h & GS_HOLDER_RESV) {
        *state = GPUSCHED_GPU_RESERVED;
        id = c->resv.rec[h & ~GS_HOLDER_RESV].id;
    } else if (h) {
        *state = GPUSCHED_GPU_ALLOCATED;
        id = c->jobs.rec[h - 1].id;
    } else {
        *state = GPUSCHED_GPU_FREE;
    }
    if (job_id)
        *job_id = id;
    return gs_ok(&c->err);
}
