/* Property test: long random sequences of allocate, release, reserve,
 * unreserve, health changes and the placement engine's lend/commit path,
 * against a reference model made of plain per-GPU arrays, recomputed from
 * scratch and compared after every step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cluster-test.h"
#include "cluster/txn.h"
#include "cluster/cluster-internal.h"

#define MAXN 32
#define IDS 48 /* small id space: collisions, EEXIST and ENOENT happen */

enum { FREE = 0, ALLOC = 1, RESV = 2 };

typedef struct model {
    gpusched_topo *t;
    uint32_t nnodes, nlevels;
    uint32_t gpus[MAXN];
    uint8_t health[MAXN];
    uint8_t kind[MAXN][64];
    uint64_t who[MAXN][64];
    int running[IDS];
    int reserved[IDS];
} model;

static uint64_t rng_state;
static uint32_t n_alloc_ok, n_alloc_fail, n_resv_ok, n_commit_ok, n_down, n_big;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static uint32_t below(uint32_t n) { return (uint32_t)(rnd() % n); }

static void model_init(model *m, gpusched_topo *t)
{
    memset(m, 0, sizeof *m);
    m->t = t;
    m->nnodes = gpusched_topo_node_count(t);
    m->nlevels = gpusched_topo_level_count(t);
    cr_assert_leq(m->nnodes, MAXN);
    for (uint32_t n = 0; n < m->nnodes; n++)
        m->gpus[n] = gpusched_topo_node_gpus(t, n);
}

static uint64_t model_mask(const model *m, uint32_t n, int kind, uint64_t id)
{
    uint64_t mask = 0;
    for (uint32_t g = 0; g < m->gpus[n] && g < 64; g++)
        if (m->kind[n][g] == kind && (kind == FREE || m->who[n][g] == id))
            mask |= 1ull << g;
    return mask;
}

static uint64_t all_of(uint32_t gpus) { return gpus == 64 ? ~0ull : (1ull << gpus) - 1; }

/* The same checks, in the same order, as the library. */
static int model_check_pairs(const model *m, uint32_t n, const uint32_t *nodes, const uint64_t *masks,
                             int own, uint64_t id)
{
    if (n == 0)
        return GPUSCHED_EINVAL;
    for (uint32_t i = 0; i < n; i++) {
        if (nodes[i] >= m->nnodes)
            return GPUSCHED_ERANGE;
        if (i && nodes[i] <= nodes[i - 1])
            return GPUSCHED_EINVAL;
        if (!masks[i] || (masks[i] & ~all_of(m->gpus[nodes[i]])))
            return GPUSCHED_EINVAL;
        if (m->health[nodes[i]] != GPUSCHED_NODE_UP)
            return GPUSCHED_ESTATE;
        uint64_t usable = model_mask(m, nodes[i], FREE, 0) | (own ? model_mask(m, nodes[i], RESV, id) : 0);
        if (masks[i] & ~usable)
            return GPUSCHED_EBUSY;
    }
    return 0;
}

static void model_set(model *m, uint32_t n, uint64_t mask, int kind, uint64_t id)
{
    for (uint32_t g = 0; g < m->gpus[n] && g < 64; g++)
        if (mask >> g & 1) {
            m->kind[n][g] = (uint8_t)kind;
            m->who[n][g] = kind == FREE ? 0 : id;
        }
}

static void model_drop(model *m, int kind, uint64_t id)
{
    for (uint32_t n = 0; n < m->nnodes; n++)
        model_set(m, n, model_mask(m, n, kind, id), FREE, 0);
}

