/* The builder's content, shared by the builder calls, the text parser and
 * freeze. Domains are interned per level by (parent id, name) in order of
 * first appearance; nodes keep their insertion order. */
#ifndef GS_TOPO_BUILDER_H
#define GS_TOPO_BUILDER_H

#include "topo-hash.h"
#include "topo-internal.h"

typedef struct gs_blevel {
    uint32_t n, cap;
    uint32_t *parent;   /* builder id at level - 1; GPUSCHED_NONE at level 0 */
    uint32_t *name;     /* pool offset of the component name */
    gs_hindex index;    /* (parent, name) -> id */
} gs_blevel;

struct gpusched_topo_builder {
    gs_alloc alloc;
    gs_err err;
    uint32_t nlevels;               /* 0 until set */
    uint32_t level_name[GS_MAX_LEVELS];
    gs_blevel lv[GS_MAX_LEVELS];

    uint32_t nnodes, ncap;
    uint32_t *node_leaf;            /* builder id at the lowest level */
    uint32_t *node_name;            /* pool offset */
    uint8_t *node_gpus;
    uint8_t *node_class;
    uint64_t *node_labels;
    gs_hindex node_index;
    uint64_t ngpus;

    uint32_t nclasses, nlabels;
    uint32_t class_name[GPUSCHED_MAX_CLASSES];
    uint32_t label_name[GPUSCHED_MAX_LABELS];
    uint32_t last_class;            /* cache: nodes usually repeat their class */
    /* Cache: consecutive nodes usually share their path, so the domain of
     * the previous add is checked before hashing. */
    uint32_t last_dom[GS_MAX_LEVELS];

    /* Named scalar resources: pool offsets of their names, and for each
     * declared one (r < nres) every node's capacity, in insertion order,
     * ncap entries. */
    uint32_t nres;
    uint32_t res_name[GPUSCHED_MAX_RESOURCES];
    uint32_t *node_res[GPUSCHED_MAX_RESOURCES];

    gs_pool pool;
};

/* What a rollback restores: every count that only grows. */
typedef struct gs_bmark {
    uint32_t nlevels, nnodes, nclasses, nlabels, nres, pool_len;
    uint32_t ndom[GS_MAX_LEVELS];
    uint64_t ngpus;
} gs_bmark;

void gs_builder_mark(const gpusched_topo_builder *b, gs_bmark *m);
/* Forgets everything added since the mark; never allocates. */
void gs_builder_rollback(gpusched_topo_builder *b, const gs_bmark *m);

/* Name rules shared with the text format: 1..GPUSCHED_MAX_NAME bytes
 * of [A-Za-z0-9_.:+-], so that any stored name prints and parses back. */
static inline bool gs_name_char(unsigned char c)
{
    return (unsigned)((c | 0x20) - 'a') < 26 || (unsigned)(c - '0') < 10 || c == '_' || c == '-' ||
           c == '.' || c == ':' || c == '+';
}
/* NULL if valid, else a reason. */
const char *gs_name_check(const char *s, size_t len);

/* Interning of classes and labels; `*id` gets the index. ELIMIT when full.
 * Atomic: on error nothing changes. */
int gs_builder_class(gpusched_topo_builder *b, const char *name, size_t len, uint32_t *id);
int gs_builder_label(gpusched_topo_builder *b, const char *name, size_t len, uint32_t *id);
/* Declares a resource (or finds it: then nothing changes); EINVAL for a bad
 * or reserved name, ELIMIT past GPUSCHED_MAX_RESOURCES. Atomic. */
int gs_builder_resource(gpusched_topo_builder *b, const char *name, size_t len, uint32_t *id);
/* Finds a declared resource; GPUSCHED_NONE if absent. */
uint32_t gs_builder_resource_find(const gpusched_topo_builder *b, const char *name, size_t len);
/* The node keys of the text format, which cannot name a resource. */
bool gs_resource_reserved(const char *name, size_t len);

/* add_node with lengths instead of NUL-terminated strings (the parser's
 * entry point) and class/labels already interned. Errors go to b->err
 * without position; the parser prefixes its own. */
typedef struct gs_span {
    const char *s;
    size_t len;
} gs_span;
int gs_builder_add(gpusched_topo_builder *b, const gs_span *path, gs_span name, uint32_t gpus,
                   uint32_t cls, uint64_t labels);
/* gs_builder_add for a caller that has already checked levels, GPUs and
 * every name (the parser checks them to report columns). The new node's
 * capacity of every declared resource is 0; the caller may then write
 * b->node_res[r][b->nnodes - 1]. */
int gs_builder_add_valid(gpusched_topo_builder *b, const gs_span *path, gs_span name, uint32_t gpus,
                         uint32_t cls, uint64_t labels);
/* Starts loading the node-index slot of `name` into the cache, so that the
 * miss overlaps the rest of the add's checks. */
void gs_builder_prefetch_name(const gpusched_topo_builder *b, const char *s, size_t len);
int gs_builder_levels(gpusched_topo_builder *b, uint32_t nlevels, const gs_span *names);

#endif
