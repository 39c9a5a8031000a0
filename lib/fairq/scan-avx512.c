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

enum { GS_FQ_EXACT, GS_FQ_PRED };

/* One loop for every score form (see scan-avx2.c). */
static inline __attribute__((always_inline)) double
gs_fq_avx512_block_any(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi, int form)
{
    __m512d now = _mm512_set1_pd(a->now);
    __m512d ws = _mm512_set1_pd(a->wscale), wp = _mm512_set1_pd(a->wpred);
    __m512d m[4];
    for (int j = 0; j < 4; j++)
        m[j] = _mm512_set1_pd(-INFINITY);
    for (uint32_t s = lo; s < hi; s += 32)
        for (int j = 0; j < 4; j++) {
            uint32_t at = s + 8 * (uint32_t)j;
            __m512d sc = form == GS_FQ_PRED ? gs_fq_avx512_score_pred(a, at, now, ws, wp)
                                            : gs_fq_avx512_score(a, at, now, ws);
            m[j] = _mm512_max_pd(m[j], sc);
        }
    return _mm512_reduce_max_pd(_mm512_max_pd(_mm512_max_pd(m[0], m[1]), _mm512_max_pd(m[2], m[3])));
}

static double gs_fq_avx512_block(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi)
{
    return gs_fq_avx512_block_any(a, lo, hi, GS_FQ_EXACT);
}

static double gs_fq_avx512_block_pred(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi)
{
    return gs_fq_avx512_block_any(a, lo, hi, GS_FQ_PRED);
}

void gs_fq_scan_avx512(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_scan_blocks(a, a->pred ? gs_fq_avx512_block_pred : gs_fq_avx512_block, 32, out);
}
