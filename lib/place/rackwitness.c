/* With locality counted down to racks and blocks between the candidate
 * and its racks (the candidate a data center, a zone or the cluster), a
 * placement built from the capacities the candidate's own bound reads
 * (search.c children_bound): every choice of the fewest domains above the
 * blocks that hold the gang, in each the fewest blocks and racks by the
 * search's greedy rule (the largest whole, the rest to the tightest). When its
 * key meets the candidate's bound it is the candidate's exact key, and no
 * knapsack runs (doc/placement.md, "A candidate's own bound").
 *
 * Taking the blocks with the most capacity uses the fewest blocks; taking
 * their largest racks uses the fewest racks those blocks allow. As many
 * blocks chosen by their capacity above a threshold may need fewer racks
 * (fuller racks where the largest blocks hold racks of every size), so
 * those choices are counted too. Whether that is the fewest racks under
 * the candidate, and whether the blocks lie in as few domains above them
 * as possible, only the comparison with the bound says. */
#include <string.h>

#include "heap.h"
#include "place-internal.h"

/* Domains are gs_kid records (index, capacity), largest capacity first,
 * ties lowest index (gs_pl_sort_kids). */
static bool larger_kid(const gs_kid *a, const gs_kid *b)
{
    if (a->cap != b->cap)
        return a->cap > b->cap;
    return a->idx < b->idx;
}

/* Domains [a, b) of level l with their capacities, largest first. */
static gs_kid *by_capacity(gpusched_placer *p, int32_t l, uint32_t a, uint32_t b)
{
    gs_kid *x = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *x);
    uint32_t *cap = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *cap);
    if (!x || !cap)
        return NULL;
    gs_pl_caps(p, l, a, b, cap);
    for (uint32_t i = 0; i < b - a; i++)
        x[i] = (gs_kid){a + i, cap[i]};
    return gs_pl_sort_kids_long(x, b - a, true, &p->arena) ? x : NULL;
}

/* Racks last counted, and two levels between them and candidate l (the
 * domains above the blocks are l's children), or one when l is the
 * cluster (the cluster is then the domain above the blocks; search.c
 * assign_root() uses that witness only where the knapsack does worse). */
static bool rw_applies(const gpusched_placer *p, int32_t l)
{
    const gs_pl_req *r = p->req;
    const int32_t L = (int32_t)p->nlevels;
    if (r->pref != L - 1 || l < -1 || l > L - 4 + (l == -1))
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
/* Largest rack capacity (in units) the witness counts racks by. */
#define RW_CAP_VALUES 4096

/* Racks [ra, rb) under the candidate, their capacities, and the scratch
 * a plan fills. */
typedef struct rw_ctx {
    int32_t l, low;
    uint32_t ra, rb;
    uint32_t *rcap;             /* rcap[rack - ra] */
    gs_kid *blocks, *racks;
} rw_ctx;

/* Of x[0, n) sorted largest first, the fewest that hold `need` by the
 * search's greedy rule: the largest whole while the rest is larger than
 * them, the rest to the tightest one that holds it (moved to the end of
 * the ones taken). Their count, 0 when all of them cannot hold it. */
static uint32_t fewest_tight(gs_kid *x, uint32_t n, uint64_t need)
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
    gs_kid t = x[fit];
    x[fit] = x[k];
    x[k] = t;
    return k + 1;
}

/* Widest rack capacity histogram the block choices and the bound below
 * read, and how many thresholds they try (the top ones: racks as full as
 * the largest are what a gang of the fewest racks is made of). */
#define RW_CAP_HIST 1024
#define RW_TAU_VALUES 32

/* The lowest threshold tried under capacities below W (at least lo). */
static uint32_t lowest_tau(uint32_t W, uint32_t lo)
{
    return W - 1 > RW_TAU_VALUES + lo ? W - 1 - RW_TAU_VALUES : lo;
}

/* Racks needed for `need` by the greedy over a capacity histogram h[0, w). */
static uint64_t racks_for(const uint32_t *h, uint32_t w, uint64_t need)
{
    uint64_t used = 0;
    for (uint32_t c = w; c-- > 1 && need;) {
        const uint64_t want = (need + c - 1) / c, take = h[c] < want ? h[c] : want;
        used += take;
        need -= take * c < need ? take * c : need;
    }
    return need ? UINT64_MAX : used;
}

