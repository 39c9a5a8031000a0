/* AVX2 scan kernels (fscan.h): 8 stamps, 4 growths or keys per vector;
 * the best node in two passes (the least key, then its first node), so
 * that ties go to the lowest index as in the reference. */
#include <immintrin.h>

#include "fscan.h"

uint32_t gs_fs_stale_avx2(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end, uint32_t *out)
{
    uint32_t k = 0, n = first;
    for (; n + 8 <= end; n += 8) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(seen + n));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(stamp + n));
        uint32_t diff = ~(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b))) & 0xffu;
        for (; diff; diff &= diff - 1)
            out[k++] = n + (uint32_t)__builtin_ctz(diff);
    }
    for (; n < end; n++)
        if (seen[n] != stamp[n])
            out[k++] = n;
    return k;
}

int64_t gs_fs_least_avx2(const int64_t *growth, uint32_t first, uint32_t end)
{
    uint32_t n = first;
    __m256i m = _mm256_set1_epi64x(GS_FS_NO_FIT);
    for (; n + 4 <= end; n += 4) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(growth + n));
        m = _mm256_blendv_epi8(m, x, _mm256_cmpgt_epi64(m, x));
    }
    int64_t lane[4];
    _mm256_storeu_si256((__m256i *)lane, m);
    int64_t r = lane[0];
    for (int i = 1; i < 4; i++)
        r = lane[i] < r ? lane[i] : r;
    for (; n < end; n++)
        r = growth[n] < r ? growth[n] : r;
    return r;
}

/* pack where growth <= top, else all ones; sign-flipped for signed compares. */
static inline __m256i key_avx2(const int64_t *growth, const uint64_t *pack, uint32_t n, __m256i top, __m256i flip)
{
    const __m256i g = _mm256_loadu_si256((const __m256i *)(growth + n));
    const __m256i p = _mm256_loadu_si256((const __m256i *)(pack + n));
    const __m256i out = _mm256_cmpgt_epi64(g, top);
    return _mm256_xor_si256(_mm256_or_si256(p, out), flip);
}

uint32_t gs_fs_best_avx2(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end, int64_t top)
{
    const __m256i topv = _mm256_set1_epi64x(top), flip = _mm256_set1_epi64x(INT64_MIN);
    uint32_t n = first;
    __m256i m = _mm256_set1_epi64x(INT64_MAX); /* all ones, flipped */
    for (; n + 4 <= end; n += 4) {
        const __m256i k = key_avx2(growth, pack, n, topv, flip);
        m = _mm256_blendv_epi8(m, k, _mm256_cmpgt_epi64(m, k));
    }
    int64_t lane[4];
    _mm256_storeu_si256((__m256i *)lane, m);
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        const uint64_t v = (uint64_t)lane[i] ^ (uint64_t)INT64_MIN;
        least = v < least ? v : least;
    }
    for (uint32_t t = n; t < end; t++)
        if (growth[t] <= top && pack[t] < least)
            least = pack[t];
    if (least == UINT64_MAX)
        return GS_FS_NONE;
    /* The first node with that key: real keys are below all ones. */
    const __m256i want = _mm256_set1_epi64x((int64_t)(least ^ (uint64_t)INT64_MIN));
    for (n = first; n + 4 <= end; n += 4) {
        const uint32_t hit = (uint32_t)_mm256_movemask_pd(
            _mm256_castsi256_pd(_mm256_cmpeq_epi64(key_avx2(growth, pack, n, topv, flip), want)));
        if (hit)
            return n + (uint32_t)__builtin_ctz(hit);
    }
    for (; n < end; n++)
        if (growth[n] <= top && pack[n] == least)
            return n;
    return GS_FS_NONE;
}
