/* Preemption for a gang of whole domains, decided without lending: the
 * gang's only constraint is slices that are each a whole domain of one
 * level (wholedoms.c: NVL72 racks asked whole, every large gang of the
 * scheduler's simulator), so it fits exactly when K = G / S domains are
 * wholly free, and clearing a domain means evicting every eligible victim
 * with a GPU in it:
 *
 * - a domain can be cleared when its free GPUs and its eligible victims'
 *   GPUs make all of its GPUs (and it holds no avoided node);
 * - priority first: the least highest victim priority of a plan is the
 *   K-th least among the clearable domains' highest priorities (its
 *   `top`; a domain without victims is below every priority), and the
 *   candidates are the clearable domains within it;
 * - a plan is K candidates, and costs its victims, each once: the
 *   candidates that share a victim form a component, each component's
 *   least cost per number of its domains cleared comes from its subsets
 *   (a component of one domain, the common case, has one), and a
 *   min-plus pass over the components picks K domains of least total
 *   cost (cost, then GPUs, then victims: an order that sums keep).
 *
 * An optimal plan needs every victim: one left out leaves a domain short,
 * and the K domains that stay whole would make a cheaper plan. Its lent
 * state may free more than K domains whole (a domain whose victims all
 * belong to chosen ones), and whichever K of them the placement takes,
 * they cost no more, so the same victims: every victim is touched.
 *
 * One pass over the running jobs, where the general search lends every
 * eligible victim at least once and places the gang for each what-if
 * (4.7M instructions per plan on the simulator's bench trace). The
 * placement is still the placement engine's, on the state with the
 * victims lent, checked first: what the count does not see (a node down,
 * GPU fractions, the gang's own reservation, a component too large to
 * enumerate) sends the request to the general search, as does a failed
 * check. doc/preempt.md, step 1c. */
#include "heap.h"
#include "preempt-internal.h"

/* Components with more shared victims than this, or more sets of them
 * times candidates than the next, go to the general search. */
#define GS_WHOLE_COUPLERS_MAX 12u
#define GS_WHOLE_ENUM_MAX (1u << 18)
/* The min-plus pass keeps a choice per component and count. */
#define GS_WHOLE_DP_MAX (1u << 22)

typedef struct gs_whole_dom {
    uint32_t vgpus;     /* its eligible victims' GPUs in it */
    int32_t top;        /* their highest priority; INT32_MIN without any */
    uint32_t comp;      /* union-find parent among candidates; UINT32_MAX: not one */
    gs_pp_cost ecost;   /* a candidate: its exclusive victims (no other candidate) */
    uint32_t cmask;     /* a candidate: the shared victims it needs, by index */
    uint32_t size;      /* a root: its component's candidates */
    uint32_t ncoupler;  /* a root: its component's shared victims */
    uint32_t ci;        /* a root: its component's index in plan->wcomp */
    uint8_t chosen;
} whole_dom;

typedef struct gs_whole_vic {
    uint32_t slot;
    int32_t prio;
    uint64_t cost, gpus;
    uint32_t doff, dn;  /* the domains it touches: plan->wvdom[doff, doff + dn) */
    uint32_t comp;      /* its component (a root), once known; UINT32_MAX: none */
    uint32_t ncand;     /* candidates it touches: 1 exclusive, more shared */
    uint32_t local;     /* shared: its index in the component */
} whole_vic;

/* Whether the request and the cluster are ones the count decides exactly. */
static bool applies(const gs_pp *x, gs_pl_whole *w)
{
    const gs_pl_req *r = x->r;
    const struct gpusched_cluster *c = x->c;
    if (x->defrag || x->plan->whole_off || !gs_pl_whole_exact(c, r))
        return false;
    /* The min-plus pass is components x (K + 1): with as many components
     * as domains at most, a gang of many domains on a large level (200k
     * GPUs of 14,000 racks) goes to the general search before any pass. */
    if (r->ncons != 1 || (uint64_t)c->topo->ndom[r->cons[0].level] * (r->gpus / r->cons[0].size + 1) > GS_WHOLE_DP_MAX)
        return false;
    gpusched_preempt_plan *plan = x->plan;
    return gs_pl_whole_begin(c, r, &plan->alloc, &plan->whole_free, &plan->whole_cap, w);
}

