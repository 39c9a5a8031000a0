/* The preemption API function by function: lifetimes and bad arguments
 * (code, message, nothing changed), plans without victims, eligibility,
 * the cheapest domain, victims the gang does not need, the job's own
 * reservation, commit, and allocation failures on every path. */
#include "cluster-test.h"
#include "failalloc.h"
#include "place-test.h"

/* 2 blocks x 3 racks x 4 nodes x 4 GPUs; every node held by a one-node
 * job of 4 GPUs (ids 100 + node), preemptible, priority 0, cost 10,
 * unless a test changes it. */
typedef struct env {
    pt_env e;
    gpusched_preempt_plan *plan;
} env;

static void add_job(env *x, uint64_t id, uint32_t node, uint64_t mask, int32_t prio, uint64_t cost, uint32_t flags)
{
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = id;
    j.priority = prio;
    j.cost_hint = cost;
    j.flags = flags;
    cr_assert_eq(gpusched_cluster_alloc(x->e.c, &j, 1, &node, &mask), 0, "%s", gpusched_cluster_errmsg(x->e.c));
}

static env env_empty(void)
{
    env x = {pt_env_on(ct_uniform()), NULL};
    cr_assert_eq(gpusched_preempt_plan_new(NULL, &x.plan), 0);
    return x;
}

static env env_full(void)
{
    env x = env_empty();
    for (uint32_t n = 0; n < 24; n++)
        add_job(&x, 100 + n, n, 0xf, 0, 10, GPUSCHED_JOB_PREEMPTIBLE);
    return x;
}

static void env_free(env *x)
{
    gpusched_preempt_plan_free(x->plan);
    pt_env_free(&x->e);
}

/* 8 GPUs as two pods of 4 in one rack, priority 5. */
static gpusched_place_request gang8(void)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job_id = 1;
    q.gpus = 8;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = 4;
    q.required_level = 1;
    q.priority = 5;
    return q;
}

static void victims_are(env *x, const uint64_t *want, uint32_t nwant)
{
    const uint64_t *ids;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_victims(x->plan, &ids, &n), 0);
    cr_assert_eq(n, nwant, "%u victims, expected %u", n, nwant);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(ids[i], want[i], "victim %u is %llu, expected %llu", i, (unsigned long long)ids[i],
                     (unsigned long long)want[i]);
}

static void nodes_are(env *x, const uint32_t *want, uint32_t nwant)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_place_result_nodes(x->e.res, &nodes, &masks, &n), 0);
    cr_assert_eq(n, nwant);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(nodes[i], want[i], "node %u is %u, expected %u", i, nodes[i], want[i]);
}

#define PLAN_OK(x, q)                                                                              \
    do {                                                                                           \
        uint64_t before_ = ct_fingerprint((x)->e.c);                                               \
        int rc_ = gpusched_placer_preempt((x)->e.p, (q), (x)->e.res, (x)->plan);                   \
        cr_assert_eq(rc_, 0, "%s: %s / %s", gpusched_err_name(rc_), gpusched_placer_errmsg((x)->e.p), \
                     gpusched_place_result_message((x)->e.res));                                   \
        cr_assert_eq(ct_fingerprint((x)->e.c), before_, "a plan-only preemption changed the state"); \
    } while (0)

#define REJECT(x, q, code, msg)                                                                    \
    do {                                                                                           \
        uint64_t before_ = ct_fingerprint((x)->e.c);                                               \
        int rc_ = gpusched_placer_preempt((x)->e.p, (q), (x)->e.res, (x)->plan);                   \
        cr_assert_eq(rc_, (code), "got %s: %s", gpusched_err_name(rc_), gpusched_placer_errmsg((x)->e.p)); \
        cr_assert_str_eq(gpusched_placer_errmsg((x)->e.p), (msg));                                 \
        cr_assert_eq(ct_fingerprint((x)->e.c), before_, "the state changed");                      \
    } while (0)