/* Blocks by their score at one threshold: the highest first, ties to the
 * larger capacity, then the lower index (larger_kid). */
typedef struct rw_scores {
    const uint64_t *score;
    const gs_kid *x;
} rw_scores;

static bool score_before(const uint32_t *a, const uint32_t *b, const rw_scores *s)
{
    if (s->score[*a] != s->score[*b])
        return s->score[*a] > s->score[*b];
    return larger_kid(&s->x[*a], &s->x[*b]);
}

GS_HEAP_DEFINE(score_heap, uint32_t, const rw_scores *, score_before)

/* pick[0, n) sorted again after the scores changed: from one threshold
 * to the next most blocks keep their rank, so insertion costs about a
 * compare each; past n log n moves the heap finishes the sort. */
static void resort_scores(uint32_t *pick, uint32_t n, const rw_scores *by)
{
    uint64_t moves = 0, most = (uint64_t)n * 16;
    for (uint32_t i = 1; i < n; i++) {
        const uint32_t v = pick[i];
        uint32_t j = i;
        for (; j > 0 && score_before(&v, &pick[j - 1], by); j--)
            pick[j] = pick[j - 1];
        pick[j] = v;
        moves += i - j;
        if (moves > most) {
            score_heap_sort(pick, n, by);
            return;
        }
    }
}

/* Blocks x[0, n), the first nb chosen by the greedy rule (the most
 * capacity): the largest blocks may hold racks of every size where fewer,
 * fuller racks elsewhere would do. For every threshold tau, the nb blocks
 * with the most capacity above it (sum over their racks of cap - tau, for
 * cap > tau) are another choice, the Lagrangian's primal for the racks
 * counted at tau; the choice that holds the gang on the fewest racks
 * (counted on the racks' histograms; ties: the first tau, from the top)
 * goes first in x when it needs fewer than the greedy one. Stops at
 * `floor` racks, which no choice goes below. */
