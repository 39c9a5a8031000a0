/* Quotas, borrowing and explanations against a reference model: random
 * queue trees, random gangs, job ends and cycles under every order; each
 * cycle's decisions are replayed in their evaluation order against a
 * from-scratch model of the quota rules (doc/sched.md, "Queues and
 * resources"), and after each cycle:
 *  - every start was admissible when it was made;
 *  - every quota wait names the queue, usage and limit the model finds;
 *  - every other wait passed quota;
 *  - no queue holds more than its subtree quota plus its borrowing limit
 *    (quotas are never exceeded except by declared borrowing; the root's
 *    limit is the cluster);
 *  - usage per queue equals the model's;
 *  - a gang said not to fit does not fit the cluster after the cycle, and a
 *    gang behind a reservation names a reservation of the cycle, with its
 *    time;
 *  - the scheduler's and the cluster's invariant checkers pass. */
#include "place-test.h"
#include "sched-test.h"

#define MAXQ 12
#define MAXJ 4096
#define UNL GPUSCHED_SCHED_UNLIMITED

typedef struct ref {
    uint32_t nq;
    uint32_t parent[MAXQ];
    uint64_t nominal[MAXQ], borrow[MAXQ], lend[MAXQ];
    bool leaf[MAXQ];
    /* Running jobs: queue and GPUs by id (gpus 0: not running). */
    uint32_t run_q[MAXJ], run_g[MAXJ];
    /* Every submitted gang's queue and GPUs by id. */
    uint32_t job_q[MAXJ], job_g[MAXJ];
} ref;

static bool under(const ref *m, uint32_t q, uint32_t anc)
{
    for (; q != UINT32_MAX; q = q ? m->parent[q] : UINT32_MAX)
        if (q == anc)
            return true;
    return false;
}

static uint64_t r_total(const ref *m, uint32_t q)
{
    uint64_t t = m->nominal[q];
    for (uint32_t c = 1; c < m->nq; c++)
        if (m->parent[c] == q)
            t += r_total(m, c);
    return t;
}

static uint64_t r_used(const ref *m, uint32_t q)
{
    uint64_t u = 0;
    for (uint32_t id = 0; id < MAXJ; id++)
        if (m->run_g[id] && under(m, m->run_q[id], q))
            u += m->run_g[id];
    return u;
}

static uint64_t r_guar(const ref *m, uint32_t q)
{
    uint64_t t = r_total(m, q);
    return t - (m->lend[q] < t ? m->lend[q] : t);
}

static uint64_t r_ent(const ref *m, uint32_t q)
{
    uint64_t below = 0;
    if (m->leaf[q])
        below = r_used(m, q);
    for (uint32_t c = 1; c < m->nq; c++)
        if (m->parent[c] == q)
            below += r_ent(m, c);
    uint64_t t = r_total(m, q);
    return below < t ? below : t;
}

/* 0 if admissible (nominal or borrowing), 1 with the deepest failing
 * queue, its usage and its limit. */
static int r_admit(const ref *m, uint32_t leaf, uint64_t g, uint32_t *fq, uint64_t *fused, uint64_t *flimit)
{
    uint32_t path[MAXQ], depth = 0;
    for (uint32_t q = leaf;; q = m->parent[q]) {
        path[depth++] = q;
        if (q == 0)
            break;
    }
    depth--;
    bool nominal = true;
    uint64_t ent = r_used(m, leaf) + g;
    if (ent > r_total(m, leaf))
        nominal = false;
    for (uint32_t k = 1; k < depth; k++)
        if (m->borrow[path[k]] != UNL && r_used(m, path[k]) + g > r_total(m, path[k]) + m->borrow[path[k]])
            nominal = false;
    for (uint32_t k = 1; k <= depth && nominal; k++) {
        uint64_t sum = 0;
        for (uint32_t c = 1; c < m->nq; c++)
            if (m->parent[c] == path[k])
                sum += c == path[k - 1] ? ent : r_ent(m, c);
        if (sum > r_total(m, path[k]))
            nominal = false;
        ent = sum;
    }
    if (nominal)
        return 0;
    uint64_t cap = r_total(m, 0);
    int over = 0;
    for (uint32_t k = depth + 1; k-- > 0;) {
        uint32_t q = path[k];
        if (k < depth) {
            uint64_t sib = 0;
            for (uint32_t c = 1; c < m->nq; c++)
                if (m->parent[c] == path[k + 1] && c != q) {
                    uint64_t u = r_used(m, c), gu = r_guar(m, c);
                    sib += u > gu ? u : gu;
                }
            uint64_t avail = cap > sib ? cap - sib : 0;
            uint64_t lim = m->borrow[q] == UNL ? UNL : r_total(m, q) + m->borrow[q];
            cap = avail < lim ? avail : lim;
        }
        if (r_used(m, q) + g > cap) {
            *fq = q, *fused = r_used(m, q), *flimit = cap;
            over = 1;
        }
    }
    return over;
}

