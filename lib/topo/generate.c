/* Uniform topologies and the named presets. Their arrays are arithmetic,
 * so they are written directly, and their names are generated on demand. */
#include <stdio.h>
#include <string.h>

#include "topo-construct.h"
#include "topo-builder.h"

int gs_uniform_check_args(uint32_t nlevels, const char *const *level_names, const uint32_t *fanout,
                            uint32_t gpus_per_node, const char *gpu_class, gs_err *e)
{
    if (nlevels < 1 || nlevels > GS_MAX_LEVELS)
        return gs_error(e, nlevels ? GPUSCHED_ELIMIT : GPUSCHED_EINVAL, "%u levels, 1 to %d allowed",
                        nlevels, GS_MAX_LEVELS);
    if (!level_names || !fanout)
        return gs_error(e, GPUSCHED_EINVAL, "level_names or fanout is NULL");
    for (uint32_t l = 0; l < nlevels; l++) {
        if (!level_names[l])
            return gs_error(e, GPUSCHED_EINVAL, "level name %u is NULL", l);
        const char *why = gs_name_check(level_names[l], strlen(level_names[l]));
        if (why)
            return gs_error(e, GPUSCHED_EINVAL, "level name '%.63s' %s", level_names[l], why);
        for (uint32_t k = 0; k < l; k++)
            if (!strcmp(level_names[k], level_names[l]))
                return gs_error(e, GPUSCHED_EINVAL, "level name '%s' appears twice", level_names[l]);
    }
    uint64_t count = 1;
    for (uint32_t l = 0; l <= nlevels; l++) {
        if (fanout[l] < 1)
            return gs_error(e, GPUSCHED_EINVAL, "fanout[%u] is 0", l);
        count *= fanout[l];
        if (count > UINT32_MAX - 1)
            return gs_error(e, GPUSCHED_ELIMIT, "more than 2^32-2 %s", l < nlevels ? "domains" : "nodes");
    }
    if (gpus_per_node < 1 || gpus_per_node > GPUSCHED_MAX_NODE_GPUS)
        return gs_error(e, GPUSCHED_EINVAL, "%u GPUs per node, 1 to %d allowed", gpus_per_node,
                        GPUSCHED_MAX_NODE_GPUS);
    if (count * gpus_per_node > UINT32_MAX)
        return gs_error(e, GPUSCHED_ELIMIT, "%llu GPUs, at most 2^32-1 allowed",
                        (unsigned long long)(count * gpus_per_node));
    const char *why = gpu_class && *gpu_class ? gs_name_check(gpu_class, strlen(gpu_class)) : NULL;
    if (why)
        return gs_error(e, GPUSCHED_EINVAL, "class name '%.63s' %s", gpu_class, why);
    return 0;
}

static void gs_uniform_fill(gpusched_topo *t, const uint32_t *fanout, uint32_t gpus_per_node)
{
    uint32_t L = t->nlevels;
    for (uint32_t l = 0; l < L; l++) {
        uint32_t below = fanout[l + 1];
        uint32_t nodes_below = 1;
        for (uint32_t k = l + 1; k <= L; k++)
            nodes_below *= fanout[k];
        for (uint32_t d = 0; d <= t->ndom[l]; d++) {
            t->dom_start[l][d] = d * nodes_below;
            if (l + 1 < L)
                t->child_start[l][d] = d * below;
        }
        if (l > 0)
            for (uint32_t d = 0; d < t->ndom[l]; d++)
                t->dom_parent[l][d] = d / fanout[l];
    }
    uint32_t per_leaf = fanout[L];
    memset(t->node_gpus, (int)gpus_per_node, t->nnodes);
    for (uint32_t n = 0; n < t->nnodes; n++) {
        t->node_leaf[n] = n / per_leaf;
        t->node_gpu_base[n] = n * gpus_per_node;
    }
    t->ngpus = (uint64_t)t->nnodes * gpus_per_node;
    t->max_node_gpus = gpus_per_node;
}

