/* How much of a request a node or a domain can hold: exact capacities
 * (memoized per search) and the upper bounds the aggregates give without
 * visiting nodes. */
#include <string.h>

#include "place-internal.h"

static const uint32_t *agg_hist(const struct gpusched_cluster *c, int32_t l, uint32_t d)
{
    return l < 0 ? c->root_hist : &c->agg[l].hist[(size_t)d * c->hist_width];
}

uint64_t gs_pl_ub_units(const gpusched_placer *p, int32_t l, uint32_t d)
{
    const struct gpusched_cluster *c = p->c;
    const gs_pl_req *r = p->req;
    if (l == (int32_t)p->nlevels)
        return gs_pl_units_of_mask(r, p->t, d, gs_cluster_node_avail(c, d));
    if (r->whole_w)
        return l < 0 ? c->root_free_nodes : c->agg[l].free_nodes[d];
    if (r->u0 == 1)
        return l < 0 ? c->root_free_gpus : c->agg[l].free_gpus[d];
    const uint32_t *h = agg_hist(c, l, d);
    uint64_t units = 0;
    for (uint32_t k = r->u0; k < c->hist_width; k++)
        units += (uint64_t)h[k] * gs_pl_div_u0(r, k);
    return units;
}

uint64_t gs_pl_ub_gpus(const gpusched_placer *p, int32_t l, uint32_t d)
{
    const struct gpusched_cluster *c = p->c;
    if (l == (int32_t)p->nlevels)
        return gs_popcount64(gs_cluster_node_avail(c, d));
    return l < 0 ? c->root_free_gpus : c->agg[l].free_gpus[d];
}

uint32_t gs_pl_ub_node_units(const gpusched_placer *p, int32_t l, uint32_t d)
{
    const struct gpusched_cluster *c = p->c;
    const gs_pl_req *r = p->req;
    if (l == (int32_t)p->nlevels)
        return gs_pl_units_of_mask(r, p->t, d, gs_cluster_node_avail(c, d));
    if (r->whole_w)
        return (l < 0 ? c->root_free_nodes : c->agg[l].free_nodes[d]) ? 1 : 0;
    const uint32_t *h = agg_hist(c, l, d);
    for (uint32_t k = c->hist_width; k-- > 1;)
        if (h[k])
            return gs_pl_div_u0(r, k);
    return 0;
}

void gs_pl_children(const gpusched_placer *p, int32_t l, uint32_t d, uint32_t *first, uint32_t *end)
{
    const struct gpusched_topo *t = p->t;
    if (l < 0) {
        *first = 0;
        *end = t->ndom[0];
    } else if ((uint32_t)l + 1 == t->nlevels) {
        *first = t->dom_start[l][d];
        *end = t->dom_start[l][d + 1];
    } else {
        *first = t->child_start[l][d];
        *end = t->child_start[l][d + 1];
    }
}

static bool avoided_ready(gpusched_placer *p);

/* Level l's capacities in their pooled form, where no constraint is
 * deeper and a unit is a count in the aggregates (any split: free GPUs;
 * whole nodes: fully free nodes), less the avoided nodes' when they are the
 * request's only filter: cap(l, d) = (count[d] - avoided(d)) / per. */
typedef struct gs_pooled {
    const uint32_t *count;
    const uint32_t *av_gen, *av_val;    /* NULL: nothing avoided */
    uint32_t epoch, per;
} gs_pooled;

static bool pooled(gpusched_placer *p, int32_t l, gs_pooled *o)
{
    const gs_pl_req *r = p->req;
    if (r->deepest_cons > l || l < 0 || l >= (int32_t)p->nlevels || (r->u0 > 1 && !r->whole_w))
        return false;
    const bool avoided = !r->agg_exact_nodes;
    if (avoided && !(r->avoid_exact && avoided_ready(p)))
        return false;
    o->count = r->whole_w ? p->c->agg[l].free_nodes : p->c->agg[l].free_gpus;
    o->av_gen = avoided ? p->avu_gen[l] : NULL;
    o->av_val = avoided ? p->avu_val[l] : NULL;
    o->epoch = p->avu_epoch;
    o->per = r->unit[LV(l)] / r->u0; /* counted things per unit of level l */
    return true;
}

/* The capacities of domains [a, b) of level l summed, and the number of
 * them holding a unit, in one tight loop: a 200k-GPU gang sums the
 * capacities of every rack, a reservation's probes those of every rack
 * outside the reserved nodes, and a failure's explanation counts them.
 * false when they are not pooled. */
