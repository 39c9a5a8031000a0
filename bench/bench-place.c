/* Placement scenarios: the 200k-GPU gang on the gb200-nvl72-1m preset
 * (empty and fragmented), 8-GPU gangs in steady state (rate, scaling from
 * 64k to 1M GPUs, against a naive per-node scheduler), and the openb trace
 * replay against first fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cluster/cluster-internal.h"
#include "gpusched/gpusched.h"
#include "openb-trace.h"

typedef struct bp_rng {
    uint64_t s;
} bp_rng;

static uint64_t bp_next(bp_rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

typedef struct bp_env {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
} bp_env;

static int bp_env_new(bp_env *e, gpusched_topo *t)
{
    memset(e, 0, sizeof *e);
    e->t = t;
    if (gpusched_cluster_new(t, NULL, &e->c) || gpusched_placer_new(e->c, NULL, &e->p) ||
        gpusched_place_result_new(NULL, &e->res)) {
        fprintf(stderr, "bench-place: setup failed\n");
        return -1;
    }
    return 0;
}

static void bp_env_free(bp_env *e)
{
    gpusched_place_result_free(e->res);
    gpusched_placer_free(e->p);
    gpusched_cluster_unref(e->c);
    gpusched_topo_unref(e->t);
}

static gpusched_topo *bp_shape(uint32_t zones, uint32_t blocks)
{
    static const char *lv[] = {"zone", "block", "rack"};
    const uint32_t fan[] = {zones, blocks, 56, 18};
    gpusched_topo *t = NULL;
    char err[256];
    if (gpusched_topo_uniform(3, lv, fan, 4, "gb200", NULL, &t, err, sizeof err))
        fprintf(stderr, "bench-place: %s\n", err);
    return t;
}

/* The request builders below point q to *job, filled as job `id`: *job
 * must outlive every use of q. */
static void bp_gang200k_request(gpusched_place_request *q, gpusched_job *job, uint64_t id)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = id;
    q->job = job;
    q->gpus = 2778 * 72;
    q->split = GPUSCHED_SPLIT_WHOLE_NODES;
    q->slice_gpus[0] = 72;
    q->slice_level[0] = 2;
    q->preferred_level = 1;
    q->flags = GPUSCHED_PLACE_FLAG_COMMIT;
}

/* A realistic size mix from 1 to 576 GPUs (single GPUs and 8-GPU jobs
 * dominate, a few rack and multi-rack jobs). */
static void bp_mix_request(bp_rng *r, gpusched_place_request *q, gpusched_job *job, uint64_t id)
{
    gsb_mix_request(q, job, id, gsb_mix_size(bp_next(r)));
}

/* Fills to `fill` of the GPUs with the mix; returns the job ids placed. */
static uint64_t *bp_fill_mix(bp_env *e, bp_rng *r, double fill, uint32_t *njobs)
{
    uint64_t total = gpusched_topo_gpu_count(e->t), used = 0;
    uint32_t cap = 1 << 16, n = 0;
    uint64_t *ids = malloc(cap * sizeof *ids);
    uint64_t id = 1;
    uint32_t misses = 0;
    while (ids && used < fill * (double)total && misses < 1000) {
        gpusched_place_request q;
        gpusched_job job;
        bp_mix_request(r, &q, &job, id);
        if (gpusched_placer_place(e->p, &q, e->res)) {
            misses++;
            continue;
        }
        if (n == cap) {
            cap *= 2;
            uint64_t *m = realloc(ids, cap * sizeof *m);
            if (!m)
                break;
            ids = m;
        }
        ids[n++] = id++;
        used += q.gpus;
    }
    *njobs = n;
    return ids;
}

static double bp_time_gang(bp_env *e, gsb_ctx *b, int *fit)
{
    int reps = gsb_reps(b);
    double t[32];
    gpusched_place_request q;
    gpusched_job job;
    bp_gang200k_request(&q, &job, 900000000);
    *fit = 1;
    /* One untimed plan warms the placer's scratch memory and output arrays,
     * which a placer keeps from call to call. */
    q.flags = 0;
    gpusched_placer_place(e->p, &q, e->res);
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    for (int i = 0; i < reps; i++) {
        double t0 = gsb_now_ns();
        int rc = gpusched_placer_place(e->p, &q, e->res);
        t[i] = (gsb_now_ns() - t0) / 1e6;
        if (rc) {
            *fit = 0;
            continue;
        }
        gpusched_cluster_release(e->c, job.id);
    }
    return gsb_median(t, (size_t)reps);
}