int gs_topo_uniform(uint32_t nlevels, const char *const *level_names, const uint32_t *fanout,
                    uint32_t gpus_per_node, const char *gpu_class, const gs_alloc *a,
                    gpusched_topo **out, gs_err *e)
{
    int rc = gs_uniform_check_args(nlevels, level_names, fanout, gpus_per_node, gpu_class, e);
    if (rc)
        return rc;
    uint32_t ndom[GS_MAX_LEVELS];
    uint32_t count = 1;
    for (uint32_t l = 0; l < nlevels; l++)
        ndom[l] = count *= fanout[l];
    uint32_t nnodes = count * fanout[nlevels];
    gpusched_topo *t = NULL;
    rc = gs_topo_alloc(a, nlevels, ndom, nnodes, &t);
    const char *cls = gpu_class && *gpu_class ? gpu_class : "default";
    if (!rc)
        rc = gs_topo_set_meta(t, level_names, 1, &cls, 0, NULL);
    if (!rc)
        rc = gs_names_new_uniform(t, fanout);
    if (rc) {
        gs_topo_destroy(t);
        return gs_error(e, rc, "out of memory");
    }
    gs_uniform_fill(t, fanout, gpus_per_node);
    *out = t;
    return 0;
}

GPUSCHED_API int gpusched_topo_uniform(uint32_t nlevels, const char *const *level_names,
                                       const uint32_t *fanout, uint32_t gpus_per_node,
                                       const char *gpu_class, const gpusched_allocator *alloc,
                                       gpusched_topo **out, char *errbuf, size_t errbuf_len)
{
    gs_err e = {0};
    gs_alloc a;
    int rc = out ? gs_alloc_init(&a, alloc) : gs_error(&e, GPUSCHED_EINVAL, "out is NULL");
    if (rc && !e.code)
        gs_error(&e, rc, "invalid allocator");
    if (!rc)
        rc = gs_topo_uniform(nlevels, level_names, fanout, gpus_per_node, gpu_class, &a, out, &e);
    gs_err_export(&e, errbuf, errbuf_len);
    return rc;
}

/* ---- presets ---------------------------------------------------------- */

typedef struct gs_preset {
    const char *name;
    uint32_t nlevels;
    const char *levels[4];
    uint32_t fanout[5];
    uint32_t gpus;
    const char *cls;
} gs_preset;

/* gb200-nvl72-1m: 8 zones x 32 blocks x 56 racks, each rack one NVL72
 * NVLink domain of 18 compute trays x 4 GB200 GPUs: 1,032,192 GPUs.
 * h100-superpod: 16 DGX SuperPODs x 4 scalable units x 32 DGX H100 nodes x
 * 8 GPUs (the SU is the 32-node, 256-GPU rail-optimized InfiniBand unit):
 * 16,384 GPUs.
 * tiny: 2 blocks x 2 racks x 4 nodes x 8 GPUs = 128 GPUs, for examples and
 * tests. */
static const gs_preset gs_presets[] = {
    {"gb200-nvl72-1m", 3, {"zone", "block", "rack"}, {8, 32, 56, 18}, 4, "gb200"},
    {"h100-superpod", 2, {"pod", "su"}, {16, 4, 32}, 8, "h100"},
    {"tiny", 2, {"block", "rack"}, {2, 2, 4}, 8, "h100"},
};

GPUSCHED_API const char *gpusched_topo_preset_name(uint32_t i)
{
    return i < GS_ARRAY_LEN(gs_presets) ? gs_presets[i].name : NULL;
}

GPUSCHED_API int gpusched_topo_preset(const char *name, const gpusched_allocator *alloc,
                                      gpusched_topo **out, char *errbuf, size_t errbuf_len)
{
    gs_err e = {0};
    int rc = 0;
    const gs_preset *p = NULL;
    if (!name || !out)
        rc = gs_error(&e, GPUSCHED_EINVAL, "name or out is NULL");
    for (size_t i = 0; !rc && !p && i < GS_ARRAY_LEN(gs_presets); i++)
        if (!strcmp(gs_presets[i].name, name))
            p = &gs_presets[i];
    if (!rc && !p)
        rc = gs_error(&e, GPUSCHED_ENOENT, "no preset named '%.63s'", name);
    gs_alloc a;
    if (!rc && (rc = gs_alloc_init(&a, alloc)))
        gs_error(&e, rc, "invalid allocator");
    if (!rc)
        rc = gs_topo_uniform(p->nlevels, p->levels, p->fanout, p->gpus, p->cls, &a, out, &e);
    gs_err_export(&e, errbuf, errbuf_len);
    return rc;
}
