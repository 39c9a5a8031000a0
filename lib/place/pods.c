/* Placing pods with resources and GPU fractions (place.h, "Pods with
 * resources"; doc/resources.md).
 *
 * All pods of a gang have one shape, so a node's worth is one number: how
 * many of them it holds now (gs_pl_pod_cap), the least over its free
 * resources, its GPUs and the gang's size. Domains hold the sum of their
 * nodes'. That makes the search exact and simple: the required level's
 * domain that holds the gang with the least to spare, inside it the fewest
 * domains of the preferred level, then nodes: one pod by the policy, a
 * larger gang on the fewest nodes (the last one the tightest). */
#include <stdio.h>
#include <string.h>

#include "cluster/txn.h"
#include "place-internal.h"

/* ---- the request --------------------------------------------------------- */

static int load_resources(gpusched_placer *p, gs_pl_req *r)
{
    const gpusched_place_request *q = &r->in;
    const struct gpusched_topo *t = p->t;
    if (q->resource_count > t->nres)
        return gs_error(&p->err, GPUSCHED_ERANGE,
                        "place request: resource_count is %u but the topology declares %u resources",
                        q->resource_count, t->nres);
    if (q->resource_count && !q->resources)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: resource_count is %u but resources is NULL",
                        q->resource_count);
    for (uint32_t i = 0; i < q->resource_count; i++) {
        if (q->resources[i] > UINT32_MAX)
            return gs_error(&p->err, GPUSCHED_EINVAL,
                            "place request: resources[%u] (%s) is %llu, more than a node can have (4294967295)", i,
                            t->res_names[i], (unsigned long long)q->resources[i]);
        r->shape.res[i] = (uint32_t)q->resources[i];
    }
    r->shape.nres = q->resource_count;
    return 0;
}

static int load_classes(gpusched_placer *p, gs_pl_req *r)
{
    const gpusched_place_request *q = &r->in;
    const struct gpusched_topo *t = p->t;
    if (q->gpu_class_count && !q->gpu_classes)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: gpu_class_count is %u but gpu_classes is NULL",
                        q->gpu_class_count);
    r->shape.any_class = q->gpu_class == GPUSCHED_NONE && q->gpu_class_count == 0;
    memset(r->shape.classes, 0, sizeof r->shape.classes);
    for (uint32_t i = 0; i <= q->gpu_class_count; i++) {
        uint32_t cls = i < q->gpu_class_count ? q->gpu_classes[i] : q->gpu_class;
        if (i == q->gpu_class_count && cls == GPUSCHED_NONE)
            break;
        if (cls >= t->nclasses)
            return gs_error(&p->err, GPUSCHED_ERANGE, "place request: gpu_classes[%u] is %u but the topology has %u classes",
                            i, cls, t->nclasses);
        r->shape.classes[cls >> 6] |= (uint64_t)1 << (cls & 63);
    }
    return 0;
}

/* Up to two slice constraints, each of whole pods (slice_gpus / GPUs per
 * pod): the outer one, at the shallower level, into slice_pods and
 * slice_level, the inner one into slice2_*. They nest: the inner slice's
 * pods divide the outer's. A constraint at or above the required level is
 * dropped: the required domain holds its slices already. */
