/* The preemption index: per domain of every level, what its preemptible
 * jobs could free and at what least cost, so that a small preemption
 * visits only the domains whose bound can beat its best plan instead of
 * every job (doc/preempt.md, "Cost follows the answer").
 *
 * Derived state the cluster keeps lazily: applying a change marks the
 * lowest-level domains whose jobs changed (gs_pindex_mark), and
 * gs_cluster_pindex() recomputes those from their GPUs' holders, then their
 * ancestors from their children. Built on first use: a cluster that never
 * preempts pays only the marking, which is a no-op until then. */
#include <math.h>
#include <string.h>

#include "cluster-write.h"

/* One preemptible job inside one lowest-level domain. */
typedef struct gs_pj {
    uint32_t slot;
    uint32_t gpus;      /* its GPUs in the domain */
    double per_gpu;     /* cost_hint / gpus */
} gs_pj;

static void psum_empty(gs_psum *s)
{
    for (uint32_t i = 0; i < GS_PSUM_POINTS; i++)
        s->cost_at[i] = INFINITY;
    s->min_prio = INT32_MAX;
    s->max_prio = INT32_MIN;
}

static void psum_merge(gs_psum *into, const gs_psum *s)
{
    for (uint32_t i = 0; i < GS_PSUM_POINTS; i++)
        into->cost_at[i] = s->cost_at[i] < into->cost_at[i] ? s->cost_at[i] : into->cost_at[i];
    into->min_prio = s->min_prio < into->min_prio ? s->min_prio : into->min_prio;
    into->max_prio = s->max_prio > into->max_prio ? s->max_prio : into->max_prio;
}

/* The leaf's preemptible jobs with their GPUs in it, from the holders of
 * its GPUs (a job's GPUs in a node are consecutive holder entries, and its
 * nodes ascending: a job seen before is nearly always the last one). */
static uint32_t leaf_jobs(const struct gpusched_cluster *c, uint32_t leaf, gs_pj *out)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t l = t->nlevels - 1;
    const uint32_t n0 = t->dom_start[l][leaf], n1 = t->dom_start[l][leaf + 1];
    const uint64_t g0 = t->node_gpu_base[n0];
    const uint64_t g1 = n1 < t->nnodes ? t->node_gpu_base[n1] : t->ngpus;
    uint32_t n = 0;
    for (uint64_t g = g0; g < g1; g++) {
        const gs_hold *h = gs_cluster_holder_job(c, c->gpu_holder[g]);
        if (!h || !(h->flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE))
            continue;
        uint32_t slot = c->gpu_holder[g] - 1, k = n;
        while (k > 0 && out[k - 1].slot != slot)
            k--;
        if (k)
            out[k - 1].gpus++;
        else
            out[n++] = (gs_pj){slot, 1, 0};
    }
    return n;
}

/* The least cost of freeing 2^i GPUs from the leaf's preemptible jobs,
 * fractions allowed: cheapest per GPU first. */
static void leaf_summary(const struct gpusched_cluster *c, uint32_t leaf, gs_pj *jobs, gs_psum *s)
{
    psum_empty(s);
    uint32_t n = leaf_jobs(c, leaf, jobs);
    for (uint32_t i = 0; i < n; i++) {
        const gs_hold *h = &c->jobs.rec[jobs[i].slot];
        jobs[i].per_gpu = (double)h->cost_hint / jobs[i].gpus;
        s->min_prio = h->priority < s->min_prio ? h->priority : s->min_prio;
        s->max_prio = h->priority > s->max_prio ? h->priority : s->max_prio;
    }
    for (uint32_t i = 1; i < n; i++) {
        gs_pj v = jobs[i];
        uint32_t k = i;
        for (; k > 0 && v.per_gpu < jobs[k - 1].per_gpu; k--)
            jobs[k] = jobs[k - 1];
        jobs[k] = v;
    }
    double cost = 0;
    uint64_t freed = 0;
    uint32_t p = 0;
    for (uint32_t i = 0; i < n && p < GS_PSUM_POINTS; i++) {
        /* Points reached inside this job's GPUs. */
        while (p < GS_PSUM_POINTS && ((uint64_t)1 << p) <= freed + jobs[i].gpus) {
            s->cost_at[p] = cost + jobs[i].per_gpu * (double)(((uint64_t)1 << p) - freed);
            p++;
        }
        cost += jobs[i].per_gpu * jobs[i].gpus;
        freed += jobs[i].gpus;
    }
}

