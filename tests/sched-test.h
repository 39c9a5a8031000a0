/* Helpers shared by the scheduler tests: a scheduler on a small uniform
 * cluster, submitting gangs, reading decisions. */
#ifndef GS_TEST_SCHED_H
#define GS_TEST_SCHED_H

#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

typedef struct st_env {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_sched *s;
    gpusched_sched_decisions *d;
} st_env;

/* A scheduler on a uniform topology (levels from the top, then GPUs per node). */
static inline st_env st_env_uniform(uint32_t nlevels, const uint32_t *fanout, uint32_t gpus)
{
    static const char *names[] = {"zone", "block", "rack"};
    st_env e = {0};
    char err[256];
    cr_assert_eq(gpusched_topo_uniform(nlevels, names + (3 - nlevels), fanout, gpus, "gb200",
                                       NULL, &e.t, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(gpusched_cluster_new(e.t, NULL, &e.c), 0);
    cr_assert_eq(gpusched_sched_new(e.c, NULL, &e.s), 0);
    cr_assert_eq(gpusched_sched_decisions_new(NULL, &e.d), 0);
    return e;
}

/* A scheduler on a topology given as text (doc/topology-format.md). */
static inline st_env st_env_text(const char *text, size_t len)
{
    st_env e = {0};
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, len, NULL, &e.t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_cluster_new(e.t, NULL, &e.c), 0);
    cr_assert_eq(gpusched_sched_new(e.c, NULL, &e.s), 0);
    cr_assert_eq(gpusched_sched_decisions_new(NULL, &e.d), 0);
    return e;
}

/* 2 blocks x 3 racks x 4 nodes x 4 GPUs = 96 GPUs. */
static inline st_env st_env_small(void)
{
    const uint32_t fan[] = {2, 3, 4};
    return st_env_uniform(2, fan, 4);
}

/* st_env_small() with 16 cores and 64 GiB per node. */
static inline st_env st_env_small_cpu(void)
{
    char text[4096];
    int o = snprintf(text, sizeof text, "levels block rack\nresources cpu memory\n");
    for (uint32_t n = 0; n < 24; n++)
        o += snprintf(text + o, sizeof text - (size_t)o, "node b%u/r%u n%u gpus=4 cpu=16000 memory=65536\n", n / 12,
                      n / 4, n);
    return st_env_text(text, (size_t)o);
}

static inline void st_env_free(st_env *e)
{
    gpusched_sched_decisions_free(e->d);
    gpusched_sched_free(e->s);
    gpusched_cluster_unref(e->c);
    gpusched_topo_unref(e->t);
}

static inline uint32_t st_queue(st_env *e, const char *name, uint32_t parent, uint64_t nominal)
{
    gpusched_sched_queue q = GPUSCHED_SCHED_QUEUE_INIT;
    q.name = name;
    q.parent = parent;
    uint32_t id;
    cr_assert_eq(gpusched_sched_queue_add(e->s, &q, &id), 0, "%s", gpusched_sched_errmsg(e->s));
    cr_assert_eq(gpusched_sched_queue_quota_set(e->s, id, 0, nominal, GPUSCHED_SCHED_UNLIMITED,
                                                GPUSCHED_SCHED_UNLIMITED),
                 0, "%s", gpusched_sched_errmsg(e->s));
    return id;
}

/* A gang of `gpus` GPUs (pods of min(gpus, 4)), expected to run `dur`. */
/* Submits job `id` with request q and the other fields given. */
static inline int st_submit_req(st_env *e, uint64_t id, uint32_t queue, const gpusched_place_request *q, int32_t prio,
                                int64_t submit, int64_t dur, uint32_t flags)
{
    gpusched_sched_job j = GPUSCHED_SCHED_JOB_INIT;
    j.id = id;
    j.queue = queue;
    j.priority = prio;
    j.submit_time = submit;
    j.duration_limit = dur;
    j.flags = flags;
    j.request = q;
    return gpusched_sched_submit(e->s, &j);
}

static inline int st_submit_full(st_env *e, uint64_t id, uint32_t queue, uint32_t gpus, int32_t prio, int64_t submit,
                                 int64_t dur, uint32_t flags)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.gpus = gpus;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pod_gpus = gpus < 4 ? gpus : 4;
    return st_submit_req(e, id, queue, &q, prio, submit, dur, flags);
}

static inline void st_submit(st_env *e, uint64_t id, uint32_t queue, uint32_t gpus, int64_t submit, int64_t dur)
{
    cr_assert_eq(st_submit_full(e, id, queue, gpus, 0, submit, dur, 0), 0, "%s", gpusched_sched_errmsg(e->s));
}

/* A job of the caller's own in the cluster, outside the scheduler, on
 * n nodes with those masks. */
static inline void st_hold(st_env *e, uint64_t id, uint32_t n, const uint32_t *nodes, const uint64_t *masks)
{
    gpusched_job job = GPUSCHED_JOB_INIT;
    job.id = id;
    cr_assert_eq(gpusched_cluster_allocate(e->c, &job, n, nodes, masks), 0, "job %llu: %s", (unsigned long long)id,
                 gpusched_cluster_errmsg(e->c));
}

static inline void st_cycle(st_env *e, int64_t now)
{
    cr_assert_eq(gpusched_sched_cycle(e->s, now, e->d), 0, "%s", gpusched_sched_errmsg(e->s));
    cr_assert_eq(gpusched_sched_check(e->s), 0, "%s", gpusched_sched_errmsg(e->s));
    cr_assert_eq(gpusched_cluster_check(e->c), 0, "%s", gpusched_cluster_errmsg(e->c));
}

static inline bool st_started(st_env *e, uint64_t id)
{
    const uint64_t *ids;
    uint32_t n;
    cr_assert_eq(gpusched_sched_decisions_starts(e->d, &ids, &n), 0);
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static inline uint32_t st_nstarts(st_env *e)
{
    const uint64_t *ids;
    uint32_t n;
    cr_assert_eq(gpusched_sched_decisions_starts(e->d, &ids, &n), 0);
    return n;
}

/* The wait of job `id` in the last decisions (reason NONE if absent). */
static inline gpusched_sched_wait st_wait(st_env *e, uint64_t id, const char **msg)
{
    gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
    uint32_t n = gpusched_sched_decisions_wait_count(e->d);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(gpusched_sched_decisions_wait(e->d, i, &w), 0);
        if (w.job_id == id) {
            if (msg)
                *msg = gpusched_sched_decisions_wait_message(e->d, i);
            return w;
        }
    }
    memset(&w, 0, sizeof w);
    if (msg)
        *msg = "";
    return w;
}

static inline uint32_t st_status(st_env *e, uint64_t id)
{
    uint32_t st = 0;
    cr_assert_eq(gpusched_sched_job_state(e->s, id, &st, NULL), 0, "%s", gpusched_sched_errmsg(e->s));
    return st;
}

#endif
