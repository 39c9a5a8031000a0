/* The scheduling cycle: pending gangs in order, each admitted against
 * quota, placed (respecting the reservations made before it), preempting
 * for it when it is entitled, reserved for when it is the first blocked,
 * or explained (doc/sched.md, "The cycle"). */
#include <stdio.h>
#include <string.h>

#include "heap.h"
#include "sched-internal.h"

#define GS_MEMO_SIZE 4096u
#define GS_MEMO_PROBES 16u
/* Templates a wait is compared with, newest first (record_wait()). */
#define GS_TMPL_RECENT 4u

/* Admissions of the cycle for gangs without pods, by (queue, GPUs,
 * class): the same demand of the same queue gets the same answer while
 * usage has not moved (s->use_epoch). Direct-mapped; a gang's admission
 * walks its queue's path for each resource, a hit reads one entry. */
#define GS_ADMIT_MEMO 4096u
typedef struct admit_memo {
    uint64_t epoch;              /* s->use_epoch + 1 when filled: 0 is empty */
    uint32_t queue, qgpus, cls_res;
    int over, nominal;
    uint32_t w_queue, w_resource;
    uint64_t w_used, w_requested, w_limit;
} admit_memo;

typedef struct cyc {
    gpusched_sched_decisions *d;
    int64_t now;
    uint32_t seq;
    uint64_t blocker;           /* strict order: the first gang that waits */
    int have_blocker;
    int reorder;                /* shares changed beyond one path (evictions) */
    uint32_t nstarted;          /* gangs started so far (the cluster changed) */
    int evicted;                /* victims went back to their queues: the next cycle evaluates them */
    int late_start;             /* a gang started after a reservation was made */
} cyc;

/* The memo of failed shapes (valid while no GPUs come free), or with
 * `cycle` the memo of this cycle only (shapes behind reservations, failed
 * preemptions). */
static gs_memo *memo_lookup(gpusched_sched *s, uint64_t key, int insert, int cycle)
{
    gs_memo *table = cycle ? s->memo + GS_MEMO_SIZE : s->memo;
    const uint64_t gen = cycle ? s->cmemo_gen : s->memo_gen;
    if (!key || !s->memo)
        return NULL;
    uint32_t mask = GS_MEMO_SIZE - 1;
    for (uint32_t k = 0, i = (uint32_t)(key >> 20) & mask; k < GS_MEMO_PROBES; k++, i = (i + 1) & mask) {
        gs_memo *m = &table[i];
        if (m->gen != gen) {
            if (!insert)
                return NULL;
            m->gen = gen;
            m->key = key;
            m->size = UINT32_MAX;
            m->msg = UINT32_MAX;
            m->pool_cycle = 0;
            m->starts = 0;
            return m;
        }
        if (m->key == key)
            return m;
    }
    return NULL;
}

static gs_memo *memo_find(gpusched_sched *s, uint64_t key, int insert)
{
    return memo_lookup(s, key, insert, 0);
}

/* Whether gang j, evaluated now, avoids the reserved nodes: it is
 * expected to end after the earliest reservation, or never. */
static int avoids_reserved(const gpusched_sched *s, const gs_sj *j, int64_t now)
{
    int64_t exp = gs_sj_expected(j);
    return s->nresv && (exp == GS_SD_NEVER || now + exp > s->resv_min_time);
}

/* The cycle memo's key of a failed preemption: the shape, the priority
 * (which victims it may take) and whether the search avoided the
 * reserved nodes (a gang that avoids them finding no plan says nothing
 * of one that may use them). 0: not memoizable. */
static uint64_t preempt_key(const gs_sj *j, int constrained)
{
    if (!j->shape)
        return 0;
    return gs_sd_mix64(gs_sd_mix64(j->shape, (uint64_t)(uint32_t)j->priority), (uint64_t)constrained) | 1;
}

/* A failure's explanation kept with the memo (it outlives the cycle). */
static uint32_t memo_text_add(gpusched_sched *s, const char *text)
{
    uint32_t n = (uint32_t)strlen(text) + 1;
    if (gs_grow(&s->alloc, (void **)&s->memo_text, &s->memo_text_cap, s->memo_text_len + n, 1))
        return UINT32_MAX;
    memcpy(s->memo_text + s->memo_text_len, text, n);
    s->memo_text_len += n;
    return s->memo_text_len - n;
}

/* The memo's explanation in this cycle's decisions. */
static uint32_t memo_msg(gpusched_sched *s, gpusched_sched_decisions *d, gs_memo *m)
{
    if (m->msg == UINT32_MAX)
        return UINT32_MAX;
    if (m->pool_cycle != s->cycle_no) {
        m->pool = gs_sd_pool_add(d, s->memo_text + m->msg);
        m->pool_cycle = s->cycle_no;
    }
    return m->pool;
}

/* The text naming queue q's resource r, written to the pool once per cycle
 * (a backlog over quota would format it for every gang). */
static uint32_t queue_name_msg(gpusched_sched *s, gpusched_sched_decisions *d, uint32_t q, uint32_t r)
{
    const uint32_t n = s->nq * s->nres;
    if (gs_grow(&d->alloc, (void **)&d->qname, &d->qname_cap, n, sizeof *d->qname))
        return UINT32_MAX;
    if (d->nqname != n) {
        memset(d->qname, 0xff, (size_t)n * sizeof *d->qname);
        d->nqname = n;
    }
    uint32_t *off = &d->qname[(size_t)q * s->nres + r];
    if (*off == UINT32_MAX) {
        char buf[GPUSCHED_SCHED_NAME_MAX + GPUSCHED_MAX_NAME + 32];
        if (r == 0)
            snprintf(buf, sizeof buf, "%s (gpus)", s->q[q].name);
        else if (r < s->res0)
            snprintf(buf, sizeof buf, "%s (gpus of class %s)", s->q[q].name,
                     gpusched_topo_class_name(s->c->topo, r - 1));
        else
            snprintf(buf, sizeof buf, "%s (%s)", s->q[q].name, s->c->topo->res_names[r - s->res0]);
        *off = gs_sd_pool_add(d, buf);
    }
    return *off;
}