/* Every eligible victim with the domains it touches, and per domain the
 * victims' GPUs and top priority; *ok false for a victim the count cannot
 * weigh (GPU fractions or resources). */
static int gather(gs_pp *x, const gs_pl_whole *w, bool *ok)
{
    const struct gpusched_cluster *c = x->c;
    const struct gpusched_topo *t = c->topo;
    gpusched_preempt_plan *plan = x->plan;
    const uint32_t nd = t->ndom[w->level];
    if (gs_grow(&plan->alloc, (void **)&plan->wdom, &plan->wdom_cap, nd, sizeof *plan->wdom))
        return GPUSCHED_ENOMEM;
    for (uint32_t d = 0; d < nd; d++)
        plan->wdom[d] = (whole_dom){.top = INT32_MIN, .comp = UINT32_MAX};
    plan->nwvic = plan->nwvdom = 0;
    if (gs_grow(&plan->alloc, (void **)&plan->wvic, &plan->wvic_cap, c->jobs.count + 1, sizeof *plan->wvic))
        return GPUSCHED_ENOMEM;
    *ok = true;
    for (uint32_t j = 0; j < c->jobs.count; j++) {
        const uint32_t slot = c->jobs.live[j];
        const gs_hold *h = &c->jobs.rec[slot];
        if (!h->npairs || !gs_pp_eligible(c, h, x->r, INT32_MAX, false))
            continue;
        if (gs_hold_podx(c, h)) {
            *ok = false;
            return 0;
        }
        if (plan->nwvdom + h->npairs > plan->wvdom_cap &&
            gs_grow(&plan->alloc, (void **)&plan->wvdom, &plan->wvdom_cap, plan->nwvdom + h->npairs,
                    sizeof *plan->wvdom))
            return GPUSCHED_ENOMEM;
        whole_vic *v = &plan->wvic[plan->nwvic++];
        *v = (whole_vic){.slot = slot, .prio = h->priority, .cost = h->cost_hint, .gpus = h->ngpus,
                         .doff = plan->nwvdom};
        const uint32_t *nodes = gs_hold_nodes(h);
        const uint64_t *masks = gs_hold_masks(h);
        for (uint32_t i = 0; i < h->npairs; i++) {
            const uint32_t d = gs_topo_node_domain(t, nodes[i], w->level);
            whole_dom *e = &plan->wdom[d];
            e->vgpus += gs_popcount64(masks[i]);
            e->top = h->priority > e->top ? h->priority : e->top;
            /* Nodes ascend, so do their domains: a new one is the last. */
            if (!v->dn || plan->wvdom[v->doff + v->dn - 1] != d)
                plan->wvdom[v->doff + v->dn++] = d;
        }
        plan->nwvdom += v->dn;
    }
    return 0;
}

static bool top_before(const int32_t *a, const int32_t *b, void *unused)
{
    (void)unused;
    return *a < *b;
}

GS_HEAP_DEFINE(tops, int32_t, void *, top_before)

static bool clearable(const gs_pl_whole *w, const whole_dom *e, uint32_t d)
{
    return w->free[d] != GS_PL_WHOLE_OUT && w->free[d] + e->vgpus == w->size;
}

/* The tier: the K-th least top among the clearable domains (INT32_MAX
 * for cost first), or false when fewer than K are clearable. */
