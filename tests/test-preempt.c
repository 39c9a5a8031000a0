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
    cr_assert_eq(gpusched_cluster_allocate(x->e.c, &j, 1, &node, &mask), 0, "%s", gpusched_cluster_errmsg(x->e.c));
}

/* Job `id` protected from preemption until `until`. */
static void protect(env *x, uint64_t id, int64_t until)
{
    gpusched_job j = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(x->e.c, id, &j), 0);
    j.protected_until = until;
    cr_assert_eq(gpusched_cluster_job_update(x->e.c, &j), 0);
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
        add_job(&x, 100 + n, n, 0xf, 0, 10, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    return x;
}

static void env_free(env *x)
{
    gpusched_preempt_plan_free(x->plan);
    pt_env_free(&x->e);
}

/* 8 GPUs as two pods of 4 in one rack, job 1 of priority 5. The job's
 * descriptor goes into *job, which the request points to: *job must
 * outlive every use of the request. */
static gpusched_place_request gang8(gpusched_job *job)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    pt_req_job(&q, job, 1)->priority = 5;
    q.gpus = 8;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = 4;
    q.required_level = 1;
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

    gpusched_job job;
    gpusched_place_request q = gang8(&job);
    cr_assert_eq(gpusched_placer_preempt(NULL, &q, x.e.res, x.plan), GPUSCHED_EINVAL);
    REJECT(&x, NULL, GPUSCHED_EINVAL, "preempt: request is NULL");
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, NULL, x.plan), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "preempt: result is NULL");
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, x.e.res, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "preempt: plan is NULL");

    /* Request errors are the placement's, with nothing changed. */
    q.gpus = 0;
    REJECT(&x, &q, GPUSCHED_EINVAL, "place request: gpus is 0");
    q = gang8(&job);
    q.required_level = 9;
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, x.e.res, x.plan), GPUSCHED_ERANGE);
    q = gang8(&job);
    job.id = 100; /* running */
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    REJECT(&x, &q, GPUSCHED_EEXIST, "place request: job 100 is already running");
    env_free(&x);
}

