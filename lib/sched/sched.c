/* The scheduler handle: lifetime, parameters, queues, job events and the
 * invariant checker. The cycle is in cycle.c. */
#include <stdlib.h>
#include <string.h>

#include "sched-internal.h"

#define GS_TIME_MAX (1ll << 53)

static const struct {
    int64_t lo, hi, def;
    const char *name;
} params[] = {
    [GPUSCHED_SCHED_PARAM_HALF_LIFE] = {0, GS_TIME_MAX, 0, "half_life"},
    [GPUSCHED_SCHED_PARAM_RESV_DEPTH] = {0, 64, 1, "resv_depth"},
    [GPUSCHED_SCHED_PARAM_ORDER] = {0, GPUSCHED_SCHED_ORDER_FIFO, GPUSCHED_SCHED_ORDER_FAIR, "order"},
    [GPUSCHED_SCHED_PARAM_STRICT] = {0, 1, 0, "strict"},
    [GPUSCHED_SCHED_PARAM_QUOTAS] = {0, 1, 1, "quotas"},
    [GPUSCHED_SCHED_PARAM_PREEMPT] = {0, 1, 1, "preempt"},
    [GPUSCHED_SCHED_PARAM_MIN_RUNTIME] = {0, GS_TIME_MAX, 0, "min_runtime"},
    [GPUSCHED_SCHED_PARAM_AGE_LIMIT] = {0, GS_TIME_MAX, 0, "age_limit"},
    [GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS] = {0, UINT32_MAX, 0, "preempt_max_gpus"},
    [GPUSCHED_SCHED_PARAM_LARGE_GPUS] = {0, UINT32_MAX, 0, "large_gpus"},
    [GPUSCHED_SCHED_PARAM_KEEP_RESV] = {0, 1, 1, "keep_resv"},
};

static int64_t *param_field(gpusched_sched *s, uint32_t param)
{
    switch (param) {
    case GPUSCHED_SCHED_PARAM_HALF_LIFE: return &s->half_life;
    case GPUSCHED_SCHED_PARAM_RESV_DEPTH: return &s->resv_depth;
    case GPUSCHED_SCHED_PARAM_ORDER: return &s->order_mode;
    case GPUSCHED_SCHED_PARAM_STRICT: return &s->strict;
    case GPUSCHED_SCHED_PARAM_QUOTAS: return &s->quotas;
    case GPUSCHED_SCHED_PARAM_PREEMPT: return &s->preempt;
    case GPUSCHED_SCHED_PARAM_MIN_RUNTIME: return &s->min_runtime;
    case GPUSCHED_SCHED_PARAM_AGE_LIMIT: return &s->age_limit;
    case GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS: return &s->preempt_max_gpus;
    case GPUSCHED_SCHED_PARAM_LARGE_GPUS: return &s->large_gpus;
    case GPUSCHED_SCHED_PARAM_KEEP_RESV: return &s->keep_resv;
    default: return NULL;
    }
}

/* ---- queues' storage --------------------------------------------------- */

/* Room for one more queue in every per-queue array. */
static int queues_reserve(gpusched_sched *s)
{
    if (gs_grow(&s->alloc, (void **)&s->q, &s->q_cap, s->nq + 1, sizeof *s->q))
        return GPUSCHED_ENOMEM;
    if (s->nq + 1 <= s->qr_cap)
        return 0;
    uint32_t cap = s->qr_cap ? s->qr_cap * 2 : 16;
    size_t n = (size_t)cap * s->nres;
    uint64_t **u64s[] = {&s->nominal, &s->borrow, &s->lend, &s->total, &s->guar, &s->used, &s->sumocc,
                         &s->ent, &s->sument};
    for (size_t i = 0; i < GS_ARRAY_LEN(u64s); i++) {
        uint64_t *a = gs_realloc_array(&s->alloc, *u64s[i], n, sizeof **u64s[i]);
        if (!a)
            return GPUSCHED_ENOMEM;
        *u64s[i] = a;
    }
    double *d = gs_realloc_array(&s->alloc, s->decayed, n, sizeof *d);
    if (!d)
        return GPUSCHED_ENOMEM;
    s->decayed = d;
    gs_sq_prof *pr = gs_realloc_array(&s->alloc, s->prof, n, sizeof *pr);
    if (!pr)
        return GPUSCHED_ENOMEM;
    /* New profiles read as never filled (their epoch 0 is no epoch + 1). */
    const size_t old = (size_t)s->qr_cap * s->nres;
    memset(pr + old, 0, (n - old) * sizeof *pr);
    s->prof = pr;
    s->qr_cap = cap;
    return 0;
}

/* Appends queue `nq` with defaults (arrays reserved). */
static void queue_append(gpusched_sched *s, const char *name, uint32_t parent, int32_t priority, uint32_t weight)
{
    uint32_t q = s->nq++;
    gs_sq *x = &s->q[q];
    s->use_epoch++; /* a new queue in a path: admissions change */
    memset(x, 0, sizeof *x);
    strcpy(x->name, name);
    x->parent = parent;
    x->depth = parent == GS_SQ_NONE ? 0 : s->q[parent].depth + 1;
    x->priority = priority;
    x->weight = weight ? weight : 1;
    for (uint32_t r = 0; r < s->nres; r++) {
        uint32_t i = gs_qr(s, q, r);
        s->nominal[i] = 0;
        s->borrow[i] = GPUSCHED_SCHED_UNLIMITED;
        s->lend[i] = GPUSCHED_SCHED_UNLIMITED;
        s->total[i] = s->guar[i] = s->used[i] = s->sumocc[i] = s->ent[i] = s->sument[i] = 0;
        s->decayed[i] = 0;
    }
}

