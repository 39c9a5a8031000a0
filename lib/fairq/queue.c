/* The queue's life cycle and its slots: new/free, enqueue, cancel, removal
 * of a slot, compaction. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "fairq-internal.h"

/* The rescore kernels this build contains: one per compiled SIMD path. */
static uint32_t gs_fq_kernels(void)
{
    return gs_simd_compiled();
}

/* The fast path's kernel: AVX2 serves the AVX-512 path too (the pass is
 * over a few hundred tenants at most, too short for wider vectors). */
static gs_fq_heads_fn gs_fq_heads_kernel(uint32_t simd)
{
#if GPUSCHED_HAVE_AVX2
    if (simd == GPUSCHED_SIMD_AVX2 || simd == GPUSCHED_SIMD_AVX512)
        return gs_fq_heads_avx2;
#endif
    (void)simd;
    return gs_fq_heads_scalar;
}

static gs_fq_scan_fn gs_fq_kernel(uint32_t simd)
{
    switch (simd) {
#if GPUSCHED_HAVE_AVX2
    case GPUSCHED_SIMD_AVX2: return gs_fq_scan_avx2;
#endif
#if GPUSCHED_HAVE_AVX512
    case GPUSCHED_SIMD_AVX512: return gs_fq_scan_avx512;
#endif
#if GPUSCHED_HAVE_NEON
    case GPUSCHED_SIMD_NEON: return gs_fq_scan_neon;
#endif
    default: return gs_fq_scan_scalar;
    }
}

GPUSCHED_API int gpusched_fairq_new(uint32_t max_tenants, const gpusched_allocator *alloc,
                                    gpusched_fairq **out)
{
    if (!out)
        return GPUSCHED_EINVAL;
    gs_alloc a;
    int rc = gs_alloc_init(&a, alloc);
    if (rc)
        return rc;
    if (max_tenants == 0 || max_tenants > GPUSCHED_MAX_TENANTS)
        return GPUSCHED_ERANGE;
    uint32_t simd;
    rc = gs_simd_choose(gs_fq_kernels(), &simd, NULL);
    if (rc)
        return rc;
    gpusched_fairq *q = gs_calloc(&a, 1, sizeof *q);
    if (!q)
        return GPUSCHED_ENOMEM;
    q->alloc = a;
    q->ids.runs = true;
    q->ntenants = max_tenants;
    q->ten = gs_calloc(&a, max_tenants, sizeof *q->ten);
    q->active_tenants = gs_calloc(&a, max_tenants, sizeof *q->active_tenants);
    q->hot_b = gs_calloc(&a, max_tenants, sizeof *q->hot_b);
    q->hot_e = gs_calloc(&a, max_tenants, sizeof *q->hot_e);
    q->hot_v = gs_calloc(&a, max_tenants, sizeof *q->hot_v);
    q->hot_s = gs_calloc(&a, max_tenants, sizeof *q->hot_s);
    q->hot_t = gs_calloc(&a, max_tenants, sizeof *q->hot_t);
    q->hot_types = gs_calloc(&a, max_tenants, sizeof *q->hot_types);
    q->hot_slot = gs_calloc(&a, max_tenants, sizeof *q->hot_slot);
    if (!q->ten || !q->active_tenants || !q->hot_b || !q->hot_e || !q->hot_v || !q->hot_s ||
        !q->hot_t || !q->hot_types || !q->hot_slot) {
        gpusched_fairq_free(q);
        return GPUSCHED_ENOMEM;
    }
    for (uint32_t t = 0; t < max_tenants; t++)
        q->ten[t].weight = 1.0;
    uint32_t hole;
    rc = gs_fq_key_get(q, 0, 0, &hole); /* key 0: the hole key */
    if (rc) {
        gpusched_fairq_free(q);
        return rc;
    }
    q->key_code[0] = UINT64_MAX; /* no real (tenant, type) maps to it */
    gs_fq_idmap_clear(&q->keymap);
    gs_fq_params_default(&q->p);
    q->simd = simd;
    q->scan = gs_fq_kernel(simd);
    q->heads = gs_fq_heads_kernel(simd);
    q->last_enq = q->last_now = q->decay_time = -INFINITY;
    q->vunit = 1.0;
    *out = q;
    return 0;
}

