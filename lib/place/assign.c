/* Turning a decision into nodes: a chosen domain hands its units down to
 * its children, children in ascending index order, so that the nodes come
 * out sorted without a sort. */
#include "place-internal.h"

__attribute__((noinline)) static int grow_out(gpusched_placer *p)
{
    gpusched_place_result *res = p->res;
    uint32_t cap = res->cap ? 2 * res->cap : 256;
    uint32_t *n = gs_realloc_array(&res->alloc, res->nodes, cap, sizeof *n);
    if (!n)
        return GPUSCHED_ENOMEM;
    res->nodes = n;
    uint64_t *m = gs_realloc_array(&res->alloc, res->masks, cap, sizeof *m);
    if (!m)
        return GPUSCHED_ENOMEM;
    res->masks = m;
    res->cap = cap;
    return 0;
}

/* The lowest `count` of the node's usable GPUs avail (`have` of them): a
 * job's GPUs stay packed. */
static uint64_t take_gpus(uint64_t avail, uint32_t count, uint32_t have)
{
    if (count >= have)
        return avail;
    uint64_t m = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t bit = avail & (~avail + 1);
        m |= bit;
        avail ^= bit;
    }
    return m;
}

/* A node's usable GPUs, counted once for the units they give and for the
 * mask of the units taken. */
typedef struct node_gpus {
    uint64_t avail;
    uint32_t have;              /* avail's GPUs (0 for whole nodes: unused) */
    uint32_t units;             /* the units they give */
} node_gpus;

static inline node_gpus count_node(const gpusched_placer *p, uint32_t n)
{
    const gs_pl_req *r = p->req;
    node_gpus g = {gs_cluster_node_avail(p->c, n), 0, 0};
    if (r->whole_w) {
        g.units = gs_pl_units_of_mask(r, p->t, n, g.avail);
    } else {
        g.have = gs_popcount64(g.avail);
        g.units = gs_pl_div_u0(r, g.have);
    }
    return g;
}

/* Appends node n, taking `units` of g's units. */
static inline int emit_units(gpusched_placer *p, uint32_t n, node_gpus g, uint32_t units)
{
    const gs_pl_req *r = p->req;
    gpusched_place_result *res = p->res;
    /* The mask before the stores, which could alias the request. */
    const uint64_t mask = r->whole_w ? g.avail : take_gpus(g.avail, units * r->u0, g.have);
    if (p->nout == res->cap && grow_out(p))
        return GPUSCHED_ENOMEM;
    res->nodes[p->nout] = n;
    res->masks[p->nout++] = mask;
    return 0;
}

static int emit_node(gpusched_placer *p, uint32_t node, uint32_t units)
{
    return emit_units(p, node, count_node(p, node), units);
}

/* A lowest-level domain handing over everything it can hold (every rack
 * of a large gang of whole racks): one pass over its nodes. */
static int take_all_nodes(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, bool *done)
{
    const gs_pl_req *r = p->req;
    uint32_t a = p->t->dom_start[l][d], b = p->t->dom_start[l][d + 1];
    uint64_t want = (uint64_t)y * r->ratio[LV(l)], total = 0;
    *done = false;
    if (r->agg_exact_nodes) {
        total = gs_pl_ub_units(p, l, d);
    } else {
        for (uint32_t n = a; n < b; n++)
            total += gs_pl_node_units(p, n);
    }
    if (total != want)
        return 0;
    for (uint32_t n = a; n < b; n++) {
        /* Each node gives all its units. */
        const node_gpus g = count_node(p, n);
        const bool gives = g.units && !(r->filtered && !gs_pl_node_eligible(p, n));
        if (gives && emit_units(p, n, g, g.units))
            return GPUSCHED_ENOMEM;
    }
    *done = true;
    return 0;
}

bool gs_pl_node_plan_make(gs_node_plan *plan, uint64_t *avail_of, uint32_t vmax, uint64_t rem)
{
    for (uint32_t v = 0; v <= vmax; v++)
        plan->full[v] = 0;
    plan->part_v = plan->part = 0;
    plan->pending = 0;
    for (uint32_t v = vmax; v >= 1 && rem; v--) {
        if (avail_of[v] && rem > v) {
            uint64_t t = (rem - 1) / v; /* full nodes before the remainder */
            if (t > avail_of[v])
                t = avail_of[v];
            plan->full[v] = t;
            avail_of[v] -= t;
            plan->pending += t;
            rem -= t * v;
        }
        if (avail_of[v] && rem <= v) {
            for (plan->part_v = (uint32_t)rem; !avail_of[plan->part_v]; plan->part_v++)
                ;
            plan->part = (uint32_t)rem;
            plan->pending++;
            rem = 0;
        }
    }
    return rem == 0;
}