static int load_slices(gpusched_placer *p, gs_pl_req *r, uint32_t per_pod, uint32_t npods)
{
    const gpusched_place_request *q = &r->in;
    uint32_t n = 0, pods[GPUSCHED_MAX_SLICES], level[GPUSCHED_MAX_SLICES];
    for (uint32_t i = 0; i < GPUSCHED_MAX_SLICES; i++) {
        int rc = gs_pl_check_slice(p, q, i);
        if (rc < 0)
            return rc;
        if (rc)
            continue;
        if (!per_pod || q->slice_gpus[i] % per_pod || npods % (q->slice_gpus[i] / per_pod))
            return gs_error(&p->err, GPUSCHED_EINVAL,
                            "place request: slices of %u GPUs must be whole pods of %u GPUs and divide %u pods",
                            q->slice_gpus[i], per_pod, npods);
        pods[n] = q->slice_gpus[i] / per_pod;
        level[n++] = q->slice_level[i];
    }
    if (n == 2) {
        if (level[0] == level[1])
            return gs_error(&p->err, GPUSCHED_EINVAL, "place request: two slice constraints at level %u",
                            level[0]);
        if (level[1] < level[0]) { /* the outer one first */
            const uint32_t tp = pods[0], tl = level[0];
            pods[0] = pods[1], level[0] = level[1];
            pods[1] = tp, level[1] = tl;
        }
        if (pods[0] % pods[1])
            return gs_error(&p->err, GPUSCHED_EINVAL,
                            "place request: slices must nest: %u pods at level %u are not whole slices of %u pods at "
                            "level %u",
                            pods[0], level[0], pods[1], level[1]);
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (q->required_level == GPUSCHED_NONE || q->required_level < level[i]) {
            pods[k] = pods[i];
            level[k++] = level[i];
        }
    r->slice_pods = k > 0 ? pods[0] : 0;
    r->slice_level = k > 0 ? level[0] : 0;
    r->slice2_pods = k > 1 ? pods[1] : 0;
    r->slice2_level = k > 1 ? level[1] : 0;
    return 0;
}

int gs_pl_pods_load(gpusched_placer *p, gs_pl_req *r)
{
    const gpusched_place_request *q = &r->in;
    if (q->policy > GPUSCHED_POLICY_FRAG)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: policy %u unknown (0 to %u)", q->policy,
                        (unsigned)GPUSCHED_POLICY_FRAG);
    r->pods_path = gs_pl_req_wants_pods(q);
    if (!r->pods_path)
        return 0;
    r->npods = 0;
    r->policy = 0;
    r->slice_pods = r->slice_level = r->slice2_pods = r->slice2_level = 0;
    memset(&r->shape, 0, sizeof r->shape);
    if (q->split != GPUSCHED_SPLIT_PODS && q->split != GPUSCHED_SPLIT_WHOLE_NODES)
        return gs_error(&p->err, GPUSCHED_EINVAL,
                        "place request: pods with resources or a GPU fraction need split pods or whole nodes (split "
                        "is %u)",
                        q->split);
    const bool whole = q->split == GPUSCHED_SPLIT_WHOLE_NODES;
    if (whole && q->gpu_milli && q->gpu_milli != 1000)
        return gs_error(&p->err, GPUSCHED_EINVAL,
                        "place request: gpu_milli %u with whole nodes: a pod on a whole node takes whole GPUs",
                        q->gpu_milli);
    if (q->gpu_milli > 1000)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: gpu_milli is %u, 0 to 1000 expected", q->gpu_milli);
    const uint32_t milli = q->gpu_milli == 1000 ? 0 : q->gpu_milli;
    /* Whole nodes: pod_gpus is the node size (0: the largest node). */
    const uint32_t pod_gpus = whole ? (q->pod_gpus ? q->pod_gpus : p->t->max_node_gpus)
                              : q->gpu_milli == 1000 && q->pod_gpus == 0 ? 1 : q->pod_gpus;
    if (milli && pod_gpus > 1)
        return gs_error(&p->err, GPUSCHED_EINVAL,
                        "place request: a fraction of a GPU (gpu_milli %u) with pod_gpus %u: a fraction is of one GPU",
                        milli, pod_gpus);
    if (pod_gpus > GPUSCHED_MAX_NODE_GPUS)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: pod_gpus is %u, 0 to %u expected", pod_gpus,
                        GPUSCHED_MAX_NODE_GPUS);
    const uint32_t per_pod = milli ? 1 : pod_gpus;
    uint32_t npods = q->pods;
    if (!npods) {
        if (!per_pod || !q->gpus || q->gpus % per_pod)
            return gs_error(&p->err, GPUSCHED_EINVAL,
                            "place request: pods is 0 and gpus (%u) is not a positive multiple of %u GPUs per pod",
                            q->gpus, per_pod);
        npods = q->gpus / per_pod;
    } else if (q->gpus && (uint64_t)npods * per_pod != q->gpus) {
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: gpus is %u but %u pods of %u GPUs make %llu",
                        q->gpus, npods, per_pod, (unsigned long long)npods * per_pod);
    }
    int rc = load_slices(p, r, per_pod, npods);
    if (rc)
        return rc;
    r->shape.pod_gpus = milli ? 0 : pod_gpus;
    r->shape.milli = milli;
    r->shape.whole_node = whole;
    r->npods = npods;
    r->gpus = (uint32_t)((uint64_t)npods * per_pod > UINT32_MAX ? UINT32_MAX : npods * per_pod);
    r->policy = q->policy ? q->policy : GPUSCHED_POLICY_FRAG;
    rc = load_resources(p, r);
    return rc ? rc : load_classes(p, r);
}

/* ---- what a node holds --------------------------------------------------- */

/* GPUs of node n with at least `milli` free: fully free ones and shared
 * ones with room. */
static uint64_t milli_room(const struct gpusched_cluster *c, uint32_t n, uint64_t avail, uint32_t milli)
{
    uint64_t room = avail;
    if (c->node_shared && c->node_shared[n] && (!c->nodes_not_up || c->node_health[n] == GPUSCHED_NODE_UP)) {
        const uint16_t *used = &c->gpu_milli_used[gs_cl_gpu_base(c, n)];
        for (uint64_t m = c->node_shared[n]; m; m &= m - 1) {
            uint32_t g = gs_ctz64(m);
            if (used[g] + milli <= 1000)
                room |= (uint64_t)1 << g;
        }
    }
    return room;
}

/* A node for a whole-node pod: exactly pod_gpus GPUs, all free, and
 * nothing held of any resource (so nothing runs there). */
static bool node_idle(const gpusched_placer *p, const gs_pod_shape *s, uint32_t n)
{
    const struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    if (t->node_gpus[n] != s->pod_gpus || c->node_free[n] != gs_node_all_mask(s->pod_gpus))
        return false;
    for (uint32_t i = 0; i < t->nres; i++)
        if (c->res_free[i][n] != t->node_res[i][n])
            return false;
    return true;
}

uint32_t gs_pl_pod_cap(const gpusched_placer *p, const gs_pl_req *r, uint32_t n, uint32_t limit)
{
    const struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    const gs_pod_shape *s = &r->shape;
    const gpusched_place_request *q = &r->in;
    if (c->nodes_not_up && c->node_health[n] != GPUSCHED_NODE_UP)
        return 0;
    if (!gs_shape_class_ok(s, t->node_class[n]))
        return 0;
    const uint64_t labels = t->node_labels[n];
    if ((labels & q->labels_required) != q->labels_required || (labels & q->labels_forbidden))
        return 0;
    if (q->avoid_count && p->avoid_gen[n] == p->gen)
        return 0;
    uint32_t cap = limit;
    for (uint32_t i = 0; i < s->nres; i++) {
        if (!s->res[i])
            continue;
        uint32_t k = c->res_free[i][n] / s->res[i];
        if (k < cap && (cap = k) == 0)
            return 0;
    }
    const uint64_t avail = c->node_free[n];
    uint32_t k = cap;
    if (s->whole_node)
        k = node_idle(p, s, n);
    else if (s->milli)
        k = gs_popcount64(milli_room(c, n, avail, s->milli));
    else if (s->pod_gpus)
        k = gs_popcount64(avail) / s->pod_gpus;
    return k < cap ? k : cap;
}

bool gs_pl_pod_node_ok(const gpusched_placer *p, const gs_pl_req *r, uint32_t n)
{
    const gpusched_place_request *q = &r->in;
    const uint64_t labels = p->t->node_labels[n];
    return (labels & q->labels_required) == q->labels_required && !(labels & q->labels_forbidden) &&
           !(q->avoid_count && p->avoid_gen[n] == p->gen);
}

