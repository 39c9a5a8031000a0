/* Poll, peek and batch poll: build the per-poll terms, pick the best task
 * (fast path over FIFO heads or a full rescore through the chosen kernel),
 * optionally explore, then hand the task over and charge its tenant. */
#include <math.h>
#include <string.h>

#include "fairq-internal.h"

/* Every FIFO head is the best task of its FIFO (gs_fq_heads_apply), and
 * within a tenant all FIFOs share the tenant term, so the tenant's oldest
 * eligible task is its best; ties go to the lowest slot as in the rescore.
 * One visit per backlogged tenant, plus its keys when the worker's mask
 * excludes some of the tenant's types.
 *
 * Pass 1, over contiguous arrays, through the chosen kernel: every
 * backlogged tenant's score for its oldest task, and the best of them. */
static void gs_fq_heads_pass(const gpusched_fairq *q, const gs_fq_frame *f, gs_fq_best *b)
{
    gs_fq_heads_args a = {
        .b = q->hot_b, .e = q->hot_e, .slot = q->hot_slot, .s = q->hot_s,
        .n = q->nactive_tenants, .now = f->now, .bs = f->bscale, .ws = f->wscale, .wv = f->wv,
    };
    gs_fq_heads_v(q, f, &a.v, &a.vmax, &a.vs, &a.vterm);
    q->heads(&a, b);
}

static void gs_fq_scan_heads(gpusched_fairq *q, gs_fq_frame *f, gs_fq_best *b)
{
    gs_fq_heads_pass(q, f, b);
    if (f->mask == UINT64_MAX) {
        f->candidates = q->live; /* every backlogged tenant is a candidate */
        return;
    }
    /* Pass 2: the worker's mask, then the best (ties to the lowest slot).
     * A tenant with some types outside the mask is scored from its
     * eligible FIFO heads instead. Arrays and bounds in locals: the calls
     * below could alias them as far as the compiler knows. */
    const uint32_t n = q->nactive_tenants;
    const uint64_t *types_of = q->hot_types, mask = f->mask;
    const uint32_t *slot_of = q->hot_slot;
    const double *hs = q->hot_s, *hb = q->hot_b;
    double best = -INFINITY;
    /* Counted in integers: a floating-point sum would chain every
     * iteration on the add latency. Backlogs are exact in hot_b. */
    int64_t full = 0;
    uint64_t partial = 0;
    uint32_t best_slot = GS_FQ_NONE;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t types = types_of[i], elig = types & mask;
        if (!elig)
            continue;
        double s = hs[i];
        uint32_t slot = slot_of[i];
        if (GS_LIKELY(elig == types)) {
            full += (int64_t)hb[i];
        } else {
            uint32_t tn = q->active_tenants[i];
            double enq = 0;
            slot = GS_FQ_NONE;
            gs_fq_tenant_oldest(q, tn, mask, &slot, &enq, &partial);
            s = gs_fq_score(gs_fq_tenant_term(f, &q->ten[tn]), f->now, enq, f->wscale);
        }
        if (s > best || (s == best && slot < best_slot)) {
            best = s;
            best_slot = slot;
        }
    }
    b->score = best;
    b->slot = best_slot;
    f->candidates = (uint64_t)full + partial;
}

/* Every slot's key is active (a removed task's key is the hole key, whose
 * term stays -inf), so the frame's kmax bounds every term the scan reads;
 * the queue keeps now >= every enqueue time, wscale >= 0 and predictions
 * >= GS_FQ_PRED_MIN, what the bound needs besides. */
void gs_fq_scan_args_init(gpusched_fairq *q, const gs_fq_frame *f, gs_fq_scan_args *a)
{
    *a = (gs_fq_scan_args){
        .enq = q->enq, .key = q->key, .pred = q->p.w_pred > 0 ? q->pred : NULL,
        .kterm = q->kterm, .now = f->now, .wscale = f->wscale, .wpred = q->p.w_pred,
        .lo = q->lo, .hi = q->hi, .kmax = f->kmax, .have_kmax = true, .bytes = &q->scan_bytes,
    };
}

static void gs_fq_scan_full(gpusched_fairq *q, gs_fq_frame *f, gs_fq_best *b)
{
    gs_fq_frame_keys(q, f);
    gs_fq_scan_args a;
    gs_fq_scan_args_init(q, f, &a);
    q->scan(&a, b);
    q->scan_bytes += (uint64_t)q->nkeys * sizeof *q->kterm; /* the key terms it looks up */
}

static int gs_fq_choose(gpusched_fairq *q, double now, uint64_t mask, gs_fq_frame *f, gs_fq_best *b)
{
    int rc = gs_fq_check_now(q, now, &q->err);
    if (rc)
        return rc;
    gs_fq_frame_build(q, now, mask, f);
    if (gs_fq_heads_apply(q))
        gs_fq_scan_heads(q, f, b);
    else
        gs_fq_scan_full(q, f, b);
    if (f->candidates == 0)
        return gs_error(&q->err, GPUSCHED_EEMPTY, "no queued task matches type mask 0x%llx",
                        (unsigned long long)mask);
    return 0;
}

static int gs_fq_detail_check(gpusched_fairq *q, const gpusched_fairq_decision *d)
{
    if (d && d->size < offsetof(gpusched_fairq_decision, task_id) + sizeof d->task_id)
        return gs_error(&q->err, GPUSCHED_EINVAL, "decision: size %u too small (use the _INIT macro)",
                        d->size);
    return 0;
}

/* Copies as much of the decision as the caller's struct holds. */
static void gs_fq_detail_out(gpusched_fairq_decision *dst, const gpusched_fairq_decision *src)
{
    uint32_t n = dst->size < sizeof *src ? dst->size : (uint32_t)sizeof *src;
    memcpy((char *)dst + sizeof dst->size, (const char *)src + sizeof src->size, n - sizeof dst->size);
}

