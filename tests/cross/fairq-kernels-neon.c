/* The AArch64 NEON rescore kernel against the scalar reference, bit for
 * bit, on random inputs: built with aarch64-linux-gnu-gcc and run under
 * qemu-aarch64 on x86-64 hosts (tests/meson.build), so the NEON kernel is
 * executed, not only compiled. Criterion has no AArch64 build here, so this
 * is a plain program speaking TAP: one line per case, exit status 0 only if
 * every case passed.
 *
 * The inputs are what the queue hands its kernels (doc/fairq.md): enqueue
 * times in slot order with many exact ties, keys whose terms may be -inf
 * (holes, ineligible tenants), optional predictions, and the
 * largest key term that bounds the scores so the kernel may stop early.
 * Every alignment of the scanned range, many blocks, times 1e-7 s apart at
 * 1e6 s, and crafted cases for the bound. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fairq/fairq-internal.h"

#if !defined(__aarch64__)
#error "this test exercises the AArch64 NEON kernel: build it for AArch64"
#endif

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint32_t rndu(uint32_t n) { return (uint32_t)(rnd() % n); }
static double rnd01(void) { return (double)(rnd() >> 11) * 0x1.0p-53; }

/* The obvious loop, written independently of both kernels. */
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

/* One scan input, owning its columns. */
typedef struct input {
    double *enq, *kterm;
    float *pred;
    uint32_t *key;
    uint32_t n, nkeys;
    gs_fq_scan_args a;
} input;

enum { MAX_KEYS = 512 };

static int input_alloc(input *in, uint32_t n)
{
    memset(in, 0, sizeof *in);
    in->n = n;
    in->enq = malloc((n + 1) * sizeof *in->enq);
    in->pred = malloc((n + 1) * sizeof *in->pred);
    in->key = malloc((n + 1) * sizeof *in->key);
    in->kterm = malloc(MAX_KEYS * sizeof *in->kterm);
    return in->enq && in->pred && in->key && in->kterm ? 0 : -1;
}

static void input_free(input *in)
{
    free(in->enq), free(in->pred), free(in->key), free(in->kterm);
}

/* Random columns shaped like a queue's: times never decrease with the slot,
 * a coarse clock (many equal times, so many equal scores) or a fine one,
 * holes and ineligible keys. `collapse` puts the times at 1e6 s plus
 * multiples of 1e-7 s (scores a few ulps apart). */
static void input_fill(input *in, uint32_t lo, int collapse, int with_pred, int with_bound)
{
    uint32_t n = in->n;
    in->nkeys = 2 + rndu(rndu(2) ? 6 : MAX_KEYS - 2);
    in->kterm[GS_FQ_HOLE_KEY] = -INFINITY;
    for (uint32_t k = 1; k < in->nkeys; k++)
        in->kterm[k] = rndu(5) == 0 ? -INFINITY : (rndu(3) == 0 ? (double)rndu(4) : rnd01() * 3 - 1);
    double clock = collapse ? 1e6 : rndu(1000);
    for (uint32_t s = 0; s < n; s++) {
        clock += collapse ? 1e-7 : (rndu(4) == 0 ? (rndu(2) ? 1.0 : rnd01()) : 0.0);
        in->enq[s] = clock;
        in->key[s] = rndu(6) == 0 ? GS_FQ_HOLE_KEY : 1 + rndu(in->nkeys - 1);
        /* the queue never stores a prediction below GS_FQ_PRED_MIN */
        in->pred[s] = rndu(3) == 0 ? (float)GS_FQ_PRED_MIN : (float)(0.01 * (1 + rndu(5000)));
    }
    double now = clock + (rndu(3) == 0 ? 0.0 : rndu(1000) / 8.0);
    double max_wait = n > lo ? now - in->enq[lo] : 0.0;
    double w_wait = rndu(4) == 0 ? 0.0 : rnd01() * 2;
    in->a = (gs_fq_scan_args){
        .enq = in->enq, .key = in->key, .pred = with_pred ? in->pred : NULL, .kterm = in->kterm,
        .now = now, .wscale = max_wait > 0 ? w_wait / max_wait : 0.0,
        .wpred = with_pred ? rnd01() * 2 : 0.0, .lo = lo, .hi = n,
    };
    in->a.have_kmax = with_bound;
}

