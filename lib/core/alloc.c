#include <stdlib.h>
#include <string.h>

#include "core.h"

static void *gs_libc_malloc(void *user, size_t size)
{
    (void)user;
    return malloc(size);
}

static void *gs_libc_realloc(void *user, void *ptr, size_t size)
{
    (void)user;
    return realloc(ptr, size);
}

static void gs_libc_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

GPUSCHED_API int gpusched_allocator_check(const gpusched_allocator *alloc)
{
    gs_alloc tmp;
    return gs_alloc_init(&tmp, alloc);
}

int gs_alloc_init(gs_alloc *dst, const gpusched_allocator *src)
{
    if (!src) {
        *dst = (gs_alloc){gs_libc_malloc, gs_libc_realloc, gs_libc_free, NULL};
        return 0;
    }
    gpusched_allocator a;
    int rc = gs_struct_copy_in(&a, sizeof a, src, sizeof a, NULL, "allocator");
    if (rc)
        return rc;
    if (a.reserved0 || !a.malloc_fn || !a.realloc_fn || !a.free_fn)
        return GPUSCHED_EINVAL;
    *dst = (gs_alloc){a.malloc_fn, a.realloc_fn, a.free_fn, a.user};
    return 0;
}

void *gs_malloc(const gs_alloc *a, size_t size)
{
    return a->malloc_fn(a->user, size ? size : 1);
}

void *gs_calloc(const gs_alloc *a, size_t count, size_t elem)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, elem, &bytes))
        return NULL;
    void *p = gs_malloc(a, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void *gs_realloc_array(const gs_alloc *a, void *ptr, size_t count, size_t elem)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, elem, &bytes))
        return NULL;
    return a->realloc_fn(a->user, ptr, bytes ? bytes : 1);
}

int gs_grow(const gs_alloc *a, void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c = c > UINT32_MAX / 2 ? need : 2 * c;
    void *n = gs_realloc_array(a, *arr, c, elem);
    if (!n)
        return GPUSCHED_ENOMEM;
    *arr = n;
    *cap = c;
    return 0;
}

int gs_object_new(const gpusched_allocator *alloc, size_t size, gs_alloc *a, void **obj)
{
    int rc = gs_alloc_init(a, alloc);
    if (rc)
        return rc;
    *obj = gs_calloc(a, 1, size);
    return *obj ? 0 : GPUSCHED_ENOMEM;
}

void gs_free(const gs_alloc *a, void *ptr)
{
    if (ptr)
        a->free_fn(a->user, ptr);
}

char *gs_strdup(const gs_alloc *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = gs_malloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}