Test(preempt, no_victim_when_the_gang_fits)
{
    env x = env_full();
    cr_assert_eq(gpusched_cluster_release(x.e.c, 105), 0);
    cr_assert_eq(gpusched_cluster_release(x.e.c, 106), 0);
    gpusched_job job;
    gpusched_place_request q = gang8(&job);
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
    add_job(&x, 117, 17, 0xf, 0, 1, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    add_job(&x, 119, 19, 0xf, 0, 2, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    gpusched_job job;
    gpusched_place_request q = gang8(&job);
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
    add_job(&x, 102, 2, 0xf, 5, 0, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    add_job(&x, 103, 3, 0xf, 9, 0, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    gpusched_job job;
    gpusched_place_request q = gang8(&job);
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
    job.priority = 0;
    REJECT(&x, &q, GPUSCHED_ENOSPC, "");
    cr_assert_eq(gpusched_place_result_reason(x.e.res), GPUSCHED_REASON_NO_GPUS);
    victims_are(&x, NULL, 0);
    env_free(&x);
}

/* Refused before any search when the GPUs of every eligible victim, with
 * the free ones and the gang's own reservation, are too few per domain:
 * the result says which constraint and by how much, protection is still
 * reported, and one more evictable rack lets the plan through. */
Test(preempt, a_gang_too_big_even_with_every_victim_gone_is_refused_with_numbers)
{
    env x = env_full();
    /* One node of every rack runs a job that cannot be evicted: a rack can
     * offer at most 12 of its 16 GPUs. Node 4's job is protected. */
    for (uint32_t rack = 0; rack < 6; rack++) {
        cr_assert_eq(gpusched_cluster_release(x.e.c, 100 + 4 * rack + 3), 0);
        add_job(&x, 100 + 4 * rack + 3, 4 * rack + 3, 0xf, 9, 10, 0);
    }
    protect(&x, 104, 50);

    gpusched_job job;
    gpusched_place_request q = gang8(&job);
    q.gpus = 32;
    q.required_level = GPUSCHED_NONE;
    q.slice_gpus[0] = 16;
    q.slice_level[0] = 1;
    REJECT(&x, &q, GPUSCHED_ENOSPC, "");
    cr_assert_eq(gpusched_place_result_reason(x.e.res), GPUSCHED_REASON_SLICES);
    cr_assert_str_eq(gpusched_place_result_message(x.e.res),
                     "slices of 16 GPUs at rack: with every eligible victim gone the racks would hold 0 of 2");
    victims_are(&x, NULL, 0);
    uint32_t pj = 0;
    uint64_t pg = 0;
    cr_assert_eq(gpusched_preempt_plan_protected(x.plan, &pj, &pg, NULL), 0);
    cr_assert_eq(pj, 1);
    cr_assert_eq(pg, 4);

    /* The whole gang in one rack: the best rack would have 12 of 16. */
    q.gpus = 16;
    q.slice_gpus[0] = 0;
    q.slice_level[0] = GPUSCHED_NONE;
    q.required_level = 1;
    REJECT(&x, &q, GPUSCHED_ENOSPC, "");
    cr_assert_eq(gpusched_place_result_reason(x.e.res), GPUSCHED_REASON_REQUIRED);
    cr_assert_str_eq(gpusched_place_result_message(x.e.res),
                     "required rack: with every eligible victim gone the best rack would have 12 of 16 GPUs");
    /* More GPUs than the cluster could free at all: 17 nodes of 4 (the
     * 18 evictable less the protected one). */
    q.gpus = 70;
    q.split = GPUSCHED_SPLIT_ANY;
    q.pod_gpus = 0;
    q.required_level = GPUSCHED_NONE;
    REJECT(&x, &q, GPUSCHED_ENOSPC, "");
    cr_assert_eq(gpusched_place_result_reason(x.e.res), GPUSCHED_REASON_NO_GPUS);
    cr_assert_str_eq(gpusched_place_result_message(x.e.res),
                     "70 GPUs asked; with every eligible victim gone the cluster would have 68");

    /* The gang's own reservation counts: node 11's job released to it
     * makes rack 2 whole (its 4 GPUs plus 12 of victims). */
    cr_assert_eq(gpusched_cluster_release(x.e.c, 111), 0);
    add_job(&x, 111, 11, 0xf, 0, 10, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    cr_assert_eq(gpusched_cluster_release_to_resv(x.e.c, 111, 1), 0);
    q.gpus = 16;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = 4;
    q.required_level = 1;
    PLAN_OK(&x, &q);
    const uint64_t rack2[] = {108, 109, 110};
    victims_are(&x, rack2, 3);
    env_free(&x);
}

/* A cluster on the topology of `text`, with a plan. */
static env env_text(const char *text)
{
    gpusched_topo *t;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, strlen(text), NULL, &t, err, sizeof err), 0, "%s", err);
    env x = {pt_env_on(t), NULL};
    cr_assert_eq(gpusched_preempt_plan_new(NULL, &x.plan), 0);
    return x;
}

/* The case: one 5-GPU node, job 1 of priority 2 on GPUs 0-1, job
 * 2 of priority 1 on GPUs 2-3, both preemptible at cost 0; 2 GPUs at
 * priority 3. Priority first evicts the lower priority; cost first ties on
 * cost and GPUs and takes the lower id. */
Test(preempt, priority_first_evicts_the_lowest_priority)
{
    env x = env_text("levels rack\nnode r0 n0 gpus=5\n");
    add_job(&x, 1, 0, 0x3, 2, 0, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    add_job(&x, 2, 0, 0xc, 1, 0, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    add_job(&x, 3, 0, 0x10, 0, 0, 0);
    gpusched_job job;
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    pt_req_job(&q, &job, 9)->priority = 3;
    q.gpus = 2;
    PLAN_OK(&x, &q);
    const uint64_t low[] = {2};
    victims_are(&x, low, 1);
    uint32_t exact = 0;
    uint64_t lb = 99;
    cr_assert_eq(gpusched_preempt_plan_optimality(x.plan, &exact, &lb), 0);
    cr_assert_eq(exact, 1);
    cr_assert_eq(lb, 0);
    q.preempt_policy = GPUSCHED_PREEMPT_COST_FIRST;
    PLAN_OK(&x, &q);
    const uint64_t first[] = {1};
    victims_are(&x, first, 1);
    /* A cost hint decides under cost first, never under priority first. */
    gpusched_job j2 = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(x.e.c, 2, &j2), 0);
    j2.cost_hint = 50;
    cr_assert_eq(gpusched_cluster_job_update(x.e.c, &j2), 0);
    PLAN_OK(&x, &q);
    victims_are(&x, first, 1);
    q.preempt_policy = GPUSCHED_PREEMPT_PRIORITY_FIRST;
    PLAN_OK(&x, &q);
    victims_are(&x, low, 1);
    uint64_t cost = 0;
    cr_assert_eq(gpusched_preempt_plan_totals(x.plan, &cost, NULL), 0);
    cr_assert_eq(cost, 50);
    /* 4 GPUs need both: the highest priority evicted is then 2. */
    q.gpus = 4;
    PLAN_OK(&x, &q);
    const uint64_t both[] = {1, 2};
    victims_are(&x, both, 2);
    q.preempt_policy = 2;
    REJECT(&x, &q, GPUSCHED_EINVAL, "place request: preempt_policy 2 unknown (0 to 1)");
    env_free(&x);
}

/* Victims of two priorities, and a gang the bound lets through (it reads
 * avoided nodes only for gangs of whole domains) that fits with no tier
 * lent: the first what-if, every victim lent, ends the call with the
 * placement's reason as it is then; the same gang without the avoided
 * node takes the lower tier. */
Test(preempt, priority_first_fails_when_no_tier_fits)
{
    env x = env_text("levels rack\nnode r0 n0 gpus=4\nnode r0 n1 gpus=4\n");
    add_job(&x, 1, 0, 0x3, 1, 0, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    add_job(&x, 2, 0, 0xc, 2, 0, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    add_job(&x, 3, 1, 0xf, 1, 0, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    gpusched_job job;
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    pt_req_job(&q, &job, 9)->priority = 3;
    q.preempt_policy = GPUSCHED_PREEMPT_PRIORITY_FIRST;
    q.gpus = 5;
    const uint32_t avoid[] = {1};
    q.avoid_nodes = avoid;
    q.avoid_count = 1;
    REJECT(&x, &q, GPUSCHED_ENOSPC, "");
    const uint64_t *ids;
    uint32_t n = 9;
    cr_assert_eq(gpusched_preempt_plan_victims(x.plan, &ids, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(gpusched_place_result_reason(x.e.res), GPUSCHED_REASON_ELIGIBLE);
    cr_assert_str_eq(gpusched_place_result_message(x.e.res),
                     "gpu class, labels and avoided nodes leave 4 eligible free GPUs, 5 asked");
    /* Without the avoided node, priority 1 (jobs 1 and 3) is enough. */
    q.avoid_nodes = NULL;
    q.avoid_count = 0;
    PLAN_OK(&x, &q);
    const uint64_t low[] = {1, 3};
    victims_are(&x, low, 2);
    env_free(&x);
}

/* Four racks of two 4-GPU nodes, and a gang of whole racks on them (job
 * 9, priority 5): the whole-domain count's cases (search.c, bound.c). */
static env env_four_racks(void)
{
    return env_text("levels rack\n"
                    "node r0 n0 gpus=4\nnode r0 n1 gpus=4\nnode r1 n2 gpus=4\nnode r1 n3 gpus=4\n"
                    "node r2 n4 gpus=4\nnode r2 n5 gpus=4\nnode r3 n6 gpus=4\nnode r3 n7 gpus=4\n");
}

static gpusched_place_request whole_racks(gpusched_job *job, uint32_t gpus)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    pt_req_job(&q, job, 9)->priority = 5;
    q.gpus = gpus;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.slice_gpus[0] = 8;
    q.slice_level[0] = 0;
    return q;
}

/* A gang of whole racks (slices of a rack's 8 GPUs, no required level):
 * the search counts where enough racks are wholly free without lending
 * and probes there first (search.c, whole_domains_hint). The plan is the
 * cheapest whether that count is right, too low (a node down, whose GPUs
 * the count adds when its job goes) or too high (the gang's own
 * reservation holds a rack the count sees as taken). */
Test(preempt, whole_racks_take_the_cheapest_racks)
{
    env x = env_four_racks();
    /* Jobs 1 to 8, one per node; job 1 is no victim, so the cheapest
     * victim (job 2) is in a rack that never becomes whole, and rack r
     * costs r + 1 per job. */
    for (uint32_t n = 0; n < 8; n++)
        add_job(&x, n + 1, n, 0xf, 0, n / 2 + 1, n ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0);
    gpusched_job job;
    gpusched_place_request q = whole_racks(&job, 16);
    PLAN_OK(&x, &q);
    const uint64_t r12[] = {3, 4, 5, 6};
    victims_are(&x, r12, 4);
    /* Node n3 down: r1 is never whole though the count adds job 4's GPUs
     * (too low a count); r2 and r3 go. */
    uint64_t hit[2];
    uint32_t nhit = 0;
    cr_assert_eq(gpusched_cluster_node_health_set(x.e.c, 3, GPUSCHED_NODE_DOWN, hit, 2, &nhit), 0);
    cr_assert_eq(nhit, 1, "job 4 runs on n3");
    PLAN_OK(&x, &q);
    const uint64_t r23[] = {5, 6, 7, 8};
    victims_are(&x, r23, 4);
    /* n3 up again, and rack r3 released to the gang's own reservation,
     * which the count sees as taken (too high a count): r1 is enough. */
    cr_assert_eq(gpusched_cluster_node_health_set(x.e.c, 3, GPUSCHED_NODE_UP, hit, 2, &nhit), 0);
    cr_assert_eq(gpusched_cluster_release_to_resv(x.e.c, 7, 9), 0);
    cr_assert_eq(gpusched_cluster_release_to_resv(x.e.c, 8, 9), 0);
    PLAN_OK(&x, &q);
    const uint64_t r1[] = {3, 4};
    victims_are(&x, r1, 2);
    env_free(&x);
}

/* A gang of whole racks that avoids nodes: a rack with an avoided node
 * never holds one of its slices, so the bound says so before any victim
 * is lent, in numbers. */
Test(preempt, whole_racks_around_avoided_nodes_fail_at_the_bound)
{
    env x = env_four_racks();
    for (uint32_t n = 0; n < 8; n++)
        add_job(&x, n + 1, n, 0xf, 0, 1, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    gpusched_job job;
    gpusched_place_request q = whole_racks(&job, 24);
    const uint32_t avoid[] = {1, 2, 1};
    q.avoid_nodes = avoid;
    q.avoid_count = 3;
    REJECT(&x, &q, GPUSCHED_ENOSPC, "");
    cr_assert_eq(gpusched_place_result_reason(x.e.res), GPUSCHED_REASON_SLICES);
    cr_assert_str_eq(gpusched_place_result_message(x.e.res),
                     "slices of 8 GPUs at rack: with every eligible victim gone the racks without an avoided node "
                     "would hold 2 of 3");
    /* Avoiding one rack's node only, three racks are left: r1, r2, r3. */
    q.avoid_count = 1;
    PLAN_OK(&x, &q);
    const uint64_t want[] = {3, 4, 5, 6, 7, 8};
    victims_are(&x, want, 6);
    env_free(&x);
}

/* A job protected until a time is not a victim before it; the plan says
 * what protection kept out. */
Test(preempt, protected_jobs_are_not_victims_until_their_time)
{
    env x = env_full();
    /* Rack 0 (nodes 0-3) is the cheapest; protect two of its jobs. */
    for (uint32_t n = 0; n < 4; n++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        cr_assert_eq(gpusched_cluster_job_find(x.e.c, 100 + n, &j), 0);
        j.cost_hint = 1;
        j.protected_until = n < 2 ? 1000 : 0;
        cr_assert_eq(gpusched_cluster_job_update(x.e.c, &j), 0);
    }
    gpusched_job job;
    gpusched_place_request q = gang8(&job);
    q.now = 999;
    PLAN_OK(&x, &q);
    const uint64_t unprotected[] = {102, 103};
    victims_are(&x, unprotected, 2);
    uint32_t pj = 0;
    uint64_t pg = 0;
    int64_t until = 0;
    cr_assert_eq(gpusched_preempt_plan_protected(x.plan, &pj, &pg, &until), 0);
    cr_assert_eq(pj, 2);
    cr_assert_eq(pg, 8);
    cr_assert_eq(until, 1000);
    /* 16 GPUs in a rack: rack 0 cannot, protected; another rack, at cost 40. */
    q.gpus = 16;
    PLAN_OK(&x, &q);
    const uint64_t rack1[] = {104, 105, 106, 107};
    victims_are(&x, rack1, 4);
    q.now = 1000;
    PLAN_OK(&x, &q);
    const uint64_t rack0[] = {100, 101, 102, 103};
    victims_are(&x, rack0, 4);
    cr_assert_eq(gpusched_preempt_plan_protected(x.plan, &pj, NULL, &until), 0);
    cr_assert_eq(pj, 0);
    cr_assert_eq(until, 0);
    cr_assert_eq(gpusched_preempt_plan_protected(NULL, &pj, NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_optimality(NULL, NULL, NULL), GPUSCHED_EINVAL);
    /* The descriptor keeps its protection through snapshot and restore. */
    size_t len = 0;
    cr_assert_eq(gpusched_cluster_snapshot(x.e.c, NULL, 0, &len), GPUSCHED_ERANGE);
    void *buf = malloc(len);
    cr_assert_eq(gpusched_cluster_snapshot(x.e.c, buf, len, &len), 0);
    gpusched_cluster *back;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(buf, len, NULL, &back, err, sizeof err), 0, "%s", err);
    gpusched_job j = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(back, 100, &j), 0);
    cr_assert_eq(j.protected_until, 1000);
    gpusched_cluster_unref(back);
    free(buf);
    env_free(&x);
}

/* The plan is reused from call to call: a gang that fits as the cluster is
 * (no victims collected) reports no protection, and a defragmentation
 * neither protection nor the optimality of an earlier preemption. */
Test(preempt, what_an_earlier_call_reported_is_not_left)
{
    env x = env_full();
    protect(&x, 100, 1000);
    gpusched_job job;
    gpusched_place_request q = gang8(&job);
    PLAN_OK(&x, &q);
    uint32_t pj = 0, exact = 0;
    uint64_t pg = 0, lb = 0;
    int64_t until = 0;
    cr_assert_eq(gpusched_preempt_plan_protected(x.plan, &pj, &pg, &until), 0);
    cr_assert_eq(pj, 1);
    cr_assert_eq(gpusched_preempt_plan_optimality(x.plan, &exact, &lb), 0);
    cr_assert_eq(exact, 1);
    cr_assert_gt(lb, 0);
    /* Rack 5 (nodes 20-23) gets 8 free GPUs: the gang fits there as is. */
    cr_assert_eq(gpusched_cluster_release(x.e.c, 120), 0);
    cr_assert_eq(gpusched_cluster_release(x.e.c, 121), 0);
    PLAN_OK(&x, &q);
    victims_are(&x, NULL, 0);
    cr_assert_eq(gpusched_preempt_plan_protected(x.plan, &pj, &pg, &until), 0);
    cr_assert_eq(pj, 0);
    cr_assert_eq(pg, 0);
    cr_assert_eq(until, 0);
    cr_assert_eq(gpusched_preempt_plan_optimality(x.plan, &exact, &lb), 0);
    cr_assert_eq(exact, 1);
    cr_assert_eq(lb, 0);
    /* A preemption with protection again, then a defragmentation. */
    cr_assert_eq(gpusched_cluster_release(x.e.c, 122), 0);
    q.gpus = 16;
    q.required_level = GPUSCHED_NONE;
    PLAN_OK(&x, &q);
    cr_assert_eq(gpusched_preempt_plan_protected(x.plan, &pj, NULL, NULL), 0);
    cr_assert_eq(pj, 1);
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), GPUSCHED_ENOSPC);
    cr_assert_eq(gpusched_preempt_plan_protected(x.plan, &pj, &pg, &until), 0);
    cr_assert_eq(pj + pg + (uint64_t)until, 0);
    cr_assert_eq(gpusched_preempt_plan_optimality(x.plan, &exact, &lb), 0);
    cr_assert_eq(exact + lb, 0);
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
    add_job(&x, 108, 8, 0x3, 0, 0, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    add_job(&x, 130, 8, 0xc, 0, 0, 0);
    cr_assert_eq(gpusched_cluster_release(x.e.c, 109), 0);
    add_job(&x, 109, 9, 0xf, 0, 1, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    pt_req_job(&q, &job, 1)->priority = 1;
    q.gpus = 4;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = 4;
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
        add_job(&x, 100 + n, n, 0xf, 0, 1, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    }
    for (uint32_t n = 12; n < 16; n++) {
        cr_assert_eq(gpusched_cluster_release(x.e.c, 100 + n), 0);
        add_job(&x, 100 + n, n, 0xf, 0, 1, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    }
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    pt_req_job(&q, &job, 1)->priority = 1;
    q.gpus = 32;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.slice_gpus[0] = 16;
    q.slice_level[0] = 1;
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
    gpusched_job job;
    gpusched_place_request q = gang8(&job);
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
    gpusched_job job;
    gpusched_place_request q = gang8(&job);
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
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
    job.id = 2;
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, x.e.res, x.plan), 0);
    const uint64_t want2[] = {102, 103};
    victims_are(&x, want2, 2);
    cr_assert_eq(gpusched_cluster_check(x.e.c), 0, "%s", gpusched_cluster_errmsg(x.e.c));
    env_free(&x);
}

/* ---- allocation failures ------------------------------------------------- */

typedef struct oom_ctx oom_ctx;
struct oom_ctx {
    gpusched_topo *t;
    void (*fill)(gpusched_cluster *c);  /* the state, built before failures count */
    int (*act)(oom_ctx *o);             /* the call under test */
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    uint8_t *before;            /* snapshot bytes before the call */
    size_t before_len;
    bool commit;
};

/* One failing allocator for the cluster, the placer, the result and the
 * plan: the k-th allocation of the call under test fails (the setup's are
 * not counted), including the commit's in the cluster. A failed or
 * plan-only call changes nothing; the invariants hold either way. */
static void oom_undo(void *ctx);

static int oom_op(failalloc *fa, void *ctx)
{
    oom_ctx *o = ctx;
    long k = fa->fail_at;
    fa->fail_at = -1;
    cr_assert_eq(gpusched_cluster_new(o->t, &fa->a, &o->c), 0);
    o->fill(o->c);
    fa->fail_at = -1;
    free(o->before);
    o->before = ct_snapshot(o->c, &o->before_len);
    fa->fail_at = fa->count + k;
    int rc = gpusched_placer_new(o->c, &fa->a, &o->p);
    if (!rc)
        rc = gpusched_place_result_new(&fa->a, &o->res);
    if (!rc)
        rc = gpusched_preempt_plan_new(&fa->a, &o->plan);
    if (!rc) {
        rc = o->act(o);
        fa->fail_at = -1; /* the checks below allocate */
        if (rc || !o->commit)
            ct_assert_snapshot(o->c, o->before, o->before_len, "a failed or plan-only call");
        cr_assert_eq(gpusched_cluster_check(o->c), 0);
    }
    if (rc)
        oom_undo(o); /* the sweep undoes successes only */
    return rc;
}

/* Sweeps plan only, then commit. */
static void oom_sweep(void (*fill)(gpusched_cluster *c), int (*act)(oom_ctx *o), long min_allocs)
{
    oom_ctx o = {.t = ct_uniform(), .fill = fill, .act = act};
    cr_assert_gt(failalloc_sweep(oom_op, oom_undo, &o), min_allocs);
    o.commit = true;
    cr_assert_gt(failalloc_sweep(oom_op, oom_undo, &o), min_allocs);
    free(o.before);
    gpusched_topo_unref(o.t);
}

static void fill_preemptible(gpusched_cluster *c)
{
    for (uint32_t n = 0; n < 24; n++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = 100 + n;
        j.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
        uint64_t m = 0xf;
        cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &n, &m), 0);
    }
}

static int preempt_slices(oom_ctx *o)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    pt_req_job(&q, &job, 1)->priority = 1;
    q.gpus = 16;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.slice_gpus[0] = 8;
    q.slice_level[0] = 1;
    q.flags = o->commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
    int rc = gpusched_placer_preempt(o->p, &q, o->res, o->plan);
    if (!rc && o->commit)
        cr_assert_eq(gpusched_cluster_job_count(o->c), 24 - 4 + 1);
    return rc;
}

static void oom_undo(void *ctx)
{
    oom_ctx *o = ctx;
    gpusched_preempt_plan_free(o->plan);
    gpusched_place_result_free(o->res);
    gpusched_placer_free(o->p);
    gpusched_cluster_unref(o->c);
    o->plan = NULL;
    o->res = NULL;
    o->p = NULL;
    o->c = NULL;
}

Test(preempt, out_of_memory_changes_nothing)
{
    oom_sweep(fill_preemptible, preempt_slices, 3);
}

/* The same with the rest of the state transactions must restore: movable
 * and preemptible jobs, the preemptor's own reservation, a down node. */
static void fill_mixed(gpusched_cluster *c)
{
    for (uint32_t n = 0; n < 22; n++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = 100 + n;
        j.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE | (n % 2 ? GPUSCHED_JOB_FLAG_MOVABLE : 0);
        uint64_t m = n % 3 ? 0xf : 0x3;
        cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &n, &m), 0);
    }
    uint32_t r = 22, down = 23;
    cr_assert_eq(gpusched_cluster_reserve(c, 1, 1, &r, &(uint64_t){0xf}), 0);
    cr_assert_eq(gpusched_cluster_node_health_set(c, down, GPUSCHED_NODE_DOWN, NULL, 0, NULL), 0);
}

static int preempt_mixed(oom_ctx *o)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    pt_req_job(&q, &job, 1)->priority = 1;
    q.gpus = 28; /* 16 free, 4 reserved for it: victims needed */
    q.flags = o->commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
    int rc = gpusched_placer_preempt(o->p, &q, o->res, o->plan);
    if (!rc) {
        const uint64_t *ids;
        uint32_t n;
        cr_assert_eq(gpusched_preempt_plan_victims(o->plan, &ids, &n), 0);
        cr_assert_gt(n, 0, "the plan evicts");
    }
    return rc;
}

static int defrag_mixed(oom_ctx *o)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    pt_req_job(&q, &job, 1)->priority = 1;
    q.gpus = 12;
    q.required_level = 1;
    q.flags = o->commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
    int rc = gpusched_placer_defrag(o->p, &q, o->res, o->plan);
    return rc == GPUSCHED_ENOSPC ? 0 : rc;
}

