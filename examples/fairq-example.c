/* fairq-example: a small document-enrichment service. Three tenants
 * submit documents; one worker polls. The same workload runs under the
 * memoryless policy and the stateful fair-share policy; the example prints
 * each decision's score terms and the service each tenant received, then
 * saves the decision log and reads it back.
 *
 * Build: part of the meson build (examples/fairq-example). */
#include <stdio.h>

#include <gpusched/gpusched.h>

#define CHECK(call)                                                               \
    do {                                                                          \
        int rc_ = (call);                                                         \
        if (rc_) {                                                                \
            fprintf(stderr, "%s: %s\n", #call, gpusched_strerror(rc_));          \
            return 1;                                                             \
        }                                                                         \
    } while (0)

/* Tenant 0 sends big documents (2 s each), tenants 1 and 2 small ones. */
static const double cost[3] = {2.0, 0.2, 0.2};

static int run(uint32_t policy, const char *name, const char *log_path)
{
    gpusched_fairq *q;
    CHECK(gpusched_fairq_new(3, NULL, &q));
    CHECK(gpusched_fairq_policy_set(q, policy));
    CHECK(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_LOG, 1));
    double now = 0;
    uint64_t next = 1;
    for (uint32_t t = 0; t < 3; t++)
        for (int k = 0; k < 3; k++) {
            gpusched_fairq_task task = GPUSCHED_FAIRQ_TASK_INIT;
            task.id = next++, task.tenant = t, task.enqueue_time = now;
            task.work_size = cost[t] * 1e5, task.predicted = cost[t];
            CHECK(gpusched_fairq_enqueue(q, &task));
        }
    printf("== %s ==\n", name);
    printf("  %-5s %-4s %-6s %-6s %-7s %-7s %-7s\n", "time", "task", "tenant", "score", "backlog",
           "wait", "fair");
    for (int i = 0; i < 60; i++) {
        uint64_t id;
        gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
        CHECK(gpusched_fairq_poll(q, now, GPUSCHED_FAIRQ_ALL_TYPES, &id, &d));
        if (i < 8)
            printf("  %5.1f %4llu %6u %6.3f %7.3f %7.3f %7.3f\n", now, (unsigned long long)id,
                   d.tenant, d.score, d.term_backlog, d.term_wait, d.term_vtime);
        now += cost[d.tenant];
        CHECK(gpusched_fairq_complete(q, id, cost[d.tenant]));
        /* Tenants stay backlogged: each finished document is replaced. */
        gpusched_fairq_task task = GPUSCHED_FAIRQ_TASK_INIT;
        task.id = next++, task.tenant = d.tenant, task.enqueue_time = now;
        task.work_size = cost[d.tenant] * 1e5;
        CHECK(gpusched_fairq_enqueue(q, &task));
    }
    printf("  service after 60 documents (seconds of worker time):");
    for (uint32_t t = 0; t < 3; t++) {
        double s;
        CHECK(gpusched_fairq_tenant_get(q, t, GPUSCHED_FAIRQ_TENANT_SERVICE, &s));
        printf(" tenant %u: %.1f", t, s);
    }
    printf("\n");
    if (log_path) {
        CHECK(gpusched_fairq_log_save(q, log_path));
        gpusched_fairq_log *log;
        char err[256];
        CHECK(gpusched_fairq_log_read(log_path, NULL, &log, err, sizeof err));
        const gpusched_fairq_decision *rec;
        uint64_t n;
        CHECK(gpusched_fairq_log_view(log, &rec, &n));
        printf("  decision log %s: %llu records, first chose task %llu\n", log_path,
               (unsigned long long)n, (unsigned long long)rec[0].task_id);
        gpusched_fairq_log_free(log);
        remove(log_path);
    }
    gpusched_fairq_free(q);
    return 0;
}

int main(void)
{
    if (run(GPUSCHED_FAIRQ_POLICY_DES, "memoryless (0.1 backlog + 0.9 wait)", NULL))
        return 1;
    return run(GPUSCHED_FAIRQ_POLICY_STATEFUL, "stateful fair share (virtual time + 0.05 wait)",
               "fairq-example.log");
}
