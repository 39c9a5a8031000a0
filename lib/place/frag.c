/* The fragmentation-aware policy (GPUSCHED_POLICY_FRAG, doc/resources.md).
 *
 * A node's fragmentation F is the GPU capacity (milli-GPU) it leaves that
 * the workload's pods could not use, expected over the workload's shapes:
 * for a shape the node cannot run at all (class, a resource, too few GPUs)
 * every free milli is lost; for one it can run, the free milli of the GPUs
 * too small for one of its GPUs. A pod goes where F grows least. F's
 * differences of a fraction of a GPU are mostly noise of the workload
 * estimate, so for fractions and pods without GPUs every node within
 * GS_FRAG_BAND of the least growth is as good, and packing decides: the
 * node left with the least free GPU, then the least free resources. Whole-GPU
 * pods keep the exact least growth (ties by packing): their growth counts
 * whole GPUs taken from the shapes that need them. */
#include <string.h>

#include "place-internal.h"

/* milli-GPU: 15% of a GPU, about the smallest common fraction. */
#define GS_FRAG_BAND 150.0
#define GS_WL_MAX 1024u

typedef struct gs_nview {
    uint32_t ngpus;
    uint32_t total;             /* free milli over the node's GPUs */
    uint32_t nfull;             /* fully free GPUs */
    uint32_t maxfree;
    uint32_t cls;
    uint32_t res[GPUSCHED_MAX_RESOURCES];
    uint16_t free[GPUSCHED_MAX_NODE_GPUS];
} gs_nview;

static void view_of(const gpusched_placer *p, uint32_t n, gs_nview *v)
{
    const struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    v->ngpus = t->node_gpus[n];
    v->cls = t->node_class[n];
    for (uint32_t i = 0; i < t->nres; i++)
        v->res[i] = c->res_free[i][n];
    const uint64_t freem = c->node_free[n], shared = c->node_shared ? c->node_shared[n] : 0;
    const uint16_t *used = c->gpu_milli_used ? &c->gpu_milli_used[gs_cl_gpu_base(c, n)] : NULL;
    for (uint32_t g = 0; g < v->ngpus; g++) {
        const uint64_t bit = (uint64_t)1 << g;
        v->free[g] = (freem & bit) ? 1000 : (shared & bit) ? (uint16_t)(1000 - used[g]) : 0;
    }
}

static void view_sums(gs_nview *v)
{
    v->total = v->nfull = v->maxfree = 0;
    for (uint32_t g = 0; g < v->ngpus; g++) {
        v->total += v->free[g];
        v->nfull += v->free[g] == 1000;
        if (v->free[g] > v->maxfree)
            v->maxfree = v->free[g];
    }
}

/* Free milli of node view v that shape m cannot use. */
static uint32_t shape_frag(const gs_pod_shape *m, const gs_nview *v)
{
    if (!gs_shape_class_ok(m, v->cls))
        return v->total;
    for (uint32_t i = 0; i < m->nres; i++)
        if (m->res[i] > v->res[i])
            return v->total;
    if (m->milli) {
        if (v->maxfree < m->milli)
            return v->total;
        uint32_t lost = 0;
        for (uint32_t g = 0; g < v->ngpus; g++)
            lost += v->free[g] < m->milli ? v->free[g] : 0;
        return lost;
    }
    if (m->pod_gpus)
        return v->nfull < m->pod_gpus ? v->total : v->total - 1000 * v->nfull;
    return 0;
}

static double node_frag(const gpusched_placer *p, const gs_nview *v)
{
    double f = 0;
    for (uint32_t i = 0; i < p->nwl; i++)
        f += p->wl[i].weight * shape_frag(&p->wl[i], v);
    return f;
}

/* Free resources left, as shares of capacity, summed: the second packing key. */
static double res_left(const gpusched_placer *p, uint32_t n, const gs_nview *v)
{
    const struct gpusched_topo *t = p->t;
    double s = 0;
    for (uint32_t i = 0; i < t->nres; i++)
        if (t->node_res[i][n])
            s += (double)v->res[i] / t->node_res[i][n];
    return s;
}

