/* Reservations kept across cycles (lib/sched/kept.c, doc/sched.md, "Kept
 * reservations"): a reservation stays where it is while no change since
 * its search could make it earlier or take its nodes; a job that ends
 * early and was expected to end at or after its time where a pod or slice
 * of the gang could use its GPUs, a start on its nodes, or a change the
 * caller makes to the cluster, sends it to a new search. Every scheduler
 * test runs with GPUSCHED_SCHED_KEEP_CHECK=1 (tests/meson.build), which
 * checks each kept reservation's time against a new search. */
#include <stdlib.h>

#include "sched-test.h"

/* 1 block x `racks` racks x 4 nodes x 4 GPUs: rack r is nodes 4r to
 * 4r + 3. keep: GPUSCHED_SCHED_PARAM_KEEP_RESV; each kept reservation is
 * checked against a new search (GPUSCHED_SCHED_KEEP_CHECK=1). */
static st_env racks_of(uint32_t racks, int keep, uint32_t *q)
{
    const uint32_t fan[] = {1, racks, 4};
    setenv("GPUSCHED_SCHED_KEEP_CHECK", "1", 1);
    st_env e = st_env_uniform(2, fan, 4);
    unsetenv("GPUSCHED_SCHED_KEEP_CHECK");
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_KEEP_RESV, keep), 0);
    *q = st_queue(&e, "team", 0, 16 * racks);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_QUOTAS, 0), 0); /* the cluster is the limit */
    return e;
}

static st_env two_racks(int keep, uint32_t *q)
{
    return racks_of(2, keep, q);
}

/* Gang `id` of `nodes` whole nodes inside one rack. */
static void submit_rack_gang(st_env *e, uint64_t id, uint32_t q, uint32_t nodes, int64_t submit, int64_t dur)
{
    gpusched_place_request r = GPUSCHED_PLACE_REQUEST_INIT;
    r.gpus = 4 * nodes;
    r.split = GPUSCHED_SPLIT_WHOLE_NODES;
    r.required_level = 1;
    cr_assert_eq(st_submit_req(e, id, q, &r, 0, submit, dur, 0), 0, "%s", gpusched_sched_errmsg(e->s));
}

/* Gang `id`, one whole rack as a slice of 16 GPUs (no required level:
 * the slice keeps it in one rack). */
static void submit_rack_slice(st_env *e, uint64_t id, uint32_t q, int64_t submit, int64_t dur)
{
    gpusched_place_request r = GPUSCHED_PLACE_REQUEST_INIT;
    r.gpus = 16;
    r.split = GPUSCHED_SPLIT_WHOLE_NODES;
    r.slice_gpus[0] = 16;
    r.slice_level[0] = 1;
    cr_assert_eq(st_submit_req(e, id, q, &r, 0, submit, dur, 0), 0, "%s", gpusched_sched_errmsg(e->s));
}

/* Job `id`'s reservation in the last decisions: its time and first node. */
static void resv_of(st_env *e, uint64_t id, int64_t *time, uint32_t *first)
{
    for (uint32_t i = 0; i < gpusched_sched_decisions_reservation_count(e->d); i++) {
        uint64_t got;
        const uint32_t *nodes;
        uint32_t n;
        cr_assert_eq(gpusched_sched_decisions_reservation(e->d, i, &got, time, NULL, NULL, &nodes, &n), 0);
        if (got == id) {
            cr_assert_gt(n, 0);
            *first = nodes[0];
            return;
        }
    }
    cr_assert_fail("job %llu has no reservation", (unsigned long long)id);
}

/* The rack of gang `id`'s reservation in the last decisions, whose time
 * must be `time`. */
static uint32_t resv_rack(st_env *e, uint64_t id, int64_t time)
{
    int64_t t;
    uint32_t first;
    resv_of(e, id, &t, &first);
    cr_assert_eq(t, time, "job %llu's reservation at %lld, not %lld", (unsigned long long)id, (long long)t,
                 (long long)time);
    return first / 4;
}

/* Rack 0 runs job 1 (4 nodes) and rack 1 job 2 (3 nodes, expected end
 * `b_end`), both from 0; at 1 gang 3 (2 nodes of one rack) waits for
 * rack 0 at 100, lowest index of two racks equally free then, and job 4
 * (2 GPUs, long) backfills on rack 1's free node. */
