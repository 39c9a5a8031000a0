/* The scheduler's API as a sequence of operations decoded from the input:
 * a queue tree with quotas (some invalid), parameters (some out of range),
 * then submits of whole-GPU gangs (some in slices of whole racks) and pod
 * gangs (some invalid), cancels, job ends, node health changes, quota
 * changes, state queries and cycles (some at a time before the last). Two
 * schedulers over two equal clusters take the same sequence, one created
 * with GPUSCHED_SCHED_QUICK=0 (every pending gang evaluated in full, none
 * by the quick waits): every call must return the same in both, every
 * cycle's decisions must be the same field by field, and after every step
 * both pass their invariant checkers (scheduler and cluster). A call that
 * fails must leave the counts as they were. Both check each reservation
 * they keep across cycles against a new search
 * (GPUSCHED_SCHED_KEEP_CHECK=1). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#include "fuzz.h"

typedef struct side {
    gpusched_topo *t;
    gpusched_cluster *c;
    gpusched_sched *s;
    gpusched_sched_decisions *d;
} side;

typedef struct world {
    side a, b;          /* a: quick waits on; b: off */
    uint32_t nnodes, nq;
    uint64_t next_id;
    int64_t now;
} world;

static void side_new(side *x, const char *text)
{
    char err[256];
    FUZZ_CHECK(gpusched_topo_parse(text, strlen(text), NULL, &x->t, err, sizeof err) == 0, "topo: %s", err);
    FUZZ_CHECK(gpusched_cluster_new(x->t, NULL, &x->c) == 0 && gpusched_sched_new(x->c, NULL, &x->s) == 0 &&
                   gpusched_sched_decisions_new(NULL, &x->d) == 0,
               "handles");
}

static void side_free(side *x)
{
    gpusched_sched_decisions_free(x->d);
    gpusched_sched_free(x->s);
    gpusched_cluster_unref(x->c);
    gpusched_topo_unref(x->t);
}

/* A request decoded once and given to both sides (pods amounts point to
 * `res`). */
static void request(fuzz_rd *r, gpusched_place_request *q, uint64_t *res)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    q->gpus = 1 + fuzz_take(r, 24);
    q->split = fuzz_take(r, 3);
    q->pod_gpus = fuzz_take(r, 5);
    q->required_level = fuzz_take(r, 3) ? GPUSCHED_NONE : fuzz_take(r, 2);
    if (fuzz_take(r, 4) == 0) {
        /* Slices at the rack level: 8 GPUs is a whole rack (the
         * reservation search's whole-domain hint), 4 half of one. */
        q->slice_gpus[0] = 4 * fuzz_take(r, 3);
        q->slice_level[0] = 1;
    }
    if (fuzz_take(r, 3) == 0) {
        /* Pods: cpu and memory, fractions, sometimes invalid. */
        q->split = GPUSCHED_SPLIT_PODS;
        q->gpus = fuzz_take(r, 4) ? 0 : q->gpus;
        q->pods = fuzz_take(r, 5);
        q->pod_gpus = fuzz_take(r, 3);
        q->gpu_milli = fuzz_take(r, 3) ? 0 : 100 * fuzz_take(r, 12);
        res[0] = 500 * fuzz_take(r, 20);
        res[1] = 1024 * fuzz_take(r, 40);
        res[2] = fuzz_take(r, 2);
        q->resources = res;
        q->resource_count = fuzz_take(r, 4);
    }
}

