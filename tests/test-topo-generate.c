/* Uniform topologies and presets: shape, arithmetic arrays, generated names. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "failalloc.h"
#include "topo/topo-internal.h"

Test(topo_generate, uniform_shape_and_names)
{
    const char *lv[] = {"zone", "block", "rack"};
    const uint32_t fan[] = {2, 3, 4, 5};
    gpusched_topo *t;
    char err[256];
    cr_assert_eq(gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_topo_node_count(t), 120);
    cr_assert_eq(gpusched_topo_gpu_count(t), 480);
    cr_assert_eq(gpusched_topo_domain_count(t, 0), 2);
    cr_assert_eq(gpusched_topo_domain_count(t, 1), 6);
    cr_assert_eq(gpusched_topo_domain_count(t, 2), 24);
    char buf[64];
    cr_assert_eq(gpusched_topo_domain_name(t, 2, 13, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "z1/b0/r1");
    uint32_t d, f, c;
    cr_assert_eq(gpusched_topo_domain_find(t, 2, "z1/b0/r1", &d), 0);
    cr_assert_eq(d, 13);
    cr_assert_eq(gpusched_topo_domain_find(t, 2, "z1/b0/r4", &d), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_domain_find(t, 2, "z1/b0/r01", &d), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_domain_find(t, 1, "z1/b2", &d), 0);
    cr_assert_eq(d, 5);
    cr_assert_eq(gpusched_topo_domain_nodes(t, 1, 5, &f, &c), 0);
    cr_assert_eq(f, 100);
    cr_assert_eq(c, 20);
    cr_assert_eq(gpusched_topo_node_name(t, 119, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "n119");
    cr_assert_eq(gpusched_topo_node_find(t, "n119", &d), 0);
    cr_assert_eq(d, 119);
    cr_assert_eq(gpusched_topo_node_find(t, "n120", &d), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_node_find(t, "n", &d), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_topo_node_domain(t, 119, 1, &d), 0);
    cr_assert_eq(d, 5);
    cr_assert_str_eq(gpusched_topo_class_name(t, 0), "gb200");
    for (uint32_t n = 0; n < 120; n++) {
        cr_assert_eq(t->node_leaf[n], n / 5);
        cr_assert_eq(t->node_gpu_base[n], 4 * n);
    }
    gpusched_topo_unref(t);
}

Test(topo_generate, uniform_rejects_bad_arguments)
{
    const char *lv[] = {"zone", "rack"};
    const uint32_t fan[] = {2, 0, 4};
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_uniform(2, lv, fan, 4, NULL, NULL, &t, err, sizeof err), GPUSCHED_EINVAL);
    cr_assert_str_eq(err, "fanout[1] is 0");
    const uint32_t big[] = {65536, 65536, 2};
    cr_assert_eq(gpusched_topo_uniform(2, lv, big, 4, NULL, NULL, &t, err, sizeof err), GPUSCHED_ELIMIT);
    const uint32_t many_gpus[] = {65536, 16384, 1};
    cr_assert_eq(gpusched_topo_uniform(2, lv, many_gpus, 8, NULL, NULL, &t, err, sizeof err), GPUSCHED_ELIMIT);
    const uint32_t ok[] = {2, 2, 2};
    cr_assert_eq(gpusched_topo_uniform(2, lv, ok, 65, NULL, NULL, &t, err, sizeof err), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_uniform(0, lv, ok, 8, NULL, NULL, &t, err, sizeof err), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_uniform(9, lv, ok, 8, NULL, NULL, &t, err, sizeof err), GPUSCHED_ELIMIT);
    cr_assert_eq(gpusched_topo_uniform(2, lv, ok, 8, "a b", NULL, &t, err, sizeof err), GPUSCHED_EINVAL);
    const char *dup[] = {"rack", "rack"};
    cr_assert_eq(gpusched_topo_uniform(2, dup, ok, 8, NULL, NULL, &t, err, sizeof err), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_topo_uniform(2, lv, ok, 8, NULL, NULL, NULL, err, sizeof err), GPUSCHED_EINVAL);
    cr_assert_null(t);
    cr_assert_eq(gpusched_topo_uniform(2, lv, ok, 8, NULL, NULL, &t, NULL, 0), 0);
    cr_assert_str_eq(gpusched_topo_class_name(t, 0), "default");
    gpusched_topo_unref(t);
}

Test(topo_generate, presets)
{
    cr_assert_str_eq(gpusched_topo_preset_name(0), "gb200-nvl72-1m");
    cr_assert_str_eq(gpusched_topo_preset_name(1), "h100-superpod");
    cr_assert_str_eq(gpusched_topo_preset_name(2), "tiny");
    cr_assert_null(gpusched_topo_preset_name(3));
    gpusched_topo *t;
    char err[256];
    cr_assert_eq(gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, err, sizeof err), 0);
    cr_assert_eq(gpusched_topo_gpu_count(t), 1032192);
    cr_assert_eq(gpusched_topo_node_count(t), 258048);
    cr_assert_eq(gpusched_topo_domain_count(t, 2), 14336);
    cr_assert_str_eq(gpusched_topo_level_name(t, 2), "rack");
    uint32_t f, c;
    cr_assert_eq(gpusched_topo_domain_nodes(t, 2, 14335, &f, &c), 0);
    cr_assert_eq(c, 18);
    cr_assert_eq(f, 258048 - 18);
    /* Well under 10 bytes per GPU: no string per node. */
    cr_assert_lt(gpusched_topo_memory_bytes(t), 10 * 1032192);
    gpusched_topo_unref(t);
    cr_assert_eq(gpusched_topo_preset("h100-superpod", NULL, &t, err, sizeof err), 0);
    cr_assert_eq(gpusched_topo_gpu_count(t), 16384);
    cr_assert_eq(gpusched_topo_domain_nodes(t, 1, 0, &f, &c), 0);
    cr_assert_eq(c, 32);
    gpusched_topo_unref(t);
    cr_assert_eq(gpusched_topo_preset("tiny", NULL, &t, err, sizeof err), 0);
    cr_assert_eq(gpusched_topo_gpu_count(t), 128);
    gpusched_topo_unref(t);
    cr_assert_eq(gpusched_topo_preset("huge", NULL, &t, err, sizeof err), GPUSCHED_ENOENT);
    cr_assert_str_eq(err, "no preset named 'huge'");
    cr_assert_eq(gpusched_topo_preset(NULL, NULL, &t, err, sizeof err), GPUSCHED_EINVAL);
}

static int preset_op(failalloc *fa, void *ctx)
{
    return gpusched_topo_preset("tiny", &fa->a, ctx, NULL, 0);
}

static void preset_undo(void *ctx) { gpusched_topo_unref(*(gpusched_topo **)ctx); }

Test(topo_generate, allocation_failures)
{
    gpusched_topo *t;
    cr_assert_gt(failalloc_sweep(preset_op, preset_undo, &t), 5);
}
