/* AArch64 NEON rescore: block maxima over 2 slots per vector and 4
 * accumulators (gs_fq_scan_blocks finds the slot). NEON has no gather, so
 * the two key terms are loaded one by one; the arithmetic is
 * gs_fq_score()'s, operation for operation (vmulq then vaddq, never vfma). */
#include <arm_neon.h>
#include <math.h>

#include "fairq-internal.h"

static inline float64x2_t gs_fq_neon_score(const gs_fq_scan_args *a, uint32_t s, float64x2_t now,
                                           float64x2_t ws)
{
    float64x2_t e = vld1q_f64(a->enq + s);
    float64x2_t kt = vsetq_lane_f64(a->kterm[a->key[s + 1]], vdupq_n_f64(a->kterm[a->key[s]]), 1);
    float64x2_t wait = vsubq_f64(now, e);
    return vaddq_f64(kt, vmulq_f64(wait, ws));
}

static inline float64x2_t gs_fq_neon_score_pred(const gs_fq_scan_args *a, uint32_t s,
                                                float64x2_t now, float64x2_t ws, float64x2_t wp)
{
    float64x2_t e = vld1q_f64(a->enq + s);
    float64x2_t kt = vsetq_lane_f64(a->kterm[a->key[s + 1]], vdupq_n_f64(a->kterm[a->key[s]]), 1);
    float64x2_t wait = vsubq_f64(now, e);
    float64x2_t sc = vaddq_f64(kt, vmulq_f64(wait, ws));
    float64x2_t pr = vcvt_f64_f32(vld1_f32(a->pred + s));
    float64x2_t r = vdivq_f64(wait, vaddq_f64(wait, pr));
    return vaddq_f64(sc, vmulq_f64(wp, r));
}

enum { GS_FQ_EXACT, GS_FQ_PRED };

/* One loop for every score form (see scan-avx2.c). */
static inline __attribute__((always_inline)) double
gs_fq_neon_block_any(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi, int form)
{
    float64x2_t now = vdupq_n_f64(a->now);
    float64x2_t ws = vdupq_n_f64(a->wscale), wp = vdupq_n_f64(a->wpred);
    float64x2_t m[4];
    for (int j = 0; j < 4; j++)
        m[j] = vdupq_n_f64(-INFINITY);
    for (uint32_t s = lo; s < hi; s += 8)
        for (int j = 0; j < 4; j++) {
            uint32_t at = s + 2 * (uint32_t)j;
            float64x2_t sc = form == GS_FQ_PRED ? gs_fq_neon_score_pred(a, at, now, ws, wp)
                                                : gs_fq_neon_score(a, at, now, ws);
            m[j] = vmaxq_f64(m[j], sc);
        }
    return vmaxvq_f64(vmaxq_f64(vmaxq_f64(m[0], m[1]), vmaxq_f64(m[2], m[3])));
}

static double gs_fq_neon_block(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi)
{
    return gs_fq_neon_block_any(a, lo, hi, GS_FQ_EXACT);
}

static double gs_fq_neon_block_pred(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi)
{
    return gs_fq_neon_block_any(a, lo, hi, GS_FQ_PRED);
}

void gs_fq_scan_neon(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_scan_blocks(a, a->pred ? gs_fq_neon_block_pred : gs_fq_neon_block, 8, out);
}
