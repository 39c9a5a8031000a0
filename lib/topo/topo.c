/* Lifetime, shared construction steps and the read accessors. */
#include <string.h>

#include "topo-construct.h"

int gs_topo_alloc(const gs_alloc *a, uint32_t nlevels, const uint32_t *ndom, uint32_t nnodes,
                  gpusched_topo **out)
{
    gpusched_topo *t = gs_calloc(a, 1, sizeof *t);
    if (!t)
        return GPUSCHED_ENOMEM;
    t->alloc = *a;
    t->refcount = 1;
    t->nlevels = nlevels;
    t->nnodes = nnodes;
    memcpy(t->ndom, ndom, nlevels * sizeof *ndom);
    bool ok = (t->names = gs_calloc(a, 1, sizeof *t->names)) != NULL;
    for (uint32_t l = 0; ok && l < nlevels; l++) {
        size_t n = (size_t)ndom[l] + 1;
        ok = (t->dom_start[l] = gs_calloc(a, n, sizeof(uint32_t))) != NULL;
        if (ok && l + 1 < nlevels)
            ok = (t->child_start[l] = gs_calloc(a, n, sizeof(uint32_t))) != NULL;
        if (ok && l > 0)
            ok = (t->dom_parent[l] = gs_calloc(a, ndom[l], sizeof(uint32_t))) != NULL;
    }
    ok = ok && (t->node_gpus = gs_calloc(a, nnodes, 1)) != NULL;
    ok = ok && (t->node_class = gs_calloc(a, nnodes, 1)) != NULL;
    ok = ok && (t->node_labels = gs_calloc(a, nnodes, sizeof(uint64_t))) != NULL;
    ok = ok && (t->node_leaf = gs_calloc(a, nnodes, sizeof(uint32_t))) != NULL;
    ok = ok && (t->node_gpu_base = gs_calloc(a, nnodes, sizeof(uint32_t))) != NULL;
    if (!ok) {
        gs_topo_destroy(t);
        return GPUSCHED_ENOMEM;
    }
    *out = t;
    return 0;
}

void gs_topo_destroy(gpusched_topo *t)
{
    if (!t)
        return;
    const gs_alloc a = t->alloc;
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++) {
        gs_free(&a, t->dom_start[l]);
        gs_free(&a, t->child_start[l]);
        gs_free(&a, t->dom_parent[l]);
    }
    gs_free(&a, t->node_gpus);
    gs_free(&a, t->node_class);
    gs_free(&a, t->node_labels);
    gs_free(&a, t->node_leaf);
    gs_free(&a, t->node_gpu_base);
    gs_free(&a, t->class_names);
    for (uint32_t r = 0; r < GPUSCHED_MAX_RESOURCES; r++) {
        gs_free(&a, t->res_names[r]);
        gs_free(&a, t->node_res[r]);
    }
    gs_names_free(&a, t->names);
    gs_free(&a, t);
}

int gs_topo_set_meta(gpusched_topo *t, const char *const *levels, uint32_t nclasses,
                     const char *const *classes, uint32_t nlabels, const char *const *labels)
{
    size_t bytes = 0;
    for (uint32_t l = 0; l < t->nlevels; l++)
        bytes += strlen(levels[l]) + 1;
    for (uint32_t c = 0; c < nclasses; c++)
        bytes += strlen(classes[c]) + 1;
    for (uint32_t i = 0; i < nlabels; i++)
        bytes += strlen(labels[i]) + 1;
    char *meta = gs_malloc(&t->alloc, bytes);
    char **cls = gs_calloc(&t->alloc, nclasses ? nclasses : 1, sizeof *cls);
    if (!meta || !cls) {
        gs_free(&t->alloc, meta);
        gs_free(&t->alloc, cls);
        return GPUSCHED_ENOMEM;
    }
    char *p = meta;
#define GS_META_COPY(dst, src)               \
    do {                                     \
        size_t n_ = strlen(src) + 1;         \
        memcpy(p, (src), n_);                \
        (dst) = p;                           \
        p += n_;                             \
    } while (0)
    for (uint32_t l = 0; l < t->nlevels; l++)
        GS_META_COPY(t->level_names[l], levels[l]);
    for (uint32_t c = 0; c < nclasses; c++)
        GS_META_COPY(cls[c], classes[c]);
    for (uint32_t i = 0; i < nlabels; i++)
        GS_META_COPY(t->label_names[i], labels[i]);
#undef GS_META_COPY
    t->names->meta = meta;
    t->class_names = cls;
    t->nclasses = nclasses;
    t->nlabels = nlabels;
    return 0;
}

