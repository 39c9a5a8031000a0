/* Pods with resources, GPU fractions and class lists: the cluster's state
 * through claims and releases, the errors, the policies, and completeness
 * against an exhaustive reference on small random clusters. */
#include <stdlib.h>

#include "place-test.h"

static const char *const lv2[] = {"block", "rack"};

/* blocks x racks x nodes of `gpus` GPUs, cpu and memory per node given
 * by the callback (NULL: 8000 and 32768), classes alternating a100/h100
 * by node when `two_classes`. */
typedef void (*pd_res_fn)(uint32_t node, uint32_t *cpu, uint32_t *mem);

static gpusched_topo *pd_topo(uint32_t blocks, uint32_t racks, uint32_t nodes, uint32_t gpus, bool two_classes,
                              pd_res_fn fn)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, lv2), 0);
    uint32_t cpu_id, mem_id;
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", &cpu_id), 0);
    cr_assert_eq(gpusched_topo_builder_resource_add(b, "memory", &mem_id), 0);
    uint32_t k = 0;
    for (uint32_t i = 0; i < blocks; i++)
        for (uint32_t j = 0; j < racks; j++)
            for (uint32_t n = 0; n < nodes; n++, k++) {
                char bn[16], rn[16], nn[16];
                snprintf(bn, sizeof bn, "b%u", i);
                snprintf(rn, sizeof rn, "r%u", j);
                snprintf(nn, sizeof nn, "n%u", k);
                const char *path[] = {bn, rn};
                cr_assert_eq(gpusched_topo_builder_add_node(b, path, nn, gpus, two_classes && (k & 1) ? "h100" : "a100",
                                                            NULL, 0),
                             0);
                uint32_t cpu = 8000, mem = 32768;
                if (fn)
                    fn(k, &cpu, &mem);
                cr_assert_eq(gpusched_topo_builder_node_resource_set(b, nn, cpu_id, cpu), 0);
                cr_assert_eq(gpusched_topo_builder_node_resource_set(b, nn, mem_id, mem), 0);
            }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0, "%s", gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    return t;
}

/* A pod request: `pods` pods of (cpu, mem) and `milli` of a GPU (1..999)
 * or `gpus` whole GPUs. */
static gpusched_place_request pd_req(uint64_t *res, uint32_t pods, uint32_t cpu, uint32_t mem, uint32_t gpus,
                                     uint32_t milli)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS;
    q.pods = pods;
    q.pod_gpus = gpus;
    q.gpu_milli = milli;
    res[0] = cpu;
    res[1] = mem;
    q.resources = res;
    q.resource_count = 2;
    return q;
}

static uint32_t res_free(gpusched_cluster *c, uint32_t node, uint32_t r)
{
    uint32_t v = 0;
    cr_assert_eq(gpusched_cluster_node_resource_free(c, node, r, &v), 0, "%s", gpusched_cluster_errmsg(c));
    return v;
}

static uint32_t milli_free(gpusched_cluster *c, uint32_t node, uint32_t gpu)
{
    uint32_t v = 0;
    cr_assert_eq(gpusched_cluster_gpu_milli_free(c, node, gpu, &v), 0, "%s", gpusched_cluster_errmsg(c));
    return v;
}

static void check(gpusched_cluster *c)
{
    cr_assert_eq(gpusched_cluster_check(c), 0, "%s", gpusched_cluster_errmsg(c));
}

static int place(pt_env *e, gpusched_place_request *q, uint64_t id, bool commit)
{
    gpusched_job job;
    pt_req_job(q, &job, id);
    q->flags = commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
    int rc = gpusched_placer_place(e->p, q, e->res);
    q->job = NULL;
    return rc;
}

static uint32_t placed_node(pt_env *e, uint64_t *mask)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_place_result_nodes(e->res, &nodes, &masks, &n), 0);
    cr_assert_eq(n, 1);
    if (mask)
        *mask = masks[0];
    return nodes[0];
}

