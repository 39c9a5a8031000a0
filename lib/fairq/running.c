/* Tasks handed to workers and not yet completed: what complete() needs to
 * correct the charge and train the predictor. Dense arrays with
 * swap-removal, indexed by id. */
#include <math.h>

#include "fairq-internal.h"

int gs_fq_run_reserve(gpusched_fairq *q, uint32_t extra)
{
    if (GS_LIKELY((uint64_t)q->nrun + extra <= q->runcap && gs_fq_idmap_has_room(&q->runmap, extra)))
        return 0;
    if (gs_fq_idmap_reserve(&q->runmap, &q->alloc, q->run_id, extra))
        return gs_error(&q->err, GPUSCHED_ENOMEM, "out of memory growing the running table");
    if ((uint64_t)q->nrun + extra <= q->runcap)
        return 0;
    uint64_t cap = q->runcap ? q->runcap : 16;
    while (cap < (uint64_t)q->nrun + extra)
        cap *= 2;
    if (cap > GS_FQ_MAX_SLOTS)
        return gs_error(&q->err, GPUSCHED_ELIMIT, "more than 2^31 running tasks");
    uint64_t *ids = gs_realloc_array(&q->alloc, q->run_id, (size_t)cap, sizeof *ids);
    if (!ids)
        return gs_error(&q->err, GPUSCHED_ENOMEM, "out of memory growing the running table");
    q->run_id = ids;
    gs_fq_run *run = gs_realloc_array(&q->alloc, q->run, (size_t)cap, sizeof *run);
    if (!run)
        return gs_error(&q->err, GPUSCHED_ENOMEM, "out of memory growing the running table");
    q->run = run;
    q->runcap = (uint32_t)cap;
    return 0;
}

void gs_fq_run_add(gpusched_fairq *q, uint64_t id, const gs_fq_run *r)
{
    uint32_t i = q->nrun++;
    q->run_id[i] = id;
    q->run[i] = *r;
    gs_fq_idmap_insert(&q->runmap, q->run_id, i);
}

static void gs_fq_run_remove(gpusched_fairq *q, uint32_t i)
{
    gs_fq_idmap_remove(&q->runmap, q->run_id, q->run_id[i]);
    uint32_t last = --q->nrun;
    if (i == last)
        return;
    q->run_id[i] = q->run_id[last];
    q->run[i] = q->run[last];
    gs_fq_idmap_relabel(&q->runmap, q->run_id, q->run_id[i], i);
}

GPUSCHED_API int gpusched_fairq_complete(gpusched_fairq *q, uint64_t id, double actual_duration)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (!(actual_duration >= 0 && actual_duration <= 1e12))
        return gs_error(&q->err, GPUSCHED_ERANGE, "complete: duration %g, expected [0, 1e12]",
                        actual_duration);
    uint32_t i = gs_fq_idmap_find(&q->runmap, q->run_id, id);
    if (i == GS_FQ_NONE)
        return gs_error(&q->err, GPUSCHED_ENOENT, "complete: no running task has id %llu",
                        (unsigned long long)id);
    const gs_fq_run r = q->run[i];
    gs_fq_tenant *t = &q->ten[r.tenant];
    double delta = actual_duration - r.charged;
    t->vtime += delta / t->weight / q->vunit;
    gs_fq_demand_add(q, r.tenant, delta);
    t->service += delta;
    t->running--;
    gs_fq_hot_sync(q, r.tenant);
    gs_fq_learn(q, r.key, q->keys[r.key].type, r.x, actual_duration);
    gs_fq_run_remove(q, i);
    return gs_ok(&q->err);
}
