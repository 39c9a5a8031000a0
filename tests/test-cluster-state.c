/* Cluster state, function by function: lifetime, node and GPU queries,
 * jobs, reservations, health, aggregates, fragmentation, the checker. */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cluster-test.h"
#include "cluster/txn.h"
#include "cluster/cluster-internal.h"
#include "failalloc.h"

#define OK(c, call) cr_assert_eq((call), 0, "%s: %s", #call, gpusched_cluster_errmsg(c))

/* A failing call returns `code`, says `msg` and changes nothing. */
#define REJECT(c, call, code, msg)                                                                \
    do {                                                                                          \
        uint64_t before_ = ct_fingerprint(c);                                                     \
        int rc_ = (call);                                                                         \
        cr_assert_eq(rc_, (code), "%s returned %s: %s", #call, gpusched_err_name(rc_),             \
                     gpusched_cluster_errmsg(c));                                                 \
        cr_assert_str_eq(gpusched_cluster_errmsg(c), (msg));                                      \
        cr_assert_eq(ct_fingerprint(c), before_, "%s changed the state", #call);                  \
        cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));             \
    } while (0)

static int alloc1(gpusched_cluster *c, uint64_t id, uint32_t node, uint64_t mask)
{
    gpusched_job j = ct_job(id);
    return gpusched_cluster_allocate(c, &j, 1, &node, &mask);
}

Test(cluster, new_free_and_accessors)
{
    gpusched_topo *t = ct_uniform();
    gpusched_cluster *c = NULL;
    cr_assert_eq(gpusched_cluster_new(NULL, NULL, &c), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_new(t, NULL, NULL), GPUSCHED_EINVAL);
    gpusched_allocator bad = GPUSCHED_ALLOCATOR_INIT;
    cr_assert_eq(gpusched_cluster_new(t, &bad, &c), GPUSCHED_EINVAL);
    cr_assert_null(c);
    OK(c, gpusched_cluster_new(t, NULL, &c));
    cr_assert_eq(gpusched_cluster_topo(c), t);
    gpusched_topo_unref(t); /* the cluster keeps t alive */
    cr_assert_eq(gpusched_topo_node_count(gpusched_cluster_topo(c)), 24);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "");
    cr_assert_gt(gpusched_cluster_memory_bytes(c), 96 * 4);
    cr_assert_eq(gpusched_cluster_memory_bytes(NULL), 0);
    cr_assert_null(gpusched_cluster_topo(NULL));
    cr_assert_str_eq(gpusched_cluster_errmsg(NULL), "cluster is NULL");
    cr_assert_eq(gpusched_cluster_job_count(c), 0);
    cr_assert_eq(gpusched_cluster_resv_count(c), 0);
    cr_assert_eq(gpusched_cluster_job_count(NULL), 0);
    cr_assert_eq(gpusched_cluster_resv_count(NULL), 0);
    OK(c, gpusched_cluster_check(c));
    cr_assert_eq(gpusched_cluster_check(NULL), GPUSCHED_EINVAL);
    gpusched_cluster_unref(c);
    gpusched_cluster_unref(NULL);
}

Test(cluster, empty_aggregates_and_frag)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    uint64_t g;
    uint32_t n;
    OK(c, gpusched_cluster_domain_free_gpus(c, GPUSCHED_NONE, 0, &g));
    cr_assert_eq(g, 96);
    OK(c, gpusched_cluster_domain_free_nodes(c, GPUSCHED_NONE, 0, &n));
    cr_assert_eq(n, 24);
    OK(c, gpusched_cluster_domain_free_gpus(c, 0, 1, &g));
    cr_assert_eq(g, 48);
    OK(c, gpusched_cluster_domain_free_nodes(c, 1, 5, &n));
    cr_assert_eq(n, 4);
    OK(c, gpusched_cluster_domain_nodes_with_free(c, 1, 5, 4, &n));
    cr_assert_eq(n, 4);
    OK(c, gpusched_cluster_domain_nodes_with_free(c, 1, 5, 5, &n));
    cr_assert_eq(n, 0);
    uint32_t hist[8], len;
    OK(c, gpusched_cluster_domain_histogram(c, 0, 0, hist, 8, &len));
    cr_assert_eq(len, 5);
    cr_assert_eq(hist[4], 12);
    cr_assert_eq(hist[0] + hist[1] + hist[2] + hist[3], 0);
    uint32_t fd;
    uint64_t s, gang;
    OK(c, gpusched_cluster_frag(c, 0, &fd, &s, &gang));
    cr_assert_eq(fd, 2);
    cr_assert_eq(s, 0);
    cr_assert_eq(gang, 96);
    OK(c, gpusched_cluster_frag(c, 2, &fd, &s, &gang)); /* nodes */
    cr_assert_eq(fd, 24);
    OK(c, gpusched_cluster_frag(c, 1, NULL, NULL, NULL));
    gpusched_cluster_unref(c);
}

Test(cluster, aggregate_queries_reject_bad_arguments)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    uint64_t g;
    uint32_t n, hist[8], len;
    REJECT(c, gpusched_cluster_domain_free_gpus(c, 2, 0, &g), GPUSCHED_ERANGE,
           "level 2 out of range (the topology has 2)");
    REJECT(c, gpusched_cluster_domain_free_gpus(c, 1, 6, &g), GPUSCHED_ERANGE,
           "domain 6 out of range (level 1 has 6)");
    REJECT(c, gpusched_cluster_domain_free_gpus(c, 1, 0, NULL), GPUSCHED_EINVAL, "output pointer is NULL");
    REJECT(c, gpusched_cluster_domain_free_nodes(c, 0, 2, &n), GPUSCHED_ERANGE,
           "domain 2 out of range (level 0 has 2)");
    REJECT(c, gpusched_cluster_domain_free_nodes(c, 0, 0, NULL), GPUSCHED_EINVAL, "output pointer is NULL");
    REJECT(c, gpusched_cluster_domain_nodes_with_free(c, 0, 0, 65, &n), GPUSCHED_ERANGE,
           "gpus 65 out of range (at most 64 per node)");
    REJECT(c, gpusched_cluster_domain_nodes_with_free(c, 5, 0, 1, &n), GPUSCHED_ERANGE,
           "level 5 out of range (the topology has 2)");
    REJECT(c, gpusched_cluster_domain_histogram(c, 0, 0, hist, 4, &len), GPUSCHED_ERANGE,
           "histogram has 5 entries, buffer holds 4");
    cr_assert_eq(len, 5);
    REJECT(c, gpusched_cluster_domain_histogram(c, 0, 0, NULL, 5, &len), GPUSCHED_EINVAL, "hist is NULL");
    REJECT(c, gpusched_cluster_domain_histogram(c, 0, 0, hist, 8, NULL), GPUSCHED_EINVAL,
           "output pointer is NULL");
    REJECT(c, gpusched_cluster_frag(c, 3, NULL, NULL, NULL), GPUSCHED_ERANGE,
           "level 3 out of range (0 to 2, 2 being the nodes)");
    cr_assert_eq(gpusched_cluster_domain_free_gpus(NULL, 0, 0, &g), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_domain_free_nodes(NULL, 0, 0, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_domain_nodes_with_free(NULL, 0, 0, 0, &n), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_domain_histogram(NULL, 0, 0, hist, 8, &len), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_frag(NULL, 0, NULL, NULL, NULL), GPUSCHED_EINVAL);
    /* A success clears the message. */
    OK(c, gpusched_cluster_domain_free_gpus(c, 1, 0, &g));
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "");
    gpusched_cluster_unref(c);
}

