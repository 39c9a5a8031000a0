/* The placement API function by function: lifetimes, accessors, bad
 * requests (code, message, nothing changed), plan only, commit, batch, and
 * allocation failures on every path that allocates. */
#include "cluster-test.h"
#include "failalloc.h"
#include "place-test.h"

typedef pt_env env;

/* 2 blocks x 3 racks x 4 nodes x 4 GPUs. */
static env env_new(void) { return pt_env_on(ct_uniform()); }

#define env_free pt_env_free

/* A request for `gpus` GPUs by job 7, whose descriptor goes into *job:
 * the request points to it, so *job must outlive every use of the request. */
static gpusched_place_request req(uint32_t gpus, gpusched_job *job)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    pt_req_job(&q, job, 7);
    q.gpus = gpus;
    return q;
}

#define REJECT(e, q, code, msg)                                                                      \
    do {                                                                                             \
        uint64_t before_ = ct_fingerprint((e)->c);                                                   \
        int rc_ = gpusched_placer_place((e)->p, (q), (e)->res);                                      \
        cr_assert_eq(rc_, (code), "got %s: %s", gpusched_err_name(rc_), gpusched_placer_errmsg((e)->p)); \
        cr_assert_str_eq(gpusched_placer_errmsg((e)->p), (msg));                                     \
        cr_assert_eq(ct_fingerprint((e)->c), before_, "the state changed");                          \
    } while (0)

