/* Scheduling cycle scenarios (doc/sched.md, doc/bench.md):
 *
 *  sched.cycle.10k.ms    a full cycle over 10,000 pending gangs in 100
 *                        queues (10 organizations x 10 teams, quotas
 *                        summing to the cluster) on the 1M-GPU preset at
 *                        80% use: the steady cycle, where every pending
 *                        gang is evaluated again and few start; the first
 *                        cycle after the 10,000 arrive (thousands start)
 *                        is reported beside it;
 *  sched.event.us        one job end (or one submit) and then a cycle, on
 *                        the same state, median over a sequence of events;
 *  sched.sim.jobs_per_s  the trace simulator (examples/sim) replaying a
 *                        generated trace on a 64,512-GPU NVL72 cluster under
 *                        the full cycle, jobs per second of wall time.
 *
 * The cluster is filled through the scheduler (so every running job has a
 * queue and an expected end) with the placement scenarios' size mix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gpusched/gpusched.h"
#include "simcore.h"

#define BS_QUEUES 100u
#define BS_ORGS 10u

typedef struct bs_env {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_sched *s;
    gpusched_sched_decisions *d;
    uint32_t leaf[BS_QUEUES];
    uint64_t state;
    uint64_t next_id;
    uint64_t gpus;
    uint64_t *fill_ids;
    uint32_t nfill;
} bs_env;

static uint64_t bs_rand(bs_env *e)
{
    e->state ^= e->state << 13;
    e->state ^= e->state >> 7;
    e->state ^= e->state << 17;
    return e->state;
}

/* A gang of the size mix, shaped as the placement scenarios shape it. */
static int bs_submit(bs_env *e, uint32_t queue, uint32_t gpus, int64_t submit, int64_t dur)
{
    gpusched_place_request q;
    gpusched_job job;
    gsb_mix_request(&q, &job, 0, gpus);
    q.job = NULL;
    q.flags = 0;
    gpusched_sched_job j = GPUSCHED_SCHED_JOB_INIT;
    j.id = e->next_id++;
    j.queue = queue;
    j.priority = (int32_t)(bs_rand(e) % 3);
    j.submit_time = submit;
    j.duration_limit = dur;
    j.request = &q;
    return gpusched_sched_submit(e->s, &j);
}

static void bs_env_free(bs_env *e)
{
    free(e->fill_ids);
    gpusched_sched_decisions_free(e->d);
    gpusched_sched_free(e->s);
    gpusched_cluster_unref(e->c);
    gpusched_topo_unref(e->t);
}

/* The queues, then the cluster filled to `fill` percent through one cycle. */
static int bs_env_new(bs_env *e, uint32_t zones, uint32_t blocks, uint32_t fill)
{
    static const char *lv[] = {"zone", "block", "rack"};
    const uint32_t fan[] = {zones, blocks, 56, 18};
    char err[256];
    memset(e, 0, sizeof *e);
    e->state = 0x9e3779b97f4a7c15u;
    e->next_id = 1;
    if (gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &e->t, err, sizeof err) ||
        gpusched_cluster_new(e->t, NULL, &e->c) || gpusched_sched_new(e->c, NULL, &e->s) ||
        gpusched_sched_decisions_new(NULL, &e->d))
        return -1;
    e->gpus = gpusched_topo_gpu_count(e->t);
    uint64_t share = e->gpus / BS_QUEUES;
    for (uint32_t o = 0; o < BS_ORGS; o++) {
        char name[32];
        snprintf(name, sizeof name, "org%u", o);
        gpusched_sched_queue q = GPUSCHED_SCHED_QUEUE_INIT;
        q.name = name;
        uint32_t org;
        if (gpusched_sched_queue_add(e->s, &q, &org))
            return -1;
        for (uint32_t k = 0; k < BS_QUEUES / BS_ORGS; k++) {
            snprintf(name, sizeof name, "org%u-team%u", o, k);
            q.parent = org;
            q.weight = 1 + k % 3;
            uint32_t id;
            if (gpusched_sched_queue_add(e->s, &q, &id) ||
                gpusched_sched_queue_quota_set(e->s, id, 0, share, GPUSCHED_SCHED_UNLIMITED, GPUSCHED_SCHED_UNLIMITED))
                return -1;
            e->leaf[o * (BS_QUEUES / BS_ORGS) + k] = id;
        }
    }
    uint64_t want = e->gpus * fill / 100, asked = 0;
    uint32_t k = 0;
    while (asked < want) {
        uint32_t g = gsb_mix_size(bs_rand(e));
        if (bs_submit(e, e->leaf[k++ % BS_QUEUES], g, 0, 1000 + (int64_t)(bs_rand(e) % 100000)))
            return -1;
        asked += g;
    }
    if (gpusched_sched_cycle(e->s, 0, e->d))
        return -1;
    const uint64_t *ids;
    uint32_t n;
    gpusched_sched_decisions_starts(e->d, &ids, &n);
    e->fill_ids = malloc((size_t)(n ? n : 1) * sizeof *e->fill_ids);
    memcpy(e->fill_ids, ids, (size_t)n * sizeof *ids);
    e->nfill = n;
    /* What did not fit of the fill stays pending: withdraw it. */
    for (uint64_t id = 1; id < e->next_id; id++) {
        uint32_t st;
        if (gpusched_sched_job_state(e->s, id, &st, NULL) == 0 && st == GPUSCHED_SCHED_JOB_PENDING)
            gpusched_sched_cancel(e->s, id);
    }
    return 0;
}