typedef struct gs_cand {
    uint32_t node;
    uint64_t mask;
    double growth;
    uint32_t milli_left;
    double res_left;
} gs_cand;

/* The best GPU choice on node n (the least growth; ties: the fullest GPU)
 * and its candidate record. */
static void node_cand(const gpusched_placer *p, const gs_pl_req *r, uint32_t n, gs_cand *out)
{
    const gs_pod_shape *s = &r->shape;
    gs_nview v;
    view_of(p, n, &v);
    for (uint32_t i = 0; i < s->nres; i++)
        v.res[i] -= s->res[i];
    view_sums(&v);
    gs_nview before;
    view_of(p, n, &before);
    view_sums(&before);
    const double f0 = node_frag(p, &before);
    out->node = n;
    out->growth = 0;
    if (s->milli) {
        double best = 0;
        uint32_t best_g = 64;
        uint32_t tried = 0; /* free amounts already tried: one GPU per amount */
        uint16_t seen[GPUSCHED_MAX_NODE_GPUS];
        for (uint32_t g = 0; g < v.ngpus; g++) {
            const uint16_t f = v.free[g];
            if (f < s->milli)
                continue;
            bool dup = false;
            for (uint32_t k = 0; k < tried && !dup; k++)
                dup = seen[k] == f;
            if (dup)
                continue;
            seen[tried++] = f;
            v.free[g] = (uint16_t)(f - s->milli);
            view_sums(&v);
            const double grow = node_frag(p, &v) - f0;
            v.free[g] = f;
            if (best_g == 64 || grow < best - 1e-9 || (grow <= best + 1e-9 && f < v.free[best_g])) {
                best = grow;
                best_g = g;
            }
        }
        out->growth = best;
        out->mask = (uint64_t)1 << best_g;
        out->milli_left = before.total - s->milli;
    } else {
        uint64_t mask = 0;
        for (uint32_t g = 0, k = 0; g < v.ngpus && k < s->pod_gpus; g++)
            if (v.free[g] == 1000 && (p->c->node_free[n] >> g & 1)) {
                v.free[g] = 0;
                mask |= (uint64_t)1 << g;
                k++;
            }
        view_sums(&v);
        out->growth = node_frag(p, &v) - f0;
        out->mask = mask;
        out->milli_left = v.total;
    }
    out->res_left = res_left(p, n, &v);
}

static bool packs_better(const gs_cand *a, const gs_cand *b)
{
    if (a->milli_left != b->milli_left)
        return a->milli_left < b->milli_left;
    if (a->res_left != b->res_left)
        return a->res_left < b->res_left;
    return a->node < b->node;
}

int gs_pl_frag_choose(gpusched_placer *p, const gs_pl_req *r, uint32_t first, uint32_t end, uint32_t *node,
                      uint64_t *mask)
{
    uint32_t ncand = 0;
    for (uint32_t n = first; n < end; n++)
        ncand += p->pod_cap[n] != 0;
    *node = GPUSCHED_NONE;
    if (!ncand)
        return 0;
    gs_cand *cand = gs_arena_get(&p->arena, (size_t)ncand * sizeof *cand);
    if (!cand)
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    double least = 0;
    uint32_t k = 0;
    for (uint32_t n = first; n < end; n++) {
        if (!p->pod_cap[n])
            continue;
        node_cand(p, r, n, &cand[k]);
        if (k == 0 || cand[k].growth < least)
            least = cand[k].growth;
        k++;
    }
    const bool whole = r->shape.pod_gpus != 0;
    const double band = (whole ? 0.0 : GS_FRAG_BAND) + 1e-6 * (1.0 + (least < 0 ? -least : least));
    const gs_cand *best = NULL;
    for (uint32_t i = 0; i < k; i++)
        if (cand[i].growth <= least + band && (!best || packs_better(&cand[i], best)))
            best = &cand[i];
    *node = best->node;
    *mask = best->mask;
    return 0;
}

