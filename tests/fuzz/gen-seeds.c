/* Writes the seed corpora (tests/fuzz/corpus/<fuzzer>/) with the library's
 * own writers: texts from gpusched_topo_export, images from the image
 * writer, snapshots from gpusched_cluster_snapshot and decision logs from
 * gpusched_fairq_log_save, plus a few edge cases written out by hand.
 * Usage: gen-seeds CORPUS_DIR (the directories must exist). Run it again
 * when a format changes, and commit the result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#include "topo/topo-export.h"
#include "topo/topo-image.h"

static const char *root;

static void die(const char *what, int rc)
{
    fprintf(stderr, "gen-seeds: %s: %s\n", what, gpusched_err_name(rc));
    exit(1);
}

static void put(const char *fuzzer, const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", root, fuzzer, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "gen-seeds: cannot write %s\n", path);
        exit(1);
    }
}

static const char mixed_text[] = "# zones of uneven racks\n"
                                 "levels zone rack\n"
                                 "classes h100 a100\n"
                                 "labels ib nvme spot\n"
                                 "node z0/r[0-2] h[0-] count=3 gpus=8 class=h100 labels=ib\n"
                                 "node z1/r0 a0 gpus=4 class=a100 labels=nvme,spot\n"
                                 "node z1/r1 a1 gpus=2 class=a100\r\n"
                                 "node z1/r[2-3]x big[7-8] gpus=64\n";

/* Named resources: declared, set on a ranged line and per node, one left
 * at 0 everywhere. */
static const char resources_text[] = "levels zone rack\n"
                                     "classes h100\n"
                                     "resources cpu memory nic\n"
                                     "node z0/r[0-1] h[0-] count=2 gpus=8 class=h100 cpu=112000 memory=2097152\n"
                                     "node z1/r0 big gpus=4 memory=4294967295 cpu=1\n"
                                     "node z1/r0 bare gpus=1\n"
                                     "node z1/r1 spare gpus=2 nic=2\n";

static gpusched_topo *parse(const char *text)
{
    gpusched_topo *t;
    char err[256];
    int rc = gpusched_topo_parse(text, strlen(text), NULL, &t, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gen-seeds: %s\n", err);
        exit(1);
    }
    return t;
}

static gpusched_topo *preset(const char *name)
{
    gpusched_topo *t;
    int rc = gpusched_topo_preset(name, NULL, &t, NULL, 0);
    if (rc)
        die(name, rc);
    return t;
}

static void text_seed(const char *name, const gpusched_topo *t, bool per_node)
{
    size_t len;
    gs_topo_export_text(t, per_node, NULL, 0, &len);
    char *buf = malloc(len + 1);
    int rc = gs_topo_export_text(t, per_node, buf, len + 1, &len);
    if (rc)
        die("export", rc);
    put("topo-text", name, buf, len);
    free(buf);
}

static void image_seed(const char *name, const gpusched_topo *t)
{
    size_t len, written;
    gs_topo_image_size(t, &len);
    uint8_t *buf = malloc(len);
    int rc = gs_topo_image_write(t, buf, len, &written);
    if (rc)
        die("image", rc);
    put("topo-image", name, buf, len);
    free(buf);
}

static void snapshot_seed(const char *name, gpusched_cluster *c)
{
    size_t len;
    gpusched_cluster_snapshot(c, NULL, 0, &len);
    uint8_t *buf = malloc(len);
    int rc = gpusched_cluster_snapshot(c, buf, len, &len);
    if (rc)
        die("snapshot", rc);
    put("snapshot", name, buf, len);
    free(buf);
}

/* Jobs on the first nodes, a reservation, one node of each health. */
static gpusched_cluster *busy(gpusched_topo *t)
{
    gpusched_cluster *c;
    int rc = gpusched_cluster_new(t, NULL, &c);
    if (rc)
        die("cluster", rc);
    uint32_t nodes[] = {0, 1, 2};
    uint64_t masks[] = {0x1, 0x1, 0x1};
    for (uint32_t i = 0; i < 3; i++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = 100 + i, j.priority = (int32_t)i - 1, j.tenant = i, j.start_time = -5 + i, j.cost_hint = 7 * i;
        j.flags = i % 2 ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
        if ((rc = gpusched_cluster_allocate(c, &j, i + 1, nodes, masks)))
            die("alloc", rc);
        for (uint32_t k = 0; k < 3; k++)
            masks[k] <<= 1;
    }
    uint32_t rn = 3;
    uint64_t rm = 0x1;
    if ((rc = gpusched_cluster_reserve(c, 200, 1, &rn, &rm)))
        die("reserve", rc);
    uint64_t hit[64];
    if ((rc = gpusched_cluster_node_health_set(c, 4, GPUSCHED_NODE_DOWN, hit, 64, NULL)) ||
        (rc = gpusched_cluster_node_health_set(c, 5, GPUSCHED_NODE_DRAINING, hit, 64, NULL)) ||
        (rc = gpusched_cluster_node_health_set(c, 6, GPUSCHED_NODE_CORDONED, hit, 64, NULL)))
        die("health", rc);
    return c;
}

