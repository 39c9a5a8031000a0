/* The builder: interning of domains, nodes, classes and labels, each call
 * atomic (validate, look up, reserve, then apply). */
#include <string.h>

#include "topo-builder.h"

const char *gs_name_check(const char *s, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > GPUSCHED_MAX_NAME)
        return "is longer than 63 bytes";
    for (size_t i = 0; i < len; i++)
        if (!gs_name_char((unsigned char)s[i]))
            return "has a character outside [A-Za-z0-9_.:+-]";
    return NULL;
}

static uint32_t gs_dom_lookup(const gpusched_topo_builder *b, uint32_t l, uint32_t parent,
                              const char *s, size_t len)
{
    const gs_blevel *lv = &b->lv[l];
    uint32_t last = b->last_dom[l];
    if (last < lv->n && lv->parent[last] == parent && gs_pool_eq(&b->pool, lv->name[last], s, len))
        return last;
    if (!lv->index.slots)
        return GPUSCHED_NONE;
    uint32_t h = gs_dom_hash(parent, s, len);
    for (uint32_t i = gs_hindex_first(&lv->index, h); lv->index.slots[i].id != GS_HEMPTY;
         i = gs_hindex_next(&lv->index, i)) {
        uint32_t id = lv->index.slots[i].id;
        if (lv->index.slots[i].hash == h && lv->parent[id] == parent &&
            gs_pool_eq(&b->pool, lv->name[id], s, len))
            return id;
    }
    return GPUSCHED_NONE;
}

static uint32_t gs_node_lookup(const gpusched_topo_builder *b, const char *s, size_t len, uint32_t h)
{
    if (!b->node_index.slots)
        return GPUSCHED_NONE;
    for (uint32_t i = gs_hindex_first(&b->node_index, h); b->node_index.slots[i].id != GS_HEMPTY;
         i = gs_hindex_next(&b->node_index, i)) {
        uint32_t id = b->node_index.slots[i].id;
        if (b->node_index.slots[i].hash == h && gs_pool_eq(&b->pool, b->node_name[id], s, len))
            return id;
    }
    return GPUSCHED_NONE;
}

void gs_builder_prefetch_name(const gpusched_topo_builder *b, const char *s, size_t len)
{
    if (b->node_index.slots)
        __builtin_prefetch(&b->node_index.slots[gs_hindex_first(&b->node_index, gs_hash32(s, len, 0))]);
}

static uint32_t gs_grow_cap(uint32_t cap)
{
    return cap < 64 ? 64 : (cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2);
}

#define GS_GROW(b, arr, cap)                                                      \
    do {                                                                          \
        void *p_ = gs_realloc_array(&(b)->alloc, (arr), (cap), sizeof *(arr));    \
        if (!p_)                                                                  \
            return GPUSCHED_ENOMEM;                                               \
        (arr) = p_;                                                               \
    } while (0)

static int gs_level_reserve(gpusched_topo_builder *b, gs_blevel *lv)
{
    if (lv->n == lv->cap) {
        if (lv->n == UINT32_MAX - 1)
            return GPUSCHED_ELIMIT;
        uint32_t cap = gs_grow_cap(lv->cap);
        GS_GROW(b, lv->parent, cap);
        GS_GROW(b, lv->name, cap);
        lv->cap = cap;
    }
    return gs_hindex_reserve(&lv->index, &b->alloc, 1);
}

static int gs_nodes_reserve(gpusched_topo_builder *b)
{
    if (b->nnodes == b->ncap) {
        if (b->nnodes == UINT32_MAX - 1)
            return GPUSCHED_ELIMIT;
        uint32_t cap = gs_grow_cap(b->ncap);
        GS_GROW(b, b->node_leaf, cap);
        GS_GROW(b, b->node_name, cap);
        GS_GROW(b, b->node_gpus, cap);
        GS_GROW(b, b->node_class, cap);
        GS_GROW(b, b->node_labels, cap);
        for (uint32_t r = 0; r < b->nres; r++)
            GS_GROW(b, b->node_res[r], cap);
        b->ncap = cap;
    }
    return gs_hindex_reserve(&b->node_index, &b->alloc, 1);
}

static int gs_reserve_error(gpusched_topo_builder *b, int rc)
{
    if (rc == GPUSCHED_ENOMEM)
        return gs_error(&b->err, rc, "out of memory");
    return gs_error(&b->err, rc, "more than 2^32-2 nodes, domains or name bytes");
}

