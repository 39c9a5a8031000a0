/* The placement engine's internals. Never installed. doc/placement.md
 * explains the objective and the search; this header names the pieces.
 *
 * Levels in the search: -1 is the whole cluster (the "root"), 0 .. L-1 the
 * topology's domain levels, L (= nlevels) the nodes. Arrays indexed by such
 * a level are shifted by one (LV(l) = l + 1). */
#ifndef GS_PLACE_INTERNAL_H
#define GS_PLACE_INTERNAL_H

#include "fscan.h"
#include "cluster/cluster-internal.h"
#include "core.h"
#include "gpusched/place.h"
#include "heap.h"
#include "topo/topo-internal.h"

#define GS_PL_LEVELS (GS_MAX_LEVELS + 2) /* root, domain levels, nodes */
#define LV(l) ((l) + 1)

/* Locality keys: the vector of domains used per counted level, packed in
 * mixed radix (level j weighs prod_{k>j}(count_k + 1)), so that comparing
 * keys compares vectors lexicographically. */
__extension__ typedef unsigned __int128 gs_key;
#define GS_KEY_INF (~(gs_key)0)

/* A placement constraint after normalization: every piece of `size` GPUs
 * lies in one domain of `level`. The required level is the constraint
 * whose size is the whole gang. */
typedef struct gs_pl_cons {
    uint32_t level;
    uint32_t size;
} gs_pl_cons;

/* One pod's shape, for requests with resources or GPU fractions (pods.c)
 * and for the fragmentation policy's workload (frag.c). */
typedef struct gs_pod_shape {
    uint32_t pod_gpus;          /* whole GPUs per pod (milli 0) */
    uint32_t milli;             /* 1..999: a fraction of one GPU; 0: whole GPUs or none */
    uint32_t nres;              /* res[0..nres) asked, the rest 0 */
    uint32_t res[GPUSCHED_MAX_RESOURCES];
    bool any_class;
    bool whole_node;            /* each pod takes a node where nothing runs, all
                                 * its pod_gpus GPUs (nodes of that many GPUs) */
    uint64_t classes[4];        /* allowed classes (bit c), when !any_class */
    double weight;              /* workload shapes only */
} gs_pod_shape;

static inline bool gs_shape_class_ok(const gs_pod_shape *s, uint32_t cls)
{
    return s->any_class || (s->classes[cls >> 6] >> (cls & 63) & 1);
}

/* A validated, normalized request. */
typedef struct gs_pl_req {
    gpusched_place_request in;  /* the caller's fields, copied in (in.job: NULL) */
    gpusched_job job;           /* the caller's job descriptor, copied in */
    uint32_t gpus;              /* G */
    uint32_t split;
    uint32_t u0;                /* GPUs per node-level unit: 1, pod, node size */
    uint32_t u0_recip;          /* 2^16 / u0 + 1: see gs_pl_div_u0 (gs_pl_set_u0 keeps it) */
    uint32_t whole_w;           /* whole nodes: node GPU count, else 0 */
    uint32_t ncons;             /* constraints, shallowest first, sizes decreasing */
    gs_pl_cons cons[GPUSCHED_MAX_SLICES + 1];
    int32_t stop;               /* shallowest level a single domain may be: the
                                 * required level, or -1 */
    int32_t pref;               /* deepest counted level (L when none) */
    int32_t deepest_cons;       /* level of the deepest constraint, -1 if none */
    bool filtered;              /* class, labels or avoided nodes */
    bool agg_exact_nodes;       /* aggregates give exact node-level units */
    bool avoid_exact;           /* so do they less the avoided nodes' units: avoided
                                 * nodes are the only filter (capacity.c) */
    /* unit[LV(l)]: GPUs per unit counted at level l; ratio[LV(l)]: units of
     * level l+1 per unit of level l (l = -1 .. L-1). */
    uint32_t unit[GS_PL_LEVELS];
    uint32_t ratio[GS_PL_LEVELS];
    gs_key weight[GS_PL_LEVELS];/* key weight of one domain at level l (0: not counted) */
    bool key64;                 /* every key is under 2^62 (derive_weights): knapsacks in 64 bits */
    /* Pods with resources or fractions (pods.c): placed by gs_pl_pods_place
     * instead of the GPU search. */
    bool pods_path;
    uint32_t npods;
    uint32_t slice_pods;        /* pods per slice (0: no slice constraint) */
    uint32_t slice_level;       /* every slice inside one domain of this level */
    uint32_t slice2_pods;       /* a second, inner constraint (0: none): slices of */
    uint32_t slice2_level;      /* slice2_pods pods, deeper, dividing the outer's */
    uint32_t policy;
    gs_pod_shape shape;
} gs_pl_req;

/* Memory for one search: chunks that never move, released by mark. */
typedef struct gs_arena_chunk {
    struct gs_arena_chunk *next;
    size_t cap, top;
    _Alignas(16) unsigned char data[];
} gs_arena_chunk;

typedef struct gs_arena {
    const gs_alloc *alloc;
    gs_arena_chunk *head;       /* oldest chunk; `next` goes to newer ones */
    gs_arena_chunk *cur;        /* the chunk being filled (NULL: none yet) */
} gs_arena;

typedef struct gs_arena_mark {
    gs_arena_chunk *chunk;
    size_t top;
} gs_arena_mark;

void *gs_arena_get(gs_arena *a, size_t bytes);
gs_arena_mark gs_arena_save(const gs_arena *a);
void gs_arena_restore(gs_arena *a, gs_arena_mark m);
void gs_arena_reset(gs_arena *a);
void gs_arena_free(gs_arena *a);

