/* Cluster state scenarios: memory per GPU of topology plus empty state,
 * the price of one allocate + release with its aggregates, and a snapshot
 * round trip of a half-full 1M-GPU cluster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cluster/cluster-internal.h"

static gpusched_cluster *gsb_cluster_on(const char *preset)
{
    gpusched_topo *t = NULL;
    char err[256];
    if (gpusched_topo_preset(preset, NULL, &t, err, sizeof err)) {
        fprintf(stderr, "bench-cluster: preset %s: %s\n", preset, err);
        return NULL;
    }
    gpusched_cluster *c = NULL;
    int rc = gpusched_cluster_new(t, NULL, &c);
    gpusched_topo_unref(t);
    if (rc)
        fprintf(stderr, "bench-cluster: cluster on %s: %s\n", preset, gpusched_strerror(rc));
    return c;
}

/* Resident set of the process in bytes (Linux), 0 if unknown: a check on
 * the library's own accounting. */
static double gsb_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, rss = 0;
    if (!f)
        return 0;
    int n = fscanf(f, "%lu %lu", &size, &rss);
    fclose(f);
    return n == 2 ? (double)rss * 4096.0 : 0;
}

static void gsb_bytes_per_gpu(gsb_ctx *b)
{
    double rss0 = gsb_rss_bytes();
    gpusched_cluster *c = gsb_cluster_on("gb200-nvl72-1m");
    if (!c)
        return;
    double rss1 = gsb_rss_bytes();
    gpusched_topo *t = gpusched_cluster_topo(c);
    double gpus = (double)gpusched_topo_gpu_count(t);
    size_t topo = gpusched_topo_memory_bytes(t), state = gpusched_cluster_memory_bytes(c);
    char params[200];
    snprintf(params, sizeof params,
             "\"gpus\": %.0f, \"topo_bytes_per_gpu\": %.2f, \"state_bytes_per_gpu\": %.2f, "
             "\"rss_growth_bytes_per_gpu\": %.2f",
             gpus, (double)topo / gpus, (double)state / gpus, (rss1 - rss0) / gpus);
    gsb_report(b, "cluster.bytes_per_gpu.gb200-nvl72-1m", (double)(topo + state) / gpus, "B/GPU", params);
    gpusched_cluster_unref(c);
}

/* Median ns of one allocate + release of 4 GPUs on one node, aggregates
 * included. `stride` 0: always the same node (the scenario: the
 * cost of the bookkeeping itself); otherwise the node moves by `stride`
 * each time, so every op lands on cold lines of megabyte arrays, as when a
 * scheduler commits placements all over a large cluster. */
static double gsb_alloc_release_ns(gsb_ctx *b, gpusched_cluster *c, uint32_t stride, int ops)
{
    uint32_t nnodes = gpusched_topo_node_count(gpusched_cluster_topo(c));
    int reps = gsb_reps(b);
    double t[32];
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = 1u << 20;
    uint64_t mask = 0xf;
    uint32_t node = nnodes / 2;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up, not timed */
        double t0 = gsb_now_ns();
        for (int i = 0; i < ops; i++) {
            j.id++;
            node = stride ? (node + stride) % nnodes : node;
            if (gpusched_cluster_allocate(c, &j, 1, &node, &mask) || gpusched_cluster_release(c, j.id)) {
                fprintf(stderr, "bench-cluster: %s\n", gpusched_cluster_errmsg(c));
                return -1;
            }
        }
        if (r >= 0)
            t[r] = (gsb_now_ns() - t0) / ops;
    }
    return gsb_median(t, (size_t)reps);
}

static void gsb_alloc_release(gsb_ctx *b)
{
    const char *preset = gsb_quick(b) ? "h100-superpod" : "gb200-nvl72-1m";
    gpusched_cluster *c = gsb_cluster_on(preset);
    if (!c)
        return;
    const int ops = gsb_quick(b) ? 20000 : 200000;
    char params[160];
    double same = gsb_alloc_release_ns(b, c, 0, ops);
    double spread = same < 0 ? -1 : gsb_alloc_release_ns(b, c, 7919, ops);
    if (spread >= 0) {
        snprintf(params, sizeof params, "\"preset\": \"%s\", \"gpus_per_job\": 4, \"ops\": %d, \"node\": \"same\"",
                 preset, ops);
        gsb_report(b, "cluster.alloc_release.ns", same, "ns", params);
        snprintf(params, sizeof params,
                 "\"preset\": \"%s\", \"gpus_per_job\": 4, \"ops\": %d, \"node\": \"stride 7919 (cold lines)\"",
                 preset, ops);
        gsb_report(b, "cluster.alloc_release.spread.ns", spread, "ns", params);
    }
    gpusched_cluster_unref(c);
}

