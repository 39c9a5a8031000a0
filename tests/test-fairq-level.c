/* The lag cap's fair level (gs_fq_level) against a reference water-fill
 * over the tenants sorted by demand: random tenants, demands spread so
 * far apart that the water-filling steps give way to bisection, and the
 * edges (everything served, nothing served, one tenant). */
#include <math.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "fairq/fairq-internal.h"

typedef struct lv_pair {
    double d, w;
} lv_pair;

static int by_demand(const void *a, const void *b)
{
    double x = ((const lv_pair *)a)->d, y = ((const lv_pair *)b)->d;
    return x < y ? -1 : x > y;
}

/* The level l with sum_t w_t min(d_t, l) = served: the first k (tenants
 * by demand) whose common level, the first k filled to their demand, is
 * not above the next demand; +inf when the demands are all served. */
static double reference(const gpusched_fairq *q)
{
    uint32_t n = q->ntenants;
    lv_pair *p = malloc(n * sizeof *p);
    cr_assert(p);
    double served = 0, total = 0, wall = 0;
    for (uint32_t t = 0; t < n; t++) {
        p[t] = (lv_pair){q->ten[t].dtime, q->ten[t].weight};
        served += q->ten[t].weight * q->ten[t].vtime;
        total += q->ten[t].weight * q->ten[t].dtime;
        wall += q->ten[t].weight;
    }
    double l = INFINITY;
    if (served < total) {
        qsort(p, n, sizeof *p, by_demand);
        double full = 0, wrest = wall;
        for (uint32_t k = 0; k < n; k++) {
            double c = (served - full) / wrest;
            if (c <= p[k].d) {
                l = c < 0 ? 0 : c;
                break;
            }
            full += p[k].w * p[k].d;
            wrest -= p[k].w;
        }
    }
    free(p);
    return l;
}

static uint64_t lv_rng = 7;
static double unit(void)
{
    lv_rng = lv_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lv_rng >> 11) / 9007199254740992.0;
}

static gpusched_fairq *queue(uint32_t n)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(n, NULL, &q), 0);
    return q;
}

/* The service the tenants would have at level l, and what they have. */
static void fill_at(const gpusched_fairq *q, double l, double *fill, double *served)
{
    *fill = *served = 0;
    for (uint32_t t = 0; t < q->ntenants; t++) {
        const gs_fq_tenant *x = &q->ten[t];
        *fill += x->weight * (x->dtime < l ? x->dtime : l);
        *served += x->weight * x->vtime;
    }
}

/* The level gives out the service given (to a relative 1e-12 of it: the
 * equation is what defines it, and where the tenants filled to their
 * demand hold nearly all of it, close levels give the same service);
 * where that is well conditioned it is also the reference's to 1e-9. */
static void expect_level(const gpusched_fairq *q, const char *what, bool close_to_reference)
{
    double wmean, got = gs_fq_level(q, &wmean), want = reference(q);
    if (isinf(want)) {
        cr_assert(isinf(got), "%s: everything served, level %g", what, got);
        return;
    }
    double fill, served;
    fill_at(q, got, &fill, &served);
    cr_assert(fabs(fill - served) <= 1e-12 * (served > 1 ? served : 1), "%s: level %.17g fills %.17g of %.17g",
              what, got, fill, served);
    if (close_to_reference)
        cr_assert(fabs(got - want) <= 1e-9 * (want > 1 ? want : 1), "%s: level %.17g, reference %.17g", what,
                  got, want);
}

Test(level, random_tenants_match_the_reference)
{
    for (int round = 0; round < 200; round++) {
        uint32_t n = 1 + (uint32_t)(unit() * 300);
        gpusched_fairq *q = queue(n);
        for (uint32_t t = 0; t < n; t++) {
            gs_fq_tenant *x = &q->ten[t];
            x->weight = 0.25 + 4 * unit();
            x->dtime = unit() < 0.2 ? 0 : 100 * unit() * unit();
            x->vtime = x->dtime * unit();
        }
        expect_level(q, "random", true);
        gpusched_fairq_free(q);
    }
}

