/* The cluster state as the placement and preemption engines see it.
 * Internal; never installed.
 *
 * Per node (struct of arrays, indexed by topology node index):
 *   node_free[n]    GPUs neither allocated nor reserved (bit i: GPU i)
 *   node_resv[n]    GPUs held by a reservation (never also allocated)
 *   node_health[n]  a gpusched_node_health value
 *   allocated = gs_node_all_mask(gpus) & ~node_free & ~node_resv
 * so free, reserved and allocated are disjoint and always distinguishable.
 *
 * Per GPU: gpu_holder[node_gpu_base[n] + i] names who holds GPU i of node n:
 *   0                         free
 *   job slot + 1              allocated to jobs.rec[slot]
 *   GS_HOLDER_RESV | slot     reserved by resv.rec[slot]
 *
 * Usable for new work ("eff", what every aggregate counts):
 *   gs_cluster_node_avail(c, n) = health == UP ? node_free[n] : 0
 * Reserved GPUs are never in it: they are usable only by the reservation's
 * own job (see "Reservations and placement" below).
 *
 * Per domain, per level l (arrays of ndom[l]), plus the whole cluster
 * (`root`), all kept incrementally in O(levels) per node change by
 * gs_cluster_node_changed():
 *   free_gpus[d]   sum of popcount(avail) over the domain's nodes
 *   free_nodes[d]  nodes with avail == every GPU of the node
 *   hist[d * hist_width + k]  nodes with popcount(avail) == k,
 *                  k = 0 .. max_node_gpus (hist_width = max_node_gpus + 1);
 *                  non-up nodes count in k = 0.
 * "Can domain d hold k nodes with g free GPUs each" is
 *   gs_cluster_hist_at_least(c, l, d, g) >= k           (suffix sum, no node visited)
 * Per level (and for the node level, index nlevels) for the fragmentation
 * metrics: full_doms[l] = domains whose free_nodes equals their node count,
 * full_gpus[l] = GPUs in those domains.
 *
 * Jobs and reservations live in two gs_holdtab tables of the same shape:
 * records in stable slots (a released slot goes on a free stack, so the
 * per-GPU holder entries of other jobs never move), a dense `live` list of
 * slots for iteration, and an open-addressing hash (linear probing,
 * backward-shift deletion) from the 64-bit job id to the slot. Allocation
 * pairs are stored sorted by node: up to GS_HOLD_INLINE pairs inline in the
 * record (no allocation for the common small job), more in one block of the
 * cluster's allocator.
 *
 * Reservations: a reservation is looked up by job id with
 * gs_cluster_resv_find(); its pairs (gs_hold_nodes/gs_hold_masks) are the
 * GPUs reserved for that job, and node_resv/gpu_holder agree with them.
 *
 * This header is what the placement and preemption engines read: the
 * state, the aggregates and the lookups. They change the cluster only
 * through a transaction (txn.h): lending a job or the job's reservation to
 * a what-if search, holding GPUs, staging claims and releases, commit or
 * rollback. The write side is cluster-write.h, for lib/cluster alone.
 * While a transaction is open, R->lent / h->lent say what is lent.
 */
#ifndef GS_CLUSTER_INTERNAL_H
#define GS_CLUSTER_INTERNAL_H

#include "core.h"
#include "gpusched/cluster.h"
#include "topo/topo-internal.h"

#define GS_HOLDER_RESV 0x80000000u
/* A GPU shared by jobs that each hold a fraction of it (pods.c): no single
 * job holds it, so its holder entry names none. Never a reservation's:
 * reservation slots stay below GS_HOLD_MAX_SLOTS. */
#define GS_HOLDER_SHARED 0xffffffffu
#define GS_HOLD_MAX_SLOTS 0x7fffffffu

/* Pairs kept inline in the record: the common small jobs (one node, or the
 * two nodes of two pods) need no block, and a release reads them from the
 * line it reads the record from. */
#define GS_HOLD_INLINE 2u

/* A job or a reservation. The fields a lookup and a release read (id,
 * pairs, position in the live list) come first, in the record's first 44
 * bytes: a release misses on the record once and on nothing it points to
 * but the node lines, which load at the same time. */
