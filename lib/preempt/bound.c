/* A test every plan must pass, made before any victim is lent: per
 * constraint of the gang (slices of S GPUs, each inside one domain of level
 * l; the required level is one slice of the whole gang; and the cluster,
 * one slice of the whole gang), the domains must hold the gang's G / S slices
 * when every eligible victim is gone. A domain then has at most its free
 * GPUs, the eligible victims' GPUs in it and the gang's own reservation
 * there, so it holds at most floor(that / S) slices. Lending frees nothing
 * else, so a gang that fails the test fails with every victim lent: the
 * search that would learn it lend by lend (what-if placements with up to
 * every eligible victim lent, then the exact pass, then all of them lent
 * once more to explain) is not run, and the test's numbers explain
 * instead. doc/preempt.md, "A bound before the search". */
#include <stdio.h>

#include "preempt-internal.h"

/* Adds a job's GPUs to their domains of level l: at once for a job inside
 * one domain (the common case), else pair by pair. */
static void add_job(const struct gpusched_topo *t, const gs_hold *h, int32_t l, uint64_t *dom_gpus)
{
    if (!h->npairs)
        return;
    const uint32_t *nodes = gs_hold_nodes(h);
    uint32_t first = gs_pp_scope_domain(t, l, t->node_leaf[nodes[0]]);
    if (first == gs_pp_scope_domain(t, l, t->node_leaf[nodes[h->npairs - 1]])) {
        dom_gpus[first] += h->ngpus;
        return;
    }
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++)
        dom_gpus[gs_pp_scope_domain(t, l, t->node_leaf[nodes[i]])] += gs_popcount64(masks[i]);
}

/* The levels checked: the cluster (-1), then each constraint's. */
static int32_t level_of(const gs_pl_req *r, uint32_t i) { return i ? (int32_t)r->cons[i - 1].level : -1; }

/* Per domain of every level checked, the GPUs the gang could have with
 * every eligible victim gone, in plan->bound_gpus (level i's domains from
 * off[i] on): one pass over the jobs, which also counts the protected
 * ones, as collecting the victims would, and finds the priority range the
 * priority tier needs (preempt.c). */
static int gpus_without_victims(gs_pp *x, uint32_t *off)
{
    const struct gpusched_cluster *c = x->c;
    const struct gpusched_topo *t = c->topo;
    const gs_pl_req *r = x->r;
    gpusched_preempt_plan *plan = x->plan;
    const uint32_t nl = r->ncons + 1;
    off[0] = 0;
    for (uint32_t i = 0; i < nl; i++)
        off[i + 1] = off[i] + (i ? t->ndom[level_of(r, i)] : 1);
    if (gs_grow(&plan->alloc, (void **)&plan->bound_gpus, &plan->bound_cap, off[nl], sizeof *plan->bound_gpus))
        return GPUSCHED_ENOMEM;
    uint64_t *g = plan->bound_gpus;
    g[0] = c->root_free_gpus;
    for (uint32_t i = 1; i < nl; i++)
        for (uint32_t d = 0; d < off[i + 1] - off[i]; d++)
            g[off[i] + d] = c->agg[level_of(r, i)].free_gpus[d];
    const gs_hold *own = gs_cluster_resv_find(c, r->job.id);
    for (uint32_t i = 0; own && i < nl; i++)
        add_job(t, own, level_of(r, i), g + off[i]);
    plan->protected_jobs = 0;
    plan->protected_gpus = 0;
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (uint32_t j = 0; j < c->jobs.count; j++) {
        const gs_hold *h = &c->jobs.rec[c->jobs.live[j]];
        /* The priority tier's range, so that its own pass is not needed. */
        if ((h->flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE) && h->priority < r->job.priority) {
            lo = h->priority < lo ? h->priority : lo;
            hi = h->priority > hi ? h->priority : hi;
        }
        if (!gs_pp_eligible(c, h, r, INT32_MAX, false)) {
            gs_pp_count_protected(plan, h, r);
            continue;
        }
        g[0] += h->ngpus;
        for (uint32_t i = 1; i < nl; i++)
            add_job(t, h, level_of(r, i), g + off[i]);
    }
    x->lo_prio = lo;
    x->hi_prio = hi;
    return 0;
}

