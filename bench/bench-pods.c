/* Pods with resources and GPU fractions.
 *
 * place.openb.fill: the fill experiment of the FGD paper (Weng et al.,
 * ATC'23) on the real OpenB trace, driving the C API (doc/resources.md):
 * the 1,213 GPU nodes with their cpu, memory and GPU models; a pod list
 * shuffled with a seed and inflated with pods drawn from it until the GPU
 * asked reaches 130% of the cluster's; each pod placed once, in order,
 * never leaving; allocated milli-GPU over the cluster's, read when 100% and
 * 130% of the GPUs have arrived. Mean over seeds, per policy.
 *
 * place.pod.1m: one fractional pod with cpu and memory on a 1,032,192-GPU
 * cluster (the 1m preset's shape, nodes of 4 GPUs, 144 cores, 864 GiB),
 * 70% of its GPUs held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gpusched/gpusched.h"
#include "openb-trace.h"

typedef struct pf_pod {
    uint32_t cpu, mem, gpus, milli;
} pf_pod;

typedef struct pf_trace {
    gpusched_topo *topo;
    uint64_t cluster_milli;
    pf_pod *pods;
    uint32_t npods;
} pf_trace;

static FILE *pf_open(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/openb/%s", GSB_SOURCE_ROOT, name);
    FILE *f = fopen(path, "r");
    if (!f)
        fprintf(stderr, "bench-pods: cannot open %s\n", path);
    return f;
}

/* One level ("cluster") holding every node: the policies see all of them,
 * as the paper's scheduler does. */
static gpusched_topo *pf_nodes(uint64_t *milli)
{
    FILE *f = pf_open("openb_node_list_gpu_node.csv");
    if (!f)
        return NULL;
    gpusched_topo_builder *b;
    static const char *lv[] = {"cluster"};
    const char *path[] = {"all"};
    uint32_t cpu, mem;
    if (gpusched_topo_builder_new(NULL, &b) || gpusched_topo_builder_levels_set(b, 1, lv) ||
        gpusched_topo_builder_resource_add(b, "cpu", &cpu) || gpusched_topo_builder_resource_add(b, "memory", &mem)) {
        fclose(f);
        return NULL;
    }
    char line[512];
    *milli = 0;
    bool ok = fgets(line, sizeof line, f) != NULL; /* header */
    while (ok && fgets(line, sizeof line, f)) {
        char *fl[5];
        if (openb_fields(line, fl, 5) != 5)
            continue;
        uint32_t gpus = (uint32_t)strtoul(fl[3], NULL, 10);
        ok = gpusched_topo_builder_add_node(b, path, fl[0], gpus, fl[4], NULL, 0) == 0 &&
             gpusched_topo_builder_node_resource_set(b, fl[0], cpu, (uint32_t)strtoul(fl[1], NULL, 10)) == 0 &&
             gpusched_topo_builder_node_resource_set(b, fl[0], mem, (uint32_t)strtoul(fl[2], NULL, 10)) == 0;
        *milli += 1000ull * gpus;
    }
    fclose(f);
    gpusched_topo *t = NULL;
    if (!ok || gpusched_topo_builder_freeze(b, &t))
        fprintf(stderr, "bench-pods: nodes: %s\n", gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    return t;
}

static bool pf_pods(const char *file, pf_trace *tr)
{
    FILE *f = pf_open(file);
    if (!f)
        return false;
    char line[512];
    uint32_t cap = 0;
    tr->pods = NULL;
    tr->npods = 0;
    bool ok = fgets(line, sizeof line, f) != NULL;
    while (ok && fgets(line, sizeof line, f)) {
        char *fl[12];
        if (openb_fields(line, fl, 12) < 5)
            continue;
        if (tr->npods == cap) {
            cap = cap ? 2 * cap : 1024;
            pf_pod *p = realloc(tr->pods, cap * sizeof *p);
            if (!p) {
                ok = false;
                break;
            }
            tr->pods = p;
        }
        /* Both lists leave gpu_spec empty (any model), so it is not read. */
        tr->pods[tr->npods++] = (pf_pod){(uint32_t)strtoul(fl[1], NULL, 10), (uint32_t)strtoul(fl[2], NULL, 10),
                                         (uint32_t)strtoul(fl[3], NULL, 10), (uint32_t)strtoul(fl[4], NULL, 10)};
    }
    fclose(f);
    return ok && tr->npods;
}

static uint64_t pf_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void pf_request(const pf_pod *pod, gpusched_place_request *q, uint64_t *res)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    q->split = GPUSCHED_SPLIT_PODS;
    q->pods = 1;
    if (pod->gpus && pod->milli < 1000)
        q->gpu_milli = pod->milli;
    else
        q->pod_gpus = pod->gpus;
    res[0] = pod->cpu;
    res[1] = pod->mem;
    q->resources = res;
    q->resource_count = 2;
}

