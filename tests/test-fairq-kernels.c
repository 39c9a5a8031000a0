/* Kernel equivalence: run once per SIMD path forced through GPUSCHED_SIMD.
 * On random queues, weights, masks and times, the queue's kernel must
 * return the same slot and the bit-identical score as the scalar reference,
 * the reference must agree with a literal per-task loop, and the fast path
 * over FIFO heads must return the same task as the full rescore. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "fairq/fairq-internal.h"
#include "fairq-test.h"
#include "simd-test.h"

static double rndw(void) { return rndu(3) == 0 ? 0 : (double)(rnd() >> 11) * 0x1.0p-53 * 2; }

/* The obvious loop, written independently of the kernels. */
static gs_fq_best literal(const gs_fq_scan_args *a)
{
    gs_fq_best b = {-INFINITY, GS_FQ_NONE};
    for (uint32_t s = a->lo; s < a->hi; s++) {
        double kt = a->kterm[a->key[s]];
        if (kt == -INFINITY)
            continue;
        double wait = a->now - a->enq[s];
        double t = wait * a->wscale;
        double v = kt + t;
        if (a->pred) {
            double r = wait / (wait + (double)a->pred[s]);
            double p = a->wpred * r;
            v = v + p;
        }
        if (v > b.score) {
            b.score = v;
            b.slot = s;
        }
    }
    return b;
}

static void fill(gpusched_fairq *q, uint32_t n, uint32_t tenants, uint32_t types, double *clock,
                 uint64_t *next_id)
{
    for (uint32_t i = 0; i < n; i++) {
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        t.id = (*next_id)++;
        t.tenant = rndu(tenants);
        t.type = rndu(types);
        /* coarse clock: many equal times, so many equal scores */
        *clock += rndu(4) == 0 ? 1.0 : 0.0;
        t.enqueue_time = *clock;
        t.work_size = rndu(1000);
        t.predicted = rndu(2) ? 0 : 0.01 * (1 + rndu(500));
        cr_assert_eq(gpusched_fairq_enqueue(q, &t), 0, "%s", gpusched_fairq_errmsg(q));
    }
}

static double churn(gpusched_fairq *q, double now, uint32_t polls)
{
    for (uint32_t i = 0; i < polls; i++) {
        uint64_t id;
        now += rndu(4) == 0 ? 0.5 : 0; /* lets virtual time decay */
        if (gpusched_fairq_poll(q, now, ~0ull, &id, NULL) == 0 && rndu(2))
            cr_assert_eq(gpusched_fairq_complete(q, id, 0.001 * (1 + rndu(3000))), 0);
    }
    return now;
}

static void set_random_weights(gpusched_fairq *q)
{
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_BACKLOG, rndw()), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_WAIT, rndw()), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_VTIME, rndw()), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_PRED, rndu(2) ? 0 : rndw()), 0);
}

static void compare_once(gpusched_fairq *q, double now, uint64_t mask, int round)
{
    gs_fq_frame f;
    gs_fq_frame_build(q, now, mask, &f);
    gs_fq_frame_keys(q, &f);
    gs_fq_scan_args a;
    gs_fq_scan_args_init(q, &f, &a);
    gs_fq_best ref, got, lit = literal(&a);
    gs_fq_scan_scalar(&a, &ref);
    q->scan(&a, &got);
    cr_assert_eq(ref.slot, lit.slot, "round %d: scalar slot %u, literal %u", round, ref.slot, lit.slot);
    cr_assert_eq(got.slot, ref.slot, "round %d: %s slot %u, scalar %u (n=%u)", round,
                 gpusched_simd_name(q->simd), got.slot, ref.slot, q->hi - q->lo);
    if (ref.slot != GS_FQ_NONE)
        cr_assert(memcmp(&got.score, &ref.score, sizeof ref.score) == 0,
                  "round %d: score %.17g vs %.17g", round, got.score, ref.score);
    /* Fast path against full rescore, through the public peek. */
    if (q->p.w_pred == 0) {
        uint64_t id_heads = 0, id_full = 0;
        int rc1 = gpusched_fairq_peek(q, now, mask, &id_heads, NULL);
        gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_SCAN, 1);
        int rc2 = gpusched_fairq_peek(q, now, mask, &id_full, NULL);
        gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_SCAN, 0);
        cr_assert_eq(rc1, rc2);
        cr_assert(rc1 == 0 || rc1 == GPUSCHED_EEMPTY, "round %d: %s", round, gpusched_err_name(rc1));
        cr_assert_eq(id_heads, id_full, "round %d: heads %llu, full %llu", round,
                     (unsigned long long)id_heads, (unsigned long long)id_full);
        if (ref.slot != GS_FQ_NONE)
            cr_assert_eq(id_full, q->id[ref.slot]);
    }
}