int gs_topo_set_resources(gpusched_topo *t, uint32_t nres, const char *const *names)
{
    /* Set one by one: a failure leaves what is set to gs_topo_destroy. */
    for (uint32_t r = 0; r < nres; r++) {
        t->res_names[r] = gs_strdup(&t->alloc, names[r]);
        t->node_res[r] = gs_calloc(&t->alloc, t->nnodes, sizeof *t->node_res[r]);
        if (!t->res_names[r] || !t->node_res[r])
            return GPUSCHED_ENOMEM;
        t->nres = r + 1;
    }
    return 0;
}

int gs_topo_finish_gpus(gpusched_topo *t)
{
    uint64_t sum = 0;
    uint32_t max = 0;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        t->node_gpu_base[n] = (uint32_t)sum;
        sum += t->node_gpus[n];
        if (t->node_gpus[n] > max)
            max = t->node_gpus[n];
        if (sum > UINT32_MAX)
            return GPUSCHED_ELIMIT;
    }
    t->ngpus = sum;
    t->max_node_gpus = max;
    return 0;
}

void gs_topo_finish_ranges(gpusched_topo *t)
{
    for (uint32_t l = t->nlevels - 1; l-- > 0;) {
        for (uint32_t d = 0; d < t->ndom[l]; d++)
            t->dom_start[l][d] = t->dom_start[l + 1][t->child_start[l][d]];
        t->dom_start[l][t->ndom[l]] = t->nnodes;
    }
}

/* ---- lifetime -------------------------------------------------------- */

GPUSCHED_API gpusched_topo *gpusched_topo_ref(gpusched_topo *t)
{
    if (t)
        __atomic_fetch_add(&t->refcount, 1, __ATOMIC_RELAXED);
    return t;
}

GPUSCHED_API void gpusched_topo_unref(gpusched_topo *t)
{
    if (t && __atomic_sub_fetch(&t->refcount, 1, __ATOMIC_ACQ_REL) == 0)
        gs_topo_destroy(t);
}

/* ---- accessors ------------------------------------------------------- */

GPUSCHED_API uint32_t gpusched_topo_level_count(const gpusched_topo *t) { return t ? t->nlevels : 0; }

GPUSCHED_API const char *gpusched_topo_level_name(const gpusched_topo *t, uint32_t level)
{
    return t && level < t->nlevels ? t->level_names[level] : NULL;
}

static int gs_find_in(char *const *names, uint32_t n, const char *name, uint32_t *out)
{
    if (!name || !out)
        return GPUSCHED_EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) {
            *out = i;
            return 0;
        }
    return GPUSCHED_ENOENT;
}

GPUSCHED_API int gpusched_topo_level_find(const gpusched_topo *t, const char *name, uint32_t *level)
{
    return t ? gs_find_in(t->level_names, t->nlevels, name, level) : GPUSCHED_EINVAL;
}

GPUSCHED_API uint32_t gpusched_topo_node_count(const gpusched_topo *t) { return t ? t->nnodes : 0; }
GPUSCHED_API uint64_t gpusched_topo_gpu_count(const gpusched_topo *t) { return t ? t->ngpus : 0; }

GPUSCHED_API uint32_t gpusched_topo_domain_count(const gpusched_topo *t, uint32_t level)
{
    return t && level < t->nlevels ? t->ndom[level] : 0;
}

static bool gs_dom_ok(const gpusched_topo *t, uint32_t level, uint32_t domain)
{
    return t && level < t->nlevels && domain < t->ndom[level];
}

GPUSCHED_API int gpusched_topo_domain_nodes(const gpusched_topo *t, uint32_t level, uint32_t domain,
                                            uint32_t *first, uint32_t *count)
{
    if (!t || !first || !count)
        return GPUSCHED_EINVAL;
    if (!gs_dom_ok(t, level, domain))
        return GPUSCHED_ERANGE;
    *first = gs_topo_dom_first(t, level, domain);
    *count = gs_topo_dom_nodes(t, level, domain);
    return 0;
}

