/* The preemption planner against exhaustive search over every subset of
 * eligible victims, on thousands of random tiny clusters and requests:
 * complete (a plan exists exactly when evicting every eligible victim lets
 * the gang fit), sound (without its victims the gang gets exactly the
 * placement reported), no victim without need, every victim needed, only
 * eligible victims, plan only changes nothing, commit does what the plan
 * says. Both policies: priority first always has the least highest victim
 * priority; a plan the library calls exact is optimal for its policy's
 * order, and its lower bound never exceeds the optimum. How often the
 * cost is the optimum is logged here and asserted in
 * test-preempt-optimal.c. Moving a job
 * gives what placing its shape gives on the cluster without it. */
#include <stdlib.h>

#include "cluster-test.h"
#include "place-test.h"
#include "preempt/preempt-internal.h"

#define MAX_JOBS 12
#define PREEMPTOR 7

typedef struct pp_job {
    gpusched_job j;
    uint32_t n;
    uint32_t nodes[2];
    uint64_t masks[2];
} pp_job;

typedef struct pp_state {
    gpusched_topo *t;
    pp_job jobs[MAX_JOBS];
    uint32_t njobs;
    uint32_t resv_node;     /* UINT32_MAX: no reservation for the preemptor */
    uint64_t resv_mask;
    uint32_t down_node;     /* UINT32_MAX: every node up */
} pp_state;

static uint64_t all_of(uint32_t g) { return g >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << g) - 1); }

/* Jobs of one or two nodes with random priorities, flags and costs; at
 * times a reservation for the preemptor and a node down. */
static void random_state(pt_rng *r, pp_state *s)
{
    uint32_t nn = gpusched_topo_node_count(s->t);
    uint64_t free_[64];
    for (uint32_t n = 0; n < nn; n++)
        free_[n] = all_of(gpusched_topo_node_gpus(s->t, n));
    s->njobs = 0;
    for (uint32_t tries = 0; tries < 3 * nn && s->njobs < MAX_JOBS; tries++) {
        pp_job *jb = &s->jobs[s->njobs];
        uint32_t a = pt_below(r, nn);
        uint64_t ma = pt_next(r) & free_[a];
        if (pt_below(r, 2))
            ma = free_[a]; /* whole free part: nodes fill up */
        if (!ma)
            continue;
        jb->n = 1;
        jb->nodes[0] = a;
        jb->masks[0] = ma;
        uint32_t b = a + 1 + pt_below(r, 2);
        if (b < nn && pt_below(r, 4) == 0 && free_[b]) {
            jb->n = 2;
            jb->nodes[1] = b;
            jb->masks[1] = free_[b];
        }
        for (uint32_t i = 0; i < jb->n; i++)
            free_[jb->nodes[i]] &= ~jb->masks[i];
        jb->j = (gpusched_job)GPUSCHED_JOB_INIT;
        jb->j.id = 100 + s->njobs;
        jb->j.priority = (int32_t)pt_below(r, 4);
        jb->j.flags = pt_below(r, 3) ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
        jb->j.cost_hint = pt_below(r, 6);
        s->njobs++;
    }
    s->resv_node = s->down_node = UINT32_MAX;
    uint32_t rn = pt_below(r, nn);
    if (pt_below(r, 4) == 0 && free_[rn]) {
        s->resv_node = rn;
        s->resv_mask = free_[rn] & (pt_next(r) | 1);
        if (!s->resv_mask)
            s->resv_node = UINT32_MAX;
    }
    if (pt_below(r, 8) == 0)
        s->down_node = pt_below(r, nn);
}