Test(preempt, lifetimes_and_bad_arguments)
{
    env x = env_full();
    gpusched_preempt_plan *p2 = NULL;
    gpusched_allocator bad = GPUSCHED_ALLOCATOR_INIT;
    cr_assert_eq(gpusched_preempt_plan_new(NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_new(&bad, &p2), GPUSCHED_EINVAL);
    cr_assert_null(p2);
    gpusched_preempt_plan_free(NULL);

    /* A fresh plan holds nothing. */
    const uint64_t *ids = (const uint64_t *)&x;
    uint32_t n = 7;
    uint64_t cost = 1, gpus = 1;
    cr_assert_eq(gpusched_preempt_plan_victims(x.plan, &ids, &n), 0);
    cr_assert_null(ids);
    cr_assert_eq(n, 0);
    cr_assert_eq(gpusched_preempt_plan_totals(x.plan, &cost, &gpus), 0);
    cr_assert_eq(cost, 0);
    cr_assert_eq(gpus, 0);
    cr_assert_eq(gpusched_preempt_plan_totals(x.plan, NULL, NULL), 0);
    cr_assert_eq(gpusched_preempt_plan_victims(NULL, &ids, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_victims(x.plan, NULL, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_victims(x.plan, &ids, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_totals(NULL, &cost, &gpus), GPUSCHED_EINVAL);

    gpusched_place_request q = gang8();
    cr_assert_eq(gpusched_placer_preempt(NULL, &q, x.e.res, x.plan), GPUSCHED_EINVAL);
    REJECT(&x, NULL, GPUSCHED_EINVAL, "preempt: request is NULL");
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, NULL, x.plan), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "preempt: result is NULL");
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, x.e.res, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "preempt: plan is NULL");

    /* Request errors are the placement's, with nothing changed. */
    q.gpus = 0;
    REJECT(&x, &q, GPUSCHED_EINVAL, "place request: gpus is 0");
    q = gang8();
    q.required_level = 9;
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, x.e.res, x.plan), GPUSCHED_ERANGE);
    q = gang8();
    q.job_id = 100; /* running */
    q.flags = GPUSCHED_PLACE_COMMIT;
    REJECT(&x, &q, GPUSCHED_EEXIST, "place request: job 100 is already running");
    env_free(&x);
}

Test(preempt, no_victim_when_the_gang_fits)
{
    env x = env_full();
    cr_assert_eq(gpusched_cluster_release(x.e.c, 105), 0);
    cr_assert_eq(gpusched_cluster_release(x.e.c, 106), 0);
    gpusched_place_request q = gang8();
    PLAN_OK(&x, &q);
    victims_are(&x, NULL, 0);
    const uint32_t want[] = {5, 6};
    nodes_are(&x, want, 2);
    uint64_t cost = 1, gpus = 1;
    cr_assert_eq(gpusched_preempt_plan_totals(x.plan, &cost, &gpus), 0);
    cr_assert_eq(cost + gpus, 0);
    cr_assert_eq(gpusched_place_result_committed(x.e.res), 0);
    env_free(&x);
}

Test(preempt, cheapest_rack_and_cheapest_victims)
{
    env x = env_full();
    /* Rack 4 (nodes 16..19) is the cheapest to clear; inside it, nodes 17
     * and 19 cost least. */
    cr_assert_eq(gpusched_cluster_release(x.e.c, 117), 0);
    cr_assert_eq(gpusched_cluster_release(x.e.c, 119), 0);
    add_job(&x, 117, 17, 0xf, 0, 1, GPUSCHED_JOB_PREEMPTIBLE);
    add_job(&x, 119, 19, 0xf, 0, 2, GPUSCHED_JOB_PREEMPTIBLE);
    gpusched_place_request q = gang8();
    PLAN_OK(&x, &q);
    const uint64_t want[] = {117, 119};
    victims_are(&x, want, 2);
    const uint32_t nodes[] = {17, 19};
    nodes_are(&x, nodes, 2);
    uint64_t cost, gpus;
    cr_assert_eq(gpusched_preempt_plan_totals(x.plan, &cost, &gpus), 0);
    cr_assert_eq(cost, 3);
    cr_assert_eq(gpus, 8);
    env_free(&x);
}

