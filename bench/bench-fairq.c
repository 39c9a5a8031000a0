/* Fair-share queue scenarios: the full SIMD rescore over 1M tasks per
 * kernel (and against numpy and the memory bandwidth), the fast path over
 * FIFO heads (also under the lag cap), enqueue+poll throughput, and one
 * prediction. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "config.h"
#include "fairq/fairq-internal.h"

#define GSB_FQ_TENANTS 1000u
#define GSB_FQ_TYPES 4u

static uint64_t gsb_fq_rng = 1;
static uint64_t gsb_fq_next(void)
{
    uint64_t z = (gsb_fq_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A queue of n tasks over `tenants` tenants and 4 types, enqueue times
 * spread over 1000 s, built with one bulk call. */
static gpusched_fairq *gsb_fq_build(uint32_t n, uint32_t tenants)
{
    gpusched_fairq *q = NULL;
    uint64_t *ids = malloc(n * sizeof *ids);
    uint32_t *ten = malloc(n * sizeof *ten);
    uint8_t *ty = malloc(n);
    double *tm = malloc(n * sizeof *tm);
    int rc = GPUSCHED_ENOMEM;
    if (!ids || !ten || !ty || !tm || (rc = gpusched_fairq_new(tenants, NULL, &q))) {
        fprintf(stderr, "bench-fairq: cannot create a queue: %s\n", gpusched_strerror(rc));
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        ids[i] = i;
        ten[i] = (uint32_t)(gsb_fq_next() % tenants);
        ty[i] = (uint8_t)(gsb_fq_next() % GSB_FQ_TYPES);
        tm[i] = 1000.0 * i / n;
    }
    if (gpusched_fairq_enqueue_batch(q, n, ids, ten, ty, tm, NULL)) {
        fprintf(stderr, "bench-fairq: %s\n", gpusched_fairq_errmsg(q));
        gpusched_fairq_free(q);
        q = NULL;
    }
out:
    free(ids);
    free(ten);
    free(ty);
    free(tm);
    return q;
}

/* Median time of one peek (score every eligible task, pick the best). */
static double gsb_fq_time_peek(gsb_ctx *b, gpusched_fairq *q, int calls)
{
    double t[32];
    int reps = gsb_reps(b);
    uint64_t id = 0;
    gpusched_fairq_peek(q, 1001.0, ~0ull, &id, NULL); /* warm */
    for (int r = 0; r < reps; r++) {
        double t0 = gsb_now_ns();
        for (int c = 0; c < calls; c++)
            gpusched_fairq_peek(q, 1001.0 + r, ~0ull, &id, NULL);
        t[r] = (gsb_now_ns() - t0) / calls;
    }
    gsb_consume(id);
    return gsb_median(t, (size_t)reps);
}

/* Bytes one peek's rescore reads (as the queue counts them). */
static double gsb_fq_scan_bytes(gpusched_fairq *q)
{
    uint64_t id = 0, before = q->scan_bytes;
    gpusched_fairq_peek(q, 1001.0, ~0ull, &id, NULL);
    gsb_consume(id);
    return (double)(q->scan_bytes - before);
}

/* Runs the numpy side script; returns its median in us, or < 0 (and
 * prints why) when it cannot run. */
static double gsb_fq_numpy(gsb_ctx *b, uint32_t n)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/bench/fairq_numpy.py %u %u %d 2>&1",
             GSB_SOURCE_ROOT, n, GSB_FQ_TENANTS, gsb_reps(b));
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "fairq.poll.scan.vs_numpy: skipped, cannot run /usr/bin/python3\n");
        return -1;
    }
    char line[256] = "";
    double us = -1;
    if (fgets(line, sizeof line, p) && sscanf(line, "us %lf", &us) != 1)
        fprintf(stderr, "fairq.poll.scan.vs_numpy: skipped: %s", line);
    pclose(p);
    return us;
}

static const struct {
    uint32_t simd;
    gs_fq_scan_fn fn;
} gsb_fq_kernels[] = {
    {GPUSCHED_SIMD_SCALAR, gs_fq_scan_scalar},
#if GPUSCHED_HAVE_AVX2
    {GPUSCHED_SIMD_AVX2, gs_fq_scan_avx2},
#endif
#if GPUSCHED_HAVE_AVX512
    {GPUSCHED_SIMD_AVX512, gs_fq_scan_avx512},
#endif
#if GPUSCHED_HAVE_NEON
    {GPUSCHED_SIMD_NEON, gs_fq_scan_neon},
#endif
};

