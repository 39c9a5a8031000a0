/* Named scalar resources per node (cpu, memory, ...): the builder calls,
 * freeze's renumbering, the accessors and the fields the cluster reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "failalloc.h"
#include "topocheck.h"
#include "topo/topo-builder.h"

static const char *const levels2[] = {"block", "rack"};

static gpusched_topo_builder *new_builder(const gpusched_allocator *alloc)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(alloc, &b), 0);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, levels2), 0);
    return b;
}

static void add(gpusched_topo_builder *b, const char *blk, const char *rack, const char *name, uint32_t gpus)
{
    const char *path[] = {blk, rack};
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, gpus, "h100", NULL, 0), 0, "%s: %s", name,
                 gpusched_topo_builder_errmsg(b));
}

static gpusched_topo *freeze(gpusched_topo_builder *b)
{
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0, "%s", gpusched_topo_builder_errmsg(b));
    topo_assert_valid(t);
    return t;
}

Test(topo_resources, declare_set_and_read)
{
    gpusched_topo_builder *b = new_builder(NULL);
    uint32_t cpu = 99, mem = 99, again = 99;
    /* Declared before any node: the arrays start empty. */
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", &cpu), 0);
    cr_assert_eq(cpu, 0);
    /* Interleaved on purpose: freeze renumbers n10 and n12 first. */
    add(b, "b1", "r0", "n10", 8);
    add(b, "b0", "r0", "n0", 8);
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "memory", &mem), 0);
    cr_assert_eq(mem, 1);
    add(b, "b1", "r0", "n12", 4);
    add(b, "b0", "r1", "n2", 2);
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", &again), 0);
    cr_assert_eq(again, 0, "declaring again gives the index");
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "memory", NULL), 0);
    cr_assert_eq(b->nres, 2, "declaring again adds nothing");

    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n0", cpu, 64000), 0);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n0", mem, 262144), 0);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n12", cpu, 32000), 0);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n2", mem, UINT32_MAX), 0);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n2", mem, 7), 0, "a later set replaces");
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n2", mem, UINT32_MAX), 0);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "");
    gpusched_topo *t = freeze(b);

    cr_assert_eq(gpusched_topo_resource_count(t), 2);
    cr_assert_str_eq(gpusched_topo_resource_name(t, 0), "cpu");
    cr_assert_str_eq(gpusched_topo_resource_name(t, 1), "memory");
    cr_assert_null(gpusched_topo_resource_name(t, 2));
    uint32_t r = 77;
    cr_assert_eq(gpusched_topo_resource_find(t, "memory", &r), 0);
    cr_assert_eq(r, 1);
    cr_assert_eq(gpusched_topo_resource_find(t, "nic", &r), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_resource_find(t, NULL, &r), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_resource_find(t, "cpu", NULL), GPUSCHED_EINVAL);

    /* Node order after freeze: n10, n12 (b1/r0), n0 (b0/r0), n2 (b0/r1). */
    const char *order[] = {"n10", "n12", "n0", "n2"};
    const uint32_t want_cpu[] = {0, 32000, 64000, 0};
    const uint32_t want_mem[] = {0, 0, 262144, UINT32_MAX};
    for (uint32_t n = 0; n < 4; n++) {
        uint32_t idx;
        cr_assert_eq(gpusched_topo_node_find(t, order[n], &idx), 0);
        cr_assert_eq(idx, n);
        cr_assert_eq(gpusched_topo_node_resource(t, n, 0), want_cpu[n], "%s cpu", order[n]);
        cr_assert_eq(gpusched_topo_node_resource(t, n, 1), want_mem[n], "%s memory", order[n]);
        /* The fields the cluster and the placer read. */
        cr_assert_eq(t->node_res[0][n], want_cpu[n]);
        cr_assert_eq(t->node_res[1][n], want_mem[n]);
    }
    cr_assert_eq(t->nres, 2);
    cr_assert_str_eq(t->res_names[1], "memory");
    cr_assert_null(t->node_res[2]);
    cr_assert_eq(gpusched_topo_node_resource(t, 4, 0), 0, "node out of range");
    cr_assert_eq(gpusched_topo_node_resource(t, 2, 2), 0, "resource out of range");
    cr_assert_eq(gpusched_topo_node_resource(NULL, 0, 0), 0);
    cr_assert_eq(gpusched_topo_resource_count(NULL), 0);
    cr_assert_null(gpusched_topo_resource_name(NULL, 0));
    cr_assert_eq(gpusched_topo_resource_find(NULL, "cpu", &r), GPUSCHED_EINVAL);

    /* The builder keeps its content: set again, freeze again. */
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n10", cpu, 5), 0);
    gpusched_topo *t2 = freeze(b);
    cr_assert_eq(gpusched_topo_node_resource(t2, 0, 0), 5);
    cr_assert_eq(gpusched_topo_node_resource(t, 0, 0), 0, "a frozen topology never changes");
    gpusched_topo_unref(t2);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

