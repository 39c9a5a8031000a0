/* A lower bound of one candidate domain's key when locality is counted
 * down to nodes, from its lowest domains' histograms alone (no node read,
 * no frontier), and a placement built where the bound points, which
 * proves the bound exact when its key meets it: doc/placement.md, "A
 * candidate's own bound".
 *
 * Call the lowest domains racks and their parents blocks. Whatever the
 * placement inside candidate d, it uses at least the static count of
 * domains at each level (the gang over the largest domain of the level).
 * With B blocks and R racks, the nodes holding v units or more number at
 * most T_v(B, R): the most such nodes any R racks of any B blocks of d
 * have (exact for B <= 2: the R largest per-rack counts of the best block
 * or pair of blocks; above, the least of two relaxations). N nodes then
 * hold at most sum_v min(N, T_v(B, R)) units (a node counts once for every
 * v up to its units), so the fewest nodes are at least the least N for
 * which that reaches the gang. Keys compare blocks, then racks, then
 * nodes: B is the least block count from the static one up for which
 * some R racks can hold the gang, R the least such count, and a placement
 * on more blocks or racks has a larger key whatever its nodes. So (static
 * levels above, B, R, N) is below every placement's key in d.
 *
 * The histograms count free GPUs before any filter, so every count is an
 * upper bound of what the request may use, and the bound stays a bound. */
#include <string.h>

#include "heap.h"
#include "place-internal.h"

/* Largest node-level units per node the bound tables (v = 1 .. this). */
#define GS_NB_UMAX 16
/* Largest per-rack node count the bound handles. */
#define GS_NB_VALS 256
/* Most blocks under a candidate for which pairs are tried one by one. */
#define GS_NB_PAIRS_MAX 64
/* Most entries of the counting tables (blocks x values x node counts). */
#define GS_NB_TABLE_MAX ((uint64_t)1 << 20)

static uint64_t nb_ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* The racks of candidate d, by blocks. */
typedef struct gs_rack_ranks {
    uint32_t first, end;        /* racks [first, end) */
    uint32_t b0, nblocks;       /* blocks [b0, b0 + nblocks) */
    uint32_t max_racks;         /* most racks in one block */
    uint32_t umax, w;
    uint64_t need;              /* the gang in units of the values */
    /* Per block b and v (and b == nblocks: every rack of d), the values
     * taken by its racks, largest first, with how many racks take each:
     * runs[off[i] .. off[i + 1]) for i = b * (umax + 1) + v. */
    struct nb_run *runs;
    uint32_t *off;
} gs_rack_ranks;

typedef struct nb_run {
    uint32_t val, n;
} nb_run;

/* What the bound found: B, R, the T_v and the best blocks for them. */
typedef struct nb_found {
    uint64_t nb, racks;
    uint64_t t[GS_NB_UMAX + 1];
    uint32_t best[GS_NB_PAIRS_MAX]; /* the witness's blocks, relative to b0 */
    bool witness;               /* best[0 .. nb) chosen */
} nb_found;

/* Sum of the r largest values of block a's runs for v, and of block b's
 * (b == UINT32_MAX: none). */
static uint64_t top_sum(const gs_rack_ranks *k, uint32_t a, uint32_t b, uint32_t v, uint64_t r)
{
    const uint32_t ia = a * (k->umax + 1) + v, ib = b == UINT32_MAX ? ia : b * (k->umax + 1) + v;
    const nb_run *x = k->runs + k->off[ia], *xe = k->runs + k->off[ia + 1];
    const nb_run *y = k->runs + k->off[ib], *ye = b == UINT32_MAX ? y : k->runs + k->off[ib + 1];
    uint64_t sum = 0;
    while (r && (x < xe || y < ye)) {
        const nb_run *z = y == ye || (x < xe && x->val >= y->val) ? x++ : y++;
        uint64_t take = z->n < r ? z->n : r;
        sum += take * z->val;
        r -= take;
    }
    return sum;
}

/* The T_v of blocks a and b (b == UINT32_MAX: a alone) into t. */
static void nb_pair(const gs_rack_ranks *k, uint32_t a, uint32_t b, uint64_t r, uint64_t *t)
{
    for (uint32_t v = 1; v <= k->umax; v++)
        t[v] = top_sum(k, a, b, v, r);
}

