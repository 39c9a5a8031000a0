/* Moving a running job: the request of its shape, derived from its GPUs
 * (or, for pods, from what its pods hold), placed again with what it holds
 * lent to the search; the commit swaps the old placement for the new one
 * under the same id and descriptor. */
#include "preempt-internal.h"

static uint32_t gcd32(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The deepest level with one domain holding lowest-level domains a and
 * b, or GPUSCHED_NONE. */
static uint32_t common_level(const struct gpusched_topo *t, uint32_t a, uint32_t b)
{
    for (uint32_t l = t->nlevels; l-- > 0;) {
        if (a == b)
            return l;
        if (l == 0)
            break;
        a = t->dom_parent[l][a];
        b = t->dom_parent[l][b];
    }
    return GPUSCHED_NONE;
}

/* Slices of the greatest common divisor of its GPUs per lowest-level
 * domain (its pairs are ascending, so a domain's pairs are consecutive). */
static uint32_t leaf_slice(const struct gpusched_topo *t, const gs_hold *h)
{
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    uint32_t g = 0, run = 0, leaf = t->node_leaf[nodes[0]];
    for (uint32_t i = 0; i < h->npairs; i++) {
        uint32_t l = t->node_leaf[nodes[i]];
        if (l != leaf) {
            g = gcd32(g, run);
            run = 0;
            leaf = l;
        }
        run += gs_popcount64(masks[i]);
    }
    return gcd32(g, run);
}

void gs_pp_shape(const struct gpusched_cluster *c, const gs_hold *h, gpusched_place_request *q, gpusched_job *job)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    *job = gs_hold_job(h);
    q->job = job;
    q->gpus = h->ngpus;
    const uint32_t w = t->node_gpus[nodes[0]];
    uint32_t g = 0, cls = t->node_class[nodes[0]];
    bool whole = true;
    for (uint32_t i = 0; i < h->npairs; i++) {
        uint32_t n = nodes[i];
        g = gcd32(g, gs_popcount64(masks[i]));
        whole = whole && t->node_gpus[n] == w && masks[i] == gs_node_all_mask(w);
        if (t->node_class[n] != cls)
            cls = GPUSCHED_NONE;
    }
    if (whole) {
        q->split = GPUSCHED_SPLIT_WHOLE_NODES;
        q->pod_gpus = w;
    } else if (g > 1) {
        q->split = GPUSCHED_SPLIT_PODS;
        q->pod_gpus = g;
    }
    q->gpu_class = cls;
    const uint32_t first = t->node_leaf[nodes[0]], last = t->node_leaf[nodes[h->npairs - 1]];
    q->required_level = common_level(t, first, last);
    if (first != last) {
        uint32_t s = leaf_slice(t, h);
        if (s < h->ngpus && s > (whole ? w : g)) {
            q->slice_gpus[0] = s;
            q->slice_level[0] = t->nlevels - 1;
        }
    }
}

/* A job of pods: the same pods (count, GPUs or fraction, resources) in
 * the deepest domain that holds all of it now, on nodes of its class when
 * it has one. Its slices and class list are not known: not kept. */
static void pods_shape(const struct gpusched_cluster *c, const gs_hold *h, const gs_podx *x, uint64_t *amounts,
                       gpusched_place_request *q, gpusched_job *job)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t *nodes = gs_hold_nodes(h);
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    *job = gs_hold_job(h);
    q->job = job;
    q->split = GPUSCHED_SPLIT_PODS;
    uint32_t pods = 0, cls = t->node_class[nodes[0]];
    for (uint32_t i = 0; i < h->npairs; i++) {
        pods += x->pods[i];
        if (t->node_class[nodes[i]] != cls)
            cls = GPUSCHED_NONE;
    }
    q->pods = pods;
    q->pod_gpus = x->milli ? 1 : x->pod_gpus;
    q->gpu_milli = x->milli;
    for (uint32_t r = 0; r < x->nres; r++)
        amounts[r] = x->pod_res[r];
    q->resources = amounts;
    q->resource_count = x->nres;
    q->gpu_class = x->milli || x->pod_gpus ? cls : GPUSCHED_NONE;
    q->required_level = common_level(t, t->node_leaf[nodes[0]], t->node_leaf[nodes[h->npairs - 1]]);
}

GPUSCHED_API int gpusched_placer_move(gpusched_placer *p, uint64_t job_id, uint32_t flags,
                                      gpusched_place_result *res)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (!res)
        return gs_error(&p->err, GPUSCHED_EINVAL, "move: result is NULL");
    if (flags & ~(uint32_t)GPUSCHED_PLACE_FLAG_COMMIT)
        return gs_error(&p->err, GPUSCHED_EINVAL, "move: unknown flags 0x%x", flags & ~(uint32_t)GPUSCHED_PLACE_FLAG_COMMIT);
    gs_hold *h = gs_cluster_job_find(p->c, job_id);
    if (!h)
        return gs_error(&p->err, GPUSCHED_ENOENT, "move: no running job %llu", (unsigned long long)job_id);
    gpusched_place_request q;
    gpusched_job job;
    uint64_t amounts[GPUSCHED_MAX_RESOURCES];
    const gs_podx *x = gs_hold_podx(p->c, h);
    if (x)
        pods_shape(p->c, h, x, amounts, &q, &job);
    else
        gs_pp_shape(p->c, h, &q, &job);
    q.flags = flags;
    gs_pl_req r;
    int rc = gs_pl_req_load(p, &q, &r);
    if (rc)
        return rc;
    if ((rc = gs_txn_begin(p->c)))
        return gs_error(&p->err, rc, "move: %s", p->c->err.msg);
    /* Its own GPUs count as free for the search; the commit swaps them
     * for the new ones under the same id and descriptor. */
    rc = gs_txn_lend_job(p->c, h);
    if (!rc && (flags & GPUSCHED_PLACE_FLAG_COMMIT))
        rc = gs_txn_stage_release(p->c, job_id);
    if (!rc)
        rc = gs_pl_place_staged(p, &r, res, 0);
    rc = gs_pl_txn_end(p, rc, flags & GPUSCHED_PLACE_FLAG_COMMIT, res);
    if (rc && rc != GPUSCHED_ENOSPC) {
        gs_pl_result_reset(res, p->nlevels);
        return gs_error(&p->err, rc, "move: %s", rc == GPUSCHED_ENOMEM ? "out of memory" : p->c->err.msg);
    }
    if (rc == 0)
        gs_err_clear(&p->err);
    return rc;
}