Test(topo_resources, none_declared)
{
    gpusched_topo_builder *b = new_builder(NULL);
    add(b, "b0", "r0", "n0", 8);
    gpusched_topo *t = freeze(b);
    cr_assert_eq(gpusched_topo_resource_count(t), 0);
    cr_assert_eq(t->nres, 0);
    cr_assert_null(gpusched_topo_resource_name(t, 0));
    cr_assert_eq(gpusched_topo_node_resource(t, 0, 0), 0);
    uint32_t r;
    cr_assert_eq(gpusched_topo_resource_find(t, "cpu", &r), GPUSCHED_ENOENT);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
    /* Generated topologies have none either. */
    cr_assert_eq(gpusched_topo_preset("tiny", NULL, &t, NULL, 0), 0);
    topo_assert_valid(t);
    cr_assert_eq(gpusched_topo_resource_count(t), 0);
    gpusched_topo_unref(t);
}

/* Nodes added after a resource is declared, and nodes never set, have 0;
 * the arrays grow with the nodes (past the first capacity of 64). */
Test(topo_resources, unset_nodes_have_zero)
{
    gpusched_topo_builder *b = new_builder(NULL);
    uint32_t nic;
    add(b, "b0", "r0", "first", 1);
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "nic", &nic), 0);
    char name[16];
    for (uint32_t i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "n%u", i);
        add(b, i % 2 ? "b1" : "b0", "r0", name, 1);
        if (i % 3 == 0)
            cr_assert_eq(gpusched_topo_builder_node_resource_set(b, name, nic, 1000 + i), 0);
    }
    gpusched_topo *t = freeze(b);
    cr_assert_eq(gpusched_topo_node_count(t), 301);
    for (uint32_t i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "n%u", i);
        uint32_t n;
        cr_assert_eq(gpusched_topo_node_find(t, name, &n), 0);
        cr_assert_eq(gpusched_topo_node_resource(t, n, nic), i % 3 == 0 ? 1000 + i : 0, "%s", name);
    }
    uint32_t first;
    cr_assert_eq(gpusched_topo_node_find(t, "first", &first), 0);
    cr_assert_eq(gpusched_topo_node_resource(t, first, nic), 0);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

Test(topo_resources, bad_names_and_the_limit)
{
    gpusched_topo_builder *b = new_builder(NULL);
    uint32_t r = 99;
    const char *reserved[] = {"gpus", "class", "labels", "count"};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(gpusched_topo_builder_resource_add(b, reserved[i], &r), GPUSCHED_EINVAL, "%s", reserved[i]);
        char want[96];
        snprintf(want, sizeof want, "resource name '%s' is reserved (a node key)", reserved[i]);
        cr_assert_str_eq(gpusched_topo_builder_errmsg(b), want);
    }
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "", &r), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "resource name '' is empty");
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu cores", &r), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b),
                     "resource name 'cpu cores' has a character outside [A-Za-z0-9_.:+-]");
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "a=b", &r), GPUSCHED_EINVAL);
    char longname[80];
    memset(longname, 'x', 64);
    longname[64] = '\0';
    cr_assert_eq(gpusched_topo_builder_resource_add(b, longname, &r), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_resource_add(b, NULL, &r), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "resource name is NULL");
    cr_assert_eq(gpusched_topo_builder_resource_add(NULL, "cpu", &r), GPUSCHED_EINVAL);
    cr_assert_eq(r, 99, "a refused call wrote its index");
    cr_assert_eq(b->nres, 0);
    /* Case matters, as for every other name: "GPUS" is a resource. */
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "GPUS", &r), 0);
    cr_assert_eq(r, 0);

    char name[16];
    for (uint32_t i = 1; i < GPUSCHED_MAX_RESOURCES; i++) {
        snprintf(name, sizeof name, "res%u", i);
        cr_assert_eq(gpusched_topo_builder_resource_add(b, name, &r), 0);
        cr_assert_eq(r, i);
    }
    r = 99;
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "ninth", &r), GPUSCHED_ELIMIT);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "resource 'ninth': more than 8 resources");
    cr_assert_eq(r, 99);
    /* A declared name is still found at the limit. */
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "res7", &r), 0);
    cr_assert_eq(r, 7);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "");
    add(b, "b0", "r0", "n0", 1);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n0", 7, 70), 0);
    gpusched_topo *t = freeze(b);
    cr_assert_eq(gpusched_topo_resource_count(t), GPUSCHED_MAX_RESOURCES);
    cr_assert_str_eq(gpusched_topo_resource_name(t, 0), "GPUS");
    cr_assert_eq(gpusched_topo_node_resource(t, 0, 7), 70);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

