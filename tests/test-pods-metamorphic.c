/* A differential and metamorphic hunt on pods with resources and on the
 * cluster's state, through the public API only:
 *
 * - every pod placement, plan only then committed, on random small
 *   clusters (uneven nodes, nodes without GPUs, labels, classes, nodes not
 *   up, reservations, whole-GPU jobs beside pods): the plan and the commit
 *   agree, the plan changes nothing, the placement obeys every constraint
 *   and fits as the cluster's public state says (per node cpu and memory,
 *   per GPU milli, whole GPUs, whole nodes), "does not fit" only when a
 *   brute force over every assignment finds nothing, and a release gives
 *   back exactly the state before;
 * - answers do not depend on history: a placer that served many requests,
 *   a new placer, a placer on the cluster restored from a snapshot and one
 *   on the cluster rebuilt from the journal answer alike;
 * - a node that can hold nothing (0 GPUs and no cpu or memory, or a node
 *   that is down) changes no answer;
 * - releases and health changes of one instant commute;
 * - random sequences of every state change with pods (placements, batches,
 *   preemptions and moves, plan only and committed, with bad input in the
 *   middle of batches): failed and plan-only calls change nothing, the
 *   journal's standby, a replay and a snapshot round trip reproduce the
 *   state.
 *
 * Each check prints its seed; GS_POD_HUNT_SEEDS=N runs N times more,
 * GS_HUNT_DEBUG=1 prints each topology and fill placement. */
#include <stdlib.h>

#include "cluster-test.h"
#include "place-test.h"

#define MAXN 8    /* nodes of the brute-force clusters */
#define MAXBIG 512 /* nodes of the larger clusters */
#define MAXJ 1024 /* tracked jobs */
#define NRES 3    /* cpu, memory, nic */

/* Runs round(seed) for seeds 1 to rounds (times GS_POD_HUNT_SEEDS). */
static void run_seeds(void (*round)(uint64_t), uint32_t rounds)
{
    const char *s = getenv("GS_POD_HUNT_SEEDS");
    const uint32_t k = s ? (uint32_t)strtoul(s, NULL, 10) : 1;
    for (uint64_t seed = 1; seed <= (uint64_t)rounds * (k ? k : 1); seed++)
        round(seed);
}

/* ---- random clusters ---------------------------------------------------- */

/* A random small topology: 1 to 3 levels, 1 to `max_nodes` nodes of 0 to 4
 * GPUs (the first has one at least), cpu and memory (and a third resource
 * one time in two) with random capacities, classes a and b, labels ib and
 * ssd. With `extra` (1: a node of 0 GPUs and no resources; 2: a copy of
 * the last node's size), one more node after the others, in the last
 * rack or a rack of its own. A new domain opens before a node one time in
 * `split`. */
static gpusched_topo *hunt_topo(uint64_t seed, uint32_t max_nodes, uint32_t split, uint32_t extra, uint32_t *nres_out)
{
    pt_rng r = {seed * 0x9e3779b97f4a7c15ull + 0x1234567};
    static const char *lv[] = {"zone", "block", "rack"};
    static const char *labels[] = {"ib", "ssd"};
    static const char *res_names[] = {"cpu", "memory", "nic"};
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const uint32_t L = 1 + pt_below(&r, 3);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, L, lv + (3 - L)), 0);
    const uint32_t nres = 2 + pt_below(&r, 2);
    for (uint32_t i = 0; i < nres; i++)
        cr_assert_eq(gpusched_topo_builder_resource_add(b, res_names[i], NULL), 0);
    const uint32_t nn = 1 + pt_below(&r, max_nodes);
    /* One topology in five has nodes of up to 8 GPUs, one in six cpu
     * capacities near 2^32 (the asks follow: products past 32 bits). */
    const uint32_t max_gpus = pt_below(&r, 5) ? 4 : 8;
    const bool huge = pt_below(&r, 6) == 0;
    uint32_t path_idx[3] = {0, 0, 0};
    uint32_t last_gpus = 0, last_res[NRES] = {0};
    const char *last_cls = "a";
    for (uint32_t n = 0; n < nn + (extra ? 1 : 0); n++) {
        const bool is_extra = n == nn;
        if (n && pt_below(&r, split) == 0) {
            uint32_t l = pt_below(&r, L);
            path_idx[l]++;
            for (uint32_t k = l + 1; k < L; k++)
                path_idx[k] = 0;
        }
        char comp[3][16], name[16];
        const char *path[3];
        for (uint32_t l = 0; l < L; l++) {
            snprintf(comp[l], sizeof comp[l], "%c%u", lv[3 - L + l][0], path_idx[l]);
            path[l] = comp[l];
        }
        snprintf(name, sizeof name, "n%u", n);
        const char *lab[2];
        uint32_t nl = 0;
        for (uint32_t i = 0; i < 2; i++)
            if (pt_below(&r, 3) == 0)
                lab[nl++] = labels[i];
        uint32_t gpus = n == 0 ? 1 + pt_below(&r, max_gpus) : pt_below(&r, max_gpus + 1);
        const char *cls = pt_below(&r, 3) ? "a" : "b";
        uint32_t res[NRES];
        for (uint32_t i = 0; i < NRES; i++)
            res[i] = i == 0 ? (huge ? UINT32_MAX - 1000 * pt_below(&r, 8) : 1000 * (1 + pt_below(&r, 8)))
                     : i == 1 ? 1024 * (1 + pt_below(&r, 8)) : 1 + pt_below(&r, 3);
        if (is_extra) {
            if (extra == 1) {
                gpus = 0;
                memset(res, 0, sizeof res);
            } else {
                gpus = last_gpus;
                memcpy(res, last_res, sizeof res);
                cls = last_cls;
            }
        }
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, gpus, cls, lab, nl), 0, "%s",
                     gpusched_topo_builder_errmsg(b));
        for (uint32_t i = 0; i < nres; i++)
            if (res[i])
                cr_assert_eq(gpusched_topo_builder_node_resource_set(b, name, i, res[i]), 0);
        last_gpus = gpus;
        memcpy(last_res, res, sizeof res);
        last_cls = cls;
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0, "%s", gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    if (nres_out)
        *nres_out = nres;
    if (getenv("GS_HUNT_DEBUG")) {
        static char text[65536];
        size_t len;
        if (gpusched_topo_export(t, text, sizeof text, &len) == 0)
            fprintf(stderr, "%.*s\n", (int)len, text);
    }
    return t;
}

/* ---- requests ----------------------------------------------------------- */

/* A pod request with its own storage, so that it can be copied. */
typedef struct hreq {
    gpusched_place_request q;
    gpusched_job job;
    uint64_t res[NRES];
    uint32_t classes[2];
    uint32_t avoid[2];
} hreq;

static void hreq_fix(hreq *h)
{
    h->q.job = &h->job;
    h->q.resources = h->q.resource_count ? h->res : NULL;
    h->q.gpu_classes = h->q.gpu_class_count ? h->classes : NULL;
    h->q.avoid_nodes = h->q.avoid_count ? h->avoid : NULL;
}

/* A random valid pod request: pods of whole GPUs, a fraction, no GPU or a
 * whole node; random resources (never nothing at all), classes, labels,
 * avoided nodes, required and preferred levels, slices, policy. `small`:
 * at most 4 pods (the brute force's reach). */
static void random_pod_request(pt_rng *r, const gpusched_topo *t, uint32_t nres, hreq *h, uint64_t id, bool small)
{
    memset(h, 0, sizeof *h);
    h->q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    h->job = (gpusched_job)GPUSCHED_JOB_INIT;
    h->job.id = id;
    gpusched_place_request *q = &h->q;
    const uint32_t L = gpusched_topo_level_count(t);
    q->split = GPUSCHED_SPLIT_PODS;
    const uint32_t pods = 1 + pt_below(r, small ? 4 : pt_below(r, 8) ? 6 : 24);
    q->pods = pods;
    const uint32_t kind = pt_below(r, 8); /* 0-2 whole GPUs, 3-5 fraction, 6 none, 7 whole node */
    uint32_t per_pod = 0;
    if (kind < 3) {
        q->pod_gpus = per_pod = 1 + pt_below(r, 2);
    } else if (kind < 6) {
        static const uint32_t milli[] = {1, 100, 250, 300, 500, 650, 999};
        q->gpu_milli = milli[pt_below(r, 7)];
        per_pod = 1;
    } else if (kind == 7) {
        q->split = GPUSCHED_SPLIT_WHOLE_NODES;
        q->pod_gpus = pt_below(r, 2) ? 0 : 1 + pt_below(r, 4);
        uint32_t largest = 0;
        for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++)
            if (gpusched_topo_node_gpus(t, n) > largest)
                largest = gpusched_topo_node_gpus(t, n);
        per_pod = q->pod_gpus ? q->pod_gpus : largest;
    }
    q->resource_count = pt_below(r, 4) ? nres : pt_below(r, nres + 1);
    /* cpu: small, or near 2^32 / 2 (two pods of it pass 32 bits) where
     * the nodes have that much. */
    const bool huge = gpusched_topo_node_resource(t, 0, 0) > UINT32_MAX / 2;
    for (uint32_t i = 0; i < q->resource_count; i++)
        h->res[i] = i == 0 ? (huge && pt_below(r, 2) ? UINT32_MAX / 2 - 500 * pt_below(r, 3) : 500 * pt_below(r, 6))
                  : i == 1 ? 512 * pt_below(r, 6) : pt_below(r, 2);
    if (q->pod_gpus == 0 && q->gpu_milli == 0 && q->split == GPUSCHED_SPLIT_PODS) {
        /* A pod without GPUs asks cpu at least, so that a node that holds
         * nothing holds none of it. */
        if (q->resource_count == 0)
            q->resource_count = 1;
        if (!h->res[0])
            h->res[0] = 500;
    }
    if (q->split == GPUSCHED_SPLIT_PODS && pt_below(r, 3) == 0)
        q->gpus = pods * per_pod; /* the same gang said both ways */
    if (q->gpu_milli && q->gpus)
        q->gpus = pods;
    if (pt_below(r, 4) == 0) {
        q->gpu_class_count = 1;
        h->classes[0] = pt_below(r, gpusched_topo_class_count(t));
        if (pt_below(r, 3) == 0)
            q->gpu_class = pt_below(r, gpusched_topo_class_count(t));
    } else if (pt_below(r, 8) == 0) {
        q->gpu_class = pt_below(r, gpusched_topo_class_count(t));
    }
    const uint32_t nl = gpusched_topo_label_count(t);
    if (nl && pt_below(r, 6) == 0)
        q->labels_required = (uint64_t)1 << pt_below(r, nl);
    if (nl && pt_below(r, 6) == 0)
        q->labels_forbidden = ((uint64_t)1 << pt_below(r, nl)) & ~q->labels_required;
    if (pt_below(r, 5) == 0) {
        q->avoid_count = 1 + pt_below(r, 2);
        for (uint32_t i = 0; i < q->avoid_count; i++)
            h->avoid[i] = pt_below(r, gpusched_topo_node_count(t));
    }
    if (pt_below(r, 3) == 0)
        q->required_level = pt_below(r, L);
    if (pt_below(r, 3) == 0)
        q->preferred_level = pt_below(r, L);
    if (per_pod && pt_below(r, 3) == 0) {
        /* One slice constraint, or two nested at two levels. */
        const uint32_t sp = 1 + pt_below(r, 2);
        if (pods % sp == 0) {
            q->slice_gpus[0] = sp * per_pod;
            q->slice_level[0] = pt_below(r, L);
            if (L >= 2 && pt_below(r, 3) == 0) {
                const uint32_t outer = sp * (1 + pt_below(r, 2));
                const uint32_t lo = pt_below(r, L - 1), hi = lo + 1 + pt_below(r, L - 1 - lo);
                if (pods % outer == 0) {
                    q->slice_gpus[0] = outer * per_pod;
                    q->slice_level[0] = lo;
                    q->slice_gpus[1] = sp * per_pod;
                    q->slice_level[1] = hi;
                }
            }
        }
    }
    q->policy = pt_below(r, 4);
    hreq_fix(h);
}

