/* Preemption for gangs of pods with cpu, memory and GPU fractions,
 * against a reference that only releases jobs and places: on random small
 * clusters where pods, fractions and whole-GPU jobs run at random
 * priorities, every plan is checked for what it must be.
 *
 *  - It exists exactly when the gang fits with every eligible victim gone.
 *  - Its victims are eligible (preemptible, of lower priority, not
 *    protected), and with them gone the gang fits; with any one of them
 *    kept it does not (pruned to what the gang needs).
 *  - Priority first: its highest victim priority is the lowest tier that
 *    lets the gang fit.
 *  - Plan only changes nothing; a commit releases the victims and runs the
 *    gang where the plan said, the state checks, and the journal's record
 *    replays to the same bytes.
 *
 * And moves of running jobs, pods among them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpusched/gpusched.h"

#define MAXJOBS 24

typedef struct pp_env {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    uint64_t ids[MAXJOBS];
    int32_t prio[MAXJOBS];
    uint32_t flags[MAXJOBS];
    int64_t protected_until[MAXJOBS];
    bool gpuless[MAXJOBS]; /* a job of fractions or of pods without GPUs */
    uint32_t njobs;
} pp_env;

static uint64_t pp_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint32_t pp_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(pp_rand(s) % n);
}

/* A request: pods of (cpu, memory) and pod_gpus whole GPUs or a fraction,
 * or (pods 0) a whole-GPU gang. `amounts` must outlive it. */
static gpusched_place_request pp_request(uint64_t *s, uint64_t *amounts, bool whole_allowed)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS;
    if (whole_allowed && pp_below(s, 4) == 0) {
        q.gpus = 1 + pp_below(s, 4);
        q.pod_gpus = 1;
        return q;
    }
    q.pods = 1 + pp_below(s, 3);
    amounts[0] = 500 * (1 + pp_below(s, 12));
    amounts[1] = 1024 * (1 + pp_below(s, 16));
    q.resources = amounts;
    q.resource_count = 2;
    switch (pp_below(s, 3)) {
    case 0:
        q.pod_gpus = pp_below(s, 3);
        break;
    case 1:
        q.pod_gpus = 1;
        q.gpu_milli = 250 * (1 + pp_below(s, 3));
        break;
    default:
        break; /* cpu and memory only */
    }
    return q;
}

static pp_env pp_env_new(uint64_t *s)
{
    pp_env e;
    memset(&e, 0, sizeof e);
    char text[2048], err[256];
    int o = snprintf(text, sizeof text, "levels rack\nresources cpu memory\n");
    const uint32_t nodes = 2 + pp_below(s, 4);
    for (uint32_t n = 0; n < nodes; n++)
        o += snprintf(text + o, sizeof text - (size_t)o, "node r%u n%u gpus=%u cpu=%u memory=%u\n", n % 2, n,
                      2 + pp_below(s, 3), 4000 + 2000 * pp_below(s, 4), 16384 + 8192 * pp_below(s, 3));
    cr_assert_eq(gpusched_topo_parse(text, (size_t)o, NULL, &e.t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_cluster_new(e.t, NULL, &e.c), 0);
    cr_assert_eq(gpusched_placer_new(e.c, NULL, &e.p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &e.res), 0);
    cr_assert_eq(gpusched_preempt_plan_new(NULL, &e.plan), 0);
    /* Running jobs until the cluster is mostly full. */
    for (uint32_t tries = 0; tries < 40 && e.njobs < MAXJOBS; tries++) {
        uint64_t amounts[2];
        gpusched_place_request q = pp_request(s, amounts, true);
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = 100 + e.njobs;
        job.priority = (int32_t)pp_below(s, 4);
        job.flags = pp_below(s, 4) ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
        job.cost_hint = 1 + pp_below(s, 50);
        job.protected_until = pp_below(s, 6) == 0 ? 100 : 0;
        q.job = &job;
        q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        int rc = gpusched_placer_place(e.p, &q, e.res);
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(e.p));
        if (rc == 0) {
            e.ids[e.njobs] = job.id;
            e.prio[e.njobs] = job.priority;
            e.flags[e.njobs] = job.flags;
            e.protected_until[e.njobs] = job.protected_until;
            e.gpuless[e.njobs] = q.gpu_milli != 0 || (q.pods && q.pod_gpus == 0);
            e.njobs++;
        }
    }
    return e;
}

