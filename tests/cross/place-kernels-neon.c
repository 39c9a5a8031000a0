/* The AArch64 NEON scan kernels of the fragmentation policy
 * (lib/place/fscan.h) against the scalar reference, on the cases of
 * test-place-kernels.c: built with aarch64-linux-gnu-gcc and run under
 * qemu-aarch64 on x86-64 hosts (tests/meson.build), so that the NEON
 * kernels are executed, not only compiled. A plain program speaking TAP:
 * one line per round, exit status 0 only if every case passed. */
#include <inttypes.h>
#include <stdio.h>

#include "place-kernels-cases.h"

#if !defined(__aarch64__)
#error "this test exercises the AArch64 NEON kernels: build it for AArch64"
#endif

static recs x;
static uint32_t out_ref[N], out[N];

/* One random set of records, 20 ranges: NULL if the kernels agree with
 * the reference, else what differed. */
static const char *round_fails(char *why, size_t len)
{
    random_recs(&x);
    for (uint32_t trial = 0; trial < 20; trial++) {
        const uint32_t first = rndu(40), end = first + rndu(N - first + 1);
        const uint32_t k_ref = gs_fs_stale_scalar(x.seen, x.stamp, first, end, out_ref);
        const uint32_t k = gs_fs_stale_neon(x.seen, x.stamp, first, end, out);
        if (k != k_ref || memcmp(out, out_ref, (size_t)k * sizeof *out)) {
            snprintf(why, len, "stale [%u, %u): %u nodes, reference %u", first, end, k, k_ref);
            return why;
        }
        const int64_t least = gs_fs_least_scalar(x.growth, first, end);
        if (gs_fs_least_neon(x.growth, first, end) != least) {
            snprintf(why, len, "least [%u, %u)", first, end);
            return why;
        }
        const int64_t tops[] = {least == GS_FS_NO_FIT ? INT64_MIN : least,
                                least >= (GS_FS_NO_FIT >> 1) ? GS_FS_NO_FIT - 1 : least + ((int64_t)1 << 32),
                                GS_FS_NO_FIT - 1, INT64_MIN};
        for (uint32_t t = 0; t < 4; t++) {
            const uint32_t ref = gs_fs_best_scalar(x.growth, x.pack, first, end, tops[t]);
            const uint32_t got = gs_fs_best_neon(x.growth, x.pack, first, end, tops[t]);
            if (ref != literal_best(&x, first, end, tops[t]) || got != ref) {
                snprintf(why, len, "best [%u, %u) top %" PRId64 ": node %u, reference %u", first, end, tops[t], got,
                         ref);
                return why;
            }
        }
    }
    return NULL;
}

int main(void)
{
    const uint32_t rounds = 100;
    printf("1..%u\n", rounds);
    rng_state = 0x5ca1ab1e;
    int failed = 0;
    for (uint32_t r = 0; r < rounds; r++) {
        char why[160];
        const char *bad = round_fails(why, sizeof why);
        printf("%s %u - NEON scan kernels equal the reference, round %u%s%s\n", bad ? "not ok" : "ok", r + 1, r,
               bad ? ": " : "", bad ? bad : "");
        failed |= bad != NULL;
    }
    return failed;
}
