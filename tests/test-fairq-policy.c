/* Each policy's defining property. Stateful fair share: with tenants of
 * equal weight that are always backlogged, the spread of service received
 * stays within one maximum task cost, where the memoryless policy drifts
 * without bound. Plus weights, the idle clamp, decay, the prediction term
 * and seeded exploration. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "fairq-test.h"

static void clear_env(void) { unsetenv("GPUSCHED_SIMD"); }

TestSuite(policy, .init = clear_env);

static int enq(gpusched_fairq *q, uint64_t id, uint32_t tenant, double t, double predicted)
{
    return fq_enqueue(q, id, tenant, 0, t, predicted);
}

static double service(gpusched_fairq *q, uint32_t t)
{
    double v;
    cr_assert_eq(gpusched_fairq_tenant_get(q, t, GPUSCHED_FAIRQ_TENANT_SERVICE, &v), 0);
    return v;
}

/* One worker; tenant t's tasks cost cost[t] seconds; each tenant keeps
 * `depth` tasks queued (a replacement is enqueued when one is taken).
 * Returns the largest spread of service (max - min over tenants) seen
 * after any completion; `final` gets the last spread. */
static double simulate(uint32_t policy, uint32_t tenants, const double *cost, const double *weight,
                       int polls, double w_wait, double *final)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(tenants, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_policy_set(q, policy), 0);
    if (w_wait >= 0)
        cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_WAIT, w_wait), 0);
    double now = 0, worst = 0, spread = 0;
    uint64_t next = 0;
    for (uint32_t t = 0; t < tenants; t++) {
        if (weight)
            cr_assert_eq(gpusched_fairq_tenant_weight_set(q, t, weight[t]), 0);
        for (int d = 0; d < 4; d++)
            cr_assert_eq(enq(q, next++, t, now, 0), 0);
    }
    for (int i = 0; i < polls; i++) {
        uint64_t id;
        gpusched_fairq_decision dec = GPUSCHED_FAIRQ_DECISION_INIT;
        cr_assert_eq(gpusched_fairq_poll(q, now, ~0ull, &id, &dec), 0);
        now += cost[dec.tenant];
        cr_assert_eq(gpusched_fairq_complete(q, id, cost[dec.tenant]), 0);
        cr_assert_eq(enq(q, next++, dec.tenant, now, 0), 0);
        double lo = INFINITY, hi = -INFINITY;
        for (uint32_t t = 0; t < tenants; t++) {
            double s = service(q, t) / (weight ? weight[t] : 1.0);
            lo = fmin(lo, s);
            hi = fmax(hi, s);
        }
        spread = hi - lo;
        worst = fmax(worst, spread);
    }
    gpusched_fairq_free(q);
    if (final)
        *final = spread;
    return worst;
}

Test(policy, stateful_two_tenants_within_one_task)
{
    const double cost[2] = {1.0, 0.1};
    double fin;
    double worst = simulate(GPUSCHED_FAIRQ_POLICY_STATEFUL, 2, cost, NULL, 3000, -1, &fin);
    cr_assert_leq(worst, 1.0 + 1e-9, "stateful spread %g exceeds one max task (1.0)", worst);
    double drift = simulate(GPUSCHED_FAIRQ_POLICY_DES, 2, cost, NULL, 3000, -1, &fin);
    cr_assert_gt(fin, 100.0, "memoryless policy should drift: final spread %g", fin);
    cr_assert_gt(drift, 100.0);
}

