/* gpusched snapshot info|check FILE */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char snapshot_usage[] =
    "usage: gpusched snapshot info FILE [--json]\n"
    "       gpusched snapshot check FILE [--json]\n"
    "\n"
    "info   what a cluster snapshot holds: its topology, running jobs,\n"
    "       reservations, free, reserved and allocated GPUs, node health\n"
    "check  validates a snapshot: format and checksum (restore), the\n"
    "       cluster's invariants (every aggregate recomputed), and that the\n"
    "       restored cluster snapshots to the same bytes; exit 1 if not\n"
    "\n"
    "Snapshots are written by gpusched_cluster_snapshot(), by the bindings'\n"
    "save() and by gpusched place -o and gpusched topo convert --to snapshot.\n";

static const char *const health_names[] = {"up", "cordoned", "draining", "down"};

typedef struct snap_stats {
    uint64_t gpus, free_usable, free_unusable, reserved, allocated;
    uint32_t health[4];
    uint32_t jobs, resv, preemptible, movable, tenants;
    int32_t prio_min, prio_max;
} snap_stats;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int gather(gpusched_cluster *c, snap_stats *s)
{
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint32_t nn = gpusched_topo_node_count(t);
    memset(s, 0, sizeof *s);
    s->gpus = gpusched_topo_gpu_count(t);
    enum { CHUNK = 4096 };
    uint64_t fr[CHUNK], rs[CHUNK], al[CHUNK];
    uint32_t he[CHUNK];
    for (uint32_t first = 0; first < nn; first += CHUNK) {
        uint32_t n = nn - first < CHUNK ? nn - first : CHUNK;
        if (gpusched_cluster_nodes_state(c, first, n, fr, rs, al, he))
            return -1;
        for (uint32_t i = 0; i < n; i++) {
            if (he[i] < 4)
                s->health[he[i]]++;
            if (he[i] == GPUSCHED_NODE_UP)
                s->free_usable += (uint64_t)popcount64(fr[i]);
            else
                s->free_unusable += (uint64_t)popcount64(fr[i]);
            s->reserved += (uint64_t)popcount64(rs[i]);
            s->allocated += (uint64_t)popcount64(al[i]);
        }
    }
    s->jobs = gpusched_cluster_job_count(c);
    s->resv = gpusched_cluster_resv_count(c);
    uint32_t *tenants = malloc(sizeof *tenants * (s->jobs ? s->jobs : 1));
    if (!tenants)
        return -1;
    for (uint32_t i = 0; i < s->jobs; i++) {
        uint64_t id;
        gpusched_job job = GPUSCHED_JOB_INIT;
        if (gpusched_cluster_job_at(c, i, &id) || gpusched_cluster_job_find(c, id, &job)) {
            free(tenants);
            return -1;
        }
        if (i == 0 || job.priority < s->prio_min)
            s->prio_min = job.priority;
        if (i == 0 || job.priority > s->prio_max)
            s->prio_max = job.priority;
        s->preemptible += !!(job.flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE);
        s->movable += !!(job.flags & GPUSCHED_JOB_FLAG_MOVABLE);
        tenants[i] = job.tenant;
    }
    qsort(tenants, s->jobs, sizeof *tenants, cmp_u32);
    for (uint32_t i = 0; i < s->jobs; i++)
        s->tenants += i == 0 || tenants[i] != tenants[i - 1];
    free(tenants);
    return 0;
}

static int info(const char *file, const char *data, size_t len, gpusched_cluster *c, bool as_json)
{
    snap_stats s;
    if (gather(c, &s)) {
        cli_error("%s: cannot read the cluster's state", file);
        return CLI_FAIL;
    }
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint32_t version = (uint32_t)(unsigned char)data[8] | (uint32_t)(unsigned char)data[9] << 8 |
                       (uint32_t)(unsigned char)data[10] << 16 | (uint32_t)(unsigned char)data[11] << 24;
    uint32_t nl = gpusched_topo_level_count(t);
    double util = s.gpus ? (double)s.allocated / (double)s.gpus : 0;
    if (as_json) {
        json j;
        json_init(&j, stdout);
        json_open(&j, NULL, '{');
        json_str(&j, "file", file);
        json_u64(&j, "bytes", len);
        json_u64(&j, "format_version", version);
        json_open(&j, "levels", '[');
        for (uint32_t l = 0; l < nl; l++) {
            json_open(&j, NULL, '{');
            json_str(&j, "name", gpusched_topo_level_name(t, l));
            json_u64(&j, "domains", gpusched_topo_domain_count(t, l));
            json_close(&j, '}');
        }
        json_close(&j, ']');
        json_u64(&j, "nodes", gpusched_topo_node_count(t));
        json_u64(&j, "gpus", s.gpus);
        json_open(&j, "health", '{');
        for (int h = 0; h < 4; h++)
            json_u64(&j, health_names[h], s.health[h]);
        json_close(&j, '}');
        json_open(&j, "gpu_states", '{');
        json_u64(&j, "free_usable", s.free_usable);
        json_u64(&j, "free_on_unavailable_nodes", s.free_unusable);
        json_u64(&j, "reserved", s.reserved);
        json_u64(&j, "allocated", s.allocated);
        json_close(&j, '}');
        json_num(&j, "utilization", util);
        json_open(&j, "jobs", '{');
        json_u64(&j, "running", s.jobs);
        json_u64(&j, "preemptible", s.preemptible);
        json_u64(&j, "movable", s.movable);
        json_u64(&j, "tenants", s.tenants);
        if (s.jobs) {
            json_i64(&j, "priority_min", s.prio_min);
            json_i64(&j, "priority_max", s.prio_max);
        }
        json_close(&j, '}');
        json_u64(&j, "reservations", s.resv);
        json_close(&j, '}');
        json_end(&j);
    } else {
        printf("%s: cluster snapshot, format version %u, %zu bytes\n", file, version, len);
        printf("topology:");
        for (uint32_t l = 0; l < nl; l++)
            printf(" %u %s%s", gpusched_topo_domain_count(t, l), gpusched_topo_level_name(t, l),
                   l + 1 < nl ? " /" : ",");
        printf(" %u nodes, %" PRIu64 " GPUs\n", gpusched_topo_node_count(t), s.gpus);
        printf("nodes: %u up, %u cordoned, %u draining, %u down\n", s.health[0], s.health[1], s.health[2],
               s.health[3]);
        printf("GPUs: %" PRIu64 " allocated (%.1f%%), %" PRIu64 " reserved, %" PRIu64 " free and usable, %" PRIu64
               " free on nodes that are not up\n",
               s.allocated, 100.0 * util, s.reserved, s.free_usable, s.free_unusable);
        printf("jobs: %u running (%u preemptible, %u movable) of %u tenants", s.jobs, s.preemptible, s.movable,
               s.tenants);
        if (s.jobs)
            printf(", priorities %d to %d", s.prio_min, s.prio_max);
        printf("\nreservations: %u\n", s.resv);
    }
    return CLI_OK;
}