/* ---- lifetime ------------------------------------------------------------- */

GPUSCHED_API void gpusched_sched_free(gpusched_sched *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nj; i++) {
        gs_free(&s->alloc, s->j[i].avoid);
        gs_free(&s->alloc, s->j[i].res_amt);
    }
    gs_sq_fini(s);
    void *arrays[] = {s->prof, s->j, s->free_slots, s->map_key, s->map_val, s->running, s->gpend, s->down_ev, s->order,
                      s->memo_text, s->jw, s->wt, s->admit_memo,
                      s->stack, s->quiet_order, s->resv, s->rnodes, s->avoid_buf, s->endn, s->end_slot, s->memo,
                      s->kresv, s->krnodes, s->chg, s->dom_free, s->wk.run, s->wk.age, s->wh_doms, s->wh_cnt, s->wh_nodes, s->wr_dom, s->wr_idx, s->wr_seen};
    for (size_t i = 0; i < GS_ARRAY_LEN(arrays); i++)
        gs_free(&s->alloc, arrays[i]);
    gpusched_preempt_plan_free(s->plan);
    gpusched_place_result_free(s->res);
    gpusched_placer_free(s->p);
    gpusched_cluster_unref(s->c);
    gs_alloc a = s->alloc;
    gs_free(&a, s);
}

GPUSCHED_API int gpusched_sched_new(gpusched_cluster *cluster, const gpusched_allocator *alloc, gpusched_sched **out)
{
    if (!cluster || !out)
        return GPUSCHED_EINVAL;
    *out = NULL;
    gpusched_sched *s;
    gs_alloc a;
    int rc = gs_object_new(alloc, sizeof *s, &a, (void **)&s);
    if (rc)
        return rc;
    s->alloc = a;
    s->c = gpusched_cluster_ref(cluster);
    s->res0 = 1 + cluster->topo->nclasses;
    s->nres = s->res0 + cluster->topo->nres;
    s->nlevels = cluster->topo->nlevels;
    for (uint32_t p = 1; p < GS_ARRAY_LEN(params); p++)
        *param_field(s, p) = params[p].def;
    s->last_now = INT64_MIN;
    s->wk.run_prot = s->wk.age_lim = INT64_MAX; /* nothing dropped yet */
    s->gpend_mode = -1;
    s->decay_time = INT64_MIN;
    s->dirty = 1;
    const char *quick = getenv("GPUSCHED_SCHED_QUICK");
    s->quick = !(quick && strcmp(quick, "0") == 0);
    const char *whole = getenv("GPUSCHED_SCHED_WHOLE");
    s->whole = !(whole && strcmp(whole, "0") == 0);
    const char *check = getenv("GPUSCHED_SCHED_KEEP_CHECK");
    s->keep_check = check && strcmp(check, "1") == 0;
    s->c_seen = cluster->changes;
    if (!(s->chg = gs_calloc(&s->alloc, GS_CHG_LOG, sizeof *s->chg))) {
        gpusched_sched_free(s);
        return GPUSCHED_ENOMEM;
    }
    if ((rc = gpusched_placer_new(cluster, alloc, &s->p)) || (rc = gpusched_place_result_new(alloc, &s->res)) ||
        (rc = gpusched_preempt_plan_new(alloc, &s->plan)) || (rc = gs_sq_init(s)) ||
        (rc = queues_reserve(s))) {
        gpusched_sched_free(s);
        return rc;
    }
    /* The placer learns the pod workload from the gangs submitted, once
     * each, not from every placement the cycles ask of it (a pending gang
     * is asked once per cycle, so the mix would follow how often cycles
     * run). */
    s->p->learn_by_owner = true;
    queue_append(s, "root", GS_SQ_NONE, 0, 1);
    *out = s;
    return 0;
}

GPUSCHED_API const char *gpusched_sched_errmsg(const gpusched_sched *s)
{
    return s ? s->err.msg : "scheduler is NULL";
}

/* ---- parameters -------------------------------------------------------------- */

GPUSCHED_API int gpusched_sched_param_bounds(uint32_t param, int64_t *lo, int64_t *hi)
{
    if (param == 0 || param >= GS_ARRAY_LEN(params) || !lo || !hi)
        return GPUSCHED_EINVAL;
    *lo = params[param].lo;
    *hi = params[param].hi;
    return 0;
}

GPUSCHED_API int gpusched_sched_param_set(gpusched_sched *s, uint32_t param, int64_t value)
{
    if (!s)
        return GPUSCHED_EINVAL;
    int64_t *f = param_field(s, param);
    if (!f)
        return gs_error(&s->err, GPUSCHED_EINVAL, "param_set: %u is not a gpusched_sched_param", param);
    if (value < params[param].lo || value > params[param].hi)
        return gs_error(&s->err, GPUSCHED_ERANGE, "param_set: %s = %lld is out of [%lld, %lld]",
                        params[param].name, (long long)value, (long long)params[param].lo,
                        (long long)params[param].hi);
    *f = value;
    s->dirty = 1;
    return gs_ok(&s->err);
}

GPUSCHED_API int gpusched_sched_param_get(gpusched_sched *s, uint32_t param, int64_t *value)
{
    if (!s)
        return GPUSCHED_EINVAL;
    int64_t *f = param_field(s, param);
    if (!f || !value)
        return gs_error(&s->err, GPUSCHED_EINVAL, "param_get: %s", value ? "unknown parameter" : "value is NULL");
    *value = *f;
    return gs_ok(&s->err);
}