/* Whether t is above best: lexicographically from the most units down. */
static bool nb_above(const uint64_t *t, const uint64_t *best, uint32_t umax)
{
    for (uint32_t v = umax; v >= 1; v--)
        if (t[v] != best[v])
            return t[v] > best[v];
    return false;
}

/* f->t[v] >= the most nodes of v units or more in any f->racks racks of
 * any f->nb blocks, and the witness's blocks in f->best: for one or two
 * blocks the best block or pair (most nodes of the most units, then of
 * fewer, ties to the lowest indices), whose count of nodes of the most
 * units is then exactly the most; for more (up to GS_NB_PAIRS_MAX), the
 * blocks with the most on their own. */
static void most_nodes(const gs_rack_ranks *k, const uint64_t *single, nb_found *f)
{
    const uint32_t umax = k->umax, nbk = k->nblocks;
    const uint64_t r = f->racks;
    uint64_t t[GS_NB_UMAX + 1];
    /* Relaxations for every v: any r racks of d; the f->nb best blocks'
     * r best racks each. */
    for (uint32_t v = 1; v <= umax; v++) {
        uint64_t any = top_sum(k, nbk, UINT32_MAX, v, r), firsts[GS_NB_PAIRS_MAX] = {0}, sum = 0;
        if (f->nb <= GS_NB_PAIRS_MAX) {
            for (uint32_t b = 0; b < nbk; b++) {
                uint64_t x = single[(size_t)b * (umax + 1) + v];
                for (uint32_t i = 0; i < f->nb; i++)
                    if (x > firsts[i]) {
                        uint64_t tmp = firsts[i];
                        firsts[i] = x;
                        x = tmp;
                    }
            }
            for (uint32_t i = 0; i < f->nb; i++)
                sum += firsts[i];
            any = sum < any ? sum : any;
        }
        f->t[v] = any;
    }
    f->witness = false;
    if (f->nb > GS_NB_PAIRS_MAX || f->nb > nbk || (f->nb == 2 && nbk > GS_NB_PAIRS_MAX))
        return;
    if (f->nb > 2) {
        /* The witness takes the blocks with the most on their own (no
         * proof: the bound is the relaxation above). */
        for (uint32_t a = 0; a < nbk; a++) {
            const uint64_t *x = single + (size_t)a * (umax + 1);
            uint32_t i = a < f->nb ? a : (uint32_t)f->nb;
            while (i > 0 && nb_above(x, single + (size_t)f->best[i - 1] * (umax + 1), umax)) {
                if (i < f->nb)
                    f->best[i] = f->best[i - 1];
                i--;
            }
            if (i < f->nb)
                f->best[i] = a;
        }
        f->witness = true;
        return;
    }
    uint64_t best[GS_NB_UMAX + 1] = {0};
    if (f->nb == 1) {
        for (uint32_t a = 0; a < nbk; a++)
            if (nb_above(single + (size_t)a * (umax + 1), best, umax)) {
                memcpy(best, single + (size_t)a * (umax + 1), sizeof best);
                f->best[0] = a;
                f->witness = true;
            }
        f->t[umax] = best[umax];
        return;
    }
    /* Pairs, by their blocks' counts of nodes of the most units, largest
     * first: a pair cannot beat the best once those two counts sum below
     * its count. */
    uint32_t order[GS_NB_PAIRS_MAX];
    for (uint32_t a = 0; a < nbk; a++) {
        uint32_t i = a;
        const uint64_t x = single[(size_t)a * (umax + 1) + umax];
        while (i > 0 && single[(size_t)order[i - 1] * (umax + 1) + umax] < x) {
            order[i] = order[i - 1];
            i--;
        }
        order[i] = a;
    }
    for (uint32_t i = 0; i + 1 < nbk; i++) {
        const uint64_t xi = single[(size_t)order[i] * (umax + 1) + umax];
        if (f->witness && xi + single[(size_t)order[i + 1] * (umax + 1) + umax] < best[umax])
            break;
        for (uint32_t j = i + 1; j < nbk; j++) {
            if (f->witness && xi + single[(size_t)order[j] * (umax + 1) + umax] < best[umax])
                break;
            uint32_t a = order[i] < order[j] ? order[i] : order[j], b = order[i] ^ order[j] ^ a;
            nb_pair(k, a, b, r, t);
            if (!f->witness || nb_above(t, best, umax) ||
                (!nb_above(best, t, umax) && (a < f->best[0] || (a == f->best[0] && b < f->best[1])))) {
                memcpy(best, t, sizeof best);
                f->best[0] = a;
                f->best[1] = b;
                f->witness = true;
            }
        }
    }
    f->t[umax] = best[umax];
}