Test(preempt, out_of_memory_with_reservations_and_down_nodes_changes_nothing)
{
    oom_sweep(fill_mixed, preempt_mixed, 3);
    oom_sweep(fill_mixed, defrag_mixed, 3);
}

/* ---- moving a running job ------------------------------------------------ */

static void job_gpus_are(env *x, uint64_t id, const uint32_t *want_nodes, const uint64_t *want_masks, uint32_t nwant)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n, g;
    cr_assert_eq(gpusched_cluster_job_allocation(x->e.c, id, &nodes, &masks, &n, &g), 0);
    cr_assert_eq(n, nwant, "job %llu on %u nodes, expected %u", (unsigned long long)id, n, nwant);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(nodes[i], want_nodes[i], "node %u is %u, expected %u", i, nodes[i], want_nodes[i]);
        cr_assert_eq(masks[i], want_masks[i]);
    }
}

Test(preempt_move, bad_arguments_change_nothing)
{
    env x = env_full();
    uint64_t before = ct_fingerprint(x.e.c);
    cr_assert_eq(gpusched_placer_move(NULL, 100, 0, x.e.res), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_placer_move(x.e.p, 100, 0, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "move: result is NULL");
    cr_assert_eq(gpusched_placer_move(x.e.p, 100, 0x10, x.e.res), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "move: unknown flags 0x10");
    cr_assert_eq(gpusched_placer_move(x.e.p, 99, 0, x.e.res), GPUSCHED_ENOENT);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "move: no running job 99");
    /* Full cluster, healthy job: it can only stay where it is. */
    cr_assert_eq(gpusched_placer_move(x.e.p, 100, 0, x.e.res), 0, "%s", gpusched_placer_errmsg(x.e.p));
    const uint32_t own[] = {0};
    nodes_are(&x, own, 1);
    cr_assert_eq(ct_fingerprint(x.e.c), before);
    env_free(&x);
}

