/* The search: the deepest level where one domain holds the whole gang,
 * found top-down through the aggregates; among that level's domains the
 * best locality below (branch and bound); then the units handed down to
 * nodes (assign.c). doc/placement.md has the argument. */

#include <string.h>

#include "heap.h"
#include "place-internal.h"

/* A candidate set aside: its own bound is above the search's. */
typedef struct gs_later {
    gs_key lb;
    gs_key witness;
    uint32_t seq;
    uint32_t d;
} gs_later;

typedef struct gs_cand {
    int32_t level;              /* level of the candidates */
    uint32_t demand;            /* units of that level: the whole gang */
    uint64_t demand_u0;         /* the gang in node-level units */
    bool first_wins;            /* nothing counted below: the first candidate is best */
    bool found;
    bool done;
    uint32_t best;
    uint32_t best_seq;          /* the best's rank in the order of visits */
    uint32_t seq;               /* candidates visited so far */
    gs_key best_key;
    gs_key lb_key;              /* no candidate can do better than this */
    uint64_t best_budget;       /* knapsack steps the best one's evaluation had */
    bool best_exact;            /* its key is exact: no knapsack refused for it */
    gs_later *later;            /* NULL: every candidate evaluated when visited */
    bool evaluating_later;      /* consider_later() is evaluating the ones set aside */
    uint32_t nlater;
} gs_cand;

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Counted levels below the candidates: each needs at least the gang over
 * the largest domain of that level (the topology's, or the subtree's best
 * node for the node level). */
static gs_key lower_bound(const gpusched_placer *p, const gs_cand *s, uint32_t best_node_units)
{
    const gs_pl_req *r = p->req;
    int32_t L = (int32_t)p->nlevels;
    gs_key key = 0;
    for (int32_t j = s->level + 1; j <= r->pref; j++) {
        uint64_t cnt;
        if (j == L)
            cnt = best_node_units ? ceil_div(s->demand_u0, best_node_units) : 1;
        else
            cnt = ceil_div(r->gpus, p->max_dom_gpus[LV(j)]);
        key += (gs_key)cnt * r->weight[LV(j)];
    }
    return key;
}

/* A lowest-level candidate (a rack) is usually the answer: its nodes'
 * lines, which the assignment reads, load while its capacity is checked.
 * A few lines at most: wide domains are read in order anyway. */
static void prefetch_leaf_nodes(const gpusched_placer *p, int32_t l, uint32_t d)
{
    if (l + 1 != (int32_t)p->nlevels)
        return;
    const uint32_t a = p->t->dom_start[l][d], b = p->t->dom_start[l][d + 1];
    const uint32_t per_line = 64 / sizeof *p->c->node_free;
    if (b - a > 8 * per_line)
        return;
    for (uint32_t n = a; n < b; n += per_line)
        __builtin_prefetch(&p->c->node_free[n]);
    __builtin_prefetch(&p->c->node_free[b - 1]);
}

/* What candidate d of level l's bounds and witnesses read, charged to a
 * metered search: the histogram rows of the lowest-level domains under
 * it. */
static uint64_t rows_under(const gpusched_placer *p, int32_t l, uint32_t d)
{
    if (l + 1 >= (int32_t)p->nlevels)
        return p->c->hist_width;
    const uint32_t *leaf = p->t->node_leaf;
    const uint64_t leaves = (uint64_t)leaf[p->t->dom_start[l][d + 1] - 1] - leaf[p->t->dom_start[l][d]] + 1;
    return leaves * p->c->hist_width;
}

/* The exact key of candidate d, the seq-th visited, and whether it is the
 * best so far: the least key, ties to the first visited (the tightest).
 * lbd: the candidate's own bound (0: none). */
