#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "topo/topo-image.h"
#include "topocheck.h"

static void check_level(const gpusched_topo *t, uint32_t l)
{
    uint32_t nd = t->ndom[l];
    cr_assert_gt(nd, 0);
    cr_assert_eq(t->dom_start[l][0], 0);
    cr_assert_eq(t->dom_start[l][nd], t->nnodes);
    for (uint32_t d = 0; d < nd; d++) {
        cr_assert_lt(t->dom_start[l][d], t->dom_start[l][d + 1], "level %u domain %u is empty", l, d);
        if (l + 1 < t->nlevels) {
            uint32_t c0 = t->child_start[l][d], c1 = t->child_start[l][d + 1];
            cr_assert_lt(c0, c1);
            cr_assert_eq(t->dom_start[l + 1][c0], t->dom_start[l][d]);
            cr_assert_eq(t->dom_start[l + 1][c1], t->dom_start[l][d + 1]);
            for (uint32_t c = c0; c < c1; c++)
                cr_assert_eq(t->dom_parent[l + 1][c], d);
        }
        char path[1024];
        uint32_t back;
        cr_assert_eq(gpusched_topo_domain_name(t, l, d, path, sizeof path), 0);
        cr_assert_eq(gpusched_topo_domain_find(t, l, path, &back), 0, "%s", path);
        cr_assert_eq(back, d, "%s", path);
    }
    if (l + 1 < t->nlevels)
        cr_assert_eq(t->child_start[l][nd], t->ndom[l + 1]);
}

void topo_assert_valid(const gpusched_topo *t)
{
    cr_assert_geq(t->nlevels, 1);
    uint64_t gpus = 0;
    uint32_t max = 0;
    for (uint32_t l = 0; l < t->nlevels; l++)
        check_level(t, l);
    uint32_t L = t->nlevels - 1;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        uint32_t leaf = t->node_leaf[n];
        cr_assert(t->dom_start[L][leaf] <= n && n < t->dom_start[L][leaf + 1]);
        cr_assert_eq(t->node_gpu_base[n], gpus);
        cr_assert(t->node_gpus[n] >= 1 && t->node_gpus[n] <= 64);
        cr_assert_lt(t->node_class[n], t->nclasses);
        if (t->nlabels < 64)
            cr_assert_eq(t->node_labels[n] >> t->nlabels, 0, "node %u has an unknown label", n);
        gpus += t->node_gpus[n];
        if (t->node_gpus[n] > max)
            max = t->node_gpus[n];
        char name[128];
        uint32_t back;
        cr_assert_eq(gpusched_topo_node_name(t, n, name, sizeof name), 0);
        cr_assert_eq(gpusched_topo_node_find(t, name, &back), 0, "%s", name);
        cr_assert_eq(back, n);
    }
    cr_assert_eq(t->ngpus, gpus);
    cr_assert_eq(t->max_node_gpus, max);
    /* Resources: what the cluster and the placer read directly. */
    cr_assert_leq(t->nres, GPUSCHED_MAX_RESOURCES);
    for (uint32_t r = 0; r < GPUSCHED_MAX_RESOURCES; r++) {
        if (r < t->nres) {
            cr_assert_not_null(t->res_names[r]);
            cr_assert_not_null(t->node_res[r]);
            uint32_t back;
            cr_assert_eq(gpusched_topo_resource_find(t, t->res_names[r], &back), 0);
            cr_assert_eq(back, r);
        } else {
            cr_assert_null(t->res_names[r], "resource %u past nres has a name", r);
            cr_assert_null(t->node_res[r], "resource %u past nres has capacities", r);
        }
    }
}