int gs_builder_add(gpusched_topo_builder *b, const gs_span *path, gs_span name, uint32_t gpus,
                   uint32_t cls, uint64_t labels)
{
    if (!b->nlevels)
        return gs_error(&b->err, GPUSCHED_ESTATE, "levels are not set");
    if (gpus > GPUSCHED_MAX_NODE_GPUS)
        return gs_error(&b->err, GPUSCHED_EINVAL, "node '%.*s': %u GPUs, 0 to %d allowed",
                        (int)(name.len > 63 ? 63 : name.len), name.s, gpus,
                        GPUSCHED_MAX_NODE_GPUS);
    const char *why = gs_name_check(name.s, name.len);
    if (why)
        return gs_error(&b->err, GPUSCHED_EINVAL, "node name '%.*s' %s",
                        (int)(name.len > 63 ? 63 : name.len), name.s, why);
    for (uint32_t l = 0; l < b->nlevels; l++) {
        why = gs_name_check(path[l].s, path[l].len);
        if (why)
            return gs_error(&b->err, GPUSCHED_EINVAL, "node '%.*s': %s name '%.*s' %s",
                            (int)name.len, name.s, gs_pool_str(&b->pool, b->level_name[l]),
                            (int)(path[l].len > 63 ? 63 : path[l].len), path[l].s, why);
    }
    return gs_builder_add_valid(b, path, name, gpus, cls, labels);
}

int gs_builder_add_valid(gpusched_topo_builder *b, const gs_span *path, gs_span name, uint32_t gpus,
                         uint32_t cls, uint64_t labels)
{
    uint32_t name_hash = gs_hash32(name.s, name.len, 0);
    if (gs_node_lookup(b, name.s, name.len, name_hash) != GPUSCHED_NONE)
        return gs_error(&b->err, GPUSCHED_EEXIST, "duplicate node name '%.*s'", (int)name.len,
                        name.s);

    uint32_t ids[GS_MAX_LEVELS];
    uint32_t parent = GPUSCHED_NONE;
    size_t new_bytes = name.len + 1;
    for (uint32_t l = 0; l < b->nlevels; l++) {
        ids[l] = parent == GPUSCHED_NONE && l > 0 ? GPUSCHED_NONE
                                                  : gs_dom_lookup(b, l, parent, path[l].s, path[l].len);
        if (ids[l] == GPUSCHED_NONE)
            new_bytes += path[l].len + 1;
        parent = ids[l];
    }

    int rc = gs_nodes_reserve(b);
    for (uint32_t l = 0; !rc && l < b->nlevels; l++)
        if (ids[l] == GPUSCHED_NONE)
            rc = gs_level_reserve(b, &b->lv[l]);
    if (!rc)
        rc = gs_pool_reserve(&b->pool, &b->alloc, new_bytes);
    if (rc)
        return gs_reserve_error(b, rc);

    parent = GPUSCHED_NONE;
    for (uint32_t l = 0; l < b->nlevels; l++) {
        if (ids[l] == GPUSCHED_NONE) {
            gs_blevel *lv = &b->lv[l];
            uint32_t id = lv->n++;
            lv->parent[id] = parent;
            lv->name[id] = gs_pool_add(&b->pool, path[l].s, path[l].len);
            gs_hindex_insert(&lv->index, id, gs_dom_hash(parent, path[l].s, path[l].len));
            ids[l] = id;
        }
        parent = ids[l];
        b->last_dom[l] = ids[l];
    }
    uint32_t n = b->nnodes++;
    b->node_leaf[n] = parent;
    b->node_name[n] = gs_pool_add(&b->pool, name.s, name.len);
    b->node_gpus[n] = (uint8_t)gpus;
    b->node_class[n] = (uint8_t)cls;
    b->node_labels[n] = labels;
    for (uint32_t r = 0; r < b->nres; r++)
        b->node_res[r][n] = 0;
    gs_hindex_insert(&b->node_index, n, name_hash);
    b->ngpus += gpus;
    return gs_ok(&b->err);
}

