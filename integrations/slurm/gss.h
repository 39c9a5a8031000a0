/* gpusched-slurm: the placement brain of a Slurm partition (doc/slurm.md).
 * Shared declarations of the daemon's files, one concept per file:
 * topology.c (Slurm's switch tree and GRES into a gpusched topology),
 * mirror.c (node states and running jobs into the cluster, each poll),
 * request.c (a pending job into a placement request), decide.c (place,
 * preempt, set the node list, release), jobs.c (the jobs the cluster
 * holds; a Slurm job's priority and hold), comment.c (the job's comment),
 * pods.c (n nodes of g GPUs on distinct nodes), hostlist.c and result.c
 * (node lists), stats.c (counters), log.c, main.c. */
#ifndef GSS_H
#define GSS_H

#include <gpusched/gpusched.h>
#include <slurm/slurm.h>
#include <stdint.h>
#include <stdio.h>

/* What the daemon was told on its command line. */
typedef struct gss_options {
    const char *partition;  /* pending jobs of this partition only; NULL: all */
    const char *levels;     /* level names, top first, comma separated; NULL: level<N> */
    const char *stats_path; /* counters file, rewritten after each poll; NULL: none */
    uint32_t poll_ms;
    int preempt;            /* requeue lower-priority jobs for a gang that waits */
    int once;               /* one poll, then exit (tests, dry runs) */
} gss_options;

/* Counters (stats.c) in the text format of doc/slurm.md. */
#define GSS_LAT_BUCKETS 24  /* 1 us .. 2^23 us, powers of two */
typedef struct gss_stats {
    uint64_t polls, placed, waiting, preempted, requeued, released_plain, node_events, jobs_hit;
    uint64_t lat_bucket[GSS_LAT_BUCKETS + 1]; /* last: above the largest bound */
    uint64_t lat_count, lat_sum_us;
    uint64_t poll_last_us;
} gss_stats;

/* What the daemon remembers of a job it holds in the cluster. */
typedef struct gss_job {
    uint32_t id;
    int seen_running;       /* Slurm ran it: its allocation is Slurm's own now */
} gss_job;

typedef struct gss_state {
    const gss_options *opt;
    gpusched_topo *topo;
    gpusched_cluster *cluster;
    gpusched_placer *placer;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    uint32_t *health;       /* last health set per node */
    gss_job *jobs;          /* jobs held in the cluster (placed or mirrored) */
    uint32_t njobs, capjobs;
    gss_stats stats;
} gss_state;

/* log.c */
void gss_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* topology.c */
int gss_topology_build(const gss_options *opt, gpusched_topo **out);
uint32_t gss_gres_gpus(const char *gres);

/* hostlist.c */
typedef int (*gss_host_fn)(void *user, const char *name, uint32_t index);
int gss_hostlist_each(const char *list, gss_host_fn fn, void *user);
void gss_hostlist_compress(const char *list, char *buf, size_t cap);

/* jobs.c */
gss_job *gss_jobs_find(gss_state *s, uint32_t id);
int gss_jobs_add(gss_state *s, uint32_t id, int seen_running);
void gss_jobs_drop(gss_state *s, uint32_t id);
int32_t gss_job_priority(const slurm_job_info_t *j);
int gss_job_is_held(const slurm_job_info_t *j);
int gss_job_hold(uint32_t id);

/* mirror.c */
void gss_mirror_nodes(gss_state *s, const node_info_msg_t *nodes);
void gss_mirror_jobs(gss_state *s, const job_info_msg_t *jobs);

/* request.c */
typedef struct gss_request {
    gpusched_place_request req;
    gpusched_job job;
    uint32_t nodes_wanted;  /* Slurm's node count the placement must match; 0: any */
    char error[160];        /* why the job cannot be mapped to a request */
} gss_request;
int gss_request_from_job(const gss_state *s, const slurm_job_info_t *j, gss_request *r);
uint32_t gss_tres_gpus(const char *tres);

/* decide.c */
void gss_decide(gss_state *s, const job_info_msg_t *jobs);

/* result.c */
void gss_result_nodes(const gss_state *s, char *buf, size_t cap, uint32_t *count);
void gss_job_nodes(gss_state *s, uint64_t id, char *buf, size_t cap, uint32_t *count);

/* pods.c */
int gss_pods_spread(gss_state *s, const gss_request *r);

/* comment.c */
size_t gss_comment_user_part(const char *comment);
int gss_comment_set(const slurm_job_info_t *j, const char *status);

/* stats.c */
void gss_stats_latency(gss_stats *st, uint64_t us);
int gss_stats_write(const gss_stats *st, const char *path);
uint64_t gss_now_us(void);

#endif
