/* gpusched place FILE --gpus N [constraints]: what-if placement with its
 * explanation; with -o, committed and written as a snapshot. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char place_usage[] =
    "usage: gpusched place FILE --gpus N [options] [--json]\n"
    "\n"
    "Asks where a gang of N GPUs would go on the cluster of FILE (a topology,\n"
    "a preset or a snapshot) and explains the answer. Nothing changes unless\n"
    "-o is given.\n"
    "\n"
    "the gang:\n"
    "  --gpus N              GPUs of the gang (required)\n"
    "  --pod-gpus G          pods of G GPUs, each on one node\n"
    "  --whole-nodes         whole, fully free nodes only (of --pod-gpus GPUs\n"
    "                        each if given, else of the largest node size)\n"
    "  --required LEVEL      the whole gang inside one domain of LEVEL\n"
    "  --preferred LEVEL     optimize locality down to LEVEL only\n"
    "  --slices S@LEVEL      slices of S GPUs, each inside one domain of LEVEL\n"
    "                        (72@rack: one NVL72 rack per 72 GPUs); up to 2, nested\n"
    "  --class NAME          GPUs of this class only\n"
    "  --label NAME          nodes with this label only (repeatable)\n"
    "  --no-label NAME       no node with this label (repeatable)\n"
    "  --avoid NODE          not this node, by name or index (repeatable)\n"
    "the job:\n"
    "  --job ID              its id (default: one above the largest running id)\n"
    "  --priority P          its priority (preemption evicts lower ones)\n"
    "  --preemptible, --movable   its flags, kept when it is committed\n"
    "what to ask:\n"
    "  --preempt             plan a preemption: the victims to evict for it to fit\n"
    "  --defrag              plan moves of movable jobs that make room\n"
    "  -o, --output OUT      commit (the placement, preemption or moves) and\n"
    "                        write the cluster's snapshot to OUT\n"
    "  --limit K             nodes listed in the text output (default 32, 0: all;\n"
    "                        --json lists every node)\n"
    "  --json                one JSON document\n"
    "\n"
    "LEVEL is a level name (or its index). Exit status: 0 it fits, 3 it does\n"
    "not fit (the explanation says why), 1 an error, 2 a bad command line.\n";

static const char *reason_name(uint32_t r)
{
    static const char *const names[] = {"ok", "no_gpus", "eligible", "split", "slices", "required", "not_run"};
    return r < sizeof names / sizeof names[0] ? names[r] : "unknown";
}

typedef struct place_args {
    uint64_t gpus, pod_gpus, job_id;
    int64_t priority;
    bool whole_nodes, preempt, defrag, as_json, have_job, have_pod;
    const char *required, *preferred, *cls, *output;
    const char *slices[GPUSCHED_MAX_SLICES];
    uint32_t nslices;
    const char *labels[64], *no_labels[64];
    uint32_t nlabels, nno_labels;
    const char **avoid;
    uint32_t navoid;
    uint32_t job_flags;
    uint64_t limit;
} place_args;

/* Builds the request from the arguments; messages name the bad argument. */
static int build_request(input *in, place_args *a, gpusched_place_request *req, uint32_t **avoid)
{
    gpusched_topo *t = in->topo;
    req->gpus = (uint32_t)a->gpus;
    if (a->whole_nodes) {
        req->split = GPUSCHED_SPLIT_WHOLE_NODES;
        req->pod_gpus = (uint32_t)a->pod_gpus;
    } else if (a->have_pod) {
        req->split = GPUSCHED_SPLIT_PODS;
        req->pod_gpus = (uint32_t)a->pod_gpus;
    }
    if (a->required && find_level(t, a->required, false, &req->required_level))
        return -1;
    if (a->preferred && find_level(t, a->preferred, false, &req->preferred_level))
        return -1;
    for (uint32_t i = 0; i < a->nslices; i++) {
        const char *at = strchr(a->slices[i], '@');
        uint64_t s;
        char num[32];
        size_t n = at ? (size_t)(at - a->slices[i]) : 0;
        if (!at || n == 0 || n >= sizeof num) {
            cli_error("--slices takes S@LEVEL (for example 72@rack), not '%s'", a->slices[i]);
            return -1;
        }
        memcpy(num, a->slices[i], n);
        num[n] = '\0';
        if (parse_u64(num, UINT32_MAX, &s) || s == 0) {
            cli_error("--slices %s: '%s' is not a GPU count", a->slices[i], num);
            return -1;
        }
        req->slice_gpus[i] = (uint32_t)s;
        if (find_level(t, at + 1, false, &req->slice_level[i]))
            return -1;
    }
    if (a->cls && gpusched_topo_class_find(t, a->cls, &req->gpu_class)) {
        cli_error("--class %s: no such GPU class (gpusched topo show lists them)", a->cls);
        return -1;
    }
    for (int forbid = 0; forbid < 2; forbid++) {
        const char *const *names = forbid ? a->no_labels : a->labels;
        uint32_t n = forbid ? a->nno_labels : a->nlabels;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t bit;
            if (gpusched_topo_label_find(t, names[i], &bit)) {
                cli_error("--%slabel %s: no such label (gpusched topo show lists them)", forbid ? "no-" : "",
                          names[i]);
                return -1;
            }
            if (forbid)
                req->labels_forbidden |= 1ull << bit;
            else
                req->labels_required |= 1ull << bit;
        }
    }
    if (a->navoid) {
        *avoid = malloc(sizeof **avoid * a->navoid);
        if (!*avoid)
            return -1;
        for (uint32_t i = 0; i < a->navoid; i++) {
            uint64_t v;
            if (gpusched_topo_node_find(t, a->avoid[i], &(*avoid)[i]) == 0)
                continue;
            if (parse_u64(a->avoid[i], gpusched_topo_node_count(t) - 1, &v) == 0) {
                (*avoid)[i] = (uint32_t)v;
                continue;
            }
            cli_error("--avoid %s: no node of that name or index", a->avoid[i]);
            return -1;
        }
        req->avoid_nodes = *avoid;
        req->avoid_count = a->navoid;
    }
    return 0;
}