/* ---- what a user sees --------------------------------------------------- */

#define mix ct_mix

/* Everything the public API shows of a state, independent of the order of
 * the job and reservation tables: nodes (masks, health, free resources,
 * each GPU's state, holder and free milli), jobs and reservations (sums of
 * their hashes), every domain's aggregates, fragmentation. */
static uint64_t view(gpusched_cluster *c)
{
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint64_t h = 1;
    for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++) {
        uint64_t f, rv, a;
        uint32_t hl;
        cr_assert_eq(gpusched_cluster_node_state(c, n, &f, &rv, &a, &hl), 0);
        h = mix(mix(mix(mix(h, f), rv), a), hl);
        for (uint32_t i = 0; i < gpusched_topo_resource_count(t); i++) {
            uint32_t v;
            cr_assert_eq(gpusched_cluster_node_resource_free(c, n, i, &v), 0);
            h = mix(h, v);
        }
        for (uint32_t g = 0; g < gpusched_topo_node_gpus(t, n); g++) {
            uint32_t st, milli;
            uint64_t holder;
            cr_assert_eq(gpusched_cluster_gpu_state(c, n, g, &st, &holder), 0);
            cr_assert_eq(gpusched_cluster_gpu_milli_free(c, n, g, &milli), 0);
            h = mix(mix(mix(h, st), holder), milli);
        }
        uint64_t ids[64];
        uint32_t cnt;
        cr_assert_eq(gpusched_cluster_node_jobs(c, n, ids, 64, &cnt), 0);
        uint64_t js = 0;
        for (uint32_t i = 0; i < cnt; i++)
            js += mix(3, ids[i]);
        h = mix(mix(h, cnt), js);
    }
    uint64_t jobs = 0, resvs = 0;
    for (uint32_t i = 0; i < gpusched_cluster_job_count(c); i++) {
        uint64_t id;
        cr_assert_eq(gpusched_cluster_job_at(c, i, &id), 0);
        jobs += ct_hold_print(c, 7, id, 0);
    }
    for (uint32_t i = 0; i < gpusched_cluster_resv_count(c); i++) {
        uint64_t id;
        cr_assert_eq(gpusched_cluster_resv_at(c, i, &id), 0);
        resvs += ct_hold_print(c, 7, id, 1);
    }
    h = mix(mix(mix(mix(h, gpusched_cluster_job_count(c)), jobs), gpusched_cluster_resv_count(c)), resvs);
    uint64_t sg, sm;
    cr_assert_eq(gpusched_cluster_frag_shared(c, &sg, &sm), 0);
    return ct_aggregates_print(c, mix(mix(h, sg), sm));
}

static void check(gpusched_cluster *c, uint64_t seed, const char *what)
{
    cr_assert_eq(gpusched_cluster_check(c), 0, "seed %llu %s: %s", (unsigned long long)seed, what,
                 gpusched_cluster_errmsg(c));
}

#define snap ct_snapshot

static bool same_snap(gpusched_cluster *c, const uint8_t *img, size_t len)
{
    size_t n;
    uint8_t *now = snap(c, &n);
    bool same = n == len && memcmp(now, img, len) == 0;
    free(now);
    return same;
}

/* A placement's outcome: rc, reason, nodes, masks, pods. */
typedef struct outcome {
    int rc;
    bool asks_gpus;
    uint32_t reason, n, npods;
    uint32_t nodes[64];
    uint64_t masks[64];
    uint32_t pods[64];
} outcome;

static void outcome_of(int rc, const gpusched_place_result *res, outcome *o)
{
    memset(o, 0, sizeof *o);
    o->rc = rc;
    o->reason = gpusched_place_result_reason(res);
    if (rc)
        return;
    const uint32_t *nodes, *pn;
    const uint64_t *masks;
    cr_assert_eq(gpusched_place_result_nodes(res, &nodes, &masks, &o->n), 0);
    cr_assert_eq(gpusched_place_result_pods(res, &pn, &o->npods), 0);
    cr_assert(o->n <= 64 && o->npods <= 64);
    if (o->n) { /* the arrays may be NULL when empty */
        memcpy(o->nodes, nodes, o->n * sizeof *nodes);
        memcpy(o->masks, masks, o->n * sizeof *masks);
    }
    if (o->npods)
        memcpy(o->pods, pn, o->npods * sizeof *pn);
}

static bool same_outcome(const outcome *a, const outcome *b)
{
    return a->rc == b->rc && a->asks_gpus == b->asks_gpus && a->reason == b->reason && a->n == b->n && a->npods == b->npods &&
           !memcmp(a->nodes, b->nodes, a->n * sizeof a->nodes[0]) &&
           !memcmp(a->masks, b->masks, a->n * sizeof a->masks[0]) &&
           !memcmp(a->pods, b->pods, a->npods * sizeof a->pods[0]);
}

static void print_outcome(char *buf, size_t cap, const outcome *o)
{
    int k = snprintf(buf, cap, "rc %d reason %u:", o->rc, o->reason);
    for (uint32_t i = 0; i < o->n && k > 0 && (size_t)k < cap; i++)
        k += snprintf(buf + k, cap - (size_t)k, " %u/%llx", o->nodes[i], (unsigned long long)o->masks[i]);
}

static void describe(char *buf, size_t cap, const gpusched_place_request *q)
{
    snprintf(buf, cap,
             "pods %u gpus %u split %u pod_gpus %u milli %u res[%u] %llu %llu %llu class %d classes %u:%u req %d "
             "pref %d slices %u@%d %u@%d labels +%llx -%llx avoid %u:%u,%u policy %u",
             q->pods, q->gpus, q->split, q->pod_gpus, q->gpu_milli, q->resource_count,
             (unsigned long long)(q->resource_count > 0 ? q->resources[0] : 0),
             (unsigned long long)(q->resource_count > 1 ? q->resources[1] : 0),
             (unsigned long long)(q->resource_count > 2 ? q->resources[2] : 0), (int)q->gpu_class,
             q->gpu_class_count, q->gpu_class_count ? q->gpu_classes[0] : 0, (int)q->required_level,
             (int)q->preferred_level, q->slice_gpus[0], (int)q->slice_level[0], q->slice_gpus[1],
             (int)q->slice_level[1], (unsigned long long)q->labels_required,
             (unsigned long long)q->labels_forbidden, q->avoid_count, q->avoid_count ? q->avoid_nodes[0] : 0,
             q->avoid_count > 1 ? q->avoid_nodes[1] : 0, q->policy);
}

/* ---- the reference: a node as the public state shows it ------------------ */

typedef struct rnode {
    bool up;
    uint32_t cls, gpus, domain[3];
    uint64_t labels;
    uint32_t res[NRES], cap[NRES];
    uint32_t milli[64]; /* free milli per GPU (0: held whole or reserved) */
    uint32_t state[64];
} rnode;

static void ref_read(gpusched_cluster *c, rnode *v, uint32_t nn)
{
    gpusched_topo *t = gpusched_cluster_topo(c);
    const uint32_t L = gpusched_topo_level_count(t), nres = gpusched_topo_resource_count(t);
    for (uint32_t n = 0; n < nn; n++) {
        memset(&v[n], 0, sizeof v[n]);
        uint32_t hl;
        cr_assert_eq(gpusched_cluster_node_state(c, n, NULL, NULL, NULL, &hl), 0);
        v[n].up = hl == GPUSCHED_NODE_UP;
        v[n].cls = gpusched_topo_node_class(t, n);
        v[n].gpus = gpusched_topo_node_gpus(t, n);
        v[n].labels = gpusched_topo_node_labels(t, n);
        for (uint32_t l = 0; l < L; l++)
            cr_assert_eq(gpusched_topo_node_domain(t, n, l, &v[n].domain[l]), 0);
        for (uint32_t i = 0; i < nres; i++) {
            cr_assert_eq(gpusched_cluster_node_resource_free(c, n, i, &v[n].res[i]), 0);
            v[n].cap[i] = gpusched_topo_node_resource(t, n, i);
        }
        for (uint32_t g = 0; g < v[n].gpus; g++) {
            uint64_t holder;
            cr_assert_eq(gpusched_cluster_gpu_milli_free(c, n, g, &v[n].milli[g]), 0);
            cr_assert_eq(gpusched_cluster_gpu_state(c, n, g, &v[n].state[g], &holder), 0);
        }
    }
}

typedef struct rshape {
    uint32_t pods, nres, pod_gpus, milli;
    uint64_t res[NRES];
    bool whole;
} rshape;

static rshape shape_of(const gpusched_place_request *q, const gpusched_topo *t)
{
    rshape s = {0};
    s.pods = q->pods ? q->pods : q->gpu_milli ? q->gpus : q->gpus / q->pod_gpus;
    s.nres = q->resource_count;
    for (uint32_t i = 0; i < s.nres; i++)
        s.res[i] = q->resources[i];
    s.milli = q->gpu_milli % 1000;
    s.whole = q->split == GPUSCHED_SPLIT_WHOLE_NODES;
    s.pod_gpus = q->gpu_milli ? 0 : q->pod_gpus;
    if (s.whole && !s.pod_gpus)
        for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++)
            if (gpusched_topo_node_gpus(t, n) > s.pod_gpus)
                s.pod_gpus = gpusched_topo_node_gpus(t, n);
    return s;
}

/* Whether the request's filters (health, class, labels, avoided) let a
 * pod on node n. */
static bool ref_node_ok(const rnode *v, uint32_t n, const gpusched_place_request *q)
{
    if (!v[n].up)
        return false;
    bool cls = q->gpu_class == GPUSCHED_NONE && q->gpu_class_count == 0;
    cls |= q->gpu_class == v[n].cls;
    for (uint32_t i = 0; i < q->gpu_class_count; i++)
        cls |= q->gpu_classes[i] == v[n].cls;
    if (!cls)
        return false;
    if ((v[n].labels & q->labels_required) != q->labels_required || (v[n].labels & q->labels_forbidden))
        return false;
    for (uint32_t i = 0; i < q->avoid_count; i++)
        if (q->avoid_nodes[i] == n)
            return false;
    return true;
}

/* Whether node n holds k pods of the shape. */
static bool ref_holds(const rnode *v, const rshape *s, uint32_t k)
{
    for (uint32_t i = 0; i < s->nres; i++)
        if ((uint64_t)k * s->res[i] > v->res[i])
            return false;
    if (s->whole) {
        if (k > 1)
            return false;
        bool idle = v->gpus == s->pod_gpus;
        for (uint32_t g = 0; g < v->gpus; g++)
            idle &= v->state[g] == GPUSCHED_GPU_FREE;
        for (uint32_t i = 0; i < NRES; i++)
            idle &= v->res[i] == v->cap[i];
        return idle;
    }
    uint32_t room = 0, full = 0;
    for (uint32_t g = 0; g < v->gpus; g++) {
        room += s->milli && v->milli[g] >= s->milli;
        full += v->state[g] == GPUSCHED_GPU_FREE;
    }
    if (s->milli)
        return k <= room;
    return (uint64_t)k * s->pod_gpus <= full;
}