static int evaluate(gpusched_placer *p, gs_cand *s, uint32_t d, uint32_t seq, gs_key lbd, gs_key witness)
{
    /* A key some placement has is exact when it meets a lower bound: the
     * witness of the candidate's bound first, then the greedy fill, then
     * (racks counted last) the rack witness, and only then the knapsack. */
    gs_key key = witness, k;
    gs_key enough = lbd > s->lb_key ? lbd : s->lb_key;
    int rc = 0;
    if (key > enough) {
        const uint64_t budget = p->dp_budget;
        p->dp_budget = 0;
        p->estimating = true;
        rc = gs_pl_best_key(p, s->level, d, s->demand, &k);
        p->dp_budget = budget;
        p->estimating = false;
        key = k < key ? k : key;
    }
    /* Before the searches that cost more than the greedy fill: the
     * candidate's racks bound. Above the search's lower bound, the
     * candidate cannot end the search and waits like the ones set aside
     * when visited; otherwise it may prove the greedy key exact. */
    if (!rc && key > enough && lbd <= s->lb_key) {
        gs_key lg;
        rc = gs_pl_racks_bound(p, s->level, d, &lg);
        if (!rc && lg > s->lb_key && s->later && !s->evaluating_later) {
            s->later[s->nlater++] = (gs_later){lg, witness, seq, d};
            return 0;
        }
        enough = lg > enough ? lg : enough;
    }
    if (!rc && key > enough) {
        gs_key rb;
        k = gs_pl_rack_witness(p, s->level, d, &rb);
        key = k < key ? k : key;
        enough = rb > enough ? rb : enough;
        if (s->found && (enough > s->best_key || (enough == s->best_key && seq > s->best_seq)))
            return 0; /* it cannot beat the best */
    }
    const uint64_t budget = p->dp_budget, refused = p->dp_refused;
    if (!rc && key > enough) {
        rc = gs_pl_best_key(p, s->level, d, s->demand, &k);
        key = k < key ? k : key;
    }
    if (rc)
        return rc;
    if (key < s->best_key || (key == s->best_key && seq < s->best_seq)) {
        s->found = true;
        s->best = d;
        s->best_seq = seq;
        s->best_key = key;
        s->best_budget = budget;
        s->best_exact = p->dp_refused == refused;
        s->done = key <= s->lb_key;
    }
    return 0;
}

/* A lower bound of candidate d's key from the capacities under it: at
 * each counted domain level it uses at least the fewest domains whose
 * capacities hold the gang (the largest first), and never fewer than the
 * search's static count. Each count bounds its own level, so the vector
 * bounds the key. */
static int children_bound(gpusched_placer *p, const gs_cand *s, uint32_t d, gs_key *lb)
{
    const gs_pl_req *r = p->req;
    *lb = s->lb_key;
    for (int32_t j = s->level + 1; j <= r->pref && j < (int32_t)p->nlevels; j++) {
        uint64_t used;
        int rc = gs_pl_fewest_under(p, s->level, d, j, &used);
        if (rc)
            return rc;
        const uint64_t least = ceil_div(r->gpus, p->max_dom_gpus[LV(j)]);
        if (used > least)
            *lb += (gs_key)(used - least) * r->weight[LV(j)];
    }
    return 0;
}

static int consider(gpusched_placer *p, gs_cand *s, uint32_t d)
{
    prefetch_leaf_nodes(p, s->level, d);
    if (gs_pl_cap(p, s->level, d) < s->demand)
        return 0;
    if (s->first_wins) {
        s->found = s->done = true;
        s->best = d;
        return 0;
    }
    const uint32_t seq = s->seq++;
    /* A candidate whose own bound is above the search's cannot end the
     * search: it waits, in case one that can is found (then it never
     * builds its frontiers). */
    gs_key lb = 0, witness = GS_KEY_INF, cb;
    int rc = gs_pl_spend(p, rows_under(p, s->level, d));
    if (rc)
        return rc;
    if (s->later) {
        lb = gs_pl_node_bound(p, s->level, d, &witness);
        if ((rc = children_bound(p, s, d, &cb)))
            return rc;
        lb = cb > lb ? cb : lb;
        if (lb > s->lb_key) {
            s->later[s->nlater++] = (gs_later){lb, witness, seq, d};
            return 0;
        }
    }
    return evaluate(p, s, d, seq, lb, witness);
}

/* x is evaluated after y: larger bound, then later visit. The heap's root
 * is then the candidate to evaluate next. */
static bool later_after(const gs_later *x, const gs_later *y, void *unused)
{
    (void)unused;
    if (x->lb != y->lb)
        return x->lb > y->lb;
    return x->seq > y->seq;
}

GS_HEAP_DEFINE(later_heap, gs_later, void *, later_after)

/* The candidates set aside, least bound first, each evaluated unless its
 * bound shows it cannot beat the best (or tie it from a later visit). A
 * heap, not a sort: the first few usually settle the search, and the rest
 * are never ordered. */