struct gpusched_place_result {
    gs_alloc alloc;
    uint32_t reason;
    int committed;
    char msg[GS_ERRMSG_MAX];
    /* A placement's message is written when first asked for: formatting
     * costs more than a small placement. */
    const struct gpusched_topo *msg_topo;  /* non-NULL: message still to write */
    uint32_t msg_gpus;
    struct gpusched_topo *topo;             /* a reference, for the level names */
    uint32_t nlevels;
    uint32_t n, cap;            /* nodes */
    uint32_t *nodes;
    uint64_t *masks;
    uint32_t npods, pod_cap;
    uint32_t *pod_nodes;
    uint32_t pods_u0;           /* non-zero: pod_nodes still to write (room
                                 * reserved), a pod per pods_u0 GPUs of each
                                 * node: written when first asked for, as the
                                 * message is (most callers read nodes only) */
    uint32_t ndoms_total, doms_cap;
    uint32_t *doms;             /* domains of every level, concatenated */
    uint32_t dom_off[GS_MAX_LEVELS + 2];
    uint32_t locality[GS_MAX_LEVELS + 1];
};

struct gpusched_placer {
    gs_alloc alloc;
    gs_err err;
    struct gpusched_cluster *c;
    const struct gpusched_topo *t;
    uint32_t nlevels;
    /* Static: most GPUs in one domain of each level (nodes: largest node). */
    uint32_t max_dom_gpus[GS_PL_LEVELS];
    uint8_t min_node_gpus;
    /* Memoized exact capacities of the current search, valid where the
     * stamp equals `gen`. Per level l = 0 .. L-1. */
    uint32_t *cap_val[GS_MAX_LEVELS];
    uint32_t *cap_gen[GS_MAX_LEVELS];
    uint32_t *avoid_gen;        /* per node: == gen when avoided */
    uint32_t gen;
    /* Units of the avoided nodes per domain (valid where avu_gen ==
     * avu_epoch) and in all, ready for the search where avu_done == gen;
     * allocated on first use (capacity.c). A search avoiding the same list
     * for the same unit as the last one recounts only the nodes whose units
     * changed: avc_raw is that list as given, avc_node its distinct nodes,
     * avc_units what each counted, avc_stamp the cluster's change counter
     * of each node then (only a node whose counter moved is counted
     * again). */
    uint32_t *avu_val[GS_MAX_LEVELS];
    uint32_t *avu_gen[GS_MAX_LEVELS];
    uint64_t avu_root;
    uint32_t avu_done, avu_epoch;
    uint32_t *avc_raw, *avc_node, *avc_units, *avc_stamp;
    uint32_t avc_nraw, avc_n, avc_cap, avc_u0, avc_whole;
    bool avc_valid;
    gs_arena arena;
    /* What the search chose, in ascending order: nodes and GPU masks go
     * straight into the result being filled (no copy of a large gang's
     * arrays), the domains used at each level into the placer. */
    gpusched_place_result *res;
    uint32_t nout;
    uint32_t *out_doms[GS_MAX_LEVELS];
    uint32_t ndoms[GS_MAX_LEVELS], doms_cap[GS_MAX_LEVELS];
    const gs_pl_req *req;       /* the request being placed */
    uint64_t dp_budget;         /* knapsack steps left for this placement */
    uint64_t dp_budget_max;     /* per placement: GS_PL_DP_BUDGET (tests lower it) */
    bool dp_stop_refused;       /* a refused knapsack ends the spending: the
                                 * budget drops to 0 (search.c assign_root) */
    uint64_t dp_refused;        /* knapsacks refused for the budget, ever, but
                                 * in the greedy estimates (no budget on
                                 * purpose): a key computed while it did not
                                 * move is exact */
    uint8_t subsets_mode;       /* tests: 1 every subset by the plain loop, 2 by the
                                 * branch and bound from the first (subsets.c), to
                                 * compare the two; 0 as in production */
    uint32_t subsets_bb;        /* tests: searches the branch and bound ran */
    uint8_t knapsack;           /* tests: 0 the cheaper knapsack (frontier.c), 1 over
                                 * units only, 2 over counts wherever it applies and
                                 * no subsets (so that both are checked) */
    uint8_t linear_mode;        /* tests: 1 never the knapsack's sliding window, 2
                                 * wherever it applies, to compare with the general
                                 * kernel; 0 as in production (knapsack.c) */
    uint32_t linear_children;   /* tests: children the window added */
    bool wide_keys;             /* tests: knapsacks in 128 bits even where keys fit in
                                 * 64 (gs_pl_req.key64), so that both are checked */
    bool witness_off;           /* tests: no witness (nodebound.c, rackwitness.c), so
                                 * that the knapsack's answers can be compared */
    uint32_t rack_witnesses;    /* tests: placements the rack witness assigned */
    bool runs_unbanked;         /* tests: subsets count every kid's grandchildren in
                                 * one bank (subsets.c runs_desc), to compare */
    uint32_t runs_banked;       /* tests: kids whose grandchildren were counted in banks */
    bool resort_off;            /* tests: the witness's block scores sorted afresh at
                                 * every threshold, not from the last order */
    uint32_t resorts;           /* tests: block orders sorted again from the last */
    uint32_t resorts_unsorted;  /* tests: of those, orders left out of order (only
                                 * counted with resort_check) */
    bool resort_check;          /* tests: check every order sorted again */
    uint32_t fuller_racks;      /* tests: placements gs_pl_fuller_racks() answered */
    uint32_t node_work_spent;   /* tests: searches down to nodes past their work
                                 * budget (search.c search_down_to_nodes) */
    uint64_t node_work_max;     /* tests: that budget instead (0: the production one) */
    uint32_t node_work_skipped; /* tests: of those, searches not run, their budget
                                 * below the nodes any answer kept hands out */
    bool node_skip_off;         /* tests: run them anyway, to compare */
    uint32_t key_misses;        /* tests: assignments worse than the exact key
                                 * their candidate was chosen by (search.c) */
    bool estimating;            /* the greedy try before the exact search (search.c) */
    uint64_t work_left;         /* the search down to nodes after an exact answer
                                 * down to the lowest domains: the work it may
                                 * still do (gs_pl_spend); UINT64_MAX otherwise */
    gs_key root_ceiling;        /* the rack witness's key: a root knapsack refused
                                 * with the spending stopped hands nothing out
                                 * (GS_PL_EBEATEN) when its greedy shares' key is
                                 * above it (search.c assign_root); GS_KEY_INF
                                 * otherwise */
    bool root_shortcut_off;     /* tests: the root's shares handed out even when
                                 * the witness beats them, to compare */
    bool stop_early_off;        /* tests: the children's frontiers of a knapsack
                                 * refused by the stopped spending computed all
                                 * the same (frontier.c gs_pl_dp), to compare */
    uint32_t stopped_early;     /* tests: root knapsacks refused before the rest of
                                 * their children's frontiers */
    bool frontiers_unread;      /* frontiers computed now are read by nothing once
                                 * the spending stops (frontier.c gs_pl_dp) */
    uint32_t root_beaten;       /* tests: root knapsacks that handed nothing out
                                 * (GS_PL_EBEATEN) */
    /* The nodes of the search counted down to racks, deferred (gs_pl_search):
     * each rack's share recorded and its nodes counted into nout from its
     * histogram; handed out by gs_pl_defer_flush() only if that answer is
     * kept (the same racks' fewest nodes usually replace it). */
    bool defer;
    bool defer_off;             /* tests: never defer, to compare */
    bool defer_unknown;         /* a rack's count could not be planned: flush */
    uint32_t ndefer, defer_cap;
    struct gs_pl_share {
        uint32_t rack, units;
    } *deferred;
    uint32_t defer_mismatch;    /* tests: flushes whose nodes differ in number
                                 * from the count (never, by construction) */
    uint32_t defer_flushed;     /* tests: deferred answers handed out */
    bool count_only;            /* gs_pl_assign records the domains down to the
                                 * last counted level only (assign.c greedy_key) */
    gs_key root_greedy;         /* the key of the greedy fill assign_root tried
                                 * first, GS_KEY_INF when it did not: what the
                                 * root's shares make when its knapsack is refused
                                 * with the spending stopped (dp_stop_refused) */
    /* subsets.c: the last best subset (valid while sub_gen == gen), which
     * a search's key and then its assignment both ask for. */
    uint32_t sub_gen, sub_dom, sub_y, sub_m, sub_cap;
    int32_t sub_level;
    gs_key sub_key;
    uint32_t *sub_best;         /* the children chosen, ascending */
    /* nodebound.c: the last witness built (valid while wit_gen == gen),
     * its units by rack from rack wit_first on, and its key. */
    uint32_t wit_gen, wit_dom, wit_first, wit_cap;
    int32_t wit_level, wit_pref;
    gs_key wit_key;
    uint32_t *wit_share;
    /* Pods (pods.c): per node, pods of the current shape it holds (only
     * nodes of the region scanned are valid), the chosen pairs' pod counts
     * and the record the commit copies. */
    uint32_t *pod_cap;
    gs_podx *podx;
    uint32_t podx_cap;
    /* The fragmentation policy's workload (frag.c): caller-given shapes
     * (wl_fixed), or the shapes of the requests seen, weighted by count. */
    gs_pod_shape *wl;
    uint32_t nwl, wl_cap;
    bool wl_fixed;
    bool probing;               /* a preemption's probe: the workload learns nothing */
    bool learn_by_owner;        /* the workload learns only what its owner
                                 * shows it (gs_pl_wl_seen): a scheduler, which
                                 * places a pending gang once per cycle */
    bool holding;               /* a batch: each placement of pods is held */
    /* Learning: shapes counted here, copied to `wl` at refreshes (after
     * 1, 2, 4, ... 1024 requests, then every 1024), so that cached
     * growths stay valid between refreshes. wl_epoch counts changes of wl. */
    gs_pod_shape *learn;
    uint32_t nlearn, learn_cap;
    uint64_t learned, next_refresh, wl_epoch;
    /* Cached growths of recent request shapes (frag.c). */
    struct gs_wlc *wlc;         /* the workload compiled for scoring */
    gs_fs_ops fs;               /* the frag scan's kernels, for the SIMD path chosen */
    struct gs_fslot *fslots;
    uint32_t nfslots, max_fslots;
    uint64_t fclock;
    /* Static: per level, every domain's GPUs when they are all equal, else
     * 0 (placer.c: slices that each need a whole domain). */
    uint32_t whole_dom_gpus[GS_MAX_LEVELS];
};