static void same_decisions(world *w)
{
    gpusched_sched_decisions *x = w->a.d, *y = w->b.d;
    FUZZ_CHECK(gpusched_sched_decisions_quiet(x) == gpusched_sched_decisions_quiet(y), "quiet");
    const uint64_t *ia, *ib, *fa, *fb;
    uint32_t na, nb;
    FUZZ_CHECK(gpusched_sched_decisions_starts(x, &ia, &na) == 0 && gpusched_sched_decisions_starts(y, &ib, &nb) == 0,
               "starts");
    FUZZ_CHECK(na == nb && (!na || !memcmp(ia, ib, na * sizeof *ia)), "starts differ");
    for (uint32_t i = 0; i < na; i++) {
        const uint32_t *xa, *xb;
        const uint64_t *ma, *mb;
        uint32_t sa, sb, ka, kb;
        FUZZ_CHECK(gpusched_sched_decisions_start(x, i, NULL, &sa, &xa, &ma, &ka) == 0 &&
                       gpusched_sched_decisions_start(y, i, NULL, &sb, &xb, &mb, &kb) == 0,
                   "start");
        FUZZ_CHECK(sa == sb && ka == kb && !memcmp(xa, xb, ka * sizeof *xa) && !memcmp(ma, mb, ka * sizeof *ma),
                   "start %u differs", i);
    }
    FUZZ_CHECK(gpusched_sched_decisions_evictions(x, &ia, &fa, &na) == 0 &&
                   gpusched_sched_decisions_evictions(y, &ib, &fb, &nb) == 0,
               "evictions");
    FUZZ_CHECK(na == nb && (!na || (!memcmp(ia, ib, na * sizeof *ia) && !memcmp(fa, fb, na * sizeof *fa))),
               "evictions differ");
    uint32_t nr = gpusched_sched_decisions_reservation_count(x);
    FUZZ_CHECK(nr == gpusched_sched_decisions_reservation_count(y), "reservation count");
    for (uint32_t i = 0; i < nr; i++) {
        uint64_t ja, jb;
        int64_t ta, tb;
        uint32_t la, lb, da, db, ka, kb;
        const uint32_t *xa, *xb;
        FUZZ_CHECK(gpusched_sched_decisions_reservation(x, i, &ja, &ta, &la, &da, &xa, &ka) == 0 &&
                       gpusched_sched_decisions_reservation(y, i, &jb, &tb, &lb, &db, &xb, &kb) == 0,
                   "reservation");
        FUZZ_CHECK(ja == jb && ta == tb && la == lb && da == db && ka == kb && !memcmp(xa, xb, ka * sizeof *xa),
                   "reservation %u differs", i);
    }
    uint32_t nw = gpusched_sched_decisions_wait_count(x);
    FUZZ_CHECK(nw == gpusched_sched_decisions_wait_count(y), "wait count");
    for (uint32_t i = 0; i < nw; i++) {
        gpusched_sched_wait p = GPUSCHED_SCHED_WAIT_INIT, q = GPUSCHED_SCHED_WAIT_INIT;
        FUZZ_CHECK(gpusched_sched_decisions_wait(x, i, &p) == 0 && gpusched_sched_decisions_wait(y, i, &q) == 0,
                   "wait");
        FUZZ_CHECK(p.reason == q.reason && p.job_id == q.job_id && p.seq == q.seq && p.queue == q.queue &&
                       p.resource == q.resource && p.place_reason == q.place_reason && p.used == q.used &&
                       p.requested == q.requested && p.limit == q.limit && p.free_gpus == q.free_gpus &&
                       p.taken_gpus == q.taken_gpus && p.blocking_job == q.blocking_job && p.time == q.time &&
                       p.share == q.share,
                   "wait %u (job %llu) differs: reason %u / %u", i, (unsigned long long)p.job_id, p.reason, q.reason);
        char text[1024];
        snprintf(text, sizeof text, "%s", gpusched_sched_decisions_wait_message(x, i));
        FUZZ_CHECK(!strcmp(text, gpusched_sched_decisions_wait_message(y, i)), "wait %u's text differs", i);
    }
}