GPUSCHED_API void gpusched_fairq_free(gpusched_fairq *q)
{
    if (!q)
        return;
    const gs_alloc *a = &q->alloc;
    void *arrays[] = {q->id, q->enq, q->key, q->next, q->pred, q->x, q->ten, q->bhist, q->hot_b, q->hot_e, q->hot_v, q->hot_s,
                      q->hot_t, q->hot_types, q->hot_slot,
                      q->active_tenants, q->keys, q->key_code, q->key_pred, q->kterm,
                      q->active_keys, q->run_id, q->run, q->log};
    for (size_t i = 0; i < GS_ARRAY_LEN(arrays); i++)
        gs_free(a, arrays[i]);
    gs_fq_idmap_free(&q->ids, a);
    gs_fq_idmap_free(&q->keymap, a);
    gs_fq_idmap_free(&q->runmap, a);
    gs_free(&q->alloc, q);
}

GPUSCHED_API const char *gpusched_fairq_errmsg(const gpusched_fairq *q)
{
    return q && q->err.code ? q->err.msg : "";
}

/* Grows one column; the old array stays valid on failure, so a partial
 * growth changes only capacity, never content. */
static int gs_fq_grow(const gs_alloc *a, void **col, uint32_t cap, size_t elem)
{
    void *p = gs_realloc_array(a, *col, cap, elem);
    if (!p)
        return GPUSCHED_ENOMEM;
    *col = p;
    return 0;
}

static void gs_fq_compact(gpusched_fairq *q);

/* No backlog can exceed the number of queued tasks. */
static int gs_fq_bhist_reserve(gpusched_fairq *q, uint64_t want)
{
    if (want <= q->bhist_cap)
        return 0;
    uint64_t cap = q->bhist_cap ? q->bhist_cap : 64;
    while (cap < want)
        cap *= 2;
    uint32_t *h = gs_realloc_array(&q->alloc, q->bhist, (size_t)cap, sizeof *h);
    if (!h)
        return gs_error(&q->err, GPUSCHED_ENOMEM, "out of memory growing the backlog histogram");
    memset(h + q->bhist_cap, 0, (size_t)(cap - q->bhist_cap) * sizeof *h);
    q->bhist = h;
    q->bhist_cap = (uint32_t)cap;
    return 0;
}

int gs_fq_reserve_slots(gpusched_fairq *q, uint32_t extra)
{
    /* Room everywhere already: nothing below would change anything. */
    if (GS_LIKELY((uint64_t)q->hi + extra <= q->cap && (uint64_t)q->live + extra + 1 <= q->bhist_cap &&
                  gs_fq_idmap_has_room(&q->ids, extra)))
        return 0;
    if ((uint64_t)q->live + extra > GS_FQ_MAX_SLOTS)
        return gs_error(&q->err, GPUSCHED_ELIMIT, "the queue would hold more than 2^31 tasks");
    int rc = gs_fq_idmap_reserve(&q->ids, &q->alloc, q->id, extra);
    if (rc)
        return gs_error(&q->err, rc, "out of memory growing the id index");
    if ((rc = gs_fq_bhist_reserve(q, q->live + extra + 1)))
        return rc;
    uint64_t want = (uint64_t)q->hi + extra;
    /* Squeeze holes out rather than grow when they are at least half, or
     * when growing would pass the slot limit. */
    if (want > q->cap && (q->hi - q->live >= q->live || want > GS_FQ_MAX_SLOTS)) {
        gs_fq_compact(q);
        want = (uint64_t)q->hi + extra;
    }
    if (want <= q->cap)
        return 0;
    uint64_t cap = q->cap ? q->cap : 64;
    while (cap < want)
        cap *= 2;
    if (cap > GS_FQ_MAX_SLOTS)
        cap = GS_FQ_MAX_SLOTS;
    uint32_t c = (uint32_t)cap;
    if (gs_fq_grow(&q->alloc, (void **)&q->id, c, sizeof *q->id) ||
        gs_fq_grow(&q->alloc, (void **)&q->enq, c, sizeof *q->enq) ||
        gs_fq_grow(&q->alloc, (void **)&q->key, c, sizeof *q->key) ||
        gs_fq_grow(&q->alloc, (void **)&q->next, c, sizeof *q->next) ||
        gs_fq_grow(&q->alloc, (void **)&q->pred, c, sizeof *q->pred) ||
        gs_fq_grow(&q->alloc, (void **)&q->x, c, sizeof *q->x))
        return gs_error(&q->err, GPUSCHED_ENOMEM, "out of memory growing the queue to %u slots", c);
    q->cap = c;
    return 0;
}

