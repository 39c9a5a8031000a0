/* Reservations and backfill. The property: in a discrete-event simulation
 * with exact run times, first-come-first-served order and no preemption,
 * the head gang's reservation is never delayed by the gangs that backfill
 * (it starts at or before the time first reserved for it, and its reserved
 * time never moves later), for reservation depths 1 to 3, with whole-GPU
 * gangs and with a mix that adds pod gangs of cpu, memory and GPU
 * fractions; backfill does happen. Then hand-made cases: EASY,
 * conservative depth, greedy first fit starving a big gang, a prediction
 * shorter than the limit. */
#include "place-test.h"
#include "sched-test.h"

#define NJ 160

typedef struct simjob {
    int64_t submit, dur, start, first_resv, last_resv;
    uint32_t gpus;
    uint32_t pods, cpu, milli; /* pods > 0: a pod gang of `gpus` GPUs per pod or a fraction */
    int state;                 /* 0 not submitted, 1 pending, 2 running, 3 done */
} simjob;

/* Half the gangs of the mix: pods of cpu with 0 to 2 whole GPUs or a
 * fraction each. */
static void pod_shape(pt_rng *r, simjob *j)
{
    j->pods = 1 + pt_below(r, 8);
    j->cpu = 1000 * (1 + pt_below(r, 16));
    j->gpus = pt_below(r, 3);
    j->milli = j->gpus == 1 && pt_below(r, 2) ? 250 * (1 + pt_below(r, 3)) : 0;
}

static void submit_pods(st_env *e, uint64_t id, uint32_t q, const simjob *j)
{
    uint64_t amounts[2] = {j->cpu, 4096};
    gpusched_place_request req = GPUSCHED_PLACE_REQUEST_INIT;
    req.split = GPUSCHED_SPLIT_PODS;
    req.pods = j->pods;
    req.pod_gpus = j->gpus;
    req.gpu_milli = j->milli;
    req.resources = amounts;
    req.resource_count = 2;
    cr_assert_eq(st_submit_req(e, id, q, &req, 0, j->submit, j->dur, 0), 0, "%s", gpusched_sched_errmsg(e->s));
}

