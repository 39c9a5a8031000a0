/* The fragmentation policy's scan kernels (lib/place/fscan.h), run once
 * per SIMD path forced through GPUSCHED_SIMD: on random per-node records
 * (every range alignment and length, many equal growths and keys, nodes
 * that cannot hold the pod, stale and fresh stamps), the path the placer
 * chooses must return exactly what the scalar reference returns, and the
 * reference what a literal loop written here returns. */
#include "place/place-internal.h"
#include "simd-test.h"
#include "place-kernels-cases.h"

Test(place_kernels, every_path_returns_the_reference)
{
    gs_fs_ops ops;
    uint32_t simd;
    cr_assert_eq(gs_pl_fs_choose(&ops, &simd), 0);
    cr_log_info("frag scan kernels: %s", gpusched_simd_name(simd));
    const char *forced = getenv("GPUSCHED_SIMD");
    if (forced && *forced)
        cr_assert_str_eq(gpusched_simd_name(simd), forced, "the forced path is the one tested");
    static recs x;
    static uint32_t out_ref[N], out[N];
    rng_state = 0x5ca1ab1e;
    uint32_t cases = 0, found = 0, none = 0;
    for (uint32_t round = 0; round < 400; round++) {
        random_recs(&x);
        for (uint32_t trial = 0; trial < 20; trial++) {
            const uint32_t first = rndu(40), end = first + rndu(N - first + 1);
            /* stale: the same nodes in the same order */
            const uint32_t k_ref = gs_fs_stale_scalar(x.seen, x.stamp, first, end, out_ref);
            const uint32_t k = ops.stale(x.seen, x.stamp, first, end, out);
            cr_assert_eq(k, k_ref, "stale [%u, %u): %u nodes, reference %u", first, end, k, k_ref);
            cr_assert_arr_eq(out, out_ref, (size_t)k * sizeof *out);
            for (uint32_t i = 0; i < k; i++)
                cr_assert_neq(x.seen[out[i]], x.stamp[out[i]]);
            /* least */
            const int64_t least = gs_fs_least_scalar(x.growth, first, end);
            cr_assert_eq(ops.least(x.growth, first, end), least, "least [%u, %u)", first, end);
            int64_t lit = GS_FS_NO_FIT;
            for (uint32_t n = first; n < end; n++)
                lit = x.growth[n] < lit ? x.growth[n] : lit;
            cr_assert_eq(least, lit);
            /* best, at the least growth, within a band of it, and at tops
             * that take everything or nothing */
            const int64_t tops[] = {least == GS_FS_NO_FIT ? INT64_MIN : least,
                                    least >= (GS_FS_NO_FIT >> 1) ? GS_FS_NO_FIT - 1 : least + ((int64_t)1 << 32),
                                    GS_FS_NO_FIT - 1, INT64_MIN};
            for (uint32_t t = 0; t < 4; t++) {
                const uint32_t ref = gs_fs_best_scalar(x.growth, x.pack, first, end, tops[t]);
                cr_assert_eq(ref, literal_best(&x, first, end, tops[t]));
                const uint32_t got = ops.best(x.growth, x.pack, first, end, tops[t]);
                cr_assert_eq(got, ref, "best [%u, %u) top %lld: node %u, reference %u", first, end,
                             (long long)tops[t], got, ref);
                cases++;
                found += ref != GS_FS_NONE;
                none += ref == GS_FS_NONE;
            }
        }
    }
    cr_assert(found > cases / 2 && none > cases / 100, "coverage: %u cases, %u found, %u none", cases, found, none);
}
