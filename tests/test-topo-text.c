/* The text format: parsing, the ranged form, export round trips and every
 * class of error with its line and column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "failalloc.h"
#include "topo/topo-builder.h"
#include "topo/topo-export.h"
#include "topo/topo-internal.h"
#include "topocheck.h"

static gpusched_topo *parse_ok(const char *text)
{
    gpusched_topo *t = NULL;
    char err[256];
    int rc = gpusched_topo_parse(text, strlen(text), NULL, &t, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(err, "");
    topo_assert_valid(t);
    return t;
}

static const char small_text[] =
    "# a small cluster\n"
    "levels block rack   # top first\n"
    "\n"
    "labels ib\r\n"
    "node b0/r0 gpu-a gpus=8 class=h100 labels=ib,nvme\n"
    "\tnode  b0/r1  gpu-b  gpus=4\n"
    "node b1/r0 gpu-c gpus=2 class=a100 labels=nvme\n"
    "node b0/r0 gpu-d gpus=8 class=h100";

Test(topo_text, parses_nodes_properties_and_comments)
{
    gpusched_topo *t = parse_ok(small_text);
    cr_assert_eq(gpusched_topo_node_count(t), 4);
    cr_assert_eq(gpusched_topo_gpu_count(t), 22);
    cr_assert_eq(gpusched_topo_domain_count(t, 1), 3);
    char buf[64];
    const char *order[] = {"gpu-a", "gpu-d", "gpu-b", "gpu-c"};
    for (uint32_t n = 0; n < 4; n++) {
        gpusched_topo_node_name(t, n, buf, sizeof buf);
        cr_assert_str_eq(buf, order[n]);
    }
    cr_assert_str_eq(gpusched_topo_label_name(t, 0), "ib");
    cr_assert_str_eq(gpusched_topo_label_name(t, 1), "nvme");
    cr_assert_eq(gpusched_topo_node_labels(t, 0), 3);
    cr_assert_eq(gpusched_topo_node_labels(t, 3), 2);
    cr_assert_str_eq(gpusched_topo_class_name(t, gpusched_topo_node_class(t, 2)), "default");
    gpusched_topo_unref(t);
}

Test(topo_text, ranged_line_equals_uniform)
{
    gpusched_topo *t = parse_ok("levels zone block rack\n"
                                "node z[0-1]/b[0-2]/r[0-3] n[0-] count=5 gpus=4 class=gb200\n");
    const char *lv[] = {"zone", "block", "rack"};
    const uint32_t fan[] = {2, 3, 4, 5};
    gpusched_topo *u;
    cr_assert_eq(gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &u, NULL, 0), 0);
    topo_assert_valid(u);
    topo_assert_equal(t, u);
    gpusched_topo_unref(t);
    gpusched_topo_unref(u);
}

Test(topo_text, ranges_with_prefix_suffix_and_closed_name_range)
{
    gpusched_topo *t = parse_ok("levels rack\n"
                                "node rk[8-9]-x host[100-103].dc count=2 gpus=1\n");
    char buf[64];
    gpusched_topo_domain_name(t, 0, 1, buf, sizeof buf);
    cr_assert_str_eq(buf, "rk9-x");
    gpusched_topo_node_name(t, 3, buf, sizeof buf);
    cr_assert_str_eq(buf, "host103.dc");
    gpusched_topo_unref(t);
}

static void roundtrip(const gpusched_topo *t, bool per_node)
{
    size_t len = 0;
    cr_assert_eq(gs_topo_export_text(t, per_node, NULL, 0, &len), GPUSCHED_ERANGE);
    char *text = malloc(len + 1);
    cr_assert_eq(gs_topo_export_text(t, per_node, text, len + 1, &len), 0);
    gpusched_topo *back = parse_ok(text);
    topo_assert_equal(t, back);
    /* Parsed topologies store their names, so they export one line per
     * node: exactly the per-node text of the original. */
    size_t len2, len3 = 0;
    char *again = topo_export_string(back, &len2);
    cr_assert_eq(gs_topo_export_text(t, true, NULL, 0, &len3), GPUSCHED_ERANGE);
    char *per_node_text = malloc(len3 + 1);
    gs_topo_export_text(t, true, per_node_text, len3 + 1, &len3);
    cr_assert_str_eq(again, per_node_text);
    free(per_node_text);
    free(text);
    free(again);
    gpusched_topo_unref(back);
}

