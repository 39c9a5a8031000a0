/* Defragmentation: the movers of the cheapest domain whose movers all
 * find a place for their shape with the gang's GPUs held
 * (claimed without a job), found by the shared search (search.c); the
 * commit releases them, commits the gang and commits them again at their
 * new GPUs. */
#include <string.h>

#include "heap.h"
#include "preempt-internal.h"

/* Gives back every hold: the gang's and the movers'. */
void gs_pp_unhold_all(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    gs_txn_undo_to(x->c, x->hold_mark);
    plan->nmoves = 0;
    plan->move_pairs = 0;
    plan->ngang = 0;
}

/* The probe's placement appended as move `id` (or, id 0 and gang, kept
 * as the gang's), then held. */
static int keep_probe(gs_pp *x, bool gang, uint64_t id)
{
    gpusched_preempt_plan *plan = x->plan;
    const gpusched_place_result *pr = plan->probe;
    const gs_alloc *a = &plan->alloc;
    uint32_t cap;
    if (gang) {
        cap = plan->gang_cap;
        if (gs_grow(a, (void **)&plan->gang_nodes, &cap, pr->n, sizeof *plan->gang_nodes))
            return GPUSCHED_ENOMEM;
        cap = plan->gang_cap;
        if (gs_grow(a, (void **)&plan->gang_masks, &cap, pr->n, sizeof *plan->gang_masks))
            return GPUSCHED_ENOMEM;
        plan->gang_cap = cap;
        memcpy(plan->gang_nodes, pr->nodes, pr->n * sizeof *pr->nodes);
        memcpy(plan->gang_masks, pr->masks, pr->n * sizeof *pr->masks);
        plan->ngang = pr->n;
        x->hold_mark = gs_txn_mark(x->c);
        return gs_txn_hold(x->c, x->r->job.id, pr->n, pr->nodes, pr->masks);
    }
    uint32_t need = plan->move_pairs + pr->n;
    cap = plan->move_pairs_cap;
    if (gs_grow(a, (void **)&plan->move_nodes, &cap, need, sizeof *plan->move_nodes))
        return GPUSCHED_ENOMEM;
    cap = plan->move_pairs_cap;
    if (gs_grow(a, (void **)&plan->move_masks, &cap, need, sizeof *plan->move_masks))
        return GPUSCHED_ENOMEM;
    plan->move_pairs_cap = cap;
    if (gs_grow(a, (void **)&plan->move_ids, &plan->moves_cap, plan->nmoves + 1, sizeof *plan->move_ids) ||
        gs_grow(a, (void **)&plan->move_off, &plan->off_cap, plan->nmoves + 2, sizeof *plan->move_off))
        return GPUSCHED_ENOMEM;
    memcpy(plan->move_nodes + plan->move_pairs, pr->nodes, pr->n * sizeof *pr->nodes);
    memcpy(plan->move_masks + plan->move_pairs, pr->masks, pr->n * sizeof *pr->masks);
    plan->move_off[plan->nmoves] = plan->move_pairs;
    plan->move_ids[plan->nmoves++] = id;
    plan->move_pairs = need;
    plan->move_off[plan->nmoves] = need;
    return gs_txn_hold(x->c, id, pr->n, pr->nodes, pr->masks);
}

/* Largest movers first (they are the hardest to place), then by id. */
static bool move_before(const uint32_t *a, const uint32_t *b, gs_pp *x)
{
    const gs_hold *ha = gs_pp_job(x, *a), *hb = gs_pp_job(x, *b);
    return ha->ngpus != hb->ngpus ? ha->ngpus > hb->ngpus : ha->id < hb->id;
}

GS_HEAP_DEFINE(movers, uint32_t, gs_pp *, move_before)

/* With the movers lent: the gang's placement held, then each mover placed
 * with its shape and held. 1 when every mover has a place (all held), 0
 * when one has none (nothing held), or an error. */
int gs_pp_try_moves(gs_pp *x)
{
    int rc = gs_pp_fits(x);
    if (rc <= 0)
        return rc;
    if ((rc = keep_probe(x, true, 0))) {
        gs_pp_unhold_all(x);
        return rc;
    }
    movers_sort(x->plan->lent, x->plan->nlent, x);
    for (uint32_t i = 0; i < x->plan->nlent; i++) {
        const gs_hold *h = gs_pp_job(x, x->plan->lent[i]);
        gpusched_place_request q;
        gpusched_job job;
        gs_pp_shape(x->c, h, &q, &job);
        gs_pl_req r;
        rc = gs_pl_req_load(x->p, &q, &r);
        if (!rc)
            rc = gs_pl_fits(x->p, &r, x->plan->probe);
        if (!rc)
            rc = keep_probe(x, false, h->id);
        if (rc) {
            gs_pp_unhold_all(x);
            return rc == GPUSCHED_ENOSPC ? 0 : rc;
        }
    }
    return 1;
}

static void record_moves(gs_pp *x)
{
    gs_pp_cost s = gs_pp_lent_cost(x);
    x->plan->cost = s.cost;
    x->plan->gpus = s.gpus;
}

/* The best domain's moves made again (deterministic: as when it was
 * checked), held: 1, 0 if they no longer work (never expected), or an
 * error. */
static int redo_best(gs_pp *x, const gs_pp_best *best)
{
    int rc = gs_pp_unlend_to(x, 0);
    if (rc || (rc = gs_pp_collect_as(x, best->scope, best->by_rack)))
        return rc;
    uint32_t i = 0;
    while (x->plan->v[i].dom != best->dom)
        i++;
    gs_pp_dom d = {best->dom, i, i, 0, {0, 0, 0}};
    if ((rc = gs_pp_set_prefix(x, &d, best->k)) || (rc = gs_pp_prune(x)))
        return rc == GPUSCHED_ENOSPC ? 0 : rc;
    return gs_pp_try_moves(x);
}

