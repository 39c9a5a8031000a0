/* Max-plus convolution with a concave kernel: out[g] = max over c of
 * src[g - c] + f[c - 1], c = 1 .. nf. The counted knapsack (frontier.c)
 * adds a child to every state this way, a child's most units for c of its
 * grandchildren being f[c - 1]. When f is concave (the grandchildren's
 * capacities taken largest first), the best source of out[g] moves right
 * as g does (the matrix src[j] + f(g - j) is inverse Monge), so a divide
 * and conquer over g finds every maximum in O((n + nf) log n) steps instead
 * of n x nf. Sources absent (GS_MAXPLUS_NONE) and kernel positions outside
 * 1 .. nf count as minus infinity, which keeps the property: the leftmost
 * maximum of each g is taken, the first candidate when none is finite. */
#include "place-internal.h"

typedef struct mp_ctx {
    const uint32_t *src;
    const uint32_t *f;
    uint32_t n, nf;
    int64_t *out;
} mp_ctx;

static inline int64_t mp_value(const mp_ctx *x, uint32_t g, uint32_t j)
{
    const uint32_t c = g - j;
    if (x->src[j] == GS_MAXPLUS_NONE || c < 1 || c > x->nf)
        return GS_MAXPLUS_NEG;
    return (int64_t)x->src[j] + x->f[c - 1];
}

/* out[g] for g in [glo, ghi], their best sources within [jlo, jhi]. */
static void mp_solve(const mp_ctx *x, uint32_t glo, uint32_t ghi, uint32_t jlo, uint32_t jhi)
{
    while (glo <= ghi) {
        const uint32_t mid = glo + (ghi - glo) / 2;
        /* Candidates: sources j with 1 <= mid - j <= nf. */
        const uint32_t first = mid > x->nf && mid - x->nf > jlo ? mid - x->nf : jlo;
        const uint32_t last = mid >= 1 && mid - 1 < jhi ? mid - 1 : jhi;
        uint32_t best = first;
        int64_t v = GS_MAXPLUS_NEG;
        for (uint32_t j = first; j <= last && mid >= 1; j++) {
            const int64_t w = mp_value(x, mid, j);
            if (w > v) {
                v = w;
                best = j;
            }
        }
        x->out[mid] = v;
        if (mid > glo)
            mp_solve(x, glo, mid - 1, jlo, best);
        /* The right half in the loop: the recursion stays O(log n) deep. */
        glo = mid + 1;
        jlo = best;
    }
}

void gs_pl_maxplus_concave(const uint32_t *src, uint32_t n, const uint32_t *f, uint32_t nf, int64_t *out)
{
    if (!n)
        return;
    const mp_ctx x = {src, f, n, nf, out};
    mp_solve(&x, 0, n - 1, 0, n - 1);
}

bool gs_pl_concave(const uint32_t *f, uint32_t nf)
{
    for (uint32_t i = 2; i < nf; i++)
        if (f[i] - f[i - 1] > f[i - 1] - f[i - 2] || f[i] < f[i - 1] || f[i - 1] < f[i - 2])
            return false;
    return true;
}