static void bp_gang200k(gsb_ctx *b)
{
    gpusched_topo *t = NULL;
    char err[256];
    if (gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, err, sizeof err)) {
        fprintf(stderr, "bench-place: %s\n", err);
        return;
    }
    bp_env e;
    if (bp_env_new(&e, t))
        return;
    int fit;
    double ms = bp_time_gang(&e, b, &fit);
    char params[256];
    snprintf(params, sizeof params,
             "\"gpus\": 200016, \"slices\": \"2778 x 72 at rack\", \"split\": \"whole nodes\", \"preferred\": \"block\", "
             "\"cluster_gpus\": %llu, \"fit\": %d, \"what\": \"plan + commit, warm placer\"",
             (unsigned long long)gpusched_topo_gpu_count(t), fit);
    gsb_report(b, "place.gang200k.empty.ms", ms, "ms", params);

    bp_rng r = {0x1234567};
    uint32_t njobs;
    uint64_t *ids = bp_fill_mix(&e, &r, 0.6, &njobs);
    for (uint32_t i = 0; ids && i < njobs; i++)
        if (bp_next(&r) % 3 == 0)
            gpusched_cluster_release(e.c, ids[i]);
    free(ids);
    uint64_t free_gpus = 0;
    gpusched_cluster_domain_free_gpus(e.c, GPUSCHED_NONE, 0, &free_gpus);
    ms = bp_time_gang(&e, b, &fit);
    snprintf(params, sizeof params,
             "\"fill_before_release\": 0.6, \"released\": \"a random third\", \"jobs\": %u, \"free_gpus\": %llu, "
             "\"fit\": %d",
             njobs, (unsigned long long)free_gpus, fit);
    gsb_report(b, "place.gang200k.frag.ms", ms, "ms", params);
    gsb_report(b, "place.gang200k.frag.fit", fit, "bool", params);
    bp_env_free(&e);
}

/* ---- 8-GPU gangs --------------------------------------------------------- */

static void bp_small8_request(gpusched_place_request *q, gpusched_job *job, uint64_t id)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = id;
    q->job = job;
    q->gpus = 8;
    q->split = GPUSCHED_SPLIT_PODS;
    q->pod_gpus = 4;
    q->required_level = 2;
    q->flags = GPUSCHED_PLACE_FLAG_COMMIT;
}

typedef struct bp_steady {
    bp_env e;
    uint64_t *ring;     /* running jobs */
    uint32_t n;
    uint64_t next_id;
    bp_rng r;
} bp_steady;

static int bp_steady_new(bp_steady *s, gpusched_topo *t)
{
    memset(s, 0, sizeof *s);
    if (bp_env_new(&s->e, t))
        return -1;
    uint32_t want = (uint32_t)(gpusched_topo_gpu_count(t) / 2 / 8);
    s->ring = malloc(want * sizeof *s->ring);
    s->r.s = 0xabcdef;
    s->next_id = 1;
    gpusched_place_request q;
    gpusched_job job;
    while (s->ring && s->n < want) {
        bp_small8_request(&q, &job, s->next_id);
        if (gpusched_placer_place(s->e.p, &q, s->e.res))
            return -1;
        s->ring[s->n++] = s->next_id++;
    }
    /* Release and place at random for a while so that the free GPUs are
     * scattered, not packed at the front. */
    for (uint32_t i = 0; i < want; i++) {
        uint32_t k = (uint32_t)(bp_next(&s->r) % s->n);
        gpusched_cluster_release(s->e.c, s->ring[k]);
        bp_small8_request(&q, &job, s->next_id);
        if (gpusched_placer_place(s->e.p, &q, s->e.res))
            return -1;
        s->ring[k] = s->next_id++;
    }
    return s->ring ? 0 : -1;
}

/* ns per placement (place + commit + release of a random running job);
 * with `release_ns`, the releases alone are timed too (two more clock
 * reads per placement). The job to release next is drawn one step ahead
 * and its ring entry prefetched: the bench's own bookkeeping (half a
 * megabyte of ring at 1M GPUs) should not add a cache miss to what it
 * measures. */
