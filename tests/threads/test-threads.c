/* One topology shared by many threads (topo.h: immutable, thread-safe
 * references). Worker threads each own a cluster, a placer and a fair
 * queue on the shared topology and place, release, enqueue, poll and
 * complete; other threads take and drop topology references and read it;
 * the main thread drops its own reference while they run, so the last
 * thread out frees the topology. Run under ThreadSanitizer in CI (.ci/run,
 * suite 'threads'): any race is a report and a non-zero exit.
 *
 * A plain program with pthreads, not Criterion: Criterion runs each case in
 * a worker process it forks from its own threaded runner, which hides the
 * process that matters from the sanitizer and adds the runner's threads.
 * Output is TAP; exit status 0 only if every check passed.
 *
 * It also checks determinism under concurrency: workers given the same seed
 * must end with the same decisions and bit-identical snapshots. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

enum {
    WORKERS = 4,      /* two seeds, two workers each */
    REFERS = 3,       /* threads that only take and drop references */
    MAX_LIVE = 24,
};

/* Steps per worker and rounds per reference thread; a tenth under valgrind,
 * which runs one thread at a time. */
static uint32_t steps = 3000, ref_rounds = 20000;

static int ncheck, nfail;

static void check(int ok, const char *what, const char *detail)
{
    ncheck++;
    if (!ok)
        nfail++;
    printf("%sok %d - %s%s%s\n", ok ? "" : "not ", ncheck, what, detail && *detail ? ": " : "",
           detail ? detail : "");
    fflush(stdout);
}

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct worker {
    gpusched_topo *topo;    /* a reference handed over by main; dropped at the end */
    uint64_t seed;
    /* results, read by main after join */
    int failed;
    char why[256];
    uint64_t decisions;     /* hash of every placement and poll */
    uint32_t placed, polled;
    unsigned char *snapshot;
    size_t snapshot_len;
} worker;

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

#define FAIL(w, ...)                                             \
    do {                                                         \
        snprintf((w)->why, sizeof (w)->why, __VA_ARGS__);        \
        (w)->failed = 1;                                         \
        goto out;                                                \
    } while (0)

static void *worker_main(void *arg)
{
    worker *w = arg;
    gpusched_cluster *c = NULL;
    gpusched_placer *p = NULL;
    gpusched_place_result *res = NULL;
    gpusched_fairq *q = NULL;
    uint64_t live[MAX_LIVE];
    uint32_t nlive = 0;
    uint64_t rng = w->seed, h = 0xcbf29ce484222325ull;
    int rc;
    if ((rc = gpusched_cluster_new(w->topo, NULL, &c)) || (rc = gpusched_placer_new(c, NULL, &p)) ||
        (rc = gpusched_place_result_new(NULL, &res)) || (rc = gpusched_fairq_new(8, NULL, &q)))
        FAIL(w, "set-up: %s", gpusched_strerror(rc));
    double now = 0;
    uint64_t next_task = 1, next_job = 1;
    for (uint32_t step = 0; step < steps; step++) {
        uint64_t r = next_rand(&rng);
        /* The queue: tasks arrive, a worker polls one and later completes it. */
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        t.id = next_task++;
        t.tenant = (uint32_t)(r % 8);
        t.type = (uint32_t)(r >> 8) % 4;
        t.enqueue_time = now;
        t.work_size = (double)((r >> 16) % 100);
        if ((rc = gpusched_fairq_enqueue(q, &t)))
            FAIL(w, "enqueue: %s", gpusched_fairq_errmsg(q));
        now += 0.25;
        uint64_t id;
        if (r % 3 == 0) {
            rc = gpusched_fairq_poll(q, now, ~0ull, &id, NULL);
            if (rc == 0) {
                h = mix(h, id);
                w->polled++;
                if ((rc = gpusched_fairq_complete(q, id, 0.5 + (double)(r % 7))))
                    FAIL(w, "complete: %s", gpusched_fairq_errmsg(q));
            } else if (rc != GPUSCHED_EEMPTY) {
                FAIL(w, "poll: %s", gpusched_fairq_errmsg(q));
            }
        }
        /* The cluster: gangs of 1 to 32 GPUs, some inside one rack. */
        if (nlive == MAX_LIVE || (nlive && (r >> 24) % 3 == 0)) {
            uint32_t k = (uint32_t)((r >> 32) % nlive);
            if ((rc = gpusched_cluster_release(c, live[k])))
                FAIL(w, "release job %" PRIu64 ": %s", live[k], gpusched_cluster_errmsg(c));
            live[k] = live[--nlive];
        } else {
            gpusched_place_request req = GPUSCHED_PLACE_REQUEST_INIT;
            gpusched_job job = GPUSCHED_JOB_INIT;
            job.id = next_job++;
            req.job = &job;
            req.gpus = 1 + (uint32_t)((r >> 40) % 32);
            req.flags = GPUSCHED_PLACE_FLAG_COMMIT;
            if ((r >> 48) % 2)
                req.required_level = 1; /* one rack */
            rc = gpusched_placer_place(p, &req, res);
            if (rc == 0) {
                const uint32_t *nodes;
                const uint64_t *masks;
                uint32_t n = 0;
                if (gpusched_place_result_nodes(res, &nodes, &masks, &n))
                    FAIL(w, "result nodes");
                for (uint32_t i = 0; i < n; i++)
                    h = mix(mix(h, nodes[i]), masks[i]);
                live[nlive++] = job.id;
                w->placed++;
            } else if (rc == GPUSCHED_ENOSPC) {
                h = mix(h, 0xdeadull);
            } else {
                FAIL(w, "place %u GPUs: %s", req.gpus, gpusched_placer_errmsg(p));
            }
        }
        if (step % 50 == 0 && (rc = gpusched_cluster_check(c)))
            FAIL(w, "check at step %u: %s", step, gpusched_cluster_errmsg(c));
    }
    size_t len = 0;
    gpusched_cluster_snapshot(c, NULL, 0, &len);
    w->snapshot = malloc(len ? len : 1);
    if (!w->snapshot || (rc = gpusched_cluster_snapshot(c, w->snapshot, len, &w->snapshot_len)))
        FAIL(w, "snapshot: %s", gpusched_strerror(rc));
    w->decisions = h;
out:
    gpusched_fairq_free(q);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(w->topo);
    return NULL;
}