static int tier(gs_pp *x, const gs_pl_whole *w, uint32_t k, int32_t *cap, bool *enough)
{
    gpusched_preempt_plan *plan = x->plan;
    const uint32_t nd = x->c->topo->ndom[w->level];
    if (gs_grow(&plan->alloc, (void **)&plan->prios, &plan->prios_cap, nd, sizeof *plan->prios))
        return GPUSCHED_ENOMEM;
    uint32_t n = 0;
    for (uint32_t d = 0; d < nd; d++)
        if (clearable(w, &plan->wdom[d], d))
            plan->prios[n++] = plan->wdom[d].top;
    *enough = n >= k;
    if (!*enough)
        return 0;
    *cap = INT32_MAX;
    if (x->r->in.preempt_policy == GPUSCHED_PREEMPT_PRIORITY_FIRST) {
        tops_sort(plan->prios, n, NULL);
        *cap = plan->prios[k - 1];
    }
    return 0;
}

static bool ecost_before(const uint32_t *a, const uint32_t *b, const whole_dom *wd)
{
    return gs_pp_cost_less(wd[*a].ecost, wd[*b].ecost) ||
           (!gs_pp_cost_less(wd[*b].ecost, wd[*a].ecost) && *a < *b);
}

GS_HEAP_DEFINE(by_ecost, uint32_t, const whole_dom *, ecost_before)

static uint32_t find(whole_dom *wd, uint32_t d)
{
    while (wd[d].comp != d) {
        wd[d].comp = wd[wd[d].comp].comp;
        d = wd[d].comp;
    }
    return d;
}

static void cost_add(gs_pp_cost *a, gs_pp_cost b)
{
    a->cost = a->cost + b.cost < a->cost ? UINT64_MAX : a->cost + b.cost;
    a->gpus += b.gpus;
    a->count += b.count;
}

/* Components of the candidates (clearable domains within the tier)
 * joined by the victims they share (couplers): roots in plan->wcomp in
 * domain order; per candidate its exclusive victims' cost and the mask of
 * its couplers (their index inside the component); the candidates of each
 * component grouped in plan->wcd from plan->wcdoff[ci], by exclusive cost.
 * *ok false when a component has more couplers than can be enumerated. */
