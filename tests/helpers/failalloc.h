/* An allocator for tests that counts live blocks and fails on demand, so
 * that every module can prove: an out-of-memory error is reported, nothing
 * leaks, and nothing is half applied. */
#ifndef GS_TEST_FAILALLOC_H
#define GS_TEST_FAILALLOC_H

#include <stdbool.h>

#include <gpusched/gpusched.h>

typedef struct failalloc {
    gpusched_allocator a;   /* hand &fa.a to a constructor */
    long fail_at;           /* index of the allocation that fails; < 0: never */
    long count;             /* allocations attempted so far */
    long live;              /* blocks allocated and not yet freed */
    long failed;            /* allocations refused */
} failalloc;

/* Resets the counters; allocation number `fail_at` (0-based) will fail. */
void failalloc_init(failalloc *fa, long fail_at);

/*
 * Runs `op` with allocation k failing, for k = 0, 1, ... until `op`
 * succeeds with no allocation failing. For every k it requires that `op`
 * returned GPUSCHED_ENOMEM (or succeeded despite the failure, if the code
 * path tolerates it) and that no block is left live after `undo`, which
 * releases whatever a successful `op` created. Returns the number of
 * allocations of the successful run. Asserts through Criterion.
 */
typedef int (*failalloc_op)(failalloc *fa, void *ctx);
typedef void (*failalloc_undo)(void *ctx);
long failalloc_sweep(failalloc_op op, failalloc_undo undo, void *ctx);
/*
 * failalloc_sweep, and after every failure the same `op` again with an
 * allocator that does not fail: it must succeed (and `undo` must then leave
 * nothing live). For the loaders, whose failed call must leave no state
 * behind that would spoil the next one.
 */
long failalloc_sweep_retry(failalloc_op op, failalloc_undo undo, void *ctx);

/*
 * An allocator with a byte budget: it counts the bytes live and their peak
 * and refuses any allocation that would take the live total past `cap`,
 * so a test can prove that a call allocates little (a call that tried to
 * allocate gigabytes gets NULL, not an OOM kill).
 */
typedef struct budgetalloc {
    gpusched_allocator a;   /* hand &ba.a to a constructor */
    size_t cap;             /* most bytes live at once */
    size_t live, peak;      /* bytes live now, most bytes live so far */
    long refused;           /* allocations refused for the budget */
} budgetalloc;

void budgetalloc_init(budgetalloc *ba, size_t cap);

#endif
