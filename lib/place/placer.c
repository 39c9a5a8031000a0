/* The placer handle and the public entry points: validate, lend the job's
 * reservation to the search, search, fill the result, commit or give the
 * reservation back. */
#include <string.h>

#include "place-internal.h"
#include "cluster/txn.h"

static void static_sizes(gpusched_placer *p)
{
    const struct gpusched_topo *t = p->t;
    p->max_dom_gpus[LV(-1)] = t->ngpus > UINT32_MAX ? UINT32_MAX : (uint32_t)t->ngpus;
    p->max_dom_gpus[LV((int32_t)t->nlevels)] = t->max_node_gpus;
    for (uint32_t l = 0; l < t->nlevels; l++) {
        uint32_t best = 0, least = UINT32_MAX;
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            uint32_t a = t->dom_start[l][d], b = t->dom_start[l][d + 1];
            uint32_t gpus = t->node_gpu_base[b - 1] + t->node_gpus[b - 1] - t->node_gpu_base[a];
            if (gpus > best)
                best = gpus;
            if (gpus < least)
                least = gpus;
        }
        p->max_dom_gpus[LV((int32_t)l)] = best;
        p->whole_dom_gpus[l] = least == best ? best : 0;
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
        gs_free(&a, p->avu_val[l]);
        gs_free(&a, p->avu_gen[l]);
    }
    gs_free(&a, p->avoid_gen);
    gs_free(&a, p->avc_raw);
    gs_free(&a, p->avc_node);
    gs_free(&a, p->avc_units);
    gs_free(&a, p->avc_stamp);
    gs_free(&a, p->sub_best);
    gs_free(&a, p->deferred);
    gs_free(&a, p->wit_share);
    gs_free(&a, p->pod_cap);
    gs_free(&a, p->podx);
    gs_pl_wl_free(p);
    gs_pl_frag_free(p);
    for (uint32_t l = 0; l < GS_MAX_LEVELS; l++)
        gs_free(&a, p->out_doms[l]);
    gs_arena_free(&p->arena);
    gpusched_cluster_unref(p->c);
    gs_free(&a, p);
}

GPUSCHED_API int gpusched_placer_new(gpusched_cluster *cluster, const gpusched_allocator *alloc, gpusched_placer **out)
{
    if (!cluster || !out)
        return GPUSCHED_EINVAL;
    *out = NULL;
    gs_fs_ops fs;
    uint32_t simd;
    int rc = gs_pl_fs_choose(&fs, &simd);
    if (rc)
        return rc;
    gs_alloc a;
    gpusched_placer *p;
    rc = gs_object_new(alloc, sizeof *p, &a, (void **)&p);
    if (rc)
        return rc;
    p->fs = fs;
    p->alloc = a;
    p->arena.alloc = &p->alloc;
    p->c = cluster;
    p->t = cluster->topo;
    p->nlevels = p->t->nlevels;
    p->gen = 1;
    p->dp_budget_max = GS_PL_DP_BUDGET;
    p->work_left = UINT64_MAX;
    p->root_ceiling = GS_KEY_INF;
    p->root_greedy = GS_KEY_INF;
    bool ok = (p->avoid_gen = gs_calloc(&a, p->t->nnodes, sizeof *p->avoid_gen)) != NULL;
    for (uint32_t l = 0; ok && l < p->nlevels; l++)
        ok = (p->cap_val[l] = gs_calloc(&a, p->t->ndom[l], sizeof *p->cap_val[l])) &&
             (p->cap_gen[l] = gs_calloc(&a, p->t->ndom[l], sizeof *p->cap_gen[l]));
    gpusched_cluster_ref(cluster);
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
        p->avu_done = 0;
        memset(p->avoid_gen, 0, p->t->nnodes * sizeof *p->avoid_gen);
        p->gen = 1;
    }
}