static uint32_t slice_count(const gpusched_place_request *q, const rshape *s, uint32_t *sp, uint32_t *sl)
{
    uint32_t per = s->milli ? 1 : s->pod_gpus, k = 0;
    for (uint32_t i = 0; i < GPUSCHED_MAX_SLICES; i++)
        if (q->slice_gpus[i]) {
            sp[k] = q->slice_gpus[i] / per;
            sl[k++] = q->slice_level[i];
        }
    return k;
}

/* Whether a pod count per node obeys the request's required level and
 * slices. */
static bool ref_groups_ok(const rnode *v, uint32_t nn, const uint32_t *cnt, const gpusched_place_request *q,
                          const rshape *s)
{
    if (q->required_level != GPUSCHED_NONE) {
        uint32_t dom = UINT32_MAX;
        for (uint32_t n = 0; n < nn; n++)
            if (cnt[n]) {
                if (dom == UINT32_MAX)
                    dom = v[n].domain[q->required_level];
                else if (v[n].domain[q->required_level] != dom)
                    return false;
            }
    }
    uint32_t sp[2], sl[2];
    const uint32_t ns = slice_count(q, s, sp, sl);
    for (uint32_t k = 0; k < ns; k++) {
        uint32_t per[MAXBIG] = {0};
        for (uint32_t n = 0; n < nn; n++)
            per[v[n].domain[sl[k]]] += cnt[n];
        for (uint32_t d = 0; d < MAXBIG; d++)
            if (per[d] % sp[k])
                return false;
    }
    return true;
}

/* Pods node n holds of the shape, at most the gang's. */
static uint32_t ref_cap(const rnode *v, uint32_t n, const gpusched_place_request *q, const rshape *s)
{
    uint32_t k = 0;
    if (ref_node_ok(v, n, q))
        while (k < s->pods && ref_holds(&v[n], s, k + 1))
            k++;
    return k;
}

/* The same answer as ref_fits from counts, for clusters too large to try
 * every assignment: nodes hold pods independently (identical pods), so
 * the gang fits in a region (a domain of the required level, or the
 * cluster) when its nodes hold the pods, or with slices when the slice
 * level's domains hold whole slices (each floor(pods / slice)); with two,
 * the outer domains count only the pods of whole inner slices. */
static bool ref_fits_by_counts(const rnode *v, uint32_t nn, const gpusched_place_request *q, const rshape *s)
{
    uint32_t sp[2], sl[2];
    uint32_t ns = slice_count(q, s, sp, sl);
    if (ns == 2 && sl[0] > sl[1]) { /* [0]: the outer */
        uint32_t x = sp[0]; sp[0] = sp[1]; sp[1] = x;
        x = sl[0]; sl[0] = sl[1]; sl[1] = x;
    }
    uint32_t *cap = calloc(nn, sizeof *cap);
    uint64_t *inner = calloc(MAXBIG, sizeof *inner), *outer = calloc(MAXBIG, sizeof *outer);
    cr_assert(cap && inner && outer);
    for (uint32_t n = 0; n < nn; n++)
        cap[n] = ref_cap(v, n, q, s);
    const bool req = q->required_level != GPUSCHED_NONE;
    uint32_t regions = 1;
    for (uint32_t n = 0; req && n < nn; n++)
        regions = v[n].domain[q->required_level] + 1 > regions ? v[n].domain[q->required_level] + 1 : regions;
    bool fits = false;
    for (uint32_t d = 0; d < regions && !fits; d++) {
        memset(inner, 0, MAXBIG * sizeof *inner);
        memset(outer, 0, MAXBIG * sizeof *outer);
        uint64_t total = 0;
        for (uint32_t n = 0; n < nn; n++) {
            if (req && v[n].domain[q->required_level] != d)
                continue;
            total += cap[n];
            if (ns == 1)
                outer[v[n].domain[sl[0]]] += cap[n];
            else if (ns == 2)
                inner[v[n].domain[sl[1]]] += cap[n];
        }
        if (ns == 0) {
            fits = total >= s->pods;
            continue;
        }
        if (ns == 2)
            for (uint32_t n = 0; n < nn; n++) {
                /* Each inner domain's whole slices, once, into its outer. */
                const uint32_t di = v[n].domain[sl[1]];
                if ((req && v[n].domain[q->required_level] != d) || inner[di] == UINT64_MAX)
                    continue;
                outer[v[n].domain[sl[0]]] += inner[di] / sp[1] * sp[1];
                inner[di] = UINT64_MAX;
            }
        uint64_t slices = 0;
        for (uint32_t k = 0; k < MAXBIG; k++)
            slices += outer[k] / sp[0];
        fits = slices >= s->pods / sp[0];
    }
    free(cap);
    free(inner);
    free(outer);
    return fits;
}

/* Every assignment of the identical pods to nodes (non-decreasing node
 * sequences). */
static bool ref_fits(const rnode *v, uint32_t nn, const gpusched_place_request *q, const rshape *s)
{
    uint32_t seq[8] = {0};
    const uint32_t pods = s->pods;
    cr_assert(pods <= 8);
    for (;;) {
        uint32_t cnt[MAXN] = {0};
        bool ok = true;
        for (uint32_t i = 0; i < pods; i++)
            cnt[seq[i]]++;
        for (uint32_t n = 0; n < nn && ok; n++)
            ok = !cnt[n] || (ref_node_ok(v, n, q) && ref_holds(&v[n], s, cnt[n]));
        if (ok && ref_groups_ok(v, nn, cnt, q, s))
            return true;
        if (!pt_next_assignment(seq, pods, nn))
            return false;
    }
}

/* ---- tracked jobs: what the cluster must show --------------------------- */

typedef struct tjob {
    uint64_t id;
    rshape s;        /* pods == 0: a whole-GPU job of cluster_allocate */
    uint32_t n;
    uint32_t nodes[MAXN];
    uint32_t pods[MAXN];
    uint64_t masks[MAXN];
} tjob;

typedef struct tracker {
    tjob j[MAXJ];
    uint32_t n;
} tracker;

static void track(tracker *tr, uint64_t id, const rshape *s, const outcome *o)
{
    cr_assert_lt(tr->n, MAXJ);
    cr_assert_leq(o->n, MAXN);
    tjob *j = &tr->j[tr->n++];
    memset(j, 0, sizeof *j);
    j->id = id;
    if (s)
        j->s = *s;
    j->n = o->n;
    for (uint32_t i = 0; i < o->n; i++) {
        j->nodes[i] = o->nodes[i];
        j->masks[i] = o->masks[i];
    }
    for (uint32_t p = 0; p < o->npods; p++)
        for (uint32_t i = 0; i < o->n; i++)
            j->pods[i] += o->nodes[i] == o->pods[p];
}

static void untrack(tracker *tr, uint64_t id)
{
    for (uint32_t i = 0; i < tr->n; i++)
        if (tr->j[i].id == id) {
            tr->j[i] = tr->j[--tr->n];
            return;
        }
}

/* The cluster's public state against the jobs placed: each node's free
 * resources are its capacity less the pods' asks, each GPU's free milli is
 * 1000 less the fractions on it (never below 0), a GPU held whole is held
 * by one job and shared by none, and nothing else holds anything. */
static void assert_accounts(gpusched_cluster *c, const tracker *tr, uint64_t seed, const char *when)
{
    gpusched_topo *t = gpusched_cluster_topo(c);
    const uint32_t nn = gpusched_topo_node_count(t), nres = gpusched_topo_resource_count(t);
    for (uint32_t n = 0; n < nn; n++) {
        uint64_t used[NRES] = {0};
        uint32_t milli[64] = {0};
        uint64_t whole_by[64] = {0};
        for (uint32_t k = 0; k < tr->n; k++) {
            const tjob *j = &tr->j[k];
            for (uint32_t i = 0; i < j->n; i++) {
                if (j->nodes[i] != n)
                    continue;
                for (uint32_t r = 0; r < j->s.nres; r++)
                    used[r] += (uint64_t)j->pods[i] * j->s.res[r];
                for (uint64_t m = j->masks[i]; m; m &= m - 1) {
                    const uint32_t g = (uint32_t)__builtin_ctzll(m);
                    if (j->s.milli) {
                        cr_assert_eq(whole_by[g], 0, "seed %llu %s: node %u GPU %u shared and held whole",
                                     (unsigned long long)seed, when, n, g);
                        milli[g] += j->s.milli;
                    } else {
                        cr_assert(whole_by[g] == 0 && milli[g] == 0, "seed %llu %s: node %u GPU %u held twice",
                                  (unsigned long long)seed, when, n, g);
                        whole_by[g] = j->id;
                    }
                }
                if (j->s.milli)
                    cr_assert_eq((uint32_t)__builtin_popcountll(j->masks[i]), j->pods[i],
                                 "seed %llu %s: job %llu puts two fractions on one GPU of node %u",
                                 (unsigned long long)seed, when, (unsigned long long)j->id, n);
            }
        }
        for (uint32_t r = 0; r < nres; r++) {
            uint32_t free_now;
            cr_assert_eq(gpusched_cluster_node_resource_free(c, n, r, &free_now), 0);
            const uint32_t cap = gpusched_topo_node_resource(t, n, r);
            cr_assert(used[r] <= cap, "seed %llu %s: node %u resource %u: pods hold %llu of %u",
                      (unsigned long long)seed, when, n, r, (unsigned long long)used[r], cap);
            cr_assert_eq(free_now, cap - used[r], "seed %llu %s: node %u resource %u free %u, expected %llu",
                         (unsigned long long)seed, when, n, r, free_now, (unsigned long long)(cap - used[r]));
        }
        uint64_t fmask, rmask;
        cr_assert_eq(gpusched_cluster_node_state(c, n, &fmask, &rmask, NULL, NULL), 0);
        for (uint32_t g = 0; g < gpusched_topo_node_gpus(t, n); g++) {
            uint32_t st, m;
            uint64_t holder;
            cr_assert_eq(gpusched_cluster_gpu_state(c, n, g, &st, &holder), 0);
            cr_assert_eq(gpusched_cluster_gpu_milli_free(c, n, g, &m), 0);
            cr_assert(milli[g] <= 1000, "seed %llu %s: node %u GPU %u: fractions hold %u milli",
                      (unsigned long long)seed, when, n, g, milli[g]);
            if (milli[g]) {
                cr_assert(st == GPUSCHED_GPU_SHARED && m == 1000 - milli[g],
                          "seed %llu %s: node %u GPU %u: state %u milli free %u, fractions hold %u",
                          (unsigned long long)seed, when, n, g, st, m, milli[g]);
            } else if (whole_by[g]) {
                cr_assert(st == GPUSCHED_GPU_ALLOCATED && holder == whole_by[g] && m == 0,
                          "seed %llu %s: node %u GPU %u: state %u holder %llu, job %llu holds it",
                          (unsigned long long)seed, when, n, g, st, (unsigned long long)holder,
                          (unsigned long long)whole_by[g]);
            } else if (rmask >> g & 1) {
                cr_assert(st == GPUSCHED_GPU_RESERVED && m == 0, "seed %llu %s: node %u GPU %u reserved: %u",
                          (unsigned long long)seed, when, n, g, st);
            } else {
                cr_assert(st == GPUSCHED_GPU_FREE && m == 1000 && (fmask >> g & 1),
                          "seed %llu %s: node %u GPU %u: state %u milli %u, nothing holds it",
                          (unsigned long long)seed, when, n, g, st, m);
            }
        }
    }
    cr_assert_eq(gpusched_cluster_job_count(c), tr->n, "seed %llu %s: %u jobs, %u placed",
                 (unsigned long long)seed, when, gpusched_cluster_job_count(c), tr->n);
}

/* A placement obeys the request: pods on nodes that pass the filters and
 * were idle for whole nodes, as many as asked, masks of the right size,
 * the required domain, whole slices. `before`: the state it was placed on. */