typedef struct gs_hold {
    /* What a pass over every running job reads (preemption's bound and
     * victims: who may be evicted, where): the first 64 bytes. */
    uint64_t id;
    uint32_t npairs;
    uint32_t ngpus;
    uint32_t flags;
    int32_t priority;
    int64_t protected_until;
    /* npairs <= GS_HOLD_INLINE: the pairs are in `in`. More: one block holds
     * masks[npairs] then nodes[npairs]. */
    union {
        struct {
            uint64_t masks[GS_HOLD_INLINE];
            uint32_t nodes[GS_HOLD_INLINE];
        } in;
        struct {
            uint64_t *masks;
            uint32_t *nodes;
        } out;
    } p;
    uint32_t live : 31;     /* index of the record in the table's live list */
    uint32_t lent : 1;      /* lent to placement (reservations, see above) or
                             * to a preemption what-if (jobs) */
    uint32_t tenant;
    int64_t start_time;
    uint64_t cost_hint;
} gs_hold;

/* What a job with resources or GPU fractions holds beyond its masks, so
 * that a release gives back exactly what the claim took. Pods of one job
 * share one shape. */
typedef struct gs_podx {
    uint32_t milli;         /* 1..999: each pod holds this much of one GPU, the
                             * GPUs of the masks (one pod per GPU); 0: the
                             * masks' GPUs are held whole */
    uint32_t pod_gpus;      /* whole GPUs per pod (milli 0) */
    uint32_t nres;          /* resources the pods ask for: pod_res[0..nres) */
    uint32_t pod_res[GPUSCHED_MAX_RESOURCES];
    uint32_t npairs;
    uint32_t pods[];        /* per pair of the job: pods on that node */
} gs_podx;

/* A lowest-level domain's summary: the largest and the total free amount
 * of each resource over its nodes, the largest free milli of a shared GPU
 * and how many GPUs are shared. Bounds, exact for the domain as it is. */
typedef struct gs_leafsum {
    uint32_t res_max[GPUSCHED_MAX_RESOURCES];
    uint32_t res_max_n[GPUSCHED_MAX_RESOURCES];    /* nodes at res_max */
    uint64_t res_sum[GPUSCHED_MAX_RESOURCES];
    uint32_t shared_max;
    uint32_t shared_max_n;                          /* shared GPUs at shared_max */
    uint32_t shared_n;
} gs_leafsum;

/* The summary of lowest domain `leaf`, brought up to date; NULL when the
 * cluster keeps none (no resource declared, no GPU ever shared). */
const gs_leafsum *gs_pods_leaf(struct gpusched_cluster *c, uint32_t leaf);

static inline size_t gs_podx_size(uint32_t npairs)
{
    return sizeof(gs_podx) + (size_t)npairs * sizeof(uint32_t);
}

/* The smallest job descriptor accepted: 0.2.0's, before protected_until. */
#define GS_JOB_MIN_SIZE offsetof(gpusched_job, protected_until)

/* The descriptor a running job was committed with. */
static inline gpusched_job gs_hold_job(const gs_hold *h)
{
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.flags = h->flags;
    j.id = h->id;
    j.priority = h->priority;
    j.tenant = h->tenant;
    j.start_time = h->start_time;
    j.cost_hint = h->cost_hint;
    j.protected_until = h->protected_until;
    return j;
}

/* One hash entry: key and slot share a line, so a lookup misses once.
 * The record's first node rides along, so that a release can start
 * loading the node's lines together with the record's. */
typedef struct gs_hent {
    uint64_t key;
    uint32_t slot;          /* UINT32_MAX: empty */
    uint32_t node_hint;     /* first node of the record's pairs when inserted */
} gs_hent;

typedef struct gs_holdtab {
    gs_hold *rec;           /* cap slots */
    uint32_t *live;         /* count slots in use, iteration order; rec[s].live
                             * is the index of slot s here */
    uint32_t *free_slots;   /* stack of free slots below `used` */
    uint32_t count;         /* live slots */
    uint32_t used;          /* slots ever handed out: [0, used) */
    uint32_t nfree;         /* entries on free_slots */
    uint32_t cap;
    /* hash: hcap is a power of two (or 0), load kept <= 1/2 */
    gs_hent *hash;
    uint32_t hcap;
} gs_holdtab;

/* Per-level aggregates. */
typedef struct gs_agg {
    uint32_t *free_gpus;    /* ndom */
    uint32_t *free_nodes;   /* ndom */
    uint32_t *hist;         /* ndom * hist_width */
    uint32_t *dom_gpus;     /* ndom: GPUs in the domain (constant, from the topology) */
} gs_agg;

