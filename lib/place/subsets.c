/* A domain whose grandchildren are the last counted level: a placement in
 * it is a set of children (the fewest: m) and, inside them, the fewest
 * grandchildren, which for a fixed set is the greedy prefix of its largest
 * grandchildren (they pool freely when the children's level has no slice).
 * So trying every m-subset of the children is exact, and far cheaper than
 * the knapsack when the children are few (the zones of a 200k-GPU gang).
 * Among equal keys the subset with the least capacity wins (best fit).
 *
 * The enumeration stops at the first subset that meets two lower bounds:
 * the fewest grandchildren holding the demand anywhere in the domain, and
 * the least capacity m children can have. On an empty or evenly used
 * domain the first subset meets both. More than SUBSETS_MAX subsets are
 * all tried only when they cost less than the knapsack would and fit in
 * the placement's work budget (which they then use); otherwise the first
 * SUBSETS_TRY are, and without that proof the domain goes to the knapsack
 * (doc/placement.md, "Cost"). When every subset is tried and the
 * grandchildren's capacities are small numbers, the enumeration is a
 * branch and bound in the same order (bb_search), which reaches the
 * subsets the plain loop would keep and skips the rest. */

#include "place-internal.h"

#define SUBSETS_MAX 4096
/* More subsets than SUBSETS_MAX: the first ones are tried, in case one
 * meets the bounds. */
#define SUBSETS_TRY 64

typedef struct gs_sub_kid {
    uint32_t idx;       /* child index */
    uint32_t cap;
    uint32_t first, n;  /* its runs of grandchildren's capacities, largest first */
} gs_sub_kid;

typedef struct gs_run {
    uint32_t value;     /* a grandchild's capacity */
    uint32_t count;     /* grandchildren of the kid with that capacity */
} gs_run;

/* n choose k, or limit + 1 when larger. */
static uint64_t choose(uint32_t n, uint32_t k, uint64_t limit)
{
    uint64_t c = 1;
    for (uint32_t i = 0; i < k; i++) {
        c = c * (n - i) / (i + 1);
        if (c > limit)
            return limit + 1;
    }
    return c;
}

/* Lists this long are counted in banks (gs_pl_count_values): most of a
 * block's racks often have the same capacity. */
#define GS_RUNS_BANKED 32

/* The nonzero values of g[0, n) as runs of equal values, largest first,
 * into out: by counting when they are small numbers (capacities of racks
 * or nodes; counts holds GS_COUNTING_MAX zeros and is left so; in banks
 * from banked_from values on), else by a sort of g. The number of runs. */
static uint32_t runs_desc(uint32_t *g, uint32_t n, uint32_t *counts, gs_run *out, uint32_t banked_from)
{
    uint32_t top = 0;
    for (uint32_t i = 0; i < n; i++)
        top = g[i] > top ? g[i] : top;
    uint32_t runs = 0;
    if (top < GS_COUNTING_MAX) {
        if (n >= banked_from) { /* many equal values: counted in banks */
            uint32_t banks[4 * GS_COUNTING_MAX];
            gs_pl_count_values(g, 1, n, top, counts, banks);
        } else {
            for (uint32_t i = 0; i < n; i++)
                counts[g[i]]++;
        }
        for (uint32_t v = top; v >= 1; v--)
            if (counts[v]) {
                out[runs++] = (gs_run){v, counts[v]};
                counts[v] = 0;
            }
        counts[0] = 0;
        return runs;
    }
    uint32_t cnt = 0;
    for (uint32_t i = 0; i < n; i++)
        if (g[i])
            g[cnt++] = g[i];
    gs_pl_sort_u32_desc(g, cnt);
    for (uint32_t i = 0; i < cnt; i++) {
        if (runs && g[i] == out[runs - 1].value)
            out[runs - 1].count++;
        else
            out[runs++] = (gs_run){g[i], 1};
    }
    return runs;
}

/* The kids with capacity and their grandchildren's capacities, largest
 * first and run-length coded: an empty or evenly used domain has one run
 * per kid, so a merge costs the runs, not the grandchildren. */
