/* The builder and freeze: contiguity, numbering, names, errors. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "failalloc.h"
#include "topocheck.h"
#include "topo/topo-builder.h"

static const char *const levels2[] = {"block", "rack"};

static void add(gpusched_topo_builder *b, const char *blk, const char *rack, const char *name,
                uint32_t gpus, const char *cls)
{
    const char *path[] = {blk, rack};
    int rc = gpusched_topo_builder_add_node(b, path, name, gpus, cls, NULL, 0);
    cr_assert_eq(rc, 0, "%s: %s", name, gpusched_topo_builder_errmsg(b));
}

static gpusched_topo *small_topo(void)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, levels2), 0);
    /* Interleaved on purpose: freeze must group them. */
    add(b, "b1", "r0", "n10", 8, "h100");
    add(b, "b0", "r0", "n0", 8, "h100");
    add(b, "b1", "r1", "n11", 4, "a100");
    add(b, "b0", "r1", "n2", 8, NULL);
    add(b, "b1", "r0", "n12", 2, "h100");
    add(b, "b0", "r0", "n1", 8, "h100");
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0, "%s", gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    return t;
}

Test(topo_builder, freeze_groups_by_first_appearance)
{
    gpusched_topo *t = small_topo();
    cr_assert_eq(gpusched_topo_level_count(t), 2);
    cr_assert_eq(gpusched_topo_node_count(t), 6);
    cr_assert_eq(gpusched_topo_gpu_count(t), 38);
    cr_assert_eq(gpusched_topo_domain_count(t, 0), 2);
    cr_assert_eq(gpusched_topo_domain_count(t, 1), 4);
    /* b1 appeared first, so it is block 0; its r0 is rack 0 with n10, n12. */
    const char *order[] = {"n10", "n12", "n11", "n0", "n1", "n2"};
    for (uint32_t n = 0; n < 6; n++) {
        char buf[64];
        cr_assert_eq(gpusched_topo_node_name(t, n, buf, sizeof buf), 0);
        cr_assert_str_eq(buf, order[n]);
        uint32_t found;
        cr_assert_eq(gpusched_topo_node_find(t, order[n], &found), 0);
        cr_assert_eq(found, n);
    }
    const char *racks[] = {"b1/r0", "b1/r1", "b0/r0", "b0/r1"};
    const uint32_t first[] = {0, 2, 3, 5}, count[] = {2, 1, 2, 1};
    for (uint32_t d = 0; d < 4; d++) {
        char buf[64];
        uint32_t f, c, p, found;
        cr_assert_eq(gpusched_topo_domain_name(t, 1, d, buf, sizeof buf), 0);
        cr_assert_str_eq(buf, racks[d]);
        cr_assert_eq(gpusched_topo_domain_find(t, 1, racks[d], &found), 0);
        cr_assert_eq(found, d);
        cr_assert_eq(gpusched_topo_domain_nodes(t, 1, d, &f, &c), 0);
        cr_assert_eq(f, first[d]);
        cr_assert_eq(c, count[d]);
        cr_assert_eq(gpusched_topo_domain_parent(t, 1, d, &p), 0);
        cr_assert_eq(p, d / 2);
    }
    cr_assert_eq(t->node_gpu_base[3], 14);
    cr_assert_eq(t->max_node_gpus, 8);
    cr_assert_eq(gpusched_topo_class_count(t), 3);
    cr_assert_str_eq(gpusched_topo_class_name(t, gpusched_topo_node_class(t, 2)), "a100");
    cr_assert_str_eq(gpusched_topo_class_name(t, gpusched_topo_node_class(t, 5)), "default");
    uint32_t x;
    cr_assert_eq(gpusched_topo_domain_find(t, 1, "b0/r9", &x), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_domain_find(t, 1, "b0", &x), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_domain_find(t, 0, "b0/r0", &x), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_node_find(t, "n99", &x), GPUSCHED_ENOENT);
    gpusched_topo_unref(t);
}