/* request.c: gs_pl_req_load validates and normalizes a request;
 * gs_pl_req_not_running is its last check (EEXIST when a committing
 * request's job is running), made apart so that the job table's line,
 * prefetched by the load, arrives during the search. */
int gs_pl_req_load(gpusched_placer *p, const gpusched_place_request *in, gs_pl_req *r);
/* 1: slice i unset; 0: set, its level exists; < 0: an error (request.c). */
int gs_pl_check_slice(gpusched_placer *p, const gpusched_place_request *q, uint32_t i);
int gs_pl_req_not_running(gpusched_placer *p, const gs_pl_req *r);
/* GPUSCHED_EINVAL (message names `what`) for a request with resources or
 * fractions: the callers that only handle whole GPUs yet. */
int gs_pl_req_whole_gpus(gpusched_placer *p, const gs_pl_req *r, const char *what);
/* The request counted down to the lowest domain level instead of nodes,
 * for a first try whose node count the search then checks against the
 * fewest nodes anywhere (search.c). False when that try does not apply:
 * not counted down to nodes, filtered, or a gang one node may hold (its
 * tightest node is part of the objective). */
bool gs_pl_req_coarse(gpusched_placer *p, const gs_pl_req *r, gs_pl_req *out);

/* placer.c: the request's placement into `res` in the cluster's open
 * transaction (doc/transactions.md): with GPUSCHED_PLACE_FLAG_COMMIT its claim
 * is staged there (the caller commits); with GS_PL_HOLD its GPUs are held
 * for the searches after it; with
 * GS_PL_CHECK_RUNNING a committing request whose job runs is
 * GPUSCHED_EEXIST. Requests with pods take the pod search. 0,
 * GPUSCHED_ENOSPC (res explains) or an error. */