Test(preempt_move, repair_moves_a_job_off_a_failed_node)
{
    env x = env_empty();
    /* Job 5: two pods of 4 on nodes 1 and 2 (rack 0), costs and priority
     * to keep. Node 2 fails. */
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = 5;
    j.priority = 3;
    j.cost_hint = 77;
    j.tenant = 9;
    j.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
    const uint32_t nodes[] = {1, 2};
    const uint64_t masks[] = {0xf, 0xf};
    cr_assert_eq(gpusched_cluster_allocate(x.e.c, &j, 2, nodes, masks), 0);
    add_job(&x, 6, 0, 0xf, 0, 0, 0);
    add_job(&x, 7, 3, 0x3, 0, 0, 0);
    uint64_t hit[8];
    uint32_t nhit;
    cr_assert_eq(gpusched_cluster_node_health_set(x.e.c, 2, GPUSCHED_NODE_DOWN, hit, 8, &nhit), 0);
    uint64_t before = ct_fingerprint(x.e.c);
    cr_assert_eq(gpusched_placer_move(x.e.p, 5, 0, x.e.res), 0, "%s", gpusched_place_result_message(x.e.res));
    cr_assert_eq(ct_fingerprint(x.e.c), before, "a plan-only move changed the state");
    /* Whole nodes of 4, inside one rack: rack 0 has only node 1 left whole,
     * so the job goes to the tightest rack that holds two whole nodes. */
    const uint32_t want[] = {4, 5};
    nodes_are(&x, want, 2);
    cr_assert_eq(gpusched_placer_move(x.e.p, 5, GPUSCHED_PLACE_FLAG_COMMIT, x.e.res), 0);
    cr_assert_eq(gpusched_place_result_committed(x.e.res), 1);
    const uint64_t wm[] = {0xf, 0xf};
    job_gpus_are(&x, 5, want, wm, 2);
    gpusched_job got = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(x.e.c, 5, &got), 0);
    cr_assert_eq(got.priority, 3);
    cr_assert_eq(got.cost_hint, 77);
    cr_assert_eq(got.tenant, 9);
    cr_assert_eq(got.flags, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    cr_assert_eq(gpusched_cluster_job_count(x.e.c), 3);
    cr_assert_eq(gpusched_cluster_check(x.e.c), 0, "%s", gpusched_cluster_errmsg(x.e.c));
    env_free(&x);
}