static st_env reserved_then_backfilled(int keep, int64_t b_end, uint32_t *queue)
{
    uint32_t q;
    st_env e = two_racks(keep, &q);
    *queue = q;
    submit_rack_gang(&e, 1, q, 4, 0, 100);
    submit_rack_gang(&e, 2, q, 3, 0, b_end);
    st_cycle(&e, 0);
    cr_assert(st_started(&e, 1) && st_started(&e, 2));
    submit_rack_gang(&e, 3, q, 2, 1, 50);
    st_submit(&e, 4, q, 2, 1, 1000);
    st_cycle(&e, 1);
    cr_assert(st_started(&e, 4), "job 4 backfills");
    cr_assert_eq(resv_rack(&e, 3, 100), 0, "rack 0, the lowest index, at first");
    return e;
}

Test(sched_kept, a_reservation_keeps_its_nodes_when_a_start_elsewhere_runs_past_it)
{
    /* Job 4 runs past 100 on rack 1: rack 1 has 3 whole nodes then, a
     * tighter fit than rack 0's 4. A new search moves the reservation
     * there; a kept one stays on rack 0, still free at 100. */
    for (int keep = 0; keep <= 1; keep++) {
        uint32_t q;
        st_env e = reserved_then_backfilled(keep, 100, &q);
        st_cycle(&e, 2);
        cr_assert_eq(resv_rack(&e, 3, 100), keep ? 0 : 1, "keep %d: rack 0 kept, else rack 1, the tighter fit", keep);
        st_env_free(&e);
    }
}

Test(sched_kept, an_early_end_of_a_job_expected_after_it_moves_it_earlier)
{
    /* Three racks: job 1 on rack 0 to 100, job 2 on rack 1 to 300, jobs 3
     * (3 nodes, to 200) and 4 (1 node, to 50) on rack 2. Gang 5, a whole
     * rack as one slice, is reserved rack 0 at 100. Job 3, expected to
     * end after that, ends at 5: rack 2 is then free at 50 (job 4 counted
     * gone by then), and the reservation moves there. */
    uint32_t q;
    st_env e = racks_of(3, 1, &q);
    submit_rack_gang(&e, 1, q, 4, 0, 100);
    submit_rack_gang(&e, 2, q, 4, 0, 300);
    submit_rack_gang(&e, 3, q, 3, 0, 200);
    submit_rack_gang(&e, 4, q, 1, 0, 50);
    st_cycle(&e, 0);
    cr_assert_eq(st_nstarts(&e), 4);
    submit_rack_slice(&e, 5, q, 1, 10);
    st_cycle(&e, 1);
    cr_assert_eq(resv_rack(&e, 5, 100), 0);
    cr_assert_eq(gpusched_sched_job_end(e.s, 3, 5), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 5);
    cr_assert_eq(resv_rack(&e, 5, 50), 2, "rack 2 at 50, not rack 0 at 100");
    st_env_free(&e);
}

Test(sched_kept, an_early_end_of_the_job_it_waits_for_moves_it_earlier)
{
    /* Rack 0 runs job 1 (3 nodes, to 100) and job 2 (1 node, to 60),
     * rack 1 job 3 (to 500): gang 4, a whole rack, waits for job 1, at
     * 100. Job 1 ends at 5, and rack 0 is free at 60. */
    uint32_t q;
    st_env e = two_racks(1, &q);
    submit_rack_gang(&e, 1, q, 3, 0, 100);
    submit_rack_gang(&e, 2, q, 1, 0, 60);
    submit_rack_gang(&e, 3, q, 4, 0, 500);
    st_cycle(&e, 0);
    cr_assert_eq(st_nstarts(&e), 3);
    submit_rack_gang(&e, 4, q, 4, 1, 10);
    st_cycle(&e, 1);
    cr_assert_eq(resv_rack(&e, 4, 100), 0);
    cr_assert_eq(gpusched_sched_job_end(e.s, 1, 5), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 5);
    cr_assert_eq(resv_rack(&e, 4, 60), 0);
    st_env_free(&e);
}

