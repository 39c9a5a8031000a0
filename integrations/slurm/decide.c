/* One scheduling pass over the partition's held jobs, highest priority
 * first: each is placed by the library (after requeueing the victims the
 * library chose, with preemption on), then given its node list and
 * released; a job that does not fit keeps its hold, and the library's
 * explanation goes to the log and to the job's comment. Jobs after a
 * waiting one may still go (no reservation is kept for the waiting one). */
#include "gss.h"

#include <stdlib.h>
#include <string.h>

static int by_priority(const void *a, const void *b)
{
    const slurm_job_info_t *x = *(const slurm_job_info_t *const *)a;
    const slurm_job_info_t *y = *(const slurm_job_info_t *const *)b;
    int32_t px = gss_job_priority(x), py = gss_job_priority(y);
    if (px != py)
        return px > py ? -1 : 1;
    if (x->submit_time != y->submit_time)
        return x->submit_time < y->submit_time ? -1 : 1;
    return x->job_id < y->job_id ? -1 : x->job_id > y->job_id;
}

static int ours(const gss_state *s, const slurm_job_info_t *j)
{
    if (!gss_job_is_held(j))
        return 0;
    return !s->opt->partition || (j->partition && strcmp(j->partition, s->opt->partition) == 0);
}

static int release(uint32_t job_id, const char *nodes, uint32_t count)
{
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    d.job_id = job_id;
    if (nodes) {
        /* The node list first, while the job is still held: Slurm cannot
         * start it anywhere else in between. */
        d.req_nodes = (char *)nodes;
        d.min_nodes = d.max_nodes = count;
        if (slurm_update_job(&d) != 0)
            return -1;
        slurm_init_job_desc_msg(&d);
        d.job_id = job_id;
    }
    d.priority = INFINITE;
    return slurm_update_job(&d);
}

/* Requeues every victim of the plan, held, so that each comes back to the
 * daemon's queue (a victim not started yet is only held again); stops at
 * the first failure. */
static int requeue_victims(gss_state *s, uint32_t job_id)
{
    const uint64_t *ids;
    uint32_t n;
    gpusched_preempt_plan_victims(s->plan, &ids, &n);
    for (uint32_t i = 0; i < n; i++) {
        const gss_job *v = gss_jobs_find(s, (uint32_t)ids[i]);
        /* Placed but not started: Slurm cannot requeue it, a hold does. */
        int rc = v && !v->seen_running ? gss_job_hold((uint32_t)ids[i])
                                       : slurm_requeue((uint32_t)ids[i], JOB_REQUEUE_HOLD);
        if (rc != 0) {
            gss_log("job %u: victim %llu not requeued: %s", job_id, (unsigned long long)ids[i],
                    slurm_strerror(slurm_get_errno()));
            return -1;
        }
        gss_log("job %u: requeued job %llu (preempted)", job_id, (unsigned long long)ids[i]);
        s->stats.requeued++;
    }
    return 0;
}

/* Library calls only: the decision latency the counters report. */
static int place(gss_state *s, gss_request *r, int *preempted)
{
    uint64_t t0 = gss_now_us();
    r->req.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    int rc = gpusched_placer_place(s->placer, &r->req, s->res);
    *preempted = 0;
    if (rc == GPUSCHED_ENOSPC && s->opt->preempt) {
        r->req.flags = 0;
        gpusched_place_result *why = NULL;
        /* The plan is tried on a copy of the result: if no plan exists the
         * placement's own explanation is the one to report. */
        if (gpusched_place_result_new(NULL, &why) == 0 &&
            gpusched_placer_preempt(s->placer, &r->req, why, s->plan) == 0) {
            uint64_t t1 = gss_now_us();
            int ok = requeue_victims(s, r->job.id) == 0;
            t0 += gss_now_us() - t1;
            r->req.flags = GPUSCHED_PLACE_FLAG_COMMIT;
            if (ok && gpusched_placer_preempt(s->placer, &r->req, s->res, s->plan) == 0) {
                rc = 0;
                *preempted = 1;
            }
        }
        gpusched_place_result_free(why);
    }
    gss_stats_latency(&s->stats, gss_now_us() - t0);
    return rc;
}

static void wait_reason(gss_state *s, const slurm_job_info_t *j, const char *why)
{
    char status[2200];
    snprintf(status, sizeof status, "waits: %s", why);
    if (gss_comment_set(j, status) > 0)
        gss_log("job %u: waits: %s", j->job_id, why);
    s->stats.waiting++;
}

/* A gang of n nodes x g GPUs with g below a node's GPUs: Slurm gives every
 * node g GPUs, so two pods on one node cannot be expressed. */
static int pods_fit_slurm(gss_state *s, const gss_request *r)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n = 0;
    gpusched_place_result_nodes(s->res, &nodes, &masks, &n);
    return r->nodes_wanted == 0 || n == r->nodes_wanted;
}

static void decide_one(gss_state *s, const slurm_job_info_t *j)
{
    gss_request r;
    int m = gss_request_from_job(s, j, &r);
    if (m < 0) {
        wait_reason(s, j, r.error);
        return;
    }
    if (m > 0) {
        if (release(j->job_id, NULL, 0) == 0)
            gss_log("job %u: asks for no GPU: released for Slurm to place", j->job_id);
        s->stats.released_plain++;
        return;
    }
    int preempted;
    int rc = place(s, &r, &preempted);
    if (rc == GPUSCHED_ENOSPC) {
        wait_reason(s, j, gpusched_place_result_message(s->res));
        return;
    }
    if (rc < 0) {
        wait_reason(s, j, gpusched_placer_errmsg(s->placer));
        return;
    }
    char message[1024];
    snprintf(message, sizeof message, "%s", gpusched_place_result_message(s->res));
    if (!pods_fit_slurm(s, &r)) {
        if (gss_pods_spread(s, &r) < 0) {
            wait_reason(s, j, "the pods fit only if some share a node, and Slurm gives each node of the "
                              "job the same GPU count: ask --gpus=N, or fewer nodes");
            return;
        }
        snprintf(message, sizeof message, "%u pods of %u GPUs on distinct nodes", r.nodes_wanted,
                 r.req.pod_gpus);
    }
    char all[65536], nodes[2048];
    uint32_t count;
    gss_job_nodes(s, j->job_id, all, sizeof all, &count);
    gss_hostlist_compress(all, nodes, sizeof nodes);
    char status[2200];
    snprintf(status, sizeof status, "placed on %s%s", nodes, preempted ? " (after preemption)" : "");
    gss_comment_set(j, status);
    if (release(j->job_id, nodes, count) != 0) {
        gss_log("job %u: not released: %s", j->job_id, slurm_strerror(slurm_get_errno()));
        gpusched_cluster_release(s->cluster, j->job_id);
        return;
    }
    gss_jobs_add(s, j->job_id, 0);
    gss_log("job %u: placed on %s: %s", j->job_id, nodes, message);
    if (preempted)
        s->stats.preempted++;
    else
        s->stats.placed++;
}

void gss_decide(gss_state *s, const job_info_msg_t *jobs)
{
    const slurm_job_info_t **q = malloc((jobs->record_count + 1) * sizeof *q);
    if (!q)
        return;
    uint32_t n = 0;
    for (uint32_t i = 0; i < jobs->record_count; i++)
        if (ours(s, &jobs->job_array[i]) && !gss_jobs_find(s, jobs->job_array[i].job_id))
            q[n++] = &jobs->job_array[i];
    qsort(q, n, sizeof *q, by_priority);
    for (uint32_t i = 0; i < n; i++)
        decide_one(s, q[i]);
    free(q);
}
