/* Per-domain aggregates: what placement reads instead of visiting nodes.
 * Everything counts GPUs usable for new work (free GPUs of up nodes). */
#include <string.h>

#include "cluster-write.h"

static inline uint32_t gs_gpu_base(const struct gpusched_topo *t, uint32_t n)
{
    return n == t->nnodes ? (uint32_t)t->ngpus : t->node_gpu_base[n];
}

uint32_t gs_topo_dom_gpus(const struct gpusched_topo *t, uint32_t l, uint32_t d)
{
    return gs_gpu_base(t, t->dom_start[l][d + 1]) - gs_gpu_base(t, t->dom_start[l][d]);
}

int gs_aggs_alloc(struct gpusched_cluster *c, const gs_alloc *a)
{
    const struct gpusched_topo *t = c->topo;
    c->root_hist = gs_calloc(a, c->hist_width, sizeof(uint32_t));
    if (!c->root_hist)
        return GPUSCHED_ENOMEM;
    for (uint32_t l = 0; l < t->nlevels; l++) {
        gs_agg *g = &c->agg[l];
        g->free_gpus = gs_calloc(a, t->ndom[l], sizeof(uint32_t));
        g->free_nodes = gs_calloc(a, t->ndom[l], sizeof(uint32_t));
        g->hist = gs_calloc(a, (size_t)t->ndom[l] * c->hist_width, sizeof(uint32_t));
        g->dom_gpus = gs_malloc(a, (size_t)t->ndom[l] * sizeof(uint32_t));
        if (!g->free_gpus || !g->free_nodes || !g->hist || !g->dom_gpus)
            return GPUSCHED_ENOMEM;
        for (uint32_t d = 0; d < t->ndom[l]; d++)
            g->dom_gpus[d] = gs_topo_dom_gpus(t, l, d);
    }
    return 0;
}

void gs_aggs_free(struct gpusched_cluster *c, const gs_alloc *a)
{
    gs_free(a, c->root_hist);
    c->root_hist = NULL;
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++) {
        gs_free(a, c->agg[l].free_gpus);
        gs_free(a, c->agg[l].free_nodes);
        gs_free(a, c->agg[l].hist);
        gs_free(a, c->agg[l].dom_gpus);
        memset(&c->agg[l], 0, sizeof c->agg[l]);
    }
}

size_t gs_aggs_bytes(const struct gpusched_cluster *c)
{
    size_t b = (size_t)c->hist_width * sizeof(uint32_t);
    for (uint32_t l = 0; l < c->nlevels; l++)
        b += (size_t)c->topo->ndom[l] * (3 + c->hist_width) * sizeof(uint32_t);
    return b;
}

/* Sums children into parents, level by level, then counts fully free
 * domains: O(nodes + domains * hist_width). */
void gs_aggs_compute(struct gpusched_cluster *dst, const struct gpusched_cluster *src)
{
    const struct gpusched_topo *t = src->topo;
    const uint32_t H = dst->hist_width, nl = t->nlevels, leaf = nl - 1;
    for (uint32_t l = 0; l < nl; l++) {
        memset(dst->agg[l].free_gpus, 0, t->ndom[l] * sizeof(uint32_t));
        memset(dst->agg[l].free_nodes, 0, t->ndom[l] * sizeof(uint32_t));
        memset(dst->agg[l].hist, 0, (size_t)t->ndom[l] * H * sizeof(uint32_t));
    }
    memset(dst->root_hist, 0, H * sizeof(uint32_t));
    memset(dst->full_doms, 0, sizeof dst->full_doms);
    memset(dst->full_gpus, 0, sizeof dst->full_gpus);
    dst->root_free_gpus = 0;
    dst->root_free_nodes = 0;

    gs_agg *g = &dst->agg[leaf];
    for (uint32_t n = 0; n < t->nnodes; n++) {
        uint64_t avail = gs_cluster_node_avail(src, n);
        uint32_t k = gs_popcount64(avail);
        uint32_t full = avail == gs_node_all_mask(t->node_gpus[n]);
        uint32_t d = t->node_leaf[n];
        g->free_gpus[d] += k;
        g->free_nodes[d] += full;
        g->hist[(size_t)d * H + k]++;
        dst->root_free_gpus += k;
        dst->root_free_nodes += full;
        dst->root_hist[k]++;
        dst->full_doms[nl] += full;
        dst->full_gpus[nl] += full ? t->node_gpus[n] : 0;
    }
    for (uint32_t l = leaf; l > 0; l--) {
        gs_agg *c = &dst->agg[l], *p = &dst->agg[l - 1];
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            uint32_t up = t->dom_parent[l][d];
            p->free_gpus[up] += c->free_gpus[d];
            p->free_nodes[up] += c->free_nodes[d];
            for (uint32_t k = 0; k < H; k++)
                p->hist[(size_t)up * H + k] += c->hist[(size_t)d * H + k];
        }
    }
    for (uint32_t l = 0; l < nl; l++)
        for (uint32_t d = 0; d < t->ndom[l]; d++)
            if (dst->agg[l].free_nodes[d] == gs_topo_dom_nodes(t, l, d)) {
                dst->full_doms[l]++;
                dst->full_gpus[l] += dst->agg[l].dom_gpus[d];
            }
}

