/* place.sweep: every gang shape against its budget. Cluster shapes from
 * 1k to 258k nodes (2 to 4 levels, uniform and the presets), each empty,
 * 50% and 90% full and fragmented (90%, then a random half of the jobs
 * released); gangs from one GPU to the whole cluster (just below, at and
 * above each level's domain size, once and four times); every split; the
 * required and the preferred level none or each level; no slice or slices
 * of a lowest domain or of two nodes. Each case is a plan-only placement
 * timed on a warm placer; its budget is 20 us + 20 ns per node returned
 * (doc/bench.md). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "gpusched/gpusched.h"

typedef struct sw_shape {
    const char *name;
    const char *preset;         /* NULL: uniform below */
    uint32_t nlevels;
    const char *lv[4];
    uint32_t fan[5];
    uint32_t gpn;
    bool quick;                 /* part of --quick */
} sw_shape;

static const sw_shape sw_shapes[] = {
    {"u2-1k", NULL, 2, {"block", "rack"}, {1, 56, 18}, 4, true},
    {"u2-16k", NULL, 2, {"block", "rack"}, {16, 56, 18}, 4, true},
    {"h100-superpod", "h100-superpod", 0, {NULL}, {0}, 0, false},
    {"u4-32k", NULL, 4, {"dc", "zone", "block", "rack"}, {2, 4, 8, 28, 18}, 8, false},
    {"u2-64k", NULL, 2, {"block", "rack"}, {64, 56, 18}, 4, false},
    {"gb200-nvl72-1m", "gb200-nvl72-1m", 0, {NULL}, {0}, 0, false},
};

typedef struct sw_rng {
    uint64_t s;
} sw_rng;

static uint64_t sw_next(sw_rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

typedef struct sw_env {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    uint32_t L, W, N;
    uint32_t dom_nodes[GPUSCHED_MAX_LEVELS]; /* nodes of domain 0 of each level */
    uint64_t *jobs;
    uint32_t njobs, jobs_cap;
    uint64_t next_id;
} sw_env;

typedef struct sw_stats {
    uint32_t cases, over, fit;
    double worst;
    char worst_name[160];
    char worst_params[320];
} sw_stats;

static gpusched_topo *sw_topo(const sw_shape *s)
{
    gpusched_topo *t = NULL;
    char err[256];
    int rc = s->preset ? gpusched_topo_preset(s->preset, NULL, &t, err, sizeof err)
                       : gpusched_topo_uniform(s->nlevels, s->lv, s->fan, s->gpn, "gpu", NULL, &t, err, sizeof err);
    if (rc)
        fprintf(stderr, "bench-sweep: %s: %s\n", s->name, err);
    return t;
}

/* A fill job: single GPUs to pods inside one lowest domain, whole lowest
 * domains and a few of them as whole nodes in slices of a lowest domain. */
static void sw_fill_request(const sw_env *e, sw_rng *r, gpusched_place_request *q, gpusched_job *job)
{
    const uint32_t leaf = e->dom_nodes[e->L - 1] * e->W;
    static const uint32_t small[] = {1, 1, 1, 2, 4, 4, 8, 8, 8, 8, 16, 16, 32, 64};
    const uint32_t nsmall = sizeof small / sizeof small[0];
    uint32_t k = (uint32_t)(sw_next(r) % (nsmall + 4));
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = e->next_id;
    q->job = job;
    q->flags = GPUSCHED_PLACE_FLAG_COMMIT;
    if (k < nsmall && small[k] < leaf) {
        q->gpus = small[k];
        q->required_level = e->L - 1;
        if (q->gpus >= 4) {
            q->split = GPUSCHED_SPLIT_PODS;
            q->pod_gpus = 4;
        }
        return;
    }
    q->gpus = leaf << (k >= nsmall ? k - nsmall : 0);
    q->split = GPUSCHED_SPLIT_WHOLE_NODES;
    q->slice_gpus[0] = leaf;
    q->slice_level[0] = e->L - 1;
    if (e->L >= 2)
        q->preferred_level = e->L - 2;
}

static void sw_fill(sw_env *e, sw_rng *r, double fill)
{
    uint64_t total = gpusched_topo_gpu_count(e->t), free_gpus = 0;
    uint32_t misses = 0;
    gpusched_cluster_domain_free_gpus(e->c, GPUSCHED_NONE, 0, &free_gpus);
    uint64_t used = total - free_gpus;
    while (used < fill * (double)total && misses < 200) {
        gpusched_place_request q;
        gpusched_job job;
        sw_fill_request(e, r, &q, &job);
        if (gpusched_placer_place(e->p, &q, e->res)) {
            misses++;
            continue;
        }
        if (e->njobs == e->jobs_cap) {
            e->jobs_cap = e->jobs_cap ? 2 * e->jobs_cap : 4096;
            uint64_t *j = realloc(e->jobs, e->jobs_cap * sizeof *j);
            if (!j)
                abort();
            e->jobs = j;
        }
        e->jobs[e->njobs++] = e->next_id++;
        used += q.gpus;
    }
}

/* A random half of the running jobs released. */
static void sw_fragment(sw_env *e, sw_rng *r)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < e->njobs; i++) {
        if (sw_next(r) % 2)
            gpusched_cluster_release(e->c, e->jobs[i]);
        else
            e->jobs[kept++] = e->jobs[i];
    }
    e->njobs = kept;
}