/* The trace's distinct shapes weighted by count: FGD's target workload. */
static int pf_workload(gpusched_placer *p, const pf_trace *tr)
{
    uint32_t n = 0;
    pf_pod *shape = malloc(tr->npods * sizeof *shape);
    double *w = malloc(tr->npods * sizeof *w);
    gpusched_place_request *q = malloc(tr->npods * sizeof *q);
    const gpusched_place_request **qp = malloc(tr->npods * sizeof *qp);
    uint64_t(*res)[2] = malloc(tr->npods * sizeof *res);
    int rc = -1;
    if (shape && w && q && qp && res) {
        for (uint32_t i = 0; i < tr->npods; i++) {
            uint32_t k = 0;
            while (k < n && memcmp(&shape[k], &tr->pods[i], sizeof *shape))
                k++;
            if (k == n) {
                shape[n] = tr->pods[i];
                w[n++] = 0;
            }
            w[k] += 1;
        }
        for (uint32_t k = 0; k < n; k++) {
            pf_request(&shape[k], &q[k], res[k]);
            qp[k] = &q[k];
        }
        rc = gpusched_placer_workload_set(p, n, qp, w);
        if (rc)
            fprintf(stderr, "bench-pods: workload: %s\n", gpusched_placer_errmsg(p));
    }
    free(shape);
    free(w);
    free(q);
    free(qp);
    free(res);
    return rc;
}

typedef struct pf_run {
    double alloc100, alloc130;  /* % of the cluster's milli-GPU */
    double ns;                  /* placement time, every pod */
    uint32_t pods;
} pf_run;