#define GS_PL_HOLD 1u
#define GS_PL_CHECK_RUNNING 2u
/* With GS_PL_QUIET a gang without pods that does not fit is not explained
 * (res then says GPUSCHED_REASON_NOT_RUN): for callers that need only yes
 * or no, such as a probe or a try whose failure a second try replaces. The
 * explanation reads every domain of a constraint's level, which costs as
 * much as a search that fails early. */
#define GS_PL_QUIET 4u
int gs_pl_place_staged(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res, unsigned flags);
/* wholedoms.c: for a gang whose only constraint is slices that are each
 * a whole domain of one level, where K = G / S domains become wholly free
 * as jobs' GPUs are added in the caller's order, without lending anyone
 * (a hint for the caller's probes). begin() is false when the gang is not
 * of that kind (or the scratch, one word per domain of the level, cannot
 * grow); add() is true once K domains are whole (also when they already
 * were: w->whole >= w->want after begin). */
typedef struct gs_pl_whole {
    const struct gpusched_cluster *c;
    uint32_t level, size;
    uint64_t want, whole;
    uint32_t *free;             /* per domain; GS_PL_WHOLE_OUT: holds an avoided node */
} gs_pl_whole;
#define GS_PL_WHOLE_OUT UINT32_MAX
bool gs_pl_whole_begin(const struct gpusched_cluster *c, const gs_pl_req *r, gs_alloc *a, uint32_t **scratch,
                       uint32_t *cap, gs_pl_whole *w);
bool gs_pl_whole_add(gs_pl_whole *w, const gs_hold *h);
/* A split a wholly free domain holds a slice of all of whatever its node
 * sizes: whole nodes (no pods) or any GPUs. */
static inline bool gs_pl_whole_split(const gs_pl_req *r)
{
    return (r->in.split == GPUSCHED_SPLIT_WHOLE_NODES && !r->in.pod_gpus) || r->in.split == GPUSCHED_SPLIT_ANY;
}
/* Whether the count decides such a gang exactly, not only as a hint: no
 * node down, no reservation of the gang's own to lend, a whole split.
 * Jobs holding GPU fractions are the caller's to rule out. */
static inline bool gs_pl_whole_exact(const struct gpusched_cluster *c, const gs_pl_req *r)
{
    return !c->nodes_not_up && gs_pl_whole_split(r) && !gs_cluster_resv_find(c, r->job.id);
}
/* The K = w->want domains such a gang takes among those wholly free in w,
 * ascending in out: the fewest domains per level from the top, the largest
 * shares whole and the rest in the tightest domain that holds it (by
 * count of wholly free domains), then the lowest index. What the
 * scheduler reserves for it on the free domains of a time to come
 * (without lending the jobs that end by then). 0, GPUSCHED_ENOSPC when
 * fewer are free, or GPUSCHED_ENOMEM (scratch: counts per domain above). */
int gs_pl_whole_choose(const gs_pl_whole *w, gs_alloc *a, uint32_t **scratch, uint32_t *cap, uint32_t *out);

/* gpusched_placer_place() with gs_pl_place_staged()'s flags added (the
 * scheduler's quiet tries). */
int gs_pl_place_flags(gpusched_placer *p, const gpusched_place_request *req, gpusched_place_result *res,
                      unsigned flags);
/* Ends the cluster's open transaction of a call that produced `rc`:
 * committed when rc is 0 and `commit` (res then says so), else rolled
 * back. Returns rc, or the commit's error. */
int gs_pl_txn_end(gpusched_placer *p, int rc, bool commit, gpusched_place_result *res);
/* The descriptor of the job a committed request becomes. */
void gs_pl_job_of(const gs_pl_req *r, gpusched_job *job);
/* Whether the request fits as the cluster is now: the search alone, no
 * result message, no commit (res receives the nodes). 0 or
 * GPUSCHED_ENOSPC; GPUSCHED_ENOMEM. */
int gs_pl_fits(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res);
/* The same answer without choosing the nodes (the capacities are exact):
 * for the what-ifs that only need yes or no. res is used for pods only
 * and holds no nodes after. */
int gs_pl_feasible(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res);

/* capacity.c: units of the current request (p->req). Node units are
 * inline: the large placements evaluate them once per node returned. */
static inline bool gs_pl_node_eligible(const gpusched_placer *p, uint32_t n)
{
    const gpusched_place_request *q = &p->req->in;
    const struct gpusched_topo *t = p->t;
    if (q->gpu_class != GPUSCHED_NONE && t->node_class[n] != q->gpu_class)
        return false;
    uint64_t labels = t->node_labels[n];
    if ((labels & q->labels_required) != q->labels_required || (labels & q->labels_forbidden))
        return false;
    return !(q->avoid_count && p->avoid_gen[n] == p->gen);
}

static inline void gs_pl_set_u0(gs_pl_req *r, uint32_t u0)
{
    r->u0 = u0;
    r->u0_recip = 65536 / u0 + 1;
}

/* gpus / u0 for gpus <= 64 (a popcount, a histogram index) by a multiply:
 * exact while gpus * u0 < 2^16. A divide per node scanned was most of a
 * rack scan's instructions. */
static inline uint32_t gs_pl_div_u0(const gs_pl_req *r, uint32_t gpus)
{
    return (gpus * r->u0_recip) >> 16;
}

/* Units of a node with k usable GPUs (a histogram index). */
static inline uint32_t gs_pl_hist_units(const gs_pl_req *r, uint32_t k)
{
    return r->whole_w ? k == r->whole_w : gs_pl_div_u0(r, k);
}

/* Adds a domain's histogram row h[0, width) to avail_of[v], the nodes of
 * v units (v = 0 for the nodes that give none). */
static inline void gs_pl_hist_add_units(const gs_pl_req *r, const uint32_t *h, uint32_t width, uint64_t *avail_of)
{
    for (uint32_t k = r->u0; k < width; k++)
        avail_of[gs_pl_hist_units(r, k)] += h[k];
}