static void simulate(uint64_t seed, int64_t depth, bool pods, uint32_t *backfills, uint32_t *pod_resv)
{
    pt_rng r = {seed * 0x2545f4914f6cdd1dull + 7};
    st_env e = pods ? st_env_small_cpu() : st_env_small();
    uint32_t q = st_queue(&e, "q", 0, 100000);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_ORDER, GPUSCHED_SCHED_ORDER_FIFO), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_PREEMPT, 0), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_RESV_DEPTH, depth), 0);
    static const uint32_t sizes[] = {1, 2, 4, 4, 8, 8, 8, 16, 16, 32, 48, 64, 96};
    simjob jobs[NJ + 1];
    int64_t t = 0;
    for (uint32_t i = 1; i <= NJ; i++) {
        t += pt_below(&r, 6);
        jobs[i] = (simjob){.submit = t, .dur = 1 + pt_below(&r, 60), .start = -1, .first_resv = -1, .last_resv = -1,
                           .gpus = sizes[pt_below(&r, 13)]};
        if (pods && pt_below(&r, 2))
            pod_shape(&r, &jobs[i]);
    }
    uint32_t done = 0, started_order = 0;
    int64_t now = 0;
    while (done < NJ) {
        /* The next event: an arrival or an end. */
        int64_t next = INT64_MAX;
        for (uint32_t i = 1; i <= NJ; i++) {
            if (jobs[i].state == 0 && jobs[i].submit < next)
                next = jobs[i].submit;
            if (jobs[i].state == 2 && jobs[i].start + jobs[i].dur < next)
                next = jobs[i].start + jobs[i].dur;
        }
        cr_assert_neq(next, INT64_MAX, "seed %llu: nothing runs and gangs wait forever", (unsigned long long)seed);
        now = next;
        for (uint32_t i = 1; i <= NJ; i++)
            if (jobs[i].state == 2 && jobs[i].start + jobs[i].dur == now) {
                cr_assert_eq(gpusched_sched_job_end(e.s, i, now), 0, "%s", gpusched_sched_errmsg(e.s));
                jobs[i].state = 3;
                done++;
            }
        for (uint32_t i = 1; i <= NJ; i++)
            if (jobs[i].state == 0 && jobs[i].submit == now) {
                if (jobs[i].pods)
                    submit_pods(&e, i, q, &jobs[i]);
                else
                    st_submit(&e, i, q, jobs[i].gpus, jobs[i].submit, jobs[i].dur);
                jobs[i].state = 1;
            }
        st_cycle(&e, now);
        const uint64_t *ids;
        uint32_t n;
        cr_assert_eq(gpusched_sched_decisions_starts(e.d, &ids, &n), 0);
        for (uint32_t k = 0; k < n; k++) {
            simjob *j = &jobs[ids[k]];
            j->start = now;
            j->state = 2;
            /* Started before an earlier-submitted gang that still waits: a backfill. */
            for (uint32_t i = 1; i < ids[k]; i++)
                if (jobs[i].state == 1) {
                    (*backfills)++;
                    break;
                }
            if (j->first_resv >= 0)
                cr_assert_leq(now, j->first_resv,
                              "seed %llu depth %lld: job %llu reserved for %lld started at %lld",
                              (unsigned long long)seed, (long long)depth, (unsigned long long)ids[k],
                              (long long)j->first_resv, (long long)now);
            started_order++;
        }
        if (gpusched_sched_decisions_reservation_count(e.d)) {
            uint64_t id;
            int64_t rt;
            cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 0, &id, &rt, NULL, NULL, NULL, NULL), 0);
            simjob *j = &jobs[id];
            /* The head: every gang submitted before it has started. */
            for (uint32_t i = 1; i < id; i++)
                cr_assert_geq(jobs[i].state, 2, "seed %llu: the reservation is job %llu's, job %u waits before it",
                              (unsigned long long)seed, (unsigned long long)id, i);
            cr_assert_gt(rt, now);
            if (j->first_resv < 0) {
                j->first_resv = rt;
                *pod_resv += j->pods != 0;
            }
            if (j->last_resv >= 0)
                cr_assert_leq(rt, j->last_resv, "seed %llu: job %llu's reservation moved from %lld to %lld",
                              (unsigned long long)seed, (unsigned long long)id, (long long)j->last_resv,
                              (long long)rt);
            j->last_resv = rt;
        }
    }
    cr_assert_eq(started_order, NJ);
    st_env_free(&e);
}

Test(sched_backfill, backfill_never_delays_the_head_reservation)
{
    uint32_t backfills = 0, pod_resv = 0;
    for (uint64_t seed = 1; seed <= 25; seed++)
        for (int64_t depth = 1; depth <= 3; depth++)
            simulate(seed, depth, false, &backfills, &pod_resv);
    cr_assert_gt(backfills, 100, "the simulation exercises backfill (%u)", backfills);
}

Test(sched_backfill, backfill_never_delays_the_head_reservation_of_pod_gangs)
{
    uint32_t backfills = 0, pod_resv = 0;
    for (uint64_t seed = 1; seed <= 25; seed++)
        for (int64_t depth = 1; depth <= 3; depth++)
            simulate(seed, depth, true, &backfills, &pod_resv);
    cr_log_info("%u backfills, %u pod gangs reserved for", backfills, pod_resv);
    cr_assert_gt(backfills, 100, "the simulation exercises backfill (%u)", backfills);
    cr_assert_gt(pod_resv, 25, "pod gangs get reservations (%u)", pod_resv);
}

/* 96 GPUs; job 1 holds 64 until 100. */
static st_env busy(uint32_t *q)
{
    st_env e = st_env_small();
    *q = st_queue(&e, "q", 0, 1000);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_ORDER, GPUSCHED_SCHED_ORDER_FIFO), 0);
    st_submit(&e, 1, *q, 64, 0, 100);
    st_cycle(&e, 0);
    cr_assert(st_started(&e, 1));
    return e;
}

