/* The scheduler's jobs: slots, the id map, the running list, and the
 * moves between pending and running. */
#include <string.h>

#include "sched-internal.h"

static inline uint32_t map_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (uint32_t)k;
}

uint32_t gs_sj_find(const gpusched_sched *s, uint64_t id)
{
    if (!s->map_cap)
        return GS_SJ_NONE;
    uint32_t mask = s->map_cap - 1;
    for (uint32_t i = map_hash(id) & mask;; i = (i + 1) & mask) {
        uint32_t v = s->map_val[i];
        if (v == GS_SJ_NONE)
            return GS_SJ_NONE;
        if (s->map_key[i] == id)
            return v;
    }
}

static void map_put_raw(uint64_t *keys, uint32_t *vals, uint32_t cap, uint64_t id, uint32_t slot)
{
    uint32_t mask = cap - 1;
    uint32_t i = map_hash(id) & mask;
    while (vals[i] != GS_SJ_NONE)
        i = (i + 1) & mask;
    keys[i] = id;
    vals[i] = slot;
}

/* Room for one more entry (load at most one half). */
int gs_sj_map_reserve(gpusched_sched *s)
{
    if ((uint64_t)(s->map_used + 1) * 2 <= s->map_cap)
        return 0;
    uint32_t cap = s->map_cap ? s->map_cap * 2 : 1024;
    uint64_t *keys = gs_calloc(&s->alloc, cap, sizeof *keys);
    uint32_t *vals = gs_malloc(&s->alloc, (size_t)cap * sizeof *vals);
    if (!keys || !vals) {
        gs_free(&s->alloc, keys);
        gs_free(&s->alloc, vals);
        return GPUSCHED_ENOMEM;
    }
    memset(vals, 0xff, (size_t)cap * sizeof *vals);
    for (uint32_t i = 0; i < s->map_cap; i++)
        if (s->map_val[i] != GS_SJ_NONE)
            map_put_raw(keys, vals, cap, s->map_key[i], s->map_val[i]);
    gs_free(&s->alloc, s->map_key);
    gs_free(&s->alloc, s->map_val);
    s->map_key = keys;
    s->map_val = vals;
    s->map_cap = cap;
    return 0;
}

void gs_sj_map_put(gpusched_sched *s, uint64_t id, uint32_t slot)
{
    map_put_raw(s->map_key, s->map_val, s->map_cap, id, slot);
    s->map_used++;
}

/* Deletion with backward shift: no tombstones. */
void gs_sj_map_del(gpusched_sched *s, uint64_t id)
{
    uint32_t mask = s->map_cap - 1;
    uint32_t i = map_hash(id) & mask;
    while (s->map_key[i] != id || s->map_val[i] == GS_SJ_NONE)
        i = (i + 1) & mask;
    for (uint32_t k = (i + 1) & mask; s->map_val[k] != GS_SJ_NONE; k = (k + 1) & mask) {
        uint32_t home = map_hash(s->map_key[k]) & mask;
        /* k's entry may move to the hole at i if i lies between home and k. */
        if (((k - home) & mask) >= ((k - i) & mask)) {
            s->map_key[i] = s->map_key[k];
            s->map_val[i] = s->map_val[k];
            i = k;
        }
    }
    s->map_val[i] = GS_SJ_NONE;
    s->map_used--;
}

int64_t gs_sj_expected(const gs_sj *j)
{
    int64_t d = j->predicted ? j->predicted : j->limit;
    return d ? d : GS_SD_NEVER;
}

int64_t gs_sj_expected_end(const gs_sj *j)
{
    const int64_t d = gs_sj_expected(j);
    return d == GS_SD_NEVER ? GS_SD_NEVER : j->start + d;
}

/* The running jobs with an expected end, by (end, job id), as a skip list
 * over the slots (the reservation search walks them in order, and lends
 * them in it). Ties go by id, not by slot: slots depend on the order of
 * calls (submits, ends, cancels that free and reuse them), and a
 * reservation's nodes must not. */
static uint32_t end_levels(uint32_t slot)
{
    uint64_t h = gs_sd_mix64(0x5eedu, slot);
    uint32_t l = 1;
    while (l < GS_ENDS_LEVELS && (h & 3) == 0) {
        l++;
        h >>= 2;
    }
    return l;
}

static bool end_before(const gpusched_sched *s, uint32_t a, int64_t end, uint32_t slot)
{
    const int64_t e = s->endn[a].end;
    return e != end ? e < end : s->j[a].id < s->j[slot].id;
}

/* The next-links that precede (end, slot's id) at each level: at[l] points to
 * the link to change. */
static void end_find(gpusched_sched *s, int64_t end, uint32_t slot, uint32_t **at)
{
    uint32_t *links = s->ends_head;
    for (uint32_t l = GS_ENDS_LEVELS; l-- > 0;) {
        while (links[l] && end_before(s, links[l] - 1, end, slot))
            links = s->endn[links[l] - 1].next;
        at[l] = &links[l];
    }
}

static void ends_add(gpusched_sched *s, uint32_t slot)
{
    const int64_t end = gs_sj_expected_end(&s->j[slot]);
    if (end == GS_SD_NEVER)
        return;
    gs_endnode *e = &s->endn[slot];
    e->end = end;
    uint32_t *at[GS_ENDS_LEVELS];
    end_find(s, e->end, slot, at);
    const uint32_t lv = end_levels(slot);
    for (uint32_t l = 0; l < GS_ENDS_LEVELS; l++) {
        e->next[l] = l < lv ? *at[l] : 0;
        if (l < lv)
            *at[l] = slot + 1;
    }
    s->nends++;
}