/* A random tree: 1-3 interior queues under the root, leaves under them. */
static void random_tree(pt_rng *r, st_env *e, ref *m)
{
    memset(m, 0, sizeof *m);
    m->nq = 1;
    m->lend[0] = m->borrow[0] = UNL;
    uint32_t ninner = pt_below(r, 3);
    uint32_t parents[4] = {0};
    for (uint32_t i = 0; i < ninner; i++) {
        char name[16];
        snprintf(name, sizeof name, "org%u", i);
        parents[i + 1] = st_queue(e, name, 0, 0);
        m->parent[m->nq++] = 0;
    }
    uint32_t nleaves = 2 + pt_below(r, 4);
    for (uint32_t i = 0; i < nleaves; i++) {
        char name[16];
        snprintf(name, sizeof name, "leaf%u", i);
        uint32_t p = parents[pt_below(r, ninner + 1)];
        uint32_t q = st_queue(e, name, p, 0);
        m->parent[q] = p;
        m->leaf[q] = true;
        m->nq = q + 1;
    }
    for (uint32_t q = 0; q < m->nq; q++) {
        m->nominal[q] = q == 0 || !m->leaf[q] ? (pt_below(r, 3) == 0 ? pt_below(r, 16) : 0) : pt_below(r, 40);
        m->borrow[q] = pt_below(r, 2) ? UNL : pt_below(r, 30);
        m->lend[q] = pt_below(r, 2) ? UNL : pt_below(r, 30);
        cr_assert_eq(gpusched_sched_queue_quota_set(e->s, q, 0, m->nominal[q], m->borrow[q], m->lend[q]), 0, "%s",
                     gpusched_sched_errmsg(e->s));
    }
}

/* What the replays covered, so that the test proves it exercised them. */
static uint32_t seen_starts, seen_quota, seen_resv, seen_fit, seen_evictions;

typedef struct ev {
    uint32_t seq;
    int start;
    uint32_t index;
} ev;