static int gather(gpusched_placer *p, int32_t l, uint32_t d, gs_sub_kid **out, gs_run **runs, uint32_t *n,
                  uint32_t *nruns, uint64_t *grand)
{
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    gs_sub_kid *k = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *k);
    uint32_t ga, gb, gfirst;
    gs_pl_children(p, l + 1, a, &gfirst, &gb);
    gs_pl_children(p, l + 1, b - 1, &ga, &gb);
    uint32_t *g = gs_arena_get(&p->arena, (size_t)(gb - gfirst) * sizeof *g);
    gs_run *rn = gs_arena_get(&p->arena, (size_t)(gb - gfirst) * sizeof *rn);
    uint32_t *counts = gs_arena_get(&p->arena, GS_COUNTING_MAX * sizeof *counts);
    if (!k || !g || !rn || !counts)
        return GPUSCHED_ENOMEM;
    for (uint32_t v = 0; v < GS_COUNTING_MAX; v++)
        counts[v] = 0;
    uint32_t m = 0, o = 0;
    *grand = 0;
    for (uint32_t ch = a; ch < b; ch++) {
        uint32_t cap = gs_pl_cap(p, l + 1, ch);
        if (!cap)
            continue;
        gs_pl_children(p, l + 1, ch, &ga, &gb);
        /* Each kid's grandchildren in g (room for all of the domain's),
         * run-length coded largest first. */
        gs_pl_caps(p, l + 2, ga, gb, g);
        k[m] = (gs_sub_kid){ch, cap, o, 0};
        const uint32_t kid_runs = runs_desc(g, gb - ga, counts, rn + o, p->runs_unbanked ? UINT32_MAX : GS_RUNS_BANKED);
        p->runs_banked += gb - ga >= GS_RUNS_BANKED && !p->runs_unbanked;
        for (uint32_t i = 0; i < kid_runs; i++)
            *grand += rn[o + i].count;
        k[m].n = kid_runs;
        o += kid_runs;
        m++;
    }
    *out = k;
    *runs = rn;
    *n = m;
    *nruns = o;
    return 0;
}

/* The fewest children: the greedy count over the children's capacities. */
static uint32_t fewest(const gs_sub_kid *k, uint32_t n, uint64_t Y, uint32_t *scratch)
{
    for (uint32_t i = 0; i < n; i++)
        scratch[i] = k[i].cap;
    gs_pl_sort_u32_desc(scratch, n);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((sum += scratch[i]) >= Y)
            return i + 1;
    return 0;
}

/* Least capacity an m-subset holding Y can have: Y, or the m smallest
 * children (scratch holds the capacities largest first). */
static uint64_t least_cap(const uint32_t *sorted_desc, uint32_t n, uint32_t m, uint64_t Y)
{
    uint64_t sum = 0;
    for (uint32_t i = n - m; i < n; i++)
        sum += sorted_desc[i];
    return sum > Y ? sum : Y;
}

/* Fewest grandchildren holding Y anywhere in the domain: no subset does
 * better. The largest first: by counting their capacities when those are
 * small numbers (racks or nodes), else by a sort. */
static uint32_t fewest_grandchildren(gpusched_placer *p, const gs_run *rn, uint32_t nruns, uint64_t Y, bool *ok)
{
    uint32_t top = 0;
    for (uint32_t i = 0; i < nruns; i++)
        top = rn[i].value > top ? rn[i].value : top;
    if (top < GS_COUNTING_MAX) {
        uint64_t *count = gs_arena_get(&p->arena, ((size_t)top + 1) * sizeof *count);
        *ok = count != NULL;
        if (!count)
            return 0;
        for (uint32_t v = 0; v <= top; v++)
            count[v] = 0;
        for (uint32_t i = 0; i < nruns; i++)
            count[rn[i].value] += rn[i].count;
        uint64_t sum = 0;
        uint32_t used = 0;
        for (uint32_t v = top; v >= 1 && sum < Y; v--) {
            uint64_t take = (Y - sum + v - 1) / v;
            if (take > count[v])
                take = count[v];
            sum += take * v;
            used += (uint32_t)take;
        }
        return used;
    }
    gs_kid *v = gs_arena_get(&p->arena, (size_t)nruns * sizeof *v);
    *ok = v != NULL;
    if (!v)
        return 0;
    for (uint32_t i = 0; i < nruns; i++)
        v[i] = (gs_kid){rn[i].count, rn[i].value};
    gs_pl_sort_kids(v, nruns, true);
    uint64_t sum = 0;
    uint32_t used = 0;
    for (uint32_t i = 0; i < nruns && sum < Y; i++) {
        uint64_t take = (Y - sum + v[i].cap - 1) / v[i].cap;
        if (take > v[i].idx)
            take = v[i].idx;
        sum += take * v[i].cap;
        used += (uint32_t)take;
    }
    return used;
}