/* The event scenario's loop, a function of its own so that a profiler
 * can count it alone (valgrind --toggle-collect='bs_events*'). */
static __attribute__((noinline)) void bs_events(bs_env *e, int count, double *te, int *ne, double *tend, int *nend,
                                                double *tsub, int *nsub)
{
    int64_t now = 11;
    for (int i = 0; i < count; i++, now++) {
        double s0 = gsb_now_ns();
        if (i % 2 == 0) {
            gpusched_sched_job_end(e->s, e->fill_ids[(uint32_t)(i / 2) % e->nfill], now);
        } else {
            bs_submit(e, e->leaf[bs_rand(e) % BS_QUEUES], gsb_mix_size(bs_rand(e)), now, 5000);
        }
        gpusched_sched_cycle(e->s, now, e->d);
        double us = (gsb_now_ns() - s0) / 1e3;
        te[(*ne)++] = us;
        if (i % 2 == 0)
            tend[(*nend)++] = us;
        else
            tsub[(*nsub)++] = us;
    }
}

static void bs_cycle(gsb_ctx *b)
{
    const int quick = gsb_quick(b), reps = gsb_reps(b);
    bs_env e;
    if (bs_env_new(&e, quick ? 1 : 8, quick ? 8 : 32, 80)) {
        fprintf(stderr, "bench-sched: setup failed\n");
        bs_env_free(&e);
        return;
    }
    uint64_t free_gpus = 0;
    gpusched_cluster_domain_free_gpus(e.c, GPUSCHED_NONE, 0, &free_gpus);
    const uint32_t npend = quick ? 2000 : 10000;
    for (uint32_t i = 0; i < npend; i++)
        bs_submit(&e, e.leaf[i % BS_QUEUES], gsb_mix_size(bs_rand(&e)), 1 + i / BS_QUEUES,
                  1000 + (int64_t)(bs_rand(&e) % 100000));
    double t0 = gsb_now_ns();
    gpusched_sched_cycle(e.s, 10, e.d);
    double first_ms = (gsb_now_ns() - t0) / 1e6;
    const uint64_t *ids;
    uint32_t first_starts;
    gpusched_sched_decisions_starts(e.d, &ids, &first_starts);
    uint32_t pending = 0, running = 0;
    gpusched_sched_counts(e.s, &pending, &running);

    /* The steady cycle: nothing changed, but the cycle is told so (a
     * parameter set to its value marks the state changed), so every pending
     * gang is evaluated again. */
    double t[32];
    uint32_t starts = 0, waits = 0, resv = 0;
    for (int i = 0; i < reps; i++) {
        gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_HALF_LIFE, 0);
        double s0 = gsb_now_ns();
        gpusched_sched_cycle(e.s, 10, e.d);
        t[i] = (gsb_now_ns() - s0) / 1e6;
        uint32_t n;
        gpusched_sched_decisions_starts(e.d, &ids, &n);
        starts += n;
        waits = gpusched_sched_decisions_wait_count(e.d);
        resv = gpusched_sched_decisions_reservation_count(e.d);
    }
    char params[320];
    snprintf(params, sizeof params,
             "\"gpus\": %llu, \"queues\": %u, \"pending\": %u, \"running\": %u, \"free_gpus_before\": %llu, "
             "\"waits\": %u, \"reservations\": %u, \"starts_in_timed_cycles\": %u",
             (unsigned long long)e.gpus, BS_QUEUES, pending, running, (unsigned long long)free_gpus, waits, resv,
             starts);
    gsb_report(b, quick ? "sched.cycle.2k.ms" : "sched.cycle.10k.ms", gsb_median(t, (size_t)reps), "ms", params);
    snprintf(params, sizeof params, "\"gpus\": %llu, \"arrived\": %u, \"started\": %u", (unsigned long long)e.gpus,
             npend, first_starts);
    gsb_report(b, quick ? "sched.cycle.2k.first.ms" : "sched.cycle.10k.first.ms", first_ms, "ms", params);

    /* Events: alternately a running job ends and a gang arrives, each
     * followed by a cycle. */
    double te[64], tend[32], tsub[32];
    int ne = 0, nend = 0, nsub = 0;
    bs_events(&e, 2 * reps < 64 ? 2 * reps : 64, te, &ne, tend, &nend, tsub, &nsub);
    snprintf(params, sizeof params, "\"gpus\": %llu, \"pending\": %u", (unsigned long long)e.gpus, pending);
    gsb_report(b, "sched.event.us", gsb_median(te, (size_t)ne), "us", params);
    gsb_report(b, "sched.event.end.us", gsb_median(tend, (size_t)nend), "us", params);
    gsb_report(b, "sched.event.submit.us", gsb_median(tsub, (size_t)nsub), "us", params);
    bs_env_free(&e);
}