bool gs_pl_pod_fits_state(const gpusched_placer *p, const gs_pl_req *r, uint32_t n)
{
    const struct gpusched_cluster *c = p->c;
    const gs_pod_shape *s = &r->shape;
    if ((c->nodes_not_up && c->node_health[n] != GPUSCHED_NODE_UP) || !gs_shape_class_ok(s, p->t->node_class[n]))
        return false;
    for (uint32_t i = 0; i < s->nres; i++)
        if (c->res_free[i][n] < s->res[i])
            return false;
    const uint64_t avail = c->node_free[n];
    if (s->whole_node)
        return node_idle(p, s, n);
    if (s->milli)
        return avail || milli_room(c, n, 0, s->milli);
    return gs_popcount64(avail) >= s->pod_gpus;
}

/* The GPUs `pods` pods take on node n: for fractions the fullest GPUs
 * with room (a shared GPU is filled before a free one is broken), else
 * the lowest free GPUs. */
static uint64_t pod_mask(const gpusched_placer *p, const gs_pl_req *r, uint32_t n, uint32_t pods)
{
    const struct gpusched_cluster *c = p->c;
    const gs_pod_shape *s = &r->shape;
    uint64_t avail = c->node_free[n], mask = 0;
    if (!s->milli) {
        for (uint32_t i = 0; i < pods * s->pod_gpus; i++) {
            uint64_t bit = avail & (~avail + 1);
            mask |= bit;
            avail ^= bit;
        }
        return mask;
    }
    uint64_t room = milli_room(c, n, avail, s->milli);
    const uint16_t *used = c->gpu_milli_used ? &c->gpu_milli_used[gs_cl_gpu_base(c, n)] : NULL;
    for (uint32_t i = 0; i < pods; i++) {
        uint32_t best = 64, best_free = 1001;
        for (uint64_t m = room; m; m &= m - 1) {
            uint32_t g = gs_ctz64(m);
            uint32_t free = (avail >> g & 1) ? 1000 : 1000u - used[g];
            if (free < best_free) {
                best_free = free;
                best = g;
            }
        }
        mask |= (uint64_t)1 << best;
        room &= ~((uint64_t)1 << best);
    }
    return mask;
}

/* ---- scanning ------------------------------------------------------------ */

/* An upper bound of the pods of the request's shape a lowest-level domain
 * holds, at most `limit`, from the aggregates alone (the free-GPU histogram
 * and the domain's summary of resources and shared GPUs): never below the
 * truth, so a domain it rules out holds nothing. */
static uint32_t leaf_ub(const gpusched_placer *p, const gs_pl_req *r, uint32_t leaf, uint32_t limit)
{
    struct gpusched_cluster *c = p->c;
    const gs_pod_shape *s = &r->shape;
    const uint32_t l = p->nlevels - 1;
    const gs_leafsum *sum = gs_pods_leaf(c, leaf);
    uint64_t ub = limit;
    for (uint32_t i = 0; sum && i < s->nres; i++) {
        if (!s->res[i])
            continue;
        if (sum->res_max[i] < s->res[i])
            return 0;
        const uint64_t k = sum->res_sum[i] / s->res[i];
        ub = k < ub ? k : ub;
    }
    if (s->pod_gpus) {
        /* Nodes with k free GPUs hold k / g pods each. */
        uint64_t pods = 0;
        const uint32_t *hist = &c->agg[l].hist[(size_t)leaf * c->hist_width];
        for (uint32_t k = s->pod_gpus; k < c->hist_width && pods < ub; k++)
            pods += (uint64_t)hist[k] * (k / s->pod_gpus);
        ub = pods < ub ? pods : ub;
    } else if (s->milli) {
        uint64_t gpus = c->agg[l].free_gpus[leaf];
        if (c->gpu_milli_used)
            gpus += sum && sum->shared_max >= s->milli ? sum->shared_n : 0;
        ub = gpus < ub ? gpus : ub;
    }
    return (uint32_t)ub;
}

static bool leaf_may(const gpusched_placer *p, const gs_pl_req *r, uint32_t leaf)
{
    return leaf_ub(p, r, leaf, 1) > 0;
}

/* Fills pod_cap for the nodes of [first, end) lowest domains and returns
 * the pods they hold, each node counted up to the gang's size. */
static uint64_t scan_leaves(gpusched_placer *p, const gs_pl_req *r, uint32_t first, uint32_t end)
{
    const struct gpusched_topo *t = p->t;
    const uint32_t l = p->nlevels - 1;
    uint64_t total = 0;
    for (uint32_t d = first; d < end; d++) {
        const uint32_t a = t->dom_start[l][d], b = t->dom_start[l][d + 1];
        if (!leaf_may(p, r, d)) {
            memset(p->pod_cap + a, 0, (size_t)(b - a) * sizeof *p->pod_cap);
            continue;
        }
        for (uint32_t n = a; n < b; n++)
            total += p->pod_cap[n] = gs_pl_pod_cap(p, r, n, r->npods);
    }
    return total;
}

static uint64_t nodes_total(const gpusched_placer *p, uint32_t a, uint32_t b)
{
    uint64_t total = 0;
    for (uint32_t n = a; n < b; n++)
        total += p->pod_cap[n];
    return total;
}

/* Lowest domains under domain d of level l (l = -1: the cluster). */
static void leaf_range(const gpusched_placer *p, int32_t l, uint32_t d, uint32_t *first, uint32_t *end)
{
    const struct gpusched_topo *t = p->t;
    const int32_t L = (int32_t)p->nlevels;
    if (l < 0) {
        *first = 0;
        *end = t->ndom[L - 1];
        return;
    }
    uint32_t a = d, b = d + 1;
    for (int32_t k = l; k < L - 1; k++) {
        a = t->child_start[k][a];
        b = t->child_start[k][b];
    }
    *first = a;
    *end = b;
}

