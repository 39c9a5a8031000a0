/* The README's first program: place a 2-rack gang on the 1M-GPU preset. */
#include <stdio.h>
#include <gpusched/gpusched.h>

int main(void)
{
    gpusched_topo *topo;
    gpusched_cluster *cluster;
    gpusched_placer *placer;
    gpusched_place_result *res;
    char err[256];
    if (gpusched_topo_preset("gb200-nvl72-1m", NULL, &topo, err, sizeof err) ||
        gpusched_cluster_new(topo, NULL, &cluster) || gpusched_placer_new(cluster, NULL, &placer) ||
        gpusched_place_result_new(NULL, &res))
        return 1;
    gpusched_job job = GPUSCHED_JOB_INIT; /* the request points to its job */
    job.id = 42;
    gpusched_place_request req = GPUSCHED_PLACE_REQUEST_INIT;
    req.job = &job, req.gpus = 144, req.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    req.slice_gpus[0] = 72, req.slice_level[0] = 2; /* 72 GPUs per rack (NVL72) */
    int rc = gpusched_placer_place(placer, &req, res);
    const uint32_t *nodes; const uint64_t *masks; uint32_t n = 0;
    if (rc == 0 && gpusched_place_result_nodes(res, &nodes, &masks, &n) == 0)
        printf("job 42: %u nodes, first %u, last %u\n", n, nodes[0], nodes[n - 1]);
    else
        printf("job 42: %s\n", gpusched_place_result_message(res));
    gpusched_place_result_free(res), gpusched_placer_free(placer);
    gpusched_cluster_unref(cluster), gpusched_topo_unref(topo);
    return rc ? 1 : 0;
}
