/* The plan object: the victims of one preemption and their totals. */
#include <stdlib.h>
#include <string.h>

#include "preempt-internal.h"

GPUSCHED_API int gpusched_preempt_plan_new(const gpusched_allocator *alloc, gpusched_preempt_plan **out)
{
    if (!out)
        return GPUSCHED_EINVAL;
    gs_alloc a;
    gpusched_preempt_plan *plan;
    int rc = gs_object_new(alloc, sizeof *plan, &a, (void **)&plan);
    if (rc)
        return rc;
    plan->alloc = a;
    /* GPUSCHED_PREEMPT_WHOLE=0: whole-domain gangs take the general search
     * too, so that tests can compare the two (wholeplan.c). */
    const char *whole = getenv("GPUSCHED_PREEMPT_WHOLE");
    plan->whole_off = whole && whole[0] == '0';
    rc = gpusched_place_result_new(alloc, &plan->probe);
    if (rc) {
        gs_free(&a, plan);
        return rc;
    }
    *out = plan;
    return 0;
}

GPUSCHED_API void gpusched_preempt_plan_free(gpusched_preempt_plan *plan)
{
    if (!plan)
        return;
    gs_alloc a = plan->alloc;
    gs_free(&a, plan->ids);
    gs_free(&a, plan->v);
    gs_free(&a, plan->tmp);
    gs_free(&a, plan->start);
    gs_free(&a, plan->lent);
    gs_free(&a, plan->doms);
    gs_free(&a, plan->move_ids);
    gs_free(&a, plan->move_off);
    gs_free(&a, plan->move_nodes);
    gs_free(&a, plan->move_masks);
    gs_free(&a, plan->gang_nodes);
    gs_free(&a, plan->gang_masks);
    gs_free(&a, plan->move_jobs);
    gs_free(&a, plan->move_blocks);
    gs_free(&a, plan->leaf_cost);
    gs_free(&a, plan->leaf_gpus);
    gs_free(&a, plan->prios);
    gs_free(&a, plan->best);
    gs_free(&a, plan->order);
    gs_free(&a, plan->opens);
    gs_free(&a, plan->bound_gpus);
    gs_free(&a, plan->whole_free);
    void *whole[] = {plan->wdom, plan->wvic, plan->wvdom, plan->wcomp, plan->woff, plan->wms, plan->wcd, plan->wcdoff, plan->wcv, plan->wcvoff,
                     plan->wmc, plan->wsub, plan->wrow, plan->wpick};
    for (size_t i = 0; i < GS_ARRAY_LEN(whole); i++)
        gs_free(&a, whole[i]);
    gpusched_place_result_free(plan->probe);
    gs_free(&a, plan);
}

GPUSCHED_API int gpusched_preempt_plan_victims(const gpusched_preempt_plan *plan, const uint64_t **ids,
                                               uint32_t *n)
{
    if (!plan || !ids || !n)
        return GPUSCHED_EINVAL;
    *ids = plan->n ? plan->ids : NULL;
    *n = plan->n;
    return 0;
}

GPUSCHED_API int gpusched_preempt_plan_totals(const gpusched_preempt_plan *plan, uint64_t *cost, uint64_t *gpus)
{
    if (!plan)
        return GPUSCHED_EINVAL;
    if (cost)
        *cost = plan->cost;
    if (gpus)
        *gpus = plan->gpus;
    return 0;
}
