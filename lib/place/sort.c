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

void gs_pl_count_values(const uint32_t *v, size_t stride, uint32_t n, uint32_t top, uint32_t *count,
                        uint32_t *banks)
{
    const size_t w = (size_t)top + 1, q = n / 4;
    uint32_t *b0 = banks, *b1 = banks + w, *b2 = banks + 2 * w, *b3 = banks + 3 * w;
    for (size_t c = 0; c < 4 * w; c++)
        banks[c] = 0;
    const uint32_t *v1 = v + q * stride, *v2 = v + 2 * q * stride, *v3 = v + 3 * q * stride;
    for (size_t i = 0; i < q; i++) {
        b0[v[i * stride]]++;
        b1[v1[i * stride]]++;
        b2[v2[i * stride]]++;
        b3[v3[i * stride]]++;
    }
    for (size_t i = 4 * q; i < n; i++)
        b3[v[i * stride]]++;
    for (size_t c = 0; c < w; c++)
        count[c] = b0[c] + b1[c] + b2[c] + b3[c];
}

/* Many equal capacities: counted and placed by quarters of k in turn
 * (counting_sort), each quarter's positions its own, so that ties keep
 * their order. */
static void quarters_sort(const gs_kid *k, uint32_t n, bool larger_first, uint32_t top, uint32_t *at,
                          uint32_t *banks, gs_kid *out)
{
    gs_pl_count_values(&k[0].cap, sizeof *k / sizeof k[0].cap, n, top, at, banks);
    const size_t w = (size_t)top + 1, q = n / 4;
    uint32_t *p0 = banks, *p1 = banks + w, *p2 = banks + 2 * w, *p3 = banks + 3 * w;
    uint32_t pos = 0;
    for (uint32_t step = 0; step <= top; step++) {
        const uint32_t c = larger_first ? top - step : step;
        const uint32_t n0 = p0[c], n1 = p1[c], n2 = p2[c];
        p0[c] = pos;
        p1[c] = pos + n0;
        p2[c] = pos + n0 + n1;
        p3[c] = pos + n0 + n1 + n2;
        pos += at[c];
    }
    /* Four independent runs of positions (one would wait on itself). */
    const gs_kid *k1 = k + q, *k2 = k + 2 * q, *k3 = k + 3 * q;
    for (size_t i = 0; i < q; i++) {
        out[p0[k[i].cap]++] = k[i];
        out[p1[k1[i].cap]++] = k1[i];
        out[p2[k2[i].cap]++] = k2[i];
        out[p3[k3[i].cap]++] = k3[i];
    }
    for (size_t i = 4 * q; i < n; i++)
        out[p3[k[i].cap]++] = k[i];
}

/* k[0, n) by capacity, stable (ties keep their order), through out[0, n)
 * with at[0, top] counts and 4 x (top + 1) banks: every capacity at most
 * top. Where the list is long against the capacities' span, runs of
 * equal capacities would chain each count on the last through memory:
 * by quarters then. */
static void counting_sort(gs_kid *k, uint32_t n, bool larger_first, uint32_t top, uint32_t *at, uint32_t *banks,
                          gs_kid *out)
{
    const size_t w = (size_t)top + 1;
    if (n < 4 * w) { /* few equal capacities: one count each, in one pass */
        for (size_t c = 0; c < w; c++)
            at[c] = 0;
        for (uint32_t i = 0; i < n; i++)
            at[k[i].cap]++;
        uint32_t pos = 0;
        for (uint32_t step = 0; step <= top; step++) {
            const uint32_t c = larger_first ? top - step : step, count = at[c];
            at[c] = pos;
            pos += count;
        }
        for (uint32_t i = 0; i < n; i++)
            out[at[k[i].cap]++] = k[i];
    } else {
        quarters_sort(k, n, larger_first, top, at, banks, out);
    }
    for (uint32_t i = 0; i < n; i++)
        k[i] = out[i];
}

/* Children listed by index, as gs_pl_kids() lists them, with small
 * capacities (a block's racks: at most a rack's units each) are the common
 * list: for them a stable counting sort, O(n + the largest capacity), keeps
 * the ties in index order, the order the heap sort's compares give, at a
 * fraction of their cost. false, and nothing moved, for any other list. */
