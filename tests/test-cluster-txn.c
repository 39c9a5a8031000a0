/* Transactions and the journal: the two atomicity bugs the cluster had
 * when three modules wrote its tables (regression tests), out-of-memory
 * at every allocation of a batch leaving the snapshot bytes unchanged, a
 * journal sink refusing a record, and journals that are truncated,
 * corrupted, out of sequence or do not apply. */
#include <stdio.h>

#include "cluster-test.h"
#include "failalloc.h"
#include "place-test.h"

static gpusched_topo *parse(const char *text)
{
    gpusched_topo *t = NULL;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, strlen(text), NULL, &t, err, sizeof err), 0, "%s", err);
    return t;
}

/* Issue #10, bug 1: the mover holds a reservation. Plan only changed the
 * cluster (free 0xff with reserved 0x47 on node 0); commit left a GPU held
 * twice. */
static void defrag_mover_with_reservation(uint32_t flags)
{
    gpusched_topo *t = parse("levels rack\nnode a n0 gpus=8\nnode b n1 gpus=8\n");
    pt_env e = pt_env_on(t);
    gpusched_job j = ct_job(1);
    j.flags = GPUSCHED_JOB_FLAG_MOVABLE;
    j.priority = -99;
    uint32_t n1 = 1, n0 = 0;
    uint64_t all = 0xff, resv = 0x47;
    cr_assert_eq(gpusched_cluster_allocate(e.c, &j, 1, &n1, &all), 0);
    cr_assert_eq(gpusched_cluster_reserve(e.c, 1, 1, &n0, &resv), 0);
    cr_assert_eq(gpusched_cluster_check(e.c), 0);
    size_t len;
    uint8_t *before = ct_snapshot(e.c, &len);
    gpusched_preempt_plan *plan;
    cr_assert_eq(gpusched_preempt_plan_new(NULL, &plan), 0);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job qj;
    pt_req_job(&q, &qj, 4)->priority = -45;
    q.gpus = 5, q.required_level = 0, q.flags = flags;
    int rc = gpusched_placer_defrag(e.p, &q, e.res, plan);
    cr_assert_eq(gpusched_cluster_check(e.c), 0, "%s", gpusched_cluster_errmsg(e.c));
    if (!(flags & GPUSCHED_PLACE_FLAG_COMMIT) || rc != 0)
        ct_assert_snapshot(e.c, before, len, "a plan-only or failed defragmentation");
    if (rc == 0 && (flags & GPUSCHED_PLACE_FLAG_COMMIT)) {
        /* Job 4 runs, job 1 moved (its reservation consumed by its new
         * place), every GPU held once. */
        cr_assert_eq(gpusched_cluster_job_find(e.c, 4, NULL), 0);
        cr_assert_eq(gpusched_cluster_job_find(e.c, 1, NULL), 0);
        cr_assert_eq(gpusched_preempt_plan_move_count(plan), 1);
    }
    cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(e.p));
    free(before);
    gpusched_preempt_plan_free(plan);
    pt_env_free(&e);
}

Test(cluster_txn, defrag_mover_with_reservation_plan_only)
{
    defrag_mover_with_reservation(0);
}

Test(cluster_txn, defrag_mover_with_reservation_commit)
{
    defrag_mover_with_reservation(GPUSCHED_PLACE_FLAG_COMMIT);
}

/* Issue #10, bug 2: a batch where job 50 holds a reservation and a later
 * allocation fails ended with no job and no reservation. Every failing
 * allocation must leave the snapshot bytes as they were. */
typedef struct batch_ctx {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res[3];
    int checked;
} batch_ctx;

static void batch_undo(void *ctx)
{
    batch_ctx *x = ctx;
    for (int i = 0; i < 3; i++)
        gpusched_place_result_free(x->res[i]);
    gpusched_placer_free(x->p);
    gpusched_cluster_unref(x->c);
}