Test(preempt_move, the_shape_is_kept)
{
    env x = env_empty();
    /* Job 5: 2 GPUs on node 0 and 2 on node 4: pods of 2, spanning racks
     * 0 and 1 of block 0: required level block (slices of 2 would be the
     * pod itself: no slice constraint). */
    const uint32_t nodes[] = {0, 4};
    const uint64_t masks[] = {0x3, 0xc};
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = 5;
    cr_assert_eq(gpusched_cluster_allocate(x.e.c, &j, 2, nodes, masks), 0);
    /* Block 0 full but for node 11 (rack 2); block 1 empty. */
    for (uint32_t n = 1; n < 11; n++)
        if (n != 4)
            add_job(&x, 100 + n, n, 0xf, 0, 0, 0);
    add_job(&x, 200, 0, 0xc, 0, 0, 0);
    add_job(&x, 204, 4, 0x3, 0, 0, 0);
    /* Its shape is pods of 2 inside block 0, and its own GPUs are free to
     * it; one node (11) holds both pods: better locality than its two
     * nodes, so a plain move already gathers it there. */
    uint64_t hit[8];
    cr_assert_eq(gpusched_placer_move(x.e.p, 5, GPUSCHED_PLACE_FLAG_COMMIT, x.e.res), 0,
                 "%s", gpusched_place_result_message(x.e.res));
    const uint32_t nn[] = {11};
    const uint64_t nm[] = {0xf};
    job_gpus_are(&x, 5, nn, nm, 1);
    cr_assert_eq(gpusched_cluster_check(x.e.c), 0, "%s", gpusched_cluster_errmsg(x.e.c));

    /* Whole nodes across two racks of a block keep slices per rack: job 8
     * holds nodes 12, 13 (rack 3) and 16, 17 (rack 4): slices of 8 per
     * rack inside block 1. */
    const uint32_t wn[] = {12, 13, 16, 17};
    const uint64_t wmask[] = {0xf, 0xf, 0xf, 0xf};
    j.id = 8;
    cr_assert_eq(gpusched_cluster_allocate(x.e.c, &j, 4, wn, wmask), 0);
    cr_assert_eq(gpusched_cluster_node_health_set(x.e.c, 13, GPUSCHED_NODE_DOWN, hit, 8, NULL), 0);
    /* Rack 3 keeps 3 up nodes (12, 14, 15), rack 4 all four, rack 5 all
     * four: both slices of 8 fit in rack 4 (its own nodes, best locality). */
    cr_assert_eq(gpusched_placer_move(x.e.p, 8, 0, x.e.res), 0, "%s", gpusched_place_result_message(x.e.res));
    const uint32_t *rn;
    const uint64_t *rm;
    uint32_t rcount;
    cr_assert_eq(gpusched_place_result_nodes(x.e.res, &rn, &rm, &rcount), 0);
    cr_assert_eq(rcount, 4);
    uint32_t per_rack[6] = {0};
    for (uint32_t i = 0; i < rcount; i++) {
        cr_assert(rn[i] >= 12 && rn[i] != 13, "node %u", rn[i]);
        cr_assert_eq(rm[i], 0xf);
        per_rack[rn[i] / 4]++;
    }
    for (uint32_t r = 0; r < 6; r++)
        cr_assert(per_rack[r] % 2 == 0, "rack %u holds %u nodes of the job: not whole slices", r, per_rack[r]);
    env_free(&x);
}

