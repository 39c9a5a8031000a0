/* The scheduling cycle's internals. Never installed. doc/sched.md has the
 * model; this header names the pieces. */
#ifndef GS_SCHED_INTERNAL_H
#define GS_SCHED_INTERNAL_H

#include "cluster/cluster-internal.h"
#include "core.h"
#include "gpusched/preempt.h"
#include "gpusched/sched.h"
#include "place/place-internal.h"

#define GS_SQ_NONE UINT32_MAX
#define GS_SJ_NONE UINT32_MAX
/* Cluster priority of a job started on borrowed capacity: its own minus
 * this, below every job that is not (doc/sched.md, "Preemption"). */
#define GS_SD_BORROW_TIER (1 << 30)
/* An expected end that never comes. */
#define GS_SD_NEVER INT64_MAX

enum { GS_SJ_FREE = 0, GS_SJ_PENDING = 1, GS_SJ_RUNNING = 2 };

typedef struct gs_sq {
    char name[GPUSCHED_SCHED_NAME_MAX + 1];
    uint32_t parent;            /* GS_SQ_NONE for the root */
    uint32_t depth;
    uint32_t *kids;             /* children, by id */
    uint32_t nkids, kids_cap;
    int32_t priority;
    uint32_t weight;
    uint32_t *pend;             /* pending job slots, in queue order */
    uint32_t npend, pend_cap;
    uint32_t sub_pending;       /* pending gangs in the subtree */
    uint32_t nrunning;          /* running jobs of this leaf */
    uint32_t cursor;            /* cycle: next position of `pend` to evaluate */
    double share;
} gs_sq;

typedef struct gs_sj {
    uint64_t id;
    uint32_t queue;
    uint8_t state;
    uint8_t borrowed;           /* started on borrowed capacity */
    uint8_t victim;             /* running, and started preemptible (gs_sj_run_flags) */
    uint32_t flags;
    int32_t priority;
    uint32_t gpus;              /* GPUs it holds whole (the cluster's count) */
    uint32_t cls_res;           /* 1 + its GPU class, or 0 */
    uint32_t qgpus;             /* GPUs charged to quotas: whole ones, and the gang's
                                 * fractions summed, rounded up */
    uint32_t size;              /* the memo's size: gpus, or pods for a pod gang */
    uint32_t need_free;         /* whole GPUs that must be free for it to fit */
    uint8_t pods;               /* placed as pods with resources or fractions */
    uint8_t quick_way;          /* its admission's way in a quick run's table (gs_sj_quick_way) */
    /* The fields above and these two are what a quick wait reads (cycle.c):
     * the first cache line. */
    uint64_t shape;             /* gs_sj_shape_key() of its request */
    uint64_t evicted_cycle;     /* the cycle it was evicted in (not restarted in it) */
    uint64_t *res_amt;          /* pod gangs: per topology resource, the gang's total;
                                 * NULL otherwise (one block with the request's arrays) */
    int64_t submit, limit, predicted;
    int64_t start;
    uint64_t cost_hint;
    gpusched_place_request req; /* job NULL, flags 0, avoid_nodes -> `avoid` */
    uint32_t *avoid;
    uint32_t run_pos;           /* position in s->running */
    /* Its last reservation's search ended lending job slot resv_last (then
     * expected to end at resv_end): where the next search starts (resv.c).
     * GS_SJ_NONE: none. */
    uint32_t resv_last;
    int64_t resv_end;
    uint64_t inc;               /* which submit put it in this slot (s->submits then) */
    uint64_t wake_gen;          /* its entry in the wake's order (wake.c) */
    /* 1 + the level whose domains its slices each fill, when that is its
     * only constraint (whole.c), else 0. */
    uint8_t whole_level;
} gs_sj;

_Static_assert(offsetof(gs_sj, evicted_cycle) + sizeof(uint64_t) <= 64, "a quick wait reads one cache line");

/* A gang's last explanation, by slot: the parts that differ between
 * gangs, and the rest in template `tmpl` of s->wt, valid while `cycle` is
 * s->cycle_no (a wait of an older cycle reads as none). 24 bytes, where
 * the whole wait is 104: a cycle writes one per pending gang. */
typedef struct gs_jw {
    uint64_t cycle;
    uint64_t requested;
    uint32_t tmpl, seq;
} gs_jw;

