/* Property test: random nodes in random insertion order, frozen, against a
 * plain reference that sorts by first appearance with qsort, plus the text
 * and image round trips of every random topology. Resources are declared
 * before and between the nodes and set in any order, from a generator of
 * their own so that the shapes stay those of the test without them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "topocheck.h"

#define MAXN 400

typedef struct ref_node {
    char path[GPUSCHED_MAX_LEVELS][16];
    char name[16];
    uint32_t gpus;
    char cls[16];
    uint32_t nlabels;
    char labels[3][16];
    uint32_t res[4];                            /* capacities; 0 unless set */
    uint32_t seq;                               /* insertion index */
    uint32_t first[GPUSCHED_MAX_LEVELS];   /* first insertion under each ancestor */
} ref_node;

static uint64_t rng, rng_res;

static uint32_t rnd_from(uint64_t *s, uint32_t n)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s % n);
}

static uint32_t rnd(uint32_t n) { return rnd_from(&rng, n); }
static uint32_t rnd_res(uint32_t n) { return rnd_from(&rng_res, n); }

/* A capacity: often 0 or the extremes, else anything. */
static uint32_t rnd_amount(void)
{
    switch (rnd_res(4)) {
    case 0:
        return 0;
    case 1:
        return UINT32_MAX - rnd_res(2);
    default:
        return (uint32_t)(rng_res >> 7);
    }
}

static uint32_t ref_levels;

static bool same_prefix(const ref_node *a, const ref_node *b, uint32_t l)
{
    for (uint32_t k = 0; k <= l; k++)
        if (strcmp(a->path[k], b->path[k]))
            return false;
    return true;
}

static int ref_cmp(const void *x, const void *y)
{
    const ref_node *a = x, *b = y;
    for (uint32_t l = 0; l < ref_levels; l++)
        if (a->first[l] != b->first[l])
            return a->first[l] < b->first[l] ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void full_path(const ref_node *r, uint32_t l, char *buf)
{
    buf[0] = '\0';
    for (uint32_t k = 0; k <= l; k++) {
        if (k)
            strcat(buf, "/");
        strcat(buf, r->path[k]);
    }
}

static void check_against_reference(const gpusched_topo *t, ref_node *ref, uint32_t n, uint32_t nres)
{
    /* The reference order: ancestors by their first appearance, then
     * insertion order. */
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t l = 0; l < ref_levels; l++) {
            ref[i].first[l] = ref[i].seq;
            for (uint32_t j = 0; j < n; j++)
                if (ref[j].seq < ref[i].first[l] && same_prefix(&ref[i], &ref[j], l))
                    ref[i].first[l] = ref[j].seq;
        }
    qsort(ref, n, sizeof *ref, ref_cmp);
    cr_assert_eq(gpusched_topo_node_count(t), n);
    for (uint32_t l = 0; l < ref_levels; l++) {
        uint32_t distinct = 0;
        for (uint32_t i = 0; i < n; i++)
            distinct += i == 0 || !same_prefix(&ref[i], &ref[i - 1], l);
        cr_assert_eq(gpusched_topo_domain_count(t, l), distinct, "level %u", l);
    }
    for (uint32_t i = 0; i < n; i++) {
        char buf[256], want[256];
        gpusched_topo_node_name(t, i, buf, sizeof buf);
        cr_assert_str_eq(buf, ref[i].name, "node %u", i);
        cr_assert_eq(gpusched_topo_node_gpus(t, i), ref[i].gpus);
        cr_assert_str_eq(gpusched_topo_class_name(t, gpusched_topo_node_class(t, i)), ref[i].cls);
        uint64_t mask = 0;
        for (uint32_t k = 0; k < ref[i].nlabels; k++) {
            uint32_t bit;
            cr_assert_eq(gpusched_topo_label_find(t, ref[i].labels[k], &bit), 0);
            mask |= 1ull << bit;
        }
        cr_assert_eq(gpusched_topo_node_labels(t, i), mask);
        cr_assert_eq(gpusched_topo_resource_count(t), nres);
        for (uint32_t r = 0; r < nres; r++)
            cr_assert_eq(gpusched_topo_node_resource(t, i, r), ref[i].res[r], "node %u resource %u", i, r);
        for (uint32_t l = 0; l < ref_levels; l++) {
            uint32_t d, found;
            cr_assert_eq(gpusched_topo_node_domain(t, i, l, &d), 0);
            gpusched_topo_domain_name(t, l, d, buf, sizeof buf);
            full_path(&ref[i], l, want);
            cr_assert_str_eq(buf, want);
            cr_assert_eq(gpusched_topo_domain_find(t, l, want, &found), 0);
            cr_assert_eq(found, d);
        }
    }
}