Test(preempt, only_lower_priority_preemptible_jobs)
{
    env x = env_full();
    /* The cheap jobs are not eligible: one not preemptible, one of equal
     * priority, one of higher priority. */
    cr_assert_eq(gpusched_cluster_release(x.e.c, 101), 0);
    cr_assert_eq(gpusched_cluster_release(x.e.c, 102), 0);
    cr_assert_eq(gpusched_cluster_release(x.e.c, 103), 0);
    add_job(&x, 101, 1, 0xf, 0, 0, 0);
    add_job(&x, 102, 2, 0xf, 5, 0, GPUSCHED_JOB_PREEMPTIBLE);
    add_job(&x, 103, 3, 0xf, 9, 0, GPUSCHED_JOB_PREEMPTIBLE);
    gpusched_place_request q = gang8();
    PLAN_OK(&x, &q);
    const uint64_t *ids;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_victims(x.plan, &ids, &n), 0);
    cr_assert_eq(n, 2);
    for (uint32_t i = 0; i < n; i++)
        cr_assert(ids[i] != 101 && ids[i] != 102 && ids[i] != 103, "ineligible victim %llu",
                  (unsigned long long)ids[i]);
    /* Ties everywhere else: the lowest rack, then the lowest ids. */
    const uint64_t want[] = {104, 105};
    victims_are(&x, want, 2);

    /* Nothing eligible at all: the result explains the placement. */
    q.priority = 0;
    REJECT(&x, &q, GPUSCHED_ENOSPC, "");
    cr_assert_eq(gpusched_place_result_reason(x.e.res), GPUSCHED_PLACE_NO_GPUS);
    victims_are(&x, NULL, 0);
    env_free(&x);
}

Test(preempt, victims_the_gang_does_not_need_are_spared)
{
    env x = env_full();
    /* Node 8 holds a free victim of 2 GPUs (cost 0) next to a job that
     * cannot be preempted; node 9 a victim of 4 (cost 1). The victims are
     * taken cheapest first, so both are lent before the gang fits (on node
     * 9); the one on node 8 is then spared: the gang does not need it. */
    cr_assert_eq(gpusched_cluster_release(x.e.c, 108), 0);
    add_job(&x, 108, 8, 0x3, 0, 0, GPUSCHED_JOB_PREEMPTIBLE);
    add_job(&x, 130, 8, 0xc, 0, 0, 0);
    cr_assert_eq(gpusched_cluster_release(x.e.c, 109), 0);
    add_job(&x, 109, 9, 0xf, 0, 1, GPUSCHED_JOB_PREEMPTIBLE);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job_id = 1;
    q.gpus = 4;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = 4;
    q.priority = 1;
    PLAN_OK(&x, &q);
    const uint64_t want[] = {109};
    victims_are(&x, want, 1);
    const uint32_t nodes[] = {9};
    nodes_are(&x, nodes, 1);
    env_free(&x);
}

Test(preempt, large_gang_clears_the_cheapest_racks)
{
    env x = env_full();
    /* Racks 1 and 3 cost 1 per job, the others 10; a gang of two whole
     * racks (slices of 16 per rack) evicts exactly those. */
    for (uint32_t n = 4; n < 8; n++) {
        cr_assert_eq(gpusched_cluster_release(x.e.c, 100 + n), 0);
        add_job(&x, 100 + n, n, 0xf, 0, 1, GPUSCHED_JOB_PREEMPTIBLE);
    }
    for (uint32_t n = 12; n < 16; n++) {
        cr_assert_eq(gpusched_cluster_release(x.e.c, 100 + n), 0);
        add_job(&x, 100 + n, n, 0xf, 0, 1, GPUSCHED_JOB_PREEMPTIBLE);
    }
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job_id = 1;
    q.gpus = 32;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.slice_gpus[0] = 16;
    q.slice_level[0] = 1;
    q.priority = 1;
    PLAN_OK(&x, &q);
    const uint64_t want[] = {104, 105, 106, 107, 112, 113, 114, 115};
    victims_are(&x, want, 8);
    uint64_t cost, gpus;
    cr_assert_eq(gpusched_preempt_plan_totals(x.plan, &cost, &gpus), 0);
    cr_assert_eq(cost, 8);
    cr_assert_eq(gpus, 32);
    env_free(&x);
}

Test(preempt, the_jobs_own_reservation_counts)
{
    env x = env_full();
    /* Job 1 holds a reservation of node 20's GPUs (its job released to it). */
    cr_assert_eq(gpusched_cluster_release_to_resv(x.e.c, 120, 1), 0);
    gpusched_place_request q = gang8();
    PLAN_OK(&x, &q);
    const uint64_t *ids;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_victims(x.plan, &ids, &n), 0);
    cr_assert_eq(n, 1, "the reservation holds one of the two pods: one victim, got %u", n);
    cr_assert_eq(ids[0], 121);
    env_free(&x);
}

