/* Node health and faults: which jobs a node failure or drain hits. */
#include "cluster-write.h"

/* Slots of the jobs on `node`, each once, by lowest GPU; returns how many
 * (at most 64, one per GPU). */
static uint32_t gs_node_job_slots(const gpusched_cluster *c, uint32_t node, uint32_t *slots)
{
    const uint32_t *h = &c->gpu_holder[c->topo->node_gpu_base[node]];
    uint64_t allocated = gs_cluster_node_allocated(c, node);
    uint32_t n = 0;
    if (c->node_shared)
        allocated &= ~c->node_shared[node];
    for (; allocated; allocated &= allocated - 1) {
        uint32_t s = h[gs_ctz64(allocated)] - 1;
        uint32_t k = 0;
        while (k < n && slots[k] != s)
            k++;
        if (k == n)
            slots[n++] = s;
    }
    return n;
}

/* Whether podx job `h` has pods on `node` that hold no whole GPU there
 * (fractions or pods without GPUs): the holder entries do not name it. */
static bool gs_podx_on_node(const gpusched_cluster *c, const gs_hold *h, uint32_t node)
{
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++)
        if (nodes[i] == node)
            return gs_hold_podx(c, h)->milli || masks[i] == 0;
    return false;
}

static int gs_node_jobs_out(gpusched_cluster *c, uint32_t node, uint64_t *ids, uint32_t cap, uint32_t *count)
{
    uint32_t slots[GPUSCHED_MAX_NODE_GPUS];
    uint32_t n = gs_node_job_slots(c, node, slots), total = n;
    for (uint32_t k = 0; c->podx_jobs && k < c->jobs.count; k++)
        total += gs_hold_podx(c, &c->jobs.rec[c->jobs.live[k]]) && gs_podx_on_node(c, &c->jobs.rec[c->jobs.live[k]], node);
    if (count)
        *count = total;
    if (total > cap)
        return gs_error(&c->err, GPUSCHED_ERANGE, "node %u holds %u jobs, the buffer %u", node, total, cap);
    if (total && !ids)
        return gs_error(&c->err, GPUSCHED_EINVAL, "ids is NULL");
    for (uint32_t i = 0; i < n; i++)
        ids[i] = c->jobs.rec[slots[i]].id;
    for (uint32_t k = 0; c->podx_jobs && k < c->jobs.count; k++) {
        const gs_hold *h = &c->jobs.rec[c->jobs.live[k]];
        if (gs_hold_podx(c, h) && gs_podx_on_node(c, h, node))
            ids[n++] = h->id;
    }
    return 0;
}

GPUSCHED_API int gpusched_cluster_node_jobs(gpusched_cluster *c, uint32_t node, uint64_t *ids,
                                            uint32_t cap, uint32_t *count)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (!count)
        return gs_error(&c->err, GPUSCHED_EINVAL, "count is NULL");
    int rc = gs_cluster_node_arg(c, node);
    if (rc || (rc = gs_node_jobs_out(c, node, ids, cap, count)))
        return rc;
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_node_health_set(gpusched_cluster *c, uint32_t node, uint32_t health,
                                                  uint64_t *hit, uint32_t cap, uint32_t *nhit)
{
    if (!c)
        return GPUSCHED_EINVAL;
    int rc = gs_cluster_node_arg(c, node);
    if (rc)
        return rc;
    if (health >= GS_NODE_HEALTHS)
        return gs_error(&c->err, GPUSCHED_EINVAL, "health %u is not a gpusched_node_health", health);
    if ((rc = gs_node_jobs_out(c, node, hit, cap, nhit)))
        return rc;
    /* The health it has: nothing changes, so nothing is journaled (a
     * replay would apply a record that does nothing). */
    if (c->node_health[node] == health)
        return gs_ok(&c->err);
    gs_op op = {.kind = GS_OP_HEALTH, .node = node, .health = health};
    return gs_txn_commit_one(c, &op);
}