/* Pairs mostly drawn from what is usable, sometimes broken on purpose. */
static uint32_t gen_pairs(const model *m, uint64_t id, uint32_t *nodes, uint64_t *masks)
{
    uint32_t want = 1 + below(8), n = 0; /* above 4: the batched update path */
    uint32_t start = below(m->nnodes);
    for (uint32_t k = 0; k < m->nnodes && n < want; k++) {
        uint32_t node = (start + k) % m->nnodes;
        if (below(3) == 0)
            continue;
        uint64_t usable = model_mask(m, node, FREE, 0) | model_mask(m, node, RESV, id);
        uint64_t mask = usable & rnd();
        if (!mask)
            continue;
        nodes[n] = node;
        masks[n++] = mask;
    }
    /* ascending */
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && nodes[j] < nodes[j - 1]; j--) {
            uint32_t tn = nodes[j];
            nodes[j] = nodes[j - 1];
            nodes[j - 1] = tn;
            uint64_t tm = masks[j];
            masks[j] = masks[j - 1];
            masks[j - 1] = tm;
        }
    if (n && below(6) == 0) {
        uint32_t i = below(n);
        masks[i] |= 1ull << below(m->gpus[nodes[i]]); /* maybe taken */
    }
    switch (below(40)) {
    case 0: if (n) nodes[n - 1] = m->nnodes + below(3); break;
    case 1: if (n > 1) nodes[1] = nodes[0]; break;
    case 2: if (n) masks[0] = 0; break;
    case 3: if (n && m->gpus[nodes[0]] < 64) masks[0] |= 1ull << m->gpus[nodes[0]]; break;
    default: break;
    }
    return n;
}

static void compare_hold(gpusched_cluster *c, const model *m, uint64_t id, int kind)
{
    const uint32_t *pn;
    const uint64_t *pm;
    uint32_t np, gpus;
    int rc = kind == ALLOC ? gpusched_cluster_job_allocation(c, id, &pn, &pm, &np, &gpus)
                           : gpusched_cluster_resv_allocation(c, id, &pn, &pm, &np, &gpus);
    cr_assert_eq(rc, 0);
    uint32_t i = 0, total = 0;
    for (uint32_t n = 0; n < m->nnodes; n++) {
        uint64_t mask = model_mask(m, n, kind, id);
        if (!mask)
            continue;
        cr_assert_lt(i, np, "holder %llu has too few pairs", (unsigned long long)id);
        cr_assert_eq(pn[i], n);
        cr_assert_eq(pm[i], mask, "holder %llu node %u", (unsigned long long)id, n);
        total += (uint32_t)__builtin_popcountll(mask);
        i++;
    }
    cr_assert_eq(i, np);
    cr_assert_eq(gpus, total);
}

