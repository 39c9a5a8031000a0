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
 * - a job expected to end at or after T ended, on nodes where no pod (or
 *   whole node) of the gang and no slice around them would find room just
 *   before T, counted from above: a fit before T would have to use one of
 *   its GPUs, in such a pod or slice;
 * so T is still the least time and the nodes are free then, and the
 * changes so far need not be looked at again. Anything else (an end at or
 * after T whose GPUs a pod or slice could use, a start on its nodes past
 * T, an eviction, a node's health, a change the caller made to the
 * cluster, another reservation before it, a new pod workload) sends the
 * gang to a new search. The scheduler logs its own changes to the
 * cluster; the cluster counts all of them, so one it did not make is
 * seen. */
#include <string.h>

#include "sched-internal.h"

void gs_sd_chg_log(gpusched_sched *s, uint8_t kind, int64_t end, uint32_t slot)
{
    s->chg[s->nchg % GS_CHG_LOG] =
        (gs_chg){.end = end, .inc = slot == GS_SJ_NONE ? 0 : s->j[slot].inc, .slot = slot, .kind = kind};
    s->nchg++;
}

void gs_sd_chg_log_end(gpusched_sched *s, uint32_t slot)
{
    const gs_sj *j = &s->j[slot];
    gs_sd_chg_log(s, GS_CHG_FREE, gs_sj_expected_end(j), GS_SJ_NONE);
    gs_chg *e = &s->chg[(s->nchg - 1) % GS_CHG_LOG];
    const gs_hold *h = gs_cluster_job_find(s->c, j->id);
    if (h && h->npairs <= GS_CHG_NODES && !gs_hold_podx(s->c, h)) {
        memcpy(e->nodes, gs_hold_nodes(h), h->npairs * sizeof *e->nodes);
        e->nnodes = (uint8_t)h->npairs;
    }
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
    s->krnodes = s->rnodes, s->krnodes_cap = s->rnodes_cap;
    s->resv = r, s->resv_cap = rc, s->nresv = 0;
    s->rnodes = n, s->rnodes_cap = nc, s->nrnodes = 0;
    s->rfp = 0;
}

/* Whether gang x, started, runs on none of v's nodes now. A gang that
 * ran and is gone holds nothing: its GPUs are as they were before it
 * started (its end, an eviction or a node failure is logged after). */
static int runs_apart(const gpusched_sched *s, const gs_chg *x, const gs_resv *v)
{
    const gs_sj *j = &s->j[x->slot];
    if (j->inc != x->inc || j->state != GS_SJ_RUNNING)
        return 1;
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

/* GPUs of nodes [a, b) free just before time t: free now, or held by a
 * job of the scheduler's expected to end before t. Counted from above: a
 * GPU shared by fractions counts as free. */
static uint32_t free_before(const gpusched_sched *s, uint32_t a, uint32_t b, int64_t t)
{
    const struct gpusched_cluster *c = s->c;
    uint32_t n = 0, last = 0;
    int last_free = 0;
    for (uint32_t v = a; v < b; v++) {
        const uint32_t base = gs_cl_gpu_base(c, v), gpus = gs_cl_node_gpus(c, v);
        for (uint32_t i = 0; i < gpus; i++) {
            const uint32_t h = c->gpu_holder[base + i];
            if (h == 0 || h == GS_HOLDER_SHARED) {
                n++;
                continue;
            }
            if (h & GS_HOLDER_RESV)
                continue;
            if (h != last) { /* a job's GPUs are side by side */
                const uint32_t k = gs_sj_find(s, c->jobs.rec[h - 1].id);
                last = h;
                last_free = k != GS_SJ_NONE && s->j[k].state == GS_SJ_RUNNING && gs_sj_expected_end(&s->j[k]) < t;
            }
            n += (uint32_t)last_free;
        }
    }
    return n;
}

/* Whole GPUs gang j needs on each node of its placement: a whole node,
 * one pod's (none for pods of fractions or of cpu alone), or one. */
static uint32_t per_node(const gpusched_sched *s, const gs_sj *j, uint32_t v)
{
    const gpusched_place_request *q = &j->req;
    if (q->gpu_milli)
        return 0;
    if (q->split == GPUSCHED_SPLIT_WHOLE_NODES)
        return gs_cl_node_gpus(s->c, v);
    return q->split == GPUSCHED_SPLIT_PODS ? q->pod_gpus : 1;
}

/* Whether a placement of gang j just before time t could use a GPU of
 * node v: the pod (or whole node) holding it and each slice around it
 * must find their GPUs there. Without pods or slices it could. */
static int node_usable(const gpusched_sched *s, const gs_sj *j, uint32_t v, int64_t t)
{
    const gpusched_place_request *q = &j->req;
    const struct gpusched_topo *topo = s->c->topo;
    if (q->gpu_milli)
        return 1;
    const uint32_t pod = per_node(s, j, v);
    if (pod > 1 && free_before(s, v, v + 1, t) < pod)
        return 0;
    for (uint32_t i = 0; i < 2; i++) {
        const uint32_t l = q->slice_level[i];
        if (!q->slice_gpus[i] || l >= topo->nlevels)
            continue;
        const uint32_t d = gs_topo_node_domain(topo, v, l);
        if (free_before(s, topo->dom_start[l][d], topo->dom_start[l][d + 1], t) < q->slice_gpus[i])
            return 0;
    }
    return 1;
}

int gs_sd_kept_nodes_free(const gpusched_sched *s, const gs_resv *v, const uint32_t *nodes)
{
    const gs_sj *j = &s->j[v->slot];
    for (uint32_t i = 0; i < v->n; i++)
        if (free_before(s, nodes[i], nodes[i] + 1, v->time + 1) < per_node(s, j, nodes[i]))
            return 0;
    return 1;
}

/* Whether the end of a job expected to end at or after reservation v's
 * time could let its gang fit earlier: only through a pod or slice that
 * holds one of the job's GPUs, so around one of its nodes. */
static int end_moves(const gpusched_sched *s, const gs_chg *e, const gs_resv *v)
{
    if (!e->nnodes)
        return 1;
    const gs_sj *j = &s->j[v->slot];
    for (uint32_t i = 0; i < e->nnodes; i++)
        if (node_usable(s, j, e->nodes[i], v->time))
            return 1;
    return 0;
}

/* Whether change e could move reservation v. */
static int moves(const gpusched_sched *s, const gs_chg *e, const gs_resv *v)
{
    switch (e->kind) {
    case GS_CHG_FREE: return e->end >= v->time && end_moves(s, e, v);
    case GS_CHG_TAKE: return e->end > v->time && !runs_apart(s, e, v);
    default: return 1;
    }
}

const gs_resv *gs_sd_kept(const gpusched_sched *s, uint32_t slot, int64_t now)
{
    if (!s->keep_resv || s->c->changes != s->c_seen)
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
