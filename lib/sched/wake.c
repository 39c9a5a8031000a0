/* The wake: the earliest time a cycle with nothing new is not quiet
 * (doc/sched.md, "Quiet cycles"). Two of its terms are minima over gangs
 * that change one at a time: the end of a victim's protection over the
 * running gangs, and the starvation guard's age over the pending ones.
 * A pass over every gang after each cycle was 5% of the simulator's wall
 * time, so each term keeps its gangs in order with lazy deletion:
 *
 * - runs: the victims in the order they started. Starts happen at the
 *   cycle's time, which never goes back, so appending keeps the order;
 * - pending: a min-heap by submit time (submits come in any order).
 *
 * An entry is valid while its gang's wake_gen is the entry's (every push
 * takes a new generation, and a gang is in one state at a time); a query
 * drops the invalid entries and those whose time has passed from the
 * front. Times are the key plus a parameter, so a parameter longer than
 * the shortest one entries were dropped at since the last rebuild builds
 * the term again from the gangs (a parameter change, rare). Room is kept at submit for twice the gangs, and a full
 * array drops its invalid entries: a push never allocates. */
#include "heap.h"
#include "sched-internal.h"

static bool key_after(const gs_wake_ent *a, const gs_wake_ent *b, void *unused)
{
    (void)unused;
    return a->key > b->key;
}

/* A max-heap in `key_after` order is a min-heap by key: its root is the
 * entry every other one is after. */
GS_HEAP_DEFINE(wake_min, gs_wake_ent, void *, key_after)

static bool key_before(const gs_wake_ent *a, const gs_wake_ent *b, void *unused)
{
    (void)unused;
    return a->key < b->key;
}

GS_HEAP_DEFINE(wake_by_key, gs_wake_ent, void *, key_before)

static bool run_valid(const gpusched_sched *s, const gs_wake_ent *e)
{
    const gs_sj *j = &s->j[e->slot];
    return j->state == GS_SJ_RUNNING && j->victim && j->wake_gen == e->gen;
}

static bool pend_valid(const gpusched_sched *s, const gs_wake_ent *e)
{
    const gs_sj *j = &s->j[e->slot];
    return j->state == GS_SJ_PENDING && j->wake_gen == e->gen;
}

int gs_sd_wake_reserve(gpusched_sched *s, uint32_t jobs)
{
    gs_wake *w = &s->wk;
    const uint32_t want = 2 * jobs + 1;
    if (gs_grow(&s->alloc, (void **)&w->run, &w->run_cap, want, sizeof *w->run) ||
        gs_grow(&s->alloc, (void **)&w->age, &w->age_cap, want, sizeof *w->age))
        return GPUSCHED_ENOMEM;
    return 0;
}

/* Keeps the valid runs, in order, from index 0. */
static void runs_compact(gpusched_sched *s)
{
    gs_wake *w = &s->wk;
    uint32_t n = 0;
    for (uint32_t i = w->run_head; i < w->run_n; i++)
        if (run_valid(s, &w->run[i]))
            w->run[n++] = w->run[i];
    w->run_head = 0;
    w->run_n = n;
}

static void pend_compact(gpusched_sched *s)
{
    gs_wake *w = &s->wk;
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->age_n; i++)
        if (pend_valid(s, &w->age[i]))
            w->age[n++] = w->age[i];
    w->age_n = n;
    for (uint32_t i = n / 2; i-- > 0;)
        wake_min_sift(w->age, n, i, NULL);
}

void gs_sd_wake_run(gpusched_sched *s, uint32_t slot)
{
    gs_wake *w = &s->wk;
    gs_sj *j = &s->j[slot];
    j->wake_gen = ++w->gen;
    if (!j->victim)
        return;
    if (w->run_n == w->run_cap)
        runs_compact(s); /* room for twice the gangs: at least half is free now */
    w->run[w->run_n++] = (gs_wake_ent){.key = j->start, .gen = j->wake_gen, .slot = slot};
}

void gs_sd_wake_pend(gpusched_sched *s, uint32_t slot)
{
    gs_wake *w = &s->wk;
    gs_sj *j = &s->j[slot];
    j->wake_gen = ++w->gen;
    if (w->age_n == w->age_cap)
        pend_compact(s);
    w->age[w->age_n] = (gs_wake_ent){.key = j->submit, .gen = j->wake_gen, .slot = slot};
    wake_min_up(w->age, w->age_n++, NULL);
}

/* Every running victim again, in start order (a protection raised after
 * entries were dropped at a shorter one). */
static void runs_rebuild(gpusched_sched *s)
{
    gs_wake *w = &s->wk;
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nrunning; i++) {
        const gs_sj *j = &s->j[s->running[i]];
        if (j->victim)
            w->run[n++] = (gs_wake_ent){.key = j->start, .gen = j->wake_gen, .slot = s->running[i]};
    }
    wake_by_key_sort(w->run, n, NULL);
    w->run_head = 0;
    w->run_n = n;
}

