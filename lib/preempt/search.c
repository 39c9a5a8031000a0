/* The search preemption and defragmentation share: per domain of a scope,
 * the shortest prefix of its candidates (victims or movers) that lets the
 * gang fit on what-if searches with them lent, branch and bound over the
 * domains, and the pruning of what the gang does not need. doc/preempt.md
 * has the argument. */
#include <string.h>

#include "heap.h"
#include "preempt-internal.h"

/* ---- the lent set: a stack of job slots ---------------------------------- */

int gs_pp_lend(gs_pp *x, uint32_t slot)
{
    gpusched_preempt_plan *plan = x->plan;
    if (gs_grow(&plan->alloc, (void **)&plan->lent, &plan->lent_cap, plan->nlent + 1, sizeof *plan->lent))
        return GPUSCHED_ENOMEM;
    int rc = gs_txn_lend_job(x->c, gs_pp_job(x, slot));
    if (!rc)
        plan->lent[plan->nlent++] = slot;
    return rc;
}

int gs_pp_unlend_to(gs_pp *x, uint32_t k)
{
    while (x->plan->nlent > k) {
        int rc = gs_txn_unlend_job(x->c, gs_pp_job(x, x->plan->lent[x->plan->nlent - 1]));
        if (rc)
            return rc;
        x->plan->nlent--;
    }
    return 0;
}

/* Lends exactly the first k entries of the domain's list. */
int gs_pp_set_prefix(gs_pp *x, const gs_pp_dom *d, uint32_t k)
{
    int rc = gs_pp_unlend_to(x, k < x->plan->nlent ? k : x->plan->nlent);
    for (uint32_t i = x->plan->nlent; !rc && i < k; i++)
        rc = gs_pp_lend(x, x->plan->v[d->a + i].slot);
    return rc;
}

/* 1 if the gang fits with what is lent now, 0 if not, or an error. */
int gs_pp_fits(gs_pp *x)
{
    int rc = gs_pl_fits(x->p, x->r, x->plan->probe);
    return rc == 0 ? 1 : rc == GPUSCHED_ENOSPC ? 0 : rc;
}

int gs_pp_feasible(gs_pp *x)
{
    int rc = gs_pl_feasible(x->p, x->r, x->plan->probe);
    return rc == 0 ? 1 : rc == GPUSCHED_ENOSPC ? 0 : rc;
}

static int fits_prefix(gs_pp *x, const gs_pp_dom *d, uint32_t k)
{
    int rc = gs_pp_set_prefix(x, d, k);
    return rc ? rc : gs_pp_feasible(x);
}

/* ---- the domains of a scope ---------------------------------------------- */

gs_pp_cost gs_pp_lent_cost(const gs_pp *x)
{
    gs_pp_cost s = {0, 0, 0};
    for (uint32_t i = 0; i < x->plan->nlent; i++) {
        const gs_hold *h = gs_pp_job(x, x->plan->lent[i]);
        gs_pp_cost_add(&s, h->cost_hint, h->ngpus);
    }
    return s;
}

static gs_pp_cost prefix_cost(const gs_pp *x, const gs_pp_dom *d, uint32_t k)
{
    gs_pp_cost s = {0, 0, 0};
    for (uint32_t i = 0; i < k; i++) {
        const gs_hold *h = gs_pp_job(x, x->plan->v[d->a + i].slot);
        gs_pp_cost_add(&s, h->cost_hint, h->ngpus);
    }
    return s;
}

/* Domains are visited by increasing lower bound, ties by index, from a
 * binary heap: the search usually stops at the first few, so sorting all
 * of them (thousands of racks) would be most of a small plan's cost. */
static bool dom_before(const gs_pp_dom *a, const gs_pp_dom *b)
{
    if (gs_pp_cost_less(a->lb, b->lb))
        return true;
    if (gs_pp_cost_less(b->lb, a->lb))
        return false;
    return a->dom < b->dom;
}

/* The queue pops the first domain by dom_before: its heap is ordered the
 * other way round (the root is the one every other comes after). */
static bool dom_after(const gs_pp_dom *a, const gs_pp_dom *b, void *unused)
{
    (void)unused;
    return dom_before(b, a);
}

GS_HEAP_DEFINE(doms, gs_pp_dom, void *, dom_after)

