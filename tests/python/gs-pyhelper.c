/* The C side of the Python binding's cross-checks: prints what the C
 * compiler and the library compute, for tests/python to compare with what
 * the binding computes through ctypes.
 *
 *   gs-pyhelper layout   one line per struct ("struct NAME SIZE") and per
 *                        field ("field NAME.FIELD OFFSET SIZE")
 *   gs-pyhelper place    reads a scenario from stdin, one command a line,
 *                        and prints one line per "place" command:
 *     uniform GPUS NLEVELS NAME... FANOUT...   the topology (first line), or
 *     levels NLEVELS NAME...                   a built one: levels, then
 *     node PATH... NAME GPUS CLASS NLABELS LABEL...  its nodes, then
 *     freeze                                   the end of the topology
 *     alloc JOB N NODE MASK...                 a running job
 *     health NODE HEALTH                       a node's health
 *     place FLAGS JOB GPUS SPLIT POD REQUIRED PREFERRED SG0 SL0 SG1 SL1 CLASS
 *           LREQ LFORB NAVOID AVOID...         a placement request
 *   Output: "rc=R reason=R committed=C nodes=N:MASK,... pods=N,...
 *   loc=C,... doms=D,...;D,...;... msg=TEXT" (masks in hex).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#define STRUCT(T) printf("struct %s %zu\n", #T, sizeof(T))
#define FIELD(T, F) printf("field %s.%s %zu %zu\n", #T, #F, offsetof(T, F), sizeof(((T *)0)->F))

static int print_layout(void)
{
    STRUCT(gpusched_allocator);
    FIELD(gpusched_allocator, size);
    FIELD(gpusched_allocator, reserved0);
    FIELD(gpusched_allocator, malloc_fn);
    FIELD(gpusched_allocator, realloc_fn);
    FIELD(gpusched_allocator, free_fn);
    FIELD(gpusched_allocator, user);

    STRUCT(gpusched_job);
    FIELD(gpusched_job, size);
    FIELD(gpusched_job, flags);
    FIELD(gpusched_job, id);
    FIELD(gpusched_job, priority);
    FIELD(gpusched_job, tenant);
    FIELD(gpusched_job, start_time);
    FIELD(gpusched_job, cost_hint);
    FIELD(gpusched_job, protected_until);

    STRUCT(gpusched_fairq_task);
    FIELD(gpusched_fairq_task, size);
    FIELD(gpusched_fairq_task, tenant);
    FIELD(gpusched_fairq_task, id);
    FIELD(gpusched_fairq_task, type);
    FIELD(gpusched_fairq_task, reserved0);
    FIELD(gpusched_fairq_task, enqueue_time);
    FIELD(gpusched_fairq_task, work_size);
    FIELD(gpusched_fairq_task, predicted);

    STRUCT(gpusched_fairq_decision);
    FIELD(gpusched_fairq_decision, size);
    FIELD(gpusched_fairq_decision, tenant);
    FIELD(gpusched_fairq_decision, task_id);
    FIELD(gpusched_fairq_decision, time);
    FIELD(gpusched_fairq_decision, type);
    FIELD(gpusched_fairq_decision, tenants_backlogged);
    FIELD(gpusched_fairq_decision, score);
    FIELD(gpusched_fairq_decision, term_backlog);
    FIELD(gpusched_fairq_decision, term_wait);
    FIELD(gpusched_fairq_decision, term_vtime);
    FIELD(gpusched_fairq_decision, term_pred);
    FIELD(gpusched_fairq_decision, predicted);
    FIELD(gpusched_fairq_decision, probability);
    FIELD(gpusched_fairq_decision, candidates);
    FIELD(gpusched_fairq_decision, queued);
    FIELD(gpusched_fairq_decision, max_wait);

    STRUCT(gpusched_place_request);
    FIELD(gpusched_place_request, size);
    FIELD(gpusched_place_request, flags);
    FIELD(gpusched_place_request, job);
    FIELD(gpusched_place_request, gpus);
    FIELD(gpusched_place_request, split);
    FIELD(gpusched_place_request, pod_gpus);
    FIELD(gpusched_place_request, required_level);
    FIELD(gpusched_place_request, preferred_level);
    FIELD(gpusched_place_request, slice_gpus);
    FIELD(gpusched_place_request, slice_level);
    FIELD(gpusched_place_request, gpu_class);
    FIELD(gpusched_place_request, labels_required);
    FIELD(gpusched_place_request, labels_forbidden);
    FIELD(gpusched_place_request, avoid_nodes);
    FIELD(gpusched_place_request, avoid_count);
    FIELD(gpusched_place_request, preempt_policy);
    FIELD(gpusched_place_request, now);
    FIELD(gpusched_place_request, pods);
    FIELD(gpusched_place_request, gpu_milli);
    FIELD(gpusched_place_request, resources);
    FIELD(gpusched_place_request, resource_count);
    FIELD(gpusched_place_request, gpu_class_count);
    FIELD(gpusched_place_request, gpu_classes);
    FIELD(gpusched_place_request, policy);

    STRUCT(gpusched_sched_queue);
    FIELD(gpusched_sched_queue, size);
    FIELD(gpusched_sched_queue, parent);
    FIELD(gpusched_sched_queue, name);
    FIELD(gpusched_sched_queue, priority);
    FIELD(gpusched_sched_queue, weight);

    STRUCT(gpusched_sched_job);
    FIELD(gpusched_sched_job, size);
    FIELD(gpusched_sched_job, queue);
    FIELD(gpusched_sched_job, id);
    FIELD(gpusched_sched_job, priority);
    FIELD(gpusched_sched_job, flags);
    FIELD(gpusched_sched_job, submit_time);
    FIELD(gpusched_sched_job, duration_limit);
    FIELD(gpusched_sched_job, duration_predicted);
    FIELD(gpusched_sched_job, cost_hint);
    FIELD(gpusched_sched_job, request);

    STRUCT(gpusched_sched_wait);
    FIELD(gpusched_sched_wait, size);
    FIELD(gpusched_sched_wait, reason);
    FIELD(gpusched_sched_wait, job_id);
    FIELD(gpusched_sched_wait, seq);
    FIELD(gpusched_sched_wait, queue);
    FIELD(gpusched_sched_wait, resource);
    FIELD(gpusched_sched_wait, place_reason);
    FIELD(gpusched_sched_wait, used);
    FIELD(gpusched_sched_wait, requested);
    FIELD(gpusched_sched_wait, limit);
    FIELD(gpusched_sched_wait, free_gpus);
    FIELD(gpusched_sched_wait, taken_gpus);
    FIELD(gpusched_sched_wait, blocking_job);
    FIELD(gpusched_sched_wait, time);
    FIELD(gpusched_sched_wait, share);
    return 0;
}

static uint64_t next_u64(void)
{
    unsigned long long v;
    if (scanf("%llu", &v) != 1) {
        fprintf(stderr, "gs-pyhelper: expected a number\n");
        exit(2);
    }
    return (uint64_t)v;
}

static gpusched_topo *read_uniform(void)
{
    char names[GPUSCHED_MAX_LEVELS][GPUSCHED_MAX_NAME + 1];
    const char *ptrs[GPUSCHED_MAX_LEVELS];
    uint32_t fanout[GPUSCHED_MAX_LEVELS + 1];
    uint32_t gpus = (uint32_t)next_u64(), nlevels = (uint32_t)next_u64();
    if (nlevels < 1 || nlevels > GPUSCHED_MAX_LEVELS)
        exit(2);
    for (uint32_t l = 0; l < nlevels; l++) {
        if (scanf("%63s", names[l]) != 1)
            exit(2);
        ptrs[l] = names[l];
    }
    for (uint32_t l = 0; l <= nlevels; l++)
        fanout[l] = (uint32_t)next_u64();
    gpusched_topo *t = NULL;
    char err[256];
    if (gpusched_topo_uniform(nlevels, ptrs, fanout, gpus, "h100", NULL, &t, err, sizeof err)) {
        fprintf(stderr, "gs-pyhelper: %s\n", err);
        exit(2);
    }
    return t;
}

static void read_word(char *buf)
{
    if (scanf("%63s", buf) != 1) {
        fprintf(stderr, "gs-pyhelper: expected a name\n");
        exit(2);
    }
}

/* levels / node / freeze lines through the builder. */
static gpusched_topo *read_built(void)
{
    char names[GPUSCHED_MAX_LEVELS][GPUSCHED_MAX_NAME + 1];
    char name[GPUSCHED_MAX_NAME + 1], cls[GPUSCHED_MAX_NAME + 1];
    char labels[8][GPUSCHED_MAX_NAME + 1], cmd[32];
    const char *ptrs[GPUSCHED_MAX_LEVELS], *lptrs[8];
    gpusched_topo_builder *b = NULL;
    gpusched_topo *t = NULL;
    uint32_t nlevels = (uint32_t)next_u64();
    if (nlevels < 1 || nlevels > GPUSCHED_MAX_LEVELS || gpusched_topo_builder_new(NULL, &b))
        exit(2);
    for (uint32_t l = 0; l < nlevels; l++) {
        read_word(names[l]);
        ptrs[l] = names[l];
    }
    if (gpusched_topo_builder_levels_set(b, nlevels, ptrs))
        exit(2);
    while (scanf("%31s", cmd) == 1 && strcmp(cmd, "freeze")) {
        for (uint32_t l = 0; l < nlevels; l++) {
            read_word(names[l]);
            ptrs[l] = names[l];
        }
        read_word(name);
        uint32_t gpus = (uint32_t)next_u64();
        read_word(cls);
        uint32_t nl = (uint32_t)next_u64();
        if (nl > 8)
            exit(2);
        for (uint32_t i = 0; i < nl; i++) {
            read_word(labels[i]);
            lptrs[i] = labels[i];
        }
        if (gpusched_topo_builder_add_node(b, ptrs, name, gpus, cls, lptrs, nl)) {
            fprintf(stderr, "gs-pyhelper: %s\n", gpusched_topo_builder_errmsg(b));
            exit(2);
        }
    }
    if (gpusched_topo_builder_freeze(b, &t))
        exit(2);
    gpusched_topo_builder_free(b);
    return t;
}

