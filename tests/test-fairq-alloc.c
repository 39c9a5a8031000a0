/* Allocation-failure injection: every allocation of the queue's life can
 * fail; each failure is GPUSCHED_ENOMEM, leaks nothing, and the failing
 * call leaves the queue as it was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "failalloc.h"

static void clear_env(void) { unsetenv("GPUSCHED_SIMD"); }

TestSuite(fairq_alloc, .init = clear_env);

typedef struct state {
    gpusched_fairq *q;
    char path[64];
} state;

static void snapshot(gpusched_fairq *q, uint64_t *queued, uint64_t *running, uint64_t *logged)
{
    const gpusched_fairq_decision *r;
    cr_assert_eq(gpusched_fairq_count(q, queued, running), 0);
    cr_assert_eq(gpusched_fairq_log_records(q, &r, logged), 0);
}

/* Runs `call`; on failure checks that the counts did not move. */
#define ATOMIC(q, call)                                                            \
    do {                                                                           \
        uint64_t a0, b0, c0, a1, b1, c1;                                           \
        snapshot(q, &a0, &b0, &c0);                                                \
        int rc_ = (call);                                                          \
        if (rc_) {                                                                 \
            snapshot(q, &a1, &b1, &c1);                                            \
            cr_assert(a0 == a1 && b0 == b1 && c0 == c1, #call " half-applied");   \
            gpusched_fairq_free(q);                                                \
            return rc_;                                                            \
        }                                                                          \
    } while (0)

static int whole_life(failalloc *fa, void *ctx)
{
    state *s = ctx;
    gpusched_fairq *q = NULL;
    int rc = gpusched_fairq_new(5, &fa->a, &q);
    if (rc)
        return rc;
    ATOMIC(q, gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_LOG, 1));
    uint64_t ids[300];
    uint32_t ten[300];
    uint8_t ty[300];
    double tm[300], sz[300];
    for (int i = 0; i < 300; i++)
        ids[i] = (uint64_t)i, ten[i] = (uint32_t)(i % 5), ty[i] = (uint8_t)(i % 7), tm[i] = i, sz[i] = i;
    ATOMIC(q, gpusched_fairq_enqueue_batch(q, 300, ids, ten, ty, tm, sz));
    for (int i = 0; i < 100; i++) {
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        t.id = 1000 + (uint64_t)i, t.tenant = (uint32_t)(i % 5), t.type = (uint32_t)(i % 11);
        t.enqueue_time = 300 + i;
        ATOMIC(q, gpusched_fairq_enqueue(q, &t));
    }
    for (int i = 0; i < 150; i++) {
        uint64_t id;
        ATOMIC(q, gpusched_fairq_poll(q, 500, ~0ull, &id, NULL));
        if (i % 2)
            ATOMIC(q, gpusched_fairq_complete(q, id, 0.5));
    }
    uint64_t masks[40], out[40];
    uint8_t got[40];
    for (int i = 0; i < 40; i++)
        masks[i] = 1ull << (i % 11);
    ATOMIC(q, gpusched_fairq_poll_batch(q, 501, 40, masks, out, got, NULL));
    ATOMIC(q, gpusched_fairq_log_save(q, s->path));
    s->q = q;
    return 0;
}

static void undo_life(void *ctx)
{
    state *s = ctx;
    gpusched_fairq_free(s->q);
    s->q = NULL;
}

Test(fairq_alloc, every_allocation_can_fail)
{
    state s = {0};
    snprintf(s.path, sizeof s.path, "/tmp/gs-fairq-alloc-%d.bin", (int)getpid());
    long n = failalloc_sweep(whole_life, undo_life, &s);
    cr_assert_gt(n, 10, "the sweep covered %ld allocations", n);
    unlink(s.path);
}

static int read_log(failalloc *fa, void *ctx)
{
    state *s = ctx;
    gpusched_fairq_log *log = NULL;
    int rc = gpusched_fairq_log_read(s->path, &fa->a, &log, NULL, 0);
    if (rc) {
        cr_assert_null(log);
        return rc;
    }
    gpusched_fairq_log_free(log);
    return 0;
}

Test(fairq_alloc, log_read)
{
    state s = {0};
    snprintf(s.path, sizeof s.path, "/tmp/gs-fairq-alloc-r-%d.bin", (int)getpid());
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(1, NULL, &q), 0);
    gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_LOG, 1);
    gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
    cr_assert_eq(gpusched_fairq_enqueue(q, &t), 0);
    uint64_t id;
    cr_assert_eq(gpusched_fairq_poll(q, 1, ~0ull, &id, NULL), 0);
    cr_assert_eq(gpusched_fairq_log_save(q, s.path), 0);
    gpusched_fairq_free(q);
    cr_assert_gt(failalloc_sweep(read_log, NULL, &s), 1);
    unlink(s.path);
}
