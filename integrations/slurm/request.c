/* A pending Slurm job as a gang placement request (doc/slurm.md, "Jobs"):
 * --gpus=N is N GPUs anywhere; -N n --gres=gpu:g is n nodes of g GPUs
 * (whole nodes when g is a node's GPU count); --switches=1 keeps the gang
 * in one leaf switch (rack); --constraint features are required labels;
 * the comment's "gpusched:" options add slices and required levels. */
#include "gss.h"

#include <stdlib.h>
#include <string.h>

uint32_t gss_tres_gpus(const char *tres)
{
    return gss_gres_gpus(tres);
}

static int level_of(const gss_state *s, const char *name, uint32_t *level, gss_request *r)
{
    if (gpusched_topo_level_find(s->topo, name, level) == 0)
        return 0;
    snprintf(r->error, sizeof r->error, "no topology level named \"%s\"", name);
    return -1;
}

/* "gpusched: slice=72@rack required=block": up to two slices and a
 * required or preferred level, before any " | " (comment.c). */
static int comment_options(const gss_state *s, const slurm_job_info_t *j, gss_request *r)
{
    char buf[512];
    size_t n = gss_comment_user_part(j->comment);
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, j->comment ? j->comment : "", n);
    buf[n] = 0;
    char *p = strstr(buf, "gpusched:");
    if (!p)
        return 0;
    uint32_t nslices = 0;
    for (char *save = NULL, *tok = strtok_r(p + 9, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        char *at = strchr(tok, '@');
        if (strncmp(tok, "slice=", 6) == 0 && at && nslices < GPUSCHED_MAX_SLICES) {
            *at = 0;
            r->req.slice_gpus[nslices] = (uint32_t)strtoul(tok + 6, NULL, 10);
            if (level_of(s, at + 1, &r->req.slice_level[nslices++], r) < 0)
                return -1;
        } else if (strncmp(tok, "required=", 9) == 0) {
            if (level_of(s, tok + 9, &r->req.required_level, r) < 0)
                return -1;
        } else if (strncmp(tok, "preferred=", 10) == 0) {
            if (level_of(s, tok + 10, &r->req.preferred_level, r) < 0)
                return -1;
        } else {
            snprintf(r->error, sizeof r->error, "comment option \"%s\" not understood", tok);
            return -1;
        }
    }
    return 0;
}

/* --constraint=a&b (or a,b): every node used carries every feature. */
static int features(const gss_state *s, const slurm_job_info_t *j, gss_request *r)
{
    if (!j->features || !*j->features)
        return 0;
    if (strpbrk(j->features, "|[]*")) {
        snprintf(r->error, sizeof r->error, "constraint \"%s\": only a&b&... is supported", j->features);
        return -1;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", j->features);
    for (char *save = NULL, *tok = strtok_r(buf, "&,", &save); tok; tok = strtok_r(NULL, "&,", &save)) {
        uint32_t bit;
        if (gpusched_topo_label_find(s->topo, tok, &bit) < 0) {
            snprintf(r->error, sizeof r->error, "no node has feature \"%s\"", tok);
            return -1;
        }
        r->req.labels_required |= 1ull << bit;
    }
    return 0;
}

static uint32_t largest_node(const gpusched_topo *t)
{
    uint32_t best = 0, n = gpusched_topo_node_count(t);
    for (uint32_t i = 0; i < n; i++)
        if (gpusched_topo_node_gpus(t, i) > best)
            best = gpusched_topo_node_gpus(t, i);
    return best;
}

/* Returns 0 with a request, 1 for a job that asks for no GPU, -1 with
 * r->error for a job that cannot be expressed. */
int gss_request_from_job(const gss_state *s, const slurm_job_info_t *j, gss_request *r)
{
    gpusched_place_request init = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job jinit = GPUSCHED_JOB_INIT;
    r->req = init;
    r->job = jinit;
    r->error[0] = 0;
    r->nodes_wanted = 0;
    r->job.id = j->job_id;
    r->job.priority = gss_job_priority(j);
    r->job.flags = j->requeue ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
    r->req.job = &r->job;
    uint32_t per_job = gss_tres_gpus(j->tres_per_job);
    uint32_t per_node = gss_tres_gpus(j->tres_per_node);
    if (per_job) {
        r->req.gpus = per_job;
        r->req.split = GPUSCHED_SPLIT_ANY;
    } else if (per_node) {
        uint32_t n = j->num_nodes ? j->num_nodes : 1;
        r->nodes_wanted = n;
        r->req.gpus = n * per_node;
        r->req.pod_gpus = per_node;
        r->req.split = per_node == largest_node(s->topo) ? GPUSCHED_SPLIT_WHOLE_NODES : GPUSCHED_SPLIT_PODS;
    } else {
        return 1;
    }
    /* --switches=1: one leaf switch, the lowest level of the tree. */
    if (j->req_switch == 1)
        r->req.required_level = gpusched_topo_level_count(s->topo) - 1;
    if (features(s, j, r) < 0 || comment_options(s, j, r) < 0)
        return -1;
    return 0;
}
