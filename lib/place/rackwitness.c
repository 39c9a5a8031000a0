/* With locality counted down to racks and two levels or more between
 * the candidate and its racks (data center, zone, block, rack), a
 * placement built from the capacities the candidate's own bound reads
 * (search.c children_bound): every choice of the fewest domains above the
 * blocks that hold the gang, in each the fewest blocks and racks by the
 * search's greedy rule (the largest whole, the rest to the tightest). When its
 * key meets the candidate's bound it is the candidate's exact key, and no
 * knapsack runs (doc/placement.md, "A candidate's own bound").
 *
 * Taking the blocks with the most capacity uses the fewest blocks; taking
 * their largest racks uses the fewest racks those blocks allow. Whether
 * that is the fewest racks under the candidate, and whether the blocks lie
 * in as few domains above them as possible, only the comparison with the
 * bound says. */
#include <stdlib.h>
#include <string.h>

#include "place-internal.h"

/* A domain and its capacity, largest first, ties lowest index. */
typedef struct rw_dom {
    uint32_t cap, idx;
} rw_dom;

static int larger_first(const void *x, const void *y)
{
    const rw_dom *a = x, *b = y;
    if (a->cap != b->cap)
        return a->cap > b->cap ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Domains [a, b) of level l with their capacities, largest first. */
static rw_dom *by_capacity(gpusched_placer *p, int32_t l, uint32_t a, uint32_t b)
{
    rw_dom *x = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *x);
    uint32_t *cap = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *cap);
    if (!x || !cap)
        return NULL;
    gs_pl_caps(p, l, a, b, cap);
    for (uint32_t i = 0; i < b - a; i++)
        x[i] = (rw_dom){cap[i], a + i};
    qsort(x, b - a, sizeof *x, larger_first);
    return x;
}

static bool rw_applies(const gpusched_placer *p, int32_t l)
{
    const gs_pl_req *r = p->req;
    const int32_t L = (int32_t)p->nlevels;
    if (r->pref != L - 1 || l < 0 || l > L - 4)
        return false;
    /* A slice between d and its racks would bind the shares; one at the
     * racks is in their capacities. */
    for (uint32_t i = 0; i < r->ncons; i++)
        if ((int32_t)r->cons[i].level > l && (int32_t)r->cons[i].level < L - 1)
            return false;
    return true;
}

/* Most subsets of the domains above the blocks the witness tries. */
#define RW_SUBSETS_MAX 64

/* Racks [ra, rb) under the candidate, and the scratch a plan fills. */
typedef struct rw_ctx {
    int32_t l, low;
    uint32_t ra, rb;
    rw_dom *blocks, *racks;
    uint32_t *cap, *share;
} rw_ctx;

/* Of x[0, n) sorted largest first, the fewest that hold `need` by the
 * search's greedy rule: the largest whole while the rest is larger than
 * them, the rest to the tightest one that holds it (moved to the end of
 * the ones taken). Their count, 0 when all of them cannot hold it. */
static uint32_t fewest_tight(rw_dom *x, uint32_t n, uint64_t need)
{
    uint64_t held = 0;
    uint32_t k = 0;
    while (k < n && held + x[k].cap < need)
        held += x[k++].cap;
    if (k == n)
        return 0;
    /* Sorted largest first: the tightest that holds the rest is the
     * first of the last run of capacities that do (ties: lowest index). */
    uint32_t fit = k;
    for (uint32_t i = k + 1; i < n && x[i].cap >= need - held; i++)
        if (x[i].cap < x[fit].cap)
            fit = i;
    rw_dom t = x[fit];
    x[fit] = x[k];
    x[k] = t;
    return k + 1;
}

/* A plan on blocks x[0, n): the fewest of them, the largest with the rest
 * on the tightest, and their racks the same way. Its shares into share
 * (by rack from ra), its key into *key (GS_KEY_INF: they cannot hold the
 * gang). */
