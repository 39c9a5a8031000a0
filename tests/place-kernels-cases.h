/* Cases for the fragmentation policy's scan kernels (lib/place/fscan.h),
 * shared by the per-path test (test-place-kernels.c) and the AArch64 NEON
 * test under qemu (tests/cross): random per-node records and a literal
 * loop to check the reference against. No Criterion: the cross test is a
 * plain program. */
#ifndef GS_TEST_PLACE_KERNELS_CASES_H
#define GS_TEST_PLACE_KERNELS_CASES_H

#include <string.h>

#include "place/fscan.h"
#include "test-rng.h"

#define N 600

typedef struct recs {
    uint32_t seen[N], stamp[N];
    int64_t growth[N];
    uint64_t pack[N];
} recs;

/* Growths and keys from small sets (ties), some nodes without a fit, and
 * now and then the extremes. */
static inline void random_recs(recs *x)
{
    const uint32_t kinds = 1 + rndu(6);
    for (uint32_t n = 0; n < N; n++) {
        x->stamp[n] = 1 + rndu(3);
        x->seen[n] = rndu(4) ? x->stamp[n] : rndu(3);
        const uint32_t g = rndu(10);
        x->growth[n] = g == 0 ? GS_FS_NO_FIT : g == 1 ? INT64_MIN + (int64_t)rndu(3)
                                                      : ((int64_t)rndu(kinds) - 2) * ((int64_t)1 << 32);
        x->pack[n] = rndu(8) ? (uint64_t)rndu(kinds) << 32 | rndu(kinds) : (uint64_t)rndu(64001) << 32 | (rnd() >> 35);
    }
}

static inline uint32_t literal_best(const recs *x, uint32_t first, uint32_t end, int64_t top)
{
    uint32_t best = GS_FS_NONE;
    uint64_t key = 0;
    for (uint32_t n = first; n < end; n++) {
        if (x->growth[n] > top)
            continue;
        if (best == GS_FS_NONE || x->pack[n] < key) {
            best = n;
            key = x->pack[n];
        }
    }
    return best;
}

#endif