static void print_result(const gpusched_topo *t, int rc, const gpusched_place_result *res)
{
    const uint32_t *nodes, *pods, *loc, *doms;
    const uint64_t *masks;
    uint32_t n;
    printf("rc=%d reason=%" PRIu32 " committed=%d nodes=", rc, gpusched_place_result_reason(res),
           gpusched_place_result_committed(res));
    gpusched_place_result_nodes(res, &nodes, &masks, &n);
    for (uint32_t i = 0; i < n; i++)
        printf("%s%" PRIu32 ":%" PRIx64, i ? "," : "", nodes[i], masks[i]);
    printf(" pods=");
    gpusched_place_result_pods(res, &pods, &n);
    for (uint32_t i = 0; i < n; i++)
        printf("%s%" PRIu32, i ? "," : "", pods[i]);
    printf(" loc=");
    gpusched_place_result_locality(res, &loc, &n);
    for (uint32_t i = 0; i < n; i++)
        printf("%s%" PRIu32, i ? "," : "", loc[i]);
    printf(" doms=");
    if (rc == 0) {
        for (uint32_t l = 0; l <= gpusched_topo_level_count(t); l++) {
            gpusched_place_result_domains(res, l, &doms, &n);
            for (uint32_t i = 0; i < n; i++)
                printf("%s%" PRIu32, i ? "," : "", doms[i]);
            printf(";");
        }
    }
    printf(" msg=%s\n", rc == 0 || rc == GPUSCHED_ENOSPC ? gpusched_place_result_message(res) : "");
}