static int consider_later(gpusched_placer *p, gs_cand *s)
{
    gs_later *h = s->later;
    uint32_t n = s->nlater;
    s->evaluating_later = true;
    for (uint32_t i = n / 2; i-- > 0;)
        later_heap_sift(h, n, i, NULL);
    while (n) {
        const gs_later x = h[0];
        h[0] = h[--n];
        later_heap_sift(h, n, 0, NULL);
        if (s->found && x.lb > s->best_key)
            break;
        if (s->found && x.lb == s->best_key && x.seq > s->best_seq)
            continue;
        int rc = evaluate(p, s, x.d, x.seq, x.lb, x.witness);
        if (rc)
            return rc;
    }
    return 0;
}

static int visit(gpusched_placer *p, gs_cand *s, int32_t l, uint32_t ch);

static int kid_tighter(const void *x, const void *y)
{
    const gs_kid *a = x, *b = y;
    if (a->cap != b->cap)
        return a->cap < b->cap ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Whether child `ch` (level l + 1) may hold a candidate; its free GPUs. */
static bool may_hold(const gpusched_placer *p, const gs_cand *s, const uint32_t *free_gpus, int32_t l, uint32_t ch,
                     uint64_t *ub)
{
    *ub = free_gpus ? free_gpus[ch] : gs_pl_ub_gpus(p, l + 1, ch);
    if (*ub < p->req->gpus)
        return false;
    return s->level != (int32_t)p->nlevels || gs_pl_ub_node_units(p, l + 1, ch) >= s->demand;
}

/* Children that may hold a candidate, tightest first (least usable free
 * GPUs, ties: lowest index): the best fit among domains, so that large
 * free domains survive. Free GPUs are the cheapest bound (one load per
 * child); the exact capacity is checked at the candidate. A child with
 * exactly the gang's GPUs free is as tight as any can be: it is visited at
 * once, and when it settles the search the other children are never read. */
static int dfs(gpusched_placer *p, gs_cand *s, int32_t l, uint32_t d)
{
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    const uint32_t *fg = l + 1 < (int32_t)p->nlevels ? p->c->agg[l + 1].free_gpus : NULL;
    const uint64_t G = p->req->gpus;
    /* The tightest child in one pass; usually it settles the search. */
    uint32_t first = UINT32_MAX;
    uint64_t first_ub = UINT64_MAX, ub;
    if (fg && s->level != (int32_t)p->nlevels) {
        /* may_hold is then the free-GPU test alone: the hot loop of a
         * search over a wide level, a load and a compare per child. */
        for (uint32_t ch = a; ch < b; ch++) {
            uint32_t f = fg[ch];
            if (f >= G && f < first_ub) {
                first = ch;
                first_ub = f;
                if (f == G)
                    break;
            }
        }
    } else {
        for (uint32_t ch = a; ch < b; ch++)
            if (may_hold(p, s, fg, l, ch, &ub) && ub < first_ub) {
                first = ch;
                first_ub = ub;
                if (ub == G)
                    break;
            }
    }
    if (first == UINT32_MAX)
        return 0;
    int rc = visit(p, s, l, first);
    if (rc || s->done)
        return rc;
    /* The others, tightest first. */
    gs_arena_mark m = gs_arena_save(&p->arena);
    gs_kid *k = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *k);
    if (!k)
        return GPUSCHED_ENOMEM;
    uint32_t n = 0;
    for (uint32_t ch = a; ch < b; ch++)
        if (ch != first && may_hold(p, s, fg, l, ch, &ub))
            k[n++] = (gs_kid){ch, ub > UINT32_MAX ? UINT32_MAX : (uint32_t)ub};
    /* Selection while it is cheap (the search usually stops early), a sort
     * for wide domains. */
    if (n > 64)
        gs_pl_sort_kids(k, n, false);
    for (uint32_t i = 0; i < n && !rc && !s->done; i++) {
        uint32_t best = i;
        for (uint32_t j = i + 1; n <= 64 && j < n; j++)
            if (kid_tighter(&k[j], &k[best]) < 0)
                best = j;
        gs_kid tmp = k[i];
        k[i] = k[best];
        k[best] = tmp;
        rc = visit(p, s, l, k[i].idx);
    }
    gs_arena_restore(&p->arena, m);
    return rc;
}