/* ---- queues ------------------------------------------------------------------ */

static int check_name(gpusched_sched *s, const char *name)
{
    if (!name || !*name)
        return gs_error(&s->err, GPUSCHED_EINVAL, "queue_add: the name is %s", name ? "empty" : "NULL");
    size_t n = 0;
    for (; name[n]; n++) {
        char ch = name[n];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                  ch == '_' || ch == '-';
        if (!ok)
            return gs_error(&s->err, GPUSCHED_EINVAL,
                            "queue_add: name has character 0x%02x at %zu (only A-Z a-z 0-9 . _ -)",
                            (unsigned char)ch, n);
        if (n >= GPUSCHED_SCHED_NAME_MAX)
            return gs_error(&s->err, GPUSCHED_EINVAL, "queue_add: name longer than %u bytes",
                            GPUSCHED_SCHED_NAME_MAX);
    }
    uint32_t id;
    if (gpusched_sched_queue_find(s, name, &id) == 0)
        return gs_error(&s->err, GPUSCHED_EEXIST, "queue_add: queue '%s' exists (id %u)", name, id);
    return 0;
}

static int add_kid(gpusched_sched *s, uint32_t parent, uint32_t q)
{
    gs_sq *p = &s->q[parent];
    if (gs_grow(&s->alloc, (void **)&p->kids, &p->kids_cap, p->nkids + 1, sizeof *p->kids))
        return GPUSCHED_ENOMEM;
    p->kids[p->nkids++] = q;
    return 0;
}

static void del_kid(gpusched_sched *s, uint32_t parent, uint32_t q)
{
    gs_sq *p = &s->q[parent];
    for (uint32_t k = 0; k < p->nkids; k++)
        if (p->kids[k] == q) {
            memmove(p->kids + k, p->kids + k + 1, (p->nkids - k - 1) * sizeof *p->kids);
            p->nkids--;
            return;
        }
}

/* Jobs (pending or running) in a leaf: such a queue may not get children. */
static bool has_jobs(const gpusched_sched *s, uint32_t q)
{
    return s->q[q].npend || s->q[q].nrunning;
}

GPUSCHED_API int gpusched_sched_queue_add(gpusched_sched *s, const gpusched_sched_queue *in, uint32_t *id)
{
    if (!s)
        return GPUSCHED_EINVAL;
    if (!in || !id)
        return gs_error(&s->err, GPUSCHED_EINVAL, "queue_add: %s is NULL", in ? "id" : "queue");
    gpusched_sched_queue q;
    int rc = gs_struct_copy_in(&q, sizeof q, in, sizeof q, &s->err, "queue_add: queue");
    if (rc)
        return rc;
    if ((rc = check_name(s, q.name)))
        return rc;
    if (q.weight > 1000000)
        return gs_error(&s->err, GPUSCHED_EINVAL, "queue_add: weight is %u, 1 to 1000000 expected (0: 1)", q.weight);
    if (q.parent >= s->nq)
        return gs_error(&s->err, GPUSCHED_ENOENT, "queue_add: parent %u does not exist (%u queues)", q.parent, s->nq);
    if (has_jobs(s, q.parent))
        return gs_error(&s->err, GPUSCHED_ESTATE, "queue_add: parent '%s' holds jobs; only leaves hold jobs",
                        s->q[q.parent].name);
    if (s->nq >= GPUSCHED_SCHED_MAX_QUEUES)
        return gs_error(&s->err, GPUSCHED_ELIMIT, "queue_add: already %u queues", s->nq);
    if (s->q[q.parent].depth + 1 > GPUSCHED_SCHED_MAX_DEPTH)
        return gs_error(&s->err, GPUSCHED_ELIMIT, "queue_add: the tree would be deeper than %u",
                        GPUSCHED_SCHED_MAX_DEPTH);
    if ((rc = queues_reserve(s)) || (rc = add_kid(s, q.parent, s->nq)))
        return gs_error(&s->err, rc, "queue_add: out of memory");
    queue_append(s, q.name, q.parent, q.priority, q.weight);
    *id = s->nq - 1;
    s->dirty = 1;
    return gs_ok(&s->err);
}

static uint32_t subtree_height(const gpusched_sched *s, uint32_t q)
{
    uint32_t h = 0;
    for (uint32_t k = 0; k < s->q[q].nkids; k++) {
        uint32_t kh = 1 + subtree_height(s, s->q[q].kids[k]);
        h = kh > h ? kh : h;
    }
    return h;
}

static void set_depths(gpusched_sched *s, uint32_t q, uint32_t depth)
{
    s->q[q].depth = depth;
    for (uint32_t k = 0; k < s->q[q].nkids; k++)
        set_depths(s, s->q[q].kids[k], depth + 1);
}

