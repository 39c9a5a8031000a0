/* The harness: records, timing helpers, the scenario tables and their
 * selection. Shared by gpusched-bench and the Google Benchmark shim. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct gsb_record {
    char name[128];
    double value;
    char unit[24];
    char params[512];
};

struct gsb_ctx {
    bool quick, json;
    const char *filter;
    const char *data_dir;
    double membw;
    struct gsb_record *recs;
    size_t nrecs, cap;
};

const gsb_scenario *const gsb_tables[] = {
    gsb_core_scenarios,
    gsb_place_scenarios,
    gsb_topo_scenarios,
    gsb_cluster_scenarios,
    gsb_fairq_scenarios,
    gsb_preempt_scenarios,
    gsb_sched_scenarios,
    gsb_pods_scenarios,
    NULL,
};

double gsb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int gsb_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gsb_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, gsb_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool gsb_quick(const gsb_ctx *b) { return b->quick; }
int gsb_reps(const gsb_ctx *b) { return b->quick ? 5 : 15; }
const char *gsb_data_dir(const gsb_ctx *b) { return b->data_dir; }

void gsb_report(gsb_ctx *b, const char *name, double value, const char *unit,
                const char *params_json)
{
    if (b->nrecs == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        struct gsb_record *r = realloc(b->recs, cap * sizeof *r);
        if (!r) {
            perror("gpusched-bench");
            exit(1);
        }
        b->recs = r;
        b->cap = cap;
    }
    struct gsb_record *r = &b->recs[b->nrecs++];
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    snprintf(r->params, sizeof r->params, "%s", params_json ? params_json : "");
    r->value = value;
    if (!b->json) {
        printf("%-44s %14.4g %-10s %s\n", name, value, unit, r->params);
        fflush(stdout);
    }
}

void gsb_print_json(const gsb_ctx *b)
{
    printf("[\n");
    for (size_t i = 0; i < b->nrecs; i++) {
        const struct gsb_record *r = &b->recs[i];
        printf("  {\"name\": \"%s\", \"value\": %.17g, \"unit\": \"%s\", \"params\": {%s}}%s\n",
               r->name, r->value, r->unit, r->params, i + 1 < b->nrecs ? "," : "");
    }
    printf("]\n");
}

bool gsb_selected(const gsb_ctx *b, const char *scenario)
{
    if (!b->filter)
        return true;
    /* "--filter place.gang200k.empty.ms" runs scenario "place.gang200k". */
    return strstr(scenario, b->filter) || strncmp(b->filter, scenario, strlen(scenario)) == 0;
}

static const char *gsb_find_data_dir(void)
{
    static const char *const candidates[] = {
        GSB_SOURCE_ROOT "/../shared/data",
        GSB_SOURCE_ROOT "/tests/data", /* the openb files the tests use */
        "../shared/data",
        "../../shared/data",
    };
    const char *env = getenv("GPUSCHED_DATA_DIR");
    if (env && *env)
        return env;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++)
        if (access(candidates[i], R_OK) == 0)
            return candidates[i];
    return NULL;
}


gsb_ctx *gsb_ctx_new(bool quick, bool json, const char *filter)
{
    gsb_ctx *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->quick = quick;
    b->json = json;
    b->filter = filter;
    b->data_dir = gsb_find_data_dir();
    return b;
}

void gsb_ctx_free(gsb_ctx *b)
{
    if (b)
        free(b->recs);
    free(b);
}

size_t gsb_record_count(const gsb_ctx *b) { return b->nrecs; }

void gsb_record_get(const gsb_ctx *b, size_t i, const char **name, double *value, const char **unit)
{
    *name = b->recs[i].name;
    *value = b->recs[i].value;
    *unit = b->recs[i].unit;
}
