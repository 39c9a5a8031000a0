/* Golden cases written by hand for GB200 NVL72 shapes: 2 zones x 2 blocks
 * x 4 racks x 18 nodes x 4 GPUs (one NVL72 rack = 72 GPUs). Slices of 72
 * and of 18, racks partly used, a zone full, nested slices, failures. */
#include "place-test.h"

typedef pt_env env;
#define env_free pt_env_free

static env nvl72(void)
{
    const uint32_t fan[] = {2, 2, 4, 18};
    return pt_env_on(pt_uniform(3, fan, 4));
}

/* The job the requests carry (a request points to its job). */
static const gpusched_job job7 = {.size = sizeof(gpusched_job), .id = 7};

static gpusched_place_request slices72(uint32_t n)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job = &job7;
    q.gpus = 72 * n;
    q.split = GPUSCHED_SPLIT_WHOLE_NODES;
    q.slice_gpus[0] = 72;
    q.slice_level[0] = 2;
    return q;
}

/* "zone:0 block:1 rack:4,5,6 nodes:54" */
static const char *where(env *e, const gpusched_place_request *q)
{
    static char out[512];
    int rc = gpusched_placer_place(e->p, q, e->res);
    cr_assert_eq(rc, 0, "%s", gpusched_place_result_message(e->res));
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    gpusched_place_result_nodes(e->res, &nodes, &masks, &n);
    char why[256];
    if (!(q->flags & GPUSCHED_PLACE_FLAG_COMMIT))
        cr_assert(place_ref_check(e->c, q, nodes, masks, n, why, sizeof why), "%s", why);
    static const char *lv[] = {"zone", "block", "rack"};
    int o = 0;
    for (uint32_t l = 0; l < 3; l++) {
        const uint32_t *d;
        uint32_t nd;
        gpusched_place_result_domains(e->res, l, &d, &nd);
        o += snprintf(out + o, sizeof out - (size_t)o, "%s%s:", l ? " " : "", lv[l]);
        for (uint32_t i = 0; i < nd; i++)
            o += snprintf(out + o, sizeof out - (size_t)o, "%s%u", i ? "," : "", d[i]);
    }
    snprintf(out + o, sizeof out - (size_t)o, " nodes:%u", n);
    return out;
}

/* Takes `mask` on node `node` for a job of its own. */
static void take(env *e, uint32_t node, uint64_t mask)
{
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = e->next_job++;
    cr_assert_eq(gpusched_cluster_allocate(e->c, &j, 1, &node, &mask), 0);
}

static void fail_with(env *e, const gpusched_place_request *q, uint32_t reason, const char *msg)
{
    cr_assert_eq(gpusched_placer_place(e->p, q, e->res), GPUSCHED_ENOSPC, "%s", gpusched_place_result_message(e->res));
    cr_assert_eq(gpusched_place_result_reason(e->res), reason);
    cr_assert_str_eq(gpusched_place_result_message(e->res), msg);
}

Test(golden_nvl72, slices_of_72_on_an_empty_cluster)
{
    env e = nvl72();
    gpusched_place_request q = slices72(3);
    cr_assert_str_eq(where(&e, &q), "zone:0 block:0 rack:0,1,2 nodes:54");
    q = slices72(6); /* more than a block: two blocks of one zone */
    cr_assert_str_eq(where(&e, &q), "zone:0 block:0,1 rack:0,1,2,3,4,5 nodes:108");
    q = slices72(1);
    q.gpus = 72;
    cr_assert_str_eq(where(&e, &q), "zone:0 block:0 rack:0 nodes:18");
    env_free(&e);
}

Test(golden_nvl72, racks_partly_used_are_skipped_and_the_tightest_block_wins)
{
    env e = nvl72();
    take(&e, 0, 1);  /* rack 0 */
    take(&e, 18, 1); /* rack 1 */
    gpusched_place_request q = slices72(3);
    /* Zone 0 holds 6 slices, zone 1 holds 8: zone 0; its block 0 holds only 2. */
    cr_assert_str_eq(where(&e, &q), "zone:0 block:1 rack:4,5,6 nodes:54");
    q = slices72(2); /* fits block 0's two whole racks: the tightest */
    cr_assert_str_eq(where(&e, &q), "zone:0 block:0 rack:2,3 nodes:36");
    env_free(&e);
}