static int gs_fq_keys_grow(gpusched_fairq *q)
{
    uint32_t c = q->keycap ? 2 * q->keycap : 16;
    const gs_alloc *a = &q->alloc;
    if (gs_fq_grow(a, (void **)&q->keys, c, sizeof *q->keys) ||
        gs_fq_grow(a, (void **)&q->key_code, c, sizeof *q->key_code) ||
        gs_fq_grow(a, (void **)&q->key_pred, c, sizeof *q->key_pred) ||
        gs_fq_grow(a, (void **)&q->kterm, c, sizeof *q->kterm) ||
        gs_fq_grow(a, (void **)&q->active_keys, c, sizeof *q->active_keys))
        return GPUSCHED_ENOMEM;
    q->keycap = c;
    return 0;
}

int gs_fq_key_get(gpusched_fairq *q, uint32_t tenant, uint32_t type, uint32_t *key)
{
    uint64_t code = (uint64_t)tenant << 6 | type;
    uint32_t k = gs_fq_idmap_find(&q->keymap, q->key_code, code);
    if (k != GS_FQ_NONE) {
        *key = k;
        return 0;
    }
    if (q->nkeys == q->keycap && gs_fq_keys_grow(q))
        return gs_error(&q->err, GPUSCHED_ENOMEM, "out of memory adding a (tenant, type) key");
    if (gs_fq_idmap_reserve(&q->keymap, &q->alloc, q->key_code, 1))
        return gs_error(&q->err, GPUSCHED_ENOMEM, "out of memory adding a (tenant, type) key");
    k = q->nkeys++;
    q->keys[k] = (gs_fq_key){.tenant = tenant, .type = type, .head = GS_FQ_NONE, .tail = GS_FQ_NONE,
                             .next_key = q->ten[tenant].first_key};
    if (k != GS_FQ_HOLE_KEY)
        q->ten[tenant].first_key = k;
    q->key_code[k] = code;
    q->key_pred[k] = (gs_fq_moments){0};
    q->kterm[k] = -INFINITY;
    gs_fq_idmap_insert(&q->keymap, q->key_code, k);
    *key = k;
    return 0;
}

static void gs_fq_list_push(gpusched_fairq *q, uint32_t k, uint32_t slot)
{
    gs_fq_key *key = &q->keys[k];
    q->next[slot] = GS_FQ_NONE;
    if (key->count == 0) {
        key->head = key->tail = slot;
        key->head_enq = q->enq[slot];
        key->active_pos = q->nactive_keys;
        q->active_keys[q->nactive_keys++] = k;
        gs_fq_tenant *t = &q->ten[key->tenant];
        if (!t->types) {
            t->oldest = slot;
            t->oldest_enq = q->enq[slot];
        }
        t->types |= 1ull << key->type;
    } else {
        q->next[key->tail] = slot;
        key->tail = slot;
    }
    key->count++;
}

static void gs_fq_tenant_backlog_inc(gpusched_fairq *q, uint32_t t)
{
    gs_fq_tenant *ten = &q->ten[t];
    uint32_t b = ten->backlog;
    if (b)
        q->bhist[b]--;
    q->bhist[b + 1]++;
    if (b + 1 > q->max_backlog)
        q->max_backlog = b + 1;
    if (ten->backlog++ == 0) {
        ten->active_pos = q->nactive_tenants;
        q->active_tenants[q->nactive_tenants++] = t;
        /* A returning tenant may not bank credit from its idle time
         * (with the lag cap: no more than the cap). */
        double floor = gs_fq_vtime_floor(q);
        if (ten->vtime < floor)
            ten->vtime = floor;
    }
}

