/* One constraint at a time on small hand-made clusters: split modes,
 * required and preferred levels, slices, class, labels, avoided nodes,
 * health, reservations, and the explanation of each kind of failure. */
#include "cluster-test.h"
#include "place-test.h"

typedef pt_env env;
#define env_on pt_env_on
#define env_free pt_env_free

/* The jobs the requests carry (a request points to its job). */
static const gpusched_job job7 = {.size = sizeof(gpusched_job), .id = 7};
static const gpusched_job job9 = {.size = sizeof(gpusched_job), .id = 9};

static gpusched_place_request req(uint32_t gpus, uint32_t split, uint32_t pod)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job = &job7;
    q.gpus = gpus;
    q.split = split;
    q.pod_gpus = pod;
    return q;
}

/* Places and returns the node names joined by spaces. */
static const char *place_names(env *e, const gpusched_place_request *q)
{
    static char out[256];
    int rc = gpusched_placer_place(e->p, q, e->res);
    cr_assert_eq(rc, 0, "%s / %s", gpusched_err_name(rc), gpusched_place_result_message(e->res));
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    gpusched_place_result_nodes(e->res, &nodes, &masks, &n);
    char why[256];
    /* The checker reads the state the placement was made on. */
    if (!(q->flags & GPUSCHED_PLACE_FLAG_COMMIT))
        cr_assert(place_ref_check(e->c, q, nodes, masks, n, why, sizeof why), "%s", why);
    out[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        char name[64];
        gpusched_topo_node_name(e->t, nodes[i], name, sizeof name);
        strcat(out, i ? " " : "");
        strcat(out, name);
    }
    return out;
}

static void expect_fail(env *e, const gpusched_place_request *q, uint32_t reason, const char *msg)
{
    uint64_t before = ct_fingerprint(e->c);
    cr_assert_eq(gpusched_placer_place(e->p, q, e->res), GPUSCHED_ENOSPC, "%s",
                 gpusched_place_result_message(e->res));
    cr_assert_eq(gpusched_place_result_reason(e->res), reason, "%s", gpusched_place_result_message(e->res));
    cr_assert_str_eq(gpusched_place_result_message(e->res), msg);
    cr_assert_str_eq(gpusched_placer_errmsg(e->p), "");
    cr_assert_eq(ct_fingerprint(e->c), before);
    uint32_t n;
    const uint32_t *loc;
    gpusched_place_result_locality(e->res, &loc, &n);
    cr_assert_eq(n, 0);
}

static void take(env *e, uint64_t id, const char *node, uint64_t mask)
{
    uint32_t n;
    cr_assert_eq(gpusched_topo_node_find(e->t, node, &n), 0);
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = id;
    cr_assert_eq(gpusched_cluster_allocate(e->c, &j, 1, &n, &mask), 0, "%s", gpusched_cluster_errmsg(e->c));
}

/* ct_mixed: z0/r0 {a:8 b:8 c:2}, z0/r1 {d:64}, z1/r0 {e:1 f:3},
 * z1/r1 {g:8 h:8 i:8}, z1/r2 {j:4}. */

Test(place_split, any_split_takes_the_tightest_single_node)
{
    env e = env_on(ct_mixed());
    gpusched_place_request q = req(3, GPUSCHED_SPLIT_ANY, 0);
    cr_assert_str_eq(place_names(&e, &q), "f");
    q.gpus = 8; /* the tightest zone and rack that hold it */
    cr_assert_str_eq(place_names(&e, &q), "g");
    q.gpus = 70; /* one zone, then as few racks and nodes as possible */
    cr_assert_str_eq(place_names(&e, &q), "a d");
    cr_assert_str_eq(gpusched_place_result_message(e.res), "70 GPUs on 2 nodes in 1 zone, 2 racks");
    env_free(&e);
}