/* A domain's nodes of v units or more, from its histogram row h[0,
 * width): c[v] for v = 1 .. umax, and c[umax + 1] = 0. */
static inline void gs_pl_hist_at_least(const gs_pl_req *r, const uint32_t *h, uint32_t width, uint32_t umax,
                                       uint32_t *c)
{
    if (r->u0 == 1 && !r->whole_w) { /* units are GPUs: one suffix sum */
        uint32_t run = 0;
        c[0] = c[umax + 1] = 0;
        for (uint32_t k = width; k-- > 1;) {
            run += h[k];
            if (k <= umax)
                c[k] = run;
        }
        return;
    }
    for (uint32_t v = 0; v <= umax + 1; v++)
        c[v] = 0;
    for (uint32_t k = r->u0; k < width; k++) {
        const uint32_t v = gs_pl_hist_units(r, k);
        c[v < umax ? v : umax] += h[k];
    }
    for (uint32_t v = umax; v-- > 1;)
        c[v] += c[v + 1];
}

static inline uint32_t gs_pl_units_of_mask(const gs_pl_req *r, const struct gpusched_topo *t, uint32_t n,
                                           uint64_t avail)
{
    if (r->whole_w)
        return t->node_gpus[n] == r->whole_w && avail == gs_node_all_mask(r->whole_w);
    return gs_pl_div_u0(r, gs_popcount64(avail));
}

static inline uint32_t gs_pl_node_units(const gpusched_placer *p, uint32_t node)
{
    if (p->req->filtered && !gs_pl_node_eligible(p, node))
        return 0;
    return gs_pl_units_of_mask(p->req, p->t, node, gs_cluster_node_avail(p->c, node));
}
/* Exact capacity of domain d at level l (-1 .. L) in units of level l. */
uint32_t gs_pl_cap(gpusched_placer *p, int32_t l, uint32_t d);
/* gs_pl_cap() of domains [a, b) of level l into out[0 .. b - a). */
void gs_pl_caps(gpusched_placer *p, int32_t l, uint32_t a, uint32_t b, uint32_t *out);
/* Where level l's capacities are counts in the aggregates (less the
 * avoided nodes'): those of domains [a, b) summed, and how many hold a
 * unit (holding may be NULL), in one pass; false where they are not. */
bool gs_pl_pooled_sum(gpusched_placer *p, int32_t l, uint32_t a, uint32_t b, uint64_t *sum, uint32_t *holding);
/* Upper bound of a domain's node-level units from the aggregates alone. */
uint64_t gs_pl_ub_units(const gpusched_placer *p, int32_t l, uint32_t d);
/* For a request whose only filter is avoided nodes (avoid_exact): the
 * node-level units of domain d of level l (-1: the cluster) less the
 * avoided nodes', from the aggregates (O(avoided nodes) once per search).
 * false if not such a request (or out of scratch memory): the caller
 * visits the nodes. */
bool gs_pl_units_less_avoided(gpusched_placer *p, int32_t l, uint32_t d, uint64_t *units);
/* Usable free GPUs of a domain: the cheapest bound, one load. */
uint64_t gs_pl_ub_gpus(const gpusched_placer *p, int32_t l, uint32_t d);
/* Upper bound of the units of the best single node in a domain. */
uint32_t gs_pl_ub_node_units(const gpusched_placer *p, int32_t l, uint32_t d);
/* Most domains of one level under a domain whose capacities
 * gs_pl_fewest_under() reads: past it the count is not computed. */
#define GS_PL_BOUND_DOMS_MAX 256
/* The fewest domains of level j under domain d of level l (-1: the
 * cluster) whose capacities hold the gang, largest first (a lower bound of
 * the domains any placement there uses at level j); 0 when there are more
 * than GS_PL_BOUND_DOMS_MAX of them. 0 or GPUSCHED_ENOMEM. */
int gs_pl_fewest_under(gpusched_placer *p, int32_t l, uint32_t d, int32_t j, uint64_t *count);
/* Children of domain d at level l: a range of level l+1. */
void gs_pl_children(const gpusched_placer *p, int32_t l, uint32_t d, uint32_t *first, uint32_t *end);

/* nodebound.c: a lower bound of the key of candidate d (level l) from
 * its lowest domains' histograms, where locality is counted down to nodes
 * and d has domains of two levels or more below it; 0 elsewhere. Also the
 * key of a placement built where the bound points (its witness) into
 * *witness, GS_KEY_INF when none is built (filters, slices below l, more
 * than two blocks); the witness is remembered in p->wit_*. */
gs_key gs_pl_node_bound(gpusched_placer *p, int32_t l, uint32_t d, gs_key *witness);
/* The fewest nodes any placement on counts[l] domains of each domain
 * level l can hold the gang on, a lower bound from the domains'
 * histograms (racknodes.c); 0 (no bound) where the aggregates do not
 * count the request exactly. */
uint64_t gs_pl_fewest_nodes_in(gpusched_placer *p, const uint32_t *counts);

/* A lower bound of candidate d's key (level l) where racks (the level
 * under blocks) are the last counted level: the fewest blocks under d that
 * hold the gang, and on that many blocks the Lagrangian bound of the
 * racks (for every tau, tau x racks plus the largest block excesses above
 * tau must hold it); the levels between at their static counts. A
 * placement on more blocks has a larger key whatever its racks. 0 (no
 * bound) where it does not apply (rackwitness.c). */
int gs_pl_racks_bound(gpusched_placer *p, int32_t l, uint32_t d, gs_key *key);

/* A rack ranked by its nodes of the most units, then of fewer (packed
 * into `order` by its user), ties lowest index: the racks richest in
 * whole nodes first (nodebound.c, racknodes.c). */
typedef struct gs_rack_rank {
    uint64_t order;
    uint32_t idx;
} gs_rack_rank;

