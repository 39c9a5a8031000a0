/* Ranges of the public enumerations: asked at run time, so that a caller
 * built against older headers learns of values appended since. */
#include "core.h"
#include "gpusched/gpusched.h"

static const struct {
    uint32_t first, last;
} gs_enum_ranges[] = {
    [GPUSCHED_ENUM_SIMD] = {GPUSCHED_SIMD_SCALAR, GPUSCHED_SIMD_NEON},
    [GPUSCHED_ENUM_NODE_HEALTH] = {GPUSCHED_NODE_UP, GPUSCHED_NODE_DOWN},
    [GPUSCHED_ENUM_GPU_STATE] = {GPUSCHED_GPU_FREE, GPUSCHED_GPU_SHARED},
    [GPUSCHED_ENUM_SPLIT] = {GPUSCHED_SPLIT_ANY, GPUSCHED_SPLIT_WHOLE_NODES},
    [GPUSCHED_ENUM_REASON] = {GPUSCHED_REASON_OK, GPUSCHED_REASON_NOT_RUN},
    [GPUSCHED_ENUM_FAIRQ_PARAM] = {GPUSCHED_FAIRQ_PARAM_W_BACKLOG, GPUSCHED_FAIRQ_PARAM_LAG_CAP},
    [GPUSCHED_ENUM_FAIRQ_POLICY] = {GPUSCHED_FAIRQ_POLICY_DES, GPUSCHED_FAIRQ_POLICY_LAGCAP},
    [GPUSCHED_ENUM_FAIRQ_TENANT] = {GPUSCHED_FAIRQ_TENANT_WEIGHT, GPUSCHED_FAIRQ_TENANT_SERVICE},
    [GPUSCHED_ENUM_PREEMPT_POLICY] = {GPUSCHED_PREEMPT_PRIORITY_FIRST, GPUSCHED_PREEMPT_COST_FIRST},
};

GPUSCHED_API int gpusched_enum_bounds(uint32_t which, uint32_t *first, uint32_t *last)
{
    if (which == 0 || which >= GS_ARRAY_LEN(gs_enum_ranges))
        return GPUSCHED_EINVAL;
    if (first)
        *first = gs_enum_ranges[which].first;
    if (last)
        *last = gs_enum_ranges[which].last;
    return 0;
}