uint64_t gs_pl_least_nodes(const uint64_t *t, uint32_t umax, uint64_t need)
{
    uint64_t lo = 1, hi = t[1];
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2, held = 0;
        for (uint32_t v = 1; v <= umax; v++)
            held += t[v] < mid ? t[v] : mid;
        if (held >= need)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Nodes of v units or more in rack x, v = 1 .. umax, into c[v]. */
static void rack_counts(const gpusched_placer *p, uint32_t x, uint32_t umax, uint32_t *c)
{
    const uint32_t H = p->c->hist_width;
    gs_pl_hist_at_least(p->req, p->c->agg[p->nlevels - 1].hist + (size_t)x * H, H, umax, c);
}

/* Counts every rack of d: false when a count is too large to table or
 * out of scratch memory. */
static bool count_racks(gpusched_placer *p, int32_t l, uint32_t d, gs_rack_ranks *k)
{
    const struct gpusched_cluster *c = p->c;
    const int32_t low = (int32_t)p->nlevels - 1;
    k->first = gs_cl_node_leaf(c, p->t->dom_start[l][d]);
    k->end = gs_cl_node_leaf(c, p->t->dom_start[l][d + 1] - 1) + 1;
    k->b0 = gs_cl_parent(c, low, k->first);
    k->nblocks = gs_cl_parent(c, low, k->end - 1) - k->b0 + 1;
    k->max_racks = 0;
    const uint32_t *start = p->t->dom_start[low - 1];
    for (uint32_t b = k->b0; b < k->b0 + k->nblocks; b++) {
        uint32_t n = gs_cl_node_leaf(c, start[b + 1] - 1) + 1 - gs_cl_node_leaf(c, start[b]);
        k->max_racks = n > k->max_racks ? n : k->max_racks;
    }
    uint32_t top = 0;
    for (uint32_t x = k->first; x < k->end; x++)
        if (gs_cl_dom_nodes(c, low, x) > top)
            top = gs_cl_dom_nodes(c, low, x);
    if (top >= GS_NB_VALS)
        return false;
    k->w = top + 1;
    /* Counted by value first, then run-length coded. */
    const uint32_t nv = k->umax + 1, nlists = (k->nblocks + 1) * nv;
    if ((uint64_t)nlists * k->w > GS_NB_TABLE_MAX)
        return false; /* too many blocks and values to table: no bound */
    uint32_t *cnt = gs_arena_get(&p->arena, (size_t)nlists * k->w * sizeof *cnt);
    k->off = gs_arena_get(&p->arena, ((size_t)nlists + 1) * sizeof *k->off);
    k->runs = gs_arena_get(&p->arena, ((size_t)2 * (k->end - k->first) + k->w) * nv * sizeof *k->runs);
    if (!cnt || !k->off || !k->runs)
        return false;
    memset(cnt, 0, (size_t)nlists * k->w * sizeof *cnt);
    uint32_t *all = cnt + (size_t)k->nblocks * nv * k->w;
    uint32_t cv[GS_NB_UMAX + 2];
    for (uint32_t x = k->first; x < k->end; x++) {
        rack_counts(p, x, k->umax, cv);
        uint32_t *row = cnt + (size_t)(gs_cl_parent(c, low, x) - k->b0) * nv * k->w;
        for (uint32_t v = 1; v <= k->umax && cv[v]; v++) {
            row[v * k->w + cv[v]]++;
            all[v * k->w + cv[v]]++;
        }
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < nlists; i++) {
        k->off[i] = n;
        const uint32_t *t = cnt + (size_t)i * k->w;
        for (uint32_t val = k->w; val-- > 1;)
            if (t[val])
                k->runs[n++] = (nb_run){val, t[val]};
    }
    k->off[nlists] = n;
    return true;
}

/* Where the bound applies: locality counted down to nodes, with a block
 * level between d and its racks. A block's own key is left to the greedy fill
 * and the knapsack: one level of choice, where the bound would cost the
 * common gang more than it saves. */
static bool nb_applies(const gpusched_placer *p, int32_t l, gs_rack_ranks *k)
{
    const gs_pl_req *r = p->req;
    const int32_t L = (int32_t)p->nlevels;
    k->umax = (p->c->hist_width - 1) / r->u0;
    k->need = r->gpus / r->u0;
    return r->pref == L && l >= 0 && l <= L - 3 && k->umax >= 1 && k->umax <= GS_NB_UMAX && !r->whole_w;
}

/* Whether f->nb blocks and `racks` racks may hold `need` units (f->t
 * filled for them). */
static bool nb_holds(const gs_rack_ranks *k, uint64_t *single, nb_found *f, uint64_t racks, uint64_t need)
{
    uint64_t sum = 0;
    f->racks = racks;
    for (uint32_t b = 0; b < k->nblocks; b++)
        nb_pair(k, b, UINT32_MAX, racks, single + (size_t)b * (k->umax + 1));
    most_nodes(k, single, f);
    for (uint32_t v = 1; v <= k->umax; v++)
        sum += f->t[v];
    return sum >= need;
}

/* The bound's B and R (and T_v): false when it finds none. */
static bool nb_search(gpusched_placer *p, int32_t l, uint32_t d, gs_rack_ranks *k, nb_found *f)
{
    const gs_pl_req *r = p->req;
    const int32_t low = (int32_t)p->nlevels - 1;
    if (!count_racks(p, l, d, k))
        return false;
    const uint64_t need = k->need;
    const uint64_t racks0 = nb_ceil_div(r->gpus, p->max_dom_gpus[LV(low)]);
    const uint64_t nracks = k->end - k->first;
    uint64_t *single = gs_arena_get(&p->arena, (size_t)k->nblocks * (k->umax + 1) * sizeof *single);
    if (!single)
        return false;
    f->nb = nb_ceil_div(r->gpus, p->max_dom_gpus[LV(low - 1)]);
    for (; f->nb <= k->nblocks; f->nb++) {
        /* What R racks hold only grows with R: the least R by bisection. */
        if (racks0 > nracks)
            break;
        if (nb_holds(k, single, f, racks0, need))
            return true;
        const uint64_t most = f->nb * (uint64_t)k->max_racks;
        uint64_t lo = racks0 + 1, hi = most < nracks ? most : nracks;
        if (lo > hi || !nb_holds(k, single, f, hi, need))
            continue;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (nb_holds(k, single, f, mid, need))
                hi = mid;
            else
                lo = mid + 1;
        }
        return nb_holds(k, single, f, lo, need);
    }
    return false;
}