/* The largest key term, as the queue hands it to the kernels. */
static void input_bound(input *in)
{
    double kmax = -INFINITY;
    for (uint32_t k = 1; k < in->nkeys; k++)
        kmax = in->kterm[k] > kmax ? in->kterm[k] : kmax;
    in->a.kmax = kmax;
}

static int ncase, nfail;

/* Compares NEON, scalar and the literal loop on one input; 0 if equal. */
static int compare(input *in, const char *what, int round)
{
    input_bound(in);
    gs_fq_best ref, got, lit = literal(&in->a);
    gs_fq_scan_scalar(&in->a, &ref);
    memset(&got, 0xa5, sizeof got);
    gs_fq_scan_neon(&in->a, &got);
    if (ref.slot != lit.slot) {
        printf("# %s round %d: scalar slot %" PRIu32 ", literal %" PRIu32 "\n", what, round, ref.slot,
               lit.slot);
        return -1;
    }
    if (got.slot != ref.slot) {
        printf("# %s round %d (lo %" PRIu32 ", hi %" PRIu32 "): neon slot %" PRIu32 ", scalar %" PRIu32
               "\n", what, round, in->a.lo, in->a.hi, got.slot, ref.slot);
        return -1;
    }
    if (ref.slot != GS_FQ_NONE && memcmp(&got.score, &ref.score, sizeof ref.score) != 0) {
        printf("# %s round %d: neon score %a, scalar %a\n", what, round, got.score, ref.score);
        return -1;
    }
    return 0;
}

static void report(const char *name, int failures, int rounds)
{
    ncase++;
    if (failures)
        nfail++;
    printf("%sok %d - %s (%d inputs%s)\n", failures ? "not " : "", ncase, name, rounds,
           failures ? ", some differ" : "");
    fflush(stdout);
}

/* Short ranges: every length around the vector width (2 doubles, 4
 * accumulators: 8 slots a step) and every start offset. */
static void case_all_edges(void)
{
    rng_state = 99;
    int bad = 0, rounds = 0;
    for (uint32_t n = 0; n < 150; n++)
        for (uint32_t front = 0; front < 9; front++)
            for (int form = 0; form < 3; form++) {
                input in;
                if (input_alloc(&in, front + n)) {
                    printf("# out of memory\n");
                    exit(1);
                }
                input_fill(&in, front, 0, form == 1, form == 2);
                bad += compare(&in, "all_edges", rounds++) != 0;
                input_free(&in);
            }
    report("every length below 150 at every start offset below 9", bad, rounds);
}

/* Random sizes up to a few blocks, with and without predictions and the
 * bound. */
static void case_random(void)
{
    rng_state = 12345;
    int bad = 0, rounds = 0;
    for (int round = 0; round < 600; round++) {
        uint32_t n = rndu(4) == 0 ? rndu(40) : rndu(rndu(4) == 0 ? 3 * GS_FQ_BLOCK : 3000);
        input in;
        if (input_alloc(&in, n)) {
            printf("# out of memory\n");
            exit(1);
        }
        input_fill(&in, n ? rndu(n < 20 ? n : 20) : 0, 0, rndu(3) == 0, rndu(2));
        bad += compare(&in, "random", rounds++) != 0;
        input_free(&in);
    }
    report("random queues, predictions and the bound on or off", bad, rounds);
}

/* Many blocks, and times a few ulps apart in score: the bound that stops
 * the scan must hold exactly. */
static void case_many_blocks(void)
{
    rng_state = 4242;
    int bad = 0, rounds = 0;
    for (int round = 0; round < 12; round++) {
        uint32_t n = 20000 + rndu(30000);
        input in;
        if (input_alloc(&in, n)) {
            printf("# out of memory\n");
            exit(1);
        }
        input_fill(&in, rndu(9), round % 2 == 0, 0, 1);
        /* late blocks favour one key, so the best is not always first */
        if (round % 3 == 1)
            for (uint32_t s = n / 2; s < n; s++)
                if (rndu(2))
                    in.key[s] = 1;
        in.kterm[1] = 2.5;
        bad += compare(&in, "many_blocks", rounds++) != 0;
        in.a.pred = in.pred, in.a.wpred = 0.75;
        bad += compare(&in, "many_blocks_pred", rounds++) != 0;
        input_free(&in);
    }
    report("many blocks and times 1e-7 s apart at 1e6 s", bad, rounds);
}

/* The vector kernels only choose the block; the reference then finds the
 * slot in it. So the rounding of each score matters where blocks hold
 * scores a few ulps apart: one eligible slot per block, scores built to
 * nearly tie, and a kernel that rounds differently from the reference (a
 * fused multiply-add, another operation order) picks another block. */