Test(place_pods, fractions_share_a_gpu_and_give_it_back)
{
    pt_env e = pt_env_on(pd_topo(1, 1, 2, 4, false, NULL));
    uint64_t res[2];
    gpusched_place_request q = pd_req(res, 1, 1000, 4096, 0, 500);
    q.policy = GPUSCHED_POLICY_BEST_FIT;
    cr_assert_eq(place(&e, &q, 1, true), 0, "%s", gpusched_placer_errmsg(e.p));
    uint64_t m1;
    uint32_t n1 = placed_node(&e, &m1);
    cr_assert_eq(__builtin_popcountll(m1), 1);
    uint32_t g1 = (uint32_t)__builtin_ctzll(m1);
    cr_assert_eq(milli_free(e.c, n1, g1), 500);
    cr_assert_eq(res_free(e.c, n1, 0), 7000);
    cr_assert_eq(res_free(e.c, n1, 1), 32768 - 4096);
    uint32_t state;
    uint64_t holder;
    cr_assert_eq(gpusched_cluster_gpu_state(e.c, n1, g1, &state, &holder), 0);
    cr_assert_eq(state, GPUSCHED_GPU_SHARED);
    uint64_t free_gpus;
    cr_assert_eq(gpusched_cluster_domain_free_gpus(e.c, GPUSCHED_NONE, 0, &free_gpus), 0);
    cr_assert_eq(free_gpus, 7, "a shared GPU is not free for whole-GPU requests");
    check(e.c);

    /* The second half goes to the same GPU: the fullest with room. */
    cr_assert_eq(place(&e, &q, 2, true), 0, "%s", gpusched_placer_errmsg(e.p));
    uint64_t m2;
    cr_assert_eq(placed_node(&e, &m2), n1);
    cr_assert_eq(m2, m1);
    cr_assert_eq(milli_free(e.c, n1, g1), 0);
    uint64_t shared, left;
    cr_assert_eq(gpusched_cluster_frag_shared(e.c, &shared, &left), 0);
    cr_assert_eq(shared, 1);
    cr_assert_eq(left, 0);
    check(e.c);
    /* Node jobs list both fractions. */
    uint64_t ids[8];
    uint32_t count;
    cr_assert_eq(gpusched_cluster_node_jobs(e.c, n1, ids, 8, &count), 0);
    cr_assert_eq(count, 2);

    /* A whole-GPU gang of every free GPU still fits: 7 of 8. */
    gpusched_place_request w = GPUSCHED_PLACE_REQUEST_INIT;
    w.gpus = 7;
    cr_assert_eq(place(&e, &w, 3, false), 0, "%s", gpusched_placer_errmsg(e.p));
    w.gpus = 8;
    cr_assert_eq(place(&e, &w, 3, false), GPUSCHED_ENOSPC);

    cr_assert_eq(gpusched_cluster_release(e.c, 1), 0);
    cr_assert_eq(milli_free(e.c, n1, g1), 500);
    cr_assert_eq(gpusched_cluster_frag_shared(e.c, &shared, &left), 0);
    cr_assert_eq(shared, 1);
    cr_assert_eq(left, 500);
    cr_assert_eq(gpusched_cluster_gpu_state(e.c, n1, g1, &state, &holder), 0);
    cr_assert_eq(state, GPUSCHED_GPU_SHARED);
    check(e.c);
    cr_assert_eq(gpusched_cluster_release(e.c, 2), 0);
    cr_assert_eq(milli_free(e.c, n1, g1), 1000);
    cr_assert_eq(gpusched_cluster_frag_shared(e.c, &shared, NULL), 0);
    cr_assert_eq(shared, 0);
    cr_assert_eq(gpusched_cluster_frag_shared(NULL, NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(res_free(e.c, n1, 0), 8000);
    cr_assert_eq(gpusched_cluster_gpu_state(e.c, n1, g1, &state, &holder), 0);
    cr_assert_eq(state, GPUSCHED_GPU_FREE);
    cr_assert_eq(gpusched_cluster_domain_free_gpus(e.c, GPUSCHED_NONE, 0, &free_gpus), 0);
    cr_assert_eq(free_gpus, 8);
    check(e.c);
    pt_env_free(&e);
}

Test(place_pods, whole_gpus_cpu_only_and_gangs)
{
    pt_env e = pt_env_on(pd_topo(2, 2, 2, 4, false, NULL));
    uint64_t res[2];
    /* A cpu-only pod takes no GPU. */
    gpusched_place_request q = pd_req(res, 1, 6000, 1024, 0, 0);
    cr_assert_eq(place(&e, &q, 1, true), 0, "%s", gpusched_placer_errmsg(e.p));
    uint64_t m;
    uint32_t n = placed_node(&e, &m);
    cr_assert_eq(m, 0);
    cr_assert_eq(res_free(e.c, n, 0), 2000);
    check(e.c);
    uint64_t ids[4];
    uint32_t count;
    cr_assert_eq(gpusched_cluster_node_jobs(e.c, n, ids, 4, &count), 0);
    cr_assert_eq(count, 1);
    cr_assert_eq(ids[0], 1);

    /* 6 pods of 2 GPUs and 3000 cpu, required in one block: 2 pods per
     * node at most (cpu 8000), 4 nodes per block: fits, never on the cpu-
     * only pod's node beyond its 2000 cpu. */
    gpusched_place_request g = pd_req(res, 6, 3000, 1024, 2, 0);
    g.required_level = 0;
    cr_assert_eq(place(&e, &g, 2, true), 0, "%s", gpusched_placer_errmsg(e.p));
    const uint32_t *pods;
    uint32_t np;
    cr_assert_eq(gpusched_place_result_pods(e.res, &pods, &np), 0);
    cr_assert_eq(np, 6);
    const uint32_t *doms;
    uint32_t nd;
    cr_assert_eq(gpusched_place_result_domains(e.res, 0, &doms, &nd), 0);
    cr_assert_eq(nd, 1);
    check(e.c);
    /* 8 pods of 3000 cpu in one block: at most 2 per node, and the block
     * with the cpu-only pod has a node with room for none. */
    gpusched_place_request big = pd_req(res, 8, 3000, 1024, 0, 0);
    big.required_level = 0;
    const uint32_t gang_block = doms[0];
    cr_assert_eq(gpusched_topo_node_domain(e.t, n, 0, &nd), 0);
    cr_assert_eq(nd, gang_block, "the gang packs into the block already used");
    cr_assert_eq(place(&e, &big, 3, false), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(gpusched_place_result_domains(e.res, 0, &doms, &nd), 0);
    cr_assert_eq(nd, 1);
    cr_assert_eq(doms[0], 1 - gang_block);
    big.pods = 9; /* the cluster holds 8 */
    cr_assert_eq(place(&e, &big, 3, false), GPUSCHED_ENOSPC);
    cr_assert_eq(gpusched_place_result_reason(e.res), GPUSCHED_REASON_SPLIT);
    cr_assert(strstr(gpusched_place_result_message(e.res), "hold 8 of 9 pods"), "%s",
              gpusched_place_result_message(e.res));
    big.pods = 5; /* a rack holds 4 */
    big.required_level = 1;
    cr_assert_eq(place(&e, &big, 3, false), GPUSCHED_ENOSPC);
    cr_assert_eq(gpusched_place_result_reason(e.res), GPUSCHED_REASON_REQUIRED);
    cr_assert(strstr(gpusched_place_result_message(e.res), "the best rack holds 4 of 5 pods; largest free on one node: cpu"), "%s",
              gpusched_place_result_message(e.res));
    cr_assert_eq(gpusched_cluster_release(e.c, 2), 0);
    cr_assert_eq(gpusched_cluster_release(e.c, 1), 0);
    check(e.c);
    for (uint32_t i = 0; i < 8; i++)
        cr_assert_eq(res_free(e.c, i, 0), 8000);
    pt_env_free(&e);
}

Test(place_pods, bad_input_changes_nothing)
{
    pt_env e = pt_env_on(pd_topo(1, 2, 2, 4, true, NULL));
    uint64_t res[3];
    gpusched_place_request q;
    struct {
        const char *what;
        int rc;
        const char *needle;
    } cases[] = {
        {"milli over 1000", GPUSCHED_EINVAL, "gpu_milli"},
        {"fraction of two GPUs", GPUSCHED_EINVAL, "a fraction is of one GPU"},
        {"too many resources", GPUSCHED_ERANGE, "declares 2 resources"},
        {"amount too big", GPUSCHED_EINVAL, "more than a node can have"},
        {"class out of range", GPUSCHED_ERANGE, "gpu_classes[0]"},
        {"split any", GPUSCHED_EINVAL, "split pods"},
        {"two slices at one level", GPUSCHED_EINVAL, "two slice constraints at level 1"},
        {"gpus disagree", GPUSCHED_EINVAL, "gpus is 5"},
        {"no pods", GPUSCHED_EINVAL, "pods is 0"},
        {"policy", GPUSCHED_EINVAL, "policy 9"},
        {"resources NULL", GPUSCHED_EINVAL, "resources is NULL"},
        /* The slice fields say what they say for whole-GPU gangs. */
        {"slice level unset", GPUSCHED_EINVAL, "place request: slice_gpus[1] is 1 but slice_level[1] is unset"},
        {"slice level alone", GPUSCHED_EINVAL, "place request: slice_level[0] is set but slice_gpus[0] is 0"},
        {"slice level out of range", GPUSCHED_ERANGE, "place request: slice_level[0] is 5 but the topology has 2 levels"},
    };
    uint32_t bad_class = 7;
    for (uint32_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        q = pd_req(res, 1, 1000, 1000, 0, 500);
        switch (i) {
        case 0: q.gpu_milli = 1001; break;
        case 1: q.pod_gpus = 2; break;
        case 2: q.resource_count = 3; res[2] = 1; break;
        case 3: res[0] = (uint64_t)UINT32_MAX + 1; break;
        case 4: q.gpu_classes = &bad_class; q.gpu_class_count = 1; break;
        case 5: q.split = GPUSCHED_SPLIT_ANY; break;
        case 6: q.slice_gpus[0] = q.slice_gpus[1] = 1; q.slice_level[0] = q.slice_level[1] = 1; break;
        case 7: q.pods = 2; q.gpus = 5; break;
        case 8: q.pods = 0; q.gpu_milli = 0; break;
        case 9: q.policy = 9; break;
        case 10: q.resources = NULL; break;
        case 11: q.slice_gpus[1] = 1; break;
        case 12: q.slice_level[0] = 1; break;
        case 13: q.slice_gpus[0] = 1; q.slice_level[0] = 5; break;
        }
        int rc = place(&e, &q, 1, true);
        cr_assert_eq(rc, cases[i].rc, "%s: rc %d: %s", cases[i].what, rc, gpusched_placer_errmsg(e.p));
        cr_assert(strstr(gpusched_placer_errmsg(e.p), cases[i].needle), "%s: message \"%s\"", cases[i].what,
                  gpusched_placer_errmsg(e.p));
        cr_assert_eq(gpusched_cluster_job_count(e.c), 0, "%s: nothing placed", cases[i].what);
    }
    /* A pod bigger than every node: "does not fit" with the numbers. */
    q = pd_req(res, 1, 9000, 1000, 1, 0);
    cr_assert_eq(place(&e, &q, 1, true), GPUSCHED_ENOSPC);
    const char *msg = gpusched_place_result_message(e.res);
    cr_assert(strstr(msg, "cpu 8000 (a pod asks 9000)"), "%s", msg);
    /* Only h100 (odd nodes) allowed, and a fraction: lands on an h100. */
    uint32_t h100;
    cr_assert_eq(gpusched_topo_class_find(e.t, "h100", &h100), 0);
    q = pd_req(res, 1, 1000, 1000, 0, 250);
    q.gpu_classes = &h100;
    q.gpu_class_count = 1;
    cr_assert_eq(place(&e, &q, 1, true), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(gpusched_topo_node_class(e.t, placed_node(&e, NULL)), h100);
    /* A move keeps the pod on its class. */
    cr_assert_eq(gpusched_placer_move(e.p, 1, GPUSCHED_PLACE_FLAG_COMMIT, e.res), 0, "%s",
                 gpusched_placer_errmsg(e.p));
    const uint32_t *mn;
    const uint64_t *mm;
    uint32_t mc;
    cr_assert_eq(gpusched_cluster_job_allocation(e.c, 1, &mn, &mm, &mc, NULL), 0);
    cr_assert_eq(gpusched_topo_node_class(e.t, mn[0]), h100);
    check(e.c);
    pt_env_free(&e);
}

static unsigned char *snap(gpusched_cluster *c, size_t *len)
{
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, len), GPUSCHED_ERANGE);
    unsigned char *buf = malloc(*len);
    cr_assert_eq(gpusched_cluster_snapshot(c, buf, *len, len), 0, "%s", gpusched_cluster_errmsg(c));
    return buf;
}

Test(place_pods, snapshot_and_journal_keep_pods)
{
    pt_env e = pt_env_on(pd_topo(1, 2, 2, 4, false, NULL));
    /* The replica starts from the empty cluster's snapshot (version 2:
     * no job holds resources yet) and follows the journal. */
    size_t len0;
    unsigned char *b0 = snap(e.c, &len0);
    cr_assert_eq(b0[8], 2, "an image without pods stays version 2");
    gpusched_cluster *replica;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(b0, len0, NULL, &replica, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_cluster_journal_start(e.c, NULL, NULL), 0);
    uint64_t res[2];
    gpusched_place_request q = pd_req(res, 1, 1000, 2048, 0, 300);
    for (uint64_t id = 1; id <= 5; id++)
        cr_assert_eq(place(&e, &q, id, true), 0, "%s", gpusched_placer_errmsg(e.p));
    q = pd_req(res, 3, 500, 512, 1, 0);
    cr_assert_eq(place(&e, &q, 6, true), 0, "%s", gpusched_placer_errmsg(e.p));
    q = pd_req(res, 2, 700, 100, 0, 0);
    cr_assert_eq(place(&e, &q, 7, true), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(gpusched_cluster_release(e.c, 2), 0);
    const void *jb;
    size_t jlen;
    cr_assert_eq(gpusched_cluster_journal_view(e.c, &jb, &jlen), 0);
    uint32_t applied;
    cr_assert_eq(gpusched_cluster_journal_apply(replica, jb, jlen, &applied), 0, "%s", gpusched_cluster_errmsg(replica));
    cr_assert_eq(applied, 8);
    check(replica);
    size_t la, lb;
    unsigned char *ba = snap(e.c, &la), *bb = snap(replica, &lb);
    cr_assert_eq(ba[8], 3, "an image with pods is version 3");
    cr_assert_eq(la, lb);
    cr_assert_eq(memcmp(ba, bb, la), 0, "the replica holds what the journal recorded");
    /* A restored image holds the same amounts, and releases give them back. */
    gpusched_cluster *back;
    cr_assert_eq(gpusched_cluster_restore(ba, la, NULL, &back, err, sizeof err), 0, "%s", err);
    check(back);
    uint32_t nn = gpusched_topo_node_count(e.t);
    for (uint32_t n = 0; n < nn; n++) {
        for (uint32_t r = 0; r < 2; r++)
            cr_assert_eq(res_free(back, n, r), res_free(e.c, n, r));
        for (uint32_t g = 0; g < 4; g++)
            cr_assert_eq(milli_free(back, n, g), milli_free(e.c, n, g));
    }
    for (uint64_t id = 1; id <= 7; id++)
        if (id != 2)
            cr_assert_eq(gpusched_cluster_release(back, id), 0);
    check(back);
    for (uint32_t n = 0; n < nn; n++) {
        cr_assert_eq(res_free(back, n, 0), 8000);
        for (uint32_t g = 0; g < 4; g++)
            cr_assert_eq(milli_free(back, n, g), 1000);
    }
    /* Every truncation of the version 3 image is refused. */
    for (size_t cut = 0; cut < la; cut += 1 + cut / 8) {
        gpusched_cluster *x = NULL;
        cr_assert_neq(gpusched_cluster_restore(ba, cut, NULL, &x, err, sizeof err), 0, "cut %zu", cut);
    }
    gpusched_cluster_unref(back);
    gpusched_cluster_unref(replica);
    free(b0);
    free(ba);
    free(bb);
    pt_env_free(&e);
}

/* Node 0: cpu 2000 (just one 1-GPU pod's worth); node 1: cpu 16000. */
static void tight_cpu(uint32_t node, uint32_t *cpu, uint32_t *mem)
{
    *cpu = node == 0 ? 2000 : 16000;
    *mem = 65536;
}

Test(place_pods, frag_keeps_cpu_where_gpus_need_it)
{
    pt_env e = pt_env_on(pd_topo(1, 1, 2, 2, false, tight_cpu));
    uint64_t res[2], wres[2];
    /* The workload: pods of 1 GPU and 2000 cpu. */
    gpusched_place_request w = pd_req(wres, 1, 2000, 1024, 1, 0);
    const gpusched_place_request *shapes[] = {&w};
    const double weights[] = {10};
    cr_assert_eq(gpusched_placer_workload_set(e.p, 1, shapes, weights), 0, "%s", gpusched_placer_errmsg(e.p));
    /* A cpu-only pod of 2000: best fit fills node 0 (least left), which
     * strands its two GPUs; the fragmentation policy takes node 1. */
    gpusched_place_request q = pd_req(res, 1, 2000, 1024, 0, 0);
    q.policy = GPUSCHED_POLICY_BEST_FIT;
    cr_assert_eq(place(&e, &q, 1, false), 0);
    cr_assert_eq(placed_node(&e, NULL), 0);
    q.policy = GPUSCHED_POLICY_FRAG;
    cr_assert_eq(place(&e, &q, 1, false), 0);
    cr_assert_eq(placed_node(&e, NULL), 1);
    q.policy = GPUSCHED_POLICY_DEFAULT;
    cr_assert_eq(place(&e, &q, 1, false), 0);
    cr_assert_eq(placed_node(&e, NULL), 1, "the default is the fragmentation policy");
    q.policy = GPUSCHED_POLICY_FIRST_FIT;
    cr_assert_eq(place(&e, &q, 1, false), 0);
    cr_assert_eq(placed_node(&e, NULL), 0);
    /* Bad workloads leave it as it was. */
    const double bad[] = {-1};
    cr_assert_eq(gpusched_placer_workload_set(e.p, 1, shapes, bad), GPUSCHED_EINVAL);
    const double nan_w[] = {0.0 / 0.0};
    cr_assert_eq(gpusched_placer_workload_set(e.p, 1, shapes, nan_w), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_placer_workload_set(e.p, 1, NULL, weights), GPUSCHED_EINVAL);
    q.policy = GPUSCHED_POLICY_FRAG;
    cr_assert_eq(place(&e, &q, 1, false), 0);
    cr_assert_eq(placed_node(&e, NULL), 1);
    pt_env_free(&e);
}

Test(place_pods, frag_learns_the_workload)
{
    pt_env e = pt_env_on(pd_topo(1, 1, 2, 2, false, tight_cpu));
    uint64_t res[2];
    /* Nothing learned yet: the first pods are placed by best fit until
     * shapes are known; after 1-GPU pods with 2000 cpu were seen, a cpu-only
     * pod avoids the node whose cpu the GPUs need. */
    gpusched_place_request g = pd_req(res, 1, 2000, 1024, 1, 0);
    for (uint64_t id = 1; id <= 3; id++)
        cr_assert_eq(place(&e, &g, id, false), 0);
    gpusched_place_request q = pd_req(res, 1, 2000, 1024, 0, 0);
    cr_assert_eq(place(&e, &q, 9, false), 0);
    cr_assert_eq(placed_node(&e, NULL), 1);
    pt_env_free(&e);
}

/* A workload of fractions of these sizes, `count` pods each (0: none),
 * asking little cpu and memory. */
static void frac_workload(pt_env *e, const uint32_t *milli, const double *count, uint32_t n)
{
    uint64_t res[8][2];
    gpusched_place_request w[8];
    const gpusched_place_request *shapes[8];
    for (uint32_t i = 0; i < n; i++) {
        w[i] = pd_req(res[i], 1, 100, 100, 0, milli[i]);
        shapes[i] = &w[i];
    }
    cr_assert_eq(gpusched_placer_workload_set(e->p, n, shapes, count), 0, "%s", gpusched_placer_errmsg(e->p));
}

/* Places a fraction of `milli` on node `node` of two (the other avoided). */
static void frac_on(pt_env *e, uint32_t node, uint32_t milli, uint64_t id)
{
    uint64_t res[2];
    const uint32_t other = 1 - node;
    gpusched_place_request q = pd_req(res, 1, 100, 100, 0, milli);
    q.avoid_nodes = &other;
    q.avoid_count = 1;
    cr_assert_eq(place(e, &q, id, true), 0, "%s", gpusched_placer_errmsg(e->p));
    cr_assert_eq(placed_node(e, NULL), node);
}

Test(place_pods, frag_fraction_leaves_the_hole_others_fill)
{
    /* Two nodes of one GPU: 530 free beside a 470 pod, 680 beside a 320. */
    pt_env e = pt_env_on(pd_topo(1, 1, 2, 1, false, NULL));
    frac_on(&e, 0, 470, 1);
    frac_on(&e, 1, 320, 2);
    uint64_t res[2];
    gpusched_place_request q = pd_req(res, 1, 100, 100, 0, 320);
    q.policy = GPUSCHED_POLICY_FRAG;
    /* A 320 pod leaves 210 on node 0 or 360 on node 1, within the band of
     * growth either way. The 190-milli pods would fill 210, but the
     * 810-milli pods leave holes of 190 that outnumber them: 210 would be
     * lost, while 360 takes the 320 the 650s' holes leave. Node 1. */
    static const uint32_t milli[] = {190, 320, 470, 650, 810};
    const double with_810[] = {2, 3, 6, 2, 10};
    frac_workload(&e, milli, with_810, 5);
    cr_assert_eq(place(&e, &q, 3, false), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(placed_node(&e, NULL), 1, "210 milli only the outnumbered small pods fit");
    /* Without the 810s nothing takes the small pods first: 210 is filled
     * to 20 by a 190, while a 190 leaves 170 of 360. Node 0. */
    frac_workload(&e, milli, with_810, 4);
    cr_assert_eq(place(&e, &q, 3, false), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_eq(placed_node(&e, NULL), 0, "the small pods fill the 210 milli when nothing else takes them");
    check(e.c);
    pt_env_free(&e);
}

Test(place_pods, cpu_only_nodes_take_cpu_only_pods)
{
    static const char text[] = "levels rack\nresources cpu memory\n"
                               "node r0 g0 gpus=4 cpu=16000 memory=65536\n"
                               "node r0 c0 gpus=0 cpu=16000 memory=65536\n"
                               "node r0 g1 gpus=4 cpu=16000 memory=65536\n";
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, sizeof text - 1, NULL, &t, err, sizeof err), 0, "%s", err);
    pt_env e = pt_env_on(t);
    uint32_t c0;
    cr_assert_eq(gpusched_topo_node_find(t, "c0", &c0), 0);
    uint64_t res[2];
    /* Pods without GPUs go to the node without GPUs (frag: nothing lost
     * there, and it packs best); GPU pods never do. */
    gpusched_place_request q = pd_req(res, 1, 4000, 4096, 0, 0);
    for (uint64_t id = 1; id <= 4; id++) {
        cr_assert_eq(place(&e, &q, id, true), 0, "%s", gpusched_placer_errmsg(e.p));
        cr_assert_eq(placed_node(&e, NULL), c0, "pod %llu", (unsigned long long)id);
    }
    q = pd_req(res, 1, 1000, 1024, 0, 500);
    for (uint64_t id = 5; id <= 8; id++) {
        cr_assert_eq(place(&e, &q, id, true), 0, "%s", gpusched_placer_errmsg(e.p));
        cr_assert_neq(placed_node(&e, NULL), c0);
    }
    /* A whole-GPU gang of every GPU but the shared ones: the 0-GPU node
     * counts for nothing. */
    gpusched_place_request w = GPUSCHED_PLACE_REQUEST_INIT;
    w.gpus = 6;
    cr_assert_eq(place(&e, &w, 20, false), 0, "%s", gpusched_placer_errmsg(e.p));
    w.gpus = 8;
    cr_assert_eq(place(&e, &w, 20, false), GPUSCHED_ENOSPC);
    /* The fractions packed onto one node's shared GPUs; the other GPU
     * node stays whole, and whole-node requests never take the 0-GPU one. */
    w.split = GPUSCHED_SPLIT_WHOLE_NODES;
    w.gpus = 4;
    cr_assert_eq(place(&e, &w, 20, false), 0, "%s", gpusched_placer_errmsg(e.p));
    cr_assert_neq(placed_node(&e, NULL), c0);
    w.gpus = 8;
    cr_assert_eq(place(&e, &w, 20, false), GPUSCHED_ENOSPC);
    check(e.c);
    pt_env_free(&e);
}

/* ---- completeness against an exhaustive reference ---------------------- */

typedef struct ref_node {
    uint32_t cpu, mem, cls, domain[2];
    uint32_t cpu_cap, mem_cap;
    uint32_t ngpus;
    uint32_t milli[4]; /* free milli per GPU */
} ref_node;

/* Whether node v holds k pods of the shape (fractions on distinct GPUs;
 * `whole`: one pod, on a node of `gpus` GPUs where nothing runs). */
static bool ref_holds(const ref_node *v, uint32_t k, uint32_t cpu, uint32_t mem, uint32_t gpus, uint32_t milli,
                      bool whole)
{
    if ((uint64_t)k * cpu > v->cpu || (uint64_t)k * mem > v->mem)
        return false;
    if (whole) {
        bool idle = v->cpu == v->cpu_cap && v->mem == v->mem_cap && v->ngpus == gpus;
        for (uint32_t g = 0; g < v->ngpus; g++)
            idle &= v->milli[g] == 1000;
        return k <= 1 && idle;
    }
    uint32_t ok = 0, full = 0;
    for (uint32_t g = 0; g < v->ngpus; g++) {
        ok += milli && v->milli[g] >= milli;
        full += v->milli[g] == 1000;
    }
    if (milli)
        return k <= ok;
    return (uint64_t)k * gpus <= full;
}

/* Tries every assignment of `pods` pods to nodes (pods are identical:
 * non-decreasing node sequences). */
static bool ref_fits(const ref_node *v, uint32_t nn, uint32_t pods, uint32_t cpu, uint32_t mem, uint32_t gpus,
                     uint32_t milli, bool whole, uint32_t cls_mask, int32_t req_level, uint32_t nslices,
                     const uint32_t *slice_pods, const uint32_t *slice_level)
{
    uint32_t seq[8] = {0};
    for (;;) {
        uint32_t cnt[8] = {0};
        bool ok = true;
        for (uint32_t i = 0; i < pods; i++)
            cnt[seq[i]]++;
        for (uint32_t n = 0; n < nn && ok; n++)
            ok = !cnt[n] || ((cls_mask >> v[n].cls & 1) && ref_holds(&v[n], cnt[n], cpu, mem, gpus, milli, whole));
        if (ok && req_level >= 0)
            for (uint32_t i = 1; i < pods && ok; i++)
                ok = v[seq[i]].domain[req_level] == v[seq[0]].domain[req_level];
        /* Slices: every domain of each slice level holds a multiple of
         * that slice's pods (identical pods split into slices any way; two
         * constraints nest, the inner dividing the outer, so whole inner
         * slices then group into whole outer ones). */
        for (uint32_t k = 0; k < nslices; k++)
            for (uint32_t n = 0; ok && n < nn; n++) {
                uint32_t in_dom = 0;
                for (uint32_t m = 0; m < nn; m++)
                    in_dom += v[m].domain[slice_level[k]] == v[n].domain[slice_level[k]] ? cnt[m] : 0;
                ok = in_dom % slice_pods[k] == 0;
            }
        if (ok)
            return true;
        if (!pt_next_assignment(seq, pods, nn))
            return false;
    }
}

Test(place_pods, complete_against_exhaustive_reference)
{
    pt_rng r = {0x9e3779b97f4a7c15ull};
    uint32_t cases = 0, fits = 0, whole_cases = 0, whole_fits = 0, two_slices = 0, two_slice_fits = 0;
    for (uint32_t round = 0; round < 600; round++) {
        /* 1-2 blocks x 1-2 racks x 1-2 nodes of 1-4 GPUs, random cpu/mem. */
        const uint32_t B = 1 + pt_below(&r, 2), R = 1 + pt_below(&r, 2), N = 1 + pt_below(&r, 2);
        const uint32_t G = 1 + pt_below(&r, 4);
        gpusched_topo_builder *b;
        cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
        cr_assert_eq(gpusched_topo_builder_levels_set(b, 2, lv2), 0);
        cr_assert_eq(gpusched_topo_builder_resource_add(b, "cpu", NULL), 0);
        cr_assert_eq(gpusched_topo_builder_resource_add(b, "memory", NULL), 0);
        uint32_t k = 0;
        for (uint32_t i = 0; i < B; i++)
            for (uint32_t j = 0; j < R; j++)
                for (uint32_t n = 0; n < N; n++, k++) {
                    char bn[8], rn[8], nn[8];
                    snprintf(bn, sizeof bn, "b%u", i);
                    snprintf(rn, sizeof rn, "r%u", j);
                    snprintf(nn, sizeof nn, "n%u", k);
                    const char *path[] = {bn, rn};
                    cr_assert_eq(gpusched_topo_builder_add_node(b, path, nn, G, pt_below(&r, 3) ? "a" : "b", NULL, 0), 0);
                    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, nn, 0, 1000 * (1 + pt_below(&r, 8))), 0);
                    cr_assert_eq(gpusched_topo_builder_node_resource_set(b, nn, 1, 1024 * (1 + pt_below(&r, 8))), 0);
                }
        gpusched_topo *t;
        cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
        gpusched_topo_builder_free(b);
        pt_env e = pt_env_on(t);
        const uint32_t nn = gpusched_topo_node_count(t);
        /* Fill at random with pods of every kind. */
        uint64_t res[2];
        const uint64_t nfill = pt_below(&r, 7); /* some rounds leave idle nodes, for whole nodes */
        for (uint64_t id = 1; id <= nfill; id++) {
            uint32_t kind = pt_below(&r, 3);
            gpusched_place_request q = pd_req(res, 1 + pt_below(&r, 2), 500 * pt_below(&r, 4), 512 * pt_below(&r, 4),
                                              kind == 0 ? 1 + pt_below(&r, 2) : 0,
                                              kind == 1 ? 100 * (1 + pt_below(&r, 9)) : 0);
            if (kind == 2 && !res[0] && !res[1])
                res[0] = 500;
            q.policy = 1 + pt_below(&r, 3);
            int rc = place(&e, &q, id, true);
            cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "fill: %d %s", rc, gpusched_placer_errmsg(e.p));
        }
        check(e.c);
        /* The reference's view, from the public queries. */
        ref_node v[8];
        uint32_t cls_a;
        bool have_a = gpusched_topo_class_find(t, "a", &cls_a) == 0;
        for (uint32_t n = 0; n < nn; n++) {
            v[n].cpu = res_free(e.c, n, 0);
            v[n].mem = res_free(e.c, n, 1);
            v[n].cpu_cap = gpusched_topo_node_resource(t, n, 0);
            v[n].mem_cap = gpusched_topo_node_resource(t, n, 1);
            v[n].cls = gpusched_topo_node_class(t, n);
            v[n].ngpus = G;
            cr_assert_eq(gpusched_topo_node_domain(t, n, 0, &v[n].domain[0]), 0);
            cr_assert_eq(gpusched_topo_node_domain(t, n, 1, &v[n].domain[1]), 0);
            for (uint32_t g = 0; g < G; g++)
                v[n].milli[g] = milli_free(e.c, n, g);
        }
        for (uint32_t trial = 0; trial < 8; trial++) {
            uint32_t kind = pt_below(&r, 4);
            uint32_t pods = 1 + pt_below(&r, 4);
            gpusched_place_request q = pd_req(res, pods, 500 * pt_below(&r, 5), 512 * pt_below(&r, 5),
                                              kind == 0 ? 1 + pt_below(&r, 2) : 0,
                                              kind == 1 ? 100 * (1 + pt_below(&r, 9)) : 0);
            if (kind == 2 && !res[0] && !res[1])
                res[0] = 1000;
            /* Whole nodes: of the nodes' size, given or 0 (the largest), or
             * of a size no node has. */
            const bool whole = kind == 3;
            uint32_t whole_gpus = 0;
            if (whole) {
                q.split = GPUSCHED_SPLIT_WHOLE_NODES;
                const uint32_t pick = pt_below(&r, 4);
                q.pod_gpus = pick == 0 ? 0 : pick == 1 ? G + 1 : G;
                whole_gpus = q.pod_gpus ? q.pod_gpus : G;
            }
            int32_t req_level = (int32_t)pt_below(&r, 3) - 1;
            q.required_level = req_level < 0 ? GPUSCHED_NONE : (uint32_t)req_level;
            q.policy = pt_below(&r, 4);
            uint32_t cls_mask = 3;
            if (have_a && pt_below(&r, 3) == 0) {
                q.gpu_classes = &cls_a;
                q.gpu_class_count = 1;
                cls_mask = 1u << cls_a;
            }
            /* A slice of 1 or 2 pods at either level now and then, or two
             * nested ones (racks, and blocks of a multiple), in either order
             * in the request; and a preferred level (a preference: it never
             * changes whether the gang fits). */
            uint32_t nslices = 0, slice_pods[2] = {0}, slice_level[2] = {0};
            const uint32_t per_pod = q.gpu_milli ? 1 : whole ? whole_gpus : q.pod_gpus;
            const uint32_t slices = per_pod ? pt_below(&r, 4) : 9;
            if (slices < 2) {
                uint32_t sp = 1 + pt_below(&r, 2);
                if (pods % sp == 0) {
                    slice_pods[0] = sp;
                    slice_level[0] = pt_below(&r, 2);
                    nslices = 1;
                }
            } else if (slices == 2) {
                const uint32_t inner = 1 + pt_below(&r, 2), outer = inner * (1 + pt_below(&r, 2));
                if (pods % outer == 0) {
                    slice_pods[0] = outer, slice_level[0] = 0;
                    slice_pods[1] = inner, slice_level[1] = 1;
                    nslices = 2;
                }
            }
            const uint32_t flip = nslices == 2 ? pt_below(&r, 2) : 0;
            for (uint32_t i = 0; i < nslices; i++) {
                q.slice_gpus[i ^ flip] = slice_pods[i] * per_pod;
                q.slice_level[i ^ flip] = slice_level[i];
            }
            /* The required domain holds the slices of its level and below. */
            uint32_t active = 0;
            for (uint32_t i = 0; i < nslices; i++)
                if (req_level < (int32_t)slice_level[i]) {
                    slice_pods[active] = slice_pods[i];
                    slice_level[active++] = slice_level[i];
                }
            nslices = active;
            two_slices += nslices == 2;
            q.preferred_level = pt_below(&r, 2) ? GPUSCHED_NONE : pt_below(&r, 3);
            bool want = ref_fits(v, nn, pods, (uint32_t)res[0], (uint32_t)res[1], whole ? whole_gpus : q.pod_gpus,
                                 q.gpu_milli, whole, cls_mask, req_level, nslices, slice_pods, slice_level);
            int rc = place(&e, &q, 100 + trial, true);
            cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%d %s", rc, gpusched_placer_errmsg(e.p));
            cr_assert_eq(rc == 0, want,
                         "round %u trial %u: library %s, reference %s (pods %u cpu %llu mem %llu gpus %u milli %u req %d "
                         "slice %u at %u pref %u): %s",
                         round, trial, rc ? "no" : "fits", want ? "fits" : "no", pods, (unsigned long long)res[0],
                         (unsigned long long)res[1], q.pod_gpus, q.gpu_milli, req_level, q.slice_gpus[0],
                         q.slice_level[0], q.preferred_level,
                         gpusched_place_result_message(e.res));
            cases++;
            whole_cases += whole;
            if (rc == 0) {
                fits++;
                whole_fits += whole;
                if (whole) {
                    /* Each pod has a node to itself, all of its GPUs. */
                    const uint32_t *nodes;
                    const uint64_t *masks;
                    uint32_t np;
                    cr_assert_eq(gpusched_place_result_nodes(e.res, &nodes, &masks, &np), 0);
                    cr_assert_eq(np, pods);
                    for (uint32_t i = 0; i < np; i++)
                        cr_assert_eq(masks[i], (1ull << G) - 1);
                }
                check(e.c); /* the commit kept every capacity */
                const uint32_t *doms;
                uint32_t nd;
                if (req_level >= 0) {
                    cr_assert_eq(gpusched_place_result_domains(e.res, (uint32_t)req_level, &doms, &nd), 0);
                    cr_assert_eq(nd, 1);
                }
                for (uint32_t s = 0; s < nslices; s++) {
                    /* Every domain of each slice level holds whole slices. */
                    const uint32_t *pn;
                    uint32_t np, per_dom[8] = {0};
                    cr_assert_eq(gpusched_place_result_pods(e.res, &pn, &np), 0);
                    cr_assert_eq(np, pods);
                    for (uint32_t i = 0; i < np; i++)
                        per_dom[v[pn[i]].domain[slice_level[s]]]++;
                    for (uint32_t d = 0; d < 8; d++)
                        cr_assert_eq(per_dom[d] % slice_pods[s], 0, "domain %u of level %u holds %u pods, slices of %u",
                                     d, slice_level[s], per_dom[d], slice_pods[s]);
                    two_slice_fits += nslices == 2 && s == 0;
                }
                cr_assert_eq(gpusched_cluster_release(e.c, 100 + trial), 0);
                check(e.c);
            }
        }
        pt_env_free(&e);
    }
    cr_assert_gt(fits, cases / 10, "the cases exercise placements (%u of %u fit)", fits, cases);
    cr_assert_lt(fits, cases - cases / 10, "and failures (%u of %u fit)", fits, cases);
    cr_assert(whole_fits > whole_cases / 10 && whole_fits < whole_cases - whole_cases / 10,
              "whole nodes: %u of %u fit", whole_fits, whole_cases);
    cr_assert(two_slice_fits > two_slices / 10 && two_slice_fits < two_slices - two_slices / 10,
              "two slices: %u of %u fit", two_slice_fits, two_slices);
    cr_log_info("%u cases, %u fit; whole nodes %u, %u fit; two slices %u, %u fit", cases, fits, whole_cases,
                whole_fits, two_slices, two_slice_fits);
}