static void plan_on(gpusched_placer *p, rw_ctx *w, rw_dom *x, uint32_t n, uint32_t *share, gs_key *key)
{
    const gs_pl_req *r = p->req;
    const int32_t low = w->low;
    *key = GS_KEY_INF;
    qsort(x, n, sizeof *x, larger_first);
    const uint32_t nb = fewest_tight(x, n, r->gpus / r->unit[LV(low - 1)]);
    if (!nb)
        return;
    uint32_t nr = 0;
    for (uint32_t i = 0; i < nb; i++) {
        uint32_t a, b;
        gs_pl_children(p, low - 1, x[i].idx, &a, &b);
        gs_pl_caps(p, low, a, b, w->cap);
        for (uint32_t k = 0; k < b - a; k++)
            w->racks[nr++] = (rw_dom){w->cap[k], a + k};
    }
    qsort(w->racks, nr, sizeof *w->racks, larger_first);
    uint64_t rem = r->gpus / r->unit[LV(low)];
    const uint32_t taken = fewest_tight(w->racks, nr, rem);
    if (!taken)
        return;
    memset(share, 0, (size_t)(w->rb - w->ra) * sizeof *share);
    for (uint32_t i = 0; i < taken; i++) {
        const uint32_t take = w->racks[i].cap < rem ? w->racks[i].cap : (uint32_t)rem;
        share[w->racks[i].idx - w->ra] = take;
        rem -= take;
    }
    *key = gs_pl_shares_key(p, w->l, w->ra, w->rb, share);
}

/* The blocks under the domains u[0, z) of the level above the blocks. */
static uint32_t blocks_under(gpusched_placer *p, const rw_ctx *w, const uint32_t *u, uint32_t z, rw_dom *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < z; i++) {
        uint32_t a, b;
        gs_pl_children(p, w->low - 2, u[i], &a, &b);
        gs_pl_caps(p, w->low - 1, a, b, w->cap);
        for (uint32_t k = 0; k < b - a; k++)
            out[n++] = (rw_dom){w->cap[k], a + k};
    }
    return n;
}

/* Binomial coefficient, saturating past RW_SUBSETS_MAX. */
static uint64_t subsets(uint32_t n, uint32_t k)
{
    uint64_t c = 1;
    for (uint32_t i = 1; i <= k && c <= RW_SUBSETS_MAX; i++)
        c = c * (n - k + i) / i;
    return c;
}

/* The shares by rack (p->wit_share from p->wit_first) and their key:
 * every choice of the fewest domains above the blocks that hold the gang
 * is tried (at most RW_SUBSETS_MAX; past that, the ones with the most
 * capacity), and the plan with the least key kept. */
