/* The nodes of a placement result by name, as Slurm's node lists take them. */
#include "gss.h"

/* "b0r0n0,b0r0n1": the result's nodes, comma separated, in node order. */
void gss_result_nodes(const gss_state *s, char *buf, size_t cap, uint32_t *count)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n = 0;
    size_t len = 0;
    buf[0] = 0;
    gpusched_place_result_nodes(s->res, &nodes, &masks, &n);
    for (uint32_t i = 0; i < n; i++) {
        char name[GPUSCHED_MAX_NAME + 1];
        if (gpusched_topo_node_name(s->topo, nodes[i], name, sizeof name) == 0 && len + sizeof name + 1 < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", name);
    }
    *count = n;
}
