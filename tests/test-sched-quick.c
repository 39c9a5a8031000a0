/* The cycle's quick waits (cycle.c quick_run(): over quota, a shape that
 * already failed, too few free GPUs, recorded without a search) and the
 * reservation searches started from their last answer (resv.c) decide
 * exactly what the full evaluation decides. Two schedulers over two equal clusters, one
 * created with GPUSCHED_SCHED_QUICK=0, get the same random events (submits
 * of whole-GPU and pod gangs, ends at any time, cancels, node failures,
 * quota changes, and jobs the caller runs on the cluster itself) under
 * random parameters (order, depth, preemption, strictness, quotas,
 * borrowing limits); every cycle's decisions must be equal field by field,
 * explanations included, and so must every job's state. */
#include <stdlib.h>

#include "place-test.h"
#include "sched-test.h"

#define NQ 7         /* root, 2 organizations, 4 teams */
#define MAXJOBS 400

typedef struct pair {
    st_env a, b;     /* a: quick waits on; b: off */
} pair;

static void both_param(pair *p, uint32_t param, int64_t v)
{
    cr_assert_eq(gpusched_sched_param_set(p->a.s, param, v), 0);
    cr_assert_eq(gpusched_sched_param_set(p->b.s, param, v), 0);
}

static void both_queues(pair *p, pt_rng *r, uint32_t *leaf)
{
    st_env *e[2] = {&p->a, &p->b};
    uint64_t nominal[4], borrow[4];
    for (int k = 0; k < 4; k++) {
        nominal[k] = 8 * pt_below(r, 6);
        borrow[k] = pt_below(r, 3) ? GPUSCHED_SCHED_UNLIMITED : 8 * pt_below(r, 4);
    }
    for (int i = 0; i < 2; i++) {
        uint32_t org[2];
        for (int o = 0; o < 2; o++) {
            char name[16];
            snprintf(name, sizeof name, "org%d", o);
            org[o] = st_queue(e[i], name, 0, 48);
        }
        for (int k = 0; k < 4; k++) {
            char name[16];
            snprintf(name, sizeof name, "team%d", k);
            gpusched_sched_queue q = GPUSCHED_SCHED_QUEUE_INIT;
            q.name = name;
            q.parent = org[k / 2];
            q.weight = 1 + (uint32_t)k % 3;
            cr_assert_eq(gpusched_sched_queue_add(e[i]->s, &q, &leaf[k]), 0);
            cr_assert_eq(gpusched_sched_queue_quota_set(e[i]->s, leaf[k], 0, nominal[k], borrow[k],
                                                        GPUSCHED_SCHED_UNLIMITED),
                         0, "%s", gpusched_sched_errmsg(e[i]->s));
        }
    }
}

/* A random gang: whole GPUs in pods of up to 4, or (with cpu) pods of cpu
 * and memory with 0-2 GPUs or a fraction. With `racks`, every other gang
 * of a multiple of 16 GPUs asks for whole racks (slices of 16 GPUs at the
 * rack level, whole nodes): the reservation search's whole-domain hint
 * (resv.c), which quick mode uses and GPUSCHED_SCHED_QUICK=0 does not.
 * Chosen by the id, so that the random stream stays each seed's. */
static int submit(st_env *e, pt_rng *r, uint64_t id, uint32_t q, int64_t now, bool cpu, bool racks)
{
    static const uint32_t sizes[] = {1, 2, 4, 4, 8, 8, 16, 16, 24, 32, 48, 64, 96};
    int32_t prio = (int32_t)pt_below(r, 3);
    int64_t dur = 1 + pt_below(r, 50);
    uint32_t flags = pt_below(r, 2) ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
    if (cpu && pt_below(r, 3) == 0) {
        uint64_t amounts[2] = {1000 * (1 + pt_below(r, 16)), 4096};
        gpusched_place_request req = GPUSCHED_PLACE_REQUEST_INIT;
        req.split = GPUSCHED_SPLIT_PODS;
        req.pods = 1 + pt_below(r, 6);
        req.pod_gpus = pt_below(r, 3);
        req.gpu_milli = req.pod_gpus == 1 && pt_below(r, 2) ? 250 * (1 + pt_below(r, 3)) : 0;
        req.resources = amounts;
        req.resource_count = 2;
        return st_submit_req(e, id, q, &req, prio, now, dur, flags);
    }
    const uint32_t gpus = sizes[pt_below(r, 13)];
    if (racks && gpus % 16 == 0 && id % 2 == 0) {
        gpusched_place_request req = GPUSCHED_PLACE_REQUEST_INIT;
        req.gpus = gpus;
        req.split = GPUSCHED_SPLIT_WHOLE_NODES;
        req.slice_gpus[0] = 16;
        req.slice_level[0] = 1;
        return st_submit_req(e, id, q, &req, prio, now, dur, flags);
    }
    return st_submit_full(e, id, q, gpus, prio, now, dur, flags);
}