Test(golden_nvl72, slices_of_18_gpus_share_racks)
{
    env e = nvl72();
    take(&e, 0, 1);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.job = &job7;
    q.gpus = 90;
    q.slice_gpus[0] = 18;
    q.slice_level[0] = 2;
    /* 5 slices of 18: a rack holds at most 4, so two racks; the fewest
     * nodes is 23 (18 whole ones, then 18 GPUs on 5 nodes). */
    cr_assert_str_eq(where(&e, &q), "zone:0 block:0 rack:0,1 nodes:23");
    q.gpus = 54; /* 3 slices: rack 0 (71 free, 3 slices) is the tightest rack */
    cr_assert_str_eq(where(&e, &q), "zone:0 block:0 rack:0 nodes:14");
    env_free(&e);
}

Test(golden_nvl72, a_full_zone_sends_the_gang_to_the_other)
{
    env e = nvl72();
    for (uint32_t n = 0; n < 144; n++)
        take(&e, n, 0xf);
    gpusched_place_request q = slices72(2);
    cr_assert_str_eq(where(&e, &q), "zone:1 block:2 rack:8,9 nodes:36");
    /* Four racks of zone 1 partly used: 4 slices left, 5 asked. */
    for (uint32_t r = 8; r < 12; r++)
        take(&e, r * 18, 1);
    q = slices72(5);
    fail_with(&e, &q, GPUSCHED_REASON_SLICES, "slices of 72 GPUs at rack: 4 racks can hold a slice (4 slices in all), 5 needed");
    q = slices72(4);
    q.required_level = 1;
    cr_assert_str_eq(where(&e, &q), "zone:1 block:3 rack:12,13,14,15 nodes:72");
    take(&e, 12 * 18, 1);
    for (uint64_t id = 1000; id < 1018; id++) /* rack 0 free again */
        cr_assert_eq(gpusched_cluster_release(e.c, id), 0);
    fail_with(&e, &q, GPUSCHED_REASON_REQUIRED, "required block: the best block has 287 free GPUs, 288 asked");
    env_free(&e);
}

Test(golden_nvl72, nested_slices_of_144_per_block_and_72_per_rack)
{
    env e = nvl72();
    take(&e, 0, 1);
    take(&e, 18, 1);
    take(&e, 36, 1);
    gpusched_place_request q = slices72(4);
    q.slice_gpus[1] = 144;
    q.slice_level[1] = 1;
    /* Block 0 holds one whole rack: no pair; block 1 holds two pairs. */
    cr_assert_str_eq(where(&e, &q), "zone:0 block:1 rack:4,5,6,7 nodes:72");
    q = slices72(6);
    q.slice_gpus[1] = 144;
    q.slice_level[1] = 1;
    cr_assert_str_eq(where(&e, &q), "zone:1 block:2,3 rack:8,9,10,11,12,13 nodes:108");
    env_free(&e);
}

Test(golden_nvl72, preferred_block_commits_and_stays_consistent)
{
    env e = nvl72();
    gpusched_place_request q = slices72(12);
    q.preferred_level = 1;
    q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_str_eq(where(&e, &q), "zone:0,1 block:0,1,2 rack:0,1,2,3,4,5,6,7,8,9,10,11 nodes:216");
    cr_assert_eq(gpusched_place_result_committed(e.res), 1);
    cr_assert_eq(gpusched_cluster_check(e.c), 0, "%s", gpusched_cluster_errmsg(e.c));
    uint64_t free_gpus;
    gpusched_cluster_domain_free_gpus(e.c, GPUSCHED_NONE, 0, &free_gpus);
    cr_assert_eq(free_gpus, 1152 - 864);
    env_free(&e);
}