/* The state without the jobs whose bit is set in `gone`. */
static gpusched_cluster *build(const pp_state *s, uint32_t gone)
{
    gpusched_cluster *c;
    cr_assert_eq(gpusched_cluster_new(s->t, NULL, &c), 0);
    for (uint32_t i = 0; i < s->njobs; i++)
        if (!(gone >> i & 1))
            cr_assert_eq(gpusched_cluster_allocate(c, &s->jobs[i].j, s->jobs[i].n, s->jobs[i].nodes, s->jobs[i].masks),
                         0, "%s", gpusched_cluster_errmsg(c));
    if (s->resv_node != UINT32_MAX)
        cr_assert_eq(gpusched_cluster_reserve(c, PREEMPTOR, 1, &s->resv_node, &s->resv_mask), 0, "%s",
                     gpusched_cluster_errmsg(c));
    if (s->down_node != UINT32_MAX) {
        uint64_t hit[64];
        cr_assert_eq(gpusched_cluster_node_health_set(c, s->down_node, GPUSCHED_NODE_DOWN, hit, 64, NULL), 0);
    }
    return c;
}

/* Whether the gang fits without the jobs of `gone`; the placement into res. */
static bool fits_without(const pp_state *s, uint32_t gone, const gpusched_place_request *q,
                         gpusched_place_result *res)
{
    gpusched_cluster *c = build(s, gone);
    gpusched_placer *p;
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    gpusched_place_request plan_only = *q;
    plan_only.flags = 0;
    int rc = gpusched_placer_place(p, &plan_only, res);
    cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(p));
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    return rc == 0;
}

/* What a case runs on: the state built, a placer, a result for the call
 * under test, one for the reference, a plan. */
typedef struct pp_run {
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res, *ref;
    gpusched_preempt_plan *plan;
} pp_run;

static pp_run pp_open(const pp_state *s)
{
    pp_run run = {.c = build(s, 0)};
    cr_assert_eq(gpusched_placer_new(run.c, NULL, &run.p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &run.res), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &run.ref), 0);
    cr_assert_eq(gpusched_preempt_plan_new(NULL, &run.plan), 0);
    return run;
}

static void pp_close(pp_run *run, pp_state *s)
{
    gpusched_preempt_plan_free(run->plan);
    gpusched_place_result_free(run->ref);
    gpusched_place_result_free(run->res);
    gpusched_placer_free(run->p);
    gpusched_cluster_unref(run->c);
    gpusched_topo_unref(s->t);
}

static bool eligible(const pp_job *jb, const gpusched_place_request *q)
{
    return (jb->j.flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE) && jb->j.priority < q->job->priority &&
           jb->j.id != q->job->id;
}

static void same_placement(gpusched_place_result *a, gpusched_place_result *b)
{
    const uint32_t *na, *nb;
    const uint64_t *ma, *mb;
    uint32_t ka, kb;
    cr_assert_eq(gpusched_place_result_nodes(a, &na, &ma, &ka), 0);
    cr_assert_eq(gpusched_place_result_nodes(b, &nb, &mb, &kb), 0);
    cr_assert_eq(ka, kb, "%u nodes against %u", ka, kb);
    for (uint32_t i = 0; i < ka; i++) {
        cr_assert_eq(na[i], nb[i]);
        cr_assert_eq(ma[i], mb[i]);
    }
}

typedef struct pp_stats {
    uint32_t cases, planned, with_victims, optimal, no_plan, exact;
    uint32_t cheaper_than_search;   /* whole domains: plans below the general search's */
} pp_stats;

/* A plan's key: its highest victim priority (INT32_MIN without victims;
 * compared only under priority first), cost, GPUs, victims. */
typedef struct pp_cost {
    int32_t top;
    uint64_t cost, gpus;
    uint32_t n;
} pp_cost;

static bool by_priority;    /* the policy of the case being checked */

static bool cost_less(pp_cost a, pp_cost b)
{
    if (by_priority && a.top != b.top)
        return a.top < b.top;
    if (a.cost != b.cost)
        return a.cost < b.cost;
    if (a.gpus != b.gpus)
        return a.gpus < b.gpus;
    return a.n < b.n;
}