/* The index of a template holding w's shared parts and msg: one of the
 * last few (gangs of one queue often alternate between a few reasons:
 * over quota when big, no room when small), or a new one; or an error. */
static int64_t wait_template(gpusched_sched *s, gpusched_sched_decisions *d, const gpusched_sched_wait *w,
                             uint32_t msg)
{
    uint32_t t = d->ntmpl, lo = d->ntmpl > GS_TMPL_RECENT ? d->ntmpl - GS_TMPL_RECENT : 0;
    while (t > lo && !gs_sd_same_template(&d->tmpl[t - 1], w, msg))
        t--;
    if (t > lo)
        return t - 1;
    if (gs_grow(&s->alloc, (void **)&s->wt, &s->wt_cap, s->nwt + 1, sizeof *s->wt) || gs_sd_add_template(d, w, msg))
        return GPUSCHED_ENOMEM;
    s->wt[s->nwt++] = d->tmpl[d->ntmpl - 1].w;
    return d->ntmpl - 1;
}

/* The wait goes to the decisions as its per-gang parts and a template
 * index; the gang's slot gets the same (gpusched_sched_job_state()).
 * quick_run() writes its waits itself, in a loop that keeps these fields
 * in locals. */
static int record_wait(gpusched_sched *s, cyc *x, uint32_t slot, gpusched_sched_wait *w, uint32_t msg)
{
    gpusched_sched_decisions *d = x->d;
    if (d->nwaits == d->waits_cap && gs_sd_grow_waits(d, d->nwaits + 1))
        return GPUSCHED_ENOMEM;
    int64_t t = wait_template(s, d, w, msg);
    if (t < 0)
        return (int)t;
    if (s->strict && !x->have_blocker) {
        x->have_blocker = 1;
        x->blocker = w->job_id;
    }
    d->waits[d->nwaits++] = (gs_dwait){.job_id = w->job_id, .requested = w->requested, .seq = w->seq,
                                       .tmpl = (uint32_t)t};
    s->jw[slot] = (gs_jw){.cycle = s->cycle_no, .requested = w->requested, .tmpl = (uint32_t)t, .seq = w->seq};
    return 0;
}

/* The job descriptor a gang starts with. */
static void job_desc(const gpusched_sched *s, const gs_sj *j, int64_t now, int borrowed, gpusched_job *job)
{
    *job = (gpusched_job)GPUSCHED_JOB_INIT;
    job->id = j->id;
    job->flags = gs_sj_run_flags(s, j);
    job->priority = borrowed ? j->priority - GS_SD_BORROW_TIER : j->priority;
    job->tenant = j->queue;
    job->start_time = now;
    job->cost_hint = j->cost_hint;
    job->protected_until = now + gs_sd_protection(s);
}

/* The request with the reserved nodes avoided too. The copies are guarded:
 * a gang without avoided nodes has j->avoid NULL, and memcpy from NULL is
 * undefined even for 0 bytes. */
int gs_sd_avoid_reserved(gpusched_sched *s, const gs_sj *j, gpusched_place_request *q)
{
    if (gs_grow(&s->alloc, (void **)&s->avoid_buf, &s->avoid_cap, j->req.avoid_count + s->nrnodes + 1,
                sizeof *s->avoid_buf))
        return GPUSCHED_ENOMEM;
    if (j->req.avoid_count)
        memcpy(s->avoid_buf, j->avoid, (size_t)j->req.avoid_count * sizeof *s->avoid_buf);
    if (s->nrnodes)
        memcpy(s->avoid_buf + j->req.avoid_count, s->rnodes, (size_t)s->nrnodes * sizeof *s->rnodes);
    q->avoid_nodes = s->avoid_buf;
    q->avoid_count = j->req.avoid_count + s->nrnodes;
    return 0;
}

static int started(gpusched_sched *s, cyc *x, uint32_t slot, int borrowed, uint32_t seq)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    gpusched_place_result_nodes(s->res, &nodes, &masks, &n);
    gs_sj_run(s, slot, x->now, borrowed); /* room kept since submit: no allocation */
    gs_sd_chg_log(s, GS_CHG_TAKE, gs_sj_expected_end(&s->j[slot]), slot);
    gs_sd_chg_sync(s, 1); /* its commit */
    x->nstarted++;
    x->late_start |= s->nresv > 0;
    s->started_gpus += s->j[slot].gpus;
    return gs_sd_add_start(x->d, s->j[slot].id, seq, nodes, masks, n) ? GPUSCHED_ENOMEM : 1;
}

/* The reservation whose nodes the placement in s->res touches first. */
static const gs_resv *blocking_resv(const gpusched_sched *s)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    gpusched_place_result_nodes(s->res, &nodes, &masks, &n);
    for (uint32_t v = 0; v < s->nresv; v++) {
        const gs_resv *r = &s->resv[v];
        /* Both lists ascending: one merge. */
        for (uint32_t a = 0, b = 0; a < n && b < r->n;) {
            uint32_t x = nodes[a], y = s->rnodes[r->off + b];
            if (x == y)
                return r;
            if (x < y)
                a++;
            else
                b++;
        }
    }
    return &s->resv[0];
}

