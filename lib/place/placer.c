/* The placer handle and the public entry points: validate, lend the job's
 * reservation to the search, search, fill the result, commit or give the
 * reservation back. */
#include <string.h>

#include "place-internal.h"

static void static_sizes(gpusched_placer *p)
{
    const struct gpusched_topo *t = p->t;
    p->max_dom_gpus[LV(-1)] = t->ngpus > UINT32_MAX ? UINT32_MAX : (uint32_t)t->ngpus;
    p->max_dom_gpus[LV((int32_t)t->nlevels)] = t->max_node_gpus;
    for (uint32_t l = 0; l < t->nlevels; l++) {
        uint32_t best = 0;
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            uint32_t a = t->dom_start[l][d], b = t->dom_start[l][d + 1];
            uint32_t gpus = t->node_gpu_base[b - 1] + t->node_gpus[b - 1] - t->node_gpu_base[a];
            if (gpus > best)
                best = gpus;
        }
        p->max_dom_gpus[LV((int32_t)l)] = best;
    }
    p->min_node_gpus = t->max_node_gpus;
    for (uint32_t n = 0; n < t->nnodes; n++)
        if (t->node_gpus[n] < p->min_node_gpus)
            p->min_node_gpus = t->node_gpus[n];
}

GPUSCHED_API void gpusched_placer_free(gpusched_placer *p)
{
    if (!p)
        return;
    gs_alloc a = p->alloc;
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++) {
        gs_free(&a, p->cap_val[l]);
        gs_free(&a, p->cap_gen[l]);
    }
    gs_free(&a, p->avoid_gen);
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++)
        gs_free(&a, p->out_doms[l]);
    gs_arena_free(&p->arena);
    gs_free(&a, p);
}

GPUSCHED_API int gpusched_placer_new(gpusched_cluster *cluster, const gpusched_allocator *alloc, gpusched_placer **out)
{
    if (!cluster || !out)
        return GPUSCHED_EINVAL;
    gs_alloc a;
    gpusched_placer *p;
    int rc = gs_object_new(alloc, sizeof *p, &a, (void **)&p);
    if (rc)
        return rc;
    p->alloc = a;
    p->arena.alloc = &p->alloc;
    p->c = cluster;
    p->t = cluster->topo;
    p->nlevels = p->t->nlevels;
    p->gen = 1;
    p->dp_budget_max = GS_PL_DP_BUDGET;
    bool ok = (p->avoid_gen = gs_calloc(&a, p->t->nnodes, sizeof *p->avoid_gen)) != NULL;
    for (uint32_t l = 0; ok && l < p->nlevels; l++)
        ok = (p->cap_val[l] = gs_calloc(&a, p->t->ndom[l], sizeof *p->cap_val[l])) &&
             (p->cap_gen[l] = gs_calloc(&a, p->t->ndom[l], sizeof *p->cap_gen[l]));
    if (!ok) {
        gpusched_placer_free(p);
        return GPUSCHED_ENOMEM;
    }
    static_sizes(p);
    *out = p;
    return 0;
}

const char *gpusched_placer_errmsg(const gpusched_placer *p)
{
    return p ? p->err.msg : "invalid placer (NULL)";
}

/* A new generation invalidates every memoized capacity and avoided node
 * without touching the arrays. */
static void next_generation(gpusched_placer *p)
{
    if (++p->gen == 0) {
        for (uint32_t l = 0; l < p->nlevels; l++)
            memset(p->cap_gen[l], 0, p->t->ndom[l] * sizeof *p->cap_gen[l]);
        memset(p->avoid_gen, 0, p->t->nnodes * sizeof *p->avoid_gen);
        p->gen = 1;
    }
}

void gs_pl_job_of(const gs_pl_req *r, gpusched_job *job)
{
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = r->in.job_id;
    job->flags = r->in.job_flags;
    job->priority = r->in.priority;
    job->tenant = r->in.tenant;
    job->start_time = r->in.start_time;
    job->cost_hint = r->in.cost_hint;
}

/* A small placement about to be committed: the lines the commit writes
 * (GPU holders, aggregates) load while the result is filled. */