static void pp_env_free(pp_env *e)
{
    gpusched_preempt_plan_free(e->plan);
    gpusched_place_result_free(e->res);
    gpusched_placer_free(e->p);
    gpusched_cluster_unref(e->c);
    gpusched_topo_unref(e->t);
}

static unsigned char *pp_snap(gpusched_cluster *c, size_t *len)
{
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, len), GPUSCHED_ERANGE);
    unsigned char *buf = malloc(*len);
    cr_assert_eq(gpusched_cluster_snapshot(c, buf, *len, len), 0, "%s", gpusched_cluster_errmsg(c));
    return buf;
}

/* A result's pairs, copied (the result is reused), and checked later
 * against a job's allocation. */
typedef struct pp_pairs {
    uint32_t n, nodes[64];
    uint64_t masks[64];
} pp_pairs;

static void pp_copy(const gpusched_place_result *res, pp_pairs *out)
{
    const uint32_t *pn;
    const uint64_t *pm;
    gpusched_place_result_nodes(res, &pn, &pm, &out->n);
    cr_assert_leq(out->n, 64);
    memcpy(out->nodes, pn, out->n * sizeof *pn);
    memcpy(out->masks, pm, out->n * sizeof *pm);
}

/* Job `id` holds exactly the pairs. */
static void pp_holds(gpusched_cluster *c, uint64_t id, const pp_pairs *want)
{
    const uint32_t *an;
    const uint64_t *am;
    uint32_t ac;
    cr_assert_eq(gpusched_cluster_job_allocation(c, id, &an, &am, &ac, NULL), 0);
    cr_assert_eq(ac, want->n);
    cr_assert_arr_eq(an, want->nodes, ac * sizeof *an);
    cr_assert_arr_eq(am, want->masks, ac * sizeof *am);
}

/* The reference: on a copy of the cluster, the jobs of `release` (a bit
 * per job index) gone, does the gang fit? */
static bool ref_fits(const unsigned char *image, size_t len, const pp_env *e, uint32_t release,
                     const gpusched_place_request *q)
{
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(image, len, NULL, &c, err, sizeof err), 0, "%s", err);
    for (uint32_t i = 0; i < e->njobs; i++)
        if (release >> i & 1)
            cr_assert_eq(gpusched_cluster_release(c, e->ids[i]), 0);
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    gpusched_place_request plan_only = *q;
    plan_only.flags = 0;
    int rc = gpusched_placer_place(p, &plan_only, res);
    cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(p));
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    return rc == 0;
}

static uint32_t job_index(const pp_env *e, uint64_t id)
{
    for (uint32_t i = 0; i < e->njobs; i++)
        if (e->ids[i] == id)
            return i;
    cr_assert_fail("victim %llu is not a running job", (unsigned long long)id);
    return 0;
}

/* Counts, so that the test shows it exercised what it claims. */
static uint32_t seen_plans, seen_victims, seen_cpu_only, seen_whole, seen_none, seen_multi_tier;

