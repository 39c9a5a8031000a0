/* The C side of the Python binding's cross-checks: prints what the C
 * compiler and the library compute, for tests/python to compare with what
 * the binding computes through ctypes.
 *
 *   gs-pyhelper layout   one line per struct ("struct NAME SIZE") and per
 *                        field ("field NAME.FIELD OFFSET SIZE")
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <gpusched/gpusched.h>

#define STRUCT(T) printf("struct %s %zu\n", #T, sizeof(T))
#define FIELD(T, F) printf("field %s.%s %zu %zu\n", #T, #F, offsetof(T, F), sizeof(((T *)0)->F))

static int print_layout(void)
{
    STRUCT(gpusched_allocator);
    FIELD(gpusched_allocator, size);
    FIELD(gpusched_allocator, reserved0);
    FIELD(gpusched_allocator, malloc_fn);
    FIELD(gpusched_allocator, realloc_fn);
    FIELD(gpusched_allocator, free_fn);
    FIELD(gpusched_allocator, user);

    STRUCT(gpusched_job);
    FIELD(gpusched_job, size);
    FIELD(gpusched_job, flags);
    FIELD(gpusched_job, id);
    FIELD(gpusched_job, priority);
    FIELD(gpusched_job, tenant);
    FIELD(gpusched_job, start_time);
    FIELD(gpusched_job, cost_hint);

    STRUCT(gpusched_fairq_task);
    FIELD(gpusched_fairq_task, size);
    FIELD(gpusched_fairq_task, tenant);
    FIELD(gpusched_fairq_task, id);
    FIELD(gpusched_fairq_task, type);
    FIELD(gpusched_fairq_task, reserved0);
    FIELD(gpusched_fairq_task, enqueue_time);
    FIELD(gpusched_fairq_task, work_size);
    FIELD(gpusched_fairq_task, predicted);

    STRUCT(gpusched_fairq_decision);
    FIELD(gpusched_fairq_decision, size);
    FIELD(gpusched_fairq_decision, tenant);
    FIELD(gpusched_fairq_decision, task_id);
    FIELD(gpusched_fairq_decision, time);
    FIELD(gpusched_fairq_decision, type);
    FIELD(gpusched_fairq_decision, tenants_backlogged);
    FIELD(gpusched_fairq_decision, score);
    FIELD(gpusched_fairq_decision, term_backlog);
    FIELD(gpusched_fairq_decision, term_wait);
    FIELD(gpusched_fairq_decision, term_vtime);
    FIELD(gpusched_fairq_decision, term_pred);
    FIELD(gpusched_fairq_decision, predicted);
    FIELD(gpusched_fairq_decision, probability);
    FIELD(gpusched_fairq_decision, candidates);
    FIELD(gpusched_fairq_decision, queued);
    FIELD(gpusched_fairq_decision, max_wait);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "layout"))
        return print_layout();
    fprintf(stderr, "usage: %s layout\n", argv[0]);
    return 2;
}
