/* CPU feature detection and the choice of a SIMD path.
 *
 * Nothing here is cached in a global: detection is a handful of cpuid
 * instructions, done when a handle is created, and the handle keeps the
 * result (see doc/simd.md). */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t gs_xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

uint32_t gs_cpu_detect(void)
{
    uint32_t a, b, c, d, features = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (d & bit_SSE2)
        features |= GPUSCHED_CPU_SSE2;
    bool osxsave = c & bit_OSXSAVE, fma = c & bit_FMA, avx = c & bit_AVX;
    if (!osxsave || !avx)
        return features;
    uint64_t xcr0 = gs_xgetbv0();
    bool ymm_ok = (xcr0 & 0x6) == 0x6;      /* SSE and AVX state */
    bool zmm_ok = (xcr0 & 0xe6) == 0xe6;    /* plus opmask and ZMM state */
    if (__get_cpuid_max(0, NULL) < 7)
        return features;
    __cpuid_count(7, 0, a, b, c, d);
    if (ymm_ok && fma && (b & bit_AVX2))
        features |= GPUSCHED_CPU_AVX2;
    const uint32_t avx512_need = bit_AVX512F | bit_AVX512BW | bit_AVX512DQ | bit_AVX512VL;
    if (zmm_ok && (features & GPUSCHED_CPU_AVX2) && (b & avx512_need) == avx512_need)
        features |= GPUSCHED_CPU_AVX512;
    return features;
}
#elif defined(__aarch64__)
uint32_t gs_cpu_detect(void)
{
    return GPUSCHED_CPU_NEON; /* Advanced SIMD is mandatory on AArch64. */
}
#else
uint32_t gs_cpu_detect(void)
{
    return 0;
}
#endif

uint32_t gs_simd_compiled(void)
{
    uint32_t m = 1u << GPUSCHED_SIMD_SCALAR;
#if GPUSCHED_HAVE_AVX2
    m |= 1u << GPUSCHED_SIMD_AVX2;
#endif
#if GPUSCHED_HAVE_AVX512
    m |= 1u << GPUSCHED_SIMD_AVX512;
#endif
#if GPUSCHED_HAVE_NEON
    m |= 1u << GPUSCHED_SIMD_NEON;
#endif
    return m;
}

uint32_t gs_simd_runnable(uint32_t f)
{
    uint32_t m = 1u << GPUSCHED_SIMD_SCALAR;
    if (f & GPUSCHED_CPU_SSE2)
        m |= 1u << GPUSCHED_SIMD_SSE2;
    if (f & GPUSCHED_CPU_AVX2)
        m |= 1u << GPUSCHED_SIMD_AVX2;
    if (f & GPUSCHED_CPU_AVX512)
        m |= 1u << GPUSCHED_SIMD_AVX512;
    if (f & GPUSCHED_CPU_NEON)
        m |= 1u << GPUSCHED_SIMD_NEON;
    return m;
}

static const char *const gs_simd_names[GS_SIMD_PATHS] = {
    "scalar", "sse2", "avx2", "avx512", "neon",
};

GPUSCHED_API const char *gpusched_simd_name(uint32_t simd)
{
    return simd < GS_SIMD_PATHS ? gs_simd_names[simd] : "unknown";
}

static int gs_simd_from_env(const char *s, uint32_t *out)
{
    for (uint32_t i = 0; i < GS_SIMD_PATHS; i++)
        if (strcmp(s, gs_simd_names[i]) == 0) {
            *out = i;
            return 0;
        }
    return GPUSCHED_EINVAL;
}

int gs_simd_choose(uint32_t module_mask, uint32_t *out, gs_err *e)
{
    uint32_t usable = (module_mask | 1u) & gs_simd_compiled() & gs_simd_runnable(gs_cpu_detect());
    const char *forced = getenv("GPUSCHED_SIMD");
    if (forced && *forced) {
        uint32_t p;
        if (gs_simd_from_env(forced, &p))
            return gs_error(e, GPUSCHED_EINVAL,
                            "GPUSCHED_SIMD=%s: expected scalar, sse2, avx2, avx512 or neon", forced);
        if (!(module_mask & (1u << p)) && p != GPUSCHED_SIMD_SCALAR) {
            /* A module without this path uses its best path below it. */
            usable &= (1u << p) - 1;
        } else if (!(usable & (1u << p))) {
            return gs_error(e, GPUSCHED_ENOTSUP,
                            "GPUSCHED_SIMD=%s: this CPU cannot run it or this build does not contain it",
                            forced);
        } else {
            *out = p;
            return 0;
        }
    }
    uint32_t best = GPUSCHED_SIMD_SCALAR;
    for (uint32_t p = 0; p < GS_SIMD_PATHS; p++)
        if (usable & (1u << p))
            best = p;
    *out = best;
    return 0;
}

GPUSCHED_API uint32_t gpusched_simd_compiled(void)
{
    return gs_simd_compiled();
}

GPUSCHED_API int gpusched_cpu_features(uint32_t *detected, uint32_t *chosen)
{
    uint32_t p = 0;
    int rc = gs_simd_choose(gs_simd_compiled(), &p, NULL);
    if (rc)
        return rc;
    if (detected)
        *detected = gs_cpu_detect();
    if (chosen)
        *chosen = p;
    return 0;
}
