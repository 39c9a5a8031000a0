/* The scheduler's API function by function: lifetimes, parameters, the
 * queue tree, bad input (code, message, nothing changed), job events,
 * quiet cycles, node failures and the decisions' accessors. */
#include "failalloc.h"
#include "sched-test.h"

Test(sched_api, lifetime_and_null_handles)
{
    gpusched_sched *s = (gpusched_sched *)1;
    cr_assert_eq(gpusched_sched_new(NULL, NULL, &s), GPUSCHED_EINVAL);
    gpusched_sched_free(NULL);
    gpusched_sched_decisions_free(NULL);
    cr_assert_eq(gpusched_sched_decisions_new(NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_sched_errmsg(NULL), "scheduler is NULL");
    cr_assert_eq(gpusched_sched_cycle(NULL, 0, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_submit(NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_cancel(NULL, 1), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_job_end(NULL, 1, 0), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_check(NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_queue_count(NULL), 0);
    cr_assert_null(gpusched_sched_queue_name(NULL, 0));
    cr_assert_eq(gpusched_sched_decisions_quiet(NULL), 0);
    cr_assert_eq(gpusched_sched_decisions_wait_count(NULL), 0);
    cr_assert_eq(gpusched_sched_decisions_reservation_count(NULL), 0);
    cr_assert_str_eq(gpusched_sched_decisions_wait_message(NULL, 0), "");

    /* The scheduler keeps its cluster alive. */
    st_env e = st_env_small();
    gpusched_cluster_unref(e.c);
    gpusched_topo_unref(e.t);
    cr_assert_eq(gpusched_sched_queue_count(e.s), 1);
    cr_assert_str_eq(gpusched_sched_queue_name(e.s, 0), "root");
    gpusched_sched_free(e.s);
    gpusched_sched_decisions_free(e.d);
}

Test(sched_api, parameters)
{
    st_env e = st_env_small();
    int64_t v, lo, hi;
    const int64_t defaults[][2] = {{GPUSCHED_SCHED_PARAM_HALF_LIFE, 0}, {GPUSCHED_SCHED_PARAM_RESV_DEPTH, 1},
                                   {GPUSCHED_SCHED_PARAM_ORDER, GPUSCHED_SCHED_ORDER_FAIR},
                                   {GPUSCHED_SCHED_PARAM_STRICT, 0}, {GPUSCHED_SCHED_PARAM_QUOTAS, 1},
                                   {GPUSCHED_SCHED_PARAM_PREEMPT, 1}, {GPUSCHED_SCHED_PARAM_MIN_RUNTIME, 0},
                                   {GPUSCHED_SCHED_PARAM_AGE_LIMIT, 0}, {GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS, 0},
                                   {GPUSCHED_SCHED_PARAM_LARGE_GPUS, 0}, {GPUSCHED_SCHED_PARAM_KEEP_RESV, 1}};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        cr_assert_eq(gpusched_sched_param_get(e.s, (uint32_t)defaults[i][0], &v), 0);
        cr_assert_eq(v, defaults[i][1], "param %lld", (long long)defaults[i][0]);
        cr_assert_eq(gpusched_sched_param_bounds((uint32_t)defaults[i][0], &lo, &hi), 0);
        cr_assert(lo <= v && v <= hi);
        cr_assert_eq(gpusched_sched_param_set(e.s, (uint32_t)defaults[i][0], hi), 0);
        cr_assert_eq(gpusched_sched_param_get(e.s, (uint32_t)defaults[i][0], &v), 0);
        cr_assert_eq(v, hi);
        cr_assert_eq(gpusched_sched_param_set(e.s, (uint32_t)defaults[i][0], hi + 1), GPUSCHED_ERANGE);
        cr_assert(strstr(gpusched_sched_errmsg(e.s), "out of"), "%s", gpusched_sched_errmsg(e.s));
        cr_assert_eq(gpusched_sched_param_get(e.s, (uint32_t)defaults[i][0], &v), 0);
        cr_assert_eq(v, hi, "a refused value changes nothing");
    }
    cr_assert_eq(gpusched_sched_param_set(e.s, 0, 1), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_param_set(e.s, 99, 1), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_param_get(e.s, 99, &v), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_param_get(e.s, 1, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_param_bounds(0, &lo, &hi), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_param_bounds(1, NULL, &hi), GPUSCHED_EINVAL);
    st_env_free(&e);
}

Test(sched_api, queue_tree_and_bad_queues)
{
    st_env e = st_env_small();
    uint32_t org = st_queue(&e, "org", GPUSCHED_SCHED_ROOT, 64);
    uint32_t a = st_queue(&e, "team-a", org, 32);
    uint32_t b = st_queue(&e, "team.b_2", org, 16);
    cr_assert_eq(gpusched_sched_queue_count(e.s), 4);
    uint32_t id;
    cr_assert_eq(gpusched_sched_queue_find(e.s, "team-a", &id), 0);
    cr_assert_eq(id, a);
    cr_assert_eq(gpusched_sched_queue_find(e.s, "root", &id), 0);
    cr_assert_eq(id, 0);
    cr_assert_eq(gpusched_sched_queue_find(e.s, "nobody", &id), GPUSCHED_ENOENT);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "nobody"));
    uint64_t quota;
    cr_assert_eq(gpusched_sched_queue_usage(e.s, org, 0, NULL, &quota, NULL, NULL, NULL), 0);
    cr_assert_eq(quota, 64 + 32 + 16, "a subtree quota sums its children's");

    gpusched_sched_queue q = GPUSCHED_SCHED_QUEUE_INIT;
    q.name = "team-a";
    cr_assert_eq(gpusched_sched_queue_add(e.s, &q, &id), GPUSCHED_EEXIST);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "exists"), "%s", gpusched_sched_errmsg(e.s));
    q.name = "bad name";
    cr_assert_eq(gpusched_sched_queue_add(e.s, &q, &id), GPUSCHED_EINVAL);
    q.name = "";
    cr_assert_eq(gpusched_sched_queue_add(e.s, &q, &id), GPUSCHED_EINVAL);
    q.name = NULL;
    cr_assert_eq(gpusched_sched_queue_add(e.s, &q, &id), GPUSCHED_EINVAL);
    q.name = "ok";
    q.parent = 77;
    cr_assert_eq(gpusched_sched_queue_add(e.s, &q, &id), GPUSCHED_ENOENT);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "parent 77"), "%s", gpusched_sched_errmsg(e.s));
    q.parent = 0;
    q.weight = 1000001;
    cr_assert_eq(gpusched_sched_queue_add(e.s, &q, &id), GPUSCHED_EINVAL);
    q.weight = 0;
    q.size = 8;
    cr_assert_eq(gpusched_sched_queue_add(e.s, &q, &id), GPUSCHED_EINVAL, "a size below the first version");
    struct {
        gpusched_sched_queue q;
        uint64_t extra;
    } big = {GPUSCHED_SCHED_QUEUE_INIT, 1};
    big.q.size = sizeof big;
    big.q.name = "ok";
    cr_assert_eq(gpusched_sched_queue_add(e.s, &big.q, &id), GPUSCHED_E2BIG);
    big.extra = 0;
    cr_assert_eq(gpusched_sched_queue_add(e.s, &big.q, &id), 0, "zero trailing bytes are fine");
    cr_assert_eq(gpusched_sched_queue_count(e.s), 5, "only the good queue was added");

    /* Cycles in the tree. */
    cr_assert_eq(gpusched_sched_queue_parent_set(e.s, org, a), GPUSCHED_EINVAL);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "cycle"), "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(gpusched_sched_queue_parent_set(e.s, org, org), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_queue_parent_set(e.s, 0, a), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_queue_parent_set(e.s, a, 99), GPUSCHED_ENOENT);
    /* A legal move: b goes to the root, org's quota shrinks. */
    cr_assert_eq(gpusched_sched_queue_parent_set(e.s, b, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(gpusched_sched_queue_usage(e.s, org, 0, NULL, &quota, NULL, NULL, NULL), 0);
    cr_assert_eq(quota, 64 + 32);

    /* Only leaves hold jobs. */
    st_submit(&e, 1, a, 4, 0, 10);
    cr_assert_eq(st_submit_full(&e, 2, org, 4, 0, 0, 10, 0), GPUSCHED_ESTATE);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "leaf"), "%s", gpusched_sched_errmsg(e.s));
    q = (gpusched_sched_queue)GPUSCHED_SCHED_QUEUE_INIT;
    q.name = "under-a";
    q.parent = a;
    cr_assert_eq(gpusched_sched_queue_add(e.s, &q, &id), GPUSCHED_ESTATE);
    cr_assert_eq(gpusched_sched_queue_parent_set(e.s, b, a), GPUSCHED_ESTATE);

    /* Depth limit. */
    uint32_t parent = b;
    char name[16];
    int rc = 0;
    for (uint32_t d = 0; d < GPUSCHED_SCHED_MAX_DEPTH + 2 && rc == 0; d++) {
        snprintf(name, sizeof name, "deep%u", d);
        q.name = name;
        q.parent = parent;
        rc = gpusched_sched_queue_add(e.s, &q, &parent);
    }
    cr_assert_eq(rc, GPUSCHED_ELIMIT);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "deeper"), "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(gpusched_sched_check(e.s), 0, "%s", gpusched_sched_errmsg(e.s));
    st_env_free(&e);
}

