/* Slurm's state into the cluster, incrementally on each poll: a node whose
 * state changed gets its new health (and the jobs hit are reported); a job
 * that started, ended or was requeued is allocated or released. GPUs of a
 * node are interchangeable here (GRES without devices, or devices Slurm
 * picks), so an allocation is mirrored by its GPU count per node. */
#include "gss.h"

#include <stdlib.h>
#include <string.h>

static uint32_t health_of(uint32_t state)
{
    uint32_t base = state & NODE_STATE_BASE;
    if (base == NODE_STATE_DOWN || base == NODE_STATE_FUTURE || base == NODE_STATE_UNKNOWN)
        return GPUSCHED_NODE_DOWN;
    if (state & (NODE_STATE_DRAIN | NODE_STATE_FAIL))
        return GPUSCHED_NODE_DRAINING;
    return GPUSCHED_NODE_UP;
}

/* Where a job hit by a node going down or draining would go now, with its
 * shape kept (a plan only: Slurm requeues or keeps the job itself). */
static void plan_repair(gss_state *s, uint64_t job_id)
{
    char all[65536], nodes[2048];
    uint32_t count;
    int rc = gpusched_placer_move(s->placer, job_id, 0, s->res);
    if (rc == 0) {
        gss_result_nodes(s, all, sizeof all, &count);
        gss_hostlist_compress(all, nodes, sizeof nodes);
        gss_log("job %llu: repair plan: to %s: %s", (unsigned long long)job_id, nodes,
                gpusched_place_result_message(s->res));
    } else if (rc == GPUSCHED_ENOSPC) {
        gss_log("job %llu: repair plan: none: %s", (unsigned long long)job_id,
                gpusched_place_result_message(s->res));
    }
}

static void report_hit(gss_state *s, const char *name, uint32_t health, const uint64_t *hit, uint32_t n)
{
    static const char *const word[] = {"up", "cordoned", "draining", "down"};
    char list[1024] = "";
    size_t len = 0;
    for (uint32_t i = 0; i < n && len + 24 < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, " %llu", (unsigned long long)hit[i]);
    gss_log("node %s: %s; jobs hit:%s", name, word[health], n ? list : " none");
    s->stats.node_events++;
    s->stats.jobs_hit += n;
    if (health != GPUSCHED_NODE_UP)
        for (uint32_t i = 0; i < n; i++)
            plan_repair(s, hit[i]);
}

void gss_mirror_nodes(gss_state *s, const node_info_msg_t *nodes)
{
    uint64_t hit[256];
    for (uint32_t i = 0; i < nodes->record_count; i++) {
        const node_info_t *ni = &nodes->node_array[i];
        uint32_t node;
        if (!ni->name || gpusched_topo_node_find(s->topo, ni->name, &node) < 0)
            continue;
        uint32_t h = health_of(ni->node_state);
        if (h == s->health[node])
            continue;
        uint32_t nhit = 0;
        if (gpusched_cluster_node_health_set(s->cluster, node, h, hit, 256, &nhit) < 0) {
            gss_log("node %s: %s", ni->name, gpusched_cluster_errmsg(s->cluster));
            continue;
        }
        s->health[node] = h;
        report_hit(s, ni->name, h, hit, nhit < 256 ? nhit : 256);
    }
}

/* A running job's GPUs per node, in node order, from Slurm's GRES detail. */
typedef struct alloc_ctx {
    gss_state *s;
    const slurm_job_info_t *j;
    uint32_t nodes[512];
    uint32_t gpus[512];
    uint32_t n;
} alloc_ctx;

static int alloc_add(void *user, const char *name, uint32_t i)
{
    alloc_ctx *a = user;
    uint32_t node, g;
    if (gpusched_topo_node_find(a->s->topo, name, &node) < 0 || a->n == 512)
        return 0;
    if (a->j->gres_detail_cnt > i)
        g = gss_gres_gpus(a->j->gres_detail_str[i]);
    else
        g = gss_tres_gpus(a->j->tres_per_node);
    if (g == 0)
        return 0;
    a->nodes[a->n] = node;
    a->gpus[a->n++] = g;
    return 0;
}

static void sort_alloc(alloc_ctx *a)
{
    for (uint32_t i = 1; i < a->n; i++)
        for (uint32_t k = i; k > 0 && a->nodes[k - 1] > a->nodes[k]; k--) {
            uint32_t x = a->nodes[k]; a->nodes[k] = a->nodes[k - 1]; a->nodes[k - 1] = x;
            x = a->gpus[k]; a->gpus[k] = a->gpus[k - 1]; a->gpus[k - 1] = x;
        }
}

/* Whether the cluster already holds the job with these counts per node. */
static int same_alloc(gss_state *s, uint32_t id, const alloc_ctx *a)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    if (gpusched_cluster_job_allocation(s->cluster, id, &nodes, &masks, &n, NULL) < 0 || n != a->n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (nodes[i] != a->nodes[i] || (uint32_t)__builtin_popcountll(masks[i]) != a->gpus[i])
            return 0;
    return 1;
}