static void same_waits(pair *p)
{
    uint32_t n = gpusched_sched_decisions_wait_count(p->a.d);
    cr_assert_eq(n, gpusched_sched_decisions_wait_count(p->b.d));
    for (uint32_t i = 0; i < n; i++) {
        gpusched_sched_wait x = GPUSCHED_SCHED_WAIT_INIT, y = GPUSCHED_SCHED_WAIT_INIT;
        cr_assert_eq(gpusched_sched_decisions_wait(p->a.d, i, &x), 0);
        cr_assert_eq(gpusched_sched_decisions_wait(p->b.d, i, &y), 0);
        cr_assert(x.reason == y.reason && x.job_id == y.job_id && x.seq == y.seq && x.queue == y.queue &&
                      x.resource == y.resource && x.place_reason == y.place_reason && x.used == y.used &&
                      x.requested == y.requested && x.limit == y.limit && x.free_gpus == y.free_gpus &&
                      x.taken_gpus == y.taken_gpus && x.blocking_job == y.blocking_job && x.time == y.time &&
                      x.share == y.share,
                  "wait %u of job %llu differs: reason %u/%u", i, (unsigned long long)x.job_id, x.reason, y.reason);
        char text[512];
        snprintf(text, sizeof text, "%s", gpusched_sched_decisions_wait_message(p->a.d, i));
        cr_assert_str_eq(text, gpusched_sched_decisions_wait_message(p->b.d, i));
        uint32_t sa, sb;
        gpusched_sched_wait ja = GPUSCHED_SCHED_WAIT_INIT, jb = GPUSCHED_SCHED_WAIT_INIT;
        cr_assert_eq(gpusched_sched_job_state(p->a.s, x.job_id, &sa, &ja), 0);
        cr_assert_eq(gpusched_sched_job_state(p->b.s, x.job_id, &sb, &jb), 0);
        cr_assert(sa == sb && ja.reason == jb.reason && ja.seq == jb.seq && ja.free_gpus == jb.free_gpus &&
                  ja.used == jb.used && ja.reason == x.reason && ja.seq == x.seq);
    }
}

/* Same decisions in both; the running jobs updated from them. Returns the
 * waits that were quick candidates' outcomes (quota or fit). */