Test(sched_api, quotas_that_overflow_are_refused)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 10), b = st_queue(&e, "b", 0, 10);
    const uint64_t big = GPUSCHED_SCHED_QUOTA_MAX / 2 + 1;
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, a, 0, big, GPUSCHED_SCHED_UNLIMITED, GPUSCHED_SCHED_UNLIMITED), 0);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, b, 0, big, GPUSCHED_SCHED_UNLIMITED, GPUSCHED_SCHED_UNLIMITED),
                 GPUSCHED_ERANGE);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "sum past 2^62"), "%s", gpusched_sched_errmsg(e.s));
    uint64_t quota;
    cr_assert_eq(gpusched_sched_queue_usage(e.s, b, 0, NULL, &quota, NULL, NULL, NULL), 0);
    cr_assert_eq(quota, 10, "the refused quota changed nothing");
    cr_assert_eq(gpusched_sched_queue_usage(e.s, 0, 0, NULL, &quota, NULL, NULL, NULL), 0);
    cr_assert_eq(quota, big + 10);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, b, 0, GPUSCHED_SCHED_QUOTA_MAX + 1, 0, 0), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, b, 0, 1, GPUSCHED_SCHED_QUOTA_MAX + 1, 0), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, b, 0, 1, 0, GPUSCHED_SCHED_UNLIMITED - 1), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, b, 2, 1, 0, 0), GPUSCHED_ERANGE, "one class: resources 0, 1");
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, 9, 0, 1, 0, 0), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_sched_queue_usage(e.s, 9, 0, NULL, NULL, NULL, NULL, NULL), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_sched_queue_usage(e.s, 0, 2, NULL, NULL, NULL, NULL, NULL), GPUSCHED_ERANGE);
    st_env_free(&e);
}