Test(sched_backfill, easy_backfills_short_gangs_only)
{
    uint32_t q;
    st_env e = busy(&q);
    st_submit(&e, 2, q, 96, 1, 50);  /* the head: waits for job 1 */
    st_submit(&e, 3, q, 16, 2, 90);  /* ends at 100: backfills */
    st_submit(&e, 4, q, 8, 3, 200);  /* would end after 100, on reserved nodes */
    st_cycle(&e, 10);
    cr_assert(st_started(&e, 3));
    cr_assert_not(st_started(&e, 4));
    gpusched_sched_wait w = st_wait(&e, 2, NULL);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_FIT);
    cr_assert_eq(w.time, 100);
    w = st_wait(&e, 4, NULL);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_RESERVATION);
    cr_assert_eq(w.blocking_job, 2);
    cr_assert_eq(w.time, 100);
    st_env_free(&e);
}

Test(sched_backfill, greedy_first_fit_starves_the_big_gang)
{
    uint32_t q;
    st_env e = busy(&q);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_RESV_DEPTH, 0), 0);
    st_submit(&e, 2, q, 96, 1, 50);
    st_submit(&e, 4, q, 8, 3, 200);
    st_cycle(&e, 10);
    cr_assert(st_started(&e, 4), "no reservation: the long gang takes the GPUs");
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e.d), 0);
    cr_assert_eq(st_wait(&e, 2, NULL).time, -1);
    st_env_free(&e);
}

Test(sched_backfill, strict_order_waits_behind_the_head)
{
    uint32_t q;
    st_env e = busy(&q);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_STRICT, 1), 0);
    st_submit(&e, 2, q, 96, 1, 50);
    st_submit(&e, 3, q, 4, 2, 5);
    st_cycle(&e, 10);
    cr_assert_eq(st_nstarts(&e), 0);
    const char *msg;
    gpusched_sched_wait w = st_wait(&e, 3, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_ORDER);
    cr_assert_eq(w.blocking_job, 2);
    cr_assert(strstr(msg, "job 2"), "%s", msg);
    st_env_free(&e);
}

Test(sched_backfill, conservative_depth_reserves_several)
{
    uint32_t q;
    st_env e = busy(&q);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_RESV_DEPTH, 2), 0);
    st_submit(&e, 2, q, 48, 1, 50);   /* fits at 100, on job 1's GPUs */
    st_submit(&e, 3, q, 48, 2, 50);   /* avoids job 2's nodes: fits at 100 too */
    st_submit(&e, 4, q, 32, 3, 500);  /* fits now, but only on reserved nodes */
    st_cycle(&e, 10);
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e.d), 2);
    uint64_t id[2];
    int64_t t[2];
    const uint32_t *nodes[2];
    uint32_t n[2];
    for (uint32_t i = 0; i < 2; i++)
        cr_assert_eq(gpusched_sched_decisions_reservation(e.d, i, &id[i], &t[i], NULL, NULL, &nodes[i], &n[i]), 0);
    cr_assert_eq(id[0], 2);
    cr_assert_eq(id[1], 3);
    cr_assert_eq(t[0], 100);
    for (uint32_t a = 0; a < n[0]; a++)
        for (uint32_t b = 0; b < n[1]; b++)
            cr_assert_neq(nodes[0][a], nodes[1][b], "reservations do not share nodes");
    cr_assert_eq(st_wait(&e, 4, NULL).reason, GPUSCHED_SCHED_WAIT_RESERVATION);
    st_env_free(&e);
}

Test(sched_backfill, prediction_sets_the_expected_end)
{
    uint32_t q;
    st_env e = busy(&q);
    st_submit(&e, 2, q, 96, 1, 50);
    /* Limit 500 but predicted 20: expected to end by 100, so it backfills. */
    gpusched_place_request r = GPUSCHED_PLACE_REQUEST_INIT;
    r.gpus = 8;
    gpusched_sched_job j = GPUSCHED_SCHED_JOB_INIT;
    j.id = 3;
    j.queue = q;
    j.submit_time = 2;
    j.duration_limit = 500;
    j.duration_predicted = 20;
    j.request = &r;
    cr_assert_eq(gpusched_sched_submit(e.s, &j), 0);
    st_cycle(&e, 10);
    cr_assert(st_started(&e, 3));
    st_env_free(&e);
}