static int fewer_racks_blocks(gpusched_placer *p, const rw_ctx *w, gs_kid *x, uint32_t n, uint32_t nb,
                              uint64_t bneed, uint64_t rneed, uint64_t floor)
{
    uint32_t W = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a, b;
        gs_pl_children(p, w->low - 1, x[i].idx, &a, &b);
        for (uint32_t y = a; y < b; y++)
            W = w->rcap[y - w->ra] + 1 > W ? w->rcap[y - w->ra] + 1 : W;
    }
    if (nb >= n || W > RW_CAP_HIST)
        return 0;
    /* The greedy choice's racks first: at the floor, nothing to try. */
    uint32_t *merged = gs_arena_get(&p->arena, (size_t)W * sizeof *merged);
    if (!merged)
        return GPUSCHED_ENOMEM;
    memset(merged, 0, W * sizeof *merged);
    for (uint32_t i = 0; i < nb; i++) {
        uint32_t a, b;
        gs_pl_children(p, w->low - 1, x[i].idx, &a, &b);
        for (uint32_t y = a; y < b; y++)
            merged[w->rcap[y - w->ra]]++;
    }
    uint64_t fewest = racks_for(merged, W, rneed);
    if (fewest <= floor)
        return 0; /* no choice needs fewer racks */
    uint32_t *h = gs_arena_get(&p->arena, (size_t)n * W * sizeof *h);
    uint64_t *score = gs_arena_get(&p->arena, (size_t)n * sizeof *score);
    uint64_t *above = gs_arena_get(&p->arena, (size_t)n * sizeof *above);
    uint32_t *pick = gs_arena_get(&p->arena, (size_t)n * sizeof *pick);
    uint32_t *chosen = gs_arena_get(&p->arena, (size_t)nb * sizeof *chosen);
    bool *was = gs_arena_get(&p->arena, (size_t)n * sizeof *was);
    if (!h || !score || !above || !pick || !chosen || !was)
        return GPUSCHED_ENOMEM;
    memset(was, 0, (size_t)n * sizeof *was);
    memset(h, 0, (size_t)n * W * sizeof *h);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a, b;
        gs_pl_children(p, w->low - 1, x[i].idx, &a, &b);
        for (uint32_t y = a; y < b; y++)
            h[(size_t)i * W + w->rcap[y - w->ra]]++;
    }
    bool found = false;
    memset(score, 0, (size_t)n * sizeof *score);
    memset(above, 0, (size_t)n * sizeof *above);
    const uint32_t tau_end = lowest_tau(W, 0);
    for (uint32_t tau = W - 1; tau-- > tau_end && fewest > floor;) {
        /* score[i] = sum over racks of cap - tau above tau, kept from the
         * threshold above: each rack above tau gains one. */
        for (uint32_t i = 0; i < n; i++) {
            above[i] += h[(size_t)i * W + tau + 1];
            score[i] += above[i];
        }
        /* The nb best scores, ties to the larger capacity, then the
         * lower index: a sort, since nb is most of n when the gang is
         * most of the candidate. */
        const rw_scores by = {score, x};
        if (tau + 2 == W || p->resort_off) {
            for (uint32_t i = 0; i < n; i++)
                pick[i] = i;
            score_heap_sort(pick, n, &by);
        } else {
            resort_scores(pick, n, &by);
            p->resorts++;
            for (uint32_t i = 1; p->resort_check && i < n; i++)
                p->resorts_unsorted += !score_before(&pick[i - 1], &pick[i], &by);
        }
        uint64_t held = 0;
        for (uint32_t k = 0; k < nb; k++)
            held += x[pick[k]].cap;
        /* The same blocks as at the threshold above: the same racks. */
        bool same = true;
        for (uint32_t k = 0; k < nb; k++)
            same &= was[pick[k]];
        memset(was, 0, (size_t)n * sizeof *was);
        for (uint32_t k = 0; k < nb; k++)
            was[pick[k]] = true;
        if (held < bneed || same)
            continue;
        memset(merged, 0, W * sizeof *merged);
        for (uint32_t k = 0; k < nb; k++)
            for (uint32_t c = 0; c < W; c++)
                merged[c] += h[(size_t)pick[k] * W + c];
        const uint64_t racks = racks_for(merged, W, rneed);
        if (racks < fewest) {
            fewest = racks;
            found = true;
            memcpy(chosen, pick, nb * sizeof *chosen);
        }
    }
    if (!found)
        return 0;
    /* The chosen blocks first, in the order of x. */
    bool *in = (bool *)score;
    memset(in, 0, (size_t)n * sizeof *score);
    for (uint32_t k = 0; k < nb; k++)
        in[chosen[k]] = true;
    gs_kid *tmp = gs_arena_get(&p->arena, (size_t)n * sizeof *tmp);
    if (!tmp)
        return GPUSCHED_ENOMEM;
    uint32_t at = 0;
    for (uint32_t pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < n; i++)
            if (in[i] == !pass)
                tmp[at++] = x[i];
    memcpy(x, tmp, (size_t)n * sizeof *x);
    return 0;
}

/* A plan on blocks x[0, n): the fewest of them, the largest with the rest
 * on the tightest, or as many that need fewer racks (fewer_racks_blocks;
 * racks_floor: the fewest racks any choice of them can need), and their
 * racks the same way. Its shares into share (by rack from ra), its key
 * into *key (GS_KEY_INF: they cannot hold the gang). */