static pp_cost cost_of(const pp_state *s, uint32_t set)
{
    pp_cost c = {INT32_MIN, 0, 0, 0};
    for (uint32_t i = 0; i < s->njobs; i++)
        if (set >> i & 1) {
            c.top = s->jobs[i].j.priority > c.top ? s->jobs[i].j.priority : c.top;
            c.cost += s->jobs[i].j.cost_hint;
            for (uint32_t k = 0; k < s->jobs[i].n; k++)
                c.gpus += (uint64_t)__builtin_popcountll(s->jobs[i].masks[k]);
            c.n++;
        }
    return c;
}

/* A uniform cluster of blocks and racks, 2 to 18 nodes. */
static gpusched_topo *uniform_topo(pt_rng *r)
{
    static const char *names[] = {"block", "rack"};
    const uint32_t fan[] = {1 + pt_below(r, 2), 1 + pt_below(r, 3), 1 + pt_below(r, 3)};
    gpusched_topo *t;
    char err[256];
    cr_assert_eq(gpusched_topo_uniform(2, names, fan, 2 + pt_below(r, 3), "gb200", NULL, &t, err, sizeof err), 0,
                 "%s", err);
    return t;
}

/* A gang of whole domains: slices of one level, each all of a domain's
 * GPUs, whole nodes or any GPUs, at times around an avoided node. */
static void whole_request(pt_rng *r, gpusched_topo *t, gpusched_place_request *q, gpusched_job *job,
                          uint32_t *avoid)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    pt_req_job(q, job, PREEMPTOR);
    const uint32_t l = pt_below(r, 2), ndom = gpusched_topo_domain_count(t, l);
    uint32_t first, count;
    cr_assert_eq(gpusched_topo_domain_nodes(t, l, 0, &first, &count), 0);
    const uint64_t size = (uint64_t)count * gpusched_topo_node_gpus(t, 0);
    q->split = pt_below(r, 2) ? GPUSCHED_SPLIT_WHOLE_NODES : GPUSCHED_SPLIT_ANY;
    q->slice_level[0] = l;
    q->slice_gpus[0] = (uint32_t)size;
    q->gpus = (uint32_t)size * (1 + pt_below(r, ndom < 3 ? ndom : 3));
    if (pt_below(r, 4) == 0) {
        q->avoid_count = 1;
        avoid[0] = pt_below(r, gpusched_topo_node_count(t));
        q->avoid_nodes = avoid;
    }
}

/* The general search's plan for the same request (the whole-domain path
 * off): a plan of the whole-domain path never costs more. */
static void no_dearer_than_search(const pp_state *s, gpusched_place_request q, int rc, pp_cost mine, pp_stats *st)
{
    setenv("GPUSCHED_PREEMPT_WHOLE", "0", 1);
    pp_run run = pp_open(s);
    unsetenv("GPUSCHED_PREEMPT_WHOLE");
    q.flags = 0;
    int rc2 = gpusched_placer_preempt(run.p, &q, run.res, run.plan);
    cr_assert_eq(rc2, rc, "the general search says %s", gpusched_err_name(rc2));
    if (rc == 0) {
        const uint64_t *ids;
        uint32_t n, set = 0;
        cr_assert_eq(gpusched_preempt_plan_victims(run.plan, &ids, &n), 0);
        for (uint32_t i = 0; i < n; i++)
            set |= 1u << (ids[i] - 100);
        pp_cost search = cost_of(s, set);
        cr_assert(!cost_less(search, mine), "the general search found a cheaper plan");
        st->cheaper_than_search += cost_less(mine, search);
    }
    gpusched_preempt_plan_free(run.plan);
    gpusched_place_result_free(run.ref);
    gpusched_place_result_free(run.res);
    gpusched_placer_free(run.p);
    gpusched_cluster_unref(run.c);
}

