/* Duration prediction: per (tenant, type) key, exponentially weighted
 * moments of x = log(1 + size) and y = log(duration). They give an
 * exponentially weighted estimate of log duration (my) and the weighted
 * least-squares slope on log size (vxy / vxx), which is recursive least
 * squares with forgetting factor 1 - alpha, in closed form for one
 * regressor. Unseen keys fall back to their type, then to every completion,
 * then to PARAM_PRED_DEFAULT. */
#include <math.h>

#include "fairq-internal.h"

/* Below this many (weighted) observations the slope is not trusted. */
#define GS_FQ_SLOPE_MIN_N 8.0
/* Relative variance of x below which sizes are considered all equal. */
#define GS_FQ_VXX_MIN 1e-9

/* Refits after each observation so that a prediction is one multiply-add
 * and an exp. */
static void gs_fq_moments_fit(gs_fq_moments *m)
{
    double b = 0, resid = m->vyy;
    if (m->n >= GS_FQ_SLOPE_MIN_N && m->vxx > GS_FQ_VXX_MIN * (1.0 + m->mx * m->mx)) {
        b = m->vxy / m->vxx;
        resid -= b * m->vxy;
    }
    /* exp(mean + var/2) is the mean of a lognormal: charge expected cost. */
    double half_var = resid > 0 && m->n >= 2.0 ? 0.5 * resid : 0;
    m->c0 = m->my - b * m->mx + half_var;
    m->c1 = b;
}

void gs_fq_moments_add(gs_fq_moments *m, double alpha, double x, double y)
{
    /* The first observations get weight 1/n so that the estimate is the
     * plain mean until the exponential window is full. */
    double n = m->n + 1.0;
    double w = 1.0 / n;
    if (w < alpha)
        w = alpha;
    double dx = x - m->mx, dy = y - m->my;
    m->mx += w * dx;
    m->my += w * dy;
    /* West's weighted update of the co-moments. */
    m->vxx = (1.0 - w) * (m->vxx + w * dx * dx);
    m->vxy = (1.0 - w) * (m->vxy + w * dx * dy);
    m->vyy = (1.0 - w) * (m->vyy + w * dy * dy);
    m->n = n < 1e9 ? n : 1e9;
    gs_fq_moments_fit(m);
}

bool gs_fq_moments_predict(const gs_fq_moments *m, double x, double *logd)
{
    if (m->n < 1.0)
        return false;
    *logd = m->c0 + m->c1 * x;
    return true;
}

double gs_fq_predict_key(const gpusched_fairq *q, uint32_t key, uint32_t type, double x)
{
    double logd;
    if ((key != GS_FQ_NONE && gs_fq_moments_predict(&q->key_pred[key], x, &logd)) ||
        gs_fq_moments_predict(&q->type_pred[type], x, &logd) ||
        gs_fq_moments_predict(&q->all_pred, x, &logd)) {
        double d = exp(logd);
        return d > GS_FQ_PRED_MIN ? (d < 1e12 ? d : 1e12) : GS_FQ_PRED_MIN;
    }
    return q->p.pred_default;
}

double gs_fq_typical_cost(const gpusched_fairq *q)
{
    double logd;
    if (!gs_fq_moments_predict(&q->all_pred, q->all_pred.mx, &logd))
        return q->p.pred_default;
    double d = exp(logd);
    return d > GS_FQ_PRED_MIN ? (d < 1e12 ? d : 1e12) : GS_FQ_PRED_MIN;
}

void gs_fq_learn(gpusched_fairq *q, uint32_t key, uint32_t type, double x, double duration)
{
    double y = log(duration > GS_FQ_PRED_MIN ? duration : GS_FQ_PRED_MIN);
    double a = q->p.pred_alpha;
    gs_fq_moments_add(&q->key_pred[key], a, x, y);
    gs_fq_moments_add(&q->type_pred[type], a, x, y);
    gs_fq_moments_add(&q->all_pred, a, x, y);
}

GPUSCHED_API int gpusched_fairq_predict(gpusched_fairq *q, uint32_t tenant, uint32_t type,
                                        double work_size, double *seconds)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (!seconds)
        return gs_error(&q->err, GPUSCHED_EINVAL, "predict: seconds is NULL");
    if (tenant >= q->ntenants)
        return gs_error(&q->err, GPUSCHED_ERANGE, "predict: tenant %u, the queue has %u", tenant, q->ntenants);
    if (type >= GPUSCHED_MAX_TASK_TYPES)
        return gs_error(&q->err, GPUSCHED_ERANGE, "predict: task type %u, at most %u", type,
                        GPUSCHED_MAX_TASK_TYPES - 1);
    if (!(work_size >= 0) || !isfinite(work_size))
        return gs_error(&q->err, GPUSCHED_ERANGE, "predict: work_size = %g: a work size is finite and >= 0",
                        work_size);
    uint64_t code = (uint64_t)tenant << 6 | type;
    uint32_t key = gs_fq_idmap_find(&q->keymap, q->key_code, code);
    *seconds = gs_fq_predict_key(q, key, type, gs_fq_size_x(work_size));
    return gs_ok(&q->err);
}