/* Classes and labels: a short list of pool strings, searched linearly. */
static int gs_intern(gpusched_topo_builder *b, uint32_t *names, uint32_t *count, uint32_t max,
                     const char *kind, const char *name, size_t len, uint32_t *id)
{
    for (uint32_t i = 0; i < *count; i++)
        if (gs_pool_eq(&b->pool, names[i], name, len)) {
            *id = i;
            return 0;
        }
    const char *why = gs_name_check(name, len);
    if (why)
        return gs_error(&b->err, GPUSCHED_EINVAL, "%s name '%.*s' %s", kind, (int)(len > 63 ? 63 : len),
                        name, why);
    if (*count == max)
        return gs_error(&b->err, GPUSCHED_ELIMIT, "%s '%.*s': more than %u %ss", kind, (int)len, name,
                        max, kind);
    int rc = gs_pool_reserve(&b->pool, &b->alloc, len + 1);
    if (rc)
        return gs_reserve_error(b, rc);
    names[*count] = gs_pool_add(&b->pool, name, len);
    *id = (*count)++;
    return 0;
}

int gs_builder_class(gpusched_topo_builder *b, const char *name, size_t len, uint32_t *id)
{
    if (b->last_class < b->nclasses && gs_pool_eq(&b->pool, b->class_name[b->last_class], name, len)) {
        *id = b->last_class;
        return 0;
    }
    int rc = gs_intern(b, b->class_name, &b->nclasses, GPUSCHED_MAX_CLASSES, "class", name, len, id);
    if (!rc)
        b->last_class = *id;
    return rc;
}

int gs_builder_label(gpusched_topo_builder *b, const char *name, size_t len, uint32_t *id)
{
    return gs_intern(b, b->label_name, &b->nlabels, GPUSCHED_MAX_LABELS, "label", name, len, id);
}

bool gs_resource_reserved(const char *name, size_t len)
{
    static const char *const keys[] = {"gpus", "class", "labels", "count"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strlen(keys[i]) == len && !memcmp(keys[i], name, len))
            return true;
    return false;
}

uint32_t gs_builder_resource_find(const gpusched_topo_builder *b, const char *name, size_t len)
{
    for (uint32_t r = 0; r < b->nres; r++)
        if (gs_pool_eq(&b->pool, b->res_name[r], name, len))
            return r;
    return GPUSCHED_NONE;
}

int gs_builder_resource(gpusched_topo_builder *b, const char *name, size_t len, uint32_t *id)
{
    uint32_t r = gs_builder_resource_find(b, name, len);
    if (r != GPUSCHED_NONE) {
        *id = r;
        return 0;
    }
    const char *why = gs_name_check(name, len);
    if (why)
        return gs_error(&b->err, GPUSCHED_EINVAL, "resource name '%.*s' %s", (int)(len > 63 ? 63 : len),
                        name, why);
    if (gs_resource_reserved(name, len))
        return gs_error(&b->err, GPUSCHED_EINVAL, "resource name '%.*s' is reserved (a node key)", (int)len,
                        name);
    if (b->nres == GPUSCHED_MAX_RESOURCES)
        return gs_error(&b->err, GPUSCHED_ELIMIT, "resource '%.*s': more than %d resources", (int)len, name,
                        GPUSCHED_MAX_RESOURCES);
    int rc = gs_pool_reserve(&b->pool, &b->alloc, len + 1);
    if (rc)
        return gs_reserve_error(b, rc);
    /* Every node so far has none of it; the array has the nodes' capacity,
     * so that the next add needs no other allocation. */
    uint32_t *caps = gs_calloc(&b->alloc, b->ncap, sizeof *caps);
    if (!caps)
        return gs_reserve_error(b, GPUSCHED_ENOMEM);
    r = b->nres++;
    b->res_name[r] = gs_pool_add(&b->pool, name, len);
    b->node_res[r] = caps;
    *id = r;
    return 0;
}

int gs_builder_levels(gpusched_topo_builder *b, uint32_t nlevels, const gs_span *names)
{
    if (b->nlevels)
        return gs_error(&b->err, GPUSCHED_ESTATE, "levels are already set");
    if (nlevels < 1 || nlevels > GS_MAX_LEVELS)
        return gs_error(&b->err, nlevels ? GPUSCHED_ELIMIT : GPUSCHED_EINVAL,
                        "%u levels, 1 to %d allowed", nlevels, GS_MAX_LEVELS);
    size_t bytes = 0;
    for (uint32_t l = 0; l < nlevels; l++) {
        const char *why = gs_name_check(names[l].s, names[l].len);
        if (why)
            return gs_error(&b->err, GPUSCHED_EINVAL, "level name '%.*s' %s",
                            (int)(names[l].len > 63 ? 63 : names[l].len), names[l].s, why);
        for (uint32_t k = 0; k < l; k++)
            if (names[k].len == names[l].len && !memcmp(names[k].s, names[l].s, names[l].len))
                return gs_error(&b->err, GPUSCHED_EINVAL, "level name '%.*s' appears twice",
                                (int)names[l].len, names[l].s);
        bytes += names[l].len + 1;
    }
    int rc = gs_pool_reserve(&b->pool, &b->alloc, bytes);
    if (rc)
        return gs_reserve_error(b, rc);
    for (uint32_t l = 0; l < nlevels; l++)
        b->level_name[l] = gs_pool_add(&b->pool, names[l].s, names[l].len);
    b->nlevels = nlevels;
    return gs_ok(&b->err);
}

