/* Core scenarios: the machine's memory bandwidth (the physical limit that
 * scan kernels are compared against) and the cost of kernel dispatch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "core.h"

static double gsb_read_pass(const uint64_t *buf, size_t n)
{
    double t0 = gsb_now_ns();
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        s0 += buf[i];
        s1 += buf[i + 1];
        s2 += buf[i + 2];
        s3 += buf[i + 3];
    }
    gsb_consume(s0 ^ s1 ^ s2 ^ s3);
    return gsb_now_ns() - t0;
}

double gsb_membw_bytes_per_s(gsb_ctx *b)
{
    static double cached; /* bench process only, never the library */
    if (cached > 0)
        return cached;
    size_t bytes = (gsb_quick(b) ? 64u : 256u) << 20;
    size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = malloc(bytes);
    if (!buf)
        return 0;
    for (size_t i = 0; i < n; i++)
        buf[i] = i * 0x9e3779b97f4a7c15ull;
    int reps = gsb_reps(b);
    double t[32];
    gsb_read_pass(buf, n); /* warm the page tables */
    for (int r = 0; r < reps; r++)
        t[r] = gsb_read_pass(buf, n);
    cached = (double)bytes / (gsb_median(t, (size_t)reps) * 1e-9);
    free(buf);
    return cached;
}

static void gsb_membw(gsb_ctx *b)
{
    double bw = gsb_membw_bytes_per_s(b);
    char params[96];
    snprintf(params, sizeof params, "\"buffer_mib\": %d", gsb_quick(b) ? 64 : 256);
    gsb_report(b, "core.membw.read", bw / 1e9, "GB/s", params);
}

typedef uint64_t (*gsb_kernel)(uint64_t);
static uint64_t gsb_kernel_a(uint64_t x) { return x * 3 + 1; }
static uint64_t gsb_kernel_b(uint64_t x) { return x * 5 + 1; }

static void gsb_dispatch(gsb_ctx *b)
{
    const int calls = gsb_quick(b) ? 2000 : 20000;
    int reps = gsb_reps(b);
    double t[32];
    for (int r = 0; r < reps; r++) {
        double t0 = gsb_now_ns();
        uint32_t acc = 0;
        for (int i = 0; i < calls; i++) {
            uint32_t p = 0;
            gs_simd_choose(~0u, &p, NULL);
            acc += p;
        }
        gsb_consume(acc);
        t[r] = (gsb_now_ns() - t0) / calls;
    }
    gsb_report(b, "core.dispatch.overhead", gsb_median(t, (size_t)reps), "ns",
               "\"what\": \"choose a kernel: cpuid + xgetbv + env lookup, once per handle\"");

    /* The per-call price once chosen: an indirect call through a table. */
    static gsb_kernel volatile table[2] = {gsb_kernel_a, gsb_kernel_b};
    const int n = 1 << 22;
    for (int r = 0; r < reps; r++) {
        gsb_kernel k = table[r & 1];
        double t0 = gsb_now_ns();
        uint64_t x = (uint64_t)r;
        for (int i = 0; i < n; i++)
            x = k(x);
        gsb_consume(x);
        t[r] = (gsb_now_ns() - t0) / n;
    }
    gsb_report(b, "core.dispatch.indirect_call", gsb_median(t, (size_t)reps), "ns",
               "\"what\": \"one call through a chosen kernel pointer\"");
}

const gsb_scenario gsb_core_scenarios[] = {
    {"core.membw.read", gsb_membw},
    {"core.dispatch.overhead", gsb_dispatch},
    {NULL, NULL},
};