Test(sched_kept, a_start_on_its_nodes_past_it_moves_it)
{
    /* Rack 0 runs job 1 on 3 nodes to 100 (node 3 free), rack 1 job 2 to
     * 500: gang 3, a whole rack, is reserved rack 0 at 100. Gang 4, of a
     * higher priority, goes first in the next cycle and takes node 3 for
     * long: rack 0 is not free at 100 any more, rack 1 is at 500. */
    uint32_t q;
    st_env e = two_racks(1, &q);
    submit_rack_gang(&e, 1, q, 3, 0, 100);
    submit_rack_gang(&e, 2, q, 4, 0, 500);
    st_cycle(&e, 0);
    cr_assert_eq(st_nstarts(&e), 2);
    submit_rack_gang(&e, 3, q, 4, 1, 10);
    st_cycle(&e, 1);
    cr_assert_eq(resv_rack(&e, 3, 100), 0);
    gpusched_place_request r = GPUSCHED_PLACE_REQUEST_INIT;
    r.gpus = 4;
    r.split = GPUSCHED_SPLIT_WHOLE_NODES;
    cr_assert_eq(st_submit_req(&e, 4, q, &r, 1, 2, 1000, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 2);
    cr_assert(st_started(&e, 4), "gang 4 goes first, on node 3");
    cr_assert_eq(resv_rack(&e, 3, 500), 1, "rack 1 at 500");
    st_env_free(&e);
}

Test(sched_kept, an_early_end_after_it_that_no_pod_can_use_keeps_it)
{
    /* Gang 5 (2 GPUs, expected to end at 152, after the reservation)
     * backfills beside job 4 on node 7 and ends at 3. Its GPUs are free,
     * but node 7 is not whole before 1001 (job 4), and gang 3 takes whole
     * nodes: no earlier time can use them, so the reservation stays on
     * rack 0. A new search puts it on rack 1, the tighter fit at 100. */
    for (int keep = 0; keep <= 1; keep++) {
        uint32_t q;
        st_env e = reserved_then_backfilled(keep, 100, &q);
        st_submit(&e, 5, q, 2, 2, 150);
        st_cycle(&e, 2);
        cr_assert(st_started(&e, 5), "gang 5 backfills on node 7");
        cr_assert_eq(gpusched_sched_job_end(e.s, 5, 3), 0, "%s", gpusched_sched_errmsg(e.s));
        st_cycle(&e, 3);
        cr_assert_eq(resv_rack(&e, 3, 100), keep ? 0 : 1, "keep %d", keep);
        st_env_free(&e);
    }
}

Test(sched_kept, an_early_end_before_it_keeps_it)
{
    /* Gang 5 (1 GPU, expected to end at 20, before the reservation)
     * starts beside job 4 and ends early, at 10: nothing the reservation
     * needs moved, so it stays on rack 0, where a new search would not
     * put it. */
    uint32_t q;
    st_env e = reserved_then_backfilled(1, 100, &q);
    st_submit(&e, 5, q, 1, 2, 18);
    st_cycle(&e, 2);
    cr_assert(st_started(&e, 5));
    cr_assert_eq(gpusched_sched_job_end(e.s, 5, 10), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 10);
    cr_assert_eq(resv_rack(&e, 3, 100), 0, "kept on rack 0");
    st_env_free(&e);
}

Test(sched_kept, a_change_the_caller_makes_ends_the_keeping)
{
    /* The caller takes and gives back a GPU of node 7 (beside job 4): the
     * cluster is as it was, but the scheduler did not make the change, so
     * the reservation is searched again, and moves to rack 1. */
    uint32_t q;
    st_env e = reserved_then_backfilled(1, 100, &q);
    const uint32_t node = 7;
    const uint64_t mask = 0x8;
    st_hold(&e, 99, 1, &node, &mask);
    cr_assert_eq(gpusched_cluster_release(e.c, 99), 0);
    st_cycle(&e, 2);
    cr_assert_eq(resv_rack(&e, 3, 100), 1, "searched again: rack 1");
    st_env_free(&e);
}

Test(sched_kept, a_node_event_ends_the_keeping)
{
    /* A node set to the health it has: nothing moved, but a node event is
     * not looked into. */
    uint32_t q;
    st_env e = reserved_then_backfilled(1, 100, &q);
    cr_assert_eq(gpusched_sched_node_health_set(e.s, 7, GPUSCHED_NODE_UP, 2), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 2);
    cr_assert_eq(resv_rack(&e, 3, 100), 1, "searched again: rack 1");
    st_env_free(&e);
}

/* Gang 9 of two whole racks (slices of 16 GPUs) on four racks: rack 0
 * runs job 1 to 100, rack 1 jobs 2 (to 50) and 3 (to 300), rack 2 job 4
 * (one node, to 80), rack 3 job 5 (to 200). Racks 2 and 0 are wholly free
 * at 80 and 100: the reservation is at 100 on them. It is placed without
 * a search (resv.c whole_reserve(), job 2 not lent: its rack stays busy),
 * and a scheduler made with GPUSCHED_SCHED_WHOLE=0 searches and
 * finds the same; every cycle here also checks the count against a
 * search (GPUSCHED_SCHED_KEEP_CHECK=1). */
Test(sched_kept, a_reservation_of_whole_racks_waits_for_the_racks_alone)
{
    for (int search = 0; search <= 1; search++) {
        if (search)
            setenv("GPUSCHED_SCHED_WHOLE", "0", 1);
        uint32_t q;
        st_env e = racks_of(4, 0, &q);
        unsetenv("GPUSCHED_SCHED_WHOLE");
        submit_rack_gang(&e, 1, q, 4, 0, 100);
        submit_rack_gang(&e, 2, q, 2, 0, 50);
        submit_rack_gang(&e, 3, q, 2, 0, 300);
        submit_rack_gang(&e, 4, q, 1, 0, 80);
        submit_rack_gang(&e, 5, q, 4, 0, 200);
        st_cycle(&e, 0);
        for (uint64_t id = 1; id <= 5; id++)
            cr_assert(st_started(&e, id), "job %llu starts", (unsigned long long)id);
        gpusched_place_request r = GPUSCHED_PLACE_REQUEST_INIT;
        r.gpus = 32;
        r.split = GPUSCHED_SPLIT_WHOLE_NODES;
        r.slice_gpus[0] = 16;
        r.slice_level[0] = 1;
        cr_assert_eq(st_submit_req(&e, 9, q, &r, 0, 1, 500, 0), 0, "%s", gpusched_sched_errmsg(e.s));
        st_cycle(&e, 1);
        int64_t t = 0;
        const uint32_t *nodes = NULL;
        uint32_t n = 0;
        for (uint32_t i = 0; i < gpusched_sched_decisions_reservation_count(e.d); i++) {
            uint64_t id;
            int64_t time;
            const uint32_t *x;
            uint32_t k;
            cr_assert_eq(gpusched_sched_decisions_reservation(e.d, i, &id, &time, NULL, NULL, &x, &k), 0);
            if (id == 9)
                t = time, nodes = x, n = k;
        }
        cr_assert_eq(t, 100, "search %d: reserved at %lld", search, (long long)t);
        cr_assert_eq(n, 8);
        for (uint32_t i = 0; i < n; i++)
            cr_assert(nodes[i] / 4 == 0 || nodes[i] / 4 == 2, "search %d: node %u is not on rack 0 or 2", search,
                      nodes[i]);
        st_env_free(&e);
    }
}

/* Racks 0 to 2 busy until 100 (jobs 1 to 3), the rest free; gang 9 of
 * four whole racks waits and is reserved racks 0 to 3 at 100; then gang
 * 10 of two whole racks, running past 100, must stay off them. On six
 * racks two free ones are left (4 and 5): it starts there. On five, one:
 * it fits only with reserved racks and waits behind gang 9. Both tries
 * are counted (lib/sched/whole.c) and checked against the searches
 * (GPUSCHED_SCHED_KEEP_CHECK=1); GPUSCHED_SCHED_WHOLE=0 searches, with
 * the same outcome. */
static void whole_racks_around_a_reservation(uint32_t racks, int search)
{
    if (search)
        setenv("GPUSCHED_SCHED_WHOLE", "0", 1);
    uint32_t q;
    st_env e = racks_of(racks, 0, &q);
    unsetenv("GPUSCHED_SCHED_WHOLE");
    for (uint64_t id = 1; id <= 3; id++)
        submit_rack_gang(&e, id, q, 4, 0, 100);
    st_cycle(&e, 0);
    cr_assert(st_started(&e, 1) && st_started(&e, 2) && st_started(&e, 3));
    gpusched_place_request r = GPUSCHED_PLACE_REQUEST_INIT;
    r.split = GPUSCHED_SPLIT_WHOLE_NODES;
    r.slice_gpus[0] = 16;
    r.slice_level[0] = 1;
    r.gpus = 64;
    cr_assert_eq(st_submit_req(&e, 9, q, &r, 0, 1, 500, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    r.gpus = 32;
    cr_assert_eq(st_submit_req(&e, 10, q, &r, 0, 2, 500, 0), 0, "%s", gpusched_sched_errmsg(e.s));
    st_cycle(&e, 2);
    cr_assert_not(st_started(&e, 9));
    int64_t t;
    uint32_t first;
    resv_of(&e, 9, &t, &first);
    cr_assert_eq(t, 100);
    cr_assert_eq(first, 0, "racks 0 to 3");
    if (racks == 6) {
        cr_assert(st_started(&e, 10), "search %d: racks 4 and 5 are free and not reserved", search);
    } else {
        cr_assert_not(st_started(&e, 10));
        const gpusched_sched_wait w = st_wait(&e, 10, NULL);
        cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_RESERVATION, "search %d", search);
        cr_assert_eq(w.blocking_job, 9);
        cr_assert_eq(w.time, 100);
    }
    st_env_free(&e);
}

Test(sched_kept, whole_racks_start_around_a_reservation_when_enough_are_left)
{
    for (int search = 0; search <= 1; search++)
        whole_racks_around_a_reservation(6, search);
}

Test(sched_kept, whole_racks_wait_behind_a_reservation_when_too_few_are_left)
{
    for (int search = 0; search <= 1; search++)
        whole_racks_around_a_reservation(5, search);
}