Test(preempt_move, nowhere_to_go)
{
    env x = env_full();
    uint64_t hit[8];
    cr_assert_eq(gpusched_cluster_node_health_set(x.e.c, 7, GPUSCHED_NODE_DRAINING, hit, 8, NULL), 0);
    uint64_t before = ct_fingerprint(x.e.c);
    cr_assert_eq(gpusched_placer_move(x.e.p, 107, GPUSCHED_PLACE_FLAG_COMMIT, x.e.res), GPUSCHED_ENOSPC);
    cr_assert_eq(ct_fingerprint(x.e.c), before);
    cr_assert_str_eq(gpusched_place_result_message(x.e.res),
                     "4 GPUs asked, the cluster has 0 usable free GPUs");
    env_free(&x);
}

/* Job 5 on nodes 0 to 2, node 1 down: the move of its repair. */
static void fill_failed_node(gpusched_cluster *c)
{
    const uint32_t nodes[] = {0, 1, 2};
    const uint64_t masks[] = {0xf, 0xf, 0xf};
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = 5;
    cr_assert_eq(gpusched_cluster_allocate(c, &j, 3, nodes, masks), 0);
    uint64_t hit[8];
    cr_assert_eq(gpusched_cluster_node_health_set(c, 1, GPUSCHED_NODE_DOWN, hit, 8, NULL), 0);
}