static void plan_on(gpusched_placer *p, rw_ctx *w, gs_kid *x, uint32_t n, uint64_t racks_floor, uint32_t *share,
                    gs_key *key)
{
    const gs_pl_req *r = p->req;
    const int32_t low = w->low;
    *key = GS_KEY_INF;
    gs_pl_sort_kids(x, n, true);
    const uint32_t nb = fewest_tight(x, n, r->gpus / r->unit[LV(low - 1)]);
    if (!nb)
        return;
    if (fewer_racks_blocks(p, w, x, n, nb, r->gpus / r->unit[LV(low - 1)], r->gpus / r->unit[LV(low)], racks_floor))
        return;
    /* The chosen blocks' racks in index order (blocks ascending), then
     * by capacity. */
    uint32_t *bk = gs_arena_get(&p->arena, (size_t)nb * sizeof *bk);
    if (!bk)
        return;
    for (uint32_t i = 0; i < nb; i++)
        bk[i] = x[i].idx;
    gs_pl_sort_u32_desc(bk, nb);
    uint32_t nr = 0;
    for (uint32_t i = nb; i-- > 0;) {
        uint32_t a, b;
        gs_pl_children(p, low - 1, bk[i], &a, &b);
        for (uint32_t y = a; y < b; y++)
            w->racks[nr++] = (gs_kid){y, w->rcap[y - w->ra]};
    }
    if (!gs_pl_sort_kids_long(w->racks, nr, true, &p->arena))
        return;
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

/* Binomial coefficient, saturating past RW_SUBSETS_MAX. */
static uint64_t subsets(uint32_t n, uint32_t k)
{
    uint64_t c = 1;
    for (uint32_t i = 1; i <= k && c <= RW_SUBSETS_MAX; i++)
        c = c * (n - k + i) / i;
    return c;
}

/* One choice of the fewest domains above the blocks: the fewest blocks
 * and the fewest racks under them that hold the gang, each counted alone
 * (lower bounds of any placement on them), and their capacity. */
typedef struct rw_choice {
    uint32_t pos[RW_SUBSETS_MAX]; /* positions in `up`, ascending */
    uint64_t blocks, racks, cap;
} rw_choice;

/* What plan() reads once: the domains above the blocks by capacity, and
 * per such domain its blocks' capacities (largest first) and how many of
 * its racks have each capacity. */
typedef struct rw_view {
    gs_kid *up;
    uint32_t nup, z;
    uint32_t *boff;             /* up domain i's blocks: bcap[boff[i] .. boff[i + 1]) */
    uint32_t *bcap;
    uint32_t *hist;             /* up domain i: hist[i * w + cap] racks */
    uint32_t w;
} rw_view;

/* The blocks under the domains at positions pos[0, z) of up[], with the
 * capacities the view read. */
static uint32_t blocks_under(gpusched_placer *p, const rw_ctx *w, const rw_view *v, const uint32_t *pos, uint32_t z,
                             gs_kid *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < z; i++) {
        uint32_t a, b;
        gs_pl_children(p, w->low - 2, v->up[pos[i]].idx, &a, &b);
        for (uint32_t x = a; x < b; x++)
            out[n++] = (gs_kid){x, v->bcap[v->boff[pos[i]] + (x - a)]};
    }
    return n;
}

static uint64_t choice_blocks(const rw_view *v, const uint32_t *pos, uint32_t z, uint32_t *scratch, uint64_t need)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < z; i++) {
        const uint32_t k = pos[i];
        for (uint32_t j = v->boff[k]; j < v->boff[k + 1]; j++)
            scratch[n++] = v->bcap[j];
    }
    gs_pl_sort_u32_desc(scratch, n);
    uint64_t held = 0, used = 0;
    while (used < n && held < need)
        held += scratch[used++];
    return held < need ? UINT64_MAX : used;
}

static uint64_t choice_racks(const rw_view *v, const uint32_t *pos, uint32_t z, uint64_t need)
{
    uint64_t held = 0, used = 0;
    for (uint32_t val = v->w; val-- > 1 && held < need;) {
        uint64_t n = 0;
        for (uint32_t i = 0; i < z; i++)
            n += v->hist[(size_t)pos[i] * v->w + val];
        const uint64_t want = (need - held + val - 1) / val;
        const uint64_t take = n < want ? n : want;
        used += take;
        held += take * val;
    }
    return held < need ? UINT64_MAX : used;
}

/* A lower bound of the racks any nb blocks of one choice hold the gang
 * on (rneed rack units): for any tau > 0, R racks of nb blocks hold at
 * most tau x R plus the nb largest block excesses above tau (the sum over
 * a block's racks of cap - tau, for cap > tau), so R is at least the gang
 * less those, over tau. ex[(block - ba) * W + tau]: the excesses. */
