/* The decisions of a cycle: growable arrays, a string pool for the
 * explanations, and the accessors. */
#include <stdio.h>
#include <string.h>

#include "sched-internal.h"

GPUSCHED_API int gpusched_sched_decisions_new(const gpusched_allocator *alloc, gpusched_sched_decisions **out)
{
    if (!out)
        return GPUSCHED_EINVAL;
    *out = NULL;
    gs_alloc a;
    gpusched_sched_decisions *d;
    int rc = gs_object_new(alloc, sizeof *d, &a, (void **)&d);
    if (rc)
        return rc;
    d->alloc = a;
    *out = d;
    return 0;
}

GPUSCHED_API void gpusched_sched_decisions_free(gpusched_sched_decisions *d)
{
    if (!d)
        return;
    void *arrays[] = {d->start_ids, d->start_seq, d->start_off, d->start_nodes, d->start_masks, d->ev_victims,
                      d->ev_for, d->rv_job, d->rv_time, d->rv_level, d->rv_dom, d->rv_off, d->rv_nodes,
                      d->waits, d->tmpl, d->pool, d->qname};
    for (size_t i = 0; i < GS_ARRAY_LEN(arrays); i++)
        gs_free(&d->alloc, arrays[i]);
    gs_alloc a = d->alloc;
    gs_free(&a, d);
}

void gs_sd_reset(gpusched_sched_decisions *d)
{
    d->quiet = 0;
    d->nstarts = d->npairs = d->nev = d->nrv = d->nrv_nodes = d->nwaits = d->ntmpl = d->pool_len = 0;
    d->nqname = 0; /* the names' offsets point into the pool just emptied */
    d->msg[0] = 0;
}

/* Grows several parallel arrays to `need` entries; `cap` changes only if
 * all grew. */
static int grow_all(gpusched_sched_decisions *d, uint32_t *cap, uint32_t need, void **arrs[], const size_t *sizes,
                    size_t n)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 32;
    while (c < need)
        c *= 2;
    for (size_t i = 0; i < n; i++) {
        void *p = gs_realloc_array(&d->alloc, *arrs[i], c, sizes[i]);
        if (!p)
            return GPUSCHED_ENOMEM;
        *arrs[i] = p;
    }
    *cap = c;
    return 0;
}

int gs_sd_add_start(gpusched_sched_decisions *d, uint64_t id, uint32_t seq, const uint32_t *nodes,
                    const uint64_t *masks, uint32_t n)
{
    void **a[] = {(void **)&d->start_ids, (void **)&d->start_seq, (void **)&d->start_off};
    const size_t sz[] = {sizeof *d->start_ids, sizeof *d->start_seq, sizeof *d->start_off};
    void **b[] = {(void **)&d->start_nodes, (void **)&d->start_masks};
    const size_t szb[] = {sizeof *d->start_nodes, sizeof *d->start_masks};
    if (grow_all(d, &d->starts_cap, d->nstarts + 2, a, sz, 3) || grow_all(d, &d->pairs_cap, d->npairs + n, b, szb, 2))
        return GPUSCHED_ENOMEM;
    d->start_ids[d->nstarts] = id;
    d->start_seq[d->nstarts] = seq;
    d->start_off[d->nstarts] = d->npairs;
    memcpy(d->start_nodes + d->npairs, nodes, (size_t)n * sizeof *nodes);
    memcpy(d->start_masks + d->npairs, masks, (size_t)n * sizeof *masks);
    d->npairs += n;
    d->nstarts++;
    d->start_off[d->nstarts] = d->npairs;
    return 0;
}

int gs_sd_add_eviction(gpusched_sched_decisions *d, uint64_t victim, uint64_t for_job)
{
    void **a[] = {(void **)&d->ev_victims, (void **)&d->ev_for};
    const size_t sz[] = {sizeof *d->ev_victims, sizeof *d->ev_for};
    if (grow_all(d, &d->ev_cap, d->nev + 1, a, sz, 2))
        return GPUSCHED_ENOMEM;
    d->ev_victims[d->nev] = victim;
    d->ev_for[d->nev++] = for_job;
    return 0;
}

