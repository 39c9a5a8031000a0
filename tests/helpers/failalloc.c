#include <stdlib.h>
#include <string.h>

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

static long failalloc_sweep_impl(failalloc_op op, failalloc_undo undo, void *ctx, bool retry)
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
        if (retry) {
            failalloc ok;
            failalloc_init(&ok, -1);
            rc = op(&ok, ctx);
            cr_assert_eq(rc, 0, "after allocation %ld failed, the next call got %s", k, gpusched_err_name(rc));
            if (undo)
                undo(ctx);
            cr_assert_eq(ok.live, 0, "leak in the call after allocation %ld failed", k);
        }
    }
    cr_assert_fail("failalloc_sweep: op never succeeded");
    return -1;
}

long failalloc_sweep(failalloc_op op, failalloc_undo undo, void *ctx)
{
    return failalloc_sweep_impl(op, undo, ctx, false);
}

long failalloc_sweep_retry(failalloc_op op, failalloc_undo undo, void *ctx)
{
    return failalloc_sweep_impl(op, undo, ctx, true);
}

/* Each block carries its size in front, so that realloc and free can
 * account for it; 16 bytes keep the caller's pointer aligned. */
#define BUDGET_HEAD 16

static void *budget_realloc(void *user, void *ptr, size_t size)
{
    budgetalloc *ba = user;
    unsigned char *head = ptr ? (unsigned char *)ptr - BUDGET_HEAD : NULL;
    size_t old = 0;
    if (head)
        memcpy(&old, head, sizeof old);
    if (size > ba->cap || ba->live - old > ba->cap - size) {
        ba->refused++;
        return NULL;
    }
    unsigned char *p = realloc(head, BUDGET_HEAD + size);
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    ba->live = ba->live - old + size;
    if (ba->live > ba->peak)
        ba->peak = ba->live;
    return p + BUDGET_HEAD;
}

static void *budget_malloc(void *user, size_t size) { return budget_realloc(user, NULL, size); }

static void budget_free(void *user, void *ptr)
{
    budgetalloc *ba = user;
    if (!ptr)
        return;
    unsigned char *head = (unsigned char *)ptr - BUDGET_HEAD;
    size_t old;
    memcpy(&old, head, sizeof old);
    ba->live -= old;
    free(head);
}

void budgetalloc_init(budgetalloc *ba, size_t cap)
{
    *ba = (budgetalloc){.a = GPUSCHED_ALLOCATOR_INIT, .cap = cap};
    ba->a.malloc_fn = budget_malloc;
    ba->a.realloc_fn = budget_realloc;
    ba->a.free_fn = budget_free;
    ba->a.user = ba;
}