static uint64_t fresh_job_id(gpusched_cluster *c)
{
    uint64_t max = 0, id;
    for (uint32_t i = 0; gpusched_cluster_job_at(c, i, &id) == 0; i++)
        if (id > max)
            max = id;
    for (uint32_t i = 0; gpusched_cluster_resv_at(c, i, &id) == 0; i++)
        if (id > max)
            max = id;
    return max + 1;
}

static void gpu_list(json *j, const char *key, uint64_t mask)
{
    json_open(j, key, '[');
    for (int g = 0; g < 64; g++)
        if (mask >> g & 1)
            json_u64(j, NULL, (uint64_t)g);
    json_close(j, ']');
}

static void node_list_json(json *j, gpusched_topo *t, const char *key, const uint32_t *nodes,
                           const uint64_t *masks, uint32_t n)
{
    uint32_t low = gpusched_topo_level_count(t) - 1;
    char name[GPUSCHED_MAX_NAME + 1], path[(GPUSCHED_MAX_NAME + 1) * GPUSCHED_MAX_LEVELS];
    json_open(j, key, '[');
    for (uint32_t i = 0; i < n; i++) {
        uint32_t d = 0;
        gpusched_topo_node_name(t, nodes[i], name, sizeof name);
        gpusched_topo_node_domain(t, nodes[i], low, &d);
        gpusched_topo_domain_name(t, low, d, path, sizeof path);
        json_open(j, NULL, '{');
        json_u64(j, "node", nodes[i]);
        json_str(j, "name", name);
        json_str(j, "domain", path);
        gpu_list(j, "gpus", masks[i]);
        json_close(j, '}');
    }
    json_close(j, ']');
}

static void node_list_text(gpusched_topo *t, const uint32_t *nodes, const uint64_t *masks, uint32_t n,
                           uint64_t limit)
{
    uint32_t low = gpusched_topo_level_count(t) - 1;
    char name[GPUSCHED_MAX_NAME + 1], path[(GPUSCHED_MAX_NAME + 1) * GPUSCHED_MAX_LEVELS], gpus[200];
    uint32_t shown = limit && limit < n ? (uint32_t)limit : n;
    for (uint32_t i = 0; i < shown; i++) {
        uint32_t d = 0;
        gpusched_topo_node_name(t, nodes[i], name, sizeof name);
        gpusched_topo_node_domain(t, nodes[i], low, &d);
        gpusched_topo_domain_name(t, low, d, path, sizeof path);
        mask_to_ranges(masks[i], gpus, sizeof gpus);
        printf("    %-16s %-12s %2d GPUs [%s]\n", path, name, popcount64(masks[i]), gpus);
    }
    if (shown < n)
        printf("    ... and %u more nodes (--limit 0 lists them all)\n", n - shown);
}