Test(sched_api, bad_jobs_change_nothing)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 96);
    st_submit(&e, 1, a, 4, 0, 10);
    cr_assert_eq(st_submit_full(&e, 2, 42, 4, 0, 0, 10, 0), GPUSCHED_ENOENT);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "queue 42"), "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(st_submit_full(&e, 1, a, 4, 0, 0, 10, 0), GPUSCHED_EEXIST);
    cr_assert_eq(st_submit_full(&e, 2, a, 4, GPUSCHED_SCHED_PRIORITY_MAX + 1, 0, 10, 0), GPUSCHED_ERANGE);
    cr_assert_eq(st_submit_full(&e, 2, a, 4, 0, 0, -1, 0), GPUSCHED_ERANGE);
    cr_assert_eq(st_submit_full(&e, 2, a, 4, 0, 0, 10, 0x80), GPUSCHED_EINVAL);
    cr_assert_eq(st_submit_full(&e, 2, a, 0, 0, 0, 10, 0), GPUSCHED_EINVAL, "0 GPUs");
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "submit:"), "%s", gpusched_sched_errmsg(e.s));
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.gpus = 4;
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    gpusched_sched_job j = GPUSCHED_SCHED_JOB_INIT;
    j.id = 3;
    j.queue = a;
    j.request = &q;
    cr_assert_eq(gpusched_sched_submit(e.s, &j), GPUSCHED_EINVAL, "the scheduler sets the request's flags");
    q.flags = 0;
    q.required_level = 7;
    cr_assert_eq(gpusched_sched_submit(e.s, &j), GPUSCHED_ERANGE);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "required_level"), "%s", gpusched_sched_errmsg(e.s));
    j.request = NULL;
    cr_assert_eq(gpusched_sched_submit(e.s, &j), GPUSCHED_EINVAL);
    /* A job id running in the cluster, not through the scheduler. */
    gpusched_job cj = GPUSCHED_JOB_INIT;
    cj.id = 50;
    uint32_t node = 23;
    uint64_t mask = 1;
    cr_assert_eq(gpusched_cluster_allocate(e.c, &cj, 1, &node, &mask), 0);
    cr_assert_eq(st_submit_full(&e, 50, a, 4, 0, 0, 10, 0), GPUSCHED_EEXIST);
    uint32_t pending, running;
    cr_assert_eq(gpusched_sched_counts(e.s, &pending, &running), 0);
    cr_assert_eq(pending, 1);
    cr_assert_eq(running, 0);

    cr_assert_eq(gpusched_sched_cancel(e.s, 99), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_sched_job_end(e.s, 1, 0), GPUSCHED_ESTATE, "pending, not running");
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "pending"), "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 5);
    cr_assert(st_started(&e, 1));
    cr_assert_eq(gpusched_sched_cancel(e.s, 1), GPUSCHED_ESTATE, "running");
    cr_assert_eq(gpusched_sched_job_end(e.s, 1, 4), GPUSCHED_ERANGE, "time goes forward");
    cr_assert_eq(gpusched_sched_cycle(e.s, 4, e.d), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_sched_cycle(e.s, 5, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_job_end(e.s, 1, 6), 0);
    cr_assert_eq(gpusched_sched_job_end(e.s, 1, 6), GPUSCHED_ENOENT);
    uint64_t used;
    cr_assert_eq(gpusched_sched_queue_usage(e.s, a, 0, &used, NULL, NULL, NULL, NULL), 0);
    cr_assert_eq(used, 0);
    cr_assert_eq(gpusched_sched_check(e.s), 0, "%s", gpusched_sched_errmsg(e.s));
    st_env_free(&e);
}