/* What a 200k-GPU gang costs the cluster state when the placement engine
 * commits it (whole nodes, aggregates included) and when it ends. */
static void gsb_commit_gang(gsb_ctx *b)
{
    const char *preset = gsb_quick(b) ? "h100-superpod" : "gb200-nvl72-1m";
    gpusched_cluster *c = gsb_cluster_on(preset);
    if (!c)
        return;
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint32_t n = gpusched_topo_node_count(t) / 5; /* about 200k GPUs on the 1M preset */
    uint32_t *nodes = malloc((size_t)n * sizeof *nodes);
    uint64_t *masks = malloc((size_t)n * sizeof *masks);
    int reps = gsb_reps(b);
    double tc[32], tr[32];
    uint64_t gpus = 0;
    for (uint32_t i = 0; nodes && masks && i < n; i++) {
        nodes[i] = i;
        masks[i] = gpusched_topo_node_gpus(t, i) == 64 ? ~0ull : (1ull << gpusched_topo_node_gpus(t, i)) - 1;
        gpus += gpusched_topo_node_gpus(t, i);
    }
    gpusched_job j = GPUSCHED_JOB_INIT;
    int ok = nodes && masks;
    for (int r = 0; ok && r < reps; r++) {
        j.id++;
        double t0 = gsb_now_ns();
        ok = gpusched_cluster_allocate(c, &j, n, nodes, masks) == 0;
        double t1 = gsb_now_ns();
        ok = ok && gpusched_cluster_release(c, j.id) == 0;
        tc[r] = (t1 - t0) / 1e6;
        tr[r] = (gsb_now_ns() - t1) / 1e6;
    }
    if (ok) {
        char params[160];
        snprintf(params, sizeof params, "\"preset\": \"%s\", \"gpus\": %llu, \"nodes\": %u, \"release_ms\": %.3f",
                 preset, (unsigned long long)gpus, n, gsb_median(tr, (size_t)reps));
        gsb_report(b, "cluster.alloc_gang200k.ms", gsb_median(tc, (size_t)reps), "ms", params);
    } else {
        fprintf(stderr, "bench-cluster: gang: %s\n", gpusched_cluster_errmsg(c));
    }
    free(nodes);
    free(masks);
    gpusched_cluster_unref(c);
}

static uint64_t gsb_rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Fills about half the GPUs with jobs from a size mix (mostly 1 to 8 GPUs,
 * some of whole racks and up to 8 racks), each followed by an equal free
 * gap, so that free space is fragmented and there are tens of thousands of
 * jobs to save and restore. */
static int gsb_fill_half(gpusched_cluster *c)
{
    static const uint32_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 4, 8, 8, 8, 16, 32, 72, 576};
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint32_t nnodes = gpusched_topo_node_count(t);
    uint32_t *nodes = malloc(1024 * sizeof *nodes);
    uint64_t *masks = malloc(1024 * sizeof *masks);
    if (!nodes || !masks) {
        free(nodes);
        free(masks);
        return GPUSCHED_ENOMEM;
    }
    uint64_t s = 0x2545f4914f6cdd1dull;
    uint32_t node = 0, gpu = 0; /* cursor */
    gpusched_job j = GPUSCHED_JOB_INIT;
    int rc = 0;
    while (node < nnodes && !rc) {
        uint32_t want = sizes[gsb_rng(&s) % (sizeof sizes / sizeof sizes[0])];
        for (int phase = 0; phase < 2 && node < nnodes; phase++) {
            uint32_t n = 0, left = want;
            while (left && node < nnodes) {
                uint32_t g = gpusched_topo_node_gpus(t, node);
                uint32_t take = g - gpu < left ? g - gpu : left;
                uint64_t m = (take == 64 ? ~0ull : ((1ull << take) - 1)) << gpu;
                if (phase == 0) {
                    nodes[n] = node;
                    masks[n++] = m;
                }
                left -= take;
                gpu += take;
                if (gpu == g) {
                    node++;
                    gpu = 0;
                }
            }
            if (phase == 0 && n) {
                j.id++;
                j.priority = (int32_t)(gsb_rng(&s) % 4);
                j.flags = j.id % 3 ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
                j.start_time = (int64_t)j.id;
                rc = gpusched_cluster_allocate(c, &j, n, nodes, masks);
            }
        }
    }
    free(nodes);
    free(masks);
    return rc;
}

