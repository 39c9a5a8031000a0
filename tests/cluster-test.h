/* Helpers shared by the cluster tests: small topologies and a fingerprint of
 * everything a cluster shows through its public API, to prove that a failed
 * call changed nothing. */
#ifndef GS_TEST_CLUSTER_H
#define GS_TEST_CLUSTER_H

#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

/* 2 blocks x 3 racks x 4 nodes x 4 GPUs = 96 GPUs. */
static inline gpusched_topo *ct_uniform(void)
{
    const char *lv[] = {"block", "rack"};
    const uint32_t fan[] = {2, 3, 4};
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_uniform(2, lv, fan, 4, "gb200", NULL, &t, err, sizeof err), 0, "%s", err);
    return t;
}

/* Nodes of 1, 2, 3, 8 and 64 GPUs over uneven racks: histograms of width
 * 65, full 64-bit masks, single-node racks. */
static inline gpusched_topo *ct_mixed(void)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *lv[] = {"zone", "rack"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, lv), 0);
    static const struct {
        const char *zone, *rack, *name;
        uint32_t gpus;
    } nodes[] = {
        {"z0", "r0", "a", 8}, {"z0", "r0", "b", 8}, {"z0", "r0", "c", 2},
        {"z0", "r1", "d", 64},
        {"z1", "r0", "e", 1}, {"z1", "r0", "f", 3}, {"z1", "r1", "g", 8},
        {"z1", "r1", "h", 8}, {"z1", "r1", "i", 8}, {"z1", "r2", "j", 4},
    };
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        const char *path[] = {nodes[i].zone, nodes[i].rack};
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, nodes[i].name, nodes[i].gpus, NULL, NULL, 0), 0,
                     "%s", gpusched_topo_builder_errmsg(b));
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0, "%s", gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    return t;
}

static inline gpusched_cluster *ct_cluster(gpusched_topo *t)
{
    gpusched_cluster *c = NULL;
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    gpusched_topo_unref(t); /* the cluster holds its own reference */
    return c;
}

static inline uint64_t ct_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static inline uint64_t ct_hold_print(gpusched_cluster *c, uint64_t h, uint64_t id, int resv)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n, g;
    int rc = resv ? gpusched_cluster_resv_allocation(c, id, &nodes, &masks, &n, &g)
                  : gpusched_cluster_job_allocation(c, id, &nodes, &masks, &n, &g);
    cr_assert_eq(rc, 0);
    h = ct_mix(ct_mix(ct_mix(h, id), n), g);
    for (uint32_t i = 0; i < n; i++)
        h = ct_mix(ct_mix(h, nodes[i]), masks[i]);
    if (!resv) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        cr_assert_eq(gpusched_cluster_job_find(c, id, &j), 0);
        h = ct_mix(ct_mix(ct_mix(ct_mix(ct_mix(h, j.flags), (uint32_t)j.priority), j.tenant),
                          (uint64_t)j.start_time), j.cost_hint);
    }
    return h;
}

/* The fragmentation metrics of every level and the aggregates of every
 * domain, mixed into h. */
static inline uint64_t ct_aggregates_print(gpusched_cluster *c, uint64_t h)
{
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint32_t nl = gpusched_topo_level_count(t);
    for (uint32_t l = 0; l <= nl; l++) {
        uint32_t fd;
        uint64_t s, g;
        cr_assert_eq(gpusched_cluster_frag(c, l, &fd, &s, &g), 0);
        h = ct_mix(ct_mix(ct_mix(h, fd), s), g);
    }
    for (uint32_t l = 0; l < nl; l++)
        for (uint32_t d = 0; d < gpusched_topo_domain_count(t, l); d++) {
            uint64_t fg;
            uint32_t fn, hist[65], len;
            cr_assert_eq(gpusched_cluster_domain_free_gpus(c, l, d, &fg), 0);
            cr_assert_eq(gpusched_cluster_domain_free_nodes(c, l, d, &fn), 0);
            cr_assert_eq(gpusched_cluster_domain_histogram(c, l, d, hist, 65, &len), 0);
            h = ct_mix(ct_mix(h, fg), fn);
            for (uint32_t k = 0; k < len; k++)
                h = ct_mix(h, hist[k]);
        }
    return h;
}

/* Everything observable: node masks and health, jobs, reservations,
 * aggregates of every domain, fragmentation. */
static inline uint64_t ct_fingerprint(gpusched_cluster *c)
{
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint64_t h = 1;
    for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++) {
        uint64_t f, r, a;
        uint32_t hl;
        cr_assert_eq(gpusched_cluster_node_state(c, n, &f, &r, &a, &hl), 0);
        h = ct_mix(ct_mix(ct_mix(ct_mix(h, f), r), a), hl);
    }
    for (uint32_t i = 0; i < gpusched_cluster_job_count(c); i++) {
        uint64_t id;
        cr_assert_eq(gpusched_cluster_job_at(c, i, &id), 0);
        h = ct_hold_print(c, h, id, 0);
    }
    for (uint32_t i = 0; i < gpusched_cluster_resv_count(c); i++) {
        uint64_t id;
        cr_assert_eq(gpusched_cluster_resv_at(c, i, &id), 0);
        h = ct_hold_print(c, h, id, 1);
    }
    return ct_aggregates_print(c, h);
}

static inline gpusched_job ct_job(uint64_t id)
{
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = id;
    return j;
}

/* The cluster's snapshot bytes (malloc'd, *len set): what "changed
 * nothing" and "replays bit for bit" are checked against. */
static inline uint8_t *ct_snapshot(gpusched_cluster *c, size_t *len)
{
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, len), GPUSCHED_ERANGE);
    uint8_t *buf = malloc(*len);
    cr_assert_not_null(buf);
    cr_assert_eq(gpusched_cluster_snapshot(c, buf, *len, len), 0, "%s", gpusched_cluster_errmsg(c));
    return buf;
}

/* Asserts that the cluster snapshots to exactly `img`. */
static inline void ct_assert_snapshot(gpusched_cluster *c, const uint8_t *img, size_t len, const char *what)
{
    size_t n;
    uint8_t *now = ct_snapshot(c, &n);
    cr_assert(n == len && memcmp(now, img, len) == 0, "%s: the snapshot bytes differ", what);
    free(now);
}

#endif