void topo_assert_equal(const gpusched_topo *a, const gpusched_topo *b)
{
    uint32_t L = gpusched_topo_level_count(a);
    cr_assert_eq(L, gpusched_topo_level_count(b));
    cr_assert_eq(gpusched_topo_node_count(a), gpusched_topo_node_count(b));
    cr_assert_eq(gpusched_topo_gpu_count(a), gpusched_topo_gpu_count(b));
    cr_assert_eq(gpusched_topo_class_count(a), gpusched_topo_class_count(b));
    cr_assert_eq(gpusched_topo_label_count(a), gpusched_topo_label_count(b));
    for (uint32_t c = 0; c < gpusched_topo_class_count(a); c++)
        cr_assert_str_eq(gpusched_topo_class_name(a, c), gpusched_topo_class_name(b, c));
    for (uint32_t i = 0; i < gpusched_topo_label_count(a); i++)
        cr_assert_str_eq(gpusched_topo_label_name(a, i), gpusched_topo_label_name(b, i));
    uint32_t R = gpusched_topo_resource_count(a);
    cr_assert_eq(R, gpusched_topo_resource_count(b));
    for (uint32_t r = 0; r < R; r++)
        cr_assert_str_eq(gpusched_topo_resource_name(a, r), gpusched_topo_resource_name(b, r));
    char x[1024], y[1024];
    for (uint32_t l = 0; l < L; l++) {
        cr_assert_str_eq(gpusched_topo_level_name(a, l), gpusched_topo_level_name(b, l));
        cr_assert_eq(gpusched_topo_domain_count(a, l), gpusched_topo_domain_count(b, l));
        for (uint32_t d = 0; d < gpusched_topo_domain_count(a, l); d++) {
            uint32_t f1, c1, f2, c2;
            gpusched_topo_domain_nodes(a, l, d, &f1, &c1);
            gpusched_topo_domain_nodes(b, l, d, &f2, &c2);
            cr_assert(f1 == f2 && c1 == c2);
            gpusched_topo_domain_name(a, l, d, x, sizeof x);
            gpusched_topo_domain_name(b, l, d, y, sizeof y);
            cr_assert_str_eq(x, y);
        }
    }
    for (uint32_t n = 0; n < gpusched_topo_node_count(a); n++) {
        cr_assert_eq(gpusched_topo_node_gpus(a, n), gpusched_topo_node_gpus(b, n));
        cr_assert_eq(gpusched_topo_node_class(a, n), gpusched_topo_node_class(b, n));
        cr_assert_eq(gpusched_topo_node_labels(a, n), gpusched_topo_node_labels(b, n));
        for (uint32_t r = 0; r < R; r++)
            cr_assert_eq(gpusched_topo_node_resource(a, n, r), gpusched_topo_node_resource(b, n, r),
                         "node %u resource %u", n, r);
        gpusched_topo_node_name(a, n, x, sizeof x);
        gpusched_topo_node_name(b, n, y, sizeof y);
        cr_assert_str_eq(x, y);
    }
}

char *topo_export_string(const gpusched_topo *t, size_t *len)
{
    size_t n = 0;
    cr_assert_eq(gpusched_topo_export(t, NULL, 0, &n), GPUSCHED_ERANGE);
    char *s = malloc(n + 1);
    cr_assert_eq(gpusched_topo_export(t, s, n + 1, len), 0);
    cr_assert_eq(*len, n);
    cr_assert_eq(strlen(s), n);
    return s;
}

static uint8_t *image_of(const gpusched_topo *t, size_t *size)
{
    size_t written;
    cr_assert_eq(gs_topo_image_size(t, size), 0);
    uint8_t *img = malloc(*size);
    cr_assert_eq(gs_topo_image_write(t, img, *size, &written), 0);
    cr_assert_eq(written, *size);
    return img;
}

void topo_assert_roundtrips(const gpusched_topo *t)
{
    size_t len;
    char *text = topo_export_string(t, &len);
    gpusched_topo *back;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, len, NULL, &back, err, sizeof err), 0, "%s", err);
    topo_assert_equal(t, back);
    gpusched_topo_unref(back);
    free(text);

    size_t size, size2, consumed;
    uint8_t *img = image_of(t, &size);
    gs_alloc a;
    gs_alloc_init(&a, NULL);
    cr_assert_eq(gs_topo_image_read(img, size, GS_TOPO_IMAGE_ANY_NODES, &a, &back, &consumed, NULL), 0);
    cr_assert_eq(consumed, size);
    topo_assert_valid(back);
    topo_assert_equal(t, back);
    uint8_t *img2 = image_of(back, &size2);
    cr_assert(size2 == size && !memcmp(img, img2, size), "read then write changed the image");
    gpusched_topo_unref(back);
    free(img);
    free(img2);
}