/* One operation on both sides: the return code (the same in both). */
static int step(world *w, fuzz_rd *r)
{
    side *s[2] = {&w->a, &w->b};
    int rc[2];
    uint64_t res[3];
    switch (fuzz_take(r, 10)) {
    case 0: case 1: case 2: {
        gpusched_place_request q;
        request(r, &q, res);
        gpusched_sched_job j = GPUSCHED_SCHED_JOB_INIT;
        j.id = fuzz_take(r, 8) ? w->next_id++ : fuzz_take(r, 8);
        j.queue = fuzz_take(r, w->nq + 1);
        j.priority = (int32_t)fuzz_take(r, 4) - 1;
        j.submit_time = w->now - (int64_t)fuzz_take(r, 20);
        j.duration_limit = fuzz_take(r, 6) ? 1 + fuzz_take(r, 200) : 0;
        j.duration_predicted = fuzz_take(r, 4) ? 0 : fuzz_take(r, 300);
        j.flags = fuzz_take(r, 2) ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
        j.request = &q;
        for (int i = 0; i < 2; i++)
            rc[i] = gpusched_sched_submit(s[i]->s, &j);
        break;
    }
    case 3: {
        uint64_t id = fuzz_take(r, (uint32_t)w->next_id + 2);
        for (int i = 0; i < 2; i++)
            rc[i] = gpusched_sched_cancel(s[i]->s, id);
        break;
    }
    case 4: case 5: {
        uint64_t id = fuzz_take(r, (uint32_t)w->next_id + 2);
        int64_t at = w->now + (int64_t)fuzz_take(r, 4) - 1;
        for (int i = 0; i < 2; i++)
            rc[i] = gpusched_sched_job_end(s[i]->s, id, at);
        if (!rc[0] && at > w->now)
            w->now = at;
        break;
    }
    case 6: {
        uint32_t node = fuzz_take(r, w->nnodes + 1), health = fuzz_take(r, 5);
        for (int i = 0; i < 2; i++)
            rc[i] = gpusched_sched_node_health_set(s[i]->s, node, health, w->now);
        break;
    }
    case 7: {
        uint32_t q = fuzz_take(r, w->nq + 1), res_ = fuzz_take(r, 3);
        uint64_t nominal = fuzz_take(r, 40), borrow = fuzz_take(r, 4) ? GPUSCHED_SCHED_UNLIMITED : fuzz_take(r, 30);
        uint64_t lend = fuzz_take(r, 4) ? GPUSCHED_SCHED_UNLIMITED : fuzz_take(r, 30);
        if (fuzz_take(r, 16) == 0)
            nominal = UINT64_MAX - fuzz_take(r, 4); /* overflowing sums are refused */
        for (int i = 0; i < 2; i++)
            rc[i] = gpusched_sched_queue_quota_set(s[i]->s, q, res_, nominal, borrow, lend);
        break;
    }
    case 8: {
        uint32_t param = fuzz_take(r, 13); /* 0 and 12 are not parameters */
        int64_t v = (int64_t)fuzz_take(r, 70) - 2;
        for (int i = 0; i < 2; i++)
            rc[i] = gpusched_sched_param_set(s[i]->s, param, v);
        break;
    }
    default: {
        int64_t at = fuzz_take(r, 16) ? w->now + fuzz_take(r, 30) : w->now - 1 - fuzz_take(r, 3);
        for (int i = 0; i < 2; i++)
            rc[i] = gpusched_sched_cycle(s[i]->s, at, s[i]->d);
        for (int i = 0; i < 2; i++)
            FUZZ_CHECK(rc[i] != GPUSCHED_ECORRUPT, "cycle: %s", gpusched_sched_errmsg(s[i]->s));
        if (!rc[0]) {
            w->now = at;
            same_decisions(w);
        }
        break;
    }
    }
    FUZZ_CHECK(rc[0] == rc[1], "the two schedulers answered %s and %s", gpusched_err_name(rc[0]),
               gpusched_err_name(rc[1]));
    return rc[0];
}

