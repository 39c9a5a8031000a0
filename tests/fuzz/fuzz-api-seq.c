/* The whole API as a sequence of operations decoded from the input: build
 * (a small topology chosen by the first byte), allocate, place, batch,
 * release, reserve, unreserve, release to a reservation, node health,
 * preempt, move, defrag (plan only or committed), snapshot and restore,
 * pods with cpu, memory and GPU fractions,
 * and the fair queue's enqueue, poll and complete. After every step the
 * cluster passes its invariant checker; a failed or plan-only call left
 * the snapshot bytes as they were; and at the end the journal, replayed on
 * the first snapshot, gives the live cluster's bytes. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#include "fuzz.h"

typedef struct world {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res[3];
    gpusched_preempt_plan *plan;
    gpusched_fairq *q;
    uint32_t nnodes;
    uint64_t next_task;
} world;

static uint8_t *snap(gpusched_cluster *c, size_t *len)
{
    FUZZ_CHECK(gpusched_cluster_snapshot(c, NULL, 0, len) == GPUSCHED_ERANGE, "size query");
    uint8_t *b = malloc(*len);
    FUZZ_CHECK(b && gpusched_cluster_snapshot(c, b, *len, len) == 0, "snapshot: %s", gpusched_cluster_errmsg(c));
    return b;
}

static uint64_t some_job(world *w, fuzz_rd *r)
{
    uint32_t n = gpusched_cluster_job_count(w->c);
    uint64_t id = 1 + fuzz_take(r, 64);
    if (n && fuzz_take(r, 4))
        FUZZ_CHECK(gpusched_cluster_job_at(w->c, fuzz_take(r, n), &id) == 0, "job_at");
    return id;
}

/* Per-pod amounts a pod request points to (cpu, memory, one too many). */
static uint64_t pod_res[3];

static void request(fuzz_rd *r, gpusched_place_request *q, gpusched_job *job, uint64_t id, bool commit)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = id;
    job->flags = fuzz_take(r, 4);
    job->priority = (int32_t)fuzz_take(r, 5);
    job->cost_hint = fuzz_take(r, 10);
    q->job = job;
    q->gpus = 1 + fuzz_take(r, 24);
    q->split = fuzz_take(r, 3);
    q->pod_gpus = fuzz_take(r, 5);
    q->required_level = fuzz_take(r, 3) ? GPUSCHED_NONE : fuzz_take(r, 2);
    q->flags = commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
    if (fuzz_take(r, 3) == 0) {
        /* Pods: fractions, cpu and memory, sometimes invalid. */
        q->gpus = fuzz_take(r, 4) ? 0 : q->gpus;
        q->pods = fuzz_take(r, 5);
        q->gpu_milli = fuzz_take(r, 3) ? 0 : 100 * fuzz_take(r, 12);
        q->pod_gpus = fuzz_take(r, 4);
        q->split = fuzz_take(r, 8) ? GPUSCHED_SPLIT_PODS : q->split;
        pod_res[0] = 1000 * (uint64_t)fuzz_take(r, 10);
        pod_res[1] = 4096 * (uint64_t)fuzz_take(r, 10);
        pod_res[2] = fuzz_take(r, 2);
        q->resources = pod_res;
        q->resource_count = fuzz_take(r, 4);
        q->policy = fuzz_take(r, 5);
    }
}