static inline bool gs_rack_rank_before(const gs_rack_rank *a, const gs_rack_rank *b, void *unused)
{
    (void)unused;
    if (a->order != b->order)
        return a->order > b->order;
    return a->idx < b->idx;
}

GS_HEAP_DEFINE(gs_rack_rank_heap, gs_rack_rank, void *, gs_rack_rank_before)

/* Which nodes a domain gives for `rem` units, by value (assign.c): whole
 * nodes of the most units first (full[v] of value v), the last units
 * (`part`) to the tightest node that takes them (value part_v). */
typedef struct gs_node_plan {
    uint64_t full[GPUSCHED_MAX_NODE_GPUS + 1];
    uint32_t part_v, part;
    uint64_t pending;           /* nodes planned and not yet taken */
} gs_node_plan;

/* The plan for rem units over avail_of[v] nodes of v units (v = 1 .. vmax;
 * consumed); false when they do not hold it. The fewest nodes: pending. */
bool gs_pl_node_plan_make(gs_node_plan *plan, uint64_t *avail_of, uint32_t vmax, uint64_t rem);

/* Carries the plan out over nodes [a, b), lowest index first, appending
 * them to the result; stops when every planned node is taken. */
int gs_pl_node_plan_take(gpusched_placer *p, gs_node_plan *plan, uint32_t a, uint32_t b);

/* Least n with sum_v min(n, t[v]) >= need, t non-increasing in v
 * (v = 1 .. umax) and sum_v t[v] >= need (nodebound.c). */
uint64_t gs_pl_least_nodes(const uint64_t *t, uint32_t umax, uint64_t need);

/* The plan of the fewest nodes of the racks the placement made uses
 * (largest first, the remainder to the tightest node that takes it),
 * read from their histograms, and the nodes it needs: the placement's own
 * count (and plan->pending) when it does not apply or saves none. Only
 * where the aggregates count the request exactly. racknodes.c. */
uint64_t gs_pl_racks_plan(const gpusched_placer *p, gs_node_plan *plan);
/* The placement's nodes handed out again by that plan, when it saves
 * any; its domains at every level are then those of the new nodes. */
int gs_pl_take_racks_plan(gpusched_placer *p, gs_node_plan *plan);

/* The placement made, its racks chosen again inside the same blocks (as
 * many in each) as those with the most nodes of the most units, and
 * their fewest nodes taken, when that needs at most `target` nodes and
 * fewer than it has; *done then (racknodes.c). */
int gs_pl_fuller_racks(gpusched_placer *p, uint64_t target, bool *done);
/* Assigns the witness of candidate d when its key is at most target
 * (*done), as gs_pl_assign(p, l, d, ...) would: domains from level l down
 * and nodes. 0 or GPUSCHED_ENOMEM. */
int gs_pl_node_witness_assign(gpusched_placer *p, int32_t l, uint32_t d, gs_key target, bool *done);
/* The key, above nodes, of a placement under domain d of level l that
 * gives by_rack[rack - first] units to each rack of [first, end): the
 * domains with a share at each level below l. */
gs_key gs_pl_shares_key(const gpusched_placer *p, int32_t l, uint32_t first, uint32_t end, const uint32_t *by_rack);
/* Assigns below domain x of level j the units by_rack[rack - first] of
 * each of its racks, domains in index order (the witnesses' assignment). */
int gs_pl_assign_by_rack(gpusched_placer *p, int32_t j, uint32_t x, uint32_t first, const uint32_t *by_rack);
/* rackwitness.c: with racks the last counted level and two levels or
 * more between candidate d (level l; -1: the cluster) and its racks, a
 * placement on the fewest domains above the blocks, blocks and racks that
 * hold the gang (the greedy rule in each): its key (GS_KEY_INF: none),
 * remembered in p->wit_*; and into *bound a lower bound of any
 * placement's key under d (0: none). */
gs_key gs_pl_rack_witness(gpusched_placer *p, int32_t l, uint32_t d, gs_key *bound);
/* Assigns that placement when its key is at most target (*done). */
int gs_pl_rack_witness_assign(gpusched_placer *p, int32_t l, uint32_t d, gs_key target, bool *done);
/* Starts the witness of candidate d of level l in p->wit_* (key
 * GS_KEY_INF until one is built), with room for the shares of n racks.
 * 0 or GPUSCHED_ENOMEM. */
int gs_pl_wit_begin(gpusched_placer *p, int32_t l, uint32_t d, uint32_t n);
/* Whether p->wit_* is the witness of candidate d of level l for this request. */
static inline bool gs_pl_witness_valid(const gpusched_placer *p, int32_t l, uint32_t d)
{
    return p->wit_gen == p->gen && p->wit_pref == p->req->pref && p->wit_level == l && p->wit_dom == d;
}

/* search.c: finds the placement; fills p->out_*. 0, GPUSCHED_ENOSPC, or
 * GPUSCHED_ENOMEM. */
int gs_pl_search(gpusched_placer *p);
/* Whether gs_pl_search() would find a placement, from capacities alone:
 * 1 or 0, or GPUSCHED_ENOMEM. */
int gs_pl_holds(gpusched_placer *p);

/* assign.c: places y units of level l in domain d, appending nodes;
 * gs_pl_use_domain records a domain used (ascending per level). */
int gs_pl_assign(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y);
/* Hands out the deferred racks' nodes (p->defer), in the order recorded. */
int gs_pl_defer_flush(gpusched_placer *p);
int gs_pl_use_domain(gpusched_placer *p, uint32_t l, uint32_t d);
/* Frontier of a domain: the best key for each amount (see search.c). */
typedef struct gs_front {
    uint32_t n;
    gs_key *key;                /* ascending */
    uint32_t *units;            /* strictly ascending: most units at that key */
} gs_front;
int gs_pl_frontier(gpusched_placer *p, int32_t l, uint32_t d, uint32_t need, gs_front *f);

