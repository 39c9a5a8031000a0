/* The whole-domain count (lib/place/wholedoms.c) and the choice of K
 * wholly free domains (gs_pl_whole_choose, what the scheduler reserves
 * for a gang of whole racks at a time to come). On random states of
 * three-level clusters, for gangs of K whole racks, at times around an
 * avoided node: the chosen racks are wholly free, not avoided, distinct
 * and ascending, and they use as few zones as the placement engine's own
 * answer (locality optimal, property-tested against exhaustive search),
 * and as few blocks when that is one zone; there is a choice exactly when
 * there is a placement. */
#include "cluster/cluster-internal.h"
#include "place-test.h"
#include "place/place-internal.h"

/* Zones and blocks the racks of a list use. */
static void used(gpusched_topo *t, const uint32_t *racks, uint32_t n, uint32_t *zones, uint32_t *blocks)
{
    uint32_t z[64], b[64], nz = 0, nb = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t first, count, zone, block;
        cr_assert_eq(gpusched_topo_domain_nodes(t, 2, racks[i], &first, &count), 0);
        cr_assert_eq(gpusched_topo_node_domain(t, first, 0, &zone), 0);
        cr_assert_eq(gpusched_topo_node_domain(t, first, 1, &block), 0);
        bool zs = false, bs = false;
        for (uint32_t k = 0; k < nz; k++)
            zs |= z[k] == zone;
        for (uint32_t k = 0; k < nb; k++)
            bs |= b[k] == block;
        if (!zs)
            z[nz++] = zone;
        if (!bs)
            b[nb++] = block;
    }
    *zones = nz;
    *blocks = nb;
}

static void one_case(pt_rng *r, uint32_t *chosen, uint32_t *none)
{
    const uint32_t fan[] = {1 + pt_below(r, 3), 1 + pt_below(r, 3), 1 + pt_below(r, 4), 2};
    pt_env e = pt_env_on(pt_uniform(3, fan, 4));
    const uint32_t nn = gpusched_topo_node_count(e.t), nracks = gpusched_topo_domain_count(e.t, 2);
    /* Jobs of one GPU on random nodes: a rack with one is not whole. */
    for (uint32_t i = 0, jobs = pt_below(r, nracks + 1); i < jobs; i++) {
        gpusched_job job = GPUSCHED_JOB_INIT;
        job.id = 1 + i;
        uint32_t node = pt_below(r, nn);
        uint64_t mask = 1;
        (void)gpusched_cluster_allocate(e.c, &job, 1, &node, &mask); /* a node twice: refused, fine */
    }
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job qjob = GPUSCHED_JOB_INIT;
    qjob.id = 999;
    q.job = &qjob;
    q.split = pt_below(r, 2) ? GPUSCHED_SPLIT_WHOLE_NODES : GPUSCHED_SPLIT_ANY;
    q.slice_level[0] = 2;
    q.slice_gpus[0] = 8;
    q.gpus = 8 * (1 + pt_below(r, nracks < 5 ? nracks : 5));
    uint32_t avoid = pt_below(r, nn);
    if (pt_below(r, 3) == 0) {
        q.avoid_nodes = &avoid;
        q.avoid_count = 1;
    }
    gs_pl_req req;
    cr_assert_eq(gs_pl_req_load(e.p, &q, &req), 0);
    gs_alloc a;
    cr_assert_eq(gs_alloc_init(&a, NULL), 0);
    uint32_t *scratch = NULL, cap = 0, *cnt = NULL, cnt_cap = 0, out[64];
    gs_pl_whole w;
    const uint32_t k = q.gpus / 8;
    /* One rack is a required level, which the count does not take. */
    cr_assert_eq(gs_pl_whole_begin(e.c, &req, &a, &scratch, &cap, &w), k > 1, "%u racks", k);
    if (k == 1)
        goto out;
    const int rc = gs_pl_whole_choose(&w, &a, &cnt, &cnt_cap, out);
    const int placed = gpusched_placer_place(e.p, &q, e.res);
    cr_assert_eq(rc == 0, placed == 0, "choice %d, placement %d", rc, placed);
    if (rc) {
        cr_assert_eq(rc, GPUSCHED_ENOSPC);
        ++*none;
        goto out;
    }
    ++*chosen;
    for (uint32_t i = 0; i < k; i++) {
        cr_assert(i == 0 || out[i] > out[i - 1], "ascending and distinct");
        uint32_t first, count;
        cr_assert_eq(gpusched_topo_domain_nodes(e.t, 2, out[i], &first, &count), 0);
        for (uint32_t v = first; v < first + count; v++) {
            cr_assert_eq(e.c->node_free[v], 0xfull, "rack %u node %u is not wholly free", out[i], v);
            cr_assert(!q.avoid_count || v != avoid, "rack %u holds the avoided node", out[i]);
        }
    }
    /* The placement engine's racks: the same zones and blocks in number. */
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n, racks[64], nr = 0;
    cr_assert_eq(gpusched_place_result_nodes(e.res, &nodes, &masks, &n), 0);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t rack;
        cr_assert_eq(gpusched_topo_node_domain(e.t, nodes[i], 2, &rack), 0);
        if (!nr || racks[nr - 1] != rack)
            racks[nr++] = rack;
    }
    cr_assert_eq(nr, k);
    uint32_t z0, b0, z1, b1;
    used(e.t, out, k, &z0, &b0);
    used(e.t, racks, nr, &z1, &b1);
    cr_assert_eq(z0, z1, "%u zones where the placement engine uses %u", z0, z1);
    /* Within one zone the blocks are the fewest too; across zones the
     * shares follow a rule, not an optimum (gs_pl_whole_choose). */
    if (z1 == 1)
        cr_assert_eq(b0, b1, "%u blocks where the placement engine uses %u", b0, b1);