/* ---- the witness ---------------------------------------------------------- */

int gs_pl_wit_begin(gpusched_placer *p, int32_t l, uint32_t d, uint32_t n)
{
    p->wit_gen = p->gen;
    p->wit_pref = p->req->pref;
    p->wit_level = l;
    p->wit_dom = d;
    p->wit_key = GS_KEY_INF;
    if (n > p->wit_cap) {
        uint32_t *v = gs_realloc_array(&p->alloc, p->wit_share, n, sizeof *v);
        if (!v) {
            p->wit_gen = 0;
            return GPUSCHED_ENOMEM;
        }
        p->wit_share = v;
        p->wit_cap = n;
    }
    return 0;
}

gs_key gs_pl_shares_key(const gpusched_placer *p, int32_t l, uint32_t first, uint32_t end, const uint32_t *by_rack)
{
    const gs_pl_req *r = p->req;
    const int32_t low = (int32_t)p->nlevels - 1;
    gs_key sum = 0;
    /* Racks ascend, so the ancestors of the racks with a share come in
     * runs: a run is one domain used. */
    for (int32_t j = l + 1; j <= low; j++) {
        uint64_t used = 0;
        uint32_t last = UINT32_MAX;
        for (uint32_t y = first; y < end; y++) {
            if (!by_rack[y - first])
                continue;
            uint32_t a = y;
            for (int32_t u = low; u > j; u--)
                a = gs_cl_parent(p->c, u, a);
            used += a != last;
            last = a;
        }
        sum += (gs_key)used * r->weight[LV(j)];
    }
    return sum;
}

