/* Scoring policy: parameters, the per-poll tenant and key terms, virtual
 * time decay. The per-task part of the score lives in the scan kernels and
 * gs_fq_score(); everything that depends only on the tenant or the key is
 * computed here once per poll, by one piece of scalar code shared by every
 * path, so the kernels cannot disagree about it. */
#include <math.h>
#include <stddef.h>

#include "fairq-internal.h"

typedef struct gs_fq_param_info {
    uint32_t id;
    size_t offset;
    double lo, hi, def;
    bool integer;
} gs_fq_param_info;

#define GS_FQ_P(field) offsetof(gs_fq_params, field)

/* LAG_CAP of the LAGCAP preset, in typical task costs (doc/fairness-report.md
 * measures the choice). */
#define GS_FQ_LAGCAP_DEFAULT 16.0

static const gs_fq_param_info gs_fq_param_table[] = {
    {GPUSCHED_FAIRQ_PARAM_W_BACKLOG, GS_FQ_P(w_backlog), 0, 1e6, 0.1, false},
    {GPUSCHED_FAIRQ_PARAM_W_WAIT, GS_FQ_P(w_wait), 0, 1e6, 0.9, false},
    {GPUSCHED_FAIRQ_PARAM_W_VTIME, GS_FQ_P(w_vtime), 0, 1e6, 0, false},
    {GPUSCHED_FAIRQ_PARAM_W_PRED, GS_FQ_P(w_pred), 0, 1e6, 0, false},
    {GPUSCHED_FAIRQ_PARAM_HALF_LIFE, GS_FQ_P(half_life), 0, 1e12, 0, false},
    {GPUSCHED_FAIRQ_PARAM_PRED_ALPHA, GS_FQ_P(pred_alpha), 1e-6, 1, 0.05, false},
    {GPUSCHED_FAIRQ_PARAM_PRED_DEFAULT, GS_FQ_P(pred_default), 1e-9, 1e12, 1.0, false},
    {GPUSCHED_FAIRQ_PARAM_SCAN, GS_FQ_P(scan_full), 0, 1, 0, true},
    {GPUSCHED_FAIRQ_PARAM_LOG, GS_FQ_P(log_on), 0, 1, 0, true},
    {GPUSCHED_FAIRQ_PARAM_EXPLORE, GS_FQ_P(explore), 0, 1e6, 0, false},
    {GPUSCHED_FAIRQ_PARAM_SEED, GS_FQ_P(seed), 0, 9007199254740992.0, 0, true},
    {GPUSCHED_FAIRQ_PARAM_LAG_CAP, GS_FQ_P(lag_cap), 0, 1e6, 0, false},
};

static const gs_fq_param_info *gs_fq_param_find(uint32_t id)
{
    for (size_t i = 0; i < GS_ARRAY_LEN(gs_fq_param_table); i++)
        if (gs_fq_param_table[i].id == id)
            return &gs_fq_param_table[i];
    return NULL;
}

static double *gs_fq_param_ptr(gs_fq_params *p, const gs_fq_param_info *info)
{
    return (double *)((char *)p + info->offset);
}

/* splitmix64 of the seed: the exploration stream for a given seed. */
static uint64_t gs_fq_seed_state(double seed)
{
    return (uint64_t)seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
}

void gs_fq_params_default(gs_fq_params *p)
{
    for (size_t i = 0; i < GS_ARRAY_LEN(gs_fq_param_table); i++)
        *gs_fq_param_ptr(p, &gs_fq_param_table[i]) = gs_fq_param_table[i].def;
}

GPUSCHED_API int gpusched_fairq_param_bounds(uint32_t param, double *lo, double *hi)
{
    const gs_fq_param_info *info = gs_fq_param_find(param);
    if (!info || !lo || !hi)
        return GPUSCHED_EINVAL;
    *lo = info->lo;
    *hi = info->hi;
    return 0;
}

