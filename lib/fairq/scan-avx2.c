/* AVX2 rescore: block maxima over 4 slots per vector and 4 independent
 * accumulators (gs_fq_scan_blocks finds the slot). Same operations in the
 * same order as gs_fq_score() (multiply, then add; no FMA), so every score
 * is bit-identical to the reference. */
#include <immintrin.h>
#include <math.h>

#include "fairq-internal.h"

/* Four key terms by scalar loads: vgatherdpd is microcoded on the AMD
 * cores this runs on and measured slower than four loads here. */
static inline __m256d gs_fq_avx2_kterm(const double *kterm, const uint32_t *key)
{
    __m128d lo = _mm_loadh_pd(_mm_load_sd(kterm + key[0]), kterm + key[1]);
    __m128d hi = _mm_loadh_pd(_mm_load_sd(kterm + key[2]), kterm + key[3]);
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);
}

static inline __m256d gs_fq_avx2_score(const gs_fq_scan_args *a, uint32_t s, __m256d now, __m256d ws)
{
    __m256d e = _mm256_loadu_pd(a->enq + s);
    __m256d wait = _mm256_sub_pd(now, e);
    return _mm256_add_pd(gs_fq_avx2_kterm(a->kterm, a->key + s), _mm256_mul_pd(wait, ws));
}

static inline __m256d gs_fq_avx2_score_pred(const gs_fq_scan_args *a, uint32_t s, __m256d now,
                                            __m256d ws, __m256d wp)
{
    __m256d e = _mm256_loadu_pd(a->enq + s);
    __m256d wait = _mm256_sub_pd(now, e);
    __m256d sc = _mm256_add_pd(gs_fq_avx2_kterm(a->kterm, a->key + s), _mm256_mul_pd(wait, ws));
    __m256d pr = _mm256_cvtps_pd(_mm_loadu_ps(a->pred + s));
    __m256d r = _mm256_div_pd(wait, _mm256_add_pd(wait, pr));
    return _mm256_add_pd(sc, _mm256_mul_pd(wp, r));
}

static double gs_fq_avx2_hmax(__m256d m0, __m256d m1, __m256d m2, __m256d m3)
{
    __m256d m = _mm256_max_pd(_mm256_max_pd(m0, m1), _mm256_max_pd(m2, m3));
    __m128d h = _mm_max_pd(_mm256_castpd256_pd128(m), _mm256_extractf128_pd(m, 1));
    return _mm_cvtsd_f64(_mm_max_sd(h, _mm_unpackhi_pd(h, h)));
}

enum { GS_FQ_EXACT, GS_FQ_PRED };

/* One loop for every score form; `form` is a constant at each call, so
 * the compiler emits one specialized loop per form. */
static inline __attribute__((always_inline)) double
gs_fq_avx2_block_any(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi, int form)
{
    __m256d now = _mm256_set1_pd(a->now);
    __m256d ws = _mm256_set1_pd(a->wscale), wp = _mm256_set1_pd(a->wpred);
    __m256d m[4];
    for (int j = 0; j < 4; j++)
        m[j] = _mm256_set1_pd(-INFINITY);
    for (uint32_t s = lo; s < hi; s += 16)
        for (int j = 0; j < 4; j++) {
            uint32_t at = s + 4 * (uint32_t)j;
            __m256d sc = form == GS_FQ_PRED ? gs_fq_avx2_score_pred(a, at, now, ws, wp)
                                            : gs_fq_avx2_score(a, at, now, ws);
            m[j] = _mm256_max_pd(m[j], sc);
        }
    return gs_fq_avx2_hmax(m[0], m[1], m[2], m[3]);
}

static double gs_fq_avx2_block(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi)
{
    return gs_fq_avx2_block_any(a, lo, hi, GS_FQ_EXACT);
}

static double gs_fq_avx2_block_pred(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi)
{
    return gs_fq_avx2_block_any(a, lo, hi, GS_FQ_PRED);
}

void gs_fq_scan_avx2(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_scan_blocks(a, a->pred ? gs_fq_avx2_block_pred : gs_fq_avx2_block, 16, out);
}

/* The fast path: four tenants per vector, the scores stored and their
 * maximum kept branch-free (the reference's compare-and-branch per tenant
 * costs more than the score), then one compare per four tenants finds
 * the lowest slot holding the maximum. The maximum is exact, so the
 * answer is the reference's. */
