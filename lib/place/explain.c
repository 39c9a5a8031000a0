/* Saying why a gang does not fit, in numbers: the first hard constraint,
 * from the loosest to the tightest, that leaves too little. Runs only on
 * failure; it reads the aggregates where they count the request exactly,
 * and may read every domain of a constraint's level (doc/placement.md,
 * "Failure"). */
#include <stdio.h>

#include "place-internal.h"

void gs_pl_fmt_count(char *buf, size_t cap, uint64_t n)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)n);
    size_t o = 0;
    for (int i = 0; i < len && o + 1 < cap; i++) {
        if (i && (len - i) % 3 == 0 && o + 2 < cap)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o < cap ? o : cap - 1] = '\0';
}

typedef struct gs_num {
    char s[32];
} gs_num;

static gs_num num(uint64_t n)
{
    gs_num x;
    gs_pl_fmt_count(x.s, sizeof x.s, n);
    return x;
}

static void say(gpusched_place_result *res, uint32_t reason, const char *fmt, ...) GS_PRINTF(3, 4);
static void say(gpusched_place_result *res, uint32_t reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->msg, sizeof res->msg, fmt, ap);
    va_end(ap);
    res->reason = reason;
}

/* What one unit of a level is called in a message. */
static void unit_name(const gpusched_placer *p, uint32_t unit, char *buf, size_t cap)
{
    const gs_pl_req *r = p->req;
    if (unit != r->u0)
        snprintf(buf, cap, "slices of %u GPUs", unit);
    else if (r->split == GPUSCHED_SPLIT_PODS)
        snprintf(buf, cap, "pods of %u GPUs", unit);
    else if (r->whole_w)
        snprintf(buf, cap, "whole nodes of %u GPUs", unit);
    else
        snprintf(buf, cap, "GPUs");
}

/* The cluster's free GPUs less the avoided nodes' (each counted once):
 * O(avoided nodes) where a visit of every node would give the same. */
static uint64_t free_gpus_less_avoided(gpusched_placer *p)
{
    const gpusched_place_request *q = &p->req->in;
    uint64_t avoided = 0;
    for (uint32_t i = 0; i < q->avoid_count; i++) {
        const uint32_t v = q->avoid_nodes[i];
        if (p->avoid_gen[v] != p->gen)
            continue; /* listed twice: counted at its first place */
        p->avoid_gen[v] = p->gen - 1;
        avoided += gs_popcount64(gs_cluster_node_avail(p->c, v));
    }
    for (uint32_t i = 0; i < q->avoid_count; i++)
        p->avoid_gen[q->avoid_nodes[i]] = p->gen;
    return p->c->root_free_gpus - avoided;
}

static uint64_t eligible_free_gpus(gpusched_placer *p)
{
    const gs_pl_req *r = p->req;
    const gpusched_place_request *in = &r->in;
    if (in->gpu_class == GPUSCHED_NONE && !in->labels_required && !in->labels_forbidden)
        return free_gpus_less_avoided(p);
    gs_pl_req any = *r;
    any.whole_w = 0;
    gs_pl_set_u0(&any, 1);
    gpusched_placer *q = (gpusched_placer *)p;
    q->req = &any;
    uint64_t sum = 0;
    for (uint32_t n = 0; n < p->t->nnodes; n++)
        sum += gs_pl_node_units(q, n);
    q->req = r;
    return sum;
}

static uint64_t node_units_total(gpusched_placer *p)
{
    uint64_t units;
    if (p->req->agg_exact_nodes)
        return gs_pl_ub_units(p, -1, 0);
    if (gs_pl_units_less_avoided(p, -1, 0, &units))
        return units;
    uint64_t sum = 0;
    for (uint32_t n = 0; n < p->t->nnodes; n++)
        sum += gs_pl_node_units(p, n);
    return sum;
}

/* What domain d of level l holds in units of the level below: from the
 * aggregates when no constraint is deeper than l (then the units below
 * are the request's node-level units and the aggregates count them, less
 * the avoided nodes' when those are the only filter), else from the
 * children's capacities. */
