/* Reservations over time: the earliest time a blocked gang fits, found by
 * lending the running jobs to a what-if transaction in the order of their
 * expected ends (jobs.c keeps them in order) (galloping, then bisection:
 * fitting is monotone in the GPUs freed), and the nodes it would use then (doc/sched.md,
 * "Reservations"). Nothing of the cluster changes: the transaction rolls
 * back. */
#include <string.h>

#include "cluster/txn.h"
#include "sched-internal.h"

/* The first ends in order, copied to s->end_slot as far as a search has
 * gone: its cost follows the answer, not the number of running jobs. */
typedef struct ends_prefix {
    uint32_t n;                 /* s->end_slot[0, n) are the first n */
    uint32_t last;              /* the slot of the n-th, GS_SJ_NONE before the first */
} ends_prefix;

static void ends_upto(gpusched_sched *s, ends_prefix *p, uint32_t to)
{
    while (p->n < to) {
        p->last = gs_sj_end_next(s, p->last);
        s->end_slot[p->n++] = p->last;
    }
}

static int lend_range(gpusched_sched *s, ends_prefix *p, uint32_t from, uint32_t to)
{
    ends_upto(s, p, to);
    for (uint32_t i = from; i < to; i++) {
        gs_hold *h = gs_cluster_job_find(s->c, s->j[s->end_slot[i]].id);
        int rc = h ? gs_txn_lend_job(s->c, h) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* 1 if it fits with what is lent now, 0 if not, or an error. */
static int probe(gpusched_sched *s, const gs_pl_req *r)
{
    int rc = gs_pl_feasible(s->p, r, s->res);
    return rc == 0 ? 1 : rc == GPUSCHED_ENOSPC ? 0 : rc;
}

/* probe() by the placement itself, its nodes in s->res when it fits: for
 * the count expected to be the answer, where a yes would be followed by
 * the same search to find the nodes. */
static int probe_placing(gpusched_sched *s, const gs_pl_req *r)
{
    int rc = gs_pl_place_staged(s->p, r, s->res, GS_PL_QUIET);
    return rc == 0 ? 1 : rc == GPUSCHED_ENOSPC ? 0 : rc;
}

/* probe() with ends [0, lo) lent, 0 without one when fewer GPUs are free
 * than the gang needs. */
static int probe_if_enough(gpusched_sched *s, const gs_pl_req *r, uint64_t need)
{
    return s->c->root_free_gpus >= need ? probe(s, r) : 0;
}

/* The count of ends that lent job slot `last` (expected to end at
 * `end`) in the current order, or, that job gone, the ends up to `end`;
 * 0 without one. Walks only the prefix a search lends anyway. */
static uint32_t hint_count(gpusched_sched *s, ends_prefix *p, uint32_t last, int64_t end)
{
    uint32_t n = 0;
    while (last != GS_SJ_NONE && n < s->nends) {
        ends_upto(s, p, n + 1);
        const uint32_t slot = s->end_slot[n];
        if (s->endn[slot].end > end)
            break;
        n++;
        if (slot == last)
            break;
    }
    return n;
}

/* For a gang whose only constraint is slices that are whole domains
 * (wholedoms.c), the count of ends after which K domains are wholly free,
 * counted on the aggregates and the ends' GPUs without lending anyone: a
 * hint, which the search probes with the count before it (the least count
 * is the same whatever the probes, fitting being monotone in the ends
 * lent). 0 when it fits now or never; UINT32_MAX when the gang is not of
 * that kind. */
static uint32_t whole_domains_hint(gpusched_sched *s, const gs_pl_req *r, ends_prefix *p)
{
    gs_pl_whole w;
    if (!gs_pl_whole_begin(s->c, r, &s->alloc, &s->dom_free, &s->dom_free_cap, &w))
        return UINT32_MAX;
    if (w.whole >= w.want)
        return 0;
    for (uint32_t n = 0; n < s->nends; n++) {
        ends_upto(s, p, n + 1);
        const gs_hold *h = gs_cluster_job_find(s->c, s->j[s->end_slot[n]].id);
        if (h && gs_pl_whole_add(&w, h))
            return n + 1;
    }
    return 0;
}

/* The time of a reservation that waits for the end of job slot k (a job
 * overdue is expected to end just after now). */
static int64_t resv_time(const gpusched_sched *s, uint32_t k, int64_t now)
{
    const int64_t end = s->endn[k].end;
    return end > now ? end : now + 1;
}

/* The reservation of a gang of whole domains (wholedoms.c) without a
 * search or a placement, where the count of wholly free domains is exact:
 * no node down, no GPU fraction among the jobs it counts, no reservation
 * of the gang's own in the cluster, whole nodes or any GPUs. The least
 * count of ends after which K domains are wholly free is the answer, and
 * the gang's nodes are those of K of the domains wholly free at its time
 * (every job ending by then counted), chosen by gs_pl_whole_choose(): a
 * function of the state of that time alone, as a search's placement is,
 * though not always the same K domains the placer would take on it.
 * Nothing is lent. 1 with the nodes in s->wh_nodes (ascending) and
 * *count set; 0 when the gang is not such a one or fits now (the search
 * decides); or an error. */
static int whole_reserve(gpusched_sched *s, const gs_pl_req *r, int64_t now, uint32_t *count)
{
    const struct gpusched_cluster *c = s->c;
    if (!s->whole || !gs_pl_whole_exact(c, r))
        return 0;
    gs_pl_whole w;
    if (!gs_pl_whole_begin(c, r, &s->alloc, &s->dom_free, &s->dom_free_cap, &w) || w.whole >= w.want)
        return 0;
    ends_prefix p = {0, GS_SJ_NONE};
    uint32_t k = 0;
    int64_t until = 0;
    for (uint32_t n = 0; n < s->nends; n++) {
        ends_upto(s, &p, n + 1);
        const uint32_t x = s->end_slot[n];
        if (k && s->endn[x].end > until)
            break; /* past every job ending by the time found */
        const gs_hold *h = gs_cluster_job_find(c, s->j[x].id);
        if (h && gs_hold_podx(c, h))
            return 0;
        if (h && gs_pl_whole_add(&w, h) && !k) {
            k = n + 1;
            until = resv_time(s, x, now);
        }
    }
    if (!k)
        return 0;
    const struct gpusched_topo *t = c->topo;
    if (gs_grow(&s->alloc, (void **)&s->wh_doms, &s->wh_doms_cap, (uint32_t)w.want, sizeof *s->wh_doms))
        return GPUSCHED_ENOMEM;
    int rc = gs_pl_whole_choose(&w, &s->alloc, &s->wh_cnt, &s->wh_cnt_cap, s->wh_doms);
    if (rc)
        return rc == GPUSCHED_ENOSPC ? 0 : rc;
    uint32_t nodes = 0;
    for (uint32_t i = 0; i < w.want; i++)
        nodes += t->dom_start[w.level][s->wh_doms[i] + 1] - t->dom_start[w.level][s->wh_doms[i]];
    if (gs_grow(&s->alloc, (void **)&s->wh_nodes, &s->wh_nodes_cap, nodes, sizeof *s->wh_nodes))
        return GPUSCHED_ENOMEM;
    s->nwh_nodes = 0;
    for (uint32_t i = 0; i < w.want; i++)
        for (uint32_t v = t->dom_start[w.level][s->wh_doms[i]]; v < t->dom_start[w.level][s->wh_doms[i] + 1]; v++)
            s->wh_nodes[s->nwh_nodes++] = v;
    *count = k;
    return 1;
}

/* Whether a job after slot k in the order of ends is expected to end by
 * the time of a reservation that waits for k: the reservation's nodes are
 * then placed with it lent too (gs_sd_reserve), so a placement made to
 * settle the count would be thrown away. */
static int ends_with(const gpusched_sched *s, uint32_t k, int64_t now)
{
    const uint32_t x = gs_sj_end_next(s, k);
    return x != GS_SJ_NONE && s->endn[x].end <= resv_time(s, k, now);
}

/* The earliest count of ends after which it fits: *count, with those
 * ends lent, or ENOSPC. Fitting is monotone in the ends lent, so the least
 * count is unique and any order of probes that brackets it finds the same
 * one: the search probes the count of `hint` and the one before first (a
 * gang reserved again after an event usually fits after the same job as
 * before: two probes instead of a dozen), then gallops and bisects. When
 * the probe that settles the count placed the gang (*placed = 1), its
 * nodes are in s->res. */
static int search(gpusched_sched *s, const gs_pl_req *r, uint32_t last, int64_t last_end, int64_t now,
                  uint32_t *count, int *placed)
{
    ends_prefix p = {0, GS_SJ_NONE};
    uint32_t hint = s->quick ? whole_domains_hint(s, r, &p) : UINT32_MAX;
    if (hint == UINT32_MAX)
        hint = hint_count(s, &p, last, last_end);
    uint32_t lo = 0, hi;
    /* Enough free GPUs is necessary: lend without probing until the
     * cluster counts them (a job's own count would not do: lending a
     * fraction frees its GPU only with the last of its sharers). Pods of
     * GPU fractions may go to shared GPUs: no count for them. */
    const uint64_t need = !r->pods_path ? r->in.gpus : r->shape.milli ? 0 : r->gpus;
    int rc = 0;
    while (lo < s->nends && s->c->root_free_gpus < need)
        if ((rc = lend_range(s, &p, lo, lo + 1)))
            return rc;
        else
            lo++;
    /* Invariant from here: ends [0, lo) lent, and it does not fit with
     * them (or was not probed, where noted). */
    if (hint > lo + 1) {
        uint32_t mark = gs_txn_mark(s->c);
        if ((rc = lend_range(s, &p, lo, hint - 1)) || (rc = probe(s, r)) < 0)
            return rc;
        if (rc == 1) {
            /* At most hint - 1: probe lo, then bisect. */
            gs_txn_undo_to(s->c, mark);
            hi = hint - 1;
            if ((rc = probe_if_enough(s, r, need)) == 0)
                goto bisect;
            if (rc == 1)
                *count = lo;
            return rc < 0 ? rc : 0;
        }
        lo = hint - 1;
    } else if ((rc = probe_if_enough(s, r, need)) != 0) {
        if (rc == 1)
            *count = lo;
        return rc < 0 ? rc : 0;
    }
    uint32_t step = 1;
    for (;;) {
        if (lo >= s->nends)
            return GPUSCHED_ENOSPC;
        uint32_t mark = gs_txn_mark(s->c), to = lo + step < s->nends ? lo + step : s->nends;
        /* One end more than a count that does not fit: a yes settles it. */
        const int last_step = to == lo + 1;
        if ((rc = lend_range(s, &p, lo, to)))
            return rc;
        /* A yes settles it with the placement itself, unless more jobs end
         * by the same time (40% of the simulator's reservations): a
         * yes-or-no probe then, the nodes are placed with those lent. */
        const int placing = last_step && !ends_with(s, s->end_slot[to - 1], now);
        if ((rc = placing ? probe_placing(s, r) : probe(s, r)) < 0)
            return rc;
        if (rc == 1 && last_step) {
            *count = to;
            *placed = placing;
            return 0;
        }
        if (rc == 1) {
            hi = to;
            gs_txn_undo_to(s->c, mark);
            break;
        }
        lo = to;
        step *= 2;
    }
bisect:
    /* Not with lo lent (and lent now), yes with hi. */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2, mark = gs_txn_mark(s->c);
        if ((rc = lend_range(s, &p, lo, mid)) || (rc = probe(s, r)) < 0)
            return rc;
        if (rc == 1) {
            hi = mid;
            gs_txn_undo_to(s->c, mark);
        } else {
            lo = mid;
        }
    }
    if ((rc = lend_range(s, &p, lo, hi)))
        return rc;
    *count = hi;
    return 0;
}

/* The deepest level with one domain holding nodes first..last (contiguous
 * ranges), or GPUSCHED_NONE. */
static void smallest_domain(const gpusched_sched *s, uint32_t first, uint32_t last, uint32_t *level, uint32_t *dom)
{
    const struct gpusched_topo *t = s->c->topo;
    for (uint32_t l = t->nlevels; l-- > 0;) {
        uint32_t d = gs_topo_node_domain(t, first, l);
        if (d == gs_topo_node_domain(t, last, l)) {
            *level = l;
            *dom = d;
            return;
        }
    }
    *level = GPUSCHED_NONE;
    *dom = 0;
}

/* Appends reservation v's fields, its nodes taken from `nodes`, and
 * counts them in the cycle's reservations; 0 or GPUSCHED_ENOMEM. */
static int append(gpusched_sched *s, const gs_resv *v, const uint32_t *nodes)
{
    if (gs_grow(&s->alloc, (void **)&s->rnodes, &s->rnodes_cap, s->nrnodes + v->n, sizeof *s->rnodes))
        return GPUSCHED_ENOMEM;
    gs_resv *r = &s->resv[s->nresv++];
    *r = *v;
    r->off = s->nrnodes;
    memcpy(s->rnodes + s->nrnodes, nodes, (size_t)v->n * sizeof *nodes);
    s->nrnodes += v->n;
    /* Each reservation's own fingerprint is computed once, by its search:
     * a kept one is appended again every cycle. */
    if (!r->nodes_fp)
        r->nodes_fp = gs_sd_nodes_fp(0, nodes, v->n) | 1;
    s->rfp = gs_sd_mix64(s->rfp, r->nodes_fp);
    if (r->time < s->resv_min_time)
        s->resv_min_time = r->time;
    return 0;
}

/* whole_reserve(), and with GPUSCHED_SCHED_KEEP_CHECK=1 a search first
 * (undone), which must find the same count when whole_reserve() decides:
 * GPUSCHED_ECORRUPT otherwise. */
static int whole_reserve_checked(gpusched_sched *s, uint32_t slot, const gs_pl_req *r, int64_t now,
                                 uint32_t *count)
{
    if (!s->keep_check)
        return whole_reserve(s, r, now, count);
    const uint32_t mark = gs_txn_mark(s->c);
    uint32_t searched = 0;
    int placed = 0;
    const int found = search(s, r, GS_SJ_NONE, 0, now, &searched, &placed);
    gs_txn_undo_to(s->c, mark);
    if (found != 0 && found != GPUSCHED_ENOSPC)
        return found;
    const int rc = whole_reserve(s, r, now, count);
    if (rc != 1)
        return rc;
    /* The search's count, and nodes free just before the time. */
    const gs_resv v = {.slot = slot, .time = resv_time(s, s->end_slot[*count - 1], now), .n = s->nwh_nodes};
    return found || searched != *count || !gs_sd_kept_nodes_free(s, &v, s->wh_nodes) ? GPUSCHED_ECORRUPT : 1;
}

/* The search for gang `slot`'s reservation, appended when found. */
static int find(gpusched_sched *s, uint32_t slot, int64_t now)
{
    gs_sj *j = &s->j[slot];
    int rc;
    /* Earlier reservations' nodes are avoided for good: conservative, it
     * never delays them (doc/sched.md). */
    gpusched_place_request q = j->req;
    if ((rc = gs_sd_avoid_reserved(s, j, &q)))
        return rc;
    gpusched_job job = GPUSCHED_JOB_INIT;
    job.id = j->id;
    q.job = &job;
    gs_pl_req r;
    if ((rc = gs_pl_req_load(s->p, &q, &r)))
        return rc;
    if ((rc = gs_txn_begin(s->c)))
        return rc;
    uint32_t count = 0;
    int placed = 0;
    const int whole = rc = whole_reserve_checked(s, slot, &r, now, &count);
    if (rc == 1) {
        placed = 1;
        rc = 0;
    } else if (rc == 0) {
        rc = search(s, &r, s->quick ? j->resv_last : GS_SJ_NONE, j->resv_end, now, &count, &placed);
    }
    if (rc == 0 && count && !placed) {
        /* Every job expected to end by the reservation's time is gone then,
         * not only the least count in the order of ends (which stops among
         * jobs ending together, by id): the nodes are chosen on the state
         * of that time. A gang that starts later in the cycle and is
         * expected to end by then may use the reserved nodes, and the next
         * cycle lends it here; without these ends the next cycle's
         * reservation could lie elsewhere, and a gang that waited behind
         * this one could start with no event between. */
        const uint32_t k = s->end_slot[count - 1];
        const int64_t until = resv_time(s, k, now);
        for (uint32_t x = gs_sj_end_next(s, k); rc == 0 && x != GS_SJ_NONE && s->endn[x].end <= until;
             x = gs_sj_end_next(s, x)) {
            gs_hold *h = gs_cluster_job_find(s->c, s->j[x].id);
            if (h) {
                rc = gs_txn_lend_job(s->c, h);
                placed = 0;
            }
        }
    }
    if (rc == 0 && !placed)
        rc = gs_pl_place_staged(s->p, &r, s->res, 0);
    gs_txn_rollback(s->c);
    if (rc)
        return rc;
    const uint32_t *nodes = s->wh_nodes;
    const uint64_t *masks;
    uint32_t n = s->nwh_nodes;
    if (whole != 1)
        gpusched_place_result_nodes(s->res, &nodes, &masks, &n);
    const gs_resv v = {
        .slot = slot,
        .time = count ? resv_time(s, s->end_slot[count - 1], now) : now,
        .n = n,
        .inc = j->inc,
        .fp = s->rfp,
        .wl_epoch = s->p->wl_epoch,
        .seq = s->nchg,
    };
    if ((rc = append(s, &v, nodes)))
        return rc;
    j->resv_last = count ? s->end_slot[count - 1] : GS_SJ_NONE;
    j->resv_end = count ? s->endn[j->resv_last].end : 0;
    return 0;
}

/* GPUSCHED_SCHED_KEEP_CHECK=1: a search made anyway must find the kept
 * reservation's time (its nodes may differ: kept.c), and its nodes must
 * be free enough then; 0 or GPUSCHED_ECORRUPT, the search's reservation
 * dropped. */
static int check_kept(gpusched_sched *s, uint32_t slot, int64_t now, const gs_resv *kept)
{
    const uint32_t nresv = s->nresv, nrnodes = s->nrnodes;
    const uint64_t rfp = s->rfp;
    const int64_t min_time = s->resv_min_time;
    int rc = find(s, slot, now);
    if (rc == 0 && (s->resv[nresv].time != kept->time || !gs_sd_kept_nodes_free(s, kept, s->krnodes + kept->off)))
        rc = GPUSCHED_ECORRUPT;
    if (rc == GPUSCHED_ENOSPC)
        rc = GPUSCHED_ECORRUPT;
    s->nresv = nresv, s->nrnodes = nrnodes, s->rfp = rfp, s->resv_min_time = min_time;
    return rc;
}

int gs_sd_reserve(gpusched_sched *s, uint32_t slot, int64_t now)
{
    if (gs_grow(&s->alloc, (void **)&s->resv, &s->resv_cap, s->nresv + 1, sizeof *s->resv))
        return GPUSCHED_ENOMEM;
    /* The last cycle's reservation, while nothing could move it. */
    const gs_resv *kept = gs_sd_kept(s, slot, now);
    if (!kept)
        return find(s, slot, now);
    int rc = s->keep_check ? check_kept(s, slot, now, kept) : 0;
    if (rc || (rc = append(s, kept, s->krnodes + kept->off)))
        return rc;
    /* Every change so far is proved harmless on the state of now: the next
     * cycle looks only at what comes after. */
    s->resv[s->nresv - 1].seq = s->nchg;
    return 0;
}

void gs_sd_resv_domain(const gpusched_sched *s, const gs_resv *v, uint32_t *level, uint32_t *dom)
{
    smallest_domain(s, s->rnodes[v->off], s->rnodes[v->off + v->n - 1], level, dom);
}