/* Pods holding resources and GPU fractions (snapshot version 3): two
 * fractions sharing a GPU, a gang of two 1-GPU pods, a pod without GPUs. */
static gpusched_cluster *pods_busy(gpusched_topo *t)
{
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    int rc = gpusched_cluster_new(t, NULL, &c);
    if (rc || (rc = gpusched_placer_new(c, NULL, &p)) || (rc = gpusched_place_result_new(NULL, &res)))
        die("pods cluster", rc);
    const uint32_t shapes[][4] = {{1, 0, 500, 1000}, {1, 0, 500, 1000}, {2, 1, 0, 2000}, {1, 0, 0, 3000}};
    for (uint32_t i = 0; i < 4; i++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = 300 + i;
        uint64_t amounts[1] = {shapes[i][3]};
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        q.job = &j, q.flags = GPUSCHED_PLACE_FLAG_COMMIT, q.split = GPUSCHED_SPLIT_PODS;
        q.pods = shapes[i][0], q.pod_gpus = shapes[i][1], q.gpu_milli = shapes[i][2];
        q.resources = amounts, q.resource_count = 1;
        if ((rc = gpusched_placer_place(p, &q, res))) {
            fprintf(stderr, "gen-seeds: %s\n", gpusched_placer_errmsg(p));
            die("pods", rc);
        }
    }
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    return c;
}

static void declog_seed(const char *name, int polls)
{
    gpusched_fairq *q;
    int rc = gpusched_fairq_new(3, NULL, &q);
    if (!rc)
        rc = gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_LOG, 1);
    for (int i = 0; !rc && i < polls + 2; i++) {
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        t.id = 10 + (uint64_t)i, t.tenant = (uint32_t)(i % 3), t.type = (uint32_t)(i % 2);
        t.enqueue_time = i * 0.5, t.work_size = 1 + i;
        rc = gpusched_fairq_enqueue(q, &t);
    }
    for (int i = 0; !rc && i < polls; i++) {
        uint64_t id;
        rc = gpusched_fairq_poll(q, 100 + i, ~0ull, &id, NULL);
    }
    char path[512];
    snprintf(path, sizeof path, "%s/declog/%s", root, name);
    if (rc || (rc = gpusched_fairq_log_save(q, path))) {
        fprintf(stderr, "gen-seeds: %s\n", gpusched_fairq_errmsg(q));
        die("declog", rc);
    }
    gpusched_fairq_free(q);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen-seeds CORPUS_DIR\n");
        return 2;
    }
    root = argv[1];

    gpusched_topo *mixed = parse(mixed_text), *tiny = preset("tiny"), *h100 = preset("h100-superpod");
    gpusched_topo *res = parse(resources_text);
    put("topo-text", "mixed.txt", mixed_text, sizeof mixed_text - 1);
    text_seed("mixed-export.txt", mixed, false);
    text_seed("mixed-per-node.txt", mixed, true);
    text_seed("tiny.txt", tiny, false);
    text_seed("tiny-per-node.txt", tiny, true);
    text_seed("h100-superpod.txt", h100, false);
    put("topo-text", "resources.txt", resources_text, sizeof resources_text - 1);
    text_seed("resources-export.txt", res, false);
    /* Edge cases: the issue 12 line (2^32-2 nodes in 50 bytes), a second
     * text repeating its levels, names at the 63-byte limit. */
    static const char issue12[] = "levels r\nnode r[0-65534] n[0-] count=65535 gpus=1\n";
    put("topo-text", "issue12-ranged-line.txt", issue12, sizeof issue12 - 1);
    static const char edge[] = "levels a b\nlevels a b\nclasses c\nlabels l\n"
        "node aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/b[9-10] "
        "x[4294967290-] count=2 gpus=64 class=c labels=l # comment\n";
    put("topo-text", "edge.txt", edge, sizeof edge - 1);

    image_seed("mixed.img", mixed);
    image_seed("tiny.img", tiny);
    image_seed("h100-superpod.img", h100);
    image_seed("resources.img", res);

    gpusched_cluster *c;
    int rc = gpusched_cluster_new(tiny, NULL, &c);
    if (rc)
        die("cluster", rc);
    snapshot_seed("tiny-empty.snap", c);
    gpusched_cluster_unref(c);
    c = busy(tiny);
    snapshot_seed("tiny-busy.snap", c);
    gpusched_cluster_unref(c);
    c = busy(mixed);
    snapshot_seed("mixed-busy.snap", c);
    gpusched_cluster_unref(c);
    c = busy(res);
    snapshot_seed("resources-busy.snap", c);
    gpusched_cluster_unref(c);
    c = pods_busy(res);
    snapshot_seed("pods-busy.snap", c);
    gpusched_cluster_unref(c);

    declog_seed("empty.log", 0);
    declog_seed("three.log", 3);
    declog_seed("twenty.log", 20);

    gpusched_topo_unref(mixed);
    gpusched_topo_unref(tiny);
    gpusched_topo_unref(h100);
    gpusched_topo_unref(res);
    return 0;
}