Test(topo_text, export_then_parse_is_identical)
{
    gpusched_topo *t = parse_ok(small_text);
    roundtrip(t, true);
    size_t len;
    char *a = topo_export_string(t, &len);
    gpusched_topo *b = parse_ok(a);
    char *c = topo_export_string(b, &len);
    cr_assert_str_eq(a, c);
    free(a);
    free(c);
    gpusched_topo_unref(b);
    gpusched_topo_unref(t);
    for (uint32_t i = 1; gpusched_topo_preset_name(i); i++) {
        cr_assert_eq(gpusched_topo_preset(gpusched_topo_preset_name(i), NULL, &t, NULL, 0), 0);
        roundtrip(t, false);
        roundtrip(t, true);
        gpusched_topo_unref(t);
    }
}

Test(topo_text, uniform_exports_in_a_few_lines)
{
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, NULL, 0), 0);
    size_t len;
    char *s = topo_export_string(t, &len);
    cr_assert_str_eq(s, "# libgpusched topology: 258048 nodes, 1032192 GPUs\n"
                        "levels zone block rack\n"
                        "classes gb200\n"
                        "node z[0-7]/b[0-31]/r[0-55] n[0-] count=18 gpus=4 class=gb200\n");
    gpusched_topo *back = parse_ok(s);
    topo_assert_equal(t, back);
    free(s);
    gpusched_topo_unref(back);
    gpusched_topo_unref(t);
}