/* The starvation guard: a gang of a queue of high share, pending longer
 * than the age limit, goes first and gets the reservation; so does one of
 * at least `large` GPUs (0: off). The heavy queue's gang of 96 GPUs is
 * submitted at 0 and the light queue's gang of 64 at 1, or (light_older)
 * the other way round. */
static uint64_t head_reservation_of(int64_t age_limit, int64_t large, bool light_older)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "light", 0, 96), b = st_queue(&e, "heavy", 0, 96);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_AGE_LIMIT, age_limit), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_LARGE_GPUS, large), 0);
    st_submit(&e, 1, b, 64, 0, 100);
    st_cycle(&e, 0);
    cr_assert(st_started(&e, 1));
    st_submit(&e, 2, b, 96, light_older, 50); /* heavy's big gang */
    st_submit(&e, 3, a, 64, !light_older, 50); /* light's gang: lower share, first in the fair order */
    st_cycle(&e, 10);
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e.d), 1);
    uint64_t id;
    cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 0, &id, NULL, NULL, NULL, NULL, NULL), 0);
    cr_assert_eq(st_wait(&e, 2, NULL).reason, GPUSCHED_SCHED_WAIT_FIT);
    cr_assert_eq(st_wait(&e, 3, NULL).reason, GPUSCHED_SCHED_WAIT_FIT);
    st_env_free(&e);
    return id;
}

static uint64_t head_reservation(int64_t age_limit) { return head_reservation_of(age_limit, 0, false); }

Test(sched_backfill, starvation_guard_puts_old_gangs_first)
{
    cr_assert_eq(head_reservation(0), 3, "fair order: the light queue's gang is the head");
    cr_assert_eq(head_reservation(5), 2, "pending for 10 > 5: the heavy queue's gang goes first");
    cr_assert_eq(head_reservation(20), 3, "not old enough yet");
}

Test(sched_backfill, large_gangs_go_first_oldest_first)
{
    cr_assert_eq(head_reservation_of(0, 96, false), 2, "96 GPUs, large at 96: before the fair order");
    cr_assert_eq(head_reservation_of(0, 97, false), 3, "96 GPUs, large from 97: the fair order");
    cr_assert_eq(head_reservation_of(0, 64, false), 2, "both large: the older first");
    cr_assert_eq(head_reservation_of(0, 64, true), 3, "both large: the older first");
    cr_assert_eq(head_reservation_of(5, 96, true), 3, "old and large go together, oldest first");
    cr_assert_eq(head_reservation_of(20, 96, true), 2, "large, the other neither large nor old");
}

/* A gang expected to end after the head's reservation preempts outside
 * the reserved nodes; one expected to end before it may preempt anywhere.
 * The first one's failure to find victims (there are none outside the
 * reservation) is no answer for the second of the same shape, priority
 * and size. */
Test(sched_backfill, a_preemption_failed_outside_the_reservation_is_no_answer_for_a_short_gang)
{
    st_env e = st_env_small();
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_ORDER, GPUSCHED_SCHED_ORDER_FIFO), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_QUOTAS, 0), 0);
    uint32_t a = st_queue(&e, "a", 0, 96);
    /* 24 gangs of 4 fill the cluster: two preemptible ones ending at 100,
     * the others not preemptible, ending at 1000. */
    for (uint64_t id = 1; id <= 24; id++)
        cr_assert_eq(st_submit_full(&e, id, a, 4, 0, 0, id <= 2 ? 100 : 1000, id <= 2 ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0),
                     0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 0);
    cr_assert_eq(st_nstarts(&e), 24);
    /* The head (8 GPUs, no victims at its priority) is reserved the nodes
     * of gangs 1 and 2 from 100. */
    cr_assert_eq(st_submit_full(&e, 30, a, 8, 0, 1, 1000, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    /* A long gang of priority 5: its victims would be on reserved nodes. */
    cr_assert_eq(st_submit_full(&e, 31, a, 4, 5, 2, 1000, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    /* A short one of the same shape and priority: it ends by 100, and may
     * take gang 1's or 2's GPUs. */
    cr_assert_eq(st_submit_full(&e, 32, a, 4, 5, 3, 10, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 1);
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e.d), 1);
    uint64_t rj;
    int64_t rt;
    cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 0, &rj, &rt, NULL, NULL, NULL, NULL), 0);
    cr_assert(rj == 30 && rt == 100, "reserved %llu from %lld", (unsigned long long)rj, (long long)rt);
    cr_assert(!st_started(&e, 31), "gang 31 would run on the reserved nodes past their time");
    const char *msg;
    cr_assert(st_started(&e, 32), "gang 32 may preempt on the reserved nodes: %s", (st_wait(&e, 32, &msg), msg));
    st_env_free(&e);
}

