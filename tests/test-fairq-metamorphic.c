/* Metamorphic checks of the fair-share queue: two queues take the same
 * random workload (tenants, weights, policies, enqueues, cancels, polls
 * with masks, completions, at coarse times so that many scores tie), one
 * of them through a transformation that must not change the decisions:
 *
 * - renamed: every task id offset by 2^40 + 5 (ids never enter a score or
 *   a tie: ties go to the task enqueued first);
 * - tenants: tenant indices permuted (the fair term takes the minimum and
 *   maximum over tenants, the backlog term the largest backlog; ties are
 *   by enqueue order, never by tenant index);
 * - cancels: runs of cancels at one time given in reverse order;
 * - no-ops: before every poll, a peek, a poll for a type no task has
 *   (which fails and changes nothing), and a task of an already
 *   backlogged tenant enqueued and cancelled at that time (holes, so
 *   compaction runs at other times);
 * - batches: runs of enqueues given to enqueue_batch, runs of polls to
 *   poll_batch ("as k calls of poll"), compared on the ids handed out;
 * - full rescore: PARAM_SCAN = 1 against the fast path (the same task and
 *   scores bit for bit, doc/fairq.md);
 * - scalar kernels: the queue created with GPUSCHED_SIMD=scalar against
 *   the default path (tests/test-fairq-kernels.c compares the kernels on
 *   single queues; this follows them through whole workloads, with
 *   completions, decay and the lag cap).
 *
 * One workload in three is big (bursts of enqueues: queues of thousands of
 * tasks). 150 workloads per relation by default, about 34,000 polls each;
 * GPUSCHED_TEST_SEEDS sets another count.
 *
 * Every poll is compared on its result and its decision record bit for
 * bit, and after every step each tenant's backlog, running count, virtual
 * time and service. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "fairq-test.h"
#include "test-rng.h"

#define MM_OFFSET (((uint64_t)1 << 40) + 5)
#define MM_MAX_EV 12000
#define MM_NOOP_TYPE 63

enum { MM_BASE, MM_RENAMED, MM_TENANTS, MM_CANCELS, MM_NOOP, MM_BATCH, MM_SCAN, MM_SCALAR };
enum { EV_ENQ, EV_CANCEL, EV_POLL, EV_COMPLETE, EV_STEP };

typedef struct mm_ev {
    int kind;
    double t;
    uint64_t id;       /* enqueue, cancel: logical id; complete: index in running list */
    uint32_t tenant, type;
    double size, predicted, actual;
    uint64_t mask;
} mm_ev;

typedef struct mm_work {
    uint32_t nt, ntypes;
    double param[13];
    int param_set[13];
    int policy;
    double weight[8];
    mm_ev ev[MM_MAX_EV];
    uint32_t n;
} mm_work;

/* One entry of a trace: what a call returned, in logical names. */
typedef struct mm_rec {
    int kind;          /* EV_POLL or EV_STEP */
    int rc;
    uint64_t id;
    gpusched_fairq_decision d;
    double tv[8][4];
    uint64_t queued, running;
} mm_rec;

typedef struct mm_trace {
    mm_rec *r;
    uint32_t n, cap;
} mm_trace;

