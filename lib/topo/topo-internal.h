/* The frozen topology as the other modules see it. Internal; never installed.
 *
 * Nodes are numbered so that every domain at every level is one contiguous
 * range of node indices [dom_start[l][d], dom_start[l][d+1]). Level 0 is the
 * top level (for example "zone"); level nlevels-1 is the lowest domain level
 * (for example "rack"), whose children are nodes. Domains of a level are
 * numbered in node order, so the children of domain d at level l are the
 * contiguous domains [child_start[l][d], child_start[l][d+1]) of level l+1.
 *
 * Everything here is read-only after freeze and safe to read from many
 * threads. The numeric layout is what cluster and place rely on; names live
 * behind functions so that generated topologies need not store a string per
 * node. */
#ifndef GS_TOPO_INTERNAL_H
#define GS_TOPO_INTERNAL_H

#include "core.h"
#include "gpusched/topo.h"

#define GS_MAX_LEVELS GPUSCHED_MAX_LEVELS

typedef struct gs_names gs_names; /* owned by lib/topo, opaque elsewhere */

struct gpusched_topo {
    gs_alloc alloc;
    uint32_t refcount;           /* atomic builtins only */
    uint32_t nlevels;            /* 1 .. GS_MAX_LEVELS */
    uint32_t nnodes;
    uint32_t max_node_gpus;      /* largest node_gpus[] value */
    uint64_t ngpus;

    uint32_t ndom[GS_MAX_LEVELS];
    /* ndom[l] + 1 entries each; the last is nnodes (dom_start) or
     * ndom[l+1] (child_start). child_start of the lowest level is NULL:
     * its children are the nodes in dom_start. */
    uint32_t *dom_start[GS_MAX_LEVELS];
    uint32_t *child_start[GS_MAX_LEVELS];
    /* Parent domain at level l-1; NULL for level 0. */
    uint32_t *dom_parent[GS_MAX_LEVELS];

    /* Per node, struct of arrays. */
    uint8_t *node_gpus;          /* 0 .. 64 (0: a node with cpu and memory only) */
    uint8_t *node_class;         /* index into class names */
    uint64_t *node_labels;       /* bit i: label i */
    uint32_t *node_leaf;         /* domain at level nlevels-1 */
    uint32_t *node_gpu_base;     /* prefix sum of node_gpus: first global GPU index */

    uint32_t nclasses;
    uint32_t nlabels;
    char *level_names[GS_MAX_LEVELS];
    char **class_names;          /* nclasses */
    char *label_names[64];

    /* Named scalar resources (cpu, memory, ...): node_res[r][n] is node n's
     * capacity of resource r, for r < nres; NULL beyond. */
    uint32_t nres;
    char *res_names[GPUSCHED_MAX_RESOURCES];
    uint32_t *node_res[GPUSCHED_MAX_RESOURCES];

    gs_names *names;             /* node and domain names, or a generator */
};

/* Domain of `node` at level `l`, by walking parents up from the leaf:
 * O(nlevels - l). */
static inline uint32_t gs_topo_node_domain(const struct gpusched_topo *t, uint32_t node, uint32_t l)
{
    uint32_t d = t->node_leaf[node];
    for (uint32_t k = t->nlevels - 1; k > l; k--)
        d = t->dom_parent[k][d];
    return d;
}

static inline uint32_t gs_topo_dom_first(const struct gpusched_topo *t, uint32_t l, uint32_t d)
{
    return t->dom_start[l][d];
}

static inline uint32_t gs_topo_dom_nodes(const struct gpusched_topo *t, uint32_t l, uint32_t d)
{
    return t->dom_start[l][d + 1] - t->dom_start[l][d];
}

#endif