static void prefetch_commit(const gpusched_placer *p)
{
    if (p->nout > 4)
        return;
    for (uint32_t i = 0; i < p->nout; i++)
        gs_prefetch_node(p->c, p->res->nodes[i]);
}

static int commit(gpusched_placer *p, const gpusched_job *job, gpusched_place_result *res)
{
    if (!p->before_commit)
        return gs_cluster_commit(p->c, job, res->n, res->nodes, res->masks);
    void *block;
    int rc = gs_cluster_commit_prepare(p->c, res->n, &block);
    if (rc) {
        gs_free(&p->c->alloc, block);
        return rc;
    }
    p->before_commit(p->before_commit_ctx);
    gs_cluster_commit_apply(p->c, job, res->n, res->nodes, res->masks, block);
    return 0;
}

/* The job's reservation, lent to the search unless it already is. */
static gs_hold *lend_own_resv(gpusched_placer *p, const gs_pl_req *r)
{
    gs_hold *resv = gs_cluster_resv_find(p->c, r->in.job_id);
    if (resv && resv->lent)
        return NULL;
    if (resv)
        gs_cluster_resv_lend(p->c, resv);
    return resv;
}

/* Everything a search needs set up: the request, a new generation, the
 * avoided nodes, the job's reservation lent (returned, for search_end),
 * fresh scratch memory and an empty result. */
static gs_hold *search_begin(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    p->req = r;
    next_generation(p);
    for (uint32_t i = 0; i < r->in.avoid_count; i++)
        p->avoid_gen[r->in.avoid_nodes[i]] = p->gen;
    gs_hold *resv = lend_own_resv(p, r);
    gs_arena_reset(&p->arena);
    gs_pl_result_reset(res, p->nlevels);
    p->res = res;
    return resv;
}

/* Settles what search_begin set up (`resv`: still lent, or NULL). */
static void search_end(gpusched_placer *p, gs_hold *resv)
{
    if (resv)
        gs_cluster_resv_unlend(p->c, resv);
    p->req = NULL;
    p->res = NULL;
}

int gs_pl_fits(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    gs_hold *resv = search_begin(p, r, res);
    int rc = gs_pl_search(p);
    res->n = rc ? 0 : p->nout;
    search_end(p, resv);
    return rc;
}

/* Search, result, commit: with the job's reservation lent to the search
 * and settled before returning. */
static int place_loaded(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res, bool hold)
{
    gs_hold *resv = search_begin(p, r, res);
    int rc = gs_pl_search(p);
    if (rc != GPUSCHED_ENOMEM && gs_pl_req_not_running(p, r)) {
        search_end(p, resv);
        gs_pl_result_reset(res, p->nlevels);
        return GPUSCHED_EEXIST;
    }
    if (rc == GPUSCHED_ENOSPC) {
        gs_pl_result_reset(res, p->nlevels);
        gs_pl_explain(p, res);
    } else if (rc == 0) {
        if ((r->in.flags & GPUSCHED_PLACE_COMMIT) || hold)
            prefetch_commit(p);
        rc = gs_pl_result_fill(p, res);
        if (rc == 0 && ((r->in.flags & GPUSCHED_PLACE_COMMIT) || hold)) {
            gpusched_job job;
            gs_pl_job_of(r, &job);
            rc = commit(p, &job, res);
            if (rc == 0) {
                res->committed = !hold;
                res->held = hold;
                resv = NULL; /* consumed */
            }
        }
    }
    search_end(p, resv);
    if (rc && rc != GPUSCHED_ENOSPC) {
        gs_pl_result_reset(res, p->nlevels);
        return gs_error(&p->err, rc, "place: %s", rc == GPUSCHED_ENOMEM ? "out of memory" : p->c->err.msg);
    }
    return rc;
}

int gs_pl_place_loaded(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    return place_loaded(p, r, res, false);
}

GPUSCHED_API int gpusched_placer_place(gpusched_placer *p, const gpusched_place_request *req, gpusched_place_result *res)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (!req || !res)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place: %s is NULL", req ? "result" : "request");
    gs_pl_req r;
    int rc = gs_pl_req_load(p, req, &r);
    if (rc)
        return rc;
    gs_err_clear(&p->err);
    return place_loaded(p, &r, res, false);
}