int gs_pl_node_plan_take(gpusched_placer *p, gs_node_plan *plan, uint32_t a, uint32_t b)
{
    for (uint32_t n = a; n < b && plan->pending; n++) {
        const node_gpus g = count_node(p, n);
        const uint32_t v = g.units;
        uint32_t take = 0;
        if (v && plan->full[v]) {
            plan->full[v]--;
            take = v;
        } else if (v && v == plan->part_v && plan->part) {
            take = plan->part;
            plan->part = 0;
        }
        if (take) {
            plan->pending--;
            if (emit_units(p, n, g, take))
                return GPUSCHED_ENOMEM;
        }
    }
    return 0;
}

/* The greedy choice of assign_greedy (largest first, ties lowest index,
 * the remainder to the tightest node that takes it), planned on the
 * histogram of domain d of level l for y units; false when it does not
 * hold them. */
static bool plan_from_hist(const gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_node_plan *plan)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    const uint32_t *h = &c->agg[l].hist[(size_t)d * c->hist_width];
    uint32_t vmax = r->whole_w ? 1 : (c->hist_width - 1) / r->u0;
    uint64_t avail_of[GPUSCHED_MAX_NODE_GPUS + 1] = {0}; /* nodes per unit value */
    gs_pl_hist_add_units(r, h, c->hist_width, avail_of);
    return gs_pl_node_plan_make(plan, avail_of, vmax, (uint64_t)y * r->ratio[LV(l)]);
}

/* That plan carried out by reading nodes only until the planned ones are
 * found. Only when the aggregates count units exactly. */
static int nodes_from_hist(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, bool *done)
{
    *done = false;
    gs_node_plan plan;
    if (!p->req->agg_exact_nodes || !plan_from_hist(p, l, d, y, &plan))
        return 0;
    int rc = gs_pl_node_plan_take(p, &plan, p->t->dom_start[l][d], p->t->dom_start[l][d + 1]);
    *done = !rc;
    return rc;
}

int gs_pl_use_domain(gpusched_placer *p, uint32_t l, uint32_t d)
{
    if (p->ndoms[l] == p->doms_cap[l]) {
        uint32_t cap = p->doms_cap[l] ? 2 * p->doms_cap[l] : 64;
        uint32_t *n = gs_realloc_array(&p->alloc, p->out_doms[l], cap, sizeof *n);
        if (!n)
            return GPUSCHED_ENOMEM;
        p->out_doms[l] = n;
        p->doms_cap[l] = cap;
    }
    p->out_doms[l][p->ndoms[l]++] = d;
    return 0;
}

static int descend(gpusched_placer *p, int32_t l, uint32_t first, const uint32_t *amount, uint32_t n)
{
    if (l + 1 == (int32_t)p->nlevels) {
        for (uint32_t i = 0; i < n; i++) {
            int rc = amount[i] ? emit_node(p, first + i, amount[i]) : 0;
            if (rc)
                return rc;
        }
        return 0;
    }
    for (uint32_t i = 0; i < n; i++)
        if (amount[i]) {
            int rc = gs_pl_assign(p, l + 1, first + i, amount[i]);
            if (rc)
                return rc;
        }
    return 0;
}

/* The fewest children: the largest ones, then the tightest child that
 * takes the rest (best fit). */