static void ends_del(gpusched_sched *s, uint32_t slot)
{
    const gs_sj *j = &s->j[slot];
    if (gs_sj_expected(j) == GS_SD_NEVER)
        return;
    const gs_endnode *e = &s->endn[slot];
    uint32_t *at[GS_ENDS_LEVELS];
    end_find(s, e->end, slot, at);
    for (uint32_t l = 0; l < GS_ENDS_LEVELS; l++)
        if (*at[l] == slot + 1)
            *at[l] = e->next[l];
    s->nends--;
}

int gs_sj_ends_check(gpusched_sched *s)
{
    uint32_t n = 0;
    int64_t last = INT64_MIN;
    uint32_t last_slot = 0;
    for (uint32_t k = gs_sj_end_next(s, GS_SJ_NONE); k != GS_SJ_NONE; k = gs_sj_end_next(s, k)) {
        const gs_sj *j = &s->j[k];
        if (++n > s->nends || j->state != GS_SJ_RUNNING || gs_sj_expected(j) == GS_SD_NEVER ||
            s->endn[k].end != j->start + gs_sj_expected(j))
            return gs_error(&s->err, GPUSCHED_ECORRUPT, "check: the list of expected ends holds job slot %u wrongly",
                            k);
        if (n > 1 && (s->endn[k].end < last || (s->endn[k].end == last && j->id <= s->j[last_slot].id)))
            return gs_error(&s->err, GPUSCHED_ECORRUPT, "check: the list of expected ends is out of order at slot %u",
                            k);
        last = s->endn[k].end;
        last_slot = k;
    }
    uint32_t want = 0;
    for (uint32_t i = 0; i < s->nrunning; i++)
        want += gs_sj_expected(&s->j[s->running[i]]) != GS_SD_NEVER;
    if (n != s->nends || n != want)
        return gs_error(&s->err, GPUSCHED_ECORRUPT, "check: %u expected ends listed, %u counted, %u running jobs have one",
                        n, s->nends, want);
    return 0;
}

int gs_sj_run(gpusched_sched *s, uint32_t slot, int64_t now, int borrowed)
{
    if (gs_grow(&s->alloc, (void **)&s->running, &s->running_cap, s->nrunning + 1, sizeof *s->running))
        return GPUSCHED_ENOMEM;
    gs_sj *j = &s->j[slot];
    gs_sq_pend_remove(s, slot);
    j->state = GS_SJ_RUNNING;
    j->borrowed = (uint8_t)borrowed;
    j->start = now;
    j->run_pos = s->nrunning;
    s->running[s->nrunning++] = slot;
    s->q[j->queue].nrunning++;
    j->victim = (gs_sj_run_flags(s, j) & GPUSCHED_JOB_FLAG_PREEMPTIBLE) != 0;
    s->npre += j->victim;
    gs_sd_wake_run(s, slot);
    gs_sq_use(s, j, +1);
    s->jw[slot].cycle = 0; /* no longer waiting */
    ends_add(s, slot); /* room kept since submit */
    return 0;
}

void gs_sj_unrun(gpusched_sched *s, uint32_t slot, int64_t now)
{
    gs_sj *j = &s->j[slot];
    gs_sq_decay(s, now);
    ends_del(s, slot);
    gs_sq_use(s, j, -1);
    uint32_t last = s->running[--s->nrunning];
    s->running[j->run_pos] = last;
    s->j[last].run_pos = j->run_pos;
    s->q[j->queue].nrunning--;
    s->npre -= j->victim;
    j->victim = 0;
    s->free_epoch++; /* its GPUs are free (or about to be) */
    j->state = GS_SJ_PENDING;
}

int gs_sj_requeue(gpusched_sched *s, uint32_t slot, int64_t now)
{
    gs_sj_unrun(s, slot, now);
    s->j[slot].borrowed = 0;
    return gs_sq_pend_insert(s, slot);
}

uint64_t gs_sj_shape_key(const gpusched_place_request *q)
{
    if (q->avoid_count)
        return 0;
    uint64_t h = 0x5eed;
    const uint64_t v[] = {q->split, q->pod_gpus, q->required_level, q->slice_gpus[0], q->slice_gpus[1],
                          q->slice_level[0], q->slice_level[1], q->gpu_class, q->labels_required,
                          q->labels_forbidden};
    for (size_t i = 0; i < GS_ARRAY_LEN(v); i++)
        h = gs_sd_mix64(h, v[i]);
    /* The unit of the size: pods on the placer's pod path (as
     * gs_pl_pods_load() decides it), GPUs otherwise. A request of 4 pods
     * of 2 GPUs and one of 4 GPUs in pods of 2 differ only there, and the
     * memo compares their sizes. */
    h = gs_sd_mix64(h, gs_pl_req_wants_pods(q));
    /* A pod's shape (its count is the size, not the shape). */
    h = gs_sd_mix64(h, q->gpu_milli);
    h = gs_sd_mix64(h, q->policy);
    for (uint32_t i = 0; i < q->resource_count; i++)
        h = gs_sd_mix64(h, q->resources[i] + ((uint64_t)i << 56));
    for (uint32_t i = 0; i < q->gpu_class_count; i++)
        h = gs_sd_mix64(h, q->gpu_classes[i] | (uint64_t)1 << 63);
    return h | 1;
}