Test(topo_text, export_rejects_small_buffers)
{
    gpusched_topo *t = parse_ok(small_text);
    size_t len = 0;
    char buf[16] = "untouched";
    cr_assert_eq(gpusched_topo_export(t, NULL, 0, &len), GPUSCHED_ERANGE);
    cr_assert_gt(len, 16);
    cr_assert_eq(gpusched_topo_export(t, buf, sizeof buf, &len), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_topo_export(t, NULL, 5, &len), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_export(t, buf, 5, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_export(NULL, buf, 5, &len), GPUSCHED_EINVAL);
    gpusched_topo_unref(t);
}

struct bad_case {
    const char *text;
    const char *msg;
};

/* One case per error class; each message names line and column. */
static const struct bad_case bad_cases[] = {
    {"node b0/r0 n0 gpus=8\n", "line 1, column 1: 'node' before 'levels'"},
    {"levels block rack\nfrobnicate\n", "line 2, column 1: unknown directive 'frobnicate' (node, levels, classes, labels or resources expected)"},
    {"levels\n", "line 1, column 1: 'levels' needs at least one name"},
    {"levels a b c d e f g h i\n", "line 1, column 24: more than 8 levels"},
    {"levels rack rack\n", "line 1, column 8: level name 'rack' appears twice"},
    {"levels ra!ck\n", "line 1, column 10: unexpected character '!' in a name"},
    {"levels block rack\nlevels block zone\n", "line 2, column 1: levels differ from the levels already set"},
    {"levels block rack\nnode b0/r0 n0\n", "line 2, column 1: 'node' needs gpus=N"},
    {"levels block rack\nnode b0/r0 n0 class=x\n", "line 2, column 1: 'node' needs gpus=N"},
    {"levels block rack\nnode b0/r0\n", "line 2, column 1: 'node' needs a path, a name and gpus=N"},
    {"levels rack\nnode r[0-1]01234567890123456789012345678901234567890123456789012345678901 n[0-] gpus=1\n",
     "line 2, column 6: rack name 'r0012345678901234567890123456789...' is longer than 63 bytes"},
    {"levels block rack\n\nnode b0 n0 gpus=8\n", "line 3, column 6: the path has 1 components, 2 expected (one per level)"},
    {"levels block rack\nnode b0/r0/x n0 gpus=8\n", "line 2, column 11: the path has more than 2 components (one per level)"},
    {"levels block rack\nnode b0//r0 n0 gpus=8\n", "line 2, column 9: empty path component"},
    {"levels block rack\nnode b0/r0 n0 gpus=65\n", "line 2, column 20: gpus=65, 0 to 64 allowed"},
    {"levels block rack\nnode b0/r0 n0 gpus=x8\n", "line 2, column 20: 'x8' is not a decimal number"},
    {"levels block rack\nnode b0/r0 n0 gpus=\n", "line 2, column 20: a number is expected"},
    {"levels block rack\nnode b0/r0 n0 gpus=99999999999\n", "line 2, column 20: number '99999999999' is too large"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 gpus=4\n", "line 2, column 22: property 'gpus' given twice"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 colour=red\n", "line 2, column 22: unknown property 'colour'"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 fast\n", "line 2, column 22: 'fast' is not a key=value property"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 class=\n", "line 2, column 28: empty class name"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 labels=a,,b\n", "line 2, column 31: empty label name"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 labels=a,\n", "line 2, column 30: trailing ',' in labels"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 count=0\n", "line 2, column 28: count must be at least 1"},
    {"levels block rack\nnode b0/r$0 n0 gpus=8\n", "line 2, column 10: unexpected character '$' in a name"},
    {"levels block rack\nnode b0/r0 n0 gpus=8\nnode b1/r0 n0 gpus=8\n", "line 3, column 12: duplicate node name 'n0'"},
    {"levels block rack\nnode b[0-1]/r0 n0 gpus=8\n", "line 2, column 16: a line of several nodes needs a range in the name, like n[0-]"},
    {"levels block rack\nnode b[0-1]/r0 n[0-2] gpus=8\n", "line 2, column 16: the name range has 3 values for 2 nodes"},
    {"levels block rack\nnode b[0-/r0 n0 gpus=8\n", "line 2, column 7: '[' without ']'"},
    {"levels block rack\nnode b[0]/r0 n0 gpus=8\n", "line 2, column 7: a range is [first-last]"},
    {"levels block rack\nnode b[3-1]/r0 n[0-] gpus=8\n", "line 2, column 10: range ends before it starts"},
    {"levels block rack\nnode b[1-]/r0 n[0-] gpus=8\n", "line 2, column 10: an open range [first-] is only allowed in a node name"},
    {"levels block rack\nnode b[0-99999]/r[0-99999] n[0-] gpus=8\n", "line 2, column 6: the line expands to too many nodes"},
    {"levels block rack\nnode b0/r0 n[4294967295-] count=2 gpus=8\n", "line 2, column 12: the name counter passes 2^32-1"},
    {"levels rack\nnode r0 n0123456789012345678901234567890123456789012345678901234567890123 gpus=1\n",
     "line 2, column 9: node name 'n0123456789012345678901234567890...' is longer than 63 bytes"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 labels=" 
     "a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,b0,b1,b2,b3,b4,b5,b6,b7,b8,b9,c0,c1,c2,c3,c4,c5,c6,c7,c8,c9,d0,d1,"
     "d2,d3,d4,d5,d6,d7,d8,d9,e0,e1,e2,e3,e4,e5,e6,e7,e8,e9,f0,f1,f2,f3,f4,f5,f6,f7,f8,f9,g0,g1,g2,g3,g4\n",
     "line 2, column 221: label 'g4': more than 64 labels"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 a b c d e f g h i j k l m\n", "line 2, column 46: more than 16 fields on a line"},
    {"levels r\nnode r[0-65535] n[0-] count=65535 gpus=1\n",
     "line 2, column 6: the line brings the topology to 4294901760 nodes, a text may declare at most 16777216"},
    {"levels r\nnode r0 a gpus=1\nnode r[0-15] n[0-] count=1048576 gpus=1\n",
     "line 3, column 6: the line brings the topology to 16777217 nodes, a text may declare at most 16777216"},
    {"levels r\nnode r0 a gpus=1\nnode r[0-1023] n[0-] count=1024 gpus=64\n",
     "line 3, column 6: the line brings the topology to 67108865 GPUs, a text may declare at most 67108864"},
    {"levels block rack\nresources cpu\nnode b0/r0 n0 gpus=8 cpu=4294967296\n",
     "line 3, column 26: number '4294967296' is too large"},
    {"levels block rack\nresources cpu\nnode b0/r0 n0 gpus=8 cpu=99999999999\n",
     "line 3, column 26: number '99999999999' is too large"},
    {"levels block rack\nresources cpu\nnode b0/r0 n0 gpus=8 cpu=-5\n",
     "line 3, column 26: '-5' is not a decimal number"},
    {"levels block rack\nresources cpu\nnode b0/r0 n0 gpus=8 cpu=1.5\n",
     "line 3, column 27: '1.5' is not a decimal number"},
    {"levels block rack\nresources cpu\nnode b0/r0 n0 gpus=8 cpu=\n", "line 3, column 26: a number is expected"},
    {"levels block rack\nresources cpu\nnode b0/r0 n0 gpus=8 nic=5\n", "line 3, column 22: unknown property 'nic'"},
    {"levels block rack\nnode b0/r0 n0 gpus=8 cpu=1\nresources cpu\n", "line 2, column 22: unknown property 'cpu'"},
    {"levels block rack\nresources cpu\nnode b0/r0 n0 gpus=8 cpu=1 cpu=2\n",
     "line 3, column 28: property 'cpu' given twice"},
    {"levels block rack\nresources cpu gpus\n", "line 2, column 15: resource name 'gpus' is reserved (a node key)"},
    {"levels block rack\nresources count\n", "line 2, column 11: resource name 'count' is reserved (a node key)"},
    {"levels block rack\nresources cp!u\n", "line 2, column 13: unexpected character '!' in a name"},
    {"levels block rack\nresources a b c d e f g h i\n", "line 2, column 27: resource 'i': more than 8 resources"},
    {"levels block rack\nresources a b c d\nresources e f g h a i\n",
     "line 3, column 21: resource 'i': more than 8 resources"},
    {"levels rack\n", "end of text: no 'node' line"},
    {"# nothing\n", "end of text: no 'levels' line"},
};

Test(topo_text, every_error_names_line_and_column)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        gpusched_topo *t = NULL;
        char err[256];
        int rc = gpusched_topo_parse(bad_cases[i].text, strlen(bad_cases[i].text), NULL, &t, err, sizeof err);
        cr_expect_eq(rc, GPUSCHED_EPARSE, "case %zu: %s", i, gpusched_err_name(rc));
        cr_expect_str_eq(err, bad_cases[i].msg, "case %zu: %s", i, err);
        cr_assert_null(t);
    }
}

Test(topo_text, nodes_without_gpus)
{
    static const char text[] = "levels block rack\nresources cpu memory\n"
                               "node b0/r0 cpu0 gpus=0 cpu=96000 memory=393216\n"
                               "node b0/r0 g0 gpus=8 cpu=64000\n";
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, sizeof text - 1, NULL, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_topo_node_count(t), 2);
    cr_assert_eq(gpusched_topo_gpu_count(t), 8);
    uint32_t n;
    cr_assert_eq(gpusched_topo_node_find(t, "cpu0", &n), 0);
    cr_assert_eq(gpusched_topo_node_gpus(t, n), 0);
    cr_assert_eq(gpusched_topo_node_resource(t, n, 0), 96000);
    /* Export and parse again: the 0-GPU node comes back. */
    char buf[1024];
    size_t len;
    cr_assert_eq(gpusched_topo_export(t, buf, sizeof buf, &len), 0);
    gpusched_topo *back = NULL;
    cr_assert_eq(gpusched_topo_parse(buf, len, NULL, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_topo_node_find(back, "cpu0", &n), 0);
    cr_assert_eq(gpusched_topo_node_gpus(back, n), 0);
    gpusched_topo_unref(back);
    gpusched_topo_unref(t);
    /* A topology needs one GPU. */
    static const char none[] = "levels block rack\nnode b0/r0 n0 gpus=0\n";
    t = NULL;
    cr_assert_eq(gpusched_topo_parse(none, sizeof none - 1, NULL, &t, err, sizeof err), GPUSCHED_EPARSE);
    cr_assert_str_eq(err, "end of text: every node has 0 GPUs (a topology needs one)");
    cr_assert_null(t);
    /* Through a builder, freezing says so. */
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    cr_assert_eq(gpusched_topo_builder_parse(b, none, sizeof none - 1), 0);
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), GPUSCHED_ESTATE);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "the topology has no GPU (every node has 0)");
    gpusched_topo_builder_free(b);
}

