/* The preemption engine's internals. Never installed. doc/preempt.md
 * explains the plan; this header names the pieces. */
#ifndef GS_PREEMPT_INTERNAL_H
#define GS_PREEMPT_INTERNAL_H

#include "cluster/cluster-internal.h"
#include "cluster/txn.h"
#include "core.h"
#include "gpusched/preempt.h"
#include "place/place-internal.h"

/* An eligible victim as seen from one domain of the scope level: the job
 * (by stable slot), the GPUs it holds inside the domain and the lowest-level
 * domain it starts in there. A job that spans several scope domains has an
 * entry in each. */
typedef struct gs_victim {
    uint32_t dom;       /* scope domain (0 for the whole cluster) */
    uint32_t slot;      /* record slot in the cluster's job table */
    uint32_t gpus;      /* its GPUs inside `dom` */
    uint32_t home;      /* lowest-level domain of its first node inside `dom` */
    double rank_cost;   /* clearing `home`: cost per GPU gained (victims.c) */
    double rank_evict;  /* clearing `home`: GPUs evicted per GPU gained */
    uint64_t cost;      /* the job's cost_hint */
    uint64_t id;
} gs_victim;

/* What a plan costs, compared lexicographically: least cost, then fewest
 * GPUs evicted, then fewest victims. */
typedef struct gs_pp_cost {
    uint64_t cost;
    uint64_t gpus;
    uint32_t count;
} gs_pp_cost;

/* A domain of the scope level that may hold the gang once its victims
 * are gone: its entries v[a, b), the shortest prefix that frees enough
 * GPUs by count and what that prefix costs (a lower bound of its plan). */
typedef struct gs_pp_dom {
    uint32_t dom, a, b, k0;
    gs_pp_cost lb;
} gs_pp_dom;

struct gpusched_preempt_plan {
    gs_alloc alloc;
    uint64_t *ids;              /* victims, ascending */
    uint32_t n, cap;
    uint64_t cost, gpus;
    /* Scratch kept across calls (no allocation in steady state). */
    gs_victim *v;               /* entries of every scope domain, grouped by domain */
    uint32_t nv, vcap;
    gs_victim *tmp;             /* room for grouping and merging */
    uint32_t tmp_cap;
    uint32_t *start;            /* per scope domain: where its group starts */
    uint32_t start_cap;
    uint32_t *lent;             /* slots lent right now */
    uint32_t nlent, lent_cap;
    gs_pp_dom *doms;
    uint32_t doms_cap;
    /* Defragmentation: the moves (job ids; their new pairs, move i at
     * move_off[i] .. move_off[i + 1]) and the gang's placement, both held
     * (claimed without a job) while the plan is checked. */
    uint64_t *move_ids;
    uint32_t nmoves, moves_cap;
    uint32_t *move_off;
    uint32_t off_cap;
    uint32_t *move_nodes;
    uint64_t *move_masks;
    uint32_t move_pairs, move_pairs_cap;
    uint32_t *gang_nodes;
    uint64_t *gang_masks;
    uint32_t ngang, gang_cap;
    gpusched_job *move_jobs;    /* commit: the movers' descriptors */
    void **move_blocks;         /* commit: pair blocks, gang first */
    double *leaf_cost, *leaf_gpus;  /* per lowest-level domain */
    uint32_t nleaf;
    gpusched_place_result *probe;   /* the what-if searches' nodes */
    /* The priority tier searched: victims of priority <= prio_cap only. */
    int32_t prio_cap;
    int32_t *prios;             /* scratch: the victims' distinct priorities */
    uint32_t prios_cap;
    /* What protection kept out (gpusched_preempt_plan_protected). */
    uint32_t protected_jobs;
    uint64_t protected_gpus;
    int64_t protected_until;
    /* How good the plan is known to be (gpusched_preempt_plan_optimality). */
    uint32_t exact;
    uint64_t lower_bound;
    /* The best plan's victims (job slots) while other domains are searched. */
    uint32_t *best;
    uint32_t nbest, best_cap;
    gs_victim *order;           /* exact search: one domain's candidates */
    uint32_t order_cap;
    struct gs_pp_open *opens;   /* indexed search: domains waiting */
    uint32_t opens_cap;
    uint64_t *bound_gpus;       /* bound.c: per domain of one level */
    uint32_t bound_cap;
    uint32_t *whole_free;       /* search.c: the whole-domain hint's scratch */
    uint32_t whole_cap;
    /* wholeplan.c: per domain of the slices' level, the victims and the
     * domains each touches, the components and their costs. */
    struct gs_whole_dom *wdom;
    uint32_t wdom_cap, wlevel;
    struct gs_whole_vic *wvic;
    uint32_t nwvic, wvic_cap;
    uint32_t *wvdom;
    uint32_t nwvdom, wvdom_cap;
    uint32_t *wcomp, *woff, *wms, *wcd, *wcdoff, *wcv, *wcvoff;
    uint32_t nwcomp, wcomp_cap, woff_cap, wms_cap, wcd_cap, wcdoff_cap, wcv_cap, wcvoff_cap;
    gs_pp_cost *wmc, *wsub, *wrow;
    uint32_t wmc_cap, wsub_cap, wrow_cap;
    uint8_t *wpick;
    uint32_t wpick_cap;
    bool whole_off;             /* GPUSCHED_PREEMPT_WHOLE=0 at creation */
};