Test(cluster, alloc_release_and_lookups)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    gpusched_job j = ct_job(42);
    j.priority = -3;
    j.tenant = 7;
    j.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
    j.start_time = -100;
    j.cost_hint = 12345;
    uint32_t nodes[] = {4, 5, 9};
    uint64_t masks[] = {0xf, 0x3, 0x8};
    OK(c, gpusched_cluster_allocate(c, &j, 3, nodes, masks));
    OK(c, gpusched_cluster_check(c));
    cr_assert_eq(gpusched_cluster_job_count(c), 1);
    uint64_t id;
    OK(c, gpusched_cluster_job_at(c, 0, &id));
    cr_assert_eq(id, 42);
    gpusched_job got = GPUSCHED_JOB_INIT;
    OK(c, gpusched_cluster_job_find(c, 42, &got));
    cr_assert_eq(got.size, sizeof got);
    cr_assert_eq(got.id, 42);
    cr_assert_eq(got.priority, -3);
    cr_assert_eq(got.tenant, 7);
    cr_assert_eq(got.flags, GPUSCHED_JOB_FLAG_PREEMPTIBLE);
    cr_assert_eq(got.start_time, -100);
    cr_assert_eq(got.cost_hint, 12345);
    OK(c, gpusched_cluster_job_find(c, 42, NULL));
    const uint32_t *pn;
    const uint64_t *pm;
    uint32_t n, gpus;
    OK(c, gpusched_cluster_job_allocation(c, 42, &pn, &pm, &n, &gpus));
    cr_assert_eq(n, 3);
    cr_assert_eq(gpus, 7);
    cr_assert_arr_eq(pn, nodes, sizeof nodes);
    cr_assert_arr_eq(pm, masks, sizeof masks);
    OK(c, gpusched_cluster_job_allocation(c, 42, &pn, &pm, &n, NULL));

    uint64_t f, r, a;
    uint32_t h;
    OK(c, gpusched_cluster_node_state(c, 5, &f, &r, &a, &h));
    cr_assert_eq(f, 0xc);
    cr_assert_eq(r, 0);
    cr_assert_eq(a, 0x3);
    cr_assert_eq(h, GPUSCHED_NODE_UP);
    OK(c, gpusched_cluster_node_state(c, 5, NULL, NULL, NULL, NULL));
    uint32_t st;
    OK(c, gpusched_cluster_gpu_state(c, 9, 3, &st, &id));
    cr_assert_eq(st, GPUSCHED_GPU_ALLOCATED);
    cr_assert_eq(id, 42);
    OK(c, gpusched_cluster_gpu_state(c, 9, 0, &st, &id));
    cr_assert_eq(st, GPUSCHED_GPU_FREE);
    cr_assert_eq(id, 0);
    OK(c, gpusched_cluster_gpu_state(c, 9, 0, &st, NULL));

    uint64_t g;
    OK(c, gpusched_cluster_domain_free_gpus(c, 1, 1, &g)); /* rack 1: nodes 4..7 */
    cr_assert_eq(g, 16 - 6);
    uint32_t fn;
    OK(c, gpusched_cluster_domain_free_nodes(c, 1, 1, &fn));
    cr_assert_eq(fn, 2);
    OK(c, gpusched_cluster_domain_nodes_with_free(c, 1, 1, 2, &fn));
    cr_assert_eq(fn, 3);
    uint32_t fd;
    uint64_t s, gang;
    OK(c, gpusched_cluster_frag(c, 1, &fd, &s, &gang)); /* racks 1 and 2 used */
    cr_assert_eq(fd, 4);
    cr_assert_eq(gang, 64);
    cr_assert_eq(s, 96 - 7 - 64);
    OK(c, gpusched_cluster_frag(c, 2, &fd, &s, &gang));
    cr_assert_eq(fd, 21);
    cr_assert_eq(s, 2 + 3);

    OK(c, gpusched_cluster_release(c, 42));
    OK(c, gpusched_cluster_check(c));
    cr_assert_eq(gpusched_cluster_job_count(c), 0);
    OK(c, gpusched_cluster_frag(c, 0, &fd, &s, &gang));
    cr_assert_eq(fd, 2);
    cr_assert_eq(gpusched_cluster_job_find(c, 42, NULL), GPUSCHED_ENOENT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "no running job 42");
    gpusched_cluster_unref(c);
}