/* Greedy over the merged grandchildren of the subset: how many it takes
 * and, if `amount` is given, what each child holds. Equal values are
 * taken from the first child of the subset first, a run at a time. */
static uint32_t merge(const gs_sub_kid *k, const gs_run *rn, const uint32_t *set, uint32_t m, uint64_t Y,
                      uint32_t *heads, uint32_t *left, uint32_t *amount)
{
    for (uint32_t i = 0; i < m; i++) {
        heads[i] = 0;
        left[i] = k[set[i]].n ? rn[k[set[i]].first].count : 0;
    }
    uint64_t sum = 0;
    uint32_t used = 0, last = 0;
    while (sum < Y) {
        uint32_t best = UINT32_MAX, bc = 0;
        for (uint32_t i = 0; i < m; i++) {
            const gs_sub_kid *x = &k[set[i]];
            if (heads[i] < x->n && rn[x->first + heads[i]].value > bc) {
                bc = rn[x->first + heads[i]].value;
                best = i;
            }
        }
        if (best == UINT32_MAX)
            return UINT32_MAX;
        uint64_t take = (Y - sum + bc - 1) / bc;
        if (take > left[best])
            take = left[best];
        left[best] -= (uint32_t)take;
        if (!left[best] && ++heads[best] < k[set[best]].n)
            left[best] = rn[k[set[best]].first + heads[best]].count;
        sum += take * bc;
        used += (uint32_t)take;
        last = best;
        if (amount)
            amount[best] += (uint32_t)(take * bc);
    }
    if (amount)
        amount[last] -= (uint32_t)(sum - Y);
    return used;
}

/* For each kid and each capacity v, the count and the sum of its
 * grandchildren of capacity v or more (levels 1 .. top + 1, the last 0):
 * the greedy count of a subset is then a search over v instead of a merge
 * of its runs (capacities of racks or nodes are small numbers). */
#define GS_SUB_TABLE_MAX 256u
/* Cells of one table (kids x levels, or starts x counts): past them the
 * plain loop does without (1 MB of the placer's scratch). */
#define GS_SUB_CELLS_MAX 65536u
typedef struct gs_sub_table {
    uint32_t top;           /* the largest capacity */
    uint32_t *count;        /* kid i, level v: count[i * (top + 2) + v] */
    uint64_t *sum;
} gs_sub_table;

static bool table_build(gpusched_placer *p, const gs_sub_kid *k, const gs_run *rn, uint32_t n, uint32_t nruns,
                        gs_sub_table *t)
{
    uint32_t top = 0;
    for (uint32_t i = 0; i < nruns; i++)
        top = rn[i].value > top ? rn[i].value : top;
    const size_t w = (size_t)top + 2;
    if (top >= GS_SUB_TABLE_MAX || !top || (uint64_t)n * w > GS_SUB_CELLS_MAX)
        return false;
    t->top = top;
    t->count = gs_arena_get(&p->arena, n * w * sizeof *t->count);
    t->sum = gs_arena_get(&p->arena, n * w * sizeof *t->sum);
    if (!t->count || !t->sum)
        return false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t *c = t->count + i * w;
        uint64_t *sm = t->sum + i * w;
        uint32_t cc = 0;
        uint64_t ss = 0;
        /* Runs are largest first: walk the levels down beside them. */
        uint32_t r = 0;
        c[top + 1] = 0;
        sm[top + 1] = 0;
        for (uint32_t v = top; v >= 1; v--) {
            while (r < k[i].n && rn[k[i].first + r].value >= v) {
                cc += rn[k[i].first + r].count;
                ss += (uint64_t)rn[k[i].first + r].count * rn[k[i].first + r].value;
                r++;
            }
            c[v] = cc;
            sm[v] = ss;
        }
    }
    return true;
}

