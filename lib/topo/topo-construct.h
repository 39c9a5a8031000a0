/* Shared by the ways a topology comes to exist (freeze, uniform, image
 * read): allocation of the numeric arrays for a given shape, the name
 * tables, and the derived fields. */
#ifndef GS_TOPO_CONSTRUCT_H
#define GS_TOPO_CONSTRUCT_H

#include "topo-names.h"

/* Allocates a topology with every array for `nlevels`, `ndom[]` and
 * `nnodes` (contents undefined) and an empty gs_names. refcount is 1. */
int gs_topo_alloc(const gs_alloc *a, uint32_t nlevels, const uint32_t *ndom, uint32_t nnodes,
                  gpusched_topo **out);
/* Frees a topology regardless of its reference count; accepts partial ones. */
void gs_topo_destroy(gpusched_topo *t);
/* Copies level, class and label names into one block owned by the names. */
int gs_topo_set_meta(gpusched_topo *t, const char *const *levels, uint32_t nclasses,
                     const char *const *classes, uint32_t nlabels, const char *const *labels);
/* Declares `nres` resources (at most GPUSCHED_MAX_RESOURCES): copies their
 * names and allocates every node's capacity of each, zeroed. */
int gs_topo_set_resources(gpusched_topo *t, uint32_t nres, const char *const *names);
/* From node_gpus: node_gpu_base, ngpus, max_node_gpus. ELIMIT if the GPUs
 * do not fit 32-bit global indexes. */
int gs_topo_finish_gpus(gpusched_topo *t);
/* From dom_start of the lowest level and child_start: dom_start of every
 * upper level. */
void gs_topo_finish_ranges(gpusched_topo *t);

/* The argument checks of gpusched_topo_uniform. */
int gs_uniform_check_args(uint32_t nlevels, const char *const *level_names, const uint32_t *fanout,
                          uint32_t gpus_per_node, const char *gpu_class, gs_err *e);
/* gpusched_topo_uniform with a resolved allocator and an error sink. */
int gs_topo_uniform(uint32_t nlevels, const char *const *level_names, const uint32_t *fanout,
                    uint32_t gpus_per_node, const char *gpu_class, const gs_alloc *a,
                    gpusched_topo **out, gs_err *e);

#endif
