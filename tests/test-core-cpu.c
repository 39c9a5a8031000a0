#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "core.h"
#include "gpusched/fairq.h"

static void clear_env(void) { unsetenv("GPUSCHED_SIMD"); }

TestSuite(cpu, .init = clear_env);

Test(cpu, detection_is_consistent)
{
    uint32_t f = 0, p = 99;
    cr_assert_eq(gpusched_cpu_features(&f, &p), 0);
    cr_assert_eq(f, gs_cpu_detect());
    cr_assert(p < (GPUSCHED_SIMD_NEON + 1));
    cr_assert(gpusched_simd_compiled() & (1u << p), "chosen path is compiled");
    cr_assert(gs_simd_runnable(f) & (1u << p), "chosen path is runnable");
    if (f & GPUSCHED_CPU_AVX512)
        cr_assert(f & GPUSCHED_CPU_AVX2, "AVX-512 implies AVX2 here");
#if defined(__x86_64__)
    cr_assert(f & GPUSCHED_CPU_SSE2, "x86-64 always has SSE2");
#endif
    cr_assert_eq(gpusched_cpu_features(NULL, NULL), 0);
}

Test(cpu, best_path_is_chosen_by_default)
{
    uint32_t usable = gs_simd_compiled() & gs_simd_runnable(gs_cpu_detect());
    uint32_t p;
    cr_assert_eq(gs_simd_choose(~0u, &p, NULL), 0);
    cr_assert_eq(usable >> p, 1u, "nothing better than %s is usable", gpusched_simd_name(p));
    cr_assert_eq(gs_simd_choose(1u << GPUSCHED_SIMD_SCALAR, &p, NULL), 0);
    cr_assert_eq(p, GPUSCHED_SIMD_SCALAR, "a scalar-only module gets scalar");
}

Test(cpu, env_forces_every_usable_path)
{
    uint32_t usable = gs_simd_compiled() & gs_simd_runnable(gs_cpu_detect());
    for (uint32_t p = 0; p < (GPUSCHED_SIMD_NEON + 1); p++) {
        setenv("GPUSCHED_SIMD", gpusched_simd_name(p), 1);
        uint32_t got = 99;
        gs_err e;
        int rc = gs_simd_choose(~0u, &got, &e);
        if (usable & (1u << p)) {
            cr_assert_eq(rc, 0, "%s: %s", gpusched_simd_name(p), e.msg);
            cr_assert_eq(got, p);
        } else {
            cr_assert_eq(rc, GPUSCHED_ENOTSUP, "%s", gpusched_simd_name(p));
            cr_assert(strstr(e.msg, gpusched_simd_name(p)) != NULL);
        }
    }
}

Test(cpu, forced_path_missing_from_module_falls_back_below)
{
    setenv("GPUSCHED_SIMD", "avx512", 1);
    uint32_t p = 99;
    cr_assert_eq(gs_simd_choose(1u << GPUSCHED_SIMD_SCALAR, &p, NULL), 0);
    cr_assert_eq(p, GPUSCHED_SIMD_SCALAR);
}

Test(cpu, bad_env_is_an_error)
{
    setenv("GPUSCHED_SIMD", "mmx", 1);
    uint32_t p = 7;
    gs_err e;
    cr_assert_eq(gs_simd_choose(~0u, &p, &e), GPUSCHED_EINVAL);
    cr_assert_eq(p, 7, "output untouched on error");
    cr_assert(strstr(e.msg, "mmx") != NULL);
    cr_assert_eq(gpusched_cpu_features(NULL, &p), GPUSCHED_EINVAL);
    /* Handles with kernels refuse to be made, as they would otherwise run
     * a path nobody asked for. */
    gpusched_topo *t;
    char err[128];
    const char *lv[] = {"rack"};
    const uint32_t fan[] = {2, 2};
    cr_assert_eq(gpusched_topo_uniform(1, lv, fan, 4, "gpu", NULL, &t, err, sizeof err), 0, "%s", err);
    gpusched_cluster *c;
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    gpusched_placer *pl = (gpusched_placer *)&p;
    cr_assert_eq(gpusched_placer_new(c, NULL, &pl), GPUSCHED_EINVAL);
    cr_assert_null(pl);
    setenv("GPUSCHED_SIMD", "scalar", 1);
    cr_assert_eq(gpusched_placer_new(c, NULL, &pl), 0);
    gpusched_placer_free(pl);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}

Test(cpu, names)
{
    cr_assert_str_eq(gpusched_simd_name(GPUSCHED_SIMD_SCALAR), "scalar");
    cr_assert_str_eq(gpusched_simd_name(GPUSCHED_SIMD_AVX512), "avx512");
    cr_assert_str_eq(gpusched_simd_name((GPUSCHED_SIMD_NEON + 1)), "unknown");
    cr_assert(gpusched_simd_compiled() & 1u, "scalar is always compiled");
}

/* SSE2 is a reserved path name: no module has a kernel for it, so no build
 * contains it and forcing it runs the scalar reference (doc/simd.md). */
Test(cpu, sse2_is_reserved_and_forcing_it_runs_scalar)
{
    cr_assert_eq(gpusched_simd_compiled() & (1u << GPUSCHED_SIMD_SSE2), 0u, "no SSE2 kernels are built");
    cr_assert_str_eq(gpusched_simd_name(GPUSCHED_SIMD_SSE2), "sse2");
    setenv("GPUSCHED_SIMD", "sse2", 1);
    uint32_t p = 99;
    cr_assert_eq(gpusched_cpu_features(NULL, &p), 0);
    cr_assert_eq(p, GPUSCHED_SIMD_SCALAR);
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(1, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_simd(q, &p), 0);
    cr_assert_eq(p, GPUSCHED_SIMD_SCALAR, "fairq runs %s", gpusched_simd_name(p));
    gpusched_fairq_free(q);
}

Test(hash, stable_values)
{
    /* Image checksums depend on it: the value is pinned. */
    cr_assert_eq(gs_hash_bytes("", 0, 0), 0xcbf29ce484222325ull);
    cr_assert_eq(gs_hash_bytes("a", 1, 0), 0xaf63dc4c8601ec8cull);
    cr_assert_neq(gs_hash_bytes("a", 1, 1), gs_hash_bytes("a", 1, 0));
}