/* frontier.c: children with capacity, and the knapsack over children. */
typedef struct gs_kid {
    uint32_t idx;
    uint32_t cap;
} gs_kid;
int gs_pl_kids(gpusched_placer *p, int32_t l, uint32_t d, gs_kid **out, uint32_t *n, uint64_t *total);
void gs_pl_kid_select(gs_kid *k, uint32_t from, uint32_t n);
/* Whether children taken largest first until `want` of their `total`
 * capacity are better sorted once than selected one at a time: when there
 * are many and most will be taken. */
static inline bool gs_pl_sort_pays(uint32_t n, uint64_t want, uint64_t total)
{
    return n > 16 && want > total / 4;
}
/* knapsack.c: one child's frontier (n entries: units, key) added to the
 * knapsack's row dp[0 .. Y] at w more for the child itself, recording the
 * source (pv: t + 1) and entry (en) of each improved state when pv is not
 * NULL. The window kernels give the same row and choices on a linear
 * frontier (gs_pl_knap_is_linear), in O(Y); f and dq hold Y + 1 each. */
void gs_pl_knap_child64(uint64_t *dp, uint32_t Y, uint32_t n, const uint32_t *units, const uint64_t *key, uint64_t w,
                        uint32_t *pv, uint32_t *en, uint64_t *live);
void gs_pl_knap_child128(gs_key *dp, uint32_t Y, uint32_t n, const uint32_t *units, const gs_key *key, gs_key w,
                         uint32_t *pv, uint32_t *en, uint64_t *live);
void gs_pl_knap_linear64(uint64_t *dp, uint32_t Y, uint32_t n, const uint64_t *key, uint64_t w, uint32_t *pv,
                         uint32_t *en, uint64_t *f, uint32_t *dq, uint64_t *live);
void gs_pl_knap_linear128(gs_key *dp, uint32_t Y, uint32_t n, const gs_key *key, gs_key w, uint32_t *pv,
                          uint32_t *en, gs_key *f, uint32_t *dq, uint64_t *live);
/* The row's live states, bit t of live[t / 64] for each state t < INF:
 * the general kernel visits only them (a row over many units is mostly
 * empty), and every kernel sets the bits of the states it writes. */
static inline void gs_pl_live_set(uint64_t *live, uint32_t t)
{
    live[t / 64] |= (uint64_t)1 << (t % 64);
}
bool gs_pl_knap_is_linear(const uint32_t *units, const gs_key *key, uint32_t n, uint32_t Y, bool key64);
/* Frontiers this long or longer take the window when linear (shorter
 * ones are cheaper by the general loop). */
#define GS_KNAP_LINEAR_MIN 8
/* maxplus.c: out[g] = max over c in 1 .. nf of src[g - c] + f[c - 1], for
 * g < n, where f is concave (gs_pl_concave: non-decreasing, increments
 * non-increasing); sources GS_MAXPLUS_NONE are absent, and an out[g] with
 * no source is GS_MAXPLUS_NEG. O((n + nf) log n). */
#define GS_MAXPLUS_NONE UINT32_MAX
#define GS_MAXPLUS_NEG INT64_MIN
void gs_pl_maxplus_concave(const uint32_t *src, uint32_t n, const uint32_t *f, uint32_t nf, int64_t *out);
bool gs_pl_concave(const uint32_t *f, uint32_t nf);
/* sort.c: allocation-free sorts. Children by capacity (largest or
 * smallest first; ties: lowest index); values descending. */
void gs_pl_sort_kids(gs_kid *k, uint32_t n, bool larger_first);
/* Values under this are sorted (or ranked) by counting, not compared. */
#define GS_COUNTING_MAX 256u
/* The same order for lists of any length: listed by index with
 * capacities at most 4n (a cluster's racks), a stable counting sort with
 * scratch from the arena, O(n); else the heap. false: no memory, nothing
 * moved. */
bool gs_pl_sort_kids_long(gs_kid *k, uint32_t n, bool larger_first, gs_arena *a);
void gs_pl_sort_u32_desc(uint32_t *v, uint32_t n);
/* count[c]: how many of the n values v[0], v[stride], ... equal c, for
 * c = 0 .. top (every value at most top); banks (4 x (top + 1)) hold
 * each quarter's counts, the last quarter with the n % 4 left over. The
 * quarters are counted in turn: where many values are equal, one
 * count's increments would each wait on the last through memory. */
void gs_pl_count_values(const uint32_t *v, size_t stride, uint32_t n, uint32_t top, uint32_t *count,
                        uint32_t *banks);

/* Sum of the k largest of v[0, n) (k <= n; v reordered): a quickselect,
 * O(n). */
uint64_t gs_pl_largest_sum(uint32_t *v, uint32_t n, uint32_t k);
typedef struct gs_pl_dp_out {
    bool want_choices;          /* in: keep what each child took */
    gs_front *front;            /* in, without want_choices: where the counted
                                 * knapsack writes the domain's frontier for
                                 * `need` units when it applies (frontier.c) */
    uint32_t need;
    bool counted;               /* out: it did, and there is no table */
    bool over_budget;           /* out: no table, the work budget is spent */
    gs_key *dp;                 /* Y + 1: best key holding exactly t (Y: at least Y);
                                 * NULL when the row is in 64 bits, dp64 */
    uint64_t *dp64;             /* that row in 64 bits (UINT64_MAX: none) or NULL */
    gs_front *fronts;           /* per child */
    uint32_t *prev;             /* per child and t: 1 + the t before it, 0: child unused */
    uint32_t *entry;            /* per child and t: the frontier entry taken */
    uint32_t nkids, first;
} gs_pl_dp_out;
int gs_pl_dp(gpusched_placer *p, int32_t l, uint32_t d, uint32_t Y, gs_pl_dp_out *o);
/* The knapsack's key for t units, whichever width its row has. */
static inline gs_key gs_pl_dp_key(const gs_pl_dp_out *o, uint32_t t)
{
    if (o->dp)
        return o->dp[t];
    return o->dp64[t] == UINT64_MAX ? GS_KEY_INF : o->dp64[t];
}
/* Knapsack steps one placement may spend: beyond, domains are filled
 * greedily (doc/placement.md, "Cost"). */