Test(cluster, alloc_rejects_bad_input_atomically)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    OK(c, alloc1(c, 1, 3, 0x1));
    gpusched_job j = ct_job(2);
    uint32_t nodes[] = {2, 3};
    uint64_t masks[] = {0x3, 0x3};
    REJECT(c, gpusched_cluster_allocate(c, &j, 2, nodes, masks), GPUSCHED_EBUSY,
           "pair 1: node 3 GPU 0 is allocated to job 1");
    uint32_t desc[] = {3, 2};
    uint64_t desc_masks[] = {0xc, 0x3};
    REJECT(c, gpusched_cluster_allocate(c, &j, 2, desc, desc_masks), GPUSCHED_EINVAL,
           "pair 1: node 2 follows node 3 (nodes must be strictly ascending)");
    uint32_t dup[] = {2, 2};
    REJECT(c, gpusched_cluster_allocate(c, &j, 2, dup, masks), GPUSCHED_EINVAL,
           "pair 1: node 2 follows node 2 (nodes must be strictly ascending)");
    uint32_t far[] = {2, 24};
    REJECT(c, gpusched_cluster_allocate(c, &j, 2, far, masks), GPUSCHED_ERANGE,
           "pair 1: node 24 out of range (the topology has 24)");
    uint64_t zero[] = {0x1, 0};
    REJECT(c, gpusched_cluster_allocate(c, &j, 2, nodes, zero), GPUSCHED_EINVAL,
           "pair 1: node 3 has an empty GPU mask");
    uint64_t wide[] = {0x10, 0x2};
    REJECT(c, gpusched_cluster_allocate(c, &j, 2, nodes, wide), GPUSCHED_EINVAL,
           "pair 0: node 2 has 4 GPUs, mask 0x10 names GPU 4");
    REJECT(c, gpusched_cluster_allocate(c, &j, 0, nodes, masks), GPUSCHED_EINVAL, "allocation is empty (n = 0)");
    REJECT(c, gpusched_cluster_allocate(c, &j, 2, NULL, masks), GPUSCHED_EINVAL, "nodes or masks is NULL");
    REJECT(c, gpusched_cluster_allocate(c, NULL, 2, nodes, masks), GPUSCHED_EINVAL, "job: NULL pointer");
    gpusched_job again = ct_job(1);
    uint64_t free2[] = {0x3, 0xc};
    REJECT(c, gpusched_cluster_allocate(c, &again, 2, nodes, free2), GPUSCHED_EEXIST, "job 1 is already running");
    gpusched_job flags = ct_job(2);
    flags.flags = 0x6;
    REJECT(c, gpusched_cluster_allocate(c, &flags, 2, nodes, free2), GPUSCHED_EINVAL, "job 2: unknown flags 0x4");
    gpusched_job small = ct_job(2);
    small.size = 8;
    REJECT(c, gpusched_cluster_allocate(c, &small, 2, nodes, free2), GPUSCHED_EINVAL,
           "job: size field is 8, at least 40 expected (use the _INIT macro)");
    struct {
        gpusched_job j;
        uint64_t extra;
    } big = {ct_job(2), 1};
    big.j.size = sizeof big;
    REJECT(c, gpusched_cluster_allocate(c, &big.j, 2, nodes, free2), GPUSCHED_E2BIG,
           "job: byte 48 is non-zero but this library knows only 48 bytes");
    big.extra = 0;
    OK(c, gpusched_cluster_allocate(c, &big.j, 2, nodes, free2));
    /* A caller built against 0.2.0's job (40 bytes, before protected_until)
     * is accepted, and job_find writes only the bytes it knows. */
    gpusched_job old = ct_job(77);
    old.size = 40;
    old.protected_until = 12345; /* past the caller's struct: never read */
    const uint32_t far_node = 20;
    const uint64_t one_gpu = 0x1;
    OK(c, gpusched_cluster_allocate(c, &old, 1, &far_node, &one_gpu));
    gpusched_job seen = GPUSCHED_JOB_INIT;
    seen.size = 40;
    seen.protected_until = -7; /* the caller's own bytes past its struct */
    OK(c, gpusched_cluster_job_find(c, 77, &seen));
    cr_assert_eq(seen.id, 77);
    cr_assert_eq(seen.size, 40);
    cr_assert_eq(seen.protected_until, -7);
    seen.size = sizeof seen;
    OK(c, gpusched_cluster_job_find(c, 77, &seen));
    cr_assert_eq(seen.protected_until, 0);
    OK(c, gpusched_cluster_release(c, 77));

    cr_assert_eq(gpusched_cluster_allocate(NULL, &j, 2, nodes, masks), GPUSCHED_EINVAL);
    gpusched_cluster_unref(c);
}

Test(cluster, release_update_and_iteration_errors)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    for (uint64_t id = 10; id < 15; id++)
        OK(c, alloc1(c, id, (uint32_t)id, 0x5));
    REJECT(c, gpusched_cluster_release(c, 99), GPUSCHED_ENOENT, "no running job 99");
    cr_assert_eq(gpusched_cluster_release(NULL, 1), GPUSCHED_EINVAL);
    gpusched_job u = ct_job(12);
    u.priority = 9;
    u.cost_hint = 77;
    OK(c, gpusched_cluster_job_update(c, &u));
    gpusched_job got = GPUSCHED_JOB_INIT;
    OK(c, gpusched_cluster_job_find(c, 12, &got));
    cr_assert_eq(got.priority, 9);
    cr_assert_eq(got.cost_hint, 77);
    gpusched_job missing = ct_job(99);
    REJECT(c, gpusched_cluster_job_update(c, &missing), GPUSCHED_ENOENT, "no running job 99");
    u.flags = 0x80;
    REJECT(c, gpusched_cluster_job_update(c, &u), GPUSCHED_EINVAL, "job 12: unknown flags 0x80");
    cr_assert_eq(gpusched_cluster_job_update(NULL, &u), GPUSCHED_EINVAL);
    uint64_t id;
    REJECT(c, gpusched_cluster_job_at(c, 5, &id), GPUSCHED_ERANGE, "job index 5 out of range (5 jobs)");
    REJECT(c, gpusched_cluster_job_at(c, 0, NULL), GPUSCHED_EINVAL, "job_id is NULL");
    cr_assert_eq(gpusched_cluster_job_at(NULL, 0, &id), GPUSCHED_EINVAL);
    gpusched_job tiny = GPUSCHED_JOB_INIT;
    tiny.size = 4;
    REJECT(c, gpusched_cluster_job_find(c, 12, &tiny), GPUSCHED_EINVAL,
           "job: size field is 4, at least 40 expected (use GPUSCHED_JOB_INIT)");
    cr_assert_eq(gpusched_cluster_job_find(NULL, 12, NULL), GPUSCHED_EINVAL);
    const uint32_t *pn;
    const uint64_t *pm;
    uint32_t n;
    REJECT(c, gpusched_cluster_job_allocation(c, 99, &pn, &pm, &n, NULL), GPUSCHED_ENOENT, "no running job 99");
    REJECT(c, gpusched_cluster_job_allocation(c, 12, NULL, &pm, &n, NULL), GPUSCHED_EINVAL,
           "nodes, masks or n is NULL");
    cr_assert_eq(gpusched_cluster_job_allocation(NULL, 12, &pn, &pm, &n, NULL), GPUSCHED_EINVAL);
    /* Releasing in the middle keeps every other job reachable. */
    OK(c, gpusched_cluster_release(c, 11));
    uint64_t seen = 0;
    for (uint32_t i = 0; i < gpusched_cluster_job_count(c); i++) {
        OK(c, gpusched_cluster_job_at(c, i, &id));
        seen |= 1ull << (id - 10);
    }
    cr_assert_eq(seen, 0x1d);
    OK(c, gpusched_cluster_check(c));
    gpusched_cluster_unref(c);
}