static void gs_fq_tenant_backlog_dec(gpusched_fairq *q, uint32_t t)
{
    gs_fq_tenant *ten = &q->ten[t];
    uint32_t b = ten->backlog;
    q->bhist[b]--;
    if (b > 1)
        q->bhist[b - 1]++;
    /* The tenant now has b - 1, so the largest backlog drops by at most 1. */
    if (b == q->max_backlog && q->bhist[b] == 0)
        q->max_backlog = b - 1;
    if (--ten->backlog == 0) {
        uint32_t last = q->active_tenants[--q->nactive_tenants];
        q->active_tenants[ten->active_pos] = last;
        q->ten[last].active_pos = ten->active_pos;
        gs_fq_hot_sync(q, last);
    }
}

/* Appends a validated task; capacity and key exist already. */
static void gs_fq_append(gpusched_fairq *q, uint64_t id, uint32_t k, double enq, double x,
                         double predicted)
{
    uint32_t s = q->hi++;
    q->id[s] = id;
    q->enq[s] = enq;
    q->key[s] = k;
    q->x[s] = (float)x;
    if (predicted <= 0)
        predicted = gs_fq_predict_key(q, k, q->keys[k].type, x);
    q->pred[s] = (float)predicted;
    gs_fq_demand_add(q, q->keys[k].tenant, q->pred[s]);
    if (q->live == 0)
        q->lo = s;
    q->live++;
    gs_fq_idmap_insert(&q->ids, q->id, s);
    gs_fq_list_push(q, k, s);
    gs_fq_tenant_backlog_inc(q, q->keys[k].tenant);
    gs_fq_hot_sync(q, q->keys[k].tenant);
    q->last_enq = enq;
}

static int gs_fq_check_task(gpusched_fairq *q, uint64_t id, uint32_t tenant, uint32_t type,
                            double enq, double size, double last_enq, const char *where)
{
    if (tenant >= q->ntenants)
        return gs_error(&q->err, GPUSCHED_ERANGE, "%s: tenant %u, the queue has %u", where, tenant,
                        q->ntenants);
    if (type >= GPUSCHED_MAX_TASK_TYPES)
        return gs_error(&q->err, GPUSCHED_ERANGE, "%s: type %u, at most 63", where, type);
    if (isnan(enq))
        return gs_error(&q->err, GPUSCHED_ERANGE, "%s: enqueue time is not a number (NaN)", where);
    if (!isfinite(enq))
        return gs_error(&q->err, GPUSCHED_ERANGE, "%s: enqueue time %g is not finite", where, enq);
    if (enq < last_enq)
        return gs_error(&q->err, GPUSCHED_ERANGE,
                        "%s: enqueue time %g is earlier than the previous enqueue (%g)", where, enq,
                        last_enq);
    if (!(size >= 0) || !isfinite(size))
        return gs_error(&q->err, GPUSCHED_ERANGE, "%s: work size %g, expected >= 0", where, size);
    if (gs_fq_idmap_find(&q->runmap, q->run_id, id) != GS_FQ_NONE ||
        gs_fq_idmap_find_live(&q->ids, q->id, id, q->key) != GS_FQ_NONE)
        return gs_error(&q->err, GPUSCHED_EEXIST, "%s: task id %llu is already queued or running",
                        where, (unsigned long long)id);
    return 0;
}

GPUSCHED_API int gpusched_fairq_enqueue(gpusched_fairq *q, const gpusched_fairq_task *task)
{
    if (!q)
        return GPUSCHED_EINVAL;
    gpusched_fairq_task t;
    int rc = gs_struct_copy_in(&t, sizeof t, task, offsetof(gpusched_fairq_task, type), &q->err,
                               "gpusched_fairq_task");
    if (rc)
        return rc;
    gs_fq_idmap_prefetch(&q->ids, t.id);
    if (t.reserved0)
        return gs_error(&q->err, GPUSCHED_EINVAL, "task: reserved0 must be zero");
    rc = gs_fq_check_task(q, t.id, t.tenant, t.type, t.enqueue_time, t.work_size, q->last_enq, "task");
    if (rc)
        return rc;
    if (!(t.predicted >= 0) || t.predicted > 1e12)
        return gs_error(&q->err, GPUSCHED_ERANGE, "task: predicted %g, expected 0 .. 1e12", t.predicted);
    uint32_t k;
    if ((rc = gs_fq_reserve_slots(q, 1)) || (rc = gs_fq_key_get(q, t.tenant, t.type, &k)))
        return rc;
    double pred = t.predicted > 0 && t.predicted < GS_FQ_PRED_MIN ? GS_FQ_PRED_MIN : t.predicted;
    gs_fq_append(q, t.id, k, t.enqueue_time, gs_fq_size_x(t.work_size), pred);
    return gs_ok(&q->err);
}

