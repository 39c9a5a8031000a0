/* Long random sequences of every operation that changes a cluster
 * (placements, batches, releases, reservations, preemptions, moves,
 * defragmentations, node health), plan-only calls between them: after
 * every step the cluster's invariant checker passes, and a plan-only or
 * failed call left the snapshot bytes exactly as they were. State left
 * behind by one operation (a job or a reservation still lent, a hold not
 * given back, a stale scratch array) shows up in a later one. The journal
 * runs all along: replaying it on the first snapshot, and a standby that
 * applies it as it grows, give the live cluster's snapshot bytes. One call
 * in eight (placements, preemptions, moves, defragmentations) is made
 * again on a cluster restored from the snapshot before it, with a new
 * placer and plan: the same answer, whatever the live ones remember. */
#include <stdio.h>

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
    uint32_t done[12];
    uint32_t evictions, moves;  /* committed plans that evicted or moved jobs */
    uint32_t resv_used;         /* placements that took GPUs of their reservation */
    uint32_t fresh;             /* calls repeated on a restored cluster */
    gpusched_cluster *standby;  /* applies the journal as it grows */
    size_t applied;             /* journal bytes the standby has */
} seq;

static uint64_t some_job(seq *s)
{
    uint32_t n = gpusched_cluster_job_count(s->c);
    uint64_t id = 0;
    if (n)
        cr_assert_eq(gpusched_cluster_job_at(s->c, pt_below(&s->r, n), &id), 0);
    return id;
}

/* A random request for job `id`; its descriptor goes into *job, which
 * must outlive every use of q. */
static void random_request(seq *s, gpusched_place_request *q, gpusched_job *job, uint64_t id, bool commit)
{
    uint32_t avoid[4];
    pt_random_request(&s->r, s->t, q, job, id, avoid);
    q->avoid_nodes = NULL;
    q->avoid_count = 0;
    job->priority = (int32_t)pt_below(&s->r, 5);
    job->flags = (uint32_t)pt_below(&s->r, 4); /* preemptible, movable, both, none */
    job->cost_hint = pt_below(&s->r, 10);
    q->flags = commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
}

/* Reserves a few free GPUs of a random node for a running job or for the
 * next job id (which a later placement then consumes). */
static int reserve_some(seq *s)
{
    uint32_t node = pt_below(&s->r, gpusched_topo_node_count(s->t));
    uint64_t free_mask;
    cr_assert_eq(gpusched_cluster_node_state(s->c, node, &free_mask, NULL, NULL, NULL), 0);
    uint64_t mask = free_mask & pt_next(&s->r);
    uint64_t id = pt_below(&s->r, 2) ? some_job(s) : s->next_id + 1;
    return gpusched_cluster_reserve(s->c, id ? id : s->next_id + 1, 1, &node, &mask);
}

static int batch(seq *s, bool commit)
{
    gpusched_place_request q[3];
    gpusched_job job[3];
    const gpusched_place_request *qp[3];
    gpusched_place_result *res[3] = {s->res, NULL, NULL};
    cr_assert_eq(gpusched_place_result_new(NULL, &res[1]), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res[2]), 0);
    for (int i = 0; i < 3; i++) {
        random_request(s, &q[i], &job[i], s->next_id++, commit && pt_below(&s->r, 2));
        qp[i] = &q[i];
    }
    int rc = gpusched_placer_place_batch(s->p, 3, qp, res, NULL);
    gpusched_place_result_free(res[1]);
    gpusched_place_result_free(res[2]);
    return rc;
}

/* The same call on a cluster restored from `img` (the state before the
 * step) with a new placer and plan: the same answer, so that nothing the
 * live placer, plan or cluster keeps between calls (memos, the
 * preemption index, scratch) changes one. kind as in step(); q and job
 * as the step used them (for a move, job->id is the job moved). */