static void read_place(gpusched_placer *p, const gpusched_topo *t, gpusched_place_result *res)
{
    gpusched_place_request r = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job = GPUSCHED_JOB_INIT;
    uint32_t avoid[256];
    r.flags = (uint32_t)next_u64();
    job.id = next_u64();
    r.job = &job;
    r.gpus = (uint32_t)next_u64();
    r.split = (uint32_t)next_u64();
    r.pod_gpus = (uint32_t)next_u64();
    r.required_level = (uint32_t)next_u64();
    r.preferred_level = (uint32_t)next_u64();
    for (int i = 0; i < GPUSCHED_MAX_SLICES; i++) {
        r.slice_gpus[i] = (uint32_t)next_u64();
        r.slice_level[i] = (uint32_t)next_u64();
    }
    r.gpu_class = (uint32_t)next_u64();
    r.labels_required = next_u64();
    r.labels_forbidden = next_u64();
    r.avoid_count = (uint32_t)next_u64();
    if (r.avoid_count > 256)
        exit(2);
    for (uint32_t i = 0; i < r.avoid_count; i++)
        avoid[i] = (uint32_t)next_u64();
    r.avoid_nodes = r.avoid_count ? avoid : NULL;
    print_result(t, gpusched_placer_place(p, &r, res), res);
}

static int run_place(void)
{
    char cmd[32];
    if (scanf("%31s", cmd) != 1 || (strcmp(cmd, "uniform") && strcmp(cmd, "levels")))
        return 2;
    gpusched_topo *t = strcmp(cmd, "uniform") ? read_built() : read_uniform();
    gpusched_cluster *c = NULL;
    gpusched_placer *p = NULL;
    gpusched_place_result *res = NULL;
    if (gpusched_cluster_new(t, NULL, &c) || gpusched_placer_new(c, NULL, &p) ||
        gpusched_place_result_new(NULL, &res))
        return 2;
    while (scanf("%31s", cmd) == 1) {
        if (!strcmp(cmd, "alloc")) {
            gpusched_job job = GPUSCHED_JOB_INIT;
            uint32_t nodes[256];
            uint64_t masks[256];
            job.id = next_u64();
            uint32_t n = (uint32_t)next_u64();
            if (n > 256)
                return 2;
            for (uint32_t i = 0; i < n; i++) {
                nodes[i] = (uint32_t)next_u64();
                masks[i] = next_u64();
            }
            if (gpusched_cluster_allocate(c, &job, n, nodes, masks)) {
                fprintf(stderr, "gs-pyhelper: alloc: %s\n", gpusched_cluster_errmsg(c));
                return 2;
            }
        } else if (!strcmp(cmd, "health")) {
            uint32_t node = (uint32_t)next_u64(), h = (uint32_t)next_u64(), nhit;
            uint64_t hit[64];
            if (gpusched_cluster_node_health_set(c, node, h, hit, 64, &nhit))
                return 2;
        } else if (!strcmp(cmd, "place")) {
            read_place(p, t, res);
        } else {
            fprintf(stderr, "gs-pyhelper: unknown command %s\n", cmd);
            return 2;
        }
    }
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "layout"))
        return print_layout();
    if (argc >= 2 && !strcmp(argv[1], "place"))
        return run_place();
    fprintf(stderr, "usage: %s layout|place\n", argv[0]);
    return 2;
}