static int plan(gpusched_placer *p, int32_t l, uint32_t d, gs_key *key)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_topo *t = p->t;
    const int32_t low = (int32_t)p->nlevels - 1;
    const uint32_t first = t->dom_start[l][d], last = t->dom_start[l][d + 1] - 1;
    rw_ctx w = {.l = l, .low = low};
    w.ra = gs_topo_node_domain(t, first, (uint32_t)low);
    w.rb = gs_topo_node_domain(t, last, (uint32_t)low) + 1;
    const uint32_t ba = gs_topo_node_domain(t, first, (uint32_t)(low - 1));
    const uint32_t bb = gs_topo_node_domain(t, last, (uint32_t)(low - 1)) + 1;
    const uint32_t nr = w.rb - w.ra, nbk = bb - ba;
    w.blocks = gs_arena_get(&p->arena, (size_t)nbk * sizeof *w.blocks);
    w.racks = gs_arena_get(&p->arena, (size_t)nr * sizeof *w.racks);
    w.cap = gs_arena_get(&p->arena, (size_t)(nr > nbk ? nr : nbk) * sizeof *w.cap);
    uint32_t *share = gs_arena_get(&p->arena, (size_t)nr * sizeof *share);
    if (!w.blocks || !w.racks || !w.cap || !share)
        return GPUSCHED_ENOMEM;
    if (nr > p->wit_cap) {
        uint32_t *v = gs_realloc_array(&p->alloc, p->wit_share, nr, sizeof *v);
        if (!v)
            return GPUSCHED_ENOMEM;
        p->wit_share = v;
        p->wit_cap = nr;
    }
    *key = GS_KEY_INF;
    gs_key k;
    p->wit_first = w.ra;
    /* The level above the blocks: its fewest domains that hold the gang. */
    const uint32_t ua = gs_topo_node_domain(t, first, (uint32_t)(low - 2));
    const uint32_t ub = gs_topo_node_domain(t, last, (uint32_t)(low - 2)) + 1;
    rw_dom *up = by_capacity(p, low - 2, ua, ub);
    uint32_t *pick = gs_arena_get(&p->arena, (size_t)(ub - ua) * sizeof *pick);
    if (!up || !pick)
        return GPUSCHED_ENOMEM;
    const uint64_t up_need = r->gpus / r->unit[LV(low - 2)];
    uint64_t held = 0;
    uint32_t z = 0;
    while (z < ub - ua && held < up_need)
        held += up[z++].cap;
    if (held < up_need)
        return 0;
    if (subsets(ub - ua, z) > RW_SUBSETS_MAX) {
        for (uint32_t i = 0; i < z; i++)
            pick[i] = up[i].idx;
        plan_on(p, &w, w.blocks, blocks_under(p, &w, pick, z, w.blocks), p->wit_share, key);
        return 0;
    }
    /* Every z-subset of the domains above, in lexicographic order of
     * their positions by capacity (ties: the first kept). */
    uint32_t *pos = gs_arena_get(&p->arena, (size_t)z * sizeof *pos);
    if (!pos)
        return GPUSCHED_ENOMEM;
    for (uint32_t i = 0; i < z; i++)
        pos[i] = i;
    uint64_t best_cap = UINT64_MAX;
    for (;;) {
        for (uint32_t i = 0; i < z; i++)
            pick[i] = up[pos[i]].idx;
        plan_on(p, &w, w.blocks, blocks_under(p, &w, pick, z, w.blocks), share, &k);
        uint64_t c = 0;
        for (uint32_t i = 0; i < z; i++)
            c += up[pos[i]].cap;
        /* The least key; among equal keys the domains above with the
         * least capacity, so that larger ones survive. */
        if (k < *key || (k == *key && k != GS_KEY_INF && c < best_cap)) {
            *key = k;
            best_cap = c;
            memcpy(p->wit_share, share, (size_t)nr * sizeof *share);
        }
        int32_t i = (int32_t)z - 1;
        while (i >= 0 && pos[i] == ub - ua - z + (uint32_t)i)
            i--;
        if (i < 0)
            break;
        pos[i]++;
        for (uint32_t j = (uint32_t)i + 1; j < z; j++)
            pos[j] = pos[j - 1] + 1;
    }
    return 0;
}

gs_key gs_pl_rack_witness(gpusched_placer *p, int32_t l, uint32_t d)
{
    if (!rw_applies(p, l) || p->witness_off)
        return GS_KEY_INF;
    gs_arena_mark m = gs_arena_save(&p->arena);
    gs_key key;
    const int rc = plan(p, l, d, &key);
    gs_arena_restore(&p->arena, m);
    p->wit_gen = rc ? 0 : p->gen;
    p->wit_pref = p->req->pref;
    p->wit_level = l;
    p->wit_dom = d;
    p->wit_key = rc ? GS_KEY_INF : key;
    return p->wit_key;
}

int gs_pl_rack_witness_assign(gpusched_placer *p, int32_t l, uint32_t d, gs_key target, bool *done)
{
    *done = false;
    if (!rw_applies(p, l) || p->witness_off)
        return 0;
    if (!gs_pl_witness_valid(p, l, d))
        gs_pl_rack_witness(p, l, d);
    if (!gs_pl_witness_valid(p, l, d) || p->wit_key > target)
        return 0;
    *done = true;
    p->rack_witnesses++;
    return gs_pl_assign_by_rack(p, l, d, p->wit_first, p->wit_share);
}