Test(policy, stateful_many_tenants_within_one_task)
{
    const double cost[5] = {1.0, 0.5, 0.2, 0.1, 0.05};
    double fin;
    /* Pure fair share. */
    double worst = simulate(GPUSCHED_FAIRQ_POLICY_STATEFUL, 5, cost, NULL, 4000, 0, &fin);
    cr_assert_leq(worst, 1.0 + 1e-9, "pure fair share spread %g", worst);
    /* Default blend with the wait term. */
    worst = simulate(GPUSCHED_FAIRQ_POLICY_STATEFUL, 5, cost, NULL, 4000, -1, &fin);
    cr_assert_leq(worst, 1.0 + 1e-9, "stateful (default blend) spread %g", worst);
    simulate(GPUSCHED_FAIRQ_POLICY_DES, 5, cost, NULL, 4000, -1, &fin);
    cr_assert_gt(fin, 100.0, "memoryless final spread %g", fin);
}

Test(policy, stateful_honors_weights)
{
    const double cost[2] = {0.3, 0.3}, weight[2] = {3.0, 1.0};
    double fin;
    /* spread is measured on service / weight: the fair share */
    double worst = simulate(GPUSCHED_FAIRQ_POLICY_STATEFUL, 2, cost, weight, 2000, -1, &fin);
    cr_assert_leq(worst, 0.3 + 1e-9, "weighted spread %g", worst);
}

Test(policy, idle_tenant_cannot_bank_credit)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(2, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_policy_set(q, GPUSCHED_FAIRQ_POLICY_STATEFUL), 0);
    double now = 0;
    uint64_t next = 0, id;
    /* Tenant 1 alone for 500 tasks; tenant 0 idle. */
    for (int i = 0; i < 500; i++) {
        cr_assert_eq(enq(q, next++, 1, now, 1.0), 0);
        cr_assert_eq(gpusched_fairq_poll(q, now, ~0ull, &id, NULL), 0);
        cr_assert_eq(gpusched_fairq_complete(q, id, 1.0), 0);
        now += 1;
    }
    /* Both backlogged now: tenant 0 must not take the next 500 polls. */
    for (int i = 0; i < 50; i++) {
        cr_assert_eq(enq(q, next++, 0, now, 1.0), 0);
        cr_assert_eq(enq(q, next++, 1, now, 1.0), 0);
    }
    int zero = 0;
    for (int i = 0; i < 20; i++) {
        gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
        cr_assert_eq(gpusched_fairq_poll(q, now, ~0ull, &id, &d), 0);
        cr_assert_eq(gpusched_fairq_complete(q, id, 1.0), 0);
        zero += d.tenant == 0;
        now += 1;
    }
    cr_assert(zero >= 9 && zero <= 11, "returning tenant got %d of 20 polls", zero);
    gpusched_fairq_free(q);
}

Test(policy, half_life_decay)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(2, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_policy_set(q, GPUSCHED_FAIRQ_POLICY_STATEFUL), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_HALF_LIFE, 10), 0);
    uint64_t id;
    cr_assert_eq(enq(q, 1, 0, 0, 4.0), 0);
    cr_assert_eq(gpusched_fairq_poll(q, 0, ~0ull, &id, NULL), 0);
    double v;
    cr_assert_eq(gpusched_fairq_tenant_get(q, 0, GPUSCHED_FAIRQ_TENANT_VTIME, &v), 0);
    cr_assert_float_eq(v, 4.0, 1e-12);
    cr_assert_eq(enq(q, 2, 1, 10, 1.0), 0);
    cr_assert_eq(gpusched_fairq_poll(q, 10, ~0ull, &id, NULL), 0);
    cr_assert_eq(gpusched_fairq_tenant_get(q, 0, GPUSCHED_FAIRQ_TENANT_VTIME, &v), 0);
    cr_assert_float_eq(v, 2.0, 1e-12, "one half-life halves virtual time: %g", v);
    gpusched_fairq_free(q);
}

