/* Jobs: validated all-or-nothing allocation, release, lookup, iteration. */
#include <stdio.h>
#include <string.h>

#include "cluster-write.h"

#define GS_JOB_KNOWN_FLAGS GPUSCHED_JOB_FLAG_ALL

static const char *gs_holder_desc(const gpusched_cluster *c, uint32_t h, char *buf, size_t cap)
{
    if (h == GS_HOLDER_SHARED)
        snprintf(buf, cap, "shared by GPU fractions");
    else if (h & GS_HOLDER_RESV)
        snprintf(buf, cap, "reserved for job %llu",
                 (unsigned long long)c->resv.rec[h & ~GS_HOLDER_RESV].id);
    else if (h)
        snprintf(buf, cap, "allocated to job %llu", (unsigned long long)c->jobs.rec[h - 1].id);
    else
        snprintf(buf, cap, "free");
    return buf;
}

int gs_cluster_check_pairs(gpusched_cluster *c, uint32_t n, const uint32_t *nodes, const uint64_t *masks,
                           const gs_hold *own, const gs_ovl *ovl)
{
    const struct gpusched_topo *t = c->topo;
    if (n == 0)
        return gs_error(&c->err, GPUSCHED_EINVAL, "allocation is empty (n = 0)");
    if (!nodes || !masks)
        return gs_error(&c->err, GPUSCHED_EINVAL, "nodes or masks is NULL");
    const uint32_t *own_nodes = own ? gs_hold_nodes(own) : NULL;
    const uint64_t *own_masks = own ? gs_hold_masks(own) : NULL;
    uint32_t oi = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t node = nodes[i];
        uint64_t mask = masks[i];
        if (node >= t->nnodes)
            return gs_error(&c->err, GPUSCHED_ERANGE, "pair %u: node %u out of range (the topology has %u)",
                            i, node, t->nnodes);
        if (i > 0 && node <= nodes[i - 1])
            return gs_error(&c->err, GPUSCHED_EINVAL,
                            "pair %u: node %u follows node %u (nodes must be strictly ascending)", i, node,
                            nodes[i - 1]);
        if (mask == 0)
            return gs_error(&c->err, GPUSCHED_EINVAL, "pair %u: node %u has an empty GPU mask", i, node);
        uint64_t all = gs_node_all_mask(gs_cl_node_gpus(c, node));
        if (mask & ~all)
            return gs_error(&c->err, GPUSCHED_EINVAL, "pair %u: node %u has %u GPUs, mask 0x%llx names GPU %u",
                            i, node, gs_cl_node_gpus(c, node), (unsigned long long)mask, gs_ctz64(mask & ~all));
        if (c->nodes_not_up && c->node_health[node] != GPUSCHED_NODE_UP)
            return gs_error(&c->err, GPUSCHED_ESTATE, "pair %u: node %u is not up (health %u)", i, node,
                            c->node_health[node]);
        uint64_t usable = c->node_free[node];
        if (own) {
            while (oi < own->npairs && own_nodes[oi] < node)
                oi++;
            if (oi < own->npairs && own_nodes[oi] == node)
                usable |= own_masks[oi];
        }
        const uint64_t base = usable;
        if (ovl) {
            uint64_t given, gone;
            gs_ovl_node(ovl, node, &given, &gone);
            usable = (usable | given) & ~gone;
        }
        uint64_t taken = mask & ~usable;
        if (taken) {
            uint32_t gpu = gs_ctz64(taken);
            char what[64];
            if (ovl && (base & ((uint64_t)1 << gpu)))
                return gs_error(&c->err, GPUSCHED_EBUSY, "pair %u: node %u GPU %u is taken earlier in the transaction",
                                i, node, gpu);
            return gs_error(&c->err, GPUSCHED_EBUSY, "pair %u: node %u GPU %u is %s", i, node, gpu,
                            gs_holder_desc(c, c->gpu_holder[t->node_gpu_base[node] + gpu], what,
                                           sizeof what));
        }
    }
    return 0;
}

/* Gives `h` its pairs: inline up to GS_HOLD_INLINE, else the block `block`
 * (masks then nodes) allocated by the caller. */
void gs_hold_set_pairs(gs_hold *h, uint32_t n, const uint32_t *nodes, const uint64_t *masks, void *block)
{
    gs_hold_store_pairs(h, n, nodes, masks, block);
    uint32_t gpus = 0;
    for (uint32_t i = 0; i < n; i++)
        gpus += gs_popcount64(masks[i]);
    h->ngpus = gpus;
}

void gs_hold_store_pairs(gs_hold *h, uint32_t n, const uint32_t *nodes, const uint64_t *masks, void *block)
{
    h->npairs = n;
    uint64_t *m = h->p.in.masks;
    uint32_t *nd = h->p.in.nodes;
    if (n > GS_HOLD_INLINE) {
        m = block;
        nd = (uint32_t *)(m + n);
        h->p.out.masks = m;
        h->p.out.nodes = nd;
    }
    memcpy(m, masks, (size_t)n * sizeof *masks);
    memcpy(nd, nodes, (size_t)n * sizeof *nodes);
}