Test(preempt, commit_releases_the_victims_and_runs_the_gang)
{
    env x = env_full();
    gpusched_place_request q = gang8();
    q.flags = GPUSCHED_PLACE_COMMIT;
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, x.e.res, x.plan), 0, "%s", gpusched_placer_errmsg(x.e.p));
    const uint64_t want[] = {100, 101};
    victims_are(&x, want, 2);
    cr_assert_eq(gpusched_place_result_committed(x.e.res), 1);
    gpusched_job j = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(x.e.c, 100, &j), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_cluster_job_find(x.e.c, 101, &j), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_cluster_job_find(x.e.c, 1, &j), 0);
    cr_assert_eq(j.priority, 5);
    cr_assert_eq(gpusched_cluster_job_count(x.e.c), 23);
    cr_assert_eq(gpusched_cluster_check(x.e.c), 0, "%s", gpusched_cluster_errmsg(x.e.c));

    /* The next one of equal priority cannot take the new job's GPUs. */
    q.job_id = 2;
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, x.e.res, x.plan), 0);
    const uint64_t want2[] = {102, 103};
    victims_are(&x, want2, 2);
    cr_assert_eq(gpusched_cluster_check(x.e.c), 0, "%s", gpusched_cluster_errmsg(x.e.c));
    env_free(&x);
}

/* ---- allocation failures ------------------------------------------------- */

typedef struct oom_ctx {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    uint64_t before;
    bool commit;
} oom_ctx;

/* One failing allocator for the cluster, the placer, the result and the
 * plan: the k-th allocation of the preemption itself fails (the setup's
 * are not counted), including the commit's in the cluster. */
static void oom_undo(void *ctx);

static int oom_op(failalloc *fa, void *ctx)
{
    oom_ctx *o = ctx;
    long k = fa->fail_at;
    fa->fail_at = -1;
    cr_assert_eq(gpusched_cluster_new(o->t, &fa->a, &o->c), 0);
    for (uint32_t n = 0; n < 24; n++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = 100 + n;
        j.flags = GPUSCHED_JOB_PREEMPTIBLE;
        uint64_t m = 0xf;
        cr_assert_eq(gpusched_cluster_alloc(o->c, &j, 1, &n, &m), 0);
    }
    o->before = ct_fingerprint(o->c);
    fa->fail_at = fa->count + k;
    int rc = gpusched_placer_new(o->c, &fa->a, &o->p);
    if (!rc)
        rc = gpusched_place_result_new(&fa->a, &o->res);
    if (!rc)
        rc = gpusched_preempt_plan_new(&fa->a, &o->plan);
    if (!rc) {
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        q.job_id = 1;
        q.gpus = 16;
        q.split = GPUSCHED_SPLIT_WHOLE_NODES;
        q.slice_gpus[0] = 8;
        q.slice_level[0] = 1;
        q.priority = 1;
        q.flags = o->commit ? GPUSCHED_PLACE_COMMIT : 0;
        rc = gpusched_placer_preempt(o->p, &q, o->res, o->plan);
        fa->fail_at = -1; /* the checks below allocate */
        if (rc || !o->commit)
            cr_assert_eq(ct_fingerprint(o->c), o->before, "a failed or plan-only preemption changed the state");
        else
            cr_assert_eq(gpusched_cluster_job_count(o->c), 24 - 4 + 1);
        cr_assert_eq(gpusched_cluster_check(o->c), 0);
    }
    if (rc)
        oom_undo(o); /* the sweep undoes successes only */
    return rc;
}

static void oom_undo(void *ctx)
{
    oom_ctx *o = ctx;
    gpusched_preempt_plan_free(o->plan);
    gpusched_place_result_free(o->res);
    gpusched_placer_free(o->p);
    gpusched_cluster_free(o->c);
    o->plan = NULL;
    o->res = NULL;
    o->p = NULL;
    o->c = NULL;
}

Test(preempt, out_of_memory_changes_nothing)
{
    oom_ctx o = {.t = ct_uniform()};
    cr_assert_gt(failalloc_sweep(oom_op, oom_undo, &o), 3);
    o.commit = true;
    cr_assert_gt(failalloc_sweep(oom_op, oom_undo, &o), 3);
    gpusched_topo_unref(o.t);
}
