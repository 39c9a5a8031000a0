/* Duration prediction: convergence on synthetic lognormal durations whose
 * log depends linearly on log size, fallbacks for unseen keys, and the
 * prediction stored at enqueue. */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

static void clear_env(void) { unsetenv("GPUSCHED_SIMD"); }

TestSuite(predict, .init = clear_env);

static uint64_t rng = 2024;
static double uniform(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1.0p-53;
}
static double normal(void) { return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform()); }

/* log d = a + b * log1p(size) + sigma * N(0, 1) */
static const double A = -3.0, B = 0.5, SIGMA = 0.3;

static void train(gpusched_fairq *q, uint32_t tenant, uint32_t type, int n, double *now, uint64_t *next)
{
    for (int i = 0; i < n; i++) {
        double size = exp(4 + 4 * uniform()); /* 55 .. 3000 "bytes" */
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        t.id = (*next)++;
        t.tenant = tenant;
        t.type = type;
        t.enqueue_time = *now;
        t.work_size = size;
        cr_assert_eq(gpusched_fairq_enqueue(q, &t), 0);
        uint64_t id;
        cr_assert_eq(gpusched_fairq_poll(q, *now, ~0ull, &id, NULL), 0);
        double d = exp(A + B * log1p(size) + SIGMA * normal());
        cr_assert_eq(gpusched_fairq_complete(q, id, d), 0);
        *now += d;
    }
}

static double expected(double size) { return exp(A + B * log1p(size) + 0.5 * SIGMA * SIGMA); }

Test(predict, converges_on_lognormal_durations)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(4, NULL, &q), 0);
    double p0;
    cr_assert_eq(gpusched_fairq_predict(q, 0, 0, 100, &p0), 0);
    cr_assert_eq(p0, 1.0, "no history: PRED_DEFAULT");
    double now = 0;
    uint64_t next = 0;
    train(q, 0, 3, 3000, &now, &next);
    const double sizes[] = {60, 200, 1000, 2900};
    for (size_t i = 0; i < 4; i++) {
        double p;
        cr_assert_eq(gpusched_fairq_predict(q, 0, 3, sizes[i], &p), 0);
        double rel = fabs(p / expected(sizes[i]) - 1);
        cr_assert_lt(rel, 0.15, "size %g: predicted %g, true mean %g", sizes[i], p, expected(sizes[i]));
    }
    /* Unseen tenant, same type: the type's fit. Unseen type: all history. */
    double pt, pk, pa;
    cr_assert_eq(gpusched_fairq_predict(q, 0, 3, 500, &pk), 0);
    cr_assert_eq(gpusched_fairq_predict(q, 2, 3, 500, &pt), 0);
    cr_assert_eq(pt, pk, "one key trained the type fallback identically");
    cr_assert_eq(gpusched_fairq_predict(q, 2, 9, 500, &pa), 0);
    cr_assert_lt(fabs(pa / expected(500) - 1), 0.15);
    cr_assert_eq(gpusched_fairq_predict(q, 4, 0, 1, &pa), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_fairq_predict(q, 0, 64, 1, &pa), GPUSCHED_ERANGE);
    cr_assert_eq(gpusched_fairq_predict(q, 0, 0, -1, &pa), GPUSCHED_ERANGE);
    gpusched_fairq_free(q);
}

Test(predict, keys_learn_separately_and_enqueue_stores_the_prediction)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(2, NULL, &q), 0);
    double now = 0;
    uint64_t next = 0, id;
    /* tenant 1 type 0: constant 2 s tasks */
    for (int i = 0; i < 200; i++) {
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        t.id = next++, t.tenant = 1, t.enqueue_time = now, t.work_size = 10;
        cr_assert_eq(gpusched_fairq_enqueue(q, &t), 0);
        cr_assert_eq(gpusched_fairq_poll(q, now, ~0ull, &id, NULL), 0);
        cr_assert_eq(gpusched_fairq_complete(q, id, 2.0), 0);
    }
    train(q, 0, 0, 1000, &now, &next);
    double p;
    cr_assert_eq(gpusched_fairq_predict(q, 1, 0, 10, &p), 0);
    cr_assert_float_eq(p, 2.0, 1e-6);
    gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
    t.id = next++, t.tenant = 1, t.enqueue_time = now, t.work_size = 10;
    cr_assert_eq(gpusched_fairq_enqueue(q, &t), 0);
    gpusched_fairq_decision d = GPUSCHED_FAIRQ_DECISION_INIT;
    cr_assert_eq(gpusched_fairq_peek(q, now, ~0ull, &id, &d), 0);
    cr_assert_float_eq(d.predicted, 2.0, 1e-6, "the stored prediction %g", d.predicted);
    gpusched_fairq_free(q);
}