Test(cluster, node_and_gpu_queries_reject_bad_arguments)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    uint32_t st;
    REJECT(c, gpusched_cluster_node_state(c, 24, NULL, NULL, NULL, NULL), GPUSCHED_ERANGE,
           "node 24 out of range (the topology has 24)");
    REJECT(c, gpusched_cluster_gpu_state(c, 0, 4, &st, NULL), GPUSCHED_ERANGE,
           "gpu 4 out of range (node 0 has 4)");
    REJECT(c, gpusched_cluster_gpu_state(c, 24, 0, &st, NULL), GPUSCHED_ERANGE,
           "node 24 out of range (the topology has 24)");
    REJECT(c, gpusched_cluster_gpu_state(c, 0, 0, NULL, NULL), GPUSCHED_EINVAL, "state is NULL");
    cr_assert_eq(gpusched_cluster_node_state(NULL, 0, NULL, NULL, NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_gpu_state(NULL, 0, 0, &st, NULL), GPUSCHED_EINVAL);
    gpusched_cluster_unref(c);
}

Test(cluster, reservations)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    OK(c, alloc1(c, 1, 0, 0x1));
    uint32_t nodes[] = {0, 1};
    uint64_t masks[] = {0x6, 0x1};
    OK(c, gpusched_cluster_reserve(c, 7, 2, nodes, masks));
    OK(c, gpusched_cluster_check(c));
    uint64_t f, r, a;
    OK(c, gpusched_cluster_node_state(c, 0, &f, &r, &a, NULL));
    cr_assert_eq(f, 0x8);
    cr_assert_eq(r, 0x6);
    cr_assert_eq(a, 0x1);
    uint32_t st;
    uint64_t id;
    OK(c, gpusched_cluster_gpu_state(c, 0, 1, &st, &id));
    cr_assert_eq(st, GPUSCHED_GPU_RESERVED);
    cr_assert_eq(id, 7);
    uint64_t g;
    OK(c, gpusched_cluster_domain_free_gpus(c, GPUSCHED_NONE, 0, &g));
    cr_assert_eq(g, 96 - 1 - 3, "reserved GPUs are not free for new work");

    /* Another job cannot take them; extending merges. */
    REJECT(c, alloc1(c, 8, 0, 0x2), GPUSCHED_EBUSY, "pair 0: node 0 GPU 1 is reserved for job 7");
    REJECT(c, gpusched_cluster_reserve(c, 9, 1, nodes, &masks[0]), GPUSCHED_EBUSY,
           "pair 0: node 0 GPU 1 is reserved for job 7");
    uint32_t more_nodes[] = {1, 2};
    uint64_t more_masks[] = {0x2, 0xf};
    OK(c, gpusched_cluster_reserve(c, 7, 2, more_nodes, more_masks));
    const uint32_t *pn;
    const uint64_t *pm;
    uint32_t n, gpus;
    OK(c, gpusched_cluster_resv_allocation(c, 7, &pn, &pm, &n, &gpus));
    cr_assert_eq(n, 3);
    cr_assert_eq(gpus, 8);
    cr_assert_eq(pn[0], 0);
    cr_assert_eq(pm[1], 0x3);
    cr_assert_eq(pn[2], 2);
    OK(c, gpusched_cluster_check(c));
    cr_assert_eq(gpusched_cluster_resv_count(c), 1);
    OK(c, gpusched_cluster_resv_at(c, 0, &id));
    cr_assert_eq(id, 7);

    /* Job 7 allocates part of its reservation plus free GPUs: the rest is
     * released. */
    gpusched_job j = ct_job(7);
    uint32_t an[] = {0, 3};
    uint64_t am[] = {0xe, 0x1};
    OK(c, gpusched_cluster_allocate(c, &j, 2, an, am));
    OK(c, gpusched_cluster_check(c));
    cr_assert_eq(gpusched_cluster_resv_count(c), 0);
    OK(c, gpusched_cluster_node_state(c, 1, &f, &r, &a, NULL));
    cr_assert_eq(f, 0xf);
    cr_assert_eq(r, 0);

    OK(c, gpusched_cluster_reserve(c, 5, 1, &nodes[1], &masks[1]));
    OK(c, gpusched_cluster_unreserve(c, 5));
    OK(c, gpusched_cluster_check(c));
    REJECT(c, gpusched_cluster_unreserve(c, 5), GPUSCHED_ENOENT, "no reservation for job 5");
    REJECT(c, gpusched_cluster_resv_at(c, 0, &id), GPUSCHED_ERANGE,
           "reservation index 0 out of range (0 reservations)");
    REJECT(c, gpusched_cluster_resv_at(c, 0, NULL), GPUSCHED_EINVAL, "job_id is NULL");
    REJECT(c, gpusched_cluster_resv_allocation(c, 5, &pn, &pm, &n, NULL), GPUSCHED_ENOENT,
           "no reservation for job 5");
    REJECT(c, gpusched_cluster_resv_allocation(c, 5, &pn, NULL, &n, NULL), GPUSCHED_EINVAL,
           "nodes, masks or n is NULL");
    REJECT(c, gpusched_cluster_reserve(c, 5, 0, nodes, masks), GPUSCHED_EINVAL, "allocation is empty (n = 0)");
    uint64_t taken = 0x1;
    REJECT(c, gpusched_cluster_reserve(c, 5, 1, &nodes[0], &taken), GPUSCHED_EBUSY,
           "pair 0: node 0 GPU 0 is allocated to job 1");
    cr_assert_eq(gpusched_cluster_reserve(NULL, 5, 1, nodes, masks), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_unreserve(NULL, 5), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_resv_at(NULL, 0, &id), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_resv_allocation(NULL, 5, &pn, &pm, &n, NULL), GPUSCHED_EINVAL);
    gpusched_cluster_unref(c);
}

Test(cluster, reservation_of_a_running_job_stays_separate)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    OK(c, alloc1(c, 3, 0, 0x3));
    uint32_t node = 0;
    uint64_t mask = 0xc;
    OK(c, gpusched_cluster_reserve(c, 3, 1, &node, &mask));
    OK(c, gpusched_cluster_check(c));
    OK(c, gpusched_cluster_release(c, 3));
    cr_assert_eq(gpusched_cluster_resv_count(c), 1);
    uint64_t f;
    OK(c, gpusched_cluster_node_state(c, 0, &f, NULL, NULL, NULL));
    cr_assert_eq(f, 0x3);
    OK(c, gpusched_cluster_check(c));
    gpusched_cluster_unref(c);
}

