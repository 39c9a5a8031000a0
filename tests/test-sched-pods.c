/* Pod gangs in the scheduling cycle: quotas of cpu, memory (topology
 * resources) beside GPUs, GPU fractions charged by their milli, the memo
 * of failed shapes keyed by pod shape and count, preemption by and of pod
 * gangs, and their reservations. */
#include "sched-test.h"

/* 4 nodes of 4 GPUs (class a100), 16 cores and 64 GiB each, in one rack;
 * `cpu_only` more nodes without GPUs. */
static st_env sp_env(uint32_t cpu_only)
{
    char text[1024];
    int o = snprintf(text, sizeof text, "levels rack\nresources cpu memory\n");
    for (uint32_t i = 0; i < 4; i++)
        o += snprintf(text + o, sizeof text - (size_t)o, "node r0 g%u gpus=4 class=a100 cpu=16000 memory=65536\n", i);
    for (uint32_t i = 0; i < cpu_only; i++)
        o += snprintf(text + o, sizeof text - (size_t)o, "node r0 c%u gpus=0 cpu=16000 memory=65536\n", i);
    return st_env_text(text, (size_t)o);
}

/* The scheduler's resource index of topology resource `name`. */
static uint32_t sp_res(st_env *e, const char *name)
{
    uint32_t r;
    cr_assert_eq(gpusched_topo_resource_find(e->t, name, &r), 0);
    return 1 + gpusched_topo_class_count(e->t) + r;
}

/* A gang of `pods` pods of (cpu, memory) and `gpus` whole GPUs or `milli`,
 * at priority `prio` with job flags `flags`. */
static int sp_submit_pf(st_env *e, uint64_t id, uint32_t queue, uint32_t pods, uint32_t cpu, uint32_t mem,
                        uint32_t gpus, uint32_t milli, int64_t submit, int32_t prio, uint32_t flags)
{
    uint64_t res[2] = {cpu, mem};
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pods = pods;
    q.pod_gpus = gpus;
    q.gpu_milli = milli;
    q.resources = res;
    q.resource_count = 2;
    /* The request's arrays are the caller's only during the call. */
    int rc = st_submit_req(e, id, queue, &q, prio, submit, 100, flags);
    res[0] = res[1] = 0xdead;
    return rc;
}

static int sp_submit(st_env *e, uint64_t id, uint32_t queue, uint32_t pods, uint32_t cpu, uint32_t mem, uint32_t gpus,
                     uint32_t milli, int64_t submit)
{
    return sp_submit_pf(e, id, queue, pods, cpu, mem, gpus, milli, submit, 0, 0);
}

/* The cycle's only eviction is `victim`, for `for_job`. */
static void sp_evicted(st_env *e, uint64_t victim, uint64_t for_job)
{
    const uint64_t *victims, *for_jobs;
    uint32_t n;
    cr_assert_eq(gpusched_sched_decisions_evictions(e->d, &victims, &for_jobs, &n), 0);
    cr_assert_eq(n, 1, "%u evictions", n);
    cr_assert_eq(victims[0], victim, "victim %llu", (unsigned long long)victims[0]);
    cr_assert_eq(for_jobs[0], for_job);
}

static uint64_t sp_used(st_env *e, uint32_t queue, uint32_t resource)
{
    uint64_t used = 0;
    cr_assert_eq(gpusched_sched_queue_usage(e->s, queue, resource, &used, NULL, NULL, NULL, NULL), 0, "%s",
                 gpusched_sched_errmsg(e->s));
    return used;
}