/* Preemption for an entitled gang: 1 started, 0 no plan, or an error. */
static int try_preempt(gpusched_sched *s, cyc *x, uint32_t slot, gpusched_place_request *q, gpusched_job *job,
                       int constrained, uint32_t seq)
{
    gs_sj *j = &s->j[slot];
    uint64_t pkey = preempt_key(j, constrained);
    gs_memo *m = memo_lookup(s, pkey, 0, 1);
    if (m && m->size <= j->size)
        return 0;
    job->priority = j->priority;
    q->flags = GPUSCHED_PLACE_FLAG_COMMIT;
    q->preempt_policy = GPUSCHED_PREEMPT_PRIORITY_FIRST;
    q->now = x->now;
    int rc = gpusched_placer_preempt(s->p, q, s->res, s->plan);
    if (rc == GPUSCHED_ENOSPC) {
        if ((m = memo_lookup(s, pkey, 1, 1)) && j->size < m->size)
            m->size = j->size;
        return 0;
    }
    if (rc)
        return 0; /* an invalid request was refused at submit; anything else: no preemption */
    const uint64_t *ids;
    uint32_t n;
    gpusched_preempt_plan_victims(s->plan, &ids, &n);
    gs_sd_chg_log(s, GS_CHG_OTHER, 0, GS_SJ_NONE); /* the evictions; the start is logged by started() */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t v = gs_sj_find(s, ids[i]);
        if (v != GS_SJ_NONE && s->j[v].state == GS_SJ_RUNNING) {
            gs_sj_requeue(s, v, x->now); /* room kept per queue: no allocation */
            s->j[v].evicted_cycle = s->cycle_no;
        }
        if (gs_sd_add_eviction(x->d, ids[i], j->id))
            return GPUSCHED_ENOMEM;
    }
    x->evicted |= n > 0;
    /* GPUs came free: what did not fit before may now. */
    s->free_epoch++;
    s->memo_gen++;
    s->cmemo_gen++;
    s->memo_epoch = s->free_epoch;
    s->memo_text_len = 0;
    x->reorder = 1;
    return started(s, x, slot, 0, seq);
}

/* The admission memo's entry for gang j (not of pods) at the current
 * usage, filled by gs_sq_admit() on a miss. */
static const admit_memo *admit_entry(gpusched_sched *s, const gs_sj *j)
{
    uint64_t h = gs_sd_mix64(gs_sd_mix64(j->queue, j->qgpus), j->cls_res);
    admit_memo *a = &s->admit_memo[(h >> 32) & (GS_ADMIT_MEMO - 1)];
    if (a->epoch == s->use_epoch + 1 && a->queue == j->queue && a->qgpus == j->qgpus && a->cls_res == j->cls_res)
        return a;
    gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
    int nominal = 1;
    /* The thresholds, or (quick waits off, to compare) the walk itself. */
    int over = s->quick ? gs_sq_admit_fast(s, j, &nominal, &w) : gs_sq_admit(s, j, &nominal, &w);
    *a = (admit_memo){.epoch = s->use_epoch + 1, .queue = j->queue, .qgpus = j->qgpus, .cls_res = j->cls_res,
                      .over = over, .nominal = nominal, .w_queue = w.queue, .w_resource = w.resource,
                      .w_used = w.used, .w_requested = w.requested, .w_limit = w.limit};
    return a;
}

/* gs_sq_admit(), answered from the admission memo when it holds the same
 * queue and demand at the current usage. */
static int admit(gpusched_sched *s, const gs_sj *j, int *nominal, gpusched_sched_wait *w)
{
    if (j->pods)
        return gs_sq_admit(s, j, nominal, w);
    const admit_memo *a = admit_entry(s, j);
    *nominal = a->nominal;
    if (a->over) {
        w->reason = GPUSCHED_SCHED_WAIT_QUOTA;
        w->queue = a->w_queue;
        w->resource = a->w_resource;
        w->used = a->w_used;
        w->requested = a->w_requested;
        w->limit = a->w_limit;
    }
    return a->over;
}

/* Quick waits: the waits decided without a search, a reservation or a
 * preemption, and without building the request: over quota, a shape that
 * failed at this size or less, too few free GPUs. After an event a cycle
 * explains thousands of gangs, nearly all this way, so a run of them is
 * decided in one loop that looks up each admission, memo entry and
 * template once per run (nothing they depend on changes while gangs only
 * wait), and reads one cache line per gang. Decided exactly as evaluate()
 * decides (tests/test-sched-quick.c compares the two). */
enum { QW_FIT, QW_SHARE, QW_KINDS };
/* Direct-mapped: an entry replaced takes its templates with it. */
typedef struct quick_run_cache {
    struct {
        uint32_t valid, queue, qgpus, cls_res;
        int64_t tmpl;               /* its QUOTA template, -1 until made */
        admit_memo v;               /* a copy: the memo's entry may be reused */
    } adm[GS_QUICK_WAYS];
    struct {
        uint64_t shape;             /* 0: empty (a shape of 0 is never memoized) */
        gs_memo *m;
        uint32_t queue;             /* the queue its templates are for */
        int64_t tmpl[QW_KINDS];     /* FIT and SHARE templates of a hit, -1 until made */
    } memo[GS_QUICK_WAYS];
    struct {
        uint32_t queue;
        int64_t tmpl[QW_KINDS];     /* FIT and SHARE templates of too few free GPUs */
    } none;
    /* A gang of pods: its admission (its resources make it its own) and
     * QUOTA template, for that gang only. */
    admit_memo pod_adm;
    int64_t pod_tmpl;
    /* The run's first queue (every gang's, in fair order): the admission of
     * a gang of it without pods or class is two comparisons with its GPU
     * profile, and over quota, the level its QUOTA template is for. */
    struct {
        uint32_t queue;
        const gs_sq_prof *p;
        admit_memo nominal, borrowed, over;     /* `over`: filled for a new template */
        int64_t tmpl[GPUSCHED_SCHED_MAX_DEPTH + 1];
    } q;
} quick_run_cache;

