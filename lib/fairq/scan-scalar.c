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

void gs_fq_best_merge(gs_fq_best *b, double score, uint32_t slot)
{
    /* A lane that saw only ineligible slots holds -inf and no slot. */
    if (score > -INFINITY && gs_fq_better(score, slot, b)) {
        b->score = score;
        b->slot = slot;
    }
}

void gs_fq_merge_lanes(gs_fq_best *b, const double *score, const double *slot, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gs_fq_best_merge(b, score[i], (uint32_t)slot[i]);
}

void gs_fq_scan_scalar(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    gs_fq_scan_range(a, a->lo, a->hi, &b);
    *out = b;
}
