/* gpusched-sim: replays a job trace on a cluster under the FIFO + first
 * fit, priority + EASY backfill and full-cycle policies and prints the
 * figures of each as JSON (doc/sched-sim.md). The Python front-end
 * (examples/python/sched_sim.py) generates calibrated traces, runs this
 * and draws the pictures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcore.h"

static int usage(void)
{
    fprintf(stderr,
            "usage: gpusched-sim [--blocks N | --preset NAME] (--trace FILE | --generate JOBS [--queues Q]\n"
            "                    [--load L] [--seed S] [--write-trace FILE]) [--policy fifo|easy|full|all]\n"
            "                    [--set NAME=VALUE]...\n"
            "  --blocks N   NVL72 cluster of N blocks of 56 racks x 18 nodes x 4 GPUs (default 16: 64,512 GPUs)\n"
            "  --set        a scheduler parameter after the policy's own: half_life, resv_depth, order, strict,\n"
            "               quotas, preempt, min_runtime, age_limit,\n"
            "               preempt_max_gpus, large_gpus, keep_resv (for example --set resv_depth=8)\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *trace = NULL, *preset = NULL, *policy = "all", *write = NULL;
    uint32_t blocks = 16, njobs = 0, nqueues = 10;
    double load = 1.0;
    uint64_t seed = 1;
    sim_overrides over = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help"))
            return usage() - 2;
        if (!v)
            return usage();
        if (!strcmp(a, "--blocks"))
            blocks = (uint32_t)atoi(v);
        else if (!strcmp(a, "--preset"))
            preset = v;
        else if (!strcmp(a, "--trace"))
            trace = v;
        else if (!strcmp(a, "--generate"))
            njobs = (uint32_t)atoi(v);
        else if (!strcmp(a, "--queues"))
            nqueues = (uint32_t)atoi(v);
        else if (!strcmp(a, "--load"))
            load = atof(v);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--policy"))
            policy = v;
        else if (!strcmp(a, "--write-trace"))
            write = v;
        else if (!strcmp(a, "--set")) {
            if (sim_override_parse(&over, v)) {
                fprintf(stderr, "gpusched-sim: --set %s: expected NAME=INTEGER with a known name\n", v);
                return usage();
            }
        }
        else
            return usage();
        i++;
    }
    if ((!trace) == (!njobs) || !blocks || !nqueues || nqueues > SIM_MAX_QUEUES || load <= 0)
        return usage();
    char err[256];
    gpusched_topo *topo = NULL;
    int rc;
    if (preset) {
        rc = gpusched_topo_preset(preset, NULL, &topo, err, sizeof err);
    } else {
        static const char *lv[] = {"zone", "block", "rack"};
        const uint32_t fan[] = {1, blocks, 56, 18};
        rc = gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &topo, err, sizeof err);
    }
    if (rc) {
        fprintf(stderr, "gpusched-sim: %s\n", err);
        return 1;
    }
    sim_trace tr;
    if (trace) {
        if (sim_trace_read(trace, &tr, err, sizeof err)) {
            fprintf(stderr, "gpusched-sim: %s\n", err);
            gpusched_topo_unref(topo);
            return 1;
        }
    } else {
        sim_trace_generate(&tr, njobs, nqueues, gpusched_topo_gpu_count(topo), load, seed);
    }
    if (write && sim_trace_write(write, &tr)) {
        fprintf(stderr, "gpusched-sim: cannot write %s\n", write);
        return 1;
    }
    sim_result *res = malloc(sizeof *res);
    int first = 1, status = 0;
    printf("[");
    for (int p = 0; p < 3; p++) {
        if (strcmp(policy, "all") && strcmp(policy, sim_policy_names[p]))
            continue;
        if (sim_run(topo, &tr, p, &over, res, err, sizeof err)) {
            fprintf(stderr, "gpusched-sim: %s: %s\n", sim_policy_names[p], err);
            status = 1;
            continue;
        }
        printf("%s", first ? "" : ",\n");
        sim_result_json(stdout, &tr, res, sim_policy_names[p]);
        first = 0;
    }
    printf("]\n");
    if (first && !status) {
        fprintf(stderr, "gpusched-sim: unknown policy %s\n", policy);
        status = 2;
    }
    free(res);
    sim_trace_free(&tr);
    gpusched_topo_unref(topo);
    return status;
}