Test(cluster, health_and_jobs_hit)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    OK(c, alloc1(c, 100, 6, 0x8));
    OK(c, alloc1(c, 200, 6, 0x1));
    OK(c, alloc1(c, 300, 6, 0x4));
    uint64_t ids[4];
    uint32_t n;
    OK(c, gpusched_cluster_node_jobs(c, 6, ids, 4, &n));
    cr_assert_eq(n, 3);
    cr_assert_eq(ids[0], 200);
    cr_assert_eq(ids[1], 300);
    cr_assert_eq(ids[2], 100);
    REJECT(c, gpusched_cluster_node_jobs(c, 6, ids, 2, &n), GPUSCHED_ERANGE, "node 6 holds 3 jobs, the buffer 2");
    cr_assert_eq(n, 3);
    REJECT(c, gpusched_cluster_node_jobs(c, 6, ids, 4, NULL), GPUSCHED_EINVAL, "count is NULL");
    REJECT(c, gpusched_cluster_node_jobs(c, 24, ids, 4, &n), GPUSCHED_ERANGE,
           "node 24 out of range (the topology has 24)");
    OK(c, gpusched_cluster_node_jobs(c, 7, NULL, 0, &n));
    cr_assert_eq(n, 0);

    REJECT(c, gpusched_cluster_node_health_set(c, 6, GPUSCHED_NODE_DOWN, ids, 1, &n), GPUSCHED_ERANGE,
           "node 6 holds 3 jobs, the buffer 1");
    REJECT(c, gpusched_cluster_node_health_set(c, 6, 4, ids, 4, &n), GPUSCHED_EINVAL,
           "health 4 is not a gpusched_node_health");
    REJECT(c, gpusched_cluster_node_health_set(c, 30, 1, ids, 4, &n), GPUSCHED_ERANGE,
           "node 30 out of range (the topology has 24)");
    OK(c, gpusched_cluster_node_health_set(c, 6, GPUSCHED_NODE_DOWN, ids, 4, &n));
    cr_assert_eq(n, 3);
    OK(c, gpusched_cluster_check(c));
    uint32_t h;
    OK(c, gpusched_cluster_node_state(c, 6, NULL, NULL, NULL, &h));
    cr_assert_eq(h, GPUSCHED_NODE_DOWN);
    uint64_t g;
    OK(c, gpusched_cluster_domain_free_gpus(c, 1, 1, &g));
    cr_assert_eq(g, 12, "a down node's free GPU does not count");
    uint32_t hist[5], len;
    OK(c, gpusched_cluster_domain_histogram(c, 1, 1, hist, 5, &len));
    cr_assert_eq(hist[0], 1);
    cr_assert_eq(hist[4], 3);
    /* No new work on a node that is not up; jobs there may still leave. */
    REJECT(c, alloc1(c, 400, 6, 0x2), GPUSCHED_ESTATE, "pair 0: node 6 is not up (health 3)");
    uint32_t node = 6;
    uint64_t mask = 0x2;
    REJECT(c, gpusched_cluster_reserve(c, 400, 1, &node, &mask), GPUSCHED_ESTATE,
           "pair 0: node 6 is not up (health 3)");
    OK(c, gpusched_cluster_release(c, 200));
    OK(c, gpusched_cluster_check(c));
    OK(c, gpusched_cluster_domain_free_gpus(c, 1, 1, &g));
    cr_assert_eq(g, 12);
    for (uint32_t s = GPUSCHED_NODE_CORDONED; s <= GPUSCHED_NODE_DOWN; s++) {
        REJECT(c, gpusched_cluster_node_health_set(c, 6, s, NULL, 2, NULL), GPUSCHED_EINVAL, "ids is NULL");
        OK(c, gpusched_cluster_node_health_set(c, 6, s, ids, 4, NULL));
        OK(c, gpusched_cluster_check(c));
    }
    OK(c, gpusched_cluster_node_health_set(c, 6, GPUSCHED_NODE_UP, ids, 4, &n));
    cr_assert_eq(n, 2);
    OK(c, gpusched_cluster_domain_free_gpus(c, 1, 1, &g));
    cr_assert_eq(g, 14);
    OK(c, gpusched_cluster_check(c));
    cr_assert_eq(gpusched_cluster_node_health_set(NULL, 6, 0, NULL, 0, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_node_jobs(NULL, 6, NULL, 0, &n), GPUSCHED_EINVAL);
    gpusched_cluster_unref(c);
}

Test(cluster, mixed_node_sizes)
{
    gpusched_cluster *c = ct_cluster(ct_mixed());
    gpusched_topo *t = gpusched_cluster_topo(c);
    uint32_t big;
    cr_assert_eq(gpusched_topo_node_find(t, "d", &big), 0);
    cr_assert_eq(gpusched_topo_node_gpus(t, big), 64);
    uint32_t hist[65], len;
    OK(c, gpusched_cluster_domain_histogram(c, GPUSCHED_NONE, 0, hist, 65, &len));
    cr_assert_eq(len, 65);
    cr_assert_eq(hist[64], 1);
    cr_assert_eq(hist[8], 5);
    OK(c, alloc1(c, 1, big, ~0ull));
    OK(c, gpusched_cluster_check(c));
    OK(c, gpusched_cluster_domain_histogram(c, GPUSCHED_NONE, 0, hist, 65, &len));
    cr_assert_eq(hist[64], 0);
    cr_assert_eq(hist[0], 1);
    uint32_t fd;
    uint64_t s, gang;
    OK(c, gpusched_cluster_frag(c, 1, &fd, &s, &gang));
    cr_assert_eq(fd, 4);
    cr_assert_eq(s, 0);
    OK(c, gpusched_cluster_release(c, 1));
    uint32_t n;
    OK(c, gpusched_cluster_domain_nodes_with_free(c, GPUSCHED_NONE, 0, 3, &n));
    cr_assert_eq(n, 8);
    OK(c, gpusched_cluster_domain_nodes_with_free(c, GPUSCHED_NONE, 0, 0, &n));
    cr_assert_eq(n, 10);
    OK(c, gpusched_cluster_check(c));
    gpusched_cluster_unref(c);
}

Test(cluster, many_jobs_grow_tables_and_hash)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    /* One job per GPU, ids that collide modulo small powers of two. */
    uint64_t id = 0;
    for (uint32_t node = 0; node < 24; node++)
        for (uint32_t g = 0; g < 4; g++, id++)
            OK(c, alloc1(c, id << 40, node, 1ull << g));
    cr_assert_eq(gpusched_cluster_job_count(c), 96);
    OK(c, gpusched_cluster_check(c));
    for (uint64_t k = 0; k < 96; k += 3)
        OK(c, gpusched_cluster_release(c, k << 40));
    OK(c, gpusched_cluster_check(c));
    for (uint64_t k = 0; k < 96; k++)
        cr_assert_eq(gpusched_cluster_job_find(c, k << 40, NULL), k % 3 ? 0 : GPUSCHED_ENOENT);
    uint64_t g;
    OK(c, gpusched_cluster_domain_free_gpus(c, GPUSCHED_NONE, 0, &g));
    cr_assert_eq(g, 32);
    gpusched_cluster_unref(c);
}