Test(topo_text, failed_parse_leaves_the_builder_unchanged)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *good = "levels block rack\nlabels ib\nnode b0/r0 n0 gpus=8 class=h100 labels=ib\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, good, strlen(good)), 0);
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        /* Prepend good lines that add domains, classes and labels, so the
         * rollback has something to undo. */
        char text[1024];
        const char *body = strchr(bad_cases[i].text, '\n');
        body = body ? body + 1 : "";
        snprintf(text, sizeof text,
                 "levels block rack\nclasses zz\nnode b9/r[0-40] x[0-] gpus=1 class=q labels=new\n%s%s",
                 body, strstr(body, "node") ? "" : "frob\n");
        int rc = gpusched_topo_builder_parse(b, text, strlen(text));
        cr_assert_eq(rc, GPUSCHED_EPARSE, "case %zu", i);
        cr_assert(strstr(gpusched_topo_builder_errmsg(b), "line "), "%s", gpusched_topo_builder_errmsg(b));
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
    gpusched_topo *ref = parse_ok(good);
    topo_assert_equal(t, ref);
    cr_assert_eq(gpusched_topo_domain_count(t, 0), 1);
    gpusched_topo_unref(t);
    gpusched_topo_unref(ref);
    /* After all those failures the builder still takes good text. */
    const char *more = "levels block rack\nnode b1/r0 n1 gpus=2\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, more, strlen(more)), 0);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "");
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
    cr_assert_eq(gpusched_topo_node_count(t), 2);
    gpusched_topo_unref(t);
    gpusched_topo_builder_free(b);
}

