/* Preemption scenarios: a cluster filled to the last GPU with preemptible
 * low-priority jobs, then the plan for a higher-priority gang (200k GPUs
 * and 8 GPUs), and once, the plan carried out. The cluster is built once:
 * a plan without GPUSCHED_PLACE_FLAG_COMMIT changes nothing, so its repetitions
 * all see the same full cluster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gpusched/gpusched.h"

#define BPR_LOW_PRIORITY 0
#define BPR_HIGH_PRIORITY 10

typedef struct bpr_env {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    uint64_t state;     /* xorshift64 */
    uint64_t next_id;
    uint32_t mix_jobs, filler_jobs;
} bpr_env;

static uint64_t bpr_rand(bpr_env *e)
{
    e->state ^= e->state << 13;
    e->state ^= e->state >> 7;
    e->state ^= e->state << 17;
    return e->state;
}

/* A low-priority preemptible job of `gpus` GPUs, shaped as the placement
 * scenarios shape it: small jobs inside one rack (in pods of 4 from 4
 * GPUs on), 72 and more as whole racks. Its cost of preemption is 1 to
 * 1000 per GPU (say GPU-minutes since its last checkpoint). */
static void bpr_low_request(bpr_env *e, gpusched_place_request *q, gpusched_job *job, uint32_t gpus)
{
    gsb_mix_request(q, job, e->next_id, gpus);
    job->priority = BPR_LOW_PRIORITY;
    job->flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
    job->cost_hint = (uint64_t)gpus * (1 + bpr_rand(e) % 1000);
}

static int bpr_place_low(bpr_env *e, uint32_t gpus)
{
    gpusched_place_request q;
    gpusched_job job;
    bpr_low_request(e, &q, &job, gpus);
    int rc = gpusched_placer_place(e->p, &q, e->res);
    if (rc == 0)
        e->next_id++;
    return rc;
}

static uint64_t bpr_free_gpus(bpr_env *e)
{
    uint64_t f = 0;
    gpusched_cluster_domain_free_gpus(e->c, GPUSCHED_NONE, 0, &f);
    return f;
}

/* The size mix of the placement scenarios (1 to 576 GPUs, single GPUs and
 * 8-GPU jobs dominating) until it no longer fits, then single GPUs until
 * no GPU is free. */
static int bpr_fill(bpr_env *e)
{
    uint32_t misses = 0;
    while (misses < 1000) {
        if (bpr_place_low(e, gsb_mix_size(bpr_rand(e))))
            misses++;
        else
            e->mix_jobs++;
    }
    while (bpr_place_low(e, 1) == 0)
        e->filler_jobs++;
    return bpr_free_gpus(e) == 0 ? 0 : -1;
}

static void bpr_env_free(bpr_env *e)
{
    gpusched_preempt_plan_free(e->plan);
    gpusched_place_result_free(e->res);
    gpusched_placer_free(e->p);
    gpusched_cluster_unref(e->c);
    gpusched_topo_unref(e->t);
}

static int bpr_env_new(bpr_env *e, uint32_t zones, uint32_t blocks, bool fill)
{
    static const char *lv[] = {"zone", "block", "rack"};
    const uint32_t fan[] = {zones, blocks, 56, 18};
    char err[256];
    memset(e, 0, sizeof *e);
    e->state = 0x9e3779b97f4a7c15u;
    e->next_id = 1;
    if (gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &e->t, err, sizeof err)) {
        fprintf(stderr, "bench-preempt: %s\n", err);
        return -1;
    }
    if (gpusched_cluster_new(e->t, NULL, &e->c) || gpusched_placer_new(e->c, NULL, &e->p) ||
        gpusched_place_result_new(NULL, &e->res) || gpusched_preempt_plan_new(NULL, &e->plan)) {
        fprintf(stderr, "bench-preempt: setup failed\n");
        return -1;
    }
    if (fill && bpr_fill(e)) {
        fprintf(stderr, "bench-preempt: the cluster did not fill up\n");
        return -1;
    }
    return 0;
}