static bool kids_counting_sort(gs_kid *k, uint32_t n, bool larger_first)
{
    if (n < 8 || n > GS_COUNTING_MAX)
        return false;
    uint32_t top = k[0].cap;
    for (uint32_t i = 1; i < n; i++) {
        if (k[i].idx <= k[i - 1].idx)
            return false;
        top = k[i].cap > top ? k[i].cap : top;
    }
    if (top >= GS_COUNTING_MAX)
        return false;
    uint32_t at[GS_COUNTING_MAX], banks[4 * GS_COUNTING_MAX];
    gs_kid out[GS_COUNTING_MAX];
    counting_sort(k, n, larger_first, top, at, banks, out);
    return true;
}

void gs_pl_sort_kids(gs_kid *k, uint32_t n, bool larger_first)
{
    if (!kids_counting_sort(k, n, larger_first))
        kids_sort(k, n, larger_first);
}

bool gs_pl_sort_kids_long(gs_kid *k, uint32_t n, bool larger_first, gs_arena *a)
{
    if (n <= GS_COUNTING_MAX) {
        gs_pl_sort_kids(k, n, larger_first);
        return true;
    }
    uint32_t top = 0;
    bool by_index = true;
    for (uint32_t i = 0; i < n; i++) {
        top = k[i].cap > top ? k[i].cap : top;
        by_index &= !i || k[i].idx > k[i - 1].idx;
    }
    /* Counting costs the capacities' span besides n. */
    if (!by_index || top > 4 * (uint64_t)n) {
        kids_sort(k, n, larger_first);
        return true;
    }
    gs_arena_mark m = gs_arena_save(a);
    uint32_t *at = gs_arena_get(a, ((size_t)top + 1) * 5 * sizeof *at);
    gs_kid *out = gs_arena_get(a, (size_t)n * sizeof *out);
    if (!at || !out) {
        gs_arena_restore(a, m);
        return false;
    }
    counting_sort(k, n, larger_first, top, at, at + top + 1, out);
    gs_arena_restore(a, m);
    return true;
}

void gs_pl_sort_u32_desc(uint32_t *v, uint32_t n)
{
    /* Short lists (a block's racks) are often sorted already, or nearly:
     * insertion costs a compare per value then. */
    if (n <= 64) {
        for (uint32_t i = 1; i < n; i++) {
            const uint32_t x = v[i];
            uint32_t j = i;
            for (; j > 0 && v[j - 1] < x; j--)
                v[j] = v[j - 1];
            v[j] = x;
        }
        return;
    }
    /* Small values (capacities) are counted, not compared: values carry
     * nothing else, so the counts are the order. */
    uint32_t top = 0;
    for (uint32_t i = 0; i < n && top < GS_COUNTING_MAX; i++)
        top = v[i] > top ? v[i] : top;
    if (top >= GS_COUNTING_MAX) {
        u32_desc_sort(v, n, NULL);
        return;
    }
    uint32_t count[GS_COUNTING_MAX], banks[4 * GS_COUNTING_MAX];
    gs_pl_count_values(v, 1, n, top, count, banks);
    uint32_t at = 0;
    for (uint32_t c = top + 1; c-- > 0;)
        for (uint32_t m = count[c]; m; m--)
            v[at++] = c;
}

uint64_t gs_pl_largest_sum(uint32_t *v, uint32_t n, uint32_t k)
{
    uint64_t sum = 0;
    uint32_t lo = 0, hi = n; /* the k-th largest lies in v[lo, hi) */
    while (k && hi - lo > k) {
        const uint32_t pivot = v[lo + (hi - lo) / 2];
        uint32_t i = lo, j = lo, g = hi; /* [lo,i) > pivot, [i,j) == pivot, [g,hi) < pivot */
        while (j < g) {
            if (v[j] > pivot) {
                const uint32_t t = v[i];
                v[i++] = v[j];
                v[j++] = t;
            } else if (v[j] < pivot) {
                const uint32_t t = v[--g];
                v[g] = v[j];
                v[j] = t;
            } else {
                j++;
            }
        }
        if (k <= i - lo) {
            hi = i;
        } else if (k <= j - lo) {
            for (uint32_t x = lo; x < i; x++)
                sum += v[x];
            return sum + (uint64_t)(k - (i - lo)) * pivot;
        } else {
            for (uint32_t x = lo; x < j; x++)
                sum += v[x];
            k -= j - lo;
            lo = j;
        }
    }
    for (uint32_t x = lo; x < lo + k; x++)
        sum += v[x];
    return sum;
}
