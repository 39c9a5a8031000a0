#include <stdio.h>
#include <string.h>

#include "topo-names.h"

int gs_names_new_stored(gpusched_topo *t, uint32_t pool_len, bool index_nodes)
{
    const gs_alloc *a = &t->alloc;
    gs_names *n = t->names;
    n->kind = GS_NAMES_STORED;
    n->pool.buf = gs_malloc(a, pool_len);
    n->pool.cap = n->pool.len = pool_len;
    n->node_name = gs_calloc(a, t->nnodes, sizeof *n->node_name);
    if (!n->pool.buf || !n->node_name)
        return GPUSCHED_ENOMEM;
    int rc = index_nodes ? gs_hindex_reserve(&n->node_index, a, t->nnodes) : 0;
    for (uint32_t l = 0; !rc && l < t->nlevels; l++) {
        n->dom_name[l] = gs_calloc(a, t->ndom[l], sizeof *n->dom_name[l]);
        if (!n->dom_name[l])
            return GPUSCHED_ENOMEM;
        rc = gs_hindex_reserve(&n->dom_index[l], a, t->ndom[l]);
    }
    return rc;
}

#define GS_BATCH 32

/* Node names are hashed a batch ahead and their slots prefetched, so the
 * cache misses of a large index overlap instead of queueing. */
static int gs_index_nodes(gpusched_topo *t)
{
    gs_names *n = t->names;
    uint32_t hash[GS_BATCH];
    size_t len[GS_BATCH];
    for (uint32_t base = 0; base < t->nnodes; base += GS_BATCH) {
        uint32_t m = t->nnodes - base < GS_BATCH ? t->nnodes - base : GS_BATCH;
        for (uint32_t k = 0; k < m; k++) {
            const char *s = gs_pool_str(&n->pool, n->node_name[base + k]);
            len[k] = strlen(s);
            hash[k] = gs_hash32(s, len[k], 0);
            __builtin_prefetch(&n->node_index.slots[gs_hindex_first(&n->node_index, hash[k])]);
        }
        for (uint32_t k = 0; k < m; k++) {
            const char *s = gs_pool_str(&n->pool, n->node_name[base + k]);
            if (gs_names_find_node(t, s, len[k]) != GPUSCHED_NONE)
                return GPUSCHED_EEXIST;
            gs_hindex_insert(&n->node_index, base + k, hash[k]);
        }
    }
    return 0;
}

int gs_names_index(gpusched_topo *t, bool index_nodes)
{
    gs_names *n = t->names;
    if (index_nodes && gs_index_nodes(t))
        return GPUSCHED_EEXIST;
    for (uint32_t l = 0; l < t->nlevels; l++)
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            const char *s = gs_pool_str(&n->pool, n->dom_name[l][d]);
            size_t len = strlen(s);
            uint32_t parent = l ? t->dom_parent[l][d] : GPUSCHED_NONE;
            if (gs_names_find_child(t, l, parent, s, len) != GPUSCHED_NONE)
                return GPUSCHED_EEXIST;
            gs_hindex_insert(&n->dom_index[l], d, gs_dom_hash(parent, s, len));
        }
    return 0;
}

int gs_names_new_uniform(gpusched_topo *t, const uint32_t *fanout)
{
    t->names->kind = GS_NAMES_UNIFORM;
    memcpy(t->names->fanout, fanout, (t->nlevels + 1) * sizeof *fanout);
    return 0;
}

void gs_names_free(const gs_alloc *a, gs_names *n)
{
    if (!n)
        return;
    gs_free(a, n->meta);
    gs_free(a, n->pool.buf);
    gs_free(a, n->node_name);
    gs_hindex_free(&n->node_index, a);
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++) {
        gs_free(a, n->dom_name[l]);
        gs_hindex_free(&n->dom_index[l], a);
    }
    gs_free(a, n);
}