Test(topo_text, builder_levels_then_text_without_levels)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *lv[] = {"rack"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 1, lv), 0);
    const char *text = "node r0 n0 gpus=8\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, text, strlen(text)), 0);
    cr_assert_eq(gpusched_topo_builder_parse(b, "", 0), 0);
    cr_assert_eq(gpusched_topo_builder_parse(b, NULL, 0), 0);
    cr_assert_eq(gpusched_topo_builder_parse(b, NULL, 3), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_builder_parse(NULL, text, 3), GPUSCHED_EINVAL);
    gpusched_topo_builder_free(b);
    cr_assert_eq(gpusched_topo_parse(text, strlen(text), NULL, NULL, NULL, 0), GPUSCHED_EINVAL);
}

Test(topo_text, text_is_not_nul_terminated)
{
    const char text[] = "levels rack\nnode r0 n0 gpus=8\nnode r0 n1 gpus=8";
    gpusched_topo *t;
    /* Cut before the last line: exactly one node. */
    cr_assert_eq(gpusched_topo_parse(text, strlen(text) - 18, NULL, &t, NULL, 0), 0);
    cr_assert_eq(gpusched_topo_node_count(t), 1);
    gpusched_topo_unref(t);
    const char nul[] = "levels rack\nnode r0 n\0 gpus=8\n";
    char err[256];
    cr_assert_eq(gpusched_topo_parse(nul, sizeof nul - 1, NULL, &t, err, sizeof err), GPUSCHED_EPARSE);
    cr_assert_str_eq(err, "line 2, column 10: unexpected byte 0x00 in a name");
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
    gpusched_topo_unref(c->t);
}