/* CPU time of this thread: on a shared machine a case of a few
 * milliseconds is often preempted, and the sweep looks for cliffs of the
 * search, not for the neighbours' load. */
static double sw_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static double sw_time_once(sw_env *e, const gpusched_place_request *q, int *rc)
{
    double t0 = sw_cpu_ns();
    *rc = gpusched_placer_place(e->p, q, e->res);
    return (sw_cpu_ns() - t0) / 1e3;
}

/* Median of a few plan-only placements on a warm placer; more when the
 * case is near its budget, so that one preempted run does not decide. */
static double sw_time(sw_env *e, const gpusched_place_request *q, int *rc)
{
    double t[9];
    double first = sw_time_once(e, q, rc); /* warms the placer's memory */
    if (first > 20000)
        return first;  /* a cliff: one run tells */
    const uint32_t *nd;
    const uint64_t *mk;
    uint32_t nodes = 0;
    if (*rc == 0)
        gpusched_place_result_nodes(e->res, &nd, &mk, &nodes);
    double budget_us = 20 + 0.02 * nodes;
    int n = 3;
    for (int i = 0; i < n; i++)
        t[i] = sw_time_once(e, q, rc);
    double m = gsb_median(t, (size_t)n);
    if (m > 0.7 * budget_us && m < 5 * budget_us) {
        n = 9;
        for (int i = 0; i < n; i++)
            t[i] = sw_time_once(e, q, rc);
        m = gsb_median(t, (size_t)n);
    }
    return m;
}

static const char *sw_level_name(const sw_env *e, uint32_t l)
{
    return l == GPUSCHED_NONE ? "-" : gpusched_topo_level_name(e->t, l);
}

