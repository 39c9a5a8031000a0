/* Quotas, borrowing and explanations against a reference model: random
 * queue trees with quotas of GPUs and of cpu (a topology resource), random
 * gangs (whole GPUs, and pod gangs asking cpu with whole GPUs or none),
 * job ends and cycles under every order; each cycle's decisions are
 * replayed in their evaluation order against a from-scratch model of the
 * quota rules (doc/sched.md, "Queues and resources"), and after each cycle:
 *  - every start was admissible on every resource when it was made;
 *  - every quota wait names the resource, queue, usage and limit the model
 *    finds (GPUs first, then cpu);
 *  - every other wait passed quota;
 *  - no queue holds more than its subtree quota plus its borrowing limit,
 *    of any resource (quotas are never exceeded except by declared
 *    borrowing; the root's limit is the cluster);
 *  - usage per queue and resource equals the model's;
 *  - a gang said not to fit does not fit the cluster after the cycle, and a
 *    gang behind a reservation names a reservation of the cycle, with its
 *    time;
 *  - the scheduler's and the cluster's invariant checkers pass. */
#include "place-test.h"
#include "sched-test.h"

#define MAXQ 12
#define MAXJ 4096
#define NR 2 /* model resources: 0 GPUs, 1 cpu */
#define UNL GPUSCHED_SCHED_UNLIMITED

typedef struct ref {
    uint32_t nq;
    uint32_t parent[MAXQ];
    uint64_t nominal[NR][MAXQ], borrow[NR][MAXQ], lend[NR][MAXQ];
    bool leaf[MAXQ];
    bool cpu_quota;             /* some queue has a cpu nominal: cpu is enforced */
    /* Running jobs by id: queue, and what they use of each resource. */
    bool running[MAXJ];
    uint32_t run_q[MAXJ];
    uint64_t run_a[NR][MAXJ];
    /* Every submitted gang by id: queue, use, and its request's shape. */
    uint32_t job_q[MAXJ];
    uint64_t job_a[NR][MAXJ];
    uint32_t job_pods[MAXJ], job_pod_gpus[MAXJ], job_pod_cpu[MAXJ];
} ref;

static bool under(const ref *m, uint32_t q, uint32_t anc)
{
    for (; q != UINT32_MAX; q = q ? m->parent[q] : UINT32_MAX)
        if (q == anc)
            return true;
    return false;
}

static uint64_t r_total(const ref *m, uint32_t res, uint32_t q)
{
    uint64_t t = m->nominal[res][q];
    for (uint32_t c = 1; c < m->nq; c++)
        if (m->parent[c] == q)
            t += r_total(m, res, c);
    return t;
}

static uint64_t r_used(const ref *m, uint32_t res, uint32_t q)
{
    uint64_t u = 0;
    for (uint32_t id = 0; id < MAXJ; id++)
        if (m->running[id] && under(m, m->run_q[id], q))
            u += m->run_a[res][id];
    return u;
}

static uint64_t r_guar(const ref *m, uint32_t res, uint32_t q)
{
    uint64_t t = r_total(m, res, q);
    return t - (m->lend[res][q] < t ? m->lend[res][q] : t);
}

static uint64_t r_ent(const ref *m, uint32_t res, uint32_t q)
{
    uint64_t below = 0;
    if (m->leaf[q])
        below = r_used(m, res, q);
    for (uint32_t c = 1; c < m->nq; c++)
        if (m->parent[c] == q)
            below += r_ent(m, res, c);
    uint64_t t = r_total(m, res, q);
    return below < t ? below : t;
}

/* One resource: 0 if admissible (nominal or borrowing), 1 with the deepest
 * failing queue, its usage and its limit. */