static void bs_sim(gsb_ctx *b)
{
    const int quick = gsb_quick(b);
    static const char *lv[] = {"zone", "block", "rack"};
    const uint32_t fan[] = {1, 16, 56, 18};
    gpusched_topo *t;
    char err[256];
    if (gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &t, err, sizeof err))
        return;
    const uint32_t njobs = quick ? 5000 : 50000;
    sim_trace tr;
    sim_trace_generate(&tr, njobs, 10, gpusched_topo_gpu_count(t), 1.2, 1);
    sim_result *res = malloc(sizeof *res);
    for (int policy = SIM_FIFO; policy <= SIM_FULL; policy++) {
        if (sim_run(t, &tr, policy, NULL, res, err, sizeof err)) {
            fprintf(stderr, "bench-sched: %s\n", err);
            continue;
        }
        char name[64], params[256];
        snprintf(name, sizeof name, "sched.sim.%s.jobs_per_s", sim_policy_names[policy]);
        snprintf(params, sizeof params,
                 "\"gpus\": %llu, \"jobs\": %u, \"cycles\": %u, \"utilization\": %.4f, \"decisions_per_s\": %.0f",
                 (unsigned long long)gpusched_topo_gpu_count(t), njobs, res->cycles, res->util,
                 res->cycle_s > 0 ? (double)res->evaluations / res->cycle_s : 0);
        gsb_report(b, policy == SIM_FULL ? "sched.sim.jobs_per_s" : name, res->wall_s > 0 ? njobs / res->wall_s : 0,
                   "jobs/s", params);
    }
    free(res);
    sim_trace_free(&tr);
    gpusched_topo_unref(t);
}

const gsb_scenario gsb_sched_scenarios[] = {
    {"sched.cycle", bs_cycle},
    {"sched.sim", bs_sim},
    {NULL, NULL},
};