static int components(gs_pp *x, const gs_pl_whole *w, int32_t cap, bool *ok)
{
    gpusched_preempt_plan *plan = x->plan;
    whole_dom *wd = plan->wdom;
    const uint32_t nd = x->c->topo->ndom[w->level];
    uint32_t ncand = 0;
    for (uint32_t d = 0; d < nd; d++)
        if (clearable(w, &wd[d], d) && wd[d].top <= cap) {
            wd[d].comp = d;
            ncand++;
        }
    for (uint32_t i = 0; i < plan->nwvic; i++) {
        whole_vic *v = &plan->wvic[i];
        v->comp = UINT32_MAX;
        v->ncand = 0;
        for (uint32_t k = 0; k < v->dn; k++) {
            const uint32_t d = plan->wvdom[v->doff + k];
            if (wd[d].comp == UINT32_MAX)
                continue;
            if (v->ncand++)
                wd[find(wd, d)].comp = find(wd, v->comp);
            else
                v->comp = d;
        }
    }
    if (gs_grow(&plan->alloc, (void **)&plan->wcomp, &plan->wcomp_cap, nd, sizeof *plan->wcomp) ||
        gs_grow(&plan->alloc, (void **)&plan->wcdoff, &plan->wcdoff_cap, nd + 1, sizeof *plan->wcdoff) ||
        gs_grow(&plan->alloc, (void **)&plan->wcd, &plan->wcd_cap, ncand, sizeof *plan->wcd))
        return GPUSCHED_ENOMEM;
    plan->nwcomp = 0;
    for (uint32_t d = 0; d < nd; d++)
        if (wd[d].comp != UINT32_MAX && find(wd, d) == d) {
            wd[d].ci = plan->nwcomp;
            plan->wcomp[plan->nwcomp++] = d;
        }
    /* Victims: exclusive ones add to their candidate, couplers get an
     * index in their component and a bit in each candidate they touch. */
    *ok = true;
    for (uint32_t i = 0; i < plan->nwvic; i++) {
        whole_vic *v = &plan->wvic[i];
        if (v->comp == UINT32_MAX)
            continue;
        const gs_pp_cost c = {v->cost, v->gpus, 1};
        v->comp = find(wd, v->comp);
        if (v->ncand == 1) {
            for (uint32_t k = 0; k < v->dn; k++)
                if (wd[plan->wvdom[v->doff + k]].comp != UINT32_MAX)
                    cost_add(&wd[plan->wvdom[v->doff + k]].ecost, c);
            continue;
        }
        whole_dom *root = &wd[v->comp];
        if (root->ncoupler == GS_WHOLE_COUPLERS_MAX) {
            *ok = false;
            return 0;
        }
        v->local = root->ncoupler++;
        for (uint32_t k = 0; k < v->dn; k++)
            if (wd[plan->wvdom[v->doff + k]].comp != UINT32_MAX)
                wd[plan->wvdom[v->doff + k]].cmask |= 1u << v->local;
    }
    /* Shared victims grouped by component (their counts are the roots'). */
    if (gs_grow(&plan->alloc, (void **)&plan->wcvoff, &plan->wcvoff_cap, plan->nwcomp + 1, sizeof *plan->wcvoff))
        return GPUSCHED_ENOMEM;
    uint32_t ncv = 0;
    for (uint32_t ci = 0; ci < plan->nwcomp; ci++) {
        plan->wcvoff[ci] = ncv;
        ncv += wd[plan->wcomp[ci]].ncoupler;
    }
    plan->wcvoff[plan->nwcomp] = ncv;
    if (gs_grow(&plan->alloc, (void **)&plan->wcv, &plan->wcv_cap, ncv + 1, sizeof *plan->wcv))
        return GPUSCHED_ENOMEM;
    for (uint32_t i = 0; i < plan->nwvic; i++) {
        const whole_vic *v = &plan->wvic[i];
        if (v->comp != UINT32_MAX && v->ncand > 1)
            plan->wcv[plan->wcvoff[wd[v->comp].ci] + v->local] = i;
    }
    /* Candidates grouped by component (counting sort), each group by
     * exclusive cost. */
    for (uint32_t ci = 0; ci <= plan->nwcomp; ci++)
        plan->wcdoff[ci] = 0;
    for (uint32_t d = 0; d < nd; d++)
        if (wd[d].comp != UINT32_MAX)
            plan->wcdoff[wd[find(wd, d)].ci + 1]++;
    for (uint32_t ci = 0; ci < plan->nwcomp; ci++)
        plan->wcdoff[ci + 1] += plan->wcdoff[ci];
    for (uint32_t d = 0; d < nd; d++)
        if (wd[d].comp != UINT32_MAX) {
            whole_dom *root = &wd[find(wd, d)];
            plan->wcd[plan->wcdoff[root->ci] + root->size++] = d;
        }
    for (uint32_t ci = 0; ci < plan->nwcomp; ci++)
        by_ecost_sort(plan->wcd + plan->wcdoff[ci], wd[plan->wcomp[ci]].size, wd);
    return 0;
}

static const gs_pp_cost NONE = {UINT64_MAX, UINT64_MAX, UINT32_MAX};

static bool is_none(gs_pp_cost a) { return a.count == UINT32_MAX; }

/* Per component, the least cost of clearing m of its candidates, m = 0 ..
 * size (plan->wmc from the component's offset plan->woff[ci]), and the
 * couplers evicted for it (plan->wms): for each set C of its couplers, the
 * candidates that need no other coupler, cheapest first, after C's cost.
 * *ok false when a component has too many sets times candidates. */
