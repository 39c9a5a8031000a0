/* Preemption: the victims of the cheapest domain, found by the shared
 * search (search.c) with the preemptible jobs of lower priority as
 * candidates, then released in the commit of the gang. */
#include <string.h>

#include "heap.h"
#include "preempt-internal.h"

/* ---- the plan and its execution ------------------------------------------ */

static bool id_less(const uint64_t *a, const uint64_t *b, void *unused)
{
    (void)unused;
    return *a < *b;
}

GS_HEAP_DEFINE(ids, uint64_t, void *, id_less)

static int record_victims(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    if (plan->nlent > plan->cap) {
        uint64_t *ids = gs_realloc_array(&plan->alloc, plan->ids, plan->nlent, sizeof *ids);
        if (!ids)
            return GPUSCHED_ENOMEM;
        plan->ids = ids;
        plan->cap = plan->nlent;
    }
    gs_pp_cost s = {0, 0, 0};
    for (uint32_t i = 0; i < plan->nlent; i++) {
        const gs_hold *h = gs_pp_job(x, plan->lent[i]);
        plan->ids[i] = h->id;
        gs_pp_cost_add(&s, h->cost_hint, h->ngpus);
    }
    ids_sort(plan->ids, plan->nlent, NULL);
    plan->n = plan->nlent;
    plan->cost = s.cost;
    plan->gpus = s.gpus;
    return 0;
}

/* The final placement, with the victims lent; when it commits, their
 * releases are staged first, so that the gang's claim follows them. */
static int place_final(gs_pp *x, gpusched_place_result *res)
{
    if (x->r->in.flags & GPUSCHED_PLACE_FLAG_COMMIT)
        for (uint32_t i = 0; i < x->plan->nlent; i++) {
            int rc = gs_txn_stage_release(x->c, gs_pp_job(x, x->plan->lent[i])->id);
            if (rc)
                return rc;
        }
    return gs_pl_place_staged(x->p, x->r, res, 0);
}

/* Every eligible victim lent: if the gang fits then, a plan exists. */
static int lend_all_eligible(gs_pp *x)
{
    int rc = gs_pp_collect_as(x, -1, false);
    for (uint32_t i = 0; !rc && i < x->plan->nv; i++)
        rc = gs_pp_lend(x, x->plan->v[i].slot);
    return rc;
}

/* Why the gang does not fit even with every eligible victim gone. */
static int explain_failure(gs_pp *x, gpusched_place_result *res)
{
    gs_pl_req plan_only = *x->r;
    plan_only.in.flags &= ~GPUSCHED_PLACE_FLAG_COMMIT;
    x->r = &plan_only;
    int rc = gs_pl_place_staged(x->p, x->r, res, 0);
    return rc == 0 ? GPUSCHED_ENOSPC : rc;
}

static int plan_and_place(gs_pp *x, gpusched_place_result *res)
{
    int rc = gs_pp_fits(x);
    if (rc < 0)
        return rc;
    if (rc)
        return place_final(x, res); /* no victim needed */
    gs_pp_best best = {0};
    rc = gs_pp_search_all(x, &best);
    if (rc)
        return rc;
    if (best.found && x->best_lent) {
        rc = 0; /* the search left the best prefix lent */
    } else if (best.found) {
        if ((rc = gs_pp_collect_as(x, best.scope, best.by_rack)))
            return rc;
        uint32_t i = 0;
        while (x->plan->v[i].dom != best.dom)
            i++;
        gs_pp_dom d = {best.dom, i, i, 0, {0, 0, 0}};
        rc = gs_pp_set_prefix(x, &d, best.k);
    } else {
        /* The domain search is complete by construction; this is the
         * guarantee that stays true whatever the order above. */
        rc = lend_all_eligible(x);
        if (!rc && (rc = gs_pp_fits(x)) == 0)
            return explain_failure(x, res);
        rc = rc < 0 ? rc : 0;
    }
    if (rc || (rc = gs_pp_prune(x)) || (rc = record_victims(x)))
        return rc;
    return place_final(x, res);
}

GPUSCHED_API int gpusched_placer_preempt(gpusched_placer *p, const gpusched_place_request *req,
                                         gpusched_place_result *res, gpusched_preempt_plan *plan)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (!req || !res || !plan)
        return gs_error(&p->err, GPUSCHED_EINVAL, "preempt: %s is NULL",
                        !req ? "request" : !res ? "result" : "plan");
    gs_pl_req r;
    int rc = gs_pl_req_load(p, req, &r);
    if (rc || (rc = gs_pl_req_not_running(p, &r)))
        return rc;
    if ((rc = gs_txn_begin(p->c)))
        return gs_error(&p->err, rc, "preempt: %s", p->c->err.msg);
    gs_pp x = {p, p->c, plan, &r, INT32_MIN, false, false, false, 0};
    plan->n = plan->nmoves = plan->move_pairs = plan->ngang = 0;
    plan->cost = plan->gpus = 0;
    plan->nlent = 0;
    rc = plan_and_place(&x, res);
    plan->nlent = 0;
    rc = gs_pl_txn_end(p, rc, r.in.flags & GPUSCHED_PLACE_FLAG_COMMIT, res);
    if (rc) {
        plan->n = 0;
        plan->cost = plan->gpus = 0;
        if (rc == GPUSCHED_ENOSPC)
            return rc;
        gs_pl_result_reset(res, p->nlevels);
        return gs_error(&p->err, rc, "preempt: %s", rc == GPUSCHED_ENOMEM ? "out of memory" : p->c->err.msg);
    }
    return gs_ok(&p->err);
}