static void node_range(const gpusched_placer *p, int32_t l, uint32_t d, uint32_t *a, uint32_t *b)
{
    if (l < 0) {
        *a = 0;
        *b = p->t->nnodes;
    } else {
        *a = p->t->dom_start[l][d];
        *b = p->t->dom_start[l][d + 1];
    }
}

/* The domain of level l holding the gang with the least to spare (ties:
 * lowest index), among all of the level; *held: the most any holds. */
/* What domain d of level l holds of the gang, in the units the gang is
 * counted in: pods, or with a slice constraint at or below l, whole slices
 * (each inside one domain of the slice level). */
/* Whole slices of `spods` pods in the domains of level ls inside nodes
 * [a, b) (a range of whole domains of that level); with `inner`, each
 * domain counts only the pods of the inner constraint's whole slices. */
static uint64_t slices_in(const gpusched_placer *p, const gs_pl_req *r, uint32_t a, uint32_t b, uint32_t ls,
                          uint32_t spods, bool inner);

/* The pods of nodes [a, b) (whole domains of the outer slice level) that
 * lie in whole inner slices: every pod there when there is no inner
 * constraint. */
static uint64_t pods_in_inner(const gpusched_placer *p, const gs_pl_req *r, uint32_t a, uint32_t b)
{
    if (!r->slice2_pods)
        return nodes_total(p, a, b);
    return slices_in(p, r, a, b, r->slice2_level, r->slice2_pods, false) * r->slice2_pods;
}

static uint64_t slices_in(const gpusched_placer *p, const gs_pl_req *r, uint32_t a, uint32_t b, uint32_t ls,
                          uint32_t spods, bool inner)
{
    const struct gpusched_topo *t = p->t;
    uint64_t slices = 0;
    for (uint32_t s = gs_topo_node_domain(t, a, ls), e = gs_topo_node_domain(t, b - 1, ls); s <= e; s++) {
        const uint32_t x = t->dom_start[ls][s], y = t->dom_start[ls][s + 1];
        slices += (inner ? pods_in_inner(p, r, x, y) : nodes_total(p, x, y)) / spods;
    }
    return slices;
}

static uint64_t dom_units(const gpusched_placer *p, const gs_pl_req *r, int32_t l, uint32_t d)
{
    uint32_t a, b;
    node_range(p, l, d, &a, &b);
    if (!r->slice_pods || l > (int32_t)r->slice_level)
        return nodes_total(p, a, b);
    return slices_in(p, r, a, b, r->slice_level, r->slice_pods, true);
}

static uint64_t need_units(const gs_pl_req *r)
{
    return r->slice_pods ? r->npods / r->slice_pods : r->npods;
}

static uint32_t tightest_domain(const gpusched_placer *p, const gs_pl_req *r, uint32_t l, uint64_t *held)
{
    uint32_t best = GPUSCHED_NONE;
    uint64_t best_total = UINT64_MAX;
    *held = 0;
    for (uint32_t d = 0; d < p->t->ndom[l]; d++) {
        uint64_t total = dom_units(p, r, (int32_t)l, d);
        if (total > *held)
            *held = total;
        if (total >= need_units(r) && total < best_total) {
            best_total = total;
            best = d;
        }
    }
    return best;
}

/* ---- choosing nodes ------------------------------------------------------ */

typedef struct gs_pod_pick {
    uint32_t node, pods;
} gs_pod_pick;

static double share_left(uint64_t free, uint64_t cap)
{
    return cap ? (double)free / (double)cap : 0.0;
}

/* Best fit: the node left with the least free cpu, memory (every declared
 * resource) and GPU, as shares of its capacity, summed. */
static double best_fit_score(const gpusched_placer *p, const gs_pl_req *r, uint32_t n, uint64_t mask)
{
    const struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    const gs_pod_shape *s = &r->shape;
    double score = 0;
    for (uint32_t i = 0; i < t->nres; i++) {
        uint32_t ask = i < s->nres ? s->res[i] : 0;
        score += share_left(c->res_free[i][n] - ask, t->node_res[i][n]);
    }
    uint64_t milli = 0;
    const uint32_t base = gs_cl_gpu_base(c, n);
    for (uint32_t g = 0; g < t->node_gpus[n]; g++) {
        uint64_t bit = (uint64_t)1 << g;
        uint32_t free = (c->node_free[n] & bit) ? 1000
                        : (c->node_shared && (c->node_shared[n] & bit)) ? 1000u - c->gpu_milli_used[base + g]
                                                                         : 0;
        if (mask & bit)
            free = s->milli ? free - s->milli : 0;
        milli += free;
    }
    return score + share_left(milli, 1000ull * t->node_gpus[n]);
}

/* One pod among nodes [a, b) with pod_cap set. */
static int choose_one(gpusched_placer *p, const gs_pl_req *r, uint32_t a, uint32_t b, uint32_t *node,
                      uint64_t *mask)
{
    *node = GPUSCHED_NONE;
    if (r->policy == GPUSCHED_POLICY_FRAG && p->nwl)
        return gs_pl_frag_choose(p, r, a, b, node, mask);
    double best = 0;
    for (uint32_t n = a; n < b; n++) {
        if (!gs_pl_pod_node_ok(p, r, n) || !gs_pl_pod_fits_state(p, r, n))
            continue;
        uint64_t m = pod_mask(p, r, n, 1);
        if (r->policy == GPUSCHED_POLICY_FIRST_FIT) {
            *node = n;
            *mask = m;
            return 0;
        }
        double score = best_fit_score(p, r, n, m);
        if (*node == GPUSCHED_NONE || score < best) {
            best = score;
            *node = n;
            *mask = m;
        }
    }
    return 0;
}

/* Fewest nodes: the largest first, the last one the tightest that holds
 * what is left; first fit instead takes nodes in index order. */