Test(topo_resources, set_refuses_unknown_nodes_and_resources)
{
    gpusched_topo_builder *b = new_builder(NULL);
    add(b, "b0", "r0", "n0", 8);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n0", 0, 1), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "resource 0 is not declared (0 declared)");
    uint32_t cpu;
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", &cpu), 0);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n0", cpu, 100), 0);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n0", 1, 5), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "resource 1 is not declared (1 declared)");
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n0", UINT32_MAX, 5), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n1", cpu, 5), GPUSCHED_ENOENT);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "no node named 'n1'");
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "", cpu, 5), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, NULL, cpu, 5), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "node name is NULL");
    cr_assert_eq(gpusched_topo_builder_node_resource_set(NULL, "n0", cpu, 5), GPUSCHED_EINVAL);
    /* None of the refused calls changed the value. */
    gpusched_topo *t = freeze(b);
    cr_assert_eq(gpusched_topo_node_resource(t, 0, cpu), 100);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

/* A failed add_node leaves no node behind, so no capacity either; a failed
 * declaration adds no resource. */
Test(topo_resources, failed_calls_change_nothing)
{
    gpusched_topo_builder *b = new_builder(NULL);
    uint32_t cpu;
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", &cpu), 0);
    add(b, "b0", "r0", "n0", 8);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n0", cpu, 9), 0);
    const char *path[] = {"b0", "r0"};
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "n0", 8, NULL, NULL, 0), GPUSCHED_EEXIST);
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "n1", 65, NULL, NULL, 0), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "n1", cpu, 5), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "count", NULL), GPUSCHED_EINVAL);
    cr_assert_eq(b->nres, 1);
    uint32_t pool = b->pool.len;
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", NULL), 0);
    cr_assert_eq(b->pool.len, pool, "declaring again stored a name");
    gpusched_topo *t = freeze(b);
    cr_assert_eq(gpusched_topo_node_count(t), 1);
    cr_assert_eq(gpusched_topo_resource_count(t), 1);
    cr_assert_eq(gpusched_topo_node_resource(t, 0, cpu), 9);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

Test(topo_resources, memory_bytes_counts_them)
{
    gpusched_topo_builder *b = new_builder(NULL);
    char name[16];
    for (uint32_t i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "n%u", i);
        add(b, "b0", "r0", name, 1);
    }
    gpusched_topo *plain = freeze(b);
    uint32_t pool = b->pool.len;
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", NULL), 0);
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "memory", NULL), 0);
    gpusched_topo *t = freeze(b);
    /* The capacities and the names; the frozen name pool is the builder's,
     * which now holds the two names too. */
    cr_assert_eq(gpusched_topo_memory_bytes(t) - gpusched_topo_memory_bytes(plain),
                 2 * 100 * sizeof(uint32_t) + sizeof "cpu" + sizeof "memory" + (b->pool.len - pool));
    gpusched_topo_unref(plain);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

/* Every allocation of declaring, adding, setting and freezing may fail:
 * each failure is ENOMEM, leaves the builder as it was (the call is simply
 * retried) and leaks nothing; the result equals a build that never failed. */