/* Counts of the masks allocations meet most: empty and whole
 * nodes need no population count. */
static inline uint32_t gs_count_node(uint64_t x, uint64_t all, uint32_t gpus)
{
    return x == 0 ? 0 : x == all ? gpus : gs_popcount64(x);
}

/* The hot path of every allocation and release. The build has
 * -fno-strict-aliasing, so each counter store would make the compiler
 * reload every field it reads; they are read into locals first. */
void gs_cluster_node_changed(struct gpusched_cluster *c, uint32_t n, uint64_t old_avail)
{
    gs_cluster_node_touch(c, n);
    const uint64_t avail = gs_cluster_node_avail(c, n);
    const uint32_t gpus = gs_cl_node_gpus(c, n);
    const uint64_t all = gs_node_all_mask(gpus);
    const uint32_t ok = gs_count_node(old_avail, all, gpus), nk = gs_count_node(avail, all, gpus);
    if (ok == nk)
        return; /* same count, other bits: no aggregate moves */
    const size_t H = c->hist_width;
    const uint32_t nl = c->nlevels;
    const int32_t dfull = (int32_t)(avail == all) - (int32_t)(old_avail == all);
    const uint32_t dfree = nk - ok; /* modular: adding it works for both signs */
    uint32_t *const root_hist = c->root_hist;

    c->root_free_gpus += (uint64_t)(int64_t)(int32_t)dfree;
    root_hist[ok]--;
    root_hist[nk]++;
    uint32_t d = gs_cl_node_leaf(c, n);
    if (!dfull) {
        for (uint32_t l = nl; l-- > 0;) {
            const gs_agg g = c->agg[l];
            g.free_gpus[d] += dfree;
            g.hist[d * H + ok]--;
            g.hist[d * H + nk]++;
            if (l)
                d = gs_cl_parent(c, l, d);
        }
        return;
    }
    c->root_free_nodes += (uint32_t)dfull;
    c->full_doms[nl] += (uint32_t)dfull;
    c->full_gpus[nl] += (uint64_t)(int64_t)(dfull * (int32_t)gpus);
    for (uint32_t l = nl; l-- > 0;) {
        const gs_agg g = c->agg[l];
        g.free_gpus[d] += dfree;
        g.hist[d * H + ok]--;
        g.hist[d * H + nk]++;
        const uint32_t size = gs_cl_dom_nodes(c, l, d);
        const uint32_t before = g.free_nodes[d], after = before + (uint32_t)dfull;
        g.free_nodes[d] = after;
        if (before == size || after == size) {
            const int32_t sign = after == size ? 1 : -1;
            c->full_doms[l] += (uint32_t)sign;
            c->full_gpus[l] += (uint64_t)(sign * (int64_t)g.dom_gpus[d]);
        }
        if (l)
            d = gs_cl_parent(c, l, d);
    }
}

/* ---- batched updates for large allocations ------------------------------ */

/* Changes of the nodes of one lowest domain, gathered before they are
 * applied to it and its ancestors once. */
typedef struct gs_leaf_delta {
    int32_t free_gpus;
    int32_t free_nodes;
    int64_t full_gpus;          /* GPUs of nodes that became (un)fully free */
    uint32_t lo, hi;            /* histogram buckets touched: [lo, hi] */
    int32_t hist[GPUSCHED_MAX_NODE_GPUS + 1];
} gs_leaf_delta;