static uint32_t choose_many(gpusched_placer *p, const gs_pl_req *r, uint32_t a, uint32_t b, uint32_t need,
                            gs_pod_pick *out)
{
    gs_kid *kid = (gs_kid *)out;
    uint32_t n = 0;
    for (uint32_t i = a; i < b; i++)
        if (p->pod_cap[i])
            kid[n++] = (gs_kid){i, p->pod_cap[i]};
    if (r->policy != GPUSCHED_POLICY_FIRST_FIT)
        gs_pl_sort_kids(kid, n, true); /* most pods first, ties: lowest index */
    /* What each chosen node takes goes back into pod_cap (0: not chosen),
     * so that the nodes come out ascending from one pass over [a, b). */
    uint32_t left = need, last = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (left && kid[i].cap >= left && r->policy != GPUSCHED_POLICY_FIRST_FIT) {
            /* The tightest node from i on that holds the rest. */
            last = i;
            for (uint32_t m = i + 1; m < n && kid[m].cap >= left; m++)
                last = m;
        }
        if (i == last || (last == UINT32_MAX && left)) {
            const uint32_t take = kid[i].cap < left ? kid[i].cap : left;
            p->pod_cap[kid[i].idx] = take;
            left -= take;
        } else {
            p->pod_cap[kid[i].idx] = 0;
        }
    }
    uint32_t k = 0;
    for (uint32_t i = a; i < b; i++)
        if (p->pod_cap[i])
            out[k++] = (gs_pod_pick){i, p->pod_cap[i]};
    return k;
}

/* ---- the result ---------------------------------------------------------- */

static int result_arrays(gpusched_placer *p, gpusched_place_result *res, uint32_t n, uint32_t npods)
{
    if (n > res->cap) {
        uint32_t *nodes = gs_realloc_array(&res->alloc, res->nodes, n, sizeof *nodes);
        if (!nodes)
            return GPUSCHED_ENOMEM;
        res->nodes = nodes;
        uint64_t *masks = gs_realloc_array(&res->alloc, res->masks, n, sizeof *masks);
        if (!masks)
            return GPUSCHED_ENOMEM;
        res->masks = masks;
        res->cap = n;
    }
    int rc = gs_grow(&res->alloc, (void **)&res->pod_nodes, &res->pod_cap, npods, sizeof *res->pod_nodes);
    if (rc)
        return rc;
    uint32_t doms = n * p->nlevels;
    return gs_grow(&res->alloc, (void **)&res->doms, &res->doms_cap, doms, sizeof *res->doms);
}

static void result_domains(gpusched_placer *p, gpusched_place_result *res)
{
    const struct gpusched_topo *t = p->t;
    const uint32_t L = p->nlevels;
    uint32_t o = 0;
    for (uint32_t l = 0; l < L; l++) {
        res->dom_off[l] = o;
        for (uint32_t i = 0; i < res->n; i++) {
            uint32_t d = gs_topo_node_domain(t, res->nodes[i], l);
            if (o == res->dom_off[l] || res->doms[o - 1] != d)
                res->doms[o++] = d;
        }
        res->locality[l] = o - res->dom_off[l];
    }
    res->dom_off[L] = res->dom_off[L + 1] = o;
    res->locality[L] = res->n;
    res->ndoms_total = o;
}

static void describe_pods(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    const struct gpusched_topo *t = p->t;
    const gs_pod_shape *s = &r->shape;
    int o = snprintf(res->msg, sizeof res->msg, "%u pod%s of", r->npods, r->npods == 1 ? "" : "s");
    if (s->milli)
        o += snprintf(res->msg + o, sizeof res->msg - (size_t)o, " %u milli-GPU", s->milli);
    else
        o += snprintf(res->msg + o, sizeof res->msg - (size_t)o, " %u GPU%s", s->pod_gpus, s->pod_gpus == 1 ? "" : "s");
    for (uint32_t i = 0; i < s->nres && o > 0 && (size_t)o < sizeof res->msg; i++)
        if (s->res[i])
            o += snprintf(res->msg + o, sizeof res->msg - (size_t)o, ", %s %u", t->res_names[i], s->res[i]);
    if (o > 0 && (size_t)o < sizeof res->msg)
        snprintf(res->msg + o, sizeof res->msg - (size_t)o, " on %u node%s", res->n, res->n == 1 ? "" : "s");
}

static int fill_result(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res, const gs_pod_pick *pick,
                       uint32_t k, const uint64_t *masks)
{
    int rc = result_arrays(p, res, k, r->npods);
    if (rc)
        return rc;
    gs_pl_result_reset(res, p->nlevels);
    res->n = k;
    for (uint32_t i = 0; i < k; i++) {
        res->nodes[i] = pick[i].node;
        res->masks[i] = masks ? masks[i] : pod_mask(p, r, pick[i].node, pick[i].pods);
        for (uint32_t j = 0; j < pick[i].pods; j++)
            res->pod_nodes[res->npods++] = pick[i].node;
    }
    result_domains(p, res);
    res->reason = GPUSCHED_REASON_OK;
    if (res->topo != p->t) {
        gpusched_topo_unref(res->topo);
        res->topo = gpusched_topo_ref((gpusched_topo *)p->t);
    }
    describe_pods(p, r, res);
    return 0;
}

/* The record the commit copies: what each pair holds, in p->podx. */
static int build_podx(gpusched_placer *p, const gs_pl_req *r, const gpusched_place_result *res,
                      const gs_pod_pick *pick)
{
    if (res->n > p->podx_cap) {
        gs_podx *x = gs_realloc_array(&p->alloc, p->podx, 1, gs_podx_size(res->n));
        if (!x)
            return GPUSCHED_ENOMEM;
        p->podx = x;
        p->podx_cap = res->n;
    }
    gs_podx *x = p->podx;
    memset(x, 0, sizeof *x);
    x->milli = r->shape.milli;
    x->pod_gpus = r->shape.pod_gpus;
    x->nres = r->shape.nres;
    memcpy(x->pod_res, r->shape.res, sizeof x->pod_res);
    x->npairs = res->n;
    for (uint32_t i = 0; i < res->n; i++)
        x->pods[i] = pick[i].pods;
    return 0;
}