static int check_batch(gpusched_placer *p, uint32_t n, const gpusched_place_request *const *reqs,
                       gpusched_place_result *const *results)
{
    for (uint32_t i = 0; i < n; i++) {
        if (!reqs[i] || !results[i])
            return gs_error(&p->err, GPUSCHED_EINVAL, "place batch: %s %u is NULL", reqs[i] ? "result" : "request", i);
        gs_pl_req r;
        int rc = gs_pl_req_load(p, reqs[i], &r);
        if (rc == 0)
            rc = gs_pl_req_not_running(p, &r);
        if (rc) {
            char msg[GS_ERRMSG_MAX];
            memcpy(msg, p->err.msg, sizeof msg);
            return gs_error(&p->err, rc, "place batch: request %u: %s", i, msg);
        }
        for (uint32_t j = 0; j < i; j++) {
            if (results[j] == results[i])
                return gs_error(&p->err, GPUSCHED_EINVAL, "place batch: results %u and %u are the same object", j, i);
            if ((reqs[j]->flags & reqs[i]->flags & GPUSCHED_PLACE_COMMIT) && reqs[j]->job_id == reqs[i]->job_id)
                return gs_error(&p->err, GPUSCHED_EEXIST, "place batch: requests %u and %u both commit job %llu", j, i,
                                (unsigned long long)reqs[i]->job_id);
        }
    }
    return 0;
}

/* Gives back what a batch holds for its plan-only requests (all == false)
 * or everything it placed, after running out of memory (all == true; a
 * committed job's reservation was consumed and is not restored). */
static void give_back(gpusched_placer *p, uint32_t upto, const gpusched_place_request *const *reqs,
                      gpusched_place_result *const *results, bool all)
{
    for (uint32_t i = upto; i-- > 0;) {
        gpusched_place_result *res = results[i];
        if (res->held || (all && res->committed))
            gpusched_cluster_release(p->c, reqs[i]->job_id);
        res->held = 0;
        if (all)
            gs_pl_result_reset(res, p->nlevels);
    }
}

/* A plan-only request is held for the rest of the batch when its job can
 * become a job of the cluster for a while and back: not running, holding
 * no reservation (committing would consume it), its id used once. */
static bool can_hold(gpusched_placer *p, uint32_t i, uint32_t n, const gpusched_place_request *const *reqs)
{
    const gpusched_place_request *q = reqs[i];
    if ((q->flags & GPUSCHED_PLACE_COMMIT) || gs_cluster_job_find(p->c, q->job_id) ||
        gs_cluster_resv_find(p->c, q->job_id))
        return false;
    for (uint32_t j = 0; j < n; j++)
        if (j != i && reqs[j]->job_id == q->job_id)
            return false;
    return true;
}

GPUSCHED_API int gpusched_placer_place_batch(gpusched_placer *p, uint32_t n, const gpusched_place_request *const *reqs,
                                gpusched_place_result *const *results, uint32_t *placed)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (n && (!reqs || !results))
        return gs_error(&p->err, GPUSCHED_EINVAL, "place batch: %s is NULL", reqs ? "results" : "requests");
    int rc = check_batch(p, n, reqs, results);
    if (rc)
        return rc;
    gs_err_clear(&p->err);
    uint32_t ok = 0;
    for (uint32_t i = 0; i < n; i++) {
        gs_pl_req r;
        rc = gs_pl_req_load(p, reqs[i], &r);
        if (rc == 0)
            rc = place_loaded(p, &r, results[i], can_hold(p, i, n, reqs));
        if (rc == GPUSCHED_ENOSPC)
            continue;
        if (rc) {
            char msg[GS_ERRMSG_MAX];
            memcpy(msg, p->err.msg, sizeof msg);
            give_back(p, i, reqs, results, true);
            return gs_error(&p->err, rc, "place batch: request %u: %s", i, msg);
        }
        ok++;
    }
    give_back(p, n, reqs, results, false);
    if (placed)
        *placed = ok;
    return 0;
}
