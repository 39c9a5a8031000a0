/* Frontiers: for a domain and each locality key, the most units the domain
 * can hold at that key or better. A domain's frontier is the min-plus
 * combination of its children's frontiers (a knapsack over the units held),
 * which is what makes the search exact (doc/placement.md, "Why it is
 * complete and optimal"). */
#include <string.h>

#include "place-internal.h"

/* A knapsack the budget does not cover: counted (exactness), and with
 * dp_stop_refused the spending ends there (search.c assign_root). */
static void refused(gpusched_placer *p)
{
    p->dp_refused += !p->estimating;
    if (p->dp_stop_refused)
        p->dp_budget = 0;
}

static int front_alloc(gpusched_placer *p, gs_front *f, uint32_t n)
{
    f->n = 0;
    f->key = gs_arena_get(&p->arena, (size_t)n * sizeof *f->key);
    f->units = gs_arena_get(&p->arena, (size_t)n * sizeof *f->units);
    return f->key && f->units ? 0 : GPUSCHED_ENOMEM;
}

/* Children with something to offer; callers order them by selection and
 * take only as many as they need. */
int gs_pl_kids(gpusched_placer *p, int32_t l, uint32_t d, gs_kid **out, uint32_t *n, uint64_t *total)
{
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    int rc = gs_pl_spend(p, b - a);
    if (rc)
        return rc;
    gs_kid *k = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *k);
    if (!k)
        return GPUSCHED_ENOMEM;
    const gs_arena_mark mark = gs_arena_save(&p->arena);
    uint32_t *cap = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *cap);
    if (!cap)
        return GPUSCHED_ENOMEM;
    gs_pl_caps(p, l + 1, a, b, cap);
    uint32_t m = 0;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < b - a; i++)
        if (cap[i]) {
            k[m++] = (gs_kid){a + i, cap[i]};
            sum += cap[i];
        }
    gs_arena_restore(&p->arena, mark);
    *out = k;
    *n = m;
    *total = sum;
    return 0;
}

/* Moves the largest of k[from..n) to position `from` (ties: lowest index).
 * Callers take the children in that order and often stop early; a wide
 * list is sorted once, on the first call, instead. */
void gs_pl_kid_select(gs_kid *k, uint32_t from, uint32_t n)
{
    if (n > 64) {
        if (from == 0)
            gs_pl_sort_kids(k, n, true);
        return;
    }
    uint32_t best = from;
    for (uint32_t i = from + 1; i < n; i++)
        if (k[i].cap > k[best].cap || (k[i].cap == k[best].cap && k[i].idx < k[best].idx))
            best = i;
    gs_kid tmp = k[from];
    k[from] = k[best];
    k[best] = tmp;
}

/* The greedy prefix over nodes read from the domain's histogram of nodes
 * by free GPUs, largest first, without visiting the nodes. Only when the
 * aggregates count the request's units exactly. */
static int frontier_from_hist(gpusched_placer *p, int32_t l, uint32_t d, uint32_t need, gs_front *f)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    const uint32_t nodes = gs_topo_dom_nodes(p->t, (uint32_t)l, d), most = need < nodes ? need : nodes;
    int rc = gs_pl_spend(p, most);
    if (rc || (rc = front_alloc(p, f, most)))
        return rc;
    uint32_t ratio = r->ratio[LV(l)], last = 0, used = 0;
    uint64_t sum = 0;
    gs_key w = r->weight[LV(l + 1)];
    const uint32_t *h = &c->agg[l].hist[(size_t)d * c->hist_width];
    for (uint32_t k = c->hist_width; k-- > r->u0 && last < need;) {
        uint32_t units = gs_pl_hist_units(r, k);
        for (uint32_t i = 0; units && i < h[k] && last < need; i++) {
            sum += units;
            used++;
            uint64_t y = sum / ratio;
            if (y > need)
                y = need;
            if (y > last) {
                f->key[f->n] = (gs_key)used * w;
                f->units[f->n++] = (uint32_t)y;
                last = (uint32_t)y;
            }
        }
    }
    return 0;
}

/* Children counted but their insides not: the fewest children is the
 * greedy prefix of the largest ones. */
