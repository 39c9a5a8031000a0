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

void gs_fq_scan_blocks(const gs_fq_scan_args *a, gs_fq_block_max_fn fn, uint32_t step,
                       gs_fq_best *out)
{
    uint32_t n = a->hi - a->lo;
    uint32_t end = a->lo + (n - n % step);
    double best = -INFINITY;
    uint32_t best_block = GS_FQ_NONE;
    for (uint32_t lo = a->lo; lo < end; lo += GS_FQ_BLOCK) {
        uint32_t hi = end - lo > GS_FQ_BLOCK ? lo + GS_FQ_BLOCK : end;
        double m = fn(a, lo, hi);
        if (m > best) {
            best = m;
            best_block = lo;
        }
    }
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    if (best_block != GS_FQ_NONE)
        gs_fq_scan_range(a, best_block, end - best_block > GS_FQ_BLOCK ? best_block + GS_FQ_BLOCK : end, &b);
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
