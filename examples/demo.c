/* The README's first command ends here: a tour of the library on the
 * built-in default cluster. */
#include <stdio.h>
#include <time.h>

#include <gpusched/gpusched.h>

static void show_core(void)
{
    uint32_t features = 0, chosen = 0;
    int rc = gpusched_cpu_features(&features, &chosen);
    if (rc) {
        fprintf(stderr, "cpu features: %s\n", gpusched_strerror(rc));
        return;
    }
    printf("libgpusched %s (headers %s)\n", gpusched_version_string(), GPUSCHED_VERSION_STRING);
    printf("cpu features:%s%s%s%s\n",
           features & GPUSCHED_CPU_SSE2 ? " sse2" : "",
           features & GPUSCHED_CPU_AVX2 ? " avx2" : "",
           features & GPUSCHED_CPU_AVX512 ? " avx512" : "",
           features & GPUSCHED_CPU_NEON ? " neon" : "");
    printf("simd path: %s\n", gpusched_simd_name(chosen));
}

/* Gang placement: a 200k-GPU training run on the default 1M-GPU cluster,
 * cut into NVL72 rack slices, then a request that cannot fit and why. */
static void show_place(void)
{
    gpusched_topo *t = NULL;
    gpusched_cluster *c = NULL;
    gpusched_placer *p = NULL;
    gpusched_place_result *res = NULL;
    char err[256];
    if (gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, err, sizeof err) || gpusched_cluster_new(t, NULL, &c) ||
        gpusched_placer_new(c, NULL, &p) || gpusched_place_result_new(NULL, &res)) {
        fprintf(stderr, "place demo: setup failed\n");
        goto out;
    }
    /* The request points to its job's descriptor (id, priority, ...). */
    gpusched_job job = GPUSCHED_JOB_INIT;
    job.id = 1;
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job = &job;
    q.gpus = 2778 * 72;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.slice_gpus[0] = 72; /* one NVLink domain: a rack */
    q.slice_level[0] = 2;
    q.preferred_level = 1; /* as few zones, then blocks, as possible */
    /* A what-if first (it also warms the placer's scratch memory), then
     * the real thing. The demo times itself; the library reads no clock. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = gpusched_placer_place(p, &q, res);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double plan_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!rc)
        rc = gpusched_placer_place(p, &q, res);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc) {
        fprintf(stderr, "place demo: %s %s\n", gpusched_err_name(rc), gpusched_place_result_message(res));
        goto out;
    }
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("placed a %u-GPU gang on %llu GPUs: what-if %.2f ms, plan + commit %.2f ms: %s\n", q.gpus,
           (unsigned long long)gpusched_topo_gpu_count(t), plan_ms, ms, gpusched_place_result_message(res));
    for (uint32_t l = 0; l < gpusched_topo_level_count(t); l++) {
        const uint32_t *d;
        uint32_t n;
        char first[64] = "", last[64] = "";
        gpusched_place_result_domains(res, l, &d, &n);
        gpusched_topo_domain_name(t, l, d[0], first, sizeof first);
        gpusched_topo_domain_name(t, l, d[n - 1], last, sizeof last);
        printf("  %-6s %5u used, %s .. %s\n", gpusched_topo_level_name(t, l), n, first, last);
    }
    gpusched_job small_job = GPUSCHED_JOB_INIT;
    small_job.id = 2;
    gpusched_place_request small = GPUSCHED_PLACE_REQUEST_INIT;
    small.job = &small_job;
    small.gpus = 4100;
    small.required_level = 1; /* one block: 56 racks of 72 GPUs */
    rc = gpusched_placer_place(p, &small, res);
    printf("4100 GPUs in one block: %s (%s)\n", rc ? "does not fit" : "fits", gpusched_place_result_message(res));
out:
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Preemption: the default cluster full of low-priority rack jobs, then a
 * 200k-GPU gang of higher priority: which jobs go, where it lands, what it
 * costs; and a gang nothing may make room for. */