/* The last best subset found (a search's key, then its assignment, ask
 * for the same domain and amount): the children it chose. */
static bool memo_get(const gpusched_placer *p, int32_t l, uint32_t d, uint32_t y)
{
    return p->sub_gen == p->gen && p->sub_level == l && p->sub_dom == d && p->sub_y == y;
}

static int memo_put(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_key key, const gs_sub_kid *k,
                    const uint32_t *best, uint32_t m)
{
    if (m > p->sub_cap) {
        uint32_t *v = gs_realloc_array(&p->alloc, p->sub_best, m, sizeof *v);
        if (!v)
            return GPUSCHED_ENOMEM;
        p->sub_best = v;
        p->sub_cap = m;
    }
    for (uint32_t i = 0; i < m; i++)
        p->sub_best[i] = k[best[i]].idx;
    p->sub_gen = p->gen;
    p->sub_level = l;
    p->sub_dom = d;
    p->sub_y = y;
    p->sub_key = key;
    p->sub_m = m;
    return 0;
}

/* Every m-subset in lexicographic order, the best kept (ties: least
 * capacity, then the first); it stops at a subset that meets both lower
 * bounds, which no later one can beat. Unless `all`, it gives up after
 * SUBSETS_TRY subsets without that proof (*given_up). */
static void enumerate(const gpusched_placer *p, int32_t l, const gs_sub_kid *k, const gs_run *rn, uint32_t n,
                      uint32_t m, uint64_t Y, gs_key key_lb, uint64_t cap_lb, bool all, uint32_t *scratch,
                      gs_key *key, bool *given_up)
{
    const gs_pl_req *r = p->req;
    uint32_t *set = scratch, *heads = scratch + n, *best = scratch + 2 * n, *left = scratch + 3 * n;
    uint64_t best_cap = UINT64_MAX;
    uint32_t tried = 0;
    *given_up = false;
    for (uint32_t i = 0; i < m; i++)
        set[i] = i;
    for (;;) {
        uint64_t cap = 0;
        for (uint32_t i = 0; i < m; i++)
            cap += k[set[i]].cap;
        if (cap >= Y) {
            uint32_t used = merge(k, rn, set, m, Y, heads, left, NULL);
            gs_key kk = (gs_key)m * r->weight[LV(l + 1)] + (gs_key)used * r->weight[LV(l + 2)];
            if (kk < *key || (kk == *key && cap < best_cap)) {
                *key = kk;
                best_cap = cap;
                for (uint32_t i = 0; i < m; i++)
                    best[i] = set[i];
                if (kk <= key_lb && cap <= cap_lb)
                    return;
            }
        }
        if (++tried == SUBSETS_TRY && !all) {
            *given_up = true;
            return;
        }
        /* Next m-combination in lexicographic order. */
        int32_t i = (int32_t)m - 1;
        while (i >= 0 && set[i] == n - m + (uint32_t)i)
            i--;
        if (i < 0)
            return;
        set[i]++;
        for (uint32_t j = (uint32_t)i + 1; j < m; j++)
            set[j] = set[j - 1] + 1;
    }
}

/* The enumeration of every subset as a depth-first search in the same
 * lexicographic order, where a branch (a prefix of children, the rest
 * from those after it) is skipped when no subset in it can beat the best
 * one so far by the same order: too little capacity even with the largest
 * children left, or at least as many grandchildren as the best with all
 * the children left (more children never need more of them) and at least
 * its capacity with the smallest. The subsets it reaches are the ones the
 * plain enumeration would keep, so the best is the same. */
