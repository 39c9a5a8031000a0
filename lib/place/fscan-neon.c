/* AArch64 NEON scan kernels (fscan.h): 4 stamps, 2 growths or keys per
 * vector; ties to the lowest index as in the reference (the least key,
 * then its first node). */
#include <arm_neon.h>

#include "fscan.h"

uint32_t gs_fs_stale_neon(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end, uint32_t *out)
{
    uint32_t k = 0, n = first;
    for (; n + 4 <= end; n += 4) {
        const uint32x4_t eq = vceqq_u32(vld1q_u32(seen + n), vld1q_u32(stamp + n));
        if (vminvq_u32(eq) == UINT32_MAX)
            continue; /* the common case: all four up to date */
        for (uint32_t i = 0; i < 4; i++)
            if (seen[n + i] != stamp[n + i])
                out[k++] = n + i;
    }
    for (; n < end; n++)
        if (seen[n] != stamp[n])
            out[k++] = n;
    return k;
}

int64_t gs_fs_least_neon(const int64_t *growth, uint32_t first, uint32_t end)
{
    uint32_t n = first;
    int64x2_t m = vdupq_n_s64(GS_FS_NO_FIT);
    for (; n + 2 <= end; n += 2) {
        const int64x2_t x = vld1q_s64(growth + n);
        m = vbslq_s64(vcltq_s64(x, m), x, m);
    }
    int64_t r = vgetq_lane_s64(m, 0) < vgetq_lane_s64(m, 1) ? vgetq_lane_s64(m, 0) : vgetq_lane_s64(m, 1);
    for (; n < end; n++)
        r = growth[n] < r ? growth[n] : r;
    return r;
}

static inline uint64x2_t key_neon(const int64_t *growth, const uint64_t *pack, uint32_t n, int64x2_t top)
{
    const uint64x2_t out = vcgtq_s64(vld1q_s64(growth + n), top);
    return vorrq_u64(vld1q_u64(pack + n), out);
}

uint32_t gs_fs_best_neon(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end, int64_t top)
{
    const int64x2_t topv = vdupq_n_s64(top);
    uint32_t n = first;
    uint64x2_t m = vdupq_n_u64(UINT64_MAX);
    for (; n + 2 <= end; n += 2) {
        const uint64x2_t k = key_neon(growth, pack, n, topv);
        m = vbslq_u64(vcltq_u64(k, m), k, m);
    }
    uint64_t least = vgetq_lane_u64(m, 0) < vgetq_lane_u64(m, 1) ? vgetq_lane_u64(m, 0) : vgetq_lane_u64(m, 1);
    for (uint32_t t = n; t < end; t++)
        if (growth[t] <= top && pack[t] < least)
            least = pack[t];
    if (least == UINT64_MAX)
        return GS_FS_NONE;
    const uint64x2_t want = vdupq_n_u64(least);
    for (n = first; n + 2 <= end; n += 2) {
        const uint64x2_t eq = vceqq_u64(key_neon(growth, pack, n, topv), want);
        if (vgetq_lane_u64(eq, 0))
            return n;
        if (vgetq_lane_u64(eq, 1))
            return n + 1;
    }
    for (; n < end; n++)
        if (growth[n] <= top && pack[n] == least)
            return n;
    return GS_FS_NONE;
}
