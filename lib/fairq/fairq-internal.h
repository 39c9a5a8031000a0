/* Internal layout of the fair-share queue (doc/fairq.md explains the why).
 *
 * Slots: every enqueued task gets the next slot at the end of the columns,
 * so slot order is enqueue order and "lowest slot" means "oldest". A removed
 * task leaves a hole (key 0, whose term is -inf) until compaction squeezes
 * the holes out in place. The full rescore reads two columns per slot
 * (enqueue time and key), plus the prediction when W_PRED is on.
 *
 * Keys: one per (tenant, type) pair ever seen, never deleted. Each key keeps
 * a FIFO of its slots (singly linked through `next`, holes skipped lazily)
 * and the enqueue time of its head, so the fast path reads only keys. */
#ifndef GS_FAIRQ_INTERNAL_H
#define GS_FAIRQ_INTERNAL_H

#include "core.h"
#include "gpusched/fairq.h"

/* Bit-identical scores on every path need every multiply and add rounded
 * on its own: no contraction into fused multiply-adds, whatever -std or
 * -ffp-contract the build uses (GNU C modes contract by default, and the
 * AVX2 kernels are compiled with -mfma). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define GS_FQ_NONE UINT32_MAX
#define GS_FQ_HOLE_KEY 0u
#define GS_FQ_MAX_SLOTS (1u << 31)
#define GS_FQ_PRED_MIN 1e-9

/* ---- id maps: u64 -> u32 index, keys read from the caller's column ---- */

/* Open addressing, linear probing, backward-shift deletion. A table entry
 * is (32-bit hash << 32) | (index + 1), 0 when empty; the 64-bit key is
 * stored once, in its column, and read only when the hash matches, so a
 * probe rarely leaves the table.
 *
 * With `runs` (the task-id index), the hash keeps runs of 8 consecutive
 * keys (same key >> 3) in one 64-byte line of the table (aligned to 64
 * bytes): task ids are mostly handed out in order, so enqueues and the
 * index rebuild after compaction touch a new line once per 8 tasks
 * instead of once per task. Keys that are not consecutive are spread by
 * the mix of key >> 3; the table then behaves as buckets of 8 entries
 * with linear overflow, at load <= 1/2. The small maps (running tasks,
 * keys) stay in cache and hash every key fully: shorter probes. */
typedef struct gs_fq_idmap {
    uint64_t *tab;   /* 64-byte aligned, inside raw */
    void *raw;       /* the allocation */
    uint32_t mask;   /* capacity - 1; capacity is a power of two, >= 16 */
    uint32_t count;
    bool runs;       /* consecutive keys share a line (set before first use) */
} gs_fq_idmap;

int gs_fq_idmap_reserve(gs_fq_idmap *m, const gs_alloc *a, const uint64_t *keys, uint32_t want);
/* True if `want` more entries fit without growing (reserve's common case,
 * checked before a call on the per-operation paths). */
static inline bool gs_fq_idmap_has_room(const gs_fq_idmap *m, uint32_t want)
{
    return m->tab && 2ull * ((uint64_t)m->count + want) <= (uint64_t)m->mask + 1;
}
void gs_fq_idmap_free(gs_fq_idmap *m, const gs_alloc *a);
uint32_t gs_fq_idmap_find(const gs_fq_idmap *m, const uint64_t *keys, uint64_t key);
/* Starts loading the table line `key` will probe first: a large index
 * lives in the last-level cache or memory, and a lookup that follows
 * other work need not wait for it. */
void gs_fq_idmap_prefetch(const gs_fq_idmap *m, uint64_t key);
/* Like find, skipping entries whose alive[index] is 0 (stale entries). */
uint32_t gs_fq_idmap_find_live(const gs_fq_idmap *m, const uint64_t *keys, uint64_t key,
                               const uint32_t *alive);
/* Removes the entry of exactly this index. */
void gs_fq_idmap_remove_index(gs_fq_idmap *m, const uint64_t *keys, uint32_t index);
/* Needs reserved room. */
void gs_fq_idmap_insert(gs_fq_idmap *m, const uint64_t *keys, uint32_t index);
void gs_fq_idmap_remove(gs_fq_idmap *m, const uint64_t *keys, uint64_t key);
/* Moves the entry of `key` to a new index (the key column moved too). */
void gs_fq_idmap_relabel(gs_fq_idmap *m, const uint64_t *keys, uint64_t key, uint32_t index);
void gs_fq_idmap_clear(gs_fq_idmap *m);

