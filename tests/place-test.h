/* Helpers shared by the placement tests: a seeded PRNG, random tiny
 * topologies and states, placing through the public API. */
#ifndef GS_TEST_PLACE_H
#define GS_TEST_PLACE_H

#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "place-ref.h"

typedef struct pt_rng {
    uint64_t s;
} pt_rng;

static inline uint64_t pt_next(pt_rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static inline uint32_t pt_below(pt_rng *r, uint32_t n) { return (uint32_t)(pt_next(r) % n); }

/* The next non-decreasing sequence of `pods` node indices below nn (every
 * assignment of identical pods to nodes, once); false after the last. */
static inline bool pt_next_assignment(uint32_t *seq, uint32_t pods, uint32_t nn)
{
    int32_t i = (int32_t)pods - 1;
    while (i >= 0 && seq[i] == nn - 1)
        i--;
    if (i < 0)
        return false;
    seq[i]++;
    for (uint32_t j = (uint32_t)i + 1; j < pods; j++)
        seq[j] = seq[i];
    return true;
}

/* A cluster with a placer and a result; owns the topology reference. */
typedef struct pt_env {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    uint64_t next_job;
} pt_env;

static inline pt_env pt_env_on(gpusched_topo *t)
{
    pt_env e = {.t = t, .next_job = 1000};
    cr_assert_eq(gpusched_cluster_new(t, NULL, &e.c), 0);
    cr_assert_eq(gpusched_placer_new(e.c, NULL, &e.p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &e.res), 0);
    return e;
}

static inline void pt_env_free(pt_env *e)
{
    gpusched_place_result_free(e->res);
    gpusched_placer_free(e->p);
    gpusched_cluster_unref(e->c);
    gpusched_topo_unref(e->t);
}

/* A uniform topology from fanouts. */
static inline gpusched_topo *pt_uniform(uint32_t nlevels, const uint32_t *fanout, uint32_t gpus)
{
    static const char *names[] = {"zone", "block", "rack", "l3", "l4", "l5", "l6", "l7"};
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_uniform(nlevels, names, fanout, gpus, "gb200", NULL, &t, err, sizeof err), 0, "%s",
                 err);
    return t;
}

/* A random tiny topology: 1 to 3 levels, uneven fanouts, nodes of 0 to 4
 * GPUs, two classes, two labels; at most `max_nodes` nodes. */
static inline gpusched_topo *pt_random_topo(pt_rng *r, uint32_t max_nodes)
{
    static const char *lv[] = {"zone", "block", "rack"};
    static const char *labels[] = {"ib", "ssd"};
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    uint32_t L = 1 + pt_below(r, 3);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, L, lv + (3 - L)), 0);
    uint32_t nnodes = 1 + pt_below(r, max_nodes);
    uint32_t path_idx[3] = {0, 0, 0};
    bool uniform_gpus = pt_below(r, 3) == 0;
    uint32_t g0 = 1 + pt_below(r, 4);
    for (uint32_t n = 0; n < nnodes; n++) {
        /* Open a new domain at a random level now and then. */
        if (n && pt_below(r, 3) == 0) {
            uint32_t l = pt_below(r, L);
            path_idx[l]++;
            for (uint32_t k = l + 1; k < L; k++)
                path_idx[k] = 0;
        }
        char comp[3][16];
        const char *path[3];
        for (uint32_t l = 0; l < L; l++) {
            snprintf(comp[l], sizeof comp[l], "%c%u", lv[3 - L + l][0], path_idx[l]);
            path[l] = comp[l];
        }
        char name[16];
        snprintf(name, sizeof name, "n%u", n);
        const char *lab[2];
        uint32_t nl = 0;
        for (uint32_t i = 0; i < 2; i++)
            if (pt_below(r, 3) == 0)
                lab[nl++] = labels[i];
        /* Uneven sizes include nodes without GPUs (not the first: a
         * topology has a GPU). */
        uint32_t gpus = uniform_gpus ? g0 : n == 0 ? 1 + pt_below(r, 4) : pt_below(r, 5);
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, gpus, pt_below(r, 4) ? "a100" : "h100", lab, nl),
                     0, "%s", gpusched_topo_builder_errmsg(b));
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0, "%s", gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    return t;
}