static void assert_obeys(const rnode *before, uint32_t nn, const gpusched_place_request *q, const rshape *s,
                         const outcome *o, uint64_t seed, const char *what)
{
    uint32_t cnt[MAXBIG] = {0};
    cr_assert_eq(o->npods, s->pods, "seed %llu %s: %u pods placed, %u asked", (unsigned long long)seed, what,
                 o->npods, s->pods);
    for (uint32_t p = 0; p < o->npods; p++) {
        cr_assert_lt(o->pods[p], nn);
        cnt[o->pods[p]]++;
    }
    for (uint32_t i = 0; i < o->n; i++) {
        const uint32_t n = o->nodes[i];
        cr_assert(i == 0 || n > o->nodes[i - 1]);
        cr_assert(cnt[n] > 0, "seed %llu %s: node %u has no pod", (unsigned long long)seed, what, n);
        cr_assert(ref_node_ok(before, n, q), "seed %llu %s: node %u is not allowed", (unsigned long long)seed, what,
                  n);
        cr_assert(ref_holds(&before[n], s, cnt[n]), "seed %llu %s: node %u cannot hold %u pods",
                  (unsigned long long)seed, what, n, cnt[n]);
        const uint32_t bits = (uint32_t)__builtin_popcountll(o->masks[i]);
        const uint32_t want = s->whole ? before[n].gpus : s->milli ? cnt[n] : cnt[n] * s->pod_gpus;
        cr_assert_eq(bits, want, "seed %llu %s: node %u mask %llx for %u pods", (unsigned long long)seed, what, n,
                     (unsigned long long)o->masks[i], cnt[n]);
        for (uint64_t m = o->masks[i]; m; m &= m - 1) {
            const uint32_t g = (uint32_t)__builtin_ctzll(m);
            cr_assert_lt(g, before[n].gpus);
            if (s->milli)
                cr_assert_geq(before[n].milli[g], s->milli, "seed %llu %s: node %u GPU %u has %u milli free",
                              (unsigned long long)seed, what, n, g, before[n].milli[g]);
            else
                cr_assert_eq(before[n].state[g], GPUSCHED_GPU_FREE, "seed %llu %s: node %u GPU %u not free",
                             (unsigned long long)seed, what, n, g);
        }
    }
    uint32_t used = 0;
    for (uint32_t n = 0; n < nn; n++)
        used += cnt[n] > 0;
    cr_assert_eq(used, o->n);
    cr_assert(ref_groups_ok(before, nn, cnt, q, s), "seed %llu %s: required level or slices broken",
              (unsigned long long)seed, what);
}

/* ---- random states ------------------------------------------------------ */

static int place_req(gpusched_placer *p, hreq *h, bool commit, gpusched_place_result *res, outcome *o)
{
    h->q.flags = commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
    hreq_fix(h);
    int rc = gpusched_placer_place(p, &h->q, res);
    if (o) {
        outcome_of(rc, res, o);
        o->asks_gpus = h->q.pod_gpus || h->q.gpu_milli || h->q.split == GPUSCHED_SPLIT_WHOLE_NODES;
    }
    return rc;
}

/* A random node of the first nn and a random subset of its free GPUs:
 * true when the subset is not empty and the node is up. */
static bool random_free_gpus(gpusched_cluster *c, pt_rng *r, uint32_t nn, uint32_t *n, uint64_t *m)
{
    *n = pt_below(r, nn);
    uint64_t f;
    uint32_t hl;
    cr_assert_eq(gpusched_cluster_node_state(c, *n, &f, NULL, NULL, &hl), 0);
    *m = f & pt_next(r);
    return *m && hl == GPUSCHED_NODE_UP;
}

/* Fills a cluster: committed pods of every kind, whole-GPU jobs, a
 * reservation, a node not up now and then, releases. */
static void random_fill(pt_rng *r, gpusched_cluster *c, gpusched_placer *p, gpusched_place_result *res,
                        const gpusched_topo *t, uint32_t nres, tracker *tr, uint64_t *next_id, uint32_t steps,
                        outcome *seen)
{
    const uint32_t nn = gpusched_topo_node_count(t);
    for (uint32_t s = 0; s < steps; s++) {
        const uint32_t what = pt_below(r, 10);
        if (what < 5) {
            hreq h;
            random_pod_request(r, t, nres, &h, (*next_id)++, true);
            outcome o;
            int rc = place_req(p, &h, true, res, &o);
            cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "fill: %d %s", rc, gpusched_placer_errmsg(p));
            if (seen)
                *seen++ = o;
            if (getenv("GS_HUNT_DEBUG")) {
                char d[512], a[256];
                describe(d, sizeof d, &h.q);
                print_outcome(a, sizeof a, &o);
                fprintf(stderr, "fill %llu: %s -> %s\n", (unsigned long long)h.job.id, d, a);
            }
            if (rc == 0) {
                rshape sh = shape_of(&h.q, t);
                track(tr, h.job.id, &sh, &o);
            }
        } else if (what < 7 && tr->n) {
            const uint32_t k = pt_below(r, tr->n);
            const uint64_t id = tr->j[k].id;
            cr_assert_eq(gpusched_cluster_release(c, id), 0, "%s", gpusched_cluster_errmsg(c));
            untrack(tr, id);
        } else if (what == 7) {
            /* Whole GPUs on one node. */
            uint32_t n;
            uint64_t m;
            if (random_free_gpus(c, r, nn, &n, &m)) {
                gpusched_job j = GPUSCHED_JOB_INIT;
                j.id = (*next_id)++;
                cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &n, &m), 0, "%s", gpusched_cluster_errmsg(c));
                outcome o = {.n = 1, .nodes = {n}, .masks = {m}};
                track(tr, j.id, NULL, &o);
            }
        } else if (what == 8) {
            uint32_t n;
            uint64_t m;
            if (random_free_gpus(c, r, nn, &n, &m))
                cr_assert_eq(gpusched_cluster_reserve(c, 999999 + pt_below(r, 2), 1, &n, &m), 0);
        } else {
            uint64_t hit[64];
            cr_assert_eq(gpusched_cluster_node_health_set(c, pt_below(r, nn), pt_below(r, 3) ? 0 : 1 + pt_below(r, 3),
                                                          hit, 64, NULL),
                         0);
        }
    }
}

/* Shapes for the fragmentation policy: fixed, so that the placer does not
 * learn from the requests (a learning placer legitimately answers a plan
 * and the commit after it differently: the plan taught it a shape). */
static void set_workload(gpusched_placer *p, uint32_t nres)
{
    static uint64_t wres[4][NRES] = {{1000, 1024, 0}, {2000, 2048, 1}, {500, 512, 0}, {3000, 4096, 1}};
    gpusched_place_request w[4];
    const gpusched_place_request *shapes[4];
    static const double weights[] = {4, 3, 2, 1};
    for (uint32_t i = 0; i < 4; i++) {
        w[i] = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
        w[i].split = GPUSCHED_SPLIT_PODS;
        w[i].pods = 1;
        w[i].resources = wres[i];
        w[i].resource_count = nres;
        if (i == 0)
            w[i].gpu_milli = 500;
        else if (i == 1)
            w[i].pod_gpus = 1;
        else if (i == 2)
            w[i].gpu_milli = 250;
        else
            w[i].pod_gpus = 2;
        shapes[i] = &w[i];
    }
    cr_assert_eq(gpusched_placer_workload_set(p, 4, shapes, weights), 0, "%s", gpusched_placer_errmsg(p));
}

/* ---- two searches, one question ------------------------------------------ */

static uint32_t n_twins, n_twin_fits;

/* A request of pods of whole GPUs asking no resource, by the pods' search
 * (the `pods` field makes it a pod request) and by the whole-GPU search
 * (the same gang as `gpus`): both are complete, so they agree on whether
 * it fits whenever nothing but GPUs is held (cpu-only pods and held
 * resources on idle nodes make whole nodes differ: a node with a cpu-only
 * pod is fully free for the whole-GPU search, not idle for pods). Only
 * requests the whole-GPU search can say: one class at most. */
/* Whether every node with all its GPUs free holds nothing else either. */
static bool idle_same(const rnode *v, uint32_t nn)
{
    for (uint32_t n = 0; n < nn; n++) {
        bool all_free = true, res_held = false;
        for (uint32_t g = 0; g < v[n].gpus; g++)
            all_free &= v[n].state[g] == GPUSCHED_GPU_FREE;
        for (uint32_t i = 0; i < NRES; i++)
            res_held |= v[n].res[i] != v[n].cap[i];
        if (all_free && res_held)
            return false;
    }
    return true;
}

static void twins_agree(gpusched_placer *p, const hreq *h, bool whole_ok, uint64_t seed, uint32_t k)
{
    if (!h->q.pod_gpus || h->q.gpu_milli || h->q.gpu_class_count || (h->q.split == GPUSCHED_SPLIT_WHOLE_NODES && !whole_ok))
        return;
    hreq pods = *h, whole = *h;
    pods.q.resource_count = 0;
    pods.q.policy = 0;
    whole.q.resource_count = 0;
    whole.q.policy = 0;
    whole.q.pods = 0;
    whole.q.gpus = h->q.pods * h->q.pod_gpus;
    gpusched_place_result *res;
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    const int a = place_req(p, &pods, false, res, NULL);
    char msg[512], desc[512];
    snprintf(msg, sizeof msg, "%s", gpusched_place_result_message(res));
    const int b = place_req(p, &whole, false, res, NULL);
    describe(desc, sizeof desc, &whole.q);
    cr_assert(a == 0 || a == GPUSCHED_ENOSPC, "seed %llu: %d %s", (unsigned long long)seed, a, gpusched_placer_errmsg(p));
    cr_assert(b == 0 || b == GPUSCHED_ENOSPC, "seed %llu: %d %s", (unsigned long long)seed, b, gpusched_placer_errmsg(p));
    cr_assert_eq(a == 0, b == 0, "seed %llu request %u: pods' search %s (%s), whole-GPU search %s (%s) (%s)",
                 (unsigned long long)seed, k, a ? "does not fit" : "fits", msg, b ? "does not fit" : "fits",
                 gpusched_place_result_message(res), desc);
    n_twins++;
    n_twin_fits += a == 0;
    gpusched_place_result_free(res);
}

/* ---- 1. plan, commit, constraints, completeness, release ---------------- */

static uint32_t n_cases, n_fits, n_whole_fits, n_frac_fits, n_slice_fits, n_req_fits;