static void quick_cache_init(gpusched_sched *s, quick_run_cache *c, uint32_t queue)
{
    for (uint32_t k = 0; k < GS_QUICK_WAYS; k++) {
        c->adm[k].valid = 0;
        c->memo[k].shape = 0;
    }
    c->none.queue = GS_SQ_NONE;
    c->q.queue = queue;
    if (queue == GS_SQ_NONE)
        return;
    c->q.p = gs_sq_prof_of(s, queue, 0);
    c->q.nominal = (admit_memo){.nominal = 1};
    c->q.borrowed = (admit_memo){.nominal = 0};
    for (uint32_t l = 0; l < c->q.p->n; l++)
        c->q.tmpl[l] = -1;
}

/* quick_admit() for a gang of the run's first queue without pods or
 * class: gs_sq_admit_fast() on resource 0 with the profile in hand. */
static const admit_memo *quick_admit_queue(quick_run_cache *c, const gs_sj *j, int64_t **tmpl)
{
    const gs_sq_prof *p = c->q.p;
    const int64_t g = j->qgpus;
    if (g <= p->nominal_max)
        return &c->q.nominal;
    if (g <= p->admit_max)
        return &c->q.borrowed;
    const uint32_t l = gs_sq_prof_level(p, g); /* < p->n: g passes the least head */
    *tmpl = &c->q.tmpl[l];
    if (**tmpl < 0)
        c->q.over = (admit_memo){.over = 1, .nominal = 1, .w_queue = p->queue[l], .w_resource = 0,
                                 .w_used = p->used[l], .w_limit = p->cap[l]};
    c->q.over.w_requested = (uint64_t)g;
    return &c->q.over;
}

/* The admission of gang j, with the slot of its QUOTA template. */
static const admit_memo *quick_admit(gpusched_sched *s, quick_run_cache *c, const gs_sj *j, int64_t **tmpl)
{
    if (j->queue == c->q.queue && !j->cls_res && !j->pods)
        return quick_admit_queue(c, j, tmpl);
    if (j->pods) {
        gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
        int nominal = 1;
        int over = gs_sq_admit(s, j, &nominal, &w);
        c->pod_adm = (admit_memo){.over = over, .nominal = nominal, .w_queue = w.queue, .w_resource = w.resource,
                                  .w_used = w.used, .w_requested = w.requested, .w_limit = w.limit};
        c->pod_tmpl = -1;
        *tmpl = &c->pod_tmpl;
        return &c->pod_adm;
    }
    const uint32_t k = j->quick_way;
    if (!c->adm[k].valid || c->adm[k].qgpus != j->qgpus || c->adm[k].queue != j->queue ||
        c->adm[k].cls_res != j->cls_res) {
        c->adm[k].v = *admit_entry(s, j);
        c->adm[k].valid = 1;
        c->adm[k].queue = j->queue;
        c->adm[k].qgpus = j->qgpus;
        c->adm[k].cls_res = j->cls_res;
        c->adm[k].tmpl = -1;
    }
    *tmpl = &c->adm[k].tmpl;
    return &c->adm[k].v;
}

/* The memo entry of gang j's shape if it holds for j's size (else NULL),
 * with the slots of the FIT and SHARE templates for j's queue. */
static gs_memo *quick_memo(gpusched_sched *s, quick_run_cache *c, const gs_sj *j, int64_t **tmpl)
{
    uint32_t k = (uint32_t)(j->shape >> 40) & (GS_QUICK_WAYS - 1);
    if (c->memo[k].shape != j->shape || !j->shape) {
        c->memo[k].shape = j->shape;
        c->memo[k].m = memo_find(s, j->shape, 0);
        c->memo[k].queue = GS_SQ_NONE;
    }
    gs_memo *m = c->memo[k].m;
    if (m && m->size <= j->size) {
        if (c->memo[k].queue != j->queue) {
            c->memo[k].queue = j->queue;
            c->memo[k].tmpl[QW_FIT] = c->memo[k].tmpl[QW_SHARE] = -1;
        }
        *tmpl = c->memo[k].tmpl;
        return m;
    }
    if (c->none.queue != j->queue) {
        c->none.queue = j->queue;
        c->none.tmpl[QW_FIT] = c->none.tmpl[QW_SHARE] = -1;
    }
    *tmpl = c->none.tmpl;
    return NULL;
}

/* A quick wait's template: QUOTA from admission a, else FIT or SHARE
 * (`reason`) from memo entry m or too few free GPUs (m NULL). */
static int64_t quick_template(gpusched_sched *s, cyc *x, uint32_t reason, const admit_memo *a, gs_memo *m,
                              const gs_sj *j)
{
    gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
    uint32_t msg;
    w.reason = reason;
    w.time = -1;
    w.share = s->q[j->queue].share;
    if (reason == GPUSCHED_SCHED_WAIT_QUOTA) {
        w.queue = a->w_queue;
        w.resource = a->w_resource;
        w.used = a->w_used;
        w.limit = a->w_limit;
        msg = queue_name_msg(s, x->d, w.queue, w.resource);
    } else {
        w.place_reason = m ? m->reason : GPUSCHED_REASON_NO_GPUS;
        w.free_gpus = reason == GPUSCHED_SCHED_WAIT_SHARE ? s->free_at_start : s->c->root_free_gpus;
        w.taken_gpus = reason == GPUSCHED_SCHED_WAIT_SHARE ? s->started_gpus : 0;
        w.queue = j->queue;
        msg = m ? memo_msg(s, x->d, m) : GS_SD_MSG_TOO_FEW_FREE;
    }
    return wait_template(s, x->d, &w, msg);
}

/* Decides the gangs slots[0 .. n) in order while each takes a quick wait;
 * the number decided (the next one needs evaluate()), or an error. */