GPUSCHED_API int gpusched_sched_queue_parent_set(gpusched_sched *s, uint32_t queue, uint32_t parent)
{
    if (!s)
        return GPUSCHED_EINVAL;
    if (queue >= s->nq || parent >= s->nq)
        return gs_error(&s->err, GPUSCHED_ENOENT, "queue_parent_set: queue %u does not exist (%u queues)",
                        queue >= s->nq ? queue : parent, s->nq);
    if (queue == GPUSCHED_SCHED_ROOT)
        return gs_error(&s->err, GPUSCHED_EINVAL, "queue_parent_set: the root has no parent");
    for (uint32_t a = parent; a != GS_SQ_NONE; a = s->q[a].parent)
        if (a == queue)
            return gs_error(&s->err, GPUSCHED_EINVAL,
                            "queue_parent_set: '%s' is '%s' or under it: the tree would have a cycle",
                            s->q[parent].name, s->q[queue].name);
    if (has_jobs(s, parent))
        return gs_error(&s->err, GPUSCHED_ESTATE, "queue_parent_set: '%s' holds jobs; only leaves hold jobs",
                        s->q[parent].name);
    if (s->q[parent].depth + 1 + subtree_height(s, queue) > GPUSCHED_SCHED_MAX_DEPTH)
        return gs_error(&s->err, GPUSCHED_ELIMIT, "queue_parent_set: the tree would be deeper than %u",
                        GPUSCHED_SCHED_MAX_DEPTH);
    uint32_t old = s->q[queue].parent;
    if (old == parent)
        return gs_ok(&s->err);
    int rc = add_kid(s, parent, queue);
    if (rc)
        return gs_error(&s->err, rc, "queue_parent_set: out of memory");
    /* Usage and pending counts move with the subtree. */
    uint32_t pend = s->q[queue].sub_pending;
    for (uint32_t a = old; a != GS_SQ_NONE; a = s->q[a].parent)
        s->q[a].sub_pending -= pend;
    for (uint32_t a = parent; a != GS_SQ_NONE; a = s->q[a].parent)
        s->q[a].sub_pending += pend;
    for (uint32_t r = 0; r < s->nres; r++) {
        uint64_t u = s->used[gs_qr(s, queue, r)];
        for (uint32_t a = old; a != GS_SQ_NONE; a = s->q[a].parent)
            s->used[gs_qr(s, a, r)] -= u;
        for (uint32_t a = parent; a != GS_SQ_NONE; a = s->q[a].parent)
            s->used[gs_qr(s, a, r)] += u;
    }
    del_kid(s, old, queue);
    s->q[queue].parent = parent;
    set_depths(s, queue, s->q[parent].depth + 1);
    /* Sums of nominal quotas cannot grow by a move; only memory can fail. */
    rc = gs_sq_recompute(s);
    s->dirty = 1;
    return rc ? gs_error(&s->err, rc, "queue_parent_set: out of memory") : gs_ok(&s->err);
}

GPUSCHED_API int gpusched_sched_queue_quota_set(gpusched_sched *s, uint32_t queue, uint32_t resource,
                                                uint64_t nominal, uint64_t borrowing_limit, uint64_t lending_limit)
{
    if (!s)
        return GPUSCHED_EINVAL;
    if (queue >= s->nq)
        return gs_error(&s->err, GPUSCHED_ENOENT, "queue_quota_set: queue %u does not exist (%u queues)", queue,
                        s->nq);
    if (resource >= s->nres)
        return gs_error(&s->err, GPUSCHED_ERANGE,
                        "queue_quota_set: resource %u, 0 to %u expected (GPUs, %u classes, %u topology resources)",
                        resource, s->nres - 1, s->res0 - 1, s->nres - s->res0);
    if (nominal > GPUSCHED_SCHED_QUOTA_MAX)
        return gs_error(&s->err, GPUSCHED_ERANGE, "queue_quota_set: nominal %llu is above the largest quota 2^62",
                        (unsigned long long)nominal);
    const uint64_t lim[2] = {borrowing_limit, lending_limit};
    for (int k = 0; k < 2; k++)
        if (lim[k] != GPUSCHED_SCHED_UNLIMITED && lim[k] > GPUSCHED_SCHED_QUOTA_MAX)
            return gs_error(&s->err, GPUSCHED_ERANGE,
                            "queue_quota_set: %s limit %llu is above 2^62 and not GPUSCHED_SCHED_UNLIMITED",
                            k ? "lending" : "borrowing", (unsigned long long)lim[k]);
    uint32_t i = gs_qr(s, queue, resource);
    uint64_t old[3] = {s->nominal[i], s->borrow[i], s->lend[i]};
    s->nominal[i] = nominal;
    s->borrow[i] = borrowing_limit;
    s->lend[i] = lending_limit;
    int rc = gs_sq_recompute(s);
    if (rc) {
        s->nominal[i] = old[0], s->borrow[i] = old[1], s->lend[i] = old[2];
        gs_sq_recompute(s); /* the old values summed fine and the scratch exists now */
        if (rc == GPUSCHED_ERANGE)
            return gs_error(&s->err, rc, "queue_quota_set: '%s' resource %u: a subtree's nominal quotas would sum past 2^62",
                            s->q[queue].name, resource);
        return gs_error(&s->err, rc, "queue_quota_set: out of memory");
    }
    if (!old[0] && nominal)
        s->res_set[resource]++;
    else if (old[0] && !nominal)
        s->res_set[resource]--;
    s->dirty = 1;
    return gs_ok(&s->err);
}

GPUSCHED_API int gpusched_sched_queue_find(gpusched_sched *s, const char *name, uint32_t *id)
{
    if (!s)
        return GPUSCHED_EINVAL;
    if (!name || !id)
        return gs_error(&s->err, GPUSCHED_EINVAL, "queue_find: %s is NULL", name ? "id" : "name");
    for (uint32_t q = 0; q < s->nq; q++)
        if (!strcmp(s->q[q].name, name)) {
            *id = q;
            return gs_ok(&s->err);
        }
    return gs_error(&s->err, GPUSCHED_ENOENT, "queue_find: no queue is named '%.64s'", name);
}

GPUSCHED_API uint32_t gpusched_sched_queue_count(const gpusched_sched *s)
{
    return s ? s->nq : 0;
}

GPUSCHED_API const char *gpusched_sched_queue_name(const gpusched_sched *s, uint32_t queue)
{
    return s && queue < s->nq ? s->q[queue].name : NULL;
}

