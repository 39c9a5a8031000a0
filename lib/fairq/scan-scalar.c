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

static void gs_fq_count(const gs_fq_scan_args *a, uint64_t bytes)
{
    if (a->bytes)
        *a->bytes += bytes;
}

/* True when no slot from s on can beat `best`: a later slot that ties
 * loses to the earlier one. False without a bound, and when the bound is
 * NaN (no usable bound: keep scanning). */
static bool gs_fq_rest_loses(const gs_fq_scan_args *a, uint32_t s, double best)
{
    if (!a->have_kmax)
        return false;
    gs_fq_count(a, sizeof *a->enq);
    return gs_fq_score_bound(a, s) <= best;
}

/* Oldest block first, stopping where the rest cannot win: the first block
 * [lo, end) with the largest maximum (in *max), GS_FQ_NONE if nothing
 * scores above -inf. */
static uint32_t gs_fq_best_block(const gs_fq_scan_args *a, gs_fq_block_max_fn exact, uint32_t end,
                                 double *max)
{
    double best = -INFINITY;
    uint32_t best_block = GS_FQ_NONE, lo = a->lo;
    for (; lo < end && !gs_fq_rest_loses(a, lo, best); lo = gs_fq_block_end(lo, end)) {
        double m = exact(a, lo, gs_fq_block_end(lo, end));
        if (m > best) {
            best = m;
            best_block = lo;
        }
    }
    gs_fq_count(a, (uint64_t)(lo - a->lo) * gs_fq_slot_bytes(a));
    *max = best;
    return best_block;
}

/* The first slot of [lo, hi) scoring `max`, the block's maximum: the
 * kernel finds the first piece of GS_FQ_PIECE slots holding it (a multiple
 * of every kernel's step), the reference the slot within that piece. */
#define GS_FQ_PIECE 64u
static void gs_fq_find_max(const gs_fq_scan_args *a, gs_fq_block_max_fn exact, uint32_t lo,
                           uint32_t hi, double max, gs_fq_best *b)
{
    uint32_t at = lo, to = hi;
    for (; at < hi; at = to) {
        to = hi - at > GS_FQ_PIECE ? at + GS_FQ_PIECE : hi;
        if (exact(a, at, to) == max)
            break;
    }
    if (at == hi)
        at = lo; /* no piece matched (only NaN scores can do that): the whole block */
    gs_fq_scan_range(a, at, to, b);
    gs_fq_count(a, (uint64_t)(to - lo + (to - at)) * gs_fq_slot_bytes(a));
}

void gs_fq_scan_blocks(const gs_fq_scan_args *a, gs_fq_block_max_fn exact, uint32_t step,
                       gs_fq_best *out)
{
    uint32_t n = a->hi - a->lo;
    uint32_t end = a->lo + (n - n % step);
    double max;
    uint32_t best_block = gs_fq_best_block(a, exact, end, &max);
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    if (best_block != GS_FQ_NONE)
        gs_fq_find_max(a, exact, best_block, gs_fq_block_end(best_block, end), max, &b);
    /* The tail holds the highest slots: it wins only when strictly better. */
    if (end < a->hi && !gs_fq_rest_loses(a, end, b.score)) {
        gs_fq_scan_range(a, end, a->hi, &b);
        gs_fq_count(a, (uint64_t)(a->hi - end) * gs_fq_slot_bytes(a));
    }
    *out = b;
}

void gs_fq_scan_scalar(const gs_fq_scan_args *a, gs_fq_best *out)
{
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    gs_fq_scan_range(a, a->lo, a->hi, &b);
    gs_fq_count(a, (uint64_t)(a->hi - a->lo) * gs_fq_slot_bytes(a));
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