/* A gang that fits only on reserved nodes makes later gangs of its shape
 * and no fewer GPUs wait behind the reservation without a search: that
 * holds for not fitting outside the reserved nodes (monotone in the size),
 * not for fitting on them. A larger gang that fits nowhere does not fit,
 * and may preempt outside the reserved nodes. */
Test(sched_backfill, a_larger_gang_than_one_behind_a_reservation_may_fit_nowhere)
{
    st_env e = st_env_small();
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_ORDER, GPUSCHED_SCHED_ORDER_FIFO), 0);
    uint32_t a = st_queue(&e, "a", 0, 96);
    /* The caller's jobs: 900 leaves 2 GPUs on nodes 0 and 1 and nodes 3,
     * 5 and 6 free; 901 holds node 2 until the first cycle is done. */
    uint32_t nodes[24], n = 0;
    uint64_t masks[24];
    for (uint32_t k = 0; k < 24; k++)
        if (k != 2 && k != 3 && k != 5 && k != 6) {
            nodes[n] = k;
            masks[n++] = k < 2 ? 0xc : 0xf;
        }
    st_hold(&e, 900, n, nodes, masks);
    nodes[0] = 2;
    masks[0] = 0xf;
    st_hold(&e, 901, 1, nodes, masks);
    /* Three gangs of 4 on nodes 3, 5 and 6: one ends at 100, two are
     * preemptible and long. */
    cr_assert_eq(st_submit_full(&e, 1, a, 4, 0, 0, 100, 0), 0);
    cr_assert_eq(st_submit_full(&e, 2, a, 4, 0, 0, 1000, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    cr_assert_eq(st_submit_full(&e, 3, a, 4, 0, 0, 1000, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    st_cycle(&e, 0);
    cr_assert_eq(st_nstarts(&e), 3);
    cr_assert_eq(gpusched_cluster_release(e.c, 901), 0);
    /* Free now: 2 on node 0, 2 on node 1, 4 on node 2. The head (two whole
     * nodes) is reserved node 2 and gang 1's node from 100. */
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.gpus = 8;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.pod_gpus = 4;
    cr_assert_eq(st_submit_req(&e, 10, a, &q, 0, 1, 1000, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    /* 4 GPUs in one pod: only node 2 has them, reserved. */
    cr_assert_eq(st_submit_full(&e, 11, a, 4, 0, 2, 1000, 0), 0);
    /* 8 GPUs in pods of 4, priority 5: nowhere now (8 free, one node of
     * 4); it preempts gangs 2 and 3, outside the reservation. */
    cr_assert_eq(st_submit_full(&e, 12, a, 8, 5, 3, 1000, 0), 0);
    st_cycle(&e, 1);
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e.d), 1);
    uint64_t rj;
    int64_t rt;
    cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 0, &rj, &rt, NULL, NULL, NULL, NULL), 0);
    cr_assert(rj == 10 && rt == 100, "reserved %llu from %lld", (unsigned long long)rj, (long long)rt);
    const char *msg;
    cr_assert_eq(st_wait(&e, 11, &msg).reason, GPUSCHED_SCHED_WAIT_RESERVATION, "%s", msg);
    cr_assert(st_started(&e, 12), "gang 12: %s", (st_wait(&e, 12, &msg), msg));
    const uint64_t *victims, *for_jobs;
    uint32_t nv;
    cr_assert_eq(gpusched_sched_decisions_evictions(e.d, &victims, &for_jobs, &nv), 0);
    cr_assert_eq(nv, 2);
    st_env_free(&e);
}

/* A cycle with no event since the last is quiet only if nothing can start
 * at the later time: a gang that crosses the age limit in between is
 * evaluated first, and may start where the reservation it waited behind
 * kept it out. Two schedulers with the same state, one of them also
 * given an event that changes nothing for these gangs, must decide the
 * same. */
static void aged_gang_env(st_env *e, uint32_t *a, uint32_t *b)
{
    *e = st_env_small();
    cr_assert_eq(gpusched_sched_param_set(e->s, GPUSCHED_SCHED_PARAM_ORDER, GPUSCHED_SCHED_ORDER_PRIORITY), 0);
    cr_assert_eq(gpusched_sched_param_set(e->s, GPUSCHED_SCHED_PARAM_QUOTAS, 0), 0);
    cr_assert_eq(gpusched_sched_param_set(e->s, GPUSCHED_SCHED_PARAM_AGE_LIMIT, 100), 0);
    *a = st_queue(e, "a", 0, 48);
    *b = st_queue(e, "b", 0, 48);
    st_submit(e, 1, *a, 88, 0, 1000);
    st_cycle(e, 0);
    cr_assert(st_started(e, 1));
    /* The head (priority 5) needs the whole cluster: every node is
     * reserved for it from 1000. Gang 3 (4 GPUs, long) fits only there. */
    cr_assert_eq(st_submit_full(e, 2, *a, 96, 5, 1, 1000, 0), 0);
    cr_assert_eq(st_submit_full(e, 3, *b, 4, 0, 0, 5000, 0), 0);
    st_cycle(e, 1);
    cr_assert_eq(st_wait(e, 3, NULL).reason, GPUSCHED_SCHED_WAIT_RESERVATION);
}

Test(sched_backfill, a_gang_crossing_the_age_limit_ends_a_quiet_spell)
{
    st_env e, f;
    uint32_t a, b;
    aged_gang_env(&e, &a, &b);
    aged_gang_env(&f, &a, &b);
    /* f also gets a gang of queue a that fits nowhere and is cancelled. */
    cr_assert_eq(st_submit_full(&f, 9, a, 96, 0, 150, 10, 0), 0);
    cr_assert_eq(gpusched_sched_cancel(f.s, 9), 0);
    st_cycle(&e, 200);
    st_cycle(&f, 200);
    cr_assert(st_started(&f, 3), "pending since 0, the oldest at 200: evaluated first, it fits");
    cr_assert(st_started(&e, 3), "the same without the event (quiet: %d)", gpusched_sched_decisions_quiet(e.d));
    st_env_free(&e);
    st_env_free(&f);
}

/* Running jobs with the same expected end are lent to a reservation's
 * search by id, not by the slot each got at submit: the same gangs
 * submitted in another order (same submit times, so the same queue order)
 * get the same reservation. */
static void tie_reservation(int swap, const uint32_t **nodes, uint32_t *n, st_env *e)
{
    *e = st_env_small();
    uint32_t a = st_queue(e, "a", 0, 192);
    st_submit(e, swap ? 2 : 1, a, 48, 0, 100);
    st_submit(e, swap ? 1 : 2, a, 48, 0, 100);
    st_submit(e, 3, a, 48, 0, 100);
    st_cycle(e, 0);
    cr_assert(st_started(e, 1) && st_started(e, 2));
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e->d), 1);
    uint64_t id;
    int64_t t;
    cr_assert_eq(gpusched_sched_decisions_reservation(e->d, 0, &id, &t, NULL, NULL, nodes, n), 0);
    cr_assert(id == 3 && t == 100);
}