static uint64_t racks_bound(const uint32_t *ex, uint32_t W, uint32_t ba, const gs_kid *blocks, uint32_t n, uint64_t nb,
                            uint64_t rneed, uint32_t *scratch)
{
    uint64_t best = 0;
    /* Any thresholds give a bound; the top ones the best where racks are
     * nearly full. */
    for (uint32_t tau = lowest_tau(W, 1); tau < W; tau++) {
        for (uint32_t i = 0; i < n; i++)
            scratch[i] = ex[(size_t)(blocks[i].idx - ba) * W + tau];
        const uint64_t held = gs_pl_largest_sum(scratch, n, nb < n ? (uint32_t)nb : n);
        if (held < rneed) {
            const uint64_t r = (rneed - held + tau - 1) / tau;
            best = r > best ? r : best;
        }
    }
    return best;
}

/* The excesses of racks_bound() for every block of [ba, bb) and every
 * tau < W; NULL when W is too wide (no bound) or no memory (*rc). */
static uint32_t *excess_table(gpusched_placer *p, const rw_ctx *w, uint32_t ba, uint32_t bb, uint32_t W, int *rc)
{
    *rc = 0;
    if (W > RW_CAP_HIST)
        return NULL;
    uint32_t *ex = gs_arena_get(&p->arena, (size_t)(bb - ba) * W * sizeof *ex);
    if (!ex) {
        *rc = GPUSCHED_ENOMEM;
        return NULL;
    }
    for (uint32_t b = ba; b < bb; b++) {
        uint32_t *e = ex + (size_t)(b - ba) * W, ra, rb;
        memset(e, 0, W * sizeof *e);
        gs_pl_children(p, w->low - 1, b, &ra, &rb);
        for (uint32_t y = ra; y < rb; y++)
            e[w->rcap[y - w->ra]]++; /* racks by capacity first */
        /* Then e[tau] = sum over caps c > tau of (c - tau) x racks(c),
         * from the top: above counts the racks over tau. */
        uint32_t above = 0, sum = 0;
        for (uint32_t tau = W; tau-- > 0;) {
            const uint32_t at = e[tau];
            sum += above;
            e[tau] = sum;
            above += at;
        }
    }
    return ex;
}

/* Reads the capacities under d (node range [first, last]) into v, the
 * racks' into w->rcap; *holds false when the domains above the blocks
 * cannot hold the gang or the racks are too large to count. 0 or
 * GPUSCHED_ENOMEM. */
static int read_view(gpusched_placer *p, rw_ctx *w, uint32_t first, uint32_t last, uint32_t nbk, rw_view *v,
                     bool *holds)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_topo *t = p->t;
    const int32_t low = w->low;
    /* Above the blocks: the cluster itself when they are the top level. */
    const uint32_t ua = low < 2 ? 0 : gs_topo_node_domain(t, first, (uint32_t)(low - 2));
    const uint32_t ub = low < 2 ? 1 : gs_topo_node_domain(t, last, (uint32_t)(low - 2)) + 1;
    *holds = false;
    v->nup = ub - ua;
    /* The domains above the blocks largest first; the tables below follow
     * that order. */
    v->up = by_capacity(p, low - 2, ua, ub);
    v->boff = gs_arena_get(&p->arena, ((size_t)v->nup + 1) * sizeof *v->boff);
    v->bcap = gs_arena_get(&p->arena, (size_t)nbk * sizeof *v->bcap);
    if (!v->up || !v->boff || !v->bcap)
        return GPUSCHED_ENOMEM;
    const uint64_t up_need = r->gpus / r->unit[LV(low - 2)];
    uint64_t held = 0;
    v->z = 0;
    while (v->z < v->nup && held < up_need)
        held += v->up[v->z++].cap;
    if (held < up_need)
        return 0;
    const uint32_t nr = w->rb - w->ra;
    gs_pl_caps(p, low, w->ra, w->rb, w->rcap);
    uint32_t top = 0;
    for (uint32_t y = 0; y < nr; y++)
        top = w->rcap[y] > top ? w->rcap[y] : top;
    if (top >= RW_CAP_VALUES)
        return 0; /* racks too large to count by capacity: no witness */
    v->w = top + 1;
    v->hist = gs_arena_get(&p->arena, (size_t)v->nup * v->w * sizeof *v->hist);
    if (!v->hist)
        return GPUSCHED_ENOMEM;
    memset(v->hist, 0, (size_t)v->nup * v->w * sizeof *v->hist);
    uint32_t nb = 0;
    for (uint32_t i = 0; i < v->nup; i++) {
        uint32_t a, b;
        gs_pl_children(p, low - 2, v->up[i].idx, &a, &b);
        v->boff[i] = nb;
        gs_pl_caps(p, low - 1, a, b, v->bcap + nb);
        nb += b - a;
        const uint32_t r0 = gs_topo_node_domain(t, t->dom_start[low - 1][a], (uint32_t)low);
        const uint32_t r1 = gs_topo_node_domain(t, t->dom_start[low - 1][b] - 1, (uint32_t)low) + 1;
        for (uint32_t y = r0; y < r1; y++)
            v->hist[(size_t)i * v->w + w->rcap[y - w->ra]]++;
    }
    v->boff[v->nup] = nb;
    *holds = true;
    return 0;
}

