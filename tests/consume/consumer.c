/* A program outside the project, built against an installed libgpusched by
 * each way in that tests/consume/run-consumer.sh checks (pkg-config, CMake,
 * Meson subproject). It prints one line and fails unless the headers and the
 * library it loaded agree and a placement works. */
#include <stdio.h>
#include <string.h>
#include <gpusched/gpusched.h>

int main(void)
{
    if (gpusched_version() != GPUSCHED_VERSION ||
        strcmp(gpusched_version_string(), GPUSCHED_VERSION_STRING) != 0) {
        fprintf(stderr, "headers are %s, library is %s\n", GPUSCHED_VERSION_STRING,
                gpusched_version_string());
        return 1;
    }
    gpusched_topo *topo;
    gpusched_cluster *cluster;
    gpusched_placer *placer;
    gpusched_place_result *res;
    char err[256];
    if (gpusched_topo_preset("tiny", NULL, &topo, err, sizeof err)) {
        fprintf(stderr, "preset: %s\n", err);
        return 1;
    }
    if (gpusched_cluster_new(topo, NULL, &cluster) || gpusched_placer_new(cluster, NULL, &placer) ||
        gpusched_place_result_new(NULL, &res))
        return 1;
    gpusched_place_request req = GPUSCHED_PLACE_REQUEST_INIT;
    req.gpus = 16, req.split = GPUSCHED_SPLIT_PODS, req.pod_gpus = 8, req.required_level = 1;
    int rc = gpusched_placer_place(placer, &req, res);
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n = 0;
    if (rc == 0)
        rc = gpusched_place_result_nodes(res, &nodes, &masks, &n);
    printf("libgpusched %s: 16 GPUs on %u nodes (%s)\n", gpusched_version_string(), n,
           rc == 0 ? "ok" : gpusched_strerror(rc));
    gpusched_place_result_free(res);
    gpusched_placer_free(placer);
    gpusched_cluster_unref(cluster);
    gpusched_topo_unref(topo);
    return rc == 0 && n == 2 ? 0 : 1;
}