void gs_pl_job_of(const gs_pl_req *r, gpusched_job *job)
{
    *job = r->job;
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

/* Everything a search needs set up: the request, a new generation, the
 * avoided nodes, the job's reservation lent in the open transaction (the
 * search sees what the job may use), fresh scratch memory and an empty
 * result. search_end undoes the lending. */
static void search_setup(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    p->req = r;
    next_generation(p);
    for (uint32_t i = 0; i < r->in.avoid_count; i++)
        p->avoid_gen[r->in.avoid_nodes[i]] = p->gen;
    gs_arena_reset(&p->arena);
    gs_pl_result_reset(res, p->nlevels);
}

static int search_begin(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    search_setup(p, r, res);
    p->res = res;
    gs_hold *resv = gs_cluster_resv_find(p->c, r->job.id);
    return resv ? gs_txn_lend_resv(p->c, resv) : 0;
}

static void search_end(gpusched_placer *p, uint32_t mark)
{
    gs_txn_undo_to(p->c, mark);
    p->req = NULL;
    p->res = NULL;
}

/* A request with pods (pods.c): the search, its result staged when it
 * commits; `check_running`: a committing request whose job runs is
 * GPUSCHED_EEXIST. */
static int place_pods(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res, bool check_running)
{
    search_setup(p, r, res);
    int rc = check_running ? gs_pl_req_not_running(p, r) : 0;
    if (!rc)
        rc = gs_pl_pods_place(p, r, res);
    p->req = NULL;
    if (rc && rc != GPUSCHED_ENOSPC) {
        gs_pl_result_reset(res, p->nlevels);
        if (rc == GPUSCHED_ENOMEM || p->err.msg[0] == '\0')
            return gs_error(&p->err, rc, "place: %s", rc == GPUSCHED_ENOMEM ? "out of memory" : p->c->err.msg);
    }
    return rc;
}

/* Whether a constraint's slices each need every GPU of a domain (the
 * domains of its level all have its size) and fewer domains than it has
 * slices are wholly free (the cluster counts them): no placement then,
 * without a search (the scheduler's large gangs of NVL72 racks, tried
 * every cycle; the explanation is computed as after a search). */
static bool whole_slices_short(const gpusched_placer *p, const gs_pl_req *r)
{
    for (uint32_t k = 0; k < r->ncons; k++) {
        const uint32_t l = r->cons[k].level;
        if (p->whole_dom_gpus[l] == r->cons[k].size && p->c->full_doms[l] < r->gpus / r->cons[k].size)
            return true;
    }
    return false;
}

int gs_pl_fits(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    if (r->pods_path) {
        /* A probe: nothing staged, and the workload does not learn the
         * shape once per probe. */
        gs_pl_req probe = *r;
        probe.in.flags &= ~GPUSCHED_PLACE_FLAG_COMMIT;
        p->probing = true;
        int rc = place_pods(p, &probe, res, false);
        p->probing = false;
        return rc;
    }
    const uint32_t mark = gs_txn_mark(p->c);
    int rc = search_begin(p, r, res);
    if (!rc)
        rc = whole_slices_short(p, r) ? GPUSCHED_ENOSPC : gs_pl_search(p);
    res->n = rc ? 0 : p->nout;
    search_end(p, mark);
    return rc;
}

int gs_pl_feasible(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    if (r->pods_path) {
        int rc = gs_pl_fits(p, r, res);
        res->n = 0;
        return rc;
    }
    const uint32_t mark = gs_txn_mark(p->c);
    int rc = search_begin(p, r, res);
    if (!rc && whole_slices_short(p, r))
        rc = GPUSCHED_ENOSPC;
    else if (!rc && (rc = gs_pl_holds(p)) >= 0)
        rc = rc ? 0 : GPUSCHED_ENOSPC;
    res->n = 0;
    search_end(p, mark);
    return rc;
}

/* With GPUSCHED_PLACE_FLAG_COMMIT the result's claim is staged in the
 * transaction; `hold`: its GPUs are held for later searches. */
static int stage_result(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res, bool hold)
{
    if (r->in.flags & GPUSCHED_PLACE_FLAG_COMMIT) {
        gpusched_job job;
        gs_pl_job_of(r, &job);
        int rc = gs_txn_stage_claim(p->c, &job, res->n, res->nodes, res->masks);
        if (rc)
            return rc;
    }
    return hold ? gs_txn_hold(p->c, r->job.id, res->n, res->nodes, res->masks) : 0;
}

int gs_pl_place_staged(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res, unsigned flags)
{
    if (r->pods_path) {
        p->holding = flags & GS_PL_HOLD;
        int rc = place_pods(p, r, res, flags & GS_PL_CHECK_RUNNING);
        p->holding = false;
        return rc;
    }
    const uint32_t mark = gs_txn_mark(p->c);
    int rc = search_begin(p, r, res);
    if (!rc)
        rc = whole_slices_short(p, r) ? GPUSCHED_ENOSPC : gs_pl_search(p);
    if ((flags & GS_PL_CHECK_RUNNING) && rc != GPUSCHED_ENOMEM && gs_pl_req_not_running(p, r)) {
        search_end(p, mark);
        gs_pl_result_reset(res, p->nlevels);
        return GPUSCHED_EEXIST;
    }
    if (rc == GPUSCHED_ENOSPC) {
        gs_pl_result_reset(res, p->nlevels);
        if (!(flags & GS_PL_QUIET))
            gs_pl_explain(p, res);
    } else if (rc == 0) {
        if (r->in.flags & GPUSCHED_PLACE_FLAG_COMMIT)
            prefetch_commit(p);
        rc = gs_pl_result_fill(p, res);
    }
    /* The job's reservation goes back before the claim is staged and held:
     * a hold for the job may take GPUs of its own reservation. */
    search_end(p, mark);
    if (rc == 0)
        rc = stage_result(p, r, res, flags & GS_PL_HOLD);
    if (rc && rc != GPUSCHED_ENOSPC) {
        gs_pl_result_reset(res, p->nlevels);
        return gs_error(&p->err, rc, "place: %s", rc == GPUSCHED_ENOMEM ? "out of memory" : p->c->err.msg);
    }
    return rc;
}

int gs_pl_txn_end(gpusched_placer *p, int rc, bool commit, gpusched_place_result *res)
{
    if (rc == 0 && commit) {
        if ((rc = gs_txn_commit(p->c)) == 0)
            res->committed = 1;
        return rc;
    }
    gs_txn_rollback(p->c);
    return rc;
}

/* Commits the open transaction when `commit`, else rolls it back; the
 * results of `n` requests say whether they were committed. */
static int finish(gpusched_placer *p, bool commit, gpusched_place_result *const *results,
                  const gpusched_place_request *const *reqs, uint32_t n)
{
    if (!commit) {
        gs_txn_rollback(p->c);
        return 0;
    }
    int rc = gs_txn_commit(p->c);
    for (uint32_t i = 0; i < n; i++) {
        if (rc)
            gs_pl_result_reset(results[i], p->nlevels);
        else if ((reqs[i]->flags & GPUSCHED_PLACE_FLAG_COMMIT) && results[i]->n)
            results[i]->committed = 1;
    }
    if (rc)
        return gs_error(&p->err, rc, "place: %s", p->c->err.msg);
    return 0;
}

/* Pods with resources or fractions: their own search (pods.c), staged in
 * the open transaction like the GPU search's. */
GPUSCHED_API int gpusched_placer_place(gpusched_placer *p, const gpusched_place_request *req, gpusched_place_result *res)
{
    return gs_pl_place_flags(p, req, res, 0);
}

int gs_pl_place_flags(gpusched_placer *p, const gpusched_place_request *req, gpusched_place_result *res,
                      unsigned flags)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (!req || !res)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place: %s is NULL", req ? "result" : "request");
    gs_pl_req r;
    int rc = gs_pl_req_load(p, req, &r);
    if (rc)
        return rc;
    if ((rc = gs_txn_begin(p->c)))
        return gs_error(&p->err, rc, "place: %s", p->c->err.msg);
    gs_err_clear(&p->err);
    rc = gs_pl_place_staged(p, &r, res, flags | GS_PL_CHECK_RUNNING);
    int frc = finish(p, rc == 0 && (req->flags & GPUSCHED_PLACE_FLAG_COMMIT), &res, &req, 1);
    return rc ? rc : frc;
}