static void compare(gpusched_cluster *c, const model *m)
{
    cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
    uint64_t dom_free[GS_MAX_LEVELS + 1][MAXN];
    uint32_t dom_fnodes[GS_MAX_LEVELS + 1][MAXN], dom_nodes[GS_MAX_LEVELS + 1][MAXN];
    uint64_t dom_gpus[GS_MAX_LEVELS + 1][MAXN];
    uint32_t hist[GS_MAX_LEVELS + 1][MAXN][65];
    memset(dom_free, 0, sizeof dom_free);
    memset(dom_fnodes, 0, sizeof dom_fnodes);
    memset(dom_nodes, 0, sizeof dom_nodes);
    memset(dom_gpus, 0, sizeof dom_gpus);
    memset(hist, 0, sizeof hist);
    uint32_t L = m->nlevels; /* index L: the whole cluster, one domain */
    for (uint32_t n = 0; n < m->nnodes; n++) {
        uint64_t f, r, a;
        uint32_t h;
        cr_assert_eq(gpusched_cluster_node_state(c, n, &f, &r, &a, &h), 0);
        uint64_t mf = model_mask(m, n, FREE, 0);
        uint64_t mr = 0, ma = 0;
        for (uint32_t g = 0; g < m->gpus[n] && g < 64; g++) {
            mr |= (uint64_t)(m->kind[n][g] == RESV) << g;
            ma |= (uint64_t)(m->kind[n][g] == ALLOC) << g;
            uint32_t st;
            uint64_t who;
            cr_assert_eq(gpusched_cluster_gpu_state(c, n, g, &st, &who), 0);
            cr_assert_eq(st, m->kind[n][g] == FREE ? GPUSCHED_GPU_FREE
                             : m->kind[n][g] == RESV ? GPUSCHED_GPU_RESERVED : GPUSCHED_GPU_ALLOCATED);
            cr_assert_eq(who, m->who[n][g]);
        }
        cr_assert_eq(f, mf, "node %u free", n);
        cr_assert_eq(r, mr, "node %u reserved", n);
        cr_assert_eq(a, ma, "node %u allocated", n);
        cr_assert_eq(h, m->health[n]);
        uint64_t avail = m->health[n] == GPUSCHED_NODE_UP ? mf : 0;
        uint32_t k = (uint32_t)__builtin_popcountll(avail);
        int full = avail == all_of(m->gpus[n]);
        for (uint32_t l = 0; l <= L; l++) {
            uint32_t d = 0;
            if (l < L)
                cr_assert_eq(gpusched_topo_node_domain(m->t, n, l, &d), 0);
            dom_free[l][d] += k;
            dom_fnodes[l][d] += (uint32_t)full;
            dom_nodes[l][d]++;
            dom_gpus[l][d] += m->gpus[n];
            hist[l][d][k]++;
        }
    }
    uint64_t root_free = dom_free[L][0];
    for (uint32_t l = 0; l <= L; l++) {
        uint32_t ndom = l < L ? gpusched_topo_domain_count(m->t, l) : 1;
        uint32_t lv = l < L ? l : GPUSCHED_NONE;
        for (uint32_t d = 0; d < ndom; d++) {
            uint64_t fg;
            uint32_t fn, hh[65], len;
            cr_assert_eq(gpusched_cluster_domain_free_gpus(c, lv, d, &fg), 0);
            cr_assert_eq(fg, dom_free[l][d], "level %u domain %u free GPUs", l, d);
            cr_assert_eq(gpusched_cluster_domain_free_nodes(c, lv, d, &fn), 0);
            cr_assert_eq(fn, dom_fnodes[l][d]);
            cr_assert_eq(gpusched_cluster_domain_histogram(c, lv, d, hh, 65, &len), 0);
            for (uint32_t k = 0; k < len; k++)
                cr_assert_eq(hh[k], hist[l][d][k], "level %u domain %u hist[%u]", l, d, k);
            uint32_t g = below(len < 65 ? len + 1 : 65), at_least = 0;
            for (uint32_t k = g; k < len; k++)
                at_least += hist[l][d][k];
            cr_assert_eq(gpusched_cluster_domain_nodes_with_free(c, lv, d, g, &fn), 0);
            cr_assert_eq(fn, at_least);
        }
        if (l == L)
            continue;
        uint32_t full_doms = 0;
        uint64_t full_gpus = 0;
        for (uint32_t d = 0; d < ndom; d++)
            if (dom_fnodes[l][d] == dom_nodes[l][d]) {
                full_doms++;
                full_gpus += dom_gpus[l][d];
            }
        uint32_t fd;
        uint64_t s, gg;
        cr_assert_eq(gpusched_cluster_frag(c, l, &fd, &s, &gg), 0);
        cr_assert_eq(fd, full_doms, "level %u fully free domains", l);
        cr_assert_eq(gg, full_gpus);
        cr_assert_eq(s, root_free - full_gpus);
    }
    /* node level */
    uint32_t fd;
    uint64_t s, gg;
    cr_assert_eq(gpusched_cluster_frag(c, L, &fd, &s, &gg), 0);
    cr_assert_eq(fd, dom_fnodes[L][0]);
    uint32_t njobs = 0, nresv = 0;
    for (uint64_t id = 0; id < IDS; id++) {
        njobs += (uint32_t)m->running[id];
        nresv += (uint32_t)m->reserved[id];
        cr_assert_eq(gpusched_cluster_job_find(c, id, NULL), m->running[id] ? 0 : GPUSCHED_ENOENT);
        if (m->running[id])
            compare_hold(c, m, id, ALLOC);
        if (m->reserved[id])
            compare_hold(c, m, id, RESV);
    }
    cr_assert_eq(gpusched_cluster_job_count(c), njobs);
    cr_assert_eq(gpusched_cluster_resv_count(c), nresv);
}

