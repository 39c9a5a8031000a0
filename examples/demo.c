/* The README's first command ends here: a tour of the library on the
 * built-in default cluster. */
#include <stdio.h>

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

/* fairq: three tenants, a few polls with their score terms, under the
 * memoryless policy and then the stateful fair-share policy. */
static void show_fairq(void)
{
    static const char *const names[] = {"memoryless", "stateful"};
    static const uint32_t policies[] = {GPUSCHED_FAIRQ_POLICY_DES, GPUSCHED_FAIRQ_POLICY_STATEFUL};
    static const double cost[3] = {3.0, 1.0, 0.5};
    for (int p = 0; p < 2; p++) {
        gpusched_fairq *q;
        if (gpusched_fairq_new(NULL, 3, &q) || gpusched_fairq_set_policy(q, policies[p])) {
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
            printf("  t=%4.1f task %2llu tenant %u score %.3f (backlog %.2f wait %.2f fair %.2f)\n",
                   now, (unsigned long long)id, d.tenant, d.score, d.term_backlog, d.term_wait,
                   d.term_vtime);
            gpusched_fairq_complete(q, id, cost[d.tenant]);
            now += cost[d.tenant];
        }
        gpusched_fairq_free(q);
    }
}

int main(void)
{
    show_core();
    show_fairq();
    return 0;
}