bool gs_pl_pooled_sum(gpusched_placer *p, int32_t l, uint32_t a, uint32_t b, uint64_t *sum, uint32_t *holding)
{
    gs_pooled o;
    if (!pooled(p, l, &o))
        return false;
    uint64_t s = 0;
    uint32_t h = 0;
    if (holding) { /* an explanation: the census too */
        for (uint32_t d = a; d < b; d++) {
            uint32_t c = (o.count[d] - (o.av_gen && o.av_gen[d] == o.epoch ? o.av_val[d] : 0)) / o.per;
            s += c;
            h += c > 0;
        }
    } else if (o.av_gen && o.per == 1) {
        for (uint32_t d = a; d < b; d++)
            s += o.count[d] - (o.av_gen[d] == o.epoch ? o.av_val[d] : 0);
    } else if (o.av_gen) {
        for (uint32_t d = a; d < b; d++)
            s += (o.count[d] - (o.av_gen[d] == o.epoch ? o.av_val[d] : 0)) / o.per;
    } else if (o.per == 1) {
        for (uint32_t d = a; d < b; d++)
            s += o.count[d];
    } else {
        for (uint32_t d = a; d < b; d++)
            s += o.count[d] / o.per;
    }
    *sum = s;
    if (holding)
        *holding = h;
    return true;
}

/* Adds u (modulo 2^32: a change may be negative) to the avoided units of
 * node v's domains, stamped with the current epoch. */
static void avoided_add(gpusched_placer *p, uint32_t v, uint32_t u)
{
    const struct gpusched_topo *t = p->t;
    uint32_t d = t->node_leaf[v];
    for (uint32_t l = p->nlevels; l-- > 0;) {
        if (p->avu_gen[l][d] != p->avu_epoch) {
            p->avu_gen[l][d] = p->avu_epoch;
            p->avu_val[l][d] = 0;
        }
        p->avu_val[l][d] += u;
        if (l)
            d = t->dom_parent[l][d];
    }
}

/* Whether the request avoids the list the units were last summed for,
 * counting the same units. */
static bool same_avoided(const gpusched_placer *p, const gs_pl_req *r)
{
    return p->avc_valid && r->in.avoid_count == p->avc_nraw && r->u0 == p->avc_u0 && r->whole_w == p->avc_whole &&
           !memcmp(r->in.avoid_nodes, p->avc_raw, (size_t)p->avc_nraw * sizeof *p->avc_raw);
}

/* The sums from scratch under a new epoch, each distinct node counted at
 * its first place in the list; false when the lists cannot grow. */
static bool avoided_sum(gpusched_placer *p, const gs_pl_req *r)
{
    const uint32_t *list = r->in.avoid_nodes, n = r->in.avoid_count;
    p->avc_valid = false;
    if (gs_grow(&p->alloc, (void **)&p->avc_raw, &p->avc_cap, n, sizeof *p->avc_raw))
        return false;
    uint32_t *node = gs_realloc_array(&p->alloc, p->avc_node, p->avc_cap, sizeof *node);
    if (node)
        p->avc_node = node;
    uint32_t *units = node ? gs_realloc_array(&p->alloc, p->avc_units, p->avc_cap, sizeof *units) : NULL;
    if (units)
        p->avc_units = units;
    uint32_t *stamp = units ? gs_realloc_array(&p->alloc, p->avc_stamp, p->avc_cap, sizeof *stamp) : NULL;
    if (!stamp || gs_cluster_track_nodes(p->c))
        return false;
    p->avc_stamp = stamp;
    const uint32_t *now = p->c->node_stamp;
    if (++p->avu_epoch == 0) {
        for (uint32_t l = 0; l < p->nlevels; l++)
            memset(p->avu_gen[l], 0, p->t->ndom[l] * sizeof *p->avu_gen[l]);
        p->avu_epoch = 1;
    }
    uint64_t root = 0;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = list[i];
        if (p->avoid_gen[v] != p->gen)
            continue; /* listed twice: counted at its first place */
        p->avoid_gen[v] = p->gen - 1;
        uint32_t u = gs_pl_units_of_mask(r, p->t, v, gs_cluster_node_avail(p->c, v));
        p->avc_node[m] = v;
        p->avc_stamp[m] = now[v];
        p->avc_units[m++] = u;
        root += u;
        if (u)
            avoided_add(p, v, u);
    }
    for (uint32_t i = 0; i < n; i++)
        p->avoid_gen[list[i]] = p->gen;
    memcpy(p->avc_raw, list, (size_t)n * sizeof *p->avc_raw);
    p->avc_nraw = n;
    p->avc_n = m;
    p->avc_u0 = r->u0;
    p->avc_whole = r->whole_w;
    p->avu_root = root;
    p->avc_valid = true;
    return true;
}