static int build_with(const gpusched_allocator *alloc, gpusched_topo **out)
{
    gpusched_topo_builder *b;
    int rc = gpusched_topo_builder_new(alloc, &b);
    if (rc)
        return rc;
    rc = gpusched_topo_builder_levels_set(b, 2, levels2);
    if (rc == GPUSCHED_ENOMEM)
        rc = gpusched_topo_builder_levels_set(b, 2, levels2);
    char name[16], rack[16], res[16];
    for (int i = 0; !rc && i < 150; i++) {
        if (i % 40 == 0) {
            snprintf(res, sizeof res, "res%d", i / 40);
            uint32_t before = b->nres;
            rc = gpusched_topo_builder_resource_add(b, res, NULL);
            if (rc == GPUSCHED_ENOMEM) {
                cr_assert_eq(b->nres, before);
                rc = gpusched_topo_builder_resource_add(b, res, NULL);
            }
            if (rc)
                break;
        }
        snprintf(name, sizeof name, "n%d", i);
        snprintf(rack, sizeof rack, "r%d", i % 7);
        const char *path[] = {i % 2 ? "b1" : "b0", rack};
        rc = gpusched_topo_builder_add_node(b, path, name, 1 + i % 8, NULL, NULL, 0);
        if (rc == GPUSCHED_ENOMEM) {
            cr_assert_eq(b->nnodes, (uint32_t)i);
            rc = gpusched_topo_builder_add_node(b, path, name, 1 + i % 8, NULL, NULL, 0);
        }
        for (uint32_t r = 0; !rc && r < b->nres; r++)
            rc = gpusched_topo_builder_node_resource_set(b, name, r, (uint32_t)(i * 10 + r));
    }
    if (!rc)
        rc = gpusched_topo_builder_freeze(b, out);
    gpusched_topo_builder_free(b);
    return rc;
}

static int build_op(failalloc *fa, void *ctx) { return build_with(&fa->a, ctx); }

static void build_undo(void *ctx)
{
    gpusched_topo **out = ctx;
    gpusched_topo *ref;
    cr_assert_eq(build_with(NULL, &ref), 0);
    topo_assert_valid(*out);
    topo_assert_equal(*out, ref);
    cr_assert_eq(gpusched_topo_resource_count(ref), 4);
    uint32_t n;
    cr_assert_eq(gpusched_topo_node_find(ref, "n123", &n), 0);
    cr_assert_eq(gpusched_topo_node_resource(ref, n, 3), 1233);
    cr_assert_eq(gpusched_topo_node_resource(ref, n, 0), 1230);
    cr_assert_eq(gpusched_topo_node_find(ref, "n5", &n), 0);
    cr_assert_eq(gpusched_topo_node_resource(ref, n, 0), 50);
    gpusched_topo_unref(ref);
    gpusched_topo_unref(*out);
}

Test(topo_resources, allocation_failures)
{
    gpusched_topo *t = NULL;
    cr_assert_gt(failalloc_sweep(build_op, build_undo, &t), 10);
}

/* ---- the text format ----------------------------------------------------- */

static gpusched_topo *parse_ok(const char *text)
{
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, strlen(text), NULL, &t, err, sizeof err), 0, "%s", err);
    topo_assert_valid(t);
    return t;
}

static uint32_t node_res(const gpusched_topo *t, const char *node, const char *res)
{
    uint32_t n, r;
    cr_assert_eq(gpusched_topo_node_find(t, node, &n), 0, "%s", node);
    cr_assert_eq(gpusched_topo_resource_find(t, res, &r), 0, "%s", res);
    return gpusched_topo_node_resource(t, n, r);
}

/* Export, parse, export: the same topology and the same text; and the
 * image round trip. */
static void text_roundtrip(const gpusched_topo *t)
{
    topo_assert_roundtrips(t);
    size_t len, len2;
    char *text = topo_export_string(t, &len);
    gpusched_topo *back = parse_ok(text);
    topo_assert_equal(t, back);
    char *again = topo_export_string(back, &len2);
    cr_assert_str_eq(again, text);
    free(text);
    free(again);
    gpusched_topo_unref(back);
}

static const char res_text[] = "levels block rack\n"
                               "resources cpu memory\n"
                               "node b0/r[0-1] n[0-] count=2 gpus=8 cpu=64000 memory=262144\n"
                               "node b1/r0 small gpus=1 memory=1024 # no cpu: 0\n"
                               "node b1/r0 bare gpus=2 class=a100\n"
                               "node b1/r0 full gpus=4 memory=4294967295 cpu=0\n";