static int move_job5(oom_ctx *o)
{
    return gpusched_placer_move(o->p, 5, o->commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0, o->res);
}

Test(preempt_move, out_of_memory_changes_nothing)
{
    oom_sweep(fill_failed_node, move_job5, 2);
}

/* ---- defragmentation ------------------------------------------------------ */

/* The cheapest domain wins, not the first that works: rack 0 has 8 free
 * GPUs (its bound is 0) but needs two movers (cost 2) for two whole free
 * nodes; rack 1 needs one (cost 1). Every other node is held by
 * unmovable jobs. */
Test(preempt_defrag, the_cheapest_domain_wins)
{
    env x = env_empty();
    const uint32_t mov = GPUSCHED_JOB_FLAG_MOVABLE;
    add_job(&x, 21, 0, 0x1, 0, 1, mov);
    add_job(&x, 22, 1, 0x1, 0, 1, mov);
    add_job(&x, 10, 2, 0x3, 0, 0, 0);
    add_job(&x, 11, 3, 0xf, 0, 0, 0);
    add_job(&x, 23, 4, 0x1, 0, 1, mov);
    for (uint32_t n = 6; n < 24; n++)
        add_job(&x, 100 + n, n, 0xf, 0, 0, 0);
    gpusched_job job;
    gpusched_place_request q = gang8(&job);
    uint64_t before = ct_fingerprint(x.e.c);
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), 0, "%s", gpusched_placer_errmsg(x.e.p));
    cr_assert_eq(ct_fingerprint(x.e.c), before);
    cr_assert_eq(gpusched_preempt_plan_move_count(x.plan), 1);
    uint64_t id, cost;
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_move(x.plan, 0, &id, &nodes, &masks, &n), 0);
    cr_assert_eq(id, 23);
    cr_assert_eq(gpusched_preempt_plan_totals(x.plan, &cost, NULL), 0);
    cr_assert_eq(cost, 1);
    const uint32_t gang_nodes[] = {4, 5};
    nodes_are(&x, gang_nodes, 2);
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), 0, "%s", gpusched_placer_errmsg(x.e.p));
    cr_assert_eq(gpusched_cluster_check(x.e.c), 0);
    gpusched_job moved = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(x.e.c, 1, &moved), 0); /* the gang runs */
    cr_assert_eq(gpusched_cluster_job_find(x.e.c, 21, &moved), 0); /* rack 0's movers stayed */
    env_free(&x);
}

/* Every rack of block 0 holds one movable job of 4 GPUs on its first node;
 * block 1 is empty but for one unmovable job per rack. A gang of a whole
 * rack (16 GPUs, whole nodes, required rack) fits nowhere; moving one job
 * frees a rack. */
static env env_fragmented(void)
{
    env x = env_empty();
    for (uint32_t r = 0; r < 6; r++)
        add_job(&x, 100 + r, 4 * r, 0xf, 0, 10 + r, r < 3 ? GPUSCHED_JOB_FLAG_MOVABLE : 0);
    return x;
}

/* A whole rack for job 1 (priority 0), whose descriptor goes into *job:
 * the request points to it, so *job must outlive every use of it. */
static gpusched_place_request rack_gang(gpusched_job *job)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    pt_req_job(&q, job, 1);
    q.gpus = 16;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.required_level = 1;
    return q;
}

Test(preempt_defrag, bad_arguments_and_accessors)
{
    env x = env_fragmented();
    gpusched_job job;
    gpusched_place_request q = rack_gang(&job);
    uint64_t before = ct_fingerprint(x.e.c);
    cr_assert_eq(gpusched_placer_defrag(NULL, &q, x.e.res, x.plan), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_placer_defrag(x.e.p, NULL, x.e.res, x.plan), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "defrag: request is NULL");
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, NULL, x.plan), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "defrag: result is NULL");
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "defrag: plan is NULL");
    job.flags = 0x80;
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(x.e.p), "place request: job 1: unknown flags 0x80");
    q = rack_gang(&job);
    job.id = 100;
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), GPUSCHED_EEXIST);
    cr_assert_eq(ct_fingerprint(x.e.c), before);

    uint64_t id;
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_move_count(NULL), 0);
    cr_assert_eq(gpusched_preempt_plan_move_count(x.plan), 0);
    cr_assert_eq(gpusched_preempt_plan_move(x.plan, 0, &id, &nodes, &masks, &n), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_preempt_plan_move(NULL, 0, &id, &nodes, &masks, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_move(x.plan, 0, NULL, &nodes, &masks, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_move(x.plan, 0, &id, NULL, &masks, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_move(x.plan, 0, &id, &nodes, NULL, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_preempt_plan_move(x.plan, 0, &id, &nodes, &masks, NULL), GPUSCHED_EINVAL);
    env_free(&x);
}

Test(preempt_defrag, one_move_frees_a_rack)
{
    env x = env_fragmented();
    gpusched_job job;
    gpusched_place_request q = rack_gang(&job);
    /* Nothing is preemptible: a preemption cannot help. */
    cr_assert_eq(gpusched_placer_preempt(x.e.p, &q, x.e.res, x.plan), GPUSCHED_ENOSPC);

    uint64_t before = ct_fingerprint(x.e.c);
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), 0, "%s", gpusched_placer_errmsg(x.e.p));
    cr_assert_eq(ct_fingerprint(x.e.c), before, "a plan-only defragmentation changed the state");
    cr_assert_eq(gpusched_preempt_plan_move_count(x.plan), 1);
    victims_are(&x, NULL, 0);
    uint64_t id;
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_move(x.plan, 0, &id, &nodes, &masks, &n), 0);
    /* The cheapest mover is job 100 (rack 0); it goes to the tightest node
     * that holds a whole node of 4: in a rack already used. */
    cr_assert_eq(id, 100);
    cr_assert_eq(n, 1);
    cr_assert(nodes[0] / 4 != 0, "job 100 stays in the rack it must leave");
    cr_assert_eq(masks[0], 0xf);
    const uint32_t rack0[] = {0, 1, 2, 3};
    nodes_are(&x, rack0, 4);
    uint64_t cost, gpus;
    cr_assert_eq(gpusched_preempt_plan_totals(x.plan, &cost, &gpus), 0);
    cr_assert_eq(cost, 10);
    cr_assert_eq(gpus, 4);

    uint32_t dest = nodes[0];
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), 0);
    cr_assert_eq(gpusched_place_result_committed(x.e.res), 1);
    const uint64_t all[] = {0xf, 0xf, 0xf, 0xf};
    job_gpus_are(&x, 1, rack0, all, 4);
    const uint64_t one[] = {0xf};
    job_gpus_are(&x, 100, &dest, one, 1);
    gpusched_job j = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(x.e.c, 100, &j), 0);
    cr_assert_eq(j.cost_hint, 10);
    cr_assert_eq(j.flags, GPUSCHED_JOB_FLAG_MOVABLE);
    cr_assert_eq(gpusched_cluster_job_count(x.e.c), 7);
    cr_assert_eq(gpusched_cluster_check(x.e.c), 0, "%s", gpusched_cluster_errmsg(x.e.c));
    env_free(&x);
}

