/* AVX-512 rescore: 8 slots per vector, 4 accumulators; the arithmetic is
 * gs_fq_score()'s, operation for operation (see scan-avx2.c). */
#include <immintrin.h>
#include <math.h>

#include "fairq-internal.h"

#define GS_FQ_ACC 4
#define GS_FQ_STEP (8 * GS_FQ_ACC)

static inline __m512d gs_fq_avx512_score(const gs_fq_scan_args *a, uint32_t s, __m512d now,
                                         __m512d ws, __m512d wp)
{
    __m512d e = _mm512_loadu_pd(a->enq + s);
    __m256i k = _mm256_loadu_si256((const __m256i *)(a->key + s));
    __m512d kt = _mm512_i32gather_pd(k, a->kterm, 8);
    __m512d wait = _mm512_sub_pd(now, e);
    __m512d sc = _mm512_add_pd(kt, _mm512_mul_pd(wait, ws));
    if (a->pred) {
        __m512d pr = _mm512_cvtps_pd(_mm256_loadu_ps(a->pred + s));
        __m512d r = _mm512_div_pd(wait, _mm512_add_pd(wait, pr));
        sc = _mm512_add_pd(sc, _mm512_mul_pd(wp, r));
    }
    return sc;
}

void gs_fq_scan_avx512(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    uint32_t lo = a->lo, n = a->hi - a->lo;
    uint32_t end = lo + (n - n % GS_FQ_STEP);
    if (end > lo) {
        __m512d now = _mm512_set1_pd(a->now), ws = _mm512_set1_pd(a->wscale);
        __m512d wp = _mm512_set1_pd(a->wpred), step = _mm512_set1_pd(GS_FQ_STEP);
        __m512d best[GS_FQ_ACC], slot[GS_FQ_ACC], idx[GS_FQ_ACC];
        for (int j = 0; j < GS_FQ_ACC; j++) {
            double base = (double)lo + 8 * j;
            best[j] = _mm512_set1_pd(-INFINITY);
            slot[j] = _mm512_setzero_pd();
            idx[j] = _mm512_setr_pd(base, base + 1, base + 2, base + 3, base + 4, base + 5,
                                    base + 6, base + 7);
        }
        for (uint32_t s = lo; s < end; s += GS_FQ_STEP) {
            for (int j = 0; j < GS_FQ_ACC; j++) {
                __m512d sc = gs_fq_avx512_score(a, s + 8 * j, now, ws, wp);
                __mmask8 gt = _mm512_cmp_pd_mask(sc, best[j], _CMP_GT_OQ);
                best[j] = _mm512_mask_blend_pd(gt, best[j], sc);
                slot[j] = _mm512_mask_blend_pd(gt, slot[j], idx[j]);
                idx[j] = _mm512_add_pd(idx[j], step);
            }
        }
        double bs[8 * GS_FQ_ACC], bi[8 * GS_FQ_ACC];
        for (int j = 0; j < GS_FQ_ACC; j++) {
            _mm512_storeu_pd(bs + 8 * j, best[j]);
            _mm512_storeu_pd(bi + 8 * j, slot[j]);
        }
        gs_fq_merge_lanes(&b, bs, bi, 8 * GS_FQ_ACC);
    }
    gs_fq_best tail = {-INFINITY, GS_FQ_NONE};
    gs_fq_scan_range(a, end, a->hi, &tail);
    gs_fq_best_merge(&b, tail.score, tail.slot);
    *out = b;
}