Test(sched_backfill, a_reservation_does_not_depend_on_the_order_of_submits)
{
    st_env e, f;
    const uint32_t *x, *y;
    uint32_t nx, ny;
    tie_reservation(0, &x, &nx, &e);
    tie_reservation(1, &y, &ny, &f);
    /* Job 1 starts first in both, on the same nodes. */
    const uint32_t *n1, *m1;
    const uint64_t *g1, *h1;
    uint32_t k1, l1;
    cr_assert_eq(gpusched_cluster_job_allocation(e.c, 1, &n1, &g1, &k1, NULL), 0);
    cr_assert_eq(gpusched_cluster_job_allocation(f.c, 1, &m1, &h1, &l1, NULL), 0);
    cr_assert(k1 == l1 && !memcmp(n1, m1, k1 * sizeof *n1), "job 1 runs on the same nodes");
    cr_assert(nx == ny && !memcmp(x, y, nx * sizeof *x), "the same reservation: %u nodes from %u, %u from %u", nx,
              nx ? x[0] : 0, ny, ny ? y[0] : 0);
    st_env_free(&e);
    st_env_free(&f);
}

/* A reservation is placed on the state of its time: every job expected to
 * end by then is gone, not only the least count of ends in order (jobs 1
 * and 2 end together; the head fits once job 1 has ended). Otherwise a
 * gang that starts in the cycle and ends by then (it may use the reserved
 * nodes) moves the next cycle's reservation, and a gang that waited behind
 * this one starts with no event between: the cycle is not a fixpoint, and
 * a quiet cycle would not have started it. */
