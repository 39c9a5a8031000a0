/* The max-plus convolution with a concave kernel (place/maxplus.c) against
 * the plain double loop, on random rows with absent sources and random
 * concave kernels (including empty ones and kernels longer than the row),
 * and the concavity test itself. */
#include <criterion/criterion.h>

#include "place/place-internal.h"

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void naive(const uint32_t *src, uint32_t n, const uint32_t *f, uint32_t nf, int64_t *out)
{
    for (uint32_t g = 0; g < n; g++) {
        int64_t best = GS_MAXPLUS_NEG;
        for (uint32_t c = 1; c <= nf && c <= g; c++)
            if (src[g - c] != GS_MAXPLUS_NONE && (int64_t)src[g - c] + f[c - 1] > best)
                best = (int64_t)src[g - c] + f[c - 1];
        out[g] = best;
    }
}

Test(place_maxplus, matches_the_double_loop)
{
    uint64_t s = 0x51ed270b27a3e5f1ull;
    static uint32_t src[400], f[64];
    static int64_t want[400], got[400];
    for (int round = 0; round < 3000; round++) {
        const uint32_t n = (uint32_t)(next(&s) % 400), nf = (uint32_t)(next(&s) % 64);
        const uint32_t absent = (uint32_t)(next(&s) % 4); /* 0: none absent, else one in 2^absent */
        for (uint32_t i = 0; i < n; i++)
            src[i] = absent && next(&s) % (1u << absent) == 0 ? GS_MAXPLUS_NONE : (uint32_t)(next(&s) % 5000);
        /* Concave: increments that never grow (often equal, to make ties). */
        uint32_t inc = (uint32_t)(next(&s) % 80), v = (uint32_t)(next(&s) % 100);
        for (uint32_t i = 0; i < nf; i++) {
            f[i] = v;
            if (next(&s) % 3 == 0)
                inc = inc ? (uint32_t)(next(&s) % (inc + 1)) : 0;
            v += inc;
        }
        cr_assert(gs_pl_concave(f, nf), "round %d: the generated kernel is concave", round);
        naive(src, n, f, nf, want);
        gs_pl_maxplus_concave(src, n, f, nf, got);
        for (uint32_t g = 0; g < n; g++)
            cr_assert_eq(got[g], want[g], "round %d: n %u, nf %u, out[%u] = %lld, want %lld", round, n, nf, g,
                         (long long)got[g], (long long)want[g]);
    }
}

Test(place_maxplus, concavity_test)
{
    const uint32_t concave[] = {5, 9, 12, 14, 15, 15};
    const uint32_t convex[] = {1, 2, 4, 7};
    const uint32_t falling[] = {4, 6, 5};
    cr_assert(gs_pl_concave(concave, 6));
    cr_assert(gs_pl_concave(convex, 2), "two values are always concave");
    cr_assert_not(gs_pl_concave(convex, 4));
    cr_assert_not(gs_pl_concave(falling, 3));
    cr_assert(gs_pl_concave(NULL, 0));
}