static int visit(gpusched_placer *p, gs_cand *s, int32_t l, uint32_t ch)
{
    int32_t L = (int32_t)p->nlevels;
    if (l + 1 == s->level)
        return consider(p, s, ch);
    if (s->found && !s->first_wins &&
        lower_bound(p, s, s->level < L ? gs_pl_ub_node_units(p, l + 1, ch) : 0) >= s->best_key)
        return 0;
    return dfs(p, s, l + 1, ch);
}

/* Candidates at one level: 0 with s->found set or not. */
static int search_level(gpusched_placer *p, int32_t l, gs_cand *s)
{
    const gs_pl_req *r = p->req;
    *s = (gs_cand){
        .level = l,
        .demand = r->gpus / r->unit[LV(l)],
        .demand_u0 = r->gpus / r->u0,
        .first_wins = l >= r->pref,
        .best_key = GS_KEY_INF,
    };
    s->lb_key = lower_bound(p, s, gs_pl_ub_node_units(p, -1, 0));
    if (!s->first_wins) {
        s->later = gs_arena_get(&p->arena, (size_t)p->t->ndom[l] * sizeof *s->later);
        if (!s->later)
            return GPUSCHED_ENOMEM;
    }
    int rc = dfs(p, s, -1, 0);
    if (!rc && s->nlater && !s->done)
        rc = consider_later(p, s);
    return rc;
}

static void forget_output(gpusched_placer *p, int32_t l)
{
    p->nout = 0;
    p->ndefer = 0;
    for (int32_t j = l + 1; j < (int32_t)p->nlevels; j++)
        p->ndoms[j] = 0;
}

/* Forgets an assignment below level l (level l's count back to `mark`)
 * and the subset memo it filled, for another try. */
static void restart_below(gpusched_placer *p, int32_t l, uint32_t mark)
{
    forget_output(p, l);
    if (l >= 0)
        p->ndoms[l] = mark;
    p->sub_gen = 0;
}

/* Hands `y` units of domain d down: the greedy shares first (no
 * knapsack), kept when their key reaches `target` (the exact best key,
 * or GS_KEY_INF when unknown), else the exact assignment. The level
 * itself and those above are recorded once, before. `budget`: the
 * knapsack steps the candidate's evaluation had; the assignment gets at
 * least as many, whatever the other candidates' evaluations left, else
 * it could fall back to greedy shares that miss the key the candidate won
 * by (doc/placement.md, "Cost"). `exact`: the target is exact (no
 * knapsack was refused computing it), so that missing it is a fault. */
static int assign_checked(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_key target, uint64_t budget,
                          bool exact)
{
    if (target == GS_KEY_INF || l + 1 >= p->req->pref)
        return gs_pl_assign(p, l, d, y);
    bool done;
    int wrc = gs_pl_node_witness_assign(p, l, d, target, &done);
    if (!wrc && !done)
        wrc = gs_pl_rack_witness_assign(p, l, d, target, &done);
    if (wrc || done)
        return wrc;
    const uint64_t left = p->dp_budget;
    const uint32_t mark = l >= 0 ? p->ndoms[l] : 0;
    p->dp_budget = 0;
    p->estimating = true;
    int rc = gs_pl_assign(p, l, d, y);
    p->dp_budget = left;
    p->estimating = false;
    if (rc || gs_pl_key_below(p, l) <= target)
        return rc;
    restart_below(p, l, mark);
    if (p->dp_budget < budget)
        p->dp_budget = budget;
    rc = gs_pl_assign(p, l, d, y);
    if (rc || !exact || gs_pl_key_below(p, l) <= target)
        return rc;
    /* The assignment's knapsacks are wider than the evaluation's (they
     * keep their choices, the evaluation may count): the exact key needs
     * them whole. Pseudo-polynomial, like every knapsack, and rare. */
    restart_below(p, l, mark);
    p->dp_budget = UINT64_MAX;
    rc = gs_pl_assign(p, l, d, y);
    p->dp_budget = 0;
    if (!rc && gs_pl_key_below(p, l) > target)
        p->key_misses++;
    return rc;
}