static void mm_generate(mm_work *w)
{
    memset(w, 0, sizeof *w);
    w->nt = 1 + rndu(8);
    w->ntypes = 1 + rndu(5);
    w->policy = 1 + (int)rndu(3);
    for (uint32_t t = 0; t < w->nt; t++) {
        static const double ws[] = {1, 1, 0.5, 2, 3};
        w->weight[t] = ws[rndu(5)];
    }
    if (rndu(4) == 0) { /* custom weights, perhaps with the prediction term */
        static const double v[] = {0, 0.1, 0.9, 1, 2};
        w->param_set[GPUSCHED_FAIRQ_PARAM_W_BACKLOG] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_W_BACKLOG] = v[rndu(5)];
        w->param_set[GPUSCHED_FAIRQ_PARAM_W_WAIT] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_W_WAIT] = v[rndu(5)];
        w->param_set[GPUSCHED_FAIRQ_PARAM_W_VTIME] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_W_VTIME] = v[rndu(5)];
        w->param_set[GPUSCHED_FAIRQ_PARAM_W_PRED] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_W_PRED] = v[rndu(5)];
    }
    if (rndu(3) == 0) {
        w->param_set[GPUSCHED_FAIRQ_PARAM_HALF_LIFE] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_HALF_LIFE] = 5 + rndu(100);
    }
    if (rndu(3) == 0) {
        w->param_set[GPUSCHED_FAIRQ_PARAM_SCAN] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_SCAN] = 1;
    }
    if (rndu(5) == 0) {
        w->param_set[GPUSCHED_FAIRQ_PARAM_EXPLORE] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_EXPLORE] = 0.05 * (1 + rndu(4));
        w->param_set[GPUSCHED_FAIRQ_PARAM_SEED] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_SEED] = rndu(1000);
    }
    if (rndu(4) == 0) {
        w->param_set[GPUSCHED_FAIRQ_PARAM_LAG_CAP] = 1;
        w->param[GPUSCHED_FAIRQ_PARAM_LAG_CAP] = 1 + rndu(8);
    }
    double t = 0;
    uint64_t next_id = 1;
    /* One workload in three is big: bursts of enqueues build a queue of
     * thousands of tasks (blocks of the vector kernels, compaction). */
    int big = rndu(3) == 0;
    uint32_t steps = big ? 200 + rndu(200) : 40 + rndu(120);
    for (uint32_t s = 0; s < steps && w->n + 300 < MM_MAX_EV; s++) {
        t += rndu(3) == 0 ? 0 : (double)rndu(4) * (rndu(2) ? 1 : 0.25);
        uint32_t k = 1 + rndu(12), burst = big && rndu(8) == 0 ? 50 + rndu(250) : 0;
        for (uint32_t i = 0; i < k + burst; i++) {
            mm_ev *e = &w->ev[w->n++];
            e->t = t;
            uint32_t r = i < burst ? 0 : rndu(10);
            if (r < 4) {
                e->kind = EV_ENQ;
                e->id = next_id++;
                e->tenant = rndu(w->nt);
                e->type = rndu(w->ntypes);
                e->size = rndu(3) ? (double)rndu(5000) : 0;
                e->predicted = rndu(4) == 0 ? 0.5 * (1 + rndu(6)) : 0;
            } else if (r < 6) {
                e->kind = EV_CANCEL;
                e->id = next_id > 1 ? 1 + rnd() % (next_id - 1) : 1;
            } else if (r < 8) {
                e->kind = EV_POLL;
                e->mask = rndu(3) ? GPUSCHED_FAIRQ_ALL_TYPES : (rnd() & ((1ull << w->ntypes) - 1));
            } else {
                e->kind = EV_COMPLETE;
                e->id = rndu(8);
                e->actual = 0.1 * (1 + rndu(50));
            }
        }
        mm_ev *e = &w->ev[w->n++];
        e->kind = EV_STEP;
        e->t = t;
    }
}

typedef struct mm_side {
    gpusched_fairq *q;
    int kind;
    uint64_t off;
    uint32_t perm[8], inv[8];
    uint64_t running[MM_MAX_EV]; /* logical ids polled and not completed, in poll order */
    uint32_t nrun;
    uint64_t noop_id;
    mm_trace tr;
} mm_side;

static mm_rec *mm_push(mm_side *s)
{
    if (s->tr.n == s->tr.cap) {
        s->tr.cap = s->tr.cap ? 2 * s->tr.cap : 1024;
        s->tr.r = realloc(s->tr.r, s->tr.cap * sizeof *s->tr.r);
        cr_assert_not_null(s->tr.r);
    }
    mm_rec *r = &s->tr.r[s->tr.n++];
    memset(r, 0, sizeof *r);
    return r;
}

static void mm_polled(mm_side *s, int rc, uint64_t id, const gpusched_fairq_decision *d)
{
    mm_rec *r = mm_push(s);
    r->kind = EV_POLL;
    r->rc = rc;
    if (rc == 0) {
        r->id = id - s->off;
        s->running[s->nrun++] = r->id;
        if (d) {
            r->d = *d;
            r->d.task_id -= s->off;
            r->d.tenant = s->inv[d->tenant];
        }
    }
}

