/* The fair-share queue's API contract: the DES formula against a
 * hand-computed table, enqueue/cancel/poll/peek/batch, tie-breaking,
 * validation and atomicity of failing calls. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "fairq-test.h"

static void clear_env(void) { unsetenv("GPUSCHED_SIMD"); }

TestSuite(fairq, .init = clear_env);

static gpusched_fairq *mkq(uint32_t tenants)
{
    gpusched_fairq *q = NULL;
    cr_assert_eq(gpusched_fairq_new(tenants, NULL, &q), 0);
    return q;
}

static int enq(gpusched_fairq *q, uint64_t id, uint32_t tenant, uint32_t type, double t)
{
    return fq_enqueue(q, id, tenant, type, t, 0);
}

/* Tenant A (0) enqueues at 0, 2, 4; tenant B (1) at 1; polls at now = 10.
 * score = 0.1 * backlog/max_backlog + 0.9 * wait/max_wait, by hand:
 *   poll 1: A0 0.1*3/3 + 0.9*10/10 = 1.0; B1 0.1/3 + 0.9*9/10 = 0.8433
 *   poll 2: B1 0.1*1/2 + 0.9*9/9 = 0.95;  A2 0.1*2/2 + 0.9*8/9 = 0.9
 *   poll 3: A2 0.1*2/2 + 0.9*8/8 = 1.0;   A4 0.1 + 0.9*6/8 = 0.775
 *   poll 4: A4 1.0 */
Test(fairq, des_formula_hand_table)
{
    static const struct {
        uint64_t id;
        double score, backlog, wait;
    } want[] = {
        {100, 1.0, 1.0, 1.0},
        {101, 0.95, 0.5, 1.0},
        {102, 1.0, 1.0, 1.0},
        {104, 1.0, 1.0, 1.0},
    };
    gpusched_fairq *q = mkq(2);
    cr_assert_eq(enq(q, 100, 0, 0, 0), 0);
    cr_assert_eq(enq(q, 101, 1, 0, 1), 0);
    cr_assert_eq(enq(q, 102, 0, 0, 2), 0);
    cr_assert_eq(enq(q, 104, 0, 0, 4), 0);
    for (size_t i = 0; i < 4; i++) {
        uint64_t id = 0;
        gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
        cr_assert_eq(gpusched_fairq_poll(q, 10, GPUSCHED_FAIRQ_ALL_TYPES, &id, &d), 0);
        cr_assert_eq(id, want[i].id, "poll %zu: got %llu", i, (unsigned long long)id);
        cr_assert_eq(d.task_id, id);
        cr_assert_float_eq(d.score, want[i].score, 1e-12, "poll %zu score %.17g", i, d.score);
        cr_assert_float_eq(d.term_backlog, want[i].backlog, 1e-12);
        cr_assert_float_eq(d.term_wait, want[i].wait, 1e-12);
    }
    uint64_t id;
    cr_assert_eq(gpusched_fairq_poll(q, 10, ~0ull, &id, NULL), GPUSCHED_EEMPTY);
    gpusched_fairq_free(q);
}

/* The literal formula, computed the obvious way, over random queues: the
 * library's pick must have the maximal literal score (to rounding). */