/* The high-priority job the gangs below are: q points to *job, which must
 * outlive every use of q. */
static void bpr_high_job(gpusched_place_request *q, gpusched_job *job, uint64_t id)
{
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = id;
    job->priority = BPR_HIGH_PRIORITY;
    q->job = job;
}

/* The 200k gang of the placement scenarios (2,778 racks' worth), or the
 * same fifth of a smaller cluster. */
static void bpr_gang_request(const bpr_env *e, gpusched_place_request *q, gpusched_job *job)
{
    uint64_t slices = gpusched_topo_gpu_count(e->t) * 2778 / 1032192;
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    bpr_high_job(q, job, 900000000);
    q->gpus = (uint32_t)slices * 72;
    q->split = GPUSCHED_SPLIT_WHOLE_NODES;
    q->slice_gpus[0] = 72;
    q->slice_level[0] = 2;
    q->preferred_level = 1;
}

static void bpr_small8_request(gpusched_place_request *q, gpusched_job *job)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    bpr_high_job(q, job, 900000001);
    q->gpus = 8;
    q->split = GPUSCHED_SPLIT_PODS;
    q->pod_gpus = 4;
    q->required_level = 2;
}

typedef struct bpr_figures {
    double median_ns;
    int fit;
    uint32_t victims;
    uint64_t cost, gpus;
} bpr_figures;

/* Median time of the plan alone; one untimed call first warms the plan's
 * and the placer's scratch memory, which they keep from call to call. */
static bpr_figures bpr_time_plan(bpr_env *e, gsb_ctx *b, const gpusched_place_request *q)
{
    const int reps = gsb_reps(b);
    double t[32];
    bpr_figures f = {0};
    f.fit = gpusched_placer_preempt(e->p, q, e->res, e->plan) == 0;
    for (int i = 0; i < reps; i++) {
        double t0 = gsb_now_ns();
        int rc = gpusched_placer_preempt(e->p, q, e->res, e->plan);
        t[i] = gsb_now_ns() - t0;
        f.fit &= rc == 0;
    }
    f.median_ns = gsb_median(t, (size_t)reps);
    const uint64_t *ids;
    gpusched_preempt_plan_victims(e->plan, &ids, &f.victims);
    gpusched_preempt_plan_totals(e->plan, &f.cost, &f.gpus);
    return f;
}

/* The baseline: one what-if placement of the same gang (the 200k one or
 * the 8-GPU one) on the empty cluster, the search a plan repeats with
 * victims lent. */
static double bpr_time_empty_place_ms(gsb_ctx *b, bool gang)
{
    const int quick = gsb_quick(b), reps = gsb_reps(b);
    double t[32];
    bpr_env e;
    if (bpr_env_new(&e, quick ? 2 : 8, quick ? 8 : 32, false)) {
        bpr_env_free(&e);
        return 0;
    }
    gpusched_place_request q;
    gpusched_job job;
    if (gang)
        bpr_gang_request(&e, &q, &job);
    else
        bpr_small8_request(&q, &job);
    gpusched_placer_place(e.p, &q, e.res);
    for (int i = 0; i < reps; i++) {
        double t0 = gsb_now_ns();
        gpusched_placer_place(e.p, &q, e.res);
        t[i] = (gsb_now_ns() - t0) / 1e6;
    }
    bpr_env_free(&e);
    return gsb_median(t, (size_t)reps);
}

