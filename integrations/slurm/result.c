/* Node lists by name, as Slurm's node lists take them: a placement
 * result's, or a committed job's. */
#include "gss.h"

static void names(const gss_state *s, const uint32_t *nodes, uint32_t n, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        char name[GPUSCHED_MAX_NAME + 1];
        if (gpusched_topo_node_name(s->topo, nodes[i], name, sizeof name) == 0 && len + sizeof name + 1 < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", name);
    }
}

/* "b0r0n0,b0r0n1": the result's nodes, comma separated, in node order. */
void gss_result_nodes(const gss_state *s, char *buf, size_t cap, uint32_t *count)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n = 0;
    gpusched_place_result_nodes(s->res, &nodes, &masks, &n);
    names(s, nodes, n, buf, cap);
    *count = n;
}

/* The same for a job of the cluster. */
void gss_job_nodes(gss_state *s, uint64_t id, char *buf, size_t cap, uint32_t *count)
{
    const uint32_t *nodes = NULL;
    const uint64_t *masks;
    uint32_t n = 0;
    if (gpusched_cluster_job_allocation(s->cluster, id, &nodes, &masks, &n, NULL) < 0)
        n = 0;
    names(s, nodes, n, buf, cap);
    *count = n;
}