static int assign_greedy(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y)
{
    gs_kid *k;
    uint32_t n;
    uint64_t total;
    int rc = gs_pl_kids(p, l, d, &k, &n, &total);
    if (rc)
        return rc;
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    uint32_t *amount = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *amount);
    if (!amount)
        return GPUSCHED_ENOMEM;
    for (uint32_t i = 0; i < b - a; i++)
        amount[i] = 0;
    uint64_t rem = (uint64_t)y * p->req->ratio[LV(l)];
    if (rem == total) {
        for (uint32_t i = 0; i < n; i++)
            amount[k[i].idx - a] = k[i].cap;
        rem = 0;
    }
    /* One sort gives the order the selections give. */
    const bool sorted = gs_pl_sort_pays(n, rem, total);
    if (sorted)
        gs_pl_sort_kids(k, n, true);
    for (uint32_t i = 0; i < n && rem; i++) {
        if (!sorted)
            gs_pl_kid_select(k, i, n);
        if (k[i].cap < rem) {
            amount[k[i].idx - a] = k[i].cap;
            rem -= k[i].cap;
            continue;
        }
        uint32_t fit = i;
        for (uint32_t j = i + 1; j < n; j++)
            if (k[j].cap >= rem && (k[j].cap < k[fit].cap || (k[j].cap == k[fit].cap && k[j].idx < k[fit].idx)))
                fit = j;
        amount[k[fit].idx - a] = (uint32_t)rem;
        rem = 0;
    }
    if (rem)
        return GPUSCHED_ENOSPC; /* the caller checked the capacity: unreachable */
    return descend(p, l, a, amount, b - a);
}

/* The key the greedy shares of d would make, counted without handing
 * out a node: the domains down to the last counted level, recorded and
 * then forgotten (only when nodes are not counted). */
static int greedy_key(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_key *key)
{
    uint32_t saved[GS_MAX_LEVELS];
    for (uint32_t j = 0; j < p->nlevels; j++)
        saved[j] = p->ndoms[j];
    const gs_key before = gs_pl_key_below(p, l);
    p->count_only = true;
    int rc = assign_greedy(p, l, d, y);
    p->count_only = false;
    *key = gs_pl_key_below(p, l) - before;
    for (uint32_t j = 0; j < p->nlevels; j++)
        p->ndoms[j] = saved[j];
    return rc;
}

/* At the root with the spending stopped (a knapsack refused with the
 * rack witness in hand), the shares below are the greedy ones: whether
 * the witness beats them (its key, p->root_ceiling, is lower), from the
 * greedy fill's key when it was tried, else counted. */
static int witness_beats_greedy(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, bool *beats)
{
    gs_key g = p->root_greedy;
    *beats = false;
    if (l >= 0 || !p->dp_stop_refused || p->root_ceiling == GS_KEY_INF)
        return 0;
    if (g == GS_KEY_INF && p->req->pref < (int32_t)p->nlevels) {
        int rc = greedy_key(p, l, d, y, &g);
        if (rc)
            return rc;
    }
    *beats = g != GS_KEY_INF && g > p->root_ceiling;
    return 0;
}

/* Counted levels below the children: the knapsack decides how much each
 * child takes; each child then re-solves for exactly that much, which
 * costs no more than the frontier entry it was chosen by. */
static int assign_dp(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y)
{
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    uint32_t *share = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *share);
    if (!share)
        return GPUSCHED_ENOMEM;
    for (uint32_t i = 0; i < b - a; i++)
        share[i] = 0;
    gs_key key;
    bool direct;
    int rc = gs_pl_subsets(p, l, d, y, &key, share, &direct);
    if (rc)
        return rc;
    if (direct)
        return key == GS_KEY_INF ? GPUSCHED_ENOSPC : descend(p, l, a, share, b - a);
    if (!p->dp_budget) /* no knapsack step left: the children's frontiers are not needed */
        return assign_greedy(p, l, d, y);
    uint32_t Y = y * p->req->ratio[LV(l)];
    gs_pl_dp_out o = {.want_choices = true};
    rc = gs_pl_dp(p, l, d, Y, &o);
    if (rc)
        return rc;
    if (o.over_budget) {
        bool beaten;
        if ((rc = witness_beats_greedy(p, l, d, y, &beaten)))
            return rc;
        return beaten ? GS_PL_EBEATEN : assign_greedy(p, l, d, y);
    }
    if (gs_pl_dp_key(&o, Y) == GS_KEY_INF)
        return GPUSCHED_ENOSPC; /* unreachable: the caller checked the key */
    uint32_t *amount = gs_arena_get(&p->arena, (size_t)o.nkids * sizeof *amount);
    if (!amount)
        return GPUSCHED_ENOMEM;
    uint64_t sum = 0;
    uint32_t t = Y;
    for (uint32_t i = o.nkids; i-- > 0;) {
        size_t at = (size_t)i * (Y + 1) + t;
        amount[i] = 0;
        if (o.prev[at]) {
            amount[i] = o.fronts[i].units[o.entry[at]];
            sum += amount[i];
            t = o.prev[at] - 1;
        }
    }
    /* The table caps at Y: trim the excess, leaving each child at least
     * one, from the smallest share up, so that the large shares stay whole
     * and the remainder lands on the smallest piece (best fit). */
    uint64_t excess = sum - Y;
    while (excess) {
        uint32_t pick = UINT32_MAX;
        for (uint32_t i = 0; i < o.nkids; i++)
            if (amount[i] > 1 && (pick == UINT32_MAX || amount[i] <= amount[pick]))
                pick = i;
        uint32_t cut = amount[pick] - 1 < excess ? amount[pick] - 1 : (uint32_t)excess;
        amount[pick] -= cut;
        excess -= cut;
    }
    return descend(p, l, o.first, amount, o.nkids);
}