Test(fairq, des_matches_literal_formula)
{
    srand(7);
    for (int round = 0; round < 200; round++) {
        uint32_t T = 1 + rand() % 6, n = 1 + rand() % 40;
        gpusched_fairq *q = mkq(T);
        uint32_t tenant[40];
        double t[40], now;
        double clock = rand() % 100;
        for (uint32_t i = 0; i < n; i++) {
            clock += (rand() % 1000) / 997.0;
            tenant[i] = rand() % T;
            t[i] = clock;
            cr_assert_eq(enq(q, i, tenant[i], 0, t[i]), 0);
        }
        now = clock + (rand() % 100) / 7.0;
        double backlog[8] = {0}, maxb = 0, maxw = 0, best = -1;
        for (uint32_t i = 0; i < n; i++)
            backlog[tenant[i]]++;
        for (uint32_t i = 0; i < n; i++) {
            maxb = fmax(maxb, backlog[tenant[i]]);
            maxw = fmax(maxw, now - t[i]);
        }
        for (uint32_t i = 0; i < n; i++) {
            double s = 0.1 * backlog[tenant[i]] / maxb + 0.9 * (maxw > 0 ? (now - t[i]) / maxw : 0);
            best = fmax(best, s);
        }
        uint64_t id;
        cr_assert_eq(gpusched_fairq_peek(q, now, ~0ull, &id, NULL), 0);
        double s = 0.1 * backlog[tenant[id]] / maxb + 0.9 * (maxw > 0 ? (now - t[id]) / maxw : 0);
        cr_assert(fabs(s - best) < 1e-12, "round %d: picked %.17g, best %.17g", round, s, best);
        gpusched_fairq_free(q);
    }
}

Test(fairq, ties_go_to_the_oldest)
{
    gpusched_fairq *q = mkq(3);
    /* Equal backlogs and all waits zero: every score is 0.1. */
    for (uint64_t i = 0; i < 6; i++)
        cr_assert_eq(enq(q, 50 - i, (uint32_t)(2 - i % 3), 0, 5.0), 0);
    /* Ids 50, 49, 48 go to tenants 2, 1, 0, then 47, 46, 45 again. Each
     * poll: the largest backlog wins, then the oldest task; by hand that
     * is exactly enqueue order here. */
    for (uint64_t i = 0; i < 6; i++) {
        uint64_t id;
        cr_assert_eq(gpusched_fairq_poll(q, 5.0, ~0ull, &id, NULL), 0);
        cr_assert_eq(id, 50 - i, "poll %llu chose %llu", (unsigned long long)i, (unsigned long long)id);
    }
    gpusched_fairq_free(q);
    q = mkq(2);
    cr_assert_eq(enq(q, 9, 1, 0, 1.0), 0);
    cr_assert_eq(enq(q, 8, 0, 0, 1.0), 0);
    uint64_t id;
    cr_assert_eq(gpusched_fairq_peek(q, 1.0, ~0ull, &id, NULL), 0);
    cr_assert_eq(id, 9, "equal scores: the first enqueued wins");
    gpusched_fairq_free(q);
}

Test(fairq, type_mask_and_empty)
{
    gpusched_fairq *q = mkq(2);
    cr_assert_eq(enq(q, 1, 0, 3, 0), 0);
    cr_assert_eq(enq(q, 2, 1, 5, 1), 0);
    uint64_t id = 77;
    cr_assert_eq(gpusched_fairq_poll(q, 2, 1ull << 4, &id, NULL), GPUSCHED_EEMPTY);
    cr_assert_eq(id, 77);
    cr_assert_str_neq(gpusched_fairq_errmsg(q), "");
    cr_assert_eq(gpusched_fairq_poll(q, 2, 1ull << 5, &id, NULL), 0);
    cr_assert_eq(id, 2);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "");
    cr_assert_eq(gpusched_fairq_poll(q, 2, 1ull << 5, &id, NULL), GPUSCHED_EEMPTY);
    cr_assert_eq(gpusched_fairq_poll(q, 2, ~0ull, &id, NULL), 0);
    cr_assert_eq(id, 1);
    uint64_t queued = 9, running = 9;
    cr_assert_eq(gpusched_fairq_count(q, &queued, &running), 0);
    cr_assert_eq(queued, 0);
    cr_assert_eq(running, 2);
    gpusched_fairq_free(q);
}