Test(place_api, lifetimes_and_null_arguments)
{
    env e = env_new();
    gpusched_placer *p = NULL;
    cr_assert_eq(gpusched_placer_new(NULL, NULL, &p), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_placer_new(e.c, NULL, NULL), GPUSCHED_EINVAL);
    gpusched_allocator bad = GPUSCHED_ALLOCATOR_INIT;
    cr_assert_eq(gpusched_placer_new(e.c, &bad, &p), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_place_result_new(&bad, &e.res), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_place_result_new(NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_null(p);
    gpusched_placer_free(NULL);
    gpusched_place_result_free(NULL);
    cr_assert_str_eq(gpusched_placer_errmsg(NULL), "invalid placer (NULL)");
    cr_assert_str_eq(gpusched_placer_errmsg(e.p), "");
    gpusched_job job;
    gpusched_place_request q = req(4, &job);
    cr_assert_eq(gpusched_placer_place(NULL, &q, e.res), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_placer_place(e.p, NULL, e.res), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(e.p), "place: request is NULL");
    cr_assert_eq(gpusched_placer_place(e.p, &q, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(e.p), "place: result is NULL");

    /* A fresh result holds nothing. */
    const uint32_t *nodes, *pods, *doms, *loc;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_place_result_reason(e.res), GPUSCHED_REASON_NOT_RUN);
    cr_assert_eq(gpusched_place_result_reason(NULL), GPUSCHED_REASON_NOT_RUN);
    cr_assert_str_eq(gpusched_place_result_message(NULL), "");
    cr_assert_str_eq(gpusched_place_result_message(e.res), "");
    cr_assert_eq(gpusched_place_result_committed(NULL), 0);
    cr_assert_eq(gpusched_place_result_nodes(e.res, &nodes, &masks, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(gpusched_place_result_nodes(NULL, &nodes, &masks, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_place_result_nodes(e.res, NULL, &masks, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_place_result_pods(e.res, &pods, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(gpusched_place_result_pods(e.res, NULL, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_place_result_locality(e.res, &loc, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(gpusched_place_result_locality(NULL, &loc, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_place_result_domains(NULL, 0, &doms, &n), GPUSCHED_EINVAL);
    env_free(&e);
}

/* The pods list is written when first asked for: it follows the last
 * placement into the result, whichever came before, and asking again
 * gives the same list. */
Test(place_api, pods_follow_the_last_placement)
{
    env e = env_new();
    gpusched_job job;
    const uint32_t *pods, *nodes;
    const uint64_t *masks;
    uint32_t np, n;
    gpusched_place_request q = req(6, &job);
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = 2;
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(gpusched_place_result_pods(e.res, &pods, &np), 0);
    cr_assert_eq(np, 3);
    /* Pods of 1 GPU, 5 of them: five entries for the new nodes. */
    q.gpus = 5;
    q.pod_gpus = 1;
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(gpusched_place_result_nodes(e.res, &nodes, &masks, &n), 0);
    for (int round = 0; round < 2; round++) {
        cr_assert_eq(gpusched_place_result_pods(e.res, &pods, &np), 0);
        cr_assert_eq(np, 5, "round %d", round);
        uint32_t at = 0;
        for (uint32_t i = 0; i < n; i++)
            for (int k = __builtin_popcountll(masks[i]); k-- > 0; at++)
                cr_assert_eq(pods[at], nodes[i], "round %d: pod %u", round, at);
        cr_assert_eq(at, np);
    }
    /* Not pods: no list, even where the last one had pods not read. */
    q.pod_gpus = 1;
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), 0);
    q.split = GPUSCHED_SPLIT_ANY;
    q.pod_gpus = 0;
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(gpusched_place_result_pods(e.res, &pods, &np), 0);
    cr_assert_eq(np, 0);
    env_free(&e);
}

Test(place_api, plan_only_changes_nothing_and_commit_makes_a_job)
{
    env e = env_new();
    gpusched_job job;
    gpusched_place_request q = req(6, &job);
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = 2;
    uint64_t before = ct_fingerprint(e.c);
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(ct_fingerprint(e.c), before);
    cr_assert_eq(gpusched_place_result_committed(e.res), 0);
    cr_assert_eq(gpusched_place_result_reason(e.res), GPUSCHED_REASON_OK);
    cr_assert_str_eq(gpusched_place_result_message(e.res), "6 GPUs on 2 nodes in 1 block, 1 rack");

    const uint32_t *nodes, *pods, *doms, *loc;
    const uint64_t *masks;
    uint32_t n, np, nd, nl;
    cr_assert_eq(gpusched_place_result_nodes(e.res, &nodes, &masks, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(gpusched_place_result_pods(e.res, &pods, &np), 0);
    cr_assert_eq(np, 3);
    /* Best fit: one node full (two pods), the rest on the next node. */
    cr_assert_eq(pods[0], nodes[0]);
    cr_assert_eq(pods[2], nodes[1]);
    cr_assert_eq(masks[0], 0xf);
    cr_assert_eq(masks[1], 0x3);
    cr_assert_eq(gpusched_place_result_locality(e.res, &loc, &nl), 0);
    cr_assert_eq(nl, 3);
    cr_assert_eq(loc[0], 1);
    cr_assert_eq(loc[1], 1);
    cr_assert_eq(loc[2], 2);
    cr_assert_eq(gpusched_place_result_domains(e.res, 1, &doms, &nd), 0);
    cr_assert_eq(nd, 1);
    cr_assert_eq(gpusched_place_result_domains(e.res, 2, &doms, &nd), 0);
    cr_assert_eq(nd, 2);
    cr_assert_eq(doms, nodes);
    cr_assert_eq(gpusched_place_result_domains(e.res, 3, &doms, &nd), GPUSCHED_ERANGE);

    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    job.priority = 3;
    job.tenant = 11;
    job.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
    job.start_time = 100;
    job.cost_hint = 5;
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), 0);
    cr_assert_eq(gpusched_place_result_committed(e.res), 1);
    gpusched_job j = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(e.c, 7, &j), 0);
    cr_assert_eq(j.priority, 3);
    cr_assert_eq(j.tenant, 11);
    cr_assert_eq(j.flags, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    cr_assert_eq(j.start_time, 100);
    cr_assert_eq(j.cost_hint, 5);
    const uint32_t *jn;
    const uint64_t *jm;
    uint32_t jc, jg;
    cr_assert_eq(gpusched_cluster_job_allocation(e.c, 7, &jn, &jm, &jc, &jg), 0);
    cr_assert_eq(jg, 6);
    cr_assert_eq(gpusched_cluster_check(e.c), 0, "%s", gpusched_cluster_errmsg(e.c));
    /* The same job again: it is running. */
    REJECT(&e, &q, GPUSCHED_EEXIST, "place request: job 7 is already running");
    env_free(&e);
}

Test(place_api, bad_requests_say_which_field)
{
    env e = env_new();
    uint32_t avoid = 99;
    gpusched_job job;
    gpusched_place_request q;
#define BAD(stmt, code, msg)  \
    q = req(8, &job);         \
    stmt;                     \
    REJECT(&e, &q, code, msg)
    BAD(q.size = 8, GPUSCHED_EINVAL, "place request: size field is 8, at least 84 expected (use the _INIT macro)");
    BAD(q.flags = 6, GPUSCHED_EINVAL, "place request: unknown flags 0x6");
    BAD(job.flags = 8, GPUSCHED_EINVAL, "place request: job 7: unknown flags 0x8");
    BAD(q.gpus = 0, GPUSCHED_EINVAL, "place request: gpus is 0");
    BAD(q.split = 3, GPUSCHED_EINVAL, "place request: split is 3, not a gpusched_place_split");
    BAD(q.pod_gpus = 2, GPUSCHED_EINVAL, "place request: pod_gpus is 2 but split is any (set it to 0)");
    BAD((q.split = GPUSCHED_SPLIT_PODS, q.pod_gpus = 0), GPUSCHED_EINVAL, "place request: pod_gpus is 0, 1 to 64 expected");
    BAD((q.split = GPUSCHED_SPLIT_PODS, q.pod_gpus = 3), GPUSCHED_EINVAL,
        "place request: 8 GPUs is not a multiple of pods of 3 GPUs");
    BAD((q.split = GPUSCHED_SPLIT_WHOLE_NODES, q.gpus = 6), GPUSCHED_EINVAL,
        "place request: 6 GPUs is not a multiple of nodes of 4 GPUs");
    BAD((q.split = GPUSCHED_SPLIT_WHOLE_NODES, q.pod_gpus = 65), GPUSCHED_EINVAL,
        "place request: pod_gpus (node size) is 65, 0 to 64 expected");
    BAD(q.required_level = 2, GPUSCHED_ERANGE, "place request: required_level is 2 but the topology has 2 levels");
    BAD(q.preferred_level = 3, GPUSCHED_ERANGE, "place request: preferred_level is 3 but the topology has 2 levels");
    BAD(q.gpu_class = 1, GPUSCHED_ERANGE, "place request: gpu_class is 1 but the topology has 1 classes");
    BAD(q.labels_required = 1, GPUSCHED_ERANGE, "place request: label bit 0 is set but the topology has 0 labels");
    BAD(q.avoid_count = 1, GPUSCHED_EINVAL, "place request: avoid_count is 1 but avoid_nodes is NULL");
    BAD((q.avoid_count = 1, q.avoid_nodes = &avoid), GPUSCHED_ERANGE,
        "place request: avoid_nodes[0] is 99 but the topology has 24 nodes");
    BAD(q.slice_level[0] = 1, GPUSCHED_EINVAL, "place request: slice_level[0] is set but slice_gpus[0] is 0");
    BAD(q.slice_gpus[1] = 4, GPUSCHED_EINVAL, "place request: slice_gpus[1] is 4 but slice_level[1] is unset");
    BAD((q.slice_gpus[0] = 4, q.slice_level[0] = 5), GPUSCHED_ERANGE,
        "place request: slice_level[0] is 5 but the topology has 2 levels");
    BAD((q.slice_gpus[0] = 3, q.slice_level[0] = 1), GPUSCHED_EINVAL,
        "place request: slices of 3 GPUs must be a multiple of 1 and divide 8");
    BAD((q.gpus = 24, q.slice_gpus[0] = 6, q.slice_level[0] = 0, q.slice_gpus[1] = 4, q.slice_level[1] = 1),
        GPUSCHED_EINVAL,
        "place request: slices of 6 GPUs at level 0 are not made of whole slices of 4 GPUs at level 1");
    BAD((q.gpus = 24, q.slice_gpus[0] = 6, q.slice_level[0] = 1, q.slice_gpus[1] = 4, q.slice_level[1] = 1),
        GPUSCHED_EINVAL, "place request: constraints of 6 GPUs at level 1 and 4 GPUs at level 1 do not nest");
#undef BAD
    /* Unknown trailing bytes of a newer caller. */
    struct {
        gpusched_place_request q;
        uint32_t extra;
    } big;
    memset(&big, 0, sizeof big); /* the padding too */
    big.q = req(8, &job);
    big.extra = 1;
    big.q.size = sizeof big;
    REJECT(&e, &big.q, GPUSCHED_E2BIG, "place request: byte 136 is non-zero but this library knows only 136 bytes");
    big.extra = 0;
    cr_assert_eq(gpusched_placer_place(e.p, &big.q, e.res), 0);
    cr_assert_str_eq(gpusched_placer_errmsg(e.p), "");
    env_free(&e);
}

Test(place_api, batch_in_order_each_seeing_the_ones_before)
{
    env e = env_new();
    gpusched_place_request q[4];
    gpusched_job job[4];
    gpusched_place_result *r[4];
    const gpusched_place_request *qp[4];
    for (int i = 0; i < 4; i++) {
        q[i] = req(48, &job[i]);
        job[i].id = 100 + (uint64_t)i;
        q[i].flags = GPUSCHED_PLACE_FLAG_COMMIT;
        qp[i] = &q[i];
        cr_assert_eq(gpusched_place_result_new(NULL, &r[i]), 0);
    }
    q[1].gpus = 49; /* does not fit once the first took a block */
    q[2].flags = 0;  /* plan only */
    uint32_t placed = 99;
    cr_assert_eq(gpusched_placer_place_batch(e.p, 4, qp, r, &placed), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(placed, 2);
    cr_assert_eq(gpusched_place_result_committed(r[0]), 1);
    cr_assert_eq(gpusched_place_result_reason(r[1]), GPUSCHED_REASON_NO_GPUS);
    cr_assert_str_eq(gpusched_place_result_message(r[1]), "49 GPUs asked, the cluster has 48 usable free GPUs");
    /* The plan-only request is held until the batch ends: the last one
     * does not fit behind it, and its GPUs are free again afterwards. */
    cr_assert_eq(gpusched_place_result_committed(r[2]), 0);
    cr_assert_eq(gpusched_place_result_reason(r[2]), GPUSCHED_REASON_OK);
    cr_assert_eq(gpusched_place_result_reason(r[3]), GPUSCHED_REASON_NO_GPUS);
    cr_assert_str_eq(gpusched_place_result_message(r[3]), "48 GPUs asked, the cluster has 0 usable free GPUs");
    cr_assert_eq(gpusched_cluster_job_count(e.c), 1);
    uint64_t free_gpus;
    gpusched_cluster_domain_free_gpus(e.c, GPUSCHED_NONE, 0, &free_gpus);
    cr_assert_eq(free_gpus, 48);
    cr_assert_eq(gpusched_cluster_check(e.c), 0, "%s", gpusched_cluster_errmsg(e.c));

    /* A plan-only request whose job holds a reservation is held too (its
     * GPUs, from the reservation or free, are taken for the requests after
     * it) and its reservation is whole again when the batch returns. */
    uint32_t node = 23;
    uint64_t all = 0xf;
    cr_assert_eq(gpusched_cluster_reserve(e.c, 300, 1, &node, &all), 0);
    gpusched_job hjob[2];
    gpusched_place_request hq[2] = {req(8, &hjob[0]), req(37, &hjob[1])};
    hjob[0].id = 300;
    hjob[1].id = 301;
    const gpusched_place_request *hqp[2] = {&hq[0], &hq[1]};
    cr_assert_eq(gpusched_placer_place_batch(e.p, 2, hqp, r, &placed), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(placed, 1, "%s", gpusched_place_result_message(r[1]));
    cr_assert_str_eq(gpusched_place_result_message(r[1]), "37 GPUs asked, the cluster has 36 usable free GPUs");
    cr_assert_eq(gpusched_cluster_resv_count(e.c), 1);
    cr_assert_eq(gpusched_cluster_job_count(e.c), 1);
    gpusched_cluster_domain_free_gpus(e.c, GPUSCHED_NONE, 0, &free_gpus);
    cr_assert_eq(free_gpus, 44);
    cr_assert_eq(gpusched_cluster_check(e.c), 0, "%s", gpusched_cluster_errmsg(e.c));
    cr_assert_eq(gpusched_cluster_unreserve(e.c, 300), 0);

    /* A bad request anywhere: nothing placed at all. */
    job[0].id = 200;
    job[3].id = 201;
    q[2].gpus = 0;
    uint64_t before = ct_fingerprint(e.c);
    cr_assert_eq(gpusched_placer_place_batch(e.p, 4, qp, r, &placed), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(e.p), "place batch: request 2: place request: gpus is 0");
    cr_assert_eq(ct_fingerprint(e.c), before);
    q[2].gpus = 8;
    q[2].flags = GPUSCHED_PLACE_FLAG_COMMIT;
    job[2].id = 200;
    cr_assert_eq(gpusched_placer_place_batch(e.p, 4, qp, r, &placed), GPUSCHED_EEXIST);
    cr_assert_str_eq(gpusched_placer_errmsg(e.p), "place batch: requests 0 and 2 both commit job 200");
    gpusched_place_result *same[4] = {r[0], r[1], r[0], r[3]};
    cr_assert_eq(gpusched_placer_place_batch(e.p, 4, qp, same, &placed), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_placer_errmsg(e.p), "place batch: results 0 and 2 are the same object");
    cr_assert_eq(gpusched_placer_place_batch(e.p, 1, NULL, r, &placed), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_placer_place_batch(NULL, 1, qp, r, &placed), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_placer_place_batch(e.p, 0, NULL, NULL, &placed), 0);
    cr_assert_eq(placed, 0);
    cr_assert_eq(ct_fingerprint(e.c), before);
    for (int i = 0; i < 4; i++)
        gpusched_place_result_free(r[i]);
    env_free(&e);
}

/* ---- allocation failures ------------------------------------------------- */

typedef struct fa_ctx {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_place_request q;
    gpusched_job job; /* q's job */
    uint64_t fingerprint;
} fa_ctx;

/* The checker allocates through the same failing allocator. */
static void check_unless_oom(gpusched_cluster *c)
{
    int rc = gpusched_cluster_check(c);
    cr_assert(rc == 0 || rc == GPUSCHED_ENOMEM, "%s", gpusched_cluster_errmsg(c));
}

static int fa_place(failalloc *fa, void *vctx)
{
    fa_ctx *x = vctx;
    int rc = gpusched_cluster_new(x->t, &fa->a, &x->c);
    if (rc)
        return rc;
    /* Something running already, so that the cluster is not trivial. */
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = 1;
    uint32_t node = 0;
    uint64_t mask = 1;
    if ((rc = gpusched_cluster_allocate(x->c, &j, 1, &node, &mask)))
        goto fail_cluster;
    uint64_t before = ct_fingerprint(x->c);
    if ((rc = gpusched_placer_new(x->c, &fa->a, &x->p)))
        goto fail_cluster;
    if ((rc = gpusched_place_result_new(&fa->a, &x->res)))
        goto fail_placer;
    if ((rc = gpusched_placer_place(x->p, &x->q, x->res)))
        goto fail_result;
    return 0;
fail_result:
    cr_assert_eq(ct_fingerprint(x->c), before, "a failed placement changed the cluster");
    check_unless_oom(x->c);
    gpusched_place_result_free(x->res);
fail_placer:
    gpusched_placer_free(x->p);
fail_cluster:
    gpusched_cluster_unref(x->c);
    return rc;
}

static void fa_undo(void *vctx)
{
    fa_ctx *x = vctx;
    cr_assert_eq(gpusched_place_result_committed(x->res), 1);
    check_unless_oom(x->c);
    gpusched_place_result_free(x->res);
    gpusched_placer_free(x->p);
    gpusched_cluster_unref(x->c);
}

Test(place_api, allocation_failures_leave_nothing_behind)
{
    fa_ctx x = {0};
    x.t = ct_uniform();
    /* A spill over blocks with full locality: DP tables, frontiers, nodes. */
    x.q = req(64, &x.job);
    x.q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    x.q.split = GPUSCHED_SPLIT_PODS;
    x.q.pod_gpus = 2;
    long n = failalloc_sweep(fa_place, fa_undo, &x);
    cr_assert_gt(n, 5);
    /* Slices and a reservation-free single rack. */
    x.q = req(16, &x.job);
    x.q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    x.q.slice_gpus[0] = 8;
    x.q.slice_level[0] = 1;
    failalloc_sweep(fa_place, fa_undo, &x);
    gpusched_topo_unref(x.t);
}

typedef struct fa_batch {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res[3];
} fa_batch;

static int fa_batch_op(failalloc *fa, void *vctx)
{
    fa_batch *x = vctx;
    int rc = gpusched_cluster_new(x->t, NULL, &x->c);
    cr_assert_eq(rc, 0);
    if ((rc = gpusched_placer_new(x->c, &fa->a, &x->p)))
        goto fail_cluster;
    int made = 0;
    for (; made < 3; made++)
        if ((rc = gpusched_place_result_new(&fa->a, &x->res[made])))
            goto fail_results;
    gpusched_place_request q[3];
    gpusched_job job[3];
    const gpusched_place_request *qp[3];
    for (int i = 0; i < 3; i++) {
        q[i] = req(8 + 16 * (uint32_t)i, &job[i]);
        job[i].id = 50 + (uint64_t)i;
        q[i].flags = GPUSCHED_PLACE_FLAG_COMMIT;
        qp[i] = &q[i];
    }
    uint64_t before = ct_fingerprint(x->c);
    if ((rc = gpusched_placer_place_batch(x->p, 3, qp, x->res, NULL))) {
        cr_assert_eq(ct_fingerprint(x->c), before, "a failed batch changed the cluster");
        goto fail_results;
    }
    return 0;
fail_results:
    while (made-- > 0)
        gpusched_place_result_free(x->res[made]);
    gpusched_placer_free(x->p);
fail_cluster:
    gpusched_cluster_unref(x->c);
    return rc;
}

static void fa_batch_undo(void *vctx)
{
    fa_batch *x = vctx;
    cr_assert_eq(gpusched_cluster_job_count(x->c), 3);
    for (int i = 0; i < 3; i++)
        gpusched_place_result_free(x->res[i]);
    gpusched_placer_free(x->p);
    gpusched_cluster_unref(x->c);
}

Test(place_api, batch_out_of_memory_rolls_back)
{
    fa_batch x = {.t = ct_uniform()};
    cr_assert_gt(failalloc_sweep(fa_batch_op, fa_batch_undo, &x), 3);
    gpusched_topo_unref(x.t);
}

/* A placer holds a reference on its cluster: the caller may drop its own
 * first, and the placer still works; gpusched_cluster_ref adds one more. */
Test(place_api, placer_keeps_its_cluster_alive)
{
    gpusched_topo *t = ct_uniform();
    gpusched_cluster *c = NULL;
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    gpusched_topo_unref(t);
    cr_assert_eq(gpusched_cluster_ref(c), c);
    cr_assert_null(gpusched_cluster_ref(NULL));
    gpusched_placer *p = NULL;
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    gpusched_cluster_unref(c);
    gpusched_cluster_unref(c); /* the caller's two references are gone */
    gpusched_place_result *res = NULL;
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    q.gpus = 4;
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    pt_req_job(&q, &job, 7);
    cr_assert_eq(gpusched_placer_place(p, &q, res), 0, "%s", gpusched_placer_errmsg(p));
    cr_assert_eq(gpusched_place_result_committed(res), 1);
    gpusched_place_result_free(res);
    gpusched_placer_free(p); /* the last reference: frees the cluster too */
}