Test(topo_text, allocation_failures)
{
    struct parse_ctx c = {"levels zone rack\nclasses a b\nlabels x y\n"
                          "node z[0-2]/r[0-9] n[0-] count=3 gpus=8 class=b labels=y\n"
                          "node z0/r0 extra gpus=2\n", NULL};
    cr_assert_gt(failalloc_sweep_retry(parse_op, parse_undo, &c), 10);
}

/* A parse that runs out of memory rolls back; retrying it gives the same
 * topology as a parse that never failed. */
static int parse_twice(const gpusched_allocator *alloc, gpusched_topo **out)
{
    static const char first[] = "levels zone rack\nnode z0/r0 a gpus=1\n";
    static const char second[] = "labels x\nnode z[0-3]/r[0-4] n[0-] count=2 gpus=8 class=big labels=x\n";
    gpusched_topo_builder *b;
    int rc = gpusched_topo_builder_new(alloc, &b);
    if (rc)
        return rc;
    rc = gpusched_topo_builder_parse(b, first, strlen(first));
    if (rc == GPUSCHED_ENOMEM) {
        cr_assert_eq(b->nlevels, 0);
        rc = gpusched_topo_builder_parse(b, first, strlen(first));
    }
    if (!rc && (rc = gpusched_topo_builder_parse(b, second, strlen(second))) == GPUSCHED_ENOMEM) {
        cr_assert_eq(b->nnodes, 1);
        cr_assert_eq(b->nlabels, 0);
        cr_assert_eq(b->nclasses, 1);
        cr_assert_eq(b->lv[0].n, 1);
        rc = gpusched_topo_builder_parse(b, second, strlen(second));
    }
    if (!rc)
        rc = gpusched_topo_builder_freeze(b, out);
    gpusched_topo_builder_free(b);
    return rc;
}

static int parse_twice_op(failalloc *fa, void *ctx) { return parse_twice(&fa->a, ctx); }

static void parse_twice_undo(void *ctx)
{
    gpusched_topo *ref, **t = ctx;
    cr_assert_eq(parse_twice(NULL, &ref), 0);
    topo_assert_equal(*t, ref);
    gpusched_topo_unref(ref);
    gpusched_topo_unref(*t);
}

Test(topo_text, allocation_failure_rolls_back_and_retry_succeeds)
{
    gpusched_topo *t;
    cr_assert_gt(failalloc_sweep(parse_twice_op, parse_twice_undo, &t), 10);
}

static uint64_t fuzz_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Mutated texts (bytes replaced, inserted, deleted) parse or fail with
 * EPARSE and a positioned message, never crash, and a failed parse leaves
 * the builder as it was. */
Test(topo_text, mutated_text_fails_cleanly)
{
    static const char alphabet[] = "node levels classes labels resources gpus=count=class=labels=cpu=mem="
                                   "[]-/,#\n\t 0129az_.\r";
    const char *base = "levels zone rack\nclasses a b\nlabels x y\nresources cpu mem\n"
                       "node z[0-2]/r[0-3] n[0-] count=2 gpus=8 class=b labels=y cpu=4 mem=4294967295\n"
                       "node z0/r0 extra gpus=2 mem=9 # tail\n";
    size_t blen = strlen(base);
    uint64_t seed = 0x5851f42d4c957f2dull;
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *pre = "levels zone rack\nnode zz/rr keep gpus=1\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, pre, strlen(pre)), 0);
    for (int iter = 0; iter < 3000; iter++) {
        char text[512];
        memcpy(text, base, blen);
        size_t len = blen;
        int edits = 1 + (int)(fuzz_next(&seed) % 4);
        for (int k = 0; k < edits; k++) {
            size_t at = fuzz_next(&seed) % len;
            char c = (fuzz_next(&seed) % 8) ? alphabet[fuzz_next(&seed) % (sizeof alphabet - 1)]
                                            : (char)fuzz_next(&seed);
            switch (fuzz_next(&seed) % 3) {
            case 0:
                text[at] = c;
                break;
            case 1:
                memmove(text + at + 1, text + at, len - at);
                text[at] = c;
                len++;
                break;
            default:
                memmove(text + at, text + at + 1, len - at - 1);
                len--;
            }
        }
        uint32_t nodes = b->nnodes, classes = b->nclasses, labels = b->nlabels, res = b->nres;
        int rc = gpusched_topo_builder_parse(b, text, len);
        if (rc) {
            cr_assert_eq(rc, GPUSCHED_EPARSE, "%s", gpusched_err_name(rc));
            cr_assert_eq(strncmp(gpusched_topo_builder_errmsg(b), "line ", 5), 0, "%s",
                         gpusched_topo_builder_errmsg(b));
            cr_assert(b->nnodes == nodes && b->nclasses == classes && b->nlabels == labels && b->nres == res);
        } else {
            /* A mutation that still parses adds nodes; start over so the
             * next iteration's names are free again. */
            gpusched_topo *t;
            cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
            topo_assert_valid(t);
            gpusched_topo_unref(t);
            gpusched_topo_builder_free(b);
            cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
            cr_assert_eq(gpusched_topo_builder_parse(b, pre, strlen(pre)), 0);
        }
    }
    gpusched_topo_builder_free(b);
}