/* A rack's count of nodes of v units or more, back from its order (the
 * witness ranks racks, gs_rack_rank, by these counts from the most units
 * down, 8 bits each). */
static uint32_t rack_count(const gs_rack_rank *x, uint32_t v, uint32_t umax)
{
    return v > umax ? 0 : (uint32_t)(x->order >> (8 * (v - 1)) & 0xff);
}

/* Racks of blocks best[] (relative to b0), in the witness's order; *n of
 * them. */
static gs_rack_rank *witness_racks(gpusched_placer *p, const gs_rack_ranks *k, const nb_found *f, uint32_t *n)
{
    const struct gpusched_cluster *c = p->c;
    const int32_t low = (int32_t)p->nlevels - 1;
    gs_rack_rank *x = gs_arena_get(&p->arena, (size_t)(k->end - k->first) * sizeof *x);
    if (!x)
        return NULL;
    *n = 0;
    for (uint32_t i = 0; i < f->nb; i++) {
        const uint32_t blk = k->b0 + f->best[i];
        const uint32_t a = gs_cl_node_leaf(c, p->t->dom_start[low - 1][blk]);
        const uint32_t b = gs_cl_node_leaf(c, p->t->dom_start[low - 1][blk + 1] - 1) + 1;
        for (uint32_t y = a; y < b; y++) {
            uint32_t cv[GS_NB_UMAX + 2];
            gs_rack_rank *e = &x[(*n)++];
            rack_counts(p, y, k->umax, cv);
            e->idx = y;
            e->order = 0;
            for (uint32_t v = k->umax; v >= 1; v--)
                e->order = e->order << 8 | cv[v];
        }
    }
    gs_rack_rank_heap_sort(x, *n, NULL);
    return x;
}

/* Units each of the first R racks gives (share[i], in x's order): nodes of
 * the most units first across the racks, so that the fewest nodes hold
 * the gang; the node count into *nodes. false if they cannot hold it. */
static bool witness_shares(const gs_rack_rank *x, uint32_t R, uint32_t umax, uint64_t need, uint32_t *share,
                           uint64_t *nodes)
{
    uint64_t rem = need;
    *nodes = 0;
    for (uint32_t i = 0; i < R; i++)
        share[i] = 0;
    for (uint32_t v = umax; v >= 1 && rem; v--)
        for (uint32_t i = 0; i < R && rem; i++) {
            uint64_t have = rack_count(&x[i], v, umax) - rack_count(&x[i], v + 1, umax), want = nb_ceil_div(rem, v);
            uint64_t take = have < want ? have : want;
            uint64_t units = take * v < rem ? take * v : rem;
            share[i] += (uint32_t)units;
            rem -= units;
            *nodes += take;
        }
    return rem == 0;
}

/* The witness's shares by rack index over [k->first, k->end), and its key. */
static int witness_plan(gpusched_placer *p, int32_t l, const gs_rack_ranks *k, const nb_found *f, uint32_t *by_rack,
                        gs_key *key)
{
    const gs_pl_req *r = p->req;
    const int32_t L = (int32_t)p->nlevels;
    *key = GS_KEY_INF;
    uint32_t n = 0;
    gs_rack_rank *x = witness_racks(p, k, f, &n);
    uint32_t *share = gs_arena_get(&p->arena, (size_t)n * sizeof *share);
    if (!x || !share)
        return GPUSCHED_ENOMEM;
    uint64_t nodes;
    const uint32_t R = f->racks < n ? (uint32_t)f->racks : n;
    if (!witness_shares(x, R, k->umax, k->need, share, &nodes))
        return 0;
    memset(by_rack, 0, (size_t)(k->end - k->first) * sizeof *by_rack);
    for (uint32_t i = 0; i < R; i++)
        by_rack[x[i].idx - k->first] = share[i];
    *key = (gs_key)nodes * r->weight[LV(L)] + gs_pl_shares_key(p, l, k->first, k->end, by_rack);
    return 0;
}