static int frontier_greedy(gpusched_placer *p, int32_t l, uint32_t d, uint32_t need, gs_front *f)
{
    const gs_pl_req *r = p->req;
    if (l + 1 == (int32_t)p->nlevels && r->agg_exact_nodes)
        return frontier_from_hist(p, l, d, need, f);
    gs_kid *k;
    uint32_t n;
    uint64_t total;
    int rc = gs_pl_kids(p, l, d, &k, &n, &total);
    if (rc)
        return rc;
    uint32_t ratio = r->ratio[LV(l)];
    if ((rc = front_alloc(p, f, n)))
        return rc;
    const bool sorted = gs_pl_sort_pays(n, (uint64_t)need * ratio, total);
    if (sorted)
        gs_pl_sort_kids(k, n, true);
    uint64_t sum = 0;
    uint32_t last = 0;
    for (uint32_t i = 0; i < n && last < need; i++) {
        if (!sorted)
            gs_pl_kid_select(k, i, n);
        sum += k[i].cap;
        uint64_t units = sum / ratio;
        if (units > need)
            units = need;
        if (units > last) {
            f->key[f->n] = (gs_key)(i + 1) * r->weight[LV(l + 1)];
            f->units[f->n++] = (uint32_t)units;
            last = (uint32_t)units;
        }
    }
    return 0;
}

/* Children whose frontiers count the level below them (greedy prefixes:
 * each entry's key is a count of grandchildren times their weight w2) make
 * a placement's key (children used) x w1 + (grandchildren used) x w2, and
 * the weights order keys as the pairs (children, grandchildren) are
 * ordered. So the knapsack can run over those pairs instead of over units:
 * U[c][g], the most units c children and g grandchildren hold (capped at
 * Y), and the frontier is read off the pairs in order. No placement for
 * at most Y units uses more children than the fewest that hold Y (k), nor
 * more grandchildren than the k children with the most, which bounds the
 * table; a pair holding no more than one with fewer grandchildren is
 * skipped as a source (it starts no optimal path). It gives the frontier
 * the knapsack over units gives (the same best key for every amount), and
 * runs only when its bound on the work is below the other's: with a few
 * children of many units each (a zone of blocks, asked thousands of GPUs)
 * it is a small fraction. Sets *applied when it ran (or found the budget
 * spent: o->over_budget). */