static void check_cycle(st_env *e, ref *m, gpusched_placer *probe, gpusched_place_result *res, bool quotas)
{
    gpusched_sched_decisions *d = e->d;
    const uint64_t *sids, *victims, *fors;
    uint32_t ns, nev;
    cr_assert_eq(gpusched_sched_decisions_starts(d, &sids, &ns), 0);
    cr_assert_eq(gpusched_sched_decisions_evictions(d, &victims, &fors, &nev), 0);
    uint32_t nw = gpusched_sched_decisions_wait_count(d);
    ev evs[2 * MAXJ];
    uint32_t n = 0;
    for (uint32_t i = 0; i < ns; i++) {
        const uint32_t *nodes;
        const uint64_t *masks;
        uint32_t np, seq;
        cr_assert_eq(gpusched_sched_decisions_start(d, i, NULL, &seq, &nodes, &masks, &np), 0);
        evs[n++] = (ev){seq, 1, i};
    }
    for (uint32_t i = 0; i < nw; i++) {
        gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
        cr_assert_eq(gpusched_sched_decisions_wait(d, i, &w), 0);
        evs[n++] = (ev){w.seq, 0, i};
    }
    /* Insertion sort by seq: a few hundred entries. */
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t k = i; k > 0 && evs[k - 1].seq > evs[k].seq; k--) {
            ev t = evs[k];
            evs[k] = evs[k - 1];
            evs[k - 1] = t;
        }
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            cr_assert_neq(evs[i].seq, evs[i - 1].seq, "each evaluation has its own seq");
        uint32_t fq = 0;
        uint64_t fused = 0, flim = 0;
        if (evs[i].start) {
            uint64_t id = sids[evs[i].index];
            for (uint32_t v = 0; v < nev; v++)
                if (fors[v] == id)
                    m->run_g[victims[v]] = 0;
            if (quotas)
                cr_assert_eq(r_admit(m, m->job_q[id], m->job_g[id], &fq, &fused, &flim), 0,
                             "job %llu started over quota: queue %u holds %llu, may hold %llu", (unsigned long long)id,
                             fq, (unsigned long long)fused, (unsigned long long)flim);
            m->run_q[id] = m->job_q[id];
            m->run_g[id] = m->job_g[id];
            seen_starts++;
            continue;
        }
        gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
        cr_assert_eq(gpusched_sched_decisions_wait(d, evs[i].index, &w), 0);
        uint64_t id = w.job_id;
        int over = r_admit(m, m->job_q[id], m->job_g[id], &fq, &fused, &flim);
        if (w.reason == GPUSCHED_SCHED_WAIT_QUOTA) {
            cr_assert(quotas);
            cr_assert_eq(over, 1, "job %llu waits for quota, the model admits it", (unsigned long long)id);
            cr_assert_eq(w.queue, fq, "job %llu: queue %u, model %u", (unsigned long long)id, w.queue, fq);
            cr_assert_eq(w.used, fused);
            cr_assert_eq(w.limit, flim);
            cr_assert_eq(w.requested, m->job_g[id]);
            cr_assert(strstr(gpusched_sched_decisions_wait_message(d, evs[i].index), "over quota"));
            seen_quota++;
        } else if (quotas) {
            cr_assert_eq(over, 0, "job %llu waits for reason %u but is over quota in the model",
                         (unsigned long long)id, w.reason);
        }
        if (w.reason == GPUSCHED_SCHED_WAIT_RESERVATION) {
            bool found = false;
            for (uint32_t v = 0; v < gpusched_sched_decisions_reservation_count(d); v++) {
                uint64_t rid;
                int64_t t;
                cr_assert_eq(gpusched_sched_decisions_reservation(d, v, &rid, &t, NULL, NULL, NULL, NULL), 0);
                found |= rid == w.blocking_job && t == w.time;
            }
            cr_assert(found, "job %llu is behind a reservation the cycle did not make", (unsigned long long)id);
            seen_resv++;
        }
        if ((w.reason == GPUSCHED_SCHED_WAIT_FIT || w.reason == GPUSCHED_SCHED_WAIT_SHARE) && nev == 0) {
            gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
            q.gpus = m->job_g[id];
            q.split = GPUSCHED_SPLIT_PODS;
            q.pod_gpus = q.gpus < 4 ? q.gpus : 4;
            cr_assert_eq(gpusched_placer_place(probe, &q, res), GPUSCHED_ENOSPC,
                         "job %llu is said not to fit but fits after the cycle", (unsigned long long)id);
            seen_fit++;
        }
    }
    seen_evictions += nev;
    for (uint32_t q = 0; q < m->nq; q++) {
        uint64_t used;
        cr_assert_eq(gpusched_sched_queue_usage(e->s, q, 0, &used, NULL, NULL, NULL, NULL), 0);
        cr_assert_eq(used, r_used(m, q), "queue %u", q);
        if (q != 0 && m->borrow[q] != UNL && quotas)
            cr_assert_leq(used, r_total(m, q) + m->borrow[q], "queue %u holds %llu: quota %llu + borrowing %llu", q,
                          (unsigned long long)used, (unsigned long long)r_total(m, q),
                          (unsigned long long)m->borrow[q]);
    }
}

