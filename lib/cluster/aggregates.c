/* Per-domain aggregates: what placement reads instead of visiting nodes.
 * Everything counts GPUs usable for new work (free GPUs of up nodes). */
#include <string.h>

#include "cluster-internal.h"

static inline uint32_t gs_gpu_base(const struct gpusched_topo *t, uint32_t n)
{
    return n == t->nnodes ? (uint32_t)t->ngpus : t->node_gpu_base[n];
}

uint32_t gs_topo_dom_gpus(const struct gpusched_topo *t, uint32_t l, uint32_t d)
{
    return gs_gpu_base(t, t->dom_start[l][d + 1]) - gs_gpu_base(t, t->dom_start[l][d]);
}

/* One 64-byte aligned block of `nrows` rows (zeroed). */
static uint32_t *gs_rows_alloc(const gs_alloc *a, size_t nrows, uint32_t stride, void **mem)
{
    size_t n;
    if (__builtin_mul_overflow(nrows, (size_t)stride, &n) || n > SIZE_MAX / 4 - 16)
        return NULL;
    *mem = gs_calloc(a, n + 16, sizeof(uint32_t));
    if (!*mem)
        return NULL;
    uintptr_t p = ((uintptr_t)*mem + 63) & ~(uintptr_t)63;
    return (uint32_t *)p;
}

static uint32_t gs_row_stride(uint32_t hist_width)
{
    uint32_t need = GS_AGG_HIST + hist_width;
    return need <= 8 ? 8 : (need + 15) & ~15u; /* whole 32- or 64-byte blocks */
}

int gs_aggs_alloc(struct gpusched_cluster *c, const gs_alloc *a)
{
    const struct gpusched_topo *t = c->topo;
    c->agg_stride = gs_row_stride(c->hist_width);
    c->root = gs_rows_alloc(a, 1, c->agg_stride, &c->root_mem);
    if (!c->root)
        return GPUSCHED_ENOMEM;
    c->root[GS_AGG_NODES] = t->nnodes;
    c->root[GS_AGG_GPUS] = (uint32_t)t->ngpus;
    for (uint32_t l = 0; l < t->nlevels; l++) {
        c->rows[l] = gs_rows_alloc(a, t->ndom[l], c->agg_stride, &c->rows_mem[l]);
        if (!c->rows[l])
            return GPUSCHED_ENOMEM;
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            uint32_t *row = gs_agg_row(c, l, d);
            row[GS_AGG_NODES] = gs_topo_dom_nodes(t, l, d);
            row[GS_AGG_GPUS] = gs_topo_dom_gpus(t, l, d);
        }
    }
    return 0;
}

void gs_aggs_free(struct gpusched_cluster *c, const gs_alloc *a)
{
    gs_free(a, c->root_mem);
    c->root_mem = NULL;
    c->root = NULL;
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++) {
        gs_free(a, c->rows_mem[l]);
        c->rows_mem[l] = NULL;
        c->rows[l] = NULL;
    }
}

size_t gs_aggs_bytes(const struct gpusched_cluster *c)
{
    size_t rows = 1;
    for (uint32_t l = 0; l < c->nlevels; l++)
        rows += c->topo->ndom[l];
    return (rows * c->agg_stride + 16 * (c->nlevels + 1)) * sizeof(uint32_t);
}

static void gs_row_clear(uint32_t *row, uint32_t H)
{
    row[GS_AGG_FREE_GPUS] = 0;
    row[GS_AGG_FREE_NODES] = 0;
    memset(row + GS_AGG_HIST, 0, H * sizeof *row);
}

static void gs_row_add(uint32_t *dst, const uint32_t *src, uint32_t H)
{
    dst[GS_AGG_FREE_GPUS] += src[GS_AGG_FREE_GPUS];
    dst[GS_AGG_FREE_NODES] += src[GS_AGG_FREE_NODES];
    for (uint32_t k = 0; k < H; k++)
        dst[GS_AGG_HIST + k] += src[GS_AGG_HIST + k];
}

/* Sums children into parents, level by level, then counts fully free
 * domains: O(nodes + domains * hist_width). Reads only `src`'s node state
 * and the topology, so the checker can compute into a scratch struct. */