static int assign_in(gpusched_placer *p, int32_t l, uint32_t d, uint32_t demand, gs_key target, uint64_t budget,
                     bool exact)
{
    uint32_t up[GS_MAX_LEVELS];
    uint32_t x = d;
    for (int32_t k = l; k-- > 0;)
        up[k] = x = k + 1 == (int32_t)p->nlevels ? p->t->node_leaf[x] : p->t->dom_parent[k + 1][x];
    for (int32_t k = 0; k < l && k < (int32_t)p->nlevels; k++)
        if (gs_pl_use_domain(p, (uint32_t)k, up[k]))
            return GPUSCHED_ENOMEM;
    return assign_checked(p, l, d, demand, target, budget, exact);
}

/* Fewest nodes holding the gang anywhere in the cluster: the greedy over
 * the cluster's histogram of nodes by free GPUs (only when the aggregates
 * count the request's units exactly). */
static uint64_t fewest_nodes(const gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    uint64_t need = r->gpus / r->u0, used = 0;
    for (uint32_t k = c->hist_width; k-- > r->u0 && need;) {
        uint32_t v = gs_pl_div_u0(r, k);
        uint64_t take = (need + v - 1) / v;
        if (take > c->root_hist[k])
            take = c->root_hist[k];
        used += take;
        need -= take * v < need ? take * v : need;
    }
    return used;
}

/* Whether the placement made uses, at every counted level, no more
 * domains than any placement must: the gang over the most units one
 * domain of the level can hold (a static figure), and for nodes the
 * fewest nodes anywhere. Such a placement is optimal. */
static bool meets_bounds(const gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    const int32_t L = (int32_t)p->nlevels;
    const uint64_t units = r->gpus / r->u0;
    for (int32_t j = 0; j <= r->pref && j < L; j++) {
        uint64_t most = p->max_dom_gpus[LV(j)] / r->u0;
        if (!most || p->ndoms[j] > ceil_div(units, most))
            return false;
    }
    if (r->pref < L)
        return true;
    if (r->agg_exact_nodes)
        return p->nout <= fewest_nodes(p);
    uint64_t most = r->whole_w ? 1 : p->max_dom_gpus[LV(L)] / r->u0;
    return most && p->nout <= ceil_div(units, most);
}

/* Whether the greedy fill can meet the static bounds: at a level j where
 * the bound is B_j domains, only if the B_j largest domains of the level
 * hold the gang (any placement on B_j domains lies in at most those
 * capacities). A capacity read per domain decides what the fill would
 * learn by handing out every node. The levels above the last counted
 * one with at most GS_PL_FILL_CHECK_DOMS domains are read (a fragmented
 * cluster's fill fails at the top levels: its blocks are partly used);
 * the top level always. */
#define GS_PL_FILL_CHECK_DOMS 4096
static int fill_may_meet_bounds(gpusched_placer *p, bool *may)
{
    const gs_pl_req *r = p->req;
    *may = true;
    for (int32_t j = 0; *may && j < r->pref && j < (int32_t)p->nlevels; j++) {
        const uint64_t most = p->max_dom_gpus[LV(j)] / r->u0;
        const uint32_t n = p->t->ndom[j];
        const uint64_t b = most ? ceil_div(r->gpus / r->u0, most) : 0;
        *may = most != 0;
        if (!most || b >= n || (j && n > GS_PL_FILL_CHECK_DOMS))
            continue;
        const gs_arena_mark m = gs_arena_save(&p->arena);
        uint32_t *cap = gs_arena_get(&p->arena, (size_t)n * sizeof *cap);
        if (!cap)
            return GPUSCHED_ENOMEM;
        gs_pl_caps(p, j, 0, n, cap);
        *may = gs_pl_largest_sum(cap, n, (uint32_t)b) >= r->gpus / r->unit[LV(j)];
        gs_arena_restore(&p->arena, m);
    }
    return 0;
}

/* A gang spilling over the top level: first the shares handed down
 * greedily (no knapsack: the work budget set to 0), kept when they meet
 * the lower bounds of every counted level, as on an empty or evenly used
 * cluster; otherwise the exact assignment. Only the root: below a single
 * chosen domain the choice among candidates is part of the objective. */