static void plan_commit_round(uint64_t seed)
{
    uint32_t nres;
    gpusched_topo *t = hunt_topo(seed, MAXN, 3, 0, &nres);
    pt_env e = pt_env_on(t);
    set_workload(e.p, nres);
    pt_rng r = {seed * 0xd1b54a32d192ed03ull + 77};
    tracker *tr = calloc(1, sizeof *tr);
    uint64_t next_id = 1;
    random_fill(&r, e.c, e.p, e.res, t, nres, tr, &next_id, pt_below(&r, 16), NULL);
    check(e.c, seed, "after the fill");
    assert_accounts(e.c, tr, seed, "after the fill");
    const uint32_t nn = gpusched_topo_node_count(t);
    for (uint32_t trial = 0; trial < 10; trial++) {
        hreq h;
        random_pod_request(&r, t, nres, &h, next_id++, true);
        const rshape s = shape_of(&h.q, t);
        char desc[512];
        describe(desc, sizeof desc, &h.q);
        rnode v[MAXN];
        ref_read(e.c, v, nn);
        twins_agree(e.p, &h, idle_same(v, nn), seed, trial);
        const uint64_t v0 = view(e.c);
        size_t len0;
        uint8_t *img0 = snap(e.c, &len0);
        /* Plan only: changes nothing. */
        outcome plan, commit;
        const int prc = place_req(e.p, &h, false, e.res, &plan);
        cr_assert(prc == 0 || prc == GPUSCHED_ENOSPC, "seed %llu trial %u: rc %d %s (%s)", (unsigned long long)seed,
                  trial, prc, gpusched_placer_errmsg(e.p), desc);
        cr_assert(same_snap(e.c, img0, len0), "seed %llu trial %u: a plan changed the cluster (%s)",
                  (unsigned long long)seed, trial, desc);
        /* Against the brute force. */
        const bool want = ref_fits(v, nn, &h.q, &s);
        cr_assert_eq(ref_fits_by_counts(v, nn, &h.q, &s), want, "seed %llu trial %u: the references disagree (%s)",
                     (unsigned long long)seed, trial, desc);
        cr_assert_eq(prc == 0, want, "seed %llu trial %u: library %s, brute force %s (%s): %s",
                     (unsigned long long)seed, trial, prc ? "does not fit" : "fits", want ? "fits" : "does not",
                     desc, gpusched_place_result_message(e.res));
        /* The commit: the plan's placement. */
        const int crc = place_req(e.p, &h, true, e.res, &commit);
        char pa[256], pb[256];
        print_outcome(pa, sizeof pa, &plan);
        print_outcome(pb, sizeof pb, &commit);
        cr_assert(same_outcome(&plan, &commit), "seed %llu trial %u: plan %s, commit %s (%s)",
                  (unsigned long long)seed, trial, pa, pb, desc);
        cr_assert_eq(gpusched_place_result_committed(e.res), crc == 0);
        n_cases++;
        if (crc) {
            cr_assert(same_snap(e.c, img0, len0), "seed %llu trial %u: a failed commit changed the cluster",
                      (unsigned long long)seed, trial);
            free(img0);
            continue;
        }
        n_fits++;
        n_whole_fits += s.whole;
        n_frac_fits += s.milli != 0;
        n_slice_fits += h.q.slice_gpus[0] != 0;
        n_req_fits += h.q.required_level != GPUSCHED_NONE;
        assert_obeys(v, nn, &h.q, &s, &commit, seed, desc);
        track(tr, h.job.id, &s, &commit);
        check(e.c, seed, "after a commit");
        assert_accounts(e.c, tr, seed, desc);
        /* Released at once, or kept (and checked at the end). */
        if (pt_below(&r, 2)) {
            cr_assert_eq(gpusched_cluster_release(e.c, h.job.id), 0);
            untrack(tr, h.job.id);
            cr_assert_eq(view(e.c), v0, "seed %llu trial %u: a release did not restore the state (%s)",
                         (unsigned long long)seed, trial, desc);
            check(e.c, seed, "after a release");
        }
        free(img0);
    }
    /* Every kept job released, in random order: back to the fill's state
     * less its jobs, which the accounts check. */
    while (tr->n) {
        const uint64_t id = tr->j[pt_below(&r, tr->n)].id;
        cr_assert_eq(gpusched_cluster_release(e.c, id), 0);
        untrack(tr, id);
        assert_accounts(e.c, tr, seed, "releasing all");
    }
    check(e.c, seed, "all released");
    free(tr);
    pt_env_free(&e);
}

Test(pods_metamorphic, plan_commit_fit_and_release_against_brute_force, .timeout = 120)
{
    run_seeds(plan_commit_round, 3000);
    cr_log_info("%u cases, %u fit (whole nodes %u, fractions %u, slices %u, required %u)", n_cases, n_fits,
                n_whole_fits, n_frac_fits, n_slice_fits, n_req_fits);
    cr_assert_gt(n_fits, n_cases / 5, "%u of %u fit", n_fits, n_cases);
    cr_assert_lt(n_fits, n_cases - n_cases / 10, "%u of %u fit", n_fits, n_cases);
    cr_assert_gt(n_whole_fits, 20);
    cr_assert_gt(n_frac_fits, 100);
    cr_assert_gt(n_slice_fits, 50);
    cr_assert_gt(n_req_fits, 50);
}

/* ---- 2. answers do not depend on history -------------------------------- */

/* Plans the same request on every placer and expects one answer: the
 * placement, the reason and the explanation's text. */
static void same_answers(gpusched_placer *const *ps, const char *const *names, uint32_t np, hreq *h,
                         uint64_t seed, uint32_t step)
{
    gpusched_place_result *res;
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    outcome first;
    char msg0[512], desc[512], a[256], b[256];
    describe(desc, sizeof desc, &h->q);
    for (uint32_t i = 0; i < np; i++) {
        outcome o;
        const int rc = place_req(ps[i], h, false, res, &o);
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "seed %llu step %u %s: rc %d %s", (unsigned long long)seed,
                  step, names[i], rc, gpusched_placer_errmsg(ps[i]));
        if (i == 0) {
            first = o;
            snprintf(msg0, sizeof msg0, "%s", gpusched_place_result_message(res));
            continue;
        }
        print_outcome(a, sizeof a, &first);
        print_outcome(b, sizeof b, &o);
        cr_assert(same_outcome(&first, &o), "seed %llu step %u: %s %s, %s %s (%s)", (unsigned long long)seed, step,
                  names[0], a, names[i], b, desc);
        cr_assert_str_eq(gpusched_place_result_message(res), msg0, "seed %llu step %u: %s and %s explain apart (%s)",
                         (unsigned long long)seed, step, names[0], names[i], desc);
    }
    gpusched_place_result_free(res);
}

static uint32_t n_history_compared, n_history_fits;

static void history_round(uint64_t seed)
{
    pt_rng r = {seed * 0x2545f4914f6cdd1dull + 5};
    uint32_t nres;
    /* Racks of about 10 nodes, up to 60 nodes; one time in four a single
     * rack of up to 300 (the fragmentation policy caches scans of 256
     * nodes and more). */
    const bool wide = pt_below(&r, 4) == 0;
    gpusched_topo *t = hunt_topo(seed, wide ? 300 : 60, wide ? 100000 : 10, 0, &nres);
    pt_env e = pt_env_on(t);
    set_workload(e.p, nres);
    size_t len0;
    uint8_t *img0 = snap(e.c, &len0);
    cr_assert_eq(gpusched_cluster_journal_start(e.c, NULL, NULL), 0);
    tracker *tr = calloc(1, sizeof *tr);
    uint64_t next_id = 1;
    char err[256];
    for (uint32_t phase = 0; phase < 4; phase++) {
        random_fill(&r, e.c, e.p, e.res, t, nres, tr, &next_id, 40 + pt_below(&r, 80), NULL);
        /* Releases of many jobs at once (the summaries' largest values
         * move down), then more placements. */
        for (uint32_t k = 0; k < tr->n / 2; k++) {
            const uint64_t id = tr->j[pt_below(&r, tr->n)].id;
            cr_assert_eq(gpusched_cluster_release(e.c, id), 0);
            untrack(tr, id);
        }
        random_fill(&r, e.c, e.p, e.res, t, nres, tr, &next_id, 20, NULL);
        check(e.c, seed, "history");
        assert_accounts(e.c, tr, seed, "history");
        /* The same state four ways. */
        size_t len;
        uint8_t *img = snap(e.c, &len);
        gpusched_cluster *restored, *replayed;
        cr_assert_eq(gpusched_cluster_restore(img, len, NULL, &restored, err, sizeof err), 0, "%s", err);
        const void *jb;
        size_t jlen;
        cr_assert_eq(gpusched_cluster_journal_view(e.c, &jb, &jlen), 0);
        cr_assert_eq(gpusched_cluster_replay(img0, len0, jb, jlen, NULL, &replayed, err, sizeof err), 0,
                     "seed %llu: %s", (unsigned long long)seed, err);
        cr_assert_eq(view(restored), view(e.c), "seed %llu: the restored cluster shows another state",
                     (unsigned long long)seed);
        cr_assert_eq(view(replayed), view(e.c), "seed %llu: the replayed cluster shows another state",
                     (unsigned long long)seed);
        cr_assert(same_snap(replayed, img, len), "seed %llu: replay gives other bytes", (unsigned long long)seed);
        cr_assert(same_snap(restored, img, len), "seed %llu: a round trip gives other bytes", (unsigned long long)seed);
        check(restored, seed, "restored");
        check(replayed, seed, "replayed");
        gpusched_placer *fresh, *on_restored, *on_replayed;
        cr_assert_eq(gpusched_placer_new(e.c, NULL, &fresh), 0);
        cr_assert_eq(gpusched_placer_new(restored, NULL, &on_restored), 0);
        cr_assert_eq(gpusched_placer_new(replayed, NULL, &on_replayed), 0);
        set_workload(fresh, nres);
        set_workload(on_restored, nres);
        set_workload(on_replayed, nres);
        gpusched_placer *ps[] = {e.p, fresh, on_restored, on_replayed};
        static const char *const names[] = {"the placer with a history", "a new placer",
                                            "a placer on the restored cluster", "a placer on the replayed cluster"};
        const uint32_t nn = gpusched_topo_node_count(t);
        rnode *v = calloc(nn, sizeof *v);
        cr_assert_not_null(v);
        ref_read(e.c, v, nn);
        for (uint32_t k = 0; k < 25; k++) {
            hreq h;
            random_pod_request(&r, t, nres, &h, next_id++, false);
            same_answers(ps, names, 4, &h, seed, phase * 100 + k);
            twins_agree(e.p, &h, idle_same(v, nn), seed, phase * 100 + k);
            /* Complete and valid on the larger cluster, by counts. */
            outcome o;
            char desc[512];
            describe(desc, sizeof desc, &h.q);
            const rshape sh = shape_of(&h.q, t);
            const int rc = place_req(e.p, &h, false, e.res, &o);
            const bool want = ref_fits_by_counts(v, nn, &h.q, &sh);
            cr_assert_eq(rc == 0, want, "seed %llu phase %u request %u: library %s, reference %s (%s): %s",
                         (unsigned long long)seed, phase, k, rc ? "does not fit" : "fits", want ? "fits" : "does not",
                         desc, gpusched_place_result_message(e.res));
            if (rc == 0)
                assert_obeys(v, nn, &h.q, &sh, &o, seed, desc);
            n_history_fits += rc == 0;
            n_history_compared++;
        }
        free(v);
        gpusched_placer_free(fresh);
        gpusched_placer_free(on_restored);
        gpusched_placer_free(on_replayed);
        gpusched_cluster_unref(restored);
        gpusched_cluster_unref(replayed);
        free(img);
    }
    free(tr);
    free(img0);
    pt_env_free(&e);
}

Test(pods_metamorphic, answers_do_not_depend_on_history, .timeout = 120)
{
    run_seeds(history_round, 40);
    cr_log_info("%u requests compared on four placers, %u fit; %u by both searches, %u fit", n_history_compared,
                n_history_fits, n_twins, n_twin_fits);
    cr_assert(n_history_fits > n_history_compared / 10 && n_history_fits < n_history_compared - n_history_compared / 10,
              "%u of %u fit", n_history_fits, n_history_compared);
}

/* ---- 3. a node that can hold nothing ------------------------------------ */

static uint32_t n_null_compared;

/* A pod without GPUs: the node of nothing (variant 1) passes the
 * request's filters (what "eligible" means for pods), so a failure that
 * was "no eligible node" may become "the nodes hold too few pods". */
static void null_node_reason(const outcome *without, outcome *with, uint32_t variant)
{
    if (variant == 1 && !without->asks_gpus && without->rc && with->rc &&
        without->reason == GPUSCHED_REASON_ELIGIBLE && with->reason == GPUSCHED_REASON_SPLIT)
        with->reason = without->reason;
}