static void one_case(pt_rng *r, pp_stats *st, bool whole)
{
    pp_state s = {.t = whole ? uniform_topo(r) : pt_random_topo(r, 7)};
    random_state(r, &s);
    gpusched_place_request q;
    gpusched_job qjob;
    uint32_t avoid[4];
    if (whole)
        whole_request(r, s.t, &q, &qjob, avoid);
    else
        pt_random_request(r, s.t, &q, &qjob, PREEMPTOR, avoid);
    qjob.priority = (int32_t)pt_below(r, 5);
    q.preempt_policy = pt_below(r, 2) ? GPUSCHED_PREEMPT_COST_FIRST : GPUSCHED_PREEMPT_PRIORITY_FIRST;
    by_priority = q.preempt_policy == GPUSCHED_PREEMPT_PRIORITY_FIRST;

    pp_run run = pp_open(&s);
    gpusched_cluster *c = run.c;
    gpusched_placer *p = run.p;
    gpusched_place_result *res = run.res, *ref = run.ref;
    gpusched_preempt_plan *plan = run.plan;
    uint64_t before = ct_fingerprint(c);
    int rc = gpusched_placer_preempt(p, &q, res, plan);
    cr_assert_eq(ct_fingerprint(c), before, "plan only changed the state");
    int place_rc = gpusched_placer_place(p, &q, ref);
    if (rc != 0 && rc != GPUSCHED_ENOSPC) {
        /* An invalid request: the placement's own verdict. */
        cr_assert_eq(rc, place_rc, "preempt %s, place %s", gpusched_err_name(rc), gpusched_err_name(place_rc));
        goto out;
    }
    st->cases++;

    uint32_t elig = 0;
    for (uint32_t i = 0; i < s.njobs; i++)
        if (eligible(&s.jobs[i], &q))
            elig |= 1u << i;
    bool all_fit = fits_without(&s, elig, &q, ref);
    cr_assert_eq(rc == 0, all_fit, "preempt says %s, evicting all eligible %s", gpusched_err_name(rc),
                 all_fit ? "fits" : "does not fit");
    if (rc) {
        st->no_plan++;
        const uint64_t *ids;
        uint32_t n;
        cr_assert_eq(gpusched_preempt_plan_victims(plan, &ids, &n), 0);
        cr_assert_eq(n, 0);
        cr_assert_neq(gpusched_place_result_reason(res), GPUSCHED_REASON_OK);
        goto out;
    }
    st->planned++;

    /* The victims: eligible, ascending, totals right. */
    const uint64_t *ids;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_victims(plan, &ids, &n), 0);
    uint32_t set = 0;
    for (uint32_t i = 0; i < n; i++) {
        cr_assert(i == 0 || ids[i] > ids[i - 1]);
        cr_assert(ids[i] >= 100 && ids[i] < 100 + s.njobs);
        uint32_t k = (uint32_t)(ids[i] - 100);
        cr_assert(elig >> k & 1, "victim %llu is not eligible", (unsigned long long)ids[i]);
        set |= 1u << k;
    }
    pp_cost mine = cost_of(&s, set);
    if (whole)
        no_dearer_than_search(&s, q, rc, mine, st);
    uint64_t cost, gpus;
    cr_assert_eq(gpusched_preempt_plan_totals(plan, &cost, &gpus), 0);
    cr_assert_eq(cost, mine.cost);
    cr_assert_eq(gpus, mine.gpus);

    /* Sound: without them the gang gets this very placement. */
    cr_assert(fits_without(&s, set, &q, ref));
    same_placement(res, ref);
    if (fits_without(&s, 0, &q, ref))
        cr_assert_eq(n, 0, "the gang fits as it is, yet %u victims", n);
    /* Every victim needed. */
    for (uint32_t i = 0; i < s.njobs; i++)
        if (set >> i & 1)
            cr_assert(!fits_without(&s, set & ~(1u << i), &q, ref), "victim %u is not needed", 100 + i);

    /* The optimum over every subset, for the log. */
    pp_cost best = {INT32_MAX, UINT64_MAX, 0, 0};
    for (uint32_t sub = elig;; sub = (sub - 1) & elig) {
        pp_cost cs = cost_of(&s, sub);
        if (cost_less(cs, best) && fits_without(&s, sub, &q, ref))
            best = cs;
        if (!sub)
            break;
    }
    cr_assert(!cost_less(mine, best), "cheaper than the optimum: the exhaustive search is wrong");
    st->with_victims += n > 0;
    st->optimal += n > 0 && !cost_less(best, mine);
    if (by_priority)
        cr_assert_eq(mine.top, best.top, "highest victim priority %d, %d would do", mine.top, best.top);
    uint32_t exact = 0;
    uint64_t lb = 0;
    cr_assert_eq(gpusched_preempt_plan_optimality(plan, &exact, &lb), 0);
    cr_assert_leq(lb, best.cost, "lower bound %llu above the optimum %llu", (unsigned long long)lb,
                  (unsigned long long)best.cost);
    if (exact) {
        st->exact += n > 0;
        cr_assert(!cost_less(best, mine), "called exact, yet cost %llu where %llu would do",
                  (unsigned long long)mine.cost, (unsigned long long)best.cost);
    }

    /* Commit: the victims go, the gang runs where the plan said. */
    cr_assert(fits_without(&s, set, &q, ref));
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_eq(gpusched_placer_preempt(p, &q, res, plan), 0, "%s", gpusched_placer_errmsg(p));
    same_placement(res, ref);
    for (uint32_t i = 0; i < s.njobs; i++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        cr_assert_eq(gpusched_cluster_job_find(c, 100 + i, &j), (set >> i & 1) ? GPUSCHED_ENOENT : 0);
    }
    gpusched_job j = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(c, PREEMPTOR, &j), 0);
    cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