#define GS_PL_DP_BUDGET ((uint64_t)1 << 24)
/* The budget of the search down to nodes once the search down to the
 * lowest domain level has answered: per node-level unit of the gang, and
 * at least (search.c gs_pl_search). */
#define GS_PL_NODE_STEPS 8
#define GS_PL_NODE_STEPS_MIN 4096
/* The same search's work (domains and nodes read, knapsack steps, subsets
 * tried): one unit per so many nodes of the first answer, and at least
 * so many; past it the first answer stands (search.c search_down_to_nodes). */
#define GS_PL_NODES_PER_WORK 8
#define GS_PL_NODE_WORK_MIN 4096
/* The key of what the placement holds below level l (the domains of the
 * counted levels under it, and nodes when counted). */
static inline gs_key gs_pl_key_below(const gpusched_placer *p, int32_t l)
{
    const gs_pl_req *r = p->req;
    const int32_t L = (int32_t)p->nlevels;
    gs_key key = 0;
    for (int32_t j = l + 1; j <= r->pref && j < L; j++)
        key += (gs_key)p->ndoms[j] * r->weight[LV(j)];
    if (r->pref == L)
        key += (gs_key)p->nout * r->weight[LV(L)];
    return key;
}
/* Internal: the work budget is spent (never returned to callers). */
#define GS_PL_EWORK (-1000)
/* Internal: the root's exact key is above p->root_ceiling (never returned
 * to callers). */
#define GS_PL_EBEATEN (-1001)

/* Charges w units of work: GS_PL_EWORK once the budget cannot pay, and
 * every charge after. Unmetered searches never run out (UINT64_MAX). */
static inline int gs_pl_spend(gpusched_placer *p, uint64_t w)
{
    if (w > p->work_left) {
        p->work_left = 0;
        return GS_PL_EWORK;
    }
    p->work_left -= w;
    return 0;
}
/* subsets.c: the exact shortcut for domains whose grandchildren are the
 * last counted level. Sets *applicable; then *key (GS_KEY_INF: no fit) and,
 * if `amount` is given, each child's share (indexed from the first child). */
int gs_pl_subsets(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_key *key, uint32_t *amount,
                  bool *applicable);
/* Exact best key for y units in domain d (GS_KEY_INF if it does not fit). */
int gs_pl_best_key(gpusched_placer *p, int32_t l, uint32_t d, uint32_t y, gs_key *key);

/* Whether request q takes the pod path (resources, fractions, classes or
 * a pod count): what gs_pl_pods_load() decides, and what a size counts
 * (pods there, GPUs otherwise). */
static inline bool gs_pl_req_wants_pods(const gpusched_place_request *q)
{
    return q->pods || q->gpu_milli || q->resource_count || q->gpu_class_count;
}

/* pods.c: requests with resources or GPU fractions. gs_pl_pods_load
 * validates the pod fields of a request gs_pl_req_load has copied in;
 * gs_pl_pods_place places it (plan-only, or staged for commit in the open
 * transaction): 0, GPUSCHED_ENOSPC (res explains) or an error. */
int gs_pl_pods_load(gpusched_placer *p, gs_pl_req *r);
int gs_pl_pods_place(gpusched_placer *p, const gs_pl_req *r, gpusched_place_result *res);
/* Whether node n passes the request's labels and avoided nodes, and
 * whether its state (health, class, resources, GPUs) holds one pod. */
bool gs_pl_pod_node_ok(const gpusched_placer *p, const gs_pl_req *r, uint32_t n);
bool gs_pl_pod_fits_state(const gpusched_placer *p, const gs_pl_req *r, uint32_t n);
/* Pods of `s` that node n holds now, at most `limit` (0: not eligible). */
uint32_t gs_pl_pod_cap(const gpusched_placer *p, const gs_pl_req *r, uint32_t n, uint32_t limit);

/* frag.c: the fragmentation-aware choice of one pod's node and GPU among
 * nodes [first, end) with pod_cap set; *node is GPUSCHED_NONE when none.
 * gs_pl_wl_placed counts a request the placer places in the learned
 * workload (when it learns: a pod request for the policy, no workload
 * set), refreshing it on its schedule. */
int gs_pl_frag_choose(gpusched_placer *p, const gs_pl_req *r, uint32_t first, uint32_t end, uint32_t *node,
                      uint64_t *mask);
void gs_pl_wl_placed(gpusched_placer *p, const gs_pl_req *r);
/* A request its owner shows once (a scheduler: at submit), counted where
 * the placer would count it when it places it (learn_by_owner); the
 * counts become the workload at the owner's gs_pl_wl_refresh (a cycle),
 * so that the order of the requests between two refreshes does not
 * matter. */
void gs_pl_wl_seen(gpusched_placer *p, const gs_pl_req *r);
void gs_pl_wl_refresh(gpusched_placer *p);
void gs_pl_wl_free(gpusched_placer *p);
void gs_pl_frag_free(gpusched_placer *p);
/* The frag scan's kernels for the SIMD path the library chooses (forced by
 * GPUSCHED_SIMD); the path into *simd. GPUSCHED_EINVAL or ENOTSUP as
 * gs_simd_choose(). */
int gs_pl_fs_choose(gs_fs_ops *ops, uint32_t *simd);

/* explain.c: fills the result's reason and message for a failure. */
void gs_pl_explain(gpusched_placer *p, gpusched_place_result *res);
/* Formats n with thousands separators. */
void gs_pl_fmt_count(char *buf, size_t cap, uint64_t n);

/* result.c */
void gs_pl_result_reset(gpusched_place_result *res, uint32_t nlevels);
/* A failure said by another module (the preemption planner's bound). */
void gs_pl_result_fail(gpusched_placer *p, gpusched_place_result *res, uint32_t reason, const char *msg);
int gs_pl_result_fill(gpusched_placer *p, gpusched_place_result *res);

#endif