static uint32_t same_decisions(pair *p, uint64_t *running, uint32_t *nrun)
{
    const uint64_t *ia, *ib, *fa, *fb;
    uint32_t na, nb;
    cr_assert_eq(gpusched_sched_decisions_quiet(p->a.d), gpusched_sched_decisions_quiet(p->b.d));
    gpusched_sched_decisions_starts(p->a.d, &ia, &na);
    gpusched_sched_decisions_starts(p->b.d, &ib, &nb);
    cr_assert_eq(na, nb);
    for (uint32_t i = 0; i < na; i++) {
        const uint32_t *xa, *xb;
        const uint64_t *ma, *mb;
        uint32_t sa, sb, ka, kb;
        cr_assert_eq(gpusched_sched_decisions_start(p->a.d, i, NULL, &sa, &xa, &ma, &ka), 0);
        cr_assert_eq(gpusched_sched_decisions_start(p->b.d, i, NULL, &sb, &xb, &mb, &kb), 0);
        cr_assert(ia[i] == ib[i] && sa == sb && ka == kb);
        cr_assert(memcmp(xa, xb, ka * sizeof *xa) == 0 && memcmp(ma, mb, ka * sizeof *ma) == 0);
        running[(*nrun)++] = ia[i];
    }
    gpusched_sched_decisions_evictions(p->a.d, &ia, &fa, &na);
    gpusched_sched_decisions_evictions(p->b.d, &ib, &fb, &nb);
    cr_assert_eq(na, nb);
    for (uint32_t i = 0; i < na; i++) {
        cr_assert(ia[i] == ib[i] && fa[i] == fb[i]);
        for (uint32_t k = 0; k < *nrun; k++)
            if (running[k] == ia[i]) {
                running[k] = running[--*nrun];
                break;
            }
    }
    uint32_t nr = gpusched_sched_decisions_reservation_count(p->a.d);
    cr_assert_eq(nr, gpusched_sched_decisions_reservation_count(p->b.d));
    for (uint32_t i = 0; i < nr; i++) {
        uint64_t ja, jb;
        int64_t ta, tb;
        uint32_t la, lb, da, db, ka, kb;
        const uint32_t *xa, *xb;
        gpusched_sched_decisions_reservation(p->a.d, i, &ja, &ta, &la, &da, &xa, &ka);
        gpusched_sched_decisions_reservation(p->b.d, i, &jb, &tb, &lb, &db, &xb, &kb);
        cr_assert(ja == jb && ta == tb && la == lb && da == db && ka == kb && memcmp(xa, xb, ka * sizeof *xa) == 0);
    }
    same_waits(p);
    uint32_t nwait = 0;
    for (uint32_t i = 0; i < gpusched_sched_decisions_wait_count(p->a.d); i++) {
        gpusched_sched_wait w = GPUSCHED_SCHED_WAIT_INIT;
        gpusched_sched_decisions_wait(p->a.d, i, &w);
        nwait += w.reason == GPUSCHED_SCHED_WAIT_QUOTA || w.reason == GPUSCHED_SCHED_WAIT_FIT;
    }
    return nwait;
}

/* The caller runs a job of its own on both clusters (on a node's free
 * GPUs), or ends one: changes the schedulers did not make. */
static void outside_job(pair *p, pt_rng *r, uint64_t *ids, uint32_t *n)
{
    if (*n && (*n == 8 || pt_below(r, 2))) {
        uint32_t k = pt_below(r, *n);
        cr_assert_eq(gpusched_cluster_release(p->a.c, ids[k]), 0);
        cr_assert_eq(gpusched_cluster_release(p->b.c, ids[k]), 0);
        ids[k] = ids[--*n];
        return;
    }
    uint32_t node = pt_below(r, 24), health;
    uint64_t free_mask;
    cr_assert_eq(gpusched_cluster_node_state(p->a.c, node, &free_mask, NULL, NULL, &health), 0);
    if (!free_mask || health != GPUSCHED_NODE_UP)
        return;
    gpusched_job j = GPUSCHED_JOB_INIT;
    j.id = 900000 + pt_below(r, 1u << 20);
    uint64_t mask = free_mask & -free_mask;
    int ra = gpusched_cluster_allocate(p->a.c, &j, 1, &node, &mask);
    cr_assert_eq(ra, gpusched_cluster_allocate(p->b.c, &j, 1, &node, &mask));
    if (ra == 0)
        ids[(*n)++] = j.id;
}

