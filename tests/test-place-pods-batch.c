/* Batches with pods (cpu, memory, GPU fractions) beside whole-GPU
 * requests, against placing the same requests one at a time: on random
 * small clusters, each request of a batch gets the placement it gets when
 * every request before it, plan only or not, was committed first; the
 * batch commits exactly its committing requests, in one journal record
 * that replays to the same state. And the commit's own check of several
 * claims of pods staged together (a batch never stages a conflict: its
 * holds prevent it), through the transaction directly. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster-internal.h"
#include "cluster/txn.h"
#include "gpusched/gpusched.h"

#define MAXQ 6

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint32_t below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(rnd(s) % n);
}

static gpusched_topo *topo(uint64_t *s)
{
    char text[2048], err[256];
    int o = snprintf(text, sizeof text, "levels rack\nresources cpu memory\n");
    const uint32_t nodes = 2 + below(s, 4);
    for (uint32_t n = 0; n < nodes; n++)
        o += snprintf(text + o, sizeof text - (size_t)o, "node r%u n%u gpus=%u cpu=%u memory=65536\n", n % 2, n,
                      2 + below(s, 3), 4000 + 2000 * below(s, 4));
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_parse(text, (size_t)o, NULL, &t, err, sizeof err), 0, "%s", err);
    return t;
}

/* Pods of cpu with whole GPUs, a fraction or none; or a whole-GPU gang. */
static gpusched_place_request request(uint64_t *s, uint64_t *amounts)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS;
    if (below(s, 4) == 0) {
        q.gpus = 1 + below(s, 4);
        q.pod_gpus = 1;
        return q;
    }
    q.pods = 1 + below(s, 3);
    amounts[0] = 500 * (1 + below(s, 10));
    amounts[1] = 1024;
    q.resources = amounts;
    q.resource_count = 2;
    if (below(s, 2))
        q.pod_gpus = below(s, 3);
    else
        q.gpu_milli = 250 * (1 + below(s, 3));
    return q;
}

static unsigned char *snap(gpusched_cluster *c, size_t *len)
{
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, len), GPUSCHED_ERANGE);
    unsigned char *buf = malloc(*len);
    cr_assert_eq(gpusched_cluster_snapshot(c, buf, *len, len), 0, "%s", gpusched_cluster_errmsg(c));
    return buf;
}

/* Every node's free GPUs, resources and per-GPU free milli, and every
 * job's allocation: what a user can see of a state. */
static void same_state(gpusched_cluster *a, gpusched_cluster *b, uint64_t seed)
{
    const gpusched_topo *t = gpusched_cluster_topo(a);
    for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++) {
        uint64_t fa, fb;
        uint32_t ra, rb;
        cr_assert_eq(gpusched_cluster_node_state(a, n, &fa, NULL, NULL, NULL), 0);
        cr_assert_eq(gpusched_cluster_node_state(b, n, &fb, NULL, NULL, NULL), 0);
        cr_assert_eq(fa, fb, "seed %llu node %u: free 0x%llx vs 0x%llx", (unsigned long long)seed, n,
                     (unsigned long long)fa, (unsigned long long)fb);
        for (uint32_t r = 0; r < 2; r++) {
            cr_assert_eq(gpusched_cluster_node_resource_free(a, n, r, &ra), 0);
            cr_assert_eq(gpusched_cluster_node_resource_free(b, n, r, &rb), 0);
            cr_assert_eq(ra, rb, "seed %llu node %u resource %u", (unsigned long long)seed, n, r);
        }
        for (uint32_t g = 0; g < gpusched_topo_node_gpus(t, n); g++) {
            uint32_t ma, mb;
            cr_assert_eq(gpusched_cluster_gpu_milli_free(a, n, g, &ma), 0);
            cr_assert_eq(gpusched_cluster_gpu_milli_free(b, n, g, &mb), 0);
            cr_assert_eq(ma, mb, "seed %llu node %u GPU %u", (unsigned long long)seed, n, g);
        }
    }
    cr_assert_eq(gpusched_cluster_job_count(a), gpusched_cluster_job_count(b));
    for (uint32_t i = 0; i < gpusched_cluster_job_count(a); i++) {
        uint64_t id;
        const uint32_t *na, *nb;
        const uint64_t *ma, *mb;
        uint32_t ca, cb;
        cr_assert_eq(gpusched_cluster_job_at(a, i, &id), 0);
        cr_assert_eq(gpusched_cluster_job_allocation(a, id, &na, &ma, &ca, NULL), 0);
        cr_assert_eq(gpusched_cluster_job_allocation(b, id, &nb, &mb, &cb, NULL), 0, "seed %llu: job %llu",
                     (unsigned long long)seed, (unsigned long long)id);
        cr_assert_eq(ca, cb);
        cr_assert_arr_eq(na, nb, ca * sizeof *na);
        cr_assert_arr_eq(ma, mb, ca * sizeof *ma);
    }
}

static uint32_t seen_batches, seen_pods_placed, seen_fractions, seen_whole, seen_misses;

