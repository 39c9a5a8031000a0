/* The knapsack's sliding-window kernel (place/knapsack.c) against the
 * general one, and the general one (which visits the row's live states)
 * against one visiting every state, on random rows with absent and
 * dominated states and many equal keys (so that the tie-breaking is
 * compared too), in 64 and 128 bits: the same row, the same recorded
 * choices and exact live bits. And which frontiers are linear. */
#include <criterion/criterion.h>

#include "place/place-internal.h"

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define KN_Y_MAX 300

typedef struct kn_case {
    uint32_t Y, n;
    uint32_t units[KN_Y_MAX + 1];
    gs_key key[KN_Y_MAX + 1];
    gs_key w;
    gs_key dp[KN_Y_MAX + 1];
} kn_case;

/* A row with keys from a small range (ties), one state in `absent` left
 * out, and a linear frontier of 1 .. Y entries. */
static void kn_random(uint64_t *s, kn_case *k, bool wide)
{
    k->Y = 1 + (uint32_t)(next(s) % KN_Y_MAX);
    k->n = 1 + (uint32_t)(next(s) % k->Y);
    const uint32_t absent = 1 + (uint32_t)(next(s) % 4), spread = 1 + (uint32_t)(next(s) % 200);
    const gs_key high = wide ? (gs_key)1 << 100 : 0; /* keys past 64 bits */
    for (uint32_t t = 0; t <= k->Y; t++)
        k->dp[t] = t && next(s) % absent == 0 ? GS_KEY_INF : high + next(s) % spread;
    const gs_key c = next(s) % 3 == 0 ? 0 : next(s) % 40, k0 = next(s) % 50;
    for (uint32_t e = 0; e < k->n; e++) {
        k->units[e] = e + 1;
        k->key[e] = k0 + (gs_key)(e + 1) * c;
    }
    k->w = next(s) % 30;
}

static uint64_t live_a[KN_Y_MAX / 64 + 1], live_b[KN_Y_MAX / 64 + 1];

/* The live bits of a row (states below INF). */
static void kn_live(const gs_key *dp, uint32_t Y, uint64_t *live)
{
    for (uint32_t i = 0; i <= Y / 64; i++)
        live[i] = 0;
    for (uint32_t t = 0; t <= Y; t++)
        if (dp[t] != GS_KEY_INF)
            gs_pl_live_set(live, t);
}

/* After a kernel: exactly the states below INF are live. */
static void kn_live_matches(const gs_key *dp, uint32_t Y, const uint64_t *live, int round)
{
    for (uint32_t t = 0; t <= Y; t++)
        cr_assert_eq((live[t / 64] >> (t % 64)) & 1, dp[t] != GS_KEY_INF, "round %d: state %u's live bit", round, t);
}

static void kn_compare(const kn_case *k, int round, const gs_key *want, const gs_key *got, const uint32_t *pv1,
                       const uint32_t *en1, const uint32_t *pv2, const uint32_t *en2)
{
    for (uint32_t t = 0; t <= k->Y; t++) {
        cr_assert(want[t] == got[t], "round %d: Y %u n %u: dp[%u] differs", round, k->Y, k->n, t);
        cr_assert(pv1[t] == pv2[t] && en1[t] == en2[t], "round %d: Y %u n %u: choice at %u: %u/%u, window %u/%u",
                  round, k->Y, k->n, t, pv1[t], en1[t], pv2[t], en2[t]);
    }
}

