/* The shortcuts that keep placement cost with its answer (doc/placement.md,
 * "Counted levels", step 2's subsets, "Failure") give the answers the full
 * search gives: the same locality, the documented tie-breaks, the same
 * explanations. Shapes of the issue, scaled down: 16 top domains of 8
 * lowest domains of 18 nodes of 4 GPUs (levels "zone" and "block"). */
#include "place-test.h"

typedef pt_env env;

static env sixteen(void)
{
    const uint32_t fan[] = {16, 8, 18};
    return pt_env_on(pt_uniform(2, fan, 4));
}

static gpusched_place_request nodes_req(uint32_t nodes, uint32_t split, uint32_t pref)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.gpus = 4 * nodes;
    q.split = split;
    q.pod_gpus = split == GPUSCHED_SPLIT_PODS ? 2 : 0;
    q.preferred_level = pref;
    return q;
}

/* "zones 0,1,2,3 blocks 32 nodes 576 first 0" */
static const char *where(env *e, const gpusched_place_request *q)
{
    static char out[256];
    int rc = gpusched_placer_place(e->p, q, e->res);
    cr_assert_eq(rc, 0, "%s", gpusched_place_result_message(e->res));
    const uint32_t *nodes, *zones, *blocks;
    const uint64_t *masks;
    uint32_t n, nz, nb;
    gpusched_place_result_nodes(e->res, &nodes, &masks, &n);
    gpusched_place_result_domains(e->res, 0, &zones, &nz);
    gpusched_place_result_domains(e->res, 1, &blocks, &nb);
    char why[256];
    cr_assert(place_ref_check(e->c, q, nodes, masks, n, why, sizeof why), "%s", why);
    int o = snprintf(out, sizeof out, "zones");
    for (uint32_t i = 0; i < nz; i++)
        o += snprintf(out + o, sizeof out - (size_t)o, "%s%u", i ? "," : " ", zones[i]);
    snprintf(out + o, sizeof out - (size_t)o, " blocks %u nodes %u first %u", nb, n, n ? nodes[0] : 0);
    return out;
}

static void take_node(env *e, uint32_t node)
{
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = e->next_job++;
    uint64_t mask = 0xf;
    cr_assert_eq(gpusched_cluster_allocate(e->c, &j, 1, &node, &mask), 0);
}

Test(place_cliffs, four_whole_zones_of_sixteen_any_counted_level)
{
    env e = sixteen();
    /* 4 zones of 144 nodes: the first subset meets both bounds. */
    for (uint32_t pref = 0; pref <= 2; pref++) {
        gpusched_place_request q = nodes_req(576, GPUSCHED_SPLIT_WHOLE_NODES, pref == 2 ? GPUSCHED_NONE : pref);
        cr_assert_str_eq(where(&e, &q), "zones 0,1,2,3 blocks 32 nodes 576 first 0", "preferred %u", pref);
    }
    /* A node taken in zone 0: 576 nodes need 4 whole free zones ... */
    take_node(&e, 0);
    gpusched_place_request q = nodes_req(576, GPUSCHED_SPLIT_WHOLE_NODES, 1);
    cr_assert_str_eq(where(&e, &q), "zones 1,2,3,4 blocks 32 nodes 576 first 144");
    /* ... and 575 take zone 0's 143 nodes: the least capacity, 575 exactly. */
    q = nodes_req(575, GPUSCHED_SPLIT_WHOLE_NODES, 1);
    cr_assert_str_eq(where(&e, &q), "zones 0,1,2,3 blocks 32 nodes 575 first 1");
    q.preferred_level = GPUSCHED_NONE; /* whole nodes: counting nodes orders nothing */
    cr_assert_str_eq(where(&e, &q), "zones 0,1,2,3 blocks 32 nodes 575 first 1");
    pt_env_free(&e);
}

Test(place_cliffs, locality_down_to_nodes_on_an_empty_cluster_is_the_bound)
{
    env e = sixteen();
    /* Two zones and a node: the ceiling at every level, any split and pods. */
    gpusched_place_request q = nodes_req(289, GPUSCHED_SPLIT_ANY, GPUSCHED_NONE);
    cr_assert_str_eq(where(&e, &q), "zones 0,1,2 blocks 17 nodes 289 first 0");
    const uint32_t *loc;
    uint32_t n;
    gpusched_place_result_locality(e.res, &loc, &n);
    cr_assert_eq(n, 3);
    cr_assert(loc[0] == 3 && loc[1] == 17 && loc[2] == 289);
    q = nodes_req(289, GPUSCHED_SPLIT_PODS, GPUSCHED_NONE);
    cr_assert_str_eq(where(&e, &q), "zones 0,1,2 blocks 17 nodes 289 first 0");
    /* Half-used nodes everywhere but one zone: the fewest nodes are that
     * zone's full ones, found by the first try counted down to blocks. */
    for (uint32_t node = 0; node < 16 * 144; node++)
        if (node / 144 != 5) {
            gpusched_job j = GPUSCHED_JOB_INIT;
            j.id = e.next_job++;
            uint64_t mask = 0x3;
            cr_assert_eq(gpusched_cluster_allocate(e.c, &j, 1, &node, &mask), 0);
        }
    q = nodes_req(144, GPUSCHED_SPLIT_ANY, GPUSCHED_NONE);
    cr_assert_str_eq(where(&e, &q), "zones 5 blocks 8 nodes 144 first 720");
    /* One more GPU: zone 5 and then the fewest nodes elsewhere. */
    q.gpus += 2;
    cr_assert_str_eq(where(&e, &q), "zones 0,5 blocks 9 nodes 145 first 0");
    pt_env_free(&e);
}

Test(place_cliffs, a_required_level_too_small_is_named_first)
{
    env e = sixteen();
    /* 19 nodes never fit a block of 18: said from the topology's figure,
     * without reading a block. */
    gpusched_place_request q = nodes_req(19, GPUSCHED_SPLIT_WHOLE_NODES, GPUSCHED_NONE);
    q.required_level = 1;
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), GPUSCHED_ENOSPC);
    cr_assert_eq(gpusched_place_result_reason(e.res), GPUSCHED_REASON_REQUIRED);
    cr_assert_str_eq(gpusched_place_result_message(e.res),
                     "required block: the largest block has 72 GPUs, 76 asked");
    /* Every block partly used: the scan finds the best one. */
    for (uint32_t b = 0; b < 128; b++)
        for (uint32_t k = 0; k < (b == 77 ? 2u : 3u); k++)
            take_node(&e, b * 18 + k);
    q.gpus = 4 * 17;
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), GPUSCHED_ENOSPC);
    cr_assert_str_eq(gpusched_place_result_message(e.res),
                     "required block: the best block has 64 free GPUs, 68 asked");
    q = nodes_req(17, GPUSCHED_SPLIT_PODS, GPUSCHED_NONE);
    q.required_level = 1;
    cr_assert_eq(gpusched_placer_place(e.p, &q, e.res), GPUSCHED_ENOSPC);
    cr_assert_str_eq(gpusched_place_result_message(e.res),
                     "required block: the best block has 64 free GPUs, 68 asked");
    pt_env_free(&e);
}