/* The shares by rack (p->wit_share from p->wit_first) and their key, and
 * a lower bound of any placement's key under d: every choice of the
 * fewest domains above the blocks that hold the gang is counted (at most
 * RW_SUBSETS_MAX; past that, only the ones with the most capacity, and no
 * bound). An optimal placement uses that many of them, so it uses at
 * least the fewest blocks any choice needs (min_b), and on min_b blocks
 * at least the racks of a choice that needs no more blocks: the fewest
 * racks it needs counted alone, and its Lagrangian bound for min_b
 * blocks (racks_bound). A placement on more blocks has a larger key
 * whatever its racks. The plans are made on the choices that reach the
 * fewest blocks and racks counted alone. */
static int plan(gpusched_placer *p, int32_t l, uint32_t d, gs_key *key, gs_key *bound)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_topo *t = p->t;
    const int32_t low = (int32_t)p->nlevels - 1;
    const uint32_t first = l < 0 ? 0 : t->dom_start[l][d];
    const uint32_t last = l < 0 ? t->nnodes - 1 : t->dom_start[l][d + 1] - 1;
    rw_ctx w = {.l = l, .low = low};
    w.ra = gs_topo_node_domain(t, first, (uint32_t)low);
    w.rb = gs_topo_node_domain(t, last, (uint32_t)low) + 1;
    const uint32_t ba = gs_topo_node_domain(t, first, (uint32_t)(low - 1));
    const uint32_t bb = gs_topo_node_domain(t, last, (uint32_t)(low - 1)) + 1;
    const uint32_t nr = w.rb - w.ra, nbk = bb - ba;
    w.blocks = gs_arena_get(&p->arena, (size_t)nbk * sizeof *w.blocks);
    w.racks = gs_arena_get(&p->arena, (size_t)nr * sizeof *w.racks);
    w.rcap = gs_arena_get(&p->arena, (size_t)nr * sizeof *w.rcap);
    uint32_t *share = gs_arena_get(&p->arena, (size_t)nr * sizeof *share);
    uint32_t *scratch = gs_arena_get(&p->arena, (size_t)nbk * sizeof *scratch);
    if (!w.blocks || !w.racks || !w.rcap || !share || !scratch)
        return GPUSCHED_ENOMEM;
    *key = *bound = GS_KEY_INF;
    int rc = gs_pl_wit_begin(p, l, d, nr);
    if (rc)
        return rc;
    p->wit_first = w.ra;
    rw_view v;
    bool holds;
    if ((rc = read_view(p, &w, first, last, nbk, &v, &holds)) || !holds)
        return rc;
    const uint32_t z = v.z;
    if (z > RW_SUBSETS_MAX)
        return 0; /* more domains above the blocks than a choice holds: no witness */
    const bool all = subsets(v.nup, z) <= RW_SUBSETS_MAX;
    rw_choice *ch = gs_arena_get(&p->arena, (size_t)RW_SUBSETS_MAX * sizeof *ch);
    if (!ch)
        return GPUSCHED_ENOMEM;
    const uint64_t bneed = r->gpus / r->unit[LV(low - 1)], rneed = r->gpus / r->unit[LV(low)];
    uint32_t nch = 0, pos[RW_SUBSETS_MAX];
    for (uint32_t i = 0; i < z; i++)
        pos[i] = i;
    uint64_t min_b = UINT64_MAX, min_r = UINT64_MAX;
    for (;;) {
        rw_choice *c = &ch[nch++];
        memcpy(c->pos, pos, z * sizeof *pos);
        c->blocks = choice_blocks(&v, pos, z, scratch, bneed);
        c->racks = choice_racks(&v, pos, z, rneed);
        c->cap = 0;
        for (uint32_t i = 0; i < z; i++)
            c->cap += v.up[pos[i]].cap;
        min_b = c->blocks < min_b ? c->blocks : min_b;
        min_r = c->racks < min_r ? c->racks : min_r;
        /* The next z-subset of positions, in lexicographic order. */
        int32_t i = (int32_t)z - 1;
        while (i >= 0 && pos[i] == v.nup - z + (uint32_t)i)
            i--;
        if (!all || i < 0)
            break;
        pos[i]++;
        for (uint32_t j = (uint32_t)i + 1; j < z; j++)
            pos[j] = pos[j - 1] + 1;
    }
    if (min_b == UINT64_MAX || min_r == UINT64_MAX)
        return 0;
    /* Plans on the choices that reach both counts (all of them when none
     * does): the least key, ties the least capacity. */
    bool any = false;
    for (uint32_t k = 0; k < nch; k++)
        any |= ch[k].blocks == min_b && ch[k].racks == min_r;
    uint64_t best_cap = UINT64_MAX;
    for (uint32_t k = 0; k < nch; k++) {
        if (any && (ch[k].blocks != min_b || ch[k].racks != min_r))
            continue;
        gs_key kk;
        plan_on(p, &w, w.blocks, blocks_under(p, &w, &v, ch[k].pos, z, w.blocks), ch[k].racks, share, &kk);
        if (kk < *key || (kk == *key && kk != GS_KEY_INF && ch[k].cap < best_cap)) {
            *key = kk;
            best_cap = ch[k].cap;
            memcpy(p->wit_share, share, (size_t)nr * sizeof *share);
        }
    }
    if (!all)
        return 0;
    gs_key above = 0; /* the levels between d and the domains above the blocks */
    for (int32_t j = l + 1; j < low - 2; j++) {
        uint64_t fewest, least = (r->gpus + p->max_dom_gpus[LV(j)] - 1) / p->max_dom_gpus[LV(j)];
        if ((rc = gs_pl_fewest_under(p, l, d, j, &fewest)))
            return rc;
        above += (gs_key)(fewest > least ? fewest : least) * r->weight[LV(j)];
    }
    /* The domains above the blocks count unless d is the one. */
    const gs_key ups = l < low - 2 ? (gs_key)z * r->weight[LV(low - 2)] : 0;
    const gs_key head = above + ups + (gs_key)min_b * r->weight[LV(low - 1)];
    *bound = head + (gs_key)min_r * r->weight[LV(low)];
    if (*key <= *bound)
        return 0; /* the plan is exact: no tighter bound needed */
    /* A placement on more than min_b blocks has a larger key whatever its
     * racks; one on min_b blocks lies in a choice that needs no more, and
     * uses at least that choice's racks counted alone and its Lagrangian
     * bound on min_b blocks. */
    uint64_t bound_r = UINT64_MAX;
    uint32_t *ex = excess_table(p, &w, ba, bb, v.w, &rc);
    if (rc)
        return rc;
    for (uint32_t k = 0; k < nch; k++) {
        if (ch[k].blocks != min_b)
            continue;
        uint64_t rk = ch[k].racks;
        if (ex) {
            const uint32_t n = blocks_under(p, &w, &v, ch[k].pos, z, w.blocks);
            const uint64_t lg = racks_bound(ex, v.w, ba, w.blocks, n, min_b, rneed, scratch);
            rk = lg > rk ? lg : rk;
        }
        bound_r = rk < bound_r ? rk : bound_r;
    }
    *bound = head + (gs_key)bound_r * r->weight[LV(low)];
    return 0;
}

