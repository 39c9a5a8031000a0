/* The real OpenB node list (Alibaba, Weng et al., ATC'23) through the
 * public builder: 1,213 nodes of mixed GPU models, racks of 16 in file
 * order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "openb.h"
#include "topocheck.h"

static gpusched_topo *load(void)
{
    char path[4096];
    cr_assert_eq(openb_node_list_path(path, sizeof path), 0, "GPUSCHED_DATA_DIR is not set");
    gpusched_topo *t = NULL;
    cr_assert_eq(openb_load_topology(path, &t), 0);
    return t;
}

Test(topo_openb, shape_classes_and_racks)
{
    gpusched_topo *t = load();
    topo_assert_valid(t);
    cr_assert_eq(gpusched_topo_node_count(t), 1213);
    cr_assert_eq(gpusched_topo_gpu_count(t), 6212);
    cr_assert_eq(gpusched_topo_level_count(t), 1);
    cr_assert_eq(gpusched_topo_domain_count(t, 0), 76);
    uint32_t first, count, node, d;
    cr_assert_eq(gpusched_topo_domain_nodes(t, 0, 75, &first, &count), 0);
    cr_assert_eq(first, 1200);
    cr_assert_eq(count, 13);
    /* File order is kept: row k is node k, in rack k / 16. */
    cr_assert_eq(gpusched_topo_node_find(t, "openb-node-0000", &node), 0);
    cr_assert_eq(node, 0);
    cr_assert_eq(gpusched_topo_node_find(t, "openb-node-0500", &node), 0);
    cr_assert_eq(node, 500);
    cr_assert_eq(gpusched_topo_node_domain(t, 500, 0, &d), 0);
    cr_assert_eq(d, 500 / 16);
    char name[32];
    cr_assert_eq(gpusched_topo_domain_name(t, 0, 31, name, sizeof name), 0);
    cr_assert_str_eq(name, "rack31");
    cr_assert_str_eq(gpusched_topo_class_name(t, gpusched_topo_node_class(t, 0)), "P100");
    cr_assert_eq(gpusched_topo_node_gpus(t, 0), 2);

    /* Per model, from the published file. */
    static const struct {
        const char *model;
        uint32_t nodes, gpus;
    } want[] = {{"P100", 134, 265}, {"T4", 404, 842}, {"V100M16", 55, 195}, {"V100M32", 30, 204},
                {"G2", 549, 4392},  {"G3", 39, 312},  {"A10", 2, 2}};
    cr_assert_eq(gpusched_topo_class_count(t), 7);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint32_t cls, nodes = 0, gpus = 0;
        cr_assert_eq(gpusched_topo_class_find(t, want[i].model, &cls), 0, "%s", want[i].model);
        for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++)
            if (gpusched_topo_node_class(t, n) == cls) {
                nodes++;
                gpus += gpusched_topo_node_gpus(t, n);
            }
        cr_assert_eq(nodes, want[i].nodes, "%s", want[i].model);
        cr_assert_eq(gpus, want[i].gpus, "%s", want[i].model);
    }
    gpusched_topo_unref(t);
}

Test(topo_openb, text_and_image_round_trips)
{
    gpusched_topo *t = load();
    topo_assert_roundtrips(t);
    gpusched_topo_unref(t);
}

Test(topo_openb, missing_or_bad_file)
{
    gpusched_topo *t = NULL;
    cr_assert_eq(openb_load_topology("/nonexistent/openb.csv", &t), GPUSCHED_EIO);
    char path[] = "/tmp/gpusched-openb-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *fp = fdopen(fd, "w");
    fputs("sn,cpu_milli,memory_mib,gpu,model\nx,1,1,two,T4\n", fp);
    fclose(fp);
    cr_assert_eq(openb_load_topology(path, &t), GPUSCHED_EPARSE);
    fp = fopen(path, "w");
    fputs("sn,cpu_milli,memory_mib,gpu,model\nx,1,1,0,T4\ny,1,1,1,T4\n", fp);
    fclose(fp);
    cr_assert_eq(openb_load_topology(path, &t), 0);
    cr_assert_eq(gpusched_topo_node_count(t), 1, "0-GPU rows are skipped");
    gpusched_topo_unref(t);
    unlink(path);
}