/* ---- transactions (txn.h) ------------------------------------------------ */

/* One node's temporary change: XOR masks of node_free and node_resv. */
typedef struct gs_flip {
    uint32_t node;
    uint64_t fx, rx;
} gs_flip;

enum { GS_TG_DEAD = 0, GS_TG_LEND_JOB, GS_TG_LEND_RESV, GS_TG_HOLD, GS_TG_HOLD_PODS };

/* A temporary: its flips are flips[first, first + n). */
typedef struct gs_tgroup {
    uint32_t kind;
    uint32_t slot;          /* job or reservation slot (lends) */
    uint32_t first, n;
} gs_tgroup;

/* Staged change kinds; the values are the journal's op codes. */
enum {
    GS_OP_CLAIM = 1,
    GS_OP_RELEASE = 2,
    GS_OP_RESERVE = 3,
    GS_OP_UNRESERVE = 4,
    GS_OP_RELEASE_TO_RESV = 5,
    GS_OP_HEALTH = 6,
    GS_OP_UPDATE = 7,
};

typedef struct gs_op {
    uint32_t kind;
    uint32_t n;             /* pairs (CLAIM, RESERVE) */
    gpusched_job job;       /* CLAIM, UPDATE; job.id is the id of every kind */
    uint64_t id2;           /* RELEASE_TO_RESV: the reservation's job */
    uint32_t node, health;  /* HEALTH */
    const uint32_t *nodes;  /* borrowed (txn.h) */
    const uint64_t *masks;
    uint32_t slot;          /* validation: the record RELEASE, UPDATE, RELEASE_TO_RESV name */
    uint32_t own;           /* validation: CLAIM's own reservation slot + 1, 0: none */
    gs_hold *found;         /* RELEASE: the job the caller already looked up, or NULL */
    const gs_podx *podx;    /* CLAIM with resources or fractions (borrowed), or NULL */
    gs_podx *podx_copy;     /* commit: the record's copy of podx, prepared */
    void *block;            /* commit: the pair block prepared */
    uint32_t merged;        /* commit: pairs of a reservation after a merge */
} gs_op;

/* Open-addressing map from a 64-bit key to two masks: the commit's view of
 * what earlier changes of the transaction did (per node: GPUs given up and
 * taken; per job id: released and claimed). */
typedef struct gs_ovl_ent {
    uint64_t key;
    uint64_t a, b;
    uint32_t used;
} gs_ovl_ent;

typedef struct gs_ovl {
    gs_ovl_ent *e;
    uint32_t cap;           /* power of two, or 0 */
} gs_ovl;

typedef struct gs_txn_state {
    bool open;
    gs_flip *flips;
    uint32_t nflips, flips_cap;
    gs_tgroup *groups;
    uint32_t ngroups, groups_cap;
    uint32_t *job_group;    /* per job slot: index + 1 of its lend group, 0: none */
    uint32_t job_group_cap;
    gs_op *ops;
    uint32_t nops, ops_cap;
    gs_ovl nodes_ovl, ids_ovl;
    /* Pods kept until the transaction closes (gs_txn_keep_pods): what a
     * hold of pods takes, and what staged claims of a batch borrow. */
    struct gs_kept_pods *kept;
    uint32_t nkept, kept_cap;
} gs_txn_state;

/* A placement of pods the transaction keeps: its podx (a copy it owns)
 * and its pairs (borrowed from the caller's result). */
typedef struct gs_kept_pods {
    gs_podx *x;
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
} gs_kept_pods;

/* The journal (journal.c, doc/journal.md). */
typedef struct gs_journal {
    bool on;
    gpusched_journal_sink sink;     /* NULL: the cluster's buffer */
    void *user;
    unsigned char *buf;             /* buffer mode: records appended */
    size_t len, cap;
    unsigned char *rec;             /* the record being written (sink mode) */
    size_t rec_cap;
    uint64_t seq;                   /* sequence number of the last record */
} gs_journal;

/* ---- the preemption index (pindex.c) ---------------------------------------- */

/* Points of a domain's cost curve: 1, 2, 4, ... 128 GPUs. */
#define GS_PSUM_POINTS 8

/* What a domain's preemptible jobs (of any priority, protected or not)
 * could free: cost_at[i] is the least total cost_hint of freeing 2^i of
 * their GPUs inside the domain, fractions of jobs allowed (INFINITY when
 * they hold fewer); their least and greatest priority (INT32_MAX and
 * INT32_MIN when there is none). A lower bound for every plan in the
 * domain: see gs_psum_bound(). */