static int r_admit_res(const ref *m, uint32_t res, uint32_t leaf, uint64_t g, uint32_t *fq, uint64_t *fused,
                       uint64_t *flimit)
{
    uint32_t path[MAXQ], depth = 0;
    for (uint32_t q = leaf;; q = m->parent[q]) {
        path[depth++] = q;
        if (q == 0)
            break;
    }
    depth--;
    bool nominal = true;
    uint64_t ent = r_used(m, res, leaf) + g;
    if (ent > r_total(m, res, leaf))
        nominal = false;
    for (uint32_t k = 1; k < depth; k++)
        if (m->borrow[res][path[k]] != UNL &&
            r_used(m, res, path[k]) + g > r_total(m, res, path[k]) + m->borrow[res][path[k]])
            nominal = false;
    for (uint32_t k = 1; k <= depth && nominal; k++) {
        uint64_t sum = 0;
        for (uint32_t c = 1; c < m->nq; c++)
            if (m->parent[c] == path[k])
                sum += c == path[k - 1] ? ent : r_ent(m, res, c);
        if (sum > r_total(m, res, path[k]))
            nominal = false;
        ent = sum;
    }
    if (nominal)
        return 0;
    uint64_t cap = r_total(m, res, 0);
    int over = 0;
    for (uint32_t k = depth + 1; k-- > 0;) {
        uint32_t q = path[k];
        if (k < depth) {
            uint64_t sib = 0;
            for (uint32_t c = 1; c < m->nq; c++)
                if (m->parent[c] == path[k + 1] && c != q) {
                    uint64_t u = r_used(m, res, c), gu = r_guar(m, res, c);
                    sib += u > gu ? u : gu;
                }
            uint64_t avail = cap > sib ? cap - sib : 0;
            uint64_t lim = m->borrow[res][q] == UNL ? UNL : r_total(m, res, q) + m->borrow[res][q];
            cap = avail < lim ? avail : lim;
        }
        if (r_used(m, res, q) + g > cap) {
            *fq = q, *fused = r_used(m, res, q), *flimit = cap;
            over = 1;
        }
    }
    return over;
}

/* Every enforced resource in order (GPUs, then cpu once some queue has a
 * cpu quota): 0 if job `id` is admissible, else 1 with the first failing
 * resource (model index), its deepest failing queue, usage and limit. */
static int r_admit(const ref *m, uint64_t id, uint32_t *fres, uint32_t *fq, uint64_t *fused, uint64_t *flimit)
{
    for (uint32_t res = 0; res < NR; res++) {
        if (res == 1 && (!m->cpu_quota || !m->job_a[1][id]))
            continue;
        if (r_admit_res(m, res, m->job_q[id], m->job_a[res][id], fq, fused, flimit)) {
            *fres = res;
            return 1;
        }
    }
    return 0;
}

/* The scheduler's index of model resource res. */
static uint32_t sched_res(st_env *e, uint32_t res)
{
    if (res == 0)
        return GPUSCHED_SCHED_RES_GPUS;
    uint32_t cpu;
    cr_assert_eq(gpusched_topo_resource_find(e->t, "cpu", &cpu), 0);
    return 1 + gpusched_topo_class_count(e->t) + cpu;
}

/* A random tree: 1-3 interior queues under the root, leaves under them;
 * quotas of GPUs, and of cpu in two runs of three. */
static void random_tree(pt_rng *r, st_env *e, ref *m)
{
    memset(m, 0, sizeof *m);
    m->nq = 1;
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
    const bool cpu = pt_below(r, 3) != 0;
    for (uint32_t res = 0; res < NR; res++) {
        /* cpu in units of 1000 milli-cores, on the scale of GPUs x 2000. */
        const uint64_t unit = res ? 2000 : 1;
        for (uint32_t q = 0; q < m->nq; q++) {
            if (res == 1 && !cpu) {
                m->borrow[res][q] = m->lend[res][q] = UNL;
                continue;
            }
            m->nominal[res][q] =
                unit * (q == 0 || !m->leaf[q] ? (pt_below(r, 3) == 0 ? pt_below(r, 16) : 0) : pt_below(r, 40));
            m->borrow[res][q] = pt_below(r, 2) ? UNL : unit * pt_below(r, 30);
            m->lend[res][q] = pt_below(r, 2) ? UNL : unit * pt_below(r, 30);
            m->cpu_quota |= res == 1 && m->nominal[res][q] > 0;
            cr_assert_eq(gpusched_sched_queue_quota_set(e->s, q, sched_res(e, res), m->nominal[res][q],
                                                        m->borrow[res][q], m->lend[res][q]),
                         0, "%s", gpusched_sched_errmsg(e->s));
        }
    }
}