typedef struct gs_sub_bb {
    const gs_sub_kid *k;
    const gs_sub_table *t;
    uint32_t n, m;
    uint64_t Y;
    uint64_t *psum;         /* the prefix's sums per level (top + 2) */
    uint32_t *pcnt;
    const uint64_t *ssum;   /* start s, level v: ssum[s * (top + 2) + v], the children from s on */
    const uint32_t *scnt;
    const uint64_t *most, *least;   /* start s, count c: most[s * (m + 1) + c] */
    uint32_t *set, *best;
    uint32_t best_used;
    uint64_t best_cap;
    uint32_t used_lb;       /* the global bounds: a subset meeting both ends the search */
    uint64_t cap_lb;
    bool found, done;
} gs_sub_bb;

/* The greedy count of grandchildren whose counts and sums per level are
 * those of two tables added (the prefix's and a row or a suffix's),
 * UINT32_MAX when they do not reach Y. */
static uint32_t count_of_two(const uint64_t *s1, const uint32_t *c1, const uint64_t *s2, const uint32_t *c2,
                             uint32_t top, uint64_t Y)
{
    if (s1[1] + s2[1] < Y)
        return UINT32_MAX;
    uint32_t lo = 1, hi = top;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (s1[mid] + s2[mid] >= Y)
            lo = mid;
        else
            hi = mid - 1;
    }
    const uint64_t above = s1[lo + 1] + s2[lo + 1];
    return c1[lo + 1] + c2[lo + 1] + (uint32_t)((Y - above + lo - 1) / lo);
}

/* The greedy count of the prefix with the children from s on. */
static uint32_t bb_used(const gs_sub_bb *b, uint32_t s)
{
    const size_t w = (size_t)b->t->top + 2;
    return count_of_two(b->psum, b->pcnt, b->ssum + s * w, b->scnt + s * w, b->t->top, b->Y);
}

static void bb_add(gs_sub_bb *b, uint32_t c, int sign)
{
    const size_t w = (size_t)b->t->top + 2;
    const uint64_t *sm = b->t->sum + c * w;
    const uint32_t *ct = b->t->count + c * w;
    uint64_t *restrict ps = b->psum;
    uint32_t *restrict pc = b->pcnt;
    /* Two plain loops, which the compiler vectorizes. */
    if (sign > 0) {
        for (size_t v = 0; v < w; v++) {
            ps[v] += sm[v];
            pc[v] += ct[v];
        }
    } else {
        for (size_t v = 0; v < w; v++) {
            ps[v] -= sm[v];
            pc[v] -= ct[v];
        }
    }
}

/* The last child of a subset: each candidate's count from the prefix's
 * sums and its own row, nothing added or taken back. */
static void bb_last(gs_sub_bb *b, uint32_t i, uint32_t s, uint64_t cap)
{
    const size_t w = (size_t)b->t->top + 2;
    for (uint32_t c = s; c < b->n && !b->done; c++) {
        const uint64_t with = cap + b->k[c].cap;
        /* Once the best meets the grandchildren's bound, only less
         * capacity can beat it: no count needed otherwise. */
        if (with < b->Y || (b->found && b->best_used <= b->used_lb && with >= b->best_cap))
            continue;
        const uint32_t used = count_of_two(b->psum, b->pcnt, b->t->sum + c * w, b->t->count + c * w, b->t->top, b->Y);
        if (used == UINT32_MAX)
            continue;
        if (!b->found || used < b->best_used || (used == b->best_used && with < b->best_cap)) {
            b->found = true;
            b->best_used = used;
            b->best_cap = with;
            b->set[i] = c;
            for (uint32_t j = 0; j < b->m; j++)
                b->best[j] = b->set[j];
            b->done = used <= b->used_lb && with <= b->cap_lb;
        }
    }
}