typedef struct gs_psum {
    double cost_at[GS_PSUM_POINTS];
    int32_t min_prio, max_prio;
} gs_psum;

typedef struct gs_pindex {
    bool built;
    gs_psum *sum[GS_MAX_LEVELS];    /* per level, per domain */
    gs_psum root;
    uint8_t *marked;                /* per lowest-level domain: in `dirty` */
    uint32_t *dirty;                /* lowest-level domains whose jobs changed */
    uint32_t ndirty;
    void *jobs;                     /* scratch: one domain's jobs */
} gs_pindex;

struct gpusched_cluster {
    gs_alloc alloc;
    uint32_t refs;                  /* gpusched_cluster_ref/unref; one thread */
    gs_err err;
    struct gpusched_topo *topo;     /* one reference held */
    uint32_t nlevels;               /* topo->nlevels, copied for the hot path */
    uint32_t hist_width;            /* topo->max_node_gpus + 1 */

    uint64_t *node_free;
    uint64_t *node_resv;
    uint8_t *node_health;
    /* Nodes whose health is not UP. Usually 0 on a large cluster: then the
     * hot paths need not load node_health at all (one miss fewer per rack
     * scanned, per job released). */
    uint32_t nodes_not_up;
    uint32_t *gpu_holder;           /* topo->ngpus entries */

    /* Resources and GPU fractions (pods.c). res_free[r][n]: node n's free
     * amount of topology resource r (r < topo->nres). gpu_milli_used[g]:
     * milli-GPU held by fractions on GPU g; such a GPU is shared: its bit
     * is in node_shared[n], not in node_free[n], and its holder is
     * GS_HOLDER_SHARED. Both arrays exist from the first fraction on (NULL
     * before: no GPU is shared). podx_jobs counts jobs with a podx. */
    uint32_t *res_free[GPUSCHED_MAX_RESOURCES];
    uint16_t *gpu_milli_used;
    uint64_t *node_shared;
    uint32_t podx_jobs;
    uint64_t shared_gpus, shared_free_milli;    /* over node_shared */
    /* Per job slot (podx_cap of them, from the first such job on): what a
     * job placed with resources or fractions holds beyond its masks, NULL
     * for a whole-GPU job. Beside the records, not in them: whole-GPU
     * paths never load it (gs_hold_podx reads it only while podx_jobs). */
    struct gs_podx **podx_of;
    uint32_t podx_cap;
    /* Bumped by every change of resources or fractions. */
    uint64_t podx_gen;
    /* Committed changes so far (txn.c): what was built on the cluster's
     * state, the scheduler's kept reservations, is valid while it stays. */
    uint64_t changes;
    /* Derived, kept lazily (pods.c): per lowest-level domain, what its
     * nodes hold beyond whole GPUs, so that pod searches skip racks without
     * visiting their nodes. NULL until the topology has resources or a GPU
     * is shared. */
    struct gs_leafsum *leafsum;
    uint8_t *leaf_dirty;
    /* Per node, a change counter (stamps.c): bumped by every change of what
     * the node offers (free and reserved GPUs, fractions, resources,
     * health), never 0. NULL until a reader asks for it with
     * gs_cluster_track_nodes(): readers that cache an answer per node (the
     * placer's fragmentation policy) compare it instead of the node's
     * state, and clusters without such readers pay one test. */
    uint32_t *node_stamp;

    gs_agg agg[GS_MAX_LEVELS];
    /* The whole cluster. */
    uint64_t root_free_gpus;
    uint32_t root_free_nodes;
    uint32_t *root_hist;            /* hist_width */
    /* Fragmentation counters, index 0..nlevels (nlevels: nodes). */
    uint32_t full_doms[GS_MAX_LEVELS + 1];
    uint64_t full_gpus[GS_MAX_LEVELS + 1];

    gs_holdtab jobs;
    gs_holdtab resv;
    uint32_t nlent;                 /* reservations lent right now */

    gs_txn_state txn;
    gs_journal journal;
    /* Sequence number of the last journal record applied to this cluster
     * (gpusched_cluster_journal_apply), 0: none yet. */
    uint64_t applied_seq;
    /* Derived, kept lazily for preemption (pindex.c). */
    gs_pindex pindex;