GPUSCHED_API int gpusched_fairq_param_set(gpusched_fairq *q, uint32_t param, double value)
{
    if (!q)
        return GPUSCHED_EINVAL;
    const gs_fq_param_info *info = gs_fq_param_find(param);
    if (!info)
        return gs_error(&q->err, GPUSCHED_EINVAL, "set_param: unknown parameter %u", param);
    if (!(value >= info->lo && value <= info->hi) || (info->integer && value != floor(value)))
        return gs_error(&q->err, GPUSCHED_ERANGE, "set_param: parameter %u = %g, expected %s in [%g, %g]",
                        param, value, info->integer ? "an integer" : "a value", info->lo, info->hi);
    *gs_fq_param_ptr(&q->p, info) = value;
    if (param == GPUSCHED_FAIRQ_PARAM_SEED)
        q->rng = gs_fq_seed_state(value);
    return gs_ok(&q->err);
}

GPUSCHED_API int gpusched_fairq_param_get(gpusched_fairq *q, uint32_t param, double *value)
{
    if (!q)
        return GPUSCHED_EINVAL;
    const gs_fq_param_info *info = gs_fq_param_find(param);
    if (!info)
        return gs_error(&q->err, GPUSCHED_EINVAL, "param_get: unknown parameter %u", param);
    if (!value)
        return gs_error(&q->err, GPUSCHED_EINVAL, "param_get: value is NULL");
    *value = *gs_fq_param_ptr(&q->p, info);
    return gs_ok(&q->err);
}

GPUSCHED_API int gpusched_fairq_policy_set(gpusched_fairq *q, uint32_t policy)
{
    if (!q)
        return GPUSCHED_EINVAL;
    switch (policy) {
    case GPUSCHED_FAIRQ_POLICY_DES:
        q->p.w_backlog = 0.1, q->p.w_wait = 0.9, q->p.w_vtime = 0, q->p.w_pred = 0;
        q->p.lag_cap = 0;
        break;
    case GPUSCHED_FAIRQ_POLICY_STATEFUL:
        q->p.w_backlog = 0, q->p.w_wait = 0.05, q->p.w_vtime = 1, q->p.w_pred = 0;
        q->p.lag_cap = 0;
        break;
    case GPUSCHED_FAIRQ_POLICY_LAGCAP:
        /* W_VTIME / 2 above W_WAIT: the three tiers of the fair-share
         * term never mix, and within a tier the oldest task wins. */
        q->p.w_backlog = 0, q->p.w_wait = 0.9, q->p.w_vtime = 2, q->p.w_pred = 0;
        q->p.lag_cap = GS_FQ_LAGCAP_DEFAULT;
        break;
    default:
        return gs_error(&q->err, GPUSCHED_EINVAL, "set_policy: unknown policy %u", policy);
    }
    return gs_ok(&q->err);
}

GPUSCHED_API int gpusched_fairq_tenant_weight_set(gpusched_fairq *q, uint32_t tenant, double weight)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (tenant >= q->ntenants)
        return gs_error(&q->err, GPUSCHED_ERANGE, "tenant %u, the queue has %u", tenant, q->ntenants);
    if (!(weight >= 1e-6 && weight <= 1e6))
        return gs_error(&q->err, GPUSCHED_ERANGE, "tenant %u: weight %g, expected [1e-6, 1e6]", tenant,
                        weight);
    q->ten[tenant].weight = weight;
    return gs_ok(&q->err);
}

