/* The topology from Slurm itself: the switch tree of topology/tree
 * (slurm_load_topo) gives the levels and domains, each node's GPU GRES
 * count its GPUs, its features its labels. A node under no leaf switch,
 * with no GPU, or outside the daemon's partition is left out: the daemon
 * never places on it. */
#include "gss.h"

#include <stdlib.h>
#include <string.h>

/* The GPUs of a GRES or TRES string ("gpu:4", "gpu:h100:8(S:0-1)",
 * "gres:gpu:4", "gres/gpu:2", or a list of several): the count after the
 * last ':' of the gpu entry. */
uint32_t gss_gres_gpus(const char *gres)
{
    if (!gres)
        return 0;
    const char *p = gres;
    while ((p = strstr(p, "gpu")) != NULL) {
        if (p == gres || strchr(",;:/", p[-1])) {
            size_t n = strcspn(p, ",;(");
            const char *colon = NULL;
            for (const char *q = p; q < p + n; q++)
                if (*q == ':')
                    colon = q;
            return colon ? (uint32_t)strtoul(colon + 1, NULL, 10) : 1;
        }
        p += 3;
    }
    return 0;
}

typedef struct leaf_of {
    char **node;   /* node names */
    int *sw;       /* leaf switch index per node name */
    uint32_t n, cap;
} leaf_of;

static int leaf_add(void *user, const char *name, uint32_t i)
{
    (void)i;
    leaf_of *l = user;
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 64;
        char **nn = realloc(l->node, cap * sizeof *nn);
        if (!nn)
            return -1;
        l->node = nn;
        int *ns = realloc(l->sw, cap * sizeof *ns);
        if (!ns)
            return -1;
        l->sw = ns;
        l->cap = cap;
    }
    l->node[l->n] = strdup(name);
    l->sw[l->n] = -1;
    return l->node[l->n++] ? 0 : -1;
}

/* parent[i]: the switch that lists switch i among its children, or -1. */
typedef struct parent_ctx {
    const topo_info_response_msg_t *t;
    int *parent;
    int self;
} parent_ctx;

static int parent_mark(void *user, const char *name, uint32_t i)
{
    (void)i;
    parent_ctx *c = user;
    for (uint32_t k = 0; k < c->t->record_count; k++)
        if (strcmp(c->t->topo_array[k].name, name) == 0)
            c->parent[k] = c->self;
    return 0;
}

static int level_names(const gss_options *opt, uint32_t nlevels, char names[][GPUSCHED_MAX_NAME + 1])
{
    for (uint32_t l = 0; l < nlevels; l++)
        snprintf(names[l], GPUSCHED_MAX_NAME + 1, "level%u", nlevels - 1 - l);
    if (!opt->levels)
        return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", opt->levels);
    uint32_t l = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (l < nlevels)
            snprintf(names[l++], GPUSCHED_MAX_NAME + 1, "%s", tok);
    if (l != nlevels) {
        gss_log("--levels names %u levels, Slurm's switch tree has %u", l, nlevels);
        return -1;
    }
    return 0;
}

/* Adds one node: its path from the top switch down to its leaf switch. */
static int add_node(gpusched_topo_builder *b, const topo_info_response_msg_t *t, const int *parent,
                    uint32_t nlevels, int leaf, const node_info_t *ni)
{
    const char *path[GPUSCHED_MAX_LEVELS];
    uint32_t depth = 0;
    for (int sw = leaf; sw >= 0 && depth < GPUSCHED_MAX_LEVELS; sw = parent[sw])
        path[depth++] = t->topo_array[sw].name;
    if (depth != nlevels) {
        gss_log("node %s: %u switches above it, the tree has %u levels: left out", ni->name, depth, nlevels);
        return 0;
    }
    for (uint32_t i = 0; i < depth / 2; i++) {
        const char *x = path[i];
        path[i] = path[depth - 1 - i];
        path[depth - 1 - i] = x;
    }
    const char *labels[GPUSCHED_MAX_LABELS];
    uint32_t nlabels = 0;
    char feat[1024] = "";
    if (ni->features)
        snprintf(feat, sizeof feat, "%s", ni->features);
    for (char *save = NULL, *tok = strtok_r(feat, ",", &save); tok && nlabels < GPUSCHED_MAX_LABELS;
         tok = strtok_r(NULL, ",", &save))
        labels[nlabels++] = tok;
    int rc = gpusched_topo_builder_add_node(b, path, ni->name, gss_gres_gpus(ni->gres), NULL, labels, nlabels);
    if (rc < 0)
        gss_log("node %s: %s", ni->name, gpusched_topo_builder_errmsg(b));
    return rc;
}

/* The nodes of the daemon's partition, or NULL (every node) without -p:
 * a job of the partition can only start on them. */
