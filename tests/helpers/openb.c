#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openb.h"

int openb_node_list_path(char *buf, size_t cap)
{
    const char *dir = getenv("GPUSCHED_DATA_DIR");
    if (!dir || !*dir)
        return GPUSCHED_ENOENT;
    int n = snprintf(buf, cap, "%s/openb/openb_node_list_gpu_node.csv", dir);
    return n < 0 || (size_t)n >= cap ? GPUSCHED_ERANGE : 0;
}

/* Splits a CSV row of simple fields (no quoting in this file) in place. */
static int openb_fields(char *line, char **f, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line; n < max; n++) {
        f[n] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            return n + 1;
        *comma = '\0';
        p = comma + 1;
    }
    return max + 1;
}

static int openb_add_rows(FILE *fp, gpusched_topo_builder *b, const char *path)
{
    char line[512];
    if (!fgets(line, sizeof line, fp) || strncmp(line, "sn,cpu_milli,memory_mib,gpu,model", 33)) {
        fprintf(stderr, "%s: unexpected header\n", path);
        return GPUSCHED_EPARSE;
    }
    uint32_t kept = 0;
    for (unsigned row = 2; fgets(line, sizeof line, fp); row++) {
        char *f[5];
        char *end;
        if (openb_fields(line, f, 5) != 5) {
            fprintf(stderr, "%s:%u: expected 5 fields\n", path, row);
            return GPUSCHED_EPARSE;
        }
        unsigned long gpus = strtoul(f[3], &end, 10);
        if (*end || end == f[3]) {
            fprintf(stderr, "%s:%u: bad gpu count '%s'\n", path, row, f[3]);
            return GPUSCHED_EPARSE;
        }
        if (gpus == 0)
            continue;
        char rack[32];
        snprintf(rack, sizeof rack, "rack%u", kept / OPENB_RACK_NODES);
        const char *rpath[] = {rack};
        int rc = gpusched_topo_builder_add_node(b, rpath, f[0], (uint32_t)gpus, f[4], NULL, 0);
        if (rc) {
            fprintf(stderr, "%s:%u: %s\n", path, row, gpusched_topo_builder_errmsg(b));
            return rc;
        }
        kept++;
    }
    return ferror(fp) ? GPUSCHED_EIO : 0;
}

int openb_load_topology(const char *csv_path, gpusched_topo **out)
{
    FILE *fp = fopen(csv_path, "r");
    if (!fp) {
        perror(csv_path);
        return GPUSCHED_EIO;
    }
    gpusched_topo_builder *b = NULL;
    static const char *const levels[] = {"rack"};
    int rc = gpusched_topo_builder_new(NULL, &b);
    if (!rc)
        rc = gpusched_topo_builder_levels_set(b, 1, levels);
    if (!rc)
        rc = openb_add_rows(fp, b, csv_path);
    if (!rc && (rc = gpusched_topo_builder_freeze(b, out)))
        fprintf(stderr, "%s: %s\n", csv_path, gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    fclose(fp);
    return rc;
}