Test(place_split, pods_share_nodes_and_never_straddle)
{
    env e = env_on(ct_mixed());
    gpusched_place_request q = req(24, GPUSCHED_SPLIT_PODS, 8);
    cr_assert_str_eq(place_names(&e, &q), "d");
    const uint32_t *pods;
    uint32_t np;
    gpusched_place_result_pods(e.res, &pods, &np);
    cr_assert_eq(np, 3);
    take(&e, 1, "d", 0xffffffffffffull); /* d keeps 16 */
    /* Three pods of 3 fit on d's last 16 GPUs. */
    q = req(9, GPUSCHED_SPLIT_PODS, 3);
    cr_assert_str_eq(place_names(&e, &q), "d");
    gpusched_place_result_pods(e.res, &pods, &np);
    cr_assert_eq(np, 3);
    cr_assert_eq(pods[0], pods[1]);
    q = req(5, GPUSCHED_SPLIT_PODS, 5);
    cr_assert_str_eq(place_names(&e, &q), "g");
    q = req(64, GPUSCHED_SPLIT_PODS, 64);
    expect_fail(&e, &q, GPUSCHED_REASON_SPLIT, "pods of 64 GPUs: the nodes can hold 0 of 1");
    env_free(&e);
}

Test(place_split, whole_nodes_of_one_size_fully_free)
{
    env e = env_on(ct_mixed());
    gpusched_place_request q = req(24, GPUSCHED_SPLIT_WHOLE_NODES, 8);
    cr_assert_str_eq(place_names(&e, &q), "g h i");
    take(&e, 1, "h", 1);
    cr_assert_str_eq(place_names(&e, &q), "a b g");
    q = req(64, GPUSCHED_SPLIT_WHOLE_NODES, 0); /* 0: the largest node size */
    cr_assert_str_eq(place_names(&e, &q), "d");
    q = req(40, GPUSCHED_SPLIT_WHOLE_NODES, 8);
    expect_fail(&e, &q, GPUSCHED_REASON_SPLIT, "whole nodes of 8 GPUs: the nodes can hold 4 of 5");
    env_free(&e);
}

Test(place_levels, required_level_and_its_explanation)
{
    env e = env_on(ct_mixed());
    gpusched_place_request q = req(20, GPUSCHED_SPLIT_ANY, 0);
    q.required_level = 1;
    cr_assert_str_eq(place_names(&e, &q), "d");
    take(&e, 1, "d", ~0ull << 4);
    cr_assert_str_eq(place_names(&e, &q), "g h i");
    q.gpus = 25;
    expect_fail(&e, &q, GPUSCHED_REASON_REQUIRED, "required rack: the best rack has 24 free GPUs, 25 asked");
    q.required_level = 0; /* z1: its full rack, then the tightest node */
    cr_assert_str_eq(place_names(&e, &q), "e g h i");
    q = req(20, GPUSCHED_SPLIT_PODS, 4);
    q.required_level = 1;
    /* z1/r1 has 22 free GPUs, more than the gang's 20, but g and h hold
     * one pod of 4 each: the exact content is what refutes it. */
    take(&e, 2, "g", 0x1);
    take(&e, 3, "h", 0x1);
    expect_fail(&e, &q, GPUSCHED_REASON_REQUIRED, "required rack: the best rack holds 4 of 5 pods of 4 GPUs");
    take(&e, 4, "i", 0x7);
    expect_fail(&e, &q, GPUSCHED_REASON_REQUIRED, "required rack: the best rack has 19 free GPUs, 20 asked");
    env_free(&e);
}

Test(place_levels, preferred_level_stops_the_optimization)
{
    env e = env_on(ct_mixed());
    /* Down to nodes: the fewest nodes of z0. */
    gpusched_place_request q = req(70, GPUSCHED_SPLIT_ANY, 0);
    cr_assert_str_eq(place_names(&e, &q), "a d");
    /* Down to zones only: still one zone; below it just a valid fill. */
    q.preferred_level = 0;
    place_names(&e, &q);
    const uint32_t *loc;
    uint32_t n;
    gpusched_place_result_locality(e.res, &loc, &n);
    cr_assert_eq(loc[0], 1);
    env_free(&e);
}

