/* gpusched: the command-line tool over libgpusched (doc/cli.md). */
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: gpusched COMMAND [ARGS] [--json]\n"
    "\n"
    "Inspect topologies and cluster snapshots and ask what-if questions of\n"
    "libgpusched. FILE is a topology text (doc/topology-format.md), a cluster\n"
    "snapshot (doc/snapshot-format.md; recognized by its magic), a built-in\n"
    "preset written preset:NAME (preset:tiny, preset:h100-superpod,\n"
    "preset:gb200-nvl72-1m) or - for standard input. A topology or preset\n"
    "gives an empty cluster.\n"
    "\n"
    "commands:\n"
    "  topo show FILE           levels, domains, nodes, GPUs, classes, labels, memory\n"
    "  topo check FILE          parse (errors name line and column) and check that\n"
    "                           the export parses back to the same topology\n"
    "  topo convert FILE [--to text|json|snapshot] [-o OUT]\n"
    "                           the canonical text, a JSON description, or an\n"
    "                           empty cluster's snapshot (text and snapshot round trip)\n"
    "  place FILE --gpus N [options]\n"
    "                           what-if placement of a gang, with its explanation\n"
    "                           (gpusched place --help lists the options)\n"
    "  snapshot info FILE       jobs, reservations, free and allocated GPUs, health\n"
    "  snapshot check FILE      validate a snapshot: checksum, invariants, and that\n"
    "                           it restores to the same bytes\n"
    "  frag FILE                fragmentation per level: fully free domains,\n"
    "                           stranded GPUs, the largest whole-domain gang\n"
    "  draw FILE [-o OUT.svg] [--color free|job] [--domain PATH]\n"
    "                           an SVG picture of occupancy, one cell per node\n"
    "                           grouped by the two lowest levels\n"
    "  version                  the library's version\n"
    "\n"
    "Every command takes --json (one JSON document on standard output) and\n"
    "--help. Exit status: 0 success, 1 failure (bad input, failed check),\n"
    "2 bad command line, 3 the gang does not fit (place).\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        bool as_json = argc > 2 && strcmp(argv[2], "--json") == 0;
        if (as_json) {
            json j;
            json_init(&j, stdout);
            json_open(&j, NULL, '{');
            json_str(&j, "library", gpusched_version_string());
            json_str(&j, "headers", GPUSCHED_VERSION_STRING);
            json_close(&j, '}');
            json_end(&j);
        } else {
            printf("gpusched %s (libgpusched %s)\n", GPUSCHED_VERSION_STRING, gpusched_version_string());
        }
        return CLI_OK;
    }
    /* Each subcommand sees its own name as argv[0]. */
    if (strcmp(cmd, "topo") == 0)
        return cmd_topo(argc - 1, argv + 1);
    if (strcmp(cmd, "place") == 0)
        return cmd_place(argc - 1, argv + 1);
    if (strcmp(cmd, "snapshot") == 0)
        return cmd_snapshot(argc - 1, argv + 1);
    if (strcmp(cmd, "frag") == 0)
        return cmd_frag(argc - 1, argv + 1);
    if (strcmp(cmd, "draw") == 0)
        return cmd_draw(argc - 1, argv + 1);
    cli_error("unknown command '%s' (gpusched --help lists the commands)", cmd);
    return CLI_USAGE;
}