GPUSCHED_API int gpusched_topo_domain_parent(const gpusched_topo *t, uint32_t level, uint32_t domain,
                                             uint32_t *parent)
{
    if (!t || !parent)
        return GPUSCHED_EINVAL;
    if (!gs_dom_ok(t, level, domain) || level == 0)
        return GPUSCHED_ERANGE;
    *parent = t->dom_parent[level][domain];
    return 0;
}

GPUSCHED_API int gpusched_topo_node_domain(const gpusched_topo *t, uint32_t node, uint32_t level,
                                           uint32_t *domain)
{
    if (!t || !domain)
        return GPUSCHED_EINVAL;
    if (node >= t->nnodes || level >= t->nlevels)
        return GPUSCHED_ERANGE;
    *domain = gs_topo_node_domain(t, node, level);
    return 0;
}

GPUSCHED_API int gpusched_topo_domain_name(const gpusched_topo *t, uint32_t level, uint32_t domain,
                                           char *buf, size_t cap)
{
    if (!t || (!buf && cap))
        return GPUSCHED_EINVAL;
    if (!gs_dom_ok(t, level, domain))
        return GPUSCHED_ERANGE;
    uint32_t chain[GS_MAX_LEVELS];
    chain[level] = domain;
    for (uint32_t l = level; l > 0; l--)
        chain[l - 1] = t->dom_parent[l][chain[l]];
    size_t pos = 0;
    for (uint32_t l = 0; l <= level; l++) {
        char tmp[16];
        size_t len;
        const char *s = gs_names_component(t, l, chain[l], tmp, &len);
        size_t need = pos + len + (l ? 1 : 0);
        if (need + 1 > cap)
            return GPUSCHED_ERANGE;
        if (l)
            buf[pos++] = '/';
        memcpy(buf + pos, s, len);
        pos += len;
    }
    buf[pos] = '\0';
    return 0;
}

GPUSCHED_API int gpusched_topo_domain_find(const gpusched_topo *t, uint32_t level, const char *path,
                                           uint32_t *domain)
{
    if (!t || !path || !domain)
        return GPUSCHED_EINVAL;
    if (level >= t->nlevels)
        return GPUSCHED_ERANGE;
    uint32_t d = GPUSCHED_NONE;
    const char *p = path;
    for (uint32_t l = 0; l <= level; l++) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if ((l < level) != (end != NULL))
            return GPUSCHED_ENOENT;
        d = gs_names_find_child(t, l, d, p, len);
        if (d == GPUSCHED_NONE)
            return GPUSCHED_ENOENT;
        p = end ? end + 1 : p + len;
    }
    *domain = d;
    return 0;
}

GPUSCHED_API uint32_t gpusched_topo_node_gpus(const gpusched_topo *t, uint32_t node)
{
    return t && node < t->nnodes ? t->node_gpus[node] : 0;
}

GPUSCHED_API uint32_t gpusched_topo_node_class(const gpusched_topo *t, uint32_t node)
{
    return t && node < t->nnodes ? t->node_class[node] : GPUSCHED_NONE;
}

GPUSCHED_API uint64_t gpusched_topo_node_labels(const gpusched_topo *t, uint32_t node)
{
    return t && node < t->nnodes ? t->node_labels[node] : 0;
}

GPUSCHED_API int gpusched_topo_nodes_info(const gpusched_topo *t, uint32_t first, uint32_t count, uint32_t *gpus,
                                          uint32_t *classes, uint64_t *labels)
{
    if (!t)
        return GPUSCHED_EINVAL;
    if (first > t->nnodes || count > t->nnodes - first)
        return GPUSCHED_ERANGE;
    for (uint32_t i = 0; gpus && i < count; i++)
        gpus[i] = t->node_gpus[first + i];
    for (uint32_t i = 0; classes && i < count; i++)
        classes[i] = t->node_class[first + i];
    if (labels)
        memcpy(labels, t->node_labels + first, (size_t)count * sizeof *labels);
    return 0;
}