/* victims.c: every eligible victim's (or, with `movers`, every job a
 * defragmentation may move) entries for scope level `scope`
 * (-1: the whole cluster), grouped by scope domain and ordered inside each
 * as the plan takes them: by rack, the racks cheapest to clear first, then
 * by cost (by_rack), or by cost alone. Fills plan->v / plan->nv. */
int gs_pp_collect(gpusched_preempt_plan *plan, const struct gpusched_cluster *c, const gs_pl_req *r,
                  int32_t scope, bool by_rack, bool movers);
/* The victims of the whole cluster (scope -1, one entry per job, with the
 * racks' ranks when `ranked`), not grouped or ordered, for a caller that
 * takes them in its own order: `dom` holds the job's priority instead, as
 * gs_pp_prio_key() (the domain is 0 for all). */
int gs_pp_collect_cluster(gpusched_preempt_plan *plan, const struct gpusched_cluster *c, const gs_pl_req *r,
                          bool ranked);
/* A priority as an unsigned key of the same order. */
static inline uint32_t gs_pp_prio_key(int32_t prio) { return (uint32_t)prio ^ 0x80000000u; }
/* The order gs_pp_collect gives inside a domain. */
bool gs_pp_taken_before(const gs_victim *a, const gs_victim *b);

/* move.c: the request that places running job h again with its shape
 * (see gpusched_placer_move); q->job points to `job`, filled from h. */
void gs_pp_shape(const struct gpusched_cluster *c, const gs_hold *h, gpusched_place_request *q, gpusched_job *job);

/* The domain of level `scope` (-1: the whole cluster, domain 0) holding
 * lowest-level domain `leaf`. Inline: the passes over every running job
 * (the bound, collecting the victims) ask it twice per job. */
static inline uint32_t gs_pp_scope_domain(const struct gpusched_topo *t, int32_t scope, uint32_t leaf)
{
    if (scope < 0)
        return 0;
    uint32_t d = leaf;
    for (uint32_t l = t->nlevels - 1; l > (uint32_t)scope; l--)
        d = t->dom_parent[l][d];
    return d;
}

static inline bool gs_pp_cost_less(gs_pp_cost a, gs_pp_cost b)
{
    if (a.cost != b.cost)
        return a.cost < b.cost;
    if (a.gpus != b.gpus)
        return a.gpus < b.gpus;
    return a.count < b.count;
}

static inline void gs_pp_cost_add(gs_pp_cost *a, uint64_t cost, uint64_t gpus)
{
    a->cost = a->cost + cost < a->cost ? UINT64_MAX : a->cost + cost;
    a->gpus += gpus;
    a->count++;
}

/* ---- the search shared by preemption and defragmentation (search.c) ---- */