Test(place_slices, slices_stay_inside_their_domains)
{
    /* 2 zones x 2 racks x 3 nodes x 4 GPUs. */
    const uint32_t fan[] = {2, 2, 3};
    env e = env_on(pt_uniform(2, fan, 4));
    gpusched_place_request q = req(24, GPUSCHED_SPLIT_ANY, 0);
    q.slice_gpus[0] = 12;
    q.slice_level[0] = 1;
    /* Take one GPU in each rack of zone 0 and one rack of zone 1: no rack
     * there holds a slice of 12, one rack of zone 1 does. */
    take(&e, 1, "n0", 1);
    take(&e, 2, "n3", 1);
    cr_assert_str_eq(place_names(&e, &q), "n6 n7 n8 n9 n10 n11");
    take(&e, 3, "n6", 1);
    expect_fail(&e, &q, GPUSCHED_REASON_SLICES,
                "slices of 12 GPUs at block: 1 blocks can hold a slice (1 slices in all), 2 needed");
    /* Slices of 8: each block holds one (11, 11, 11 and 12 GPUs free),
     * until avoided nodes leave the last block 4 (counted from the
     * aggregates less the avoided nodes). */
    q.gpus = 32;
    q.slice_gpus[0] = 8;
    cr_assert_str_eq(place_names(&e, &q), "n1 n2 n4 n5 n7 n8 n9 n10");
    const uint32_t avoid[] = {9, 10};
    q.avoid_nodes = avoid;
    q.avoid_count = 2;
    expect_fail(&e, &q, GPUSCHED_REASON_SLICES,
                "slices of 8 GPUs at block: 3 blocks can hold a slice (3 slices in all), 4 needed");
    env_free(&e);
}

Test(place_slices, nested_slices)
{
    const uint32_t fan[] = {2, 2, 3};
    env e = env_on(pt_uniform(2, fan, 4));
    gpusched_place_request q = req(24, GPUSCHED_SPLIT_ANY, 0);
    q.slice_gpus[0] = 12; /* per zone */
    q.slice_level[0] = 0;
    q.slice_gpus[1] = 6;  /* per block (the lower level) */
    q.slice_level[1] = 1;
    take(&e, 1, "n0", 0x7);
    place_names(&e, &q);
    const uint32_t *loc;
    uint32_t n;
    gpusched_place_result_locality(e.res, &loc, &n);
    cr_assert_eq(loc[0], 1);
    cr_assert_eq(loc[1], 2);
    env_free(&e);
}

/* Nodes with classes and labels: r0 {p:h100 ib, q:h100, r:a100 ib},
 * r1 {s:a100 ssd, t:h100 ib ssd}. */
static gpusched_topo *labelled(void)
{
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *lv[] = {"rack"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 1, lv), 0);
    static const struct {
        const char *rack, *name, *cls, *l1, *l2;
    } nodes[] = {
        {"r0", "p", "h100", "ib", NULL}, {"r0", "q", "h100", NULL, NULL}, {"r0", "r", "a100", "ib", NULL},
        {"r1", "s", "a100", "ssd", NULL}, {"r1", "t", "h100", "ib", "ssd"},
    };
    for (size_t i = 0; i < 5; i++) {
        const char *path[] = {nodes[i].rack};
        const char *lab[] = {nodes[i].l1, nodes[i].l2};
        uint32_t nl = nodes[i].l2 ? 2 : nodes[i].l1 ? 1 : 0;
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, nodes[i].name, 4, nodes[i].cls, lab, nl), 0);
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
    gpusched_topo_builder_free(b);
    return t;
}