static void bpr_preempt(gsb_ctx *b)
{
    const double empty_ms = bpr_time_empty_place_ms(b, true), empty8_ms = bpr_time_empty_place_ms(b, false);
    const int quick = gsb_quick(b);
    bpr_env e;
    double t0 = gsb_now_ns();
    if (bpr_env_new(&e, quick ? 2 : 8, quick ? 8 : 32, true)) {
        bpr_env_free(&e);
        return;
    }
    const double setup_s = (gsb_now_ns() - t0) / 1e9;
    const unsigned long long cluster_gpus = (unsigned long long)gpusched_topo_gpu_count(e.t);
    const uint32_t jobs = gpusched_cluster_job_count(e.c);
    char params[512];

    gpusched_place_request q;
    gpusched_job job;
    bpr_gang_request(&e, &q, &job);
    bpr_figures f = bpr_time_plan(&e, b, &q);
    snprintf(params, sizeof params,
             "\"cluster_gpus\": %llu, \"jobs\": %u, \"mix_jobs\": %u, \"filler_jobs\": %u, \"free_gpus\": 0, "
             "\"gpus\": %u, \"slices\": \"%u x 72 at rack\", \"preferred\": \"block\", \"victims\": %u, "
             "\"victim_gpus\": %llu, \"cost\": %llu, \"fit\": %d, \"setup_s\": %.2f, \"empty_place_ms\": %.2f, "
             "\"vs_empty_place\": %.1f, \"what\": \"plan only\"",
             cluster_gpus, jobs, e.mix_jobs, e.filler_jobs, q.gpus, q.gpus / 72, f.victims,
             (unsigned long long)f.gpus, (unsigned long long)f.cost, f.fit, setup_s, empty_ms,
             empty_ms > 0 ? f.median_ns / 1e6 / empty_ms : 0.0);
    gsb_report(b, "preempt.gang200k.full.ms", f.median_ns / 1e6, "ms", params);

    gpusched_place_request s;
    gpusched_job s_job;
    bpr_small8_request(&s, &s_job);
    /* The first rack-bound plan builds the cluster's preemption index:
     * its memory is what the state grows by. */
    size_t state0 = gpusched_cluster_memory_bytes(e.c);
    bpr_figures g = bpr_time_plan(&e, b, &s);
    double index_bytes = (double)(gpusched_cluster_memory_bytes(e.c) - state0);
    uint32_t exact = 0;
    gpusched_preempt_plan_optimality(e.plan, &exact, NULL);
    snprintf(params, sizeof params,
             "\"cluster_gpus\": %llu, \"jobs\": %u, \"request\": \"2 pods of 4, required rack\", \"victims\": %u, "
             "\"victim_gpus\": %llu, \"cost\": %llu, \"exact\": %u, \"fit\": %d, \"empty_place_us\": %.2f, "
             "\"vs_empty_place\": %.0f, \"index_bytes_per_gpu\": %.2f, \"what\": \"plan only\"",
             cluster_gpus, jobs, g.victims, (unsigned long long)g.gpus, (unsigned long long)g.cost, exact, g.fit,
             empty8_ms * 1e3, empty8_ms > 0 ? g.median_ns / 1e6 / empty8_ms : 0.0, index_bytes / (double)cluster_gpus);
    gsb_report(b, "preempt.small8.full.us", g.median_ns / 1e3, "us", params);

    bpr_env_free(&e);

    /* Carrying the plan out changes the cluster: each repetition gets a
     * freshly filled one (the same, from the same seed), a new placer and
     * a new plan. */
    const int reps = gsb_reps(b);
    double t[32];
    int fit = 1;
    uint32_t victims = 0, jobs_after = 0;
    uint64_t cost = 0, vgpus = 0;
    for (int i = 0; i < reps; i++) {
        if (bpr_env_new(&e, quick ? 2 : 8, quick ? 8 : 32, true)) {
            bpr_env_free(&e);
            return;
        }
        bpr_gang_request(&e, &q, &job);
        q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        t0 = gsb_now_ns();
        int rc = gpusched_placer_preempt(e.p, &q, e.res, e.plan);
        t[i] = (gsb_now_ns() - t0) / 1e6;
        fit &= rc == 0;
        const uint64_t *ids;
        gpusched_preempt_plan_victims(e.plan, &ids, &victims);
        gpusched_preempt_plan_totals(e.plan, &cost, &vgpus);
        jobs_after = gpusched_cluster_job_count(e.c);
        bpr_env_free(&e);
    }
    snprintf(params, sizeof params,
             "\"cluster_gpus\": %llu, \"gpus\": %u, \"victims\": %u, \"victim_gpus\": %llu, \"cost\": %llu, "
             "\"fit\": %d, \"jobs_before\": %u, \"jobs_after\": %u, \"what\": \"plan + commit, cold: a freshly "
             "filled cluster, new placer and plan per repetition\"",
             cluster_gpus, q.gpus, victims, (unsigned long long)vgpus, (unsigned long long)cost, fit, jobs,
             jobs_after);
    gsb_report(b, "preempt.gang200k.commit.ms", gsb_median(t, (size_t)reps), "ms", params);
}