static int report(input *in, place_args *a, const gpusched_place_request *req, int rc,
                  gpusched_place_result *res, gpusched_preempt_plan *plan)
{
    gpusched_topo *t = in->topo;
    uint32_t nl = gpusched_topo_level_count(t);
    const uint32_t *nodes = NULL, *pods = NULL;
    const uint64_t *masks = NULL;
    uint32_t n = 0, npods = 0;
    bool fits = rc == 0;
    if (fits) {
        gpusched_place_result_nodes(res, &nodes, &masks, &n);
        gpusched_place_result_pods(res, &pods, &npods);
    }
    const uint64_t *victims = NULL;
    uint32_t nvictims = 0, nmoves = 0;
    uint64_t cost = 0, evicted = 0;
    if (plan && fits) {
        gpusched_preempt_plan_victims(plan, &victims, &nvictims);
        gpusched_preempt_plan_totals(plan, &cost, &evicted);
        nmoves = gpusched_preempt_plan_move_count(plan);
    }
    const char *what = a->preempt ? "preemption" : a->defrag ? "defragmentation" : "placement";
    const char *message = gpusched_place_result_message(res);
    bool committed = fits && a->output;
    if (a->as_json) {
        json j;
        json_init(&j, stdout);
        json_open(&j, NULL, '{');
        json_str(&j, "file", in->name);
        json_str(&j, "kind", what);
        json_u64(&j, "job", req->job->id);
        json_u64(&j, "gpus", req->gpus);
        json_bool(&j, "fits", fits);
        json_str(&j, "reason", reason_name(gpusched_place_result_reason(res)));
        json_str(&j, "message", message);
        json_bool(&j, "committed", committed);
        if (committed)
            json_str(&j, "output", a->output);
        node_list_json(&j, t, "nodes", nodes, masks, n);
        if (npods) {
            json_open(&j, "pods", '[');
            for (uint32_t i = 0; i < npods; i++)
                json_u64(&j, NULL, pods[i]);
            json_close(&j, ']');
        }
        json_open(&j, "domains", '{');
        char path[(GPUSCHED_MAX_NAME + 1) * GPUSCHED_MAX_LEVELS];
        for (uint32_t l = 0; fits && l < nl; l++) {
            const uint32_t *d;
            uint32_t nd = 0;
            gpusched_place_result_domains(res, l, &d, &nd);
            json_open(&j, gpusched_topo_level_name(t, l), '[');
            for (uint32_t i = 0; i < nd; i++) {
                gpusched_topo_domain_name(t, l, d[i], path, sizeof path);
                json_str(&j, NULL, path);
            }
            json_close(&j, ']');
        }
        json_close(&j, '}');
        const uint32_t *loc;
        uint32_t nloc = 0;
        gpusched_place_result_locality(res, &loc, &nloc);
        json_open(&j, "locality", '{');
        for (uint32_t l = 0; l < nloc; l++)
            json_u64(&j, level_name(t, l), loc[l]);
        json_close(&j, '}');
        if (a->preempt) {
            json_open(&j, "victims", '[');
            for (uint32_t i = 0; i < nvictims; i++)
                json_u64(&j, NULL, victims[i]);
            json_close(&j, ']');
        }
        if (a->defrag) {
            json_open(&j, "moves", '[');
            for (uint32_t m = 0; m < nmoves; m++) {
                uint64_t id;
                const uint32_t *mn;
                const uint64_t *mm;
                uint32_t k;
                gpusched_preempt_plan_move(plan, m, &id, &mn, &mm, &k);
                json_open(&j, NULL, '{');
                json_u64(&j, "job", id);
                node_list_json(&j, t, "nodes", mn, mm, k);
                json_close(&j, '}');
            }
            json_close(&j, ']');
        }
        if (plan && fits) {
            json_u64(&j, "cost", cost);
            json_u64(&j, "gpus_moved_or_evicted", evicted);
        }
        json_close(&j, '}');
        json_end(&j);
    } else if (!fits) {
        printf("does not fit: %u GPUs for job %" PRIu64 " (%s)\n", req->gpus, req->job->id,
               reason_name(gpusched_place_result_reason(res)));
        printf("  why: %s\n", message);
    } else {
        printf("fits: %u GPUs for job %" PRIu64 " on %u node%s (%s)\n", req->gpus, req->job->id, n, n == 1 ? "" : "s",
               committed ? "committed" : "plan only, nothing changed");
        printf("  why: %s\n", message);
        const uint32_t *loc;
        uint32_t nloc = 0;
        gpusched_place_result_locality(res, &loc, &nloc);
        printf("  locality:");
        for (uint32_t l = 0; l < nloc; l++)
            printf(" %s %u%s", level_name(t, l), loc[l], l + 1 < nloc ? "," : "");
        printf("\n");
        if (a->preempt) {
            printf("  victims: %u jobs holding %" PRIu64 " GPUs, cost %" PRIu64 "%s", nvictims, evicted, cost,
                   nvictims ? ":" : "");
            for (uint32_t i = 0; i < nvictims && i < 32; i++)
                printf(" %" PRIu64, victims[i]);
            printf("%s\n", nvictims > 32 ? " ..." : "");
        }
        if (a->defrag) {
            printf("  moves: %u jobs holding %" PRIu64 " GPUs, cost %" PRIu64 "\n", nmoves, evicted, cost);
            for (uint32_t m = 0; m < nmoves; m++) {
                uint64_t id;
                const uint32_t *mn;
                const uint64_t *mm;
                uint32_t k;
                gpusched_preempt_plan_move(plan, m, &id, &mn, &mm, &k);
                printf("  job %" PRIu64 " moves to:\n", id);
                node_list_text(t, mn, mm, k, a->limit);
            }
        }
        printf("  nodes:\n");
        node_list_text(t, nodes, masks, n, a->limit);
        if (committed)
            printf("  snapshot written to %s\n", a->output);
    }
    return fits ? CLI_OK : CLI_NOFIT;
}