static void bb_search(gs_sub_bb *b, uint32_t i, uint32_t s, uint64_t cap)
{
    const uint32_t rest = b->m - i;
    if (rest == 1) {
        bb_last(b, i, s, cap);
        return;
    }
    const size_t cw = (size_t)b->m + 1;
    for (uint32_t c = s; c + rest <= b->n && !b->done; c++) {
        const uint64_t with = cap + b->k[c].cap;
        if (with + b->most[(c + 1) * cw + rest - 1] < b->Y)
            continue;
        bb_add(b, c, 1);
        bool skip = false;
        if (b->found) {
            const uint32_t lb = bb_used(b, c + 1);
            skip = lb > b->best_used || (lb == b->best_used && with + b->least[(c + 1) * cw + rest - 1] >= b->best_cap);
        }
        if (!skip) {
            b->set[i] = c;
            bb_search(b, i + 1, c + 1, with);
        }
        bb_add(b, c, -1);
    }
}

/* For each start s and count c, the sum of the c largest and of the c
 * smallest capacities among the children from s on (UINT64_MAX / 2 and
 * the like when fewer than c are left: such a branch is never entered). */
static bool bb_prepare(gpusched_placer *p, gs_sub_bb *b)
{
    const uint32_t n = b->n, m = b->m;
    const size_t w = (size_t)b->t->top + 2, cw = (size_t)m + 1;
    if ((uint64_t)(n + 1) * w > GS_SUB_CELLS_MAX || (uint64_t)(n + 1) * cw > GS_SUB_CELLS_MAX)
        return false;
    uint32_t *sorted = gs_arena_get(&p->arena, (size_t)n * sizeof *sorted);
    uint64_t *ssum = gs_arena_get(&p->arena, (n + 1) * w * sizeof *ssum);
    uint32_t *scnt = gs_arena_get(&p->arena, (n + 1) * w * sizeof *scnt);
    uint64_t *most = gs_arena_get(&p->arena, (n + 1) * cw * sizeof *most);
    uint64_t *least = gs_arena_get(&p->arena, (n + 1) * cw * sizeof *least);
    b->psum = gs_arena_get(&p->arena, w * sizeof *b->psum);
    b->pcnt = gs_arena_get(&p->arena, w * sizeof *b->pcnt);
    if (!sorted || !ssum || !scnt || !most || !least || !b->psum || !b->pcnt)
        return false;
    for (size_t v = 0; v < w; v++) {
        ssum[n * w + v] = 0;
        scnt[n * w + v] = 0;
        b->psum[v] = 0;
        b->pcnt[v] = 0;
    }
    for (uint32_t s = n; s-- > 0;)
        for (size_t v = 0; v < w; v++) {
            ssum[s * w + v] = ssum[(s + 1) * w + v] + b->t->sum[s * w + v];
            scnt[s * w + v] = scnt[(s + 1) * w + v] + b->t->count[s * w + v];
        }
    /* Suffixes of the capacities, largest first, one insertion each. */
    uint32_t len = 0;
    for (uint32_t s = n + 1; s-- > 0;) {
        if (s < n) {
            uint32_t x = b->k[s].cap, j = len++;
            for (; j > 0 && sorted[j - 1] < x; j--)
                sorted[j] = sorted[j - 1];
            sorted[j] = x;
        }
        uint64_t hi = 0, lo = 0;
        most[s * cw] = least[s * cw] = 0;
        for (uint32_t c = 1; c <= m; c++) {
            if (c <= len) {
                hi += sorted[c - 1];
                lo += sorted[len - c];
            }
            most[s * cw + c] = c <= len ? hi : 0;
            least[s * cw + c] = c <= len ? lo : UINT64_MAX / 2;
        }
    }
    b->ssum = ssum;
    b->scnt = scnt;
    b->most = most;
    b->least = least;
    return true;
}