void gs_builder_mark(const gpusched_topo_builder *b, gs_bmark *m)
{
    *m = (gs_bmark){b->nlevels, b->nnodes, b->nclasses, b->nlabels, b->nres, b->pool.len, {0}, b->ngpus};
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++)
        m->ndom[l] = b->lv[l].n;
}

void gs_builder_rollback(gpusched_topo_builder *b, const gs_bmark *m)
{
    /* Linear probing cannot delete in place safely once the table has been
     * rehashed, so the indexes are rebuilt from the surviving entries: an
     * error path, O(entries), and it needs no memory. */
    if (b->nnodes != m->nnodes) {
        b->nnodes = m->nnodes;
        gs_hindex_clear(&b->node_index);
        for (uint32_t n = 0; n < b->nnodes; n++) {
            const char *s = gs_pool_str(&b->pool, b->node_name[n]);
            gs_hindex_insert(&b->node_index, n, gs_hash32(s, strlen(s), 0));
        }
    }
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++) {
        gs_blevel *lv = &b->lv[l];
        if (lv->n == m->ndom[l])
            continue;
        lv->n = m->ndom[l];
        gs_hindex_clear(&lv->index);
        for (uint32_t d = 0; d < lv->n; d++) {
            const char *s = gs_pool_str(&b->pool, lv->name[d]);
            gs_hindex_insert(&lv->index, d, gs_dom_hash(lv->parent[d], s, strlen(s)));
        }
    }
    /* Resources declared since the mark go with their arrays. The nodes
     * that stay had their capacities set before the mark: a parse only
     * writes those of the nodes it adds. */
    for (uint32_t r = m->nres; r < b->nres; r++) {
        gs_free(&b->alloc, b->node_res[r]);
        b->node_res[r] = NULL;
    }
    b->nres = m->nres;
    b->nlevels = m->nlevels;
    b->nclasses = m->nclasses;
    b->nlabels = m->nlabels;
    b->pool.len = m->pool_len;
    b->ngpus = m->ngpus;
    if (b->last_class >= b->nclasses)
        b->last_class = 0;
}

/* ---- public ---------------------------------------------------------- */

GPUSCHED_API int gpusched_topo_builder_new(const gpusched_allocator *alloc, gpusched_topo_builder **out)
{
    if (!out)
        return GPUSCHED_EINVAL;
    *out = NULL;
    gs_alloc a;
    gpusched_topo_builder *b;
    int rc = gs_object_new(alloc, sizeof *b, &a, (void **)&b);
    if (rc)
        return rc;
    b->alloc = a;
    *out = b;
    return 0;
}

GPUSCHED_API void gpusched_topo_builder_free(gpusched_topo_builder *b)
{
    if (!b)
        return;
    const gs_alloc a = b->alloc;
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++) {
        gs_free(&a, b->lv[l].parent);
        gs_free(&a, b->lv[l].name);
        gs_hindex_free(&b->lv[l].index, &a);
    }
    gs_free(&a, b->node_leaf);
    gs_free(&a, b->node_name);
    gs_free(&a, b->node_gpus);
    gs_free(&a, b->node_class);
    gs_free(&a, b->node_labels);
    for (uint32_t r = 0; r < GPUSCHED_MAX_RESOURCES; r++)
        gs_free(&a, b->node_res[r]);
    gs_hindex_free(&b->node_index, &a);
    gs_free(&a, b->pool.buf);
    gs_free(&a, b);
}

GPUSCHED_API const char *gpusched_topo_builder_errmsg(const gpusched_topo_builder *b)
{
    if (!b)
        return "builder is NULL";
    return b->err.code ? b->err.msg : "";
}