static void null_node_round(uint64_t seed)
{
    uint32_t nres;
    gpusched_topo *t = hunt_topo(seed, 12, 3, 0, &nres);
    const uint32_t nn = gpusched_topo_node_count(t);
    pt_env env[3];
    env[0] = pt_env_on(t);
    for (uint32_t k = 1; k < 3; k++) {
        uint32_t nres_k;
        env[k] = pt_env_on(hunt_topo(seed, 12, 3, k, &nres_k));
        cr_assert_eq(nres_k, nres);
        cr_assert_eq(gpusched_topo_node_count(env[k].t), nn + 1);
    }
    /* The copy of the last node is down. */
    uint64_t hit[4];
    cr_assert_eq(gpusched_cluster_node_health_set(env[2].c, nn, GPUSCHED_NODE_DOWN, hit, 4, NULL), 0);
    pt_rng rr[3], ctl = {seed + 99};
    tracker *tr[3];
    uint64_t ids[3];
    for (uint32_t k = 0; k < 3; k++) {
        set_workload(env[k].p, nres);
        rr[k] = (pt_rng){seed * 0x9e3779b97f4a7c15ull + 11};
        tr[k] = calloc(1, sizeof *tr[k]);
        ids[k] = 1;
    }
    static const char *const names[] = {"without the node", "with a node of nothing", "with a node down"};
    outcome seen[3][64];
    for (uint32_t phase = 0; phase < 3; phase++) {
        /* The same operations, drawn over the first nn nodes. */
        const uint32_t steps = 10 + pt_below(&ctl, 30);
        for (uint32_t k = 0; k < 3; k++) {
            memset(seen[k], 0, sizeof seen[k]);
            random_fill(&rr[k], env[k].c, env[k].p, env[k].res, t, nres, tr[k], &ids[k], steps, seen[k]);
        }
        for (uint32_t i = 0; i < 64; i++)
            for (uint32_t k = 1; k < 3; k++) {
                char a[256], b[256];
                null_node_reason(&seen[0][i], &seen[k][i], k);
                print_outcome(a, sizeof a, &seen[0][i]);
                print_outcome(b, sizeof b, &seen[k][i]);
                cr_assert(same_outcome(&seen[0][i], &seen[k][i]), "seed %llu phase %u fill %u: %s %s, %s %s",
                          (unsigned long long)seed, phase, i, names[0], a, names[k], b);
            }
        gpusched_placer *ps[3];
        for (uint32_t k = 0; k < 3; k++)
            ps[k] = env[k].p;
        for (uint32_t q = 0; q < 20; q++) {
            hreq h;
            random_pod_request(&ctl, t, nres, &h, 100000 + q, false);
            gpusched_place_result *res;
            cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
            outcome o[3];
            char desc[512];
            describe(desc, sizeof desc, &h.q);
            for (uint32_t k = 0; k < 3; k++) {
                const int rc = place_req(ps[k], &h, false, res, &o[k]);
                cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "seed %llu: %s rc %d %s", (unsigned long long)seed,
                          names[k], rc, gpusched_placer_errmsg(ps[k]));
            }
            for (uint32_t k = 1; k < 3; k++) {
                char a[256], b[256];
                null_node_reason(&o[0], &o[k], k);
                print_outcome(a, sizeof a, &o[0]);
                print_outcome(b, sizeof b, &o[k]);
                cr_assert(same_outcome(&o[0], &o[k]), "seed %llu phase %u request %u: %s %s, %s %s (%s)",
                          (unsigned long long)seed, phase, q, names[0], a, names[k], b, desc);
            }
            n_null_compared++;
            gpusched_place_result_free(res);
        }
    }
    for (uint32_t k = 0; k < 3; k++) {
        check(env[k].c, seed, names[k]);
        free(tr[k]);
        pt_env_free(&env[k]);
    }
}

Test(pods_metamorphic, a_node_that_holds_nothing_changes_nothing, .timeout = 120)
{
    run_seeds(null_node_round, 300);
    cr_log_info("%u requests compared", n_null_compared);
}

/* The smallest case the null-node check found: the only node with the
 * label a GPU pod requires has no GPU. The filters leave no GPU, so the
 * reason is ELIGIBLE, as without that node (it was SPLIT). */
Test(pods_metamorphic, a_node_without_gpus_is_not_eligible_for_gpu_pods)
{
    static const char text[] = "levels rack\nlabels ssd\nresources cpu\n"
                               "node r0 g0 gpus=4 cpu=8000\n"
                               "node r0 c0 gpus=0 labels=ssd cpu=8000\n";
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, sizeof text - 1, NULL, &t, err, sizeof err), 0, "%s", err);
    pt_env e = pt_env_on(t);
    hreq h;
    memset(&h, 0, sizeof h);
    h.q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    h.job = (gpusched_job)GPUSCHED_JOB_INIT;
    h.q.split = GPUSCHED_SPLIT_PODS;
    h.q.pods = 1;
    h.q.pod_gpus = 1;
    h.q.labels_required = 1;
    h.q.resource_count = 1;
    h.res[0] = 1000;
    for (uint32_t milli = 0; milli <= 500; milli += 500) {
        h.q.gpu_milli = milli;
        h.q.pod_gpus = milli ? 0 : 1;
        cr_assert_eq(place_req(e.p, &h, false, e.res, NULL), GPUSCHED_ENOSPC);
        cr_assert_eq(gpusched_place_result_reason(e.res), GPUSCHED_REASON_ELIGIBLE, "milli %u: %s", milli,
                     gpusched_place_result_message(e.res));
    }
    /* A pod without GPUs goes there. */
    h.q.pod_gpus = 0;
    h.q.gpu_milli = 0;
    cr_assert_eq(place_req(e.p, &h, false, e.res, NULL), 0, "%s", gpusched_place_result_message(e.res));
    pt_env_free(&e);
}

/* ---- 4. operations of one instant commute -------------------------------- */

static uint32_t n_permuted;

typedef struct instant_op {
    uint32_t kind, node, health; /* kind 0: release job id; 1: node health */
    uint64_t id;
} instant_op;

static void permute_round(uint64_t seed)
{
    pt_rng r = {seed * 0x94d049bb133111ebull + 3};
    uint32_t nres;
    gpusched_topo *t = hunt_topo(seed, 24, 4, 0, &nres);
    pt_env e = pt_env_on(t);
    set_workload(e.p, nres);
    tracker *tr = calloc(1, sizeof *tr);
    uint64_t next_id = 1;
    random_fill(&r, e.c, e.p, e.res, t, nres, tr, &next_id, 30 + pt_below(&r, 40), NULL);
    /* Up to 6 releases and 3 health changes of distinct nodes, applied in
     * the order drawn here and in a shuffled order on a copy. */
    size_t len;
    uint8_t *img = snap(e.c, &len);
    gpusched_cluster *copy;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(img, len, NULL, &copy, err, sizeof err), 0, "%s", err);
    instant_op ops[9];
    uint32_t nops = 0;
    const uint32_t nn = gpusched_topo_node_count(t);
    for (uint32_t i = 0; i < 6 && i < tr->n; i++)
        if (pt_below(&r, 3)) {
            const uint32_t k = pt_below(&r, tr->n - i) + i; /* distinct jobs: a partial shuffle */
            const tjob x = tr->j[k];
            tr->j[k] = tr->j[i];
            tr->j[i] = x;
            ops[nops++] = (instant_op){0, 0, 0, x.id};
        }
    uint32_t used_nodes = 0;
    for (uint32_t i = 0; i < 3 && nn <= 32; i++) {
        const uint32_t n = pt_below(&r, nn);
        if (used_nodes >> n & 1)
            continue;
        used_nodes |= 1u << n;
        ops[nops++] = (instant_op){1, n, pt_below(&r, 4), 0};
    }
    uint32_t order[9];
    for (uint32_t i = 0; i < nops; i++)
        order[i] = i;
    for (uint32_t i = nops; i > 1; i--) {
        const uint32_t k = pt_below(&r, i), x = order[i - 1];
        order[i - 1] = order[k];
        order[k] = x;
    }
    for (uint32_t pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < nops; i++) {
            gpusched_cluster *c = pass ? copy : e.c;
            const uint32_t o = pass ? order[i] : i;
            uint64_t hit[64];
            if (ops[o].kind == 0)
                cr_assert_eq(gpusched_cluster_release(c, ops[o].id), 0, "%s", gpusched_cluster_errmsg(c));
            else
                cr_assert_eq(gpusched_cluster_node_health_set(c, ops[o].node, ops[o].health, hit, 64, NULL), 0);
        }
    cr_assert_eq(view(e.c), view(copy), "seed %llu: %u operations of one instant do not commute",
                 (unsigned long long)seed, nops);
    check(copy, seed, "permuted");
    gpusched_placer *other;
    cr_assert_eq(gpusched_placer_new(copy, NULL, &other), 0);
    set_workload(other, nres);
    gpusched_placer *ps[] = {e.p, other};
    static const char *const names[] = {"in order", "permuted"};
    for (uint32_t k = 0; k < 10; k++) {
        hreq h;
        random_pod_request(&r, t, nres, &h, next_id++, false);
        same_answers(ps, names, 2, &h, seed, k);
    }
    n_permuted += nops;
    gpusched_placer_free(other);
    gpusched_cluster_unref(copy);
    free(img);
    free(tr);
    pt_env_free(&e);
}

Test(pods_metamorphic, releases_and_health_changes_of_one_instant_commute, .timeout = 120)
{
    run_seeds(permute_round, 500);
    cr_log_info("%u operations permuted", n_permuted);
}

/* ---- 5. sequences of every change: journal, snapshots, atomicity --------- */

typedef struct seqst {
    pt_rng r;
    uint64_t seed;
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    uint32_t nres;
    uint64_t next_id;
    uint32_t committed, planned, refused, batches, bad_batches, preempted, moved;
} seqst;

static uint64_t random_job(seqst *s)
{
    const uint32_t n = gpusched_cluster_job_count(s->c);
    uint64_t id = 0;
    if (n)
        cr_assert_eq(gpusched_cluster_job_at(s->c, pt_below(&s->r, n), &id), 0);
    return id;
}

/* A pod request with a job descriptor a preemption may evict. */
static void seq_request(seqst *s, hreq *h, bool commit)
{
    random_pod_request(&s->r, s->t, s->nres, h, s->next_id++, false);
    h->job.flags = pt_below(&s->r, 3) ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
    h->job.priority = (int32_t)pt_below(&s->r, 4);
    h->job.cost_hint = pt_below(&s->r, 100);
    h->q.flags = commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
}

/* Spoils a valid request in one of the ways the library must refuse
 * before changing anything. */
static int spoil(seqst *s, hreq *h)
{
    switch (pt_below(&s->r, 5)) {
    case 0: h->q.gpu_milli = 1001; h->q.pod_gpus = 0; return GPUSCHED_EINVAL;
    case 1: h->q.resource_count = s->nres + 1; h->res[s->nres < NRES ? s->nres : 0] = 1; return GPUSCHED_ERANGE;
    case 2: h->q.gpu_class_count = 1; h->classes[0] = 9; return GPUSCHED_ERANGE;
    case 3: h->q.policy = 7; return GPUSCHED_EINVAL;
    default: {
        const uint64_t id = random_job(s);
        if (!id) {
            h->q.policy = 7;
            return GPUSCHED_EINVAL;
        }
        h->job.id = id; /* a running job's id, committed */
        h->q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        return GPUSCHED_EEXIST;
    }
    }
}

/* What the cluster's jobs hold in all: each resource, the milli of
 * fractions, whole GPUs allocated. */