int gs_sd_add_resv(gpusched_sched_decisions *d, uint64_t id, int64_t time, uint32_t level, uint32_t dom,
                   const uint32_t *nodes, uint32_t n)
{
    void **a[] = {(void **)&d->rv_job, (void **)&d->rv_time, (void **)&d->rv_level, (void **)&d->rv_dom,
                  (void **)&d->rv_off};
    const size_t sz[] = {sizeof *d->rv_job, sizeof *d->rv_time, sizeof *d->rv_level, sizeof *d->rv_dom,
                         sizeof *d->rv_off};
    if (grow_all(d, &d->rv_cap, d->nrv + 2, a, sz, 5) ||
        gs_grow(&d->alloc, (void **)&d->rv_nodes, &d->rv_nodes_cap, d->nrv_nodes + n, sizeof *d->rv_nodes))
        return GPUSCHED_ENOMEM;
    d->rv_job[d->nrv] = id;
    d->rv_time[d->nrv] = time;
    d->rv_level[d->nrv] = level;
    d->rv_dom[d->nrv] = dom;
    d->rv_off[d->nrv] = d->nrv_nodes;
    memcpy(d->rv_nodes + d->nrv_nodes, nodes, (size_t)n * sizeof *nodes);
    d->nrv_nodes += n;
    d->nrv++;
    d->rv_off[d->nrv] = d->nrv_nodes;
    return 0;
}

int gs_sd_grow_waits(gpusched_sched_decisions *d, uint32_t need)
{
    return gs_grow(&d->alloc, (void **)&d->waits, &d->waits_cap, need, sizeof *d->waits) ? GPUSCHED_ENOMEM : 0;
}

int gs_sd_add_template(gpusched_sched_decisions *d, const gpusched_sched_wait *w, uint32_t msg)
{
    if (gs_grow(&d->alloc, (void **)&d->tmpl, &d->tmpl_cap, d->ntmpl + 1, sizeof *d->tmpl))
        return GPUSCHED_ENOMEM;
    gs_dwtmpl *t = &d->tmpl[d->ntmpl++];
    t->w = *w;
    t->w.job_id = 0;
    t->w.seq = 0;
    t->w.requested = 0;
    t->msg = msg;
    return 0;
}

void gs_sd_wait_get(const gpusched_sched_decisions *d, uint32_t index, gpusched_sched_wait *w)
{
    const gs_dwait *c = &d->waits[index];
    *w = d->tmpl[c->tmpl].w;
    w->job_id = c->job_id;
    w->requested = c->requested;
    w->seq = c->seq;
}

uint32_t gs_sd_pool_add(gpusched_sched_decisions *d, const char *text)
{
    size_t n = strlen(text) + 1;
    if (d->pool_len + n > UINT32_MAX / 2)
        return UINT32_MAX;
    if (gs_grow(&d->alloc, (void **)&d->pool, &d->pool_cap, d->pool_len + (uint32_t)n, 1))
        return UINT32_MAX;
    uint32_t off = d->pool_len;
    memcpy(d->pool + off, text, n);
    d->pool_len += (uint32_t)n;
    return off;
}

GPUSCHED_API int gpusched_sched_decisions_quiet(const gpusched_sched_decisions *d)
{
    return d ? d->quiet : 0;
}

GPUSCHED_API int gpusched_sched_decisions_starts(const gpusched_sched_decisions *d, const uint64_t **ids,
                                                 uint32_t *n)
{
    if (!d || !ids || !n)
        return GPUSCHED_EINVAL;
    *ids = d->start_ids;
    *n = d->nstarts;
    return 0;
}

GPUSCHED_API int gpusched_sched_decisions_start(const gpusched_sched_decisions *d, uint32_t index, uint64_t *job_id,
                                                uint32_t *seq, const uint32_t **nodes, const uint64_t **masks,
                                                uint32_t *n)
{
    if (!d || !nodes || !masks || !n)
        return GPUSCHED_EINVAL;
    if (index >= d->nstarts)
        return GPUSCHED_ERANGE;
    if (job_id)
        *job_id = d->start_ids[index];
    if (seq)
        *seq = d->start_seq[index];
    *nodes = d->start_nodes + d->start_off[index];
    *masks = d->start_masks + d->start_off[index];
    *n = d->start_off[index + 1] - d->start_off[index];
    return 0;
}

GPUSCHED_API int gpusched_sched_decisions_evictions(const gpusched_sched_decisions *d, const uint64_t **victims,
                                                    const uint64_t **for_jobs, uint32_t *n)
{
    if (!d || !victims || !for_jobs || !n)
        return GPUSCHED_EINVAL;
    *victims = d->ev_victims;
    *for_jobs = d->ev_for;
    *n = d->nev;
    return 0;
}

GPUSCHED_API uint32_t gpusched_sched_decisions_reservation_count(const gpusched_sched_decisions *d)
{
    return d ? d->nrv : 0;
}

