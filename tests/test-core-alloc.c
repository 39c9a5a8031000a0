#include <string.h>

#include <criterion/criterion.h>

#include "core.h"
#include "failalloc.h"

Test(alloc, null_means_libc)
{
    gs_alloc a;
    cr_assert_eq(gs_alloc_init(&a, NULL), 0);
    char *s = gs_strdup(&a, "rack");
    cr_assert_str_eq(s, "rack");
    gs_free(&a, s);
    cr_assert_eq(gpusched_allocator_check(NULL), 0);
}

Test(alloc, hooks_see_every_allocation)
{
    failalloc fa;
    failalloc_init(&fa, -1);
    gs_alloc a;
    cr_assert_eq(gs_alloc_init(&a, &fa.a), 0);
    int *v = gs_calloc(&a, 10, sizeof *v);
    cr_assert_not_null(v);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(v[i], 0);
    v = gs_realloc_array(&a, v, 1000, sizeof *v);
    cr_assert_not_null(v);
    cr_assert_eq(fa.live, 1);
    gs_free(&a, v);
    gs_free(&a, NULL);
    cr_assert_eq(fa.live, 0);
    cr_assert_eq(fa.count, 2);
}

Test(alloc, overflow_is_refused_without_calling_hooks)
{
    failalloc fa;
    failalloc_init(&fa, -1);
    gs_alloc a;
    gs_alloc_init(&a, &fa.a);
    cr_assert_null(gs_calloc(&a, SIZE_MAX / 2, 4));
    cr_assert_null(gs_realloc_array(&a, NULL, SIZE_MAX / 2, 4));
    cr_assert_eq(fa.count, 0);
}

Test(alloc, failure_injection_fails_exactly_the_kth)
{
    failalloc fa;
    failalloc_init(&fa, 1);
    gs_alloc a;
    gs_alloc_init(&a, &fa.a);
    void *p0 = gs_malloc(&a, 8), *p1 = gs_malloc(&a, 8), *p2 = gs_malloc(&a, 8);
    cr_assert_not_null(p0);
    cr_assert_null(p1);
    cr_assert_not_null(p2);
    cr_assert_eq(fa.failed, 1);
    gs_free(&a, p0);
    gs_free(&a, p2);
    cr_assert_eq(fa.live, 0);
}

Test(alloc, invalid_allocators_are_rejected)
{
    gpusched_allocator a = GPUSCHED_ALLOCATOR_INIT;
    cr_assert_eq(gpusched_allocator_check(&a), GPUSCHED_EINVAL, "functions missing");
    failalloc fa;
    failalloc_init(&fa, -1);
    a = fa.a;
    cr_assert_eq(gpusched_allocator_check(&a), 0);
    a.size = 4;
    cr_assert_eq(gpusched_allocator_check(&a), GPUSCHED_EINVAL, "size too small");
    a = fa.a;
    a.reserved0 = 1;
    cr_assert_eq(gpusched_allocator_check(&a), GPUSCHED_EINVAL, "reserved must be 0");
}

/* A newer caller's struct, one field longer than this library knows. */
struct allocator_v2 {
    gpusched_allocator v1;
    uint64_t future_field;
};

Test(alloc, unknown_trailing_bytes)
{
    failalloc fa;
    failalloc_init(&fa, -1);
    struct allocator_v2 a2 = {.v1 = fa.a};
    a2.v1.size = sizeof a2;
    cr_assert_eq(gpusched_allocator_check(&a2.v1), 0, "zero trailing bytes are fine");
    a2.future_field = 7;
    cr_assert_eq(gpusched_allocator_check(&a2.v1), GPUSCHED_E2BIG);
}

struct req_v1 { uint32_t size; uint32_t a; };
struct req_v2 { uint32_t size; uint32_t a; uint64_t b; };

Test(structs, older_caller_gets_zero_defaults)
{
    struct req_v1 old = {sizeof old, 5};
    struct req_v2 now;
    memset(&now, 0xff, sizeof now);
    gs_err e;
    cr_assert_eq(gs_struct_copy_in(&now, sizeof now, &old, 4, &e, "req"), 0);
    cr_assert_eq(now.size, sizeof now);
    cr_assert_eq(now.a, 5);
    cr_assert_eq(now.b, 0);
}

Test(structs, bad_sizes)
{
    struct req_v2 now, in = {0};
    gs_err e;
    cr_assert_eq(gs_struct_copy_in(&now, sizeof now, &in, 4, &e, "req"), GPUSCHED_EINVAL);
    cr_assert(strstr(e.msg, "_INIT") != NULL, "message points at the init macro: %s", e.msg);
    cr_assert_eq(gs_struct_copy_in(&now, sizeof now, NULL, 4, &e, "req"), GPUSCHED_EINVAL);
}

Test(alloc, object_new_is_zeroed_and_reports_failures)
{
    failalloc fa;
    failalloc_init(&fa, -1);
    gs_alloc a;
    uint64_t *obj = NULL;
    cr_assert_eq(gs_object_new(&fa.a, 4 * sizeof *obj, &a, (void **)&obj), 0);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(obj[i], 0);
    gs_free(&a, obj);
    cr_assert_eq(fa.live, 0);
    failalloc_init(&fa, 0);
    cr_assert_eq(gs_object_new(&fa.a, 8, &a, (void **)&obj), GPUSCHED_ENOMEM);
    gpusched_allocator bad = GPUSCHED_ALLOCATOR_INIT;
    cr_assert_eq(gs_object_new(&bad, 8, &a, (void **)&obj), GPUSCHED_EINVAL);
}