static void same_on_fresh(seq *s, uint32_t kind, const gpusched_place_request *q, uint64_t move_id, int rc,
                          const uint8_t *img, size_t len)
{
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    char err[256];
    s->fresh++;
    cr_assert_eq(gpusched_cluster_restore(img, len, NULL, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    cr_assert_eq(gpusched_preempt_plan_new(NULL, &plan), 0);
    int frc = kind == 5 ? gpusched_placer_preempt(p, q, res, plan)
              : kind == 6 ? gpusched_placer_move(p, move_id, q ? q->flags : 0, res)
              : kind == 7 ? gpusched_placer_defrag(p, q, res, plan)
                          : gpusched_placer_place(p, q, res);
    cr_assert_eq(frc, rc, "step kind %u: %s live, %s on a fresh cluster (%s)", kind, gpusched_err_name(rc),
                 gpusched_err_name(frc), gpusched_placer_errmsg(p));
    if (!rc) {
        const uint32_t *na, *nb;
        const uint64_t *ma, *mb;
        uint32_t ca, cb;
        cr_assert_eq(gpusched_place_result_nodes(s->res, &na, &ma, &ca), 0);
        cr_assert_eq(gpusched_place_result_nodes(res, &nb, &mb, &cb), 0);
        cr_assert_eq(ca, cb, "step kind %u: %u nodes live, %u fresh", kind, ca, cb);
        for (uint32_t i = 0; i < ca; i++)
            cr_assert(na[i] == nb[i] && ma[i] == mb[i], "step kind %u: node %u live, %u fresh", kind, na[i], nb[i]);
        if (kind == 5 || kind == 7) {
            const uint64_t *va, *vb;
            uint32_t n1, n2;
            cr_assert_eq(gpusched_preempt_plan_victims(s->plan, &va, &n1), 0);
            cr_assert_eq(gpusched_preempt_plan_victims(plan, &vb, &n2), 0);
            cr_assert_eq(n1, n2, "step kind %u: %u victims live, %u fresh", kind, n1, n2);
            for (uint32_t i = 0; i < n1; i++)
                cr_assert_eq(va[i], vb[i], "step kind %u: victim %u differs", kind, i);
            cr_assert_eq(gpusched_preempt_plan_move_count(s->plan), gpusched_preempt_plan_move_count(plan));
        }
    }
    gpusched_preempt_plan_free(plan);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
}

/* One step; `kind` says which. A call either succeeds or leaves the
 * cluster as it was. */
static void step(seq *s, uint32_t kind)
{
    gpusched_place_request q;
    gpusched_job job;
    const bool commit = pt_below(&s->r, 3) != 0;
    size_t before_len;
    uint8_t *before = ct_snapshot(s->c, &before_len);
    int rc = 0;
    uint64_t move_id = 0;
    switch (kind) {
    case 0: case 1: case 2:
        random_request(s, &q, &job, s->next_id, true);
        rc = gpusched_placer_place(s->p, &q, s->res);
        break;
    case 3: case 4: {
        uint64_t id = some_job(s);
        rc = id ? gpusched_cluster_release(s->c, id) : GPUSCHED_ENOENT;
        break;
    }
    case 5:
        random_request(s, &q, &job, s->next_id, commit);
        /* Cost first takes the indexed path for rack-bound gangs, whose
         * index the invariant checker then compares with the jobs. */
        q.preempt_policy = pt_below(&s->r, 2) ? GPUSCHED_PREEMPT_COST_FIRST : GPUSCHED_PREEMPT_PRIORITY_FIRST;
        rc = gpusched_placer_preempt(s->p, &q, s->res, s->plan);
        break;
    case 6: {
        uint64_t id = some_job(s);
        q.flags = commit ? GPUSCHED_PLACE_FLAG_COMMIT : 0;
        rc = id ? gpusched_placer_move(s->p, id, q.flags, s->res) : GPUSCHED_ENOENT;
        move_id = id;
        break;
    }
    case 7: case 8: {
        kind = 7;
        random_request(s, &q, &job, s->next_id, commit);
        rc = gpusched_placer_defrag(s->p, &q, s->res, s->plan);
        break;
    }
    case 9:
        rc = pt_below(&s->r, 2) ? batch(s, commit) : reserve_some(s);
        break;
    case 10: {
        uint64_t id = some_job(s);
        uint32_t nresv = gpusched_cluster_resv_count(s->c);
        uint64_t rid = s->next_id;
        if (nresv && pt_below(&s->r, 4))
            cr_assert_eq(gpusched_cluster_resv_at(s->c, pt_below(&s->r, nresv), &rid), 0);
        if (pt_below(&s->r, 3) == 0)
            rc = id ? gpusched_cluster_release_to_resv(s->c, id, s->next_id + 1) : GPUSCHED_ENOENT;
        else
            rc = gpusched_cluster_unreserve(s->c, rid);
        break;
    }
    default: {
        kind = 11;
        uint32_t node = pt_below(&s->r, gpusched_topo_node_count(s->t));
        uint64_t hit[64];
        rc = gpusched_cluster_node_health_set(s->c, node, pt_below(&s->r, 3) ? GPUSCHED_NODE_UP : GPUSCHED_NODE_DOWN,
                                              hit, 64, NULL);
        break;
    }
    }
    s->next_id++;
    if (rc == 0)
        s->done[kind]++;
    /* Now and then, the same call from scratch. */
    if ((kind <= 2 || kind == 5 || kind == 7 || (kind == 6 && move_id)) && pt_below(&s->r, 8) == 0)
        same_on_fresh(s, kind, &q, move_id, rc, before, before_len);
    /* No operation fails but for want of room or of its object. */
    cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC || rc == GPUSCHED_ENOENT || rc == GPUSCHED_EBUSY ||
                  rc == GPUSCHED_EINVAL || rc == GPUSCHED_ESTATE,
              "step kind %u: %s: %s / %s", kind, gpusched_err_name(rc), gpusched_placer_errmsg(s->p),
              gpusched_cluster_errmsg(s->c));
    if (rc == GPUSCHED_ESTATE)
        cr_assert(kind == 11 || kind == 9 || kind == 10, "step kind %u: %s: %s / %s", kind, gpusched_err_name(rc),
                  gpusched_placer_errmsg(s->p), gpusched_cluster_errmsg(s->c));
    if (rc == 0 && commit && kind == 5) {
        const uint64_t *ids;
        uint32_t n;
        cr_assert_eq(gpusched_preempt_plan_victims(s->plan, &ids, &n), 0);
        s->evictions += n > 0;
    }
    if (rc == 0 && commit && kind == 7)
        s->moves += gpusched_preempt_plan_move_count(s->plan) > 0;
    bool plan_only = (kind == 5 || kind == 6 || kind == 7) && !commit;
    if (rc != 0 || plan_only) {
        char what[96];
        snprintf(what, sizeof what, "step kind %u (%s, %s)", kind, gpusched_err_name(rc),
                 plan_only ? "plan only" : "failed");
        ct_assert_snapshot(s->c, before, before_len, what);
    }
    free(before);
    cr_assert_eq(gpusched_cluster_check(s->c), 0, "after a step of kind %u: %s", kind,
                 gpusched_cluster_errmsg(s->c));
    if (pt_below(&s->r, 50) == 0) {
        /* The standby catches up with what the journal gained meanwhile. */
        const void *j;
        size_t jlen;
        cr_assert_eq(gpusched_cluster_journal_view(s->c, &j, &jlen), 0);
        cr_assert_eq(gpusched_cluster_journal_apply(s->standby, (const uint8_t *)j + s->applied, jlen - s->applied, NULL),
                     0, "%s", gpusched_cluster_errmsg(s->standby));
        s->applied = jlen;
        size_t len;
        uint8_t *live = ct_snapshot(s->c, &len);
        ct_assert_snapshot(s->standby, live, len, "the standby");
        free(live);
    }
}

Test(preempt_sequence, every_operation_keeps_the_invariants, .timeout = 240)
{
    uint32_t evictions = 0, moves = 0, moved = 0, fresh = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        seq s = {.r = {seed * 0x9e3779b97f4a7c15ull}, .next_id = 1};
        const uint32_t fan[] = {2, 3, 4};
        s.t = pt_uniform(2, fan, 4);
        cr_assert_eq(gpusched_cluster_new(s.t, NULL, &s.c), 0);
        cr_assert_eq(gpusched_placer_new(s.c, NULL, &s.p), 0);
        cr_assert_eq(gpusched_place_result_new(NULL, &s.res), 0);
        cr_assert_eq(gpusched_preempt_plan_new(NULL, &s.plan), 0);
        size_t first_len;
        uint8_t *first = ct_snapshot(s.c, &first_len);
        cr_assert_eq(gpusched_cluster_journal_start(s.c, NULL, NULL), 0);
        char err[256];
        cr_assert_eq(gpusched_cluster_restore(first, first_len, NULL, &s.standby, err, sizeof err), 0, "%s", err);
        for (uint32_t i = 0; i < 4000; i++)
            step(&s, pt_below(&s.r, 13));
        /* Replaying the whole journal on the first snapshot gives the same
         * bytes as the live cluster. */
        const void *j;
        size_t jlen, live_len;
        cr_assert_eq(gpusched_cluster_journal_view(s.c, &j, &jlen), 0);
        gpusched_cluster *replayed = NULL;
        cr_assert_eq(gpusched_cluster_replay(first, first_len, j, jlen, NULL, &replayed, err, sizeof err), 0, "%s",
                     err);
        uint8_t *live = ct_snapshot(s.c, &live_len);
        ct_assert_snapshot(replayed, live, live_len, "the replayed cluster");
        cr_assert_eq(gpusched_cluster_check(replayed), 0, "%s", gpusched_cluster_errmsg(replayed));
        free(live);
        free(first);
        gpusched_cluster_unref(replayed);
        gpusched_cluster_unref(s.standby);
        cr_log_info("seed %llu: %u placed, %u released, %u preempted (%u committed with victims), %u moved, "
                    "%u defragmented (%u committed with moves), %u batches or reservations, %u unreserved",
                    (unsigned long long)seed, s.done[0] + s.done[1] + s.done[2], s.done[3] + s.done[4], s.done[5],
                    s.evictions, s.done[6], s.done[7], s.moves, s.done[9], s.done[10]);
        evictions += s.evictions;
        fresh += s.fresh;
        moves += s.moves;
        moved += s.done[6];
        gpusched_preempt_plan_free(s.plan);
        gpusched_place_result_free(s.res);
        gpusched_placer_free(s.p);
        gpusched_cluster_unref(s.c);
        gpusched_topo_unref(s.t);
    }
    /* Each kind of operation must have done real work now and then. */
    cr_assert_gt(evictions, 50);
    cr_assert_gt(moved, 100);
    cr_assert_gt(moves, 15);
    cr_log_info("%u calls repeated on a restored cluster", fresh);
    cr_assert_gt(fresh, 1000);
}
