/* Loads the Alibaba OpenB GPU node list (1,213 real nodes, cite Weng et
 * al., "Beware of Fragmentation", USENIX ATC'23) into a topology through
 * the public builder and prints its shape per GPU model.
 *
 * Grouping: one level "rack", 16 nodes per rack in file order; nodes with
 * 0 GPUs are skipped.
 *
 * usage: topo-openb [openb_node_list_gpu_node.csv]
 * (default: $GPUSCHED_DATA_DIR/openb/..., else tests/data/openb/... from the
 * repository root) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#define RACK_NODES 16

static int add_rows(FILE *fp, gpusched_topo_builder *b)
{
    char line[512];
    if (!fgets(line, sizeof line, fp))
        return GPUSCHED_EPARSE;
    unsigned kept = 0;
    while (fgets(line, sizeof line, fp)) {
        line[strcspn(line, "\r\n")] = '\0';
        /* sn,cpu_milli,memory_mib,gpu,model */
        char *sn = strtok(line, ","), *cpu = strtok(NULL, ","), *mem = strtok(NULL, ",");
        char *gpu = strtok(NULL, ","), *model = strtok(NULL, ",");
        if (!sn || !cpu || !mem || !gpu || !model)
            return GPUSCHED_EPARSE;
        unsigned gpus = (unsigned)strtoul(gpu, NULL, 10);
        if (gpus == 0)
            continue;
        char rack[32];
        snprintf(rack, sizeof rack, "rack%u", kept++ / RACK_NODES);
        const char *path[] = {rack};
        int rc = gpusched_topo_builder_add_node(b, path, sn, gpus, model, NULL, 0);
        if (rc) {
            fprintf(stderr, "%s: %s\n", sn, gpusched_topo_builder_errmsg(b));
            return rc;
        }
    }
    return 0;
}

static int load(const char *path, gpusched_topo **out)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        perror(path);
        return GPUSCHED_EIO;
    }
    static const char *const levels[] = {"rack"};
    gpusched_topo_builder *b = NULL;
    int rc = gpusched_topo_builder_new(NULL, &b);
    if (!rc)
        rc = gpusched_topo_builder_levels_set(b, 1, levels);
    if (!rc)
        rc = add_rows(fp, b);
    if (!rc)
        rc = gpusched_topo_builder_freeze(b, out);
    gpusched_topo_builder_free(b);
    fclose(fp);
    return rc;
}

int main(int argc, char **argv)
{
    char path[4096];
    const char *dir = getenv("GPUSCHED_DATA_DIR");
    if (argc > 1)
        snprintf(path, sizeof path, "%s", argv[1]);
    else
        snprintf(path, sizeof path, "%s/openb/openb_node_list_gpu_node.csv",
                 dir && *dir ? dir : "tests/data");
    gpusched_topo *t = NULL;
    int rc = load(path, &t);
    if (rc) {
        fprintf(stderr, "%s: %s\n", path, gpusched_strerror(rc));
        return 1;
    }
    printf("%s\n", path);
    printf("%u nodes, %llu GPUs, %u racks of up to %d nodes, %zu bytes\n", gpusched_topo_node_count(t),
           (unsigned long long)gpusched_topo_gpu_count(t), gpusched_topo_domain_count(t, 0), RACK_NODES,
           gpusched_topo_memory_bytes(t));
    printf("%-10s %6s %6s\n", "model", "nodes", "gpus");
    for (uint32_t c = 0; c < gpusched_topo_class_count(t); c++) {
        unsigned nodes = 0, gpus = 0;
        for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++)
            if (gpusched_topo_node_class(t, n) == c) {
                nodes++;
                gpus += gpusched_topo_node_gpus(t, n);
            }
        printf("%-10s %6u %6u\n", gpusched_topo_class_name(t, c), nodes, gpus);
    }
    gpusched_topo_unref(t);
    return 0;
}