/* The movers go, the gang comes and the movers come back at their new
 * places: staged in that order, so that the commit checks each against
 * what the ones before it left. */
static int stage_moves(gs_pp *x, gpusched_place_result *res)
{
    gpusched_preempt_plan *plan = x->plan;
    int rc = 0;
    for (uint32_t i = 0; !rc && i < plan->nmoves; i++)
        rc = gs_txn_stage_release(x->c, plan->move_ids[i]);
    gpusched_job job;
    gs_pl_job_of(x->r, &job);
    if (!rc)
        rc = gs_txn_stage_claim(x->c, &job, res->n, res->nodes, res->masks);
    for (uint32_t i = 0; !rc && i < plan->nmoves; i++) {
        const gs_hold *h = gs_cluster_job_find(x->c, plan->move_ids[i]);
        job = gs_hold_job(h);
        uint32_t a = plan->move_off[i];
        rc = gs_txn_stage_claim(x->c, &job, plan->move_off[i + 1] - a, plan->move_nodes + a, plan->move_masks + a);
    }
    return rc;
}

static int defrag_and_place(gs_pp *x, gpusched_place_result *res)
{
    gs_pl_req plan_only = *x->r;
    plan_only.in.flags &= ~GPUSCHED_PLACE_FLAG_COMMIT;
    const bool commit = x->r->in.flags & GPUSCHED_PLACE_FLAG_COMMIT;
    int rc = gs_pp_feasible(x);
    if (rc < 0)
        return rc;
    if (rc)
        return gs_pl_place_staged(x->p, x->r, res, 0); /* nothing to move */
    gs_pp_best best = {0};
    rc = gs_pp_search_all(x, &best);
    if (rc)
        return rc;
    if (best.found && (rc = redo_best(x, &best)) < 0)
        return rc;
    if (rc != 1) {
        /* Why the gang does not fit as the cluster is. */
        rc = gs_pl_place_staged(x->p, &plan_only, res, 0);
        return rc == 0 ? GPUSCHED_ENOSPC : rc;
    }
    record_moves(x);
    /* The plan is checked; the gang's own placement, on the state with the
     * movers gone and nothing held, is the one it was checked with. */
    uint32_t nm = x->plan->nmoves;
    uint32_t mp = x->plan->move_pairs;
    gs_pp_unhold_all(x);
    x->plan->nmoves = nm;
    x->plan->move_pairs = mp;
    rc = gs_pl_place_staged(x->p, &plan_only, res, 0);
    if (rc || !commit)
        return rc;
    return stage_moves(x, res);
}

GPUSCHED_API int gpusched_placer_defrag(gpusched_placer *p, const gpusched_place_request *req,
                                        gpusched_place_result *res, gpusched_preempt_plan *plan)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (!req || !res || !plan)
        return gs_error(&p->err, GPUSCHED_EINVAL, "defrag: %s is NULL",
                        !req ? "request" : !res ? "result" : "plan");
    gs_pl_req r;
    int rc = gs_pl_req_load(p, req, &r);
    if (rc || (rc = gs_pl_req_whole_gpus(p, &r, "defrag")) || (rc = gs_pl_req_not_running(p, &r)))
        return rc;
    if ((rc = gs_txn_begin(p->c)))
        return gs_error(&p->err, rc, "defrag: %s", p->c->err.msg);
    gs_pp x = {p, p->c, plan, &r, INT32_MIN, true, false, 0, 0, INT32_MAX, INT32_MIN};
    plan->prio_cap = INT32_MAX;
    plan->n = plan->nmoves = plan->move_pairs = plan->ngang = 0;
    plan->cost = plan->gpus = 0;
    plan->nlent = 0;
    /* What a preemption reports (optimality, protection) is not a
     * defragmentation's: nothing of an earlier preemption is left. */
    plan->exact = 0;
    plan->lower_bound = 0;
    plan->protected_jobs = 0;
    plan->protected_gpus = 0;
    plan->protected_until = 0;
    rc = defrag_and_place(&x, res);
    plan->nlent = 0;
    rc = gs_pl_txn_end(p, rc, r.in.flags & GPUSCHED_PLACE_FLAG_COMMIT, res);
    if (rc) {
        plan->nmoves = plan->move_pairs = 0;
        plan->cost = plan->gpus = 0;
        if (rc == GPUSCHED_ENOSPC)
            return rc;
        gs_pl_result_reset(res, p->nlevels);
        return gs_error(&p->err, rc, "defrag: %s",
                        rc == GPUSCHED_ENOMEM   ? "out of memory"
                        : rc == GPUSCHED_ELIMIT ? "too many jobs"
                                                : p->c->err.msg);
    }
    return gs_ok(&p->err);
}

GPUSCHED_API uint32_t gpusched_preempt_plan_move_count(const gpusched_preempt_plan *plan)
{
    return plan ? plan->nmoves : 0;
}

GPUSCHED_API int gpusched_preempt_plan_move(const gpusched_preempt_plan *plan, uint32_t index, uint64_t *job_id,
                                            const uint32_t **nodes, const uint64_t **masks, uint32_t *n)
{
    if (!plan || !job_id || !nodes || !masks || !n)
        return GPUSCHED_EINVAL;
    if (index >= plan->nmoves)
        return GPUSCHED_ERANGE;
    uint32_t a = plan->move_off[index];
    *job_id = plan->move_ids[index];
    *nodes = plan->move_nodes + a;
    *masks = plan->move_masks + a;
    *n = plan->move_off[index + 1] - a;
    return 0;
}