static void usage(gpusched_cluster *c, uint64_t *used)
{
    gpusched_topo *t = gpusched_cluster_topo(c);
    memset(used, 0, (NRES + 2) * sizeof *used);
    for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++) {
        for (uint32_t r = 0; r < gpusched_topo_resource_count(t); r++) {
            uint32_t f;
            cr_assert_eq(gpusched_cluster_node_resource_free(c, n, r, &f), 0);
            used[r] += gpusched_topo_node_resource(t, n, r) - f;
        }
        uint64_t a;
        cr_assert_eq(gpusched_cluster_node_state(c, n, NULL, NULL, &a, NULL), 0);
        for (uint32_t g = 0; g < gpusched_topo_node_gpus(t, n); g++) {
            uint32_t st, m;
            cr_assert_eq(gpusched_cluster_gpu_state(c, n, g, &st, NULL), 0);
            cr_assert_eq(gpusched_cluster_gpu_milli_free(c, n, g, &m), 0);
            used[NRES] += st == GPUSCHED_GPU_SHARED ? 1000 - m : 0;
            used[NRES + 1] += st == GPUSCHED_GPU_ALLOCATED;
        }
    }
}

/* Whether the gang fits on the state `img` with the jobs `ids` released
 * (the preemption's reference: release, then place). */
static bool fits_without(const uint8_t *img, size_t len, const uint64_t *ids, uint32_t n, hreq *h, uint32_t nres)
{
    gpusched_cluster *c;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(img, len, NULL, &c, err, sizeof err), 0, "%s", err);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(gpusched_cluster_release(c, ids[i]), 0);
    gpusched_placer *p;
    gpusched_place_result *res;
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    set_workload(p, nres);
    const uint32_t flags = h->q.flags;
    const int rc = place_req(p, h, false, res, NULL);
    h->q.flags = flags;
    cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%d %s", rc, gpusched_placer_errmsg(p));
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    return rc == 0;
}

static uint32_t n_pre_checked, n_pre_victims;

/* A preemption plan against releasing and placing, on the state img: a
 * plan exactly when the gang fits with every eligible job gone (preemptible,
 * priority below the gang's); its victims are eligible, let the gang fit
 * and none can be spared (plans up to 64 victims); no lower tier of
 * priorities would do. */
static void check_preemption(seqst *s, const uint8_t *img, size_t len, hreq *h, int rc, const uint64_t *victims,
                             uint32_t nv, uint32_t step)
{
    const uint32_t nj = gpusched_cluster_job_count(s->c);
    uint64_t *elig = calloc(nj + 1, sizeof *elig), *keep = calloc(nj + 1, sizeof *keep);
    int32_t *prio = calloc(nj + 1, sizeof *prio);
    uint32_t ne = 0;
    for (uint32_t i = 0; i < nj; i++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        cr_assert_eq(gpusched_cluster_job_at(s->c, i, &j.id), 0);
        cr_assert_eq(gpusched_cluster_job_find(s->c, j.id, &j), 0);
        if ((j.flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE) && j.priority < h->job.priority) {
            prio[ne] = j.priority;
            elig[ne++] = j.id;
        }
    }
    const bool all = fits_without(img, len, elig, ne, h, s->nres);
    cr_assert_eq(rc == 0, all, "seed %llu step %u: a plan (%d) exactly when the gang fits with every eligible job gone",
                 (unsigned long long)s->seed, step, rc);
    if (rc == 0 && nv && nv <= 64) {
        int32_t top = INT32_MIN;
        for (uint32_t v = 0; v < nv; v++) {
            uint32_t k = 0;
            while (k < ne && elig[k] != victims[v])
                k++;
            cr_assert_lt(k, ne, "seed %llu step %u: victim %llu is not eligible", (unsigned long long)s->seed, step,
                         (unsigned long long)victims[v]);
            top = prio[k] > top ? prio[k] : top;
        }
        cr_assert(fits_without(img, len, victims, nv, h, s->nres), "seed %llu step %u: the victims do not make room",
                  (unsigned long long)s->seed, step);
        for (uint32_t v = 0; v < nv; v++) {
            uint32_t m = 0;
            for (uint32_t i = 0; i < nv; i++)
                if (i != v)
                    keep[m++] = victims[i];
            cr_assert(!fits_without(img, len, keep, m, h, s->nres), "seed %llu step %u: victim %llu can be spared",
                      (unsigned long long)s->seed, step, (unsigned long long)victims[v]);
        }
        for (int32_t p = 0; p < top; p++) {
            uint32_t m = 0;
            for (uint32_t i = 0; i < ne; i++)
                if (prio[i] <= p)
                    keep[m++] = elig[i];
            cr_assert(!fits_without(img, len, keep, m, h, s->nres),
                      "seed %llu step %u: victims of priority <= %d would do, the plan evicts up to %d",
                      (unsigned long long)s->seed, step, p, top);
        }
        n_pre_victims += nv;
    }
    n_pre_checked++;
    free(elig);
    free(keep);
    free(prio);
}

static void seq_step(seqst *s, uint32_t step)
{
    size_t len0, jlen0;
    uint8_t *img0 = snap(s->c, &len0);
    const void *jb;
    cr_assert_eq(gpusched_cluster_journal_view(s->c, &jb, &jlen0), 0);
    const uint32_t what = pt_below(&s->r, 12);
    bool changes = true; /* false: the step must change nothing */
    int rc = 0;
    const char *op = "?";
    if (what < 4) {
        op = "place";
        hreq h;
        const bool commit = pt_below(&s->r, 3) != 0;
        seq_request(s, &h, commit);
        hreq_fix(&h);
        rc = gpusched_placer_place(s->p, &h.q, s->res);
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "seed %llu step %u: %d %s", (unsigned long long)s->seed, step,
                  rc, gpusched_placer_errmsg(s->p));
        changes = commit && rc == 0;
        s->committed += changes;
        s->planned += !commit;
    } else if (what < 6) {
        op = "batch";
        hreq h[4];
        const gpusched_place_request *qp[4];
        gpusched_place_result *rp[4];
        const uint32_t n = 2 + pt_below(&s->r, 3);
        bool any_commit = false;
        for (uint32_t i = 0; i < n; i++) {
            seq_request(s, &h[i], pt_below(&s->r, 2));
            if (pt_below(&s->r, 4) == 0) {
                /* A whole-GPU gang beside the pods. */
                h[i].q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
                h[i].q.gpus = 1 + pt_below(&s->r, 4);
                h[i].q.flags = pt_below(&s->r, 2) ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
            }
            hreq_fix(&h[i]);
            any_commit |= h[i].q.flags != 0;
            qp[i] = &h[i].q;
            cr_assert_eq(gpusched_place_result_new(NULL, &rp[i]), 0);
        }
        int want = 0;
        bool exact = true;
        if (pt_below(&s->r, 4) == 0) {
            /* Bad input in the middle of the batch: refused, nothing
             * changed, the message says why. */
            const uint32_t k = 1 + pt_below(&s->r, n - 1);
            exact = h[k].q.split != GPUSCHED_SPLIT_ANY; /* a whole-GPU gang spoiled: some error */
            want = spoil(s, &h[k]);
            hreq_fix(&h[k]);
        }
        uint32_t placed = 99;
        rc = gpusched_placer_place_batch(s->p, n, qp, rp, &placed);
        if (want) {
            cr_assert(exact ? rc == want : rc < 0 && rc != GPUSCHED_ENOSPC,
                      "seed %llu step %u: a spoiled batch gave %d, not %d (%s)", (unsigned long long)s->seed, step, rc,
                      want, gpusched_placer_errmsg(s->p));
            cr_assert_neq(gpusched_placer_errmsg(s->p)[0], '\0');
            s->bad_batches++;
        } else {
            cr_assert_eq(rc, 0, "seed %llu step %u: %s", (unsigned long long)s->seed, step,
                         gpusched_placer_errmsg(s->p));
            uint32_t ok = 0, ok_commit = 0;
            for (uint32_t i = 0; i < n; i++) {
                ok += gpusched_place_result_reason(rp[i]) == GPUSCHED_REASON_OK;
                ok_commit += gpusched_place_result_committed(rp[i]);
            }
            cr_assert_eq(placed, ok);
            any_commit = ok_commit > 0;
        }
        changes = !want && any_commit;
        for (uint32_t i = 0; i < n; i++)
            gpusched_place_result_free(rp[i]);
        s->batches++;
    } else if (what == 6) {
        op = "release";
        const uint64_t id = random_job(s);
        if (id)
            cr_assert_eq(gpusched_cluster_release(s->c, id), 0);
        changes = id != 0;
    } else if (what == 7) {
        op = "health";
        uint64_t hit[64];
        const uint32_t node = pt_below(&s->r, gpusched_topo_node_count(s->t));
        const uint32_t health = pt_below(&s->r, 2) ? 0 : 1 + pt_below(&s->r, 3);
        uint32_t was;
        cr_assert_eq(gpusched_cluster_node_state(s->c, node, NULL, NULL, NULL, &was), 0);
        cr_assert_eq(gpusched_cluster_node_health_set(s->c, node, health, hit, 64, NULL), 0);
        changes = health != was; /* the health it has: no change, no record */
    } else if (what == 8) {
        op = "reserve";
        if (gpusched_cluster_resv_count(s->c) && pt_below(&s->r, 2)) {
            uint64_t id;
            cr_assert_eq(gpusched_cluster_resv_at(s->c, 0, &id), 0);
            cr_assert_eq(gpusched_cluster_unreserve(s->c, id), 0);
        } else {
            const uint32_t n = pt_below(&s->r, gpusched_topo_node_count(s->t));
            uint64_t f;
            uint32_t hl;
            cr_assert_eq(gpusched_cluster_node_state(s->c, n, &f, NULL, NULL, &hl), 0);
            const uint64_t m = f & pt_next(&s->r);
            rc = m ? gpusched_cluster_reserve(s->c, 888888, 1, &n, &m) : GPUSCHED_EBUSY;
            cr_assert(rc == 0 || (rc == GPUSCHED_ESTATE && hl != GPUSCHED_NODE_UP) || !m);
            changes = rc == 0;
        }
    } else if (what == 9) {
        op = "preempt";
        hreq h;
        const bool commit = pt_below(&s->r, 2);
        seq_request(s, &h, commit);
        h.job.priority = 10;
        h.job.flags = 0;
        hreq_fix(&h);
        /* The plan first: the commit carries out what it planned. */
        h.q.flags = 0;
        const int prc = gpusched_placer_preempt(s->p, &h.q, s->res, s->plan);
        outcome planned, done;
        outcome_of(prc, s->res, &planned);
        const uint64_t *vids;
        uint32_t nv = 0;
        uint64_t victims[64];
        cr_assert_eq(gpusched_preempt_plan_victims(s->plan, &vids, &nv), 0);
        cr_assert_leq(nv, 64);
        if (nv)
            memcpy(victims, vids, nv * sizeof *vids);
        cr_assert(same_snap(s->c, img0, len0), "seed %llu step %u: a preemption plan changed the cluster",
                  (unsigned long long)s->seed, step);
        check_preemption(s, img0, len0, &h, prc, victims, nv, step);
        h.q.flags = commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
        rc = gpusched_placer_preempt(s->p, &h.q, s->res, s->plan);
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "seed %llu step %u: preempt %d %s", (unsigned long long)s->seed,
                  step, rc, gpusched_placer_errmsg(s->p));
        outcome_of(rc, s->res, &done);
        char a[256], b[256];
        print_outcome(a, sizeof a, &planned);
        print_outcome(b, sizeof b, &done);
        cr_assert(same_outcome(&planned, &done), "seed %llu step %u: preemption planned %s, carried out %s",
                  (unsigned long long)s->seed, step, a, b);
        cr_assert_eq(gpusched_preempt_plan_victims(s->plan, &vids, &nv), 0);
        cr_assert(rc || nv == 0 || (nv <= 64 && !memcmp(vids, victims, nv * sizeof *vids)),
                  "seed %llu step %u: other victims carried out than planned", (unsigned long long)s->seed, step);
        for (uint32_t i = 0; commit && rc == 0 && i < nv; i++)
            cr_assert_eq(gpusched_cluster_job_find(s->c, vids[i], NULL), GPUSCHED_ENOENT);
        changes = commit && rc == 0;
        s->preempted += changes;
    } else if (what == 10) {
        op = "move";
        const uint64_t id = random_job(s);
        const uint32_t flags = pt_below(&s->r, 2) ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
        outcome planned, done;
        const int prc = id ? gpusched_placer_move(s->p, id, 0, s->res) : GPUSCHED_ENOSPC;
        outcome_of(prc, s->res, &planned);
        uint64_t used0[NRES + 2];
        usage(s->c, used0);
        rc = id ? gpusched_placer_move(s->p, id, flags, s->res) : GPUSCHED_ENOSPC;
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "seed %llu step %u: move %d %s", (unsigned long long)s->seed, step,
                  rc, gpusched_placer_errmsg(s->p));
        outcome_of(rc, s->res, &done);
        char a[256], b[256];
        print_outcome(a, sizeof a, &planned);
        print_outcome(b, sizeof b, &done);
        cr_assert(same_outcome(&planned, &done), "seed %llu step %u: move of job %llu planned %s, carried out %s",
                  (unsigned long long)s->seed, step, (unsigned long long)id, a, b);
        /* A move keeps what the job holds: the same resources, milli and
         * GPUs in all, elsewhere. */
        uint64_t used1[NRES + 2];
        usage(s->c, used1);
        for (uint32_t i = 0; i < NRES + 2; i++)
            cr_assert_eq(used1[i], used0[i], "seed %llu step %u: the move of job %llu changed the use of %s",
                         (unsigned long long)s->seed, step, (unsigned long long)id,
                         i < NRES ? "a resource" : i == NRES ? "milli" : "whole GPUs");
        changes = flags && rc == 0;
        s->moved += changes;
    } else {
        op = "release to reservation";
        const uint64_t id = random_job(s);
        /* A job of pods is refused (reservations hold whole GPUs only)
         * and must stay as it was. */
        rc = id ? gpusched_cluster_release_to_resv(s->c, id, 888889) : GPUSCHED_ENOENT;
        cr_assert(rc == 0 || !id || strstr(gpusched_cluster_errmsg(s->c), "reservations do not hold"),
                  "seed %llu step %u: %d %s", (unsigned long long)s->seed, step, rc, gpusched_cluster_errmsg(s->c));
        changes = rc == 0;
    }
    size_t jlen1;
    cr_assert_eq(gpusched_cluster_journal_view(s->c, &jb, &jlen1), 0);
    if (!changes) {
        cr_assert(same_snap(s->c, img0, len0), "seed %llu step %u: %s (rc %d) changed the cluster",
                  (unsigned long long)s->seed, step, op, rc);
        cr_assert_eq(jlen1, jlen0, "seed %llu step %u: %s (rc %d) wrote a journal record", (unsigned long long)s->seed,
                     step, op, rc);
        s->refused += rc != 0;
    } else {
        cr_assert_gt(jlen1, jlen0, "seed %llu step %u: %s changed the cluster without a record",
                     (unsigned long long)s->seed, step, op);
    }
    free(img0);
}

