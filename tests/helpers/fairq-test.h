/* Small helpers shared by the fairq tests. */
#ifndef GS_TEST_FAIRQ_H
#define GS_TEST_FAIRQ_H

#include <gpusched/gpusched.h>

/* Enqueues one task; predicted 0 lets the library predict. */
static inline int fq_enqueue(gpusched_fairq *q, uint64_t id, uint32_t tenant, uint32_t type,
                             double t, double predicted)
{
    gpusched_fairq_task task = GPUSCHED_FAIRQ_TASK_INIT;
    task.id = id;
    task.tenant = tenant;
    task.type = type;
    task.enqueue_time = t;
    task.predicted = predicted;
    return gpusched_fairq_enqueue(q, &task);
}

#endif