out:
    pp_close(&run, &s);
}

/* n cases from `seed`, logged. */
static pp_stats run_cases(uint64_t seed, uint32_t n, bool whole)
{
    pt_rng r = {seed};
    pp_stats st = {0};
    for (uint32_t i = 0; i < n; i++)
        one_case(&r, &st, whole);
    cr_log_info("%u valid cases: %u planned (%u with victims, of which %u at the optimum, %u proven exact, %u cheaper "
                "than the general search), %u without a plan",
                st.cases, st.planned, st.with_victims, st.optimal, st.exact, st.cheaper_than_search, st.no_plan);
    return st;
}

Test(preempt_property, against_exhaustive_search, .timeout = 240)
{
    pp_stats st = run_cases(0x5eed5eedull, 20000, false);
    /* The generator must exercise both outcomes and real preemptions. */
    cr_assert_gt(st.with_victims, 1500);
    cr_assert_gt(st.no_plan, 500);
}

/* Gangs of whole domains (lib/preempt/wholeplan.c decides them by count
 * when it can), with victims across domains, nodes down and the gang's
 * own reservation at times: every guarantee against the exhaustive
 * search, and never dearer than the general search. */
Test(preempt_property, whole_domains_against_exhaustive_search, .timeout = 240)
{
    pp_stats st = run_cases(0x3a1e5eedull, 10000, true);
    cr_assert_gt(st.with_victims, 1000);
    cr_assert_gt(st.no_plan, 300);
}

/* The job of index k of the state, moved: the same as placing its shape on
 * the cluster without it; the commit swaps its GPUs and keeps the rest. */