static void varied_res(uint32_t node, uint32_t *cpu, uint32_t *mem)
{
    *cpu = 4000 + 2000 * (node % 5);
    *mem = 16384 << (node % 3);
}

/* The fragmentation policy caches each shape's candidate per node and
 * rescores only the nodes whose change counter moved. A placer that has
 * placed for a while must therefore choose exactly what a new placer
 * (nothing cached) chooses, after every kind of change: pods placed and
 * released, whole-GPU jobs allocated node by node and in batches (another
 * write path), reservations, node health. One rack of 300 nodes, so that
 * the single-pod scan is long enough to be cached. */
Test(place_pods, frag_cache_sees_every_change)
{
    pt_env e = pt_env_on(pd_topo(1, 1, 300, 4, true, varied_res));
    uint64_t wres[4][2];
    gpusched_place_request w[4] = {pd_req(wres[0], 1, 2000, 4096, 0, 500), pd_req(wres[1], 1, 4000, 8192, 1, 0),
                                   pd_req(wres[2], 1, 1000, 2048, 0, 250), pd_req(wres[3], 1, 8000, 16384, 2, 0)};
    const gpusched_place_request *shapes[] = {&w[0], &w[1], &w[2], &w[3]};
    const double weights[] = {4, 3, 2, 1};
    cr_assert_eq(gpusched_placer_workload_set(e.p, 4, shapes, weights), 0, "%s", gpusched_placer_errmsg(e.p));
    pt_rng rng = {0x5eed};
    uint64_t live[512];
    uint32_t nlive = 0, compared = 0;
    uint64_t id = 1;
    for (uint32_t step = 0; step < 1500; step++) {
        const uint32_t what = pt_below(&rng, 10);
        if (what < 5) {
            /* A pod: the cached placer's choice against a new placer's. */
            static const uint32_t milli[] = {0, 0, 100, 250, 500, 700};
            uint64_t res[2];
            const uint32_t m = milli[pt_below(&rng, 6)];
            gpusched_place_request q =
                pd_req(res, 1, 500 * (1 + pt_below(&rng, 8)), 1024 << pt_below(&rng, 4), m ? 0 : pt_below(&rng, 3), m);
            gpusched_placer *fresh;
            gpusched_place_result *fres;
            cr_assert_eq(gpusched_placer_new(e.c, NULL, &fresh), 0);
            cr_assert_eq(gpusched_place_result_new(NULL, &fres), 0);
            cr_assert_eq(gpusched_placer_workload_set(fresh, 4, shapes, weights), 0);
            gpusched_job job;
            pt_req_job(&q, &job, id);
            const int want = gpusched_placer_place(fresh, &q, fres);
            const int rc = place(&e, &q, id, nlive < 512);
            cr_assert_eq(rc, want, "step %u: %d against a new placer's %d", step, rc, want);
            if (rc == 0) {
                uint64_t mask, want_mask;
                const uint32_t *nodes;
                const uint64_t *masks;
                uint32_t n;
                const uint32_t node = placed_node(&e, &mask);
                cr_assert_eq(gpusched_place_result_nodes(fres, &nodes, &masks, &n), 0);
                want_mask = masks[0];
                cr_assert_eq(node, nodes[0], "step %u: node %u, a new placer chooses %u", step, node, nodes[0]);
                cr_assert_eq(mask, want_mask, "step %u: GPUs %llx, a new placer's %llx", step,
                             (unsigned long long)mask, (unsigned long long)want_mask);
                compared++;
                if (nlive < 512)
                    live[nlive++] = id;
            }
            id++;
            gpusched_place_result_free(fres);
            gpusched_placer_free(fresh);
        } else if (what < 7 && nlive) {
            const uint32_t k = pt_below(&rng, nlive);
            const int rc = gpusched_cluster_release(e.c, live[k]);
            if (rc != GPUSCHED_ENOENT) /* reserved ids are dropped below */
                cr_assert_eq(rc, 0, "%s", gpusched_cluster_errmsg(e.c));
            live[k] = live[--nlive];
        } else if (what == 7) {
            /* Whole GPUs on 1 to 8 nodes in one call (more than 4 pairs
             * take the batched write path). */
            uint32_t nodes[8];
            uint64_t masks[8];
            uint32_t n = 1 + pt_below(&rng, 8), k = 0, at = pt_below(&rng, 290);
            for (uint32_t i = 0; i < n; i++) {
                uint64_t free_mask;
                cr_assert_eq(gpusched_cluster_node_state(e.c, at + i, &free_mask, NULL, NULL, NULL), 0);
                if (free_mask) {
                    nodes[k] = at + i;
                    masks[k++] = free_mask & (0 - free_mask);
                }
            }
            gpusched_job j = GPUSCHED_JOB_INIT;
            j.id = id++;
            if (k && gpusched_cluster_allocate(e.c, &j, k, nodes, masks) == 0 && nlive < 512)
                live[nlive++] = j.id;
        } else if (what == 8) {
            uint64_t free_mask;
            uint32_t node = pt_below(&rng, 300);
            cr_assert_eq(gpusched_cluster_node_state(e.c, node, &free_mask, NULL, NULL, NULL), 0);
            if (free_mask) {
                uint64_t m = free_mask & (0 - free_mask);
                if (gpusched_cluster_reserve(e.c, 777, 1, &node, &m) == 0 && pt_below(&rng, 2))
                    cr_assert_eq(gpusched_cluster_unreserve(e.c, 777), 0);
            }
        } else {
            uint64_t hit[64];
            uint32_t nhit;
            cr_assert_eq(gpusched_cluster_node_health_set(e.c, pt_below(&rng, 300), pt_below(&rng, 3) ? 0 : 1 + pt_below(&rng, 3),
                                                          hit, 64, &nhit),
                         0, "%s", gpusched_cluster_errmsg(e.c));
        }
        if (step % 100 == 0)
            check(e.c);
    }
    cr_assert_gt(compared, 300, "only %u choices compared", compared);
    pt_env_free(&e);
}