size_t gs_names_bytes(const gpusched_topo *t)
{
    const gs_names *n = t->names;
    size_t bytes = sizeof *n + n->pool.cap + gs_hindex_bytes(&n->node_index);
    if (n->node_name)
        bytes += (size_t)t->nnodes * sizeof *n->node_name;
    for (uint32_t l = 0; l < t->nlevels; l++) {
        bytes += gs_hindex_bytes(&n->dom_index[l]);
        if (n->dom_name[l])
            bytes += (size_t)t->ndom[l] * sizeof *n->dom_name[l];
    }
    return bytes;
}

static uint32_t gs_names_local(const gpusched_topo *t, uint32_t l, uint32_t d)
{
    return l ? d - t->child_start[l - 1][t->dom_parent[l][d]] : d;
}

const char *gs_names_component(const gpusched_topo *t, uint32_t l, uint32_t d, char *tmp,
                               size_t *len)
{
    const gs_names *n = t->names;
    if (n->kind == GS_NAMES_STORED) {
        const char *s = gs_pool_str(&n->pool, n->dom_name[l][d]);
        *len = strlen(s);
        return s;
    }
    *len = (size_t)snprintf(tmp, 16, "%c%u", t->level_names[l][0], gs_names_local(t, l, d));
    return tmp;
}

const char *gs_names_node(const gpusched_topo *t, uint32_t node, char *tmp, size_t *len)
{
    const gs_names *n = t->names;
    if (n->kind == GS_NAMES_STORED) {
        const char *s = gs_pool_str(&n->pool, n->node_name[node]);
        *len = strlen(s);
        return s;
    }
    *len = (size_t)snprintf(tmp, 16, "n%u", node);
    return tmp;
}

/* A generated name: `prefix` then a canonical decimal (no leading zero,
 * no sign) below `limit`. */
static uint32_t gs_parse_generated(const char *s, size_t len, char prefix, uint64_t limit)
{
    if (len < 2 || len > 11 || s[0] != prefix || (s[1] == '0' && len > 2))
        return GPUSCHED_NONE;
    uint64_t v = 0;
    for (size_t i = 1; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return GPUSCHED_NONE;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v < limit ? (uint32_t)v : GPUSCHED_NONE;
}

uint32_t gs_names_find_node(const gpusched_topo *t, const char *s, size_t len)
{
    const gs_names *n = t->names;
    if (n->kind == GS_NAMES_UNIFORM)
        return gs_parse_generated(s, len, 'n', t->nnodes);
    uint32_t h = gs_hash32(s, len, 0);
    for (uint32_t i = gs_hindex_first(&n->node_index, h); n->node_index.slots[i].id != GS_HEMPTY;
         i = gs_hindex_next(&n->node_index, i)) {
        uint32_t id = n->node_index.slots[i].id;
        if (n->node_index.slots[i].hash == h && gs_pool_eq(&n->pool, n->node_name[id], s, len))
            return id;
    }
    return GPUSCHED_NONE;
}

uint32_t gs_names_find_child(const gpusched_topo *t, uint32_t l, uint32_t parent, const char *s,
                             size_t len)
{
    const gs_names *n = t->names;
    if (n->kind == GS_NAMES_UNIFORM) {
        uint32_t local = gs_parse_generated(s, len, t->level_names[l][0], n->fanout[l]);
        if (local == GPUSCHED_NONE)
            return GPUSCHED_NONE;
        return l ? t->child_start[l - 1][parent] + local : local;
    }
    const gs_hindex *ix = &n->dom_index[l];
    uint32_t h = gs_dom_hash(parent, s, len);
    for (uint32_t i = gs_hindex_first(ix, h); ix->slots[i].id != GS_HEMPTY; i = gs_hindex_next(ix, i)) {
        uint32_t id = ix->slots[i].id;
        if (ix->slots[i].hash == h && (l ? t->dom_parent[l][id] : GPUSCHED_NONE) == parent &&
            gs_pool_eq(&n->pool, n->dom_name[l][id], s, len))
            return id;
    }
    return GPUSCHED_NONE;
}