typedef struct refer {
    gpusched_topo *topo;    /* a reference handed over by main; dropped at the end */
    uint32_t id;
    int failed;
    char why[128];
} refer;

/* Takes and drops references and reads the shared topology meanwhile;
 * every third round builds and frees a cluster on it (which holds its own
 * reference). */
static void *refer_main(void *arg)
{
    refer *rf = arg;
    uint32_t nodes = gpusched_topo_node_count(rf->topo);
    for (uint32_t i = 0; i < ref_rounds; i++) {
        gpusched_topo *t = gpusched_topo_ref(rf->topo);
        uint32_t node = (i * 7 + rf->id) % nodes, again = 0;
        char name[64];
        if (t != rf->topo || gpusched_topo_node_name(t, node, name, sizeof name) ||
            gpusched_topo_node_find(t, name, &again) || again != node || gpusched_topo_node_gpus(t, node) != 8) {
            snprintf(rf->why, sizeof rf->why, "round %u: node %u reads wrong", i, node);
            rf->failed = 1;
            gpusched_topo_unref(t);
            break;
        }
        if (i % 3 == 0) {
            gpusched_cluster *c;
            if (gpusched_cluster_new(t, NULL, &c) == 0)
                gpusched_cluster_unref(c);
        }
        gpusched_topo_unref(t);
    }
    gpusched_topo_unref(rf->topo);
    return NULL;
}

int main(void)
{
    printf("TAP version 13\n");
    if (getenv("GPUSCHED_UNDER_VALGRIND"))
        steps /= 10, ref_rounds /= 10;
    const char *levels[] = {"block", "rack"};
    const uint32_t fanout[] = {2, 4, 8}; /* 64 nodes, 512 GPUs */
    gpusched_topo *topo;
    char err[256];
    int rc = gpusched_topo_uniform(2, levels, fanout, 8, "h100", NULL, &topo, err, sizeof err);
    if (rc) {
        printf("1..0 # topology: %s\n", err);
        return 1;
    }
    worker w[WORKERS];
    refer rf[REFERS];
    pthread_t wt[WORKERS], rt[REFERS];
    memset(w, 0, sizeof w);
    memset(rf, 0, sizeof rf);
    /* Each thread gets its own reference before it starts; main then drops
     * its own while they run, so whichever thread finishes last frees it. */
    for (int i = 0; i < WORKERS; i++) {
        w[i].topo = gpusched_topo_ref(topo);
        w[i].seed = 1000 + (uint64_t)(i % 2);
    }
    for (int i = 0; i < REFERS; i++) {
        rf[i].topo = gpusched_topo_ref(topo);
        rf[i].id = (uint32_t)i;
    }
    int started = 1;
    for (int i = 0; i < WORKERS; i++)
        started &= pthread_create(&wt[i], NULL, worker_main, &w[i]) == 0;
    for (int i = 0; i < REFERS; i++)
        started &= pthread_create(&rt[i], NULL, refer_main, &rf[i]) == 0;
    gpusched_topo_unref(topo);
    topo = NULL;
    if (!started) {
        printf("1..0 # pthread_create failed\n");
        return 1;
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(wt[i], NULL);
    for (int i = 0; i < REFERS; i++)
        pthread_join(rt[i], NULL);

    printf("1..%d\n", WORKERS + REFERS + 2);
    char detail[320];
    for (int i = 0; i < WORKERS; i++) {
        snprintf(detail, sizeof detail, "%s", w[i].failed ? w[i].why : "");
        if (!w[i].failed)
            snprintf(detail, sizeof detail, "%u gangs placed, %u tasks polled, %zu-byte snapshot",
                     w[i].placed, w[i].polled, w[i].snapshot_len);
        char what[64];
        snprintf(what, sizeof what, "worker %d (seed %" PRIu64 ") on the shared topology", i, w[i].seed);
        check(!w[i].failed && w[i].placed > 0 && w[i].polled > 0, what, detail);
    }
    for (int i = 0; i < REFERS; i++) {
        char what[64];
        snprintf(what, sizeof what, "reference thread %d: %u refs taken and dropped", i, ref_rounds);
        check(!rf[i].failed, what, rf[i].why);
    }
    /* Same seed, same answers, whatever the other threads did meanwhile. */
    int same_decisions = 1, same_snapshots = 1, seeds_differ = 0;
    for (int i = 2; i < WORKERS; i++) {
        const worker *a = &w[i - 2], *b = &w[i];
        same_decisions &= a->decisions == b->decisions;
        same_snapshots &= a->snapshot && b->snapshot && a->snapshot_len == b->snapshot_len &&
                          memcmp(a->snapshot, b->snapshot, a->snapshot_len) == 0;
    }
    seeds_differ = w[0].decisions != w[1].decisions;
    check(same_decisions && seeds_differ, "workers with the same seed made the same decisions", "");
    check(same_snapshots, "workers with the same seed hold bit-identical snapshots", "");
    for (int i = 0; i < WORKERS; i++)
        free(w[i].snapshot);
    printf("# %d of %d checks failed\n", nfail, ncheck);
    return nfail ? 1 : 0;
}
