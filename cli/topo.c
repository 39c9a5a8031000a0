/* gpusched topo show|check|convert FILE */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char topo_usage[] =
    "usage: gpusched topo show FILE [--json]\n"
    "       gpusched topo check FILE [--json]\n"
    "       gpusched topo convert FILE [--to text|json|snapshot] [-o OUT] [--json]\n"
    "\n"
    "show     levels (domains per level, nodes and GPUs per domain), nodes,\n"
    "         GPUs, GPUs per node, classes, labels, and the memory the\n"
    "         topology and an empty cluster state take\n"
    "check    parses FILE (an error names line and column) and checks that\n"
    "         its export parses back to an identical topology\n"
    "convert  writes the topology of FILE as the canonical text (default),\n"
    "         as JSON (levels, classes, labels, every node), or as the\n"
    "         snapshot of an empty cluster; -o OUT writes to a file (default\n"
    "         standard output). Text and snapshot convert into each other\n"
    "         without loss. FILE may be a snapshot: its topology is taken.\n";

/* The topology's text export, malloc'd and NUL-terminated. */
static char *export_text(gpusched_topo *t, size_t *len)
{
    size_t need = 0;
    if (gpusched_topo_export(t, NULL, 0, &need) && need == 0)
        return NULL;
    char *buf = malloc(need + 1);
    if (buf && gpusched_topo_export(t, buf, need + 1, len)) {
        free(buf);
        return NULL;
    }
    return buf;
}

typedef struct level_stats {
    uint32_t domains;
    uint32_t min_nodes, max_nodes;
    uint64_t min_gpus, max_gpus;
} level_stats;