/* A failure quotes the largest free amounts of one node. Without node
 * filters they come from the aggregates (the free-GPU histogram, the
 * racks' summaries); with a class list naming every class the same
 * numbers come node by node: the two explanations must be the same text,
 * on random states of pods, fractions, whole GPUs and cpu-only pods. */
Test(place_pods, failure_explained_from_aggregates_as_from_nodes)
{
    pt_rng rng = {0xfeed};
    uint32_t compared = 0;
    for (uint32_t round = 0; round < 40; round++) {
        pt_env e = pt_env_on(pd_topo(2, 3, 4, 4, true, varied_res));
        uint32_t classes[2];
        cr_assert_eq(gpusched_topo_class_find(e.t, "a100", &classes[0]), 0);
        cr_assert_eq(gpusched_topo_class_find(e.t, "h100", &classes[1]), 0);
        uint64_t res[2];
        static const uint32_t milli[] = {0, 0, 250, 500, 900};
        for (uint64_t id = 1; id <= 60; id++) {
            const uint32_t m = milli[pt_below(&rng, 5)];
            gpusched_place_request q = pd_req(res, 1 + pt_below(&rng, 3), 1000 * pt_below(&rng, 5),
                                              4096 * pt_below(&rng, 3), m ? 0 : pt_below(&rng, 3), m);
            (void)place(&e, &q, id, true);
            if (pt_below(&rng, 4) == 0)
                (void)gpusched_cluster_release(e.c, 1 + pt_below(&rng, (uint32_t)id));
        }
        if (round & 1) {
            /* Every GPU left whole taken: only the shared ones have room. */
            for (uint32_t n = 0; n < gpusched_topo_node_count(e.t); n++) {
                uint64_t free_mask;
                cr_assert_eq(gpusched_cluster_node_state(e.c, n, &free_mask, NULL, NULL, NULL), 0);
                gpusched_job j = GPUSCHED_JOB_INIT;
                j.id = 5000 + n;
                if (free_mask)
                    cr_assert_eq(gpusched_cluster_allocate(e.c, &j, 1, &n, &free_mask), 0);
            }
        }
        check(e.c);
        for (uint32_t trial = 0; trial < 10; trial++) {
            const uint32_t m = milli[pt_below(&rng, 5)];
            /* Too much of something: cpu, memory, GPUs or pods. */
            gpusched_place_request q =
                pd_req(res, 1 + pt_below(&rng, 200), 1000 * pt_below(&rng, 20), 8192 * pt_below(&rng, 20),
                       m ? 0 : pt_below(&rng, 6), m);
            q.required_level = pt_below(&rng, 3) ? GPUSCHED_NONE : pt_below(&rng, 2);
            const int rc = place(&e, &q, 900, false);
            if (rc != GPUSCHED_ENOSPC)
                continue;
            char fast[512];
            snprintf(fast, sizeof fast, "%s", gpusched_place_result_message(e.res));
            const uint32_t fast_reason = gpusched_place_result_reason(e.res);
            q.gpu_classes = classes;
            q.gpu_class_count = 2;
            cr_assert_eq(place(&e, &q, 900, false), GPUSCHED_ENOSPC);
            cr_assert_str_eq(gpusched_place_result_message(e.res), fast);
            cr_assert_eq(gpusched_place_result_reason(e.res), fast_reason);
            compared++;
        }
        pt_env_free(&e);
    }
    cr_assert_gt(compared, 200, "only %u failures compared", compared);
}