static void mm_side_init(mm_side *s, const mm_work *w, int kind)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->off = kind == MM_RENAMED ? MM_OFFSET : 0;
    s->noop_id = (uint64_t)1 << 50;
    for (uint32_t t = 0; t < 8; t++)
        s->perm[t] = t;
    if (kind == MM_TENANTS)
        for (uint32_t t = w->nt; t > 1; t--) {
            uint32_t j = rndu(t), x = s->perm[t - 1];
            s->perm[t - 1] = s->perm[j];
            s->perm[j] = x;
        }
    for (uint32_t t = 0; t < 8; t++)
        s->inv[s->perm[t]] = t;
    if (kind == MM_SCALAR)
        setenv("GPUSCHED_SIMD", "scalar", 1);
    cr_assert_eq(gpusched_fairq_new(w->nt, NULL, &s->q), 0);
    unsetenv("GPUSCHED_SIMD");
    cr_assert_eq(gpusched_fairq_policy_set(s->q, (uint32_t)w->policy), 0);
    for (uint32_t p = 0; p < 13; p++)
        if (w->param_set[p])
            cr_assert_eq(gpusched_fairq_param_set(s->q, p, w->param[p]), 0, "param %u", p);
    if (kind == MM_SCAN)
        cr_assert_eq(gpusched_fairq_param_set(s->q, GPUSCHED_FAIRQ_PARAM_SCAN, 1), 0);
    for (uint32_t t = 0; t < w->nt; t++)
        cr_assert_eq(gpusched_fairq_tenant_weight_set(s->q, s->perm[t], w->weight[t]), 0);
}

static void mm_noop(mm_side *s, const mm_work *w, double now)
{
    uint64_t id;
    gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
    int rc = gpusched_fairq_peek(s->q, now, GPUSCHED_FAIRQ_ALL_TYPES, &id, &d);
    cr_assert(rc == 0 || rc == GPUSCHED_EEMPTY);
    cr_assert_eq(gpusched_fairq_poll(s->q, now, 1ull << MM_NOOP_TYPE, &id, &d), GPUSCHED_EEMPTY);
    for (uint32_t t = 0; t < w->nt; t++) {
        double bl;
        cr_assert_eq(gpusched_fairq_tenant_get(s->q, t, GPUSCHED_FAIRQ_TENANT_BACKLOG, &bl), 0);
        if (bl > 0) {
            cr_assert_eq(fq_enqueue(s->q, s->noop_id, t, rndu(w->ntypes), now, 0), 0);
            cr_assert_eq(gpusched_fairq_cancel(s->q, s->noop_id), 0);
            s->noop_id++;
            break;
        }
    }
}

static void mm_step_end(mm_side *s, const mm_work *w)
{
    static const uint32_t what[4] = {GPUSCHED_FAIRQ_TENANT_BACKLOG, GPUSCHED_FAIRQ_TENANT_RUNNING,
                                     GPUSCHED_FAIRQ_TENANT_VTIME, GPUSCHED_FAIRQ_TENANT_SERVICE};
    mm_rec *r = mm_push(s);
    r->kind = EV_STEP;
    for (uint32_t t = 0; t < w->nt; t++)
        for (uint32_t k = 0; k < 4; k++)
            cr_assert_eq(gpusched_fairq_tenant_get(s->q, s->perm[t], what[k], &r->tv[t][k]), 0);
    cr_assert_eq(gpusched_fairq_count(s->q, &r->queued, &r->running), 0);
}