static void check_one(uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15u + 3;
    gpusched_topo *t = topo(&s);
    gpusched_cluster *c;
    gpusched_placer *p;
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    /* Some jobs running first, pods among them: placed the same way on the
     * reference below (the placer learns the shapes it sees). */
    gpusched_place_result *r0;
    cr_assert_eq(gpusched_place_result_new(NULL, &r0), 0);
    uint64_t first_am[4][2];
    gpusched_place_request first[4];
    gpusched_job first_jobs[4];
    for (uint32_t i = 0; i < 4; i++) {
        first[i] = request(&s, first_am[i]);
        first_jobs[i] = (gpusched_job)GPUSCHED_JOB_INIT;
        first_jobs[i].id = 100 + i;
        first[i].job = &first_jobs[i];
        first[i].flags = GPUSCHED_PLACE_FLAG_COMMIT;
        int rc = gpusched_placer_place(p, &first[i], r0);
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(p));
    }
    size_t len;
    unsigned char *before = snap(c, &len);
    /* The batch. */
    const uint32_t n = 1 + below(&s, MAXQ);
    uint64_t amounts[MAXQ][2];
    gpusched_place_request qs[MAXQ];
    gpusched_job jobs[MAXQ];
    const gpusched_place_request *qp[MAXQ];
    gpusched_place_result *rs[MAXQ];
    for (uint32_t i = 0; i < n; i++) {
        qs[i] = request(&s, amounts[i]);
        jobs[i] = (gpusched_job)GPUSCHED_JOB_INIT;
        jobs[i].id = 1 + i;
        qs[i].job = &jobs[i];
        qs[i].flags = below(&s, 3) ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
        qp[i] = &qs[i];
        cr_assert_eq(gpusched_place_result_new(NULL, &rs[i]), 0);
    }
    cr_assert_eq(gpusched_cluster_journal_start(c, NULL, NULL), 0);
    uint32_t placed = 0;
    cr_assert_eq(gpusched_placer_place_batch(p, n, qp, rs, &placed), 0, "seed %llu: %s", (unsigned long long)seed,
                 gpusched_placer_errmsg(p));
    cr_assert_eq(gpusched_cluster_check(c), 0, "seed %llu: %s", (unsigned long long)seed, gpusched_cluster_errmsg(c));
    /* The reference: one at a time, every request committed, then the
     * plan-only ones released. */
    gpusched_cluster *ref;
    gpusched_placer *rp;
    gpusched_place_result *rr;
    char err[256];
    cr_assert_eq(gpusched_cluster_new(t, NULL, &ref), 0);
    cr_assert_eq(gpusched_placer_new(ref, NULL, &rp), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &rr), 0);
    for (uint32_t i = 0; i < 4; i++)
        gpusched_placer_place(rp, &first[i], rr);
    uint32_t ok = 0;
    for (uint32_t i = 0; i < n; i++) {
        gpusched_place_request q = qs[i];
        q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        int rc = gpusched_placer_place(rp, &q, rr);
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(rp));
        const uint32_t *bn, *an;
        const uint64_t *bm, *am;
        uint32_t bc, ac;
        gpusched_place_result_nodes(rs[i], &bn, &bm, &bc);
        gpusched_place_result_nodes(rr, &an, &am, &ac);
        cr_assert_eq(bc, rc == 0 ? ac : 0, "seed %llu request %u: %u pairs in the batch, %u alone (rc %d)",
                     (unsigned long long)seed, i, bc, ac, rc);
        if (bc) {
            cr_assert_arr_eq(bn, an, bc * sizeof *bn, "seed %llu request %u", (unsigned long long)seed, i);
            cr_assert_arr_eq(bm, am, bc * sizeof *bm, "seed %llu request %u", (unsigned long long)seed, i);
        }
        ok += rc == 0;
        seen_misses += rc != 0;
        seen_pods_placed += rc == 0 && qs[i].pods;
        seen_fractions += rc == 0 && qs[i].gpu_milli;
        seen_whole += rc == 0 && !qs[i].pods;
    }
    cr_assert_eq(placed, ok);
    for (uint32_t i = 0; i < n; i++)
        if (!(qs[i].flags & GPUSCHED_PLACE_FLAG_COMMIT))
            gpusched_cluster_release(ref, jobs[i].id);
    same_state(c, ref, seed);
    /* The journal's one record replays to the batch's state. */
    const void *jr;
    size_t jlen;
    cr_assert_eq(gpusched_cluster_journal_view(c, &jr, &jlen), 0);
    gpusched_cluster *replica;
    cr_assert_eq(gpusched_cluster_replay(before, len, jr, jlen, NULL, &replica, err, sizeof err), 0,
                 "seed %llu: %s", (unsigned long long)seed, err);
    size_t la, lb;
    unsigned char *a = snap(c, &la), *b = snap(replica, &lb);
    cr_assert(la == lb && memcmp(a, b, la) == 0, "seed %llu: the replay differs", (unsigned long long)seed);
    seen_batches++;
    free(a);
    free(b);
    free(before);
    gpusched_cluster_unref(replica);
    gpusched_place_result_free(rr);
    gpusched_placer_free(rp);
    gpusched_cluster_unref(ref);
    for (uint32_t i = 0; i < n; i++)
        gpusched_place_result_free(rs[i]);
    gpusched_place_result_free(r0);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}