GPUSCHED_API int gpusched_topo_node_name(const gpusched_topo *t, uint32_t node, char *buf, size_t cap)
{
    if (!t || (!buf && cap))
        return GPUSCHED_EINVAL;
    if (node >= t->nnodes)
        return GPUSCHED_ERANGE;
    char tmp[16];
    size_t len;
    const char *s = gs_names_node(t, node, tmp, &len);
    if (len + 1 > cap)
        return GPUSCHED_ERANGE;
    memcpy(buf, s, len + 1);
    return 0;
}

GPUSCHED_API int gpusched_topo_node_find(const gpusched_topo *t, const char *name, uint32_t *node)
{
    if (!t || !name || !node)
        return GPUSCHED_EINVAL;
    uint32_t n = gs_names_find_node(t, name, strlen(name));
    if (n == GPUSCHED_NONE)
        return GPUSCHED_ENOENT;
    *node = n;
    return 0;
}

GPUSCHED_API uint32_t gpusched_topo_class_count(const gpusched_topo *t) { return t ? t->nclasses : 0; }

GPUSCHED_API const char *gpusched_topo_class_name(const gpusched_topo *t, uint32_t cls)
{
    return t && cls < t->nclasses ? t->class_names[cls] : NULL;
}

GPUSCHED_API int gpusched_topo_class_find(const gpusched_topo *t, const char *name, uint32_t *cls)
{
    return t ? gs_find_in(t->class_names, t->nclasses, name, cls) : GPUSCHED_EINVAL;
}

GPUSCHED_API uint32_t gpusched_topo_label_count(const gpusched_topo *t) { return t ? t->nlabels : 0; }

GPUSCHED_API const char *gpusched_topo_label_name(const gpusched_topo *t, uint32_t label)
{
    return t && label < t->nlabels ? t->label_names[label] : NULL;
}

GPUSCHED_API int gpusched_topo_label_find(const gpusched_topo *t, const char *name, uint32_t *label)
{
    return t ? gs_find_in((char *const *)t->label_names, t->nlabels, name, label) : GPUSCHED_EINVAL;
}

GPUSCHED_API uint32_t gpusched_topo_resource_count(const gpusched_topo *t) { return t ? t->nres : 0; }

GPUSCHED_API const char *gpusched_topo_resource_name(const gpusched_topo *t, uint32_t resource)
{
    return t && resource < t->nres ? t->res_names[resource] : NULL;
}

GPUSCHED_API int gpusched_topo_resource_find(const gpusched_topo *t, const char *name, uint32_t *resource)
{
    return t ? gs_find_in((char *const *)t->res_names, t->nres, name, resource) : GPUSCHED_EINVAL;
}

GPUSCHED_API uint32_t gpusched_topo_node_resource(const gpusched_topo *t, uint32_t node, uint32_t resource)
{
    return t && node < t->nnodes && resource < t->nres ? t->node_res[resource][node] : 0;
}

GPUSCHED_API size_t gpusched_topo_memory_bytes(const gpusched_topo *t)
{
    if (!t)
        return 0;
    size_t bytes = sizeof *t + gs_names_bytes(t);
    for (uint32_t l = 0; l < t->nlevels; l++) {
        size_t n = (size_t)t->ndom[l] + 1;
        bytes += n * sizeof(uint32_t);                       /* dom_start */
        if (t->child_start[l])
            bytes += n * sizeof(uint32_t);
        if (t->dom_parent[l])
            bytes += (size_t)t->ndom[l] * sizeof(uint32_t);
    }
    bytes += (size_t)t->nnodes * (2 * sizeof(uint8_t) + sizeof(uint64_t) + 2 * sizeof(uint32_t));
    bytes += (size_t)t->nclasses * sizeof(char *);
    for (uint32_t l = 0; l < t->nlevels; l++)
        bytes += strlen(t->level_names[l]) + 1;
    for (uint32_t c = 0; c < t->nclasses; c++)
        bytes += strlen(t->class_names[c]) + 1;
    for (uint32_t i = 0; i < t->nlabels; i++)
        bytes += strlen(t->label_names[i]) + 1;
    for (uint32_t r = 0; r < t->nres; r++)
        bytes += strlen(t->res_names[r]) + 1 + (size_t)t->nnodes * sizeof(uint32_t);
    return bytes;
}