static uint32_t n_seq_steps, n_seq_committed, n_seq_planned, n_seq_refused, n_seq_batches, n_seq_bad, n_seq_preempted,
    n_seq_moved, n_seq_standby;

static void sequence_round(uint64_t seed)
{
    seqst s = {.r = {seed * 0xbf58476d1ce4e5b9ull + 1}, .seed = seed, .next_id = 1};
    s.t = hunt_topo(seed, 24, 4, 0, &s.nres);
    pt_env e = pt_env_on(s.t);
    s.c = e.c;
    s.p = e.p;
    s.res = e.res;
    cr_assert_eq(gpusched_preempt_plan_new(NULL, &s.plan), 0);
    set_workload(s.p, s.nres);
    size_t len0;
    uint8_t *img0 = snap(s.c, &len0);
    char err[256];
    gpusched_cluster *standby;
    cr_assert_eq(gpusched_cluster_restore(img0, len0, NULL, &standby, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_cluster_journal_start(s.c, NULL, NULL), 0);
    size_t applied_to = 0;
    for (uint32_t step = 0; step < 150; step++) {
        seq_step(&s, step);
        if (step % 10 == 9)
            check(s.c, seed, "sequence");
        if (step % 25 == 24) {
            /* The standby follows the journal; a snapshot round trip gives
             * the same bytes and state. */
            const void *jb;
            size_t jlen;
            cr_assert_eq(gpusched_cluster_journal_view(s.c, &jb, &jlen), 0);
            const uint64_t before = view(standby);
            /* A record cut short is refused whole. */
            if (jlen - applied_to > 8) {
                uint32_t applied = 99;
                size_t cut = applied_to + 1 + pt_below(&s.r, 8);
                const int arc = gpusched_cluster_journal_apply(standby, (const uint8_t *)jb + applied_to,
                                                               cut - applied_to, &applied);
                cr_assert(arc == GPUSCHED_ECORRUPT, "seed %llu: a cut record gave %d", (unsigned long long)seed, arc);
                cr_assert_eq(applied, 0);
                cr_assert_eq(view(standby), before, "seed %llu: a refused record changed the standby",
                             (unsigned long long)seed);
            }
            cr_assert_eq(gpusched_cluster_journal_apply(standby, (const uint8_t *)jb + applied_to, jlen - applied_to,
                                                        NULL),
                         0, "seed %llu step %u: %s", (unsigned long long)seed, step, gpusched_cluster_errmsg(standby));
            applied_to = jlen;
            size_t len;
            uint8_t *img = snap(s.c, &len);
            cr_assert(same_snap(standby, img, len), "seed %llu step %u: the standby differs",
                      (unsigned long long)seed, step);
            gpusched_cluster *back;
            cr_assert_eq(gpusched_cluster_restore(img, len, NULL, &back, err, sizeof err), 0, "%s", err);
            cr_assert(same_snap(back, img, len), "seed %llu step %u: a round trip differs", (unsigned long long)seed,
                      step);
            cr_assert_eq(view(back), view(s.c), "seed %llu step %u: the restored cluster shows another state",
                         (unsigned long long)seed, step);
            check(back, seed, "restored");
            check(standby, seed, "standby");
            gpusched_cluster_unref(back);
            free(img);
            n_seq_standby++;
        }
    }
    const void *jb;
    size_t jlen, len;
    cr_assert_eq(gpusched_cluster_journal_view(s.c, &jb, &jlen), 0);
    gpusched_cluster *replayed;
    cr_assert_eq(gpusched_cluster_replay(img0, len0, jb, jlen, NULL, &replayed, err, sizeof err), 0, "seed %llu: %s",
                 (unsigned long long)seed, err);
    uint8_t *img = snap(s.c, &len);
    cr_assert(same_snap(replayed, img, len), "seed %llu: the replay differs", (unsigned long long)seed);
    n_seq_steps += 150;
    n_seq_committed += s.committed;
    n_seq_planned += s.planned;
    n_seq_refused += s.refused;
    n_seq_batches += s.batches;
    n_seq_bad += s.bad_batches;
    n_seq_preempted += s.preempted;
    n_seq_moved += s.moved;
    gpusched_cluster_unref(replayed);
    gpusched_cluster_unref(standby);
    gpusched_preempt_plan_free(s.plan);
    free(img);
    free(img0);
    pt_env_free(&e);
}

Test(pods_metamorphic, sequences_replay_restore_and_refuse_atomically, .timeout = 120)
{
    run_seeds(sequence_round, 300);
    cr_log_info("%u steps: %u placements committed, %u planned, %u refused or did not fit, %u batches (%u spoiled), "
                "%u preemptions and %u moves committed, %u standby checks",
                n_seq_steps, n_seq_committed, n_seq_planned, n_seq_refused, n_seq_batches, n_seq_bad,
                n_seq_preempted, n_seq_moved, n_seq_standby);
    cr_log_info("%u preemption plans checked against releasing and placing, %u victims", n_pre_checked,
                n_pre_victims);
    cr_assert_gt(n_pre_victims, 100);
    cr_assert_gt(n_seq_preempted, 20);
    cr_assert_gt(n_seq_moved, 20);
    cr_assert_gt(n_seq_bad, 50);
}

/* ---- 6. bytes: pods placed and released leave no trace ------------------- */

static uint32_t n_trace_rounds, n_trace_pods;

/* Whole-GPU jobs and reservations, then pods placed and all released
 * again: the snapshot is the bytes it was (version 2: the image format
 * says an image without jobs of pods stays version 2, byte for byte). */
static void trace_round(uint64_t seed)
{
    pt_rng r = {seed * 0x9e3779b97f4a7c15ull + 17};
    uint32_t nres;
    gpusched_topo *t = hunt_topo(seed, 16, 4, 0, &nres);
    pt_env e = pt_env_on(t);
    set_workload(e.p, nres);
    const uint32_t nn = gpusched_topo_node_count(t);
    for (uint32_t i = 0; i < 6; i++) {
        const uint32_t n = pt_below(&r, nn);
        uint64_t f;
        cr_assert_eq(gpusched_cluster_node_state(e.c, n, &f, NULL, NULL, NULL), 0);
        const uint64_t m = f & pt_next(&r);
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = 500 + i;
        if (m && pt_below(&r, 3))
            cr_assert_eq(gpusched_cluster_allocate(e.c, &j, 1, &n, &m), 0);
        else if (m)
            cr_assert_eq(gpusched_cluster_reserve(e.c, 600 + i, 1, &n, &m), 0);
    }
    size_t len0;
    uint8_t *img0 = snap(e.c, &len0);
    const uint64_t v0 = view(e.c);
    cr_assert_eq(img0[8], 2, "seed %llu: an image without pods is version 2", (unsigned long long)seed);
    uint64_t ids[16];
    uint32_t placed = 0;
    for (uint32_t i = 0; i < 16; i++) {
        hreq h;
        random_pod_request(&r, t, nres, &h, 1000 + i, true);
        if (place_req(e.p, &h, true, e.res, NULL) == 0)
            ids[placed++] = h.job.id;
    }
    for (uint32_t i = placed; i > 0; i--) {
        const uint32_t k = pt_below(&r, i);
        cr_assert_eq(gpusched_cluster_release(e.c, ids[k]), 0);
        ids[k] = ids[i - 1];
    }
    cr_assert_eq(view(e.c), v0, "seed %llu: %u pods placed and released left a trace", (unsigned long long)seed,
                 placed);
    size_t len;
    uint8_t *img = snap(e.c, &len);
    cr_assert(len == len0 && !memcmp(img, img0, len),
              "seed %llu: %u jobs of pods placed and released changed the snapshot (version %u, %zu bytes, was %zu)",
              (unsigned long long)seed, placed, img[8], len, len0);
    n_trace_rounds++;
    n_trace_pods += placed;
    free(img);
    free(img0);
    pt_env_free(&e);
}

Test(pods_metamorphic, pods_placed_and_released_leave_the_same_bytes, .timeout = 120)
{
    run_seeds(trace_round, 300);
    cr_log_info("%u rounds, %u jobs of pods placed and released", n_trace_rounds, n_trace_pods);
}