/* Validates a batch before anything changes, including repeats inside it:
 * the ids are inserted into the index tentatively and taken out again. */
static int gs_fq_bulk_check(gpusched_fairq *q, uint32_t n, const uint64_t *ids,
                            const uint32_t *tenants, const uint8_t *types, const double *times,
                            const double *sizes)
{
    double last = q->last_enq;
    char where[48];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(where, sizeof where, "task %u", i);
        int rc = gs_fq_check_task(q, ids[i], tenants[i], types ? types[i] : 0, times[i],
                                  sizes ? sizes[i] : 0, last, where);
        if (rc)
            return rc;
        last = times[i];
    }
    return 0;
}

static int gs_fq_bulk_unique(gpusched_fairq *q, uint32_t n, const uint64_t *ids)
{
    /* Stage the batch's ids at the end of the id column (capacity is
     * reserved) and index them; a repeat shows up as a hit. */
    uint32_t base = q->hi, i = 0;
    int rc = 0;
    for (; i < n; i++) {
        if (gs_fq_idmap_find_live(&q->ids, q->id, ids[i], q->key) != GS_FQ_NONE) {
            rc = gs_error(&q->err, GPUSCHED_EEXIST, "task %u: id %llu repeats in the batch", i,
                          (unsigned long long)ids[i]);
            break;
        }
        q->id[base + i] = ids[i];
        q->key[base + i] = UINT32_MAX; /* "alive" while staged */
        gs_fq_idmap_insert(&q->ids, q->id, base + i);
    }
    while (i-- > 0)
        gs_fq_idmap_remove_index(&q->ids, q->id, base + i);
    return rc;
}

GPUSCHED_API int gpusched_fairq_enqueue_batch(gpusched_fairq *q, uint32_t n, const uint64_t *ids,
                                             const uint32_t *tenants, const uint8_t *types,
                                             const double *enqueue_times, const double *work_sizes)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (n && (!ids || !tenants || !enqueue_times))
        return gs_error(&q->err, GPUSCHED_EINVAL, "enqueue_bulk: ids, tenants and times are required");
    int rc = gs_fq_bulk_check(q, n, ids, tenants, types, enqueue_times, work_sizes);
    if (rc || (rc = gs_fq_reserve_slots(q, n)) || (rc = gs_fq_bulk_unique(q, n, ids)))
        return rc;
    /* Keys are created before any task is appended so that an allocation
     * failure leaves only unused keys behind, never a partial batch. */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k;
        if ((rc = gs_fq_key_get(q, tenants[i], types ? types[i] : 0, &k)))
            return rc;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k;
        gs_fq_key_get(q, tenants[i], types ? types[i] : 0, &k);
        gs_fq_append(q, ids[i], k, enqueue_times[i], gs_fq_size_x(work_sizes ? work_sizes[i] : 0), 0);
    }
    return gs_ok(&q->err);
}

/* Drops holes from the front of a key's FIFO. */
static void gs_fq_list_advance(gpusched_fairq *q, gs_fq_key *key)
{
    uint32_t h = key->head;
    while (h != GS_FQ_NONE && q->key[h] == GS_FQ_HOLE_KEY)
        h = q->next[h];
    key->head = h;
    if (h != GS_FQ_NONE)
        key->head_enq = q->enq[h];
}

static void gs_fq_key_dec(gpusched_fairq *q, uint32_t k)
{
    gs_fq_key *key = &q->keys[k];
    if (--key->count == 0) {
        key->head = key->tail = GS_FQ_NONE;
        q->ten[key->tenant].types &= ~(1ull << key->type);
        uint32_t last = q->active_keys[--q->nactive_keys];
        q->active_keys[key->active_pos] = last;
        q->keys[last].active_pos = key->active_pos;
        return;
    }
    gs_fq_list_advance(q, key);
}