Test(cluster, checker_finds_tampering)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    OK(c, alloc1(c, 1, 0, 0x3));
    uint32_t node = 1;
    uint64_t mask = 0x1;
    OK(c, gpusched_cluster_reserve(c, 2, 1, &node, &mask));
    OK(c, gpusched_cluster_check(c));

    c->node_free[2] &= ~1ull;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "node 2: free 0xe reserved 0x0, expected 0xf and 0x0");
    c->node_free[2] |= 1;

    c->agg[1].free_gpus[3]++;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c),
                     "level 1 domain 3: 17 free GPUs, 4 free nodes kept; 16 and 4 recomputed"
                     " (or the histograms differ)");
    c->agg[1].free_gpus[3]--;

    c->root_hist[4]++;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    c->root_hist[4]--;

    c->full_doms[0]++;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "level 0: 2 fully free domains (48 GPUs) kept, 1 (48) recomputed");
    c->full_doms[0]--;

    c->gpu_holder[5] = 1;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "node 1 GPU 1: holder 0x1, the jobs and reservations say 0");
    c->gpu_holder[5] = 0;

    c->jobs.rec[0].ngpus = 3;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "job 1: 3 GPUs recorded, 2 in its pairs");
    c->jobs.rec[0].ngpus = 2;

    c->resv.rec[0].p.in.masks[0] = 0x3;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    c->resv.rec[0].p.in.masks[0] = 0x1;

    c->node_health[9] = 7;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "node 9: health 7 is not a health");
    c->node_health[9] = 0;

    c->jobs.rec[c->jobs.live[0]].live = 5;
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT);
    c->jobs.rec[c->jobs.live[0]].live = 0;
    OK(c, gpusched_cluster_check(c));
    gpusched_cluster_unref(c);
}

Test(cluster, lend_and_commit_internal_path)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    uint32_t nodes[] = {0, 1};
    uint64_t masks[] = {0xf, 0x3};
    OK(c, gpusched_cluster_reserve(c, 5, 2, nodes, masks));
    uint64_t g;
    OK(c, gpusched_cluster_domain_free_gpus(c, 1, 0, &g));
    cr_assert_eq(g, 10);
    gs_hold *r = gs_cluster_resv_find(c, 5);
    cr_assert_not_null(r);
    OK(c, gs_txn_begin(c));
    OK(c, gs_txn_lend_resv(c, r));
    OK(c, gpusched_cluster_domain_free_gpus(c, 1, 0, &g));
    cr_assert_eq(g, 16, "a lent reservation counts as free");
    cr_assert_eq(gpusched_cluster_check(c), GPUSCHED_ECORRUPT, "the checker refuses an open transaction");
    gs_txn_rollback(c);
    OK(c, gpusched_cluster_check(c));
    OK(c, gpusched_cluster_domain_free_gpus(c, 1, 0, &g));
    cr_assert_eq(g, 10);
    OK(c, gs_txn_begin(c));
    OK(c, gs_txn_lend_resv(c, r));
    /* Public calls refuse while a transaction is open. */
    cr_assert_eq(gpusched_cluster_reserve(c, 5, 1, &nodes[1], &(uint64_t){0x4}), GPUSCHED_ESTATE);
    gpusched_job j = ct_job(5);
    uint32_t an[] = {1, 2};
    uint64_t am[] = {0x1, 0x1};
    OK(c, gs_txn_stage_claim(c, &j, 2, an, am));
    OK(c, gs_txn_commit(c));
    OK(c, gpusched_cluster_check(c));
    cr_assert_eq(c->nlent, 0);
    cr_assert_eq(gpusched_cluster_resv_count(c), 0);
    OK(c, gpusched_cluster_domain_free_gpus(c, GPUSCHED_NONE, 0, &g));
    cr_assert_eq(g, 94);
    cr_assert_eq(gs_cluster_hist_at_least(c, 1, 0, 4), 2);
    cr_assert_eq(gs_cluster_hist_at_least(c, GPUSCHED_NONE, 0, 3), 24);
    gpusched_cluster_unref(c);
}

/* ---- allocation failures ----------------------------------------------- */

typedef struct fa_ctx {
    gpusched_topo *topo;
    gpusched_cluster *c;
    int what;
} fa_ctx;

static int fa_new(failalloc *fa, void *ctx)
{
    fa_ctx *x = ctx;
    return gpusched_cluster_new(x->topo, &fa->a, &x->c);
}

static void fa_free(void *ctx)
{
    fa_ctx *x = ctx;
    gpusched_cluster_unref(x->c);
    x->c = NULL;
}

Test(cluster, new_survives_every_allocation_failure)
{
    fa_ctx x = {.topo = ct_uniform()};
    long n = failalloc_sweep(fa_new, fa_free, &x);
    cr_assert_gt(n, 5);
    gpusched_topo_unref(x.topo);
}

/* Builds a cluster with a failing allocator, then runs many allocations and
 * reservations: every failure must be ENOMEM with nothing changed. */
static int fa_ops(failalloc *fa, void *ctx)
{
    fa_ctx *x = ctx;
    long fail_at = fa->fail_at;
    fa->fail_at = -1;
    int rc = gpusched_cluster_new(x->topo, &fa->a, &x->c);
    cr_assert_eq(rc, 0);
    fa->fail_at = fail_at >= 0 ? fa->count + fail_at : -1;
    gpusched_cluster *c = x->c;
    for (uint32_t i = 0; i < 32; i++) {
        uint32_t nodes[3] = {i % 8, 8 + i % 8, 16 + i % 8};
        uint64_t masks[3] = {1ull << (i / 8 % 4), 1ull << (i / 8 % 4), 1ull << (i / 8 % 4)};
        uint32_t n = i % 2 ? 3 : 1;
        uint64_t before = ct_fingerprint(c);
        gpusched_job j = ct_job(i);
        rc = i % 4 == 3 ? gpusched_cluster_reserve(c, 1000 + i % 3, n, nodes, masks)
                        : gpusched_cluster_allocate(c, &j, n, nodes, masks);
        if (rc == GPUSCHED_ENOMEM) {
            cr_assert_eq(ct_fingerprint(c), before);
            cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
            gpusched_cluster_unref(c);
            x->c = NULL;
            return rc;
        }
        cr_assert_eq(rc, 0, "%s", gpusched_cluster_errmsg(c));
    }
    fa->fail_at = -1;
    cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
    return 0;
}