/* A committing request's claim staged; in a batch (p->holding) the
 * placement is held for the requests after it, and the claim borrows the
 * transaction's copy of the record (p->podx is the next request's). */
static int finish_pods(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res, const gs_pod_pick *pick)
{
    const bool commit = r->in.flags & GPUSCHED_PLACE_FLAG_COMMIT;
    if (!commit && !p->holding)
        return 0;
    int rc = build_podx(p, r, res, pick);
    if (rc)
        return rc;
    const gs_podx *x = p->podx;
    if (p->holding && !(x = gs_txn_keep_pods(p->c, p->podx, res->n, res->nodes, res->masks)))
        return GPUSCHED_ENOMEM;
    gpusched_job job;
    gs_pl_job_of(r, &job);
    if (commit && (rc = gs_txn_stage_claim_pods(p->c, &job, res->n, res->nodes, res->masks, x)))
        return rc;
    return p->holding ? gs_txn_hold_pods(p->c, x) : 0;
}

/* ---- failures ------------------------------------------------------------ */

/* The largest free amount of each thing the pod asks for, on any node the
 * pod may use: what the message quotes. */
/* The largest free amounts of one node that a failure quotes. */
typedef struct gs_most {
    uint32_t eligible;          /* nodes the request may use */
    uint32_t res[GPUSCHED_MAX_RESOURCES];
    uint32_t gpus;              /* fully free GPUs */
    uint32_t milli;             /* free milli of one GPU */
} gs_most;

/* From the aggregates, without visiting a node: when every node is up
 * and the request filters none (any class, no labels, none avoided), the
 * cluster's histogram of free GPUs and the racks' summaries hold the
 * same maxima as the nodes. */
static bool most_from_aggregates(gpusched_placer *p, const gs_pl_req *r, gs_most *m)
{
    struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    const gs_pod_shape *s = &r->shape;
    const gpusched_place_request *q = &r->in;
    if (!s->any_class || q->labels_required || q->labels_forbidden || q->avoid_count || c->nodes_not_up)
        return false;
    m->eligible = t->nnodes;
    for (uint32_t k = c->hist_width; k-- > 0;)
        if (c->root_hist[k]) {
            m->gpus = k;
            break;
        }
    m->milli = m->gpus ? 1000 : 0;
    const uint32_t leaves = t->ndom[t->nlevels - 1];
    for (uint32_t d = 0; d < leaves; d++) {
        const gs_leafsum *sum = gs_pods_leaf(c, d);
        if (!sum)
            break; /* no resources, nothing shared: nothing more to read */
        for (uint32_t i = 0; i < s->nres; i++)
            m->res[i] = sum->res_max[i] > m->res[i] ? sum->res_max[i] : m->res[i];
        if (sum->shared_n && sum->shared_max > m->milli)
            m->milli = sum->shared_max;
    }
    return true;
}

/* The same, node by node, for the requests that filter nodes. */
static void most_from_nodes(const gpusched_placer *p, const gs_pl_req *r, gs_most *m)
{
    const struct gpusched_topo *t = p->t;
    const struct gpusched_cluster *c = p->c;
    const gs_pod_shape *s = &r->shape;
    uint32_t eligible = 0, *max_res = m->res, max_gpus = 0, max_milli = 0;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        if (!gs_shape_class_ok(s, t->node_class[n]))
            continue;
        const uint64_t labels = t->node_labels[n];
        if ((labels & r->in.labels_required) != r->in.labels_required || (labels & r->in.labels_forbidden))
            continue;
        if ((r->in.avoid_count && p->avoid_gen[n] == p->gen) ||
            (c->nodes_not_up && c->node_health[n] != GPUSCHED_NODE_UP))
            continue;
        /* A node without GPUs never holds a pod that asks GPUs: counting
         * it made the reason depend on such nodes (ELIGIBLE without them,
         * SPLIT with them; tests/test-pods-metamorphic.c). */
        if ((s->milli || s->pod_gpus) && !t->node_gpus[n])
            continue;
        eligible++;
        for (uint32_t i = 0; i < s->nres; i++)
            if (c->res_free[i][n] > max_res[i])
                max_res[i] = c->res_free[i][n];
        uint32_t g = gs_popcount64(c->node_free[n]);
        if (g > max_gpus)
            max_gpus = g;
        uint32_t most = g ? 1000 : 0;
        for (uint64_t sh = c->node_shared ? c->node_shared[n] : 0; sh; sh &= sh - 1) {
            uint32_t f = 1000u - c->gpu_milli_used[gs_cl_gpu_base(c, n) + gs_ctz64(sh)];
            if (f > most)
                most = f;
        }
        if (most > max_milli)
            max_milli = most;
    }
    m->eligible = eligible;
    m->gpus = max_gpus;
    m->milli = max_milli;
}

static void explain(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res, uint64_t held,
                    int32_t level, uint64_t best_dom)
{
    const struct gpusched_topo *t = p->t;
    const gs_pod_shape *s = &r->shape;
    gs_most most = {0};
    if (!most_from_aggregates(p, r, &most))
        most_from_nodes(p, r, &most);
    const uint32_t eligible = most.eligible, *max_res = most.res, max_gpus = most.gpus, max_milli = most.milli;
    gs_pl_result_reset(res, p->nlevels);
    if (!eligible) {
        res->reason = GPUSCHED_REASON_ELIGIBLE;
        snprintf(res->msg, sizeof res->msg, "no up node has an allowed GPU class, the labels and is not avoided");
        return;
    }
    int o;
    if (level >= 0 && held >= r->npods) {
        res->reason = GPUSCHED_REASON_REQUIRED;
        o = snprintf(res->msg, sizeof res->msg, "required %s: the best %s holds %llu of %u pods; largest free on one node:",
                     t->level_names[level], t->level_names[level], (unsigned long long)best_dom, r->npods);
    } else {
        res->reason = GPUSCHED_REASON_SPLIT;
        o = snprintf(res->msg, sizeof res->msg, "the nodes hold %llu of %u pods; largest free on one node:",
                     (unsigned long long)held, r->npods);
    }
    for (uint32_t i = 0; i < s->nres && o > 0 && (size_t)o < sizeof res->msg; i++)
        if (s->res[i])
            o += snprintf(res->msg + o, sizeof res->msg - (size_t)o, " %s %u (a pod asks %u),", t->res_names[i],
                          max_res[i], s->res[i]);
    if (o > 0 && (size_t)o < sizeof res->msg) {
        if (s->milli)
            snprintf(res->msg + o, sizeof res->msg - (size_t)o, " GPU %u milli (a pod asks %u)", max_milli, s->milli);
        else if (s->pod_gpus)
            snprintf(res->msg + o, sizeof res->msg - (size_t)o, " %u free GPUs (a pod asks %u)", max_gpus,
                     s->pod_gpus);
        else if (o > 0 && res->msg[o - 1] == ',')
            res->msg[o - 1] = '\0';
    }
}