static int frontier_counted(gpusched_placer *p, int32_t l, gs_pl_dp_out *o, uint32_t Y, uint64_t entries,
                            bool *applied)
{
    const gs_pl_req *r = p->req;
    const gs_key w1 = r->weight[LV(l + 1)], w2 = r->weight[LV(l + 2)];
    const gs_front *fr = o->fronts;
    *applied = false;
    if (!w2 || p->knapsack == 1)
        return 0;
    /* At least Y / (the largest child) children, and a grandchild each:
     * when even that many pairs are as many as Y + 1, no sort is needed to
     * keep the knapsack over units. */
    uint32_t largest = 0;
    for (uint32_t i = 0; i < o->nkids; i++)
        if (fr[i].n && fr[i].units[fr[i].n - 1] > largest)
            largest = fr[i].units[fr[i].n - 1];
    const uint64_t fewest = largest ? ((uint64_t)Y + largest - 1) / largest : 0;
    if ((fewest + 1) * (fewest + 1) > Y && p->knapsack != 2)
        return 0;
    /* The scratch is given back whatever happens: only the frontier stays. */
    const gs_arena_mark mark = gs_arena_save(&p->arena);
    uint32_t *cap = gs_arena_get(&p->arena, (size_t)o->nkids * sizeof *cap);
    uint32_t *most = gs_arena_get(&p->arena, (size_t)o->nkids * sizeof *most);
    if (!cap || !most)
        return GPUSCHED_ENOMEM;
    /* The children's levels below are counted greedily (l + 2 >= pref), so
     * their keys are counts times w2 (frontier_greedy). */
    uint32_t n = 0;
    for (uint32_t i = 0; i < o->nkids; i++) {
        if (!fr[i].n)
            continue;
        cap[n] = fr[i].units[fr[i].n - 1];
        most[n++] = (uint32_t)(fr[i].key[fr[i].n - 1] / w2);
    }
    gs_pl_sort_u32_desc(cap, n);
    uint32_t kmax = 0;
    for (uint64_t sum = 0; kmax < n && sum < Y;)
        sum += cap[kmax++];
    gs_pl_sort_u32_desc(most, n);
    uint64_t gmax = 0;
    for (uint32_t i = 0; i < kmax; i++)
        gmax += most[i];
    const uint64_t row = gmax + 1, pairs = (uint64_t)(kmax + 1) * row;
    /* The budget is charged what the knapsack over units would cost, so
     * that the same knapsacks run within it whichever runs them. */
    const uint64_t work = pairs * entries, units_work = ((uint64_t)Y + 1) * entries;
    gs_arena_restore(&p->arena, mark);
    if ((work >= units_work && p->knapsack != 2) || pairs > UINT32_MAX)
        return 0;
    *applied = true;
    o->over_budget = units_work > p->dp_budget;
    if (o->over_budget) {
        refused(p);
        return 0;
    }
    p->dp_budget -= units_work;
    int rc = gs_pl_spend(p, work);
    if (rc)
        return rc;
    const uint32_t ratio = r->ratio[LV(l)], need = o->need;
    gs_front *f = o->front;
    if ((rc = front_alloc(p, f, pairs < need ? (uint32_t)pairs : need)))
        return rc;
    const gs_arena_mark table = gs_arena_save(&p->arena);
    uint32_t *U = gs_arena_get(&p->arena, (size_t)pairs * sizeof *U);
    uint32_t *count = gs_arena_get(&p->arena, (size_t)entries * sizeof *count);
    int64_t *conv = gs_arena_get(&p->arena, (size_t)row * sizeof *conv);
    if (!U || !count || !conv)
        return GPUSCHED_ENOMEM;
    const uint32_t none = UINT32_MAX;
    for (uint64_t s = 0; s < pairs; s++)
        U[s] = none;
    U[0] = 0;
    uint32_t seen = 0;
    for (uint32_t i = 0; i < o->nkids; i++) {
        const gs_front *c = &fr[i];
        if (!c->n)
            continue;
        bool dense = true;
        for (uint32_t e = 0; e < c->n; e++) {
            count[e] = (uint32_t)(c->key[e] / w2);
            dense = dense && count[e] == e + 1;
        }
        /* A child whose entries take its grandchildren one by one, largest
         * first (a greedy count without slices), holds a concave number of
         * units in them: each row is then a max-plus convolution with a
         * concave kernel (maxplus.c), not a loop over every entry. Where
         * the loop skips a source that an earlier one dominates, the
         * convolution writes only values dominated in the same row, which
         * neither the frontier read off below nor a later child's loop
         * keeps: the frontier is the same. Short frontiers are cheaper by
         * the loop (tests run the convolution on every dense one, so that
         * tiny clusters reach it). */
        if (dense && c->n >= (p->knapsack == 2 ? 2u : 8u) && gs_pl_concave(c->units, c->n)) {
            for (uint32_t used = seen < kmax ? seen + 1 : kmax; used-- > 0;) {
                const uint32_t *src = U + (size_t)used * row;
                uint32_t *dst = U + (size_t)(used + 1) * row;
                gs_pl_maxplus_concave(src, (uint32_t)row, c->units, c->n, conv);
                for (uint64_t g = 0; g < row; g++) {
                    if (conv[g] == GS_MAXPLUS_NEG)
                        continue;
                    const uint32_t u2 = conv[g] > (int64_t)Y ? Y : (uint32_t)conv[g];
                    if (dst[g] == none || u2 > dst[g])
                        dst[g] = u2;
                }
            }
            seen++;
            continue;
        }
        /* Rows from the top: a row is read before this child writes it. */
        for (uint32_t used = seen < kmax ? seen + 1 : kmax; used-- > 0;) {
            const uint32_t *src = U + (size_t)used * row;
            uint32_t *dst = U + (size_t)(used + 1) * row;
            int64_t before = -1; /* most units at fewer grandchildren */
            for (uint64_t g = 0; g < row; g++) {
                const uint32_t u = src[g];
                if (u == none || (int64_t)u <= before)
                    continue;
                before = u;
                for (uint32_t e = 0; e < c->n; e++) {
                    const uint64_t g2 = g + count[e];
                    if (g2 >= row)
                        break;
                    uint64_t u2 = (uint64_t)u + c->units[e];
                    if (u2 > Y)
                        u2 = Y;
                    if (dst[g2] == none || u2 > dst[g2])
                        dst[g2] = (uint32_t)u2;
                }
            }
        }
        seen++;
    }
    /* Pairs in order are keys in order: each entry is the most units at
     * that key or better, kept where it grows. */
    uint32_t last = 0;
    for (uint32_t used = 0; used <= kmax && last < need; used++)
        for (uint64_t g = 0; g < row && last < need; g++) {
            const uint32_t u = U[(size_t)used * row + g];
            if (u == none)
                continue;
            uint32_t y = u / ratio < need ? u / ratio : need;
            if (y > last) {
                f->key[f->n] = (gs_key)used * w1 + (gs_key)g * w2;
                f->units[f->n++] = y;
                last = y;
            }
        }
    gs_arena_restore(&p->arena, table);
    o->counted = true;
    return 0;
}

