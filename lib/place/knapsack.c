/* The knapsack's step: one child's frontier added to the row dp[0..Y] of
 * the least key for each number of units (Y holds Y units or more), with
 * the choices when pv and en are given. Two kernels compute the same row
 * and choices: the general one loops over the child's entries from every
 * source; the sliding window does one pass when the child's frontier is
 * linear (an entry per unit, each unit the same key more: a block whose
 * slices each take one rack). */
#include "place-internal.h"

/* KEY_T is the width of the keys: 64 bits when every key of the request
 * fits (gs_pl_req.key64: half the work of a 128-bit add and compare, the
 * common case), else gs_key. The same comparisons in the same order: the
 * same row and choices either way. Rows from the top: a source is read
 * before this child writes it.
 *
 * A source holding fewer units than one above it at a strictly lower key
 * starts no optimal path: the same choices from the other hold as much or
 * more for less. So the states of an optimal path, their keys and the
 * first path found to each are the same without it (the tie-breaking too:
 * a strictly dominated source only ever reaches strictly dominated states,
 * or Y at a higher key). Entries [0, m) of a source at t stay under Y;
 * entry m reaches it, and those after it reach it at keys no lower (keys
 * ascend with units), so only m can improve Y; m is found by a pointer that
 * only moves forward, as t falls. */
#define GS_KNAP_CHILD(NAME, KEY_T, INF)                                                              \
    void NAME(KEY_T *dp, uint32_t Y, uint32_t n, const uint32_t *units, const KEY_T *key, KEY_T w,   \
              uint32_t *pv, uint32_t *en, uint64_t *live)                                           \
    {                                                                                               \
        KEY_T above = INF; /* least key of the sources above t */                                   \
        uint32_t m = 0;    /* entries under Y - t units: grows as t falls */                          \
        for (uint32_t wi = Y / 64 + 1; wi-- > 0;) {                                                 \
            /* The sources are the states live before this child: a word's                        \
             * bits as they were when reached (this child writes above t). */                      \
            for (uint64_t bits = live[wi]; bits;) {                                                 \
                const uint32_t t = wi * 64 + 63 - (uint32_t)__builtin_clzll(bits);                  \
                bits &= ~((uint64_t)1 << (t & 63));                                                 \
                const KEY_T base = dp[t];                                                           \
                if (base > above)                                                                   \
                    continue;                                                                       \
                above = base;                                                                       \
                const KEY_T bw = base + w;                                                          \
                KEY_T *const dpt = dp + t;                                                          \
                while (m < n && units[m] < Y - t)                                                   \
                    m++;                                                                            \
                for (uint32_t e = 0; e < m; e++) {                                                  \
                    const KEY_T k = bw + key[e];                                                   \
                    KEY_T *d = dpt + units[e];                                                      \
                    if (k < *d) {                                                                   \
                        *d = k;                                                                     \
                        gs_pl_live_set(live, t + units[e]);                                         \
                        if (pv) {                                                                   \
                            pv[t + units[e]] = t + 1;                                               \
                            en[t + units[e]] = e;                                                   \
                        }                                                                           \
                    }                                                                               \
                }                                                                                   \
                if (m < n && bw + key[m] < dp[Y]) {                                                \
                    dp[Y] = bw + key[m];                                                           \
                    gs_pl_live_set(live, Y);                                                        \
                    if (pv) {                                                                       \
                        pv[Y] = t + 1;                                                              \
                        en[Y] = m;                                                                  \
                    }                                                                               \
                }                                                                                   \
            }                                                                                       \
        }                                                                                           \
    }
GS_KNAP_CHILD(gs_pl_knap_child64, uint64_t, UINT64_MAX)
GS_KNAP_CHILD(gs_pl_knap_child128, gs_key, GS_KEY_INF)

