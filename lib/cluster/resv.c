/* Reservations: capacity held for a job that is not running yet. */
#include <string.h>

#include "cluster-internal.h"

static uint32_t gs_merged_count(const gs_hold *r, uint32_t n, const uint32_t *nodes)
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

GPUSCHED_API int gpusched_cluster_reserve(gpusched_cluster *c, uint64_t job_id, uint32_t n,
                                          const uint32_t *nodes, const uint64_t *masks)
{
    if (!c)
        return GPUSCHED_EINVAL;
    int rc = gs_cluster_check_pairs(c, n, nodes, masks, NULL);
    if (rc)
        return rc;
    gs_hold *r = gs_cluster_resv_find(c, job_id);
    if (r && r->lent)
        return gs_error(&c->err, GPUSCHED_ESTATE, "reservation of job %llu is lent to a placement",
                        (unsigned long long)job_id);
    if (r) {
        uint32_t m = gs_merged_count(r, n, nodes);
        void *block = gs_pairs_block(&c->alloc, m);
        if (m > GS_HOLD_INLINE && !block)
            return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for %u reservation pairs", m);
        gs_merge_pairs(&c->alloc, r, n, nodes, masks, m, block);
    } else {
        rc = gs_holdtab_prepare(&c->resv, &c->alloc, 1);
        if (rc)
            return gs_error(&c->err, rc, "%s",
                            rc == GPUSCHED_ENOMEM ? "out of memory growing the reservation table"
                                                  : "too many reservations");
        void *block = gs_pairs_block(&c->alloc, n);
        if (n > GS_HOLD_INLINE && !block)
            return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for %u reservation pairs", n);
        r = gs_holdtab_insert(&c->resv, job_id, nodes[0]);
        gs_hold_set_pairs(r, n, nodes, masks, block);
    }
    uint32_t holder = GS_HOLDER_RESV | gs_hold_slot(&c->resv, r);
    for (uint32_t i = 0; i < n; i++)
        gs_cluster_node_move(c, nodes[i], masks[i], 0, ~(uint64_t)0, holder);
    gs_err_clear(&c->err);
    return 0;
}

GPUSCHED_API int gpusched_cluster_release_to_resv(gpusched_cluster *c, uint64_t job_id, uint64_t resv_job_id)
{
    if (!c)
        return GPUSCHED_EINVAL;
    gs_hold *h = gs_cluster_job_find(c, job_id);
    if (!h)
        return gs_error(&c->err, GPUSCHED_ENOENT, "no running job %llu", (unsigned long long)job_id);
    gs_hold *r = gs_cluster_resv_find(c, resv_job_id);
    if (r && r->lent)
        return gs_error(&c->err, GPUSCHED_ESTATE, "reservation of job %llu is lent to a placement",
                        (unsigned long long)resv_job_id);
    const uint32_t n = h->npairs;
    if (!r) {
        int rc = gs_holdtab_prepare(&c->resv, &c->alloc, 1);
        if (rc)
            return gs_error(&c->err, rc, "%s",
                            rc == GPUSCHED_ENOMEM ? "out of memory growing the reservation table"
                                                  : "too many reservations");
    }
    uint32_t m = r ? gs_merged_count(r, n, gs_hold_nodes(h)) : n;
    void *block = gs_pairs_block(&c->alloc, m);
    if (m > GS_HOLD_INLINE && !block)
        return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for %u reservation pairs", m);
    /* Everything is allocated: from here on nothing can fail. */
    if (r) {
        gs_merge_pairs(&c->alloc, r, n, gs_hold_nodes(h), gs_hold_masks(h), m, block);
    } else {
        r = gs_holdtab_insert(&c->resv, resv_job_id, gs_hold_nodes(h)[0]);
        gs_hold_set_pairs(r, n, gs_hold_nodes(h), gs_hold_masks(h), block);
    }
    /* Allocated to reserved: neither is usable for new work, so no
     * aggregate moves; only the masks and holders change. */
    uint32_t holder = GS_HOLDER_RESV | gs_hold_slot(&c->resv, r);
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < n; i++)
        gs_cluster_node_move(c, nodes[i], masks[i], 0, ~(uint64_t)0, holder);
    gs_holdtab_remove(&c->jobs, &c->alloc, h);
    gs_err_clear(&c->err);
    return 0;
}

void gs_cluster_resv_drop(gpusched_cluster *c, gs_hold *r)
{
    const uint32_t *nodes = gs_hold_nodes(r);
    const uint64_t *masks = gs_hold_masks(r);
    for (uint32_t i = 0; i < r->npairs; i++)
        gs_cluster_node_move(c, nodes[i], masks[i], ~(uint64_t)0, 0, 0);
    if (r->lent)
        c->nlent--;
    gs_holdtab_remove(&c->resv, &c->alloc, r);
}

static void gs_resv_shift(gpusched_cluster *c, gs_hold *r, uint64_t to_free, uint64_t to_resv)
{
    const uint32_t *nodes = gs_hold_nodes(r);
    const uint64_t *masks = gs_hold_masks(r);
    uint32_t holder = GS_HOLDER_RESV | gs_hold_slot(&c->resv, r);
    for (uint32_t i = 0; i < r->npairs; i++)
        gs_cluster_node_move(c, nodes[i], masks[i], to_free, to_resv, holder);
}

void gs_cluster_resv_lend(struct gpusched_cluster *c, gs_hold *r)
{
    if (r->lent)
        return;
    gs_resv_shift(c, r, ~(uint64_t)0, 0);
    r->lent = 1;
    c->nlent++;
}

void gs_cluster_resv_unlend(struct gpusched_cluster *c, gs_hold *r)
{
    if (!r->lent)
        return;
    gs_resv_shift(c, r, 0, ~(uint64_t)0);
    r->lent = 0;
    c->nlent--;
}

GPUSCHED_API int gpusched_cluster_unreserve(gpusched_cluster *c, uint64_t job_id)
{
    if (!c)
        return GPUSCHED_EINVAL;
    gs_hold *r = gs_cluster_resv_find(c, job_id);
    if (!r)
        return gs_error(&c->err, GPUSCHED_ENOENT, "no reservation for job %llu", (unsigned long long)job_id);
    gs_cluster_resv_drop(c, r);
    gs_err_clear(&c->err);
    return 0;
}

GPUSCHED_API uint32_t gpusched_cluster_resv_count(const gpusched_cluster *c)
{
    return c ? c->resv.count : 0;
}

GPUSCHED_API int gpusched_cluster_resv_at(gpusched_cluster *c, uint32_t index, uint64_t *job_id)
{
    return c ? gs_cluster_id_at(c, &c->resv, index, job_id, "reservation") : GPUSCHED_EINVAL;
}

GPUSCHED_API int gpusched_cluster_resv_alloc(gpusched_cluster *c, uint64_t job_id, const uint32_t **nodes,
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