GPUSCHED_API int gpusched_sched_queue_usage(gpusched_sched *s, uint32_t queue, uint32_t resource, uint64_t *used,
                                            uint64_t *quota, double *decayed, double *share, uint32_t *pending)
{
    if (!s)
        return GPUSCHED_EINVAL;
    if (queue >= s->nq)
        return gs_error(&s->err, GPUSCHED_ENOENT, "queue_usage: queue %u does not exist (%u queues)", queue, s->nq);
    if (resource >= s->nres)
        return gs_error(&s->err, GPUSCHED_ERANGE, "queue_usage: resource %u, 0 to %u expected", resource,
                        s->nres - 1);
    uint32_t i = gs_qr(s, queue, resource);
    if (used)
        *used = s->used[i];
    if (quota)
        *quota = s->total[i];
    if (decayed)
        *decayed = s->half_life ? s->decayed[i] : (double)s->used[i];
    if (share) {
        gs_sq_shares_path(s, queue);
        *share = s->q[queue].share;
    }
    if (pending)
        *pending = s->q[queue].sub_pending;
    return gs_ok(&s->err);
}

/* ---- events ------------------------------------------------------------------- */

static int check_now(gpusched_sched *s, int64_t now, const char *what)
{
    if (now < s->last_now)
        return gs_error(&s->err, GPUSCHED_ERANGE, "%s: now = %lld is before the last event or cycle (%lld)", what,
                        (long long)now, (long long)s->last_now);
    return 0;
}

static int load_request(gpusched_sched *s, const gpusched_place_request *in, gpusched_place_request *out,
                        gs_pl_req *r)
{
    if (!in)
        return gs_error(&s->err, GPUSCHED_EINVAL, "submit: request is NULL");
    int rc = gs_struct_copy_in(out, sizeof *out, in, offsetof(gpusched_place_request, avoid_count) + sizeof(uint32_t),
                               &s->err, "submit: request");
    if (rc)
        return rc;
    if (out->job || out->flags || out->preempt_policy || out->now)
        return gs_error(&s->err, GPUSCHED_EINVAL,
                        "submit: request's job, flags, preempt_policy and now must be 0 (the scheduler sets them)");
    if ((rc = gs_pl_req_load(s->p, out, r)))
        return gs_error(&s->err, rc, "submit: %s", gpusched_placer_errmsg(s->p));
    return 0;
}

/* A pod gang's own copies of the request's arrays and its total of each
 * topology resource, in one block (j->res_amt first). */
static int pods_block(gpusched_sched *s, const gs_pl_req *r, gpusched_place_request *req, uint64_t **res_amt)
{
    const uint32_t ntres = s->nres - s->res0;
    const size_t bytes = (size_t)(ntres + req->resource_count) * sizeof(uint64_t) +
                         (size_t)req->gpu_class_count * sizeof(uint32_t);
    uint64_t *b = gs_malloc(&s->alloc, bytes ? bytes : 1);
    if (!b)
        return GPUSCHED_ENOMEM;
    for (uint32_t k = 0; k < ntres; k++)
        b[k] = k < r->shape.nres ? (uint64_t)r->npods * r->shape.res[k] : 0;
    if (req->resource_count)
        memcpy(b + ntres, req->resources, (size_t)req->resource_count * sizeof *b);
    req->resources = req->resource_count ? b + ntres : NULL;
    uint32_t *cls = (uint32_t *)(b + ntres + req->resource_count);
    if (req->gpu_class_count)
        memcpy(cls, req->gpu_classes, (size_t)req->gpu_class_count * sizeof *cls);
    req->gpu_classes = req->gpu_class_count ? cls : NULL;
    *res_amt = b;
    return 0;
}

static int ends_reserve(gpusched_sched *s, uint32_t slots, uint32_t jobs);

