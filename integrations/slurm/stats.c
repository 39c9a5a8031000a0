/* Counters and the decision latency histogram, rewritten after each poll
 * as a Prometheus-style text file (doc/slurm.md, "Counters"): a node
 * exporter's textfile collector or a plain `cat` reads it. The file is
 * replaced by rename, so a reader never sees half of it. */
#include "gss.h"

#include <stdio.h>
#include <time.h>

uint64_t gss_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void gss_stats_latency(gss_stats *st, uint64_t us)
{
    uint32_t b = 0;
    while (b < GSS_LAT_BUCKETS && us > (1ull << b))
        b++;
    st->lat_bucket[b]++;
    st->lat_count++;
    st->lat_sum_us += us;
}

int gss_stats_write(const gss_stats *st, const char *path)
{
    if (!path)
        return 0;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "# gpusched-slurm counters, rewritten after every poll (doc/slurm.md)\n");
    fprintf(f, "gpusched_slurm_polls_total %llu\n", (unsigned long long)st->polls);
    fprintf(f, "gpusched_slurm_decisions_total{outcome=\"placed\"} %llu\n", (unsigned long long)st->placed);
    fprintf(f, "gpusched_slurm_decisions_total{outcome=\"preempted\"} %llu\n", (unsigned long long)st->preempted);
    fprintf(f, "gpusched_slurm_decisions_total{outcome=\"waiting\"} %llu\n", (unsigned long long)st->waiting);
    fprintf(f, "gpusched_slurm_decisions_total{outcome=\"no_gpus\"} %llu\n", (unsigned long long)st->released_plain);
    fprintf(f, "gpusched_slurm_requeued_total %llu\n", (unsigned long long)st->requeued);
    fprintf(f, "gpusched_slurm_node_events_total %llu\n", (unsigned long long)st->node_events);
    fprintf(f, "gpusched_slurm_jobs_hit_total %llu\n", (unsigned long long)st->jobs_hit);
    uint64_t cum = 0;
    for (uint32_t b = 0; b < GSS_LAT_BUCKETS; b++) {
        cum += st->lat_bucket[b];
        fprintf(f, "gpusched_slurm_decision_latency_us_bucket{le=\"%llu\"} %llu\n", 1ull << b,
                (unsigned long long)cum);
    }
    fprintf(f, "gpusched_slurm_decision_latency_us_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)st->lat_count);
    fprintf(f, "gpusched_slurm_decision_latency_us_sum %llu\n", (unsigned long long)st->lat_sum_us);
    fprintf(f, "gpusched_slurm_decision_latency_us_count %llu\n", (unsigned long long)st->lat_count);
    fprintf(f, "gpusched_slurm_poll_last_us %llu\n", (unsigned long long)st->poll_last_us);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return -1;
    return rename(tmp, path);
}