gs_key gs_pl_rack_witness(gpusched_placer *p, int32_t l, uint32_t d, gs_key *bound)
{
    *bound = 0;
    if (!rw_applies(p, l) || p->witness_off)
        return GS_KEY_INF;
    gs_arena_mark m = gs_arena_save(&p->arena);
    gs_key key, lb;
    const int rc = plan(p, l, d, &key, &lb);
    gs_arena_restore(&p->arena, m);
    *bound = rc || lb == GS_KEY_INF ? 0 : lb;
    if (rc)
        p->wit_gen = 0;
    p->wit_key = rc ? GS_KEY_INF : key;
    return p->wit_key;
}

int gs_pl_rack_witness_assign(gpusched_placer *p, int32_t l, uint32_t d, gs_key target, bool *done)
{
    *done = false;
    if (!rw_applies(p, l) || p->witness_off)
        return 0;
    gs_key bound;
    if (!gs_pl_witness_valid(p, l, d))
        gs_pl_rack_witness(p, l, d, &bound);
    if (!gs_pl_witness_valid(p, l, d) || p->wit_key > target)
        return 0;
    *done = true;
    p->rack_witnesses++;
    return gs_pl_assign_by_rack(p, l, d, p->wit_first, p->wit_share);
}

/* Domains [a, b) of level l as gs_kid records (capacity unused). */
static gs_kid *domains(gpusched_placer *p, uint32_t a, uint32_t b)
{
    gs_kid *x = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *x);
    for (uint32_t i = 0; x && i < b - a; i++)
        x[i] = (gs_kid){a + i, 0};
    return x;
}