static void case_near_ties_across_blocks(void)
{
    rng_state = 777;
    int bad = 0, rounds = 0;
    enum { BLOCKS = 4, N = BLOCKS * GS_FQ_BLOCK };
    input in;
    if (input_alloc(&in, N)) {
        printf("# out of memory\n");
        exit(1);
    }
    for (int round = 0; round < 400; round++) {
        int with_pred = round % 2;
        double now = 1000 + rnd01() * 1000, ws = 0.1 + rnd01(), target = 3 + rnd01();
        in.nkeys = BLOCKS + 1;
        in.kterm[GS_FQ_HOLE_KEY] = -INFINITY;
        for (uint32_t s = 0; s < N; s++) {
            in.enq[s] = now - 999 + s * 1e-3;
            in.key[s] = GS_FQ_HOLE_KEY;
            in.pred[s] = 1.0f;
        }
        for (uint32_t b = 0; b < BLOCKS; b++) {
            uint32_t s = b * GS_FQ_BLOCK + rndu(GS_FQ_BLOCK);
            in.key[s] = 1 + b;
            in.kterm[1 + b] = target - (now - in.enq[s]) * ws;
        }
        in.a = (gs_fq_scan_args){
            .enq = in.enq, .key = in.key, .pred = with_pred ? in.pred : NULL, .kterm = in.kterm,
            .now = now, .wscale = ws, .wpred = with_pred ? rnd01() : 0.0, .lo = 0, .hi = N,
            .have_kmax = round % 4 < 2,
        };
        bad += compare(&in, "near_ties", rounds++) != 0;
    }
    input_free(&in);
    report("scores a few ulps apart in different blocks", bad, rounds);
}

/* The bound that stops the scan: a young task whose key term outweighs
 * every older task's age is found, and a tie across blocks (the younger
 * task's term makes up its shorter wait exactly) goes to the older task,
 * an ulp more to the younger. */
static void case_bound(void)
{
    enum { N = 3 * GS_FQ_BLOCK + 40 };
    static double enq[N];
    static uint32_t key[N];
    const uint32_t late = GS_FQ_BLOCK + 7;
    double kterm[3] = {-INFINITY, 0.0, 5.0};
    for (uint32_t s = 0; s < N; s++)
        enq[s] = 1000.0 + s, key[s] = 1;
    key[N - 1] = 2;
    gs_fq_scan_args a = {
        .enq = enq, .key = key, .kterm = kterm, .now = 5000.0, .wscale = 1e-6,
        .lo = 0, .hi = N, .kmax = 5.0, .have_kmax = 1,
    };
    gs_fq_best ref, got;
    int bad = 0;
    gs_fq_scan_scalar(&a, &ref);
    gs_fq_scan_neon(&a, &got);
    bad += ref.slot != N - 1 || got.slot != N - 1;
    key[N - 1] = 1;
    key[late] = 2;
    a.wscale = 1.0;
    kterm[2] = a.kmax = (double)late;
    gs_fq_scan_scalar(&a, &ref);
    gs_fq_scan_neon(&a, &got);
    bad += ref.slot != 0 || got.slot != 0 || memcmp(&got.score, &ref.score, sizeof ref.score) != 0;
    kterm[2] = a.kmax = nextafter(4000.0, INFINITY) - (a.now - enq[late]); /* an ulp more in the score */
    gs_fq_scan_scalar(&a, &ref);
    gs_fq_scan_neon(&a, &got);
    bad += ref.slot != late || got.slot != late || memcmp(&got.score, &ref.score, sizeof ref.score) != 0;
    if (bad)
        printf("# bound: %d of 3 crafted cases differ (last: scalar slot %" PRIu32 ", neon slot %" PRIu32 ")\n",
               bad, ref.slot, got.slot);
    report("the bound never stops before the best slot", bad, 3);
}

int main(void)
{
    printf("TAP version 13\n1..5\n");
    printf("# NEON rescore kernel executed on %s, compared with the scalar reference\n",
#if defined(__ARM_NEON)
           "AArch64 with NEON"
#else
           "AArch64"
#endif
    );
    case_all_edges();
    case_random();
    case_many_blocks();
    case_near_ties_across_blocks();
    case_bound();
    printf("# %d of %d cases failed\n", nfail, ncase);
    return nfail ? 1 : 0;
}
