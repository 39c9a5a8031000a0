/* Pins the layout of every struct that crosses the ABI. A failure here
 * means a released caller would misread the struct: append fields, never
 * move or resize one (doc/abi.md). */
#include <stddef.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#define PIN(type, field, off, sz)                                                   \
    do {                                                                            \
        cr_assert_eq(offsetof(type, field), (size_t)(off), #type "." #field " offset"); \
        cr_assert_eq(sizeof(((type *)0)->field), (size_t)(sz), #type "." #field " size"); \
    } while (0)

Test(layout, allocator)
{
    PIN(gpusched_allocator, size, 0, 4);
    PIN(gpusched_allocator, reserved0, 4, 4);
    PIN(gpusched_allocator, malloc_fn, 8, sizeof(void *));
    PIN(gpusched_allocator, realloc_fn, 8 + sizeof(void *), sizeof(void *));
    PIN(gpusched_allocator, free_fn, 8 + 2 * sizeof(void *), sizeof(void *));
    PIN(gpusched_allocator, user, 8 + 3 * sizeof(void *), sizeof(void *));
    cr_assert_eq(sizeof(gpusched_allocator), 8 + 4 * sizeof(void *));
}

Test(layout, enums_are_int_sized)
{
    cr_assert_eq(sizeof(gpusched_status), sizeof(int));
    cr_assert_eq(sizeof(gpusched_simd), sizeof(int));
}

Test(layout, place_request)
{
    /* Offsets after the job pointer move with the pointer size: the
     * figures hold on LP64 and on i386 (8-byte fields 4-aligned). */
    const size_t P = sizeof(void *);
    PIN(gpusched_place_request, size, 0, 4);
    PIN(gpusched_place_request, flags, 4, 4);
    PIN(gpusched_place_request, job, 8, P);
    PIN(gpusched_place_request, gpus, 8 + P, 4);
    PIN(gpusched_place_request, split, 12 + P, 4);
    PIN(gpusched_place_request, pod_gpus, 16 + P, 4);
    PIN(gpusched_place_request, required_level, 20 + P, 4);
    PIN(gpusched_place_request, preferred_level, 24 + P, 4);
    PIN(gpusched_place_request, slice_gpus, 28 + P, 8);
    PIN(gpusched_place_request, slice_level, 36 + P, 8);
    PIN(gpusched_place_request, gpu_class, 44 + P, 4);
    PIN(gpusched_place_request, labels_required, 48 + P, 8);
    PIN(gpusched_place_request, labels_forbidden, 56 + P, 8);
    PIN(gpusched_place_request, avoid_nodes, 64 + P, P);
    PIN(gpusched_place_request, avoid_count, 64 + 2 * P, 4);
    PIN(gpusched_place_request, preempt_policy, 68 + 2 * P, 4);
    PIN(gpusched_place_request, now, 72 + 2 * P, 8);
    /* 0.2.3: pods with resources and GPU fractions. */
    PIN(gpusched_place_request, pods, 80 + 2 * P, 4);
    PIN(gpusched_place_request, gpu_milli, 84 + 2 * P, 4);
    PIN(gpusched_place_request, resources, 88 + 2 * P, P);
    PIN(gpusched_place_request, resource_count, 88 + 3 * P, 4);
    PIN(gpusched_place_request, gpu_class_count, 92 + 3 * P, 4);
    PIN(gpusched_place_request, gpu_classes, 96 + 3 * P, P);
    PIN(gpusched_place_request, policy, 96 + 4 * P, 4);
    /* LP64 pads the last 4 bytes to the 8-byte alignment. */
    cr_assert_eq(sizeof(gpusched_place_request), P == 8 ? 136 : 116);
    cr_assert_eq(sizeof(gpusched_place_policy), sizeof(int));
    cr_assert_eq(GPUSCHED_POLICY_FRAG, 3);
    cr_assert_eq(GPUSCHED_GPU_SHARED, 3);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    cr_assert_eq(q.size, sizeof q);
    cr_assert_eq(q.required_level, GPUSCHED_NONE);
    cr_assert_eq(q.preferred_level, GPUSCHED_NONE);
    cr_assert_eq(q.slice_level[0], GPUSCHED_NONE);
    cr_assert_eq(q.slice_level[1], GPUSCHED_NONE);
    cr_assert_eq(q.gpu_class, GPUSCHED_NONE);
    cr_assert_null(q.job);
    cr_assert_eq(sizeof(gpusched_place_split), sizeof(int));
    cr_assert_eq(sizeof(gpusched_place_reason), sizeof(int));
    cr_assert_eq(GPUSCHED_SPLIT_WHOLE_NODES, 2);
    cr_assert_eq(GPUSCHED_REASON_NOT_RUN, 6);
}

/* Topology limits are part of the contract: callers size buffers and
 * label masks from them. */
Test(layout, topo_limits)
{
    cr_assert_eq(GPUSCHED_MAX_LEVELS, 8);
    cr_assert_eq(GPUSCHED_MAX_NODE_GPUS, 64);
    cr_assert_eq(GPUSCHED_MAX_LABELS, 64);
    cr_assert_eq(GPUSCHED_MAX_CLASSES, 255);
    cr_assert_eq(GPUSCHED_MAX_NAME, 63);
    cr_assert_eq(GPUSCHED_NONE, UINT32_MAX);
}

Test(layout, cluster_job)
{
    PIN(gpusched_job, size, 0, 4);
    PIN(gpusched_job, flags, 4, 4);
    PIN(gpusched_job, id, 8, 8);
    PIN(gpusched_job, priority, 16, 4);
    PIN(gpusched_job, tenant, 20, 4);
    PIN(gpusched_job, start_time, 24, 8);
    PIN(gpusched_job, cost_hint, 32, 8);
    PIN(gpusched_job, protected_until, 40, 8);
    cr_assert_eq(sizeof(gpusched_job), 48);
    gpusched_job j = GPUSCHED_JOB_INIT;
    cr_assert_eq(j.size, 48);
    cr_assert_eq(j.protected_until, 0);
    cr_assert_eq(sizeof(gpusched_node_health), sizeof(int));
    cr_assert_eq(GPUSCHED_NODE_DOWN, 3);
    cr_assert_eq(GPUSCHED_GPU_ALLOCATED, 2);
}

Test(layout, fairq_task)
{
    PIN(gpusched_fairq_task, size, 0, 4);
    PIN(gpusched_fairq_task, tenant, 4, 4);
    PIN(gpusched_fairq_task, id, 8, 8);
    PIN(gpusched_fairq_task, type, 16, 4);
    PIN(gpusched_fairq_task, reserved0, 20, 4);
    PIN(gpusched_fairq_task, enqueue_time, 24, 8);
    PIN(gpusched_fairq_task, work_size, 32, 8);
    PIN(gpusched_fairq_task, predicted, 40, 8);
    cr_assert_eq(sizeof(gpusched_fairq_task), 48);
    gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
    cr_assert_eq(t.size, 48);
}

Test(layout, fairq_decision)
{
    PIN(gpusched_fairq_decision, size, 0, 4);
    PIN(gpusched_fairq_decision, tenant, 4, 4);
    PIN(gpusched_fairq_decision, task_id, 8, 8);
    PIN(gpusched_fairq_decision, time, 16, 8);
    PIN(gpusched_fairq_decision, type, 24, 4);
    PIN(gpusched_fairq_decision, tenants_backlogged, 28, 4);
    PIN(gpusched_fairq_decision, score, 32, 8);
    PIN(gpusched_fairq_decision, term_backlog, 40, 8);
    PIN(gpusched_fairq_decision, term_wait, 48, 8);
    PIN(gpusched_fairq_decision, term_vtime, 56, 8);
    PIN(gpusched_fairq_decision, term_pred, 64, 8);
    PIN(gpusched_fairq_decision, predicted, 72, 8);
    PIN(gpusched_fairq_decision, probability, 80, 8);
    PIN(gpusched_fairq_decision, candidates, 88, 8);
    PIN(gpusched_fairq_decision, queued, 96, 8);
    PIN(gpusched_fairq_decision, max_wait, 104, 8);
    cr_assert_eq(sizeof(gpusched_fairq_decision), 112);
}

Test(layout, fairq_enums)
{
    cr_assert_eq(GPUSCHED_FAIRQ_PARAM_W_BACKLOG, 1);
    cr_assert_eq(GPUSCHED_FAIRQ_PARAM_SEED, 11);
    cr_assert_eq(GPUSCHED_FAIRQ_PARAM_LAG_CAP, 12);
    cr_assert_eq(GPUSCHED_FAIRQ_POLICY_DES, 1);
    cr_assert_eq(GPUSCHED_FAIRQ_POLICY_STATEFUL, 2);
    cr_assert_eq(GPUSCHED_FAIRQ_POLICY_LAGCAP, 3);
    cr_assert_eq(GPUSCHED_FAIRQ_TENANT_SERVICE, 5);
    cr_assert_eq(sizeof(gpusched_fairq_param), sizeof(int));
}

Test(layout, sched_structs)
{
    const size_t P = sizeof(void *);
    PIN(gpusched_sched_queue, size, 0, 4);
    PIN(gpusched_sched_queue, parent, 4, 4);
    PIN(gpusched_sched_queue, name, 8, P);
    PIN(gpusched_sched_queue, priority, 8 + P, 4);
    PIN(gpusched_sched_queue, weight, 12 + P, 4);
    cr_assert_eq(sizeof(gpusched_sched_queue), 16 + P);

    PIN(gpusched_sched_job, size, 0, 4);
    PIN(gpusched_sched_job, queue, 4, 4);
    PIN(gpusched_sched_job, id, 8, 8);
    PIN(gpusched_sched_job, priority, 16, 4);
    PIN(gpusched_sched_job, flags, 20, 4);
    PIN(gpusched_sched_job, submit_time, 24, 8);
    PIN(gpusched_sched_job, duration_limit, 32, 8);
    PIN(gpusched_sched_job, duration_predicted, 40, 8);
    PIN(gpusched_sched_job, cost_hint, 48, 8);
    PIN(gpusched_sched_job, request, 56, P);

    PIN(gpusched_sched_wait, size, 0, 4);
    PIN(gpusched_sched_wait, reason, 4, 4);
    PIN(gpusched_sched_wait, job_id, 8, 8);
    PIN(gpusched_sched_wait, seq, 16, 4);
    PIN(gpusched_sched_wait, queue, 20, 4);
    PIN(gpusched_sched_wait, resource, 24, 4);
    PIN(gpusched_sched_wait, place_reason, 28, 4);
    PIN(gpusched_sched_wait, used, 32, 8);
    PIN(gpusched_sched_wait, requested, 40, 8);
    PIN(gpusched_sched_wait, limit, 48, 8);
    PIN(gpusched_sched_wait, free_gpus, 56, 8);
    PIN(gpusched_sched_wait, taken_gpus, 64, 8);
    PIN(gpusched_sched_wait, blocking_job, 72, 8);
    PIN(gpusched_sched_wait, time, 80, 8);
    PIN(gpusched_sched_wait, share, 88, 8);
    cr_assert_eq(sizeof(gpusched_sched_wait), 96);
}