int gs_pl_racks_bound(gpusched_placer *p, int32_t l, uint32_t d, gs_key *key)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_topo *t = p->t;
    const int32_t low = r->pref, L = (int32_t)p->nlevels;
    *key = 0;
    if (low >= L || low - 1 <= l || p->witness_off)
        return 0; /* racks are not the last counted level, or no blocks between */
    for (uint32_t i = 0; i < r->ncons; i++)
        if ((int32_t)r->cons[i].level > l && (int32_t)r->cons[i].level < low)
            return 0; /* a slice above the racks binds the shares */
    const uint32_t first = t->dom_start[l][d], last = t->dom_start[l][d + 1] - 1;
    rw_ctx w = {.l = l, .low = low};
    w.ra = gs_topo_node_domain(t, first, (uint32_t)low);
    w.rb = gs_topo_node_domain(t, last, (uint32_t)low) + 1;
    const uint32_t ba = gs_topo_node_domain(t, first, (uint32_t)(low - 1));
    const uint32_t bb = gs_topo_node_domain(t, last, (uint32_t)(low - 1)) + 1;
    uint64_t nb;
    int rc = gs_pl_fewest_under(p, l, d, low - 1, &nb);
    if (rc)
        return rc;
    const uint64_t least_b = (r->gpus + p->max_dom_gpus[LV(low - 1)] - 1) / p->max_dom_gpus[LV(low - 1)];
    nb = nb > least_b ? nb : least_b;
    gs_arena_mark m = gs_arena_save(&p->arena);
    w.rcap = gs_arena_get(&p->arena, (size_t)(w.rb - w.ra) * sizeof *w.rcap);
    gs_kid *blocks = domains(p, ba, bb);
    uint32_t *scratch = gs_arena_get(&p->arena, (size_t)(bb - ba) * sizeof *scratch);
    if (!w.rcap || !blocks || !scratch) {
        gs_arena_restore(&p->arena, m);
        return GPUSCHED_ENOMEM;
    }
    gs_pl_caps(p, low, w.ra, w.rb, w.rcap);
    uint32_t top = 0;
    for (uint32_t y = 0; y < w.rb - w.ra; y++)
        top = w.rcap[y] > top ? w.rcap[y] : top;
    const uint64_t rneed = r->gpus / r->unit[LV(low)];
    uint32_t *ex = excess_table(p, &w, ba, bb, top + 1, &rc);
    uint64_t racks = 0;
    if (ex)
        racks = racks_bound(ex, top + 1, ba, blocks, bb - ba, nb, rneed, scratch);
    gs_arena_restore(&p->arena, m);
    if (rc || !racks)
        return rc;
    gs_key k = (gs_key)nb * r->weight[LV(low - 1)] + (gs_key)racks * r->weight[LV(low)];
    for (int32_t j = l + 1; j < low - 1; j++)
        k += (gs_key)((r->gpus + p->max_dom_gpus[LV(j)] - 1) / p->max_dom_gpus[LV(j)]) * r->weight[LV(j)];
    *key = k;
    return 0;
}