    /* Regular shapes (every preset): the per-node and per-domain topology
     * lookups of the update paths become arithmetic instead of a cache
     * miss each on large clusters. 0: not regular, read the arrays. */
    uint32_t reg_node_gpus;         /* every node has this many GPUs */
    uint32_t reg_leaf_nodes;        /* every lowest domain has this many nodes */
    uint32_t reg_dom_nodes[GS_MAX_LEVELS];  /* every domain of level l has this many nodes */
    uint32_t reg_fan[GS_MAX_LEVELS];        /* l >= 1: parent of d is d / reg_fan[l] */
};

/* ---- node helpers ------------------------------------------------------ */


static inline uint64_t gs_node_all_mask(uint32_t gpus)
{
    return gpus >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << gpus) - 1);
}

/* Sets the holder entries of the GPUs in `mask`. Masks of whole nodes or
 * of GPUs 0..k-1 (the usual shapes) are a plain run of stores. */
static inline void gs_holder_fill(uint32_t *h, uint64_t mask, uint32_t holder)
{
    if ((mask & (mask + 1)) == 0) {
        uint32_t k = mask ? 64 - (uint32_t)__builtin_clzll(mask) : 0;
        for (uint32_t g = 0; g < k; g++)
            h[g] = holder;
        return;
    }
    for (; mask; mask &= mask - 1)
        h[__builtin_ctzll(mask)] = holder;
}

/* Fills the reg_* fields of `c` from its topology. */
void gs_cluster_find_regular(struct gpusched_cluster *c);

static inline uint32_t gs_cl_node_gpus(const struct gpusched_cluster *c, uint32_t n)
{
    return c->reg_node_gpus ? c->reg_node_gpus : c->topo->node_gpus[n];
}

static inline uint32_t gs_cl_gpu_base(const struct gpusched_cluster *c, uint32_t n)
{
    return c->reg_node_gpus ? n * c->reg_node_gpus : c->topo->node_gpu_base[n];
}

static inline uint32_t gs_cl_node_leaf(const struct gpusched_cluster *c, uint32_t n)
{
    return c->reg_leaf_nodes ? n / c->reg_leaf_nodes : c->topo->node_leaf[n];
}

static inline uint32_t gs_cl_dom_nodes(const struct gpusched_cluster *c, uint32_t l, uint32_t d)
{
    const uint32_t *start = c->topo->dom_start[l];
    return c->reg_dom_nodes[l] ? c->reg_dom_nodes[l] : start[d + 1] - start[d];
}

static inline uint32_t gs_cl_parent(const struct gpusched_cluster *c, uint32_t l, uint32_t d)
{
    return c->reg_fan[l] ? d / c->reg_fan[l] : c->topo->dom_parent[l][d];
}

/* Starts the per-node change counters (node_stamp), if not started:
 * 0, or GPUSCHED_ENOMEM. */
int gs_cluster_track_nodes(struct gpusched_cluster *c);

/* Every writer calls it for each node it changes. */
static inline void gs_cluster_node_touch(struct gpusched_cluster *c, uint32_t n)
{
    if (c->node_stamp) {
        const uint32_t s = c->node_stamp[n] + 1;
        c->node_stamp[n] = s ? s : 1;
    }
}

/* GPUs of `n` usable for new work. */
static inline uint64_t gs_cluster_node_avail(const struct gpusched_cluster *c, uint32_t n)
{
    if (c->nodes_not_up && c->node_health[n] != GPUSCHED_NODE_UP)
        return 0;
    return c->node_free[n];
}

static inline uint64_t gs_cluster_node_allocated(const struct gpusched_cluster *c, uint32_t n)
{
    return gs_node_all_mask(c->topo->node_gpus[n]) & ~c->node_free[n] & ~c->node_resv[n];
}

/* The second round of lines an update of `node` touches, whose addresses
 * depend on the first (the node's GPU base and lowest domain) unless the
 * shape is regular: started before the table work so that both overlap. */
static inline void gs_prefetch_node_deps(const struct gpusched_cluster *c, uint32_t node)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t leaf = gs_cl_node_leaf(c, node), l = c->nlevels - 1;
    __builtin_prefetch(&c->gpu_holder[gs_cl_gpu_base(c, node)], 1);
    __builtin_prefetch(&c->agg[l].free_gpus[leaf], 1);
    __builtin_prefetch(&c->agg[l].free_nodes[leaf], 1);
    __builtin_prefetch(&c->agg[l].hist[(size_t)leaf * c->hist_width], 1);
    if (!c->reg_dom_nodes[l])
        __builtin_prefetch(&t->dom_start[l][leaf]);
    if (l && !c->reg_fan[l])
        __builtin_prefetch(&t->dom_parent[l][leaf]);
}