static int64_t quick_run(gpusched_sched *s, cyc *x, const uint32_t *slots, uint32_t n)
{
    if (!s->quick || x->have_blocker || !n)
        return 0;
    /* What makes a gang that does not fit do more than wait: a
     * reservation to make, a preemption to try. */
    const int resv_open = !s->strict && s->nresv < (uint32_t)s->resv_depth;
    const int may_preempt = s->preempt && !s->strict && s->npre;
    const int quotas = s->quotas != 0, strict = s->strict != 0;
    const uint64_t root_free = s->c->root_free_gpus, cycle_no = s->cycle_no;
    const uint64_t free_at_start = s->free_at_start, started = s->started_gpus;
    /* Locals, not the handles' fields: the waits written below could alias
     * them as far as the compiler knows, and each would be read again for
     * every gang. Written back before anything else may read them. */
    const gs_sj *const jobs = s->j;
    gs_jw *const jws = s->jw;
    gs_dwait *const waits = x->d->waits;
    uint32_t nw = x->d->nwaits, seq = x->seq;
    quick_run_cache c;
    quick_cache_init(s, &c, jobs[slots[0]].state == GS_SJ_PENDING ? jobs[slots[0]].queue : GS_SQ_NONE);
    uint32_t i = 0;
    int64_t rc = 0;
    for (; i < n; i++) {
        const uint32_t slot = slots[i];
        if (i + 4 < n)
            __builtin_prefetch(&jobs[slots[i + 4]]);
        const gs_sj *j = &jobs[slot];
        if (j->state != GS_SJ_PENDING || j->evicted_cycle == cycle_no || jws[slot].cycle == cycle_no)
            break;
        int64_t *tmpl = NULL; /* set by quick_admit() over quota, else by quick_memo() */
        const admit_memo *a = quick_admit(s, &c, j, &tmpl);
        uint32_t reason = GPUSCHED_SCHED_WAIT_QUOTA;
        gs_memo *m = NULL;
        uint64_t requested = j->gpus;
        if (a->over && quotas) {
            requested = a->w_requested;
        } else {
            m = quick_memo(s, &c, j, &tmpl);
            if ((!m && j->need_free <= root_free) || resv_open)
                break; /* a search, or the first gang that does not fit: reserved for */
            if (may_preempt && a->nominal) {
                /* evaluate() would try a preemption unless this cycle found
                 * none for the shape at this priority and size or less. */
                const gs_memo *pm = memo_lookup(s, preempt_key(j, avoids_reserved(s, j, x->now)), 0, 1);
                if (!pm || pm->size > j->size)
                    break;
            }
            reason = GPUSCHED_SCHED_WAIT_FIT;
            if ((m ? m->reason : GPUSCHED_REASON_NO_GPUS) == GPUSCHED_REASON_NO_GPUS && started &&
                free_at_start >= j->gpus) {
                reason = GPUSCHED_SCHED_WAIT_SHARE; /* it would have fit but for the gangs started before it */
                tmpl += QW_SHARE;
            }
        }
        if (*tmpl < 0 && (*tmpl = quick_template(s, x, reason, a, m, j)) < 0) {
            rc = *tmpl;
            break;
        }
        const uint32_t t = (uint32_t)*tmpl;
        waits[nw] = (gs_dwait){.job_id = j->id, .requested = requested, .seq = seq, .tmpl = t};
        jws[slot] = (gs_jw){.cycle = cycle_no, .requested = requested, .tmpl = t, .seq = seq};
        nw++;
        seq++;
        if (strict) {
            /* The first gang that waits blocks the rest (ORDER). */
            x->have_blocker = 1;
            x->blocker = j->id;
            i++;
            break;
        }
    }
    x->d->nwaits = nw;
    x->seq = seq;
    return rc < 0 ? rc : i;
}

/* The placer refused gang `slot` now (for example its id runs in the
 * cluster): it waits, with the placer's word. */
static int wait_refused(gpusched_sched *s, cyc *x, uint32_t slot, gpusched_sched_wait *w)
{
    w->reason = GPUSCHED_SCHED_WAIT_FIT;
    w->place_reason = GPUSCHED_REASON_NOT_RUN;
    w->free_gpus = s->c->root_free_gpus;
    return record_wait(s, x, slot, w, gs_sd_pool_add(x->d, gpusched_placer_errmsg(s->p)));
}

/* GPUSCHED_SCHED_KEEP_CHECK=1: the count's answers for a gang of whole
 * domains (whole.c) against the searches they stand for, plan only: 1
 * when they agree, else GPUSCHED_ECORRUPT. */
static int whole_try_check(gpusched_sched *s, const gs_sj *j, gpusched_job *job, int fits_around,
                           const gs_resv *behind)
{
    gpusched_place_request q = j->req;
    q.job = job;
    int rc = gs_sd_avoid_reserved(s, j, &q);
    if (rc)
        return rc;
    const int around = gs_pl_place_flags(s->p, &q, s->res, GS_PL_QUIET) == 0;
    q = j->req;
    q.job = job;
    const int anywhere = gpusched_placer_place(s->p, &q, s->res) == 0;
    return around == fits_around && (!behind || anywhere) ? 1 : GPUSCHED_ECORRUPT;
}