static int assign_root(gpusched_placer *p, uint32_t n)
{
    if (p->req->pref <= 0) /* the top level is the last counted: greedy is exact */
        return gs_pl_assign(p, -1, 0, n);
    bool may;
    int rc = fill_may_meet_bounds(p, &may);
    if (rc)
        return rc;
    gs_key greedy = GS_KEY_INF;
    if (may) {
        const uint64_t budget = p->dp_budget;
        p->dp_budget = 0;
        p->estimating = true;
        rc = gs_pl_assign(p, -1, 0, n);
        p->dp_budget = budget;
        p->estimating = false;
        if (rc || meets_bounds(p))
            return rc;
        greedy = gs_pl_key_below(p, -1);
        forget_output(p, -1);
        p->sub_gen = 0;
    }
    /* The rack witness where it applies: assigned at once when it meets
     * its own bound, else kept if the knapsack does worse. With a witness
     * in hand the knapsack only spends while it stays exact: once one is
     * refused, the budget left is not spent on the greedy shares below it
     * (past the budget that path never beat the witness on the sweep, and
     * cost the worst case nine tenths of its time). Right above the blocks
     * (a cluster of blocks and racks) the knapsack breaks ties among equal
     * keys by fit and the witness by size, so there the witness is built
     * only once a knapsack was refused, and only stands in for it. */
    const bool right_above_blocks = p->nlevels == 2;
    gs_key bound, wk = GS_KEY_INF;
    bool done;
    if (!right_above_blocks) {
        wk = gs_pl_rack_witness(p, -1, 0, &bound);
        if (wk <= bound) {
            rc = gs_pl_rack_witness_assign(p, -1, 0, bound, &done);
            if (rc || done)
                return rc;
        }
    }
    const uint64_t refused = p->dp_refused;
    p->dp_stop_refused = wk != GS_KEY_INF;
    /* Shares the witness beats are not handed out: a knapsack refused
     * with the spending stopped, whose greedy shares (the fill's key, or
     * counted without nodes) do worse than the witness, returns
     * GS_PL_EBEATEN. The same answers as handing them out and comparing
     * after. */
    if (!p->root_shortcut_off) {
        p->root_ceiling = wk; /* the witness is kept on a larger key only */
        p->root_greedy = greedy;
    }
    rc = gs_pl_assign(p, -1, 0, n);
    p->root_ceiling = p->root_greedy = GS_KEY_INF;
    p->dp_stop_refused = false;
    p->root_beaten += rc == GS_PL_EBEATEN;
    if (rc && rc != GS_PL_EBEATEN)
        return rc;
    if (right_above_blocks && p->dp_refused != refused)
        wk = gs_pl_rack_witness(p, -1, 0, &bound);
    if (!rc && wk >= gs_pl_key_below(p, -1))
        return 0;
    forget_output(p, -1);
    return gs_pl_rack_witness_assign(p, -1, 0, wk, &done);
}

/* Whether the cluster as a whole holds the gang (n units of the top):
 * too few free GPUs is refuted by one load, before the exact capacity,
 * which may read every domain. */
static bool cluster_holds(gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    return gs_pl_ub_gpus(p, -1, 0) >= r->gpus && gs_pl_cap(p, -1, 0) >= r->gpus / r->unit[LV(-1)];
}

/* budget: the knapsack steps this search may spend. */
static int search_with(gpusched_placer *p, uint64_t budget)
{
    const gs_pl_req *r = p->req;
    int32_t L = (int32_t)p->nlevels;
    int32_t start = r->pref < L ? r->pref : L;
    if (start < r->stop)
        start = r->stop;
    p->nout = 0;
    p->ndefer = 0;
    p->dp_budget = budget;
    for (uint32_t l = 0; l < p->nlevels; l++)
        p->ndoms[l] = 0;
    for (int32_t l = start; l >= r->stop; l--) {
        if (l < 0)
            return cluster_holds(p) ? assign_root(p, r->gpus / r->unit[LV(-1)]) : GPUSCHED_ENOSPC;
        if (r->gpus > p->max_dom_gpus[LV(l)])
            continue;
        gs_cand s;
        int rc = search_level(p, l, &s);
        if (rc)
            return rc;
        if (s.found)
            return assign_in(p, l, s.best, s.demand, s.first_wins ? GS_KEY_INF : s.best_key, s.best_budget,
                             s.best_exact);
    }
    return GPUSCHED_ENOSPC;
}

