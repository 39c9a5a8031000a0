/* The portable reference rescore. Every SIMD kernel must return exactly
 * what this returns: the maximum score, ties to the lowest slot. */
#include <math.h>

#include "fairq-internal.h"

void gs_fq_scan_range(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi, gs_fq_best *b)
{
    if (a->pred) {
        for (uint32_t s = lo; s < hi; s++) {
            double v = gs_fq_score_pred(a->kterm[a->key[s]], a->now, a->enq[s], a->wscale, a->wpred,
                                        a->pred[s]);
            if (v > b->score) {
                b->score = v;
                b->slot = s;
            }
        }
        return;
    }
    for (uint32_t s = lo; s < hi; s++) {
        double v = gs_fq_score(a->kterm[a->key[s]], a->now, a->enq[s], a->wscale);
        if (v > b->score) {
            b->score = v;
            b->slot = s;
        }
    }
}

static uint32_t gs_fq_block_end(uint32_t lo, uint32_t end)
{
    return end - lo > GS_FQ_BLOCK ? lo + GS_FQ_BLOCK : end;
}

/* First block [lo, end) with the largest exact maximum, among all blocks
 * or, with `cand`, among those whose approximate maximum is >= cand_min. */
static uint32_t gs_fq_best_block(const gs_fq_scan_args *a, gs_fq_block_max_fn exact, uint32_t end,
                                 const double *cand, double cand_min)
{
    double best = -INFINITY;
    uint32_t best_block = GS_FQ_NONE;
    for (uint32_t lo = a->lo, b = 0; lo < end; lo += GS_FQ_BLOCK, b++) {
        if (cand && !(cand[b] >= cand_min))
            continue;
        double m = exact(a, lo, gs_fq_block_end(lo, end));
        if (m > best) {
            best = m;
            best_block = lo;
        }
    }
    return best_block;
}

/* Pass 1 of the prefilter: approximate block maxima and the bound on how
 * far any approximate score is from its exact score. Returns the smallest
 * approximate maximum a block may have and still hold the exact maximum
 * (NaN-free; -inf lets every block through, +inf none). */
static double gs_fq_prefilter(const gs_fq_scan_args *a, gs_fq_block_max_fn approx, uint32_t end)
{
    double top = -INFINITY;
    for (uint32_t lo = a->lo, b = 0; lo < end; lo += GS_FQ_BLOCK, b++) {
        a->blockmax[b] = approx(a, lo, gs_fq_block_end(lo, end));
        top = a->blockmax[b] > top ? a->blockmax[b] : top;
    }
    if (top == -INFINITY)
        return INFINITY; /* nothing eligible */
    /* Exact and approximate waits differ by the offsets' rounding (quant)
     * plus a few double roundings of numbers up to now32; scores then by
     * wscale times that plus a few roundings of numbers up to |top|.
     * 2^-40 is thousands of times the largest such rounding. */
    double eps = a->wscale * (a->quant + ldexp(fabs(a->now32), -40)) + ldexp(fabs(top) + 1.0, -40);
    double min = top - 2.0 * eps;
    return isfinite(min) ? min : -INFINITY; /* no usable bound: every block is a candidate */
}

void gs_fq_scan_blocks(const gs_fq_scan_args *a, gs_fq_block_max_fn exact,
                       gs_fq_block_max_fn approx, uint32_t step, gs_fq_best *out)
{
    uint32_t n = a->hi - a->lo;
    uint32_t end = a->lo + (n - n % step);
    uint32_t best_block;
    if (approx && !a->pred && a->enq32 && a->blockmax && isfinite(a->quant))
        best_block = gs_fq_best_block(a, exact, end, a->blockmax, gs_fq_prefilter(a, approx, end));
    else
        best_block = gs_fq_best_block(a, exact, end, NULL, 0);
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    if (best_block != GS_FQ_NONE)
        gs_fq_scan_range(a, best_block, gs_fq_block_end(best_block, end), &b);
    /* The tail holds the highest slots: it wins only when strictly better. */
    gs_fq_scan_range(a, end, a->hi, &b);
    *out = b;
}

void gs_fq_scan_scalar(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    gs_fq_scan_range(a, a->lo, a->hi, &b);
    *out = b;
}

void gs_fq_heads_scalar(const gs_fq_heads_args *a, gs_fq_best *out)
{
    double best = -INFINITY;
    uint32_t best_slot = GS_FQ_NONE;
    for (uint32_t i = 0; i < a->n; i++) {
        double v = gs_fq_head_score(a, i);
        a->s[i] = v;
        if (v > best || (v == best && a->slot[i] < best_slot)) {
            best = v;
            best_slot = a->slot[i];
        }
    }
    out->score = best;
    out->slot = best_slot;
}
