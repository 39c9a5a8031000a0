/* The invariant checker: rebuilds the holder of every GPU from the jobs and
 * reservations, derives the masks from it, recomputes every aggregate from
 * scratch, and compares with what the cluster keeps incrementally. */
#include <string.h>

#include "cluster-write.h"

#define GS_BAD(c, ...) gs_error(&(c)->err, GPUSCHED_ECORRUPT, __VA_ARGS__)

static int gs_check_table(gpusched_cluster *c, const gs_holdtab *t, const char *what)
{
    if (t->count > t->used || t->used > t->cap || t->nfree + t->count != t->used)
        return GS_BAD(c, "%s table: count %u, used %u, free %u, cap %u disagree", what, t->count, t->used,
                      t->nfree, t->cap);
    uint32_t hashed = 0;
    for (uint32_t i = 0; i < t->hcap; i++)
        hashed += t->hash[i].slot != UINT32_MAX;
    if (hashed != t->count)
        return GS_BAD(c, "%s table: %u hash entries for %u records", what, hashed, t->count);
    for (uint32_t i = 0; i < t->count; i++) {
        uint32_t s = t->live[i];
        if (s >= t->used || t->rec[s].live != i)
            return GS_BAD(c, "%s table: live[%u] = slot %u is out of place", what, i, s);
        if (gs_holdtab_find(t, t->rec[s].id) != &t->rec[s])
            return GS_BAD(c, "%s table: id %llu does not hash to its slot %u", what,
                          (unsigned long long)t->rec[s].id, s);
    }
    return 0;
}

/* Marks the GPUs of one record in `expect`; every GPU at most once. */
static int gs_check_pairs(gpusched_cluster *c, const gs_hold *h, uint32_t holder, uint32_t *expect,
                          const char *what)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    uint32_t gpus = 0;
    if (h->npairs == 0 || (h->npairs > GS_HOLD_INLINE && !h->p.out.masks))
        return GS_BAD(c, "%s %llu: %u pairs, storage does not match", what, (unsigned long long)h->id,
                      h->npairs);
    /* A job with a podx may hold no GPU on a node (pods without GPUs); its
     * fractions' GPUs are shared, held by no one job. */
    const gs_podx *x = holder & GS_HOLDER_RESV ? NULL : gs_hold_podx(c, h);
    const bool shared = x && x->milli;
    const uint32_t mark = shared ? GS_HOLDER_SHARED : holder;
    for (uint32_t i = 0; i < h->npairs; i++) {
        uint32_t n = nodes[i];
        if (n >= t->nnodes || (i && n <= nodes[i - 1]) || (!masks[i] && !x) ||
            (masks[i] & ~gs_node_all_mask(t->node_gpus[n])))
            return GS_BAD(c, "%s %llu: pair %u (node %u, mask 0x%llx) is invalid", what,
                          (unsigned long long)h->id, i, n, (unsigned long long)masks[i]);
        uint32_t *e = &expect[t->node_gpu_base[n]];
        for (uint64_t m = masks[i]; m; m &= m - 1) {
            uint32_t g = gs_ctz64(m);
            if (e[g] && !(shared && e[g] == GS_HOLDER_SHARED))
                return GS_BAD(c, "%s %llu: node %u GPU %u is held twice", what, (unsigned long long)h->id,
                              n, g);
            e[g] = mark;
        }
        gpus += gs_popcount64(masks[i]);
    }
    if (shared)
        gpus = 0;
    if (gpus != h->ngpus)
        return GS_BAD(c, "%s %llu: %u GPUs recorded, %u in its pairs", what, (unsigned long long)h->id,
                      h->ngpus, gpus);
    return 0;
}

static int gs_check_nodes(gpusched_cluster *c, const uint32_t *expect)
{
    const struct gpusched_topo *t = c->topo;
    uint32_t not_up = 0;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        if (c->node_health[n] >= GS_NODE_HEALTHS)
            return GS_BAD(c, "node %u: health %u is not a health", n, c->node_health[n]);
        not_up += c->node_health[n] != GPUSCHED_NODE_UP;
        uint64_t free = 0, resv = 0;
        const uint32_t *e = &expect[t->node_gpu_base[n]];
        const uint32_t *h = &c->gpu_holder[t->node_gpu_base[n]];
        for (uint32_t g = 0; g < t->node_gpus[n]; g++) {
            if (e[g] != h[g])
                return GS_BAD(c, "node %u GPU %u: holder %#x, the jobs and reservations say %#x", n, g,
                              h[g], e[g]);
            uint64_t bit = (uint64_t)1 << g;
            if (e[g] == GS_HOLDER_SHARED)
                continue;
            if (!e[g] || ((e[g] & GS_HOLDER_RESV) && c->resv.rec[e[g] & ~GS_HOLDER_RESV].lent))
                free |= bit;
            else if (e[g] & GS_HOLDER_RESV)
                resv |= bit;
        }
        if (c->node_free[n] != free || c->node_resv[n] != resv)
            return GS_BAD(c, "node %u: free 0x%llx reserved 0x%llx, expected 0x%llx and 0x%llx", n,
                          (unsigned long long)c->node_free[n], (unsigned long long)c->node_resv[n],
                          (unsigned long long)free, (unsigned long long)resv);
    }
    if (c->nodes_not_up != not_up)
        return GS_BAD(c, "%u nodes counted as not up, %u are", c->nodes_not_up, not_up);
    return 0;
}