GPUSCHED_API int gpusched_fairq_tenant_get(gpusched_fairq *q, uint32_t tenant, uint32_t what,
                                           double *value)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (!value)
        return gs_error(&q->err, GPUSCHED_EINVAL, "tenant_get: value is NULL");
    if (tenant >= q->ntenants)
        return gs_error(&q->err, GPUSCHED_ERANGE, "tenant_get: tenant %u, the queue has %u", tenant, q->ntenants);
    const gs_fq_tenant *t = &q->ten[tenant];
    switch (what) {
    case GPUSCHED_FAIRQ_TENANT_WEIGHT: *value = t->weight; break;
    case GPUSCHED_FAIRQ_TENANT_BACKLOG: *value = t->backlog; break;
    case GPUSCHED_FAIRQ_TENANT_RUNNING: *value = t->running; break;
    case GPUSCHED_FAIRQ_TENANT_VTIME: *value = t->vtime * q->vunit; break;
    case GPUSCHED_FAIRQ_TENANT_SERVICE: *value = t->service; break;
    default: return gs_error(&q->err, GPUSCHED_EINVAL, "tenant_get: unknown value %u", what);
    }
    return gs_ok(&q->err);
}

int gs_fq_check_now(const gpusched_fairq *q, double now, gs_err *e)
{
    if (isnan(now))
        return gs_error(e, GPUSCHED_ERANGE, "now is not a number (NaN)");
    if (!isfinite(now))
        return gs_error(e, GPUSCHED_ERANGE, "now = %g is not finite", now);
    if (now < q->last_enq || now < q->last_now)
        return gs_error(e, GPUSCHED_ERANGE,
                        "now = %g is earlier than the last enqueue (%g) or poll (%g)", now,
                        q->last_enq, q->last_now);
    return 0;
}

static double gs_fq_vtime_term(double v, double vmin, double vmax)
{
    return vmax > vmin ? (vmax - v) / (vmax - vmin) : 1.0;
}

static void gs_fq_frame_vtime(const gpusched_fairq *q, gs_fq_frame *f)
{
    double vmin = INFINITY, vmax = -INFINITY;
    for (uint32_t i = 0; i < q->nactive_tenants; i++) {
        double v = q->ten[q->active_tenants[i]].vtime;
        vmin = v < vmin ? v : vmin;
        vmax = v > vmax ? v : vmax;
    }
    f->vmin = vmin;
    f->vmax = vmax;
    f->have_v = true;
}

/* The lag cap measures service against a cumulative max-min fair share,
 * so a returning tenant keeps what it did not receive while idle (its
 * share was not owed then: it asked for nothing more). HALF_LIFE is what
 * forgets old service and old demand alike. */
double gs_fq_vtime_floor(const gpusched_fairq *q)
{
    return q->p.w_vtime > 0 && q->p.lag_cap > 0 ? -INFINITY : q->vclock;
}

void gs_fq_demand_add(gpusched_fairq *q, uint32_t t, double cost)
{
    gs_fq_tenant *ten = &q->ten[t];
    ten->dtime += cost / ten->weight / q->vunit;
}

/* Service (weighted) that tenants would have at fair level l: each gets
 * min(demand, l) per unit weight. */
static double gs_fq_fill(const gpusched_fairq *q, double l)
{
    double s = 0;
    for (uint32_t t = 0; t < q->ntenants; t++) {
        const gs_fq_tenant *x = &q->ten[t];
        s += x->weight * (x->dtime < l ? x->dtime : l);
    }
    return s;
}

/* One water-filling step from a level l at or below the fair one: with
 * the tenants whose demand is at most l filled to their demand and the
 * others at a common level, the level that gives out the service exactly.
 * The fill is concave and piecewise linear in l, so the step never passes
 * the fair level and is exact once no demand lies between l and it. */
static double gs_fq_fill_step(const gpusched_fairq *q, double l, double served)
{
    double full = 0, wrest = 0;
    for (uint32_t t = 0; t < q->ntenants; t++) {
        const gs_fq_tenant *x = &q->ten[t];
        if (x->dtime <= l)
            full += x->weight * x->dtime;
        else
            wrest += x->weight;
    }
    return wrest > 0 ? (served - full) / wrest : l;
}

/* The weighted max-min fair level of the service given so far: the l with
 * sum_t w_t min(d_t, l) = sum_t w_t v_t; +inf when every demand is served.
 * Water-filling from served / (weight of the tenants with demand), which
 * is at or below it: each step fills the tenants whose demand the level
 * passed, and the level stops rising when no more do (usually within a
 * few passes over the tenants). Demands spread so that it would take
 * more than 16 steps finish by bisection above the last step (the fill
 * rises with l). Also the mean weight of the tenants that asked for
 * anything (1 if none). */