/* The nodes of lowest-level domain d (l = nlevels - 1) for y units: all
 * of them, or by the plan of its histogram, else greedily. */
static int assign_rack(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y)
{
    bool done;
    int rc = take_all_nodes(p, l, d, y, &done);
    if (!rc && !done)
        rc = nodes_from_hist(p, l, d, y, &done);
    if (rc || done)
        return rc;
    gs_arena_mark m = gs_arena_save(&p->arena);
    rc = assign_greedy(p, l, d, y);
    gs_arena_restore(&p->arena, m);
    return rc;
}

/* Deferred: the share recorded, and the nodes assign_rack will take
 * counted from the domain's histogram as it plans them (only when the
 * aggregates count units exactly: every share deferred is then
 * planned the same way; p->defer_unknown where the plan fails). */
static int defer_rack(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    if (gs_grow(&p->alloc, (void **)&p->deferred, &p->defer_cap, p->ndefer + 1, sizeof *p->deferred))
        return GPUSCHED_ENOMEM;
    p->deferred[p->ndefer++] = (struct gs_pl_share){d, y};
    uint64_t count = 0;
    if (gs_pl_ub_units(p, l, d) == (uint64_t)y * r->ratio[LV(l)]) { /* take_all_nodes: every node with units */
        const uint32_t width = c->hist_width, *h = &c->agg[l].hist[(size_t)d * width];
        for (uint32_t k = r->u0; k < width; k++)
            count += gs_pl_hist_units(r, k) ? h[k] : 0;
    } else {
        gs_node_plan plan;
        p->defer_unknown |= !plan_from_hist(p, l, d, y, &plan);
        count = plan.pending;
    }
    p->nout += (uint32_t)count;
    return 0;
}

int gs_pl_defer_flush(gpusched_placer *p)
{
    const int32_t low = (int32_t)p->nlevels - 1;
    const uint32_t n = p->ndefer, counted = p->nout;
    if (!n)
        return 0; /* nothing deferred: the output holds its nodes */
    p->ndefer = 0;
    p->nout = 0;
    p->defer_unknown = false;
    for (uint32_t i = 0; i < n; i++) {
        int rc = assign_rack(p, low, p->deferred[i].rack, p->deferred[i].units);
        if (rc)
            return rc;
    }
    p->defer_mismatch += p->nout != counted;
    p->defer_flushed++;
    return 0;
}

int gs_pl_assign(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y)
{
    if (!y)
        return 0;
    int rc = gs_pl_spend(p, 1);
    if (rc)
        return rc;
    if (l == (int32_t)p->nlevels)
        return emit_node(p, d, y);
    if (l >= 0 && gs_pl_use_domain(p, (uint32_t)l, d))
        return GPUSCHED_ENOMEM;
    if (p->count_only && l >= p->req->pref)
        return 0;
    if (l + 1 == (int32_t)p->nlevels) {
        if ((rc = gs_pl_spend(p, gs_topo_dom_nodes(p->t, (uint32_t)l, d))))
            return rc;
        return p->defer ? defer_rack(p, l, d, y) : assign_rack(p, l, d, y);
    }
    gs_arena_mark m = gs_arena_save(&p->arena);
    rc = l + 1 >= p->req->pref ? assign_greedy(p, l, d, y) : assign_dp(p, l, d, y);
    gs_arena_restore(&p->arena, m);
    return rc;
}