/* A linear frontier (units[e] = e + 1, key[e] = key[0] + e c): state s
 * takes from a source t in [s - n, s - 1] the key dp[t] + w + key[0] +
 * (s - t - 1) c, so the best source for s is the one with the least
 * f[t] = dp[t] + (Y - t) c, a minimum over a window that slides with s:
 * a deque of sources with increasing f, O(Y) for the child instead of
 * O(Y n). The general kernel keeps, among sources giving s the same key,
 * the first it visits (the highest t), and keeps dp[s] on a tie with it;
 * the deque drops a source when a later one is as good, so its front is
 * that highest t, and s is written only when strictly better. It skips
 * the dominated sources as the general kernel does (f[t] = INF). Y is
 * reached from [Y - n, Y - 1] by the entry that makes exactly Y, which is
 * the same window. f and dq hold Y + 1 each. Returns the sources kept
 * (the general kernel's work is about them times n). */
#define GS_KNAP_LINEAR(NAME, KEY_T, INF)                                                             \
    void NAME(KEY_T *dp, uint32_t Y, uint32_t n, const KEY_T *key, KEY_T w, uint32_t *pv, uint32_t *en, \
              KEY_T *f, uint32_t *dq, uint64_t *live)                                              \
    {                                                                                               \
        const KEY_T c = n > 1 ? key[1] - key[0] : 0;                                                \
        KEY_T above = INF;                                                                          \
        for (uint32_t t = Y + 1; t-- > 0;) {                                                        \
            const KEY_T base = dp[t];                                                               \
            if (base == INF || base > above) {                                                      \
                f[t] = INF;                                                                         \
                continue;                                                                           \
            }                                                                                       \
            above = base;                                                                           \
            f[t] = base + (KEY_T)(Y - t) * c;                                                       \
        }                                                                                           \
        uint32_t head = 0, tail = 0;                                                                \
        for (uint32_t s = 1; s <= Y; s++) {                                                         \
            const uint32_t t = s - 1;                                                               \
            if (f[t] != INF) {                                                                      \
                while (tail > head && f[dq[tail - 1]] >= f[t])                                      \
                    tail--;                                                                         \
                dq[tail++] = t;                                                                     \
            }                                                                                       \
            while (head < tail && dq[head] + n < s)                                                 \
                head++;                                                                             \
            if (head == tail)                                                                       \
                continue;                                                                           \
            const uint32_t tb = dq[head];                                                           \
            /* dp[tb] + w + key[s - tb - 1], from f: dp[tb] may be new. */                          \
            const KEY_T k = f[tb] - (KEY_T)(Y - s + 1) * c + key[0] + w;                            \
            if (k < dp[s]) {                                                                        \
                dp[s] = k;                                                                          \
                gs_pl_live_set(live, s);                                                            \
                if (pv) {                                                                           \
                    pv[s] = tb + 1;                                                                 \
                    en[s] = s - tb - 1;                                                             \
                }                                                                                   \
            }                                                                                       \
        }                                                                                           \
    }
GS_KNAP_LINEAR(gs_pl_knap_linear64, uint64_t, UINT64_MAX)
GS_KNAP_LINEAR(gs_pl_knap_linear128, gs_key, GS_KEY_INF)

/* Whether the window applies: an entry per unit, each the same key more,
 * and f = dp + (Y - t) c stays clear of INF (dp's keys use at most the
 * 62 low bits, or 126: derive_weights). */
bool gs_pl_knap_is_linear(const uint32_t *units, const gs_key *key, uint32_t n, uint32_t Y, bool key64)
{
    if (!n || units[0] != 1 || units[n - 1] != n) /* ascending: every unit */
        return false;
    const gs_key c = n > 1 ? key[1] - key[0] : 0;
    const gs_key room = key64 ? (gs_key)1 << 62 : (gs_key)1 << 126;
    if (c && c >= room / ((gs_key)Y + 1))
        return false;
    for (uint32_t e = 1; e < n; e++)
        if (key[e] - key[e - 1] != c)
            return false;
    return true;
}