/* What the replays covered, so that the test proves it exercised them. */
static uint32_t seen_starts, seen_quota, seen_cpu_quota, seen_resv, seen_fit, seen_evictions, seen_pod_starts,
    seen_pod_evictions, seen_pods_evicted_for_gpus, seen_job_states;

typedef struct ev {
    uint32_t seq;
    int start;
    uint32_t index;
} ev;

/* Job `id`'s request as submitted: pods of GPUs and cpu, or whole GPUs
 * (pods 0). `res` must outlive the request. */
static gpusched_place_request job_request(const ref *m, uint64_t id, uint64_t *res)
{
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    q.split = GPUSCHED_SPLIT_PODS;
    if (m->job_pods[id]) {
        q.pods = m->job_pods[id];
        q.pod_gpus = m->job_pod_gpus[id];
        res[0] = m->job_pod_cpu[id];
        q.resources = res;
        q.resource_count = 1;
    } else {
        q.gpus = (uint32_t)m->job_a[0][id];
        q.pod_gpus = q.gpus < 4 ? q.gpus : 4;
    }
    return q;
}

/* The scheduler's own record of a waiting gang (gpusched_sched_job_state)
 * is the wait the decisions hold, field by field: the two are written
 * apart from shared templates. */
static void check_job_state(st_env *e, const gpusched_sched_wait *w)
{
    gpusched_sched_wait js = GPUSCHED_SCHED_WAIT_INIT;
    uint32_t status = 0;
    cr_assert_eq(gpusched_sched_job_state(e->s, w->job_id, &status, &js), 0);
    cr_assert_eq(status, GPUSCHED_SCHED_JOB_PENDING);
    cr_assert(js.reason == w->reason && js.seq == w->seq && js.queue == w->queue && js.resource == w->resource &&
                  js.place_reason == w->place_reason && js.used == w->used && js.requested == w->requested &&
                  js.limit == w->limit && js.free_gpus == w->free_gpus && js.taken_gpus == w->taken_gpus &&
                  js.blocking_job == w->blocking_job && js.time == w->time && js.share == w->share,
              "job %llu: job_state's wait (reason %u, seq %u) is not the decisions' (reason %u, seq %u)",
              (unsigned long long)w->job_id, js.reason, js.seq, w->reason, w->seq);
    seen_job_states++;
}

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
        uint32_t fq = 0, fres = 0;
        uint64_t fused = 0, flim = 0;
        if (evs[i].start) {
            uint64_t id = sids[evs[i].index];
            for (uint32_t v = 0; v < nev; v++)
                if (fors[v] == id) {
                    /* Pods here hold whole GPUs: any gang may evict them. */
                    seen_pod_evictions += m->job_pods[id] != 0;
                    seen_pods_evicted_for_gpus += !m->job_pods[id] && m->job_pods[victims[v]];
                    m->running[victims[v]] = false;
                }
            if (quotas)
                cr_assert_eq(r_admit(m, id, &fres, &fq, &fused, &flim), 0,
                             "job %llu started over quota of resource %u: queue %u holds %llu, may hold %llu",
                             (unsigned long long)id, fres, fq, (unsigned long long)fused, (unsigned long long)flim);
            m->running[id] = true;
            m->run_q[id] = m->job_q[id];
            for (uint32_t r = 0; r < NR; r++)
                m->run_a[r][id] = m->job_a[r][id];
            seen_starts++;
            seen_pod_starts += m->job_pods[id] != 0;
            continue;
        }
        gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
        cr_assert_eq(gpusched_sched_decisions_wait(d, evs[i].index, &w), 0);
        uint64_t id = w.job_id;
        check_job_state(e, &w);
        int over = r_admit(m, id, &fres, &fq, &fused, &flim);
        if (w.reason == GPUSCHED_SCHED_WAIT_QUOTA) {
            cr_assert(quotas);
            cr_assert_eq(over, 1, "job %llu waits for quota, the model admits it", (unsigned long long)id);
            cr_assert_eq(w.resource, sched_res(e, fres), "job %llu: resource %u, model %u", (unsigned long long)id,
                         w.resource, sched_res(e, fres));
            cr_assert_eq(w.queue, fq, "job %llu: queue %u, model %u", (unsigned long long)id, w.queue, fq);
            cr_assert_eq(w.used, fused);
            cr_assert_eq(w.limit, flim);
            cr_assert_eq(w.requested, m->job_a[fres][id]);
            const char *msg = gpusched_sched_decisions_wait_message(d, evs[i].index);
            cr_assert(strstr(msg, "over quota"), "%s", msg);
            cr_assert(strstr(msg, fres ? "(cpu)" : "(gpus)"), "%s", msg);
            seen_quota++;
            seen_cpu_quota += fres == 1;
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
            uint64_t amounts[1];
            gpusched_place_request q = job_request(m, id, amounts);
            cr_assert_eq(gpusched_placer_place(probe, &q, res), GPUSCHED_ENOSPC,
                         "job %llu is said not to fit but fits after the cycle", (unsigned long long)id);
            seen_fit++;
        }
    }
    seen_evictions += nev;
    for (uint32_t q = 0; q < m->nq; q++)
        for (uint32_t r = 0; r < NR; r++) {
            uint64_t used;
            cr_assert_eq(gpusched_sched_queue_usage(e->s, q, sched_res(e, r), &used, NULL, NULL, NULL, NULL), 0);
            cr_assert_eq(used, r_used(m, r, q), "queue %u resource %u", q, r);
            if (q != 0 && m->borrow[r][q] != UNL && quotas && (r == 0 || m->cpu_quota))
                cr_assert_leq(used, r_total(m, r, q) + m->borrow[r][q],
                              "queue %u holds %llu of resource %u: quota %llu + borrowing %llu", q,
                              (unsigned long long)used, r, (unsigned long long)r_total(m, r, q),
                              (unsigned long long)m->borrow[r][q]);
        }
}