Test(sched_pods, cpu_quota_admits_and_explains)
{
    st_env e = sp_env(1);
    const uint32_t cpu = sp_res(&e, "cpu"), mem = sp_res(&e, "memory");
    uint32_t a = st_queue(&e, "team-a", 0, 16);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, a, cpu, 20000, 0, GPUSCHED_SCHED_UNLIMITED), 0, "%s",
                 gpusched_sched_errmsg(e.s));
    cr_assert_eq(sp_submit(&e, 1, a, 4, 4000, 8192, 1, 0, 1), 0, "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(sp_submit(&e, 2, a, 2, 4000, 1024, 0, 0, 2), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 10);
    cr_assert(st_started(&e, 1));
    cr_assert_not(st_started(&e, 2));
    const char *msg;
    gpusched_sched_wait w = st_wait(&e, 2, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_QUOTA);
    cr_assert_eq(w.resource, cpu);
    cr_assert_eq(w.used, 16000);
    cr_assert_eq(w.requested, 8000);
    cr_assert_eq(w.limit, 20000);
    cr_assert(strstr(msg, "team-a (cpu)"), "%s", msg);
    cr_assert_eq(sp_used(&e, a, cpu), 16000);
    cr_assert_eq(sp_used(&e, a, mem), 4 * 8192);
    cr_assert_eq(sp_used(&e, a, 0), 4);
    /* The running gang's cpu comes back when it ends. */
    cr_assert_eq(gpusched_sched_job_end(e.s, 1, 20), 0);
    cr_assert_eq(sp_used(&e, a, cpu), 0);
    st_cycle(&e, 21);
    cr_assert(st_started(&e, 2));
    cr_assert_eq(sp_used(&e, a, cpu), 8000);
    cr_assert_eq(sp_used(&e, a, 0), 0, "pods without GPUs use no GPU quota");
    st_env_free(&e);
}

/* With quotas off, a gang over its queue's cpu quota that does not fit
 * waits for room: its wait speaks of the GPUs it asks, not of the cpu it
 * would pass the quota by (the quick waits and the full evaluation agree). */
Test(sched_pods, quotas_off_a_fit_wait_asks_gpus_not_the_resource_over_quota)
{
    st_env e = sp_env(0);
    const uint32_t cpu = sp_res(&e, "cpu");
    uint32_t a = st_queue(&e, "team-a", 0, 64); /* GPUs within quota: only cpu is over */
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, a, cpu, 4000, 0, GPUSCHED_SCHED_UNLIMITED), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_QUOTAS, 0), 0);
    /* Every GPU taken, then 2 pods of 2 GPUs and 6 cores each. */
    cr_assert_eq(sp_submit(&e, 1, a, 4, 1000, 1024, 4, 0, 1), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 5);
    cr_assert(st_started(&e, 1));
    cr_assert_eq(sp_submit(&e, 2, a, 2, 6000, 1024, 2, 0, 6), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 10);
    const char *msg;
    gpusched_sched_wait w = st_wait(&e, 2, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_FIT, "reason %u: %s", w.reason, msg);
    cr_assert_eq(w.requested, 4, "requested %llu", (unsigned long long)w.requested);
    cr_assert(strstr(msg, "4 GPUs asked"), "%s", msg);
    st_env_free(&e);
}