GPUSCHED_API int gpusched_topo_builder_levels_set(gpusched_topo_builder *b, uint32_t nlevels,
                                                  const char *const *names)
{
    if (!b)
        return GPUSCHED_EINVAL;
    if (b->nlevels)
        return gs_error(&b->err, GPUSCHED_ESTATE, "levels are already set");
    if (nlevels < 1 || nlevels > GS_MAX_LEVELS)
        return gs_error(&b->err, nlevels ? GPUSCHED_ELIMIT : GPUSCHED_EINVAL,
                        "%u levels, 1 to %d allowed", nlevels, GS_MAX_LEVELS);
    if (!names)
        return gs_error(&b->err, GPUSCHED_EINVAL, "level names are NULL");
    gs_span spans[GS_MAX_LEVELS];
    for (uint32_t l = 0; l < nlevels; l++) {
        if (!names[l])
            return gs_error(&b->err, GPUSCHED_EINVAL, "level name %u is NULL", l);
        spans[l] = (gs_span){names[l], strlen(names[l])};
    }
    return gs_builder_levels(b, nlevels, spans);
}

GPUSCHED_API int gpusched_topo_builder_add_node(gpusched_topo_builder *b, const char *const *path,
                                                const char *name, uint32_t gpus,
                                                const char *gpu_class, const char *const *labels,
                                                uint32_t nlabels)
{
    if (!b)
        return GPUSCHED_EINVAL;
    if (!b->nlevels)
        return gs_error(&b->err, GPUSCHED_ESTATE, "levels are not set");
    if (!path || !name)
        return gs_error(&b->err, GPUSCHED_EINVAL, "path or name is NULL");
    if (nlabels && !labels)
        return gs_error(&b->err, GPUSCHED_EINVAL, "labels are NULL");
    size_t name_len = strlen(name);
    gs_builder_prefetch_name(b, name, name_len);
    gs_span spans[GS_MAX_LEVELS];
    for (uint32_t l = 0; l < b->nlevels; l++) {
        if (!path[l])
            return gs_error(&b->err, GPUSCHED_EINVAL, "node '%.63s': path component %u is NULL", name, l);
        spans[l] = (gs_span){path[l], strlen(path[l])};
    }
    for (uint32_t i = 0; i < nlabels; i++)
        if (!labels[i])
            return gs_error(&b->err, GPUSCHED_EINVAL, "node '%.63s': label %u is NULL", name, i);

    gs_bmark m;
    gs_builder_mark(b, &m);
    const char *cname = gpu_class && *gpu_class ? gpu_class : "default";
    uint32_t cls;
    int rc = gs_builder_class(b, cname, strlen(cname), &cls);
    uint64_t mask = 0;
    for (uint32_t i = 0; !rc && i < nlabels; i++) {
        uint32_t bit;
        rc = gs_builder_label(b, labels[i], strlen(labels[i]), &bit);
        mask |= (uint64_t)1 << (bit & 63);
    }
    if (!rc)
        rc = gs_builder_add(b, spans, (gs_span){name, name_len}, gpus, cls, mask);
    if (rc)
        gs_builder_rollback(b, &m);
    return rc;
}

GPUSCHED_API int gpusched_topo_builder_resource_add(gpusched_topo_builder *b, const char *name,
                                                    uint32_t *index)
{
    if (!b)
        return GPUSCHED_EINVAL;
    if (!name)
        return gs_error(&b->err, GPUSCHED_EINVAL, "resource name is NULL");
    uint32_t r;
    int rc = gs_builder_resource(b, name, strlen(name), &r);
    if (rc)
        return rc;
    if (index)
        *index = r;
    return gs_ok(&b->err);
}

GPUSCHED_API int gpusched_topo_builder_node_resource_set(gpusched_topo_builder *b, const char *node,
                                                         uint32_t resource, uint32_t amount)
{
    if (!b)
        return GPUSCHED_EINVAL;
    if (!node)
        return gs_error(&b->err, GPUSCHED_EINVAL, "node name is NULL");
    if (resource >= b->nres)
        return gs_error(&b->err, GPUSCHED_EINVAL, "resource %u is not declared (%u declared)", resource,
                        b->nres);
    size_t len = strlen(node);
    uint32_t n = gs_node_lookup(b, node, len, gs_hash32(node, len, 0));
    if (n == GPUSCHED_NONE)
        return gs_error(&b->err, GPUSCHED_ENOENT, "no node named '%.*s'", (int)(len > 63 ? 63 : len), node);
    b->node_res[resource][n] = amount;
    return gs_ok(&b->err);
}