static void step(gpusched_cluster *c, model *m)
{
    uint32_t nodes[8];
    uint64_t masks[8];
    uint32_t op = below(100);
    uint64_t id = below(IDS);
    if (op < 30) {
        uint32_t n = gen_pairs(m, id, nodes, masks);
        int expect = m->running[id] ? GPUSCHED_EEXIST : model_check_pairs(m, n, nodes, masks, m->reserved[id], id);
        gpusched_job j = ct_job(id);
        j.priority = (int32_t)below(5);
        int rc = gpusched_cluster_allocate(c, &j, n, nodes, masks);
        cr_assert_eq(rc, expect, "alloc %llu: got %s, model says %s (%s)", (unsigned long long)id,
                     gpusched_err_name(rc), gpusched_err_name(expect), gpusched_cluster_errmsg(c));
        n_alloc_ok += !rc;
        n_alloc_fail += rc != 0;
        n_big += !rc && n > 4;
        if (!rc) {
            if (m->reserved[id])
                model_drop(m, RESV, id);
            m->reserved[id] = 0;
            for (uint32_t i = 0; i < n; i++)
                model_set(m, nodes[i], masks[i], ALLOC, id);
            m->running[id] = 1;
        }
    } else if (op < 52) {
        int rc = gpusched_cluster_release(c, id);
        cr_assert_eq(rc, m->running[id] ? 0 : GPUSCHED_ENOENT);
        if (!rc) {
            model_drop(m, ALLOC, id);
            m->running[id] = 0;
        }
    } else if (op < 64) {
        uint32_t n = gen_pairs(m, IDS + 1, nodes, masks);
        int expect = model_check_pairs(m, n, nodes, masks, 0, id);
        int rc = gpusched_cluster_reserve(c, id, n, nodes, masks);
        cr_assert_eq(rc, expect, "reserve %llu: got %s, model says %s (%s)", (unsigned long long)id,
                     gpusched_err_name(rc), gpusched_err_name(expect), gpusched_cluster_errmsg(c));
        n_resv_ok += !rc;
        if (!rc) {
            for (uint32_t i = 0; i < n; i++)
                model_set(m, nodes[i], masks[i], RESV, id);
            m->reserved[id] = 1;
        }
    } else if (op < 76) {
        int rc = gpusched_cluster_unreserve(c, id);
        cr_assert_eq(rc, m->reserved[id] ? 0 : GPUSCHED_ENOENT);
        if (!rc) {
            model_drop(m, RESV, id);
            m->reserved[id] = 0;
        }
    } else if (op < 86) {
        uint32_t node = below(m->nnodes);
        uint32_t h = below(3) ? GPUSCHED_NODE_UP : below(GPUSCHED_NODE_DOWN + 1);
        uint64_t hit[64];
        uint32_t nhit;
        cr_assert_eq(gpusched_cluster_node_health_set(c, node, h, hit, 64, &nhit), 0);
        uint64_t seen[IDS] = {0};
        uint32_t expect = 0;
        for (uint32_t g = 0; g < m->gpus[node]; g++)
            if (m->kind[node][g] == ALLOC && !seen[m->who[node][g]]) {
                seen[m->who[node][g]] = 1;
                cr_assert_eq(hit[expect], m->who[node][g], "jobs hit in order of their lowest GPU");
                expect++;
            }
        cr_assert_eq(nhit, expect);
        m->health[node] = (uint8_t)h;
        n_down += h == GPUSCHED_NODE_DOWN && nhit > 0;
    } else if (op < 95) {
        /* The placement engine's path: a transaction lends a reservation,
         * then commits its job on what it may use, or rolls back. */
        if (!m->reserved[id] || m->running[id])
            return;
        gs_hold *r = gs_cluster_resv_find(c, id);
        cr_assert_not_null(r);
        cr_assert_eq(gs_txn_begin(c), 0);
        cr_assert_eq(gs_txn_lend_resv(c, r), 0);
        uint32_t n = 0;
        for (int tries = 0; tries < 8 && (!n || model_check_pairs(m, n, nodes, masks, 1, id)); tries++)
            n = gen_pairs(m, id, nodes, masks);
        if (below(4) && n && model_check_pairs(m, n, nodes, masks, 1, id) == 0) {
            gpusched_job j = ct_job(id);
            cr_assert_eq(gs_txn_stage_claim(c, &j, n, nodes, masks), 0);
            cr_assert_eq(gs_txn_commit(c), 0, "%s", gpusched_cluster_errmsg(c));
            n_commit_ok++;
            model_drop(m, RESV, id);
            m->reserved[id] = 0;
            for (uint32_t i = 0; i < n; i++)
                model_set(m, nodes[i], masks[i], ALLOC, id);
            m->running[id] = 1;
        } else {
            gs_txn_rollback(c);
        }
    } else if (op < 98) {
        /* Preemption's step: evict a victim, keep its GPUs for another job. */
        uint64_t target = below(IDS);
        int rc = gpusched_cluster_release_to_resv(c, id, target);
        cr_assert_eq(rc, m->running[id] ? 0 : GPUSCHED_ENOENT, "%s", gpusched_cluster_errmsg(c));
        if (!rc) {
            for (uint32_t n = 0; n < m->nnodes; n++)
                model_set(m, n, model_mask(m, n, ALLOC, id), RESV, target);
            m->running[id] = 0;
            m->reserved[target] = 1;
        }
    } else {
        gpusched_job j = ct_job(id);
        j.cost_hint = rnd();
        cr_assert_eq(gpusched_cluster_job_update(c, &j), m->running[id] ? 0 : GPUSCHED_ENOENT);
    }
}