static int component_costs(gs_pp *x, bool *ok)
{
    gpusched_preempt_plan *plan = x->plan;
    const whole_dom *wd = plan->wdom;
    uint32_t total = 0;
    *ok = true;
    if (gs_grow(&plan->alloc, (void **)&plan->woff, &plan->woff_cap, plan->nwcomp + 1, sizeof *plan->woff))
        return GPUSCHED_ENOMEM;
    for (uint32_t ci = 0; ci < plan->nwcomp; ci++) {
        const whole_dom *root = &wd[plan->wcomp[ci]];
        plan->woff[ci] = total;
        total += root->size + 1;
        *ok &= ((uint64_t)root->size << root->ncoupler) <= GS_WHOLE_ENUM_MAX;
    }
    plan->woff[plan->nwcomp] = total;
    if (!*ok)
        return 0;
    if (gs_grow(&plan->alloc, (void **)&plan->wmc, &plan->wmc_cap, total, sizeof *plan->wmc) ||
        gs_grow(&plan->alloc, (void **)&plan->wms, &plan->wms_cap, total, sizeof *plan->wms) ||
        gs_grow(&plan->alloc, (void **)&plan->wsub, &plan->wsub_cap, (size_t)1 << GS_WHOLE_COUPLERS_MAX,
                sizeof *plan->wsub))
        return GPUSCHED_ENOMEM;
    /* The couplers' costs by set, per component: from the set without its
     * lowest member. Couplers of one component are listed by index. */
    for (uint32_t ci = 0; ci < plan->nwcomp; ci++) {
        const uint32_t o = plan->woff[ci], root = plan->wcomp[ci];
        const uint32_t nsets = 1u << wd[root].ncoupler;
        gs_pp_cost *sub = plan->wsub;
        sub[0] = (gs_pp_cost){0, 0, 0};
        if (nsets > 1) {
            gs_pp_cost one[GS_WHOLE_COUPLERS_MAX];
            for (uint32_t k = plan->wcvoff[ci]; k < plan->wcvoff[ci + 1]; k++) {
                const whole_vic *v = &plan->wvic[plan->wcv[k]];
                one[v->local] = (gs_pp_cost){v->cost, v->gpus, 1};
            }
            for (uint32_t set = 1; set < nsets; set++) {
                sub[set] = sub[set & (set - 1)];
                cost_add(&sub[set], one[__builtin_ctz(set)]);
            }
        }
        for (uint32_t m = 0; m <= wd[root].size; m++)
            plan->wmc[o + m] = m ? NONE : (gs_pp_cost){0, 0, 0};
        plan->wms[o] = 0;
        const uint32_t *cand = plan->wcd + plan->wcdoff[ci];
        for (uint32_t set = 0; set < nsets; set++) {
            gs_pp_cost run = sub[set];
            uint32_t m = 0;
            for (uint32_t i = 0; i < wd[root].size; i++) {
                const whole_dom *e = &wd[cand[i]];
                if (e->cmask & ~set)
                    continue;
                cost_add(&run, e->ecost);
                m++;
                if (is_none(plan->wmc[o + m]) || gs_pp_cost_less(run, plan->wmc[o + m])) {
                    plan->wmc[o + m] = run;
                    plan->wms[o + m] = set;
                }
            }
        }
    }
    return 0;
}

/* The least cost of K candidates over the components (min-plus, one
 * component at a time), the chosen domains marked; false when the pass
 * would be too large. */
