/* gpusched-bench: named scenarios, human table or JSON (doc/bench.md). */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static void gsb_usage(FILE *f)
{
    fprintf(f, "usage: gpusched-bench [--json] [--quick] [--filter SUBSTR] [--list]\n");
}

int main(int argc, char **argv)
{
    bool json = false, quick = false, list = false;
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else if (strcmp(argv[i], "--list") == 0)
            list = true;
        else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
            filter = argv[++i];
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            gsb_usage(stdout);
            return 0;
        } else {
            gsb_usage(stderr);
            return 2;
        }
    }
    gsb_ctx *b = gsb_ctx_new(quick, json, filter);
    if (!b) {
        perror("gpusched-bench");
        return 1;
    }
    if (!json && !list)
        printf("%-44s %14s %-10s %s\n", "scenario", "value", "unit", "params");
    for (size_t t = 0; gsb_tables[t]; t++)
        for (const gsb_scenario *s = gsb_tables[t]; s->name; s++) {
            if (!gsb_selected(b, s->name))
                continue;
            if (list)
                printf("%s\n", s->name);
            else
                s->run(b);
        }
    if (json)
        gsb_print_json(b);
    gsb_ctx_free(b);
    return 0;
}