Test(place_filters, class_labels_and_avoided_nodes)
{
    env e = env_on(labelled());
    uint32_t h100, a100, ib, ssd;
    cr_assert_eq(gpusched_topo_class_find(e.t, "h100", &h100), 0);
    cr_assert_eq(gpusched_topo_class_find(e.t, "a100", &a100), 0);
    cr_assert_eq(gpusched_topo_label_find(e.t, "ib", &ib), 0);
    cr_assert_eq(gpusched_topo_label_find(e.t, "ssd", &ssd), 0);
    gpusched_place_request q = req(8, GPUSCHED_SPLIT_ANY, 0);
    q.gpu_class = a100;
    cr_assert_str_eq(place_names(&e, &q), "r s");
    q.gpu_class = h100;
    q.labels_required = 1ull << ib;
    cr_assert_str_eq(place_names(&e, &q), "p t");
    q.labels_forbidden = 1ull << ssd;
    expect_fail(&e, &q, GPUSCHED_REASON_ELIGIBLE,
                "gpu class, labels and avoided nodes leave 4 eligible free GPUs, 8 asked");
    q = req(8, GPUSCHED_SPLIT_ANY, 0);
    uint32_t avoid[2];
    gpusched_topo_node_find(e.t, "p", &avoid[0]);
    gpusched_topo_node_find(e.t, "q", &avoid[1]);
    q.avoid_nodes = avoid;
    q.avoid_count = 2;
    q.required_level = 0;
    cr_assert_str_eq(place_names(&e, &q), "s t");
    /* The next request does not inherit the avoided nodes. */
    q.avoid_count = 0;
    q.gpus = 12;
    cr_assert_str_eq(place_names(&e, &q), "p q r");
    env_free(&e);
}

Test(place_state, nodes_not_up_and_reservations)
{
    env e = env_on(labelled());
    uint32_t p, qn;
    gpusched_topo_node_find(e.t, "p", &p);
    gpusched_topo_node_find(e.t, "q", &qn);
    uint64_t hit[4];
    cr_assert_eq(gpusched_cluster_node_health_set(e.c, p, GPUSCHED_NODE_DOWN, hit, 4, NULL), 0);
    gpusched_place_request q = req(8, GPUSCHED_SPLIT_ANY, 0);
    q.required_level = 0;
    cr_assert_str_eq(place_names(&e, &q), "q r");
    /* Reserve all of q for job 9: job 7 cannot use it, job 9 can. */
    uint64_t all = 0xf;
    cr_assert_eq(gpusched_cluster_reserve(e.c, 9, 1, &qn, &all), 0);
    cr_assert_str_eq(place_names(&e, &q), "s t");
    q.gpus = 16;
    q.required_level = GPUSCHED_NONE;
    expect_fail(&e, &q, GPUSCHED_REASON_NO_GPUS, "16 GPUs asked, the cluster has 12 usable free GPUs");
    q.job = &job9;
    cr_assert_str_eq(place_names(&e, &q), "q r s t");
    /* Plan only: the reservation is intact afterwards. */
    cr_assert_eq(gpusched_cluster_resv_count(e.c), 1);
    cr_assert_eq(gpusched_cluster_check(e.c), 0, "%s", gpusched_cluster_errmsg(e.c));
    q.gpus = 4;
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_str_eq(place_names(&e, &q), "q");
    cr_assert_eq(gpusched_cluster_resv_count(e.c), 0, "the commit consumes the reservation");
    cr_assert_eq(gpusched_cluster_check(e.c), 0, "%s", gpusched_cluster_errmsg(e.c));
    env_free(&e);
}

