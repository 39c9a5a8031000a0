/* Defragmentation: the movers of the first domain, cheapest first, whose
 * movers all find a place for their shape with the gang's GPUs held
 * (claimed without a job), found by the shared search (search.c); the
 * commit releases them, commits the gang and commits them again at their
 * new GPUs. */
#include <string.h>

#include "preempt-internal.h"

/* GPUs claimed for a planned placement without a job (claim 0: given
 * back), so that the next search sees them taken. */
static void hold(gs_pp *x, uint32_t n, const uint32_t *nodes, const uint64_t *masks, int claim)
{
    gs_cluster_nodes_set(x->c, n, nodes, masks, claim, GS_HOLDER_KEEP);
}

static void unhold_all(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    for (uint32_t i = plan->nmoves; i-- > 0;) {
        uint32_t a = plan->move_off[i];
        hold(x, plan->move_off[i + 1] - a, plan->move_nodes + a, plan->move_masks + a, 0);
    }
    plan->nmoves = 0;
    plan->move_pairs = 0;
    if (plan->ngang)
        hold(x, plan->ngang, plan->gang_nodes, plan->gang_masks, 0);
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
        hold(x, pr->n, pr->nodes, pr->masks, 1);
        return 0;
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
    hold(x, pr->n, pr->nodes, pr->masks, 1);
    return 0;
}

/* Largest movers first (they are the hardest to place), then by id. */
static bool move_before(const gs_hold *a, const gs_hold *b)
{
    return a->ngpus != b->ngpus ? a->ngpus > b->ngpus : a->id < b->id;
}

static void sift_movers(gs_pp *x, uint32_t *s, uint32_t n, uint32_t i)
{
    for (uint32_t m; (m = 2 * i + 1) < n; i = m) {
        if (m + 1 < n && move_before(gs_pp_job(x, s[m]), gs_pp_job(x, s[m + 1])))
            m++;
        if (!move_before(gs_pp_job(x, s[i]), gs_pp_job(x, s[m])))
            return;
        uint32_t t = s[i];
        s[i] = s[m];
        s[m] = t;
    }
}

static void sort_movers(gs_pp *x)
{
    uint32_t *s = x->plan->lent, n = x->plan->nlent;
    for (uint32_t i = n / 2; i-- > 0;)
        sift_movers(x, s, n, i);
    for (uint32_t end = n; end > 1; end--) {
        uint32_t t = s[0];
        s[0] = s[end - 1];
        s[end - 1] = t;
        sift_movers(x, s, end - 1, 0);
    }
}

/* With the movers lent: the gang's placement held, then each mover placed
 * with its shape and held. 1 when every mover has a place (all held), 0
 * when one has none (nothing held), or an error. */
int gs_pp_try_moves(gs_pp *x)
{
    int rc = gs_pp_fits(x);
    if (rc <= 0)
        return rc;
    if ((rc = keep_probe(x, true, 0)))
        return rc;
    sort_movers(x);
    for (uint32_t i = 0; i < x->plan->nlent; i++) {
        const gs_hold *h = gs_pp_job(x, x->plan->lent[i]);
        gpusched_place_request q;
        gs_pp_shape(x->c, h, &q);
        gs_pl_req r;
        rc = gs_pl_req_load(x->p, &q, &r);
        if (!rc)
            rc = gs_pl_fits(x->p, &r, x->plan->probe);
        if (!rc)
            rc = keep_probe(x, false, h->id);
        if (rc) {
            unhold_all(x);
            return rc == GPUSCHED_ENOSPC ? 0 : rc;
        }
    }
    return 1;
}

static void record_moves(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    gs_pp_cost s = {0, 0, 0};
    for (uint32_t i = 0; i < plan->nlent; i++) {
        const gs_hold *h = gs_pp_job(x, plan->lent[i]);
        gs_pp_cost_add(&s, h->cost_hint, h->ngpus);
    }
    plan->cost = s.cost;
    plan->gpus = s.gpus;
}

/* Everything that can fail first (the job table's room, every pair block,
 * the movers' descriptors), then the movers go, the gang comes and the
 * movers come back at their new places. */