Test(sched_api, cycle_starts_and_quiet_cycles)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 96);
    st_submit(&e, 1, a, 8, 0, 10);
    st_submit(&e, 2, a, 4, 1, 10);
    st_cycle(&e, 1);
    cr_assert_eq(gpusched_sched_decisions_quiet(e.d), 0);
    cr_assert_eq(st_nstarts(&e), 2);
    uint64_t id;
    uint32_t seq, n;
    const uint32_t *nodes;
    const uint64_t *masks;
    cr_assert_eq(gpusched_sched_decisions_start(e.d, 0, &id, &seq, &nodes, &masks, &n), 0);
    cr_assert_eq(id, 1, "submitted first, started first");
    cr_assert_eq(seq, 0);
    const uint32_t *cn;
    const uint64_t *cm;
    uint32_t cnn, g;
    cr_assert_eq(gpusched_cluster_job_allocation(e.c, 1, &cn, &cm, &cnn, &g), 0);
    cr_assert_eq(cnn, n);
    cr_assert_eq(g, 8);
    for (uint32_t i = 0; i < n; i++)
        cr_assert(cn[i] == nodes[i] && cm[i] == masks[i], "the decision is what the cluster holds");
    gpusched_job cj = GPUSCHED_JOB_INIT;
    cr_assert_eq(gpusched_cluster_job_find(e.c, 1, &cj), 0);
    cr_assert_eq(cj.start_time, 1);
    cr_assert_eq(gpusched_sched_decisions_start(e.d, 2, &id, &seq, &nodes, &masks, &n), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_sched_decisions_start(e.d, 0, &id, &seq, NULL, &masks, &n), GPUSCHED_EINVAL);
    cr_assert_eq(st_status(&e, 1), GPUSCHED_SCHED_JOB_RUNNING);

    st_cycle(&e, 2);
    cr_assert_eq(gpusched_sched_decisions_quiet(e.d), 1, "nothing new");
    cr_assert_eq(st_nstarts(&e), 0);
    st_submit(&e, 3, a, 4, 2, 10);
    st_cycle(&e, 2);
    cr_assert_eq(gpusched_sched_decisions_quiet(e.d), 0);
    cr_assert(st_started(&e, 3));
    st_env_free(&e);
}