static int check(const char *file, const char *data, size_t len, gpusched_cluster *c, bool as_json)
{
    const char *problem = NULL;
    char detail[600] = "";
    int rc = gpusched_cluster_check(c);
    if (rc) {
        snprintf(detail, sizeof detail, "invariants: %s", gpusched_cluster_errmsg(c));
        problem = detail;
    } else {
        size_t len2 = 0;
        char *again = malloc(len);
        if (!again || gpusched_cluster_snapshot(c, again, len, &len2))
            problem = "the restored cluster does not snapshot again";
        else if (len2 != len || memcmp(again, data, len) != 0)
            problem = "the restored cluster snapshots to other bytes";
        free(again);
    }
    gpusched_topo *t = gpusched_cluster_topo(c);
    if (as_json) {
        json j;
        json_init(&j, stdout);
        json_open(&j, NULL, '{');
        json_str(&j, "file", file);
        json_bool(&j, "ok", problem == NULL);
        json_str(&j, "problem", problem);
        json_u64(&j, "bytes", len);
        json_u64(&j, "nodes", gpusched_topo_node_count(t));
        json_u64(&j, "jobs", gpusched_cluster_job_count(c));
        json_u64(&j, "reservations", gpusched_cluster_resv_count(c));
        json_close(&j, '}');
        json_end(&j);
    } else if (problem) {
        cli_error("%s: %s", file, problem);
    } else {
        printf("%s: ok: checksum, invariants and round trip (%zu bytes, %u nodes, %u jobs, %u reservations)\n",
               file, len, gpusched_topo_node_count(t), gpusched_cluster_job_count(c),
               gpusched_cluster_resv_count(c));
    }
    return problem ? CLI_FAIL : CLI_OK;
}

static void json_failure(const char *file, const char *problem)
{
    json j;
    json_init(&j, stdout);
    json_open(&j, NULL, '{');
    json_str(&j, "file", file);
    json_bool(&j, "ok", false);
    json_str(&j, "problem", problem);
    json_close(&j, '}');
    json_end(&j);
}

int cmd_snapshot(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(snapshot_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    const char *action = argv[1];
    bool as_json = false;
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc - 1, argv + 1, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = true; break;
        case 'h': fputs(snapshot_usage, stdout); return CLI_OK;
        default: fputs(snapshot_usage, stderr); return CLI_USAGE;
        }
    }
    bool is_info = strcmp(action, "info") == 0, is_check = strcmp(action, "check") == 0;
    if (!is_info && !is_check) {
        cli_error("unknown snapshot command '%s': info or check", action);
        return CLI_USAGE;
    }
    if (argc - 1 - optind != 1) {
        cli_error("snapshot %s takes one FILE (gpusched snapshot --help)", action);
        return CLI_USAGE;
    }
    const char *file = argv[1 + optind];
    char *data = NULL, err[600] = "";
    size_t len = 0;
    if (read_file(file, &data, &len, err, sizeof err)) {
        cli_error("%s: %s", file, err);
        if (as_json && is_check)
            json_failure(file, err);
        return CLI_FAIL;
    }
    if (len < 8 || memcmp(data, "GSCLSNAP", 8) != 0) {
        snprintf(err, sizeof err, "not a cluster snapshot (no GSCLSNAP magic)%s",
                 len && data[0] != '\0' ? "; for a topology text use gpusched topo show or check" : "");
        cli_error("%s: %s", file, err);
        if (as_json && is_check)
            json_failure(file, err);
        free(data);
        return CLI_FAIL;
    }
    gpusched_cluster *cl = NULL;
    char rerr[512] = "";
    int rc = gpusched_cluster_restore(data, len, NULL, &cl, rerr, sizeof rerr);
    int out;
    if (rc) {
        snprintf(err, sizeof err, "does not restore (%s): %s", gpusched_err_name(rc), rerr);
        cli_error("%s: %s", file, err);
        if (as_json && is_check)
            json_failure(file, err);
        out = CLI_FAIL;
    } else {
        out = is_info ? info(file, data, len, cl, as_json) : check(file, data, len, cl, as_json);
    }
    gpusched_cluster_unref(cl);
    free(data);
    return out;
}