void *gs_pairs_block(const gs_alloc *a, uint32_t n)
{
    if (n <= GS_HOLD_INLINE)
        return NULL;
    return gs_malloc(a, (size_t)n * (sizeof(uint64_t) + sizeof(uint32_t)));
}

static void gs_set_holder(gpusched_cluster *c, uint32_t node, uint64_t mask, uint32_t holder)
{
    gs_holder_fill(&c->gpu_holder[gs_cl_gpu_base(c, node)], mask, holder);
}

/* Moves the GPUs of `mask` on `node` between the free, reserved and
 * allocated sets and updates the aggregates. */
void gs_cluster_node_move(gpusched_cluster *c, uint32_t node, uint64_t mask, uint64_t to_free,
                          uint64_t to_resv, uint32_t holder)
{
    uint64_t old = gs_cluster_node_avail(c, node);
    c->node_free[node] = (c->node_free[node] & ~mask) | (to_free & mask);
    c->node_resv[node] = (c->node_resv[node] & ~mask) | (to_resv & mask);
    gs_set_holder(c, node, mask, holder);
    gs_cluster_node_changed(c, node, old);
}

/* Allocated and free GPUs are never reserved, so moving between the two
 * leaves node_resv alone (one cache line less per node). */
static void gs_node_claim(gpusched_cluster *c, uint32_t node, uint64_t mask, uint32_t holder)
{
    uint64_t old = gs_cluster_node_avail(c, node);
    c->node_free[node] &= ~mask;
    gs_set_holder(c, node, mask, holder);
    gs_cluster_node_changed(c, node, old);
}

static void gs_node_unclaim(gpusched_cluster *c, uint32_t node, uint64_t mask)
{
    uint64_t old = gs_cluster_node_avail(c, node);
    c->node_free[node] |= mask;
    gs_set_holder(c, node, mask, 0);
    gs_cluster_node_changed(c, node, old);
}

void gs_cluster_commit_apply(struct gpusched_cluster *c, const gpusched_job *job, uint32_t n,
                             const uint32_t *nodes, const uint64_t *masks, void *block, gs_hold *own)
{
    if (own)
        gs_cluster_resv_drop(c, own);
    gs_hold *h = gs_holdtab_insert(&c->jobs, job->id, nodes[0]);
    h->start_time = job->start_time;
    h->cost_hint = job->cost_hint;
    h->protected_until = job->protected_until;
    h->priority = job->priority;
    h->tenant = job->tenant;
    h->flags = job->flags;
    uint32_t holder = gs_hold_slot(&c->jobs, h) + 1;
    if (n <= GS_BATCH_MIN_PAIRS) {
        gs_hold_set_pairs(h, n, nodes, masks, block);
        for (uint32_t i = 0; i < n; i++)
            gs_node_claim(c, nodes[i], masks[i], holder);
    } else {
        /* The update pass counts the GPUs as it goes. */
        gs_hold_store_pairs(h, n, nodes, masks, block);
        h->ngpus = gs_cluster_nodes_set(c, n, nodes, masks, 1, holder);
    }
}

int gs_cluster_job_copy_in(gpusched_cluster *c, gpusched_job *dst, const gpusched_job *src)
{
    int rc = gs_struct_copy_in(dst, sizeof *dst, src, GS_JOB_MIN_SIZE, &c->err, "job");
    if (rc)
        return rc;
    if (dst->flags & ~(uint32_t)GS_JOB_KNOWN_FLAGS)
        return gs_error(&c->err, GPUSCHED_EINVAL, "job %llu: unknown flags 0x%x",
                        (unsigned long long)dst->id, dst->flags & ~(uint32_t)GS_JOB_KNOWN_FLAGS);
    return 0;
}

GPUSCHED_API int gpusched_cluster_allocate(gpusched_cluster *c, const gpusched_job *job, uint32_t n,
                                        const uint32_t *nodes, const uint64_t *masks)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (n && nodes) {
        gs_prefetch_node(c, nodes[0]);
        /* Unchecked yet: the second round only for a node that exists. */
        if (n == 1 && nodes[0] < c->topo->nnodes)
            gs_prefetch_node_deps(c, nodes[0]);
    }
    gs_op op = {.kind = GS_OP_CLAIM, .n = n, .nodes = nodes, .masks = masks};
    int rc = gs_cluster_job_copy_in(c, &op.job, job);
    return rc ? rc : gs_txn_commit_one(c, &op);
}