/* GPUs of the largest lowest-level domain: the room for one domain's jobs. */
static uint64_t largest_leaf_gpus(const struct gpusched_cluster *c)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t l = t->nlevels - 1;
    uint64_t most = 1;
    for (uint32_t d = 0; d < t->ndom[l]; d++)
        most = c->agg[l].dom_gpus[d] > most ? c->agg[l].dom_gpus[d] : most;
    return most;
}

static int pindex_build(struct gpusched_cluster *c)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t leaves = t->ndom[t->nlevels - 1];
    gs_pindex *x = &c->pindex;
    for (uint32_t l = 0; l < t->nlevels; l++)
        if (!(x->sum[l] = gs_malloc(&c->alloc, (size_t)t->ndom[l] * sizeof *x->sum[l])))
            return GPUSCHED_ENOMEM;
    x->marked = gs_calloc(&c->alloc, leaves, 1);
    x->dirty = gs_malloc(&c->alloc, (size_t)leaves * sizeof *x->dirty);
    x->jobs = gs_malloc(&c->alloc, (size_t)largest_leaf_gpus(c) * sizeof(gs_pj));
    if (!x->marked || !x->dirty || !x->jobs)
        return GPUSCHED_ENOMEM;
    for (uint32_t d = 0; d < leaves; d++)
        leaf_summary(c, d, x->jobs, &x->sum[t->nlevels - 1][d]);
    for (uint32_t l = t->nlevels - 1; l-- > 0;) {
        for (uint32_t d = 0; d < t->ndom[l]; d++)
            psum_empty(&x->sum[l][d]);
        for (uint32_t d = 0; d < t->ndom[l + 1]; d++)
            psum_merge(&x->sum[l][t->dom_parent[l + 1][d]], &x->sum[l + 1][d]);
    }
    x->built = true;
    return 0;
}

/* Domain d of level l again from its children. */
static void recompute_from_children(struct gpusched_cluster *c, uint32_t l, uint32_t d)
{
    const struct gpusched_topo *t = c->topo;
    gs_psum s;
    psum_empty(&s);
    for (uint32_t k = t->child_start[l][d]; k < t->child_start[l][d + 1]; k++)
        psum_merge(&s, &c->pindex.sum[l + 1][k]);
    c->pindex.sum[l][d] = s;
}

int gs_cluster_pindex(struct gpusched_cluster *c, const gs_pindex **out)
{
    gs_pindex *x = &c->pindex;
    const struct gpusched_topo *t = c->topo;
    const uint32_t leaf = t->nlevels - 1;
    if (!x->built) {
        int rc = pindex_build(c);
        if (rc) {
            gs_pindex_free(c);
            return rc;
        }
    }
    /* The dirty leaves, then each level's parents of what changed below
     * (a parent twice in a row is recomputed once; otherwise it may be
     * recomputed again, which costs its fanout and is rare). */
    for (uint32_t i = 0; i < x->ndirty; i++) {
        uint32_t d = x->dirty[i];
        leaf_summary(c, d, x->jobs, &x->sum[leaf][d]);
        x->marked[d] = 0;
    }
    for (uint32_t l = leaf; l-- > 0;) {
        uint32_t last = UINT32_MAX;
        for (uint32_t i = 0; i < x->ndirty; i++) {
            uint32_t p = x->dirty[i] = t->dom_parent[l + 1][x->dirty[i]];
            if (p != last)
                recompute_from_children(c, l, p);
            last = p;
        }
    }
    x->ndirty = 0;
    psum_empty(&x->root);
    for (uint32_t d = 0; d < t->ndom[0]; d++)
        psum_merge(&x->root, &x->sum[0][d]);
    *out = x;
    return 0;
}

