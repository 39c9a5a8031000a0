/* Gangs whose only constraint is slices that are each a whole domain of
 * one level (NVL72 racks asked whole, every large gang of the scheduler's
 * simulator): such a gang fits, up to what only a search sees (nodes down,
 * shared GPUs, nodes of another size), once K = G / S domains are wholly
 * free. A caller that frees GPUs job by job in an order of its own (the
 * reservation search: running jobs by expected end; preemption: victims in
 * the plan's order) counts where K is reached from the aggregates and the
 * jobs' GPUs, without lending anyone, and probes there first. It is a
 * hint: the callers' searches are exact whatever it says, since fitting is
 * monotone in the jobs lent. Where the count is exact (no node down, no
 * fractions among the jobs counted, no reservation of the gang's own),
 * the scheduler takes it as the answer and reserves K of the domains it
 * finds wholly free (gs_pl_whole_choose, below). */
#include <string.h>

#include "heap.h"
#include "place-internal.h"

bool gs_pl_whole_begin(const struct gpusched_cluster *c, const gs_pl_req *r, gs_alloc *a, uint32_t **scratch,
                       uint32_t *cap, gs_pl_whole *w)
{
    const struct gpusched_topo *t = c->topo;
    if (r->ncons != 1 || r->stop >= 0 || r->pods_path || r->in.gpu_class != GPUSCHED_NONE ||
        r->in.labels_required || r->in.labels_forbidden)
        return false;
    const uint32_t l = r->cons[0].level, size = r->cons[0].size, nd = t->ndom[l];
    const uint32_t *dom_gpus = c->agg[l].dom_gpus;
    for (uint32_t d = 0; d < nd; d++)
        if (dom_gpus[d] != size)
            return false;
    if (gs_grow(a, (void **)scratch, cap, nd, sizeof **scratch))
        return false;
    uint32_t *free = *scratch;
    memcpy(free, c->agg[l].free_gpus, (size_t)nd * sizeof *free);
    for (uint32_t i = 0; i < r->in.avoid_count; i++)
        free[gs_topo_node_domain(t, r->in.avoid_nodes[i], l)] = GS_PL_WHOLE_OUT;
    uint64_t whole = 0;
    for (uint32_t d = 0; d < nd; d++)
        whole += free[d] == size;
    *w = (gs_pl_whole){.c = c, .level = l, .size = size, .want = r->gpus / size, .whole = whole, .free = free};
    return true;
}

bool gs_pl_whole_add(gs_pl_whole *w, const gs_hold *h)
{
    const struct gpusched_topo *t = w->c->topo;
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++) {
        uint32_t *f = &w->free[gs_topo_node_domain(t, nodes[i], w->level)];
        if (*f == GS_PL_WHOLE_OUT)
            continue;
        const uint32_t before = *f;
        *f += gs_popcount64(masks[i]);
        w->whole += before < w->size && *f >= w->size;
    }
    return w->whole >= w->want;
}

/* The candidates under each domain of levels 0 .. w->level - 1, level m's
 * from off[m] on in cnt. */
static void count_candidates(const gs_pl_whole *w, uint32_t *cnt, const uint32_t *off)
{
    const struct gpusched_topo *t = w->c->topo;
    for (uint32_t m = 0; m < w->level; m++)
        memset(cnt + off[m], 0, t->ndom[m] * sizeof *cnt);
    for (uint32_t d = 0; d < t->ndom[w->level]; d++) {
        if (w->free[d] == GS_PL_WHOLE_OUT || w->free[d] < w->size)
            continue;
        uint32_t x = d;
        for (uint32_t m = w->level; m-- > 0;) {
            x = t->dom_parent[m + 1][x];
            cnt[off[m] + x]++;
        }
    }
}

/* Appends every candidate of level w->level under domain x of level m
 * (m == w->level: x itself). */
static void take_all(const gs_pl_whole *w, uint32_t m, uint32_t x, uint32_t *out, uint32_t *n)
{
    const struct gpusched_topo *t = w->c->topo;
    uint32_t a = x, b = x + 1;
    for (; m < w->level; m++) {
        a = t->child_start[m][a];
        b = t->child_start[m][b];
    }
    for (uint32_t d = a; d < b; d++)
        if (w->free[d] != GS_PL_WHOLE_OUT && w->free[d] >= w->size)
            out[(*n)++] = d;
}