static gs_pp_dom heap_pop(gs_pp_dom *h, uint32_t *n)
{
    gs_pp_dom top = h[0];
    h[0] = h[--*n];
    doms_sift(h, *n, 0, NULL);
    return top;
}

/* The GPUs of the job's own reservation inside domain `dom`, walking its
 * pairs (ascending, as the domains are visited) from *i on. */
uint64_t gs_pp_own_in(const struct gpusched_topo *t, const gs_hold *own, int32_t scope, uint32_t dom, uint32_t *i)
{
    if (!own)
        return 0;
    const uint32_t *nodes = gs_hold_nodes(own);
    const uint64_t *masks = gs_hold_masks(own);
    while (*i < own->npairs && gs_pp_scope_domain(t, scope, t->node_leaf[nodes[*i]]) < dom)
        ++*i;
    uint64_t g = 0;
    for (; *i < own->npairs && gs_pp_scope_domain(t, scope, t->node_leaf[nodes[*i]]) == dom; ++*i)
        g += gs_popcount64(masks[*i]);
    return g;
}

/* The domains whose victims could free enough GPUs by count (free GPUs
 * plus the victims' GPUs inside, plus the job's own reservation there),
 * as a heap, cheapest lower bound first. */
static int scope_domains(gs_pp *x, int32_t scope, uint32_t *ndoms)
{
    gpusched_preempt_plan *plan = x->plan;
    const struct gpusched_cluster *c = x->c;
    const gs_hold *own = gs_cluster_resv_find(c, x->r->job.id);
    const uint64_t G = x->r->gpus;
    uint32_t n = 0, own_i = 0;
    for (uint32_t a = 0; a < plan->nv;) {
        uint32_t b = a;
        while (b < plan->nv && plan->v[b].dom == plan->v[a].dom)
            b++;
        uint32_t dom = plan->v[a].dom;
        uint64_t have = gs_pp_own_in(c->topo, own, scope, dom, &own_i) +
                        (scope < 0 ? c->root_free_gpus : c->agg[scope].free_gpus[dom]);
        uint32_t k0 = 0;
        while (have < G && a + k0 < b)
            have += plan->v[a + k0++].gpus;
        if (have >= G) {
            if (gs_grow(&plan->alloc, (void **)&plan->doms, &plan->doms_cap, n + 1, sizeof *plan->doms))
                return GPUSCHED_ENOMEM;
            gs_pp_dom d = {dom, a, b, k0 ? k0 : 1, {0, 0, 0}};
            d.lb = prefix_cost(x, &d, k0);
            plan->doms[n++] = d;
        }
        a = b;
    }
    for (uint32_t i = n / 2; i-- > 0;)
        doms_sift(plan->doms, n, i, NULL);
    *ndoms = n;
    return 0;
}

/* For a gang of whole domains (wholedoms.c) and the whole cluster's
 * list: the prefix after which K domains are wholly free, counted without
 * lending; 0 when there is no such hint. */
static uint32_t whole_domains_hint(gs_pp *x, const gs_pp_dom *d)
{
    gpusched_preempt_plan *plan = x->plan;
    gs_pl_whole w;
    if (!gs_pl_whole_begin(x->c, x->r, &plan->alloc, &plan->whole_free, &plan->whole_cap, &w) || w.whole >= w.want)
        return 0;
    for (uint32_t i = 0; i < d->b - d->a; i++)
        if (gs_pl_whole_add(&w, gs_pp_job(x, plan->v[d->a + i].slot)))
            return i + 1;
    return 0;
}

/* The shortest feasible prefix of a domain's list, from k0 on: galloping,
 * then bisection (lending more never makes a gang fit less). *k = 0: none.
 * A hint (whole_domains_hint) is probed first, then the prefix one
 * shorter: when it is right that settles it in two what-ifs; when not,
 * the search goes on from whichever side it opened, and finds the same
 * prefix (the shortest feasible one is unique). */