static int choose(gs_pp *x, uint32_t k, gs_pp_cost *cost, bool *ok)
{
    gpusched_preempt_plan *plan = x->plan;
    whole_dom *wd = plan->wdom;
    const uint32_t nc = plan->nwcomp;
    *ok = (uint64_t)nc * (k + 1) <= GS_WHOLE_DP_MAX;
    if (!*ok)
        return 0;
    if (gs_grow(&plan->alloc, (void **)&plan->wrow, &plan->wrow_cap, 2 * ((size_t)k + 1), sizeof *plan->wrow) ||
        gs_grow(&plan->alloc, (void **)&plan->wpick, &plan->wpick_cap, (size_t)nc * (k + 1), sizeof *plan->wpick))
        return GPUSCHED_ENOMEM;
    gs_pp_cost *row = plan->wrow, *next = plan->wrow + k + 1;
    row[0] = (gs_pp_cost){0, 0, 0};
    for (uint32_t j = 1; j <= k; j++)
        row[j] = NONE;
    for (uint32_t ci = 0; ci < nc; ci++) {
        const uint32_t o = plan->woff[ci], sz = wd[plan->wcomp[ci]].size;
        uint8_t *pick = plan->wpick + (size_t)ci * (k + 1);
        for (uint32_t j = 0; j <= k; j++) {
            next[j] = row[j];
            pick[j] = 0;
            for (uint32_t m = 1; m <= sz && m <= j; m++) {
                if (is_none(row[j - m]) || is_none(plan->wmc[o + m]))
                    continue;
                gs_pp_cost c = row[j - m];
                cost_add(&c, plan->wmc[o + m]);
                if (is_none(next[j]) || gs_pp_cost_less(c, next[j])) {
                    next[j] = c;
                    pick[j] = (uint8_t)m;
                }
            }
        }
        gs_pp_cost *t = row;
        row = next;
        next = t;
    }
    if (is_none(row[k])) {
        *ok = false;
        return 0;
    }
    *cost = row[k];
    /* Back through the picks: each component's couplers and count, then
     * its cheapest candidates that need no other coupler. */
    for (uint32_t ci = nc, j = k; ci-- > 0;) {
        const uint32_t m = plan->wpick[(size_t)ci * (k + 1) + j], set = plan->wms[plan->woff[ci] + m];
        const uint32_t *cand = plan->wcd + plan->wcdoff[ci];
        for (uint32_t i = 0, taken = 0; taken < m; i++)
            if (!(wd[cand[i]].cmask & ~set)) {
                wd[cand[i]].chosen = 1;
                taken++;
            }
        j -= m;
    }
    return 0;
}

/* Lends every victim that touches a chosen domain. */
static int lend_chosen(gs_pp *x)
{
    gpusched_preempt_plan *plan = x->plan;
    for (uint32_t i = 0; i < plan->nwvic; i++) {
        const whole_vic *v = &plan->wvic[i];
        if (v->comp == UINT32_MAX)
            continue;
        bool touch = false;
        for (uint32_t k = 0; k < v->dn && !touch; k++)
            touch = plan->wdom[plan->wvdom[v->doff + k]].chosen;
        int rc = touch ? gs_pp_lend(x, v->slot) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

int gs_pp_whole_plan(gs_pp *x, int32_t *prio_cap, gs_pp_cost *cost)
{
    gs_pl_whole w;
    if (!applies(x, &w))
        return 0;
    gpusched_preempt_plan *plan = x->plan;
    plan->wlevel = w.level;
    const uint32_t k = (uint32_t)w.want;
    bool ok = k > 0;
    int32_t cap = INT32_MAX;
    int rc = 0;
    if (!ok || (rc = gather(x, &w, &ok)) || !ok || (rc = tier(x, &w, k, &cap, &ok)) || !ok ||
        (rc = components(x, &w, cap, &ok)) || !ok || (ok = (uint64_t)plan->nwcomp * (k + 1) <= GS_WHOLE_DP_MAX) == 0 ||
        (rc = component_costs(x, &ok)) || !ok ||
        (rc = choose(x, k, cost, &ok)) || !ok)
        return rc; /* an error, or the general search decides (and explains) */
    if ((rc = lend_chosen(x)) || (rc = gs_pp_feasible(x)) < 0)
        return rc;
    if (rc == 0)
        return gs_pp_unlend_to(x, 0); /* something the count does not see */
    *prio_cap = cap == INT32_MIN ? INT32_MAX : cap;
    return 1;
}