/* 2 blocks x 3 racks x 4 nodes x 4 GPUs (96 GPUs), 16 cores per node. */
static st_env quota_env(void)
{
    char text[8192];
    int o = snprintf(text, sizeof text, "levels block rack\nresources cpu\n");
    for (uint32_t n = 0; n < 24; n++)
        o += snprintf(text + o, sizeof text - (size_t)o, "node b%u/r%u n%u gpus=4 class=gb200 cpu=16000\n", n / 12,
                      n / 4, n);
    return st_env_text(text, (size_t)o);
}

static void submit_random(pt_rng *r, st_env *e, ref *m, uint64_t id, int64_t now)
{
    static const uint32_t sizes[] = {1, 2, 4, 4, 8, 8, 12, 16, 24, 32};
    static const uint32_t cpus[] = {1000, 2000, 4000, 8000};
    uint32_t q;
    do
        q = 1 + pt_below(r, m->nq - 1);
    while (!m->leaf[q]);
    m->job_q[id] = q;
    const uint32_t kind = pt_below(r, 3);
    const int32_t prio = (int32_t)pt_below(r, 3);
    const int64_t dur = 10 + pt_below(r, 100);
    const uint32_t flags = pt_below(r, 2) ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
    if (kind == 0) {
        /* Whole GPUs, no cpu asked. */
        uint32_t g = sizes[pt_below(r, 10)];
        m->job_a[0][id] = g;
        cr_assert_eq(st_submit_full(e, id, q, g, prio, now, dur, flags), 0, "%s", gpusched_sched_errmsg(e->s));
        return;
    }
    /* Pods with cpu: of 1, 2 or 4 GPUs, or cpu only. */
    m->job_pods[id] = 1 + pt_below(r, 8);
    m->job_pod_gpus[id] = kind == 1 ? 1u << pt_below(r, 3) : 0;
    m->job_pod_cpu[id] = cpus[pt_below(r, 4)];
    m->job_a[0][id] = (uint64_t)m->job_pods[id] * m->job_pod_gpus[id];
    m->job_a[1][id] = (uint64_t)m->job_pods[id] * m->job_pod_cpu[id];
    uint64_t amounts[1];
    gpusched_place_request req = job_request(m, id, amounts);
    cr_assert_eq(st_submit_req(e, id, q, &req, prio, now, dur, flags), 0, "%s", gpusched_sched_errmsg(e->s));
}

