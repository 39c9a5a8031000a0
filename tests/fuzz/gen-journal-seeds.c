/* Writes seed journals for fuzz-journal (onto the harness's base cluster:
 * two racks of three 4-GPU nodes, jobs 1 and 2, a reservation of job 7)
 * and seed operation streams for fuzz-api-seq. Run once:
 *   gen-journal-seeds tests/fuzz/corpus */
#include <stdio.h>
#include <string.h>

#include <gpusched/gpusched.h>

static void put(const char *dir, const char *name, const void *b, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n) {
        perror(path);
        return;
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    char dir[400];
    static const char *lv[] = {"rack"};
    const uint32_t fan[] = {2, 3};
    gpusched_topo *t = NULL;
    gpusched_cluster *c = NULL;
    gpusched_placer *p = NULL;
    gpusched_place_result *res = NULL;
    if (gpusched_topo_uniform(1, lv, fan, 4, NULL, NULL, &t, NULL, 0) || gpusched_cluster_new(t, NULL, &c))
        return 1;
    gpusched_job j = GPUSCHED_JOB_INIT;
    uint32_t nodes[] = {0, 1}, n3 = 3;
    uint64_t masks[] = {0xf, 0x3};
    j.id = 1;
    gpusched_cluster_allocate(c, &j, 2, nodes, masks);
    j.id = 2;
    j.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE | GPUSCHED_JOB_FLAG_MOVABLE;
    gpusched_cluster_allocate(c, &j, 1, &nodes[1], &(uint64_t){0xc});
    gpusched_cluster_reserve(c, 7, 1, &n3, &(uint64_t){0x5});
    gpusched_placer_new(c, NULL, &p);
    gpusched_place_result_new(NULL, &res);
    gpusched_cluster_journal_start(c, NULL, NULL);
    /* Every kind of record, one after another. */
    gpusched_job g = GPUSCHED_JOB_INIT;
    g.id = 7;
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job = &g, q.gpus = 6, q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    gpusched_placer_place(p, &q, res);
    gpusched_placer_move(p, 2, GPUSCHED_PLACE_FLAG_COMMIT, res);
    j.id = 1, j.priority = 4;
    gpusched_cluster_job_update(c, &j);
    gpusched_cluster_node_health_set(c, 5, GPUSCHED_NODE_DOWN, NULL, 0, NULL);
    gpusched_cluster_release_to_resv(c, 1, 9);
    gpusched_cluster_reserve(c, 9, 1, &n3, &(uint64_t){0x2});
    gpusched_cluster_unreserve(c, 9);
    gpusched_cluster_release(c, 7);
    const void *jr;
    size_t len;
    gpusched_cluster_journal_view(c, &jr, &len);
    snprintf(dir, sizeof dir, "%s/journal", argv[1]);
    put(dir, "every-kind", jr, len);
    put(dir, "first-record", jr, len > 200 ? 120 : len);
    /* A record of fractions (version 3) onto the harness's base cluster. */
    gpusched_cluster *c2 = NULL;
    gpusched_placer *p2 = NULL;
    if (gpusched_cluster_new(t, NULL, &c2) || gpusched_placer_new(c2, NULL, &p2))
        return 1;
    j = (gpusched_job)GPUSCHED_JOB_INIT;
    j.id = 1;
    gpusched_cluster_allocate(c2, &j, 2, nodes, masks);
    gpusched_cluster_journal_start(c2, NULL, NULL);
    for (uint32_t k = 0; k < 3; k++) {
        gpusched_job f = GPUSCHED_JOB_INIT;
        f.id = 40 + k;
        gpusched_place_request fq = GPUSCHED_PLACE_REQUEST_INIT;
        fq.job = &f, fq.flags = GPUSCHED_PLACE_FLAG_COMMIT, fq.split = GPUSCHED_SPLIT_PODS;
        fq.pods = 1 + k, fq.gpu_milli = 300 + 100 * k;
        if (gpusched_placer_place(p2, &fq, res))
            return 1;
    }
    gpusched_cluster_release(c2, 41);
    gpusched_cluster_journal_view(c2, &jr, &len);
    snprintf(dir, sizeof dir, "%s/journal", argv[1]);
    put(dir, "pods-fractions", jr, len);
    gpusched_placer_free(p2);
    gpusched_cluster_unref(c2);
    /* Operation streams: a few fixed byte patterns. */
    snprintf(dir, sizeof dir, "%s/api-seq", argv[1]);
    unsigned char ops[256];
    for (int s = 0; s < 4; s++) {
        unsigned x = 2463534242u + (unsigned)s;
        for (size_t i = 0; i < sizeof ops; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            ops[i] = (unsigned char)x;
        }
        char name[32];
        snprintf(name, sizeof name, "stream-%d", s);
        put(dir, name, ops, sizeof ops);
    }
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
    return 0;
}