static double bp_steady_run(bp_steady *s, uint32_t ops, double *release_ns)
{
    gpusched_place_request q;
    gpusched_job job;
    double t0 = gsb_now_ns(), rel = 0;
    uint32_t next = (uint32_t)(bp_next(&s->r) % s->n);
    for (uint32_t i = 0; i < ops; i++) {
        uint32_t k = next;
        next = (uint32_t)(bp_next(&s->r) % s->n);
        __builtin_prefetch(&s->ring[next]);
        double r0 = release_ns ? gsb_now_ns() : 0;
        gpusched_cluster_release(s->e.c, s->ring[k]);
        if (release_ns)
            rel += gsb_now_ns() - r0;
        bp_small8_request(&q, &job, s->next_id);
        if (gpusched_placer_place(s->e.p, &q, s->e.res)) {
            fprintf(stderr, "bench-place: steady placement failed: %s\n", gpusched_place_result_message(s->e.res));
            return 0;
        }
        s->ring[k] = s->next_id++;
    }
    if (release_ns)
        *release_ns = rel / ops;
    return (gsb_now_ns() - t0) / ops;
}

static void bp_steady_free(bp_steady *s)
{
    free(s->ring);
    bp_env_free(&s->e);
}

/* The naive reference: for every job, filter and score every node (free
 * GPUs, health), count the fitting nodes of every rack, pick the tightest
 * rack holding two, then its two tightest nodes. What a per-pod scheduler
 * does, without the aggregates. */
typedef struct bp_naive {
    uint32_t *fit_in_rack;
    uint32_t *free_in_rack;
} bp_naive;

static int bp_naive_place(const gpusched_cluster *c, bp_naive *nv, uint32_t *nodes, uint64_t *masks)
{
    const struct gpusched_topo *t = c->topo;
    uint32_t racks = t->ndom[t->nlevels - 1];
    memset(nv->fit_in_rack, 0, racks * sizeof *nv->fit_in_rack);
    memset(nv->free_in_rack, 0, racks * sizeof *nv->free_in_rack);
    for (uint32_t n = 0; n < t->nnodes; n++) {
        uint32_t f = gs_popcount64(gs_cluster_node_avail(c, n));
        uint32_t rk = t->node_leaf[n];
        nv->free_in_rack[rk] += f;
        nv->fit_in_rack[rk] += f >= 4;
    }
    uint32_t best = UINT32_MAX;
    for (uint32_t rk = 0; rk < racks; rk++)
        if (nv->fit_in_rack[rk] >= 2 && (best == UINT32_MAX || nv->free_in_rack[rk] < nv->free_in_rack[best]))
            best = rk;
    if (best == UINT32_MAX)
        return -1;
    uint32_t k = 0;
    for (uint32_t n = t->dom_start[t->nlevels - 1][best]; k < 2; n++) {
        uint64_t a = gs_cluster_node_avail(c, n);
        if (gs_popcount64(a) >= 4) {
            nodes[k] = n;
            masks[k++] = a & 0xf;
        }
    }
    return 0;
}

static double bp_naive_run(bp_steady *s, uint32_t ops)
{
    uint32_t racks = s->e.t->ndom[s->e.t->nlevels - 1];
    bp_naive nv = {calloc(racks, sizeof(uint32_t)), calloc(racks, sizeof(uint32_t))};
    double t0 = gsb_now_ns();
    for (uint32_t i = 0; nv.fit_in_rack && nv.free_in_rack && i < ops; i++) {
        uint32_t k = (uint32_t)(bp_next(&s->r) % s->n);
        gpusched_cluster_release(s->e.c, s->ring[k]);
        uint32_t nodes[2];
        uint64_t masks[2];
        if (bp_naive_place(s->e.c, &nv, nodes, masks))
            break;
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = s->next_id;
        gpusched_cluster_allocate(s->e.c, &j, 2, nodes, masks);
        s->ring[k] = s->next_id++;
    }
    double ns = (gsb_now_ns() - t0) / ops;
    free(nv.fit_in_rack);
    free(nv.free_in_rack);
    return ns;
}