static void check_one(uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15u + 1;
    pp_env e = pp_env_new(&s);
    uint64_t amounts[2];
    gpusched_place_request q = pp_request(&s, amounts, true);
    const bool whole = q.pods == 0; /* a whole-GPU gang: jobs of fractions or without GPUs are no victims */
    gpusched_job job = GPUSCHED_JOB_INIT;
    job.id = 1;
    job.priority = 2 + (int32_t)pp_below(&s, 3);
    q.job = &job;
    q.now = 50;
    size_t len;
    unsigned char *before = pp_snap(e.c, &len);
    uint32_t eligible = 0, tiers = 0;
    for (uint32_t i = 0; i < e.njobs; i++) {
        if ((e.flags[i] & GPUSCHED_JOB_FLAG_PREEMPTIBLE) && e.prio[i] < job.priority &&
            q.now >= e.protected_until[i] && !(whole && e.gpuless[i]))
            eligible |= 1u << i;
    }
    int rc = gpusched_placer_preempt(e.p, &q, e.res, e.plan);
    cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "seed %llu: %s", (unsigned long long)seed,
              gpusched_placer_errmsg(e.p));
    size_t len2;
    unsigned char *after = pp_snap(e.c, &len2);
    cr_assert(len == len2 && memcmp(before, after, len) == 0, "seed %llu: a plan changed the cluster",
              (unsigned long long)seed);
    free(after);
    cr_assert_eq(rc == 0, ref_fits(before, len, &e, eligible, &q),
                 "seed %llu: a plan exists (%d) exactly when the gang fits with every eligible victim gone",
                 (unsigned long long)seed, rc == 0);
    const uint64_t *victims;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_victims(e.plan, &victims, &n), 0);
    if (rc) {
        cr_assert_eq(n, 0);
        seen_none++;
        free(before);
        pp_env_free(&e);
        return;
    }
    uint32_t set = 0;
    int32_t top = INT32_MIN;
    for (uint32_t v = 0; v < n; v++) {
        uint32_t i = job_index(&e, victims[v]);
        cr_assert(eligible >> i & 1, "seed %llu: victim %llu is not eligible", (unsigned long long)seed,
                  (unsigned long long)victims[v]);
        set |= 1u << i;
        top = e.prio[i] > top ? e.prio[i] : top;
    }
    cr_assert(ref_fits(before, len, &e, set, &q), "seed %llu: the gang does not fit with the victims gone",
              (unsigned long long)seed);
    for (uint32_t v = 0; v < n; v++) {
        uint32_t i = job_index(&e, victims[v]);
        cr_assert(!ref_fits(before, len, &e, set & ~(1u << i), &q),
                  "seed %llu: victim %llu can be spared", (unsigned long long)seed, (unsigned long long)victims[v]);
    }
    if (n) {
        /* Priority first: no lower tier of victims would do (priorities
         * are 0 to 3). */
        for (int32_t p = 0; p < top; p++) {
            uint32_t tier = 0;
            for (uint32_t i = 0; i < e.njobs; i++)
                if ((eligible >> i & 1) && e.prio[i] <= p)
                    tier |= 1u << i;
            cr_assert(!ref_fits(before, len, &e, tier, &q),
                      "seed %llu: victims of priority <= %d would do, the plan evicts up to %d",
                      (unsigned long long)seed, p, top);
            tiers |= tier;
        }
        seen_multi_tier += tiers != 0;
    }
    uint32_t exact;
    uint64_t bound, cost;
    cr_assert_eq(gpusched_preempt_plan_optimality(e.plan, &exact, &bound), 0);
    cr_assert_eq(gpusched_preempt_plan_totals(e.plan, &cost, NULL), 0);
    if (!whole)
        cr_assert_eq(exact, n == 0, "seed %llu: only a plan without victims is called exact here",
                     (unsigned long long)seed);
    cr_assert_leq(bound, cost);
    seen_plans++;
    seen_victims += n;
    seen_cpu_only += !whole && q.pod_gpus == 0 && n > 0;
    seen_whole += whole && n > 0;

    /* The commit, journaled: it does what the plan said, and the record
     * replays to the same state. */
    pp_pairs planned;
    pp_copy(e.res, &planned);
    uint64_t plan_ids[MAXJOBS];
    if (n) /* victims is NULL without victims */
        memcpy(plan_ids, victims, n * sizeof *victims);
    cr_assert_eq(gpusched_cluster_journal_start(e.c, NULL, NULL), 0);
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_eq(gpusched_placer_preempt(e.p, &q, e.res, e.plan), 0, "seed %llu: %s", (unsigned long long)seed,
                 gpusched_placer_errmsg(e.p));
    cr_assert_eq(gpusched_cluster_check(e.c), 0, "seed %llu: %s", (unsigned long long)seed,
                 gpusched_cluster_errmsg(e.c));
    const uint64_t *cv;
    uint32_t cn;
    cr_assert_eq(gpusched_preempt_plan_victims(e.plan, &cv, &cn), 0);
    cr_assert_eq(cn, n);
    if (n)
        cr_assert_arr_eq(cv, plan_ids, n * sizeof *cv);
    for (uint32_t v = 0; v < n; v++)
        cr_assert_eq(gpusched_cluster_job_find(e.c, plan_ids[v], NULL), GPUSCHED_ENOENT);
    pp_holds(e.c, 1, &planned);
    const void *jr;
    size_t jlen;
    cr_assert_eq(gpusched_cluster_journal_view(e.c, &jr, &jlen), 0);
    gpusched_cluster *replica;
    char err[256];
    cr_assert_eq(gpusched_cluster_replay(before, len, jr, jlen, NULL, &replica, err, sizeof err), 0,
                 "seed %llu: %s", (unsigned long long)seed, err);
    size_t la, lb;
    unsigned char *a = pp_snap(e.c, &la), *b = pp_snap(replica, &lb);
    cr_assert(la == lb && memcmp(a, b, la) == 0, "seed %llu: the replayed journal differs",
              (unsigned long long)seed);
    free(a);
    free(b);
    gpusched_cluster_unref(replica);
    free(before);
    pp_env_free(&e);
}

