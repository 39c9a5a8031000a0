/* Freeze: numbers domains and nodes so that every domain is one contiguous
 * node range. Domains keep the order of their first appearance among their
 * siblings and nodes their insertion order within a lowest domain, so the
 * whole sort is a counting sort per level, O(nodes + domains), with no
 * string comparison. */
#include <string.h>

#include "topo-construct.h"
#include "topo-builder.h"

/* Stable counting sort of one level's builder domains by the final index of
 * their parent: fills `map` (builder id -> final index), the parents'
 * child_start and this level's dom_parent. */
static void gs_sort_level(gpusched_topo *t, const gs_blevel *lv, uint32_t l, const uint32_t *pmap,
                          uint32_t *map)
{
    uint32_t np = t->ndom[l - 1];
    uint32_t *cs = t->child_start[l - 1];
    memset(cs, 0, ((size_t)np + 1) * sizeof *cs);
    for (uint32_t d = 0; d < lv->n; d++)
        cs[pmap[lv->parent[d]] + 1]++;
    for (uint32_t p = 0; p < np; p++)
        cs[p + 1] += cs[p];
    /* cs[p] serves as the cursor of parent p, then is shifted back. */
    for (uint32_t d = 0; d < lv->n; d++) {
        uint32_t p = pmap[lv->parent[d]];
        map[d] = cs[p]++;
        t->dom_parent[l][map[d]] = p;
    }
    memmove(cs + 1, cs, (size_t)np * sizeof *cs);
    cs[0] = 0;
}

static void gs_sort_nodes(gpusched_topo *t, const gpusched_topo_builder *b, const uint32_t *leafmap,
                          uint32_t *perm)
{
    uint32_t L = t->nlevels - 1, nl = t->ndom[L];
    uint32_t *ds = t->dom_start[L];
    memset(ds, 0, ((size_t)nl + 1) * sizeof *ds);
    for (uint32_t n = 0; n < b->nnodes; n++)
        ds[leafmap[b->node_leaf[n]] + 1]++;
    for (uint32_t d = 0; d < nl; d++)
        ds[d + 1] += ds[d];
    uint32_t *names = t->names->node_name;
    for (uint32_t n = 0; n < b->nnodes; n++) {
        uint32_t leaf = leafmap[b->node_leaf[n]];
        uint32_t pos = ds[leaf]++;
        perm[n] = pos;
        t->node_leaf[pos] = leaf;
        t->node_gpus[pos] = b->node_gpus[n];
        t->node_class[pos] = b->node_class[n];
        t->node_labels[pos] = b->node_labels[n];
        names[pos] = b->node_name[n];
    }
    for (uint32_t r = 0; r < b->nres; r++)
        for (uint32_t n = 0; n < b->nnodes; n++)
            t->node_res[r][perm[n]] = b->node_res[r][n];
    memmove(ds + 1, ds, (size_t)nl * sizeof *ds);
    ds[0] = 0;
}

/* The builder's node index, with ids renumbered: same hashes, same slots,
 * so no name is hashed again. */
static void gs_remap_index(gs_hindex *dst, const gs_hindex *src, const uint32_t *perm)
{
    size_t n = (size_t)src->mask + 1;
    dst->mask = src->mask;
    dst->count = src->count;
    /* Input already grouped by domain (any export, most files) keeps its
     * numbering: then a copy avoids a random read of perm[] per slot. */
    uint32_t same = 0;
    while (same < src->count && perm[same] == same)
        same++;
    if (same == src->count) {
        memcpy(dst->slots, src->slots, n * sizeof *dst->slots);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t id = src->slots[i].id;
        dst->slots[i] = (gs_hslot){id == GS_HEMPTY ? GS_HEMPTY : perm[id], src->slots[i].hash};
    }
}