static void bp_small8(gsb_ctx *b)
{
    int reps = gsb_reps(b);
    uint32_t ops = gsb_quick(b) ? 20000 : 100000;
    bp_steady big, small;
    if (bp_steady_new(&big, bp_shape(8, 32)) || bp_steady_new(&small, bp_shape(2, 8))) {
        fprintf(stderr, "bench-place: small8 setup failed\n");
        return;
    }
    double tb[32], ts[32];
    bp_steady_run(&big, ops / 4, NULL); /* warm */
    bp_steady_run(&small, ops / 4, NULL);
    for (int i = 0; i < reps; i++) {
        tb[i] = bp_steady_run(&big, ops, NULL);
        ts[i] = bp_steady_run(&small, ops, NULL);
    }
    double nb = gsb_median(tb, (size_t)reps), ns = gsb_median(ts, (size_t)reps);
    /* Where the time goes: the cluster's release against the placement. */
    double rb[32], rs[32], tmp;
    for (int i = 0; i < reps; i++) {
        tmp = bp_steady_run(&big, ops / 4, &rb[i]);
        tmp = bp_steady_run(&small, ops / 4, &rs[i]);
    }
    (void)tmp;
    double relb = gsb_median(rb, (size_t)reps), rels = gsb_median(rs, (size_t)reps);
    char params[256];
    snprintf(params, sizeof params,
             "\"gpus\": %llu, \"fill\": 0.5, \"request\": \"2 pods of 4, required rack\", \"ns_per_placement\": %.1f, "
             "\"release_ns\": %.1f, \"what\": \"place + commit + release\"",
             (unsigned long long)gpusched_topo_gpu_count(big.e.t), nb, relb);
    gsb_report(b, "place.small8.per_s", 1e9 / nb, "1/s", params);
    snprintf(params, sizeof params,
             "\"big_gpus\": %llu, \"small_gpus\": %llu, \"big_ns\": %.1f, \"small_ns\": %.1f, "
             "\"big_release_ns\": %.1f, \"small_release_ns\": %.1f, \"place_commit_only_ratio\": %.3f",
             (unsigned long long)gpusched_topo_gpu_count(big.e.t),
             (unsigned long long)gpusched_topo_gpu_count(small.e.t), nb, ns, relb, rels,
             ns > rels ? (nb - relb) / (ns - rels) : 0.0);
    gsb_report(b, "place.small8.scaling", nb / ns, "ratio", params);
    uint32_t nops = gsb_quick(b) ? 50 : 300;
    double tn[32];
    for (int i = 0; i < reps; i++)
        tn[i] = bp_naive_run(&big, nops);
    double nn = gsb_median(tn, (size_t)reps);
    snprintf(params, sizeof params, "\"naive_ns\": %.0f, \"engine_ns\": %.1f, \"gpus\": %llu", nn, nb,
             (unsigned long long)gpusched_topo_gpu_count(big.e.t));
    gsb_report(b, "place.small8.vs_naive", nn / nb, "ratio", params);
    bp_steady_free(&big);
    bp_steady_free(&small);
}

/* ---- openb replay -------------------------------------------------------- */

/* First fit: the lowest node with enough free GPUs. */
static int bp_firstfit(gpusched_cluster *c, const openb_event *ev)
{
    const struct gpusched_topo *t = c->topo;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        uint64_t a = gs_cluster_node_avail(c, n);
        if (gs_popcount64(a) < ev->gpus)
            continue;
        uint64_t m = 0;
        for (uint32_t k = 0; k < ev->gpus; k++) {
            uint64_t bit = a & (~a + 1);
            m |= bit;
            a ^= bit;
        }
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = (uint64_t)ev->pod + 1;
        return gpusched_cluster_allocate(c, &j, 1, &n, &m);
    }
    return -1;
}

/* The first `nodes` nodes of a topology (whole racks of 16), to replay the
 * trace on a cluster too small for it, where the policy matters. */