static void one_move(pt_rng *r, uint32_t *moved, uint32_t *stuck)
{
    pp_state s = {.t = pt_random_topo(r, 7)};
    random_state(r, &s);
    if (!s.njobs) {
        gpusched_topo_unref(s.t);
        return;
    }
    uint32_t k = pt_below(r, s.njobs);
    uint64_t id = s.jobs[k].j.id;
    pp_run run = pp_open(&s);
    gpusched_cluster *c = run.c;
    gpusched_placer *p = run.p;
    gpusched_place_result *res = run.res, *ref = run.ref;
    gpusched_place_request q;
    gpusched_job qjob;
    gs_pp_shape(c, gs_cluster_job_find(c, id), &q, &qjob);
    uint64_t before = ct_fingerprint(c);
    int rc = gpusched_placer_move(p, id, 0, res);
    cr_assert_eq(ct_fingerprint(c), before, "plan only changed the state");
    cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(p));
    bool fits = fits_without(&s, 1u << k, &q, ref);
    cr_assert_eq(rc == 0, fits, "move %s, its shape on the cluster without it %s", gpusched_err_name(rc),
                 fits ? "fits" : "does not");
    if (rc) {
        ++*stuck;
        goto out;
    }
    ++*moved;
    same_placement(res, ref);
    cr_assert_eq(gpusched_placer_move(p, id, GPUSCHED_PLACE_FLAG_COMMIT, res), 0);
    same_placement(res, ref);
    const uint32_t *nodes, *rn;
    const uint64_t *masks, *rm;
    uint32_t n, g, rcount;
    cr_assert_eq(gpusched_cluster_job_allocation(c, id, &nodes, &masks, &n, &g), 0);
    cr_assert_eq(gpusched_place_result_nodes(ref, &rn, &rm, &rcount), 0);
    cr_assert_eq(n, rcount);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(nodes[i], rn[i]);
        cr_assert_eq(masks[i], rm[i]);
    }
    gpusched_job j = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(c, id, &j), 0);
    cr_assert_eq(j.priority, s.jobs[k].j.priority);
    cr_assert_eq(j.flags, s.jobs[k].j.flags);
    cr_assert_eq(j.cost_hint, s.jobs[k].j.cost_hint);
    cr_assert_eq(gpusched_cluster_job_count(c), s.njobs);
    cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
out:
    pp_close(&run, &s);
}

Test(preempt_property, move_is_placing_the_shape_without_the_job, .timeout = 240)
{
    pt_rng r = {0xfeedull};
    uint32_t moved = 0, stuck = 0;
    for (uint32_t i = 0; i < 5000; i++)
        one_move(&r, &moved, &stuck);
    cr_log_info("%u jobs moved, %u with nowhere to go", moved, stuck);
    cr_assert_gt(moved, 2000);
    cr_assert_gt(stuck, 50);
}

/* Defragmentation on random states whose jobs may be movable: a plan is
 * sound (the movers are movable and of no higher priority; without them
 * the gang gets the reported placement; then every mover's new GPUs are
 * free and hold its shape), plan only changes nothing, the commit is the
 * plan. */