/* The children's frontiers, then the knapsack if the placement's work
 * budget still covers it (o->over_budget otherwise). */
int gs_pl_dp(gpusched_placer *p, int32_t l, uint32_t d, uint32_t Y, gs_pl_dp_out *o)
{
    const gs_pl_req *r = p->req;
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    uint32_t nk = b - a;
    int rc = gs_pl_spend(p, nk);
    if (rc)
        return rc;
    o->fronts = gs_arena_get(&p->arena, (size_t)nk * sizeof *o->fronts);
    if (!o->fronts)
        return GPUSCHED_ENOMEM;
    gs_front *fr = o->fronts;
    o->nkids = nk;
    o->first = a;
    /* The root's knapsack for an assignment with the rack witness in hand
     * (search.c assign_root): once the spending stops, it is refused
     * whatever its children's frontiers, and nothing else reads them
     * (assign.c assign_dp), so they are not computed past that point. */
    const bool unread = o->want_choices && l < 0 && p->dp_stop_refused && !p->stop_early_off;
    const bool outer = p->frontiers_unread; /* set by the root's, for its children's */
    p->frontiers_unread = outer || unread;
    uint64_t entries = 0;
    for (uint32_t i = 0; i < nk && !rc && !(unread && !p->dp_budget); i++) {
        uint32_t cap = gs_pl_cap(p, l + 1, a + i);
        fr[i].n = 0;
        rc = cap ? gs_pl_frontier(p, l + 1, a + i, cap < Y ? cap : Y, &fr[i]) : 0;
        entries += fr[i].n;
    }
    p->frontiers_unread = outer;
    if (rc)
        return rc;
    if (unread && !p->dp_budget) {
        o->over_budget = true;
        p->stopped_early++;
        refused(p);
        return 0;
    }
    if (o->front && !o->want_choices && l + 2 >= r->pref) {
        bool applied;
        rc = frontier_counted(p, l, o, Y, entries, &applied);
        if (rc || applied)
            return rc;
    }
    uint64_t work = ((uint64_t)Y + 1) * entries;
    o->over_budget = work > p->dp_budget;
    if (o->over_budget) {
        refused(p);
        return 0;
    }
    p->dp_budget -= work;
    if ((rc = gs_pl_spend(p, work)))
        return rc;
    const bool row64 = r->key64 && !p->wide_keys;
    gs_key *dp = row64 ? NULL : gs_arena_get(&p->arena, ((size_t)Y + 1) * sizeof *dp);
    uint32_t *prev = o->want_choices ? gs_arena_get(&p->arena, (size_t)nk * (Y + 1) * sizeof *prev) : NULL;
    uint32_t *entry = o->want_choices ? gs_arena_get(&p->arena, (size_t)nk * (Y + 1) * sizeof *entry) : NULL;
    if ((!row64 && !dp) || (o->want_choices && (!prev || !entry)))
        return GPUSCHED_ENOMEM;
    if (prev)
        memset(prev, 0, (size_t)nk * (Y + 1) * sizeof *prev);
    const gs_key w = r->weight[LV(l + 1)];
    uint64_t *live = gs_arena_get(&p->arena, ((size_t)Y / 64 + 1) * sizeof *live);
    if (!live)
        return GPUSCHED_ENOMEM;
    memset(live, 0, ((size_t)Y / 64 + 1) * sizeof *live);
    gs_pl_live_set(live, 0);
    uint64_t *dp64 = NULL, *key64 = NULL;
    if (row64) {
        /* The row in 64 bits, read as it is (gs_pl_dp_key). */
        uint32_t most = 0;
        for (uint32_t i = 0; i < nk; i++)
            most = fr[i].n > most ? fr[i].n : most;
        dp64 = gs_arena_get(&p->arena, ((size_t)Y + 1) * sizeof *dp64);
        key64 = gs_arena_get(&p->arena, ((size_t)most + 1) * sizeof *key64);
        if (!dp64 || !key64)
            return GPUSCHED_ENOMEM;
        for (uint32_t t = 0; t <= Y; t++)
            dp64[t] = UINT64_MAX;
        dp64[0] = 0;
    } else {
        for (uint32_t t = 0; t <= Y; t++)
            dp[t] = GS_KEY_INF;
        dp[0] = 0;
    }
    void *f = NULL; /* the window's scratch, on the first linear child */
    uint32_t *dq = NULL;
    for (uint32_t i = 0; i < nk; i++) {
        uint32_t *pv = prev ? prev + (size_t)i * (Y + 1) : NULL;
        uint32_t *en = entry ? entry + (size_t)i * (Y + 1) : NULL;
        if (!fr[i].n)
            continue;
        const bool linear = p->linear_mode != 1 && fr[i].n >= (p->linear_mode == 2 ? 1u : GS_KNAP_LINEAR_MIN) &&
                            gs_pl_knap_is_linear(fr[i].units, fr[i].key, fr[i].n, Y, dp64 != NULL);
        p->linear_children += linear;
        if (linear && !f) {
            f = gs_arena_get(&p->arena, ((size_t)Y + 1) * (dp64 ? sizeof *dp64 : sizeof *dp));
            dq = gs_arena_get(&p->arena, ((size_t)Y + 1) * sizeof *dq);
            if (!f || !dq)
                return GPUSCHED_ENOMEM;
        }
        if (dp64) {
            /* The keys' low halves, packed: one 8-byte load per entry. */
            for (uint32_t e = 0; e < fr[i].n; e++)
                key64[e] = (uint64_t)fr[i].key[e];
            if (linear)
                gs_pl_knap_linear64(dp64, Y, fr[i].n, key64, (uint64_t)w, pv, en, f, dq, live);
            else
                gs_pl_knap_child64(dp64, Y, fr[i].n, fr[i].units, key64, (uint64_t)w, pv, en, live);
        } else if (linear) {
            gs_pl_knap_linear128(dp, Y, fr[i].n, fr[i].key, w, pv, en, f, dq, live);
        } else {
            gs_pl_knap_child128(dp, Y, fr[i].n, fr[i].units, fr[i].key, w, pv, en, live);
        }
    }
    o->dp = dp;
    o->dp64 = dp64;
    o->prev = prev;
    o->entry = entry;
    return 0;
}