void gs_aggs_compute(struct gpusched_cluster *dst, const struct gpusched_cluster *src)
{
    const struct gpusched_topo *t = src->topo;
    const uint32_t H = dst->hist_width, nl = t->nlevels, leaf = nl - 1;
    for (uint32_t l = 0; l < nl; l++)
        for (uint32_t d = 0; d < t->ndom[l]; d++)
            gs_row_clear(gs_agg_row(dst, l, d), H);
    gs_row_clear(dst->root, H);
    memset(dst->full_doms, 0, sizeof dst->full_doms);
    memset(dst->full_gpus, 0, sizeof dst->full_gpus);

    for (uint32_t n = 0; n < t->nnodes; n++) {
        uint64_t avail = gs_cluster_node_avail(src, n);
        uint32_t k = gs_mask_count(avail);
        uint32_t full = avail == gs_node_all_mask(t->node_gpus[n]);
        uint32_t *row = gs_agg_row(dst, leaf, t->node_leaf[n]);
        row[GS_AGG_FREE_GPUS] += k;
        row[GS_AGG_FREE_NODES] += full;
        row[GS_AGG_HIST + k]++;
        dst->full_doms[nl] += full;
        dst->full_gpus[nl] += full ? t->node_gpus[n] : 0;
    }
    for (uint32_t l = leaf; l > 0; l--)
        for (uint32_t d = 0; d < t->ndom[l]; d++)
            gs_row_add(gs_agg_row(dst, l - 1, t->dom_parent[l][d]), gs_agg_row(dst, l, d), H);
    for (uint32_t d = 0; d < t->ndom[0]; d++)
        gs_row_add(dst->root, gs_agg_row(dst, 0, d), H);
    for (uint32_t l = 0; l < nl; l++)
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            const uint32_t *row = gs_agg_row(dst, l, d);
            if (row[GS_AGG_FREE_NODES] == row[GS_AGG_NODES]) {
                dst->full_doms[l]++;
                dst->full_gpus[l] += row[GS_AGG_GPUS];
            }
        }
}

/* The hot path of every allocation and release: one row per level. The
 * build has -fno-strict-aliasing, so each counter store would make the
 * compiler reload every field it reads; they are read into locals first. */
void gs_cluster_node_changed(struct gpusched_cluster *c, uint32_t n, uint64_t old_avail)
{
    const struct gpusched_topo *t = c->topo;
    const uint64_t avail = gs_cluster_node_avail(c, n);
    const uint32_t ok = gs_mask_count(old_avail), nk = gs_mask_count(avail);
    if (ok == nk)
        return; /* same count, other bits: no aggregate moves */
    const size_t S = c->agg_stride;
    const uint32_t nl = c->nlevels;
    const uint32_t gpus = t->node_gpus[n];
    const uint64_t all = gs_node_all_mask(gpus);
    const int32_t dfull = (int32_t)(avail == all) - (int32_t)(old_avail == all);
    const uint32_t dfree = nk - ok; /* modular: adding it works for both signs */
    uint32_t *row = c->root;
    row[GS_AGG_FREE_GPUS] += dfree;
    row[GS_AGG_FREE_NODES] += (uint32_t)dfull;
    row[GS_AGG_HIST + ok]--;
    row[GS_AGG_HIST + nk]++;
    uint32_t d = t->node_leaf[n];
    if (!dfull) {
        for (uint32_t l = nl; l-- > 0;) {
            row = c->rows[l] + d * S;
            row[GS_AGG_FREE_GPUS] += dfree;
            row[GS_AGG_HIST + ok]--;
            row[GS_AGG_HIST + nk]++;
            if (l)
                d = t->dom_parent[l][d];
        }
        return;
    }
    c->full_doms[nl] += (uint32_t)dfull;
    c->full_gpus[nl] += (uint64_t)(int64_t)(dfull * (int32_t)gpus);
    for (uint32_t l = nl; l-- > 0;) {
        row = c->rows[l] + d * S;
        row[GS_AGG_FREE_GPUS] += dfree;
        row[GS_AGG_HIST + ok]--;
        row[GS_AGG_HIST + nk]++;
        const uint32_t size = row[GS_AGG_NODES];
        const uint32_t before = row[GS_AGG_FREE_NODES], after = before + (uint32_t)dfull;
        row[GS_AGG_FREE_NODES] = after;
        if (before == size || after == size) {
            const int32_t sign = after == size ? 1 : -1;
            c->full_doms[l] += (uint32_t)sign;
            c->full_gpus[l] += (uint64_t)(sign * (int64_t)row[GS_AGG_GPUS]);
        }
        if (l)
            d = t->dom_parent[l][d];
    }
}