/* ---- predictor ------------------------------------------------------- */

/* Exponentially weighted moments of x = log(1 + size) and y = log(duration):
 * a recursive least-squares fit of y = a + b x with forgetting factor. */
typedef struct gs_fq_moments {
    double n;            /* observations, saturating: weight of the history */
    double mx, my;       /* means */
    double vxx, vxy, vyy;/* co-moments (variances and covariance) */
    double c0, c1;       /* the fit, refreshed per observation: log d = c0 + c1 x */
} gs_fq_moments;

void gs_fq_moments_add(gs_fq_moments *m, double alpha, double x, double y);
/* log-duration estimate at x; false if the moments hold no observation. */
bool gs_fq_moments_predict(const gs_fq_moments *m, double x, double *logd);

/* ---- scan kernels ---------------------------------------------------- */

typedef struct gs_fq_scan_args {
    const double *enq;      /* enqueue times per slot */
    const uint32_t *key;    /* key per slot (0: hole) */
    const float *pred;      /* predicted durations, or NULL when W_PRED is 0 */
    const double *kterm;    /* per key: tenant terms, -inf if ineligible */
    double now;
    double wscale;          /* W_WAIT / max wait (0 if max wait is 0) */
    double wpred;           /* W_PRED */
    uint32_t lo, hi;        /* slots to scan */
    /* With have_kmax, kmax >= every kterm[key[s]] of [lo, hi), and the
     * caller vouches for now >= every enq[s], wscale >= 0 and pred > 0:
     * the vector kernels then stop at the first block whose bound
     * (gs_fq_score_bound) cannot beat the best score so far. */
    double kmax;
    bool have_kmax;
    /* Optional: bytes of the columns read are added here (the bench). */
    uint64_t *bytes;
} gs_fq_scan_args;

typedef struct gs_fq_best {
    double score;
    uint32_t slot;          /* GS_FQ_NONE when nothing is eligible */
} gs_fq_best;

typedef void (*gs_fq_scan_fn)(const gs_fq_scan_args *a, gs_fq_best *out);

/* The reference: every kernel must return exactly its answer. Scores are
 * computed with separate multiply and add (no fused multiply-add) so that
 * every path rounds identically; the maximum score wins, then the lowest
 * slot. */
static inline double gs_fq_score(double kterm, double now, double enq, double wscale)
{
    double wait = now - enq;
    double t = wait * wscale;
    return kterm + t;
}

static inline double gs_fq_score_pred(double kterm, double now, double enq, double wscale,
                                      double wpred, float pred)
{
    double wait = now - enq;
    double t = wait * wscale;
    double s = kterm + t;
    double r = wait / (wait + (double)pred);
    double p = wpred * r;
    return s + p;
}

static inline bool gs_fq_better(double s, uint32_t slot, const gs_fq_best *b)
{
    return s > b->score || (s == b->score && slot < b->slot);
}

void gs_fq_scan_scalar(const gs_fq_scan_args *a, gs_fq_best *out);
void gs_fq_scan_avx2(const gs_fq_scan_args *a, gs_fq_best *out);
void gs_fq_scan_avx512(const gs_fq_scan_args *a, gs_fq_best *out);
void gs_fq_scan_neon(const gs_fq_scan_args *a, gs_fq_best *out);
/* Scores slots [lo, hi) one by one, keeping the first maximum in *b. */
void gs_fq_scan_range(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi, gs_fq_best *b);

/* The vector kernels only compute the maximum score of a block of slots
 * ([lo, hi), hi - lo a multiple of `step`); the driver keeps the first
 * block holding the overall maximum, finds its first 64-slot piece with
 * that maximum and rescans the piece with the reference for its first slot
 * with that score. The scores are the reference's, bit for bit, so the
 * answer is the reference's; the kernels save the per-lane slot
 * bookkeeping.
 *
 * Blocks are visited oldest first. Enqueue times never decrease with the
 * slot, so the score bound of a block's first slot bounds every later
 * slot too: once it cannot beat the best so far (a later slot loses a
 * tie), the driver stops. Most queues are decided in their oldest blocks. */
typedef double (*gs_fq_block_max_fn)(const gs_fq_scan_args *a, uint32_t lo, uint32_t hi);
#define GS_FQ_BLOCK 1024u
void gs_fq_scan_blocks(const gs_fq_scan_args *a, gs_fq_block_max_fn exact, uint32_t step,
                       gs_fq_best *out);

