/* The engine's allocation-free sorts against insertion sort, on random
 * lists with many equal capacities (the index must break every tie). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "place/place-internal.h"

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static bool before(gs_kid a, gs_kid b, bool larger_first)
{
    if (a.cap != b.cap)
        return larger_first ? a.cap > b.cap : a.cap < b.cap;
    return a.idx < b.idx;
}

/* Sorts both lists with the engine and checks them against insertion
 * sort of the same lists. */
static void check_sorts(gs_kid *k, uint32_t *v, uint32_t n, bool larger, int round)
{
    static gs_kid ref[700];
    static uint32_t vref[700];
    for (uint32_t i = 0; i < n; i++) {
        gs_kid x = k[i];
        uint32_t j = i;
        for (; j > 0 && before(x, ref[j - 1], larger); j--)
            ref[j] = ref[j - 1];
        ref[j] = x;
        uint32_t y = v[i];
        for (j = i; j > 0 && vref[j - 1] < y; j--)
            vref[j] = vref[j - 1];
        vref[j] = y;
    }
    gs_pl_sort_kids(k, n, larger);
    gs_pl_sort_u32_desc(v, n);
    for (uint32_t i = 0; i < n; i++) {
        cr_assert_eq(k[i].idx, ref[i].idx, "round %d, n %u, position %u", round, n, i);
        cr_assert_eq(k[i].cap, ref[i].cap);
        cr_assert_eq(v[i], vref[i], "round %d, n %u, position %u", round, n, i);
    }
}

Test(place_sort, kids_and_values_match_insertion_sort)
{
    uint64_t s = 0x1234567;
    static gs_kid k[700];
    static uint32_t v[700];
    for (int round = 0; round < 400; round++) {
        uint32_t n = (uint32_t)(next(&s) % 700);
        bool larger = next(&s) & 1;
        uint32_t spread = 1 + (uint32_t)(next(&s) % 50);
        for (uint32_t i = 0; i < n; i++) {
            k[i] = (gs_kid){(uint32_t)(next(&s) % 100000), (uint32_t)(next(&s) % spread)};
            k[i].idx = k[i].idx * 700 + i; /* unique indices */
            v[i] = (uint32_t)(next(&s) % spread);
        }
        check_sorts(k, v, n, larger, round);
    }
}

/* Lists in index order with small capacities (a block's racks) take the
 * counting sort; with a capacity of 256 or more, or an index out of order,
 * the heap sort; values alike (counted below 256, else the heap sort).
 * Every kind must give insertion sort's order. */
Test(place_sort, kids_in_index_order_match_insertion_sort)
{
    uint64_t s = 0x9e3779b9;
    static gs_kid k[300];
    static uint32_t v[300];
    for (int round = 0; round < 600; round++) {
        uint32_t n = (uint32_t)(next(&s) % 300);
        bool larger = next(&s) & 1;
        uint32_t spread = round % 3 == 0 ? 300 : 1 + (uint32_t)(next(&s) % 60);
        uint32_t idx = (uint32_t)(next(&s) % 5);
        for (uint32_t i = 0; i < n; i++) {
            idx += 1 + (uint32_t)(next(&s) % 3);
            k[i] = (gs_kid){idx, (uint32_t)(next(&s) % spread)};
            v[i] = (uint32_t)(next(&s) % spread);
        }
        if (round % 7 == 0 && n > 2) { /* one index out of order */
            gs_kid t = k[0];
            k[0] = k[1];
            k[1] = t;
        }
        check_sorts(k, v, n, larger, round);
    }
}

static bool g_larger;

static int by_order(const void *x, const void *y)
{
    const gs_kid *a = x, *b = y;
    return before(*a, *b, g_larger) ? -1 : before(*b, *a, g_larger) ? 1 : 0;
}

/* Lists of any length (a cluster's racks): listed by index with
 * capacities up to 4n the arena's counting sort, wider or out of order
 * the heap; both must give the reference order. An arena that cannot
 * allocate leaves the list as it was. */
Test(place_sort, long_lists_match_the_reference_order)
{
    uint64_t s = 0xabcdef12;
    gs_arena a = {0};
    gs_alloc al;
    cr_assert_eq(gs_alloc_init(&al, NULL), 0);
    a.alloc = &al;
    static gs_kid k[6000], ref[6000];
    for (int round = 0; round < 300; round++) {
        const uint32_t n = (uint32_t)(next(&s) % 6000);
        g_larger = next(&s) & 1;
        const uint32_t spread = round % 4 == 0 ? 8 * n + 1 : 1 + (uint32_t)(next(&s) % 80);
        uint32_t idx = (uint32_t)(next(&s) % 5);
        for (uint32_t i = 0; i < n; i++) {
            idx += 1 + (uint32_t)(next(&s) % 3);
            k[i] = (gs_kid){idx, (uint32_t)(next(&s) % spread)};
        }
        if (round % 5 == 0 && n > 2) { /* one index out of order */
            gs_kid t = k[n - 1];
            k[n - 1] = k[n - 2];
            k[n - 2] = t;
        }
        memcpy(ref, k, n * sizeof *k);
        qsort(ref, n, sizeof *ref, by_order);
        cr_assert(gs_pl_sort_kids_long(k, n, g_larger, &a));
        for (uint32_t i = 0; i < n; i++)
            cr_assert(k[i].idx == ref[i].idx && k[i].cap == ref[i].cap, "round %d, n %u, position %u", round, n, i);
    }
    gs_arena_free(&a);
}

static void *no_memory(void *user, size_t size)
{
    (void)user;
    (void)size;
    return NULL;
}

Test(place_sort, long_list_without_memory_is_left_as_it_was)
{
    gs_alloc al = {.malloc_fn = no_memory};
    gs_arena a = {.alloc = &al};
    static gs_kid k[1000], was[1000];
    for (uint32_t i = 0; i < 1000; i++)
        k[i] = was[i] = (gs_kid){3 * i, (i * 7919) % 13};
    cr_assert_not(gs_pl_sort_kids_long(k, 1000, true, &a));
    cr_assert_eq(memcmp(k, was, sizeof k), 0);
}

/* Values counted in four banks, by quarters of the list (the last with
 * the tail), against a plain count: every length from 0, strides 1 and
 * 2 (a field of a pair), runs of equal values and scattered ones. */
Test(place_sort, values_counted_in_banks_match_a_plain_count)
{
    uint64_t s = 0x5bd1e995;
    static uint32_t v[2 * 700], count[300], banks[4 * 300], ref[300];
    for (uint32_t n = 0; n < 700; n++) {
        const uint32_t top = (uint32_t)(next(&s) % 300), stride = 1 + (uint32_t)(n & 1);
        for (uint32_t i = 0; i < n * stride; i++)
            v[i] = n % 3 == 0 ? top : (uint32_t)(next(&s) % (top + 1));
        for (uint32_t c = 0; c <= top; c++)
            ref[c] = 0;
        for (uint32_t i = 0; i < n; i++)
            ref[v[i * stride]]++;
        gs_pl_count_values(v, stride, n, top, count, banks);
        for (uint32_t c = 0; c <= top; c++)
            cr_assert_eq(count[c], ref[c], "n %u, stride %u, value %u: %u counted, %u present", n, stride, c,
                         count[c], ref[c]);
    }
}