/* Issue 12: a 50-byte text whose ranged line names 2^32-2 nodes is refused
 * before the builder grows: the parse allocates what the builder needs for
 * the text's few names, not a byte per claimed node. */
Test(topo_text, ranged_line_past_the_limit_allocates_nothing_per_node)
{
    static const char text[] = "levels r\nnode r[0-65534] n[0-] count=65535 gpus=1\n";
    cr_assert_lt(sizeof text - 1, 52);
    budgetalloc ba;
    budgetalloc_init(&ba, 1u << 20);
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, sizeof text - 1, &ba.a, &t, err, sizeof err), GPUSCHED_EPARSE);
    cr_assert_str_eq(err, "line 2, column 6: the line brings the topology to 4294836225 nodes, "
                          "a text may declare at most 16777216");
    cr_assert_null(t);
    cr_assert_eq(ba.refused, 0);
    cr_assert_lt(ba.peak, 64 * 1024, "peak %zu bytes", ba.peak);
    cr_assert_eq(ba.live, 0);
}

/* The limits count the builder's nodes, however they came: a builder with
 * nodes added one by one may parse a text only up to the same totals. */
Test(topo_text, limits_count_nodes_already_in_the_builder)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *lv[] = {"r"}, *path[] = {"x"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 1, lv), 0);
    cr_assert_eq(gpusched_topo_builder_add_node(b, path, "first", 64, NULL, NULL, 0), 0);
    /* 2^20 nodes of 64 GPUs are exactly the GPU limit: with the node
     * already there, one too many. Refused before the line adds a node. */
    static const char text[] = "node r0 m gpus=1\nnode r[0-1023] n[0-] count=1024 gpus=64\n";
    cr_assert_eq(gpusched_topo_builder_parse(b, text, sizeof text - 1), GPUSCHED_EPARSE);
    cr_assert_str_eq(gpusched_topo_builder_errmsg(b), "line 2, column 6: the line brings the topology to "
                                                      "67108929 GPUs, a text may declare at most 67108864");
    cr_assert_eq(b->nnodes, 1, "the failed parse rolled back");
    gpusched_topo_builder_free(b);
}

/* Found by fuzzing: comparing a long name with a short one stored last in
 * the pool read past the pool (memcmp of the long name's length). Under
 * AddressSanitizer the pool below, allocated to its exact length, makes
 * any such read a failure. */
Test(topo_text, pool_compare_stays_inside_the_pool)
{
    gs_pool p = {malloc(6), 6, 6};
    memcpy(p.buf, "ab\0cd", 6);
    static const char longer[] = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghij";
    cr_assert(gs_pool_eq(&p, 0, "ab", 2));
    cr_assert(gs_pool_eq(&p, 3, "cd", 2));
    cr_assert_not(gs_pool_eq(&p, 3, longer, sizeof longer - 1));
    cr_assert_not(gs_pool_eq(&p, 3, "cde", 3));
    cr_assert_not(gs_pool_eq(&p, 0, "a", 1));
    cr_assert_not(gs_pool_eq(&p, 0, longer, 3));
    free(p.buf);
    /* The fuzzer's input: labels compared while the pool is nearly full. */
    static const char text[] = "labels ge0ode aaaaaaaaaCC..........................oelsde aaaaaaaaaaCC....."
                               "...........................oels p10odeodey:sabels p10ode aaaap8aaaaaaCC....";
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, sizeof text - 1, NULL, &t, err, sizeof err), GPUSCHED_EPARSE);
    cr_assert_null(t);
}