static void pend_rebuild(gpusched_sched *s)
{
    gs_wake *w = &s->wk;
    uint32_t n = 0;
    for (uint32_t slot = 0; slot < s->nj; slot++) {
        const gs_sj *j = &s->j[slot];
        if (j->state == GS_SJ_PENDING)
            w->age[n++] = (gs_wake_ent){.key = j->submit, .gen = j->wake_gen, .slot = slot};
    }
    w->age_n = n;
    for (uint32_t i = n / 2; i-- > 0;)
        wake_min_sift(w->age, n, i, NULL);
}

/* The first end of a victim's protection after now, or INT64_MAX. */
static int64_t protection_wake(gpusched_sched *s, int64_t now)
{
    gs_wake *w = &s->wk;
    const int64_t prot = gs_sd_protection(s);
    if (prot > w->run_prot) {
        runs_rebuild(s);
        w->run_prot = INT64_MAX;
    }
    while (w->run_head < w->run_n) {
        const gs_wake_ent *e = &w->run[w->run_head];
        if (run_valid(s, e)) {
            if (e->key + prot > now)
                return e->key + prot;
            w->run_prot = prot < w->run_prot ? prot : w->run_prot;
        }
        w->run_head++;
    }
    return INT64_MAX;
}

/* The first time after now a pending gang passes the age limit, or
 * INT64_MAX. Old once submit < now - age_limit (run_first); both within
 * 2^53, so the sum does not overflow. */
static int64_t age_wake(gpusched_sched *s, int64_t now)
{
    gs_wake *w = &s->wk;
    if (s->age_limit > w->age_lim) {
        pend_rebuild(s);
        w->age_lim = INT64_MAX;
    }
    while (w->age_n) {
        const gs_wake_ent *e = &w->age[0];
        if (pend_valid(s, e)) {
            if (e->key + s->age_limit + 1 > now)
                return e->key + s->age_limit + 1;
            w->age_lim = s->age_limit < w->age_lim ? s->age_limit : w->age_lim;
        }
        w->age[0] = w->age[--w->age_n];
        wake_min_sift(w->age, w->age_n, 0, NULL);
    }
    return INT64_MAX;
}

/* Reservations lend the running jobs by expected end, a job expected to
 * end by now as ending just after now (at now + 1), with every job ending
 * by the reservation's time: when now + 1 reaches one more expected end,
 * what is lent may change, the reservations move, and gangs that waited
 * behind them may start (as well as when such a job becomes overdue,
 * later). */
static int64_t resv_wake(const gpusched_sched *s, int64_t now)
{
    uint32_t k = gs_sj_end_next(s, GS_SJ_NONE);
    while (k != GS_SJ_NONE && s->endn[k].end <= now + 1)
        k = gs_sj_end_next(s, k);
    return k != GS_SJ_NONE ? s->endn[k].end - 1 : INT64_MAX;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int64_t gs_sd_wake_next(gpusched_sched *s, int64_t now)
{
    if (!s->npending)
        return INT64_MAX; /* nothing that could start */
    int64_t wake = INT64_MAX;
    if (s->preempt && s->npre)
        wake = protection_wake(s, now);
    if (s->nresv)
        wake = min64(wake, resv_wake(s, now));
    if (s->age_limit)
        wake = min64(wake, age_wake(s, now));
    return wake;
}

/* The same time by a pass over every gang: what the check compares. */
static int64_t wake_scan(const gpusched_sched *s, int64_t now)
{
    int64_t wake = INT64_MAX;
    if (!s->npending)
        return wake;
    if (s->preempt && s->npre)
        for (uint32_t i = 0; i < s->nrunning; i++) {
            const gs_sj *j = &s->j[s->running[i]];
            const int64_t t = j->start + gs_sd_protection(s);
            if (j->victim && t > now && t < wake)
                wake = t;
        }
    if (s->nresv)
        wake = min64(wake, resv_wake(s, now));
    if (s->age_limit)
        for (uint32_t q = 0; q < s->nq; q++)
            for (uint32_t k = 0; k < s->q[q].npend; k++) {
                const int64_t t = s->j[s->q[q].pend[k]].submit + s->age_limit + 1;
                if (t > now && t < wake)
                    wake = t;
            }
    return wake;
}

int gs_sd_wake_check(gpusched_sched *s)
{
    if (s->last_now == INT64_MIN)
        return 0;
    const int64_t kept = gs_sd_wake_next(s, s->last_now), scan = wake_scan(s, s->last_now);
    if (kept != scan)
        return gs_error(&s->err, GPUSCHED_ECORRUPT, "check: the next wake is %lld, a pass over the gangs says %lld",
                        (long long)kept, (long long)scan);
    return 0;
}