/* Defragmentation: one movable 4-GPU job on the first node of every rack,
 * so that no rack is whole; a gang of one rack, then of eight racks (in
 * slices of 72 inside one block) makes its room by moving one job per
 * rack it takes. Plan only, median. */
static void bpr_defrag_case(bpr_env *e, gsb_ctx *b, uint32_t racks, const char *name)
{
    const int reps = gsb_reps(b);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    bpr_high_job(&q, &job, 900000001);
    q.gpus = 72 * racks;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.slice_gpus[0] = 72;
    q.slice_level[0] = 2;
    q.required_level = racks > 1 ? 1 : 2;
    int fit = gpusched_placer_defrag(e->p, &q, e->res, e->plan) == 0;
    double t[32];
    for (int i = 0; i < reps; i++) {
        double t0 = gsb_now_ns();
        fit &= gpusched_placer_defrag(e->p, &q, e->res, e->plan) == 0;
        t[i] = (gsb_now_ns() - t0) / 1e6;
    }
    uint64_t cost = 0, gpus = 0;
    gpusched_preempt_plan_totals(e->plan, &cost, &gpus);
    char params[320];
    snprintf(params, sizeof params,
             "\"cluster_gpus\": %llu, \"jobs\": %u, \"gpus\": %u, \"moves\": %u, \"moved_gpus\": %llu, "
             "\"cost\": %llu, \"fit\": %d, \"what\": \"plan only; one movable job per rack\"",
             (unsigned long long)gpusched_topo_gpu_count(e->t), gpusched_cluster_job_count(e->c), q.gpus,
             gpusched_preempt_plan_move_count(e->plan), (unsigned long long)gpus, (unsigned long long)cost, fit);
    gsb_report(b, name, gsb_median(t, (size_t)reps), "ms", params);
}

static void bpr_defrag(gsb_ctx *b)
{
    const int quick = gsb_quick(b);
    bpr_env e;
    if (bpr_env_new(&e, quick ? 2 : 8, quick ? 8 : 32, false)) {
        bpr_env_free(&e);
        return;
    }
    const uint32_t rack_level = gpusched_topo_level_count(e.t) - 1;
    for (uint32_t r = 0; r < gpusched_topo_domain_count(e.t, rack_level); r++) {
        uint32_t first, n;
        gpusched_topo_domain_nodes(e.t, rack_level, r, &first, &n);
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = 1 + r;
        j.flags = GPUSCHED_JOB_FLAG_MOVABLE;
        j.cost_hint = 1 + (r * 7919u) % 100;
        uint64_t mask = 0xf;
        if (gpusched_cluster_allocate(e.c, &j, 1, &first, &mask)) {
            fprintf(stderr, "bench-preempt: %s\n", gpusched_cluster_errmsg(e.c));
            bpr_env_free(&e);
            return;
        }
    }
    bpr_defrag_case(&e, b, 1, "preempt.defrag.rack.ms");
    bpr_defrag_case(&e, b, 8, "preempt.defrag.8racks.ms");
    bpr_env_free(&e);
}

/* One scenario for the three records: they share the full cluster, which
 * is by far the most expensive part to build. */
const gsb_scenario gsb_preempt_scenarios[] = {
    {"preempt", bpr_preempt},
    {"preempt.defrag", bpr_defrag},
    {NULL, NULL},
};