GPUSCHED_API int gpusched_sched_submit(gpusched_sched *s, const gpusched_sched_job *in)
{
    if (!s)
        return GPUSCHED_EINVAL;
    gpusched_sched_job job;
    int rc = gs_struct_copy_in(&job, sizeof job, in, sizeof job, &s->err, "submit: job");
    if (rc)
        return rc;
    if (job.queue >= s->nq)
        return gs_error(&s->err, GPUSCHED_ENOENT, "submit: job %llu: queue %u does not exist (%u queues)",
                        (unsigned long long)job.id, job.queue, s->nq);
    if (s->q[job.queue].nkids)
        return gs_error(&s->err, GPUSCHED_ESTATE, "submit: job %llu: queue '%s' has children; submit to a leaf",
                        (unsigned long long)job.id, s->q[job.queue].name);
    if (job.priority > GPUSCHED_SCHED_PRIORITY_MAX || job.priority < -GPUSCHED_SCHED_PRIORITY_MAX)
        return gs_error(&s->err, GPUSCHED_ERANGE, "submit: job %llu: priority %d is out of [-%d, %d]",
                        (unsigned long long)job.id, job.priority, GPUSCHED_SCHED_PRIORITY_MAX,
                        GPUSCHED_SCHED_PRIORITY_MAX);
    if (job.flags & ~GPUSCHED_JOB_FLAG_ALL)
        return gs_error(&s->err, GPUSCHED_EINVAL, "submit: job %llu: unknown flags 0x%x", (unsigned long long)job.id,
                        job.flags & ~GPUSCHED_JOB_FLAG_ALL);
    if (job.duration_limit < 0 || job.duration_predicted < 0 || job.duration_limit > GS_TIME_MAX ||
        job.duration_predicted > GS_TIME_MAX)
        return gs_error(&s->err, GPUSCHED_ERANGE, "submit: job %llu: durations must be in [0, 2^53] (limit %lld, predicted %lld)",
                        (unsigned long long)job.id, (long long)job.duration_limit, (long long)job.duration_predicted);
    if (job.submit_time < -GS_TIME_MAX || job.submit_time > GS_TIME_MAX)
        return gs_error(&s->err, GPUSCHED_ERANGE, "submit: job %llu: submit_time out of ±2^53", (unsigned long long)job.id);
    gpusched_place_request req;
    gs_pl_req r;
    if ((rc = load_request(s, job.request, &req, &r)))
        return rc;
    if (gs_sj_find(s, job.id) != GS_SJ_NONE || gs_cluster_job_find(s->c, job.id))
        return gs_error(&s->err, GPUSCHED_EEXIST, "submit: job %llu exists", (unsigned long long)job.id);
    /* Every allocation first: nothing changes unless all succeed. */
    uint32_t *avoid = NULL;
    uint64_t *res_amt = NULL;
    if (req.avoid_count) {
        avoid = gs_malloc(&s->alloc, (size_t)req.avoid_count * sizeof *avoid);
        if (!avoid)
            return gs_error(&s->err, GPUSCHED_ENOMEM, "submit: out of memory");
        memcpy(avoid, req.avoid_nodes, (size_t)req.avoid_count * sizeof *avoid);
    }
    if (r.pods_path && pods_block(s, &r, &req, &res_amt)) {
        gs_free(&s->alloc, avoid);
        return gs_error(&s->err, GPUSCHED_ENOMEM, "submit: out of memory");
    }
    gs_sq *x = &s->q[job.queue];
    if (gs_sj_map_reserve(s) || gs_grow(&s->alloc, (void **)&s->j, &s->j_cap, s->nj + 1, sizeof *s->j) ||
        gs_grow(&s->alloc, (void **)&s->jw, &s->jw_cap, s->nj + 1, sizeof *s->jw) ||
        gs_grow(&s->alloc, (void **)&x->pend, &x->pend_cap, x->npend + x->nrunning + 1, sizeof *x->pend) ||
        gs_grow(&s->alloc, (void **)&s->running, &s->running_cap, s->nrunning + s->npending + 1,
                sizeof *s->running) ||
        gs_grow(&s->alloc, (void **)&s->gpend, &s->gpend_cap, s->nrunning + s->npending + 1, sizeof *s->gpend) ||
        ends_reserve(s, s->nj + 1, s->nrunning + s->npending + 1) ||
        gs_sd_wake_reserve(s, s->nrunning + s->npending + 1)) {
        gs_free(&s->alloc, avoid);
        gs_free(&s->alloc, res_amt);
        return gs_error(&s->err, GPUSCHED_ENOMEM, "submit: out of memory");
    }
    uint32_t slot = s->nfree ? s->free_slots[--s->nfree] : s->nj++;
    gs_sj *j = &s->j[slot];
    memset(j, 0, sizeof *j);
    j->id = job.id;
    j->queue = job.queue;
    j->state = GS_SJ_PENDING;
    j->flags = job.flags;
    j->priority = job.priority;
    j->gpus = req.gpus;
    j->qgpus = req.gpus;
    j->size = req.gpus;
    j->need_free = req.gpus;
    j->cls_res = req.gpu_class == GPUSCHED_NONE ? 0 : 1 + req.gpu_class;
    if (r.pods_path) {
        /* Fractions hold no GPU whole (the cluster counts them apart). */
        j->pods = 1;
        j->gpus = r.shape.milli ? 0 : r.gpus;
        j->qgpus = r.shape.milli ? (uint32_t)(((uint64_t)r.npods * r.shape.milli + 999) / 1000) : r.gpus;
        j->size = r.npods;
        j->need_free = r.shape.milli ? 0 : j->gpus;
        j->res_amt = res_amt;
        /* A class quota is charged for one class, not a list. */
        if (req.gpu_class_count)
            j->cls_res = 0;
    }
    j->submit = job.submit_time;
    j->limit = job.duration_limit;
    j->predicted = job.duration_predicted;
    j->cost_hint = job.cost_hint;
    j->evicted_cycle = UINT64_MAX;
    j->resv_last = GS_SJ_NONE;
    j->inc = ++s->submits;
    j->req = req;
    j->req.avoid_nodes = avoid;
    j->avoid = avoid;
    j->shape = gs_sj_shape_key(&j->req);
    j->quick_way = gs_sj_quick_way(j);
    j->whole_level = req.avoid_count ? 0 : gs_sd_whole_level(s, &r);
    s->jw[slot].cycle = 0; /* no explanation yet */
    gs_sj_map_put(s, job.id, slot);
    gs_sq_pend_insert(s, slot); /* room reserved above */
    gs_pl_wl_seen(s->p, &r);
    s->dirty = 1;
    return gs_ok(&s->err);
}

/* Room in the list of expected ends (a node per slot) and in the
 * reservation search's scratch for every job: a start never allocates. */
static int ends_reserve(gpusched_sched *s, uint32_t slots, uint32_t jobs)
{
    if (gs_grow(&s->alloc, (void **)&s->endn, &s->endn_cap, slots, sizeof *s->endn) ||
        gs_grow(&s->alloc, (void **)&s->end_slot, &s->end_slot_cap, jobs, sizeof *s->end_slot))
        return GPUSCHED_ENOMEM;
    return 0;
}