/* The failure, in numbers, for constraint `cons` (NULL: the cluster);
 * `outside` when domains with an avoided node were not counted. */
static void explain(gs_pp *x, const gs_pl_cons *cons, uint64_t slices, uint64_t best, bool outside,
                    gpusched_place_result *res)
{
    const gs_pl_req *r = x->r;
    char msg[GS_ERRMSG_MAX], a[32], b[32];
    uint32_t reason;
    if (!cons) {
        reason = GPUSCHED_REASON_NO_GPUS;
        gs_pl_fmt_count(a, sizeof a, r->gpus);
        gs_pl_fmt_count(b, sizeof b, best);
        snprintf(msg, sizeof msg, "%s GPUs asked; with every eligible victim gone the cluster would have %s", a, b);
    } else {
        const char *lname = x->c->topo->level_names[cons->level];
        if (cons->size == r->gpus) {
            reason = GPUSCHED_REASON_REQUIRED;
            gs_pl_fmt_count(a, sizeof a, best);
            gs_pl_fmt_count(b, sizeof b, r->gpus);
            snprintf(msg, sizeof msg, "required %s: with every eligible victim gone the best %s would have %s of %s GPUs",
                     lname, lname, a, b);
        } else {
            reason = GPUSCHED_REASON_SLICES;
            gs_pl_fmt_count(a, sizeof a, slices);
            gs_pl_fmt_count(b, sizeof b, r->gpus / cons->size);
            snprintf(msg, sizeof msg, "slices of %u GPUs at %s: with every eligible victim gone the %ss%s would hold %s of %s",
                     cons->size, lname, lname, outside ? " without an avoided node" : "", a, b);
        }
    }
    gs_pl_result_fail(x->p, res, reason, msg);
}

int gs_pp_bound(gs_pp *x, gpusched_place_result *res)
{
    const gs_pl_req *r = x->r;
    if (r->pods_path)
        return 0; /* pods free cpu and memory too: pods.c counts them */
    uint32_t off[GPUSCHED_MAX_SLICES + 3];
    int rc = gpus_without_victims(x, off);
    if (rc)
        return rc;
    /* A gang of whole domains (wholedoms.c) that avoids nodes: a domain
     * with an avoided node never holds one of its slices, which need every
     * GPU of the domain (a scheduler's gang that avoids the reserved nodes
     * fails here instead of after lending every victim). */
    gs_pl_whole w;
    gpusched_preempt_plan *plan = x->plan;
    const bool outside = r->in.avoid_count &&
                         gs_pl_whole_begin(x->c, r, &plan->alloc, &plan->whole_free, &plan->whole_cap, &w);
    /* The cluster first, then the constraints from the loosest: the first
     * that fails is the reason, as the placement engine says it. */
    for (uint32_t i = 0; i <= r->ncons; i++) {
        const gs_pl_cons *cons = i ? &r->cons[i - 1] : NULL;
        const uint64_t size = cons ? cons->size : r->gpus, need = r->gpus / size;
        const uint64_t *g = plan->bound_gpus + off[i];
        const bool out = outside && i == 1; /* whole domains: one constraint */
        uint64_t slices = 0, best = 0;
        for (uint32_t d = 0; d < off[i + 1] - off[i] && slices < need; d++) {
            slices += out && w.free[d] == GS_PL_WHOLE_OUT ? 0 : g[d] / size;
            best = g[d] > best ? g[d] : best;
        }
        if (slices < need) {
            explain(x, cons, slices, best, out, res);
            return 1;
        }
    }
    return 0;
}