static int show(input *in, bool as_json)
{
    gpusched_topo *t = in->topo;
    uint32_t nl = gpusched_topo_level_count(t), nn = gpusched_topo_node_count(t);
    uint32_t ncls = gpusched_topo_class_count(t), nlab = gpusched_topo_label_count(t);
    uint64_t ngpus = gpusched_topo_gpu_count(t);
    uint32_t *gpus = malloc(sizeof *gpus * nn), *cls = malloc(sizeof *cls * nn);
    uint64_t *labels = malloc(sizeof *labels * nn), *prefix = malloc(sizeof *prefix * ((size_t)nn + 1));
    uint64_t class_gpus[GPUSCHED_MAX_CLASSES] = {0}, label_nodes[GPUSCHED_MAX_LABELS] = {0};
    uint32_t per_node[GPUSCHED_MAX_NODE_GPUS + 1] = {0};
    level_stats ls[GPUSCHED_MAX_LEVELS];
    if (!gpus || !cls || !labels || !prefix || gpusched_topo_nodes_info(t, 0, nn, gpus, cls, labels)) {
        cli_error("%s: out of memory", in->name);
        free(gpus), free(cls), free(labels), free(prefix);
        return CLI_FAIL;
    }
    prefix[0] = 0;
    for (uint32_t i = 0; i < nn; i++) {
        prefix[i + 1] = prefix[i] + gpus[i];
        per_node[gpus[i]]++;
        if (cls[i] < GPUSCHED_MAX_CLASSES)
            class_gpus[cls[i]] += gpus[i];
        for (uint32_t b = 0; b < nlab; b++)
            label_nodes[b] += labels[i] >> b & 1;
    }
    for (uint32_t l = 0; l < nl; l++) {
        level_stats *s = &ls[l];
        s->domains = gpusched_topo_domain_count(t, l);
        s->min_nodes = UINT32_MAX, s->max_nodes = 0, s->min_gpus = UINT64_MAX, s->max_gpus = 0;
        for (uint32_t d = 0; d < s->domains; d++) {
            uint32_t first, count;
            gpusched_topo_domain_nodes(t, l, d, &first, &count);
            uint64_t g = prefix[first + count] - prefix[first];
            if (count < s->min_nodes) s->min_nodes = count;
            if (count > s->max_nodes) s->max_nodes = count;
            if (g < s->min_gpus) s->min_gpus = g;
            if (g > s->max_gpus) s->max_gpus = g;
        }
    }
    size_t topo_bytes = gpusched_topo_memory_bytes(t);
    size_t state_bytes = gpusched_cluster_memory_bytes(in->cluster);
    if (as_json) {
        json j;
        json_init(&j, stdout);
        json_open(&j, NULL, '{');
        json_str(&j, "file", in->name);
        json_str(&j, "kind", input_kind_name(in->kind));
        json_open(&j, "levels", '[');
        for (uint32_t l = 0; l < nl; l++) {
            json_open(&j, NULL, '{');
            json_str(&j, "name", gpusched_topo_level_name(t, l));
            json_u64(&j, "domains", ls[l].domains);
            json_u64(&j, "min_nodes", ls[l].min_nodes);
            json_u64(&j, "max_nodes", ls[l].max_nodes);
            json_u64(&j, "min_gpus", ls[l].min_gpus);
            json_u64(&j, "max_gpus", ls[l].max_gpus);
            json_close(&j, '}');
        }
        json_close(&j, ']');
        json_u64(&j, "nodes", nn);
        json_u64(&j, "gpus", ngpus);
        json_open(&j, "gpus_per_node", '{');
        for (uint32_t g = 0; g <= GPUSCHED_MAX_NODE_GPUS; g++)
            if (per_node[g]) {
                char k[8];
                snprintf(k, sizeof k, "%u", g);
                json_u64(&j, k, per_node[g]);
            }
        json_close(&j, '}');
        json_open(&j, "classes", '[');
        for (uint32_t c = 0; c < ncls; c++) {
            json_open(&j, NULL, '{');
            json_str(&j, "name", gpusched_topo_class_name(t, c));
            json_u64(&j, "gpus", class_gpus[c]);
            json_close(&j, '}');
        }
        json_close(&j, ']');
        json_open(&j, "labels", '[');
        for (uint32_t b = 0; b < nlab; b++) {
            json_open(&j, NULL, '{');
            json_str(&j, "name", gpusched_topo_label_name(t, b));
            json_u64(&j, "nodes", label_nodes[b]);
            json_close(&j, '}');
        }
        json_close(&j, ']');
        json_open(&j, "memory", '{');
        json_u64(&j, "topology_bytes", topo_bytes);
        json_u64(&j, "cluster_state_bytes", state_bytes);
        json_num(&j, "bytes_per_gpu", ngpus ? (double)(topo_bytes + state_bytes) / (double)ngpus : 0);
        json_close(&j, '}');
        json_close(&j, '}');
        json_end(&j);
    } else {
        printf("%s (%s)\n", in->name, input_kind_name(in->kind));
        printf("levels: %u\n", nl);
        printf("  %-12s %10s %17s %21s\n", "level", "domains", "nodes per domain", "GPUs per domain");
        for (uint32_t l = 0; l < nl; l++) {
            char nodes[40], g[48];
            if (ls[l].min_nodes == ls[l].max_nodes)
                snprintf(nodes, sizeof nodes, "%u", ls[l].min_nodes);
            else
                snprintf(nodes, sizeof nodes, "%u-%u", ls[l].min_nodes, ls[l].max_nodes);
            if (ls[l].min_gpus == ls[l].max_gpus)
                snprintf(g, sizeof g, "%llu", (unsigned long long)ls[l].min_gpus);
            else
                snprintf(g, sizeof g, "%llu-%llu", (unsigned long long)ls[l].min_gpus,
                         (unsigned long long)ls[l].max_gpus);
            printf("  %-12s %10u %17s %21s\n", gpusched_topo_level_name(t, l), ls[l].domains, nodes, g);
        }
        printf("nodes: %u\nGPUs: %llu\nGPUs per node:", nn, (unsigned long long)ngpus);
        for (uint32_t g = 0; g <= GPUSCHED_MAX_NODE_GPUS; g++)
            if (per_node[g])
                printf(" %u x %u", per_node[g], g);
        printf("\nclasses:");
        for (uint32_t c = 0; c < ncls; c++)
            printf(" %s (%llu GPUs)", gpusched_topo_class_name(t, c), (unsigned long long)class_gpus[c]);
        printf("\nlabels:");
        if (!nlab)
            printf(" none");
        for (uint32_t b = 0; b < nlab; b++)
            printf(" %s (%llu nodes)", gpusched_topo_label_name(t, b), (unsigned long long)label_nodes[b]);
        printf("\nmemory: topology %zu bytes, empty cluster state %zu bytes, %.2f bytes per GPU\n",
               topo_bytes, state_bytes, ngpus ? (double)(topo_bytes + state_bytes) / (double)ngpus : 0.0);
    }
    free(gpus), free(cls), free(labels), free(prefix);
    return CLI_OK;
}