Test(preempt_pods, plans_against_releasing_and_placing)
{
    const uint32_t seeds = getenv("GPUSCHED_UNDER_VALGRIND") ? 60 : 600;
    for (uint64_t seed = 1; seed <= seeds; seed++)
        check_one(seed);
    cr_log_info("%u plans (%u victims, %u plans of cpu-only pods and %u of whole-GPU gangs with victims, %u with "
                "lower tiers passed over), %u gangs that do not fit",
                seen_plans, seen_victims, seen_cpu_only, seen_whole, seen_multi_tier, seen_none);
    cr_assert(seen_plans > seeds / 4 && seen_victims > seeds / 4 && seen_none > seeds / 50 &&
                  seen_cpu_only > seeds / 100 && seen_whole > seeds / 100 && seen_multi_tier > seeds / 100,
              "coverage: %u plans, %u victims, %u cpu-only, %u whole-GPU, %u multi-tier, %u do not fit", seen_plans,
              seen_victims, seen_cpu_only, seen_whole, seen_multi_tier, seen_none);
}

/* More candidates than one batch of the ordering takes (64), and a plan
 * that needs more than one: 240 nodes, each with one preemptible pod of 9
 * cores (priority 0 on 150 nodes, 1 on the others); a gang of 120 pods of
 * 12 cores needs 120 nodes cleared, all of them of priority 0. */