/* ---- the placement ------------------------------------------------------- */

/* Domains of level `pref` inside nodes [*a, *b): the tightest that holds
 * the gang becomes the range; else the largest are kept until they hold it
 * and the others' nodes count nothing. */
static int narrow_preferred(gpusched_placer *p, const gs_pl_req *r, int32_t pref, uint32_t *a, uint32_t *b)
{
    const struct gpusched_topo *t = p->t;
    const uint32_t d0 = gs_topo_node_domain(t, *a, (uint32_t)pref), d1 = gs_topo_node_domain(t, *b - 1, (uint32_t)pref) + 1;
    const uint64_t need = need_units(r);
    uint32_t best = GPUSCHED_NONE;
    uint64_t best_total = UINT64_MAX;
    for (uint32_t d = d0; d < d1; d++) {
        uint64_t total = dom_units(p, r, pref, d);
        if (total >= need && total < best_total) {
            best_total = total;
            best = d;
        }
    }
    if (best != GPUSCHED_NONE) {
        *a = t->dom_start[pref][best];
        *b = t->dom_start[pref][best + 1];
        return 0;
    }
    const uint32_t nd = d1 - d0;
    gs_kid *kid = gs_arena_get(&p->arena, (size_t)nd * sizeof *kid);
    if (!kid)
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    for (uint32_t i = 0; i < nd; i++) {
        const uint64_t u = dom_units(p, r, pref, d0 + i);
        kid[i] = (gs_kid){d0 + i, u > UINT32_MAX ? UINT32_MAX : (uint32_t)u};
    }
    gs_pl_sort_kids(kid, nd, true);
    uint64_t got = 0;
    for (uint32_t i = 0; i < nd; i++) {
        if (got >= need) {
            const uint32_t d = kid[i].idx;
            memset(p->pod_cap + t->dom_start[pref][d], 0,
                   (size_t)(t->dom_start[pref][d + 1] - t->dom_start[pref][d]) * sizeof *p->pod_cap);
        }
        got += kid[i].cap;
    }
    return 0;
}

/* `need` whole slices of `spods` pods, each inside one domain of level ls,
 * from the domains of that level inside nodes [a, b): the domains that
 * hold the most slices first, the last one the tightest that holds the
 * rest (first fit: index order); inside each, with `inner`, the inner
 * constraint's slices the same way, then the pods on the fewest nodes.
 * Appends to pick (nodes ascending: domains are visited in index order). */
static int choose_slices_at(gpusched_placer *p, const gs_pl_req *r, uint32_t a, uint32_t b, uint32_t ls,
                            uint32_t spods, bool inner, uint32_t need, gs_pod_pick *pick, uint32_t *k)
{
    const struct gpusched_topo *t = p->t;
    const uint32_t d0 = gs_topo_node_domain(t, a, ls), d1 = gs_topo_node_domain(t, b - 1, ls) + 1, nd = d1 - d0;
    gs_kid *kid = gs_arena_get(&p->arena, (size_t)nd * sizeof *kid);
    uint32_t *take = gs_arena_get(&p->arena, (size_t)nd * sizeof *take);
    if (!kid || !take)
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    uint32_t n = 0;
    for (uint32_t d = d0; d < d1; d++) {
        const uint32_t x = t->dom_start[ls][d], y = t->dom_start[ls][d + 1];
        const uint64_t s = (inner ? pods_in_inner(p, r, x, y) : nodes_total(p, x, y)) / spods;
        take[d - d0] = 0;
        if (s)
            kid[n++] = (gs_kid){d, s > UINT32_MAX ? UINT32_MAX : (uint32_t)s};
    }
    if (r->policy != GPUSCHED_POLICY_FIRST_FIT)
        gs_pl_sort_kids(kid, n, true);
    uint32_t left = need, last = UINT32_MAX;
    for (uint32_t i = 0; i < n && left; i++) {
        if (kid[i].cap >= left && r->policy != GPUSCHED_POLICY_FIRST_FIT) {
            last = i;
            for (uint32_t m = i + 1; m < n && kid[m].cap >= left; m++)
                last = m;
            take[kid[last].idx - d0] = left;
            left = 0;
            break;
        }
        const uint32_t s = kid[i].cap < left ? kid[i].cap : left;
        take[kid[i].idx - d0] = s;
        left -= s;
    }
    for (uint32_t d = d0; d < d1; d++) {
        if (!take[d - d0])
            continue;
        const uint32_t x = t->dom_start[ls][d], y = t->dom_start[ls][d + 1], pods = take[d - d0] * spods;
        if (inner && r->slice2_pods) {
            uint32_t sub = 0;
            int rc = choose_slices_at(p, r, x, y, r->slice2_level, r->slice2_pods, false, pods / r->slice2_pods,
                                      pick + *k, &sub);
            if (rc)
                return rc;
            *k += sub;
        } else {
            *k += choose_many(p, r, x, y, pods, pick + *k);
        }
    }
    return 0;
}