void gs_cluster_job_drop(gpusched_cluster *c, gs_hold *h)
{
    if (gs_hold_podx(c, h)) {
        gs_pods_release(c, h);
        return;
    }
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    if (h->npairs <= GS_BATCH_MIN_PAIRS) {
        /* The nodes' lines all at once, then the ones that depend on them,
         * so that the misses of the pairs overlap instead of queueing; the
         * live-list entry the removal writes is needed last. */
        __builtin_prefetch(&c->jobs.live[h->live], 1);
        for (uint32_t i = 0; i < h->npairs; i++)
            gs_prefetch_node(c, nodes[i]);
        for (uint32_t i = 0; !(c->reg_leaf_nodes && c->reg_node_gpus) && i < h->npairs; i++)
            gs_prefetch_node_deps(c, nodes[i]);
        for (uint32_t i = 0; i < h->npairs; i++)
            gs_node_unclaim(c, nodes[i], masks[i]);
    } else
        gs_cluster_nodes_set(c, h->npairs, nodes, masks, 0, 0);
    gs_holdtab_remove(&c->jobs, &c->alloc, h);
}

static gs_hold *gs_job_arg(gpusched_cluster *c, uint64_t id)
{
    gs_hold *h = gs_cluster_job_find(c, id);
    if (!h)
        gs_error(&c->err, GPUSCHED_ENOENT, "no running job %llu", (unsigned long long)id);
    return h;
}

GPUSCHED_API int gpusched_cluster_release(gpusched_cluster *c, uint64_t job_id)
{
    if (!c)
        return GPUSCHED_EINVAL;
    /* The first node's lines load together with the record's. */
    uint32_t hint = 0;
    gs_hold *h = gs_holdtab_find_hint(&c->jobs, job_id, &hint);
    if (h)
        gs_prefetch_node(c, hint);
    gs_op op = {.kind = GS_OP_RELEASE, .found = h};
    op.job.id = job_id;
    return gs_txn_commit_one(c, &op);
}

GPUSCHED_API int gpusched_cluster_job_update(gpusched_cluster *c, const gpusched_job *job)
{
    if (!c)
        return GPUSCHED_EINVAL;
    gs_op op = {.kind = GS_OP_UPDATE};
    int rc = gs_cluster_job_copy_in(c, &op.job, job);
    return rc ? rc : gs_txn_commit_one(c, &op);
}

GPUSCHED_API uint32_t gpusched_cluster_job_count(const gpusched_cluster *c)
{
    return c ? c->jobs.count : 0;
}

int gs_cluster_id_at(gpusched_cluster *c, const gs_holdtab *t, uint32_t index, uint64_t *job_id,
                     const char *what)
{
    if (!job_id)
        return gs_error(&c->err, GPUSCHED_EINVAL, "job_id is NULL");
    if (index >= t->count)
        return gs_error(&c->err, GPUSCHED_ERANGE, "%s index %u out of range (%u %ss)", what, index, t->count,
                        what);
    *job_id = t->rec[t->live[index]].id;
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_job_at(gpusched_cluster *c, uint32_t index, uint64_t *job_id)
{
    return c ? gs_cluster_id_at(c, &c->jobs, index, job_id, "job") : GPUSCHED_EINVAL;
}

GPUSCHED_API int gpusched_cluster_job_find(gpusched_cluster *c, uint64_t job_id, gpusched_job *job)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (job) {
        uint32_t size;
        memcpy(&size, &job->size, sizeof size);
        if (size < GS_JOB_MIN_SIZE)
            return gs_error(&c->err, GPUSCHED_EINVAL,
                            "job: size field is %u, at least %zu expected (use GPUSCHED_JOB_INIT)", size,
                            GS_JOB_MIN_SIZE);
    }
    gs_hold *h = gs_job_arg(c, job_id);
    if (!h)
        return GPUSCHED_ENOENT;
    if (job) {
        gpusched_job j = gs_hold_job(h);
        /* A caller built against a shorter struct gets the fields it knows;
         * fields past the ones this library knows are the caller's to keep. */
        uint32_t size = job->size;
        memcpy(job, &j, size < sizeof j ? size : sizeof j);
        job->size = size;
    }
    return gs_ok(&c->err);
}

int gs_cluster_pairs_out(gpusched_cluster *c, const gs_hold *h, const uint32_t **nodes,
                         const uint64_t **masks, uint32_t *n, uint32_t *gpus)
{
    *nodes = gs_hold_nodes(h);
    *masks = gs_hold_masks(h);
    *n = h->npairs;
    if (gpus)
        *gpus = h->ngpus;
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_job_allocation(gpusched_cluster *c, uint64_t job_id, const uint32_t **nodes,
                                            const uint64_t **masks, uint32_t *n, uint32_t *gpus)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (!nodes || !masks || !n)
        return gs_error(&c->err, GPUSCHED_EINVAL, "nodes, masks or n is NULL");
    gs_hold *h = gs_job_arg(c, job_id);
    if (!h)
        return GPUSCHED_ENOENT;
    return gs_cluster_pairs_out(c, h, nodes, masks, n, gpus);
}
