/* gpusched-slurm: the placement brain of a Slurm partition (doc/slurm.md).
 * Each poll reads nodes and jobs from slurmctld, mirrors them into the
 * cluster, places the held jobs and writes the counters. */
#include "gss.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gpusched-slurm [-p PARTITION] [-l LEVELS] [-s STATS] [-i MS] [-P] [-1]\n"
               "  -p PARTITION  place the held jobs of this partition only (default: all)\n"
               "  -l LEVELS     names of the switch levels, top first (e.g. root,block,rack)\n"
               "  -s STATS      write the counters to this file after every poll\n"
               "  -i MS         poll interval in milliseconds (default 1000)\n"
               "  -P            preempt: requeue lower-priority requeueable jobs for a gang\n"
               "  -1            one poll, then exit\n");
}

static int parse_args(int argc, char **argv, gss_options *o)
{
    int c;
    o->poll_ms = 1000;
    while ((c = getopt(argc, argv, "p:l:s:i:P1h")) != -1) {
        switch (c) {
        case 'p': o->partition = optarg; break;
        case 'l': o->levels = optarg; break;
        case 's': o->stats_path = optarg; break;
        case 'i': o->poll_ms = (uint32_t)strtoul(optarg, NULL, 10); break;
        case 'P': o->preempt = 1; break;
        case '1': o->once = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return -1;
        }
    }
    return optind == argc ? 0 : -1;
}

static int state_init(gss_state *s, const gss_options *o)
{
    memset(s, 0, sizeof *s);
    s->opt = o;
    if (gss_topology_build(o, &s->topo) < 0)
        return -1;
    uint32_t n = gpusched_topo_node_count(s->topo);
    s->health = calloc(n, sizeof *s->health);
    if (!s->health || gpusched_cluster_new(s->topo, NULL, &s->cluster) < 0 ||
        gpusched_placer_new(s->cluster, NULL, &s->placer) < 0 ||
        gpusched_place_result_new(NULL, &s->res) < 0 || gpusched_preempt_plan_new(NULL, &s->plan) < 0)
        return -1;
    return 0;
}

static void state_free(gss_state *s)
{
    gpusched_preempt_plan_free(s->plan);
    gpusched_place_result_free(s->res);
    gpusched_placer_free(s->placer);
    gpusched_cluster_unref(s->cluster);
    gpusched_topo_unref(s->topo);
    free(s->health);
    free(s->jobs);
}

static int poll_once(gss_state *s)
{
    node_info_msg_t *nodes = NULL;
    job_info_msg_t *jobs = NULL;
    uint64_t t0 = gss_now_us();
    if (slurm_load_node(0, &nodes, SHOW_ALL) != 0 || slurm_load_jobs(0, &jobs, SHOW_ALL | SHOW_DETAIL) != 0) {
        gss_log("poll: %s", slurm_strerror(slurm_get_errno()));
        slurm_free_node_info_msg(nodes);
        return -1;
    }
    gss_mirror_nodes(s, nodes);
    gss_mirror_jobs(s, jobs);
    gss_decide(s, jobs);
    slurm_free_job_info_msg(jobs);
    slurm_free_node_info_msg(nodes);
    s->stats.polls++;
    s->stats.poll_last_us = gss_now_us() - t0;
    if (gss_stats_write(&s->stats, s->opt->stats_path) < 0)
        gss_log("counters: cannot write %s", s->opt->stats_path);
    return 0;
}

int main(int argc, char **argv)
{
    gss_options o = {0};
    if (parse_args(argc, argv, &o) < 0) {
        usage(stderr);
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    slurm_init(NULL);
    gss_state s;
    int rc = state_init(&s, &o);
    if (rc == 0)
        gss_log("gpusched-slurm: library %s, partition %s, preemption %s", gpusched_version_string(),
                o.partition ? o.partition : "(all)", o.preempt ? "on" : "off");
    while (rc == 0 && !stop) {
        poll_once(&s);
        if (o.once)
            break;
        struct timespec ts = {o.poll_ms / 1000, (long)(o.poll_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    state_free(&s);
    slurm_fini();
    return rc == 0 ? 0 : 1;
}