/* Past the work budget: children filled whole, largest first, each at
 * the key of its full capacity. Every entry is a placement's, so still
 * complete, but not proven optimal (doc/placement.md, "Cost"). For the
 * greedy try (p->estimating) also, between two such fills, the next
 * child's own entries (a part of it at its key for that part): an
 * estimate the greedy shares can meet, checked against the lower bound
 * (search.c). Not past the budget proper, where more entries would only
 * make the knapsacks above cost more. */
static int frontier_filled(gpusched_placer *p, int32_t l, const gs_pl_dp_out *o, uint32_t need, gs_front *f)
{
    const gs_pl_req *r = p->req;
    gs_kid *k = gs_arena_get(&p->arena, (size_t)o->nkids * sizeof *k);
    if (!k)
        return GPUSCHED_ENOMEM;
    uint32_t n = 0;
    uint64_t entries = 0;
    for (uint32_t i = 0; i < o->nkids; i++)
        if (o->fronts[i].n) {
            k[n++] = (gs_kid){i, o->fronts[i].units[o->fronts[i].n - 1]};
            entries += o->fronts[i].n;
        }
    if (!p->estimating)
        entries = n;
    int rc = front_alloc(p, f, (uint32_t)(entries < need ? entries : need));
    if (rc)
        return rc;
    const gs_key w = r->weight[LV(l + 1)];
    const uint32_t ratio = r->ratio[LV(l)];
    uint64_t sum = 0;
    uint32_t last = 0;
    gs_key key = 0;
    for (uint32_t i = 0; i < n && last < need; i++) {
        gs_pl_kid_select(k, i, n);
        const gs_front *c = &o->fronts[k[i].idx];
        for (uint32_t e = p->estimating ? 0 : c->n - 1; e < c->n && last < need; e++) {
            uint64_t y = (sum + c->units[e]) / ratio;
            if (y > need)
                y = need;
            if (y > last) {
                f->key[f->n] = key + w + c->key[e];
                f->units[f->n++] = (uint32_t)y;
                last = (uint32_t)y;
            }
        }
        key += w + c->key[c->n - 1];
        sum += k[i].cap;
    }
    return 0;
}