static int save_snapshot(gpusched_cluster *c, const char *path)
{
    size_t len = 0;
    int rc = gpusched_cluster_snapshot(c, NULL, 0, &len);
    void *buf = NULL;
    if (rc == 0 || rc == GPUSCHED_ERANGE) {
        buf = malloc(len);
        rc = buf ? gpusched_cluster_snapshot(c, buf, len, &len) : GPUSCHED_ENOMEM;
    }
    char err[512];
    if (rc)
        cli_error("snapshot: %s", gpusched_strerror(rc));
    else if (write_file(path, buf, len, err, sizeof err))
        cli_error("%s", err), rc = -1;
    free(buf);
    return rc;
}

static int add_name(const char **list, uint32_t *n, uint32_t cap, const char *v, const char *opt)
{
    if (*n >= cap) {
        cli_error("%s given more than %u times", opt, cap);
        return -1;
    }
    list[(*n)++] = v;
    return 0;
}

int cmd_place(int argc, char **argv)
{
    place_args a;
    memset(&a, 0, sizeof a);
    a.limit = 32;
    bool have_gpus = false;
    enum { O_GPUS = 256, O_POD, O_WHOLE, O_REQ, O_PREF, O_SLICES, O_CLASS, O_LABEL, O_NOLABEL, O_AVOID,
           O_JOB, O_PRIO, O_PREEMPTIBLE, O_MOVABLE, O_PREEMPT, O_DEFRAG, O_LIMIT, O_JSON };
    static const struct option opts[] = {
        {"gpus", required_argument, NULL, O_GPUS}, {"pod-gpus", required_argument, NULL, O_POD},
        {"whole-nodes", no_argument, NULL, O_WHOLE}, {"required", required_argument, NULL, O_REQ},
        {"preferred", required_argument, NULL, O_PREF}, {"slices", required_argument, NULL, O_SLICES},
        {"class", required_argument, NULL, O_CLASS}, {"label", required_argument, NULL, O_LABEL},
        {"no-label", required_argument, NULL, O_NOLABEL}, {"avoid", required_argument, NULL, O_AVOID},
        {"job", required_argument, NULL, O_JOB}, {"priority", required_argument, NULL, O_PRIO},
        {"preemptible", no_argument, NULL, O_PREEMPTIBLE}, {"movable", no_argument, NULL, O_MOVABLE},
        {"preempt", no_argument, NULL, O_PREEMPT}, {"defrag", no_argument, NULL, O_DEFRAG},
        {"output", required_argument, NULL, 'o'}, {"limit", required_argument, NULL, O_LIMIT},
        {"json", no_argument, NULL, O_JSON}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
    const char *avoid_buf[1024];
    a.avoid = avoid_buf;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case O_GPUS:
            bad = parse_u64(optarg, UINT32_MAX, &a.gpus) || a.gpus == 0;
            have_gpus = true;
            break;
        case O_POD: bad = parse_u64(optarg, GPUSCHED_MAX_NODE_GPUS, &a.pod_gpus); a.have_pod = true; break;
        case O_WHOLE: a.whole_nodes = true; break;
        case O_REQ: a.required = optarg; break;
        case O_PREF: a.preferred = optarg; break;
        case O_SLICES:
            if (add_name(a.slices, &a.nslices, GPUSCHED_MAX_SLICES, optarg, "--slices"))
                return CLI_USAGE;
            break;
        case O_CLASS: a.cls = optarg; break;
        case O_LABEL:
            if (add_name(a.labels, &a.nlabels, 64, optarg, "--label"))
                return CLI_USAGE;
            break;
        case O_NOLABEL:
            if (add_name(a.no_labels, &a.nno_labels, 64, optarg, "--no-label"))
                return CLI_USAGE;
            break;
        case O_AVOID:
            if (add_name(avoid_buf, &a.navoid, 1024, optarg, "--avoid"))
                return CLI_USAGE;
            break;
        case O_JOB: bad = parse_u64(optarg, UINT64_MAX, &a.job_id); a.have_job = true; break;
        case O_PRIO: bad = parse_i64(optarg, &a.priority) || a.priority < INT32_MIN || a.priority > INT32_MAX; break;
        case O_PREEMPTIBLE: a.job_flags |= GPUSCHED_JOB_FLAG_PREEMPTIBLE; break;
        case O_MOVABLE: a.job_flags |= GPUSCHED_JOB_FLAG_MOVABLE; break;
        case O_PREEMPT: a.preempt = true; break;
        case O_DEFRAG: a.defrag = true; break;
        case 'o': a.output = optarg; break;
        case O_LIMIT: bad = parse_u64(optarg, UINT32_MAX, &a.limit); break;
        case O_JSON: a.as_json = true; break;
        case 'h': fputs(place_usage, stdout); return CLI_OK;
        default: fputs(place_usage, stderr); return CLI_USAGE;
        }
        if (bad) {
            cli_error("%s: '%s' is not a valid value (gpusched place --help)", argv[optind - 1], optarg);
            return CLI_USAGE;
        }
    }
    if (optind != argc - 1) {
        cli_error("place takes one FILE (gpusched place --help)");
        return CLI_USAGE;
    }
    if (!have_gpus) {
        cli_error("place needs --gpus N (gpusched place --help)");
        return CLI_USAGE;
    }
    if (a.preempt && a.defrag) {
        cli_error("--preempt and --defrag ask different questions: give one");
        return CLI_USAGE;
    }
    input in;
    if (input_load(&in, argv[optind]))
        return CLI_FAIL;
    gpusched_place_request req = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job = GPUSCHED_JOB_INIT;
    uint32_t *avoid = NULL;
    gpusched_placer *placer = NULL;
    gpusched_place_result *res = NULL;
    gpusched_preempt_plan *plan = NULL;
    int out = CLI_FAIL;
    if (build_request(&in, &a, &req, &avoid))
        goto done;
    job.id = a.have_job ? a.job_id : fresh_job_id(in.cluster);
    job.priority = (int32_t)a.priority;
    job.flags = a.job_flags;
    req.job = &job;
    if (a.output)
        req.flags |= GPUSCHED_PLACE_FLAG_COMMIT;
    int rc = gpusched_placer_new(in.cluster, NULL, &placer);
    if (!rc)
        rc = gpusched_place_result_new(NULL, &res);
    if (!rc && (a.preempt || a.defrag))
        rc = gpusched_preempt_plan_new(NULL, &plan);
    if (rc) {
        cli_error("%s", gpusched_strerror(rc));
        goto done;
    }
    rc = a.preempt ? gpusched_placer_preempt(placer, &req, res, plan)
         : a.defrag ? gpusched_placer_defrag(placer, &req, res, plan)
                    : gpusched_placer_place(placer, &req, res);
    if (rc && rc != GPUSCHED_ENOSPC) {
        cli_error("%s: %s", gpusched_err_name(rc), gpusched_placer_errmsg(placer));
        goto done;
    }
    if (rc == 0 && a.output && save_snapshot(in.cluster, a.output))
        goto done;
    out = report(&in, &a, &req, rc, res, plan);
done:
    gpusched_preempt_plan_free(plan);
    gpusched_place_result_free(res);
    gpusched_placer_free(placer);
    free(avoid);
    input_free(&in);
    return out;
}
