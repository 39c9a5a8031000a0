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

/* Victims by priority: their `dom` holds the priority key (choose_tier). */
static bool lower_prio(const gs_victim *a, const gs_victim *b, void *unused)
{
    (void)unused;
    return a->dom < b->dom;
}

GS_HEAP_DEFINE(by_prio, gs_victim, void *, lower_prio)

/* How many victims (sorted by priority) are of priority <= p. */
static uint32_t tier_end(const gpusched_preempt_plan *plan, int32_t p)
{
    const uint32_t key = gs_pp_prio_key(p);
    uint32_t lo = 0, hi = plan->nv;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (plan->v[mid].dom <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* 1 if the gang fits with the victims of priority <= p gone (the lent
 * stack cut or extended to them), 0 if not, or an error. */
static int tier_fits(gs_pp *x, int32_t p)
{
    const gs_pp_dom all = {0, 0, x->plan->nv, 0, {0, 0, 0}};
    int rc = gs_pp_set_prefix(x, &all, tier_end(x->plan, p));
    return rc ? rc : gs_pp_feasible(x);
}

/* Priority first: the lowest tier (victims of priority <= p) whose
 * victims, all gone, let the gang fit (lending more never fits less).
 * Plans of that tier all have p as their highest priority. The victims
 * are lent once, in ascending priority, so that every tier is a prefix of
 * the lent stack: the whole stack first tells whether any tier fits, then
 * a bisection over the tiers moves the stack's top between probes. When
 * none fits, 1 is returned with every eligible victim lent: the gang
 * cannot fit, and the failure is explained from there, without the
 * searches that would learn it plan by plan. Otherwise 0 with
 * plan->prio_cap set and nothing lent. With one priority, or no victim,
 * every eligible victim stays a candidate. */
static int choose_tier(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    plan->prio_cap = INT32_MAX;
    /* Usually the victims share one priority: the bound's pass over the
     * jobs (gs_pp_bound, which runs first on this path) tells, without
     * collecting or sorting them. */
    if (x->lo_prio >= x->hi_prio)
        return 0;
    x->collected = INT32_MIN; /* plan->v: in priority order below */
    int rc = gs_pp_collect_cluster(plan, x->c, x->r, false);
    if (rc || !plan->nv)
        return rc;
    if (gs_grow(&plan->alloc, (void **)&plan->prios, &plan->prios_cap, plan->nv, sizeof *plan->prios))
        return GPUSCHED_ENOMEM;
    by_prio_sort(plan->v, plan->nv, NULL);
    /* The distinct priorities, ascending, read off the sorted victims. */
    uint32_t n = 0;
    for (uint32_t i = 0; i < plan->nv; i++)
        if (!i || plan->v[i].dom != plan->v[i - 1].dom)
            plan->prios[n++] = gs_pp_job(x, plan->v[i].slot)->priority;
    if ((rc = tier_fits(x, plan->prios[n - 1])) != 1)
        return rc < 0 ? rc : 1;
    /* prios[hi] fits; prios[lo - 1] does not. */
    uint32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((rc = tier_fits(x, plan->prios[mid])) < 0)
            return rc;
        if (rc)
            hi = mid;
        else
            lo = mid + 1;
    }
    plan->prio_cap = hi == n - 1 ? INT32_MAX : plan->prios[hi];
    return gs_pp_unlend_to(x, 0);
}

/* The heuristic's plan, pruned, as the best so far (plan->best). */
static int heuristic(gs_pp *x, gs_pp_cost *cost, bool *found)
{
    gs_pp_best best = {0};
    int rc = gs_pp_search_all(x, &best);
    if (rc || !best.found)
        return rc;
    if (!x->best_lent) {
        if ((rc = gs_pp_collect_as(x, best.scope, best.by_rack)))
            return rc;
        uint32_t i = 0;
        while (x->plan->v[i].dom != best.dom)
            i++;
        gs_pp_dom d = {best.dom, i, i, 0, {0, 0, 0}};
        if ((rc = gs_pp_set_prefix(x, &d, best.k)))
            return rc;
    }
    if ((rc = gs_pp_prune(x)))
        return rc;
    if ((rc = gs_pp_keep_lent_as_best(x->plan)))
        return rc;
    *cost = gs_pp_lent_cost(x);
    *found = true;
    return 0;
}

static int lend_best(gs_pp *x)
{
    int rc = gs_pp_unlend_to(x, 0);
    for (uint32_t i = 0; !rc && i < x->plan->nbest; i++)
        rc = gs_pp_lend(x, x->plan->best[i]);
    return rc;
}

/* A gang with pods (pods.c), once it does not fit as the cluster is. */
static int plan_pods(gs_pp *x, gpusched_place_result *res)
{
    uint32_t n = 0;
    int rc = gs_pp_plan_pods(x, &n);
    if (rc)
        return rc;
    if (!n)
        return explain_failure(x, res); /* every eligible victim is lent */
    if ((rc = record_victims(x)))
        return rc;
    return place_final(x, res);
}

static int plan_and_place(gs_pp *x, gpusched_place_result *res)
{
    gpusched_preempt_plan *plan = x->plan;
    plan->exact = 1;
    plan->lower_bound = 0;
    int rc = gs_pp_feasible(x);
    if (rc < 0)
        return rc;
    if (rc)
        return place_final(x, res); /* no victim needed */
    if (x->r->pods_path)
        return plan_pods(x, res);
    gs_pp_cost cost = {0, 0, 0};
    bool found = false;
    if ((rc = gs_pp_indexed(x, &cost, &found)) < 0)
        return rc;
    if (rc == 0 && (rc = gs_pp_bound(x, res)) != 0)
        return rc < 0 ? rc : GPUSCHED_ENOSPC;
    int whole = 0;
    if (rc == 0 && (whole = gs_pp_whole_plan(x, &plan->prio_cap, &cost)) < 0)
        return whole;
    if (whole) {
        /* Whole domains, decided by count: optimal, lent and checked. */
        found = true;
        x->best_lent = true;
        plan->exact = 1;
        plan->lower_bound = cost.cost;
    } else if (rc == 0) {
        /* The collecting path: the priority tier, the heuristic over the
         * scope's domains, then the exact pass. */
        found = false;
        cost = (gs_pp_cost){0, 0, 0};
        plan->exact = 1;
        if (x->r->in.preempt_policy == GPUSCHED_PREEMPT_PRIORITY_FIRST && (rc = choose_tier(x))) {
            if (rc < 0)
                return rc;
            /* No tier fits: every eligible victim is lent, as below. */
            plan->exact = 0;
            plan->lower_bound = 0;
            return explain_failure(x, res);
        }
        const int32_t scope =
            x->r->in.required_level != GPUSCHED_NONE ? (int32_t)x->r->in.required_level : -1;
        if ((rc = heuristic(x, &cost, &found)) || (rc = gs_pp_exact(x, scope, &cost, &found)))
            return rc;
    }
    if (found && !x->best_lent) {
        /* The exact search's plan (an optimum needs every victim, but a
         * search cut short by its budget may not have reached one). */
        if ((rc = lend_best(x)) || (rc = gs_pp_prune(x)))
            return rc;
    } else if (!found) {
        /* The domain search is complete by construction; this is the
         * guarantee that stays true whatever the order above. */
        plan->exact = 0;
        plan->lower_bound = 0;
        rc = lend_all_eligible(x);
        if (!rc && (rc = gs_pp_feasible(x)) == 0)
            return explain_failure(x, res);
        if (rc < 0 || (rc = gs_pp_prune(x)))
            return rc;
    } /* else the heuristic's plan, pruned already, is still lent */
    if ((rc = record_victims(x)))
        return rc;
    if (plan->lower_bound > plan->cost)
        plan->lower_bound = plan->cost;
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
    gs_pp x = {p, p->c, plan, &r, INT32_MIN, false, false, 0, 0, INT32_MAX, INT32_MIN};
    plan->prio_cap = INT32_MAX;
    plan->n = plan->nmoves = plan->move_pairs = plan->ngang = 0;
    plan->cost = plan->gpus = 0;
    plan->nlent = 0;
    /* Counted only when victims are collected: a gang that fits as the
     * cluster is must not report the protection of an earlier call. */
    plan->protected_jobs = 0;
    plan->protected_gpus = 0;
    plan->protected_until = 0;
    rc = plan_and_place(&x, res);
    plan->nlent = 0;
    rc = gs_pl_txn_end(p, rc, r.in.flags & GPUSCHED_PLACE_FLAG_COMMIT, res);
    if (rc) {
        plan->n = 0;
        plan->cost = plan->gpus = 0;
        plan->exact = 0;
        plan->lower_bound = 0;
        if (rc == GPUSCHED_ENOSPC)
            return rc;
        gs_pl_result_reset(res, p->nlevels);
        return gs_error(&p->err, rc, "preempt: %s", rc == GPUSCHED_ENOMEM ? "out of memory" : p->c->err.msg);
    }
    return gs_ok(&p->err);
}

GPUSCHED_API int gpusched_preempt_plan_optimality(const gpusched_preempt_plan *plan, uint32_t *exact,
                                                  uint64_t *cost_lower_bound)
{
    if (!plan)
        return GPUSCHED_EINVAL;
    if (exact)
        *exact = plan->exact;
    if (cost_lower_bound)
        *cost_lower_bound = plan->lower_bound;
    return 0;
}

GPUSCHED_API int gpusched_preempt_plan_protected(const gpusched_preempt_plan *plan, uint32_t *jobs,
                                                 uint64_t *gpus, int64_t *until)
{
    if (!plan)
        return GPUSCHED_EINVAL;
    if (jobs)
        *jobs = plan->protected_jobs;
    if (gpus)
        *gpus = plan->protected_gpus;
    if (until)
        *until = plan->protected_jobs ? plan->protected_until : 0;
    return 0;
}