static inline __attribute__((always_inline)) __m256d gs_fq_avx2_head4(
    const double *restrict hb, const double *restrict he, const double *restrict hv, uint32_t i,
    bool vterm, __m256d bs, __m256d ws, __m256d now, __m256d wv, __m256d vmax, __m256d vs)
{
    __m256d b = _mm256_mul_pd(_mm256_loadu_pd(hb + i), bs);
    __m256d tt = vterm ? _mm256_add_pd(b, _mm256_mul_pd(_mm256_sub_pd(vmax, _mm256_loadu_pd(hv + i)), vs))
                       : _mm256_add_pd(b, wv);
    __m256d t = _mm256_mul_pd(_mm256_sub_pd(now, _mm256_loadu_pd(he + i)), ws);
    return _mm256_add_pd(tt, t);
}

/* Arrays in restrict locals: the stores to s[] could alias the inputs as
 * far as the compiler knows, and it would reload every pointer. */
static inline __attribute__((always_inline)) double gs_fq_avx2_heads_pass(const gs_fq_heads_args *a,
                                                                          bool vterm)
{
    const uint32_t n = a->n;
    const double *restrict hb = a->b, *restrict he = a->e, *restrict hv = a->v;
    double *restrict hs = a->s;
    __m256d bs = _mm256_set1_pd(a->bs), ws = _mm256_set1_pd(a->ws), now = _mm256_set1_pd(a->now);
    __m256d wv = _mm256_set1_pd(a->wv), vmax = _mm256_set1_pd(a->vmax), vs = _mm256_set1_pd(a->vs);
    __m256d m0 = _mm256_set1_pd(-INFINITY), m1 = m0;
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d s0 = gs_fq_avx2_head4(hb, he, hv, i, vterm, bs, ws, now, wv, vmax, vs);
        __m256d s1 = gs_fq_avx2_head4(hb, he, hv, i + 4, vterm, bs, ws, now, wv, vmax, vs);
        _mm256_storeu_pd(hs + i, s0);
        _mm256_storeu_pd(hs + i + 4, s1);
        m0 = _mm256_max_pd(m0, s0);
        m1 = _mm256_max_pd(m1, s1);
    }
    if (i + 4 <= n) {
        __m256d s0 = gs_fq_avx2_head4(hb, he, hv, i, vterm, bs, ws, now, wv, vmax, vs);
        _mm256_storeu_pd(hs + i, s0);
        m0 = _mm256_max_pd(m0, s0);
        i += 4;
    }
    double m = gs_fq_avx2_hmax(m0, m1, m0, m1);
    for (; i < n; i++) {
        double v = gs_fq_head_score(a, i);
        hs[i] = v;
        m = v > m ? v : m;
    }
    return m;
}

void gs_fq_heads_avx2(const gs_fq_heads_args *a, gs_fq_best *out)
{
    out->score = -INFINITY;
    out->slot = GS_FQ_NONE;
    const uint32_t n = a->n;
    if (!n)
        return;
    double m = a->vterm ? gs_fq_avx2_heads_pass(a, true) : gs_fq_avx2_heads_pass(a, false);
    const double *hs = a->s;
    const uint32_t *slot_of = a->slot;
    uint32_t i = 0, best = GS_FQ_NONE;
    __m256d vm = _mm256_set1_pd(m);
    for (; i + 8 <= n; i += 8) {
        __m256d e0 = _mm256_cmp_pd(_mm256_loadu_pd(hs + i), vm, _CMP_EQ_OQ);
        __m256d e1 = _mm256_cmp_pd(_mm256_loadu_pd(hs + i + 4), vm, _CMP_EQ_OQ);
        unsigned hit = (unsigned)_mm256_movemask_pd(_mm256_or_pd(e0, e1));
        if (GS_LIKELY(!hit))
            continue;
        hit = (unsigned)_mm256_movemask_pd(e0) | (unsigned)_mm256_movemask_pd(e1) << 4;
        for (; hit; hit &= hit - 1) {
            uint32_t slot = slot_of[i + (uint32_t)__builtin_ctz(hit)];
            best = slot < best ? slot : best;
        }
    }
    for (; i < n; i++)
        if (hs[i] == m && slot_of[i] < best)
            best = slot_of[i];
    out->score = m;
    out->slot = best;
}