Test(sched_pods, fractions_are_charged_by_their_milli)
{
    st_env e = sp_env(0);
    uint32_t a = st_queue(&e, "a", 0, 3);
    /* 4 pods of half a GPU: 2 GPUs of quota (4 GPUs touched); then 4 more
     * fit into the halves left although no GPU is whole. */
    cr_assert_eq(sp_submit(&e, 1, a, 4, 1000, 1024, 0, 500, 1), 0, "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(sp_submit(&e, 2, a, 12, 1000, 1024, 1, 0, 2), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 10);
    cr_assert(st_started(&e, 1));
    cr_assert_eq(sp_used(&e, a, 0), 2);
    gpusched_sched_wait w = st_wait(&e, 2, NULL);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_QUOTA, "12 GPUs over a quota of 3 with 2 used");
    cr_assert_eq(gpusched_sched_cancel(e.s, 2), 0);
    uint32_t b = st_queue(&e, "b", 0, 16);
    cr_assert_eq(sp_submit(&e, 3, b, 12, 1000, 1024, 1, 0, 3), 0, "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(sp_submit(&e, 4, b, 4, 1000, 1024, 0, 500, 4), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 11);
    cr_assert(st_started(&e, 3), "12 whole GPUs on the 12 GPUs not shared");
    cr_assert(st_started(&e, 4), "no whole GPU is free, but the shared halves hold 4 pods");
    cr_assert_eq(sp_used(&e, b, 0), 14);
    uint32_t milli;
    for (uint32_t n = 0; n < 4; n++)
        for (uint32_t g = 0; g < 4; g++) {
            cr_assert_eq(gpusched_cluster_gpu_milli_free(e.c, n, g, &milli), 0);
            cr_assert_eq(milli, 0, "node %u GPU %u has %u milli free", n, g, milli);
        }
    st_env_free(&e);
}

Test(sched_pods, failed_shapes_are_remembered_by_pod_count_and_forgotten_when_resources_free)
{
    st_env e = sp_env(1);
    uint32_t a = st_queue(&e, "a", 0, 16);
    /* cpu-only pods: the five nodes hold 5 pods of 12 cores. */
    cr_assert_eq(sp_submit(&e, 1, a, 5, 12000, 1024, 0, 0, 1), 0, "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(sp_submit(&e, 2, a, 1, 12000, 1024, 0, 0, 2), 0, "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(sp_submit(&e, 3, a, 1, 4000, 1024, 0, 0, 3), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 10);
    cr_assert(st_started(&e, 1));
    cr_assert(st_started(&e, 3), "a smaller shape is not the failed one");
    const char *msg;
    gpusched_sched_wait w = st_wait(&e, 2, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_FIT, "%s", msg);
    cr_assert(strstr(msg, "cpu"), "the explanation names the short resource: %s", msg);
    /* Gang 3 ends: 4 cores come back, not enough for a 12-core pod. */
    cr_assert_eq(gpusched_sched_job_end(e.s, 3, 20), 0);
    st_cycle(&e, 21);
    cr_assert_eq(st_wait(&e, 2, NULL).reason, GPUSCHED_SCHED_WAIT_FIT);
    /* Gang 1 ends: the 12 cores exist again and the memo must not hide them. */
    cr_assert_eq(gpusched_sched_job_end(e.s, 1, 30), 0);
    st_cycle(&e, 31);
    cr_assert(st_started(&e, 2));
    st_env_free(&e);
}

Test(sched_pods, resources_freed_outside_the_scheduler_end_the_memo)
{
    st_env e = sp_env(0);
    uint32_t a = st_queue(&e, "a", 0, 16);
    /* The caller runs a cpu-only job of its own on every node. */
    gpusched_placer *p;
    gpusched_place_result *res;
    cr_assert_eq(gpusched_placer_new(e.c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    uint64_t amounts[2] = {15000, 1024};
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pods = 4;
    q.resources = amounts;
    q.resource_count = 2;
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    gpusched_job job = GPUSCHED_JOB_INIT;
    job.id = 900;
    q.job = &job;
    cr_assert_eq(gpusched_placer_place(p, &q, res), 0, "%s", gpusched_placer_errmsg(p));
    cr_assert_eq(sp_submit(&e, 1, a, 1, 8000, 1024, 1, 0, 1), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 10);
    cr_assert_eq(st_wait(&e, 1, NULL).reason, GPUSCHED_SCHED_WAIT_FIT);
    /* Its release frees cpu only (no GPU count moves). */
    cr_assert_eq(gpusched_cluster_release(e.c, 900), 0);
    cr_assert_eq(sp_submit(&e, 2, a, 1, 1000, 1024, 0, 0, 2), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 11);
    cr_assert(st_started(&e, 1));
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    st_env_free(&e);
}

Test(sched_pods, pod_gangs_preempt_are_preempted_reserve_and_take_no_bad_input)
{
    st_env e = sp_env(0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_PREEMPT, 1), 0);
    uint32_t a = st_queue(&e, "a", 0, 64);
    const uint32_t pre = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
    cr_assert_eq(st_submit_full(&e, 1, a, 16, -5, 1, 100, pre), 0);
    st_cycle(&e, 2);
    cr_assert(st_started(&e, 1));
    /* A pod gang evicts a whole-GPU job for its GPUs. */
    cr_assert_eq(sp_submit_pf(&e, 2, a, 2, 1000, 1024, 4, 0, 3, 3, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 4);
    sp_evicted(&e, 1, 2);
    cr_assert(st_started(&e, 2));
    /* A preemptible pod gang without GPUs takes all but 1000 of each
     * node's cpu (job 2 holds 1000 on two nodes); job 1 waits. */
    cr_assert_eq(gpusched_sched_cancel(e.s, 1), 0);
    cr_assert_eq(sp_submit_pf(&e, 3, a, 4, 15000, 1024, 0, 0, 5, -1, pre), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 6);
    cr_assert(st_started(&e, 3));
    /* A pod of 2000 cpu fits nowhere now, with 8 GPUs free: the eviction
     * frees cpu, which counting GPUs would not see. */
    cr_assert_eq(sp_submit_pf(&e, 4, a, 1, 2000, 1024, 0, 0, 7, 5, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 8);
    sp_evicted(&e, 3, 4);
    cr_assert(st_started(&e, 4));
    cr_assert_eq(sp_used(&e, a, sp_res(&e, "cpu")), 4000);
    /* A pod that fits nowhere even with every victim gone waits, without
     * evicting or a reservation; the evicted gang, which fits once jobs
     * end, gets the reservation. */
    cr_assert_eq(sp_submit_pf(&e, 5, a, 1, 17000, 1024, 0, 0, 9, 9, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 10);
    const uint64_t *victims, *for_jobs;
    uint32_t n;
    cr_assert_eq(gpusched_sched_decisions_evictions(e.d, &victims, &for_jobs, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e.d), 1);
    uint64_t rid;
    int64_t rtime;
    cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 0, &rid, &rtime, NULL, NULL, NULL, NULL), 0);
    cr_assert_eq(rid, 3);
    /* It needs 15,000 cpu on each node: jobs 2 and 4 gone (started at 4
     * and 8, limits of 100). */
    cr_assert_eq(rtime, 108, "reserved at %lld", (long long)rtime);
    cr_assert_eq(st_wait(&e, 5, NULL).reason, GPUSCHED_SCHED_WAIT_FIT);
    /* Bad pods are refused at submit with the placer's words. */
    uint32_t pending, running;
    cr_assert_eq(gpusched_sched_counts(e.s, &pending, &running), 0);
    cr_assert_eq(sp_submit(&e, 3, a, 2, 1000, 1024, 2, 500, 5), GPUSCHED_EINVAL);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "fraction"), "%s", gpusched_sched_errmsg(e.s));
    uint64_t too_many[3] = {1, 2, 3};
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pods = 1;
    q.resources = too_many;
    q.resource_count = 3;
    gpusched_sched_job j = GPUSCHED_SCHED_JOB_INIT;
    j.id = 4;
    j.queue = a;
    j.request = &q;
    cr_assert_lt(gpusched_sched_submit(e.s, &j), 0);
    uint32_t pending2, running2;
    cr_assert_eq(gpusched_sched_counts(e.s, &pending2, &running2), 0);
    cr_assert_eq(pending2, pending);
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, a, sp_res(&e, "memory") + 1, 1, 0, 0), GPUSCHED_ERANGE);
    cr_assert(strstr(gpusched_sched_errmsg(e.s), "2 topology resources"), "%s", gpusched_sched_errmsg(e.s));
    cr_assert_eq(gpusched_sched_check(e.s), 0, "%s", gpusched_sched_errmsg(e.s));
    st_env_free(&e);
}