/* One leaf's GPU quota grows between cycles (the model's invariants hold
 * for usage admitted under the quotas of the time, so they never shrink):
 * the scheduler must answer from the new one, nothing remembered of the
 * old. */
static void requota(pt_rng *r, st_env *e, ref *m)
{
    uint32_t q = 1 + pt_below(r, m->nq - 1);
    if (!m->leaf[q])
        return;
    m->nominal[0][q] += 1 + pt_below(r, 16);
    if (m->borrow[0][q] != UNL)
        m->borrow[0][q] += pt_below(r, 8);
    cr_assert_eq(gpusched_sched_queue_quota_set(e->s, q, 0, m->nominal[0][q], m->borrow[0][q], m->lend[0][q]), 0,
                 "%s", gpusched_sched_errmsg(e->s));
}

static void run_seed(uint64_t seed)
{
    pt_rng r = {seed * 0x9e3779b97f4a7c15ull + 1};
    st_env e = quota_env();
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
    uint64_t next = 1;
    int64_t now = 0;
    for (int step = 0; step < 60; step++) {
        now += pt_below(&r, 20);
        uint32_t k = pt_below(&r, 8);
        for (uint32_t i = 0; i < k && next < MAXJ; i++)
            submit_random(&r, &e, m, next++, now);
        /* Some running jobs end. */
        for (uint64_t id = 1; id < next; id++)
            if (m->running[id] && pt_below(&r, 6) == 0) {
                cr_assert_eq(gpusched_sched_job_end(e.s, id, now), 0, "%s", gpusched_sched_errmsg(e.s));
                m->running[id] = false;
            }
        if (pt_below(&r, 8) == 0)
            requota(&r, &e, m);
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
    cr_log_info("coverage: %u starts (%u pod gangs), %u quota waits (%u of cpu), %u behind reservations, %u do not "
                "fit, %u evictions (%u for pod gangs, %u pod gangs for whole-GPU gangs), %u waits compared with "
                "job_state",
                seen_starts, seen_pod_starts, seen_quota, seen_cpu_quota, seen_resv, seen_fit, seen_evictions,
                seen_pod_evictions, seen_pods_evicted_for_gpus, seen_job_states);
    cr_assert(seen_starts > 1000 * seeds / 60 && seen_quota > 200 * seeds / 60 && seen_resv > 20 * seeds / 60 &&
                  seen_fit > 200 * seeds / 60 && seen_evictions > 10 * seeds / 60 &&
                  seen_cpu_quota > 20 * seeds / 60 && seen_pod_starts > 300 * seeds / 60 &&
                  seen_job_states > 1000 * seeds / 60 && seen_pod_evictions > 40 * seeds / 60 &&
                  seen_pods_evicted_for_gpus > 0,
              "coverage: %u starts (%u pod gangs), %u quota waits (%u of cpu), %u behind reservations, %u do not "
              "fit, %u evictions",
              seen_starts, seen_pod_starts, seen_quota, seen_cpu_quota, seen_resv, seen_fit, seen_evictions);
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

/* A cycle does not evict a gang it started: queue a (priority 1) starts a
 * gang within its quota and one on borrowed capacity, then queue b's gang,
 * within its quota, does not fit. Evicting the borrowed gang would report
 * it both started and evicted by one cycle (a caller reading the starts
 * after the evictions, as the simulator does, would think it runs). It
 * waits for the next cycle instead, where the borrowed gang is a victim. */
Test(sched_quota, a_cycle_does_not_evict_a_gang_it_started)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 48), b = st_queue(&e, "b", 0, 48);
    gpusched_sched_queue q = GPUSCHED_SCHED_QUEUE_INIT;
    (void)q;
    cr_assert_eq(st_submit_full(&e, 1, a, 48, 0, 0, 100, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    cr_assert_eq(st_submit_full(&e, 2, a, 48, 0, 1, 100, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    cr_assert_eq(st_submit_full(&e, 3, b, 48, 0, 2, 100, 0), 0);
    /* Queue a first: its two gangs start before b's is evaluated. */
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_ORDER, GPUSCHED_SCHED_ORDER_FIFO), 0);
    st_cycle(&e, 10);
    cr_assert(st_started(&e, 1) && st_started(&e, 2));
    const uint64_t *victims, *fors;
    uint32_t nv;
    cr_assert_eq(gpusched_sched_decisions_evictions(e.d, &victims, &fors, &nv), 0);
    for (uint32_t v = 0; v < nv; v++)
        cr_assert(!st_started(&e, victims[v]), "job %llu started and evicted by one cycle",
                  (unsigned long long)victims[v]);
    cr_assert(!st_started(&e, 3));
    cr_assert_eq(st_status(&e, 2), GPUSCHED_SCHED_JOB_RUNNING);
    /* The next cycle, with nothing new but the time: gang 2 is a victim. */
    st_cycle(&e, 11);
    cr_assert(st_started(&e, 3), "the entitled gang preempts the borrowed one at the next time");
    cr_assert_eq(gpusched_sched_decisions_evictions(e.d, &victims, &fors, &nv), 0);
    cr_assert(nv == 1 && victims[0] == 2 && fors[0] == 3);
    st_env_free(&e);
}

/* Half-life 0: the share is the usage now. A job of queue a ends at the
 * time of the cycle; the fair order at that cycle must rank a by its usage
 * after the end (0), not before it (its whole quota), as a cycle at any
 * later time does. */
Test(sched_quota, half_life_zero_ranks_by_the_usage_after_an_end_at_the_same_time)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 48), b = st_queue(&e, "b", 0, 48);
    st_submit(&e, 1, a, 48, 0, 10);
    st_submit(&e, 2, b, 24, 0, 1000);
    st_cycle(&e, 0);
    cr_assert(st_started(&e, 1) && st_started(&e, 2));
    cr_assert_eq(gpusched_sched_job_end(e.s, 1, 10), 0);
    /* 72 GPUs free, and a gang of 72 in each queue: a's share is 0, b's 0.5. */
    st_submit(&e, 3, b, 72, 10, 100);
    st_submit(&e, 4, a, 72, 10, 100);
    st_cycle(&e, 10);
    double decayed = -1;
    cr_assert_eq(gpusched_sched_queue_usage(e.s, a, 0, NULL, NULL, &decayed, NULL, NULL), 0);
    cr_assert(st_started(&e, 4), "queue a uses nothing: its gang goes first (decayed usage %g)", decayed);
    cr_assert(!st_started(&e, 3));
    st_env_free(&e);
}