Test(fairq, cancel_and_reuse_of_ids)
{
    gpusched_fairq *q = mkq(2);
    cr_assert_eq(enq(q, 1, 0, 0, 0), 0);
    cr_assert_eq(enq(q, 2, 1, 0, 1), 0);
    cr_assert_eq(enq(q, 1, 1, 0, 2), GPUSCHED_EEXIST);
    cr_assert_eq(gpusched_fairq_cancel(q, 1), 0);
    cr_assert_eq(gpusched_fairq_cancel(q, 1), GPUSCHED_ENOENT);
    cr_assert_eq(enq(q, 1, 1, 0, 2), 0, "a cancelled id can be enqueued again");
    uint64_t id;
    cr_assert_eq(gpusched_fairq_poll(q, 3, ~0ull, &id, NULL), 0);
    cr_assert_eq(id, 2);
    cr_assert_eq(enq(q, 2, 0, 0, 3), GPUSCHED_EEXIST, "a running id cannot be enqueued");
    cr_assert_eq(gpusched_fairq_complete(q, 2, 0.5), 0);
    cr_assert_eq(gpusched_fairq_complete(q, 2, 0.5), GPUSCHED_ENOENT);
    cr_assert_eq(enq(q, 2, 0, 0, 3), 0, "a completed id can be enqueued again");
    gpusched_fairq_free(q);
}

Test(fairq, validation_changes_nothing)
{
    gpusched_fairq *q = mkq(2);
    cr_assert_eq(enq(q, 1, 0, 0, 5), 0);
    cr_assert_eq(enq(q, 2, 2, 0, 6), GPUSCHED_ERANGE, "tenant out of range");
    cr_assert(strstr(gpusched_fairq_errmsg(q), "tenant") != NULL);
    cr_assert_eq(enq(q, 2, 0, 64, 6), GPUSCHED_ERANGE, "type out of range");
    cr_assert_eq(enq(q, 2, 0, 0, 4), GPUSCHED_ERANGE, "time went backwards");
    cr_assert_eq(enq(q, 2, 0, 0, NAN), GPUSCHED_ERANGE);
    gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
    t.id = 3, t.enqueue_time = 6, t.work_size = -1;
    cr_assert_eq(gpusched_fairq_enqueue(q, &t), GPUSCHED_ERANGE);
    t.work_size = 0;
    t.size = 4;
    cr_assert_eq(gpusched_fairq_enqueue(q, &t), GPUSCHED_EINVAL, "size below the required fields");
    struct { gpusched_fairq_task t; uint64_t extra; } big = {GPUSCHED_FAIRQ_TASK_INIT, 1};
    big.t.size = sizeof big;
    big.t.id = 4, big.t.enqueue_time = 6;
    cr_assert_eq(gpusched_fairq_enqueue(q, &big.t), GPUSCHED_E2BIG);
    big.extra = 0;
    cr_assert_eq(gpusched_fairq_enqueue(q, &big.t), 0, "zero trailing bytes are fine");
    uint64_t n;
    cr_assert_eq(gpusched_fairq_count(q, &n, NULL), 0);
    cr_assert_eq(n, 2);
    uint64_t id;
    cr_assert_eq(gpusched_fairq_poll(q, 5.5, ~0ull, &id, NULL), GPUSCHED_ERANGE, "now before an enqueue");
    cr_assert_eq(gpusched_fairq_poll(q, 7, ~0ull, &id, NULL), 0);
    cr_assert_eq(gpusched_fairq_poll(q, 6.5, ~0ull, &id, NULL), GPUSCHED_ERANGE, "now went backwards");
    cr_assert_eq(gpusched_fairq_new(0, NULL, &q), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_fairq_new(1, NULL, NULL), GPUSCHED_EINVAL);
    gpusched_fairq_free(q);
    gpusched_fairq_free(NULL);
}