static void gsb_snapshot_roundtrip(gsb_ctx *b)
{
    const char *preset = gsb_quick(b) ? "h100-superpod" : "gb200-nvl72-1m";
    gpusched_cluster *c = gsb_cluster_on(preset);
    if (!c)
        return;
    if (gsb_fill_half(c)) {
        fprintf(stderr, "bench-cluster: fill: %s\n", gpusched_cluster_errmsg(c));
        gpusched_cluster_unref(c);
        return;
    }
    size_t len = 0;
    gpusched_cluster_snapshot(c, NULL, 0, &len);
    void *buf = malloc(len);
    int reps = gsb_reps(b);
    double t[32], ts[32], tr[32];
    for (int r = 0; r < reps && buf; r++) {
        double t0 = gsb_now_ns();
        int rc = gpusched_cluster_snapshot(c, buf, len, &len);
        double t1 = gsb_now_ns();
        gpusched_cluster *back = NULL;
        char err[256];
        rc = rc ? rc : gpusched_cluster_restore(buf, len, NULL, &back, err, sizeof err);
        double t2 = gsb_now_ns();
        if (rc) {
            fprintf(stderr, "bench-cluster: round trip: %s\n", gpusched_strerror(rc));
            break;
        }
        gpusched_cluster_unref(back);
        ts[r] = (t1 - t0) / 1e6;
        tr[r] = (t2 - t1) / 1e6;
        t[r] = (t2 - t0) / 1e6;
    }
    uint64_t free_gpus = 0;
    gpusched_cluster_domain_free_gpus(c, GPUSCHED_NONE, 0, &free_gpus);
    double gpus = (double)gpusched_topo_gpu_count(gpusched_cluster_topo(c));
    char params[256];
    snprintf(params, sizeof params,
             "\"preset\": \"%s\", \"fill\": %.3f, \"jobs\": %u, \"image_bytes\": %zu, \"save_ms\": %.2f, "
             "\"restore_ms\": %.2f",
             preset, 1.0 - (double)free_gpus / gpus, gpusched_cluster_job_count(c), len,
             gsb_median(ts, (size_t)reps), gsb_median(tr, (size_t)reps));
    if (buf)
        gsb_report(b, "cluster.snapshot.roundtrip.ms", gsb_median(t, (size_t)reps), "ms", params);
    free(buf);
    gpusched_cluster_unref(c);
}

/* A sink as an embedding scheduler's write-ahead buffer: each record is
 * copied into a ring that is shipped elsewhere when full. */
typedef struct gsb_ring {
    unsigned char buf[1 << 16];
    size_t at, records, bytes;
} gsb_ring;

static int gsb_ring_sink(void *user, const void *rec, size_t len)
{
    gsb_ring *r = user;
    if (len > sizeof r->buf)
        return -1;
    if (r->at + len > sizeof r->buf)
        r->at = 0;
    memcpy(r->buf + r->at, rec, len);
    r->at += len;
    r->records++;
    r->bytes += len;
    return 0;
}

/* ns one journal record adds to a committed small allocation: the same
 * allocate + release loop as cluster.alloc_release.ns, with the journal
 * off and then on (into a ring sink), in one run; two records per pair. */
static void gsb_journal_append(gsb_ctx *b)
{
    const char *preset = gsb_quick(b) ? "h100-superpod" : "gb200-nvl72-1m";
    gpusched_cluster *c = gsb_cluster_on(preset);
    if (!c)
        return;
    const int ops = gsb_quick(b) ? 20000 : 200000;
    static gsb_ring ring;
    double off = gsb_alloc_release_ns(b, c, 0, ops);
    gpusched_cluster_journal_start(c, gsb_ring_sink, &ring);
    double on = off < 0 ? -1 : gsb_alloc_release_ns(b, c, 0, ops);
    if (on >= 0) {
        char params[200];
        snprintf(params, sizeof params,
                 "\"preset\": \"%s\", \"pair_ns_without\": %.1f, \"pair_ns_with\": %.1f, "
                 "\"bytes_per_record\": %.1f",
                 preset, off, on, ring.records ? (double)ring.bytes / (double)ring.records : 0.0);
        gsb_report(b, "cluster.journal.append.ns", (on - off) / 2, "ns", params);
    }
    gpusched_cluster_unref(c);
}

