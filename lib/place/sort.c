/* In-place heap sorts for the engine's lists: the C library's qsort may
 * allocate with malloc, and everything the library allocates goes through
 * the caller's allocator. Keys are unique (a child index breaks every
 * tie), so the order is total and the result deterministic. */
#include "heap.h"
#include "place-internal.h"

static bool kid_before(const gs_kid *a, const gs_kid *b, bool larger_first)
{
    if (a->cap != b->cap)
        return larger_first ? a->cap > b->cap : a->cap < b->cap;
    return a->idx < b->idx;
}

static bool u32_larger(const uint32_t *a, const uint32_t *b, void *unused)
{
    (void)unused;
    return *a > *b;
}

GS_HEAP_DEFINE(kids, gs_kid, bool, kid_before)
GS_HEAP_DEFINE(u32_desc, uint32_t, void *, u32_larger)

void gs_pl_sort_kids(gs_kid *k, uint32_t n, bool larger_first)
{
    kids_sort(k, n, larger_first);
}

void gs_pl_sort_u32_desc(uint32_t *v, uint32_t n)
{
    u32_desc_sort(v, n, NULL);
}