static int batch_op(failalloc *fa, void *ctx)
{
    batch_ctx *x = ctx;
    long fail_at = fa->fail_at;
    fa->fail_at = -1;
    cr_assert_eq(gpusched_cluster_new(x->t, &fa->a, &x->c), 0);
    cr_assert_eq(gpusched_placer_new(x->c, &fa->a, &x->p), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(gpusched_place_result_new(&fa->a, &x->res[i]), 0);
    uint32_t node = 2;
    uint64_t mask = 0xf;
    cr_assert_eq(gpusched_cluster_reserve(x->c, 50, 1, &node, &mask), 0);
    cr_assert_eq(gpusched_cluster_journal_start(x->c, NULL, NULL), 0);
    size_t len;
    uint8_t *before = ct_snapshot(x->c, &len);
    gpusched_place_request q[3] = {GPUSCHED_PLACE_REQUEST_INIT, GPUSCHED_PLACE_REQUEST_INIT,
                                   GPUSCHED_PLACE_REQUEST_INIT};
    gpusched_job qj[3];
    const gpusched_place_request *qp[3];
    for (int i = 0; i < 3; i++) {
        pt_req_job(&q[i], &qj[i], 50 + (uint64_t)i);
        q[i].gpus = i == 0 ? 4 : 12; /* 12 GPUs: more than the two pairs a record keeps inline */
        q[i].split = GPUSCHED_SPLIT_ANY;
        q[i].flags = GPUSCHED_PLACE_FLAG_COMMIT;
        qp[i] = &q[i];
    }
    fa->fail_at = fail_at >= 0 ? fa->count + fail_at : -1;
    int rc = gpusched_placer_place_batch(x->p, 3, qp, x->res, NULL);
    fa->fail_at = -1;
    if (rc) {
        ct_assert_snapshot(x->c, before, len, "a batch that ran out of memory");
        cr_assert_eq(gpusched_cluster_resv_count(x->c), 1);
        cr_assert_eq(gpusched_cluster_job_count(x->c), 0);
        const void *j;
        size_t jlen;
        cr_assert_eq(gpusched_cluster_journal_view(x->c, &j, &jlen), 0);
        cr_assert_eq(jlen, 0, "no journal record for a batch that failed");
        x->checked++;
    } else {
        cr_assert_eq(gpusched_cluster_job_count(x->c), 3);
        cr_assert_eq(gpusched_cluster_resv_count(x->c), 0, "job 50 consumed its reservation");
    }
    cr_assert_eq(gpusched_cluster_check(x->c), 0, "%s", gpusched_cluster_errmsg(x->c));
    free(before);
    if (rc)
        batch_undo(x);
    return rc;
}

Test(cluster_txn, batch_out_of_memory_with_reservation_changes_nothing)
{
    batch_ctx x = {.t = ct_uniform()};
    long n = failalloc_sweep(batch_op, batch_undo, &x);
    cr_assert_gt(n, 0);
    cr_assert_gt(x.checked, 3, "the sweep failed allocations inside the batch (%d)", x.checked);
    gpusched_topo_unref(x.t);
}

/* ---- the journal ------------------------------------------------------------ */

static int refuse_second(void *user, const void *rec, size_t len)
{
    int *calls = user;
    cr_assert_not_null(rec);
    cr_assert_gt(len, 32);
    return ++*calls == 2;
}

Test(cluster_txn, sink_refusing_a_record_fails_the_call_and_changes_nothing)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    int calls = 0;
    cr_assert_eq(gpusched_cluster_journal_start(c, refuse_second, &calls), 0);
    gpusched_job j = ct_job(1);
    uint32_t node = 0;
    uint64_t mask = 1;
    cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &node, &mask), 0);
    size_t len;
    uint8_t *before = ct_snapshot(c, &len);
    j.id = 2;
    cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &node, &(uint64_t){2}), GPUSCHED_EIO);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "the journal sink refused record 2");
    ct_assert_snapshot(c, before, len, "a refused record");
    /* The next record takes the refused one's sequence number. */
    cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &node, &(uint64_t){2}), 0);
    cr_assert_eq(calls, 3);
    free(before);
    gpusched_cluster_unref(c);
}