static int gs_freeze_meta(gpusched_topo *t, const gpusched_topo_builder *b)
{
    const char *levels[GS_MAX_LEVELS], *classes[GPUSCHED_MAX_CLASSES];
    const char *labels[GPUSCHED_MAX_LABELS];
    for (uint32_t l = 0; l < b->nlevels; l++)
        levels[l] = gs_pool_str(&b->pool, b->level_name[l]);
    for (uint32_t c = 0; c < b->nclasses; c++)
        classes[c] = gs_pool_str(&b->pool, b->class_name[c]);
    for (uint32_t i = 0; i < b->nlabels; i++)
        labels[i] = gs_pool_str(&b->pool, b->label_name[i]);
    const char *res[GPUSCHED_MAX_RESOURCES];
    for (uint32_t r = 0; r < b->nres; r++)
        res[r] = gs_pool_str(&b->pool, b->res_name[r]);
    int rc = gs_topo_set_meta(t, levels, b->nclasses, classes, b->nlabels, labels);
    return rc ? rc : gs_topo_set_resources(t, b->nres, res);
}

static int gs_freeze(gpusched_topo_builder *b, gpusched_topo **out)
{
    if (!b->nlevels)
        return gs_error(&b->err, GPUSCHED_ESTATE, "levels are not set");
    if (!b->nnodes)
        return gs_error(&b->err, GPUSCHED_ESTATE, "the builder has no node");
    if (b->ngpus == 0) /* a GPU scheduler's topology; the cluster sizes its GPU arrays by it */
        return gs_error(&b->err, GPUSCHED_ESTATE, "the topology has no GPU (every node has 0)");
    if (b->ngpus > UINT32_MAX)
        return gs_error(&b->err, GPUSCHED_ELIMIT, "%llu GPUs, at most 2^32-1 allowed",
                        (unsigned long long)b->ngpus);
    uint32_t ndom[GS_MAX_LEVELS];
    size_t maps = 0;
    for (uint32_t l = 0; l < b->nlevels; l++) {
        ndom[l] = b->lv[l].n;
        maps += ndom[l];
    }
    gpusched_topo *t = NULL;
    int rc = gs_topo_alloc(&b->alloc, b->nlevels, ndom, b->nnodes, &t);
    uint32_t *map = NULL;
    gs_hindex *nix = t ? &t->names->node_index : NULL;
    if (!rc)
        rc = gs_names_new_stored(t, b->pool.len, false);
    if (!rc)
        rc = gs_freeze_meta(t, b);
    if (!rc && !(map = gs_malloc(&b->alloc, (maps + b->nnodes) * sizeof *map)))
        rc = GPUSCHED_ENOMEM;
    if (!rc && !(nix->slots = gs_malloc(&b->alloc, gs_hindex_bytes(&b->node_index))))
        rc = GPUSCHED_ENOMEM;
    if (rc) {
        gs_free(&b->alloc, map);
        gs_topo_destroy(t);
        return gs_error(&b->err, rc, "out of memory");
    }

    uint32_t *lmap[GS_MAX_LEVELS];
    lmap[0] = map;
    for (uint32_t d = 0; d < ndom[0]; d++)
        map[d] = d;
    for (uint32_t l = 1; l < b->nlevels; l++) {
        lmap[l] = lmap[l - 1] + ndom[l - 1];
        gs_sort_level(t, &b->lv[l], l, lmap[l - 1], lmap[l]);
    }
    uint32_t *perm = map + maps;
    gs_sort_nodes(t, b, lmap[b->nlevels - 1], perm);
    gs_topo_finish_ranges(t);
    gs_topo_finish_gpus(t);

    gs_names *nm = t->names;
    memcpy(nm->pool.buf, b->pool.buf, b->pool.len);
    for (uint32_t l = 0; l < b->nlevels; l++)
        for (uint32_t d = 0; d < ndom[l]; d++)
            nm->dom_name[l][lmap[l][d]] = b->lv[l].name[d];
    (void)gs_names_index(t, false); /* the builder's interning made names unique */
    gs_remap_index(nix, &b->node_index, perm);
    gs_free(&b->alloc, map);
    *out = t;
    return 0;
}

GPUSCHED_API int gpusched_topo_builder_freeze(gpusched_topo_builder *b, gpusched_topo **out)
{
    if (!b)
        return GPUSCHED_EINVAL;
    if (!out)
        return gs_error(&b->err, GPUSCHED_EINVAL, "out is NULL");
    int rc = gs_freeze(b, out);
    if (!rc)
        gs_err_clear(&b->err);
    return rc;
}
