/* The trace simulator's core: a job trace (read from CSV or generated),
 * replayed event by event on a cluster through gpusched_sched under one of
 * three policies, and the figures of the run. Shared by the driver
 * (gpusched-sim.c) and the bench (sched.sim.jobs_per_s). Uses the public
 * API only. doc/sched-sim.md describes the trace format and the figures. */
#ifndef GS_SIMCORE_H
#define GS_SIMCORE_H

#include <stdint.h>
#include <stdio.h>

#include <gpusched/gpusched.h>

#define SIM_MAX_QUEUES 256

/* One job of a trace. Shapes: pods of `pod_gpus` (0: any split), in one
 * lowest-level domain when `in_rack`; or whole nodes in slices of
 * `slice_gpus`, each slice in one lowest-level domain. */
typedef struct sim_job {
    int64_t submit;
    int64_t duration;   /* actual run time */
    int64_t limit;      /* declared limit (>= duration), the expected run time */
    uint32_t queue;
    uint32_t gpus;
    uint32_t pod_gpus;
    uint32_t slice_gpus;
    uint8_t whole, in_rack;
    int32_t priority;
} sim_job;

typedef struct sim_trace {
    sim_job *jobs;      /* by submit time */
    uint32_t n;
    uint32_t nqueues;
    char names[SIM_MAX_QUEUES][32];
} sim_trace;

enum { SIM_FIFO = 0, SIM_EASY = 1, SIM_FULL = 2 };

#define SIM_BUCKETS 200

typedef struct sim_queue_figs {
    uint32_t jobs;
    double wait_p50, wait_p99, jct_mean;
    double gpu_time, entitled;  /* GPU-seconds received, and its max-min fair entitlement */
} sim_queue_figs;

typedef struct sim_result {
    uint32_t jobs, started, preemptions, cycles;
    uint64_t evaluations;       /* starts + waits over all cycles */
    double span;                /* first submit to last submit */
    double util;                /* busy GPU-time / (GPUs x span), while jobs arrive */
    double wait_p50, wait_p99, jct_mean;
    double big_wait_p50, big_wait_p99;  /* gangs of 256 GPUs and more */
    uint32_t big_jobs;
    double jain;                /* of received / entitled over queues */
    double cycle_s, wall_s;     /* time in cycles, and in the whole run */
    double util_t[SIM_BUCKETS]; /* utilization per time bucket */
    double bucket_s;
    sim_queue_figs q[SIM_MAX_QUEUES];
} sim_result;

/* Reads a CSV trace (header "submit,queue,gpus,shape,duration,limit,priority";
 * shape "any", "pods:N", "pods:N@rack" or "nodes/S"). 0 or -1 with `err`. */
int sim_trace_read(const char *path, sim_trace *tr, char *err, size_t errlen);
/* Writes a trace as CSV. */
int sim_trace_write(const char *path, const sim_trace *tr);
/* A synthetic trace for an NVL72 cluster (nodes of 4 GPUs, racks of 72):
 * `njobs` jobs over `nqueues` queues, sizes and run times calibrated to
 * the Acme traces (doc/sched-sim.md), arrivals for an offered load of
 * `load` (1.0: the cluster's GPU-time), seeded. */
void sim_trace_generate(sim_trace *tr, uint32_t njobs, uint32_t nqueues, uint64_t cluster_gpus, double load,
                        uint64_t seed);
void sim_trace_free(sim_trace *tr);

/* Scheduler parameters set after a policy's own (gpusched-sim --set), to
 * study one policy's variants on the same trace. */
#define SIM_MAX_OVERRIDES 8
typedef struct sim_overrides {
    uint32_t n;
    uint32_t param[SIM_MAX_OVERRIDES]; /* GPUSCHED_SCHED_PARAM_* */
    int64_t value[SIM_MAX_OVERRIDES];
} sim_overrides;

/* Parses "name=value" (name: a GPUSCHED_SCHED_PARAM_* name in lower case
 * without the prefix, such as resv_depth or preempt) into `o`; 0 or -1. */
int sim_override_parse(sim_overrides *o, const char *text);

/* Replays `tr` on a fresh cluster of `topo` under `policy`, with `over`
 * (may be NULL) applied after the policy's parameters. 0, or -1 with
 * `err`. */
int sim_run(gpusched_topo *topo, const sim_trace *tr, int policy, const sim_overrides *over, sim_result *res,
            char *err, size_t errlen);
/* The result as one JSON object. */
void sim_result_json(FILE *f, const sim_trace *tr, const sim_result *res, const char *policy);

extern const char *const sim_policy_names[3];

#endif