/* The children of domain x (level m < w->level) at level m + 1. */
static void kids(const gs_pl_whole *w, uint32_t m, uint32_t x, uint32_t *a, uint32_t *b)
{
    *a = w->c->topo->child_start[m][x];
    *b = w->c->topo->child_start[m][x + 1];
}

/* How many children of domain x (level m) `need` candidates take at
 * least: the largest counts first (up to 64 children looked at). */
static uint32_t fewest_kids(const gs_pl_whole *w, const uint32_t *cnt, const uint32_t *off, uint32_t m, uint32_t x,
                            uint32_t need)
{
    if (m + 1 == w->level)
        return need; /* its children are the candidates: one each */
    uint32_t a, b, used = 0, held = 0;
    kids(w, m, x, &a, &b);
    const uint32_t *c = cnt + off[m + 1];
    uint32_t taken[64];
    while (held < need && used < 64) {
        uint32_t big = UINT32_MAX;
        for (uint32_t y = a; y < b; y++) {
            bool seen = false;
            for (uint32_t i = 0; i < used && !seen; i++)
                seen = taken[i] == y;
            if (!seen && c[y] && (big == UINT32_MAX || c[y] > c[big]))
                big = y;
        }
        if (big == UINT32_MAX)
            break;
        taken[used++] = big;
        held += c[big];
    }
    return used;
}

/* `need` candidates among the children [a, b) of level m, fewest
 * children first: one child when one holds them all (the one whose own
 * children hold them in the fewest, then the tightest, then the lowest
 * index), else the largest counts whole and the rest likewise. */
static void take(const gs_pl_whole *w, uint32_t *cnt, const uint32_t *off, uint32_t m, uint32_t a, uint32_t b,
                 uint32_t need, uint32_t *out, uint32_t *n)
{
    if (m == w->level) {
        for (uint32_t d = a; d < b && need; d++)
            if (w->free[d] != GS_PL_WHOLE_OUT && w->free[d] >= w->size) {
                out[(*n)++] = d;
                need--;
            }
        return;
    }
    uint32_t *c = cnt + off[m];
    while (need) {
        uint32_t fit = UINT32_MAX, fit_kids = 0, big = UINT32_MAX;
        for (uint32_t x = a; x < b; x++) {
            if (c[x] >= need) {
                const uint32_t k = fewest_kids(w, cnt, off, m, x, need);
                if (fit == UINT32_MAX || k < fit_kids || (k == fit_kids && c[x] < c[fit])) {
                    fit = x;
                    fit_kids = k;
                }
            }
            if (c[x] && (big == UINT32_MAX || c[x] > c[big]))
                big = x;
        }
        if (big == UINT32_MAX)
            return; /* fewer than asked: the caller sees it */
        if (fit != UINT32_MAX) {
            uint32_t ka, kb;
            kids(w, m, fit, &ka, &kb);
            take(w, cnt, off, m + 1, ka, kb, need, out, n);
            return;
        }
        take_all(w, m, big, out, n);
        need -= c[big];
        c[big] = 0; /* taken */
    }
}

static bool u32_less(const uint32_t *a, const uint32_t *b, void *unused)
{
    (void)unused;
    return *a < *b;
}

GS_HEAP_DEFINE(u32_asc, uint32_t, void *, u32_less)

int gs_pl_whole_choose(const gs_pl_whole *w, gs_alloc *a, uint32_t **scratch, uint32_t *cap, uint32_t *out)
{
    const struct gpusched_topo *t = w->c->topo;
    uint32_t off[GS_MAX_LEVELS + 1];
    off[0] = 0;
    for (uint32_t m = 0; m < w->level; m++)
        off[m + 1] = off[m] + t->ndom[m];
    if (gs_grow(a, (void **)scratch, cap, off[w->level] + 1, sizeof **scratch))
        return GPUSCHED_ENOMEM;
    count_candidates(w, *scratch, off);
    uint32_t n = 0;
    take(w, *scratch, off, 0, 0, t->ndom[0], (uint32_t)w->want, out, &n);
    if (n != w->want)
        return GPUSCHED_ENOSPC;
    u32_asc_sort(out, n, NULL);
    return 0;
}