static uint64_t content_below(gpusched_placer *p, int32_t l, uint32_t d)
{
    const gs_pl_req *r = p->req;
    uint64_t units;
    if (r->agg_exact_nodes && r->deepest_cons <= l)
        return gs_pl_ub_units(p, l, d);
    if (r->deepest_cons <= l && gs_pl_units_less_avoided(p, l, d, &units))
        return units;
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    uint64_t below = 0;
    for (uint32_t ch = a; ch < b; ch++)
        below += gs_pl_cap(p, l + 1, ch);
    return below;
}

/* Domains of a level holding at least one unit and the units in all. */
static void level_census(gpusched_placer *p, int32_t l, uint32_t *holding, uint64_t *units)
{
    if (gs_pl_pooled_sum(p, l, 0, p->t->ndom[l], units, holding))
        return;
    *holding = 0;
    *units = 0;
    for (uint32_t d = 0; d < p->t->ndom[l]; d++) {
        uint32_t c = gs_pl_cap(p, l, d);
        *holding += c > 0;
        *units += c;
    }
}

/* The largest of a level's counts (free nodes, free GPUs), a chunk at a
 * time so that the loop vectorizes, stopping after a chunk that reaches
 * `most`. */
static uint64_t max_count(const uint32_t *v, uint32_t n, uint64_t most)
{
    uint32_t best = 0;
    for (uint32_t a = 0; a < n && best < most; a += 256) {
        uint32_t b = n - a < 256 ? n : a + 256;
        for (uint32_t d = a; d < b; d++)
            best = v[d] > best ? v[d] : best;
    }
    return best;
}

/* Whether some domain of the level holds the whole gang: none can when
 * the gang is larger than the level's largest domain. */
static bool some_domain_holds(gpusched_placer *p, int32_t l)
{
    if (p->req->gpus > p->max_dom_gpus[LV(l)])
        return false;
    uint64_t units;
    uint32_t holding;
    if (gs_pl_pooled_sum(p, l, 0, p->t->ndom[l], &units, &holding))
        return holding > 0;
    for (uint32_t d = 0; d < p->t->ndom[l]; d++)
        if (gs_pl_cap(p, l, d))
            return true;
    return false;
}

/* The same for pods: each domain's histogram weighed by the pods each
 * node size holds. */
static uint64_t max_pods(const gpusched_placer *p, int32_t l, uint64_t most)
{
    const struct gpusched_cluster *c = p->c;
    const uint32_t w = c->hist_width, n = p->t->ndom[l];
    uint32_t per[GPUSCHED_MAX_NODE_GPUS + 1];
    for (uint32_t k = 0; k < w; k++)
        per[k] = k >= p->req->u0 ? gs_pl_div_u0(p->req, k) : 0;
    const uint32_t *h = c->agg[l].hist;
    uint32_t best = 0;
    for (uint32_t a = 0; a < n && best < most; a += 64) {
        uint32_t b = n - a < 64 ? n : a + 64;
        for (uint32_t d = a; d < b; d++) {
            const uint32_t *hd = h + (size_t)d * w;
            uint32_t units = 0;
            for (uint32_t k = 0; k < w; k++)
                units += hd[k] * per[k];
            best = units > best ? units : best;
        }
    }
    return best;
}

/* The best domain's content in units of the level below; the scan stops
 * at a domain as full as the largest domain can be (an empty cluster's
 * first domain). Where the aggregates count the units, one pass over
 * them. */
static uint64_t best_content(gpusched_placer *p, int32_t l)
{
    const gs_pl_req *r = p->req;
    const uint64_t most = p->max_dom_gpus[LV(l)] / r->unit[LV(l + 1)];
    if (r->agg_exact_nodes && r->deepest_cons <= l) {
        if (r->whole_w)
            return max_count(p->c->agg[l].free_nodes, p->t->ndom[l], most);
        if (r->u0 == 1)
            return max_count(p->c->agg[l].free_gpus, p->t->ndom[l], most);
        return max_pods(p, l, most);
    }
    uint64_t best = 0;
    for (uint32_t d = 0; d < p->t->ndom[l] && best < most; d++) {
        uint64_t below = content_below(p, l, d);
        if (below > best)
            best = below;
    }
    return best;
}