Test(cluster, alloc_and_reserve_survive_every_allocation_failure)
{
    fa_ctx x = {.topo = ct_uniform()};
    long n = failalloc_sweep(fa_ops, fa_free, &x);
    cr_assert_gt(n, 10);
    gpusched_topo_unref(x.topo);
}

Test(cluster, check_reports_out_of_memory)
{
    gpusched_topo *t = ct_uniform();
    failalloc fa;
    failalloc_init(&fa, -1);
    gpusched_cluster *c;
    cr_assert_eq(gpusched_cluster_new(t, &fa.a, &c), 0);
    for (long k = 0; k < 3; k++) {
        fa.fail_at = fa.count + k;
        int rc = gpusched_cluster_check(c);
        if (rc == 0)
            break;
        cr_assert_eq(rc, GPUSCHED_ENOMEM);
        cr_assert_str_eq(gpusched_cluster_errmsg(c), "out of memory for the invariant check");
    }
    fa.fail_at = -1;
    cr_assert_eq(gpusched_cluster_check(c), 0);
    gpusched_cluster_unref(c);
    cr_assert_eq(fa.live, 0);
    gpusched_topo_unref(t);
}

Test(cluster, release_to_resv_keeps_the_gpus_for_the_preemptor)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    gpusched_job victim = ct_job(10);
    uint32_t vn[] = {4, 5};
    uint64_t vm[] = {0x3, 0xf};
    OK(c, gpusched_cluster_allocate(c, &victim, 2, vn, vm));
    OK(c, alloc1(c, 11, 6, 0xf));
    uint32_t rn = 5;
    uint64_t g0, g1;
    OK(c, gpusched_cluster_domain_free_gpus(c, GPUSCHED_NONE, 0, &g0));
    OK(c, gpusched_cluster_release_to_resv(c, 10, 99));
    OK(c, gpusched_cluster_check(c));
    OK(c, gpusched_cluster_domain_free_gpus(c, GPUSCHED_NONE, 0, &g1));
    cr_assert_eq(g1, g0, "nothing became free");
    cr_assert_eq(gpusched_cluster_job_find(c, 10, NULL), GPUSCHED_ENOENT);
    uint32_t st;
    uint64_t id;
    OK(c, gpusched_cluster_gpu_state(c, 5, 2, &st, &id));
    cr_assert_eq(st, GPUSCHED_GPU_RESERVED);
    cr_assert_eq(id, 99);
    /* A second victim on a down node joins the same reservation. */
    uint64_t hit[4];
    OK(c, gpusched_cluster_node_health_set(c, 6, GPUSCHED_NODE_DOWN, hit, 4, NULL));
    OK(c, gpusched_cluster_release_to_resv(c, 11, 99));
    OK(c, gpusched_cluster_check(c));
    const uint32_t *pn;
    const uint64_t *pm;
    uint32_t n, gpus;
    OK(c, gpusched_cluster_resv_allocation(c, 99, &pn, &pm, &n, &gpus));
    cr_assert_eq(n, 3);
    cr_assert_eq(gpus, 10);
    cr_assert_eq(pn[2], 6);
    /* The preemptor takes what it needs from its reservation. */
    gpusched_job pre = ct_job(99);
    uint64_t pmask = 0xf;
    OK(c, gpusched_cluster_allocate(c, &pre, 1, &rn, &pmask));
    OK(c, gpusched_cluster_check(c));
    cr_assert_eq(gpusched_cluster_resv_count(c), 0);
    REJECT(c, gpusched_cluster_release_to_resv(c, 10, 99), GPUSCHED_ENOENT, "no running job 10");
    cr_assert_eq(gpusched_cluster_release_to_resv(NULL, 10, 99), GPUSCHED_EINVAL);
    /* While a transaction is open (a placement in progress), public calls
     * that change the cluster refuse. */
    OK(c, alloc1(c, 12, 7, 0x1));
    uint32_t node = 8;
    uint64_t mask = 1;
    OK(c, gpusched_cluster_reserve(c, 50, 1, &node, &mask));
    gs_hold *r = gs_cluster_resv_find(c, 50);
    OK(c, gs_txn_begin(c));
    OK(c, gs_txn_lend_resv(c, r));
    cr_assert_eq(gpusched_cluster_release_to_resv(c, 12, 50), GPUSCHED_ESTATE);
    gs_txn_rollback(c);
    OK(c, gpusched_cluster_check(c));
    OK(c, gpusched_cluster_release_to_resv(c, 12, 50));
    gpusched_cluster_unref(c);
}

static int fa_release_to_resv(failalloc *fa, void *ctx)
{
    fa_ctx *x = ctx;
    long fail_at = fa->fail_at;
    fa->fail_at = -1;
    cr_assert_eq(gpusched_cluster_new(x->topo, &fa->a, &x->c), 0);
    gpusched_job j = ct_job(1);
    uint32_t nodes[] = {0, 1, 2};
    uint64_t masks[] = {1, 1, 1};
    cr_assert_eq(gpusched_cluster_allocate(x->c, &j, 3, nodes, masks), 0);
    j.id = 2;
    cr_assert_eq(gpusched_cluster_allocate(x->c, &j, 1, &nodes[1], &(uint64_t){2}), 0);
    if (x->what)
        cr_assert_eq(gpusched_cluster_reserve(x->c, 7, 1, &nodes[2], &(uint64_t){4}), 0);
    uint64_t before = ct_fingerprint(x->c);
    fa->fail_at = fail_at >= 0 ? fa->count + fail_at : -1;
    int rc = gpusched_cluster_release_to_resv(x->c, 1, 7);
    if (rc == 0)
        rc = gpusched_cluster_release_to_resv(x->c, 2, 7);
    fa->fail_at = -1;
    if (rc) {
        cr_assert_eq(rc, GPUSCHED_ENOMEM);
        cr_assert_eq(gpusched_cluster_check(x->c), 0);
        if (gpusched_cluster_job_count(x->c) == 2)
            cr_assert_eq(ct_fingerprint(x->c), before);
        gpusched_cluster_unref(x->c);
        x->c = NULL;
        return rc;
    }
    cr_assert_eq(gpusched_cluster_check(x->c), 0);
    return 0;
}

Test(cluster, release_to_resv_survives_every_allocation_failure)
{
    fa_ctx x = {.topo = ct_uniform()};
    cr_assert_gt(failalloc_sweep(fa_release_to_resv, fa_free, &x), 0);
    x.what = 1;
    cr_assert_gt(failalloc_sweep(fa_release_to_resv, fa_free, &x), 0);
    gpusched_topo_unref(x.topo);
}