static int commit_moves(gs_pp *x, gpusched_place_result *res)
{
    gpusched_preempt_plan *plan = x->plan;
    struct gpusched_cluster *c = x->c;
    const uint32_t nm = plan->nmoves;
    uint32_t cap = 0;
    void **blocks = NULL;
    if (gs_grow(&plan->alloc, (void **)&blocks, &cap, nm + 1, sizeof *blocks))
        return GPUSCHED_ENOMEM;
    cap = 0;
    gpusched_job *jobs = NULL;
    int rc = gs_grow(&plan->alloc, (void **)&jobs, &cap, nm + 1, sizeof *jobs);
    if (!rc)
        rc = gs_holdtab_prepare(&c->jobs, &c->alloc, 1);
    for (uint32_t i = 0; i <= nm; i++)
        blocks[i] = NULL;
    for (uint32_t i = 0; !rc && i <= nm; i++) {
        uint32_t n = i == 0 ? res->n : plan->move_off[i] - plan->move_off[i - 1];
        blocks[i] = gs_pairs_block(&c->alloc, n);
        if (n > GS_HOLD_INLINE && !blocks[i])
            rc = GPUSCHED_ENOMEM;
    }
    if (rc) {
        for (uint32_t i = 0; i <= nm; i++)
            gs_free(&c->alloc, blocks[i]);
        gs_free(&plan->alloc, blocks);
        gs_free(&plan->alloc, jobs);
        return rc;
    }
    /* Moves were recorded in the order of plan->lent (tried in that order). */
    for (uint32_t i = 0; i < nm; i++) {
        const gs_hold *h = gs_pp_job(x, plan->lent[i]);
        jobs[i + 1] = (gpusched_job){sizeof(gpusched_job), h->flags, h->id, h->priority, h->tenant,
                                     h->start_time, h->cost_hint};
    }
    gs_pl_job_of(x->r, &jobs[0]);
    for (uint32_t i = 0; i < nm; i++)
        gs_cluster_job_drop(c, gs_pp_job(x, plan->lent[i]));
    plan->nlent = 0;
    gs_cluster_commit_apply(c, &jobs[0], res->n, res->nodes, res->masks, blocks[0]);
    for (uint32_t i = 0; i < nm; i++) {
        uint32_t a = plan->move_off[i];
        gs_cluster_commit_apply(c, &jobs[i + 1], plan->move_off[i + 1] - a, plan->move_nodes + a,
                                plan->move_masks + a, blocks[i + 1]);
    }
    gs_free(&plan->alloc, blocks);
    gs_free(&plan->alloc, jobs);
    res->committed = 1;
    return 0;
}

static int defrag_and_place(gs_pp *x, gpusched_place_result *res)
{
    gs_pl_req plan_only = *x->r;
    plan_only.in.flags &= ~GPUSCHED_PLACE_COMMIT;
    const bool commit = x->r->in.flags & GPUSCHED_PLACE_COMMIT;
    int rc = gs_pp_fits(x);
    if (rc < 0)
        return rc;
    if (rc)
        return gs_pl_place_loaded(x->p, x->r, res); /* nothing to move */
    gs_pp_best best = {0};
    rc = gs_pp_search_all(x, &best);
    if (rc)
        return rc;
    if (!x->done) {
        /* Why the gang does not fit as the cluster is. */
        rc = gs_pl_place_loaded(x->p, &plan_only, res);
        return rc == 0 ? GPUSCHED_ENOSPC : rc;
    }
    record_moves(x);
    /* The plan is checked; the gang's own placement, on the state with the
     * movers gone and nothing held, is the one it was checked with. */
    uint32_t nm = x->plan->nmoves;
    uint32_t mp = x->plan->move_pairs;
    unhold_all(x);
    x->plan->nmoves = nm;
    x->plan->move_pairs = mp;
    rc = gs_pl_place_loaded(x->p, &plan_only, res);
    if (rc || !commit)
        return rc;
    return commit_moves(x, res);
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
    if (rc || (rc = gs_pl_req_not_running(p, &r)))
        return rc;
    gs_pp x = {p, p->c, plan, &r, INT32_MIN, true, false, false};
    plan->n = plan->nmoves = plan->move_pairs = plan->ngang = 0;
    plan->cost = plan->gpus = 0;
    plan->nlent = 0;
    rc = defrag_and_place(&x, res);
    gs_pp_unlend_to(&x, 0);
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
    gs_err_clear(&p->err);
    return 0;
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