int gs_pl_subsets(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_key *key, uint32_t *amount,
                  bool *applicable)
{
    const gs_pl_req *r = p->req;
    *applicable = false;
    if (l + 2 != r->pref || l + 1 >= (int32_t)p->nlevels || r->ratio[LV(l + 1)] != 1 || p->knapsack == 2)
        return 0;
    gs_sub_kid *k;
    gs_run *rn;
    uint32_t n, nruns;
    uint64_t grand;
    int rc = gather(p, l, d, &k, &rn, &n, &nruns, &grand);
    if (rc || (rc = gs_pl_spend(p, (uint64_t)n + nruns)))
        return rc;
    uint64_t Y = (uint64_t)y * r->ratio[LV(l)];
    uint32_t *scratch = gs_arena_get(&p->arena, (size_t)(4 * n + 1) * sizeof *scratch);
    if (!scratch)
        return GPUSCHED_ENOMEM;
    uint32_t *best = scratch + 2 * n;
    uint32_t m;
    *key = GS_KEY_INF;
    if (memo_get(p, l, d, y)) {
        *applicable = true;
        *key = p->sub_key;
        m = p->sub_m;
        for (uint32_t i = 0, j = 0; i < m; i++) {
            while (k[j].idx != p->sub_best[i])
                j++;
            best[i] = j;
        }
    } else {
        m = fewest(k, n, Y, scratch);
        if (!m) {
            *applicable = true;
            return 0;
        }
        uint64_t cap_lb = least_cap(scratch, n, m, Y);
        bool ok, given_up;
        uint32_t g_lb = fewest_grandchildren(p, rn, nruns, Y, &ok);
        if (!ok)
            return GPUSCHED_ENOMEM;
        gs_key key_lb = (gs_key)m * r->weight[LV(l + 1)] + (gs_key)g_lb * r->weight[LV(l + 2)];
        /* Every subset when there are few, or when they cost less than
         * the knapsack would (about Y steps per grandchild) and fit in
         * the placement's work budget. */
        const uint64_t per = (uint64_t)m * (nruns / n + 2);
        uint64_t dp_work = (Y + 1) * grand, allowed = dp_work < p->dp_budget ? dp_work : p->dp_budget;
        uint64_t limit = allowed / per > SUBSETS_MAX ? allowed / per : SUBSETS_MAX;
        uint64_t subsets = choose(n, m, limit);
        bool all = subsets <= limit;
        if (all && subsets > SUBSETS_MAX)
            p->dp_budget -= subsets * per;
        /* The first SUBSETS_TRY subsets in order first: on an empty or
         * evenly used domain the first meets the bounds. Past them, every
         * subset is tried again from the start, by the branch and bound
         * where it applies. */
        given_up = true;
        if ((rc = gs_pl_spend(p, (subsets < SUBSETS_TRY ? subsets : SUBSETS_TRY) * per)))
            return rc;
        if (p->subsets_mode != 2 || !all)
            enumerate(p, l, k, rn, n, m, Y, key_lb, cap_lb, false, scratch, key, &given_up);
        if (given_up && all && (rc = gs_pl_spend(p, subsets * per)))
            return rc;
        if (given_up && all) {
            *key = GS_KEY_INF;
            gs_sub_table table;
            gs_sub_bb bb = {k, &table, n, m, Y, NULL, NULL, NULL, NULL, NULL, NULL, scratch, best, 0, 0, g_lb, cap_lb,
                            false, false};
            if (p->subsets_mode != 1 && table_build(p, k, rn, n, nruns, &table) && bb_prepare(p, &bb)) {
                p->subsets_bb++;
                bb_search(&bb, 0, 0, 0);
                given_up = false;
                if (bb.found)
                    *key = (gs_key)m * r->weight[LV(l + 1)] + (gs_key)bb.best_used * r->weight[LV(l + 2)];
            } else {
                enumerate(p, l, k, rn, n, m, Y, key_lb, cap_lb, true, scratch, key, &given_up);
            }
        }
        if (given_up) {
            *key = GS_KEY_INF;
            return 0;
        }
        *applicable = true;
        if (*key != GS_KEY_INF && (rc = memo_put(p, l, d, y, *key, k, best, m)))
            return rc;
    }
    if (amount && *key != GS_KEY_INF) {
        uint32_t a, b;
        gs_pl_children(p, l, d, &a, &b);
        uint32_t *share = gs_arena_get(&p->arena, (size_t)m * sizeof *share);
        if (!share)
            return GPUSCHED_ENOMEM;
        for (uint32_t i = 0; i < m; i++)
            share[i] = 0;
        merge(k, rn, best, m, Y, scratch + n, scratch + 3 * n, share);
        for (uint32_t i = 0; i < m; i++)
            amount[k[best[i]].idx - a] = share[i];
    }
    return 0;
}