/* ---- the workload ---------------------------------------------------------- */

static bool same_shape(const gs_pod_shape *a, const gs_pod_shape *b)
{
    if (a->pod_gpus != b->pod_gpus || a->milli != b->milli || a->any_class != b->any_class)
        return false;
    if (!a->any_class && memcmp(a->classes, b->classes, sizeof a->classes))
        return false;
    uint32_t n = a->nres > b->nres ? a->nres : b->nres;
    for (uint32_t i = 0; i < n; i++)
        if ((i < a->nres ? a->res[i] : 0) != (i < b->nres ? b->res[i] : 0))
            return false;
    return true;
}

static int wl_add(gpusched_placer *p, const gs_pod_shape *s, double weight)
{
    for (uint32_t i = 0; i < p->nwl; i++)
        if (same_shape(&p->wl[i], s)) {
            p->wl[i].weight += weight;
            return 0;
        }
    if (p->nwl == GS_WL_MAX)
        return GPUSCHED_ELIMIT;
    if (gs_grow(&p->alloc, (void **)&p->wl, &p->wl_cap, p->nwl + 1, sizeof *p->wl))
        return GPUSCHED_ENOMEM;
    p->wl[p->nwl] = *s;
    p->wl[p->nwl++].weight = weight;
    return 0;
}

void gs_pl_wl_learn(gpusched_placer *p, const gs_pod_shape *s)
{
    (void)wl_add(p, s, 1.0); /* a full table keeps what it learned */
}

void gs_pl_wl_free(gpusched_placer *p)
{
    gs_free(&p->alloc, p->wl);
    p->wl = NULL;
    p->nwl = p->wl_cap = 0;
}

GPUSCHED_API int gpusched_placer_workload_set(gpusched_placer *p, uint32_t n,
                                              const gpusched_place_request *const *shapes, const double *weights)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (n && (!shapes || !weights))
        return gs_error(&p->err, GPUSCHED_EINVAL, "workload: %s is NULL", shapes ? "weights" : "shapes");
    if (n > GS_WL_MAX)
        return gs_error(&p->err, GPUSCHED_ELIMIT, "workload: %u shapes, at most %u", n, GS_WL_MAX);
    gs_pod_shape *keep = p->wl;
    uint32_t keep_n = p->nwl, keep_cap = p->wl_cap;
    p->wl = NULL;
    p->nwl = p->wl_cap = 0;
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        gs_pl_req r;
        if (!shapes[i]) {
            rc = gs_error(&p->err, GPUSCHED_EINVAL, "workload: shape %u is NULL", i);
        } else if (!(weights[i] >= 0) || weights[i] > 1e300) {
            rc = gs_error(&p->err, GPUSCHED_EINVAL, "workload: weight %u is %g, a finite number >= 0 expected", i,
                          weights[i]);
        } else if ((rc = gs_pl_req_load(p, shapes[i], &r)) == 0) {
            if (!r.pods_path) {
                /* A whole-GPU request is a shape too: pods of pod_gpus GPUs. */
                r.shape.pod_gpus = r.u0;
                r.shape.any_class = r.in.gpu_class == GPUSCHED_NONE;
                if (!r.shape.any_class)
                    r.shape.classes[r.in.gpu_class >> 6] |= (uint64_t)1 << (r.in.gpu_class & 63);
            }
            if (weights[i] > 0 && (rc = wl_add(p, &r.shape, weights[i])))
                rc = gs_error(&p->err, rc, "workload: out of memory");
        } else {
            char msg[GS_ERRMSG_MAX];
            memcpy(msg, p->err.msg, sizeof msg);
            rc = gs_error(&p->err, rc, "workload: shape %u: %s", i, msg);
        }
    }
    if (rc) {
        gs_pl_wl_free(p);
        p->wl = keep;
        p->nwl = keep_n;
        p->wl_cap = keep_cap;
        return rc;
    }
    gs_free(&p->alloc, keep);
    p->wl_fixed = n > 0;
    return gs_ok(&p->err);
}