Test(place_knapsack, window_matches_the_general_kernel_64)
{
    uint64_t s = 0x7c3a9e51d2b4f609ull;
    static kn_case k;
    static uint64_t a[KN_Y_MAX + 1], b[KN_Y_MAX + 1], key64[KN_Y_MAX + 1], f[KN_Y_MAX + 1];
    static gs_key wa[KN_Y_MAX + 1], wb[KN_Y_MAX + 1];
    static uint32_t pv1[KN_Y_MAX + 1], en1[KN_Y_MAX + 1], pv2[KN_Y_MAX + 1], en2[KN_Y_MAX + 1], dq[KN_Y_MAX + 1];
    uint32_t improved = 0;
    for (int round = 0; round < 4000; round++) {
        kn_random(&s, &k, false);
        cr_assert(gs_pl_knap_is_linear(k.units, k.key, k.n, k.Y, true));
        for (uint32_t t = 0; t <= k.Y; t++) {
            a[t] = b[t] = k.dp[t] == GS_KEY_INF ? UINT64_MAX : (uint64_t)k.dp[t];
            pv1[t] = pv2[t] = en1[t] = en2[t] = 7777;
        }
        for (uint32_t e = 0; e < k.n; e++)
            key64[e] = (uint64_t)k.key[e];
        kn_live(k.dp, k.Y, live_a);
        kn_live(k.dp, k.Y, live_b);
        gs_pl_knap_child64(a, k.Y, k.n, k.units, key64, (uint64_t)k.w, pv1, en1, live_a);
        gs_pl_knap_linear64(b, k.Y, k.n, key64, (uint64_t)k.w, pv2, en2, f, dq, live_b);
        for (uint32_t t = 0; t <= k.Y; t++) {
            wa[t] = a[t] == UINT64_MAX ? GS_KEY_INF : a[t];
            wb[t] = b[t] == UINT64_MAX ? GS_KEY_INF : b[t];
            improved += pv1[t] != 7777;
        }
        kn_compare(&k, round, wa, wb, pv1, en1, pv2, en2);
        kn_live_matches(wa, k.Y, live_a, round);
        kn_live_matches(wb, k.Y, live_b, round);
        /* Without choices: the same row. */
        for (uint32_t t = 0; t <= k.Y; t++)
            b[t] = k.dp[t] == GS_KEY_INF ? UINT64_MAX : (uint64_t)k.dp[t];
        kn_live(k.dp, k.Y, live_b);
        gs_pl_knap_linear64(b, k.Y, k.n, key64, (uint64_t)k.w, NULL, NULL, f, dq, live_b);
        for (uint32_t t = 0; t <= k.Y; t++)
            cr_assert_eq(a[t], b[t], "round %d: without choices, dp[%u] differs", round, t);
    }
    cr_assert_gt(improved, 100000u, "the rows were improved often enough to compare choices (%u)", improved);
}

Test(place_knapsack, window_matches_the_general_kernel_128)
{
    uint64_t s = 0x2b9f04e6a1c7d358ull;
    static kn_case k;
    static gs_key a[KN_Y_MAX + 1], b[KN_Y_MAX + 1], f[KN_Y_MAX + 1];
    static uint32_t pv1[KN_Y_MAX + 1], en1[KN_Y_MAX + 1], pv2[KN_Y_MAX + 1], en2[KN_Y_MAX + 1], dq[KN_Y_MAX + 1];
    for (int round = 0; round < 4000; round++) {
        kn_random(&s, &k, true);
        cr_assert(gs_pl_knap_is_linear(k.units, k.key, k.n, k.Y, false));
        for (uint32_t t = 0; t <= k.Y; t++) {
            a[t] = b[t] = k.dp[t];
            pv1[t] = pv2[t] = en1[t] = en2[t] = 7777;
        }
        kn_live(k.dp, k.Y, live_a);
        kn_live(k.dp, k.Y, live_b);
        gs_pl_knap_child128(a, k.Y, k.n, k.units, k.key, k.w, pv1, en1, live_a);
        gs_pl_knap_linear128(b, k.Y, k.n, k.key, k.w, pv2, en2, f, dq, live_b);
        kn_compare(&k, round, a, b, pv1, en1, pv2, en2);
        kn_live_matches(a, k.Y, live_a, round);
        kn_live_matches(b, k.Y, live_b, round);
    }
}

/* The general step as it was written first, every state of the row
 * visited: the reference for the one that visits the live states only. */
static void every_state(gs_key *dp, uint32_t Y, uint32_t n, const uint32_t *units, const gs_key *key, gs_key w,
                        uint32_t *pv, uint32_t *en)
{
    gs_key above = GS_KEY_INF;
    uint32_t m = 0;
    for (uint32_t t = Y + 1; t-- > 0;) {
        const gs_key base = dp[t];
        if (base == GS_KEY_INF || base > above)
            continue;
        above = base;
        while (m < n && units[m] < Y - t)
            m++;
        for (uint32_t e = 0; e < m; e++)
            if (base + w + key[e] < dp[t + units[e]]) {
                dp[t + units[e]] = base + w + key[e];
                pv[t + units[e]] = t + 1;
                en[t + units[e]] = e;
            }
        if (m < n && base + w + key[m] < dp[Y]) {
            dp[Y] = base + w + key[m];
            pv[Y] = t + 1;
            en[Y] = m;
        }
    }
}