/* Runs events [i, end) of one kind as one batch call (MM_BATCH). */
static uint32_t mm_batch(mm_side *s, const mm_work *w, uint32_t i)
{
    const mm_ev *e = &w->ev[i];
    uint32_t j = i;
    while (j < w->n && w->ev[j].kind == e->kind && w->ev[j].t == e->t &&
           (e->kind != EV_ENQ || w->ev[j].predicted == 0))
        j++;
    uint32_t k = j - i;
    if (e->kind == EV_ENQ) {
        uint64_t ids[16];
        uint32_t ten[16];
        uint8_t ty[16];
        double tm[16], sz[16];
        if (k > 16)
            k = 16;
        for (uint32_t m = 0; m < k; m++) {
            ids[m] = w->ev[i + m].id + s->off;
            ten[m] = s->perm[w->ev[i + m].tenant];
            ty[m] = (uint8_t)w->ev[i + m].type;
            tm[m] = w->ev[i + m].t;
            sz[m] = w->ev[i + m].size;
        }
        cr_assert_eq(gpusched_fairq_enqueue_batch(s->q, k, ids, ten, ty, tm, sz), 0);
        return k;
    }
    uint64_t masks[16], ids[16];
    uint8_t got[16];
    uint32_t n_got;
    if (k > 16)
        k = 16;
    for (uint32_t m = 0; m < k; m++)
        masks[m] = w->ev[i + m].mask;
    cr_assert_eq(gpusched_fairq_poll_batch(s->q, e->t, k, masks, ids, got, &n_got), 0);
    for (uint32_t m = 0; m < k; m++)
        mm_polled(s, got[m] ? 0 : GPUSCHED_EEMPTY, ids[m], NULL);
    return k;
}

static void mm_run(mm_side *s, const mm_work *w)
{
    for (uint32_t i = 0; i < w->n;) {
        const mm_ev *e = &w->ev[i];
        if (s->kind == MM_BATCH && (e->kind == EV_POLL || (e->kind == EV_ENQ && e->predicted == 0))) {
            i += mm_batch(s, w, i);
            continue;
        }
        if (s->kind == MM_CANCELS && e->kind == EV_CANCEL) {
            uint32_t j = i;
            while (j < w->n && w->ev[j].kind == EV_CANCEL && w->ev[j].t == e->t)
                j++;
            for (uint32_t m = j; m-- > i;) {
                int rc = gpusched_fairq_cancel(s->q, w->ev[m].id + s->off);
                cr_assert(rc == 0 || rc == GPUSCHED_ENOENT);
            }
            i = j;
            continue;
        }
        switch (e->kind) {
        case EV_ENQ: {
            gpusched_fairq_task task = GPUSCHED_FAIRQ_TASK_INIT;
            task.id = e->id + s->off;
            task.tenant = s->perm[e->tenant];
            task.type = e->type;
            task.enqueue_time = e->t;
            task.work_size = e->size;
            task.predicted = e->predicted;
            cr_assert_eq(gpusched_fairq_enqueue(s->q, &task), 0);
            break;
        }
        case EV_CANCEL: {
            int rc = gpusched_fairq_cancel(s->q, e->id + s->off);
            cr_assert(rc == 0 || rc == GPUSCHED_ENOENT);
            break;
        }
        case EV_POLL: {
            uint64_t id = 0;
            gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
            if (s->kind == MM_NOOP)
                mm_noop(s, w, e->t);
            int rc = gpusched_fairq_poll(s->q, e->t, e->mask, &id, &d);
            cr_assert(rc == 0 || rc == GPUSCHED_EEMPTY, "poll: %d", rc);
            mm_polled(s, rc, id, &d);
            break;
        }
        case EV_COMPLETE:
            if (s->nrun) {
                uint32_t j = (uint32_t)(e->id % s->nrun);
                cr_assert_eq(gpusched_fairq_complete(s->q, s->running[j] + s->off, e->actual), 0);
                s->running[j] = s->running[--s->nrun];
            }
            break;
        case EV_STEP:
            mm_step_end(s, w);
            break;
        }
        i++;
    }
}