void gs_pindex_mark(struct gpusched_cluster *c, uint32_t n, const uint32_t *nodes)
{
    gs_pindex *x = &c->pindex;
    if (!x->built)
        return;
    const uint32_t *leaf_of = c->topo->node_leaf;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = leaf_of[nodes[i]];
        if (!x->marked[d]) {
            x->marked[d] = 1;
            x->dirty[x->ndirty++] = d;
        }
    }
}

size_t gs_pindex_bytes(const struct gpusched_cluster *c)
{
    const gs_pindex *x = &c->pindex;
    if (!x->built)
        return 0;
    const struct gpusched_topo *t = c->topo;
    const uint32_t leaves = t->ndom[t->nlevels - 1];
    size_t b = (size_t)leaves * (sizeof *x->marked + sizeof *x->dirty);
    for (uint32_t l = 0; l < t->nlevels; l++)
        b += (size_t)t->ndom[l] * sizeof *x->sum[l];
    return b + (size_t)largest_leaf_gpus(c) * sizeof(gs_pj);
}

void gs_pindex_free(struct gpusched_cluster *c)
{
    gs_pindex *x = &c->pindex;
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++)
        gs_free(&c->alloc, x->sum[l]);
    gs_free(&c->alloc, x->marked);
    gs_free(&c->alloc, x->dirty);
    gs_free(&c->alloc, x->jobs);
    memset(x, 0, sizeof *x);
}

double gs_psum_bound(const gs_psum *s, uint64_t need)
{
    if (!need)
        return 0;
    uint32_t i = 63 - (uint32_t)__builtin_clzll(need);
    if (i >= GS_PSUM_POINTS)
        i = GS_PSUM_POINTS - 1;
    /* f(n)/n grows with n for the fractional cost f (convex, f(0) = 0):
     * f(need) >= need * f(2^i) / 2^i. */
    return s->cost_at[i] * ((double)need / (double)((uint64_t)1 << i));
}

static bool psum_equal(const gs_psum *a, const gs_psum *b)
{
    for (uint32_t i = 0; i < GS_PSUM_POINTS; i++)
        if (a->cost_at[i] != b->cost_at[i])
            return false;
    return a->min_prio == b->min_prio && a->max_prio == b->max_prio;
}

int gs_pindex_check(struct gpusched_cluster *c)
{
    const gs_pindex *x = &c->pindex;
    if (!x->built)
        return 0;
    const struct gpusched_topo *t = c->topo;
    const uint32_t leaf = t->nlevels - 1;
    /* Every leaf not marked agrees with its jobs (the marked ones are
     * recomputed before the next use). */
    for (uint32_t d = 0; d < t->ndom[leaf]; d++) {
        if (x->marked[d])
            continue;
        gs_psum s;
        leaf_summary(c, d, x->jobs, &s);
        if (!psum_equal(&s, &x->sum[leaf][d]))
            return gs_error(&c->err, GPUSCHED_ECORRUPT, "preemption index: domain %u is stale", d);
    }
    /* Above, only with nothing marked: a mark makes its ancestors stale. */
    for (uint32_t l = leaf; !x->ndirty && l-- > 0;)
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            gs_psum s;
            psum_empty(&s);
            for (uint32_t k = t->child_start[l][d]; k < t->child_start[l][d + 1]; k++)
                psum_merge(&s, &x->sum[l + 1][k]);
            if (!psum_equal(&s, &x->sum[l][d]))
                return gs_error(&c->err, GPUSCHED_ECORRUPT, "preemption index: level %u domain %u is stale", l,
                                d);
        }
    return 0;
}