/* Found by fuzzing: labels (or classes) declared over several lines, more
 * than 15 in all, were exported on one line, past the 16 fields a line
 * holds, so the export did not parse back. They now go 15 to a line. */
Test(topo_text, many_classes_and_labels_export_over_several_lines)
{
    char text[2048];
    size_t n = 0;
    for (int line = 0; line < 3; line++) {
        n += (size_t)snprintf(text + n, sizeof text - n, "labels");
        for (int i = 0; i < 10; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, " l%d", line * 10 + i);
        n += (size_t)snprintf(text + n, sizeof text - n, "\nclasses");
        for (int i = 0; i < 12; i++)
            n += (size_t)snprintf(text + n, sizeof text - n, " c%d", line * 12 + i);
        n += (size_t)snprintf(text + n, sizeof text - n, "\n");
    }
    snprintf(text + n, sizeof text - n,
             "levels r\nnode r0 a gpus=2 class=c35 labels=l0,l29\nnode r0 b gpus=1 class=c0 labels=l16\n");
    gpusched_topo *t = parse_ok(text);
    cr_assert_eq(gpusched_topo_class_count(t), 36);
    roundtrip(t, true);
    size_t len;
    char *a = topo_export_string(t, &len);
    cr_assert_not_null(strstr(a, "\nlabels l0 l1 l2 l3 l4 l5 l6 l7 l8 l9 l10 l11 l12 l13 l14\nlabels l15 "), "%s", a);
    free(a);
    gpusched_topo_unref(t);
}

/* Found by fuzzing: the export wrote all classes (up to 255) and all labels
 * (up to 64) on one line each, which the parser refuses past 16 fields, so
 * a topology with 16 or more classes or labels did not parse back. */
Test(topo_text, export_of_many_classes_and_labels_parses_back)
{
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof text, "levels rack\n");
    for (int c = 0; c < 255; c++)
        n += (size_t)snprintf(text + n, sizeof text - n, "classes c%d\n", c);
    n += (size_t)snprintf(text + n, sizeof text - n, "labels");
    for (int l = 0; l < 15; l++)
        n += (size_t)snprintf(text + n, sizeof text - n, " l%d", l);
    for (int l = 15; l < 64; l++)
        n += (size_t)snprintf(text + n, sizeof text - n, "\nlabels l%d", l);
    n += (size_t)snprintf(text + n, sizeof text - n, "\nnode r0 a gpus=1 class=c254 labels=l0,l63\n");
    cr_assert_lt(n, sizeof text);
    gpusched_topo *t = parse_ok(text);
    cr_assert_eq(gpusched_topo_class_count(t), 255);
    cr_assert_eq(gpusched_topo_label_count(t), 64);
    size_t len;
    cr_assert_eq(gpusched_topo_export(t, NULL, 0, &len), GPUSCHED_ERANGE);
    char *out = malloc(len + 1);
    cr_assert_eq(gpusched_topo_export(t, out, len + 1, &len), 0);
    cr_assert_not_null(strstr(out, "\nclasses c0 c1 c2 c3 c4 c5 c6 c7 c8 c9 c10 c11 c12 c13 c14\nclasses c15 "),
                       "%s", out);
    cr_assert_not_null(strstr(out, " l59\nlabels l60 l61 l62 l63\n"), "%s", out);
    gpusched_topo *back = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(out, len, NULL, &back, err, sizeof err), 0, "%s", err);
    topo_assert_equal(t, back);
    free(out);
    gpusched_topo_unref(back);
    gpusched_topo_unref(t);
}