/* Rebuilding a cluster from its snapshot and 100k journal records (1M
 * GPUs): allocations of 1 to 8 GPUs and releases, on a half-full cluster. */
static void gsb_replay(gsb_ctx *b)
{
    const char *preset = gsb_quick(b) ? "h100-superpod" : "gb200-nvl72-1m";
    const uint32_t records = gsb_quick(b) ? 10000 : 100000;
    gpusched_cluster *c = gsb_cluster_on(preset);
    if (!c)
        return;
    if (gsb_fill_half(c)) {
        gpusched_cluster_unref(c);
        return;
    }
    size_t slen = 0;
    gpusched_cluster_snapshot(c, NULL, 0, &slen);
    void *snap = malloc(slen);
    if (!snap || gpusched_cluster_snapshot(c, snap, slen, &slen)) {
        free(snap);
        gpusched_cluster_unref(c);
        return;
    }
    gpusched_cluster_journal_start(c, NULL, NULL);
    uint32_t nnodes = gpusched_topo_node_count(gpusched_cluster_topo(c)), node = 0;
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = 1ull << 40;
    uint64_t x = 88172645463325252ull;
    for (uint32_t i = 0; i < records; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        if (i % 2 == 0) {
            uint64_t free_mask = 0;
            for (int tries = 0; tries < 64 && !free_mask; tries++) {
                node = (node + 7919) % nnodes;
                gpusched_cluster_node_state(c, node, &free_mask, NULL, NULL, NULL);
            }
            uint64_t mask = free_mask & (free_mask << (x % 4) | 1);
            mask = mask ? mask : free_mask;
            j.id++;
            gpusched_cluster_allocate(c, &j, 1, &node, &mask);
        } else {
            gpusched_cluster_release(c, j.id - (x % 2));
        }
    }
    const void *jr;
    size_t jlen = 0;
    gpusched_cluster_journal_view(c, &jr, &jlen);
    int reps = gsb_reps(b);
    double t[32], tr[32];
    int ok = 1;
    for (int r = 0; r < reps && ok; r++) {
        char err[256];
        gpusched_cluster *back = NULL;
        double t0 = gsb_now_ns();
        ok = gpusched_cluster_restore(snap, slen, NULL, &back, err, sizeof err) == 0;
        double t1 = gsb_now_ns();
        gpusched_cluster_unref(back);
        back = NULL;
        double t2 = gsb_now_ns();
        ok = ok && gpusched_cluster_replay(snap, slen, jr, jlen, NULL, &back, err, sizeof err) == 0;
        double t3 = gsb_now_ns();
        if (!ok)
            fprintf(stderr, "bench-cluster: replay: %s\n", err);
        gpusched_cluster_unref(back);
        tr[r] = (t1 - t0) / 1e6;
        t[r] = (t3 - t2) / 1e6;
    }
    if (ok) {
        char params[240];
        snprintf(params, sizeof params,
                 "\"preset\": \"%s\", \"records\": %u, \"journal_bytes\": %zu, \"restore_only_ms\": %.2f",
                 preset, records, jlen, gsb_median(tr, (size_t)reps));
        gsb_report(b, "cluster.replay.ms", gsb_median(t, (size_t)reps), "ms", params);
    }
    free(snap);
    gpusched_cluster_unref(c);
}

const gsb_scenario gsb_cluster_scenarios[] = {
    {"cluster.bytes_per_gpu.gb200-nvl72-1m", gsb_bytes_per_gpu},
    {"cluster.alloc_release.ns", gsb_alloc_release},
    {"cluster.alloc_gang200k.ms", gsb_commit_gang},
    {"cluster.snapshot.roundtrip.ms", gsb_snapshot_roundtrip},
    {"cluster.journal.append.ns", gsb_journal_append},
    {"cluster.replay.ms", gsb_replay},
    {NULL, NULL},
};