static gpusched_topo *bp_first_nodes(const gpusched_topo *t, uint32_t nodes)
{
    gpusched_topo_builder *b = NULL;
    gpusched_topo *out = NULL;
    const char *lv[] = {"rack"};
    if (gpusched_topo_builder_new(NULL, &b) || gpusched_topo_builder_levels_set(b, 1, lv))
        goto done;
    for (uint32_t n = 0; n < nodes; n++) {
        char name[64], rack[16];
        gpusched_topo_node_name(t, n, name, sizeof name);
        snprintf(rack, sizeof rack, "r%u", n / 16);
        const char *path[] = {rack};
        if (gpusched_topo_builder_add_node(b, path, name, gpusched_topo_node_gpus(t, n),
                                           gpusched_topo_class_name(t, gpusched_topo_node_class(t, n)), NULL, 0))
            goto done;
    }
    gpusched_topo_builder_freeze(b, &out);
done:
    gpusched_topo_builder_free(b);
    return out;
}

static double bp_replay(const openb_trace *tr, gpusched_topo *topo, int engine, double *ms)
{
    bp_env e;
    if (bp_env_new(&e, topo))
        return 0;
    uint32_t tried = 0, placed = 0;
    double t0 = gsb_now_ns();
    for (uint32_t i = 0; i < tr->nev; i++) {
        const openb_event *ev = &tr->ev[i];
        if (ev->release) {
            gpusched_cluster_release(e.c, (uint64_t)ev->pod + 1);
            continue;
        }
        tried++;
        int rc;
        if (engine) {
            gpusched_place_request q;
            gpusched_job job;
            openb_request(ev, &q, &job);
            rc = gpusched_placer_place(e.p, &q, e.res);
        } else {
            rc = bp_firstfit(e.c, ev);
        }
        placed += rc == 0;
    }
    *ms = (gsb_now_ns() - t0) / 1e6;
    bp_env_free(&e);
    return tried ? (double)placed / tried : 0;
}

static void bp_openb(gsb_ctx *b)
{
    openb_trace tr;
    char err[256];
    if (openb_load(gsb_data_dir(b), &tr, err, sizeof err)) {
        fprintf(stderr, "bench-place: openb: %s\n", err);
        return;
    }
    double ms_e, ms_f;
    double fe = bp_replay(&tr, gpusched_topo_ref(tr.topo), 1, &ms_e);
    double ff = bp_replay(&tr, gpusched_topo_ref(tr.topo), 0, &ms_f);
    char params[256];
    snprintf(params, sizeof params,
             "\"nodes\": %u, \"gpus\": %llu, \"pods\": %u, \"racks_of\": 16, \"replay_ms\": %.1f, "
             "\"source\": \"alibaba openb (Weng et al., ATC'23)\"",
             gpusched_topo_node_count(tr.topo), (unsigned long long)gpusched_topo_gpu_count(tr.topo), tr.npods, ms_e);
    gsb_report(b, "place.openb.placed_fraction", fe, "fraction", params);
    snprintf(params, sizeof params, "\"engine\": %.4f, \"firstfit\": %.4f, \"firstfit_replay_ms\": %.1f", fe, ff, ms_f);
    gsb_report(b, "place.openb.vs_firstfit", ff > 0 ? fe / ff : 0, "ratio", params);
    /* This trace never holds more than 71 GPUs at once, so the whole
     * cluster never fills up. On the first nodes holding 56 GPUs (80% of
     * that peak) it does, and there the policies differ. */
    uint32_t tight = 0, gpus = 0;
    while (tight < gpusched_topo_node_count(tr.topo) && gpus < 56)
        gpus += gpusched_topo_node_gpus(tr.topo, tight++);
    fe = bp_replay(&tr, bp_first_nodes(tr.topo, tight), 1, &ms_e);
    ff = bp_replay(&tr, bp_first_nodes(tr.topo, tight), 0, &ms_f);
    snprintf(params, sizeof params,
             "\"nodes\": %u, \"gpus\": %u, \"engine\": %.4f, \"firstfit\": %.4f, \"what\": \"first nodes only, 80%% of the peak load\"",
             tight, gpus, fe, ff);
    gsb_report(b, "place.openb.tight.placed_fraction", fe, "fraction", params);
    gsb_report(b, "place.openb.tight.vs_firstfit", ff > 0 ? fe / ff : 0, "ratio", params);
    openb_free(&tr);
}

const gsb_scenario gsb_place_scenarios[] = {
    {"place.gang200k", bp_gang200k},
    {"place.small8", bp_small8},
    {"place.openb", bp_openb},
    {"place.sweep", gsb_place_sweep},
    {NULL, NULL},
};