static uint32_t run_seed(uint64_t seed)
{
    pt_rng r = {seed * 0x9e3779b97f4a7c15ull + 11};
    const bool cpu = pt_below(&r, 2);
    pair p;
    p.a = cpu ? st_env_small_cpu() : st_env_small();
    setenv("GPUSCHED_SCHED_QUICK", "0", 1);
    p.b = cpu ? st_env_small_cpu() : st_env_small();
    unsetenv("GPUSCHED_SCHED_QUICK");
    uint32_t leaf[4];
    both_queues(&p, &r, leaf);
    both_param(&p, GPUSCHED_SCHED_PARAM_ORDER, pt_below(&r, 3));
    both_param(&p, GPUSCHED_SCHED_PARAM_RESV_DEPTH, pt_below(&r, 4));
    both_param(&p, GPUSCHED_SCHED_PARAM_PREEMPT, pt_below(&r, 2));
    both_param(&p, GPUSCHED_SCHED_PARAM_STRICT, pt_below(&r, 5) == 0);
    both_param(&p, GPUSCHED_SCHED_PARAM_QUOTAS, pt_below(&r, 4) != 0);
    if (pt_below(&r, 3) == 0)
        both_param(&p, GPUSCHED_SCHED_PARAM_AGE_LIMIT, 20 + pt_below(&r, 40));
    /* From a stream of its own: each seed's steps stay what they were. */
    pt_rng lr = {seed * 0x2545f4914f6cdd1dull + 3};
    if (pt_below(&lr, 3) == 0)
        both_param(&p, GPUSCHED_SCHED_PARAM_LARGE_GPUS, 16 + 8 * pt_below(&lr, 3));
    both_param(&p, GPUSCHED_SCHED_PARAM_KEEP_RESV, pt_below(&lr, 2));
    /* Protection that outlasts a cycle: the lasting memo of failed
     * preemptions (cycle.c) holds until the first one ends. */
    both_param(&p, GPUSCHED_SCHED_PARAM_MIN_RUNTIME, pt_below(&lr, 3) ? 0 : 5 + pt_below(&lr, 20));
    const bool racks = pt_below(&lr, 2);
    uint64_t running[MAXJOBS], next_id = 1, outside[8];
    uint32_t nrun = 0, waits = 0, nout = 0;
    int64_t now = 0;
    for (int step = 0; step < 220; step++, now += pt_below(&r, 4)) {
        uint32_t what = pt_below(&r, 11);
        if (what < 5 && next_id < MAXJOBS) {
            uint32_t q = leaf[pt_below(&r, 4)];
            pt_rng copy = r;
            int ra = submit(&p.a, &r, next_id, q, now, cpu, racks);
            int rb = submit(&p.b, &copy, next_id, q, now, cpu, racks);
            cr_assert_eq(ra, rb);
            next_id++;
        } else if (what < 8 && nrun) {
            uint32_t k = pt_below(&r, nrun);
            cr_assert_eq(gpusched_sched_job_end(p.a.s, running[k], now), 0, "%s", gpusched_sched_errmsg(p.a.s));
            cr_assert_eq(gpusched_sched_job_end(p.b.s, running[k], now), 0);
            running[k] = running[--nrun];
        } else if (what == 8 && next_id > 1) {
            uint64_t id = 1 + pt_below(&r, (uint32_t)(next_id - 1));
            cr_assert_eq(gpusched_sched_cancel(p.a.s, id), gpusched_sched_cancel(p.b.s, id));
        } else if (what == 9 && pt_below(&r, 3) == 0) {
            /* A quota moves: admissions remembered across cycles must not
             * outlive it. */
            uint32_t k = pt_below(&r, 4);
            uint64_t nominal = 8 * pt_below(&r, 6), borrow = pt_below(&r, 2) ? GPUSCHED_SCHED_UNLIMITED : 8;
            cr_assert_eq(gpusched_sched_queue_quota_set(p.a.s, leaf[k], 0, nominal, borrow, GPUSCHED_SCHED_UNLIMITED),
                         0);
            cr_assert_eq(gpusched_sched_queue_quota_set(p.b.s, leaf[k], 0, nominal, borrow, GPUSCHED_SCHED_UNLIMITED),
                         0);
        } else if (what == 9) {
            uint32_t node = pt_below(&r, 24);
            uint32_t h = pt_below(&r, 3) ? GPUSCHED_NODE_UP : GPUSCHED_NODE_DOWN;
            cr_assert_eq(gpusched_sched_node_health_set(p.a.s, node, h, now),
                         gpusched_sched_node_health_set(p.b.s, node, h, now));
        } else if (what == 10) {
            outside_job(&p, &r, outside, &nout);
        }
        st_cycle(&p.a, now);
        st_cycle(&p.b, now);
        waits += same_decisions(&p, running, &nrun);
    }
    st_env_free(&p.a);
    st_env_free(&p.b);
    return waits;
}

Test(sched_quick, same_decisions_as_full_evaluation)
{
    uint64_t waits = 0;
    for (uint64_t seed = 1; seed <= 150; seed++)
        waits += run_seed(seed);
    /* The comparison covered many waits of the kinds quick_wait() takes. */
    cr_assert_gt(waits, 20000, "only %llu quota or fit waits compared", (unsigned long long)waits);
    cr_log_info("%llu quota or fit waits compared", (unsigned long long)waits);
}
