/* Shared by the kernel tests that run once per SIMD path forced through
 * GPUSCHED_SIMD (tests/meson.build, simd_test_files): the skip of a path
 * this CPU or build cannot run, said plainly, and a seeded generator. */
#ifndef GS_TEST_SIMD_H
#define GS_TEST_SIMD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include <gpusched/gpusched.h>

#include "test-rng.h"

/* Why the forced path cannot be tested here, or NULL if it can. */
static const char *forced_path_unrunnable_why(void)
{
    const char *env = getenv("GPUSCHED_SIMD");
    for (uint32_t p = 0; env && p < (GPUSCHED_SIMD_NEON + 1); p++)
        if (strcmp(env, gpusched_simd_name(p)) == 0 && !(gpusched_simd_compiled() & (1u << p)))
            return "this build does not contain it";
    if (gpusched_cpu_features(NULL, NULL) == GPUSCHED_ENOTSUP)
        return "this CPU cannot run it";
    return NULL;
}

static inline bool forced_path_unrunnable(void)
{
    return forced_path_unrunnable_why() != NULL;
}

static const char *path_title(const char *name)
{
    static const char *const titles[][2] = {
        {"scalar", "scalar"}, {"avx2", "AVX2"}, {"avx512", "AVX-512"}, {"neon", "NEON"},
    };
    for (size_t i = 0; i < sizeof titles / sizeof titles[0]; i++)
        if (strcmp(name, titles[i][0]) == 0)
            return titles[i][1];
    return name;
}

/* A forced path this CPU cannot run (or this build lacks) is a skip,
 * decided before any case. The tests are registered with the TAP
 * protocol, for which meson reads a skip from an empty plan with a SKIP
 * directive (exit status 77 would be an error under TAP), so both the
 * plan and status 0 are given. */
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    const char *skip = getenv("GPUSCHED_TEST_SKIP_UNRUNNABLE");
    const char *why = forced_path_unrunnable_why();
    if (skip && *skip == '1' && why) {
        /* Said plainly on both streams: this path was skipped, not passed. */
        const char *env = getenv("GPUSCHED_SIMD"), *title = path_title(env);
        char reason[128];
        if (strcmp(why, "this CPU cannot run it") == 0)
            snprintf(reason, sizeof reason, "this CPU cannot run %s", title);
        else
            snprintf(reason, sizeof reason, "this build has no %s kernel", title);
        printf("1..0 # SKIP %s, so the %s kernel is not tested (GPUSCHED_SIMD=%s)\n", reason, title, env);
        fprintf(stderr, "SKIPPED, NOT PASSED: %s; the %s kernel was not run.\n", reason, title);
        if (strcmp(env, "neon") == 0)
            fprintf(stderr, "On x86-64 the NEON kernels run under qemu-aarch64 (the *-neon-qemu tests).\n");
        fflush(stdout);
        exit(0);
    }
}

#endif