static void show_preempt(void)
{
    gpusched_topo *t = NULL;
    gpusched_cluster *c = NULL;
    gpusched_placer *p = NULL;
    gpusched_place_result *res = NULL;
    gpusched_preempt_plan *plan = NULL;
    char err[256];
    if (gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, err, sizeof err) || gpusched_cluster_new(t, NULL, &c) ||
        gpusched_placer_new(c, NULL, &p) || gpusched_place_result_new(NULL, &res) ||
        gpusched_preempt_plan_new(NULL, &plan)) {
        fprintf(stderr, "preempt demo: setup failed\n");
        goto out;
    }
    const uint32_t rack_level = gpusched_topo_level_count(t) - 1;
    const uint32_t racks = gpusched_topo_domain_count(t, rack_level);
    static uint32_t nodes[64];
    static uint64_t masks[64];
    for (uint32_t r = 0; r < racks; r++) {
        uint32_t first, n;
        gpusched_topo_domain_nodes(t, rack_level, r, &first, &n);
        for (uint32_t i = 0; i < n && i < 64; i++) {
            nodes[i] = first + i;
            masks[i] = 0xf;
        }
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = 1000 + r;
        job.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
        job.cost_hint = 1 + (r * 7919u) % 100; /* GPU-hours since the job's last checkpoint */
        if (gpusched_cluster_allocate(c, &job, n, nodes, masks)) {
            fprintf(stderr, "preempt demo: %s\n", gpusched_cluster_errmsg(c));
            goto out;
        }
    }
    gpusched_job gang = GPUSCHED_JOB_INIT;
    gang.id = 1;
    gang.priority = 1;
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job = &gang;
    q.gpus = 2778 * 72;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.slice_gpus[0] = 72;
    q.slice_level[0] = rack_level;
    q.preferred_level = 1;
    /* The plan alone first (a what-if, which also warms the plan's and the
     * placer's scratch memory), then the plan carried out. */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = gpusched_placer_preempt(p, &q, res, plan);
    double plan_ms = ms_since(&t0);
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!rc)
        rc = gpusched_placer_preempt(p, &q, res, plan);
    double ms = ms_since(&t0);
    if (rc) {
        fprintf(stderr, "preempt demo: %s %s %s\n", gpusched_err_name(rc), gpusched_placer_errmsg(p),
                gpusched_place_result_message(res));
        goto out;
    }
    const uint64_t *ids;
    uint32_t nv;
    uint64_t cost, gpus;
    gpusched_preempt_plan_victims(plan, &ids, &nv);
    gpusched_preempt_plan_totals(plan, &cost, &gpus);
    printf("preempted %u rack jobs (%llu GPUs, cost %llu) for a %u-GPU gang on the full cluster: what-if %.2f ms, "
           "plan + commit %.2f ms: %s\n",
           nv, (unsigned long long)gpus, (unsigned long long)cost, q.gpus, plan_ms, ms,
           gpusched_place_result_message(res));
    gpusched_job low_job = GPUSCHED_JOB_INIT;
    low_job.id = 2;
    low_job.priority = 0; /* no job has a lower priority */
    gpusched_place_request low = GPUSCHED_PLACE_REQUEST_INIT;
    low.job = &low_job;
    low.gpus = 8;
    rc = gpusched_placer_preempt(p, &low, res, plan);
    printf("8 GPUs at priority 0: %s (%s)\n", rc ? "nothing to preempt" : "planned",
           gpusched_place_result_message(res));
out:
    gpusched_preempt_plan_free(plan);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}

static void show_topo(void)
{
    gpusched_topo *t = NULL;
    char err[256];
    int rc = gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, err, sizeof err);
    if (rc) {
        fprintf(stderr, "topology: %s\n", err);
        return;
    }
    printf("topology gb200-nvl72-1m:");
    for (uint32_t l = 0; l < gpusched_topo_level_count(t); l++)
        printf(" %u %ss%s", gpusched_topo_domain_count(t, l), gpusched_topo_level_name(t, l),
               l + 1 < gpusched_topo_level_count(t) ? "," : "");
    uint64_t gpus = gpusched_topo_gpu_count(t);
    size_t bytes = gpusched_topo_memory_bytes(t);
    printf("; %u nodes, %llu GPUs of class %s\n", gpusched_topo_node_count(t), (unsigned long long)gpus,
           gpusched_topo_class_name(t, 0));
    printf("topology memory: %.1f MiB, %.2f bytes per GPU\n", (double)bytes / (1 << 20),
           (double)bytes / (double)gpus);
    gpusched_topo_unref(t);
}

