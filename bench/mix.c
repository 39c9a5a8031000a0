/* The job size mix the placement and preemption scenarios share. */
#include "bench.h"

/* Single GPUs and 8-GPU jobs dominate, a few rack and multi-rack jobs. */
static const uint32_t gsb_mix_sizes[] = {1, 1, 1, 2, 4, 4, 8, 8, 8, 8, 16, 16, 32, 64, 72, 144, 288, 576};

uint32_t gsb_mix_size(uint64_t random)
{
    return gsb_mix_sizes[random % (sizeof gsb_mix_sizes / sizeof gsb_mix_sizes[0])];
}

void gsb_mix_request(gpusched_place_request *q, gpusched_job *job, uint64_t id, uint32_t gpus)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = id;
    q->job = job;
    q->gpus = gpus;
    q->flags = GPUSCHED_PLACE_FLAG_COMMIT;
    if (gpus < 4) {
        q->required_level = 2;
    } else if (gpus < 72) {
        q->split = GPUSCHED_SPLIT_PODS;
        q->pod_gpus = 4;
        q->required_level = 2;
    } else {
        q->split = GPUSCHED_SPLIT_WHOLE_NODES;
        q->slice_gpus[0] = 72;
        q->slice_level[0] = 2;
        q->preferred_level = 1;
    }
}
