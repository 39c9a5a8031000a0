/* The openb GPU trace (tests/data/openb, Weng et al., ATC'23) as a
 * topology (openb.h: racks of 16 in file order) and an event list, for the
 * placement replay test and bench. A pod asking for part of a GPU takes a
 * whole one; pods without GPUs are skipped. */
#ifndef GS_TEST_OPENB_TRACE_H
#define GS_TEST_OPENB_TRACE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#include "openb.h"

typedef struct openb_event {
    int64_t time;
    uint32_t pod;
    uint32_t gpus;
    int release;        /* 1: deletion, 0: creation */
} openb_event;

typedef struct openb_trace {
    gpusched_topo *topo;
    openb_event *ev;
    uint32_t nev;
    uint32_t npods;     /* pods with GPUs */
} openb_trace;

/* Splits a CSV line in place (no quoted fields in these files). */
static inline uint32_t openb_fields(char *line, char **f, uint32_t max)
{
    uint32_t n = 0;
    char *s = line;
    while (n < max) {
        f[n++] = s;
        char *comma = strchr(s, ',');
        if (!comma)
            break;
        *comma = '\0';
        s = comma + 1;
    }
    char *nl = strpbrk(f[n - 1], "\r\n");
    if (nl)
        *nl = '\0';
    return n;
}

static inline int openb_cmp_event(const void *a, const void *b)
{
    const openb_event *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    if (x->release != y->release)
        return x->release ? -1 : 1; /* free before taking at the same instant */
    return x->pod < y->pod ? -1 : x->pod > y->pod;
}

/* Loads $dir/openb (tests/data/openb): 0, or -1 with a message. */
static inline int openb_load(const char *dir, openb_trace *tr, char *err, size_t errlen)
{
    memset(tr, 0, sizeof *tr);
    if (!dir) {
        snprintf(err, errlen, "no data directory");
        return -1;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/openb/openb_node_list_gpu_node.csv", dir);
    if (openb_load_topology(path, &tr->topo)) {
        snprintf(err, errlen, "cannot load %.200s", path);
        return -1;
    }
    snprintf(path, sizeof path, "%s/openb/openb_pod_list_default.csv", dir);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        snprintf(err, errlen, "cannot open %.200s", path);
        return -1;
    }
    uint32_t cap = 1 << 15;
    tr->ev = malloc(cap * sizeof *tr->ev);
    char line[1024];
    fgets(line, sizeof line, fp);
    while (tr->ev && fgets(line, sizeof line, fp)) {
        char *f[16];
        if (openb_fields(line, f, 16) < 11)
            continue;
        uint32_t gpus = (uint32_t)atoi(f[3]);
        if (!gpus)
            continue;
        if (tr->nev + 2 > cap) {
            cap *= 2;
            openb_event *n = realloc(tr->ev, cap * sizeof *n);
            if (!n)
                break;
            tr->ev = n;
        }
        uint32_t pod = tr->npods++;
        tr->ev[tr->nev++] = (openb_event){atoll(f[8]), pod, gpus, 0};
        if (*f[9])
            tr->ev[tr->nev++] = (openb_event){atoll(f[9]), pod, gpus, 1};
    }
    fclose(fp);
    if (!tr->ev) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    qsort(tr->ev, tr->nev, sizeof *tr->ev, openb_cmp_event);
    return 0;
}

static inline void openb_free(openb_trace *tr)
{
    gpusched_topo_unref(tr->topo);
    free(tr->ev);
    memset(tr, 0, sizeof *tr);
}

/* The request the replay makes for a pod: one pod of its GPUs, as job
 * pod + 1, whose descriptor goes into *job (q points to it: *job must
 * outlive every use of q). */
static inline void openb_request(const openb_event *e, gpusched_place_request *q, gpusched_job *job)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = (uint64_t)e->pod + 1;
    q->job = job;
    q->gpus = e->gpus;
    q->split = GPUSCHED_SPLIT_PODS;
    q->pod_gpus = e->gpus;
    q->flags = GPUSCHED_PLACE_FLAG_COMMIT;
}

#endif
