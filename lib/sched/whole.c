/* Gangs of whole domains tried by count: a gang whose only constraint is
 * slices that each fill a domain of one level (every large gang of the
 * simulator: NVL72 racks asked whole) fits exactly when K = G / S such
 * domains are wholly free, and the cluster counts the wholly free domains
 * of every level (full_doms). A cycle tries such a gang twice when it
 * must stay off the reserved nodes: around them (quiet), then on every
 * node, whose success makes it wait behind a reservation. Both answers
 * come from the count, where it is exact:
 *
 * - around the reserved nodes: fewer than K wholly free domains without a
 *   reserved node means no placement there (a partly busy domain holds no
 *   slice); otherwise the search places it, as before;
 * - on every node: K or more wholly free domains means a placement exists
 *   (the placement engine is complete); the reservation it waits behind
 *   is the first one with a node on a wholly free domain. Fewer: the
 *   search runs, to explain the wait.
 *
 * The gang's own reservation in the cluster (a search lends it) or nodes
 * of its own to avoid leave the decision to the searches. The
 * reservation named in a wait may differ from the one a placement's
 * nodes would have met first; what starts, waits and is reserved does
 * not. On the simulator's bench trace this saves 6,300 placements a
 * replay (3.90G to 3.72G instructions; doc/sched.md, "twelfth session"). */
#include <string.h>

#include "sched-internal.h"

uint8_t gs_sd_whole_level(const gpusched_sched *s, const gs_pl_req *r)
{
    if (r->ncons != 1 || r->stop >= 0 || r->pods_path || r->in.gpu_class != GPUSCHED_NONE ||
        r->in.labels_required || r->in.labels_forbidden || !gs_pl_whole_split(r))
        return 0;
    const uint32_t l = r->cons[0].level, g = s->p->whole_dom_gpus[l];
    return g && g == r->cons[0].size ? (uint8_t)(l + 1) : 0;
}

/* The domains of level l with a reserved node, each with its first
 * reservation, for the reservations made so far (rebuilt when they
 * change: a few times a cycle). */
static int reserved_domains(gpusched_sched *s, uint32_t l)
{
    if (s->wr_cycle == s->cycle_no && s->wr_fp == s->rfp && s->wr_level == l && s->wr_seen)
        return 0;
    const struct gpusched_topo *t = s->c->topo;
    if (gs_grow(&s->alloc, (void **)&s->wr_dom, &s->wr_cap, s->nrnodes + 1, sizeof *s->wr_dom) ||
        gs_grow(&s->alloc, (void **)&s->wr_idx, &s->wr_idx_cap, s->nrnodes + 1, sizeof *s->wr_idx) ||
        gs_grow(&s->alloc, (void **)&s->wr_seen, &s->wr_seen_cap, t->ndom[l], sizeof *s->wr_seen))
        return GPUSCHED_ENOMEM;
    if (s->wr_level != l || ++s->wr_gen == 0) {
        memset(s->wr_seen, 0, t->ndom[l] * sizeof *s->wr_seen);
        s->wr_gen = 1;
    }
    s->nwr = 0;
    for (uint32_t v = 0; v < s->nresv; v++) {
        const gs_resv *r = &s->resv[v];
        for (uint32_t i = 0; i < r->n; i++) {
            const uint32_t d = gs_topo_node_domain(t, s->rnodes[r->off + i], l);
            if (s->wr_seen[d] == s->wr_gen)
                continue;
            s->wr_seen[d] = s->wr_gen;
            s->wr_dom[s->nwr] = d;
            s->wr_idx[s->nwr++] = v;
        }
    }
    s->wr_cycle = s->cycle_no;
    s->wr_fp = s->rfp;
    s->wr_level = l;
    return 0;
}

int gs_sd_whole_try(gpusched_sched *s, const gs_sj *j, int *fits_around, const gs_resv **behind)
{
    const struct gpusched_cluster *c = s->c;
    if (!s->whole || !j->whole_level || gs_cluster_resv_find(c, j->id))
        return 0;
    const uint32_t l = j->whole_level - 1u, size = s->p->whole_dom_gpus[l], want = j->gpus / size;
    int rc = reserved_domains(s, l);
    if (rc)
        return rc;
    const uint32_t *free = c->agg[l].free_gpus;
    uint32_t whole = c->full_doms[l], on_reserved = 0, first = UINT32_MAX;
    for (uint32_t k = 0; k < s->nwr; k++)
        if (free[s->wr_dom[k]] == size) {
            on_reserved++;
            first = s->wr_idx[k] < first ? s->wr_idx[k] : first;
        }
    *fits_around = whole - on_reserved >= want;
    *behind = NULL;
    if (*fits_around)
        return 1;
    if (whole < want)
        return 0; /* the search explains */
    *behind = &s->resv[first];
    return 1;
}
