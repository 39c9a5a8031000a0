/* One binary heap for every sort and priority queue of the library. The C
 * library's qsort may allocate with malloc, bypassing the caller's
 * allocator, so the library sorts in place. A macro instantiates the code
 * per element type, so that the comparison inlines (the placement engine
 * sorts on its hot path). Internal; never installed.
 *
 * GS_HEAP_DEFINE(name, T, ctx_t, before) defines, for a comparison
 * `bool before(const T *x, const T *y, ctx_t ctx)` (a strict order):
 *
 *   name##_sift(a, n, i, ctx)  sift element i down a heap of n elements
 *                              whose root is the element every other one
 *                              is `before` (the last in the order);
 *   name##_up(a, i, ctx)       sift element i up (after appending it at i);
 *   name##_sort(a, n, ctx)     sort so that earlier elements are `before`
 *                              later ones. O(n log n), no allocation.
 *
 * A priority queue that pops the *first* in some order defines its heap
 * with the reversed order and calls name##_sift. */
#ifndef GS_HEAP_H
#define GS_HEAP_H

#include <stdbool.h>
#include <stdint.h>

/* A queue uses only the sift, a sort both: neither may warn when unused. */
#if defined(__GNUC__) || defined(__clang__)
#define GS_HEAP_UNUSED __attribute__((unused))
#else
#define GS_HEAP_UNUSED
#endif

#define GS_HEAP_DEFINE(name, T, ctx_t, before)                                         \
    static inline GS_HEAP_UNUSED void name##_sift(T *a, uint32_t n, uint32_t i, ctx_t ctx) \
    {                                                                                   \
        for (uint32_t m; (m = 2 * i + 1) < n; i = m) {                                  \
            if (m + 1 < n && before(&a[m], &a[m + 1], ctx))                             \
                m++;                                                                    \
            if (!before(&a[i], &a[m], ctx))                                             \
                return;                                                                 \
            T t_ = a[i];                                                                \
            a[i] = a[m];                                                                \
            a[m] = t_;                                                                  \
        }                                                                               \
    }                                                                                   \
    static inline GS_HEAP_UNUSED void name##_up(T *a, uint32_t i, ctx_t ctx)            \
    {                                                                                   \
        while (i > 0 && before(&a[(i - 1) / 2], &a[i], ctx)) {                          \
            T t_ = a[i];                                                                \
            a[i] = a[(i - 1) / 2];                                                      \
            a[(i - 1) / 2] = t_;                                                        \
            i = (i - 1) / 2;                                                            \
        }                                                                               \
    }                                                                                   \
    static inline GS_HEAP_UNUSED void name##_sort(T *a, uint32_t n, ctx_t ctx)          \
    {                                                                                   \
        for (uint32_t i = n / 2; i-- > 0;)                                              \
            name##_sift(a, n, i, ctx);                                                  \
        for (uint32_t end = n; end > 1; end--) {                                        \
            T t_ = a[0];                                                                \
            a[0] = a[end - 1];                                                          \
            a[end - 1] = t_;                                                            \
            name##_sift(a, end - 1, 0, ctx);                                            \
        }                                                                               \
    }

#endif