Test(topo_builder, bad_input_changes_nothing)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *path[] = {"b0", "r0"};
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "n0", 8, NULL, NULL, 0), GPUSCHED_ESTATE);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "levels are not set");
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 0, levels2), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 9, levels2), GPUSCHED_ELIMIT);
    const char *dup[] = {"rack", "rack"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, dup), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "level name 'rack' appears twice");
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, levels2), 0);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "");
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, levels2), GPUSCHED_ESTATE);
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "n0", 8, "h100", NULL, 0), 0);
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "n0", 8, "h100", NULL, 0), GPUSCHED_EEXIST);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "duplicate node name 'n0'");
    const char *path2[] = {"b9", "r9"};
    const char *lab[] = {"ib"};
    /* The duplicate carries a new class, label and domains: none may stay. */
    cr_assert_eq(gpusched_topo_builder_add_node(b, path2, "n0", 8, "a100", lab, 1), GPUSCHED_EEXIST);
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "n1", 65, NULL, NULL, 0), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "node 'n1': 65 GPUs, 0 to 64 allowed");
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "n 1", 8, NULL, NULL, 0), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b),
                     "node name 'n 1' has a character outside [A-Za-z0-9_.:+-]");
    const char *badpath[] = {"b0", "r/0"};
    cr_assert_eq(gpusched_topo_builder_add_node(b, badpath, "n1", 8, NULL, NULL, 0), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "", 8, NULL, NULL, 0), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_add_node(b, NULL, "n1", 8, NULL, NULL, 0), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "n1", 8, NULL, NULL, 2), GPUSCHED_EINVAL);
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
    cr_assert_eq(gpusched_topo_node_count(t), 1);
    cr_assert_eq(gpusched_topo_domain_count(t, 0), 1);
    cr_assert_eq(gpusched_topo_class_count(t), 1);
    cr_assert_eq(gpusched_topo_label_count(t), 0);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

Test(topo_builder, limits)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *lv[] = {"rack"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 1, lv), 0);
    char name[32], lab[32];
    const char *path[] = {"r0"};
    for (int i = 0; i < 64; i++) {
        snprintf(name, sizeof name, "n%d", i);
        snprintf(lab, sizeof lab, "l%d", i);
        const char *labs[] = {lab};
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, 1, NULL, labs, 1), 0);
    }
    const char *labs[] = {"one-too-many"};
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "x", 1, NULL, labs, 1), GPUSCHED_ELIMIT);
    for (int i = 0; i < 254; i++) {
        snprintf(name, sizeof name, "c%d", i);
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, 1, name, NULL, 0), 0);
    }
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "y", 1, "c-too-many", NULL, 0), GPUSCHED_ELIMIT);
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
    cr_assert_eq(gpusched_topo_label_count(t), 64);
    cr_assert_eq(gpusched_topo_class_count(t), 255);
    cr_assert_eq(gpusched_topo_node_labels(t, 63), 1ull << 63);
    uint32_t id;
    cr_assert_eq(gpusched_topo_label_find(t, "l17", &id), 0);
    cr_assert_eq(id, 17);
    cr_assert_str_eq(gpusched_topo_label_name(t, 17), "l17");
    cr_assert_null(gpusched_topo_label_name(t, 64));
    cr_assert_eq(gpusched_topo_class_find(t, "c3", &id), 0);
    cr_assert_eq(id, 4);
    cr_assert_eq(gpusched_topo_class_find(t, "zz", &id), GPUSCHED_ENOENT);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

Test(topo_builder, freeze_needs_levels_and_nodes)
{
    gpusched_topo_builder *b;
    gpusched_topo *t = NULL;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), GPUSCHED_ESTATE);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, levels2), 0);
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), GPUSCHED_ESTATE);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "the builder has no node");
    cr_assert_eq(gpusched_topo_builder_freeze(b, NULL), GPUSCHED_EINVAL);
    cr_assert_null(t);
    gpusched_topo_builder_free(b);
    gpusched_topo_builder_free(NULL);
    cr_assert_eq(gpusched_topo_builder_new(NULL, NULL), GPUSCHED_EINVAL);
    gpusched_allocator bad = GPUSCHED_ALLOCATOR_INIT;
    cr_assert_eq(gpusched_topo_builder_new(&bad, &b), GPUSCHED_EINVAL);
}