static int shortest_prefix(gs_pp *x, const gs_pp_dom *d, uint32_t hint, uint32_t *k)
{
    const uint32_t n = d->b - d->a;
    uint32_t bad = d->k0 - 1, good = 0, step = 1, from = d->k0;
    int rc;
    if (hint > d->k0 && hint <= n) {
        if ((rc = fits_prefix(x, d, hint)) < 0)
            return rc;
        if (rc) {
            good = hint;
            if ((rc = fits_prefix(x, d, hint - 1)) < 0)
                return rc;
            if (rc)
                good = hint - 1;
            else
                bad = hint - 1;
        } else if (hint == n) {
            *k = 0;
            return 0;
        } else {
            bad = hint;
            from = hint + 1;
        }
    }
    for (uint32_t t = from; !good; t = t + step < n ? t + step : n, step *= 2) {
        if ((rc = fits_prefix(x, d, t)) < 0)
            return rc;
        if (rc) {
            good = t;
            break;
        }
        bad = t;
        if (t == n)
            break;
    }
    while (good && good - bad > 1) {
        uint32_t mid = bad + (good - bad) / 2;
        if ((rc = fits_prefix(x, d, mid)) < 0)
            return rc;
        if (rc)
            good = mid;
        else
            bad = mid;
    }
    *k = good;
    return 0;
}

/* A scope and an order, as one number (for `collected`). */
static int32_t variant(int32_t scope, bool by_rack) { return scope * 2 + by_rack; }

bool gs_pp_collected_scope(const gs_pp *x, int32_t scope)
{
    return x->collected == variant(scope, false) || x->collected == variant(scope, true);
}

int gs_pp_collect_as(gs_pp *x, int32_t scope, bool by_rack)
{
    if (x->collected == variant(scope, by_rack))
        return 0;
    int rc = gs_pp_collect(x->plan, x->c, x->r, scope, by_rack, x->defrag);
    x->collected = rc ? INT32_MIN : variant(scope, by_rack);
    return rc;
}


/* Branch and bound over the scope's domains: a domain whose lower bound
 * cannot beat the best plan found is not searched. */
int gs_pp_search_scope(gs_pp *x, int32_t scope, bool by_rack, gs_pp_best *best)
{
    /* The order of the candidates reads the aggregates: nothing may be lent
     * while they are collected, or the caller's collection of the same
     * variant would give another order. */
    gs_pp_unlend_to(x, 0);
    x->best_lent = false;
    uint32_t ndoms;
    int rc = gs_pp_collect_as(x, scope, by_rack);
    if (rc || (rc = scope_domains(x, scope, &ndoms)))
        return rc;
    while (ndoms) {
        const gs_pp_dom d = heap_pop(x->plan->doms, &ndoms);
        if (best->found && !gs_pp_cost_less(d.lb, best->cost))
            break;
        if (x->defrag && best->found && x->checked++ >= GS_PP_DEFRAG_MORE)
            break;
        /* The best so far stays lent until another domain is searched:
         * usually none is, and the caller then has its plan lent already
         * (for a large gang that is two passes over tens of thousands of
         * nodes saved). */
        gs_pp_unlend_to(x, 0);
        x->best_lent = false;
        uint32_t k = 0;
        rc = shortest_prefix(x, &d, scope < 0 && !x->defrag ? whole_domains_hint(x, &d) : 0, &k);
        if (!rc && k && x->defrag) {
            /* A domain whose movers can all go elsewhere is a plan; the
             * cheapest wins, and is made again once all are seen. */
            rc = gs_pp_set_prefix(x, &d, k);
            if (!rc)
                rc = gs_pp_prune(x);
            if (!rc) {
                int moved = gs_pp_try_moves(x);
                if (moved == 1) {
                    gs_pp_cost cost = gs_pp_lent_cost(x);
                    if (!best->found || gs_pp_cost_less(cost, best->cost))
                        *best = (gs_pp_best){true, by_rack, scope, d.dom, k, cost};
                    gs_pp_unhold_all(x);
                }
                rc = moved < 0 ? moved : 0;
            } else if (rc == GPUSCHED_ENOSPC) {
                rc = 0;
            }
            k = 0;
        }
        if (rc < 0 || !k) {
            gs_pp_unlend_to(x, 0);
            if (rc < 0)
                return rc;
            continue;
        }
        gs_pp_cost cost = prefix_cost(x, &d, k);
        if (best->found && !gs_pp_cost_less(cost, best->cost)) {
            gs_pp_unlend_to(x, 0);
            continue;
        }
        *best = (gs_pp_best){true, by_rack, scope, d.dom, k, cost};
        /* The bisection may have ended on a shorter, failing prefix. */
        if ((rc = gs_pp_set_prefix(x, &d, k)))
            return rc;
        x->best_lent = true;
    }
    return 0;
}