Test(place_pods_batch, batches_are_placements_one_at_a_time)
{
    const uint32_t seeds = getenv("GPUSCHED_UNDER_VALGRIND") ? 50 : 500;
    for (uint64_t seed = 1; seed <= seeds; seed++)
        check_one(seed);
    cr_log_info("%u batches: %u pod requests placed (%u of fractions), %u whole-GPU, %u did not fit", seen_batches,
                seen_pods_placed, seen_fractions, seen_whole, seen_misses);
    cr_assert(seen_pods_placed > seeds / 2 && seen_fractions > seeds / 4 && seen_whole > seeds / 4 &&
                  seen_misses > seeds / 10,
              "coverage: %u pods, %u fractions, %u whole, %u misses", seen_pods_placed, seen_fractions, seen_whole,
              seen_misses);
}

/* A claim of one pod: `milli` of GPU `gpu` (or that GPU whole when milli
 * is 0) and `cpu` on node 0, as job `id`, staged in the open transaction;
 * the record stays valid until freed after the commit. */
typedef struct one_pod {
    gs_podx *x;
    uint32_t node;
    uint64_t mask;
    gpusched_job job;
} one_pod;

static void stage(gpusched_cluster *c, one_pod *o, uint64_t id, uint32_t gpu, uint32_t milli, uint32_t cpu)
{
    o->x = calloc(1, gs_podx_size(1));
    o->x->milli = milli;
    o->x->pod_gpus = milli ? 0 : 1;
    o->x->nres = 2;
    o->x->pod_res[0] = cpu;
    o->x->pod_res[1] = 1024;
    o->x->npairs = 1;
    o->x->pods[0] = 1;
    o->node = 0;
    o->mask = (uint64_t)1 << gpu;
    o->job = (gpusched_job)GPUSCHED_JOB_INIT;
    o->job.id = id;
    cr_assert_eq(gs_txn_stage_claim_pods(c, &o->job, 1, &o->node, &o->mask, o->x), 0);
}

static char why[256];

/* Two claims staged together on GPU 0 and GPU gpu2: 0 when the commit
 * takes both (then both are released), or its error (its message in
 * `why`), having changed nothing. */
static int commit_two(gpusched_cluster *c, uint32_t m1, uint32_t cpu1, uint32_t m2, uint32_t gpu2, uint32_t cpu2)
{
    one_pod a, b;
    size_t l0, l1;
    unsigned char *s0 = snap(c, &l0);
    cr_assert_eq(gs_txn_begin(c), 0);
    stage(c, &a, 1, 0, m1, cpu1);
    stage(c, &b, 2, gpu2, m2, cpu2);
    int rc = gs_txn_commit(c);
    snprintf(why, sizeof why, "%s", gpusched_cluster_errmsg(c));
    unsigned char *s1 = snap(c, &l1);
    if (rc)
        cr_assert(l0 == l1 && memcmp(s0, s1, l0) == 0, "a refused commit changed the cluster");
    else
        cr_assert_eq(gpusched_cluster_job_count(c), 2);
    cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
    if (!rc) {
        cr_assert_eq(gpusched_cluster_release(c, 1), 0);
        cr_assert_eq(gpusched_cluster_release(c, 2), 0);
    }
    free(a.x);
    free(b.x);
    free(s0);
    free(s1);
    return rc;
}

Test(place_pods_batch, a_commit_checks_claims_against_the_claims_before_them)
{
    static const char text[] = "levels rack\nresources cpu memory\nnode r0 n0 gpus=2 cpu=8000 memory=65536\n";
    gpusched_topo *t;
    gpusched_cluster *c;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, sizeof text - 1, NULL, &t, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    cr_assert_eq(commit_two(c, 400, 1000, 600, 0, 1000), 0, "400 + 600 milli share a GPU");
    cr_assert_eq(commit_two(c, 600, 1000, 600, 0, 1000), GPUSCHED_EBUSY, "600 + 600 milli on one GPU");
    cr_assert(strstr(why, "400 milli free"), "%s", why);
    cr_assert_eq(commit_two(c, 0, 1000, 500, 0, 1000), GPUSCHED_EBUSY, "a fraction of a GPU claimed whole");
    cr_assert_eq(commit_two(c, 500, 1000, 0, 0, 1000), GPUSCHED_EBUSY, "a GPU claimed whole with a fraction on it");
    cr_assert_eq(commit_two(c, 500, 1000, 0, 1, 1000), 0, "the other GPU whole");
    cr_assert_eq(commit_two(c, 500, 5000, 500, 1, 5000), GPUSCHED_EBUSY, "10,000 cpu of 8,000");
    cr_assert(strstr(why, "3000 cpu free"), "%s", why);
    gpusched_cluster_unref(c);
    gpusched_topo_unref(t);
}