/* Whether two topologies are identical: levels, domains (node ranges and
 * names), nodes (names, GPUs, classes, labels), class and label names.
 * The export of a preset is one ranged line and that of a parsed topology
 * one line per node, so texts are not compared: what they describe is. */
static const char *topo_differs(gpusched_topo *a, gpusched_topo *b, char *why, size_t cap)
{
    uint32_t nl = gpusched_topo_level_count(a), nn = gpusched_topo_node_count(a);
    if (nl != gpusched_topo_level_count(b) || nn != gpusched_topo_node_count(b) ||
        gpusched_topo_gpu_count(a) != gpusched_topo_gpu_count(b))
        return "the levels, nodes or GPUs differ";
    for (uint32_t l = 0; l < nl; l++) {
        if (strcmp(gpusched_topo_level_name(a, l), gpusched_topo_level_name(b, l)) != 0)
            return "a level's name differs";
        uint32_t nd = gpusched_topo_domain_count(a, l);
        if (nd != gpusched_topo_domain_count(b, l))
            return "a level's domain count differs";
        char pa[(GPUSCHED_MAX_NAME + 1) * GPUSCHED_MAX_LEVELS], pb[sizeof pa];
        for (uint32_t d = 0; d < nd; d++) {
            uint32_t fa, ca, fb, cb;
            gpusched_topo_domain_nodes(a, l, d, &fa, &ca);
            gpusched_topo_domain_nodes(b, l, d, &fb, &cb);
            gpusched_topo_domain_name(a, l, d, pa, sizeof pa);
            gpusched_topo_domain_name(b, l, d, pb, sizeof pb);
            if (fa != fb || ca != cb || strcmp(pa, pb) != 0) {
                snprintf(why, cap, "domain %u of level %s differs (%.200s, %.200s)", d, gpusched_topo_level_name(a, l), pa,
                         pb);
                return why;
            }
        }
    }
    uint32_t ncls = gpusched_topo_class_count(a), nlab = gpusched_topo_label_count(a);
    if (ncls != gpusched_topo_class_count(b) || nlab != gpusched_topo_label_count(b))
        return "the classes or labels differ";
    for (uint32_t c = 0; c < ncls; c++)
        if (strcmp(gpusched_topo_class_name(a, c), gpusched_topo_class_name(b, c)) != 0)
            return "a class name differs";
    for (uint32_t c = 0; c < nlab; c++)
        if (strcmp(gpusched_topo_label_name(a, c), gpusched_topo_label_name(b, c)) != 0)
            return "a label name differs";
    char na[GPUSCHED_MAX_NAME + 1], nb[sizeof na];
    for (uint32_t n = 0; n < nn; n++) {
        gpusched_topo_node_name(a, n, na, sizeof na);
        gpusched_topo_node_name(b, n, nb, sizeof nb);
        if (strcmp(na, nb) != 0 || gpusched_topo_node_gpus(a, n) != gpusched_topo_node_gpus(b, n) ||
            gpusched_topo_node_class(a, n) != gpusched_topo_node_class(b, n) ||
            gpusched_topo_node_labels(a, n) != gpusched_topo_node_labels(b, n)) {
            snprintf(why, cap, "node %u differs (%s, %s)", n, na, nb);
            return why;
        }
    }
    return NULL;
}

/* The export parses back to an identical topology (topo.h), and exporting
 * that again gives the same text as exporting it once more: the text form
 * is stable after one round. */