/* Allocates the job's counts on the lowest free GPUs of each node. */
static int allocate(gss_state *s, const slurm_job_info_t *j, const alloc_ctx *a)
{
    uint64_t masks[512];
    for (uint32_t i = 0; i < a->n; i++) {
        uint64_t free_mask = 0, m = 0;
        gpusched_cluster_node_state(s->cluster, a->nodes[i], &free_mask, NULL, NULL, NULL);
        for (uint32_t k = 0; k < a->gpus[i]; k++) {
            uint64_t bit = free_mask & (~free_mask + 1);
            if (!bit)
                bit = 1ull << k; /* not free: allocate reports it */
            m |= bit;
            free_mask &= ~bit;
        }
        masks[i] = m;
    }
    gpusched_job job = GPUSCHED_JOB_INIT;
    job.id = j->job_id;
    job.priority = gss_job_priority(j);
    job.start_time = (int64_t)j->start_time;
    job.flags = j->requeue ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
    int rc = gpusched_cluster_allocate(s->cluster, &job, a->n, a->nodes, masks);
    if (rc < 0)
        gss_log("job %u: running on %s, not mirrored: %s", j->job_id, j->nodes,
                gpusched_cluster_errmsg(s->cluster));
    return rc;
}

static void mirror_running(gss_state *s, const slurm_job_info_t *j, gss_job *held)
{
    alloc_ctx a = {.s = s, .j = j};
    gss_hostlist_each(j->nodes, alloc_add, &a);
    sort_alloc(&a);
    if (held && held->seen_running)
        return;
    if (held && same_alloc(s, j->job_id, &a)) {
        held->seen_running = 1;
        return;
    }
    if (held) {
        gss_log("job %u: Slurm ran it on %s with other GPU counts than placed; mirrored as run",
                j->job_id, j->nodes);
        gpusched_cluster_release(s->cluster, j->job_id);
        gss_jobs_drop(s, j->job_id);
    }
    if (a.n && allocate(s, j, &a) == 0)
        gss_jobs_add(s, j->job_id, 1);
}

static int is_running(const slurm_job_info_t *j)
{
    uint32_t base = j->job_state & JOB_STATE_BASE;
    return base == JOB_RUNNING || base == JOB_SUSPENDED;
}

static const slurm_job_info_t *find_job(const job_info_msg_t *jobs, uint32_t id)
{
    for (uint32_t i = 0; i < jobs->record_count; i++)
        if (jobs->job_array[i].job_id == id)
            return &jobs->job_array[i];
    return NULL;
}

/* Whether any node of the job's allocation is not up. */
static int on_unhealthy_node(const gss_state *s, uint32_t id)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    if (gpusched_cluster_job_allocation(s->cluster, id, &nodes, &masks, &n, NULL) < 0)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (s->health[nodes[i]] != GPUSCHED_NODE_UP)
            return 1;
    return 0;
}

/* A placed job not started yet whose node went down or drained would wait
 * for it forever: it is held again, so that the next pass places it anew. */
static int replace_if_stuck(gss_state *s, const gss_job *held, const slurm_job_info_t *j)
{
    if (held->seen_running || !on_unhealthy_node(s, held->id))
        return 0;
    if (gss_job_hold(j->job_id) != 0)
        return 0;
    gss_log("job %u: a node it was placed on is no longer up before it started: placed again", j->job_id);
    return 1;
}

/* Whether a job the cluster holds should stay: running, or placed and
 * released by the daemon but not started by Slurm yet. */
static int keep(const gss_job *held, const slurm_job_info_t *j)
{
    if (!j)
        return 0;
    if (is_running(j))
        return 1;
    if ((j->job_state & JOB_STATE_BASE) != JOB_PENDING || (j->job_state & JOB_COMPLETING))
        return 0;
    /* Pending again after it ran, or held again: requeued. */
    return !held->seen_running && !gss_job_is_held(j);
}

void gss_mirror_jobs(gss_state *s, const job_info_msg_t *jobs)
{
    for (uint32_t i = 0; i < s->njobs;) {
        gss_job *held = &s->jobs[i];
        const slurm_job_info_t *j = find_job(jobs, held->id);
        if (keep(held, j) && !(j && !is_running(j) && replace_if_stuck(s, held, j))) {
            i++;
            continue;
        }
        gpusched_cluster_release(s->cluster, held->id);
        gss_jobs_drop(s, held->id);
    }
    for (uint32_t i = 0; i < jobs->record_count; i++) {
        const slurm_job_info_t *j = &jobs->job_array[i];
        if (is_running(j))
            mirror_running(s, j, gss_jobs_find(s, j->job_id));
    }
}