static void one_defrag(pt_rng *r, uint32_t *planned, uint32_t *with_moves, uint32_t *none)
{
    pp_state s = {.t = pt_random_topo(r, 7)};
    random_state(r, &s);
    /* Half the jobs gone: room to move into. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s.njobs; i++)
        if (pt_below(r, 2)) {
            s.jobs[kept] = s.jobs[i];
            s.jobs[kept].j.id = 100 + kept;
            s.jobs[kept].j.flags = pt_below(r, 3) ? GPUSCHED_JOB_FLAG_MOVABLE : 0;
            kept++;
        }
    s.njobs = kept;
    gpusched_place_request q;
    gpusched_job qjob;
    uint32_t avoid[4];
    pt_random_request(r, s.t, &q, &qjob, PREEMPTOR, avoid);
    qjob.priority = (int32_t)pt_below(r, 5);
    pp_run run = pp_open(&s);
    gpusched_cluster *c = run.c;
    gpusched_placer *p = run.p;
    gpusched_place_result *res = run.res, *ref = run.ref;
    gpusched_preempt_plan *plan = run.plan;
    uint64_t before = ct_fingerprint(c);
    int rc = gpusched_placer_defrag(p, &q, res, plan);
    cr_assert_eq(ct_fingerprint(c), before, "plan only changed the state");
    if (rc != 0 && rc != GPUSCHED_ENOSPC) {
        cr_assert_eq(rc, gpusched_placer_place(p, &q, ref));
        goto out;
    }
    bool fits_now = fits_without(&s, 0, &q, ref);
    if (rc) {
        cr_assert(!fits_now, "no plan, yet the gang fits as it is");
        cr_assert_eq(gpusched_preempt_plan_move_count(plan), 0);
        ++*none;
        goto out;
    }
    ++*planned;
    uint32_t nm = gpusched_preempt_plan_move_count(plan);
    if (fits_now)
        cr_assert_eq(nm, 0, "the gang fits as it is, yet %u moves", nm);
    *with_moves += nm > 0;
    uint32_t movers = 0;
    for (uint32_t i = 0; i < nm; i++) {
        uint64_t id;
        const uint32_t *nodes;
        const uint64_t *masks;
        uint32_t n;
        cr_assert_eq(gpusched_preempt_plan_move(plan, i, &id, &nodes, &masks, &n), 0);
        cr_assert(id >= 100 && id < 100 + s.njobs);
        const pp_job *jb = &s.jobs[id - 100];
        cr_assert(jb->j.flags & GPUSCHED_JOB_FLAG_MOVABLE, "job %llu is not movable", (unsigned long long)id);
        cr_assert_leq(jb->j.priority, qjob.priority);
        movers |= 1u << (id - 100);
    }
    /* Without the movers the gang gets this placement... */
    cr_assert(fits_without(&s, movers, &q, ref));
    same_placement(res, ref);
    /* ...and then every mover fits at its new GPUs. */
    gpusched_cluster *sim = build(&s, movers);
    const uint32_t *gn;
    const uint64_t *gm;
    uint32_t gk;
    cr_assert_eq(gpusched_place_result_nodes(res, &gn, &gm, &gk), 0);
    gpusched_job gang = GPUSCHED_JOB_INIT;
    gang.id = PREEMPTOR;
    cr_assert_eq(gpusched_cluster_allocate(sim, &gang, gk, gn, gm), 0, "%s", gpusched_cluster_errmsg(sim));
    for (uint32_t i = 0; i < nm; i++) {
        uint64_t id;
        const uint32_t *nodes;
        const uint64_t *masks;
        uint32_t n;
        cr_assert_eq(gpusched_preempt_plan_move(plan, i, &id, &nodes, &masks, &n), 0);
        uint32_t g = 0;
        for (uint32_t k = 0; k < n; k++)
            g += (uint32_t)__builtin_popcountll(masks[k]);
        uint32_t old = 0;
        for (uint32_t k = 0; k < s.jobs[id - 100].n; k++)
            old += (uint32_t)__builtin_popcountll(s.jobs[id - 100].masks[k]);
        cr_assert_eq(g, old, "job %llu moves with %u GPUs, held %u", (unsigned long long)id, g, old);
        cr_assert_eq(gpusched_cluster_allocate(sim, &s.jobs[id - 100].j, n, nodes, masks), 0, "mover %llu: %s",
                     (unsigned long long)id, gpusched_cluster_errmsg(sim));
    }
    /* The commit is the plan. */
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_eq(gpusched_placer_defrag(p, &q, res, plan), 0, "%s", gpusched_placer_errmsg(p));
    cr_assert_eq(gpusched_place_result_committed(res), 1);
    cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
    for (uint32_t i = 0; i < s.njobs; i++) {
        const uint32_t *a, *b;
        const uint64_t *am, *bm;
        uint32_t an, bn, ag, bg;
        uint64_t id = 100 + i;
        cr_assert_eq(gpusched_cluster_job_allocation(c, id, &a, &am, &an, &ag), 0);
        cr_assert_eq(gpusched_cluster_job_allocation(sim, id, &b, &bm, &bn, &bg), 0);
        cr_assert_eq(an, bn);
        for (uint32_t k = 0; k < an; k++) {
            cr_assert_eq(a[k], b[k]);
            cr_assert_eq(am[k], bm[k]);
        }
    }
    gpusched_cluster_unref(sim);
out:
    pp_close(&run, &s);
}

Test(preempt_property, defrag_plans_are_sound, .timeout = 240)
{
    pt_rng r = {0xdef7a6ull};
    uint32_t planned = 0, with_moves = 0, none = 0;
    for (uint32_t i = 0; i < 40000; i++)
        one_defrag(&r, &planned, &with_moves, &none);
    cr_log_info("%u planned (%u with moves), %u without a plan", planned, with_moves, none);
    cr_assert_gt(with_moves, 300);
    cr_assert_gt(none, 300);
}