/* An upper bound on the score of every slot from s on, computed with the
 * score's own operations: rounding is monotone, so a larger key term, an
 * older enqueue time (a longer wait) and a non-negative wscale can only
 * round to a score at least as large; the prediction term is at most
 * wpred (its ratio rounds to at most 1). Needs a->have_kmax. */
static inline double gs_fq_score_bound(const gs_fq_scan_args *a, uint32_t s)
{
    double b = gs_fq_score(a->kmax, a->now, a->enq[s], a->wscale);
    return a->pred ? b + a->wpred : b;
}

/* Bytes of the columns one slot's score reads. */
static inline uint32_t gs_fq_slot_bytes(const gs_fq_scan_args *a)
{
    return (uint32_t)(sizeof *a->enq + sizeof *a->key + (a->pred ? sizeof *a->pred : 0));
}

/* ---- fast-path kernels ----------------------------------------------- */

/* The fast path's per-poll pass over the backlogged tenants' mirrors
 * (hot_* by position in active_tenants): each tenant's score for its
 * oldest task, written to s[], and the best of them, the maximum score
 * with ties to the lowest slot ({-inf, GS_FQ_NONE} when n is 0). Scores
 * are gs_fq_head_score()'s, bit for bit, on every kernel. */
typedef struct gs_fq_heads_args {
    const double *b, *e, *v;    /* backlog, oldest enqueue time, virtual time */
    const uint32_t *slot;       /* oldest slot */
    double *s;                  /* out: scores */
    uint32_t n;
    bool vterm;                 /* vmax > vmin: the fair-share term varies */
    double now, bs, ws, wv, vmax, vs;
} gs_fq_heads_args;

typedef void (*gs_fq_heads_fn)(const gs_fq_heads_args *a, gs_fq_best *out);

/* gs_fq_score(gs_fq_tenant_term(...)) for tenant i, one operation per
 * statement (no fused multiply-add). */
static inline double gs_fq_head_score(const gs_fq_heads_args *a, uint32_t i)
{
    double b = a->b[i] * a->bs;
    double tt;
    if (a->vterm) {
        double v = (a->vmax - a->v[i]) * a->vs;
        tt = b + v;
    } else {
        tt = b + a->wv;
    }
    double t = (a->now - a->e[i]) * a->ws;
    return tt + t;
}

/* The reference: the scores in order, keeping the first maximum. */
void gs_fq_heads_scalar(const gs_fq_heads_args *a, gs_fq_best *out);
void gs_fq_heads_avx2(const gs_fq_heads_args *a, gs_fq_best *out);

/* ---- the handle ------------------------------------------------------ */

typedef struct gs_fq_key {
    uint32_t tenant;
    uint32_t type;
    uint32_t head, tail;    /* slots; GS_FQ_NONE when empty */
    uint32_t count;         /* queued tasks */
    uint32_t active_pos;    /* index in active_keys while count > 0 */
    uint32_t next_key;      /* next key of the same tenant; 0 ends the list */
    double head_enq;        /* enqueue time of head */
} gs_fq_key;

/* The fast path reads only this: a tenant's oldest queued task over all
 * its types (its best task whenever the worker runs all of them). */
typedef struct gs_fq_tenant {
    double weight;
    double vtime;           /* virtual time / q->vunit (see gs_fq_decay) */
    double dtime;           /* demand (cost enqueued) / weight / q->vunit: the lag cap's reference */
    double service;
    double oldest_enq;
    uint64_t types;         /* bit per type with queued tasks */
    uint32_t oldest;        /* slot of the oldest queued task */
    uint32_t first_key;     /* this tenant's keys, linked by next_key; 0: none */
    uint32_t backlog;
    uint32_t running;
    uint32_t active_pos;    /* index in active_tenants while backlog > 0 */
    uint32_t reserved;
} gs_fq_tenant;

/* A polled task until complete(). */
typedef struct gs_fq_run {
    uint32_t tenant;
    uint32_t key;
    double x;               /* log(1 + size) */
    double charged;         /* predicted cost charged at dispatch */
} gs_fq_run;

typedef struct gs_fq_params {
    double w_backlog, w_wait, w_vtime, w_pred;
    double half_life, pred_alpha, pred_default, explore;
    double seed;
    double scan_full;       /* 1: never take the fast path */
    double log_on;
    double lag_cap;         /* in typical task costs; 0: the normalized fair-share term */
} gs_fq_params;