Test(sched_backfill, a_reservation_sees_every_end_by_its_time)
{
    st_env e = st_env_small();
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_ORDER, GPUSCHED_SCHED_ORDER_FIFO), 0);
    uint32_t a = st_queue(&e, "a", 0, 96);
    /* The caller holds nodes 4 to 23 (900), and steers job 1 to nodes 0
     * and 1 and job 2 to node 3. */
    uint32_t nodes[24], n = 0;
    uint64_t masks[24];
    for (uint32_t k = 4; k < 24; k++) {
        nodes[n] = k;
        masks[n++] = 0xf;
    }
    st_hold(&e, 900, n, nodes, masks);
    nodes[0] = 2, nodes[1] = 3, masks[0] = masks[1] = 0xf;
    st_hold(&e, 901, 2, nodes, masks);
    st_submit(&e, 1, a, 8, 0, 100);
    st_cycle(&e, 0);
    cr_assert(st_started(&e, 1));
    cr_assert_eq(gpusched_cluster_release(e.c, 901), 0);
    st_hold(&e, 902, 1, nodes, masks);
    st_submit(&e, 2, a, 4, 0, 100);
    st_cycle(&e, 0);
    cr_assert(st_started(&e, 2));
    cr_assert_eq(gpusched_cluster_release(e.c, 902), 0);
    /* Free: node 2. The head: three whole nodes of 4. Then a gang of 2
     * ending at 100 (it may use reserved nodes), then a long one of 2. */
    st_submit(&e, 10, a, 12, 1, 1000);
    cr_assert_eq(st_submit_full(&e, 11, a, 2, 0, 2, 99, 0), 0);
    cr_assert_eq(st_submit_full(&e, 12, a, 2, 0, 3, 1000, 0), 0);
    st_cycle(&e, 1);
    cr_assert(st_started(&e, 11));
    cr_assert_eq(gpusched_sched_decisions_reservation_count(e.d), 1);
    const uint32_t *rn;
    uint32_t nr;
    uint64_t rj;
    int64_t rt;
    cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 0, &rj, &rt, NULL, NULL, &rn, &nr), 0);
    cr_assert(rj == 10 && rt == 100 && nr == 3);
    uint32_t before[3];
    memcpy(before, rn, sizeof before);
    const int started12 = st_started(&e, 12);
    /* A cycle at 2 after an event that changes nothing (a gang submitted
     * and cancelled): the same reservation, and nothing starts. */
    st_submit(&e, 99, a, 1, 2, 10);
    cr_assert_eq(gpusched_sched_cancel(e.s, 99), 0);
    st_cycle(&e, 2);
    cr_assert_eq(st_nstarts(&e), 0, "job 12 (started at 1: %d) starts at 2 with nothing new", started12);
    cr_assert_eq(gpusched_sched_decisions_reservation(e.d, 0, &rj, &rt, NULL, NULL, &rn, &nr), 0);
    cr_assert(rj == 10 && rt == 100 && nr == 3 && !memcmp(rn, before, sizeof before),
              "the reservation moved: nodes %u %u %u, then %u %u %u", before[0], before[1], before[2], rn[0], rn[1],
              rn[2]);
    st_env_free(&e);
}
