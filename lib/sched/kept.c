/* Kept reservations: a reservation one cycle found is kept by the next,
 * time and nodes, while nothing since could make it earlier or take its
 * nodes (doc/sched.md, "Kept reservations").
 *
 * A reservation at time T is placed on S(T): the GPUs free now plus those
 * of every running job expected to end by T; T is the least time that
 * fits. Since its search:
 * - a job expected to end before T ended: its GPUs were in S(T) already,
 *   and no earlier time fits (every S(t), t < T, is within an S(t') the
 *   search refused, t' < T);
 * - a gang started that is expected to end by T: its GPUs are in S(T)
 *   again, and starts only take GPUs from the earlier times;
 * - a gang started that runs past T on none of its nodes: they are still
 *   free at T, and no earlier time fits (a new search could choose other
 *   nodes: S(T) changed);
 * so T is still the least time and the nodes are free then. Anything else
 * (an end at or after T, a start on its nodes past T, an eviction, a
 * node's health, a change the caller made to the cluster, another
 * reservation before it, a new pod workload) sends the gang to a new
 * search. The scheduler logs its own changes to the cluster; the cluster
 * counts all of them, so one it did not make is seen. */
#include "sched-internal.h"

void gs_sd_chg_log(gpusched_sched *s, uint8_t kind, int64_t end, uint32_t slot)
{
    s->chg[s->nchg % GS_CHG_LOG] = (gs_chg){end, slot == GS_SJ_NONE ? 0 : s->j[slot].inc, slot, kind};
    s->nchg++;
}

void gs_sd_chg_sync(gpusched_sched *s, uint64_t own)
{
    if (s->c->changes != s->c_seen + own)
        gs_sd_chg_log(s, GS_CHG_OTHER, 0, GS_SJ_NONE);
    s->c_seen = s->c->changes;
}

void gs_sd_kept_swap(gpusched_sched *s)
{
    gs_resv *r = s->kresv;
    uint32_t rc = s->kresv_cap;
    uint32_t *n = s->krnodes;
    uint32_t nc = s->krnodes_cap;
    s->kresv = s->resv, s->kresv_cap = s->resv_cap, s->nkresv = s->nresv;
    s->krnodes = s->rnodes, s->krnodes_cap = s->rnodes_cap, s->nkrnodes = s->nrnodes;
    s->resv = r, s->resv_cap = rc, s->nresv = 0;
    s->rnodes = n, s->rnodes_cap = nc, s->nrnodes = 0;
    s->rfp = 0;
}

/* Whether gang x, started, still runs on none of v's nodes. */
static int runs_apart(const gpusched_sched *s, const gs_chg *x, const gs_resv *v)
{
    const gs_sj *j = &s->j[x->slot];
    if (j->inc != x->inc || j->state != GS_SJ_RUNNING)
        return 0;
    const gs_hold *h = gs_cluster_job_find(s->c, j->id);
    if (!h)
        return 0;
    const uint32_t *a = gs_hold_nodes(h), *b = s->krnodes + v->off;
    for (uint32_t i = 0, k = 0; i < h->npairs && k < v->n;) {
        if (a[i] == b[k])
            return 0;
        if (a[i] < b[k])
            i++;
        else
            k++;
    }
    return 1;
}

/* Whether change e could move reservation v. */
static int moves(const gpusched_sched *s, const gs_chg *e, const gs_resv *v)
{
    switch (e->kind) {
    case GS_CHG_FREE: return e->end >= v->time;
    case GS_CHG_TAKE: return e->end > v->time && !runs_apart(s, e, v);
    default: return 1;
    }
}

const gs_resv *gs_sd_kept(const gpusched_sched *s, uint32_t slot, int64_t now)
{
    if (!s->keep || s->c->changes != s->c_seen)
        return NULL;
    const gs_resv *v = NULL;
    for (uint32_t i = 0; i < s->nkresv && !v; i++)
        if (s->kresv[i].slot == slot && s->kresv[i].inc == s->j[slot].inc)
            v = &s->kresv[i];
    /* A time past now is an expected end, not "just after now" for a job
     * overdue (which moves with now). */
    if (!v || v->fp != s->rfp || v->wl_epoch != s->p->wl_epoch || v->time <= now || s->nchg - v->seq > GS_CHG_LOG)
        return NULL;
    for (uint64_t q = v->seq; q < s->nchg; q++)
        if (moves(s, &s->chg[q % GS_CHG_LOG], v))
            return NULL;
    return v;
}

uint64_t gs_sd_nodes_fp(uint64_t fp, const uint32_t *nodes, uint32_t n)
{
    fp = gs_sd_mix64(fp, n);
    for (uint32_t i = 0; i < n; i++)
        fp = gs_sd_mix64(fp, nodes[i]);
    return fp;
}