Test(level, one_demand_passed_per_step_ends_in_bisection)
{
    /* Demand k lies between the levels of water-filling steps k - 1 and
     * k, so each step fills one tenant: about 30 steps, more than the
     * filling takes before the bisection finishes. Weights halve along
     * the chain, so that each step still moves the level by half the
     * step before (with equal weights the steps shrink to nothing). */
    const uint32_t n = 40, chain = 30;
    gpusched_fairq *q = queue(n);
    double wall = n - chain;
    for (uint32_t k = 0; k < chain; k++)
        wall += ldexp(1, (int)(chain - k));
    const double served = 1000 * wall;
    double full = 0, wrest = wall, prev = served / wall;
    q->ten[0] = (gs_fq_tenant){.weight = ldexp(1, (int)chain), .dtime = prev / 2};
    full += q->ten[0].weight * q->ten[0].dtime;
    wrest -= q->ten[0].weight;
    double cur = (served - full) / wrest;
    for (uint32_t k = 1; k < chain; k++) {
        q->ten[k] = (gs_fq_tenant){.weight = ldexp(1, (int)(chain - k)), .dtime = (prev + cur) / 2};
        full += q->ten[k].weight * q->ten[k].dtime;
        wrest -= q->ten[k].weight;
        prev = cur;
        cur = (served - full) / wrest;
    }
    for (uint32_t t = chain; t < n; t++)
        q->ten[t] = (gs_fq_tenant){.weight = 1, .dtime = 1e6};
    q->ten[n - 1].vtime = served; /* weight 1 */
    expect_level(q, "one demand per step", false);
    gpusched_fairq_free(q);
}

Test(level, demands_spread_over_many_orders_of_magnitude)
{
    for (int round = 0; round < 50; round++) {
        uint32_t n = 60;
        gpusched_fairq *q = queue(n);
        for (uint32_t t = 0; t < n; t++) {
            gs_fq_tenant *x = &q->ten[t];
            x->weight = 1;
            x->dtime = ldexp(1.0 + unit(), (int)t - 30);
            x->vtime = t + 1 < n ? x->dtime * (0.5 + 0.5 * unit()) : 0;
        }
        expect_level(q, "spread", false);
        gpusched_fairq_free(q);
    }
}

Test(level, edges)
{
    gpusched_fairq *q = queue(3);
    double wmean;
    cr_assert(isinf(gs_fq_level(q, &wmean)), "no demand at all: nothing is owed");
    cr_assert_eq(wmean, 1.0);
    q->ten[0] = (gs_fq_tenant){.weight = 1, .dtime = 4, .vtime = 4};
    q->ten[1] = (gs_fq_tenant){.weight = 3, .dtime = 2, .vtime = 2};
    q->ten[2] = (gs_fq_tenant){.weight = 2, .dtime = 0, .vtime = 0};
    cr_assert(isinf(gs_fq_level(q, &wmean)), "every demand served");
    cr_assert_float_eq(wmean, 2.0, 1e-12, "mean weight of the tenants with demand");
    q->ten[0].vtime = q->ten[1].vtime = 0;
    cr_assert_eq(gs_fq_level(q, &wmean), 0.0, "nothing served: level 0");
    /* Served 1 * 1 + 3 * 1 = 4: both at level 1 (the fill 1 + 3). */
    q->ten[0].vtime = 1;
    q->ten[1].vtime = 1;
    cr_assert_float_eq(gs_fq_level(q, &wmean), 1.0, 1e-12);
    /* Served 1 * 4 + 3 * 1.5 = 8.5: tenant 1 full at 2 (6), tenant 0 at 2.5. */
    q->ten[0].vtime = 4;
    q->ten[1].vtime = 1.5;
    cr_assert_float_eq(gs_fq_level(q, &wmean), 2.5, 1e-12);
    expect_level(q, "edges", true);
    gpusched_fairq_free(q);
}
