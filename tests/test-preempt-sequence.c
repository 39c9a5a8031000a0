/* Long random sequences of every operation that changes a cluster
 * (placements, releases, preemptions, moves, defragmentations, node
 * health), plan-only calls between them: after every step the cluster's
 * invariant checker passes, a plan-only call changed nothing, and a
 * failed call changed nothing. State left behind by one operation (a job
 * or a reservation still lent, a hold not given back, a stale scratch
 * array) shows up in a later one. */
#include "cluster-test.h"
#include "place-test.h"

typedef struct seq {
    pt_rng r;
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    uint64_t next_id;
    uint32_t done[8];
    uint32_t evictions, moves;  /* committed plans that evicted or moved jobs */
} seq;

static uint64_t some_job(seq *s)
{
    uint32_t n = gpusched_cluster_job_count(s->c);
    uint64_t id = 0;
    if (n)
        cr_assert_eq(gpusched_cluster_job_at(s->c, pt_below(&s->r, n), &id), 0);
    return id;
}

static void random_request(seq *s, gpusched_place_request *q, bool commit)
{
    uint32_t avoid[4];
    pt_random_request(&s->r, s->t, q, s->next_id, avoid);
    q->avoid_nodes = NULL;
    q->avoid_count = 0;
    q->priority = (int32_t)pt_below(&s->r, 5);
    q->job_flags = (uint32_t)pt_below(&s->r, 4); /* preemptible, movable, both, none */
    q->cost_hint = pt_below(&s->r, 10);
    q->flags = commit ? GPUSCHED_PLACE_COMMIT : 0;
}

/* One step; `kind` says which. A call either succeeds or leaves the
 * cluster as it was. */
static void step(seq *s, uint32_t kind)
{
    gpusched_place_request q;
    const bool commit = pt_below(&s->r, 3) != 0;
    uint64_t before = ct_fingerprint(s->c);
    int rc = 0;
    switch (kind) {
    case 0: case 1: case 2:
        random_request(s, &q, true);
        rc = gpusched_placer_place(s->p, &q, s->res);
        break;
    case 3: case 4: {
        uint64_t id = some_job(s);
        rc = id ? gpusched_cluster_release(s->c, id) : GPUSCHED_ENOENT;
        break;
    }
    case 5:
        random_request(s, &q, commit);
        rc = gpusched_placer_preempt(s->p, &q, s->res, s->plan);
        break;
    case 6: {
        uint64_t id = some_job(s);
        rc = id ? gpusched_placer_move(s->p, id, commit ? GPUSCHED_PLACE_COMMIT : 0, s->res) : GPUSCHED_ENOENT;
        break;
    }
    case 7: case 8: {
        kind = 7;
        random_request(s, &q, commit);
        rc = gpusched_placer_defrag(s->p, &q, s->res, s->plan);
        break;
    }
    default: {
        uint32_t node = pt_below(&s->r, gpusched_topo_node_count(s->t));
        uint64_t hit[64];
        rc = gpusched_cluster_set_node_health(s->c, node, pt_below(&s->r, 3) ? GPUSCHED_NODE_UP : GPUSCHED_NODE_DOWN,
                                              hit, 64, NULL);
        break;
    }
    }
    s->next_id++;
    if (rc == 0 && kind < 8)
        s->done[kind]++;
    if (rc == 0 && commit && kind == 5) {
        const uint64_t *ids;
        uint32_t n;
        cr_assert_eq(gpusched_preempt_plan_victims(s->plan, &ids, &n), 0);
        s->evictions += n > 0;
    }
    if (rc == 0 && commit && kind == 7)
        s->moves += gpusched_preempt_plan_move_count(s->plan) > 0;
    bool plan_only = (kind == 5 || kind == 6 || kind == 7) && !commit;
    if (rc != 0 || plan_only)
        cr_assert_eq(ct_fingerprint(s->c), before, "step kind %u (%s) changed the state", kind,
                     gpusched_err_name(rc));
    cr_assert_eq(gpusched_cluster_check(s->c), 0, "after a step of kind %u: %s", kind,
                 gpusched_cluster_errmsg(s->c));
}

Test(preempt_sequence, every_operation_keeps_the_invariants, .timeout = 240)
{
    uint32_t evictions = 0, moves = 0, moved = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        seq s = {.r = {seed * 0x9e3779b97f4a7c15ull}, .next_id = 1};
        const uint32_t fan[] = {2, 3, 4};
        s.t = pt_uniform(2, fan, 4);
        cr_assert_eq(gpusched_cluster_new(s.t, NULL, &s.c), 0);
        cr_assert_eq(gpusched_placer_new(s.c, NULL, &s.p), 0);
        cr_assert_eq(gpusched_place_result_new(NULL, &s.res), 0);
        cr_assert_eq(gpusched_preempt_plan_new(NULL, &s.plan), 0);
        for (uint32_t i = 0; i < 2500; i++)
            step(&s, pt_below(&s.r, 10));
        cr_log_info("seed %llu: %u placed, %u released, %u preempted (%u committed with victims), %u moved, "
                    "%u defragmented (%u committed with moves)",
                    (unsigned long long)seed, s.done[0] + s.done[1] + s.done[2], s.done[3] + s.done[4], s.done[5],
                    s.evictions, s.done[6], s.done[7], s.moves);
        evictions += s.evictions;
        moves += s.moves;
        moved += s.done[6];
        gpusched_preempt_plan_free(s.plan);
        gpusched_place_result_free(s.res);
        gpusched_placer_free(s.p);
        gpusched_cluster_free(s.c);
        gpusched_topo_unref(s.t);
    }
    /* Each kind of operation must have done real work now and then. */
    cr_assert_gt(evictions, 50);
    cr_assert_gt(moved, 100);
    cr_assert_gt(moves, 15);
}