static void show_cluster(void)
{
    gpusched_topo *t = NULL;
    char err[256];
    if (gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, err, sizeof err)) {
        fprintf(stderr, "cluster: %s\n", err);
        return;
    }
    gpusched_cluster *c = NULL;
    int rc = gpusched_cluster_new(t, NULL, &c);
    gpusched_topo_unref(t); /* the cluster holds its own reference */
    if (rc) {
        fprintf(stderr, "cluster: %s\n", gpusched_strerror(rc));
        return;
    }
    uint32_t nl = gpusched_topo_level_count(t);
    double gpus = (double)gpusched_topo_gpu_count(t);
    size_t bytes = gpusched_topo_memory_bytes(t) + gpusched_cluster_memory_bytes(c);
    printf("cluster state: %u nodes, %.0f GPUs; topology + empty state %.1f MiB, %.2f bytes per GPU\n",
           gpusched_topo_node_count(t), gpus, (double)bytes / (1 << 20), (double)bytes / gpus);

    /* Jobs as the placement engine would commit them: (node, GPU mask)
     * pairs. Every domain is a range of nodes; racks hold 18 nodes of 4. */
    static uint32_t nodes[8 * 18];
    static uint64_t masks[8 * 18];
    uint32_t rack1 = 0, rack2 = 0, per_rack = 0;
    gpusched_topo_domain_nodes(t, nl - 1, 1, &rack1, &per_rack);
    gpusched_topo_domain_nodes(t, nl - 1, 2, &rack2, &per_rack);
    struct { uint64_t id; uint32_t first_node, nnodes; uint64_t mask; const char *what; } jobs[] = {
        {1, 0, 1, 0x3, "2 GPUs on one node"},
        {2, 1, 2, 0xf, "8 GPUs on 2 nodes"},
        {3, rack1, per_rack, 0xf, "a whole NVL72 rack (72 GPUs)"},
        {4, rack2, 8 * per_rack, 0xf, "8 whole racks (576 GPUs)"},
    };
    for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; j++) {
        for (uint32_t i = 0; i < jobs[j].nnodes; i++) {
            nodes[i] = jobs[j].first_node + i;
            masks[i] = jobs[j].mask;
        }
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = jobs[j].id;
        job.priority = (int32_t)j;
        job.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
        rc = gpusched_cluster_allocate(c, &job, jobs[j].nnodes, nodes, masks);
        printf("  job %llu, %s: %s\n", (unsigned long long)jobs[j].id, jobs[j].what,
               rc ? gpusched_cluster_errmsg(c) : "allocated");
    }
    /* One bad request, refused with a reason and nothing changed. */
    gpusched_job clash = GPUSCHED_JOB_INIT;
    clash.id = 5;
    uint32_t node = 1;
    uint64_t mask = 0x1;
    rc = gpusched_cluster_allocate(c, &clash, 1, &node, &mask);
    printf("  job 5 on node 1 GPU 0: %s (%s)\n", gpusched_err_name(rc), gpusched_cluster_errmsg(c));

    printf("fragmentation (fully free domains / GPUs stranded outside them / largest whole-domain gang):\n");
    for (uint32_t l = 0; l <= nl; l++) {
        uint32_t free_domains = 0;
        uint64_t stranded = 0, gang = 0;
        gpusched_cluster_frag(c, l, &free_domains, &stranded, &gang);
        printf("  %-6s %7u free, %6llu GPUs stranded, gang of %llu GPUs\n",
               l < nl ? gpusched_topo_level_name(t, l) : "node", free_domains,
               (unsigned long long)stranded, (unsigned long long)gang);
    }
    rc = gpusched_cluster_check(c);
    printf("invariants: %s\n", rc ? gpusched_cluster_errmsg(c) : "ok");
    gpusched_cluster_unref(c);
}

/* fairq: three tenants, a few polls with their score terms, under the
 * memoryless policy and then the stateful fair-share policy. */
static void show_fairq(void)
{
    static const char *const names[] = {"memoryless", "stateful"};
    static const uint32_t policies[] = {GPUSCHED_FAIRQ_POLICY_DES, GPUSCHED_FAIRQ_POLICY_STATEFUL};
    static const double cost[3] = {3.0, 1.0, 0.5};
    for (int p = 0; p < 2; p++) {
        gpusched_fairq *q;
        if (gpusched_fairq_new(3, NULL, &q) || gpusched_fairq_policy_set(q, policies[p])) {
            fprintf(stderr, "fairq: cannot create a queue\n");
            return;
        }
        double now = 0;
        for (uint64_t id = 0; id < 12; id++) {
            gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
            t.id = id, t.tenant = (uint32_t)(id % 3), t.enqueue_time = (double)id * 0.1;
            t.predicted = cost[id % 3];
            gpusched_fairq_enqueue(q, &t);
        }
        now = 1.2;
        printf("fairq %s policy:\n", names[p]);
        for (int i = 0; i < 5; i++) {
            uint64_t id;
            gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
            if (gpusched_fairq_poll(q, now, GPUSCHED_FAIRQ_ALL_TYPES, &id, &d))
                break;
            /* The fair-share term only counts under the stateful policy. */
            printf("  t=%4.1f task %2llu tenant %u score %.3f (backlog %.2f wait %.2f",
                   now, (unsigned long long)id, d.tenant, d.score, d.term_backlog, d.term_wait);
            if (policies[p] == GPUSCHED_FAIRQ_POLICY_STATEFUL)
                printf(" fair %.2f", d.term_vtime);
            printf(")\n");
            gpusched_fairq_complete(q, id, cost[d.tenant]);
            now += cost[d.tenant];
        }
        gpusched_fairq_free(q);
    }
}

int main(void)
{
    show_core();
    show_topo();
    show_cluster();
    show_fairq();
    show_place();
    show_preempt();
    return 0;
}