/* Where the two traces first differ, or -1. */
static long mm_compare(const mm_side *a, const mm_side *b, int details, char *why, size_t len)
{
    uint32_t n = a->tr.n < b->tr.n ? a->tr.n : b->tr.n;
    for (uint32_t i = 0; i < n; i++) {
        const mm_rec *x = &a->tr.r[i], *y = &b->tr.r[i];
        if (x->kind != y->kind) {
            snprintf(why, len, "record kinds %d and %d", x->kind, y->kind);
            return i;
        }
        if (x->kind == EV_POLL) {
            if (x->rc != y->rc || x->id != y->id) {
                snprintf(why, len, "poll: rc %d id %llu against rc %d id %llu", x->rc,
                         (unsigned long long)x->id, y->rc, (unsigned long long)y->id);
                return i;
            }
            if (details && x->rc == 0 && memcmp(&x->d, &y->d, sizeof x->d) != 0) {
                snprintf(why, len, "decision of task %llu: score %.17g/%.17g vtime %.17g/%.17g "
                         "backlog %.17g/%.17g wait %.17g/%.17g cand %llu/%llu prob %.17g/%.17g",
                         (unsigned long long)x->id, x->d.score, y->d.score, x->d.term_vtime,
                         y->d.term_vtime, x->d.term_backlog, y->d.term_backlog, x->d.term_wait,
                         y->d.term_wait, (unsigned long long)x->d.candidates,
                         (unsigned long long)y->d.candidates, x->d.probability, y->d.probability);
                return i;
            }
        } else {
            if (x->queued != y->queued || x->running != y->running) {
                snprintf(why, len, "counts %llu/%llu against %llu/%llu",
                         (unsigned long long)x->queued, (unsigned long long)x->running,
                         (unsigned long long)y->queued, (unsigned long long)y->running);
                return i;
            }
            for (uint32_t t = 0; t < 8; t++)
                for (uint32_t k = 0; k < 4; k++)
                    if (memcmp(&x->tv[t][k], &y->tv[t][k], sizeof(double)) != 0) {
                        snprintf(why, len, "tenant %u value %u: %.17g against %.17g", t, k,
                                 x->tv[t][k], y->tv[t][k]);
                        return i;
                    }
        }
    }
    if (a->tr.n != b->tr.n) {
        snprintf(why, len, "trace lengths %u and %u", a->tr.n, b->tr.n);
        return n;
    }
    return -1;
}

static mm_work work;

static void clear_env(void) { unsetenv("GPUSCHED_SIMD"); }

TestSuite(fairq_metamorphic, .init = clear_env);

static uint32_t mm_check(int kind, uint32_t seeds)
{
    uint32_t polls = 0, got = 0, failed = 0;
    for (uint32_t seed = 1; seed <= seeds; seed++) {
        static mm_side a, b;
        rng_state = seed * 0x1234567ull;
        mm_generate(&work);
        mm_side_init(&a, &work, MM_BASE);
        mm_side_init(&b, &work, kind);
        mm_run(&a, &work);
        mm_run(&b, &work);
        char why[512];
        long at = mm_compare(&a, &b, kind != MM_BATCH, why, sizeof why);
        if (at >= 0) {
            cr_log_error("kind %d seed %u policy %d lagcap %g: record %ld: %s", kind, seed,
                         work.policy, work.param[GPUSCHED_FAIRQ_PARAM_LAG_CAP], at, why);
            failed++;
        }
        for (uint32_t i = 0; i < a.tr.n; i++)
            if (a.tr.r[i].kind == EV_POLL) {
                polls++;
                got += a.tr.r[i].rc == 0;
            }
        gpusched_fairq_free(a.q);
        gpusched_fairq_free(b.q);
        free(a.tr.r);
        free(b.tr.r);
    }
    cr_log_info("kind %d: %u workloads, %u polls, %u handed a task", kind, seeds, polls, got);
    cr_expect_eq(failed, 0, "%u of %u workloads differ", failed, seeds);
    return polls;
}

/* GPUSCHED_TEST_SEEDS runs more workloads. */
static uint32_t mm_seeds(void)
{
    const char *v = getenv("GPUSCHED_TEST_SEEDS");
    return v ? (uint32_t)strtoul(v, NULL, 10) : 150;
}
#define MM_SEEDS mm_seeds()

Test(fairq_metamorphic, renamed_ids) { mm_check(MM_RENAMED, MM_SEEDS); }
Test(fairq_metamorphic, permuted_tenants) { mm_check(MM_TENANTS, MM_SEEDS); }
Test(fairq_metamorphic, reversed_cancels) { mm_check(MM_CANCELS, MM_SEEDS); }
Test(fairq_metamorphic, noop_calls) { mm_check(MM_NOOP, MM_SEEDS); }
Test(fairq_metamorphic, batches) { mm_check(MM_BATCH, MM_SEEDS); }
Test(fairq_metamorphic, full_rescore) { mm_check(MM_SCAN, MM_SEEDS); }
Test(fairq_metamorphic, scalar_kernels) { mm_check(MM_SCALAR, MM_SEEDS); }
