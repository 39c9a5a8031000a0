/* AArch64 NEON rescore: 2 slots per vector, 4 accumulators. NEON has no
 * gather, so the two key terms are loaded one by one; the arithmetic is
 * gs_fq_score()'s, operation for operation (vmulq then vaddq, never vfma). */
#include <arm_neon.h>
#include <math.h>

#include "fairq-internal.h"

#define GS_FQ_ACC 4
#define GS_FQ_STEP (2 * GS_FQ_ACC)

static inline float64x2_t gs_fq_neon_score(const gs_fq_scan_args *a, uint32_t s, float64x2_t now,
                                           float64x2_t ws, float64x2_t wp)
{
    float64x2_t e = vld1q_f64(a->enq + s);
    float64x2_t kt = vsetq_lane_f64(a->kterm[a->key[s + 1]], vdupq_n_f64(a->kterm[a->key[s]]), 1);
    float64x2_t wait = vsubq_f64(now, e);
    float64x2_t sc = vaddq_f64(kt, vmulq_f64(wait, ws));
    if (a->pred) {
        float64x2_t pr = vcvt_f64_f32(vld1_f32(a->pred + s));
        float64x2_t r = vdivq_f64(wait, vaddq_f64(wait, pr));
        sc = vaddq_f64(sc, vmulq_f64(wp, r));
    }
    return sc;
}

void gs_fq_scan_neon(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    uint32_t lo = a->lo, n = a->hi - a->lo;
    uint32_t end = lo + (n - n % GS_FQ_STEP);
    if (end > lo) {
        float64x2_t now = vdupq_n_f64(a->now), ws = vdupq_n_f64(a->wscale);
        float64x2_t wp = vdupq_n_f64(a->wpred), step = vdupq_n_f64(GS_FQ_STEP);
        float64x2_t best[GS_FQ_ACC], slot[GS_FQ_ACC], idx[GS_FQ_ACC];
        for (int j = 0; j < GS_FQ_ACC; j++) {
            double base = (double)lo + 2 * j;
            best[j] = vdupq_n_f64(-INFINITY);
            slot[j] = vdupq_n_f64(0);
            idx[j] = vsetq_lane_f64(base + 1, vdupq_n_f64(base), 1);
        }
        for (uint32_t s = lo; s < end; s += GS_FQ_STEP) {
            for (int j = 0; j < GS_FQ_ACC; j++) {
                float64x2_t sc = gs_fq_neon_score(a, s + 2 * j, now, ws, wp);
                uint64x2_t gt = vcgtq_f64(sc, best[j]);
                best[j] = vbslq_f64(gt, sc, best[j]);
                slot[j] = vbslq_f64(gt, idx[j], slot[j]);
                idx[j] = vaddq_f64(idx[j], step);
            }
        }
        double bs[2 * GS_FQ_ACC], bi[2 * GS_FQ_ACC];
        for (int j = 0; j < GS_FQ_ACC; j++) {
            vst1q_f64(bs + 2 * j, best[j]);
            vst1q_f64(bi + 2 * j, slot[j]);
        }
        gs_fq_merge_lanes(&b, bs, bi, 2 * GS_FQ_ACC);
    }
    gs_fq_best tail = {-INFINITY, GS_FQ_NONE};
    gs_fq_scan_range(a, end, a->hi, &tail);
    gs_fq_best_merge(&b, tail.score, tail.slot);
    *out = b;
}