static int pf_fill(const pf_trace *tr, uint32_t policy, uint64_t seed, pf_run *out)
{
    /* The order: the list shuffled, then draws with replacement until 130%. */
    uint32_t cap = tr->npods * 2, n = tr->npods;
    uint32_t *order = malloc(cap * sizeof *order);
    if (!order)
        return -1;
    uint64_t s = 0x9e3779b97f4a7c15ull ^ (seed * 0x2545f4914f6cdd1dull + 1), asked = 0;
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    for (uint32_t i = n; i-- > 1;) {
        uint32_t j = (uint32_t)(pf_rand(&s) % (i + 1));
        uint32_t x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    const uint64_t target = tr->cluster_milli * 13 / 10;
    /* A list that alone asks more than the target is cut where the target
     * has arrived (multigpu50 asks 183% of the cluster). */
    uint32_t cut = 0;
    while (cut < n && asked < target) {
        asked += (uint64_t)tr->pods[order[cut]].gpus * tr->pods[order[cut]].milli;
        cut++;
    }
    n = cut;
    while (asked < target) {
        if (n == cap) {
            cap *= 2;
            uint32_t *o = realloc(order, cap * sizeof *o);
            if (!o) {
                free(order);
                return -1;
            }
            order = o;
        }
        uint32_t k = (uint32_t)(pf_rand(&s) % tr->npods);
        order[n++] = k;
        asked += (uint64_t)tr->pods[k].gpus * tr->pods[k].milli;
    }
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    if (gpusched_cluster_new(tr->topo, NULL, &c) || gpusched_placer_new(c, NULL, &p) ||
        gpusched_place_result_new(NULL, &res)) {
        free(order);
        return -1;
    }
    int rc = policy == GPUSCHED_POLICY_FRAG ? pf_workload(p, tr) : 0;
    uint64_t arrived = 0, allocated = 0;
    out->alloc100 = -1;
    out->ns = 0;
    for (uint32_t i = 0; !rc && i < n; i++) {
        const pf_pod *pod = &tr->pods[order[i]];
        gpusched_place_request q;
        uint64_t r2[2];
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = i + 1;
        pf_request(pod, &q, r2);
        q.job = &job;
        q.policy = policy;
        q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        double t0 = gsb_now_ns();
        int prc = gpusched_placer_place(p, &q, res);
        out->ns += gsb_now_ns() - t0;
        if (prc && prc != GPUSCHED_ENOSPC) {
            fprintf(stderr, "bench-pods: pod %u: %s\n", i, gpusched_placer_errmsg(p));
            rc = prc;
        }
        const uint64_t m = (uint64_t)pod->gpus * pod->milli;
        arrived += m;
        if (!prc)
            allocated += m;
        if (out->alloc100 < 0 && arrived >= tr->cluster_milli)
            out->alloc100 = 100.0 * (double)allocated / (double)tr->cluster_milli;
    }
    out->alloc130 = 100.0 * (double)allocated / (double)tr->cluster_milli;
    out->pods = n;
    if (!rc && gpusched_cluster_check(c)) {
        fprintf(stderr, "bench-pods: check: %s\n", gpusched_cluster_errmsg(c));
        rc = -1;
    }
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    free(order);
    return rc;
}

static void pf_fill_trace(gsb_ctx *b, const char *label, const char *file)
{
    pf_trace tr = {0};
    if (!(tr.topo = pf_nodes(&tr.cluster_milli)) || !pf_pods(file, &tr)) {
        fprintf(stderr, "bench-pods: %s: the trace did not load\n", label);
        gpusched_topo_unref(tr.topo);
        free(tr.pods);
        return;
    }
    static const struct {
        uint32_t policy;
        const char *name;
    } pol[] = {{GPUSCHED_POLICY_FIRST_FIT, "firstfit"},
               {GPUSCHED_POLICY_BEST_FIT, "bestfit"},
               {GPUSCHED_POLICY_FRAG, "frag"}};
    const uint32_t seeds = gsb_quick(b) ? 1 : 5;
    /* GSB_FILL_POLICY=name runs one policy only (profiling). */
    const char *only = getenv("GSB_FILL_POLICY");
    for (uint32_t k = 0; k < sizeof pol / sizeof pol[0]; k++) {
        if (only && strcmp(only, pol[k].name))
            continue;
        double a100 = 0, a130 = 0, ns = 0, pods = 0;
        for (uint32_t seed = 0; seed < seeds; seed++) {
            pf_run run;
            if (pf_fill(&tr, pol[k].policy, seed, &run)) {
                fprintf(stderr, "bench-pods: %s %s seed %u failed\n", label, pol[k].name, seed);
                goto out;
            }
            a100 += run.alloc100;
            a130 += run.alloc130;
            ns += run.ns;
            pods += run.pods;
        }
        char name[128], params[256];
        snprintf(params, sizeof params,
                 "\"trace\": \"%s\", \"seeds\": %u, \"alloc100\": %.2f, \"pods_per_run\": %.0f, "
                 "\"source\": \"alibaba openb (Weng et al., ATC'23)\"",
                 file, seeds, a100 / seeds, pods / seeds);
        snprintf(name, sizeof name, "place.openb.fill%s.alloc130.%s", label, pol[k].name);
        gsb_report(b, name, a130 / seeds, "%", params);
        if (pol[k].policy == GPUSCHED_POLICY_FRAG && !label[0]) {
            snprintf(params, sizeof params, "\"policy\": \"frag\", \"pods\": %.0f, \"seeds\": %u", pods, seeds);
            gsb_report(b, "place.openb.fill.us_per_pod", ns / pods / 1000.0, "us", params);
        }
    }
out:
    gpusched_topo_unref(tr.topo);
    free(tr.pods);
}

static void pf_openb_fill(gsb_ctx *b)
{
    pf_fill_trace(b, "", "openb_pod_list_default.csv");
    pf_fill_trace(b, ".multigpu50", "openb_pod_list_multigpu50.csv");
}

/* ---- one pod on a million GPUs ------------------------------------------ */

static gpusched_topo *pf_big(void)
{
    static const char text[] = "levels zone block rack\n"
                               "resources cpu memory\n"
                               "node z[0-7]/b[0-31]/r[0-55] n[0-] count=18 gpus=4 class=gb200 cpu=144000 memory=884736\n";
    gpusched_topo *t = NULL;
    char err[256];
    if (gpusched_topo_parse(text, sizeof text - 1, NULL, &t, err, sizeof err))
        fprintf(stderr, "bench-pods: 1m topology: %s\n", err);
    return t;
}

static void pf_pod_1m(gsb_ctx *b)
{
    gpusched_topo *t = pf_big();
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    if (!t || gpusched_cluster_new(t, NULL, &c)) {
        gpusched_topo_unref(t);
        return;
    }
    if (gpusched_placer_new(c, NULL, &p) || gpusched_place_result_new(NULL, &res))
        return;
    {
        /* Memory per GPU as cluster.bytes_per_gpu counts it (topology and
         * state, no job), with cpu and memory declared and one fraction
         * placed, so that the per-GPU milli and shared masks exist. */
        uint64_t one[2] = {1000, 1024};
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = 1ull << 40;
        q.job = &job, q.split = GPUSCHED_SPLIT_PODS, q.pods = 1, q.gpu_milli = 500;
        q.resources = one, q.resource_count = 2, q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        if (gpusched_placer_place(p, &q, res))
            fprintf(stderr, "bench-pods: %s\n", gpusched_placer_errmsg(p));
        const double gpus = (double)gpusched_topo_gpu_count(t);
        const size_t tb = gpusched_topo_memory_bytes(t), cb = gpusched_cluster_memory_bytes(c);
        char params[160];
        snprintf(params, sizeof params, "\"topo_bytes_per_gpu\": %.2f, \"state_bytes_per_gpu\": %.2f",
                 (double)tb / gpus, (double)cb / gpus);
        gsb_report(b, "place.pod.1m.bytes_per_gpu", (double)(tb + cb) / gpus, "B/GPU", params);
        gpusched_cluster_release(c, job.id);
    }
    /* 70% of the GPUs held: whole-GPU jobs on random nodes, 2 or 4 GPUs
     * (a node 70% full on average, some empty, some full). */
    const uint32_t nn = gpusched_topo_node_count(t);
    uint64_t s = 12345, held = 0, target = gpusched_topo_gpu_count(t) * 7 / 10, id = 1;
    while (held < target) {
        uint32_t n = (uint32_t)(pf_rand(&s) % nn);
        uint64_t mask = (pf_rand(&s) & 1) ? 0x3 : 0xf;
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = id++;
        if (gpusched_cluster_allocate(c, &job, 1, &n, &mask) == 0)
            held += (uint64_t)__builtin_popcountll(mask);
    }
    const int reps = gsb_quick(b) ? 200 : 2000;
    double *v = malloc((size_t)reps * sizeof *v);
    uint64_t r2[2] = {16000, 65536};
    int fails = 0;
    for (int i = 0; v && i < reps; i++) {
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        q.split = GPUSCHED_SPLIT_PODS;
        q.pods = 1;
        q.gpu_milli = 250 + 125 * (uint32_t)(i % 5);
        q.resources = r2;
        q.resource_count = 2;
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = 1u << 30 | (uint64_t)i;
        q.job = &job;
        q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        double t0 = gsb_now_ns();
        fails += gpusched_placer_place(p, &q, res) != 0;
        v[i] = gsb_now_ns() - t0;
    }
    char params[160];
    snprintf(params, sizeof params, "\"gpus\": %llu, \"held\": 0.7, \"pods_placed\": %d, \"failed\": %d, \"policy\": \"frag\"",
             (unsigned long long)gpusched_topo_gpu_count(t), reps - fails, fails);
    if (v)
        gsb_report(b, "place.pod.1m.us", gsb_median(v, (size_t)reps) / 1000.0, "us", params);
    free(v);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}

/* ---- preemption for a pod gang on a million GPUs ------------------------- */

/* The 1m shape with every GPU held by preemptible jobs of priority 0 and 1
 * (whole-GPU jobs, and pods with cores, of whole GPUs or fractions); a gang
 * of 8 pods of 4 GPUs and 64 cores at priority 5 needs victims. Plan only,
 * the median over `reps` plans. */
static void pf_preempt_1m(gsb_ctx *b)
{
    gpusched_topo *t = pf_big();
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    if (!t || gpusched_cluster_new(t, NULL, &c)) {
        gpusched_topo_unref(t);
        return;
    }
    if (gpusched_placer_new(c, NULL, &p) || gpusched_place_result_new(NULL, &res) ||
        gpusched_preempt_plan_new(NULL, &plan))
        return;
    /* Nine nodes in ten: two jobs of 2 GPUs; the tenth: pods of 2 GPUs and
     * 8 cores, or of a 500-milli fraction, until its GPUs are taken. */
    const uint32_t nn = gpusched_topo_node_count(t);
    uint64_t s = 777, id = 1, pods = 0;
    uint64_t pod_res[2] = {8000, 32768};
    for (uint32_t n = 0; n < nn; n++)
        for (uint64_t mask = 0x3; n % 10 && mask <= 0xc; mask <<= 2) {
            gpusched_job job = GPUSCHED_JOB_INIT;
            job.id = id++;
            job.priority = (int32_t)(pf_rand(&s) & 1);
            job.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
            job.cost_hint = 1 + pf_rand(&s) % 100;
            gpusched_cluster_allocate(c, &job, 1, &n, &mask);
        }
    for (int rc = 0; rc == 0;) {
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = id++;
        job.priority = (int32_t)(pf_rand(&s) & 1);
        job.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
        job.cost_hint = 1 + pf_rand(&s) % 100;
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        q.job = &job, q.split = GPUSCHED_SPLIT_PODS, q.pods = 1;
        if (pf_rand(&s) % 8)
            q.pod_gpus = 2;
        else
            q.gpu_milli = 500;
        q.resources = pod_res, q.resource_count = 2, q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        rc = gpusched_placer_place(p, &q, res);
        pods += rc == 0;
    }
    const int reps = gsb_quick(b) ? 3 : 9;
    double v[9];
    uint64_t gang_res[2] = {64000, 262144};
    uint32_t victims = 0, exact = 0;
    int rc = 0;
    for (int i = 0; i < reps; i++) {
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = 1ull << 40;
        job.priority = 5;
        q.job = &job, q.split = GPUSCHED_SPLIT_PODS, q.pods = 8, q.pod_gpus = 4;
        q.resources = gang_res, q.resource_count = 2;
        double t0 = gsb_now_ns();
        rc = gpusched_placer_preempt(p, &q, res, plan);
        v[i] = (gsb_now_ns() - t0) / 1e6;
        const uint64_t *ids;
        gpusched_preempt_plan_victims(plan, &ids, &victims);
        gpusched_preempt_plan_optimality(plan, &exact, NULL);
    }
    char params[256];
    snprintf(params, sizeof params,
             "\"gpus\": %llu, \"held\": 1.0, \"jobs\": %u, \"pod_jobs\": %llu, \"gang\": \"8 pods of 4 GPUs, 64 "
             "cores\", \"fit\": %d, \"victims\": %u",
             (unsigned long long)gpusched_topo_gpu_count(t), gpusched_cluster_job_count(c), (unsigned long long)pods,
             rc == 0, victims);
    gsb_report(b, "preempt.pods.1m.ms", gsb_median(v, (size_t)reps), "ms", params);
    gpusched_preempt_plan_free(plan);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}

const gsb_scenario gsb_pods_scenarios[] = {
    {"preempt.pods.1m", pf_preempt_1m},
    {"place.openb.fill", pf_openb_fill},
    {"place.pod.1m", pf_pod_1m},
    {NULL, NULL},
};