int gs_pl_frontier(gpusched_placer *p, int32_t l, uint32_t d, uint32_t need, gs_front *f)
{
    const gs_pl_req *r = p->req;
    f->n = 0;
    if (!need || (p->frontiers_unread && !p->dp_budget))
        return 0;
    if (l >= r->pref || l == (int32_t)p->nlevels) {
        uint32_t cap = gs_pl_cap(p, l, d);
        if (!cap)
            return 0;
        int rc = front_alloc(p, f, 1);
        if (rc)
            return rc;
        f->key[0] = 0;
        f->units[0] = cap < need ? cap : need;
        f->n = 1;
        return 0;
    }
    if (l + 1 >= r->pref)
        return frontier_greedy(p, l, d, need, f);
    uint32_t ratio = r->ratio[LV(l)];
    uint32_t Y = need * ratio;
    gs_pl_dp_out o = {.front = f, .need = need};
    int rc = gs_pl_dp(p, l, d, Y, &o);
    if (rc || o.counted)
        return rc;
    if (o.over_budget)
        return frontier_filled(p, l, &o, need, f);
    /* The best key holding at least t child units, in place (INF, the
     * largest value of either width, is never taken down to). */
    if (o.dp64) {
        for (uint32_t t = Y; t-- > 0;)
            if (o.dp64[t + 1] < o.dp64[t])
                o.dp64[t] = o.dp64[t + 1];
    } else {
        for (uint32_t t = Y; t-- > 0;)
            if (o.dp[t + 1] < o.dp[t])
                o.dp[t] = o.dp[t + 1];
    }
    if ((rc = front_alloc(p, f, need)))
        return rc;
    for (uint32_t y = 1; y <= need; y++) {
        gs_key k = gs_pl_dp_key(&o, y * ratio);
        if (k == GS_KEY_INF)
            break;
        if (y == need || gs_pl_dp_key(&o, (y + 1) * ratio) != k) {
            f->key[f->n] = k;
            f->units[f->n++] = y;
        }
    }
    return 0;
}

int gs_pl_best_key(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_key *key)
{
    gs_arena_mark m = gs_arena_save(&p->arena);
    bool direct;
    int rc = gs_pl_subsets(p, l, d, y, key, NULL, &direct);
    if (rc || direct) {
        gs_arena_restore(&p->arena, m);
        return rc;
    }
    gs_front f;
    rc = gs_pl_frontier(p, l, d, y, &f);
    *key = !rc && f.n && f.units[f.n - 1] >= y ? f.key[f.n - 1] : GS_KEY_INF;
    gs_arena_restore(&p->arena, m);
    return rc;
}