static inline uint64_t gs_sd_mix64(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* jobs.c: the shape of a gang without its size; 0 when it is not
 * memoizable (its own avoided nodes). Fitting is monotone in the size for
 * one shape. */
uint64_t gs_sj_shape_key(const gpusched_place_request *q);

/* A running job's node in the list of expected ends: its end and, per
 * level, the next slot + 1 (0: none). A slot's levels are fixed by a hash
 * of it (each further level with probability 1/4). */
#define GS_ENDS_LEVELS 12
typedef struct gs_endnode {
    int64_t end;
    uint32_t next[GS_ENDS_LEVELS];
} gs_endnode;

/* A reservation made by the current cycle. */
typedef struct gs_resv {
    uint32_t slot;
    int64_t time;
    uint32_t off, n;            /* its nodes: s->rnodes[off .. off + n) */
    /* What its search depended on besides the cluster (kept.c): the gang's
     * submit, the nodes of the reservations before it (a fingerprint), the
     * placer's pod workload; and the change log's length when it ran. */
    uint64_t inc, fp, wl_epoch, seq;
    uint64_t nodes_fp;          /* gs_sd_nodes_fp() of its own nodes, from 0 */
} gs_resv;

/* The change log (kept.c): what the scheduler did to the cluster, for the
 * kept reservations to tell whether a change could move them. */
enum { GS_CHG_FREE = 0, GS_CHG_TAKE = 1, GS_CHG_OTHER = 2 };
#define GS_CHG_NODES 4u
typedef struct gs_chg {
    int64_t end;                /* FREE, TAKE: the job's expected end (GS_SD_NEVER: none) */
    uint64_t inc;               /* TAKE: the job's slot and submit */
    uint32_t slot;
    uint8_t kind;
    uint8_t nnodes;             /* FREE: the job's nodes, when at most GS_CHG_NODES */
    uint32_t nodes[GS_CHG_NODES];
} gs_chg;
#define GS_CHG_LOG 1024u

/* Memo of the cycle: the smallest size (GPUs, or pods for a pod gang) for
 * which a shape did not fit. */
typedef struct gs_memo {
    uint64_t key;
    uint64_t gen;
    uint32_t size;              /* the smallest size that failed (GPUs, or pods) */
    uint32_t reason;
    uint32_t msg;               /* offset in s->memo_text, or a reservation index */
    uint32_t pool;              /* offset in the decisions' pool, valid in cycle `pool_cycle` */
    uint64_t pool_cycle;
    uint32_t starts;            /* the cycle's memo of shapes behind reservations: the
                                 * cycle's starts when `size` fit only on reserved nodes */
} gs_memo;

/* wake.c: the gangs the next wake depends on, in order, with lazy
 * deletion (an entry is valid while its gang's wake_gen is `gen`). */
typedef struct gs_wake_ent {
    int64_t key;                /* a victim's start, or a pending gang's submit */
    uint64_t gen;
    uint32_t slot;
} gs_wake_ent;

typedef struct gs_wake {
    gs_wake_ent *run;           /* running victims by start: [run_head, run_n) */
    uint32_t run_head, run_n, run_cap;
    int64_t run_prot;           /* the shortest protection a valid entry was dropped at
                                 * since the last rebuild (INT64_MAX: none) */
    gs_wake_ent *age;           /* pending gangs: a min-heap by submit */
    uint32_t age_n, age_cap;
    int64_t age_lim;            /* the same for the age limit */
    uint64_t gen;
} gs_wake;

struct gpusched_sched {
    gs_alloc alloc;
    gs_err err;
    struct gpusched_cluster *c;     /* one reference */
    gpusched_placer *p;
    gpusched_place_result *res;
    gpusched_preempt_plan *plan;
    uint32_t nres;                  /* 1 + the topology's classes + its resources */
    uint32_t res0;                  /* 1 + classes: the first topology resource */
    uint32_t nlevels;

    /* Parameters. */
    int64_t half_life, resv_depth, order_mode, strict, quotas, preempt, min_runtime, age_limit, preempt_max_gpus,
        large_gpus, keep_resv;

    /* Queues, and per queue x resource (index q * nres + r). */
    gs_sq *q;
    uint32_t nq, q_cap;
    uint64_t *nominal, *borrow, *lend;
    uint64_t *total, *guar, *used, *sumocc;
    /* Usage within quota: ent = min(used, total) for a leaf, min(sument,
     * total) above; sument sums the children's ent. */
    uint64_t *ent, *sument;
    uint64_t use_epoch;             /* moves with every change of usage (gs_sq_use), quotas or tree */
    struct admit_memo *admit_memo;  /* cycle.c */
    double *decayed;
    struct gs_sq_prof *prof;        /* admission thresholds per queue x resource (queue.c) */
    uint32_t *res_set;              /* per resource: queues with a non-zero nominal */
    uint32_t qr_cap;                /* queues the per-resource arrays hold */

    /* Jobs: slots, the id map, the free slots, the running list. */
    gs_sj *j;
    uint32_t nj, j_cap;
    uint32_t *free_slots;
    uint32_t nfree, free_cap;
    uint64_t *map_key;
    uint32_t *map_val;              /* GS_SJ_NONE: empty */
    uint32_t map_cap, map_used;     /* map_cap: power of two */
    gs_jw *jw;                      /* per slot, grown with j */
    uint32_t jw_cap;
    /* The wait templates of cycle cycle_no (job_id, seq and requested 0),
     * the same list as in its decisions. */
    gpusched_sched_wait *wt;
    uint32_t nwt, wt_cap;
    uint32_t *running;
    uint32_t nrunning, running_cap;
    uint32_t npending;
    /* Every pending gang in the order of gpend_mode (priority or FIFO),
     * kept while that is the order (-1: to rebuild). */
    uint32_t *gpend;
    uint32_t ngpend, gpend_cap;
    int64_t gpend_mode;

    /* Time and quiet cycles. */
    int64_t last_now;
    int64_t decay_time;
    int dirty;
    int64_t wake;                   /* a cycle at or after this is not quiet */
    gs_wake wk;                     /* what the next wake is computed from (wake.c) */
    uint64_t cycle_no;
    /* Fair order with a half-life: the order of the leaves with pending
     * gangs on the state a cycle left (shares move with time alone, so a
     * cycle with nothing new is quiet only if that order stands). */
    uint32_t *quiet_order;
    uint32_t nquiet_order, quiet_order_cap;

    /* Evictions by node failures, reported by the next cycle. */
    uint64_t *down_ev;
    uint32_t ndown_ev, down_ev_cap;

    /* Cycle scratch. */
    uint32_t *order;                /* leaves (fair) or job slots (priority, fifo) */
    uint32_t order_cap;
    uint32_t *stack;
    uint32_t stack_cap;
    gs_resv *resv;
    uint32_t nresv, resv_cap;
    uint32_t *rnodes;               /* every reservation's nodes */
    uint32_t nrnodes, rnodes_cap;
    int64_t resv_min_time;
    uint64_t rfp;                   /* fingerprint of the reservations' nodes, in order */
    /* The last cycle's reservations, which this one may keep (kept.c). */
    gs_resv *kresv;
    uint32_t nkresv, kresv_cap;
    uint32_t *krnodes;
    uint32_t krnodes_cap;
    /* The change log: a ring of the last GS_CHG_LOG of nchg changes, and the
     * cluster's count of changes after the last one the scheduler made. */
    gs_chg *chg;
    uint64_t nchg, c_seen;
    uint64_t submits;
    uint32_t *avoid_buf;
    uint32_t avoid_cap;
    /* Running jobs with an expected end, in (end, job id) order: a skip list
     * whose nodes are the job slots, so that a start or an end costs
     * O(log n) and never allocates (jobs.c). */
    gs_endnode *endn;               /* per slot, grown with j */
    uint32_t endn_cap;
    uint32_t ends_head[GS_ENDS_LEVELS];
    uint32_t nends;
    /* Reservation search scratch: the first ends in order (resv.c). */
    uint32_t *end_slot;
    uint32_t end_slot_cap;
    /* Reservation search scratch: GPUs per domain of one level (resv.c,
     * whole_domains_hint). */
    uint32_t *dom_free;
    uint32_t dom_free_cap;
    /* Gangs of whole domains tried by count (whole.c): the domains of
     * the reserved nodes at one level with the first reservation on each,
     * for the reservations of fingerprint wr_fp in cycle wr_cycle. */
    uint32_t *wr_dom, *wr_idx, *wr_seen;
    uint32_t nwr, wr_cap, wr_idx_cap, wr_seen_cap, wr_level, wr_gen;
    uint64_t wr_fp, wr_cycle;
    /* Reservations of whole domains (resv.c whole_reserve): the domains
     * chosen, the counts per domain above them, the nodes. */
    uint32_t *wh_doms, *wh_cnt, *wh_nodes;
    uint32_t wh_doms_cap, wh_cnt_cap, wh_nodes_cap, nwh_nodes;
    gs_memo *memo;
    uint32_t memo_cap;              /* power of two */
    uint64_t memo_gen;
    /* Failures of a shape stay true until GPUs are freed: the memo lives
     * across cycles while free_epoch does not move. */
    uint64_t free_epoch, memo_epoch;
    uint64_t cmemo_gen;             /* the memo of one cycle, until GPUs come free in it */
    char *memo_text;
    uint32_t memo_text_len, memo_text_cap;
    /* Running jobs a preemption could take: preemptible ones. */
    uint32_t npre;
    uint64_t free_at_start, started_gpus, free_at_end;
    uint64_t podx_gen_at_end;       /* the cluster's podx_gen after the last cycle */
    /* Waits known without a search are recorded without building the
     * request (cycle.c quick_wait()); GPUSCHED_SCHED_QUICK=0 in the
     * environment at creation turns it off, so that tests can compare. */
    int quick;
    /* GPUSCHED_SCHED_KEEP_CHECK=1 in the environment at creation: each
     * reservation kept across cycles (kept.c) is checked against a new
     * search, which must find the same time, so that tests can compare. */
    int keep_check;
    /* Gangs of whole domains decided by count: their reservations
     * without a search (resv.c whole_reserve()) and their tries around the
     * reserved nodes (whole.c); GPUSCHED_SCHED_WHOLE=0 at creation turns
     * both off. With keep_check, each reservation is checked against a
     * search, which must find the same count of ends. */
    int whole;
};

/* The decisions of one cycle. A wait is stored as what differs between
 * gangs and the index of a template holding the rest: consecutive gangs
 * that wait for the same reason share one (a cycle explains thousands of
 * gangs; writing 104 bytes for each was a large part of its cost). */
typedef struct gs_dwtmpl {
    gpusched_sched_wait w;          /* job_id, seq and requested 0 */
    uint32_t msg;                   /* pool offset, UINT32_MAX or GS_SD_MSG_TOO_FEW_FREE */
} gs_dwtmpl;

typedef struct gs_dwait {
    uint64_t job_id;
    uint64_t requested;
    uint32_t seq, tmpl;
} gs_dwait;

struct gpusched_sched_decisions {
    gs_alloc alloc;
    int quiet;
    uint64_t *start_ids;
    uint32_t *start_seq, *start_off;
    uint32_t nstarts, starts_cap;
    uint32_t *start_nodes;
    uint64_t *start_masks;
    uint32_t npairs, pairs_cap;
    uint64_t *ev_victims, *ev_for;
    uint32_t nev, ev_cap;
    uint64_t *rv_job;
    int64_t *rv_time;
    uint32_t *rv_level, *rv_dom, *rv_off;
    uint32_t nrv, rv_cap;
    uint32_t *rv_nodes;
    uint32_t nrv_nodes, rv_nodes_cap;
    gs_dwait *waits;
    uint32_t nwaits, waits_cap;
    gs_dwtmpl *tmpl;
    uint32_t ntmpl, tmpl_cap;
    char *pool;
    uint32_t pool_len, pool_cap;
    uint32_t *qname;                /* per queue and resource: its name's pool offset */
    uint32_t nqname, qname_cap;
    const char *const *res_names;   /* unused: names are formatted at record time */
    char msg[768];
};

/* queue.c */
int gs_sq_init(gpusched_sched *s);
void gs_sq_fini(gpusched_sched *s);
static inline uint32_t gs_qr(const gpusched_sched *s, uint32_t q, uint32_t r) { return q * s->nres + r; }
/* Subtree quotas, guarantees and occupancies of every queue, from scratch;
 * GPUSCHED_ERANGE if a subtree sum passes 2^62 (nothing changed then). */
int gs_sq_recompute(gpusched_sched *s);
/* What job j uses of each resource (GPUs, its class, the topology's
 * resources for a pod gang): up to GS_SJ_DEMAND_MAX (resource, amount)
 * pairs into r and amt; their count. */
#define GS_SJ_DEMAND_MAX (2 + GPUSCHED_MAX_RESOURCES)
uint32_t gs_sj_demand(const gpusched_sched *s, const gs_sj *j, uint32_t *r, uint64_t *amt);
/* Usage of job j's demand added (sign > 0) or taken away along the path
 * from its queue to the root. */
void gs_sq_use(gpusched_sched *s, const gs_sj *j, int sign);
static inline int gs_sq_active(const gpusched_sched *s, uint32_t r) { return r == 0 || s->res_set[r] > 0; }
static inline uint64_t gs_sq_occ(const gpusched_sched *s, uint32_t i)
{
    return s->used[i] > s->guar[i] ? s->used[i] : s->guar[i];
}
/* Whether `gpus` more in `leaf` stay within quota: 0 and *nominal = 1 if
 * within every subtree quota on the path, 0 and *nominal = 0 if within
 * the borrowing rules, or 1 with `w` filled (reason QUOTA). */
int gs_sq_admit(const gpusched_sched *s, const gs_sj *j, int *nominal, gpusched_sched_wait *w);
/* A queue's admission of one resource as thresholds in the amount asked
 * (gs_sq_admit() is a threshold test on each level of the path), valid
 * while s->use_epoch does not move: within quota on the whole path while
 * the amount is at most `nominal_max`; else over at level k (leaf first)
 * when it is more than head[k], the first such level named. */
typedef struct gs_sq_prof {
    uint64_t epoch;                 /* s->use_epoch + 1 when filled; 0: never */
    int64_t nominal_max;
    int64_t admit_max;              /* the least head: admitted while the amount is at most this */
    uint32_t n;                     /* levels on the path, the leaf first */
    uint32_t queue[GPUSCHED_SCHED_MAX_DEPTH + 1];
    int64_t head[GPUSCHED_SCHED_MAX_DEPTH + 1];
    uint64_t used[GPUSCHED_SCHED_MAX_DEPTH + 1], cap[GPUSCHED_SCHED_MAX_DEPTH + 1];
} gs_sq_prof;
/* The first level (leaf first) whose limit `amount` more would pass, or
 * p->n if none. */
uint32_t gs_sq_prof_level(const gs_sq_prof *p, int64_t amount);
/* Queue q's profile of resource r, filled if usage moved since. */
const gs_sq_prof *gs_sq_prof_of(gpusched_sched *s, uint32_t q, uint32_t r);
/* gs_sq_admit() for a gang without pods, from the profiles of its queue. */
int gs_sq_admit_fast(gpusched_sched *s, const gs_sj *j, int *nominal, gpusched_sched_wait *w);
/* The decayed usage brought to `now`. */
void gs_sq_decay(gpusched_sched *s, int64_t now);
/* Shares of every queue (fair order); one path after a start. */
void gs_sq_shares(gpusched_sched *s);
void gs_sq_shares_path(gpusched_sched *s, uint32_t leaf);
/* The leaves with pending gangs in fair order into s->order; the count. */
int gs_sq_leaf_order(gpusched_sched *s, uint32_t *n);
/* Pending lists: insert in queue order, remove. */
int gs_sq_pend_insert(gpusched_sched *s, uint32_t slot);
void gs_sq_pend_remove(gpusched_sched *s, uint32_t slot);
/* Queue order of two pending jobs of one queue (priority, submit, id). */
bool gs_sj_before(const gs_sj *a, const gs_sj *b);
/* The global order of gpend_mode. */
bool gs_sj_global_before(const gpusched_sched *s, uint32_t a, uint32_t b);
/* Rebuilds s->gpend for the current order. */
int gs_sq_gpend_build(gpusched_sched *s);

/* jobs.c */
int gs_sj_map_reserve(gpusched_sched *s);
void gs_sj_map_put(gpusched_sched *s, uint64_t id, uint32_t slot);
void gs_sj_map_del(gpusched_sched *s, uint64_t id);
uint32_t gs_sj_find(const gpusched_sched *s, uint64_t id);
int64_t gs_sj_expected(const gs_sj *j);
/* When running job j is expected to end: its start plus gs_sj_expected(),
 * or GS_SD_NEVER. */
int64_t gs_sj_expected_end(const gs_sj *j);
/* The slot after `slot` in end order (GS_SJ_NONE: the first), or
 * GS_SJ_NONE at the end. */
static inline uint32_t gs_sj_end_next(const gpusched_sched *s, uint32_t slot)
{
    uint32_t n = slot == GS_SJ_NONE ? s->ends_head[0] : s->endn[slot].next[0];
    return n ? n - 1 : GS_SJ_NONE;
}
/* Checks the list of expected ends: in order, and every running job with
 * an expected end in it once. 0 or GPUSCHED_ECORRUPT (message in s->err). */
int gs_sj_ends_check(gpusched_sched *s);
/* The way of a quick run's direct-mapped admission table (cycle.c) that
 * gang j's (queue, GPUs, class) takes, fixed at submit. Multiplicative:
 * sizes are often powers of two, which low bits mix badly. */
#define GS_QUICK_WAYS 32u
static inline uint8_t gs_sj_quick_way(const gs_sj *j)
{
    uint64_t h = (j->qgpus + ((uint64_t)j->cls_res << 32)) * 0x9e3779b97f4a7c15ull + j->queue * 0xc2b2ae3d27d4eb4full;
    return (uint8_t)((h >> 59) & (GS_QUICK_WAYS - 1));
}
/* The cluster job flags gang j starts with: its own, without
 * GPUSCHED_JOB_FLAG_PREEMPTIBLE when it has more GPUs than
 * GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS allows a victim. */
static inline uint32_t gs_sj_run_flags(const gpusched_sched *s, const gs_sj *j)
{
    if (s->preempt_max_gpus && j->gpus > (uint64_t)s->preempt_max_gpus)
        return j->flags & ~(uint32_t)GPUSCHED_JOB_FLAG_PREEMPTIBLE;
    return j->flags;
}
/* A running job stops being one: usage, running list (not the cluster). */
void gs_sj_unrun(gpusched_sched *s, uint32_t slot, int64_t now);
/* A running job goes back to its queue, pending (its cluster job released already). */
int gs_sj_requeue(gpusched_sched *s, uint32_t slot, int64_t now);
int gs_sj_run(gpusched_sched *s, uint32_t slot, int64_t now, int borrowed);

/* How long a started gang is protected from preemption: the minimum run
 * time, and at least 1, so that a cycle never evicts a gang it started
 * (its decisions would hold both). */
static inline int64_t gs_sd_protection(const gpusched_sched *s)
{
    return s->min_runtime ? s->min_runtime : 1;
}

/* whole.c: a gang of whole domains decided by count where that is
 * exact (the placer knows the levels whose domains all have one size).
 * gs_sd_whole_level() is what gs_sj.whole_level holds for a
 * request (at submit). gs_sd_whole_try() answers the cycle's two tries
 * of such a gang that avoids the reserved nodes: 1 with *fits_around
 * (the try around the reserved nodes can succeed: a search decides) or
 * with *behind set to the first reservation on a wholly free domain (it
 * fits only with reserved nodes), 0 when the count does not decide (a
 * search does both), or GPUSCHED_ENOMEM. */
uint8_t gs_sd_whole_level(const gpusched_sched *s, const gs_pl_req *r);
int gs_sd_whole_try(gpusched_sched *s, const gs_sj *j, int *fits_around, const gs_resv **behind);

/* wake.c: room for `jobs` gangs (at submit, so that the pushes never
 * allocate); a start (after j->victim is set) and a gang that becomes
 * pending are pushed; the next wake after now, or INT64_MAX; and the
 * check that it is the one a pass over every gang finds. */
int gs_sd_wake_reserve(gpusched_sched *s, uint32_t jobs);
void gs_sd_wake_run(gpusched_sched *s, uint32_t slot);
void gs_sd_wake_pend(gpusched_sched *s, uint32_t slot);
int64_t gs_sd_wake_next(gpusched_sched *s, int64_t now);
int gs_sd_wake_check(gpusched_sched *s);

/* cycle.c: q avoids j's own avoided nodes and every reserved node (in
 * s->avoid_buf, valid until the next call); 0 or GPUSCHED_ENOMEM. */
int gs_sd_avoid_reserved(gpusched_sched *s, const gs_sj *j, gpusched_place_request *q);

/* kept.c: the change log and the reservations kept across cycles. */
/* Appends a change the scheduler made (or saw: GS_CHG_OTHER). */
void gs_sd_chg_log(gpusched_sched *s, uint8_t kind, int64_t end, uint32_t slot);
/* Appends the end of running job `slot`, before the cluster releases it
 * (its nodes are read from the cluster). */
void gs_sd_chg_log_end(gpusched_sched *s, uint32_t slot);
/* After the scheduler made and logged `own` changes to the cluster (or
 * none, at the start of a cycle): any other change since its last one,
 * the caller's, is logged as GS_CHG_OTHER. */
void gs_sd_chg_sync(gpusched_sched *s, uint64_t own);
/* At the start of a cycle: the last one's reservations become the kept
 * ones, and this one's list starts empty. */
void gs_sd_kept_swap(gpusched_sched *s);
/* The last cycle's reservation of gang `slot`, if a search now would find
 * the same time and its nodes are still free then; NULL otherwise. */
const gs_resv *gs_sd_kept(const gpusched_sched *s, uint32_t slot, int64_t now);
/* GPUSCHED_SCHED_KEEP_CHECK: whether kept reservation v's nodes (given)
 * each have, free at its time, what a pod of its gang needs there. */
int gs_sd_kept_nodes_free(const gpusched_sched *s, const gs_resv *v, const uint32_t *nodes);
/* Fingerprint of fp followed by n nodes. */
uint64_t gs_sd_nodes_fp(uint64_t fp, const uint32_t *nodes, uint32_t n);

/* resv.c: the earliest time job `slot` fits from the running jobs'
 * expected ends, avoiding the nodes of the reservations made so far; 0 and
 * the reservation appended to s->resv, GPUSCHED_ENOSPC, or an error. */
int gs_sd_reserve(gpusched_sched *s, uint32_t slot, int64_t now);
/* The smallest domain holding a reservation's nodes (level GPUSCHED_NONE:
 * the whole cluster). */
void gs_sd_resv_domain(const gpusched_sched *s, const gs_resv *v, uint32_t *level, uint32_t *dom);

/* decisions.c */
void gs_sd_reset(gpusched_sched_decisions *d);
int gs_sd_add_start(gpusched_sched_decisions *d, uint64_t id, uint32_t seq, const uint32_t *nodes,
                    const uint64_t *masks, uint32_t n);
int gs_sd_add_eviction(gpusched_sched_decisions *d, uint64_t victim, uint64_t for_job);
int gs_sd_add_resv(gpusched_sched_decisions *d, uint64_t id, int64_t time, uint32_t level, uint32_t dom,
                   const uint32_t *nodes, uint32_t n);
/* Room for `need` waits; 0 or GPUSCHED_ENOMEM. */
int gs_sd_grow_waits(gpusched_sched_decisions *d, uint32_t need);
/* A new template from w (its per-gang parts dropped) and msg: a pool
 * offset, UINT32_MAX (no text), or GS_SD_MSG_TOO_FEW_FREE (the text is
 * formatted from the wait's requested and free_gpus when read). */
int gs_sd_add_template(gpusched_sched_decisions *d, const gpusched_sched_wait *w, uint32_t msg);
/* Whether template t holds what w and msg hold besides the per-gang parts.
 * Field by field: the struct's padding is not part of its value. */
static inline int gs_sd_same_template(const gs_dwtmpl *t, const gpusched_sched_wait *w, uint32_t msg)
{
    const gpusched_sched_wait *a = &t->w;
    return t->msg == msg && a->reason == w->reason && a->queue == w->queue && a->resource == w->resource &&
           a->place_reason == w->place_reason && a->used == w->used && a->limit == w->limit &&
           a->free_gpus == w->free_gpus && a->taken_gpus == w->taken_gpus && a->blocking_job == w->blocking_job &&
           a->time == w->time && a->share == w->share;
}
/* Wait `index` whole. */
void gs_sd_wait_get(const gpusched_sched_decisions *d, uint32_t index, gpusched_sched_wait *w);
#define GS_SD_MSG_TOO_FEW_FREE (UINT32_MAX - 1)
/* Appends a string to the pool; its offset, or UINT32_MAX out of memory. */
uint32_t gs_sd_pool_add(gpusched_sched_decisions *d, const char *text);

#endif