/* Starts the loads of a node's state early: placement results and bench
 * loops touch nodes all over the cluster, and these lines sit in arrays of
 * megabytes, so overlapping the misses is most of the cost of a small
 * allocation. */
static inline void gs_prefetch_node(const struct gpusched_cluster *c, uint32_t node)
{
    const struct gpusched_topo *t = c->topo;
    if (node >= t->nnodes)
        return;
    __builtin_prefetch(&c->node_free[node], 1);
    if (c->nodes_not_up)
        __builtin_prefetch(&c->node_health[node]);
    if (!c->reg_node_gpus) {
        __builtin_prefetch(&t->node_gpus[node]);
        __builtin_prefetch(&t->node_gpu_base[node]);
    }
    if (!c->reg_leaf_nodes)
        __builtin_prefetch(&t->node_leaf[node]);
    else if (c->reg_node_gpus)
        gs_prefetch_node_deps(c, node); /* addresses known without a load */
}

/* Nodes of domain d at level l (GPUSCHED_NONE: the whole cluster) with at
 * least g usable free GPUs. O(hist_width). */
uint32_t gs_cluster_hist_at_least(const struct gpusched_cluster *c, uint32_t l, uint32_t d, uint32_t g);

/* GPUs in domain d of level l. */
uint32_t gs_topo_dom_gpus(const struct gpusched_topo *t, uint32_t l, uint32_t d);

/* ---- jobs and reservations --------------------------------------------- */

gs_hold *gs_holdtab_find(const gs_holdtab *t, uint64_t id);
/* Starts loading the hash line of `id`, for a lookup or insert soon after
 * other work. */
void gs_holdtab_prefetch(const gs_holdtab *t, uint64_t id);
/* The record of `id` and the node hint stored with it (a prefetch address
 * only: reservations that grow keep their first hint). */
gs_hold *gs_holdtab_find_hint(const gs_holdtab *t, uint64_t id, uint32_t *node_hint);
size_t gs_holdtab_bytes(const gs_holdtab *t);

static inline uint32_t gs_hold_slot(const gs_holdtab *t, const gs_hold *h)
{
    return (uint32_t)(h - t->rec);
}

static inline gs_hold *gs_cluster_job_find(const struct gpusched_cluster *c, uint64_t id)
{
    return gs_holdtab_find(&c->jobs, id);
}

static inline gs_hold *gs_cluster_resv_find(const struct gpusched_cluster *c, uint64_t id)
{
    return gs_holdtab_find(&c->resv, id);
}

static inline const uint32_t *gs_hold_nodes(const gs_hold *h)
{
    return h->npairs <= GS_HOLD_INLINE ? h->p.in.nodes : h->p.out.nodes;
}

static inline const uint64_t *gs_hold_masks(const gs_hold *h)
{
    return h->npairs <= GS_HOLD_INLINE ? h->p.in.masks : h->p.out.masks;
}

/* The pair block of `h`, NULL when its pairs are inline. */
static inline void *gs_hold_block(const gs_hold *h)
{
    return h->npairs > GS_HOLD_INLINE ? h->p.out.masks : NULL;
}

/* What job record h holds beyond its masks, or NULL (every whole-GPU job). */
static inline gs_podx *gs_hold_podx(const struct gpusched_cluster *c, const gs_hold *h)
{
    if (!c->podx_jobs)
        return NULL;
    const uint32_t s = (uint32_t)(h - c->jobs.rec);
    return s < c->podx_cap ? c->podx_of[s] : NULL;
}

/* Job in the holder entry of a GPU: NULL unless the GPU is allocated. */
static inline gs_hold *gs_cluster_holder_job(const struct gpusched_cluster *c, uint32_t holder)
{
    return holder == 0 || (holder & GS_HOLDER_RESV) ? NULL : &c->jobs.rec[holder - 1];
}

/* The preemption index, brought up to date (built on first use): a cache
 * derived from the jobs, not state; valid until the next change. */
int gs_cluster_pindex(struct gpusched_cluster *c, const gs_pindex **out);
/* A lower bound of the cost of freeing `need` GPUs from a domain's jobs. */
double gs_psum_bound(const gs_psum *s, uint64_t need);

#endif