/* A gang that does not fit though enough GPUs are free is explained by
 * the placement's reason and words, the same whether it was tried on every
 * node only (job 3, before any reservation) or first around a reservation
 * and then on every node (job 4, expected to end after job 3's). */
Test(sched_api, a_fit_wait_says_why_the_placement_failed)
{
    st_env e = st_env_small(); /* 2 blocks of 48 GPUs */
    uint32_t a = st_queue(&e, "a", 0, 96);
    st_submit(&e, 1, a, 40, 0, 100);
    st_submit(&e, 2, a, 40, 0, 100);
    st_cycle(&e, 1);
    cr_assert(st_started(&e, 1) && st_started(&e, 2));
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.gpus = 16;
    q.required_level = 0;
    cr_assert_eq(st_submit_req(&e, 3, a, &q, 0, 2, 10, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    q.gpus = 12;
    cr_assert_eq(st_submit_req(&e, 4, a, &q, 0, 2, 1000, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 2);
    const char *msg;
    gpusched_sched_wait w = st_wait(&e, 3, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_FIT, "reason %u: %s", w.reason, msg);
    cr_assert_eq(w.place_reason, GPUSCHED_REASON_REQUIRED);
    cr_assert_eq(w.free_gpus, 16);
    cr_assert(strstr(msg, "required block: the best block has 8 free GPUs, 16 asked"), "%s", msg);
    cr_assert_eq(w.time, 101, "reserved for when a block is free");
    w = st_wait(&e, 4, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_FIT, "reason %u: %s", w.reason, msg);
    cr_assert_eq(w.place_reason, GPUSCHED_REASON_REQUIRED);
    cr_assert(strstr(msg, "required block: the best block has 8 free GPUs, 12 asked"), "%s", msg);
    st_env_free(&e);
}

Test(sched_api, explanations_of_quota_and_fit)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "team-a", 0, 8);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, a, 0, 8, 0, GPUSCHED_SCHED_UNLIMITED), 0, "no borrowing");
    uint32_t b = st_queue(&e, "team-b", 0, 200);
    st_submit(&e, 1, a, 8, 0, 10);
    st_cycle(&e, 1);
    cr_assert(st_started(&e, 1));
    st_submit(&e, 2, a, 4, 1, 10);
    st_submit(&e, 3, b, 92, 2, 10);
    st_cycle(&e, 2);
    const char *msg;
    gpusched_sched_wait w = st_wait(&e, 2, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_QUOTA);
    cr_assert_eq(w.queue, a);
    cr_assert_eq(w.used, 8);
    cr_assert_eq(w.limit, 8);
    cr_assert_eq(w.requested, 4);
    cr_assert(strstr(msg, "team-a (gpus) holds 8 and may hold 8 now; 4 asked"), "%s", msg);
    /* The next cycle's decisions start a new string pool: the queue's name
     * is written again, not read from the last cycle's offsets. A new
     * gang first puts another text where the name was. */
    st_submit(&e, 4, b, 148, 3, 10);
    st_cycle(&e, 3);
    w = st_wait(&e, 2, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_QUOTA);
    cr_assert(strstr(msg, "team-a (gpus) holds 8 and may hold 8 now; 4 asked"), "second cycle: %s", msg);
    w = st_wait(&e, 4, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_FIT);
    cr_assert_eq(w.place_reason, GPUSCHED_REASON_NO_GPUS);
    cr_assert(strstr(msg, "does not fit now (88 GPUs free): 148 GPUs asked, 88 usable free in the cluster"), "%s",
              msg);
    cr_assert(gpusched_sched_cancel(e.s, 4) == 0);
    st_cycle(&e, 3);
    w = st_wait(&e, 3, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_FIT, "reason %u: %s", w.reason, msg);
    cr_assert_eq(w.place_reason, GPUSCHED_REASON_NO_GPUS);
    cr_assert_eq(w.free_gpus, 88);
    cr_assert_eq(w.time, 11, "it fits once job 1 ends, at 1 + 10");
    cr_assert(strstr(msg, "does not fit now (88 GPUs free)"), "%s", msg);
    cr_assert(strstr(msg, "reserved from 11"), "%s", msg);
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e.d), 1);
    uint64_t rid;
    int64_t rtime;
    uint32_t rlevel, rdom, rn;
    const uint32_t *rnodes;
    cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 0, &rid, &rtime, &rlevel, &rdom, &rnodes, &rn), 0);
    cr_assert_eq(rid, 3);
    cr_assert_eq(rtime, 11);
    cr_assert_eq(rlevel, GPUSCHED_NONE, "92 GPUs span both blocks");
    cr_assert_eq(rn, 23, "23 nodes of 4 GPUs");
    cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 1, &rid, NULL, NULL, NULL, NULL, NULL), GPUSCHED_ERANGE);
    /* The same from the job's state. */
    gpusched_sched_wait w2 = GPUSCHED_SCHED_WAIT_INIT;
    uint32_t st;
    cr_assert_eq(gpusched_sched_job_state(e.s, 2, &st, &w2), 0);
    cr_assert_eq(st, GPUSCHED_SCHED_JOB_PENDING);
    cr_assert_eq(w2.reason, GPUSCHED_SCHED_WAIT_QUOTA);
    w2.size = 4;
    cr_assert_eq(gpusched_sched_job_state(e.s, 2, &st, &w2), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_job_state(e.s, 77, &st, NULL), GPUSCHED_ENOENT);
    gpusched_sched_wait w3 = GPUSCHED_SCHED_WAIT_INIT;
    cr_assert_eq(gpusched_sched_decisions_wait(e.d, 99, &w3), GPUSCHED_ERANGE);
    cr_assert_str_eq(gpusched_sched_decisions_wait_message(e.d, 99), "");
    /* An older, shorter wait struct gets only its bytes. */
    struct {
        gpusched_sched_wait w;
    } old = {GPUSCHED_SCHED_WAIT_INIT};
    old.w.size = offsetof(gpusched_sched_wait, share);
    old.w.share = 1234.5;
    cr_assert_eq(gpusched_sched_decisions_wait(e.d, 0, &old.w), 0);
    cr_assert_eq(old.w.share, 1234.5, "bytes past the caller's size are not written");
    st_env_free(&e);
}