int gs_pl_assign_by_rack(gpusched_placer *p, int32_t j, uint32_t x, uint32_t first, const uint32_t *by_rack)
{
    const int32_t low = (int32_t)p->nlevels - 1;
    const struct gpusched_cluster *c = p->c;
    if (j == low)
        return gs_pl_assign(p, low, x, by_rack[x - first]);
    if (j >= 0) { /* the root is no domain to record */
        const uint32_t ra = gs_cl_node_leaf(c, p->t->dom_start[j][x]);
        const uint32_t rb = gs_cl_node_leaf(c, p->t->dom_start[j][x + 1] - 1) + 1;
        uint64_t any = 0;
        for (uint32_t y = ra; y < rb; y++)
            any += by_rack[y - first];
        if (!any)
            return 0;
        if (gs_pl_use_domain(p, (uint32_t)j, x))
            return GPUSCHED_ENOMEM;
    }
    uint32_t a, b;
    gs_pl_children(p, j, x, &a, &b);
    for (uint32_t ch = a; ch < b; ch++) {
        int rc = gs_pl_assign_by_rack(p, j + 1, ch, first, by_rack);
        if (rc)
            return rc;
    }
    return 0;
}

/* The witness of candidate d into the placer's memo (p->wit_*): its
 * shares by rack and its key, GS_KEY_INF when none is built. */
static int witness_build(gpusched_placer *p, int32_t l, uint32_t d, const gs_rack_ranks *k, const nb_found *f)
{
    int rc = gs_pl_wit_begin(p, l, d, k->end - k->first);
    p->wit_first = k->first;
    if (rc || !p->req->agg_exact_nodes || k->umax > 8 || p->req->deepest_cons > l || !f->witness ||
        p->witness_off)
        return rc;
    return witness_plan(p, l, k, f, p->wit_share, &p->wit_key);
}

gs_key gs_pl_node_bound(gpusched_placer *p, int32_t l, uint32_t d, gs_key *witness)
{
    const gs_pl_req *r = p->req;
    const int32_t L = (int32_t)p->nlevels, low = L - 1;
    gs_rack_ranks k;
    nb_found f;
    *witness = GS_KEY_INF;
    if (!nb_applies(p, l, &k))
        return 0;
    gs_arena_mark m = gs_arena_save(&p->arena);
    p->wit_gen = 0;
    const bool found = nb_search(p, l, d, &k, &f);
    const int rc = found ? witness_build(p, l, d, &k, &f) : 0;
    gs_arena_restore(&p->arena, m);
    if (!found || rc)
        return 0; /* the histograms cannot hold it, or no memory: no bound */
    *witness = p->wit_key;
    gs_key key = 0;
    for (int32_t j = l + 1; j < low - 1; j++)
        key += (gs_key)nb_ceil_div(r->gpus, p->max_dom_gpus[LV(j)]) * r->weight[LV(j)];
    key += (gs_key)f.nb * r->weight[LV(low - 1)];
    key += (gs_key)f.racks * r->weight[LV(low)];
    key += (gs_key)gs_pl_least_nodes(f.t, k.umax, k.need) * r->weight[LV(L)];
    return key;
}

int gs_pl_node_witness_assign(gpusched_placer *p, int32_t l, uint32_t d, gs_key target, bool *done)
{
    *done = false;
    gs_rack_ranks k;
    if (!nb_applies(p, l, &k))
        return 0;
    if (!gs_pl_witness_valid(p, l, d)) {
        gs_key w;
        gs_pl_node_bound(p, l, d, &w);
        if (p->wit_gen != p->gen)
            return 0; /* no witness (or no memory for one): the other paths */
    }
    if (p->wit_key > target)
        return 0;
    *done = true;
    return gs_pl_assign_by_rack(p, l, d, p->wit_first, p->wit_share);
}
