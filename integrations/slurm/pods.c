/* n nodes of g GPUs with g below a node's GPUs (-N n --gres=gpu:g): Slurm
 * gives each node of the job g GPUs, so the pods need n distinct nodes,
 * while the library's pod split packs pods onto as few nodes as it can.
 * When it packed some, the pods are spread: one pod at a time on a node
 * not used yet, inside the leaf domains (racks) of the packed placement
 * first, so the gang keeps its locality, then anywhere when the gang has
 * no required level or slices. The pods are then committed as the job. */
#include "gss.h"

#include <stdlib.h>

/* Marks the nodes outside the leaf domains the packed placement used. */
static uint32_t outside_racks(gss_state *s, uint32_t *avoid)
{
    uint32_t leaf = gpusched_topo_level_count(s->topo) - 1, n = 0, nn = gpusched_topo_node_count(s->topo);
    const uint32_t *doms;
    uint32_t ndoms = 0;
    gpusched_place_result_domains(s->res, leaf, &doms, &ndoms);
    for (uint32_t node = 0; node < nn; node++) {
        uint32_t d, in = 0;
        gpusched_topo_node_domain(s->topo, node, leaf, &d);
        for (uint32_t k = 0; k < ndoms && !in; k++)
            in = doms[k] == d;
        if (!in)
            avoid[n++] = node;
    }
    return n;
}

/* Places the pods one by one as temporary jobs; 0 when all fit. */
static int one_by_one(gss_state *s, const gss_request *r, uint32_t *avoid, uint32_t navoid, uint64_t *tmp)
{
    uint32_t pods = r->req.gpus / r->req.pod_gpus;
    for (uint32_t i = 0; i < pods; i++) {
        gpusched_job job = r->job;
        job.id = ((uint64_t)(i + 1) << 32) | r->job.id;
        gpusched_place_request q = r->req;
        q.job = &job;
        q.gpus = r->req.pod_gpus;
        q.avoid_nodes = avoid;
        q.avoid_count = navoid;
        q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        if (gpusched_placer_place(s->placer, &q, s->res) != 0) {
            for (uint32_t k = 0; k < i; k++)
                gpusched_cluster_release(s->cluster, tmp[k]);
            return -1;
        }
        const uint32_t *nodes;
        const uint64_t *masks;
        uint32_t n;
        gpusched_place_result_nodes(s->res, &nodes, &masks, &n);
        avoid[navoid++] = nodes[0];
        tmp[i] = job.id;
    }
    return 0;
}

/* The temporary pods become the job: released, then allocated together. */
static int merge(gss_state *s, const gss_request *r, const uint64_t *tmp, uint32_t pods)
{
    uint32_t *nodes = malloc(pods * sizeof *nodes);
    uint64_t *masks = malloc(pods * sizeof *masks);
    int rc = -1;
    if (nodes && masks) {
        for (uint32_t i = 0; i < pods; i++) {
            const uint32_t *pn;
            const uint64_t *pm;
            uint32_t n;
            gpusched_cluster_job_allocation(s->cluster, tmp[i], &pn, &pm, &n, NULL);
            uint32_t k = i;
            for (; k > 0 && nodes[k - 1] > pn[0]; k--) {
                nodes[k] = nodes[k - 1];
                masks[k] = masks[k - 1];
            }
            nodes[k] = pn[0];
            masks[k] = pm[0];
        }
        for (uint32_t i = 0; i < pods; i++)
            gpusched_cluster_release(s->cluster, tmp[i]);
        rc = gpusched_cluster_allocate(s->cluster, &r->job, pods, nodes, masks);
    }
    free(nodes);
    free(masks);
    return rc;
}

/* Called with the packed placement committed as the job; returns 0 with
 * the job committed on distinct nodes, or -1 with nothing committed. */
int gss_pods_spread(gss_state *s, const gss_request *r)
{
    uint32_t nn = gpusched_topo_node_count(s->topo), pods = r->req.gpus / r->req.pod_gpus;
    uint32_t *avoid = malloc((nn + pods) * sizeof *avoid);
    uint64_t *tmp = malloc(pods * sizeof *tmp);
    int rc = -1;
    if (avoid && tmp) {
        uint32_t navoid = outside_racks(s, avoid);
        gpusched_cluster_release(s->cluster, r->job.id);
        int anywhere = r->req.required_level == GPUSCHED_NONE && r->req.slice_gpus[0] == 0;
        if (one_by_one(s, r, avoid, navoid, tmp) == 0 || (anywhere && one_by_one(s, r, avoid, 0, tmp) == 0))
            rc = merge(s, r, tmp, pods);
    }
    free(avoid);
    free(tmp);
    return rc;
}
