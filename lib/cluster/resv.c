/* Reservations: capacity held for a job that is not running yet. */
#include <string.h>

#include "cluster-write.h"

uint32_t gs_resv_merged_count(const gs_hold *r, uint32_t n, const uint32_t *nodes)
{
    const uint32_t *rn = gs_hold_nodes(r);
    uint32_t i = 0, j = 0, m = 0;
    while (i < r->npairs || j < n) {
        if (j == n || (i < r->npairs && rn[i] < nodes[j]))
            i++;
        else if (i == r->npairs || nodes[j] < rn[i])
            j++;
        else
            i++, j++;
        m++;
    }
    return m;
}

/* Replaces r's pairs with the union of its pairs and (nodes, masks), in
 * `block` (sized for `m` pairs, NULL if they fit inline). */
static void gs_merge_pairs(const gs_alloc *a, gs_hold *r, uint32_t n, const uint32_t *nodes,
                           const uint64_t *masks, uint32_t m, void *block)
{
    const uint32_t *rn = gs_hold_nodes(r);
    const uint64_t *rm = gs_hold_masks(r);
    /* Inline results are merged into locals first: r's own inline pairs
     * are being read. */
    uint64_t in_masks[GS_HOLD_INLINE];
    uint32_t in_nodes[GS_HOLD_INLINE];
    const int inl = m <= GS_HOLD_INLINE;
    uint64_t *om = inl ? in_masks : block;
    uint32_t *on = inl ? in_nodes : (uint32_t *)(om + m);
    uint32_t i = 0, j = 0, k = 0;
    while (i < r->npairs || j < n) {
        if (j == n || (i < r->npairs && rn[i] < nodes[j])) {
            on[k] = rn[i];
            om[k] = rm[i++];
        } else if (i == r->npairs || nodes[j] < rn[i]) {
            on[k] = nodes[j];
            om[k] = masks[j++];
        } else {
            on[k] = rn[i];
            om[k] = rm[i++] | masks[j++];
        }
        k++;
    }
    void *old = gs_hold_block(r);
    uint32_t gpus = r->ngpus;
    for (uint32_t x = 0; x < n; x++)
        gpus += gs_popcount64(masks[x]);
    if (inl) {
        memcpy(r->p.in.masks, in_masks, (size_t)m * sizeof *in_masks);
        memcpy(r->p.in.nodes, in_nodes, (size_t)m * sizeof *in_nodes);
    } else {
        r->p.out.masks = om;
        r->p.out.nodes = on;
    }
    r->npairs = m;
    r->ngpus = gpus;
    gs_free(a, old);
}

void gs_resv_add(struct gpusched_cluster *c, uint64_t id, uint32_t n, const uint32_t *nodes,
                 const uint64_t *masks, uint32_t merged, void *block)
{
    gs_hold *r = gs_cluster_resv_find(c, id);
    if (r) {
        gs_merge_pairs(&c->alloc, r, n, nodes, masks, merged, block);
    } else {
        r = gs_holdtab_insert(&c->resv, id, nodes[0]);
        gs_hold_set_pairs(r, n, nodes, masks, block);
    }
    uint32_t holder = GS_HOLDER_RESV | gs_hold_slot(&c->resv, r);
    for (uint32_t i = 0; i < n; i++)
        gs_cluster_node_move(c, nodes[i], masks[i], 0, ~(uint64_t)0, holder);
}

void gs_resv_take_job(struct gpusched_cluster *c, gs_hold *h, uint64_t resv_id, uint32_t merged, void *block)
{
    /* Allocated to reserved: neither is usable for new work, so no
     * aggregate moves; only the masks and holders change. */
    gs_resv_add(c, resv_id, h->npairs, gs_hold_nodes(h), gs_hold_masks(h), merged, block);
    gs_holdtab_remove(&c->jobs, &c->alloc, h);
}

GPUSCHED_API int gpusched_cluster_reserve(gpusched_cluster *c, uint64_t job_id, uint32_t n,
                                          const uint32_t *nodes, const uint64_t *masks)
{
    if (!c)
        return GPUSCHED_EINVAL;
    gs_op op = {.kind = GS_OP_RESERVE, .n = n, .nodes = nodes, .masks = masks};
    op.job.id = job_id;
    return gs_txn_commit_one(c, &op);
}

GPUSCHED_API int gpusched_cluster_release_to_resv(gpusched_cluster *c, uint64_t job_id, uint64_t resv_job_id)
{
    if (!c)
        return GPUSCHED_EINVAL;
    gs_op op = {.kind = GS_OP_RELEASE_TO_RESV, .id2 = resv_job_id};
    op.job.id = job_id;
    return gs_txn_commit_one(c, &op);
}

void gs_cluster_resv_drop(gpusched_cluster *c, gs_hold *r)
{
    const uint32_t *nodes = gs_hold_nodes(r);
    const uint64_t *masks = gs_hold_masks(r);
    for (uint32_t i = 0; i < r->npairs; i++)
        gs_cluster_node_move(c, nodes[i], masks[i], ~(uint64_t)0, 0, 0);
    gs_holdtab_remove(&c->resv, &c->alloc, r);
}

GPUSCHED_API int gpusched_cluster_unreserve(gpusched_cluster *c, uint64_t job_id)
{
    if (!c)
        return GPUSCHED_EINVAL;
    gs_op op = {.kind = GS_OP_UNRESERVE};
    op.job.id = job_id;
    return gs_txn_commit_one(c, &op);
}

GPUSCHED_API uint32_t gpusched_cluster_resv_count(const gpusched_cluster *c)
{
    return c ? c->resv.count : 0;
}

GPUSCHED_API int gpusched_cluster_resv_at(gpusched_cluster *c, uint32_t index, uint64_t *job_id)
{
    return c ? gs_cluster_id_at(c, &c->resv, index, job_id, "reservation") : GPUSCHED_EINVAL;
}

GPUSCHED_API int gpusched_cluster_resv_allocation(gpusched_cluster *c, uint64_t job_id, const uint32_t **nodes,
                                             const uint64_t **masks, uint32_t *n, uint32_t *gpus)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (!nodes || !masks || !n)
        return gs_error(&c->err, GPUSCHED_EINVAL, "nodes, masks or n is NULL");
    gs_hold *r = gs_cluster_resv_find(c, job_id);
    if (!r)
        return gs_error(&c->err, GPUSCHED_ENOENT, "no reservation for job %llu", (unsigned long long)job_id);
    return gs_cluster_pairs_out(c, r, nodes, masks, n, gpus);
}