Test(topo_builder, accessors_reject_out_of_range)
{
    gpusched_topo *t = small_topo();
    uint32_t a, c;
    char buf[8];
    cr_assert_eq(gpusched_topo_domain_nodes(t, 2, 0, &a, &c), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_domain_nodes(t, 1, 4, &a, &c), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_domain_parent(t, 0, 0, &a), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_node_domain(t, 6, 0, &a), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_node_domain(t, 5, 2, &a), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_node_domain(t, 5, 0, &a), 0);
    cr_assert_eq(a, 1);
    cr_assert_eq(gpusched_topo_domain_name(t, 1, 0, buf, 5), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_domain_name(t, 1, 0, buf, 6), 0);
    cr_assert_eq(gpusched_topo_node_name(t, 0, buf, 3), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_node_name(t, 9, buf, 8), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_node_gpus(t, 6), 0);
    cr_assert_eq(gpusched_topo_node_class(t, 6), GPUSCHED_NONE);
    cr_assert_eq(gpusched_topo_node_labels(t, 6), 0);
    cr_assert_null(gpusched_topo_level_name(t, 2));
    cr_assert_str_eq(gpusched_topo_level_name(t, 1), "rack");
    cr_assert_eq(gpusched_topo_level_find(t, "rack", &a), 0);
    cr_assert_eq(a, 1);
    cr_assert_eq(gpusched_topo_level_find(t, "zone", &a), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_domain_count(t, 2), 0);
    cr_assert_null(gpusched_topo_class_name(t, 3));
    cr_assert_gt(gpusched_topo_memory_bytes(t), 6 * 18);
    cr_assert_eq(gpusched_topo_ref(t), t);
    gpusched_topo_unref(t);
    cr_assert_eq(gpusched_topo_node_count(t), 6);
    gpusched_topo_unref(t);
    gpusched_topo_unref(NULL);
    cr_assert_null(gpusched_topo_ref(NULL));
}

/* Builds 200 nodes; an add that fails for memory must leave the builder as
 * it was, so it is simply retried (the injected failure happens once) and
 * the result must equal a build that never failed. */
static int build_with(const gpusched_allocator *alloc, gpusched_topo **out)
{
    gpusched_topo_builder *b;
    int rc = gpusched_topo_builder_new(alloc, &b);
    if (rc)
        return rc;
    rc = gpusched_topo_builder_levels_set(b, 2, levels2);
    if (rc == GPUSCHED_ENOMEM)
        rc = gpusched_topo_builder_levels_set(b, 2, levels2);
    char name[16], rack[16], blk[16];
    const char *labs[] = {"ib", "fast"};
    for (int i = 0; !rc && i < 200; i++) {
        snprintf(name, sizeof name, "n%d", i);
        snprintf(rack, sizeof rack, "r%d", i % 7);
        snprintf(blk, sizeof blk, "b%d", i % 3);
        const char *path[] = {blk, rack};
        rc = gpusched_topo_builder_add_node(b, path, name, 1 + i % 8, i % 2 ? "x" : "y", labs, i % 3);
        if (rc == GPUSCHED_ENOMEM) {
            cr_assert_eq(b->nnodes, (uint32_t)i);
            cr_assert_eq(b->nclasses, i == 0 ? 0u : i == 1 ? 1u : 2u);
            rc = gpusched_topo_builder_add_node(b, path, name, 1 + i % 8, i % 2 ? "x" : "y", labs, i % 3);
        }
    }
    if (!rc)
        rc = gpusched_topo_builder_freeze(b, out);
    gpusched_topo_builder_free(b);
    return rc;
}

static int build_op(failalloc *fa, void *ctx)
{
    return build_with(&fa->a, ctx);
}

static void build_undo(void *ctx)
{
    gpusched_topo **out = ctx;
    gpusched_topo *ref;
    cr_assert_eq(build_with(NULL, &ref), 0);
    topo_assert_valid(*out);
    topo_assert_equal(*out, ref);
    gpusched_topo_unref(ref);
    gpusched_topo_unref(*out);
}

Test(topo_builder, allocation_failures)
{
    gpusched_topo *t = NULL;
    long n = failalloc_sweep(build_op, build_undo, &t);
    cr_assert_gt(n, 10);
}