/* One planning call: the placer and cluster, the plan (its scratch and
 * the lent set), the request. */
typedef struct gs_pp {
    gpusched_placer *p;
    struct gpusched_cluster *c;
    gpusched_preempt_plan *plan;
    const gs_pl_req *r;
    int32_t collected;          /* variant of the entries in plan->v; INT32_MIN: none */
    bool defrag;                /* movers instead of victims (defrag.c) */
    bool best_lent;             /* what is lent is the best plan's prefix */
    uint32_t hold_mark;         /* defrag: the transaction before the gang's hold */
    uint32_t checked;           /* defrag: domains checked since the first plan */
    int32_t lo_prio, hi_prio;   /* bound.c: the least and most priority of the
                                 * preemptible jobs below the gang's (lo > hi: none) */
} gs_pp;

/* Defragmentation checks at most this many more domains, in order of
 * bound, once one works: checking one places every mover, and on a
 * cluster where every rack has a mover the bounds rarely end the search
 * (doc/preempt.md). */
#define GS_PP_DEFRAG_MORE 8u



/* The best domain a search found (or, for defragmentation, the first that
 * works): its scope, order and prefix length. */
typedef struct gs_pp_best {
    bool found;
    bool by_rack;
    int32_t scope;
    uint32_t dom, k;
    gs_pp_cost cost;
} gs_pp_best;

static inline gs_hold *gs_pp_job(const gs_pp *x, uint32_t slot) { return &x->c->jobs.rec[slot]; }

/* The lent set, a stack of job slots: lend one, unlend down to k, or lend
 * exactly the first k entries of a domain's list. */
int gs_pp_lend(gs_pp *x, uint32_t slot);
int gs_pp_unlend_to(gs_pp *x, uint32_t k);
int gs_pp_set_prefix(gs_pp *x, const gs_pp_dom *d, uint32_t k);
/* 1 if the gang fits with what is lent now (its nodes in plan->probe), 0
 * if not, or an error. */
int gs_pp_fits(gs_pp *x);
/* The same answer without the nodes (plan->probe then holds none): for
 * the what-ifs that only need yes or no. */
int gs_pp_feasible(gs_pp *x);
/* Whether plan->v holds the entries of this scope, in either order. */
bool gs_pp_collected_scope(const gs_pp *x, int32_t scope);
/* The entries of one variant (scope, order) in plan->v, unless there. */
int gs_pp_collect_as(gs_pp *x, int32_t scope, bool by_rack);
/* Branch and bound over one variant's domains; for defragmentation a
 * domain counts when its movers all find a place (nothing stays held). */
int gs_pp_search_scope(gs_pp *x, int32_t scope, bool by_rack, gs_pp_best *best);
/* Every variant the request calls for, in order (doc/preempt.md). */
int gs_pp_search_all(gs_pp *x, gs_pp_best *best);
/* Drops the lent entries the gang does not need. */
int gs_pp_prune(gs_pp *x);
/* bound.c: 1 if no set of eligible victims can make the gang fit, by
 * counting GPUs per domain of each of its constraints (nothing lent), with
 * res saying why; 0 if one may; or an error. */
int gs_pp_bound(gs_pp *x, gpusched_place_result *res);
/* wholeplan.c: the plan of a gang whose only constraint is slices that
 * are each a whole domain, when every eligible victim sits inside one
 * such domain and nothing else the count cannot see is in the way: 1
 * with the plan's victims lent (checked to fit), its tier in *prio_cap
 * and its cost, optimal for the policy; 0 with nothing lent when the
 * request is not one it decides; or an error. */
int gs_pp_whole_plan(gs_pp *x, int32_t *prio_cap, gs_pp_cost *cost);
/* pods.c: the victims of a gang with pods, left lent and pruned; *n is 0
 * (with every eligible victim lent) when none lets it fit. */
int gs_pp_plan_pods(gs_pp *x, uint32_t *n);
/* The GPUs of the job's own reservation `own` inside scope domain `dom`,
 * walking its pairs from *i on (domains visited in ascending order). */