static void run_seed(uint64_t seed)
{
    pt_rng r = {seed * 0x9e3779b97f4a7c15ull + 1};
    st_env e = st_env_small();
    ref *m = calloc(1, sizeof *m);
    random_tree(&r, &e, m);
    bool quotas = pt_below(&r, 5) != 0;
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_QUOTAS, quotas), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_ORDER, pt_below(&r, 3)), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_RESV_DEPTH, pt_below(&r, 4)), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_PREEMPT, pt_below(&r, 2)), 0);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_HALF_LIFE, pt_below(&r, 3) * 50), 0);
    gpusched_placer *probe;
    gpusched_place_result *res;
    cr_assert_eq(gpusched_placer_new(e.c, NULL, &probe), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    static const uint32_t sizes[] = {1, 2, 4, 4, 8, 8, 12, 16, 24, 32};
    uint64_t next = 1;
    int64_t now = 0;
    for (int step = 0; step < 60; step++) {
        now += pt_below(&r, 20);
        uint32_t k = pt_below(&r, 8);
        for (uint32_t i = 0; i < k && next < MAXJ; i++) {
            uint32_t q;
            do
                q = 1 + pt_below(&r, m->nq - 1);
            while (!m->leaf[q]);
            uint32_t g = sizes[pt_below(&r, 10)];
            m->job_q[next] = q;
            m->job_g[next] = g;
            cr_assert_eq(st_submit_full(&e, next, q, g, (int32_t)pt_below(&r, 3), now, 10 + pt_below(&r, 100),
                                        pt_below(&r, 2) ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0),
                         0, "%s", gpusched_sched_errmsg(e.s));
            next++;
        }
        /* Some running jobs end. */
        for (uint64_t id = 1; id < next; id++)
            if (m->run_g[id] && pt_below(&r, 6) == 0) {
                cr_assert_eq(gpusched_sched_job_end(e.s, id, now), 0, "%s", gpusched_sched_errmsg(e.s));
                m->run_g[id] = 0;
            }
        st_cycle(&e, now);
        check_cycle(&e, m, probe, res, quotas);
    }
    gpusched_place_result_free(res);
    gpusched_placer_free(probe);
    free(m);
    st_env_free(&e);
}

Test(sched_quota, random_trees_against_the_model)
{
    /* Under valgrind (50 times slower) 8 seeds, with the coverage asked
     * scaled to them. */
    const uint32_t seeds = getenv("GPUSCHED_UNDER_VALGRIND") ? 8 : 60;
    for (uint64_t seed = 1; seed <= seeds; seed++)
        run_seed(seed);
    cr_assert(seen_starts > 1000 * seeds / 60 && seen_quota > 200 * seeds / 60 && seen_resv > 20 * seeds / 60 &&
                  seen_fit > 200 * seeds / 60 && seen_evictions > 10 * seeds / 60,
              "coverage: %u starts, %u quota waits, %u behind reservations, %u do not fit, %u evictions", seen_starts,
              seen_quota, seen_resv, seen_fit, seen_evictions);
}

/* Borrowing and lending limits on a hand-made tree. */
Test(sched_quota, lending_limit_keeps_a_guarantee)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 32), b = st_queue(&e, "b", 0, 32);
    /* b lends at most 8 of its 32: a may borrow 8, not more. */
    cr_assert_eq(gpusched_sched_queue_quota_set(e.s, b, 0, 32, UNL, 8), 0);
    for (uint64_t id = 1; id <= 12; id++)
        st_submit(&e, id, a, 4, (int64_t)id, 100);
    st_cycle(&e, 0);
    cr_assert_eq(st_nstarts(&e), 10, "32 of its own and 8 of b's");
    const char *msg;
    gpusched_sched_wait w = st_wait(&e, 11, &msg);
    cr_assert_eq(w.reason, GPUSCHED_SCHED_WAIT_QUOTA);
    cr_assert_eq(w.queue, a);
    cr_assert_eq(w.used, 40);
    cr_assert_eq(w.limit, 40, "64 minus b's guarantee of 24");
    /* b's guarantee is there at once. */
    for (uint64_t id = 20; id < 26; id++)
        st_submit(&e, id, b, 4, (int64_t)id, 100);
    st_cycle(&e, 1);
    cr_assert_eq(st_nstarts(&e), 6);
    st_env_free(&e);
}