static void gs_delta_node(gs_leaf_delta *x, uint64_t old_avail, uint64_t avail, uint32_t gpus)
{
    uint64_t all = gs_node_all_mask(gpus);
    uint32_t ok = gs_count_node(old_avail, all, gpus), nk = gs_count_node(avail, all, gpus);
    if (ok == nk)
        return;
    int32_t dfull = (int32_t)(avail == all) - (int32_t)(old_avail == all);
    x->free_gpus += (int32_t)nk - (int32_t)ok;
    x->free_nodes += dfull;
    x->full_gpus += (int64_t)dfull * gpus;
    x->hist[ok]--;
    x->hist[nk]++;
    uint32_t lo = ok < nk ? ok : nk, hi = ok < nk ? nk : ok;
    x->lo = lo < x->lo ? lo : x->lo;
    x->hi = hi > x->hi ? hi : x->hi;
}

static void gs_delta_row(uint32_t *free_gpus, uint32_t *free_nodes, uint32_t *hist, const gs_leaf_delta *x)
{
    *free_gpus += (uint32_t)x->free_gpus;
    *free_nodes += (uint32_t)x->free_nodes;
    for (uint32_t k = x->lo; k <= x->hi; k++)
        hist[k] += (uint32_t)x->hist[k];
}

static void gs_delta_apply(struct gpusched_cluster *c, uint32_t leaf, gs_leaf_delta *x)
{
    if (x->lo > x->hi)
        return;
    const size_t H = c->hist_width;
    const uint32_t nl = c->nlevels;
    c->root_free_gpus += (uint64_t)(int64_t)x->free_gpus;
    c->root_free_nodes += (uint32_t)x->free_nodes;
    for (uint32_t k = x->lo; k <= x->hi; k++)
        c->root_hist[k] += (uint32_t)x->hist[k];
    c->full_doms[nl] += (uint32_t)x->free_nodes;
    c->full_gpus[nl] += (uint64_t)x->full_gpus;
    uint32_t d = leaf;
    for (uint32_t l = nl; l-- > 0;) {
        const gs_agg g = c->agg[l];
        const uint32_t size = gs_cl_dom_nodes(c, l, d);
        const uint32_t before = g.free_nodes[d];
        gs_delta_row(&g.free_gpus[d], &g.free_nodes[d], &g.hist[d * H], x);
        const uint32_t after = g.free_nodes[d];
        if ((before == size) != (after == size)) {
            const int32_t sign = after == size ? 1 : -1;
            c->full_doms[l] += (uint32_t)sign;
            c->full_gpus[l] += (uint64_t)(sign * (int64_t)g.dom_gpus[d]);
        }
        if (l)
            d = gs_cl_parent(c, l, d);
    }
    for (uint32_t k = x->lo; k <= x->hi; k++)
        x->hist[k] = 0;
    x->free_gpus = x->free_nodes = 0;
    x->full_gpus = 0;
    x->lo = UINT32_MAX;
    x->hi = 0;
}

/* A walk over ascending nodes that gathers their changes per lowest
 * domain and applies each domain's once, when the walk leaves it. */
typedef struct gs_leaf_walk {
    gs_leaf_delta x;
    uint32_t leaf, start, end;
    bool started;
} gs_leaf_walk;

static void gs_walk_begin(gs_leaf_walk *w)
{
    memset(w, 0, sizeof *w);
    w->x.lo = UINT32_MAX;
}

static inline void gs_walk_enter(struct gpusched_cluster *c, gs_leaf_walk *w, uint32_t node)
{
    if (w->started && node >= w->start && node < w->end)
        return;
    if (w->started)
        gs_delta_apply(c, w->leaf, &w->x);
    const uint32_t *start = c->topo->dom_start[c->nlevels - 1];
    w->leaf = gs_cl_node_leaf(c, node);
    w->start = start[w->leaf];
    w->end = start[w->leaf + 1];
    w->started = true;
}

static void gs_walk_end(struct gpusched_cluster *c, gs_leaf_walk *w)
{
    if (w->started)
        gs_delta_apply(c, w->leaf, &w->x);
}