/* For a request whose only filter is its avoided nodes: the units the
 * avoided nodes hold, per domain, so that a domain's capacity is its
 * aggregates' less them instead of a visit of its nodes (a reservation
 * search avoids the nodes of the reservations before it, and probes the
 * whole cluster many times). Summed once per search, in O(avoided nodes x
 * levels); a search that avoids the same list as the last (the probes of
 * one reservation search) only compares each node's change counter with
 * the one it was counted at, O(avoided nodes) loads, and counts again and
 * carries up the nodes touched since (those a lent or unlent job held).
 * false if the scratch cannot be allocated: the caller visits the nodes. */
static bool avoided_ready(gpusched_placer *p)
{
    if (p->avu_done == p->gen)
        return true;
    const struct gpusched_topo *t = p->t;
    for (uint32_t l = 0; l < p->nlevels; l++)
        if (!p->avu_gen[l] && (!(p->avu_val[l] = gs_calloc(&p->alloc, t->ndom[l], sizeof *p->avu_val[l])) ||
                               !(p->avu_gen[l] = gs_calloc(&p->alloc, t->ndom[l], sizeof *p->avu_gen[l])))) {
            gs_free(&p->alloc, p->avu_val[l]);
            p->avu_val[l] = NULL;
            return false;
        }
    const gs_pl_req *r = p->req;
    if (same_avoided(p, r)) {
        const uint32_t *now = p->c->node_stamp; /* started by avoided_sum */
        for (uint32_t i = 0; i < p->avc_n; i++) {
            uint32_t v = p->avc_node[i];
            if (now[v] == p->avc_stamp[i])
                continue; /* untouched since counted */
            p->avc_stamp[i] = now[v];
            uint32_t u = gs_pl_units_of_mask(r, t, v, gs_cluster_node_avail(p->c, v));
            if (u != p->avc_units[i]) {
                p->avu_root += u;
                p->avu_root -= p->avc_units[i];
                avoided_add(p, v, u - p->avc_units[i]);
                p->avc_units[i] = u;
            }
        }
    } else if (!avoided_sum(p, r)) {
        return false;
    }
    p->avu_done = p->gen;
    return true;
}

static uint64_t avoided_units(const gpusched_placer *p, int32_t l, uint32_t d)
{
    if (l < 0)
        return p->avu_root;
    return p->avu_gen[l][d] == p->avu_epoch ? p->avu_val[l][d] : 0;
}

bool gs_pl_units_less_avoided(gpusched_placer *p, int32_t l, uint32_t d, uint64_t *units)
{
    if (!p->req->avoid_exact || !avoided_ready(p))
        return false;
    *units = gs_pl_ub_units(p, l, d) - avoided_units(p, l, d);
    return true;
}

/* Whether gs_pl_cap() counts level l's capacities from the aggregates
 * alone: no constraint below l, whose units pool freely. */
static bool caps_exact(const gpusched_placer *p, int32_t l)
{
    const gs_pl_req *r = p->req;
    return l >= 0 && l < (int32_t)p->nlevels && r->agg_exact_nodes && r->deepest_cons <= l;
}

/* gs_pl_cap() of domains [a, b) of level l where caps_exact(): into out
 * when given, and their sum, in one loop over the aggregates (the loop a
 * wide level's capacities cost: a zone's racks for a gang of pods). */
