/* In-place heap sorts for the engine's lists: the C library's qsort may
 * allocate with malloc, and everything the library allocates goes through
 * the caller's allocator. Keys are unique (a child index breaks every
 * tie), so the order is total and the result deterministic. */
#include "place-internal.h"

static bool kid_before(gs_kid a, gs_kid b, bool larger_first)
{
    if (a.cap != b.cap)
        return larger_first ? a.cap > b.cap : a.cap < b.cap;
    return a.idx < b.idx;
}

/* Sift down in a heap whose root is the *last* in the wanted order. */
static void kid_sift(gs_kid *k, uint32_t n, uint32_t i, bool larger_first)
{
    for (uint32_t m; (m = 2 * i + 1) < n; i = m) {
        if (m + 1 < n && kid_before(k[m], k[m + 1], larger_first))
            m++;
        if (!kid_before(k[i], k[m], larger_first))
            return;
        gs_kid t = k[i];
        k[i] = k[m];
        k[m] = t;
    }
}

void gs_pl_sort_kids(gs_kid *k, uint32_t n, bool larger_first)
{
    for (uint32_t i = n / 2; i-- > 0;)
        kid_sift(k, n, i, larger_first);
    for (uint32_t end = n; end > 1; end--) {
        gs_kid t = k[0];
        k[0] = k[end - 1];
        k[end - 1] = t;
        kid_sift(k, end - 1, 0, larger_first);
    }
}

static void u32_sift_min(uint32_t *v, uint32_t n, uint32_t i)
{
    for (uint32_t m; (m = 2 * i + 1) < n; i = m) {
        if (m + 1 < n && v[m + 1] < v[m])
            m++;
        if (v[i] <= v[m])
            return;
        uint32_t t = v[i];
        v[i] = v[m];
        v[m] = t;
    }
}

void gs_pl_sort_u32_desc(uint32_t *v, uint32_t n)
{
    for (uint32_t i = n / 2; i-- > 0;)
        u32_sift_min(v, n, i);
    for (uint32_t end = n; end > 1; end--) {
        uint32_t t = v[0];
        v[0] = v[end - 1];
        v[end - 1] = t;
        u32_sift_min(v, end - 1, 0);
    }
}