static int check(input *in, bool as_json)
{
    size_t len = 0, len2 = 0, len3 = 0;
    char *text = export_text(in->topo, &len), *again = NULL, *third = NULL, err[512] = "", why[480];
    gpusched_topo *back = NULL, *back2 = NULL;
    const char *problem = NULL, *diff;
    if (!text)
        problem = "the export failed";
    else if (gpusched_topo_parse(text, len, NULL, &back, err, sizeof err))
        problem = err;
    else if ((diff = topo_differs(in->topo, back, why, sizeof why)) != NULL)
        snprintf(err, sizeof err, "the export parses back to another topology: %.400s", diff), problem = err;
    else if (!(again = export_text(back, &len2)) ||
             gpusched_topo_parse(again, len2, NULL, &back2, err, sizeof err) || !(third = export_text(back2, &len3)))
        problem = "the export of the parsed export failed";
    else if (len2 != len3 || memcmp(again, third, len2) != 0)
        problem = "the text form is not stable: exporting a parsed export changes it";
    gpusched_topo *t = in->topo;
    if (as_json) {
        json j;
        json_init(&j, stdout);
        json_open(&j, NULL, '{');
        json_str(&j, "file", in->name);
        json_bool(&j, "ok", problem == NULL);
        json_str(&j, "problem", problem);
        json_u64(&j, "levels", gpusched_topo_level_count(t));
        json_u64(&j, "nodes", gpusched_topo_node_count(t));
        json_u64(&j, "gpus", gpusched_topo_gpu_count(t));
        json_u64(&j, "export_bytes", len);
        json_close(&j, '}');
        json_end(&j);
    } else if (problem) {
        cli_error("%s: %s", in->name, problem);
    } else {
        printf("%s: ok: %u levels, %u nodes, %llu GPUs; the export (%zu bytes) parses back identically\n",
               in->name, gpusched_topo_level_count(t), gpusched_topo_node_count(t),
               (unsigned long long)gpusched_topo_gpu_count(t), len);
    }
    gpusched_topo_unref(back);
    gpusched_topo_unref(back2);
    free(text), free(again), free(third);
    return problem ? CLI_FAIL : CLI_OK;
}

static void json_topology(gpusched_topo *t, FILE *f)
{
    uint32_t nl = gpusched_topo_level_count(t), nn = gpusched_topo_node_count(t);
    json j;
    json_init(&j, f);
    json_open(&j, NULL, '{');
    json_open(&j, "levels", '[');
    for (uint32_t l = 0; l < nl; l++)
        json_str(&j, NULL, gpusched_topo_level_name(t, l));
    json_close(&j, ']');
    json_open(&j, "classes", '[');
    for (uint32_t c = 0; c < gpusched_topo_class_count(t); c++)
        json_str(&j, NULL, gpusched_topo_class_name(t, c));
    json_close(&j, ']');
    json_open(&j, "labels", '[');
    for (uint32_t b = 0; b < gpusched_topo_label_count(t); b++)
        json_str(&j, NULL, gpusched_topo_label_name(t, b));
    json_close(&j, ']');
    json_open(&j, "nodes", '[');
    char name[GPUSCHED_MAX_NAME + 1], path[(GPUSCHED_MAX_NAME + 1) * GPUSCHED_MAX_LEVELS];
    for (uint32_t n = 0; n < nn; n++) {
        uint32_t d = 0;
        json_open(&j, NULL, '{');
        gpusched_topo_node_name(t, n, name, sizeof name);
        json_str(&j, "name", name);
        gpusched_topo_node_domain(t, n, nl - 1, &d);
        gpusched_topo_domain_name(t, nl - 1, d, path, sizeof path);
        json_str(&j, "domain", path);
        json_u64(&j, "gpus", gpusched_topo_node_gpus(t, n));
        json_str(&j, "class", gpusched_topo_class_name(t, gpusched_topo_node_class(t, n)));
        json_open(&j, "labels", '[');
        uint64_t lab = gpusched_topo_node_labels(t, n);
        for (uint32_t b = 0; b < 64; b++)
            if (lab >> b & 1)
                json_str(&j, NULL, gpusched_topo_label_name(t, b));
        json_close(&j, ']');
        json_close(&j, '}');
    }
    json_close(&j, ']');
    json_close(&j, '}');
    json_end(&j);
}