Test(topo_resources, text_declares_and_sets)
{
    gpusched_topo *t = parse_ok(res_text);
    cr_assert_eq(gpusched_topo_resource_count(t), 2);
    cr_assert_str_eq(gpusched_topo_resource_name(t, 0), "cpu");
    cr_assert_str_eq(gpusched_topo_resource_name(t, 1), "memory");
    /* Every node of the ranged line has the line's values. */
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        cr_assert_eq(node_res(t, name, "cpu"), 64000);
        cr_assert_eq(node_res(t, name, "memory"), 262144);
    }
    cr_assert_eq(node_res(t, "small", "cpu"), 0);
    cr_assert_eq(node_res(t, "small", "memory"), 1024);
    cr_assert_eq(node_res(t, "bare", "cpu"), 0);
    cr_assert_eq(node_res(t, "bare", "memory"), 0);
    cr_assert_eq(node_res(t, "full", "memory"), UINT32_MAX);
    gpusched_topo_unref(t);
}

Test(topo_resources, export_writes_declarations_and_nonzero_values)
{
    gpusched_topo *t = parse_ok(res_text);
    size_t len;
    char *s = topo_export_string(t, &len);
    cr_assert_str_eq(s, "# libgpusched topology: 7 nodes, 39 GPUs\n"
                        "levels block rack\n"
                        "classes default a100\n"
                        "resources cpu memory\n"
                        "node b0/r0 n0 gpus=8 class=default cpu=64000 memory=262144\n"
                        "node b0/r0 n1 gpus=8 class=default cpu=64000 memory=262144\n"
                        "node b0/r1 n2 gpus=8 class=default cpu=64000 memory=262144\n"
                        "node b0/r1 n3 gpus=8 class=default cpu=64000 memory=262144\n"
                        "node b1/r0 small gpus=1 class=default memory=1024\n"
                        "node b1/r0 bare gpus=2 class=a100\n"
                        "node b1/r0 full gpus=4 class=default memory=4294967295\n");
    free(s);
    text_roundtrip(t);
    gpusched_topo_unref(t);
}

/* A declared resource nobody has is still declared after a round trip, and
 * resources keep their indexes whatever order the values come in. */
Test(topo_resources, round_trips_keep_indexes_and_unused_resources)
{
    gpusched_topo *t = parse_ok("resources nic disk gpu-mem\n"
                                "levels rack\n"
                                "labels ib\n"
                                "node r0 a gpus=1 gpu-mem=80 nic=2 labels=ib\n"
                                "node r1 b gpus=1\n");
    cr_assert_eq(gpusched_topo_resource_count(t), 3);
    cr_assert_str_eq(gpusched_topo_resource_name(t, 2), "gpu-mem");
    cr_assert_eq(node_res(t, "a", "nic"), 2);
    cr_assert_eq(node_res(t, "a", "disk"), 0);
    text_roundtrip(t);
    gpusched_topo_unref(t);

    /* The most a node line holds: 8 resources beside every other key. */
    t = parse_ok("levels rack\nlabels x y\nresources r0 r1 r2 r3 r4 r5 r6 r7\n"
                 "node k[0-1] n[0-] count=2 gpus=64 class=c labels=x,y r7=7 r6=6 r5=5 r4=4 r3=3 r2=2 r1=1 r0=4294967295\n");
    cr_assert_eq(gpusched_topo_resource_count(t), GPUSCHED_MAX_RESOURCES);
    for (uint32_t n = 0; n < 4; n++)
        for (uint32_t r = 0; r < GPUSCHED_MAX_RESOURCES; r++)
            cr_assert_eq(gpusched_topo_node_resource(t, n, r), r ? r : UINT32_MAX);
    text_roundtrip(t);
    gpusched_topo_unref(t);
}

/* Resources declared through the API serve the text, and a `resources`
 * line naming them again keeps their indexes. */
Test(topo_resources, text_into_a_builder_with_resources)
{
    gpusched_topo_builder *b = new_builder(NULL);
    uint32_t cpu;
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", &cpu), 0);
    add(b, "b0", "r0", "api", 8);
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "api", cpu, 11), 0);
    const char *text = "levels block rack\nresources memory cpu\nnode b0/r0 txt gpus=8 cpu=22 memory=33\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, text, strlen(text)), 0, "%s", gpusched_topo_builder_errmsg(b));
    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, "txt", cpu, 23), 0);
    gpusched_topo *t = freeze(b);
    cr_assert_str_eq(gpusched_topo_resource_name(t, 0), "cpu");
    cr_assert_str_eq(gpusched_topo_resource_name(t, 1), "memory");
    cr_assert_eq(node_res(t, "api", "cpu"), 11);
    cr_assert_eq(node_res(t, "api", "memory"), 0);
    cr_assert_eq(node_res(t, "txt", "cpu"), 23);
    cr_assert_eq(node_res(t, "txt", "memory"), 33);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