Test(place_filters, a_wide_level_searched_past_its_tightest_domains)
{
    /* 100 racks of 2 nodes; only the very last node has the class asked
     * for, so the descent goes through every rack of a wide level. */
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const char *lv[] = {"rack"};
    cr_assert_eq(gpusched_topo_builder_levels_set(b, 1, lv), 0);
    for (uint32_t n = 0; n < 200; n++) {
        char rack[16], name[16];
        snprintf(rack, sizeof rack, "r%03u", n / 2);
        snprintf(name, sizeof name, "n%03u", n);
        const char *path[] = {rack};
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, 4, n == 199 ? "b200" : "h100", NULL, 0), 0);
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0);
    gpusched_topo_builder_free(b);
    env e = env_on(t);
    uint32_t cls;
    cr_assert_eq(gpusched_topo_class_find(t, "b200", &cls), 0);
    /* Racks differ in free GPUs, so that the order matters. */
    for (uint32_t n = 0; n < 198; n += 3) {
        char name[16];
        snprintf(name, sizeof name, "n%03u", n);
        take(&e, 100 + n, name, 1);
    }
    gpusched_place_request q = req(4, GPUSCHED_SPLIT_ANY, 0);
    q.gpu_class = cls;
    cr_assert_str_eq(place_names(&e, &q), "n199");
    q.gpus = 5;
    expect_fail(&e, &q, GPUSCHED_REASON_ELIGIBLE, "gpu class, labels and avoided nodes leave 4 eligible free GPUs, 5 asked");
    env_free(&e);
}

/* A random topology (1 to 3 levels, up to 12 nodes of one size or of
 * several) whose nodes all carry label "all": a filter every node passes. */
static gpusched_topo *all_labelled(pt_rng *r)
{
    static const char *lv[] = {"zone", "block", "rack"};
    gpusched_topo_builder *b;
    cr_assert_eq(gpusched_topo_builder_new(NULL, &b), 0);
    const uint32_t L = 1 + pt_below(r, 3), nnodes = 1 + pt_below(r, 12), g0 = 1 + pt_below(r, 8);
    const bool uniform = pt_below(r, 2);
    cr_assert_eq(gpusched_topo_builder_levels_set(b, L, lv + (3 - L)), 0);
    uint32_t idx[3] = {0, 0, 0};
    for (uint32_t n = 0; n < nnodes; n++) {
        if (n && pt_below(r, 3) == 0) {
            uint32_t l = pt_below(r, L);
            idx[l]++;
            for (uint32_t k = l + 1; k < L; k++)
                idx[k] = 0;
        }
        char comp[3][16], name[16];
        const char *path[3], *lab[] = {"all"};
        for (uint32_t l = 0; l < L; l++) {
            snprintf(comp[l], sizeof comp[l], "%c%u", lv[3 - L + l][0], idx[l]);
            path[l] = comp[l];
        }
        snprintf(name, sizeof name, "n%u", n);
        cr_assert_eq(gpusched_topo_builder_add_node(b, path, name, uniform ? g0 : 1 + pt_below(r, 8), "h100", lab, 1),
                     0, "%s", gpusched_topo_builder_errmsg(b));
    }
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_builder_freeze(b, &t), 0, "%s", gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    return t;
}

/* Request a (avoided nodes its only filter) against b (the same plus a
 * label every node carries): the same outcome, nodes, reason and text. */