static void gsb_fq_scan(gsb_ctx *b)
{
    uint32_t n = gsb_quick(b) ? 100000 : 1000000;
    gpusched_fairq *q = gsb_fq_build(n, GSB_FQ_TENANTS);
    if (!q)
        return;
    char params[160], name[96];
    snprintf(params, sizeof params, "\"tasks\": %u, \"tenants\": %u, \"types\": %u, \"policy\": \"des\"",
             n, GSB_FQ_TENANTS, GSB_FQ_TYPES);
    uint32_t runnable = gs_simd_runnable(gs_cpu_detect());
    double best = INFINITY, best_bytes = 0;
    gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_SCAN, 1);
    for (size_t k = 0; k < GS_ARRAY_LEN(gsb_fq_kernels); k++) {
        const char *kn = gpusched_simd_name(gsb_fq_kernels[k].simd);
        snprintf(name, sizeof name, "fairq.poll.scan.1m.us.%s", kn);
        if (!(runnable & (1u << gsb_fq_kernels[k].simd))) {
            fprintf(stderr, "%s: skipped, this CPU cannot run %s\n", name, kn);
            continue;
        }
        q->scan = gsb_fq_kernels[k].fn;
        double ns = gsb_fq_time_peek(b, q, 3);
        if (ns < best) {
            best = ns;
            best_bytes = gsb_fq_scan_bytes(q);
        }
        gsb_report(b, name, ns / 1e3, "us", params);
    }
    /* Counted by the rescore itself: the columns of every slot it scores
     * (blocks and the rescan of the best one), the enqueue time of the
     * block where it stops, and the key-term table. */
    snprintf(params, sizeof params, "\"tasks\": %u, \"bytes_per_poll\": %.0f", n, best_bytes);
    gsb_report(b, "fairq.poll.scan.bytes_per_task", best_bytes / n, "bytes", params);
    double bw = gsb_membw_bytes_per_s(b);
    if (bw > 0) {
        snprintf(params, sizeof params,
                 "\"what\": \"bytes the best kernel reads per second / core.membw.read\", \"membw_gbs\": %.2f",
                 bw / 1e9);
        gsb_report(b, "fairq.poll.scan.bw_fraction", best_bytes / (best * 1e-9) / bw, "ratio", params);
    }
    double np = gsb_fq_numpy(b, n);
    if (np > 0) {
        snprintf(params, sizeof params, "\"numpy_us\": %.1f, \"best_us\": %.1f", np, best / 1e3);
        gsb_report(b, "fairq.poll.scan.vs_numpy", np / (best / 1e3), "ratio", params);
    }
    gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_SCAN, 0);
    snprintf(params, sizeof params, "\"tasks\": %u, \"tenants\": %u, \"fifos\": %u", n,
             GSB_FQ_TENANTS, q->nactive_keys);
    gsb_report(b, "fairq.poll.heads.us", gsb_fq_time_peek(b, q, 200) / 1e3, "us", params);
    gpusched_fairq_free(q);
}

/* The fast path under the LAGCAP preset, whose polls first compute the
 * max-min fair level of the service given so far over every tenant. The
 * tenants are first served unequally (5,000 tasks polled and completed
 * with durations that depend on the tenant) so that the level is not a
 * trivial one. */
static void gsb_fq_lagcap(gsb_ctx *b)
{
    const uint32_t n = 100000;
    gpusched_fairq *q = gsb_fq_build(n, GSB_FQ_TENANTS);
    if (!q)
        return;
    if (gpusched_fairq_policy_set(q, GPUSCHED_FAIRQ_POLICY_LAGCAP))
        goto fail;
    for (uint32_t i = 0; i < 5000; i++) {
        uint64_t id;
        gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
        if (gpusched_fairq_poll(q, 1000.0 + i * 0.01, ~0ull, &id, &d) ||
            gpusched_fairq_complete(q, id, 0.5 + (double)(d.tenant % 37) * (double)(gsb_fq_next() % 8)))
            goto fail;
    }
    /* Each poll then completes its task (outside the clock): every poll
     * sees the service moved by the one before. */
    double t[32], now = 1100.0;
    int reps = gsb_reps(b);
    for (int r = 0; r < reps; r++) {
        double ns = 0;
        for (int c = 0; c < 200; c++, now += 0.01) {
            uint64_t id;
            gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
            double t0 = gsb_now_ns();
            int rc = gpusched_fairq_poll(q, now, ~0ull, &id, &d);
            ns += gsb_now_ns() - t0;
            if (rc || gpusched_fairq_complete(q, id, 0.5 + (double)(d.tenant % 37)))
                goto fail;
        }
        t[r] = ns / 200;
    }
    char params[160];
    snprintf(params, sizeof params, "\"tasks\": %u, \"tenants\": %u, \"policy\": \"lagcap\"",
             q->live, GSB_FQ_TENANTS);
    gsb_report(b, "fairq.poll.lagcap.us", gsb_median(t, (size_t)reps) / 1e3, "us", params);
    gpusched_fairq_free(q);
    return;
fail:
    fprintf(stderr, "bench-fairq: lagcap: %s\n", gpusched_fairq_errmsg(q));
    gpusched_fairq_free(q);
}