/* One operation; returns whether it was plan-only (`*plan_only`) and its code. */
static int step(world *w, fuzz_rd *r, bool *plan_only)
{
    const uint32_t kind = fuzz_take(r, 14);
    const bool commit = fuzz_take(r, 3) != 0;
    gpusched_place_request q;
    gpusched_job job;
    *plan_only = false;
    switch (kind) {
    case 0: case 1: {
        uint32_t node = fuzz_take(r, w->nnodes);
        uint64_t mask = fuzz_take(r, 0) & 0xf;
        job = (gpusched_job)GPUSCHED_JOB_INIT;
        job.id = 1 + fuzz_take(r, 64);
        job.flags = fuzz_take(r, 4);
        return gpusched_cluster_allocate(w->c, &job, 1, &node, &mask);
    }
    case 2:
        request(r, &q, &job, 1 + fuzz_take(r, 64), commit);
        *plan_only = !commit;
        return gpusched_placer_place(w->p, &q, w->res[0]);
    case 3: {
        gpusched_place_request qs[3];
        gpusched_job jobs[3];
        const gpusched_place_request *qp[3];
        for (int i = 0; i < 3; i++) {
            request(r, &qs[i], &jobs[i], 1 + fuzz_take(r, 64), fuzz_take(r, 2));
            qp[i] = &qs[i];
        }
        *plan_only = !(qs[0].flags | qs[1].flags | qs[2].flags);
        return gpusched_placer_place_batch(w->p, 3, qp, w->res, NULL);
    }
    case 4:
        return gpusched_cluster_release(w->c, some_job(w, r));
    case 5: {
        uint32_t node = fuzz_take(r, w->nnodes);
        uint64_t mask = fuzz_take(r, 0) & 0xf;
        return gpusched_cluster_reserve(w->c, 1 + fuzz_take(r, 64), 1, &node, &mask);
    }
    case 6:
        return gpusched_cluster_unreserve(w->c, 1 + fuzz_take(r, 64));
    case 7:
        return gpusched_cluster_release_to_resv(w->c, some_job(w, r), 1 + fuzz_take(r, 64));
    case 8:
        return gpusched_cluster_node_health_set(w->c, fuzz_take(r, w->nnodes), fuzz_take(r, 5), NULL, 0, NULL);
    case 9:
        request(r, &q, &job, 1 + fuzz_take(r, 64), commit);
        *plan_only = !commit;
        return gpusched_placer_preempt(w->p, &q, w->res[0], w->plan);
    case 10:
        *plan_only = !commit;
        return gpusched_placer_move(w->p, some_job(w, r), commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0, w->res[0]);
    case 11:
        request(r, &q, &job, 1 + fuzz_take(r, 64), commit);
        *plan_only = !commit;
        return gpusched_placer_defrag(w->p, &q, w->res[0], w->plan);
    case 12: {
        /* A restored copy snapshots to the same bytes. */
        size_t len, len2;
        uint8_t *a = snap(w->c, &len);
        gpusched_cluster *copy = NULL;
        char err[256];
        FUZZ_CHECK(gpusched_cluster_restore(a, len, NULL, &copy, err, sizeof err) == 0, "restore: %s", err);
        uint8_t *b = snap(copy, &len2);
        FUZZ_CHECK(len == len2 && !memcmp(a, b, len), "restore changed the bytes");
        free(a);
        free(b);
        gpusched_cluster_unref(copy);
        *plan_only = true;
        return 0;
    }
    default: {
        /* The fair queue beside the cluster: it must keep its counts. */
        uint64_t queued0, running0, queued, running;
        FUZZ_CHECK(gpusched_fairq_count(w->q, &queued0, &running0) == 0, "count");
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        uint64_t id;
        int rc;
        switch (fuzz_take(r, 3)) {
        case 0:
            t.id = w->next_task++;
            t.tenant = fuzz_take(r, 4);
            t.type = fuzz_take(r, 4);
            t.enqueue_time = (double)w->next_task;
            rc = gpusched_fairq_enqueue(w->q, &t);
            FUZZ_CHECK(gpusched_fairq_count(w->q, &queued, &running) == 0, "count");
            FUZZ_CHECK(queued == queued0 + (rc == 0), "enqueue counted");
            break;
        case 1:
            rc = gpusched_fairq_poll(w->q, (double)w->next_task, GPUSCHED_FAIRQ_ALL_TYPES, &id, NULL);
            FUZZ_CHECK(rc == 0 || rc == GPUSCHED_EEMPTY, "poll: %s", gpusched_fairq_errmsg(w->q));
            break;
        default:
            rc = gpusched_fairq_complete(w->q, fuzz_take(r, (uint32_t)w->next_task + 1), 1.0 + fuzz_take(r, 100));
            break;
        }
        *plan_only = true; /* the cluster is not touched */
        return 0;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_rd r = {data, size};
    /* Three small shapes of 2 levels, nodes of 4 GPUs with cpu and memory. */
    static const char *const text[] = {
        "levels zone rack\nresources cpu memory\nnode z0/r[0-1] n[0-] count=3 gpus=4 cpu=8000 memory=32768\n",
        "levels zone rack\nresources cpu memory\nnode z[0-1]/r[0-1] n[0-] count=2 gpus=4 cpu=8000 memory=32768\n",
        "levels zone rack\nresources cpu memory\nnode z0/r0 n[0-] count=4 gpus=4 cpu=4000 memory=65536\n"};
    world w = {.next_task = 1};
    char err[256];
    const uint32_t shape = fuzz_take(&r, 3);
    FUZZ_CHECK(gpusched_topo_parse(text[shape], strlen(text[shape]), NULL, &w.t, err, sizeof err) == 0, "topo: %s",
               err);
    w.nnodes = gpusched_topo_node_count(w.t);
    FUZZ_CHECK(gpusched_cluster_new(w.t, NULL, &w.c) == 0 && gpusched_placer_new(w.c, NULL, &w.p) == 0 &&
                   gpusched_preempt_plan_new(NULL, &w.plan) == 0 && gpusched_fairq_new(4, NULL, &w.q) == 0,
               "handles");
    for (int i = 0; i < 3; i++)
        FUZZ_CHECK(gpusched_place_result_new(NULL, &w.res[i]) == 0, "result");
    size_t first_len;
    uint8_t *first = snap(w.c, &first_len);
    FUZZ_CHECK(gpusched_cluster_journal_start(w.c, NULL, NULL) == 0, "journal");
    for (int steps = 0; r.n && steps < 64; steps++) {
        size_t before_len, after_len;
        uint8_t *before = snap(w.c, &before_len);
        bool plan_only;
        int rc = step(&w, &r, &plan_only);
        FUZZ_CHECK(gpusched_cluster_check(w.c) == 0, "check: %s", gpusched_cluster_errmsg(w.c));
        if (rc || plan_only) {
            uint8_t *after = snap(w.c, &after_len);
            FUZZ_CHECK(after_len == before_len && !memcmp(before, after, before_len),
                       "a %s call changed the cluster (%s)", rc ? "failed" : "plan-only", gpusched_err_name(rc));
            free(after);
        }
        free(before);
    }
    const void *j;
    size_t jlen, live_len, back_len;
    FUZZ_CHECK(gpusched_cluster_journal_view(w.c, &j, &jlen) == 0, "view");
    gpusched_cluster *back = NULL;
    FUZZ_CHECK(gpusched_cluster_replay(first, first_len, j, jlen, NULL, &back, err, sizeof err) == 0, "replay: %s",
               err);
    uint8_t *live = snap(w.c, &live_len), *again = snap(back, &back_len);
    FUZZ_CHECK(live_len == back_len && !memcmp(live, again, live_len), "the replay differs from the cluster");
    free(live);
    free(again);
    free(first);
    gpusched_cluster_unref(back);
    for (int i = 0; i < 3; i++)
        gpusched_place_result_free(w.res[i]);
    gpusched_preempt_plan_free(w.plan);
    gpusched_fairq_free(w.q);
    gpusched_placer_free(w.p);
    gpusched_cluster_unref(w.c);
    gpusched_topo_unref(w.t);
    return 0;
}