static void one_case(uint32_t iter)
{
    static const char *const lnames[] = {"zone", "block", "rack", "shelf", "tray"};
    static const char *const classes[] = {"h100", "a100", "gb200", "default"};
    static const char *const labs[] = {"ib", "nvme", "spot", "fast"};
    static const char *const rnames[] = {"cpu", "memory", "nic", "disk"};
    static ref_node ref[MAXN];
    ref_levels = 1 + rnd(4);
    uint32_t n = 1 + rnd(MAXN);
    uint32_t fan = 1 + rnd(5);
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, ref_levels, lnames), 0);
    /* Resources: some before the first node, the rest at a random node. */
    uint32_t want_res = rnd_res(5), nres = rnd_res(want_res + 1), declare_at = rnd_res(n);
    for (uint32_t r = 0; r < nres; r++)
        cr_assert_eq(gpusched_topo_builder_resource_add(b, rnames[r], NULL), 0);
    uint32_t added = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i == declare_at)
            for (; nres < want_res; nres++)
                cr_assert_eq(gpusched_topo_builder_resource_add(b, rnames[nres], NULL), 0);
        ref_node *r = &ref[added];
        memset(r, 0, sizeof *r);
        for (uint32_t l = 0; l < ref_levels; l++)
            snprintf(r->path[l], sizeof r->path[l], "%c%u", lnames[l][0], rnd(fan));
        /* Some names repeat on purpose: those adds must fail and change nothing. */
        snprintf(r->name, sizeof r->name, "node%u", rnd(8) ? i : rnd(i + 1));
        r->gpus = 1 + rnd(64);
        snprintf(r->cls, sizeof r->cls, "%s", classes[rnd(4)]);
        r->nlabels = rnd(4);
        const char *lp[3];
        for (uint32_t k = 0; k < r->nlabels; k++) {
            snprintf(r->labels[k], sizeof r->labels[k], "%s", labs[rnd(4)]);
            lp[k] = r->labels[k];
        }
        const char *pp[GPUSCHED_MAX_LEVELS];
        for (uint32_t l = 0; l < ref_levels; l++)
            pp[l] = r->path[l];
        bool dup = false;
        for (uint32_t j = 0; j < added; j++)
            dup |= !strcmp(ref[j].name, r->name);
        const char *cls = strcmp(r->cls, "default") || rnd(2) ? r->cls : NULL;
        int rc = gpusched_topo_builder_add_node(b, pp, r->name, r->gpus, cls, lp, r->nlabels);
        cr_assert_eq(rc, dup ? GPUSCHED_EEXIST : 0, "iter %u node %u: %s", iter, i,
                     gpusched_topo_builder_errmsg(b));
        if (!dup)
            r->seq = added++;
        /* A capacity of this node or of any earlier one, set or replaced. */
        for (uint32_t k = nres && added ? rnd_res(3) : 0; k > 0; k--) {
            ref_node *x = &ref[rnd_res(added)];
            uint32_t res = rnd_res(nres), v = rnd_amount();
            cr_assert_eq(gpusched_topo_builder_node_resource_set(b, x->name, res, v), 0);
            x->res[res] = v;
        }
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
    gpusched_topo_builder_free(b);
    topo_assert_valid(t);
    check_against_reference(t, ref, added, nres);
    topo_assert_roundtrips(t);
    gpusched_topo_unref(t);
}

Test(topo_property, random_builds_match_the_reference)
{
    rng = 0x243f6a8885a308d3ull;
    rng_res = 0xa4093822299f31d0ull;
    for (uint32_t iter = 0; iter < 150; iter++)
        one_case(iter);
}

/* Two insertion orders that differ only in how siblings interleave give
 * the same node ranges per domain. */
Test(topo_property, insertion_order_only_renumbers_within_the_rules)
{
    rng = 0x13198a2e03707344ull;
    for (uint32_t iter = 0; iter < 20; iter++) {
        static const char *const lv[] = {"block", "rack"};
        uint32_t n = 50 + rnd(200), perm[300];
        for (uint32_t i = 0; i < n; i++)
            perm[i] = i;
        gpusched_topo *t[2];
        for (int v = 0; v < 2; v++) {
            if (v)
                for (uint32_t i = n - 1; i > 0; i--) {
                    uint32_t j = rnd(i + 1), x = perm[i];
                    perm[i] = perm[j];
                    perm[j] = x;
                }
            gpusched_topo_builder *b;
            gpusched_topo_builder_new(NULL, &b);
            gpusched_topo_builder_levels_set(b, 2, lv);
            for (uint32_t i = 0; i < n; i++) {
                uint32_t k = perm[i];
                char blk[8], rack[8], name[8];
                snprintf(blk, sizeof blk, "b%u", k % 3);
                snprintf(rack, sizeof rack, "r%u", k % 7);
                snprintf(name, sizeof name, "n%u", k);
                const char *p[] = {blk, rack};
                cr_assert_eq(gpusched_topo_builder_add_node(b, p, name, 1 + k % 8, NULL, NULL, 0), 0);
            }
            cr_assert_eq(gpusched_topo_builder_freeze(b, &t[v]), 0);
            gpusched_topo_builder_free(b);
            topo_assert_valid(t[v]);
        }
        /* Every rack has the same size and the same set of nodes. */
        cr_assert_eq(gpusched_topo_domain_count(t[0], 1), gpusched_topo_domain_count(t[1], 1));
        for (uint32_t d = 0; d < gpusched_topo_domain_count(t[0], 1); d++) {
            char path[32];
            uint32_t d1, f0, c0, f1, c1;
            gpusched_topo_domain_name(t[0], 1, d, path, sizeof path);
            cr_assert_eq(gpusched_topo_domain_find(t[1], 1, path, &d1), 0);
            gpusched_topo_domain_nodes(t[0], 1, d, &f0, &c0);
            gpusched_topo_domain_nodes(t[1], 1, d1, &f1, &c1);
            cr_assert_eq(c0, c1);
            for (uint32_t i = 0; i < c0; i++) {
                char name[16];
                uint32_t m, dd;
                gpusched_topo_node_name(t[0], f0 + i, name, sizeof name);
                cr_assert_eq(gpusched_topo_node_find(t[1], name, &m), 0);
                gpusched_topo_node_domain(t[1], m, 1, &dd);
                cr_assert_eq(dd, d1);
            }
        }
        gpusched_topo_unref(t[0]);
        gpusched_topo_unref(t[1]);
    }
}