/* One gang: 1 if it started, 0 if it waits, or an error. */
static int evaluate(gpusched_sched *s, cyc *x, uint32_t slot)
{
    gs_sj *j = &s->j[slot];
    if (j->evicted_cycle == s->cycle_no || s->jw[slot].cycle == s->cycle_no)
        return 0; /* evicted by this cycle (listed among the evictions), or waits already */
    gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
    w.job_id = j->id;
    w.seq = x->seq++;
    w.queue = j->queue;
    w.requested = j->gpus;
    w.time = -1;
    w.share = s->q[j->queue].share;
    if (x->have_blocker) {
        w.reason = GPUSCHED_SCHED_WAIT_ORDER;
        w.blocking_job = x->blocker;
        return record_wait(s, x, slot, &w, UINT32_MAX);
    }
    int nominal = 1;
    if (admit(s, j, &nominal, &w) && s->quotas)
        return record_wait(s, x, slot, &w, queue_name_msg(s, x->d, w.queue, w.resource));
    /* Over quota with quotas off: it waits or starts as any other, the
     * admission's numbers dropped (a FIT wait asks GPUs, not the amount of
     * the resource it would pass). */
    w.reason = GPUSCHED_SCHED_WAIT_NONE;
    w.queue = j->queue, w.resource = 0, w.used = w.limit = 0;
    w.requested = j->gpus;
    int borrowed = s->quotas && !nominal;

    /* The cheap outcomes (a memo hit, too few free GPUs, behind a
     * reservation) read only the record's first cache line: the request
     * and job descriptor are built after them. */
    uint64_t key = j->shape;
    gs_memo *m = memo_find(s, key, 0);
    uint32_t msg = UINT32_MAX, reason;
    gpusched_job job;
    gpusched_place_request q;
    int constrained = avoids_reserved(s, j, x->now);
    uint64_t ckey = key ? gs_sd_mix64(key, 0xc0ffee) | 1 : 0;
    gs_memo *cm = constrained ? memo_lookup(s, ckey, 0, 1) : NULL;
    if (m && m->size <= j->size) {
        reason = m->reason;
        msg = memo_msg(s, x->d, m);
    } else if (j->need_free > s->c->root_free_gpus) {
        /* Fewer free GPUs than it asks: no search can place it. The text
         * is written from the wait's numbers when it is asked for. */
        reason = GPUSCHED_REASON_NO_GPUS;
        msg = GS_SD_MSG_TOO_FEW_FREE;
    } else if (cm && cm->size == j->size && cm->starts == x->nstarted) {
        /* A gang of its shape and size fit only on reserved nodes this
         * cycle, and nothing started since: so would it. */
        const gs_resv *v = &s->resv[cm->msg];
        w.reason = GPUSCHED_SCHED_WAIT_RESERVATION;
        w.blocking_job = s->j[v->slot].id;
        w.time = v->time;
        return record_wait(s, x, slot, &w, UINT32_MAX);
    } else {
        job_desc(s, j, x->now, borrowed, &job);
        q = j->req;
        q.job = &job;
        q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
        /* A gang of its shape and no more GPUs did not fit outside the
         * reserved nodes this cycle: neither would it (fitting is monotone
         * in the size, and starts only take capacity). Whether it fits on
         * them is another search: starts since may have taken them, and a
         * larger gang may fit nowhere (then it may preempt, or be reserved
         * for). */
        int outside_fails = cm && cm->size <= j->size;
        /* A gang of whole domains: both tries by count where it decides. */
        const gs_resv *behind = NULL;
        int fits_around = 1;
        int counted = constrained && !outside_fails ? gs_sd_whole_try(s, j, &fits_around, &behind) : 0;
        if (counted == 1 && s->keep_check)
            counted = whole_try_check(s, j, &job, fits_around, behind);
        if (counted < 0)
            return counted;
        outside_fails |= counted && !fits_around;
        if (!outside_fails && constrained && gs_sd_avoid_reserved(s, j, &q))
            return GPUSCHED_ENOMEM;
        /* A constrained try that fails is tried again on every node, whose
         * failure explains the wait: the first needs no explanation. */
        int rc = outside_fails ? GPUSCHED_ENOSPC
                               : gs_pl_place_flags(s->p, &q, s->res, constrained ? GS_PL_QUIET : 0);
        if (rc == 0)
            return started(s, x, slot, borrowed, w.seq);
        if (rc != GPUSCHED_ENOSPC)
            return wait_refused(s, x, slot, &w);
        q = j->req;
        q.job = &job;
        if (constrained) {
            rc = behind ? 0 : gpusched_placer_place(s->p, &q, s->res);
            if (rc != 0 && rc != GPUSCHED_ENOSPC)
                return wait_refused(s, x, slot, &w);
            if (rc == 0) {
                const gs_resv *v = behind ? behind : blocking_resv(s);
                if ((cm = memo_lookup(s, ckey, 1, 1)) && j->size <= cm->size) {
                    cm->size = j->size;
                    cm->msg = (uint32_t)(v - s->resv);
                    cm->starts = x->nstarted;
                }
                w.reason = GPUSCHED_SCHED_WAIT_RESERVATION;
                w.blocking_job = s->j[v->slot].id;
                w.time = v->time;
                return record_wait(s, x, slot, &w, UINT32_MAX);
            }
        }
        reason = gpusched_place_result_reason(s->res);
        msg = gs_sd_pool_add(x->d, gpusched_place_result_message(s->res));
        if ((m = memo_find(s, key, 1)) && j->size < m->size) {
            m->size = j->size;
            m->reason = reason;
            m->msg = memo_text_add(s, gpusched_place_result_message(s->res));
            m->pool = msg;
            m->pool_cycle = s->cycle_no;
        }
    }
    /* It does not fit now. */
    w.reason = GPUSCHED_SCHED_WAIT_FIT;
    w.place_reason = reason;
    w.free_gpus = s->c->root_free_gpus;
    if (s->preempt && nominal && !s->strict && s->npre) {
        job_desc(s, j, x->now, borrowed, &job);
        q = j->req;
        q.job = &job;
        if (constrained && gs_sd_avoid_reserved(s, j, &q))
            return GPUSCHED_ENOMEM;
        int rc = try_preempt(s, x, slot, &q, &job, constrained, w.seq);
        if (rc)
            return rc;
    }
    if (!s->strict && s->nresv < (uint32_t)s->resv_depth) {
        int rc = gs_sd_reserve(s, slot, x->now);
        if (rc == 0) {
            const gs_resv *v = &s->resv[s->nresv - 1];
            uint32_t level, dom;
            gs_sd_resv_domain(s, v, &level, &dom);
            w.time = v->time;
            if (gs_sd_add_resv(x->d, j->id, v->time, level, dom, s->rnodes + v->off, v->n))
                return GPUSCHED_ENOMEM;
        } else if (rc != GPUSCHED_ENOSPC) {
            return rc;
        }
    }
    if (reason == GPUSCHED_REASON_NO_GPUS && s->free_at_start >= j->gpus && s->started_gpus) {
        w.reason = GPUSCHED_SCHED_WAIT_SHARE;
        w.free_gpus = s->free_at_start;
        w.taken_gpus = s->started_gpus;
    }
    return record_wait(s, x, slot, &w, msg);
}