/* A placement exists exactly when one domain of a level the search tries
 * holds the gang, or at the top, the cluster's capacity does: the same
 * levels as search_with(), deepest first, each searched for its first
 * candidate only (no locality key), so a small gang is answered by one
 * descent and only a gang no single domain holds reads every domain's
 * capacity. The capacities are exact (doc/placement.md, "Why it is
 * complete"). */
int gs_pl_holds(gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    const int32_t L = (int32_t)p->nlevels;
    int32_t start = r->pref < L ? r->pref : L;
    if (start < r->stop)
        start = r->stop;
    for (int32_t l = start; l >= r->stop; l--) {
        if (l < 0)
            return cluster_holds(p);
        if (r->gpus > p->max_dom_gpus[LV(l)])
            continue;
        gs_cand s = {.level = l,
                     .demand = r->gpus / r->unit[LV(l)],
                     .demand_u0 = r->gpus / r->u0,
                     .first_wins = true,
                     .best_key = GS_KEY_INF};
        int rc = dfs(p, &s, -1, 0);
        if (rc || s.found)
            return rc ? rc : 1;
    }
    return 0;
}

/* A search's output (nodes, masks, domains per level), kept aside. */
typedef struct gs_kept_out {
    uint32_t nout;
    uint32_t *nodes;
    uint64_t *masks;
    uint32_t ndoms[GS_MAX_LEVELS];
    uint32_t *doms[GS_MAX_LEVELS];
} gs_kept_out;

static int keep_output(gpusched_placer *p, gs_kept_out *k)
{
    k->nout = p->nout;
    k->nodes = gs_arena_get(&p->arena, (size_t)p->nout * sizeof *k->nodes);
    k->masks = gs_arena_get(&p->arena, (size_t)p->nout * sizeof *k->masks);
    if (!k->nodes || !k->masks)
        return GPUSCHED_ENOMEM;
    memcpy(k->nodes, p->res->nodes, (size_t)p->nout * sizeof *k->nodes);
    memcpy(k->masks, p->res->masks, (size_t)p->nout * sizeof *k->masks);
    for (uint32_t l = 0; l < p->nlevels; l++) {
        k->ndoms[l] = p->ndoms[l];
        k->doms[l] = gs_arena_get(&p->arena, (size_t)p->ndoms[l] * sizeof *k->doms[l]);
        if (!k->doms[l])
            return GPUSCHED_ENOMEM;
        memcpy(k->doms[l], p->out_doms[l], (size_t)p->ndoms[l] * sizeof *k->doms[l]);
    }
    return 0;
}

/* Puts a kept output back: every array it fills held it before, and
 * arrays only grow. */
static void restore_output(gpusched_placer *p, const gs_kept_out *k)
{
    p->nout = k->nout;
    memcpy(p->res->nodes, k->nodes, (size_t)k->nout * sizeof *k->nodes);
    memcpy(p->res->masks, k->masks, (size_t)k->nout * sizeof *k->masks);
    for (uint32_t l = 0; l < p->nlevels; l++) {
        p->ndoms[l] = k->ndoms[l];
        memcpy(p->out_doms[l], k->doms[l], (size_t)k->ndoms[l] * sizeof *k->doms[l]);
    }
}

/* After the search counted down to the lowest domain level, whose answer
 * is in the output: the search counted down to nodes, kept when it uses
 * fewer nodes. Only nodes are at stake (the first answer's vector down to
 * the lowest domain level is optimal): its knapsacks get a budget in
 * proportion to the gang, and its whole work one in proportion to the
 * first answer (what it reads besides the knapsacks is not bounded by
 * their budget, and on large fragmented clusters that is where the time
 * goes). Past it the first answer stands. */
static int search_down_to_nodes(gpusched_placer *p, uint64_t least)
{
    const gs_pl_req *r = p->req;
    const uint64_t work = p->node_work_max ? p->node_work_max : p->nout / GS_PL_NODES_PER_WORK + GS_PL_NODE_WORK_MIN;
    /* An answer kept has the first one's domains, so at least `least`
     * nodes, and handing a node out costs a unit of work at least (its
     * rack's nodes, or one): within less work no answer can be kept. */
    if (work < least && !p->node_skip_off) {
        p->node_work_skipped++;
        p->node_work_spent++;
        p->dp_refused++; /* the first answer's nodes are not proven the fewest */
        return 0;
    }
    gs_kept_out first;
    int rc = keep_output(p, &first);
    if (rc)
        return rc;
    const gs_key first_key = gs_pl_key_below(p, -1);
    const uint64_t budget = GS_PL_NODE_STEPS * (r->gpus / r->u0) + GS_PL_NODE_STEPS_MIN;
    p->sub_gen = 0; /* the subset memo was the coarse request's */
    p->work_left = work;
    rc = search_with(p, budget < p->dp_budget_max ? budget : p->dp_budget_max);
    p->work_left = UINT64_MAX;
    if (rc == GS_PL_EWORK) {
        p->node_work_spent++;
        p->dp_refused++;
        restore_output(p, &first);
        return 0;
    }
    if (rc)
        return rc;
    if (first_key < gs_pl_key_below(p, -1))
        restore_output(p, &first);
    return 0;
}

