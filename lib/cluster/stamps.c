/* Per-node change counters, for readers that cache an answer per node
 * (cluster-internal.h, node_stamp). Started on demand: a cluster nobody
 * caches against keeps no counters and its writers test one pointer. */
#include "cluster-write.h"

int gs_cluster_track_nodes(struct gpusched_cluster *c)
{
    if (c->node_stamp)
        return 0;
    const uint32_t n = c->topo->nnodes;
    uint32_t *s = gs_malloc(&c->alloc, (size_t)n * sizeof *s);
    if (!s)
        return GPUSCHED_ENOMEM;
    /* 1, never 0: a reader's "not seen yet" is 0. */
    for (uint32_t i = 0; i < n; i++)
        s[i] = 1;
    c->node_stamp = s;
    return 0;
}

void gs_stamps_free(struct gpusched_cluster *c)
{
    gs_free(&c->alloc, c->node_stamp);
    c->node_stamp = NULL;
}

size_t gs_stamps_bytes(const struct gpusched_cluster *c)
{
    return c->node_stamp ? (size_t)c->topo->nnodes * sizeof *c->node_stamp : 0;
}
