/* Topology scenarios: building the 1M-GPU GB200 NVL72 cluster through the
 * builder, parsing its one-line-per-node text, and its memory per GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "topo/topo-export.h"
#include "topo/topo-image.h"
#include "topo/topo-internal.h"

#define GSB_ZONES 8
#define GSB_BLOCKS 32
#define GSB_RACKS 56
#define GSB_NODES 18

/* Quick runs use one zone: the same shape, an eighth of the size. */
static uint32_t gsb_topo_zones(const gsb_ctx *b) { return gsb_quick(b) ? 1 : GSB_ZONES; }

/* The shape, and a byte count under `bytes_key` unless it is NULL. */
static void gsb_topo_params(const gsb_ctx *b, char *buf, size_t cap, const char *bytes_key, size_t bytes)
{
    int n = snprintf(buf, cap, "\"gpus\": %u, \"nodes\": %u",
                     gsb_topo_zones(b) * GSB_BLOCKS * GSB_RACKS * GSB_NODES * 4,
                     gsb_topo_zones(b) * GSB_BLOCKS * GSB_RACKS * GSB_NODES);
    if (bytes_key && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ", \"%s\": %zu", bytes_key, bytes);
}

typedef struct gsb_names {
    char z[GSB_ZONES][8], bl[GSB_BLOCKS][8], r[GSB_RACKS][8];
    char (*n)[12];
} gsb_names;

/* One builder run: every node through add_node in the given order of node
 * numbers (NULL: cluster order), then freeze, timed apart in `freeze_ns`. */
static gpusched_topo *gsb_build(const gsb_ctx *b, const gsb_names *nm, const uint32_t *order,
                                double *freeze_ns)
{
    static const char *const lv[] = {"zone", "block", "rack"};
    gpusched_topo_builder *tb;
    gpusched_topo *t = NULL;
    if (gpusched_topo_builder_new(NULL, &tb) || gpusched_topo_builder_levels_set(tb, 3, lv))
        abort();
    uint32_t nodes = gsb_topo_zones(b) * GSB_BLOCKS * GSB_RACKS * GSB_NODES;
    for (uint32_t i = 0; i < nodes; i++) {
        uint32_t k = order ? order[i] : i, rack = k / GSB_NODES;
        const char *path[] = {nm->z[rack / (GSB_BLOCKS * GSB_RACKS)], nm->bl[rack / GSB_RACKS % GSB_BLOCKS],
                              nm->r[rack % GSB_RACKS]};
        if (gpusched_topo_builder_add_node(tb, path, nm->n[k], 4, "gb200", NULL, 0))
            abort();
    }
    double t0 = gsb_now_ns();
    if (gpusched_topo_builder_freeze(tb, &t))
        abort();
    *freeze_ns = gsb_now_ns() - t0;
    gpusched_topo_builder_free(tb);
    return t;
}

/* Median build and freeze times in ms over the repetitions. */
static void gsb_build_times(gsb_ctx *b, const gsb_names *nm, const uint32_t *order, double *build_ms,
                            double *freeze_ms, size_t *bytes)
{
    int reps = gsb_reps(b);
    double total[32], freeze[32];
    for (int r = 0; r < reps; r++) {
        double t0 = gsb_now_ns();
        gpusched_topo *t = gsb_build(b, nm, order, &freeze[r]);
        total[r] = gsb_now_ns() - t0;
        *bytes = gpusched_topo_memory_bytes(t);
        gpusched_topo_unref(t);
    }
    *build_ms = gsb_median(total, (size_t)reps) / 1e6;
    *freeze_ms = gsb_median(freeze, (size_t)reps) / 1e6;
}