Test(fairq, bulk_is_all_or_nothing)
{
    gpusched_fairq *q = mkq(3);
    uint64_t ids[4] = {1, 2, 3, 2};
    uint32_t ten[4] = {0, 1, 2, 0};
    uint8_t ty[4] = {0, 1, 2, 3};
    double tm[4] = {0, 1, 2, 3};
    cr_assert_eq(gpusched_fairq_enqueue_batch(q, 4, ids, ten, ty, tm, NULL), GPUSCHED_EEXIST);
    uint64_t n;
    gpusched_fairq_count(q, &n, NULL);
    cr_assert_eq(n, 0);
    ids[3] = 4;
    tm[2] = 5;
    cr_assert_eq(gpusched_fairq_enqueue_batch(q, 4, ids, ten, ty, tm, NULL), GPUSCHED_ERANGE);
    cr_assert(strstr(gpusched_fairq_errmsg(q), "task 3") != NULL, "%s", gpusched_fairq_errmsg(q));
    tm[2] = 2;
    cr_assert_eq(gpusched_fairq_enqueue_batch(q, 4, ids, ten, ty, tm, NULL), 0);
    gpusched_fairq_count(q, &n, NULL);
    cr_assert_eq(n, 4);
    /* Batch poll: worker masks pick by type. */
    uint64_t masks[3] = {1ull << 2, 1ull << 9, ~0ull}, out[3] = {0};
    uint8_t got[3];
    uint32_t ng;
    cr_assert_eq(gpusched_fairq_poll_batch(q, 10, 3, masks, out, got, &ng), 0);
    cr_assert_eq(ng, 2);
    cr_assert_eq(got[0], 1);
    cr_assert_eq(out[0], 3);
    cr_assert_eq(got[1], 0);
    cr_assert_eq(got[2], 1);
    cr_assert_eq(out[2], 1, "oldest of the rest (tenant 0 has the largest backlog)");
    gpusched_fairq_free(q);
}

Test(fairq, params_and_bounds)
{
    gpusched_fairq *q = mkq(1);
    double v, lo, hi;
    cr_assert_eq(gpusched_fairq_param_get(q, GPUSCHED_FAIRQ_PARAM_W_WAIT, &v), 0);
    cr_assert_eq(v, 0.9);
    cr_assert_eq(gpusched_fairq_param_bounds(GPUSCHED_FAIRQ_PARAM_W_WAIT, &lo, &hi), 0);
    cr_assert_eq(lo, 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_WAIT, -1), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_WAIT, NAN), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_SCAN, 0.5), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_fairq_param_set(q, 999, 1), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_fairq_param_bounds(999, &lo, &hi), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_fairq_param_get(q, GPUSCHED_FAIRQ_PARAM_W_WAIT, &v), 0);
    cr_assert_eq(v, 0.9, "failed sets changed nothing");
    cr_assert_eq(gpusched_fairq_policy_set(q, GPUSCHED_FAIRQ_POLICY_STATEFUL), 0);
    cr_assert_eq(gpusched_fairq_param_get(q, GPUSCHED_FAIRQ_PARAM_W_VTIME, &v), 0);
    cr_assert_eq(v, 1.0);
    cr_assert_eq(gpusched_fairq_policy_set(q, 42), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_fairq_tenant_weight_set(q, 0, 0), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_fairq_tenant_weight_set(q, 1, 1), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_fairq_tenant_weight_set(q, 0, 2), 0);
    cr_assert_eq(gpusched_fairq_tenant_get(q, 0, GPUSCHED_FAIRQ_TENANT_WEIGHT, &v), 0);
    cr_assert_eq(v, 2);
    cr_assert_eq(gpusched_fairq_tenant_get(q, 0, 99, &v), GPUSCHED_EINVAL);
    uint32_t simd = 99;
    cr_assert_eq(gpusched_fairq_simd(q, &simd), 0);
    cr_assert(simd < (GPUSCHED_SIMD_NEON + 1));
    gpusched_fairq_free(q);
}

/* Many enqueues, cancels and polls through compaction: the queue keeps
 * answering like a trivially correct list. */