Test(kernels, forced_path_is_used)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(1, NULL, &q), 0);
    const char *env = getenv("GPUSCHED_SIMD");
    if (env && !forced_path_unrunnable())
        cr_assert_str_eq(gpusched_simd_name(q->simd), env);
    gpusched_fairq_free(q);
}

Test(kernels, random_queues_match_reference, .timeout = 240)
{
    rng_state = 12345;
    int rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 40 : 400;
    for (int round = 0; round < rounds; round++) {
        uint32_t tenants = 1 + rndu(rndu(2) ? 5 : 300), types = 1 + rndu(rndu(2) ? 2 : 64);
        gpusched_fairq *q;
        cr_assert_eq(gpusched_fairq_new(tenants, NULL, &q), 0);
        for (uint32_t t = 0; t < tenants; t++)
            if (rndu(3) == 0)
                gpusched_fairq_tenant_weight_set(q, t, 0.1 * (1 + rndu(40)));
        cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_HALF_LIFE, rndu(2) ? 0 : 5), 0);
        if (rndu(2))
            cr_assert_eq(gpusched_fairq_policy_set(q, GPUSCHED_FAIRQ_POLICY_STATEFUL), 0);
        double clock = rndu(1000);
        uint64_t next = 0;
        uint32_t n = rndu(4) == 0 ? rndu(40) : rndu(3000);
        fill(q, n, tenants, types, &clock, &next);
        clock = churn(q, clock, rndu(n / 2 + 1)); /* holes, vtimes */
        fill(q, rndu(200), tenants, types, &clock, &next);
        for (uint32_t c = 0; c < 3 && next; c++)
            gpusched_fairq_cancel(q, rnd() % next);
        set_random_weights(q);
        for (int k = 0; k < 4; k++) {
            uint64_t mask = rndu(3) == 0 ? ~0ull : rnd() & rnd();
            double now = clock + (rndu(3) == 0 ? 0 : rndu(1000) / 8.0);
            compare_once(q, now, mask, round);
        }
        gpusched_fairq_free(q);
    }
}

/* Every alignment of the scanned range against the vector width. */
Test(kernels, all_edges)
{
    rng_state = 99;
    for (uint32_t n = 0; n < 150; n++) {
        for (uint32_t front = 0; front < 9; front++) {
            gpusched_fairq *q;
            cr_assert_eq(gpusched_fairq_new(3, NULL, &q), 0);
            cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_BACKLOG, 0), 0);
            double clock = 0;
            uint64_t next = 0;
            fill(q, front + n, 3, 2, &clock, &next);
            for (uint32_t i = 0; i < front; i++)
                gpusched_fairq_cancel(q, i); /* moves lo */
            set_random_weights(q);
            compare_once(q, clock + 3, ~0ull, (int)(n * 16 + front));
            compare_once(q, clock + 3, 1, (int)(n * 16 + front));
            gpusched_fairq_free(q);
        }
    }
}

/* Many blocks of the vector kernels, and times 1e-7 s apart at 1e6 s
 * (scores a few ulps apart): the bound that stops the scan must hold
 * exactly, with no margin. */
Test(kernels, many_blocks_and_close_times, .timeout = 240)
{
    rng_state = 4242;
    for (int round = 0; round < 12; round++) {
        uint32_t tenants = 1 + rndu(50), n = 20000 + rndu(30000);
        gpusched_fairq *q;
        cr_assert_eq(gpusched_fairq_new(tenants, NULL, &q), 0);
        bool close = round % 2 == 0;
        cr_assert_eq(fq_enqueue(q, 999999999, 0, 0, 0.0, 0), 0);
        double clock = close ? 1e6 : 5.0;
        for (uint32_t i = 0; i < n; i++) {
            clock += close ? 1e-7 : (rndu(3) == 0 ? 0.25 : 0.0);
            uint32_t t = rndu(tenants);
            /* late blocks get a favored tenant so the best is not always first */
            if (round % 3 == 1 && i > n / 2 && rndu(2))
                t = 0;
            cr_assert_eq(fq_enqueue(q, i, t, rndu(4), clock, 0), 0);
        }
        cr_assert_eq(gpusched_fairq_cancel(q, 999999999), 0);
        for (uint32_t c = 0; c < 50; c++)
            gpusched_fairq_cancel(q, rnd() % n);
        set_random_weights(q);
        cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_PRED, 0), 0);
        if (round % 4 == 0)
            cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_W_BACKLOG, 0), 0);
        for (int k = 0; k < 3; k++)
            compare_once(q, clock + (k == 0 ? 0 : rndu(100) * 1e-6), k == 2 ? (rnd() | 1) : ~0ull,
                         1000 + round * 3 + k);
        gpusched_fairq_free(q);
    }
}