static void sw_case(gsb_ctx *b, sw_env *e, sw_stats *st, const char *prefix, const gpusched_place_request *q,
                    const char *size_name)
{
    static const char *const splits[] = {"any", "pods", "whole"};
    char name[160], sl[48], params[256];
    if (q->slice_gpus[0])
        snprintf(sl, sizeof sl, "%u@%.16s", q->slice_gpus[0], sw_level_name(e, q->slice_level[0]));
    else
        snprintf(sl, sizeof sl, "-");
    snprintf(name, sizeof name, "place.sweep.%.32s.%s.%.12s.req-%.16s.pref-%.16s.sl-%s.us", prefix, splits[q->split],
             size_name, sw_level_name(e, q->required_level), sw_level_name(e, q->preferred_level), sl);
    const char *only = getenv("GSB_SWEEP_CASE");
    if (only && *only && !strstr(name, only))
        return;
    int rc;
    double us = sw_time(e, q, &rc);
    uint32_t nodes = 0;
    char loc[96] = "";
    if (rc == 0) {
        const uint32_t *nd, *cnt;
        const uint64_t *m;
        uint32_t nl = 0;
        gpusched_place_result_nodes(e->res, &nd, &m, &nodes);
        gpusched_place_result_locality(e->res, &cnt, &nl);
        for (uint32_t i = 0, at = 0; i < nl && at + 12 < sizeof loc; i++)
            at += (uint32_t)snprintf(loc + at, sizeof loc - at, "%s%u", i ? "," : "", cnt[i]);
    } else if (rc != GPUSCHED_ENOSPC) {
        fprintf(stderr, "bench-sweep: %s: %s\n", prefix, gpusched_placer_errmsg(e->p));
        return;
    }
    double budget = 20 + 0.02 * nodes;
    double ratio = us / budget;
    snprintf(params, sizeof params,
             "\"gpus\": %u, \"nodes\": %u, \"fit\": %d, \"budget_us\": %.1f, \"ratio\": %.3f, \"locality\": \"%s\"",
             q->gpus, nodes, rc == 0, budget, ratio, loc);
    gsb_report(b, name, us, "us", params);
    st->cases++;
    st->fit += rc == 0;
    st->over += ratio > 1;
    if (ratio > st->worst) {
        st->worst = ratio;
        memcpy(st->worst_name, name, sizeof name);
        snprintf(st->worst_params, sizeof st->worst_params, "%.256s, \"us\": %.1f", params, us);
    }
}

/* Gang sizes in GPUs: part of a node, one node, and around each level's
 * domain (one and four of them, a node less and a node more), half and all
 * of the cluster. */
static uint32_t sw_sizes(const sw_env *e, bool quick, uint64_t *gpus, char (*names)[24])
{
    uint32_t n = 0;
    uint64_t cand[64];
    cand[n++] = 1;
    cand[n++] = e->W / 2;
    cand[n++] = e->W;
    for (uint32_t l = e->L; l-- > 0;) {
        uint64_t d = e->dom_nodes[l];
        const uint32_t mults[] = {1, 4};
        for (uint32_t i = 0; i < (quick ? 1u : 2u); i++) {
            uint64_t k = d * mults[i];
            if (k > e->N)
                continue;
            cand[n++] = (k - 1) * e->W;
            cand[n++] = k * e->W;
            if (k < e->N)
                cand[n++] = (k + 1) * e->W;
        }
    }
    cand[n++] = (uint64_t)e->N / 2 * e->W;
    cand[n++] = (uint64_t)(e->N - 1) * e->W;
    cand[n++] = (uint64_t)e->N * e->W;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        bool dup = cand[i] == 0;
        for (uint32_t j = 0; j < m && !dup; j++)
            dup = gpus[j] == cand[i];
        if (dup)
            continue;
        gpus[m] = cand[i];
        if (cand[i] % e->W)
            snprintf(names[m], sizeof names[m], "g%llu", (unsigned long long)cand[i]);
        else
            snprintf(names[m], sizeof names[m], "n%llu", (unsigned long long)(cand[i] / e->W));
        m++;
    }
    return m;
}