struct gpusched_fairq {
    gs_alloc alloc;
    gs_err err;
    uint32_t simd;
    gs_fq_scan_fn scan;
    gs_fq_heads_fn heads;
    gs_fq_params p;
    uint64_t rng;

    /* slots (columns) */
    uint32_t cap, lo, hi, live;
    uint64_t *id;
    double *enq;
    uint32_t *key;
    uint32_t *next;
    float *pred;
    float *x;               /* log(1 + size) */
    gs_fq_idmap ids;
    double last_enq, last_now, decay_time, vclock;
    double vunit;           /* decay so far: true virtual time = stored * vunit */

    /* tenants */
    uint32_t ntenants;
    gs_fq_tenant *ten;
    uint32_t *active_tenants;
    uint32_t nactive_tenants;
    /* Mirror of the backlogged tenants' fast-path fields, by position in
     * active_tenants, so the fast path streams contiguous arrays. */
    double *hot_b, *hot_e, *hot_v, *hot_s;
    /* With the lag cap: minus each backlogged tenant's fair-share term
     * (tier times W_VTIME), written per poll, read by the fast path as
     * its virtual times with vmax 0 and scale 1 (gs_fq_heads_v). */
    double *hot_t;
    uint64_t *hot_types;
    uint32_t *hot_slot;
    /* tenants per backlog value, so the largest backlog is kept in O(1) */
    uint32_t *bhist;
    uint32_t bhist_cap;
    uint32_t max_backlog;

    /* keys (index 0 is the hole key) */
    uint32_t nkeys, keycap;
    gs_fq_key *keys;
    uint64_t *key_code;     /* tenant << 6 | type */
    gs_fq_moments *key_pred;
    double *kterm;          /* scratch: key terms of the current poll */
    uint64_t scan_bytes;    /* bytes the full rescores read, for the bench */
    gs_fq_idmap keymap;
    uint32_t *active_keys;
    uint32_t nactive_keys;
    gs_fq_moments type_pred[GPUSCHED_MAX_TASK_TYPES];
    gs_fq_moments all_pred;

    /* running tasks: dense arrays, swap-removed */
    uint32_t nrun, runcap;
    uint64_t *run_id;
    gs_fq_run *run;
    gs_fq_idmap runmap;

    /* decision log */
    gpusched_fairq_decision *log;
    uint64_t nlog, logcap;
};

/* Refreshes tenant t's fast-path mirror (no-op while it is idle). */
static inline void gs_fq_hot_sync(gpusched_fairq *q, uint32_t t)
{
    const gs_fq_tenant *x = &q->ten[t];
    if (!x->backlog)
        return;
    uint32_t i = x->active_pos;
    q->hot_b[i] = x->backlog;
    q->hot_e[i] = x->oldest_enq;
    q->hot_v[i] = x->vtime;
    q->hot_types[i] = x->types;
    q->hot_slot[i] = x->oldest;
}

/* queue.c */
/* Oldest queued task of tenant t among the types in mask; adds the
 * number of such tasks to *count. slot stays GS_FQ_NONE if none. */
void gs_fq_tenant_oldest(const gpusched_fairq *q, uint32_t t, uint64_t mask, uint32_t *slot,
                         double *enq, uint64_t *count);
int gs_fq_reserve_slots(gpusched_fairq *q, uint32_t extra);
int gs_fq_key_get(gpusched_fairq *q, uint32_t tenant, uint32_t type, uint32_t *key);
void gs_fq_remove_slot(gpusched_fairq *q, uint32_t slot);

/* policy.c: the per-poll tenant and key terms. */
typedef struct gs_fq_frame {
    double now;
    uint64_t mask;
    double max_backlog, max_wait, vmin, vmax;
    double wscale;          /* W_WAIT / max wait, 0 if max wait is 0 */
    double bscale;          /* W_BACKLOG / max backlog */
    double vscale;          /* W_VTIME / (vmax - vmin), 0 if equal */
    double wv;              /* W_VTIME */
    bool have_v;            /* vmin, vmax computed (only when W_VTIME > 0) */
    double kmax;            /* largest eligible key term (gs_fq_frame_keys) */
    bool capped;            /* LAG_CAP on: the fair-share term is 0, 1/2 or 1 (gs_fq_cap_term) */
    double cap;             /* with capped: LAG_CAP typical costs / mean weight, stored units */
    double level;           /* with capped: the max-min fair level (stored units), +inf if all served */
    uint64_t candidates;
} gs_fq_frame;