/* A short history with every kind of record: returns the first snapshot
 * and the journal, and the live cluster's final snapshot. */
typedef struct history {
    uint8_t *first, *last, *journal;
    size_t first_len, last_len, journal_len;
    size_t ends[16]; /* where each record ends */
    uint32_t nrec;
} history;

static void record_end(gpusched_cluster *c, history *h)
{
    const void *j;
    size_t len;
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    h->ends[h->nrec++] = len;
}

static history make_history(void)
{
    history h = {0};
    gpusched_cluster *c = ct_cluster(ct_uniform());
    h.first = ct_snapshot(c, &h.first_len);
    cr_assert_eq(gpusched_cluster_journal_start(c, NULL, NULL), 0);
    gpusched_job j = ct_job(1);
    uint32_t nodes[] = {0, 1, 2};
    uint64_t masks[] = {0xf, 0x3, 0x1};
    cr_assert_eq(gpusched_cluster_allocate(c, &j, 3, nodes, masks), 0);
    record_end(c, &h);
    cr_assert_eq(gpusched_cluster_reserve(c, 7, 1, &nodes[2], &(uint64_t){0x6}), 0);
    record_end(c, &h);
    j.priority = 5;
    cr_assert_eq(gpusched_cluster_job_update(c, &j), 0);
    record_end(c, &h);
    cr_assert_eq(gpusched_cluster_node_health_set(c, 3, GPUSCHED_NODE_DOWN, NULL, 0, NULL), 0);
    record_end(c, &h);
    cr_assert_eq(gpusched_cluster_release_to_resv(c, 1, 7), 0);
    record_end(c, &h);
    gpusched_placer *p;
    gpusched_place_result *res;
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job qj;
    pt_req_job(&q, &qj, 7);
    q.gpus = 10, q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
    cr_assert_eq(gpusched_placer_place(p, &q, res), 0, "%s", gpusched_placer_errmsg(p));
    record_end(c, &h);
    cr_assert_eq(gpusched_placer_move(p, 7, GPUSCHED_PLACE_FLAG_COMMIT, res), 0, "%s", gpusched_placer_errmsg(p));
    record_end(c, &h);
    uint32_t far = 20;
    cr_assert_eq(gpusched_cluster_reserve(c, 9, 1, &far, &(uint64_t){0x1}), 0, "%s", gpusched_cluster_errmsg(c));
    record_end(c, &h);
    cr_assert_eq(gpusched_cluster_unreserve(c, 9), 0);
    record_end(c, &h);
    cr_assert_eq(gpusched_cluster_release(c, 7), 0);
    record_end(c, &h);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    const void *jr;
    cr_assert_eq(gpusched_cluster_journal_view(c, &jr, &h.journal_len), 0);
    h.journal = malloc(h.journal_len);
    memcpy(h.journal, jr, h.journal_len);
    h.last = ct_snapshot(c, &h.last_len);
    gpusched_cluster_unref(c);
    return h;
}

static void history_free(history *h)
{
    free(h->first);
    free(h->last);
    free(h->journal);
}

Test(cluster_txn, replay_gives_the_same_bytes)
{
    history h = make_history();
    cr_assert_eq(h.nrec, 10);
    gpusched_cluster *c = NULL;
    char err[256];
    cr_assert_eq(gpusched_cluster_replay(h.first, h.first_len, h.journal, h.journal_len, NULL, &c, err, sizeof err),
                 0, "%s", err);
    ct_assert_snapshot(c, h.last, h.last_len, "replay");
    cr_assert_eq(gpusched_cluster_check(c), 0);
    gpusched_cluster_unref(c);
    /* An empty journal replays to the snapshot itself. */
    cr_assert_eq(gpusched_cluster_replay(h.first, h.first_len, NULL, 0, NULL, &c, err, sizeof err), 0, "%s", err);
    ct_assert_snapshot(c, h.first, h.first_len, "an empty journal");
    gpusched_cluster_unref(c);
    history_free(&h);
}