void gs_fq_tenant_oldest(const gpusched_fairq *q, uint32_t t, uint64_t mask, uint32_t *slot,
                         double *enq, uint64_t *count)
{
    for (uint32_t k = q->ten[t].first_key; k; k = q->keys[k].next_key) {
        const gs_fq_key *key = &q->keys[k];
        if (!key->count || !((mask >> key->type) & 1))
            continue;
        *count += key->count;
        if (*slot == GS_FQ_NONE || key->head < *slot) {
            *slot = key->head;
            *enq = key->head_enq;
        }
    }
}

static void gs_fq_tenant_refresh(gpusched_fairq *q, uint32_t t)
{
    uint64_t n = 0;
    q->ten[t].oldest = GS_FQ_NONE;
    gs_fq_tenant_oldest(q, t, UINT64_MAX, &q->ten[t].oldest, &q->ten[t].oldest_enq, &n);
}

void gs_fq_remove_slot(gpusched_fairq *q, uint32_t s)
{
    uint32_t k = q->key[s];
    uint32_t t = q->keys[k].tenant;
    /* The id index keeps a stale entry for the hole (find_live skips it)
     * until compaction rebuilds the index: a poll touches no hash table. */
    q->key[s] = GS_FQ_HOLE_KEY;
    q->live--;
    gs_fq_key_dec(q, k);
    gs_fq_tenant_backlog_dec(q, t);
    if (q->ten[t].backlog && q->ten[t].oldest == s)
        gs_fq_tenant_refresh(q, t);
    gs_fq_hot_sync(q, t);
    if (q->live == 0) {
        q->lo = q->hi = 0; /* everything is a hole: start over */
        gs_fq_idmap_clear(&q->ids);
        return;
    }
    while (q->key[q->lo] == GS_FQ_HOLE_KEY)
        q->lo++;
    /* Keeps the rescore within twice the live tasks; amortized O(1). */
    if (q->hi - q->live > q->live + 1024)
        gs_fq_compact(q);
}

/* Squeezes holes out in place, keeping slot order (so age order), then
 * rebuilds the id index and the FIFOs. Allocation-free. */
static void gs_fq_compact(gpusched_fairq *q)
{
    uint32_t w = 0;
    for (uint32_t s = q->lo; s < q->hi; s++) {
        if (q->key[s] == GS_FQ_HOLE_KEY)
            continue;
        q->id[w] = q->id[s];
        q->enq[w] = q->enq[s];
        q->key[w] = q->key[s];
        q->pred[w] = q->pred[s];
        q->x[w] = q->x[s];
        w++;
    }
    q->lo = 0;
    q->hi = w;
    gs_fq_idmap_clear(&q->ids);
    for (uint32_t k = 0; k < q->nkeys; k++)
        q->keys[k].count = 0;
    for (uint32_t i = 0; i < q->nactive_tenants; i++)
        q->ten[q->active_tenants[i]].types = 0;
    q->nactive_keys = 0;
    for (uint32_t s = 0; s < w; s++) {
        gs_fq_idmap_insert(&q->ids, q->id, s);
        gs_fq_list_push(q, q->key[s], s);
    }
    for (uint32_t i = 0; i < q->nactive_tenants; i++)
        gs_fq_hot_sync(q, q->active_tenants[i]);
}

GPUSCHED_API int gpusched_fairq_cancel(gpusched_fairq *q, uint64_t id)
{
    if (!q)
        return GPUSCHED_EINVAL;
    uint32_t s = gs_fq_idmap_find_live(&q->ids, q->id, id, q->key);
    if (s == GS_FQ_NONE)
        return gs_error(&q->err, GPUSCHED_ENOENT, "cancel: no queued task has id %llu",
                        (unsigned long long)id);
    gs_fq_demand_add(q, q->keys[q->key[s]].tenant, -(double)q->pred[s]);
    gs_fq_remove_slot(q, s);
    return gs_ok(&q->err);
}

GPUSCHED_API int gpusched_fairq_count(gpusched_fairq *q, uint64_t *queued, uint64_t *running)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (queued)
        *queued = q->live;
    if (running)
        *running = q->nrun;
    return gs_ok(&q->err);
}

GPUSCHED_API int gpusched_fairq_simd(gpusched_fairq *q, uint32_t *simd)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (!simd)
        return gs_error(&q->err, GPUSCHED_EINVAL, "simd is NULL");
    *simd = q->simd;
    return gs_ok(&q->err);
}
