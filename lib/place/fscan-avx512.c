/* AVX-512 scan kernels (fscan.h): 16 stamps, 8 growths or keys per vector,
 * with native 64-bit minimums and mask registers; ties to the lowest index
 * as in the reference (the least key, then its first node). */
#include <immintrin.h>

#include "fscan.h"

uint32_t gs_fs_stale_avx512(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end,
                            uint32_t *out)
{
    uint32_t k = 0, n = first;
    for (; n + 16 <= end; n += 16) {
        const __m512i a = _mm512_loadu_si512((const void *)(seen + n));
        const __m512i b = _mm512_loadu_si512((const void *)(stamp + n));
        for (uint32_t diff = _mm512_cmpneq_epu32_mask(a, b); diff; diff &= diff - 1)
            out[k++] = n + (uint32_t)__builtin_ctz(diff);
    }
    for (; n < end; n++)
        if (seen[n] != stamp[n])
            out[k++] = n;
    return k;
}

int64_t gs_fs_least_avx512(const int64_t *growth, uint32_t first, uint32_t end)
{
    uint32_t n = first;
    __m512i m = _mm512_set1_epi64(GS_FS_NO_FIT);
    for (; n + 8 <= end; n += 8)
        m = _mm512_min_epi64(m, _mm512_loadu_si512((const void *)(growth + n)));
    int64_t r = _mm512_reduce_min_epi64(m);
    for (; n < end; n++)
        r = growth[n] < r ? growth[n] : r;
    return r;
}

static inline __m512i key_avx512(const int64_t *growth, const uint64_t *pack, uint32_t n, __m512i top)
{
    const __mmask8 in = _mm512_cmple_epi64_mask(_mm512_loadu_si512((const void *)(growth + n)), top);
    return _mm512_mask_loadu_epi64(_mm512_set1_epi64(-1), in, pack + n);
}

uint32_t gs_fs_best_avx512(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end, int64_t top)
{
    const __m512i topv = _mm512_set1_epi64(top);
    uint32_t n = first;
    __m512i m = _mm512_set1_epi64(-1);
    for (; n + 8 <= end; n += 8)
        m = _mm512_min_epu64(m, key_avx512(growth, pack, n, topv));
    uint64_t least = _mm512_reduce_min_epu64(m);
    for (uint32_t t = n; t < end; t++)
        if (growth[t] <= top && pack[t] < least)
            least = pack[t];
    if (least == UINT64_MAX)
        return GS_FS_NONE;
    const __m512i want = _mm512_set1_epi64((int64_t)least);
    for (n = first; n + 8 <= end; n += 8) {
        const uint32_t hit = _mm512_cmpeq_epu64_mask(key_avx512(growth, pack, n, topv), want);
        if (hit)
            return n + (uint32_t)__builtin_ctz(hit);
    }
    for (; n < end; n++)
        if (growth[n] <= top && pack[n] == least)
            return n;
    return GS_FS_NONE;
}