/* Every truncation and every flipped byte of the journal: replay fails
 * and creates nothing, or (a cut at a record boundary) gives exactly the
 * state after the records kept; a standby applying it keeps the records
 * before the first bad one, each whole. */
Test(cluster_txn, damaged_journals_stop_at_the_first_bad_record)
{
    history h = make_history();
    char err[256];
    uint32_t bad_checked = 0;
    for (size_t cut = 0; cut < h.journal_len; cut++) {
        gpusched_cluster *c = NULL;
        int rc = gpusched_cluster_replay(h.first, h.first_len, h.journal, cut, NULL, &c, err, sizeof err);
        uint32_t whole = 0;
        while (whole < h.nrec && h.ends[whole] <= cut)
            whole++;
        bool boundary = cut == 0 || (whole && h.ends[whole - 1] == cut);
        if (boundary) {
            cr_assert_eq(rc, 0, "cut %zu: %s", cut, err);
            gpusched_cluster_unref(c);
            continue;
        }
        cr_assert_eq(rc, GPUSCHED_ECORRUPT, "cut %zu", cut);
        cr_assert_null(c);
        char want[64];
        snprintf(want, sizeof want, "journal record %u: truncated", whole);
        cr_assert(strncmp(err, want, strlen(want)) == 0, "cut %zu: %s", cut, err);
        bad_checked++;
    }
    uint8_t *copy = malloc(h.journal_len);
    for (size_t at = 0; at < h.journal_len; at++) {
        memcpy(copy, h.journal, h.journal_len);
        copy[at] ^= 0x10;
        uint32_t rec = 0;
        while (h.ends[rec] <= at)
            rec++;
        gpusched_cluster *standby = NULL;
        cr_assert_eq(gpusched_cluster_restore(h.first, h.first_len, NULL, &standby, err, sizeof err), 0);
        uint32_t applied = 99;
        int rc = gpusched_cluster_journal_apply(standby, copy, h.journal_len, &applied);
        cr_assert(rc == GPUSCHED_ECORRUPT || rc == GPUSCHED_EVERSION, "byte %zu: %s", at, gpusched_err_name(rc));
        cr_assert_eq(applied, rec, "byte %zu: %u records applied, %u expected", at, applied, rec);
        /* The standby holds exactly the records before the bad one. */
        gpusched_cluster *prefix = NULL;
        cr_assert_eq(gpusched_cluster_replay(h.first, h.first_len, h.journal, rec ? h.ends[rec - 1] : 0, NULL,
                                             &prefix, err, sizeof err), 0);
        size_t plen;
        uint8_t *pimg = ct_snapshot(prefix, &plen);
        ct_assert_snapshot(standby, pimg, plen, "a standby after a bad record");
        free(pimg);
        gpusched_cluster_unref(prefix);
        gpusched_cluster_unref(standby);
        bad_checked++;
    }
    free(copy);
    cr_assert_gt(bad_checked, h.journal_len);
    history_free(&h);
}