GPUSCHED_API int gpusched_fairq_peek(gpusched_fairq *q, double now, uint64_t type_mask, uint64_t *id,
                                     gpusched_fairq_decision *detail)
{
    if (!q || !id)
        return q ? gs_error(&q->err, GPUSCHED_EINVAL, "peek: id is NULL") : GPUSCHED_EINVAL;
    gs_fq_frame f;
    gs_fq_best b;
    int rc = gs_fq_detail_check(q, detail);
    if (rc || (rc = gs_fq_choose(q, now, type_mask, &f, &b)))
        return rc;
    *id = q->id[b.slot];
    if (detail) {
        gpusched_fairq_decision d;
        gs_fq_terms(q, &f, b.slot, &d);
        gs_fq_detail_out(detail, &d);
    }
    return gs_ok(&q->err);
}

static double gs_fq_uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Softmax over every eligible task with temperature T, in slot order so
 * the draw is reproducible from the seed; returns the choice's probability. */
static double gs_fq_explore(gpusched_fairq *q, const gs_fq_frame *f, gs_fq_best *b)
{
    double T = q->p.explore, smax = b->score, sum = 0;
    for (uint32_t s = q->lo; s < q->hi; s++)
        if (q->kterm[q->key[s]] > -INFINITY)
            sum += exp((gs_fq_slot_score(q, f, s) - smax) / T);
    double u = gs_fq_uniform(&q->rng) * sum, acc = 0, w = 1;
    uint32_t pick = b->slot;
    for (uint32_t s = q->lo; s < q->hi; s++) {
        if (!(q->kterm[q->key[s]] > -INFINITY))
            continue;
        w = exp((gs_fq_slot_score(q, f, s) - smax) / T);
        acc += w;
        pick = s;
        if (u < acc)
            break;
    }
    b->slot = pick;
    b->score = gs_fq_slot_score(q, f, pick);
    return w / sum;
}

/* Hands slot s over: charge, running record, removal. Cannot fail: the
 * caller reserved the running table and the log. */
static void gs_fq_dispatch(gpusched_fairq *q, const gs_fq_frame *f, uint32_t s, double prob,
                           gpusched_fairq_decision *detail)
{
    gpusched_fairq_decision d;
    bool want = detail || q->p.log_on != 0;
    if (want) {
        gs_fq_terms(q, f, s, &d);
        d.probability = prob;
    }
    uint32_t k = q->key[s];
    uint32_t tn = q->keys[k].tenant;
    gs_fq_tenant *t = &q->ten[tn];
    double cost = q->pred[s];
    gs_fq_decay(q, f->now);
    if (t->vtime > q->vclock)
        q->vclock = t->vtime; /* the virtual clock: start tag of the latest dispatch */
    t->vtime += cost / t->weight / q->vunit;
    t->service += cost;
    t->running++;
    gs_fq_run_add(q, q->id[s], &(gs_fq_run){.tenant = tn, .key = k, .x = q->x[s], .charged = cost});
    gs_fq_remove_slot(q, s); /* syncs the tenant's fast-path mirror */
    q->last_now = f->now;
    if (q->p.log_on != 0)
        q->log[q->nlog++] = d;
    if (detail)
        gs_fq_detail_out(detail, &d);
}

static int gs_fq_poll_reserve(gpusched_fairq *q, uint32_t k)
{
    int rc = gs_fq_run_reserve(q, k);
    if (!rc && q->p.log_on != 0)
        rc = gs_fq_log_reserve(q, k);
    return rc;
}

static int gs_fq_poll_one(gpusched_fairq *q, double now, uint64_t mask, uint64_t *id,
                          gpusched_fairq_decision *detail)
{
    gs_fq_frame f;
    gs_fq_best b;
    int rc = gs_fq_choose(q, now, mask, &f, &b);
    if (rc)
        return rc;
    double prob = 1.0;
    if (q->p.explore > 0)
        prob = gs_fq_explore(q, &f, &b);
    *id = q->id[b.slot];
    gs_fq_dispatch(q, &f, b.slot, prob, detail);
    return 0;
}

GPUSCHED_API int gpusched_fairq_poll(gpusched_fairq *q, double now, uint64_t type_mask, uint64_t *id,
                                     gpusched_fairq_decision *detail)
{
    if (!q || !id)
        return q ? gs_error(&q->err, GPUSCHED_EINVAL, "poll: id is NULL") : GPUSCHED_EINVAL;
    int rc = gs_fq_detail_check(q, detail);
    if (rc || (rc = gs_fq_poll_reserve(q, 1)) || (rc = gs_fq_poll_one(q, now, type_mask, id, detail)))
        return rc;
    return gs_ok(&q->err);
}

GPUSCHED_API int gpusched_fairq_poll_batch(gpusched_fairq *q, double now, uint32_t k,
                                           const uint64_t *type_masks, uint64_t *ids, uint8_t *got,
                                           uint32_t *n_got)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (k && (!type_masks || !ids || !got))
        return gs_error(&q->err, GPUSCHED_EINVAL, "poll_batch: masks, ids and got are required");
    int rc = gs_fq_check_now(q, now, &q->err);
    if (rc || (rc = gs_fq_poll_reserve(q, k)))
        return rc;
    uint32_t n = 0;
    for (uint32_t i = 0; i < k; i++) {
        got[i] = gs_fq_poll_one(q, now, type_masks[i], &ids[i], NULL) == 0;
        n += got[i];
    }
    if (n_got)
        *n_got = n;
    return gs_ok(&q->err);
}