/* Crafted columns for the bound that stops the scan. Block 0 holds the
 * oldest tasks; `late` sits in a later block. */
typedef struct crafted {
    double enq[3 * GS_FQ_BLOCK + 40];
    uint32_t key[3 * GS_FQ_BLOCK + 40];
    float pred[3 * GS_FQ_BLOCK + 40];
    double kterm[3];
    gs_fq_scan_args a;
} crafted;

static void crafted_init(crafted *c, double kt1, double kt2, uint32_t late, bool pred)
{
    const uint32_t n = GS_ARRAY_LEN(c->enq);
    for (uint32_t s = 0; s < n; s++) {
        c->enq[s] = 1000.0 + s * 1e-3;
        c->key[s] = 1;
        c->pred[s] = 1.0f;
    }
    c->key[late] = 2;
    c->kterm[0] = -INFINITY;
    c->kterm[1] = kt1;
    c->kterm[2] = kt2;
    c->a = (gs_fq_scan_args){
        .enq = c->enq, .key = c->key, .pred = pred ? c->pred : NULL, .kterm = c->kterm,
        .now = 2000.0, .wscale = 1e-3, .wpred = pred ? 0.5 : 0, .lo = 0, .hi = n,
        .kmax = kt1 > kt2 ? kt1 : kt2, .have_kmax = true,
    };
}

static void crafted_check(crafted *c, gpusched_fairq *q, uint32_t want, const char *what)
{
    gs_fq_best ref, got;
    gs_fq_scan_scalar(&c->a, &ref);
    q->scan(&c->a, &got);
    cr_assert_eq(ref.slot, want, "%s: the reference chose slot %u", what, ref.slot);
    cr_assert_eq(got.slot, want, "%s: %s chose slot %u, want %u", what, gpusched_simd_name(q->simd),
                 got.slot, want);
    cr_assert(memcmp(&got.score, &ref.score, sizeof ref.score) == 0, "%s", what);
}

/* A young task whose key term outweighs the age of every older one must
 * be found (the bound uses the largest key term, not block 0's); a key
 * term one ulp too small to catch up must lose; and when every enqueue
 * time is equal, the oldest of the equal best scores wins though the bound
 * of every later block equals it. */
Test(kernels, scan_bound_is_exact)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(1, NULL, &q), 0);
    static crafted c;
    const uint32_t n = GS_ARRAY_LEN(c.enq);
    for (int pred = 0; pred < 2; pred++) {
        crafted_init(&c, 0.0, 5.0, n - 1, pred);
        crafted_check(&c, q, n - 1, "young task with the top key term");
        crafted_init(&c, 0.0, 0.0, 2 * GS_FQ_BLOCK + 3, pred);
        crafted_check(&c, q, 0, "all key terms equal: the oldest");
        crafted_init(&c, 0.5, 0.5, 0, pred);
        for (uint32_t s = 0; s < n; s++)
            c.enq[s] = 1000.0;
        c.a.now = 1000.0; /* every score is its key term */
        crafted_check(&c, q, 0, "equal times and terms: the first slot");
        c.key[0] = GS_FQ_HOLE_KEY;
        c.key[GS_FQ_BLOCK] = 2;
        c.kterm[2] = nextafter(0.5, 1.0);
        c.a.kmax = c.kterm[2];
        crafted_check(&c, q, GS_FQ_BLOCK, "equal times, one term an ulp above");
    }
    /* the later task's term exactly makes up its shorter wait: a tie, so
     * the older task in block 0 keeps it */
    crafted_init(&c, 0.0, 0.0, GS_FQ_BLOCK + 7, false);
    c.a.wscale = 1.0;
    c.a.now = 5000.0;
    for (uint32_t s = 0; s < n; s++)
        c.enq[s] = 1000.0 + s;
    c.kterm[2] = (double)(GS_FQ_BLOCK + 7);
    c.a.kmax = c.kterm[2];
    crafted_check(&c, q, 0, "a tie across blocks goes to the older");
    /* one ulp more in the score (an ulp more in the term would round away) */
    c.kterm[2] = nextafter(4000.0, INFINITY) - (c.a.now - c.enq[GS_FQ_BLOCK + 7]);
    c.a.kmax = c.kterm[2];
    crafted_check(&c, q, GS_FQ_BLOCK + 7, "an ulp more wins");
    gpusched_fairq_free(q);
}