static void slot_free(gpusched_sched *s, uint32_t slot)
{
    gs_sj *j = &s->j[slot];
    gs_sj_map_del(s, j->id);
    gs_free(&s->alloc, j->avoid);
    gs_free(&s->alloc, j->res_amt);
    j->avoid = NULL;
    j->res_amt = NULL;
    j->state = GS_SJ_FREE;
    /* free_slots can hold every slot: grown with the table. */
    s->free_slots[s->nfree++] = slot;
}

static int reserve_free_slot(gpusched_sched *s)
{
    return gs_grow(&s->alloc, (void **)&s->free_slots, &s->free_cap, s->nfree + 1, sizeof *s->free_slots);
}

GPUSCHED_API int gpusched_sched_cancel(gpusched_sched *s, uint64_t job_id)
{
    if (!s)
        return GPUSCHED_EINVAL;
    uint32_t slot = gs_sj_find(s, job_id);
    if (slot == GS_SJ_NONE)
        return gs_error(&s->err, GPUSCHED_ENOENT, "cancel: no job %llu", (unsigned long long)job_id);
    if (s->j[slot].state != GS_SJ_PENDING)
        return gs_error(&s->err, GPUSCHED_ESTATE, "cancel: job %llu is running (end it with gpusched_sched_job_end)",
                        (unsigned long long)job_id);
    if (reserve_free_slot(s))
        return gs_error(&s->err, GPUSCHED_ENOMEM, "cancel: out of memory");
    gs_sq_pend_remove(s, slot);
    slot_free(s, slot);
    s->dirty = 1;
    return gs_ok(&s->err);
}

GPUSCHED_API int gpusched_sched_job_end(gpusched_sched *s, uint64_t job_id, int64_t now)
{
    if (!s)
        return GPUSCHED_EINVAL;
    int rc = check_now(s, now, "job_end");
    if (rc)
        return rc;
    uint32_t slot = gs_sj_find(s, job_id);
    if (slot == GS_SJ_NONE)
        return gs_error(&s->err, GPUSCHED_ENOENT, "job_end: no job %llu", (unsigned long long)job_id);
    if (s->j[slot].state != GS_SJ_RUNNING)
        return gs_error(&s->err, GPUSCHED_ESTATE, "job_end: job %llu is pending, not running (cancel it)",
                        (unsigned long long)job_id);
    if (reserve_free_slot(s))
        return gs_error(&s->err, GPUSCHED_ENOMEM, "job_end: out of memory");
    gs_sd_chg_log_end(s, slot);
    if ((rc = gpusched_cluster_release(s->c, job_id)))
        return gs_error(&s->err, rc, "job_end: job %llu: %s", (unsigned long long)job_id,
                        gpusched_cluster_errmsg(s->c));
    gs_sd_chg_sync(s, 1);
    gs_sj_unrun(s, slot, now);
    slot_free(s, slot);
    s->last_now = now;
    s->dirty = 1;
    return gs_ok(&s->err);
}

GPUSCHED_API int gpusched_sched_node_health_set(gpusched_sched *s, uint32_t node, uint32_t health, int64_t now)
{
    if (!s)
        return GPUSCHED_EINVAL;
    int rc = check_now(s, now, "node_health_set");
    if (rc)
        return rc;
    uint32_t nhit = 0;
    rc = gpusched_cluster_node_health_set(s->c, node, health, NULL, 0, &nhit);
    if (rc == GPUSCHED_ERANGE && nhit) {
        /* The node has jobs: ask again with room for their ids. */
        uint64_t *hit = gs_malloc(&s->alloc, (size_t)nhit * sizeof *hit);
        if (!hit || gs_grow(&s->alloc, (void **)&s->down_ev, &s->down_ev_cap, s->ndown_ev + nhit, sizeof *s->down_ev)) {
            gs_free(&s->alloc, hit);
            return gs_error(&s->err, GPUSCHED_ENOMEM, "node_health_set: out of memory");
        }
        rc = gpusched_cluster_node_health_set(s->c, node, health, hit, nhit, &nhit);
        if (!rc && health == GPUSCHED_NODE_DOWN) {
            for (uint32_t i = 0; i < nhit; i++) {
                uint32_t slot = gs_sj_find(s, hit[i]);
                if (slot == GS_SJ_NONE || s->j[slot].state != GS_SJ_RUNNING)
                    continue; /* not the scheduler's: the caller's to repair */
                if (gpusched_cluster_release(s->c, hit[i]) == 0) {
                    gs_sj_requeue(s, slot, now); /* cannot fail: room kept per queue */
                    s->down_ev[s->ndown_ev++] = hit[i];
                }
            }
        }
        gs_free(&s->alloc, hit);
    }
    gs_sd_chg_log(s, GS_CHG_OTHER, 0, GS_SJ_NONE);
    s->c_seen = s->c->changes;
    if (rc)
        return gs_error(&s->err, rc, "node_health_set: %s", gpusched_cluster_errmsg(s->c));
    s->free_epoch++; /* a node up again brings GPUs back */
    s->last_now = now;
    s->dirty = 1;
    return gs_ok(&s->err);
}