/* A failed parse takes back the resources it declared and the nodes it
 * added with their values; the values of the nodes before it stay. */
Test(topo_resources, failed_parse_takes_back_its_resources)
{
    gpusched_topo_builder *b = new_builder(NULL);
    const char *good = "resources cpu\nnode b0/r0 a gpus=8 cpu=5\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, good, strlen(good)), 0);
    const char *bad = "resources memory nic\nnode b0/r0 x gpus=8 cpu=6 nic=1 memory=2\nnode b0/r0 a gpus=8\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, bad, strlen(bad)), GPUSCHED_EPARSE);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "line 3, column 12: duplicate node name 'a'");
    cr_assert_eq(b->nres, 1);
    cr_assert_eq(b->nnodes, 1);
    const char *nic = "node b0/r0 y gpus=1 nic=1\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, nic, strlen(nic)), GPUSCHED_EPARSE);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "line 1, column 21: unknown property 'nic'");
    /* Declared again after the rollback, the resource starts from 0. */
    const char *again = "resources disk\nnode b0/r0 z gpus=1\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, again, strlen(again)), 0);
    gpusched_topo *t = freeze(b);
    cr_assert_eq(gpusched_topo_resource_count(t), 2);
    cr_assert_str_eq(gpusched_topo_resource_name(t, 1), "disk");
    cr_assert_eq(node_res(t, "a", "cpu"), 5);
    cr_assert_eq(node_res(t, "a", "disk"), 0);
    cr_assert_eq(node_res(t, "z", "disk"), 0);
    cr_assert_eq(node_res(t, "z", "cpu"), 0);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

struct parse_ctx {
    const char *text;
    gpusched_topo *t;
};

static int parse_op(failalloc *fa, void *ctx)
{
    struct parse_ctx *c = ctx;
    return gpusched_topo_parse(c->text, strlen(c->text), &fa->a, &c->t, NULL, 0);
}

static void parse_undo(void *ctx)
{
    struct parse_ctx *c = ctx;
    topo_assert_valid(c->t);
    gpusched_topo *ref = parse_ok(c->text);
    topo_assert_equal(c->t, ref);
    gpusched_topo_unref(ref);
    gpusched_topo_unref(c->t);
}

Test(topo_resources, text_allocation_failures)
{
    struct parse_ctx c = {res_text, NULL};
    cr_assert_gt(failalloc_sweep_retry(parse_op, parse_undo, &c), 10);
}

/* ---- the binary image, through snapshots ----------------------------------- */

static void *snapshot_of(gpusched_cluster *c, size_t *len)
{
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, len), GPUSCHED_ERANGE);
    void *buf = malloc(*len);
    cr_assert_eq(gpusched_cluster_snapshot(c, buf, *len, len), 0);
    return buf;
}

Test(topo_resources, snapshot_restore_keeps_resources)
{
    gpusched_topo *t = parse_ok(res_text);
    topo_assert_roundtrips(t);
    gpusched_cluster *c;
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    size_t len, len2;
    void *snap = snapshot_of(c, &len);
    gpusched_cluster *back;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(snap, len, NULL, &back, err, sizeof err), 0, "%s", err);
    const gpusched_topo *bt = gpusched_cluster_topo(back);
    topo_assert_valid(bt);
    topo_assert_equal(t, bt);
    cr_assert_eq(gpusched_topo_resource_count(bt), 2);
    cr_assert_eq(node_res(bt, "n3", "memory"), 262144);
    cr_assert_eq(node_res(bt, "full", "memory"), UINT32_MAX);
    cr_assert_eq(node_res(bt, "small", "cpu"), 0);
    void *snap2 = snapshot_of(back, &len2);
    cr_assert(len2 == len && !memcmp(snap, snap2, len), "restore then snapshot changed the bytes");
    /* A cut anywhere, the topology image's included, is refused cleanly. */
    for (size_t n = 0; n < len; n += 7) {
        gpusched_cluster *x = NULL;
        int rc = gpusched_cluster_restore(snap, n, NULL, &x, err, sizeof err);
        cr_assert(rc == GPUSCHED_ECORRUPT, "cut at %zu: %s", n, gpusched_err_name(rc));
        cr_assert_null(x);
    }
    free(snap);
    free(snap2);
    gpusched_cluster_unref(back);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}