/* A gang counted in pods (pods = 4 of 2 GPUs) and a whole-GPU gang of the
 * same split and pod size (gpus = 4 in pods of 2) have the same request
 * but for the size, which counts pods in one and GPUs in the other: the
 * memo of failed shapes must not take one's failure at 4 pods (8 GPUs) for
 * the other's at 4 GPUs. */
Test(sched_pods, a_failure_counted_in_pods_is_not_one_counted_in_gpus)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 96);
    /* The caller's job leaves 2 GPUs free on nodes 0 and 1 and 1 on nodes
     * 2 to 5: 8 free, room for two pods of 2 and no more. */
    uint32_t nodes[24];
    uint64_t masks[24];
    for (uint32_t n = 0; n < 24; n++) {
        nodes[n] = n;
        masks[n] = n < 2 ? 0x3 : n < 6 ? 0x7 : 0xf;
    }
    st_hold(&e, 900, 24, nodes, masks);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = 2;
    q.pods = 4;
    cr_assert_eq(st_submit_req(&e, 1, a, &q, 0, 1, 100, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    q.pods = 0;
    q.gpus = 4;
    cr_assert_eq(st_submit_req(&e, 2, a, &q, 0, 2, 100, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 10);
    const char *msg;
    cr_assert_eq(st_wait(&e, 1, &msg).reason, GPUSCHED_SCHED_WAIT_FIT, "%s", msg);
    cr_assert(st_started(&e, 2), "4 GPUs in pods of 2 fit nodes 0 and 1: %s", (st_wait(&e, 2, &msg), msg));
    st_env_free(&e);
}