static void same_as_a_visit(env *e, const gpusched_place_request *a, int iter, uint32_t *failures,
                            uint32_t *avoided_eligible)
{
    uint32_t all;
    cr_assert_eq(gpusched_topo_label_find(e->t, "all", &all), 0);
    gpusched_place_request b = *a;
    b.labels_required = 1ull << all;
    int ra = gpusched_placer_place(e->p, a, e->res);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gpusched_place_result_message(e->res));
    uint32_t reason = gpusched_place_result_reason(e->res), na, nb;
    const uint32_t *nodes_a, *nodes_b;
    const uint64_t *masks;
    gpusched_place_result_nodes(e->res, &nodes_a, &masks, &na);
    uint32_t copy[64];
    cr_assert_leq(na, 64);
    if (na) /* nodes_a may be NULL then: memcpy from NULL is undefined */
        memcpy(copy, nodes_a, na * sizeof *copy);
    int rb = gpusched_placer_place(e->p, &b, e->res);
    cr_assert_eq(ra, rb, "iteration %d: %s / %s", iter, msg, gpusched_place_result_message(e->res));
    if (ra == GPUSCHED_ENOSPC) {
        ++*failures;
        *avoided_eligible += reason == GPUSCHED_REASON_ELIGIBLE || reason == GPUSCHED_REASON_SPLIT;
        cr_assert_eq(reason, gpusched_place_result_reason(e->res), "iteration %d", iter);
        cr_assert_str_eq(msg, gpusched_place_result_message(e->res), "iteration %d", iter);
    } else if (ra == 0) {
        gpusched_place_result_nodes(e->res, &nodes_b, &masks, &nb);
        cr_assert_eq(na, nb);
        cr_assert_arr_eq(copy, nodes_b, na * sizeof *copy);
    }
}

/* Changes what an avoided node offers: back up if it is not, else a job
 * on its free GPUs, or one of its jobs gone. */
static void touch_avoided(env *e, pt_rng *r, uint32_t v, uint64_t id)
{
    uint64_t free_mask, ids[64];
    uint32_t health, n;
    cr_assert_eq(gpusched_cluster_node_state(e->c, v, &free_mask, NULL, NULL, &health), 0);
    if (health != GPUSCHED_NODE_UP) {
        uint64_t hit[64];
        uint32_t nhit;
        cr_assert_eq(gpusched_cluster_node_health_set(e->c, v, GPUSCHED_NODE_UP, hit, 64, &nhit), 0);
    } else if (free_mask && pt_below(r, 2)) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = id;
        uint64_t mask = free_mask & (pt_next(r) | (free_mask & -free_mask));
        cr_assert_eq(gpusched_cluster_allocate(e->c, &j, 1, &v, &mask), 0, "%s", gpusched_cluster_errmsg(e->c));
    } else if (gpusched_cluster_node_jobs(e->c, v, ids, 64, &n) == 0 && n) {
        cr_assert_eq(gpusched_cluster_release(e->c, ids[pt_below(r, n)]), 0);
    }
}

/* A request whose only filter is avoided nodes is explained from the
 * aggregates less the avoided nodes (explain.c); the same request with a
 * label every node carries is explained by visiting every node. The two
 * must agree in outcome, nodes, reason and text, duplicates in the
 * avoided list included, and again after jobs start or end on avoided
 * nodes while the list stays the same (the placer then recounts only the
 * avoided nodes whose units changed, capacity.c). */
Test(place_filters, avoided_nodes_explained_as_a_visit_of_every_node)
{
    pt_rng r = {0x5eed5};
    uint32_t failures = 0, avoided_eligible = 0;
    for (int iter = 0; iter < 600; iter++) {
        env e = env_on(all_labelled(&r));
        pt_random_state(&r, e.c, 77);
        uint32_t avoid[6], spare[2];
        gpusched_place_request a;
        gpusched_job job;
        pt_random_request(&r, e.t, &a, &job, 77, spare);
        a.gpu_class = GPUSCHED_NONE;
        a.labels_required = a.labels_forbidden = 0;
        a.avoid_count = 1 + pt_below(&r, 6);
        for (uint32_t i = 0; i < a.avoid_count; i++)
            avoid[i] = pt_below(&r, gpusched_topo_node_count(e.t));
        a.avoid_nodes = avoid;
        for (uint32_t round = 0; round < 4; round++) {
            same_as_a_visit(&e, &a, iter, &failures, &avoided_eligible);
            touch_avoided(&e, &r, avoid[pt_below(&r, a.avoid_count)], 5000 + round);
        }
        env_free(&e);
    }
    /* Both outcomes, and the counts explain.c takes from the aggregates. */
    cr_assert_gt(failures, 400);
    cr_assert_gt(avoided_eligible, 80);
}