static void sw_state(gsb_ctx *b, sw_env *e, sw_stats *st, const char *shape, const char *state)
{
    bool quick = gsb_quick(b);
    uint64_t gpus[64];
    char names[64][24];
    uint32_t nsizes = sw_sizes(e, quick, gpus, names);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s.%s", shape, state);
    const uint32_t leaf_gpus = e->dom_nodes[e->L - 1] * e->W;
    gpusched_job job = GPUSCHED_JOB_INIT;
    job.id = 999999999;
    for (uint32_t si = 0; si < nsizes; si++) {
        for (uint32_t split = 0; split < 3; split++) {
            if (split && gpus[si] % e->W)
                continue;
            for (uint32_t req = 0; req <= e->L; req++) {
                for (uint32_t pref = 0; pref <= e->L; pref++) {
                    for (uint32_t slice = 0; slice < 3; slice++) {
                        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
                        q.job = &job;
                        q.gpus = (uint32_t)gpus[si];
                        q.split = split;
                        q.pod_gpus = split == GPUSCHED_SPLIT_PODS ? e->W / 2 : 0;
                        q.required_level = req == e->L ? GPUSCHED_NONE : req;
                        q.preferred_level = pref == e->L ? GPUSCHED_NONE : pref;
                        if (slice) {
                            uint32_t sz = slice == 1 ? leaf_gpus : 2 * e->W;
                            if (q.gpus % sz || q.gpus == sz)
                                continue;
                            q.slice_gpus[0] = sz;
                            q.slice_level[0] = e->L - 1;
                        }
                        if (quick && slice == 2)
                            continue;
                        sw_case(b, e, st, prefix, &q, names[si]);
                    }
                }
            }
        }
    }
}

static void sw_shape_run(gsb_ctx *b, const sw_shape *s, sw_stats *st)
{
    sw_env e;
    memset(&e, 0, sizeof e);
    if (!(e.t = sw_topo(s)))
        return;
    if (gpusched_cluster_new(e.t, NULL, &e.c) || gpusched_placer_new(e.c, NULL, &e.p) ||
        gpusched_place_result_new(NULL, &e.res)) {
        fprintf(stderr, "bench-sweep: setup failed\n");
        return;
    }
    e.L = gpusched_topo_level_count(e.t);
    e.N = gpusched_topo_node_count(e.t);
    e.W = gpusched_topo_node_gpus(e.t, 0);
    for (uint32_t l = 0; l < e.L; l++) {
        uint32_t first, count;
        gpusched_topo_domain_nodes(e.t, l, 0, &first, &count);
        e.dom_nodes[l] = count;
    }
    e.next_id = 1;
    sw_rng r = {0x5eed5eedull};
    bool quick = gsb_quick(b);
    sw_state(b, &e, st, s->name, "empty");
    sw_fill(&e, &r, 0.5);
    sw_state(b, &e, st, s->name, "half");
    if (!quick) {
        sw_fill(&e, &r, 0.9);
        sw_state(b, &e, st, s->name, "full90");
        sw_fragment(&e, &r);
        sw_state(b, &e, st, s->name, "frag");
    }
    free(e.jobs);
    gpusched_place_result_free(e.res);
    gpusched_placer_free(e.p);
    gpusched_cluster_unref(e.c);
    gpusched_topo_unref(e.t);
}

void gsb_place_sweep(gsb_ctx *b)
{
    sw_stats st;
    memset(&st, 0, sizeof st);
    const char *only = getenv("GSB_SWEEP_SHAPE");
    for (size_t i = 0; i < sizeof sw_shapes / sizeof sw_shapes[0]; i++) {
        if (gsb_quick(b) && !sw_shapes[i].quick)
            continue;
        if (only && *only && strcmp(only, sw_shapes[i].name))
            continue;
        sw_shape_run(b, &sw_shapes[i], &st);
    }
    char params[640];
    snprintf(params, sizeof params, "\"case\": \"%s\", %s, \"cases\": %u, \"over_budget\": %u, \"fit\": %u",
             st.worst_name, st.worst_params, st.cases, st.over, st.fit);
    gsb_report(b, "place.sweep.worst_ratio", st.worst, "ratio", params);
    snprintf(params, sizeof params, "\"cases\": %u, \"budget\": \"20 us + 20 ns x nodes returned\"", st.cases);
    gsb_report(b, "place.sweep.over_budget", st.over, "cases", params);
}
