/* Writes a topology in the text format. Uniform topologies can be written
 * as one ranged line; every topology can be written one line per node. */
#include <string.h>

#include "topo-export.h"
#include "topo-names.h"

typedef struct gs_out {
    char *buf;
    size_t cap, len;
} gs_out;

static void gs_put(gs_out *o, const char *s, size_t n)
{
    if (o->len + n <= o->cap)
        memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void gs_puts(gs_out *o, const char *s) { gs_put(o, s, strlen(s)); }

static void gs_putu(gs_out *o, uint64_t v)
{
    char tmp[24];
    size_t n = sizeof tmp;
    do {
        tmp[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    gs_put(o, tmp + n, sizeof tmp - n);
}

/* A `classes` or `labels` list, as many lines as the parser's field limit
 * needs (255 classes, 64 labels): the order, and so the indexes, survive. */
static void gs_name_lines(gs_out *o, const char *directive, char *const *names, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (i % (GS_TEXT_MAX_FIELDS - 1) == 0)
            gs_puts(o, directive);
        gs_put(o, " ", 1);
        gs_puts(o, names[i]);
        if (i % (GS_TEXT_MAX_FIELDS - 1) == GS_TEXT_MAX_FIELDS - 2 || i == n - 1)
            gs_put(o, "\n", 1);
    }
}

static void gs_header(gs_out *o, const gpusched_topo *t)
{
    gs_puts(o, "# libgpusched topology: ");
    gs_putu(o, t->nnodes);
    gs_puts(o, " nodes, ");
    gs_putu(o, t->ngpus);
    gs_puts(o, " GPUs\nlevels");
    for (uint32_t l = 0; l < t->nlevels; l++) {
        gs_put(o, " ", 1);
        gs_puts(o, t->level_names[l]);
    }
    gs_put(o, "\n", 1);
    gs_name_lines(o, "classes", t->class_names, t->nclasses);
    gs_name_lines(o, "labels", t->label_names, t->nlabels);
    gs_name_lines(o, "resources", t->res_names, t->nres);
}

static void gs_props(gs_out *o, const gpusched_topo *t, uint32_t node)
{
    gs_puts(o, " gpus=");
    gs_putu(o, t->node_gpus[node]);
    gs_puts(o, " class=");
    gs_puts(o, t->class_names[t->node_class[node]]);
    uint64_t m = t->node_labels[node];
    if (m) {
        gs_puts(o, " labels=");
        for (bool first = true; m; m &= m - 1, first = false) {
            if (!first)
                gs_put(o, ",", 1);
            gs_puts(o, t->label_names[gs_ctz64(m)]);
        }
    }
    /* Only non-zero capacities: 0 is what the parser gives a node without. */
    for (uint32_t r = 0; r < t->nres; r++) {
        if (!t->node_res[r][node])
            continue;
        gs_put(o, " ", 1);
        gs_puts(o, t->res_names[r]);
        gs_put(o, "=", 1);
        gs_putu(o, t->node_res[r][node]);
    }
    gs_put(o, "\n", 1);
}

static void gs_uniform_line(gs_out *o, const gpusched_topo *t)
{
    const uint32_t *fan = t->names->fanout;
    gs_puts(o, "node ");
    for (uint32_t l = 0; l < t->nlevels; l++) {
        if (l)
            gs_put(o, "/", 1);
        gs_put(o, t->level_names[l], 1);
        gs_puts(o, "[0-");
        gs_putu(o, fan[l] - 1);
        gs_put(o, "]", 1);
    }
    gs_puts(o, " n[0-] count=");
    gs_putu(o, fan[t->nlevels]);
    gs_props(o, t, 0);
}

/* The path of a lowest-level domain, "z0/b3/r12", into `buf`. */
static size_t gs_leaf_path(const gpusched_topo *t, uint32_t leaf, char *buf)
{
    uint32_t chain[GS_MAX_LEVELS];
    uint32_t L = t->nlevels;
    chain[L - 1] = leaf;
    for (uint32_t l = L - 1; l > 0; l--)
        chain[l - 1] = t->dom_parent[l][chain[l]];
    size_t n = 0;
    for (uint32_t l = 0; l < L; l++) {
        char tmp[16];
        size_t len;
        const char *s = gs_names_component(t, l, chain[l], tmp, &len);
        if (l)
            buf[n++] = '/';
        memcpy(buf + n, s, len);
        n += len;
    }
    return n;
}

int gs_topo_export_text(const gpusched_topo *t, bool per_node, char *buf, size_t cap, size_t *len)
{
    gs_out o = {buf, cap, 0};
    gs_header(&o, t);
    if (!per_node && t->names->kind == GS_NAMES_UNIFORM) {
        gs_uniform_line(&o, t);
    } else {
        char path[GS_MAX_LEVELS * (GPUSCHED_MAX_NAME + 1)];
        size_t plen = 0;
        uint32_t leaf = GPUSCHED_NONE;
        for (uint32_t n = 0; n < t->nnodes; n++) {
            if (t->node_leaf[n] != leaf) {
                leaf = t->node_leaf[n];
                plen = gs_leaf_path(t, leaf, path);
            }
            char tmp[16];
            size_t nlen;
            const char *name = gs_names_node(t, n, tmp, &nlen);
            gs_put(&o, "node ", 5);
            gs_put(&o, path, plen);
            gs_put(&o, " ", 1);
            gs_put(&o, name, nlen);
            gs_props(&o, t, n);
        }
    }
    *len = o.len;
    if (o.len + 1 > cap)
        return GPUSCHED_ERANGE;
    buf[o.len] = '\0';
    return 0;
}

GPUSCHED_API int gpusched_topo_export(const gpusched_topo *t, char *buf, size_t cap, size_t *len)
{
    if (!t || !len || (!buf && cap))
        return GPUSCHED_EINVAL;
    return gs_topo_export_text(t, false, buf, cap, len);
}