static int gs_check_aggs(gpusched_cluster *c, const gpusched_cluster *x)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t H = c->hist_width;
    if (c->root_free_gpus != x->root_free_gpus || c->root_free_nodes != x->root_free_nodes ||
        memcmp(c->root_hist, x->root_hist, H * sizeof(uint32_t)))
        return GS_BAD(c, "cluster totals: %llu free GPUs and %u free nodes kept, %llu and %u recomputed",
                      (unsigned long long)c->root_free_gpus, c->root_free_nodes,
                      (unsigned long long)x->root_free_gpus, x->root_free_nodes);
    for (uint32_t l = 0; l < t->nlevels; l++)
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            const gs_agg *a = &c->agg[l], *b = &x->agg[l];
            if (a->free_gpus[d] != b->free_gpus[d] || a->free_nodes[d] != b->free_nodes[d] ||
                memcmp(&a->hist[(size_t)d * H], &b->hist[(size_t)d * H], H * sizeof(uint32_t)))
                return GS_BAD(c, "level %u domain %u: %u free GPUs, %u free nodes kept; %u and %u recomputed"
                              " (or the histograms differ)",
                              l, d, a->free_gpus[d], a->free_nodes[d], b->free_gpus[d], b->free_nodes[d]);
        }
    for (uint32_t l = 0; l <= t->nlevels; l++)
        if (c->full_doms[l] != x->full_doms[l] || c->full_gpus[l] != x->full_gpus[l])
            return GS_BAD(c, "level %u: %u fully free domains (%llu GPUs) kept, %u (%llu) recomputed", l,
                          c->full_doms[l], (unsigned long long)c->full_gpus[l], x->full_doms[l],
                          (unsigned long long)x->full_gpus[l]);
    return 0;
}

static int gs_check_all(gpusched_cluster *c, uint32_t *expect, gpusched_cluster *scratch)
{
    int rc;
    if ((rc = gs_check_table(c, &c->jobs, "job")) || (rc = gs_check_table(c, &c->resv, "reservation")))
        return rc;
    if (c->txn.open)
        return GS_BAD(c, "a transaction is open");
    uint32_t lent = 0;
    for (uint32_t i = 0; i < c->jobs.count; i++) {
        uint32_t s = c->jobs.live[i];
        if (c->jobs.rec[s].lent)
            return GS_BAD(c, "job %llu is lent outside a transaction", (unsigned long long)c->jobs.rec[s].id);
        if ((rc = gs_check_pairs(c, &c->jobs.rec[s], s + 1, expect, "job")))
            return rc;
    }
    for (uint32_t i = 0; i < c->resv.count; i++) {
        uint32_t s = c->resv.live[i];
        lent += c->resv.rec[s].lent != 0;
        if ((rc = gs_check_pairs(c, &c->resv.rec[s], GS_HOLDER_RESV | s, expect, "reservation")))
            return rc;
    }
    if (lent || c->nlent)
        return GS_BAD(c, "%u reservations lent outside a transaction", lent);
    if (lent != c->nlent)
        return GS_BAD(c, "%u reservations lent, %u counted", lent, c->nlent);
    if ((rc = gs_check_nodes(c, expect)) || (rc = gs_pods_check(c)))
        return rc;
    gs_aggs_compute(scratch, c);
    if ((rc = gs_check_aggs(c, scratch)))
        return rc;
    return gs_pindex_check(c);
}

GPUSCHED_API int gpusched_cluster_check(gpusched_cluster *c)
{
    if (!c)
        return GPUSCHED_EINVAL;
    gpusched_cluster scratch;
    memset(&scratch, 0, sizeof scratch);
    scratch.topo = c->topo;
    scratch.nlevels = c->nlevels;
    scratch.hist_width = c->hist_width;
    uint32_t *expect = gs_calloc(&c->alloc, (size_t)c->topo->ngpus, sizeof *expect);
    int rc = expect ? gs_aggs_alloc(&scratch, &c->alloc) : GPUSCHED_ENOMEM;
    if (rc)
        rc = gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for the invariant check");
    else
        rc = gs_check_all(c, expect, &scratch);
    gs_aggs_free(&scratch, &c->alloc);
    gs_free(&c->alloc, expect);
    if (!rc)
        gs_err_clear(&c->err);
    return rc;
}