/* Enqueue-time patterns of the sequence property test: every score equal
 * or tied, fine and coarse clocks, times far from 0 (coarse doubles) and
 * times one ulp apart (an extreme wscale, still finite: NaN-free). */
enum { TIMES_EQUAL, TIMES_COARSE, TIMES_FINE, TIMES_HUGE, TIMES_ULP, TIMES_PATTERNS };

static double next_time(int pattern, double clock)
{
    switch (pattern) {
    case TIMES_EQUAL: return clock;
    case TIMES_COARSE: return clock + (rndu(4) == 0 ? 1.0 : 0.0);
    case TIMES_FINE: return clock + rndu(1000) * 1e-9;
    case TIMES_HUGE: return clock + (rndu(2) ? 0.125 : 0.0);
    default: return rndu(2) ? nextafter(clock, INFINITY) : clock;
    }
}

static double first_time(int pattern)
{
    return pattern == TIMES_HUGE ? 1e15 : pattern == TIMES_ULP ? 1.0 : rndu(1000);
}

/* A live count at or next to a multiple of the block (and so of every
 * kernel's step), where the scan's blocks and tail meet. */
static uint32_t boundary_size(void)
{
    static const int delta[] = {-33, -32, -17, -16, -15, -1, 0, 1, 15, 16, 17, 31, 32, 33};
    return (1 + rndu(3)) * GS_FQ_BLOCK + (uint32_t)(int)delta[rndu(GS_ARRAY_LEN(delta))];
}

static void set_extreme_weights(gpusched_fairq *q)
{
    static const double w[] = {0, 1e-6, 0.1, 1, 1e6};
    static const uint32_t params[] = {GPUSCHED_FAIRQ_PARAM_W_BACKLOG, GPUSCHED_FAIRQ_PARAM_W_WAIT,
                                      GPUSCHED_FAIRQ_PARAM_W_VTIME, GPUSCHED_FAIRQ_PARAM_W_PRED};
    for (size_t i = 0; i < GS_ARRAY_LEN(params); i++) {
        double v = rndu(2) ? w[rndu(GS_ARRAY_LEN(w))] : rndw();
        if (params[i] == GPUSCHED_FAIRQ_PARAM_W_PRED && rndu(2))
            v = 0;
        cr_assert_eq(gpusched_fairq_param_set(q, params[i], v), 0);
    }
}

typedef struct seq {
    gpusched_fairq *q;
    uint32_t tenants, types;
    int pattern;
    double clock;
    uint64_t next_id;
} seq;

static void seq_enqueue(seq *z, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        z->clock = next_time(z->pattern, z->clock);
        cr_assert_eq(fq_enqueue(z->q, z->next_id++, rndu(z->tenants), rndu(z->types), z->clock,
                                rndu(2) ? 0 : 0.01 * (1 + rndu(500))), 0, "%s", gpusched_fairq_errmsg(z->q));
    }
}

/* Polls through the full rescore (its answer was just compared with the
 * reference) or the fast path, completing some of the polled tasks. */
static void seq_poll(seq *z, uint32_t n)
{
    gpusched_fairq_param_set(z->q, GPUSCHED_FAIRQ_PARAM_SCAN, rndu(2));
    for (uint32_t i = 0; i < n; i++) {
        uint64_t id;
        if (gpusched_fairq_poll(z->q, z->clock, ~0ull, &id, NULL) == 0 && rndu(2))
            cr_assert_eq(gpusched_fairq_complete(z->q, id, 0.001 * (1 + rndu(3000))), 0);
    }
    gpusched_fairq_param_set(z->q, GPUSCHED_FAIRQ_PARAM_SCAN, 0);
}