static int choose_slices(gpusched_placer *p, const gs_pl_req *r, uint32_t a, uint32_t b, gs_pod_pick *pick,
                         uint32_t *k)
{
    *k = 0;
    return choose_slices_at(p, r, a, b, r->slice_level, r->slice_pods, true, (uint32_t)need_units(r), pick, k);
}

/* A single pod: the lowest domain by packing, the one with the least
 * free GPUs among those that hold the pod (ties: lowest index), so that
 * emptier racks stay whole for gangs; the policy among its nodes. */
static int place_one_pod(gpusched_placer *p, const gs_pl_req *r, uint32_t *node, uint64_t *mask)
{
    const struct gpusched_cluster *c = p->c;
    const uint32_t l = p->nlevels - 1, end = p->t->ndom[l];
    for (;;) {
        uint32_t best = GPUSCHED_NONE, best_free = UINT32_MAX;
        for (uint32_t d = 0; d < end; d++) {
            if (p->cap_gen[l][d] == p->gen) /* tried: holds nothing */
                continue;
            uint32_t f = c->agg[l].free_gpus[d];
            if (f < best_free && leaf_may(p, r, d)) {
                best_free = f;
                best = d;
            }
        }
        *node = GPUSCHED_NONE;
        if (best == GPUSCHED_NONE)
            return 0;
        uint32_t a, b;
        node_range(p, (int32_t)l, best, &a, &b);
        int rc = choose_one(p, r, a, b, node, mask);
        if (rc || *node != GPUSCHED_NONE)
            return rc;
        p->cap_gen[l][best] = p->gen;
    }
}

int gs_pl_pods_place(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res)
{
    const struct gpusched_topo *t = p->t;
    if (!p->pod_cap && !(p->pod_cap = gs_malloc(&p->alloc, (size_t)t->nnodes * sizeof *p->pod_cap)))
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    if (!p->learn_by_owner && !p->probing)
        gs_pl_wl_placed(p, r);
    const int32_t req = r->in.required_level == GPUSCHED_NONE ? -1 : (int32_t)r->in.required_level;
    uint32_t first, end, dom = 0;
    uint64_t held = 0;
    int rc = 0;
    /* A single pod without a required level: one lowest domain, by
     * packing, then the policy among its nodes. */
    if (r->npods == 1 && req < 0) {
        uint32_t node;
        uint64_t mask = 0;
        if ((rc = place_one_pod(p, r, &node, &mask)))
            return rc;
        if (node == GPUSCHED_NONE) {
            explain(p, r, res, 0, -1, 0);
            return GPUSCHED_ENOSPC;
        }
        gs_pod_pick pick = {node, 1};
        if ((rc = fill_result(p, r, res, &pick, 1, &mask)))
            return rc;
        return finish_pods(p, r, res, &pick);
    }
    leaf_range(p, -1, 0, &first, &end);
    if (req >= 0 && req < (int32_t)p->nlevels - 1) {
        /* Only the required level's domains whose bound holds the gang are
         * scanned; the others' nodes count nothing. */
        held = 0;
        for (uint32_t d = 0; d < t->ndom[req]; d++) {
            uint32_t f, e, a0, b0;
            leaf_range(p, req, d, &f, &e);
            uint64_t ub = 0;
            for (uint32_t x = f; x < e && ub < r->npods; x++)
                ub += leaf_ub(p, r, x, r->npods);
            if (ub >= r->npods) {
                held += scan_leaves(p, r, f, e);
            } else {
                node_range(p, req, d, &a0, &b0);
                memset(p->pod_cap + a0, 0, (size_t)(b0 - a0) * sizeof *p->pod_cap);
            }
        }
    } else {
        held = scan_leaves(p, r, first, end);
    }
    if (req >= 0) {
        uint64_t most;
        dom = tightest_domain(p, r, (uint32_t)req, &most);
        if (dom == GPUSCHED_NONE && req < (int32_t)p->nlevels - 1) {
            /* The explanation counts every node, pruned or not. */
            held = scan_leaves(p, r, first, end);
            (void)tightest_domain(p, r, (uint32_t)req, &most);
        }
        if (dom == GPUSCHED_NONE) {
            explain(p, r, res, held, req, most);
            return GPUSCHED_ENOSPC;
        }
    } else if (held < r->npods || (r->slice_pods && dom_units(p, r, -1, 0) < need_units(r))) {
        explain(p, r, res, held, -1, 0);
        return GPUSCHED_ENOSPC;
    }
    uint32_t a, b;
    node_range(p, req, dom, &a, &b);
    /* The preferred level (at or above the slices' level, if any): one
     * domain that holds the gang, the tightest; else the fewest, largest
     * first, the others' nodes left out. */
    const int32_t pref = r->in.preferred_level == GPUSCHED_NONE ? (int32_t)p->nlevels : (int32_t)r->in.preferred_level;
    if (pref > req && pref < (int32_t)p->nlevels && (!r->slice_pods || pref <= (int32_t)r->slice_level))
        if ((rc = narrow_preferred(p, r, pref, &a, &b)))
            return rc;
    if (r->npods == 1) {
        uint32_t node;
        uint64_t mask = 0;
        if ((rc = choose_one(p, r, a, b, &node, &mask)))
            return rc;
        gs_pod_pick pick = {node, 1};
        if ((rc = fill_result(p, r, res, &pick, 1, &mask)))
            return rc;
        return finish_pods(p, r, res, &pick);
    }
    gs_pod_pick *pick = gs_arena_get(&p->arena, (size_t)(b - a) * sizeof *pick);
    if (!pick)
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    uint32_t k = r->slice_pods ? 0 : choose_many(p, r, a, b, r->npods, pick);
    if (r->slice_pods && (rc = choose_slices(p, r, a, b, pick, &k)))
        return rc;
    if ((rc = fill_result(p, r, res, pick, k, NULL)))
        return rc;
    return finish_pods(p, r, res, pick);
}