/* ---- pruning ------------------------------------------------------------- */

/* Whether the probe's placement uses a GPU of job h; for a gang with pods,
 * a node of h (h may free cpu or memory there rather than GPUs). */
static bool placement_uses(const gpusched_place_result *probe, const gs_hold *h, bool pods)
{
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++) {
        uint32_t lo = 0, hi = probe->n;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (probe->nodes[mid] < nodes[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < probe->n && probe->nodes[lo] == nodes[i] && (pods || (probe->masks[lo] & masks[i])))
            return true;
    }
    return false;
}

/* Most expensive first: the victims most worth sparing are tried first. */
static bool spare_before(const gs_hold *a, const gs_hold *b)
{
    if (a->cost_hint != b->cost_hint)
        return a->cost_hint > b->cost_hint;
    if (a->ngpus != b->ngpus)
        return a->ngpus > b->ngpus;
    return a->id > b->id;
}

/* Insertion sort: at most GPUSCHED_MAX_PRUNE slots. */
static void sort_spare_first(gs_pp *x)
{
    uint32_t *s = x->plan->lent;
    for (uint32_t i = 1; i < x->plan->nlent; i++) {
        uint32_t v = s[i], j = i;
        for (; j > 0 && spare_before(gs_pp_job(x, v), gs_pp_job(x, s[j - 1])); j--)
            s[j] = s[j - 1];
        s[j] = v;
    }
}

/* Drops the lent victims the gang does not need: first those its placement
 * does not touch (the same placement stays valid without them), then, for
 * small plans, each victim whose absence still lets the gang fit. */
int gs_pp_prune(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    int rc = gs_pp_fits(x);
    if (rc <= 0)
        return rc < 0 ? rc : GPUSCHED_ENOSPC;
    /* On an error the caller rolls the transaction back: the stack need
     * not stay true to what is lent then. */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < plan->nlent; i++) {
        gs_hold *h = gs_pp_job(x, plan->lent[i]);
        if (placement_uses(plan->probe, h, x->r->pods_path))
            plan->lent[kept++] = plan->lent[i];
        else if ((rc = gs_txn_unlend_job(x->c, h)))
            return rc;
    }
    plan->nlent = kept;
    if (plan->nlent > GPUSCHED_MAX_PRUNE)
        return 0;
    sort_spare_first(x);
    kept = 0;
    for (uint32_t i = 0; i < plan->nlent; i++) {
        gs_hold *h = gs_pp_job(x, plan->lent[i]);
        if ((rc = gs_txn_unlend_job(x->c, h)) || (rc = gs_pp_feasible(x)) < 0)
            return rc;
        if (rc == 0) { /* the gang needs it */
            if ((rc = gs_txn_lend_job(x->c, h)))
                return rc;
            plan->lent[kept++] = plan->lent[i];
        }
    }
    plan->nlent = kept;
    return 0;
}

int gs_pp_search_all(gs_pp *x, gs_pp_best *best)
{
    /* The variants tried, the first found winning ties: the scope is the
     * required level, or for a gang without one each lowest-level domain
     * (when one can hold it) and the whole cluster; above the lowest
     * level, candidates by rack, and for a gang a rack can hold, by cost
     * alone too (a small gang needs the cheapest jobs, not a cheap rack). */
    const int32_t leaf = (int32_t)x->p->nlevels - 1;
    const bool small = x->r->gpus <= x->p->max_dom_gpus[LV(leaf)];
    const int32_t scope = x->r->in.required_level != GPUSCHED_NONE ? (int32_t)x->r->in.required_level : -1;
    int rc = 0;
    if (scope < 0 && small)
        rc = gs_pp_search_scope(x, leaf, false, best);
    if (!rc && scope != leaf)
        rc = gs_pp_search_scope(x, scope, true, best);
    if (!rc && (small || scope == leaf))
        rc = gs_pp_search_scope(x, scope, false, best);
    return rc;
}