GPUSCHED_API int gpusched_sched_decisions_reservation(const gpusched_sched_decisions *d, uint32_t index,
                                                      uint64_t *job_id, int64_t *time, uint32_t *level,
                                                      uint32_t *domain, const uint32_t **nodes, uint32_t *n)
{
    if (!d)
        return GPUSCHED_EINVAL;
    if (index >= d->nrv)
        return GPUSCHED_ERANGE;
    if (job_id)
        *job_id = d->rv_job[index];
    if (time)
        *time = d->rv_time[index];
    if (level)
        *level = d->rv_level[index];
    if (domain)
        *domain = d->rv_dom[index];
    if (nodes)
        *nodes = d->rv_nodes + d->rv_off[index];
    if (n)
        *n = d->rv_off[index + 1] - d->rv_off[index];
    return 0;
}

GPUSCHED_API uint32_t gpusched_sched_decisions_wait_count(const gpusched_sched_decisions *d)
{
    return d ? d->nwaits : 0;
}

GPUSCHED_API int gpusched_sched_decisions_wait(const gpusched_sched_decisions *d, uint32_t index,
                                               gpusched_sched_wait *wait)
{
    if (!d || !wait || wait->size < offsetof(gpusched_sched_wait, share))
        return GPUSCHED_EINVAL;
    if (index >= d->nwaits)
        return GPUSCHED_ERANGE;
    uint32_t size = wait->size < sizeof *wait ? wait->size : (uint32_t)sizeof *wait;
    gpusched_sched_wait w;
    gs_sd_wait_get(d, index, &w);
    w.size = size;
    memcpy(wait, &w, size);
    return 0;
}

GPUSCHED_API const char *gpusched_sched_decisions_wait_message(gpusched_sched_decisions *d, uint32_t index)
{
    if (!d || index >= d->nwaits)
        return "";
    gpusched_sched_wait whole;
    gs_sd_wait_get(d, index, &whole);
    const gpusched_sched_wait *w = &whole;
    const uint32_t msg = d->tmpl[d->waits[index].tmpl].msg;
    const char *text = "";
    char asked[96];
    if (msg != UINT32_MAX && msg != GS_SD_MSG_TOO_FEW_FREE)
        text = d->pool + msg;
    if (msg == GS_SD_MSG_TOO_FEW_FREE) {
        /* Written here, not by the cycle: most waiting gangs are never asked
         * for their message (doc/sched.md, "Work per pending gang"). */
        snprintf(asked, sizeof asked, "%llu GPUs asked, %llu usable free in the cluster",
                 (unsigned long long)w->requested, (unsigned long long)w->free_gpus);
        text = asked;
    }
    char *m = d->msg;
    size_t cap = sizeof d->msg;
    switch (w->reason) {
    case GPUSCHED_SCHED_WAIT_QUOTA:
        snprintf(m, cap, "over quota: queue %s holds %llu and may hold %llu now; %llu asked", text,
                 (unsigned long long)w->used, (unsigned long long)w->limit, (unsigned long long)w->requested);
        break;
    case GPUSCHED_SCHED_WAIT_FIT:
        if (w->time >= 0)
            snprintf(m, cap, "does not fit now (%llu GPUs free): %s; reserved from %lld", (unsigned long long)w->free_gpus,
                     text, (long long)w->time);
        else
            snprintf(m, cap, "does not fit now (%llu GPUs free): %s", (unsigned long long)w->free_gpus, text);
        break;
    case GPUSCHED_SCHED_WAIT_RESERVATION:
        snprintf(m, cap, "behind a reservation: it fits only on nodes reserved for job %llu from %lld, and is not "
                 "expected to end by then", (unsigned long long)w->blocking_job, (long long)w->time);
        break;
    case GPUSCHED_SCHED_WAIT_SHARE:
        snprintf(m, cap, "blocked by a higher share: %llu GPUs were free at the cycle's start, %llu asked, and gangs "
                 "before it (queues of lower share or higher priority) took %llu; its queue's share is %.4g",
                 (unsigned long long)w->free_gpus, (unsigned long long)w->requested,
                 (unsigned long long)w->taken_gpus, w->share);
        break;
    case GPUSCHED_SCHED_WAIT_ORDER:
        snprintf(m, cap, "strict order: job %llu before it waits", (unsigned long long)w->blocking_job);
        break;
    default:
        snprintf(m, cap, "not waiting");
    }
    return m;
}
