/* AVX-512 rescore: block maxima over 8 slots per vector and 4
 * accumulators (gs_fq_scan_blocks finds the slot); the arithmetic is
 * gs_fq_score()'s, operation for operation (see scan-avx2.c). Gathers are
 * cheap on the Intel cores that have AVX-512. */
#include <immintrin.h>
#include <math.h>

#include "fairq-internal.h"

static inline __m512d gs_fq_avx512_score(const gs_fq_scan_args *a, uint32_t s, __m512d now,
                                         __m512d ws)
{
    __m512d e = _mm512_loadu_pd(a->enq + s);
    __m256i k = _mm256_loadu_si256((const __m256i *)(a->key + s));
    __m512d kt = _mm512_i32gather_pd(k, a->kterm, 8);
    __m512d wait = _mm512_sub_pd(now, e);
    return _mm512_add_pd(kt, _mm512_mul_pd(wait, ws));
}

static inline __m512d gs_fq_avx512_score_pred(const gs_fq_scan_args *a, uint32_t s, __m512d now,
                                              __m512d ws, __m512d wp)
{
    __m512d e = _mm512_loadu_pd(a->enq + s);
    __m256i k = _mm256_loadu_si256((const __m256i *)(a->key + s));
    __m512d kt = _mm512_i32gather_pd(k, a->kterm, 8);
    __m512d wait = _mm512_sub_pd(now, e);
    __m512d sc = _mm512_add_pd(kt, _mm512_mul_pd(wait, ws));
    __m512d pr = _mm512_cvtps_pd(_mm256_loadu_ps(a->pred + s));
    __m512d r = _mm512_div_pd(wait, _mm512_add_pd(wait, pr));
    return _mm512_add_pd(sc, _mm512_mul_pd(wp, r));
}

static double gs_fq_avx512_block(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi)
{
    __m512d now = _mm512_set1_pd(a->now), ws = _mm512_set1_pd(a->wscale);
    __m512d m0 = _mm512_set1_pd(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (uint32_t s = lo; s < hi; s += 32) {
        m0 = _mm512_max_pd(m0, gs_fq_avx512_score(a, s, now, ws));
        m1 = _mm512_max_pd(m1, gs_fq_avx512_score(a, s + 8, now, ws));
        m2 = _mm512_max_pd(m2, gs_fq_avx512_score(a, s + 16, now, ws));
        m3 = _mm512_max_pd(m3, gs_fq_avx512_score(a, s + 24, now, ws));
    }
    return _mm512_reduce_max_pd(_mm512_max_pd(_mm512_max_pd(m0, m1), _mm512_max_pd(m2, m3)));
}

static double gs_fq_avx512_block_pred(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi)
{
    __m512d now = _mm512_set1_pd(a->now), ws = _mm512_set1_pd(a->wscale);
    __m512d wp = _mm512_set1_pd(a->wpred);
    __m512d m0 = _mm512_set1_pd(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    for (uint32_t s = lo; s < hi; s += 32) {
        m0 = _mm512_max_pd(m0, gs_fq_avx512_score_pred(a, s, now, ws, wp));
        m1 = _mm512_max_pd(m1, gs_fq_avx512_score_pred(a, s + 8, now, ws, wp));
        m2 = _mm512_max_pd(m2, gs_fq_avx512_score_pred(a, s + 16, now, ws, wp));
        m3 = _mm512_max_pd(m3, gs_fq_avx512_score_pred(a, s + 24, now, ws, wp));
    }
    return _mm512_reduce_max_pd(_mm512_max_pd(_mm512_max_pd(m0, m1), _mm512_max_pd(m2, m3)));
}

void gs_fq_scan_avx512(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_scan_blocks(a, a->pred ? gs_fq_avx512_block_pred : gs_fq_avx512_block, 32, out);
}