/* A large allocation or release touches thousands of nodes that share
 * lowest domains (nodes are ascending and domains contiguous), so the
 * aggregates are updated once per lowest domain instead of once per node:
 * O(levels * hist_width) per domain touched plus O(1) per node. Returns
 * the GPUs of the masks. */
uint32_t gs_cluster_nodes_set(struct gpusched_cluster *c, uint32_t n, const uint32_t *nodes,
                              const uint64_t *masks, int claim, uint32_t holder)
{
    gs_leaf_walk w;
    gs_walk_begin(&w);
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t node = nodes[i];
        const uint64_t mask = masks[i];
        gs_walk_enter(c, &w, node);
        const uint32_t gpus = gs_cl_node_gpus(c, node);
        const uint64_t old = gs_cluster_node_avail(c, node);
        c->node_free[node] = claim ? c->node_free[node] & ~mask : c->node_free[node] | mask;
        gs_cluster_node_touch(c, node);
        gs_holder_fill(&c->gpu_holder[gs_cl_gpu_base(c, node)], mask, holder);
        gs_delta_node(&w.x, old, gs_cluster_node_avail(c, node), gpus);
        total += gs_count_node(mask, gs_node_all_mask(gpus), gpus);
    }
    gs_walk_end(c, &w);
    return total;
}

void gs_cluster_flips_apply(struct gpusched_cluster *c, const gs_flip *f, uint32_t n)
{
    if (n <= GS_BATCH_MIN_PAIRS) {
        for (uint32_t i = 0; i < n; i++) {
            const uint32_t node = f[i].node;
            const uint64_t old = gs_cluster_node_avail(c, node);
            c->node_free[node] ^= f[i].fx;
            c->node_resv[node] ^= f[i].rx;
            gs_cluster_node_changed(c, node, old);
        }
        return;
    }
    gs_leaf_walk w;
    gs_walk_begin(&w);
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t node = f[i].node;
        gs_walk_enter(c, &w, node);
        const uint64_t old = gs_cluster_node_avail(c, node);
        c->node_free[node] ^= f[i].fx;
        c->node_resv[node] ^= f[i].rx;
        gs_cluster_node_touch(c, node);
        gs_delta_node(&w.x, old, gs_cluster_node_avail(c, node), gs_cl_node_gpus(c, node));
    }
    gs_walk_end(c, &w);
}

uint32_t gs_cluster_hist_at_least(const struct gpusched_cluster *c, uint32_t l, uint32_t d, uint32_t g)
{
    const uint32_t *h = l == GPUSCHED_NONE ? c->root_hist : &c->agg[l].hist[(size_t)d * c->hist_width];
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
    *gpus = level == GPUSCHED_NONE ? c->root_free_gpus : c->agg[level].free_gpus[domain];
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_domain_free_nodes(gpusched_cluster *c, uint32_t level, uint32_t domain,
                                                    uint32_t *nodes)
{
    int rc = gs_domain_arg(c, level, domain, nodes);
    if (rc)
        return rc;
    *nodes = level == GPUSCHED_NONE ? c->root_free_nodes : c->agg[level].free_nodes[domain];
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_domain_nodes_with_free(gpusched_cluster *c, uint32_t level,
                                                         uint32_t domain, uint32_t gpus,
                                                         uint32_t *nodes)
{
    int rc = gs_domain_arg(c, level, domain, nodes);
    if (rc)
        return rc;
    if (gpus > GPUSCHED_MAX_NODE_GPUS)
        return gs_error(&c->err, GPUSCHED_ERANGE, "gpus %u out of range (at most %u per node)", gpus,
                        GPUSCHED_MAX_NODE_GPUS);
    *nodes = gs_cluster_hist_at_least(c, level, domain, gpus);
    return gs_ok(&c->err);
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
    const uint32_t *h =
        level == GPUSCHED_NONE ? c->root_hist : &c->agg[level].hist[(size_t)domain * c->hist_width];
    memcpy(hist, h, c->hist_width * sizeof *hist);
    return gs_ok(&c->err);
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
        *stranded_gpus = c->root_free_gpus - c->full_gpus[level];
    if (gang_gpus)
        *gang_gpus = c->full_gpus[level];
    return gs_ok(&c->err);
}