double gs_fq_level(const gpusched_fairq *q, double *wmean)
{
    double served = 0, dmax = 0, wsum = 0, demand = 0;
    uint32_t n = 0;
    for (uint32_t t = 0; t < q->ntenants; t++) {
        const gs_fq_tenant *x = &q->ten[t];
        served += x->weight * x->vtime;
        demand += x->weight * x->dtime; /* the fill at the largest demand */
        dmax = x->dtime > dmax ? x->dtime : dmax;
        if (x->dtime > 0)
            wsum += x->weight, n++;
    }
    *wmean = n ? wsum / n : 1.0;
    if (demand <= served)
        return INFINITY;
    if (served <= 0)
        return 0;
    double lo = served / wsum;
    for (int i = 0; i < 16; i++) {
        double next = gs_fq_fill_step(q, lo, served);
        if (!(next > lo))
            return lo;
        lo = next;
    }
    double hi = dmax;
    for (int i = 0; i < 64 && hi - lo > 1e-12 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (gs_fq_fill(q, mid) < served)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

/* The cap per unit weight in stored units (seconds / weight / vunit),
 * and the tiers of the backlogged tenants for the fast path. */
static void gs_fq_frame_cap(const gpusched_fairq *q, gs_fq_frame *f)
{
    double wmean;
    f->capped = true;
    f->level = gs_fq_level(q, &wmean);
    f->cap = q->p.lag_cap * gs_fq_typical_cost(q) / wmean / q->vunit;
    for (uint32_t i = 0; i < q->nactive_tenants; i++)
        q->hot_t[i] = -(gs_fq_cap_term(f, &q->ten[q->active_tenants[i]]) * f->wv);
}

void gs_fq_heads_v(const gpusched_fairq *q, const gs_fq_frame *f, const double **v, double *vmax,
                   double *vs, bool *vterm)
{
    *v = f->capped ? q->hot_t : q->hot_v;
    *vmax = f->capped ? 0.0 : f->vmax;
    *vs = f->capped ? 1.0 : f->vscale;
    *vterm = f->capped || f->vmax > f->vmin;
}

/* O(1) unless the fair-share term is on (then one pass over the
 * backlogged tenants for the range of virtual times). */
void gs_fq_frame_build(gpusched_fairq *q, double now, uint64_t mask, gs_fq_frame *f)
{
    double maxb = q->max_backlog;
    f->now = now;
    f->mask = mask;
    f->max_backlog = maxb;
    f->vmin = f->vmax = 0;
    f->have_v = false;
    f->capped = false;
    f->cap = f->level = 0;
    if (q->p.w_vtime > 0)
        gs_fq_frame_vtime(q, f);
    f->max_wait = q->live ? now - q->enq[q->lo] : 0;
    f->wscale = f->max_wait > 0 ? q->p.w_wait / f->max_wait : 0;
    f->bscale = maxb > 0 ? q->p.w_backlog / maxb : 0;
    f->vscale = f->vmax > f->vmin ? q->p.w_vtime / (f->vmax - f->vmin) : 0;
    f->wv = q->p.w_vtime;
    f->candidates = 0;
    if (q->p.w_vtime > 0 && q->p.lag_cap > 0)
        gs_fq_frame_cap(q, f); /* last: the tiers it writes need f->wv */
}

/* Arrays, bounds and the frame in locals: the stores to kterm could alias
 * them as far as the compiler knows, and it would reload each per key. */
void gs_fq_frame_keys(gpusched_fairq *q, gs_fq_frame *f)
{
    const uint32_t n = q->nactive_keys, *restrict active = q->active_keys;
    const gs_fq_key *restrict keys = q->keys;
    const gs_fq_tenant *restrict ten = q->ten;
    double *restrict kterm = q->kterm;
    const gs_fq_frame fr = *f;
    uint64_t cand = 0;
    double kmax = -INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = active[i];
        const gs_fq_key *key = &keys[k];
        bool ok = (fr.mask >> key->type) & 1;
        double term = ok ? gs_fq_tenant_term(&fr, &ten[key->tenant]) : -INFINITY;
        kterm[k] = term;
        kmax = term > kmax ? term : kmax;
        cand += ok ? key->count : 0;
    }
    f->kmax = kmax;
    f->candidates = cand;
}

double gs_fq_slot_score(const gpusched_fairq *q, const gs_fq_frame *f, uint32_t s)
{
    double kt = gs_fq_tenant_term(f, &q->ten[q->keys[q->key[s]].tenant]);
    if (q->p.w_pred > 0)
        return gs_fq_score_pred(kt, f->now, q->enq[s], f->wscale, q->p.w_pred, q->pred[s]);
    return gs_fq_score(kt, f->now, q->enq[s], f->wscale);
}

void gs_fq_terms(const gpusched_fairq *q, const gs_fq_frame *f, uint32_t s, gpusched_fairq_decision *d)
{
    const gs_fq_key *key = &q->keys[q->key[s]];
    const gs_fq_tenant *t = &q->ten[key->tenant];
    double wait = f->now - q->enq[s];
    *d = (gpusched_fairq_decision)GPUSCHED_FAIRQ_DECISION_INIT;
    d->tenant = key->tenant;
    d->task_id = q->id[s];
    d->time = f->now;
    d->type = key->type;
    d->tenants_backlogged = q->nactive_tenants;
    d->score = gs_fq_slot_score(q, f, s);
    d->term_backlog = t->backlog / f->max_backlog;
    d->term_wait = f->max_wait > 0 ? wait / f->max_wait : 0;
    gs_fq_frame v = *f;
    if (!v.have_v)
        gs_fq_frame_vtime(q, &v); /* for the record only: the score ignored it */
    d->term_vtime = v.capped ? gs_fq_cap_term(&v, t) : gs_fq_vtime_term(t->vtime, v.vmin, v.vmax);
    d->term_pred = wait / (wait + (double)q->pred[s]);
    d->predicted = q->pred[s];
    d->probability = 1.0;
    d->candidates = f->candidates;
    d->queued = q->live;
    d->max_wait = f->max_wait;
}

/* The fast path is exact when, within one (tenant, type) FIFO, an older
 * task never scores below a younger one: true when the only per-task term
 * is the wait (W_WAIT >= 0), i.e. without the prediction term and without
 * exploration. The lag cap keeps that order (its term is per tenant). */
bool gs_fq_heads_apply(const gpusched_fairq *q)
{
    return q->p.w_pred == 0 && q->p.explore == 0 && q->p.scan_full == 0;
}

/* Decay scales every virtual time and the clock alike, so the normalized
 * fair-share term (a ratio of differences) does not change: applying it
 * after each choice keeps peek and poll identical. It costs O(1): the
 * common factor lives in vunit (stored values are true / vunit) and is
 * folded into the stored values only when it gets small, once per 64
 * half-lives. */
void gs_fq_decay(gpusched_fairq *q, double now)
{
    if (q->p.half_life > 0 && isfinite(q->decay_time) && now > q->decay_time)
        q->vunit *= exp2(-(now - q->decay_time) / q->p.half_life);
    q->decay_time = now;
    if (q->vunit >= 0x1p-64)
        return;
    for (uint32_t t = 0; t < q->ntenants; t++) {
        q->ten[t].vtime *= q->vunit;
        q->ten[t].dtime *= q->vunit;
    }
    q->vclock *= q->vunit;
    q->vunit = 1.0;
    for (uint32_t i = 0; i < q->nactive_tenants; i++)
        gs_fq_hot_sync(q, q->active_tenants[i]);
}