static void gsb_topo_build(gsb_ctx *b)
{
    gsb_names nm;
    uint32_t nodes = gsb_topo_zones(b) * GSB_BLOCKS * GSB_RACKS * GSB_NODES;
    nm.n = malloc(nodes * sizeof *nm.n);
    if (!nm.n)
        abort();
    for (uint32_t i = 0; i < GSB_ZONES; i++)
        snprintf(nm.z[i], sizeof nm.z[i], "z%u", i);
    for (uint32_t i = 0; i < GSB_BLOCKS; i++)
        snprintf(nm.bl[i], sizeof nm.bl[i], "b%u", i);
    for (uint32_t i = 0; i < GSB_RACKS; i++)
        snprintf(nm.r[i], sizeof nm.r[i], "r%u", i);
    for (uint32_t i = 0; i < nodes; i++)
        snprintf(nm.n[i], sizeof nm.n[i], "n%u", i);

    /* A fixed shuffle: the same nodes in random insertion order. */
    uint32_t *order = malloc(nodes * sizeof *order);
    if (!order)
        abort();
    for (uint32_t i = 0; i < nodes; i++)
        order[i] = i;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (uint32_t i = nodes - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t j = (uint32_t)(x % (i + 1)), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    double build_ms, freeze_ms, shuf_build_ms, shuf_freeze_ms;
    size_t stored_bytes = 0;
    gsb_build_times(b, &nm, NULL, &build_ms, &freeze_ms, &stored_bytes);
    gsb_build_times(b, &nm, order, &shuf_build_ms, &shuf_freeze_ms, &stored_bytes);
    free(order);
    int reps = gsb_reps(b);
    double preset[32];
    static const char *const lv[] = {"zone", "block", "rack"};
    const uint32_t fan[] = {gsb_topo_zones(b), GSB_BLOCKS, GSB_RACKS, GSB_NODES};
    size_t gen_bytes = 0;
    for (int r = 0; r < reps; r++) {
        gpusched_topo *t;
        double t0 = gsb_now_ns();
        if (gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &t, NULL, 0))
            abort();
        preset[r] = gsb_now_ns() - t0;
        gen_bytes = gpusched_topo_memory_bytes(t);
        gpusched_topo_unref(t);
    }
    char params[160];
    gsb_topo_params(b, params, sizeof params, NULL, 0);
    double gpus = (double)nodes * 4;
    gsb_report(b, "topo.build.gb200-nvl72-1m.ms", build_ms, "ms", params);
    gsb_report(b, "topo.freeze.gb200-nvl72-1m.ms", freeze_ms, "ms", params);
    gsb_report(b, "topo.build.gb200-nvl72-1m.shuffled.ms", shuf_build_ms, "ms", params);
    gsb_report(b, "topo.freeze.gb200-nvl72-1m.shuffled.ms", shuf_freeze_ms, "ms", params);
    gsb_report(b, "topo.preset.gb200-nvl72-1m.ms", gsb_median(preset, (size_t)reps) / 1e6, "ms", params);
    gsb_report(b, "topo.bytes_per_gpu.gb200-nvl72-1m", (double)gen_bytes / gpus, "B/GPU", params);
    gsb_report(b, "topo.bytes_per_gpu.gb200-nvl72-1m.stored_names", (double)stored_bytes / gpus, "B/GPU",
               params);
    free(nm.n);
}

/* The image a cluster snapshot embeds, for a topology with stored names
 * (the worst case: a uniform one is a few dozen bytes). */
static void gsb_topo_image(gsb_ctx *b, const gpusched_topo *t)
{
    size_t size, written, consumed;
    gs_topo_image_size(t, &size);
    uint8_t *img = malloc(size);
    gs_alloc a;
    gs_alloc_init(&a, NULL);
    int reps = gsb_reps(b);
    double wr[32], rd[32];
    for (int r = 0; r < reps; r++) {
        double t0 = gsb_now_ns();
        if (!img || gs_topo_image_write(t, img, size, &written))
            abort();
        wr[r] = (gsb_now_ns() - t0) / 1e6;
        gpusched_topo *back;
        t0 = gsb_now_ns();
        if (gs_topo_image_read(img, size, GS_TOPO_IMAGE_ANY_NODES, &a, &back, &consumed, NULL))
            abort();
        rd[r] = (gsb_now_ns() - t0) / 1e6;
        gpusched_topo_unref(back);
    }
    char params[200];
    gsb_topo_params(b, params, sizeof params, "image_bytes", size);
    gsb_report(b, "topo.image.write.gb200-nvl72-1m.stored_names.ms", gsb_median(wr, (size_t)reps), "ms", params);
    gsb_report(b, "topo.image.read.gb200-nvl72-1m.stored_names.ms", gsb_median(rd, (size_t)reps), "ms", params);
    free(img);
}

static void gsb_topo_parse(gsb_ctx *b)
{
    static const char *const lv[] = {"zone", "block", "rack"};
    const uint32_t fan[] = {gsb_topo_zones(b), GSB_BLOCKS, GSB_RACKS, GSB_NODES};
    gpusched_topo *t;
    if (gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &t, NULL, 0))
        abort();
    size_t len = 0;
    gs_topo_export_text(t, true, NULL, 0, &len);
    char *text = malloc(len + 1);
    if (!text || gs_topo_export_text(t, true, text, len + 1, &len))
        abort();
    int reps = gsb_reps(b);
    double ms[32], exp_ms[32];
    for (int r = 0; r < reps; r++) {
        gpusched_topo *p;
        double t0 = gsb_now_ns();
        if (gpusched_topo_parse(text, len, NULL, &p, NULL, 0))
            abort();
        ms[r] = (gsb_now_ns() - t0) / 1e6;
        gpusched_topo_unref(p);
        t0 = gsb_now_ns();
        gs_topo_export_text(t, true, text, len + 1, &len);
        exp_ms[r] = (gsb_now_ns() - t0) / 1e6;
    }
    char params[200];
    gsb_topo_params(b, params, sizeof params, "text_bytes", len);
    gsb_report(b, "topo.parse.gb200-nvl72-1m.ms", gsb_median(ms, (size_t)reps), "ms", params);
    gsb_report(b, "topo.export.gb200-nvl72-1m.ms", gsb_median(exp_ms, (size_t)reps), "ms", params);
    gpusched_topo *parsed;
    if (gpusched_topo_parse(text, len, NULL, &parsed, NULL, 0))
        abort();
    free(text);
    gsb_topo_image(b, parsed);
    gpusched_topo_unref(parsed);
    gpusched_topo_unref(t);
}

const gsb_scenario gsb_topo_scenarios[] = {
    {"topo.build", gsb_topo_build},
    {"topo.parse", gsb_topo_parse},
    {NULL, NULL},
};