/* Fills a cluster at random: single-node jobs, a reservation for job
 * `resv_job` and one for another job, a node not up now and then. */
static inline void pt_random_state(pt_rng *r, gpusched_cluster *c, uint64_t resv_job)
{
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint32_t nn = gpusched_topo_node_count(t);
    uint64_t id = 1000;
    for (uint32_t n = 0; n < nn; n++) {
        uint32_t g = gpusched_topo_node_gpus(t, n);
        uint64_t all = g >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << g) - 1);
        uint64_t m = pt_next(r) & all;
        if (pt_below(r, 2) == 0)
            m = 0;
        if (m) {
            gpusched_job j = GPUSCHED_JOB_INIT;
            j.id = id++;
            cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &n, &m), 0, "%s", gpusched_cluster_errmsg(c));
        }
        uint64_t left = all & ~m;
        uint64_t rm = pt_next(r) & left;
        if (rm && pt_below(r, 5) == 0)
            cr_assert_eq(gpusched_cluster_reserve(c, pt_below(r, 2) ? resv_job : 999999, 1, &n, &rm), 0, "%s",
                         gpusched_cluster_errmsg(c));
        uint64_t hit[64];
        if (pt_below(r, 12) == 0)
            cr_assert_eq(gpusched_cluster_node_health_set(c, n, 1 + pt_below(r, 3), hit, 64, NULL), 0);
    }
}

/* Points request q at *job, filled as the descriptor of job `id` with every
 * other field 0 (GPUSCHED_JOB_INIT); further job fields are set through the
 * returned pointer. The request only points to the job: *job must stay
 * alive (and in place) for as long as q is passed to the library. */
static inline gpusched_job *pt_req_job(gpusched_place_request *q, gpusched_job *job, uint64_t id)
{
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = id;
    q->job = job;
    return job;
}

/* A random request for job `job_id`, valid or not (the library decides).
 * Its job descriptor goes into *job and its avoided nodes (2 at most) into
 * avoid: both must outlive every use of q. */
static inline void pt_random_request(pt_rng *r, gpusched_topo *t, gpusched_place_request *q, gpusched_job *job,
                                     uint64_t job_id, uint32_t *avoid)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    uint32_t L = gpusched_topo_level_count(t);
    pt_req_job(q, job, job_id);
    q->split = pt_below(r, 3);
    uint32_t unit = 1;
    if (q->split == GPUSCHED_SPLIT_PODS)
        unit = q->pod_gpus = 1 + pt_below(r, 3);
    if (q->split == GPUSCHED_SPLIT_WHOLE_NODES) {
        q->pod_gpus = pt_below(r, 2) ? 0 : 1 + pt_below(r, 4);
        unit = q->pod_gpus ? q->pod_gpus : 4;
    }
    q->gpus = unit * (1 + pt_below(r, 6));
    if (pt_below(r, 3) == 0)
        q->required_level = pt_below(r, L);
    if (pt_below(r, 2) == 0)
        q->preferred_level = pt_below(r, L + 1);
    for (uint32_t i = 0; i < 2; i++)
        if (pt_below(r, 4) == 0) {
            q->slice_level[i] = pt_below(r, L);
            q->slice_gpus[i] = unit * (1 + pt_below(r, 3));
        }
    if (pt_below(r, 6) == 0)
        q->gpu_class = pt_below(r, gpusched_topo_class_count(t));
    uint32_t nl = gpusched_topo_label_count(t);
    if (nl && pt_below(r, 6) == 0)
        q->labels_required = (uint64_t)1 << pt_below(r, nl);
    if (nl && pt_below(r, 6) == 0)
        q->labels_forbidden = ((uint64_t)1 << pt_below(r, nl)) & ~q->labels_required;
    if (pt_below(r, 5) == 0) {
        q->avoid_count = 1 + pt_below(r, 2);
        for (uint32_t i = 0; i < q->avoid_count; i++)
            avoid[i] = pt_below(r, gpusched_topo_node_count(t));
        q->avoid_nodes = avoid;
    }
}

#endif