/* The job id of a request already loaded once (its job struct checked). */
static uint64_t req_job_id(const gpusched_place_request *q)
{
    return q->job ? q->job->id : 0;
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
            if ((reqs[j]->flags & reqs[i]->flags & GPUSCHED_PLACE_FLAG_COMMIT) && req_job_id(reqs[j]) == r.job.id)
                return gs_error(&p->err, GPUSCHED_EEXIST, "place batch: requests %u and %u both commit job %llu", j, i,
                                (unsigned long long)r.job.id);
        }
    }
    return 0;
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
    if ((rc = gs_txn_begin(p->c)))
        return gs_error(&p->err, rc, "place batch: %s", p->c->err.msg);
    gs_err_clear(&p->err);
    uint32_t ok = 0;
    bool commit = false;
    for (uint32_t i = 0; i < n; i++) {
        gs_pl_req r;
        rc = gs_pl_req_load(p, reqs[i], &r);
        if (rc == 0)
            rc = gs_pl_place_staged(p, &r, results[i], GS_PL_HOLD);
        if (rc == GPUSCHED_ENOSPC)
            continue;
        if (rc) {
            char msg[GS_ERRMSG_MAX];
            memcpy(msg, p->err.msg, sizeof msg);
            gs_txn_rollback(p->c);
            for (uint32_t j = 0; j < i; j++)
                gs_pl_result_reset(results[j], p->nlevels);
            return gs_error(&p->err, rc, "place batch: request %u: %s", i, msg);
        }
        commit = commit || (reqs[i]->flags & GPUSCHED_PLACE_FLAG_COMMIT);
        ok++;
    }
    if ((rc = finish(p, commit, results, reqs, n)))
        return rc;
    if (placed)
        *placed = ok;
    return 0;
}
