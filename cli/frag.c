/* gpusched frag FILE: fragmentation per level. */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static const char frag_usage[] =
    "usage: gpusched frag FILE [--json]\n"
    "\n"
    "Fragmentation of the cluster in FILE (a snapshot; a topology gives an\n"
    "empty cluster), per level from the top down to nodes (doc/cluster.md):\n"
    "  domains         domains of the level\n"
    "  fully free      domains whose every node is up with every GPU free\n"
    "  gang GPUs       GPUs in fully free domains: the largest gang made of\n"
    "                  whole domains of the level that could start now\n"
    "  stranded GPUs   free usable GPUs outside fully free domains (what such\n"
    "                  a gang cannot use), also as a share of the free GPUs\n"
    "  largest free    the most free usable GPUs in one domain\n"
    "and the histogram of nodes by free usable GPUs.\n";

typedef struct frag_level {
    uint32_t domains, free_domains;
    uint64_t stranded, gang, largest;
} frag_level;

int cmd_frag(int argc, char **argv)
{
    bool as_json = false;
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = true; break;
        case 'h': fputs(frag_usage, stdout); return CLI_OK;
        default: fputs(frag_usage, stderr); return CLI_USAGE;
        }
    }
    if (optind != argc - 1) {
        cli_error("frag takes one FILE (gpusched frag --help)");
        return CLI_USAGE;
    }
    input in;
    if (input_load(&in, argv[optind]))
        return CLI_FAIL;
    gpusched_topo *t = in.topo;
    gpusched_cluster *cl = in.cluster;
    uint32_t nl = gpusched_topo_level_count(t);
    frag_level lv[GPUSCHED_MAX_LEVELS + 1];
    uint32_t hist[GPUSCHED_MAX_NODE_GPUS + 1] = {0}, hlen = 0;
    uint64_t free_gpus = 0;
    int rc = gpusched_cluster_domain_free_gpus(cl, GPUSCHED_NONE, 0, &free_gpus);
    if (!rc)
        rc = gpusched_cluster_domain_histogram(cl, GPUSCHED_NONE, 0, hist, GPUSCHED_MAX_NODE_GPUS + 1, &hlen);
    for (uint32_t l = 0; !rc && l <= nl; l++) {
        frag_level *f = &lv[l];
        rc = gpusched_cluster_frag(cl, l, &f->free_domains, &f->stranded, &f->gang);
        f->largest = 0;
        if (l < nl) {
            f->domains = gpusched_topo_domain_count(t, l);
            for (uint32_t d = 0; !rc && d < f->domains; d++) {
                uint64_t g;
                rc = gpusched_cluster_domain_free_gpus(cl, l, d, &g);
                if (g > f->largest)
                    f->largest = g;
            }
        } else {
            f->domains = gpusched_topo_node_count(t);
            for (uint32_t k = 0; k < hlen; k++)
                if (hist[k])
                    f->largest = k;
        }
    }
    if (rc) {
        cli_error("%s: %s", in.name, gpusched_cluster_errmsg(cl));
        input_free(&in);
        return CLI_FAIL;
    }
    uint64_t gpus = gpusched_topo_gpu_count(t);
    if (as_json) {
        json j;
        json_init(&j, stdout);
        json_open(&j, NULL, '{');
        json_str(&j, "file", in.name);
        json_u64(&j, "gpus", gpus);
        json_u64(&j, "free_gpus", free_gpus);
        json_open(&j, "levels", '[');
        for (uint32_t l = 0; l <= nl; l++) {
            json_open(&j, NULL, '{');
            json_str(&j, "level", level_name(t, l));
            json_u64(&j, "domains", lv[l].domains);
            json_u64(&j, "fully_free", lv[l].free_domains);
            json_u64(&j, "gang_gpus", lv[l].gang);
            json_u64(&j, "stranded_gpus", lv[l].stranded);
            json_num(&j, "stranded_share", free_gpus ? (double)lv[l].stranded / (double)free_gpus : 0);
            json_u64(&j, "largest_free", lv[l].largest);
            json_close(&j, '}');
        }
        json_close(&j, ']');
        json_open(&j, "nodes_by_free_gpus", '[');
        for (uint32_t k = 0; k < hlen; k++)
            json_u64(&j, NULL, hist[k]);
        json_close(&j, ']');
        json_close(&j, '}');
        json_end(&j);
    } else {
        printf("%s: %" PRIu64 " of %" PRIu64 " GPUs free and usable\n", in.name, free_gpus, gpus);
        printf("  %-10s %9s %10s %12s %14s %7s %12s\n", "level", "domains", "fully free", "gang GPUs",
               "stranded GPUs", "share", "largest free");
        for (uint32_t l = 0; l <= nl; l++)
            printf("  %-10s %9u %10u %12" PRIu64 " %14" PRIu64 " %6.1f%% %12" PRIu64 "\n", level_name(t, l),
                   lv[l].domains, lv[l].free_domains, lv[l].gang, lv[l].stranded,
                   free_gpus ? 100.0 * (double)lv[l].stranded / (double)free_gpus : 0.0, lv[l].largest);
        printf("  nodes by free GPUs:");
        for (uint32_t k = 0; k < hlen; k++)
            if (hist[k])
                printf(" %u:%u", k, hist[k]);
        printf("\n");
    }
    input_free(&in);
    return CLI_OK;
}