static void say_required(gpusched_placer *p, gpusched_place_result *res, int32_t l)
{
    const gs_pl_req *r = p->req;
    const char *lname = p->t->level_names[l];
    char below[48];
    unit_name(p, r->unit[LV(l + 1)], below, sizeof below);
    uint64_t want = r->gpus / r->unit[LV(l + 1)];
    say(res, GPUSCHED_REASON_REQUIRED, "required %s: the best %s holds %s of %s %s", lname, lname,
        num(best_content(p, l)).s, num(want).s, below);
}

/* A required level's failure from a figure that costs at most one load
 * per domain of the level: a gang larger than the level's largest domain
 * (a static figure), or one with more GPUs than any domain has free (the
 * scan stops at a domain with enough). False when neither proves it. */
static bool say_required_cheaply(gpusched_placer *p, gpusched_place_result *res, int32_t l)
{
    const gs_pl_req *r = p->req;
    const char *lname = p->t->level_names[l];
    if (r->gpus > p->max_dom_gpus[LV(l)]) {
        say(res, GPUSCHED_REASON_REQUIRED, "required %s: the largest %s has %s GPUs, %s asked", lname, lname,
            num(p->max_dom_gpus[LV(l)]).s, num(r->gpus).s);
        return true;
    }
    uint64_t best = max_count(p->c->agg[l].free_gpus, p->t->ndom[l], r->gpus);
    if (best >= r->gpus)
        return false;
    say(res, GPUSCHED_REASON_REQUIRED, "required %s: the best %s has %s free GPUs, %s asked", lname, lname,
        num(best).s, num(r->gpus).s);
    return true;
}

static bool explain_constraints(gpusched_placer *p, gpusched_place_result *res)
{
    const gs_pl_req *r = p->req;
    /* A required level that the free GPUs alone refute is said first,
     * whatever the slices: a census may read every domain of a deep
     * level (the racks of a million GPUs). */
    if (r->stop >= 0 && say_required_cheaply(p, res, r->stop))
        return true;
    for (uint32_t i = r->ncons; i-- > 0;) {
        const gs_pl_cons *c = &r->cons[i];
        int32_t l = (int32_t)c->level;
        const char *lname = p->t->level_names[l];
        if (c->size == r->gpus) {
            if (some_domain_holds(p, l))
                continue;
            say_required(p, res, l);
            return true;
        }
        uint32_t holding;
        uint64_t units;
        level_census(p, l, &holding, &units);
        uint64_t need = r->gpus / c->size;
        if (units < need) {
            say(res, GPUSCHED_REASON_SLICES, "slices of %u GPUs at %s: %s %ss can hold a slice (%s slices in all), %s needed",
                c->size, lname, num(holding).s, lname, num(units).s, num(need).s);
            return true;
        }
    }
    return false;
}

void gs_pl_explain(gpusched_placer *p, gpusched_place_result *res)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    if (c->root_free_gpus < r->gpus) {
        say(res, GPUSCHED_REASON_NO_GPUS, "%s GPUs asked, the cluster has %s usable free GPUs", num(r->gpus).s,
            num(c->root_free_gpus).s);
        return;
    }
    if (r->filtered) {
        uint64_t e = eligible_free_gpus(p);
        if (e < r->gpus) {
            say(res, GPUSCHED_REASON_ELIGIBLE, "gpu class, labels and avoided nodes leave %s eligible free GPUs, %s asked",
                num(e).s, num(r->gpus).s);
            return;
        }
    }
    if (r->u0 > 1) {
        uint64_t have = node_units_total(p), need = r->gpus / r->u0;
        if (have < need) {
            char name[48];
            unit_name(p, r->u0, name, sizeof name);
            say(res, GPUSCHED_REASON_SPLIT, "%s: the nodes can hold %s of %s", name, num(have).s, num(need).s);
            return;
        }
    }
    if (explain_constraints(p, res))
        return;
    say(res, GPUSCHED_REASON_SLICES, "the constraints together leave no placement for %s GPUs", num(r->gpus).s);
}