Test(preempt_pods, plans_longer_than_one_batch_keep_the_least_tier)
{
    char text[32768], err[256];
    int o = snprintf(text, sizeof text, "levels rack\nresources cpu memory\n");
    for (uint32_t n = 0; n < 240; n++)
        o += snprintf(text + o, sizeof text - (size_t)o, "node r%u n%u gpus=2 cpu=16000 memory=65536\n", n / 20, n);
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    cr_assert_eq(gpusched_topo_parse(text, (size_t)o, NULL, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    cr_assert_eq(gpusched_preempt_plan_new(NULL, &plan), 0);
    uint64_t small[2] = {9000, 1024}, big[2] = {12000, 1024};
    for (uint32_t n = 0; n < 240; n++) {
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = 1000 + n;
        job.priority = (n * 7) % 240 < 150 ? 0 : 1;
        job.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
        job.cost_hint = 1 + n % 13;
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        q.split = GPUSCHED_SPLIT_PODS, q.pods = 1, q.resources = small, q.resource_count = 2;
        q.job = &job;
        q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        cr_assert_eq(gpusched_placer_place(p, &q, res), 0, "%s", gpusched_placer_errmsg(p));
    }
    /* One pod per node: two would need 18 cores. */
    for (uint32_t n = 0; n < 240; n++) {
        uint64_t ids[4];
        uint32_t k;
        cr_assert_eq(gpusched_cluster_node_jobs(c, n, ids, 4, &k), 0);
        cr_assert_eq(k, 1, "node %u runs %u jobs", n, k);
    }
    gpusched_job gang = GPUSCHED_JOB_INIT;
    gang.id = 1;
    gang.priority = 5;
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS, q.pods = 120, q.resources = big, q.resource_count = 2;
    q.job = &gang;
    cr_assert_eq(gpusched_placer_preempt(p, &q, res, plan), 0, "%s", gpusched_placer_errmsg(p));
    const uint64_t *victims;
    uint32_t n;
    cr_assert_eq(gpusched_preempt_plan_victims(plan, &victims, &n), 0);
    cr_assert_gt(n, 64, "%u victims", n);
    for (uint32_t v = 0; v < n; v++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        cr_assert_eq(gpusched_cluster_job_find(c, victims[v], &j), 0);
        cr_assert_eq(j.priority, 0, "victim %llu has priority %d", (unsigned long long)victims[v], j.priority);
    }
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_eq(gpusched_placer_preempt(p, &q, res, plan), 0, "%s", gpusched_placer_errmsg(p));
    cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
    cr_assert_eq(gpusched_cluster_job_count(c), 240 - n + 1);
    gpusched_preempt_plan_free(plan);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}

/* A move of a running job, pods or whole GPUs: plan only changes nothing;
 * it always finds a place (its own is free once it is gone); the commit
 * puts it where the plan said, keeps its id and descriptor, and the state
 * checks (the checker rebuilds every node's free resources and milli from
 * the jobs). */
Test(preempt_pods, moves_of_pods_against_releasing_and_placing)
{
    uint32_t moved = 0, stuck = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        uint64_t s = seed * 0x2545f4914f6cdd1dull + 5;
        pp_env e = pp_env_new(&s);
        if (!e.njobs) {
            pp_env_free(&e);
            continue;
        }
        const uint64_t id = e.ids[pp_below(&s, e.njobs)];
        size_t len;
        unsigned char *before = pp_snap(e.c, &len);
        int rc = gpusched_placer_move(e.p, id, 0, e.res);
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "seed %llu: %s", (unsigned long long)seed,
                  gpusched_placer_errmsg(e.p));
        size_t len2;
        unsigned char *after = pp_snap(e.c, &len2);
        cr_assert(len == len2 && memcmp(before, after, len) == 0, "seed %llu: a plan-only move changed the cluster",
                  (unsigned long long)seed);
        free(after);
        gpusched_job old = GPUSCHED_JOB_INIT;
        cr_assert_eq(gpusched_cluster_job_find(e.c, id, &old), 0);
        if (rc) {
            stuck++;
        } else {
            pp_pairs planned;
            pp_copy(e.res, &planned);
            cr_assert_eq(gpusched_placer_move(e.p, id, GPUSCHED_PLACE_FLAG_COMMIT, e.res), 0, "seed %llu: %s",
                         (unsigned long long)seed, gpusched_placer_errmsg(e.p));
            cr_assert_eq(gpusched_cluster_check(e.c), 0, "seed %llu: %s", (unsigned long long)seed,
                         gpusched_cluster_errmsg(e.c));
            pp_holds(e.c, id, &planned);
            gpusched_job now = GPUSCHED_JOB_INIT;
            cr_assert_eq(gpusched_cluster_job_find(e.c, id, &now), 0);
            cr_assert(now.priority == old.priority && now.flags == old.flags && now.cost_hint == old.cost_hint,
                      "seed %llu: the descriptor changed", (unsigned long long)seed);
            moved++;
        }
        free(before);
        pp_env_free(&e);
    }
    cr_log_info("%u moves", moved);
    cr_assert_gt(moved, 200);
    cr_assert_eq(stuck, 0, "%u jobs found no place, not even their own (free once they are gone)", stuck);
}