uint64_t gs_pp_own_in(const struct gpusched_topo *t, const gs_hold *own, int32_t scope, uint32_t dom, uint32_t *i);

/* exact.c: branch and bound over the victim subsets of each domain of
 * `scope` with few candidates, from the best plan so far (*best, *found;
 * its victims in plan->best, and lent). Improves them in place; sets
 * plan->exact and plan->lower_bound. Leaves the best plan lent
 * (x->best_lent) when it searched no domain, else nothing. */
int gs_pp_exact(gs_pp *x, int32_t scope, gs_pp_cost *best, bool *found);
/* exact.c: the lent set becomes the best plan's victims (plan->best). */
int gs_pp_keep_lent_as_best(gpusched_preempt_plan *plan);
/* exact.c: the same over one domain's n candidates, `need` GPUs short by
 * count; *calls counts the what-ifs spent (a budget shared across
 * domains), *complete turns false when the budget cut it short, *lb is
 * the domain's root bound (UINT64_MAX: it cannot free enough). */
int gs_pp_exact_domain(gs_pp *x, const gs_victim *cands, uint32_t n, uint64_t need, gs_pp_cost *best,
                       bool *found, uint32_t *calls, bool *complete, uint64_t *lb);
/* indexed.c: a gang required inside one lowest-level domain, searched
 * best first over the cluster's preemption index (gs_cluster_pindex) so
 * that only the domains whose bound can beat the best plan are visited.
 * 1 when it decided (*found, *best and plan->best set; plan->exact and
 * plan->lower_bound too), 0 when the request is not one it handles or it
 * found no plan (the caller then takes the collecting path), or an
 * error. Leaves nothing lent. */
int gs_pp_indexed(gs_pp *x, gs_pp_cost *best, bool *found);
/* Whether job h is a candidate: victims of a preemption are preemptible,
 * of lower priority, up to the priority tier being searched; movers of a
 * defragmentation are movable, of a priority not above the gang's;
 * neither while protected. Jobs with resources or GPU fractions are not
 * moved yet, and a job of fractions or without GPUs is evicted only for a
 * gang with pods: the GPU-counting searches of whole-GPU gangs see what
 * whole GPUs a job frees, a fraction frees a GPU only with the last of its
 * sharers, and a job without GPUs frees none (its cost per GPU has no
 * meaning). Inline: every pass over the running jobs asks it per job. */
static inline bool gs_pp_eligible(const struct gpusched_cluster *c, const gs_hold *h, const gs_pl_req *r,
                                  int32_t prio_cap, bool movers)
{
    if (h->id == r->job.id || r->in.now < h->protected_until)
        return false;
    const gs_podx *px = gs_hold_podx(c, h);
    if (px && (movers || (!r->pods_path && (px->milli || !h->ngpus))))
        return false;
    if (movers)
        return (h->flags & GPUSCHED_JOB_FLAG_MOVABLE) && h->priority <= r->job.priority;
    return (h->flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE) && h->priority < r->job.priority && h->priority <= prio_cap;
}
/* A job that would be a victim but for its protection: counted so that a
 * plan can say what protection kept out of it. */
static inline void gs_pp_count_protected(gpusched_preempt_plan *plan, const gs_hold *h, const gs_pl_req *r)
{
    if (h->id == r->job.id || r->in.now >= h->protected_until || !(h->flags & GPUSCHED_JOB_FLAG_PREEMPTIBLE) ||
        h->priority >= r->job.priority)
        return;
    if (!plan->protected_jobs || h->protected_until < plan->protected_until)
        plan->protected_until = h->protected_until;
    plan->protected_jobs++;
    plan->protected_gpus += h->ngpus;
}

/* defrag.c: with the movers lent, the gang held and every mover placed
 * and held: 1, or 0 (nothing held), or an error. */
int gs_pp_try_moves(gs_pp *x);
/* defrag.c: gives back the gang's and the movers' holds. */
void gs_pp_unhold_all(gs_pp *x);
/* What the lent jobs cost together. */
gs_pp_cost gs_pp_lent_cost(const gs_pp *x);

#endif
