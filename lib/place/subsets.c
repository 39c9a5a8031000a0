/* A domain whose grandchildren are the last counted level: a placement in
 * it is a set of children (the fewest: m) and, inside them, the fewest
 * grandchildren, which for a fixed set is the greedy prefix of its largest
 * grandchildren (they pool freely when the children's level has no slice).
 * So trying every m-subset of the children is exact, and far cheaper than
 * the knapsack when the children are few (the zones of a 200k-GPU gang).
 * Among equal keys the subset with the least capacity wins (best fit). */

#include "place-internal.h"

#define SUBSETS_MAX 4096

typedef struct gs_sub_kid {
    uint32_t idx;       /* child index */
    uint32_t cap;
    uint32_t first, n;  /* its grandchildren's capacities, largest first */
} gs_sub_kid;

static uint64_t choose(uint32_t n, uint32_t k)
{
    uint64_t c = 1;
    for (uint32_t i = 0; i < k; i++) {
        c = c * (n - i) / (i + 1);
        if (c > SUBSETS_MAX)
            return SUBSETS_MAX + 1;
    }
    return c;
}

static void sort_desc(uint32_t *v, uint32_t n)
{
    if (n > 64) {
        gs_pl_sort_u32_desc(v, n);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        uint32_t x = v[i], j = i;
        for (; j > 0 && v[j - 1] < x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* The kids with capacity and their grandchildren's capacities. */
static int gather(gpusched_placer *p, int32_t l, uint32_t d, gs_sub_kid **out, uint32_t **gcaps, uint32_t *n)
{
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    gs_sub_kid *k = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *k);
    uint32_t ga, gb, gfirst;
    gs_pl_children(p, l + 1, a, &gfirst, &gb);
    gs_pl_children(p, l + 1, b - 1, &ga, &gb);
    uint32_t *g = gs_arena_get(&p->arena, (size_t)(gb - gfirst) * sizeof *g);
    if (!k || !g)
        return GPUSCHED_ENOMEM;
    uint32_t m = 0, o = 0;
    for (uint32_t ch = a; ch < b; ch++) {
        uint32_t cap = gs_pl_cap(p, l + 1, ch);
        if (!cap)
            continue;
        gs_pl_children(p, l + 1, ch, &ga, &gb);
        k[m] = (gs_sub_kid){ch, cap, o, 0};
        for (uint32_t gc = ga; gc < gb; gc++) {
            uint32_t c = gs_pl_cap(p, l + 2, gc);
            if (c)
                g[o + k[m].n++] = c;
        }
        sort_desc(g + o, k[m].n);
        o += k[m].n;
        m++;
    }
    *out = k;
    *gcaps = g;
    *n = m;
    return 0;
}

/* The fewest children: the greedy count over the children's capacities. */
static uint32_t fewest(const gs_sub_kid *k, uint32_t n, uint64_t Y, uint32_t *scratch)
{
    for (uint32_t i = 0; i < n; i++)
        scratch[i] = k[i].cap;
    sort_desc(scratch, n);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((sum += scratch[i]) >= Y)
            return i + 1;
    return 0;
}

/* Greedy over the merged grandchildren of the subset: how many it takes
 * and, if `amount` is given, what each child holds. */
static uint32_t merge(const gs_sub_kid *k, const uint32_t *g, const uint32_t *set, uint32_t m, uint64_t Y,
                      uint32_t *heads, uint32_t *amount)
{
    for (uint32_t i = 0; i < m; i++)
        heads[i] = 0;
    uint64_t sum = 0;
    uint32_t used = 0, last = 0;
    while (sum < Y) {
        uint32_t best = UINT32_MAX, bc = 0;
        for (uint32_t i = 0; i < m; i++) {
            const gs_sub_kid *x = &k[set[i]];
            if (heads[i] < x->n && g[x->first + heads[i]] > bc) {
                bc = g[x->first + heads[i]];
                best = i;
            }
        }
        if (best == UINT32_MAX)
            return UINT32_MAX;
        heads[best]++;
        sum += bc;
        used++;
        last = best;
        if (amount)
            amount[best] += bc;
    }
    if (amount)
        amount[last] -= (uint32_t)(sum - Y);
    return used;
}

int gs_pl_subsets(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_key *key, uint32_t *amount,
                  bool *applicable)
{
    const gs_pl_req *r = p->req;
    *applicable = false;
    if (l + 2 != r->pref || l + 1 >= (int32_t)p->nlevels || r->ratio[LV(l + 1)] != 1)
        return 0;
    gs_sub_kid *k;
    uint32_t *g, n;
    int rc = gather(p, l, d, &k, &g, &n);
    if (rc)
        return rc;
    uint64_t Y = (uint64_t)y * r->ratio[LV(l)];
    uint32_t *scratch = gs_arena_get(&p->arena, (size_t)(3 * n + 1) * sizeof *scratch);
    if (!scratch)
        return GPUSCHED_ENOMEM;
    uint32_t m = fewest(k, n, Y, scratch);
    *key = GS_KEY_INF;
    if (!m) {
        *applicable = true;
        return 0;
    }
    if (choose(n, m) > SUBSETS_MAX)
        return 0;
    *applicable = true;
    uint32_t *set = scratch, *heads = scratch + n, *best = scratch + 2 * n;
    uint64_t best_cap = UINT64_MAX;
    for (uint32_t i = 0; i < m; i++)
        set[i] = i;
    for (;;) {
        uint64_t cap = 0;
        for (uint32_t i = 0; i < m; i++)
            cap += k[set[i]].cap;
        if (cap >= Y) {
            uint32_t used = merge(k, g, set, m, Y, heads, NULL);
            gs_key kk = (gs_key)m * r->weight[LV(l + 1)] + (gs_key)used * r->weight[LV(l + 2)];
            if (kk < *key || (kk == *key && cap < best_cap)) {
                *key = kk;
                best_cap = cap;
                for (uint32_t i = 0; i < m; i++)
                    best[i] = set[i];
            }
        }
        /* Next m-combination in lexicographic order. */
        int32_t i = (int32_t)m - 1;
        while (i >= 0 && set[i] == n - m + (uint32_t)i)
            i--;
        if (i < 0)
            break;
        set[i]++;
        for (uint32_t j = (uint32_t)i + 1; j < m; j++)
            set[j] = set[j - 1] + 1;
    }
    if (amount && *key != GS_KEY_INF) {
        uint32_t a, b;
        gs_pl_children(p, l, d, &a, &b);
        uint32_t *share = gs_arena_get(&p->arena, (size_t)m * sizeof *share);
        if (!share)
            return GPUSCHED_ENOMEM;
        for (uint32_t i = 0; i < m; i++)
            share[i] = 0;
        merge(k, g, best, m, Y, heads, share);
        for (uint32_t i = 0; i < m; i++)
            amount[k[best[i]].idx - a] = share[i];
    }
    return 0;
}