Test(fairq, compaction_keeps_order)
{
    gpusched_fairq *q = mkq(4);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_BACKLOG, 0), 0);
    enum { ROUNDS = 20000 };
    static bool gone[2 * ROUNDS];
    uint64_t next_id = 0, expect = 0;
    double t = 0;
    /* Pure wait policy: strict FIFO by enqueue time. Cancel some. */
    for (int round = 0; round < ROUNDS; round++) {
        cr_assert_eq(enq(q, next_id++, round % 4, 0, t += 1), 0);
        cr_assert_eq(enq(q, next_id++, (round + 1) % 4, 0, t += 1), 0);
        if (round % 3 == 0) {
            cr_assert_eq(gpusched_fairq_cancel(q, next_id - 1), 0);
            gone[next_id - 1] = true;
        }
        uint64_t id;
        cr_assert_eq(gpusched_fairq_poll(q, t, ~0ull, &id, NULL), 0);
        while (gone[expect])
            expect++;
        cr_assert_eq(id, expect, "round %d: %llu, expected %llu", round, (unsigned long long)id,
                     (unsigned long long)expect);
        gone[expect] = true;
        cr_assert_eq(gpusched_fairq_complete(q, id, 0.1), 0);
    }
    gpusched_fairq_free(q);
}

/* A long random run of enqueues, cancels and polls against a list-based
 * model of the literal DES formula: every poll's pick has the top literal
 * score and its reported terms match the model. */
Test(fairq, random_run_matches_model)
{
    enum { CAP = 4000 };
    static struct { uint64_t id; uint32_t tenant; double t; bool live; } m[CAP];
    uint32_t n = 0;
    srand(11);
    gpusched_fairq *q = mkq(7);
    double clock = 0;
    for (int step = 0; step < 12000 && n < CAP; step++) {
        int op = rand() % 10;
        if (op < 5) {
            clock += (rand() % 3) * 0.37;
            m[n].id = 1000 + n, m[n].tenant = (uint32_t)(rand() % 7), m[n].t = clock, m[n].live = true;
            cr_assert_eq(enq(q, m[n].id, m[n].tenant, 0, clock), 0);
            n++;
        } else if (op < 6 && n) {
            uint32_t i = (uint32_t)rand() % n;
            cr_assert_eq(gpusched_fairq_cancel(q, m[i].id), m[i].live ? 0 : GPUSCHED_ENOENT);
            m[i].live = false;
        } else {
            double now = clock + (rand() % 5);
            double backlog[7] = {0}, maxb = 0, maxw = 0, best = -1;
            for (uint32_t i = 0; i < n; i++)
                if (m[i].live) {
                    backlog[m[i].tenant]++;
                    maxw = fmax(maxw, now - m[i].t);
                }
            for (int t = 0; t < 7; t++)
                maxb = fmax(maxb, backlog[t]);
            for (uint32_t i = 0; i < n; i++)
                if (m[i].live)
                    best = fmax(best, 0.1 * backlog[m[i].tenant] / maxb +
                                          0.9 * (maxw > 0 ? (now - m[i].t) / maxw : 0));
            uint64_t id;
            gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
            int rc = gpusched_fairq_poll(q, now, ~0ull, &id, &d);
            if (best < 0) {
                cr_assert_eq(rc, GPUSCHED_EEMPTY);
                continue;
            }
            cr_assert_eq(rc, 0);
            uint32_t i = (uint32_t)(id - 1000);
            cr_assert(m[i].live);
            double s = 0.1 * backlog[m[i].tenant] / maxb + 0.9 * (maxw > 0 ? (now - m[i].t) / maxw : 0);
            cr_assert(fabs(s - best) < 1e-12, "step %d: pick %.17g, best %.17g", step, s, best);
            cr_assert_float_eq(d.term_backlog, backlog[m[i].tenant] / maxb, 1e-15);
            cr_assert_float_eq(d.max_wait, maxw, 1e-12);
            m[i].live = false;
            clock = now;
        }
    }
    gpusched_fairq_free(q);
}
