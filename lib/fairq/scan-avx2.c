/* AVX2 rescore: 4 slots per vector, 4 independent accumulators so the
 * gathers and compares of one do not wait on another. Same operations in
 * the same order as gs_fq_score() (multiply, then add; no FMA), so every
 * score is bit-identical to the reference; each lane keeps its first
 * maximum and the merge breaks ties by lowest slot. */
#include <immintrin.h>
#include <math.h>

#include "fairq-internal.h"

#define GS_FQ_ACC 4
#define GS_FQ_STEP (4 * GS_FQ_ACC)

/* Four key terms by scalar loads: vgatherdpd is microcoded on the AMD
 * cores this runs on and measured slower than four loads here. */
static inline __m256d gs_fq_avx2_kterm(const double *kterm, const uint32_t *key)
{
    __m128d lo = _mm_loadh_pd(_mm_load_sd(kterm + key[0]), kterm + key[1]);
    __m128d hi = _mm_loadh_pd(_mm_load_sd(kterm + key[2]), kterm + key[3]);
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);
}

static inline __m256d gs_fq_avx2_score(const gs_fq_scan_args *a, uint32_t s, __m256d now, __m256d ws,
                                       __m256d wp)
{
    __m256d e = _mm256_loadu_pd(a->enq + s);
    __m256d kt = gs_fq_avx2_kterm(a->kterm, a->key + s);
    __m256d wait = _mm256_sub_pd(now, e);
    __m256d sc = _mm256_add_pd(kt, _mm256_mul_pd(wait, ws));
    if (a->pred) {
        __m256d pr = _mm256_cvtps_pd(_mm_loadu_ps(a->pred + s));
        __m256d r = _mm256_div_pd(wait, _mm256_add_pd(wait, pr));
        sc = _mm256_add_pd(sc, _mm256_mul_pd(wp, r));
    }
    return sc;
}

void gs_fq_scan_avx2(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    uint32_t lo = a->lo, n = a->hi - a->lo;
    uint32_t end = lo + (n - n % GS_FQ_STEP);
    if (end > lo) {
        __m256d now = _mm256_set1_pd(a->now), ws = _mm256_set1_pd(a->wscale);
        __m256d wp = _mm256_set1_pd(a->wpred), step = _mm256_set1_pd(GS_FQ_STEP);
        __m256d best[GS_FQ_ACC], slot[GS_FQ_ACC], idx[GS_FQ_ACC];
        for (int j = 0; j < GS_FQ_ACC; j++) {
            double base = (double)lo + 4 * j;
            best[j] = _mm256_set1_pd(-INFINITY);
            slot[j] = _mm256_setzero_pd();
            idx[j] = _mm256_setr_pd(base, base + 1, base + 2, base + 3);
        }
        for (uint32_t s = lo; s < end; s += GS_FQ_STEP) {
            for (int j = 0; j < GS_FQ_ACC; j++) {
                __m256d sc = gs_fq_avx2_score(a, s + 4 * j, now, ws, wp);
                __m256d gt = _mm256_cmp_pd(sc, best[j], _CMP_GT_OQ);
                best[j] = _mm256_blendv_pd(best[j], sc, gt);
                slot[j] = _mm256_blendv_pd(slot[j], idx[j], gt);
                idx[j] = _mm256_add_pd(idx[j], step);
            }
        }
        double bs[4 * GS_FQ_ACC], bi[4 * GS_FQ_ACC];
        for (int j = 0; j < GS_FQ_ACC; j++) {
            _mm256_storeu_pd(bs + 4 * j, best[j]);
            _mm256_storeu_pd(bi + 4 * j, slot[j]);
        }
        gs_fq_merge_lanes(&b, bs, bi, 4 * GS_FQ_ACC);
    }
    gs_fq_best tail = {-INFINITY, GS_FQ_NONE};
    gs_fq_scan_range(a, end, a->hi, &tail);
    gs_fq_best_merge(&b, tail.score, tail.slot);
    *out = b;
}