/* The lag cap's fair-share term, before its weight: 1 for a tenant owed
 * more than the cap (its share min(demand, level) minus its service, per
 * unit weight), 0 for one served more than the cap beyond the level, 1/2
 * between. The cap is per unit weight too (f->cap: the cap divided by the
 * mean weight), so each tenant's allowance is in proportion to its share
 * and does not change with the scale of the weights. */
static inline double gs_fq_cap_term(const gs_fq_frame *f, const gs_fq_tenant *t)
{
    double share = t->dtime < f->level ? t->dtime : f->level;
    double owed = share - t->vtime;
    if (owed > f->cap)
        return 1.0;
    double ahead = t->vtime - f->level;
    return ahead > f->cap ? 0.0 : 0.5;
}

/* A tenant's part of the score, identical for every path. */
static inline double gs_fq_tenant_term(const gs_fq_frame *f, const gs_fq_tenant *t)
{
    double b = (double)t->backlog * f->bscale;
    double v;
    if (f->capped)
        v = gs_fq_cap_term(f, t) * f->wv;
    else
        v = f->vmax > f->vmin ? (f->vmax - t->vtime) * f->vscale : f->wv;
    return b + v;
}

void gs_fq_params_default(gs_fq_params *p);
/* The weighted max-min fair level of the service given so far (stored
 * units; +inf when every demand is served) and the mean weight of the
 * tenants with demand: the lag cap's reference (policy.c). */
double gs_fq_level(const gpusched_fairq *q, double *wmean);
int gs_fq_check_now(const gpusched_fairq *q, double now, gs_err *e);
/* The per-poll constants: maxima over the queue, scales. */
void gs_fq_frame_build(gpusched_fairq *q, double now, uint64_t mask, gs_fq_frame *f);
/* The key terms (kterm), their maximum and candidate count, for the full
 * rescore. */
void gs_fq_frame_keys(gpusched_fairq *q, gs_fq_frame *f);
/* poll.c: the full rescore's kernel arguments for a frame with its keys. */
void gs_fq_scan_args_init(gpusched_fairq *q, const gs_fq_frame *f, gs_fq_scan_args *a);
double gs_fq_slot_score(const gpusched_fairq *q, const gs_fq_frame *f, uint32_t slot);
void gs_fq_terms(const gpusched_fairq *q, const gs_fq_frame *f, uint32_t slot,
                 gpusched_fairq_decision *d);
bool gs_fq_heads_apply(const gpusched_fairq *q);
/* The fast path's virtual-time inputs: the stored virtual times and the
 * frame's range, or with the lag cap the tiers (hot_t) as (0 - (-x)) * 1,
 * which is x exactly, so both paths score a tenant identically. */
void gs_fq_heads_v(const gpusched_fairq *q, const gs_fq_frame *f, const double **v, double *vmax,
                   double *vs, bool *vterm);
/* The least virtual time a tenant gets when it becomes backlogged: the
 * virtual clock, or with the lag cap none (-inf: service is cumulative). */
double gs_fq_vtime_floor(const gpusched_fairq *q);
/* Charges (or, negative, refunds) tenant t's demand with a cost. */
void gs_fq_demand_add(gpusched_fairq *q, uint32_t t, double cost);
void gs_fq_decay(gpusched_fairq *q, double now);

/* predict.c */
double gs_fq_predict_key(const gpusched_fairq *q, uint32_t key, uint32_t type, double x);
/* The cost of a typical task: the prediction from every completion at
 * their mean size (PRED_DEFAULT before the first). The unit of LAG_CAP. */
double gs_fq_typical_cost(const gpusched_fairq *q);
void gs_fq_learn(gpusched_fairq *q, uint32_t key, uint32_t type, double x, double duration);
/* log(1 + size), not log1p: sizes are counts (bytes), where the two agree
 * to the last digit that matters, and log is twice as fast. */
static inline double gs_fq_size_x(double size) { return size > 0 ? __builtin_log(1.0 + size) : 0.0; }

/* running.c */
int gs_fq_run_reserve(gpusched_fairq *q, uint32_t extra);
void gs_fq_run_add(gpusched_fairq *q, uint64_t id, const gs_fq_run *r);

/* declog.c */
int gs_fq_log_reserve(gpusched_fairq *q, uint64_t extra);

#endif