/* Enqueue + poll pairs, timed in batches of 1000; the batch's tasks are
 * completed between batches, outside the clock, so the running table
 * stays small. */
static bool gsb_fq_ops_batch(gpusched_fairq *q, int pairs, uint32_t tenants, uint64_t *next,
                             double *now, uint64_t *polled, double *ns)
{
    double t0 = gsb_now_ns();
    for (int i = 0; i < pairs; i++) {
        gpusched_fairq_task task = GPUSCHED_FAIRQ_TASK_INIT;
        task.id = (*next)++;
        task.tenant = (uint32_t)(*next % tenants);
        task.type = (uint32_t)(*next % GSB_FQ_TYPES);
        task.enqueue_time = *now;
        if (gpusched_fairq_enqueue(q, &task) || gpusched_fairq_poll(q, *now, ~0ull, &polled[i], NULL))
            return false;
        *now += 1e-4;
    }
    *ns += gsb_now_ns() - t0;
    for (int i = 0; i < pairs; i++)
        if (gpusched_fairq_complete(q, polled[i], 0.01))
            return false;
    return true;
}

static void gsb_fq_ops(gsb_ctx *b)
{
    const uint32_t n = 100000, tenants = 100;
    gpusched_fairq *q = gsb_fq_build(n, tenants);
    if (!q)
        return;
    enum { BATCH = 1000 };
    static uint64_t polled[BATCH];
    const int batches = gsb_quick(b) ? 20 : 200;
    int reps = gsb_reps(b);
    double t[32], now = 1000.0;
    uint64_t next = n;
    /* Rep -1 is a warm-up, off the record: the running table and the id
     * index grow to their steady sizes during the first batches. */
    for (int r = -1; r < reps; r++) {
        double ns = 0;
        for (int k = 0; k < batches; k++)
            if (!gsb_fq_ops_batch(q, BATCH, tenants, &next, &now, polled, &ns)) {
                fprintf(stderr, "fairq.ops: %s\n", gpusched_fairq_errmsg(q));
                gpusched_fairq_free(q);
                return;
            }
        if (r >= 0)
            t[r] = ns / ((double)batches * BATCH);
    }
    double ns = gsb_median(t, (size_t)reps);
    gsb_report(b, "fairq.ops.per_s", 1e9 / ns, "pairs/s",
               "\"queued\": 100000, \"tenants\": 100, \"op\": \"enqueue + poll (fast path); completions untimed\"");
    gpusched_fairq_free(q);
}

static void gsb_fq_predict(gsb_ctx *b)
{
    gpusched_fairq *q;
    if (gpusched_fairq_new(4, NULL, &q))
        return;
    /* Train one key so the prediction takes the fitted path. */
    for (int i = 0; i < 100; i++) {
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        t.id = (uint64_t)i, t.tenant = 1, t.type = 2, t.enqueue_time = i, t.work_size = 100 + i;
        uint64_t id;
        gpusched_fairq_enqueue(q, &t);
        gpusched_fairq_poll(q, i, ~0ull, &id, NULL);
        gpusched_fairq_complete(q, id, 0.01 * (1 + i % 7));
    }
    const int calls = 1 << 20;
    int reps = gsb_reps(b);
    double t[32], acc = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = gsb_now_ns();
        for (int i = 0; i < calls; i++) {
            double p;
            gpusched_fairq_predict(q, 1, 2, 100.0 + (i & 1023), &p);
            acc += p;
        }
        t[r] = (gsb_now_ns() - t0) / calls;
    }
    gsb_consume((uint64_t)acc);
    gsb_report(b, "fairq.predict.ns", gsb_median(t, (size_t)reps), "ns",
               "\"what\": \"key lookup + weighted least-squares estimate + exp\"");
    gpusched_fairq_free(q);
}

const gsb_scenario gsb_fairq_scenarios[] = {
    {"fairq.poll", gsb_fq_scan},
    {"fairq.ops", gsb_fq_ops},
    {"fairq.lagcap", gsb_fq_lagcap},
    {"fairq.predict", gsb_fq_predict},
    {NULL, NULL},
};