/* Whether the cluster's usable nodes give different numbers of units:
 * where they all give the same, the racks' shares are whole nodes but
 * for one remainder, so the first answer's nodes are nearly always kept
 * and deferring them would only count them twice. */
static bool mixed_units(const gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    uint32_t seen = 0;
    for (uint32_t k = r->u0; k < c->hist_width; k++) {
        const uint32_t v = gs_pl_hist_units(r, k);
        if (!v || !c->root_hist[k])
            continue;
        if (seen && seen != v)
            return true;
        seen = v;
    }
    return false;
}

/* The same racks' fewest nodes when they are fewer than the deferred
 * answer's, else that answer handed out. */
static int same_racks_or_first(gpusched_placer *p, gs_node_plan *same)
{
    return same->pending >= p->nout ? gs_pl_defer_flush(p) : gs_pl_take_racks_plan(p, same);
}

/* After the search counted down to racks, whose nodes were deferred. */
static int nodes_after_racks(gpusched_placer *p, uint64_t refused)
{
    if (p->defer_unknown) {
        int rc = gs_pl_defer_flush(p);
        if (rc)
            return rc;
    }
    const uint64_t anywhere = fewest_nodes(p);
    if (p->nout <= anywhere)
        return gs_pl_defer_flush(p);
    /* The same racks, the fewest of their nodes: optimal when that meets
     * the fewest nodes anywhere, or, when the search was exact (no
     * knapsack refused: its domains are the fewest any placement needs),
     * the fewest nodes any as many domains hold. Planned first, taken
     * only when no fuller racks do better (each taking reads every node
     * it hands out). Past the budget already, the search down to nodes
     * would be larger still: the same racks then. */
    gs_node_plan same;
    const uint64_t same_racks = gs_pl_racks_plan(p, &same);
    if (same_racks <= anywhere || p->dp_refused != refused)
        return same_racks_or_first(p, &same);
    const uint64_t bound = gs_pl_fewest_nodes_in(p, p->ndoms);
    if (same_racks <= bound)
        return same_racks_or_first(p, &same);
    /* Racks with more whole nodes in the same blocks: optimal if they
     * meet the bound. */
    bool done;
    int rc = gs_pl_fuller_racks(p, bound, &done);
    if (rc || done)
        return rc;
    if ((rc = same_racks_or_first(p, &same)))
        return rc;
    return search_down_to_nodes(p, bound > anywhere ? bound : anywhere);
}

/* Locality counted down to nodes: the search counted down to the lowest
 * domain level first, whose answer is optimal when it uses no more nodes
 * than the fewest nodes anywhere (its locality down to the lowest domain
 * level is optimal, and no placement uses fewer nodes). Otherwise the
 * full search, whose answer is kept unless the first one's key is
 * smaller: where the full search's knapsack ran out of budget it may not
 * even reach the first one's racks. doc/placement.md, "Counted levels".
 * The first search's nodes are counted, not handed out, until known to
 * be kept (p->defer): the same racks' fewest nodes usually replace them. */
int gs_pl_search(gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    gs_pl_req coarse;
    if (!gs_pl_req_coarse(p, r, &coarse))
        return search_with(p, p->dp_budget_max);
    p->req = &coarse;
    const uint64_t refused = p->dp_refused;
    p->defer = !p->defer_off && mixed_units(p);
    p->defer_unknown = false;
    int rc = search_with(p, p->dp_budget_max);
    p->defer = false;
    p->req = r;
    if (!rc)
        rc = nodes_after_racks(p, refused);
    p->ndefer = 0;
    return rc;
}