Test(sched_api, node_down_requeues_and_reports)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 96);
    st_submit(&e, 1, a, 4, 0, 100);
    st_cycle(&e, 1);
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_sched_decisions_start(e.d, 0, NULL, NULL, &nodes, &masks, &n), 0);
    uint32_t node = nodes[0];
    cr_assert_eq(gpusched_sched_node_health_set(e.s, node, GPUSCHED_NODE_DOWN, 2), 0, "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(st_status(&e, 1), GPUSCHED_SCHED_JOB_PENDING);
    cr_assert_eq(gpusched_cluster_job_find(e.c, 1, NULL), GPUSCHED_ENOENT);
    st_cycle(&e, 3);
    const uint64_t *victims, *for_jobs;
    cr_assert_eq(gpusched_sched_decisions_evictions(e.d, &victims, &for_jobs, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(victims[0], 1);
    cr_assert_eq(for_jobs[0], 0, "a node failure, no preemptor");
    cr_assert(st_started(&e, 1), "restarted elsewhere");
    cr_assert_eq(gpusched_sched_decisions_start(e.d, 0, NULL, NULL, &nodes, &masks, &n), 0);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_neq(nodes[i], node);
    cr_assert_eq(gpusched_sched_node_health_set(e.s, 999, GPUSCHED_NODE_UP, 3), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_sched_node_health_set(e.s, node, 9, 3), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_sched_node_health_set(e.s, node, GPUSCHED_NODE_UP, 1), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_sched_node_health_set(e.s, node, GPUSCHED_NODE_UP, 4), 0);
    st_env_free(&e);
}

/* Two GPU classes: a class quota binds the gangs that ask for the class. */
Test(sched_api, class_quotas)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *lv[] = {"rack"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 1, lv), 0);
    for (int i = 0; i < 4; i++) {
        const char *path[] = {i < 2 ? "r0" : "r1"};
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, 8, i < 2 ? "h100" : "a100", NULL, 0), 0);
    }
    st_env e = {0};
    cr_assert_eq(gpusched_topo_builder_freeze(b, &e.t), 0);
    gpusched_topo_builder_free(b);
    cr_assert_eq(gpusched_cluster_new(e.t, NULL, &e.c), 0);
    cr_assert_eq(gpusched_sched_new(e.c, NULL, &e.s), 0);
    cr_assert_eq(gpusched_sched_decisions_new(NULL, &e.d), 0);
    uint32_t h100;
    cr_assert_eq(gpusched_topo_class_find(e.t, "h100", &h100), 0);
    uint32_t a = st_queue(&e, "a", 0, 32);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, a, 1 + h100, 8, 0, GPUSCHED_SCHED_UNLIMITED), 0);
    for (uint64_t id = 1; id <= 2; id++) {
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        q.gpus = 8;
        q.gpu_class = h100;
        gpusched_sched_job j = GPUSCHED_SCHED_JOB_INIT;
        j.id = id;
        j.queue = a;
        j.submit_time = (int64_t)id;
        j.request = &q;
        cr_assert_eq(gpusched_sched_submit(e.s, &j), 0, "%s", gpusched_sched_errmsg(e.s));
    }
    st_submit(&e, 3, a, 8, 3, 10); /* any class: bound by the GPU quota only */
    st_cycle(&e, 5);
    cr_assert(st_started(&e, 1));
    cr_assert(st_started(&e, 3));
    const char *msg;
    gpusched_sched_wait w = st_wait(&e, 2, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_QUOTA);
    cr_assert_eq(w.resource, 1 + h100);
    cr_assert(strstr(msg, "class h100"), "%s", msg);
    uint64_t used;
    cr_assert_eq(gpusched_sched_queue_usage(e.s, a, 1 + h100, &used, NULL, NULL, NULL, NULL), 0);
    cr_assert_eq(used, 8);
    cr_assert_eq(gpusched_sched_queue_usage(e.s, a, 0, &used, NULL, NULL, NULL, NULL), 0);
    cr_assert_eq(used, 16);
    st_env_free(&e);
}