Test(cluster, memory_grows_with_jobs_and_job_find_respects_a_larger_struct)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    size_t empty = gpusched_cluster_memory_bytes(c);
    /* 96 GPUs in nodes of 4: masks and health per node, holder per GPU. */
    cr_assert_geq(empty, 24 * 17 + 96 * 4);
    gpusched_job j = ct_job(1);
    uint32_t nodes[] = {0, 1, 2};
    uint64_t masks[] = {1, 1, 1};
    OK(c, gpusched_cluster_allocate(c, &j, 3, nodes, masks));
    cr_assert_gt(gpusched_cluster_memory_bytes(c), empty + 3 * 12);
    /* A newer caller's struct is longer: the library fills what it knows
     * and leaves the rest, keeping the caller's size. */
    struct {
        gpusched_job j;
        uint64_t future;
    } big;
    memset(&big, 0, sizeof big);
    big.j.size = sizeof big;
    big.future = 0xabcdef;
    OK(c, gpusched_cluster_job_find(c, 1, &big.j));
    cr_assert_eq(big.j.size, sizeof big);
    cr_assert_eq(big.j.id, 1);
    cr_assert_eq(big.future, 0xabcdef);
    gpusched_cluster_unref(c);
}

Test(cluster, large_jobs_take_the_batched_update)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    OK(c, alloc1(c, 1, 5, 0x1));
    uint32_t nodes[24];
    uint64_t masks[24];
    uint32_t n = 0;
    for (uint32_t i = 2; i < 22; i++, n++) {
        nodes[n] = i;
        masks[n] = i == 5 ? 0xe : i % 3 ? 0xf : 0x3;
    }
    gpusched_job j = ct_job(2);
    OK(c, gpusched_cluster_allocate(c, &j, n, nodes, masks));
    OK(c, gpusched_cluster_check(c));
    uint32_t fd;
    uint64_t s, gang;
    OK(c, gpusched_cluster_frag(c, 1, &fd, &s, &gang));
    cr_assert_eq(fd, 0);
    OK(c, gpusched_cluster_node_health_set(c, 9, GPUSCHED_NODE_DOWN, (uint64_t[4]){0}, 4, NULL));
    OK(c, gpusched_cluster_release(c, 2));
    OK(c, gpusched_cluster_check(c));
    OK(c, gpusched_cluster_frag(c, 1, &fd, &s, &gang));
    cr_assert_eq(fd, 4, "racks 1 and 2 hold node 5's job and the down node 9");
    OK(c, gpusched_cluster_release_to_resv(c, 1, 7));
    OK(c, gpusched_cluster_check(c));
    gpusched_cluster_unref(c);
}

/* The update paths replace topology lookups by arithmetic only where the
 * arrays agree with it: a uniform shape is regular at every level, uneven
 * racks and node sizes are not. */
Test(cluster, regular_shapes_are_found_exactly)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    cr_assert_eq(c->reg_node_gpus, 4);
    cr_assert_eq(c->reg_leaf_nodes, 4);
    cr_assert_eq(c->reg_dom_nodes[0], 12);
    cr_assert_eq(c->reg_dom_nodes[1], 4);
    cr_assert_eq(c->reg_fan[1], 3);
    for (uint32_t n = 0; n < c->topo->nnodes; n++) {
        cr_assert_eq(gs_cl_node_leaf(c, n), c->topo->node_leaf[n]);
        cr_assert_eq(gs_cl_gpu_base(c, n), c->topo->node_gpu_base[n]);
    }
    for (uint32_t d = 0; d < c->topo->ndom[1]; d++)
        cr_assert_eq(gs_cl_parent(c, 1, d), c->topo->dom_parent[1][d]);
    gpusched_cluster_unref(c);

    c = ct_cluster(ct_mixed());
    cr_assert_eq(c->reg_node_gpus, 0);
    cr_assert_eq(c->reg_leaf_nodes, 0);
    cr_assert_eq(c->reg_dom_nodes[1], 0);
    cr_assert_eq(c->reg_fan[1], 0);
    for (uint32_t n = 0; n < c->topo->nnodes; n++) {
        cr_assert_eq(gs_cl_node_leaf(c, n), c->topo->node_leaf[n]);
        cr_assert_eq(gs_cl_node_gpus(c, n), c->topo->node_gpus[n]);
    }
    gpusched_cluster_unref(c);
}

/* The bulk read of node state is the per-node read, for every range. */
Test(cluster, nodes_state_in_bulk)
{
    gpusched_cluster *c = ct_cluster(ct_mixed());
    gpusched_topo *t = gpusched_cluster_topo(c);
    const uint32_t nn = gpusched_topo_node_count(t);
    /* Some of everything: jobs, a reservation, a node down. */
    uint32_t n0 = 0, n3 = 3;
    uint64_t m0 = 0x3, m3 = 0xff00;
    gpusched_job j = ct_job(1);
    cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &n0, &m0), 0);
    cr_assert_eq(gpusched_cluster_reserve(c, 2, 1, &n3, &m3), 0);
    uint64_t hit[64];
    cr_assert_eq(gpusched_cluster_node_health_set(c, 6, GPUSCHED_NODE_DOWN, hit, 64, NULL), 0);
    uint64_t f[16], r[16], a[16];
    uint32_t h[16];
    for (uint32_t first = 0; first <= nn; first++)
        for (uint32_t count = 0; first + count <= nn; count++) {
            cr_assert_eq(gpusched_cluster_nodes_state(c, first, count, f, r, a, h), 0);
            for (uint32_t i = 0; i < count; i++) {
                uint64_t ef, er, ea;
                uint32_t eh;
                cr_assert_eq(gpusched_cluster_node_state(c, first + i, &ef, &er, &ea, &eh), 0);
                cr_assert_eq(f[i], ef);
                cr_assert_eq(r[i], er);
                cr_assert_eq(a[i], ea);
                cr_assert_eq(h[i], eh);
            }
        }
    cr_assert_eq(gpusched_cluster_nodes_state(c, 0, nn, NULL, NULL, NULL, NULL), 0);
    cr_assert_eq(gpusched_cluster_nodes_state(NULL, 0, 1, f, r, a, h), GPUSCHED_EINVAL);
    f[0] = 77;
    cr_assert_eq(gpusched_cluster_nodes_state(c, 3, nn - 2, f, r, a, h), GPUSCHED_ERANGE);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "nodes 3 to 10 out of range (the topology has 10)");
    cr_assert_eq(f[0], 77, "a refused call wrote");
    cr_assert_eq(gpusched_cluster_nodes_state(c, nn + 1, 0, f, r, a, h), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_cluster_nodes_state(c, 1, UINT32_MAX, f, r, a, h), GPUSCHED_ERANGE);
    gpusched_cluster_unref(c);
}