static void seq_step(seq *z, int round)
{
    uint64_t live;
    gpusched_fairq_count(z->q, &live, NULL);
    switch (rndu(4)) {
    case 0: { /* grow or shrink to a block boundary */
        uint32_t want = boundary_size();
        if (want > live)
            seq_enqueue(z, want - (uint32_t)live);
        else
            seq_poll(z, (uint32_t)live - want);
        break;
    }
    case 1: seq_enqueue(z, rndu(100)); break;
    case 2: seq_poll(z, rndu(50)); break;
    default: /* holes anywhere, and the oldest tasks (moves lo) */
        for (uint32_t c = rndu(40); c > 0 && z->next_id; c--)
            gpusched_fairq_cancel(z->q, rndu(3) ? rnd() % z->next_id : z->next_id - live);
    }
    uint64_t mask = rndu(3) == 0 ? ~0ull : rnd() & rnd();
    compare_once(z->q, z->clock, mask, round);
}

/* Random enqueue, cancel, poll and rescore sequences: at every step the
 * queue's kernel returns the reference's slot and score, whatever the
 * scores look like and wherever the block boundaries fall. */
Test(kernels, sequences_match_reference, .timeout = 240)
{
    rng_state = 2718;
    int seqs = getenv("GPUSCHED_UNDER_VALGRIND") ? 10 : 120;
    for (int round = 0; round < seqs; round++) {
        seq z = {.tenants = 1 + rndu(rndu(2) ? 3 : 200), .types = 1 + rndu(rndu(2) ? 2 : 8),
                 .pattern = round % TIMES_PATTERNS};
        cr_assert_eq(gpusched_fairq_new(z.tenants, NULL, &z.q), 0);
        for (uint32_t t = 0; t < z.tenants; t++)
            if (rndu(4) == 0)
                gpusched_fairq_tenant_weight_set(z.q, t, rndu(2) ? 1e-6 : 1e6);
        if (rndu(2))
            cr_assert_eq(gpusched_fairq_policy_set(z.q, GPUSCHED_FAIRQ_POLICY_STATEFUL), 0);
        set_extreme_weights(z.q);
        z.clock = first_time(z.pattern);
        for (int step = 0; step < 12; step++)
            seq_step(&z, round * 100 + step);
        gpusched_fairq_free(z.q);
    }
}

/* The fast path's pass over tenants, direct: the queue's kernel against
 * the scalar reference and a literal loop, on every length around the
 * vector widths, with many exact ties (small integer backlogs and times)
 * so that the lowest-slot rule decides often. */
Test(kernels, heads_kernel_matches_reference)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(1, NULL, &q), 0);
    rng_state = 4242;
    enum { MAXN = 300 };
    static double b[MAXN], e[MAXN], v[MAXN], s_ref[MAXN], s_got[MAXN];
    static uint32_t slot[MAXN];
    for (int round = 0; round < 2000; round++) {
        uint32_t n = round < 600 ? (uint32_t)round % 40 : rndu(MAXN + 1);
        bool ties = rndu(2);
        for (uint32_t i = 0; i < n; i++) {
            b[i] = 1 + rndu(ties ? 3 : 1000);
            e[i] = ties ? rndu(3) : rndu(100000) / 7.0;
            v[i] = ties ? rndu(2) : rndu(1000) / 3.0;
            slot[i] = rndu(1u << 20);
        }
        gs_fq_heads_args a = {
            .b = b, .e = e, .v = v, .slot = slot, .n = n, .vterm = rndu(2),
            .now = 100000, .bs = rndw(), .ws = rndw(), .wv = rndw(), .vmax = 1000, .vs = rndw(),
        };
        gs_fq_best ref, got, lit = {-INFINITY, GS_FQ_NONE};
        a.s = s_ref;
        gs_fq_heads_scalar(&a, &ref);
        a.s = s_got;
        q->heads(&a, &got);
        for (uint32_t i = 0; i < n; i++) {
            double sc = gs_fq_head_score(&a, i);
            if (sc > lit.score || (sc == lit.score && slot[i] < lit.slot))
                lit = (gs_fq_best){sc, slot[i]};
        }
        cr_assert_eq(ref.slot, lit.slot, "round %d: scalar slot %u, literal %u", round, ref.slot, lit.slot);
        cr_assert_eq(got.slot, ref.slot, "round %d (n=%u): %s slot %u, scalar %u", round, n,
                     gpusched_simd_name(q->simd), got.slot, ref.slot);
        cr_assert(memcmp(&got.score, &ref.score, sizeof ref.score) == 0, "round %d", round);
        cr_assert(n == 0 || memcmp(s_got, s_ref, n * sizeof *s_ref) == 0, "round %d: scores differ", round);
    }
    gpusched_fairq_free(q);
}