uint32_t gs_cluster_hist_at_least(const struct gpusched_cluster *c, uint32_t l, uint32_t d, uint32_t g)
{
    const uint32_t *h = gs_agg_row(c, l, d) + GS_AGG_HIST;
    uint32_t sum = 0;
    for (uint32_t k = g; k < c->hist_width; k++)
        sum += h[k];
    return sum;
}

/* ---- public queries ---------------------------------------------------- */

static int gs_domain_arg(gpusched_cluster *c, uint32_t level, uint32_t domain, const void *out)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (!out)
        return gs_error(&c->err, GPUSCHED_EINVAL, "output pointer is NULL");
    if (level == GPUSCHED_NONE)
        return 0;
    if (level >= c->nlevels)
        return gs_error(&c->err, GPUSCHED_ERANGE, "level %u out of range (the topology has %u)",
                        level, c->nlevels);
    if (domain >= c->topo->ndom[level])
        return gs_error(&c->err, GPUSCHED_ERANGE, "domain %u out of range (level %u has %u)",
                        domain, level, c->topo->ndom[level]);
    return 0;
}

GPUSCHED_API int gpusched_cluster_domain_free_gpus(gpusched_cluster *c, uint32_t level, uint32_t domain,
                                                   uint64_t *gpus)
{
    int rc = gs_domain_arg(c, level, domain, gpus);
    if (rc)
        return rc;
    *gpus = gs_agg_row(c, level, domain)[GS_AGG_FREE_GPUS];
    gs_err_clear(&c->err);
    return 0;
}

GPUSCHED_API int gpusched_cluster_domain_free_nodes(gpusched_cluster *c, uint32_t level, uint32_t domain,
                                                    uint32_t *nodes)
{
    int rc = gs_domain_arg(c, level, domain, nodes);
    if (rc)
        return rc;
    *nodes = gs_agg_row(c, level, domain)[GS_AGG_FREE_NODES];
    gs_err_clear(&c->err);
    return 0;
}

GPUSCHED_API int gpusched_cluster_domain_nodes_with_free(gpusched_cluster *c, uint32_t level,
                                                         uint32_t domain, uint32_t gpus,
                                                         uint32_t *nodes)
{
    int rc = gs_domain_arg(c, level, domain, nodes);
    if (rc)
        return rc;
    if (gpus > GPUSCHED_TOPO_MAX_NODE_GPUS)
        return gs_error(&c->err, GPUSCHED_ERANGE, "gpus %u out of range (at most %u per node)", gpus,
                        GPUSCHED_TOPO_MAX_NODE_GPUS);
    *nodes = gs_cluster_hist_at_least(c, level, domain, gpus);
    gs_err_clear(&c->err);
    return 0;
}

GPUSCHED_API int gpusched_cluster_domain_histogram(gpusched_cluster *c, uint32_t level, uint32_t domain,
                                                   uint32_t *hist, uint32_t cap, uint32_t *len)
{
    int rc = gs_domain_arg(c, level, domain, len);
    if (rc)
        return rc;
    *len = c->hist_width;
    if (cap < c->hist_width)
        return gs_error(&c->err, GPUSCHED_ERANGE, "histogram has %u entries, buffer holds %u",
                        c->hist_width, cap);
    if (!hist)
        return gs_error(&c->err, GPUSCHED_EINVAL, "hist is NULL");
    memcpy(hist, gs_agg_row(c, level, domain) + GS_AGG_HIST, c->hist_width * sizeof *hist);
    gs_err_clear(&c->err);
    return 0;
}

GPUSCHED_API int gpusched_cluster_frag(gpusched_cluster *c, uint32_t level, uint32_t *free_domains,
                                       uint64_t *stranded_gpus, uint64_t *gang_gpus)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (level > c->nlevels)
        return gs_error(&c->err, GPUSCHED_ERANGE,
                        "level %u out of range (0 to %u, %u being the nodes)", level, c->nlevels,
                        c->nlevels);
    if (free_domains)
        *free_domains = c->full_doms[level];
    if (stranded_gpus)
        *stranded_gpus = c->root[GS_AGG_FREE_GPUS] - c->full_gpus[level];
    if (gang_gpus)
        *gang_gpus = c->full_gpus[level];
    gs_err_clear(&c->err);
    return 0;
}