Test(policy, prediction_term_prefers_short_tasks_that_waited)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(1, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_BACKLOG, 0), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_WAIT, 0.1), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_PRED, 1), 0);
    cr_assert_eq(enq(q, 1, 0, 0, 100.0), 0);  /* long, oldest */
    cr_assert_eq(enq(q, 2, 0, 1, 1.0), 0);    /* short */
    cr_assert_eq(enq(q, 3, 0, 9, 0.5), 0);    /* shorter, barely waited */
    uint64_t id;
    gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
    cr_assert_eq(gpusched_fairq_peek(q, 10, ~0ull, &id, &d), 0);
    cr_assert_eq(id, 2, "short task that waited 9 s wins");
    cr_assert_float_eq(d.term_pred, 9.0 / 10.0, 1e-12);
    /* Without the term the oldest (long) task would go first. */
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_PRED, 0), 0);
    cr_assert_eq(gpusched_fairq_peek(q, 10, ~0ull, &id, &d), 0);
    cr_assert_eq(id, 1);
    gpusched_fairq_free(q);
}

static void explore_run(uint64_t *ids, double *probs, int n)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(2, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_EXPLORE, 0.1), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_SEED, 42), 0);
    for (int i = 0; i < n; i++)
        cr_assert_eq(enq(q, (uint64_t)i, (uint32_t)i % 2, i * 0.5, 1.0), 0);
    for (int i = 0; i < n; i++) {
        gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
        cr_assert_eq(gpusched_fairq_poll(q, n, ~0ull, &ids[i], &d), 0);
        probs[i] = d.probability;
    }
    gpusched_fairq_free(q);
}

Test(policy, seeded_exploration_is_reproducible)
{
    uint64_t a[30], b[30];
    double pa[30], pb[30];
    explore_run(a, pa, 30);
    explore_run(b, pb, 30);
    int not_greedy = 0;
    for (int i = 0; i < 30; i++) {
        cr_assert_eq(a[i], b[i]);
        cr_assert_eq(pa[i], pb[i]);
        cr_assert(pa[i] > 0 && pa[i] <= 1);
        not_greedy += pa[i] < 1;
    }
    cr_assert_gt(not_greedy, 0);
    cr_assert_eq(pa[29], 1.0, "the last task is chosen with certainty");
}

Test(policy, exploration_probability_is_the_softmax)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(1, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_EXPLORE, 0.5), 0);
    cr_assert_eq(enq(q, 1, 0, 0, 1.0), 0);
    cr_assert_eq(enq(q, 2, 0, 5, 1.0), 0);
    /* scores at now = 10: 0.1 + 0.9 = 1.0 and 0.1 + 0.45 = 0.55 */
    double p1 = 1.0 / (1.0 + exp((0.55 - 1.0) / 0.5));
    uint64_t id;
    gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
    cr_assert_eq(gpusched_fairq_poll(q, 10, ~0ull, &id, &d), 0);
    cr_assert_float_eq(d.probability, id == 1 ? p1 : 1 - p1, 1e-12, "p = %g", d.probability);
    gpusched_fairq_free(q);
}

/* Decay over hundreds of half-lives (the common factor is folded back
 * into the stored values every 64): charging 1 per half-life converges to
 * a virtual time of 2. */
Test(policy, long_decay_converges)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(3, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_policy_set(q, GPUSCHED_FAIRQ_POLICY_STATEFUL), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_HALF_LIFE, 1.0), 0);
    uint64_t id;
    for (int k = 0; k < 300; k++) {
        cr_assert_eq(enq(q, (uint64_t)k, 1, k, 1.0), 0);
        cr_assert_eq(gpusched_fairq_poll(q, k, ~0ull, &id, NULL), 0);
        cr_assert_eq(gpusched_fairq_complete(q, id, 1.0), 0);
    }
    double v;
    cr_assert_eq(gpusched_fairq_tenant_get(q, 1, GPUSCHED_FAIRQ_TENANT_VTIME, &v), 0);
    cr_assert_float_eq(v, 2.0, 1e-9, "virtual time %.17g", v);
    cr_assert_eq(gpusched_fairq_tenant_get(q, 1, GPUSCHED_FAIRQ_TENANT_SERVICE, &v), 0);
    cr_assert_eq(v, 300.0, "service is not decayed");
    gpusched_fairq_free(q);
}