static bool older(const uint32_t *a, const uint32_t *b, const gpusched_sched *s)
{
    const gs_sj *x = &s->j[*a], *y = &s->j[*b];
    return x->submit != y->submit ? x->submit < y->submit : x->id < y->id;
}

GS_HEAP_DEFINE(older, uint32_t, const gpusched_sched *, older)

/* The starvation guard and the large gangs: gangs pending for longer
 * than the age limit, and gangs of at least large_gpus GPUs, oldest
 * first, before the order. */
static int run_first(gpusched_sched *s, cyc *x)
{
    const int aged = s->age_limit && x->now - s->age_limit > INT64_MIN + 1;
    if (!aged && !s->large_gpus)
        return 0;
    const int64_t before = aged ? x->now - s->age_limit : INT64_MIN;
    const uint64_t large = s->large_gpus ? (uint64_t)s->large_gpus : UINT64_MAX;
    uint32_t n = 0;
    if (gs_grow(&s->alloc, (void **)&s->stack, &s->stack_cap, s->npending + 1, sizeof *s->stack))
        return GPUSCHED_ENOMEM;
    for (uint32_t q = 0; q < s->nq; q++)
        for (uint32_t k = 0; k < s->q[q].npend; k++) {
            const gs_sj *j = &s->j[s->q[q].pend[k]];
            if (j->submit < before || j->gpus >= large)
                s->stack[n++] = s->q[q].pend[k];
        }
    if (!n)
        return 0;
    older_sort(s->stack, n, s);
    /* Starts and evictions change the queues, not this copy; the copy must
     * survive them, so it moves out of the scratch the order uses. */
    uint32_t *old = gs_malloc(&s->alloc, (size_t)n * sizeof *old);
    if (!old)
        return GPUSCHED_ENOMEM;
    memcpy(old, s->stack, (size_t)n * sizeof *old);
    gs_sq_shares(s);
    int rc = 0;
    for (uint32_t i = 0; i < n && rc >= 0; i++) {
        int64_t k = quick_run(s, x, old + i, n - i);
        if (k < 0) {
            rc = (int)k;
            break;
        }
        if ((i += (uint32_t)k) == n)
            break;
        if (s->j[old[i]].state != GS_SJ_PENDING)
            continue;
        rc = evaluate(s, x, old[i]);
        if (rc == 1)
            gs_sq_shares_path(s, s->j[old[i]].queue);
    }
    gs_free(&s->alloc, old);
    return rc < 0 ? rc : 0;
}

static int run_fair(gpusched_sched *s, cyc *x)
{
    gs_sq_shares(s);
    uint32_t n;
    int rc = gs_sq_leaf_order(s, &n);
    for (uint32_t q = 0; q < s->nq; q++)
        s->q[q].cursor = 0;
    for (uint32_t pos = 0; !rc && pos < n;) {
        gs_sq *leaf = &s->q[s->order[pos]];
        if (leaf->cursor >= leaf->npend) {
            pos++;
            continue;
        }
        int64_t k = quick_run(s, x, leaf->pend + leaf->cursor, leaf->npend - leaf->cursor);
        if (k < 0) {
            rc = (int)k;
            break;
        }
        if ((leaf->cursor += (uint32_t)k) == leaf->npend)
            continue;
        uint32_t slot = leaf->pend[leaf->cursor++];
        if (leaf->cursor + 3 < leaf->npend) {
            const char *ahead = (const char *)&s->j[leaf->pend[leaf->cursor + 3]];
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + 64);
            __builtin_prefetch(ahead + 128);
        }
        rc = evaluate(s, x, slot);
        if (rc == 1) {
            if (x->reorder)
                gs_sq_shares(s);
            else
                gs_sq_shares_path(s, s->j[slot].queue);
            x->reorder = 0;
            rc = gs_sq_leaf_order(s, &n);
            pos = 0;
        }
    }
    return rc < 0 ? rc : 0;
}

static int run_global(gpusched_sched *s, cyc *x)
{
    if (s->gpend_mode != s->order_mode && gs_sq_gpend_build(s))
        return GPUSCHED_ENOMEM;
    /* Starts and evictions change s->gpend while the cycle walks a copy. */
    uint32_t n = s->ngpend;
    if (gs_grow(&s->alloc, (void **)&s->order, &s->order_cap, n + 1, sizeof *s->order))
        return GPUSCHED_ENOMEM;
    memcpy(s->order, s->gpend, (size_t)n * sizeof *s->order);
    gs_sq_shares(s);
    for (uint32_t i = 0; i < n; i++) {
        int64_t k = quick_run(s, x, s->order + i, n - i);
        if (k < 0)
            return (int)k;
        if ((i += (uint32_t)k) == n)
            break;
        int rc = evaluate(s, x, s->order[i]);
        if (rc < 0)
            return rc;
        if (rc == 1)
            gs_sq_shares_path(s, s->j[s->order[i]].queue);
    }
    return 0;
}

