/* Names of nodes and domains. A topology either stores them (built or
 * parsed: a string pool plus hash indexes for lookups) or generates them
 * from its shape (uniform and preset topologies: "z0/b3/r12", "n17"), so a
 * million-GPU preset holds no string per node. Level, class and label names
 * are few and always stored, in the `meta` block. */
#ifndef GS_TOPO_NAMES_H
#define GS_TOPO_NAMES_H

#include "topo-hash.h"
#include "topo-internal.h"

enum gs_names_kind {
    GS_NAMES_STORED = 1,
    GS_NAMES_UNIFORM = 2,
};

struct gs_names {
    uint32_t kind;
    char *meta;                         /* level, class and label name strings */

    /* GS_NAMES_UNIFORM: fanout[l] children per domain of level l - 1
     * (fanout[0] top domains, fanout[nlevels] nodes per lowest domain). */
    uint32_t fanout[GS_MAX_LEVELS + 1];

    /* GS_NAMES_STORED */
    gs_pool pool;
    uint32_t *node_name;                /* pool offset per node */
    uint32_t *dom_name[GS_MAX_LEVELS];  /* pool offset of each domain's component */
    gs_hindex node_index;
    gs_hindex dom_index[GS_MAX_LEVELS]; /* (parent, component) -> domain */
};

/* Stored names: allocates the offsets and indexes for `t`'s shape and a
 * pool of `pool_len` bytes; the caller fills them, then calls
 * gs_names_index(). Without `index_nodes` the caller provides the node
 * index itself (freeze remaps the builder's instead of rehashing). */
int gs_names_new_stored(gpusched_topo *t, uint32_t pool_len, bool index_nodes);
/* Builds the hash indexes of stored names into the reserved capacity;
 * EEXIST if two nodes, or two children of one parent, share a name. */
int gs_names_index(gpusched_topo *t, bool index_nodes);
/* Generated names for a uniform topology. */
int gs_names_new_uniform(gpusched_topo *t, const uint32_t *fanout);
void gs_names_free(const gs_alloc *a, gs_names *n);
size_t gs_names_bytes(const gpusched_topo *t);

/* A domain's own component name. Stored names point into the pool;
 * generated ones are written to `tmp` (at least 16 bytes). */
const char *gs_names_component(const gpusched_topo *t, uint32_t l, uint32_t d, char *tmp,
                               size_t *len);
/* A node's name, like gs_names_component. */
const char *gs_names_node(const gpusched_topo *t, uint32_t node, char *tmp, size_t *len);

/* Look-ups by name; GPUSCHED_NONE if absent. */
uint32_t gs_names_find_node(const gpusched_topo *t, const char *s, size_t len);
uint32_t gs_names_find_child(const gpusched_topo *t, uint32_t l, uint32_t parent, const char *s,
                             size_t len);

#endif