/* Frontiers of any shape (units and keys ascending, gaps between them)
 * over sparse rows (many states absent, as in a row over many units):
 * the general kernels, visiting the live states only, give the row and
 * choices of visiting every state, and keep the live bits exact. */
Test(place_knapsack, live_states_only_match_every_state)
{
    uint64_t s = 0x51afd7ed558ccd1dull;
    static kn_case k;
    static gs_key want[KN_Y_MAX + 1], got[KN_Y_MAX + 1];
    static uint64_t got64[KN_Y_MAX + 1], key64[KN_Y_MAX + 1];
    static uint32_t pv1[KN_Y_MAX + 1], en1[KN_Y_MAX + 1], pv2[KN_Y_MAX + 1], en2[KN_Y_MAX + 1];
    for (int round = 0; round < 4000; round++) {
        k.Y = 1 + (uint32_t)(next(&s) % KN_Y_MAX);
        const uint32_t absent = 1 + (uint32_t)(next(&s) % 16), spread = 1 + (uint32_t)(next(&s) % 200);
        for (uint32_t t = 0; t <= k.Y; t++)
            k.dp[t] = t && next(&s) % absent != 0 ? GS_KEY_INF : next(&s) % spread;
        k.n = 0;
        for (uint32_t u = 1 + (uint32_t)(next(&s) % 5); u <= k.Y + 3; u += 1 + (uint32_t)(next(&s) % 9)) {
            k.units[k.n] = u;
            k.key[k.n] = (k.n ? k.key[k.n - 1] : 0) + next(&s) % 4;
            k.n++;
        }
        k.w = next(&s) % 30;
        const bool wide = round & 1;
        for (uint32_t t = 0; t <= k.Y; t++) {
            want[t] = got[t] = k.dp[t];
            got64[t] = k.dp[t] == GS_KEY_INF ? UINT64_MAX : (uint64_t)k.dp[t];
            pv1[t] = pv2[t] = en1[t] = en2[t] = 7777;
        }
        for (uint32_t e = 0; e < k.n; e++)
            key64[e] = (uint64_t)k.key[e];
        every_state(want, k.Y, k.n, k.units, k.key, k.w, pv1, en1);
        kn_live(k.dp, k.Y, live_a);
        if (wide) {
            gs_pl_knap_child128(got, k.Y, k.n, k.units, k.key, k.w, pv2, en2, live_a);
        } else {
            gs_pl_knap_child64(got64, k.Y, k.n, k.units, key64, (uint64_t)k.w, pv2, en2, live_a);
            for (uint32_t t = 0; t <= k.Y; t++)
                got[t] = got64[t] == UINT64_MAX ? GS_KEY_INF : got64[t];
        }
        kn_compare(&k, round, want, got, pv1, en1, pv2, en2);
        kn_live_matches(got, k.Y, live_a, round);
    }
}

Test(place_knapsack, which_frontiers_are_linear)
{
    const uint32_t dense[] = {1, 2, 3, 4}, gap[] = {1, 2, 4, 5}, from0[] = {0, 1, 2, 3};
    const gs_key even[] = {10, 13, 16, 19}, uneven[] = {10, 13, 16, 20}, flat[] = {5, 5, 5, 5};
    cr_assert(gs_pl_knap_is_linear(dense, even, 4, 100, true));
    cr_assert(gs_pl_knap_is_linear(dense, flat, 4, 100, true), "no key per unit is linear too");
    cr_assert(gs_pl_knap_is_linear(dense, even, 1, 100, true), "one entry of one unit");
    cr_assert_not(gs_pl_knap_is_linear(dense, uneven, 4, 100, true));
    cr_assert_not(gs_pl_knap_is_linear(gap, even, 4, 100, true), "a unit without an entry");
    cr_assert_not(gs_pl_knap_is_linear(from0, even, 4, 100, true));
    cr_assert_not(gs_pl_knap_is_linear(dense, even, 0, 100, true));
    /* A key per unit so large that Y of them would reach the 64-bit
     * row's free bits: the general kernel instead. */
    const gs_key huge[] = {(gs_key)1 << 52, (gs_key)2 << 52};
    cr_assert_not(gs_pl_knap_is_linear(dense, huge, 2, 1024, true));
    cr_assert(gs_pl_knap_is_linear(dense, huge, 2, 1024, false), "128-bit rows have the room");
    cr_assert(gs_pl_knap_is_linear(dense, huge, 2, 100, true));
}