/* Victims are not restarted in the cycle that evicts them: the next one
 * evaluates them, even with no event since (it is not quiet). */
Test(sched_quota, the_cycle_after_an_eviction_is_not_quiet)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 96);
    /* The caller holds every node but 0 and 1, 2 GPUs of node 1, and (901)
     * the rest of node 1 until gang 1 is placed, on node 0. */
    uint32_t nodes[24], n = 0;
    uint64_t masks[24];
    for (uint32_t k = 1; k < 24; k++) {
        nodes[n] = k;
        masks[n++] = k == 1 ? 0x3 : 0xf;
    }
    st_hold(&e, 900, n, nodes, masks);
    nodes[0] = 1;
    masks[0] = 0xc;
    st_hold(&e, 901, 1, nodes, masks);
    cr_assert_eq(st_submit_full(&e, 1, a, 2, 0, 0, 100, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    st_cycle(&e, 0);
    cr_assert(st_started(&e, 1));
    cr_assert_eq(gpusched_cluster_release(e.c, 901), 0);
    /* A pod of 4 at priority 5: no node has 4 free; it evicts gang 1. */
    cr_assert_eq(st_submit_full(&e, 2, a, 4, 5, 1, 100, 0), 0);
    st_cycle(&e, 1);
    cr_assert(st_started(&e, 2));
    const uint64_t *victims, *fors;
    uint32_t nv;
    cr_assert_eq(gpusched_sched_decisions_evictions(e.d, &victims, &fors, &nv), 0);
    cr_assert(nv == 1 && victims[0] == 1);
    /* Gang 1 fits node 1's 2 free GPUs: the next cycle starts it. */
    st_cycle(&e, 2);
    cr_assert_eq(gpusched_sched_decisions_quiet(e.d), 0, "victims wait for this cycle");
    cr_assert(st_started(&e, 1));
    st_env_free(&e);
}