Test(preempt_defrag, the_jobs_reservation_counts_where_it_is)
{
    env x = env_fragmented();
    /* Job 1 holds node 1 (rack 0): rack 0 needs one move (job 100, cost
     * 10), rack 1 one too (job 101, cost 11); the reservation makes rack 0
     * the cheaper, and only there. */
    const uint32_t node = 1;
    const uint64_t mask = 0xf;
    cr_assert_eq(gpusched_cluster_reserve(x.e.c, 1, 1, &node, &mask), 0);
    gpusched_job job;
    gpusched_place_request q = rack_gang(&job);
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), 0, "%s", gpusched_placer_errmsg(x.e.p));
    uint64_t id;
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_move_count(x.plan), 1);
    cr_assert_eq(gpusched_preempt_plan_move(x.plan, 0, &id, &nodes, &masks, &n), 0);
    cr_assert_eq(id, 100);
    const uint32_t rack0[] = {0, 1, 2, 3};
    nodes_are(&x, rack0, 4);
    env_free(&x);
}

Test(preempt_defrag, no_room_to_move_into)
{
    env x = env_fragmented();
    /* Fill every free node: the movers have nowhere to go. */
    for (uint32_t n = 0; n < 24; n++)
        if (n % 4)
            add_job(&x, 200 + n, n, 0xf, 0, 0, 0);
    gpusched_job job;
    gpusched_place_request q = rack_gang(&job);
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    uint64_t before = ct_fingerprint(x.e.c);
    cr_assert_eq(gpusched_placer_defrag(x.e.p, &q, x.e.res, x.plan), GPUSCHED_ENOSPC);
    cr_assert_eq(ct_fingerprint(x.e.c), before);
    cr_assert_eq(gpusched_preempt_plan_move_count(x.plan), 0);
    cr_assert_str_eq(gpusched_place_result_message(x.e.res), "16 GPUs asked, the cluster has 0 usable free GPUs");
    /* A higher-priority job is never moved for a lower-priority gang. */
    env y = env_fragmented();
    cr_assert_eq(gpusched_cluster_release(y.e.c, 100), 0);
    add_job(&y, 100, 0, 0xf, 5, 10, GPUSCHED_JOB_FLAG_MOVABLE);
    cr_assert_eq(gpusched_cluster_release(y.e.c, 101), 0);
    add_job(&y, 101, 4, 0xf, 5, 11, GPUSCHED_JOB_FLAG_MOVABLE);
    cr_assert_eq(gpusched_cluster_release(y.e.c, 102), 0);
    add_job(&y, 102, 8, 0xf, 5, 12, GPUSCHED_JOB_FLAG_MOVABLE);
    job.priority = 4;
    cr_assert_eq(gpusched_placer_defrag(y.e.p, &q, y.e.res, y.plan), GPUSCHED_ENOSPC);
    job.priority = 5;
    cr_assert_eq(gpusched_placer_defrag(y.e.p, &q, y.e.res, y.plan), 0);
    env_free(&y);
    env_free(&x);
}

/* Two movable jobs of 3 nodes each (pair blocks) across racks 0 and 1.
 * No rack has four whole nodes free: rack 0 has node 3, rack 1 node 7,
 * rack 2 nodes 8 to 10; the others are taken. Clearing rack 0 moves both
 * jobs, into rack 2 and rack 1. */
static void fill_two_movers(gpusched_cluster *c)
{
    const uint32_t a[] = {0, 1, 4}, b[] = {2, 5, 6};
    const uint64_t m[] = {0xf, 0xf, 0xf};
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.flags = GPUSCHED_JOB_FLAG_MOVABLE;
    j.id = 5;
    cr_assert_eq(gpusched_cluster_allocate(c, &j, 3, a, m), 0);
    j.id = 6;
    cr_assert_eq(gpusched_cluster_allocate(c, &j, 3, b, m), 0);
    for (uint32_t n = 11; n < 24; n++) {
        gpusched_job f = GPUSCHED_JOB_INIT;
        f.id = 100 + n;
        uint64_t mask = n < 16 ? 0x1 : 0xf;
        cr_assert_eq(gpusched_cluster_allocate(c, &f, 1, &n, &mask), 0);
    }
}

static int defrag_rack(oom_ctx *o)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    pt_req_job(&q, &job, 1);
    q.gpus = 16;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.required_level = 1;
    q.flags = o->commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
    int rc = gpusched_placer_defrag(o->p, &q, o->res, o->plan);
    if (!rc)
        cr_assert_gt(gpusched_preempt_plan_move_count(o->plan), 0);
    return rc;
}

Test(preempt_defrag, out_of_memory_changes_nothing)
{
    oom_sweep(fill_two_movers, defrag_rack, 3);
}