/* Whatever state the sequence reached restores to the same state and the
 * same bytes. */
static void snapshot_round_trip(gpusched_cluster *c)
{
    size_t len, len2;
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, &len), GPUSCHED_ERANGE);
    uint8_t *a = malloc(len), *b = malloc(len);
    cr_assert_eq(gpusched_cluster_snapshot(c, a, len, &len), 0);
    gpusched_cluster *back;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(a, len, NULL, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ct_fingerprint(back), ct_fingerprint(c));
    cr_assert_eq(gpusched_cluster_snapshot(back, b, len, &len2), 0);
    cr_assert_eq(len2, len);
    cr_assert_arr_eq(a, b, len);
    gpusched_cluster_unref(back);
    free(a);
    free(b);
}

static void run(gpusched_topo *t, uint64_t seed, int steps)
{
    rng_state = seed;
    model m;
    model_init(&m, t);
    gpusched_cluster *c = ct_cluster(t);
    compare(c, &m);
    for (int i = 0; i < steps; i++) {
        step(c, &m);
        compare(c, &m);
        if (i % 97 == 0)
            snapshot_round_trip(c);
    }
    gpusched_cluster_unref(c);
    /* The sequence must reach the interesting states, not only errors. */
    cr_assert_gt(n_alloc_ok, steps / 40, "%u allocations succeeded", n_alloc_ok);
    cr_assert_gt(n_big, 5, "%u allocations of more than 4 nodes", n_big);
    cr_assert_gt(n_alloc_fail, steps / 50, "%u allocations failed", n_alloc_fail);
    cr_assert_gt(n_resv_ok, steps / 60, "%u reservations succeeded", n_resv_ok);
    cr_assert_gt(n_commit_ok, 5, "%u lent commits", n_commit_ok);
    cr_assert_gt(n_down, 5, "%u nodes went down under jobs", n_down);
}

Test(cluster_model, uniform_seed_1) { run(ct_uniform(), 0x9e3779b97f4a7c15ull, 10000); }
Test(cluster_model, uniform_seed_2) { run(ct_uniform(), 12345, 10000); }
Test(cluster_model, mixed_seed_1) { run(ct_mixed(), 777, 10000); }
Test(cluster_model, mixed_seed_2) { run(ct_mixed(), 0xdeadbeef, 10000); }