/* Queue b borrows with a 64-GPU gang and a 16-GPU one; queue a's 48-GPU
 * gang, within its nominal quota, needs 32 of the 96 GPUs back. Returns
 * the victims of the cycle that evaluates it. */
static uint32_t spare_run(int64_t max_gpus, uint64_t *victim)
{
    st_env e = st_env_small();
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS, max_gpus), 0);
    uint32_t a = st_queue(&e, "a", 0, 48), b = st_queue(&e, "b", 0, 48);
    cr_assert_eq(st_submit_full(&e, 1, b, 64, 0, 1, 100, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    cr_assert_eq(st_submit_full(&e, 2, b, 16, 0, 1, 100, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    st_cycle(&e, 2);
    cr_assert_eq(st_nstarts(&e), 2, "both start, b borrowing");
    gpusched_job job;
    cr_assert_eq(gpusched_cluster_job_find(e.c, 1, &job), 0);
    bool spared = max_gpus && 64 > max_gpus;
    cr_assert_eq((job.flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE) != 0, !spared,
                 "the large gang runs preemptible unless the limit spares it");
    cr_assert_eq(gpusched_cluster_job_find(e.c, 2, &job), 0);
    cr_assert(job.flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE, "the small one stays a possible victim");
    st_submit(&e, 3, a, 48, 3, 100);
    st_cycle(&e, 4);
    const uint64_t *victims, *for_jobs;
    uint32_t n;
    cr_assert_eq(gpusched_sched_decisions_evictions(e.d, &victims, &for_jobs, &n), 0);
    *victim = n ? victims[0] : 0;
    if (n) {
        cr_assert(st_started(&e, 3));
        cr_assert_eq(for_jobs[0], 3);
    } else {
        /* The small gang alone frees too little: the gang waits for room. */
        cr_assert_not(st_started(&e, 3));
        cr_assert_eq(st_wait(&e, 3, NULL).reason, GPUSCHED_SCHED_WAIT_FIT);
        uint32_t pending, running;
        cr_assert_eq(gpusched_sched_counts(e.s, &pending, &running), 0);
        cr_assert_eq(running, 2, "nothing evicted for nothing");
    }
    st_env_free(&e);
    return n;
}

Test(sched_api, preempt_max_gpus_spares_large_gangs)
{
    uint64_t victim;
    cr_assert_eq(spare_run(0, &victim), 1, "without a limit the 64-GPU gang makes room");
    cr_assert_eq(victim, 1);
    cr_assert_eq(spare_run(64, &victim), 1, "a limit of its size keeps it a victim");
    cr_assert_eq(victim, 1);
    cr_assert_eq(spare_run(63, &victim), 0, "one GPU less spares it");
}

/* Every allocation of a cycle fails in turn: the cycle reports ENOMEM or
 * succeeds, the scheduler stays consistent, the starts it reports run,
 * and a retry explains every gang still pending. */
Test(sched_api, cycle_out_of_memory_at_each_allocation)
{
    uint32_t cases = 0, failures = 0;
    for (uint32_t k = 0; k < 200; k++) {
        failalloc fa;
        failalloc_init(&fa, -1);
        st_env e = st_env_small();
        gpusched_sched_free(e.s);
        gpusched_sched_decisions_free(e.d);
        cr_assert_eq(gpusched_sched_new(e.c, &fa.a, &e.s), 0);
        cr_assert_eq(gpusched_sched_decisions_new(&fa.a, &e.d), 0);
        uint32_t qa = st_queue(&e, "a", 0, 48), qb = st_queue(&e, "b", 0, 48);
        static const uint32_t sizes[] = {8, 16, 4, 32, 8, 64, 2, 16, 24, 8, 40, 4};
        for (uint64_t id = 1; id <= 36; id++)
            st_submit(&e, id, id % 2 ? qa : qb, sizes[id % 12], (int64_t)id, 100 + (int64_t)id);
        fa.fail_at = fa.count + (long)k; /* the k-th allocation of the cycle */
        int rc = gpusched_sched_cycle(e.s, 50, e.d);
        fa.fail_at = -1;
        cr_assert(rc == 0 || rc == GPUSCHED_ENOMEM, "allocation %u: cycle returned %d", k, rc);
        cr_assert_eq(gpusched_sched_check(e.s), 0, "allocation %u: %s", k, gpusched_sched_errmsg(e.s));
        const uint64_t *ids;
        uint32_t ns, status;
        cr_assert_eq(gpusched_sched_decisions_starts(e.d, &ids, &ns), 0);
        for (uint32_t i = 0; i < ns; i++) {
            cr_assert_eq(gpusched_sched_job_state(e.s, ids[i], &status, NULL), 0);
            cr_assert_eq(status, GPUSCHED_SCHED_JOB_RUNNING, "allocation %u: started job %llu is not running", k,
                         (unsigned long long)ids[i]);
        }
        cases++;
        if (rc == 0) {
            st_env_free(&e);
            cr_assert_eq(fa.live, 0, "allocation %u: %ld blocks leaked", k, fa.live);
            if (!fa.failed)
                break; /* every allocation of the cycle was reached */
            continue;
        }
        failures++;
        /* The retry: every pending gang starts or is explained. */
        cr_assert_eq(gpusched_sched_cycle(e.s, 50, e.d), 0, "allocation %u: %s", k, gpusched_sched_errmsg(e.s));
        cr_assert_eq(gpusched_sched_check(e.s), 0, "allocation %u: %s", k, gpusched_sched_errmsg(e.s));
        uint32_t pending, running;
        cr_assert_eq(gpusched_sched_counts(e.s, &pending, &running), 0);
        cr_assert_eq(gpusched_sched_decisions_wait_count(e.d), pending, "allocation %u: %u waits, %u pending", k,
                     gpusched_sched_decisions_wait_count(e.d), pending);
        for (uint32_t i = 0; i < pending; i++) {
            gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT, js = GPUSCHED_SCHED_WAIT_INIT;
            cr_assert_eq(gpusched_sched_decisions_wait(e.d, i, &w), 0);
            cr_assert_neq(w.reason, GPUSCHED_SCHED_WAIT_NONE);
            cr_assert_eq(gpusched_sched_job_state(e.s, w.job_id, &status, &js), 0);
            cr_assert_eq(js.reason, w.reason);
            cr_assert_eq(js.seq, w.seq);
        }
        st_env_free(&e);
        cr_assert_eq(fa.live, 0, "allocation %u: %ld blocks leaked", k, fa.live);
    }
    cr_log_info("%u cycles, %u of them out of memory", cases, failures);
    cr_assert_gt(failures, 3, "the cycle allocates: some runs must fail");
    cr_assert_lt(cases, 200, "the cycle's allocations were not all reached");
}