static void same_counts(world *w)
{
    uint32_t pa, ra, pb, rb;
    FUZZ_CHECK(gpusched_sched_counts(w->a.s, &pa, &ra) == 0 && gpusched_sched_counts(w->b.s, &pb, &rb) == 0,
               "counts");
    FUZZ_CHECK(pa == pb && ra == rb, "counts differ: %u/%u pending, %u/%u running", pa, pb, ra, rb);
    for (uint64_t id = 0; id < w->next_id + 1; id++) {
        uint32_t sa = 0, sb = 0;
        gpusched_sched_wait x = GPUSCHED_SCHED_WAIT_INIT, y = GPUSCHED_SCHED_WAIT_INIT;
        int ka = gpusched_sched_job_state(w->a.s, id, &sa, &x), kb = gpusched_sched_job_state(w->b.s, id, &sb, &y);
        FUZZ_CHECK(ka == kb && sa == sb && x.reason == y.reason && x.seq == y.seq && x.free_gpus == y.free_gpus &&
                       x.used == y.used && x.limit == y.limit,
                   "job %llu's state differs", (unsigned long long)id);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_rd r = {data, size};
    /* Two small shapes of 2 levels with cpu and memory; one class. */
    static const char *const text[] = {
        "levels zone rack\nresources cpu memory\nnode z0/r[0-2] n[0-] count=2 gpus=4 cpu=8000 memory=32768\n",
        "levels zone rack\nresources cpu memory\nnode z[0-1]/r[0-1] n[0-] count=2 gpus=4 cpu=4000 memory=65536\n"};
    world w = {.next_id = 1};
    const uint32_t shape = fuzz_take(&r, 2);
    /* Both check every reservation they keep across cycles against a new
     * search (a cycle then fails with GPUSCHED_ECORRUPT). */
    setenv("GPUSCHED_SCHED_KEEP_CHECK", "1", 1);
    side_new(&w.a, text[shape]);
    setenv("GPUSCHED_SCHED_QUICK", "0", 1);
    side_new(&w.b, text[shape]);
    unsetenv("GPUSCHED_SCHED_QUICK");
    unsetenv("GPUSCHED_SCHED_KEEP_CHECK");
    w.nnodes = gpusched_topo_node_count(w.a.t);
    /* The queue tree: each new queue under one before it. */
    w.nq = 1;
    for (uint32_t k = fuzz_take(&r, 6); k > 0; k--) {
        char name[16];
        snprintf(name, sizeof name, "q%u", w.nq);
        gpusched_sched_queue q = GPUSCHED_SCHED_QUEUE_INIT;
        q.name = name;
        q.parent = fuzz_take(&r, w.nq + 1);
        q.weight = fuzz_take(&r, 4);
        q.priority = (int32_t)fuzz_take(&r, 3);
        uint32_t ia = 0, ib = 0;
        int ra = gpusched_sched_queue_add(w.a.s, &q, &ia), rb = gpusched_sched_queue_add(w.b.s, &q, &ib);
        FUZZ_CHECK(ra == rb && ia == ib, "queue_add differs");
        w.nq += ra == 0;
    }
    for (int steps = 0; r.n && steps < 96; steps++) {
        uint32_t p0, r0;
        FUZZ_CHECK(gpusched_sched_counts(w.a.s, &p0, &r0) == 0, "counts");
        int rc = step(&w, &r);
        FUZZ_CHECK(gpusched_sched_check(w.a.s) == 0, "check (quick): %s", gpusched_sched_errmsg(w.a.s));
        FUZZ_CHECK(gpusched_sched_check(w.b.s) == 0, "check (full): %s", gpusched_sched_errmsg(w.b.s));
        FUZZ_CHECK(gpusched_cluster_check(w.a.c) == 0, "cluster check: %s", gpusched_cluster_errmsg(w.a.c));
        if (rc) {
            uint32_t p1, r1;
            FUZZ_CHECK(gpusched_sched_counts(w.a.s, &p1, &r1) == 0 && p1 == p0 && r1 == r0,
                       "a failed call (%s) changed the counts", gpusched_err_name(rc));
        }
        same_counts(&w);
    }
    side_free(&w.a);
    side_free(&w.b);
    return 0;
}