Test(cluster_txn, records_out_of_sequence_or_not_applying_are_refused)
{
    history h = make_history();
    char err[256];
    gpusched_cluster *c = NULL;
    cr_assert_eq(gpusched_cluster_restore(h.first, h.first_len, NULL, &c, err, sizeof err), 0);
    uint32_t applied = 0;
    cr_assert_eq(gpusched_cluster_journal_apply(c, h.journal, h.ends[0], &applied), 0);
    cr_assert_eq(applied, 1);
    /* The same record again: sequence 1 follows 1. */
    cr_assert_eq(gpusched_cluster_journal_apply(c, h.journal, h.ends[0], &applied), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "journal record 0: sequence 1 follows 1");
    cr_assert_eq(applied, 0);
    gpusched_cluster_unref(c);
    /* Record 3 (job 1's update) on a cluster where job 1 never ran. */
    cr_assert_eq(gpusched_cluster_restore(h.first, h.first_len, NULL, &c, err, sizeof err), 0);
    cr_assert_eq(gpusched_cluster_journal_apply(c, h.journal + h.ends[1], h.ends[2] - h.ends[1], &applied),
                 GPUSCHED_ECORRUPT);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "journal record 0 does not apply: no running job 1");
    ct_assert_snapshot(c, h.first, h.first_len, "a record that does not apply");
    cr_assert_eq(gpusched_cluster_journal_apply(NULL, h.journal, 1, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_journal_apply(c, NULL, 1, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_replay(h.first, h.first_len, NULL, 1, NULL, &c, err, sizeof err), GPUSCHED_EINVAL);
    gpusched_cluster_unref(c);
    history_free(&h);
}

Test(cluster_txn, journal_buffer_start_stop_clear)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    const void *j;
    size_t len = 1;
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_null(j);
    cr_assert_eq(len, 0);
    gpusched_job job = ct_job(1);
    uint32_t node = 0;
    cr_assert_eq(gpusched_cluster_allocate(c, &job, 1, &node, &(uint64_t){1}), 0);
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_eq(len, 0, "nothing is journaled before the start");
    cr_assert_eq(gpusched_cluster_journal_start(c, NULL, NULL), 0);
    cr_assert_eq(gpusched_cluster_release(c, 1), 0);
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_eq(len, 24 + 9 + 8, "a release is a 41-byte record");
    cr_assert_eq(gpusched_cluster_release(c, 1), GPUSCHED_ENOENT);
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_eq(len, 41, "a failed call writes no record");
    cr_assert_eq(gpusched_cluster_journal_stop(c), 0);
    cr_assert_eq(gpusched_cluster_allocate(c, &job, 1, &node, &(uint64_t){1}), 0);
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_eq(len, 41, "records stay readable after the stop");
    cr_assert_eq(gpusched_cluster_journal_clear(c), 0);
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_eq(len, 0);
    cr_assert_eq(gpusched_cluster_journal_start(NULL, NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_journal_stop(NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_journal_clear(NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_journal_view(c, NULL, &len), GPUSCHED_EINVAL);
    gpusched_cluster_unref(c);
}

Test(cluster_txn, a_node_set_to_its_own_health_writes_no_record)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    gpusched_job job = ct_job(1);
    uint32_t node = 0;
    cr_assert_eq(gpusched_cluster_allocate(c, &job, 1, &node, &(uint64_t){1}), 0);
    cr_assert_eq(gpusched_cluster_journal_start(c, NULL, NULL), 0);
    const void *j;
    size_t len;
    uint64_t hit[4];
    uint32_t nhit = 0;
    cr_assert_eq(gpusched_cluster_node_health_set(c, 0, GPUSCHED_NODE_UP, hit, 4, &nhit), 0);
    cr_assert_eq(nhit, 1, "the job on the node is still reported");
    cr_assert_eq(hit[0], 1);
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_eq(len, 0, "up to up changes nothing: no record");
    cr_assert_eq(gpusched_cluster_node_health_set(c, 0, GPUSCHED_NODE_DRAINING, hit, 4, &nhit), 0);
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_gt(len, 0, "up to draining is a change");
    const size_t once = len;
    cr_assert_eq(gpusched_cluster_node_health_set(c, 0, GPUSCHED_NODE_DRAINING, hit, 4, &nhit), 0);
    cr_assert_eq(gpusched_cluster_journal_view(c, &j, &len), 0);
    cr_assert_eq(len, once, "draining again: no record");
    uint32_t health;
    cr_assert_eq(gpusched_cluster_node_state(c, 0, NULL, NULL, NULL, &health), 0);
    cr_assert_eq(health, GPUSCHED_NODE_DRAINING);
    gpusched_cluster_unref(c);
}