static int convert(input *in, const char *to, const char *out)
{
    char err[512];
    if (strcmp(to, "text") == 0) {
        size_t len;
        char *text = export_text(in->topo, &len);
        int rc = text ? write_file(out, text, len, err, sizeof err) : -1;
        if (rc)
            cli_error("%s", text ? err : "the export failed");
        free(text);
        return rc ? CLI_FAIL : CLI_OK;
    }
    if (strcmp(to, "json") == 0) {
        FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
        if (!f) {
            cli_error("cannot create %s", out);
            return CLI_FAIL;
        }
        json_topology(in->topo, f);
        if (f != stdout && fclose(f)) {
            cli_error("cannot write %s", out);
            return CLI_FAIL;
        }
        return CLI_OK;
    }
    if (strcmp(to, "snapshot") == 0) {
        if (strcmp(out, "-") == 0 && isatty(fileno(stdout))) {
            cli_error("a snapshot is binary: give -o FILE or redirect standard output");
            return CLI_USAGE;
        }
        /* A snapshot of an empty cluster on the topology: a snapshot given
         * as input is reduced to its topology, like every other input. */
        gpusched_cluster *empty = NULL;
        size_t len = 0;
        void *buf = NULL;
        int rc = gpusched_cluster_new(in->topo, NULL, &empty);
        if (!rc)
            rc = gpusched_cluster_snapshot(empty, NULL, 0, &len);
        if (rc == GPUSCHED_ERANGE || (rc == 0 && len)) {
            buf = malloc(len);
            rc = buf ? gpusched_cluster_snapshot(empty, buf, len, &len) : GPUSCHED_ENOMEM;
        }
        if (rc)
            cli_error("snapshot: %s", gpusched_strerror(rc));
        else if (write_file(out, buf, len, err, sizeof err))
            cli_error("%s", err), rc = -1;
        free(buf);
        gpusched_cluster_unref(empty);
        return rc ? CLI_FAIL : CLI_OK;
    }
    cli_error("--to takes text, json or snapshot, not '%s'", to);
    return CLI_USAGE;
}

int cmd_topo(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(topo_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    const char *action = argv[1];
    bool as_json = false;
    const char *to = "text", *out = "-";
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"to", required_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc - 1, argv + 1, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = true; break;
        case 't': to = optarg; break;
        case 'o': out = optarg; break;
        case 'h': fputs(topo_usage, stdout); return CLI_OK;
        default: fputs(topo_usage, stderr); return CLI_USAGE;
        }
    }
    int rest = argc - 1 - optind;
    if (rest != 1) {
        cli_error("topo %s takes one FILE (gpusched topo --help)", action);
        return CLI_USAGE;
    }
    const char *file = argv[1 + optind];
    bool is_convert = strcmp(action, "convert") == 0;
    if (!is_convert && (strcmp(to, "text") != 0 || strcmp(out, "-") != 0)) {
        cli_error("--to and -o are for topo convert");
        return CLI_USAGE;
    }
    if (strcmp(action, "show") && strcmp(action, "check") && !is_convert) {
        cli_error("unknown topo command '%s': show, check or convert", action);
        return CLI_USAGE;
    }
    if (is_convert && as_json)
        to = "json";
    input in;
    if (input_load(&in, file)) {
        if (strcmp(action, "check") == 0 && as_json) {
            json j;
            json_init(&j, stdout);
            json_open(&j, NULL, '{');
            json_str(&j, "file", file);
            json_bool(&j, "ok", false);
            json_str(&j, "problem", in.err);
            json_close(&j, '}');
            json_end(&j);
        }
        return CLI_FAIL;
    }
    int rc = strcmp(action, "show") == 0 ? show(&in, as_json)
             : strcmp(action, "check") == 0 ? check(&in, as_json)
             : convert(&in, to, out);
    input_free(&in);
    return rc;
}