/* Decayed usage moves with time alone, and with it the shares: under the
 * fair order with a half-life, the leaves' order at the time of a cycle
 * may differ from the one the last cycle left, and gangs then go in
 * another order (another head in strict order, other reservations). The
 * order a cycle left is kept (keep_fair_order()); a cycle with nothing new
 * is quiet only if the order now is the same. O(queues) per quiet cycle. */
static int fair_order_matters(const gpusched_sched *s)
{
    return s->order_mode == GPUSCHED_SCHED_ORDER_FAIR && s->half_life && s->npending;
}

static void keep_fair_order(gpusched_sched *s)
{
    uint32_t n;
    s->nquiet_order = 0;
    if (!fair_order_matters(s))
        return;
    gs_sq_shares(s);
    if (gs_sq_leaf_order(s, &n) ||
        gs_grow(&s->alloc, (void **)&s->quiet_order, &s->quiet_order_cap, n + 1, sizeof *s->quiet_order)) {
        s->dirty = 1; /* not kept: the next cycle evaluates */
        return;
    }
    memcpy(s->quiet_order, s->order, (size_t)n * sizeof *s->order);
    s->nquiet_order = n;
}

static bool same_fair_order(gpusched_sched *s)
{
    if (!fair_order_matters(s))
        return true;
    uint32_t n;
    gs_sq_shares(s);
    if (gs_sq_leaf_order(s, &n))
        return false;
    return n == s->nquiet_order && !memcmp(s->order, s->quiet_order, (size_t)n * sizeof *s->order);
}

GPUSCHED_API int gpusched_sched_cycle(gpusched_sched *s, int64_t now, gpusched_sched_decisions *d)
{
    if (!s)
        return GPUSCHED_EINVAL;
    if (!d)
        return gs_error(&s->err, GPUSCHED_EINVAL, "cycle: decisions is NULL");
    if (now < s->last_now)
        return gs_error(&s->err, GPUSCHED_ERANGE, "cycle: now = %lld is before the last event or cycle (%lld)",
                        (long long)now, (long long)s->last_now);
    gs_sd_reset(d);
    gs_sq_decay(s, now);
    s->last_now = now;
    for (uint32_t i = 0; i < s->ndown_ev; i++)
        if (gs_sd_add_eviction(d, s->down_ev[i], 0))
            return gs_error(&s->err, GPUSCHED_ENOMEM, "cycle: out of memory");
    if (!s->dirty && !s->ndown_ev && now < s->wake && same_fair_order(s)) {
        d->quiet = 1;
        return gs_ok(&s->err);
    }
    /* Allocations first: a cycle that fails here has changed nothing, and
     * the node failures' evictions are reported again by the next one. */
    if (!s->memo && !(s->memo = gs_calloc(&s->alloc, 2 * GS_MEMO_SIZE, sizeof *s->memo)))
        return gs_error(&s->err, GPUSCHED_ENOMEM, "cycle: out of memory");
    if (!s->admit_memo && !(s->admit_memo = gs_calloc(&s->alloc, GS_ADMIT_MEMO, sizeof *s->admit_memo)))
        return gs_error(&s->err, GPUSCHED_ENOMEM, "cycle: out of memory");
    /* The pod workload the gangs submitted so far make (counted at submit),
     * whatever order they came in. */
    gs_pl_wl_refresh(s->p);
    /* Every pending gang waits or starts: room for all their waits at once. */
    if (gs_sd_grow_waits(d, s->npending + 1))
        return gs_error(&s->err, GPUSCHED_ENOMEM, "cycle: out of memory");
    s->ndown_ev = 0;
    s->cycle_no++;
    s->cmemo_gen++;
    s->nwt = 0;
    /* GPUs freed behind the scheduler's back (the caller released a job of
     * its own) end the memo too. */
    if (s->c->root_free_gpus != s->free_at_end || s->c->podx_gen != s->podx_gen_at_end)
        s->free_epoch++;
    if (s->memo_epoch != s->free_epoch) {
        s->memo_gen++;
        s->memo_epoch = s->free_epoch;
        s->memo_text_len = 0;
    }
    s->dirty = 0;
    gs_sd_chg_sync(s, 0);
    gs_sd_kept_swap(s);
    s->resv_min_time = INT64_MAX;
    s->free_at_start = s->c->root_free_gpus;
    s->started_gpus = 0;
    cyc x = {.d = d, .now = now};
    int rc = run_first(s, &x);
    if (!rc)
        rc = s->order_mode == GPUSCHED_SCHED_ORDER_FAIR ? run_fair(s, &x) : run_global(s, &x);
    /* The earliest time after `now` a protected job becomes a possible
     * victim, a pending gang passes the age limit (the starvation guard
     * then evaluates it first, and it may start where it waited behind a
     * reservation) or a reservation may move: a cycle then is not quiet. */
    s->wake = gs_sd_wake_next(s, now);
    /* Victims are not restarted by the cycle that evicted them: the next
     * one must evaluate them, even with no event between. And a cycle that
     * started a gang after it made a reservation (a backfill) is not a
     * fixpoint: the reservation was placed on the state before the start,
     * the next cycle places it on the state after, maybe elsewhere, and
     * gangs that waited behind it may start then. */
    if (x.evicted || x.late_start)
        s->dirty = 1;
    keep_fair_order(s);
    s->free_at_end = s->c->root_free_gpus;
    s->podx_gen_at_end = s->c->podx_gen;
    if (rc) {
        s->dirty = 1;
        return gs_error(&s->err, rc, "cycle: %s",
                        rc == GPUSCHED_ENOMEM     ? "out of memory"
                        : rc == GPUSCHED_ECORRUPT ? "a check against a search failed (GPUSCHED_SCHED_KEEP_CHECK: a kept or counted reservation's time or nodes, or a gang of whole domains counted)"
                                                  : gpusched_placer_errmsg(s->p));
    }
    return gs_ok(&s->err);
}
