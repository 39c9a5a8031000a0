#include <stdlib.h>

#include <criterion/criterion.h>

#include "failalloc.h"

static bool failalloc_should_fail(failalloc *fa)
{
    long i = fa->count++;
    if (fa->fail_at >= 0 && i == fa->fail_at) {
        fa->failed++;
        return true;
    }
    return false;
}

static void *failalloc_malloc(void *user, size_t size)
{
    failalloc *fa = user;
    if (failalloc_should_fail(fa))
        return NULL;
    void *p = malloc(size);
    if (p)
        fa->live++;
    return p;
}

static void *failalloc_realloc(void *user, void *ptr, size_t size)
{
    failalloc *fa = user;
    if (failalloc_should_fail(fa))
        return NULL;
    void *p = realloc(ptr, size);
    if (p && !ptr)
        fa->live++;
    return p;
}

static void failalloc_free(void *user, void *ptr)
{
    failalloc *fa = user;
    if (ptr)
        fa->live--;
    free(ptr);
}

void failalloc_init(failalloc *fa, long fail_at)
{
    *fa = (failalloc){
        .a = GPUSCHED_ALLOCATOR_INIT,
        .fail_at = fail_at,
    };
    fa->a.malloc_fn = failalloc_malloc;
    fa->a.realloc_fn = failalloc_realloc;
    fa->a.free_fn = failalloc_free;
    fa->a.user = fa;
}

long failalloc_sweep(failalloc_op op, failalloc_undo undo, void *ctx)
{
    for (long k = 0; k < 1000000; k++) {
        failalloc fa;
        failalloc_init(&fa, k);
        int rc = op(&fa, ctx);
        if (rc == 0) {
            if (undo)
                undo(ctx);
            cr_assert_eq(fa.live, 0, "leak after success with allocation %ld failing", k);
            if (fa.failed == 0)
                return fa.count;
            continue;
        }
        cr_assert_eq(rc, GPUSCHED_ENOMEM, "allocation %ld failed: got %s, expected GPUSCHED_ENOMEM",
                     k, gpusched_err_name(rc));
        cr_assert_eq(fa.live, 0, "%ld blocks leaked when allocation %ld failed", fa.live, k);
    }
    cr_assert_fail("failalloc_sweep: op never succeeded");
    return -1;
}