static uint64_t exact_caps(const gpusched_placer *p, int32_t l, uint32_t a, uint32_t b, uint32_t *out)
{
    const gs_pl_req *r = p->req;
    const struct gpusched_cluster *c = p->c;
    const uint64_t u0 = r->u0, unit = r->unit[LV(l)];
    uint64_t sum = 0;
    if (r->whole_w || u0 == 1) {
        const uint32_t *count = r->whole_w ? c->agg[l].free_nodes : c->agg[l].free_gpus;
        if (unit == u0) { /* the level's unit is what the aggregates count: no division */
            for (uint32_t d = a; d < b; d++) {
                sum += count[d];
                if (out)
                    out[d - a] = count[d];
            }
            return sum;
        }
        const gs_divisor by = gs_divisor_of((uint32_t)unit);
        for (uint32_t d = a; d < b; d++) {
            const uint32_t v = gs_divide(by, (uint32_t)(count[d] * u0));
            sum += v;
            if (out)
                out[d - a] = v;
        }
        return sum;
    }
    const uint32_t H = c->hist_width;
    uint32_t per_node[GPUSCHED_MAX_NODE_GPUS + 1];
    for (uint32_t k = (uint32_t)u0; k < H; k++)
        per_node[k] = gs_pl_div_u0(r, k);
    const gs_divisor by = gs_divisor_of((uint32_t)unit);
    for (uint32_t d = a; d < b; d++) {
        const uint32_t *h = &c->agg[l].hist[(size_t)d * H];
        uint64_t units = 0;
        for (uint32_t k = (uint32_t)u0; k < H; k++)
            units += (uint64_t)h[k] * per_node[k];
        /* A pod is the level's unit unless a slice is: no division then. */
        const uint32_t v = unit == u0 ? (uint32_t)units : gs_divide(by, (uint32_t)(units * u0));
        sum += v;
        if (out)
            out[d - a] = v;
    }
    return sum;
}

static uint32_t cap_from_children(gpusched_placer *p, int32_t l, uint32_t d)
{
    uint32_t a, b;
    gs_pl_children(p, l, d, &a, &b);
    uint64_t sum = 0;
    if (gs_pl_pooled_sum(p, l + 1, a, b, &sum, NULL))
        ;
    else if (caps_exact(p, l + 1))
        sum = exact_caps(p, l + 1, a, b, NULL);
    else
        for (uint32_t ch = a; ch < b; ch++)
            sum += gs_pl_cap(p, l + 1, ch);
    return (uint32_t)(sum / p->req->ratio[LV(l)]);
}

void gs_pl_caps(gpusched_placer *p, int32_t l, uint32_t a, uint32_t b, uint32_t *out)
{
    if (caps_exact(p, l)) {
        exact_caps(p, l, a, b, out);
        return;
    }
    for (uint32_t d = a; d < b; d++)
        out[d - a] = gs_pl_cap(p, l, d);
}

uint32_t gs_pl_cap(gpusched_placer *p, int32_t l, uint32_t d)
{
    const gs_pl_req *r = p->req;
    if (l == (int32_t)p->nlevels)
        return gs_pl_node_units(p, d);
    /* No constraint below this level: the units of the domain's nodes pool
     * freely, and the aggregates count them exactly. */
    if (r->agg_exact_nodes && r->deepest_cons <= l)
        return (uint32_t)(gs_pl_ub_units(p, l, d) * r->u0 / r->unit[LV(l)]);
    if (r->avoid_exact && r->deepest_cons <= l && avoided_ready(p))
        return (uint32_t)((gs_pl_ub_units(p, l, d) - avoided_units(p, l, d)) * r->u0 / r->unit[LV(l)]);
    if (l < 0)
        return cap_from_children(p, l, d);
    if (p->cap_gen[l][d] == p->gen)
        return p->cap_val[l][d];
    uint32_t v = cap_from_children(p, l, d);
    p->cap_gen[l][d] = p->gen;
    p->cap_val[l][d] = v;
    return v;
}

int gs_pl_fewest_under(gpusched_placer *p, int32_t l, uint32_t d, int32_t j, uint64_t *count)
{
    const struct gpusched_topo *t = p->t;
    const uint32_t first = l < 0 ? 0 : t->dom_start[l][d];
    const uint32_t last = l < 0 ? t->nnodes - 1 : t->dom_start[l][d + 1] - 1;
    const uint32_t a = gs_topo_node_domain(t, first, (uint32_t)j);
    const uint32_t b = gs_topo_node_domain(t, last, (uint32_t)j) + 1;
    *count = 0;
    if (b - a > GS_PL_BOUND_DOMS_MAX)
        return 0;
    gs_arena_mark m = gs_arena_save(&p->arena);
    uint32_t *cap = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *cap);
    if (!cap)
        return GPUSCHED_ENOMEM;
    gs_pl_caps(p, j, a, b, cap);
    gs_pl_sort_u32_desc(cap, b - a);
    const uint64_t want = p->req->gpus / p->req->unit[LV(j)];
    uint64_t held = 0;
    while (*count < b - a && held < want)
        held += cap[(*count)++];
    gs_arena_restore(&p->arena, m);
    return 0;
}