Test(topo_builder, null_arguments_are_refused)
{
    uint32_t x;
    char buf[8];
    cr_assert_str_eq(gpusched_topo_builder_errmsg(NULL), "builder is NULL");
    cr_assert_eq(gpusched_topo_builder_levels_set(NULL, 1, levels2), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_add_node(NULL, NULL, "n", 1, NULL, NULL, 0), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_freeze(NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_level_count(NULL), 0);
    cr_assert_eq(gpusched_topo_node_count(NULL), 0);
    cr_assert_eq(gpusched_topo_gpu_count(NULL), 0);
    cr_assert_eq(gpusched_topo_class_count(NULL), 0);
    cr_assert_eq(gpusched_topo_label_count(NULL), 0);
    cr_assert_eq(gpusched_topo_memory_bytes(NULL), 0);
    cr_assert_eq(gpusched_topo_level_find(NULL, "rack", &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_class_find(NULL, "x", &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_label_find(NULL, "x", &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_domain_nodes(NULL, 0, 0, &x, &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_domain_parent(NULL, 1, 0, &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_node_domain(NULL, 0, 0, &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_domain_name(NULL, 0, 0, buf, sizeof buf), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_domain_find(NULL, 0, "b0", &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_node_name(NULL, 0, buf, sizeof buf), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_node_find(NULL, "n0", &x), GPUSCHED_EINVAL);
    gpusched_topo *t = small_topo();
    cr_assert_eq(gpusched_topo_level_find(t, NULL, &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_level_find(t, "rack", NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_domain_find(t, 0, NULL, &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_domain_find(t, 5, "b0", &x), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_domain_find(t, 1, "b0/r0/x", &x), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_domain_find(t, 1, "", &x), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_node_find(t, NULL, &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_domain_nodes(t, 0, 0, NULL, &x), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_domain_name(t, 0, 0, NULL, 4), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_node_name(t, 0, NULL, 0), GPUSCHED_ERANGE);
    gpusched_topo_unref(t);
}

Test(topo_builder, refcount_is_shared)
{
    gpusched_topo *t = small_topo();
    for (int i = 0; i < 10; i++)
        gpusched_topo_ref(t);
    for (int i = 0; i < 10; i++)
        gpusched_topo_unref(t);
    cr_assert_eq(gpusched_topo_node_count(t), 6);
    cr_assert_eq(t->refcount, 1);
    gpusched_topo_unref(t);
}

/* The bulk read of node facts is the per-node read, for every range. */
Test(topo_builder, nodes_info_in_bulk)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *lv[] = {"rack"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 1, lv), 0);
    const char *labs[] = {"ib", "ssd"};
    for (uint32_t n = 0; n < 9; n++) {
        const char *path[] = {n < 5 ? "r0" : "r1"};
        char name[8];
        snprintf(name, sizeof name, "n%u", n);
        uint32_t nl = n % 2 ? (n % 3 ? 1 : 0) : n % 3; /* within labs */
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, 1 + n % 8, n % 3 ? "a100" : "h100", labs + n % 2,
                                                    nl),
                     0, "%s", gpusched_topo_builder_errmsg(b));
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
    gpusched_topo_builder_free(b);
    uint32_t g[9], k[9];
    uint64_t l[9];
    for (uint32_t first = 0; first <= 9; first++)
        for (uint32_t count = 0; first + count <= 9; count++) {
            cr_assert_eq(gpusched_topo_nodes_info(t, first, count, g, k, l), 0);
            for (uint32_t i = 0; i < count; i++) {
                cr_assert_eq(g[i], gpusched_topo_node_gpus(t, first + i));
                cr_assert_eq(k[i], gpusched_topo_node_class(t, first + i));
                cr_assert_eq(l[i], gpusched_topo_node_labels(t, first + i));
            }
        }
    cr_assert_eq(gpusched_topo_nodes_info(t, 0, 9, NULL, NULL, NULL), 0);
    cr_assert_eq(gpusched_topo_nodes_info(NULL, 0, 1, g, k, l), GPUSCHED_EINVAL);
    g[0] = 77;
    cr_assert_eq(gpusched_topo_nodes_info(t, 5, 5, g, k, l), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_nodes_info(t, 10, 0, g, k, l), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_nodes_info(t, 1, UINT32_MAX, g, k, l), GPUSCHED_ERANGE);
    cr_assert_eq(g[0], 77, "a refused call wrote");
    gpusched_topo_unref(t);
}