out:
    gs_free(&a, scratch);
    gs_free(&a, cnt);
    pt_env_free(&e);
}

Test(place_wholedoms, the_choice_is_as_local_as_the_placement)
{
    pt_rng r = {0x3011d0c5ull};
    uint32_t chosen = 0, none = 0;
    for (uint32_t i = 0; i < 5000; i++)
        one_case(&r, &chosen, &none);
    cr_log_info("%u chosen, %u without enough wholly free racks", chosen, none);
    cr_assert_gt(chosen, 2000);
    cr_assert_gt(none, 300);
}

/* A gang whose slices each need a whole domain fails without a search
 * when fewer domains are wholly free than it has slices (placer.c
 * whole_slices_short): on random tiny uniform clusters with random jobs,
 * nodes down at times, whole-node and pod gangs of whole racks or blocks
 * (at times in one required block), the placement succeeds exactly when
 * the exhaustive reference finds one, its answer is valid, and a failure
 * is explained. */
Test(place_wholedoms, a_gang_short_of_whole_domains_fails_as_the_reference_says)
{
    pt_rng r = {0x5107ull};
    uint32_t placed = 0, failed = 0;
    for (uint32_t i = 0; i < 3000; i++) {
        const uint32_t fan[] = {1 + pt_below(&r, 2), 1 + pt_below(&r, 3), 1 + pt_below(&r, 2)};
        pt_env e = pt_env_on(pt_uniform(2, fan, 2));
        const uint32_t nn = gpusched_topo_node_count(e.t);
        for (uint32_t k = 0, jobs = pt_below(&r, nn + 1); k < jobs; k++) {
            gpusched_job job = GPUSCHED_JOB_INIT;
            job.id = 1 + k;
            uint32_t node = pt_below(&r, nn);
            uint64_t mask = 1u << pt_below(&r, 2);
            (void)gpusched_cluster_allocate(e.c, &job, 1, &node, &mask); /* a GPU twice: refused, fine */
        }
        if (pt_below(&r, 6) == 0) {
            uint64_t hit[8];
            cr_assert_eq(gpusched_cluster_node_health_set(e.c, pt_below(&r, nn), GPUSCHED_NODE_DOWN, hit, 8, NULL), 0);
        }
        const uint32_t l = pt_below(&r, 2), ndom = gpusched_topo_domain_count(e.t, l);
        uint32_t first, count;
        cr_assert_eq(gpusched_topo_domain_nodes(e.t, l, 0, &first, &count), 0);
        gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
        gpusched_job qjob = GPUSCHED_JOB_INIT;
        qjob.id = 999;
        q.job = &qjob;
        q.split = pt_below(&r, 2) ? GPUSCHED_SPLIT_WHOLE_NODES : GPUSCHED_SPLIT_PODS;
        q.pod_gpus = q.split == GPUSCHED_SPLIT_PODS ? 2 : 0;
        q.slice_level[0] = l;
        q.slice_gpus[0] = 2 * count;
        q.gpus = 2 * count * (1 + pt_below(&r, ndom < 3 ? ndom : 3));
        if (l == 1 && pt_below(&r, 3) == 0)
            q.required_level = 0;
        place_ref_out ref;
        place_ref_solve(e.c, &q, &ref);
        const int rc = gpusched_placer_place(e.p, &q, e.res);
        cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(e.p));
        cr_assert_eq(rc == 0, ref.feasible, "case %u: placement %d, the reference %s", i, rc,
                     ref.feasible ? "finds one" : "finds none");
        if (rc == 0) {
            const uint32_t *nodes;
            const uint64_t *masks;
            uint32_t n;
            char why[256];
            cr_assert_eq(gpusched_place_result_nodes(e.res, &nodes, &masks, &n), 0);
            cr_assert(place_ref_check(e.c, &q, nodes, masks, n, why, sizeof why), "case %u: %s", i, why);
            placed++;
        } else {
            cr_assert_neq(gpusched_place_result_reason(e.res), GPUSCHED_REASON_OK);
            cr_assert_neq(gpusched_place_result_message(e.res)[0], '\0', "a failure is explained");
            failed++;
        }
        pt_env_free(&e);
    }
    cr_log_info("%u placed, %u failed", placed, failed);
    cr_assert_gt(placed, 500);
    cr_assert_gt(failed, 500);
}