static int partition_nodes(const gss_options *opt, hostlist_t *out)
{
    partition_info_msg_t *parts = NULL;
    *out = NULL;
    if (!opt->partition)
        return 0;
    if (slurm_load_partitions(0, &parts, SHOW_ALL) != 0) {
        gss_log("slurm_load_partitions: %s", slurm_strerror(slurm_get_errno()));
        return -1;
    }
    for (uint32_t i = 0; i < parts->record_count && !*out; i++)
        if (parts->partition_array[i].name && strcmp(parts->partition_array[i].name, opt->partition) == 0)
            *out = slurm_hostlist_create(parts->partition_array[i].nodes ? parts->partition_array[i].nodes : "");
    slurm_free_partition_info_msg(parts);
    if (!*out)
        gss_log("partition %s: not found", opt->partition);
    return *out ? 0 : -1;
}

static int build(const gss_options *opt, const topo_info_response_msg_t *t, const node_info_msg_t *nodes,
                 gpusched_topo **out)
{
    uint32_t nsw = t->record_count, nlevels = 0;
    int *parent = malloc((nsw ? nsw : 1) * sizeof *parent);
    leaf_of leaves = {0};
    gpusched_topo_builder *b = NULL;
    hostlist_t part = NULL;
    int rc = -1;
    if (!parent)
        goto done;
    for (uint32_t i = 0; i < nsw; i++) {
        parent[i] = -1;
        if (t->topo_array[i].level + 1u > nlevels)
            nlevels = t->topo_array[i].level + 1u;
    }
    for (uint32_t i = 0; i < nsw; i++) {
        parent_ctx c = {t, parent, (int)i};
        if (gss_hostlist_each(t->topo_array[i].switches, parent_mark, &c) < 0)
            goto done;
        /* Only leaf switches list nodes as their own children; upper ones
         * repeat every node below them. */
        uint32_t before = leaves.n;
        if (t->topo_array[i].level == 0 && gss_hostlist_each(t->topo_array[i].nodes, leaf_add, &leaves) < 0)
            goto done;
        for (uint32_t k = before; k < leaves.n; k++)
            leaves.sw[k] = (int)i;
    }
    if (nlevels == 0 || nlevels > GPUSCHED_MAX_LEVELS) {
        gss_log("Slurm's switch tree has %u levels: topology/tree with topology.conf is needed", nlevels);
        goto done;
    }
    char names[GPUSCHED_MAX_LEVELS][GPUSCHED_MAX_NAME + 1];
    const char *np[GPUSCHED_MAX_LEVELS];
    if (level_names(opt, nlevels, names) < 0)
        goto done;
    for (uint32_t l = 0; l < nlevels; l++)
        np[l] = names[l];
    if (partition_nodes(opt, &part) < 0)
        goto done;
    if (gpusched_topo_builder_new(NULL, &b) < 0 || gpusched_topo_builder_levels_set(b, nlevels, np) < 0)
        goto done;
    for (uint32_t i = 0; i < nodes->record_count; i++) {
        const node_info_t *ni = &nodes->node_array[i];
        if (!ni->name || gss_gres_gpus(ni->gres) == 0 || (part && slurm_hostlist_find(part, ni->name) < 0))
            continue;
        int leaf = -1;
        for (uint32_t k = 0; k < leaves.n && leaf < 0; k++)
            if (strcmp(leaves.node[k], ni->name) == 0)
                leaf = leaves.sw[k];
        if (leaf < 0) {
            gss_log("node %s: under no leaf switch of topology.conf: left out", ni->name);
            continue;
        }
        if (add_node(b, t, parent, nlevels, leaf, ni) < 0)
            goto done;
    }
    rc = gpusched_topo_builder_freeze(b, out);
    if (rc < 0)
        gss_log("topology: %s", gpusched_topo_builder_errmsg(b));
done:
    for (uint32_t k = 0; k < leaves.n; k++)
        free(leaves.node[k]);
    free(leaves.node);
    free(leaves.sw);
    free(parent);
    if (part)
        slurm_hostlist_destroy(part);
    gpusched_topo_builder_free(b);
    return rc < 0 ? -1 : 0;
}

int gss_topology_build(const gss_options *opt, gpusched_topo **out)
{
    topo_info_response_msg_t *t = NULL;
    node_info_msg_t *nodes = NULL;
    int rc = -1;
    if (slurm_load_topo(&t) != 0) {
        gss_log("slurm_load_topo: %s", slurm_strerror(slurm_get_errno()));
        goto done;
    }
    if (slurm_load_node(0, &nodes, SHOW_ALL) != 0) {
        gss_log("slurm_load_node: %s", slurm_strerror(slurm_get_errno()));
        goto done;
    }
    rc = build(opt, t, nodes, out);
    if (rc == 0)
        gss_log("topology: %u levels, %u nodes, %llu GPUs, %u labels", gpusched_topo_level_count(*out),
                gpusched_topo_node_count(*out), (unsigned long long)gpusched_topo_gpu_count(*out),
                gpusched_topo_label_count(*out));
done:
    slurm_free_topo_info_msg(t);
    slurm_free_node_info_msg(nodes);
    return rc;
}