GPUSCHED_API int gpusched_sched_job_state(gpusched_sched *s, uint64_t job_id, uint32_t *status,
                                          gpusched_sched_wait *wait)
{
    if (!s)
        return GPUSCHED_EINVAL;
    if (wait && wait->size < offsetof(gpusched_sched_wait, share))
        return gs_error(&s->err, GPUSCHED_EINVAL, "job_state: wait->size is %u (use GPUSCHED_SCHED_WAIT_INIT)",
                        wait->size);
    uint32_t slot = gs_sj_find(s, job_id);
    if (slot == GS_SJ_NONE)
        return gs_error(&s->err, GPUSCHED_ENOENT, "job_state: no job %llu", (unsigned long long)job_id);
    const gs_sj *j = &s->j[slot];
    if (status)
        *status = j->state == GS_SJ_RUNNING ? GPUSCHED_SCHED_JOB_RUNNING : GPUSCHED_SCHED_JOB_PENDING;
    if (wait) {
        uint32_t size = wait->size < sizeof *wait ? wait->size : (uint32_t)sizeof *wait;
        gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
        const gs_jw *jw = &s->jw[slot];
        if (jw->cycle && jw->cycle == s->cycle_no) {
            w = s->wt[jw->tmpl];
            w.requested = jw->requested;
            w.seq = jw->seq;
        }
        w.job_id = j->id;
        w.size = size;
        memcpy(wait, &w, size);
    }
    return gs_ok(&s->err);
}

GPUSCHED_API int gpusched_sched_counts(gpusched_sched *s, uint32_t *pending, uint32_t *running)
{
    if (!s)
        return GPUSCHED_EINVAL;
    if (pending)
        *pending = s->npending;
    if (running)
        *running = s->nrunning;
    return gs_ok(&s->err);
}

/* ---- checking ------------------------------------------------------------------- */

GPUSCHED_API int gpusched_sched_check(gpusched_sched *s)
{
    if (!s)
        return GPUSCHED_EINVAL;
    size_t n = (size_t)s->nq * s->nres;
    uint64_t *used = gs_calloc(&s->alloc, n ? n : 1, sizeof *used);
    uint32_t *pend = gs_calloc(&s->alloc, s->nq, sizeof *pend);
    if (!used || !pend) {
        gs_free(&s->alloc, used);
        gs_free(&s->alloc, pend);
        return gs_error(&s->err, GPUSCHED_ENOMEM, "check: out of memory");
    }
    int rc = 0;
    uint32_t npending = 0, nrunning = 0;
    for (uint32_t slot = 0; slot < s->nj && !rc; slot++) {
        const gs_sj *j = &s->j[slot];
        if (j->state == GS_SJ_FREE)
            continue;
        if (gs_sj_find(s, j->id) != slot)
            rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: job %llu is not found by its id",
                          (unsigned long long)j->id);
        if (j->state == GS_SJ_PENDING) {
            npending++;
            for (uint32_t q = j->queue; q != GS_SQ_NONE; q = s->q[q].parent)
                pend[q]++;
            continue;
        }
        nrunning++;
        if (j->run_pos >= s->nrunning || s->running[j->run_pos] != slot)
            rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: running job %llu is not in the running list",
                          (unsigned long long)j->id);
        const gs_hold *h = gs_cluster_job_find(s->c, j->id);
        if (!h || h->ngpus != j->gpus)
            rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: running job %llu %s in the cluster",
                          (unsigned long long)j->id, h ? "holds other GPUs" : "is not running");
        uint32_t dr[GS_SJ_DEMAND_MAX];
        uint64_t amt[GS_SJ_DEMAND_MAX];
        const uint32_t nd = gs_sj_demand(s, j, dr, amt);
        for (uint32_t q = j->queue; q != GS_SQ_NONE; q = s->q[q].parent)
            for (uint32_t k = 0; k < nd; k++)
                used[gs_qr(s, q, dr[k])] += amt[k];
    }
    if (!rc && (npending != s->npending || nrunning != s->nrunning))
        rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: %u pending and %u running counted, %u and %u kept",
                      npending, nrunning, s->npending, s->nrunning);
    for (uint32_t q = 0; q < s->nq && !rc; q++) {
        if (pend[q] != s->q[q].sub_pending)
            rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: queue '%s' has %u pending, %u kept", s->q[q].name,
                          pend[q], s->q[q].sub_pending);
        for (uint32_t k = 0; k + 1 < s->q[q].npend && !rc; k++)
            if (!gs_sj_before(&s->j[s->q[q].pend[k]], &s->j[s->q[q].pend[k + 1]]))
                rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: queue '%s' is out of order at %u", s->q[q].name, k);
        for (uint32_t r = 0; r < s->nres && !rc; r++) {
            uint32_t i = gs_qr(s, q, r);
            if (used[i] != s->used[i])
                rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: queue '%s' resource %u: usage %llu, kept %llu",
                              s->q[q].name, r, (unsigned long long)used[i], (unsigned long long)s->used[i]);
            uint64_t occ = 0;
            for (uint32_t k = 0; k < s->q[q].nkids; k++)
                occ += gs_sq_occ(s, gs_qr(s, s->q[q].kids[k], r));
            uint64_t below = s->q[q].nkids ? 0 : s->used[i];
            for (uint32_t k = 0; k < s->q[q].nkids; k++)
                below += s->ent[gs_qr(s, s->q[q].kids[k], r)];
            if (!rc && (below != s->sument[i] || s->ent[i] != (below < s->total[i] ? below : s->total[i])))
                rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: queue '%s' resource %u: usage within quota is off",
                              s->q[q].name, r);
            if (!rc && occ != s->sumocc[i])
                rc = gs_error(&s->err, GPUSCHED_ECORRUPT, "check: queue '%s' resource %u: children occupy %llu, kept %llu",
                              s->q[q].name, r, (unsigned long long)occ, (unsigned long long)s->sumocc[i]);
        }
    }
    gs_free(&s->alloc, used);
    gs_free(&s->alloc, pend);
    if (!rc)
        rc = gs_sj_ends_check(s);
    if (!rc)
        rc = gs_sd_wake_check(s);
    return rc ? rc : gs_ok(&s->err);
}
