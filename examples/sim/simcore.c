/* The trace simulator's core (simcore.h). */
#include "simcore.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const sim_policy_names[3] = {"fifo", "easy", "full"};

/* ---- traces ---------------------------------------------------------------- */

static int parse_shape(const char *s, sim_job *j)
{
    unsigned a = 0, b = 0;
    char rest[16] = "";
    if (!strcmp(s, "any"))
        return 0;
    if (sscanf(s, "pods:%u%15s", &a, rest) >= 1 && a > 0) {
        j->pod_gpus = a;
        if (!strcmp(rest, "@rack"))
            j->in_rack = 1;
        else if (rest[0])
            return -1;
        return 0;
    }
    if (sscanf(s, "nodes/%u", &b) == 1 && b > 0) {
        j->whole = 1;
        j->slice_gpus = b;
        return 0;
    }
    return -1;
}

static void shape_text(const sim_job *j, char *buf, size_t cap)
{
    if (j->whole)
        snprintf(buf, cap, "nodes/%u", j->slice_gpus);
    else if (j->pod_gpus)
        snprintf(buf, cap, "pods:%u%s", j->pod_gpus, j->in_rack ? "@rack" : "");
    else
        snprintf(buf, cap, "any");
}

static int job_submit_less(const void *a, const void *b)
{
    const sim_job *x = a, *y = b;
    return x->submit < y->submit ? -1 : x->submit > y->submit;
}

int sim_trace_read(const char *path, sim_trace *tr, char *err, size_t errlen)
{
    memset(tr, 0, sizeof *tr);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    char line[512];
    uint32_t cap = 0, lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (lineno == 1 && !strncmp(line, "submit,", 7))
            continue;
        if (line[0] == '\n' || line[0] == '#')
            continue;
        long long submit, dur, limit;
        char queue[32], shape[32];
        unsigned gpus;
        int prio = 0;
        int got = sscanf(line, "%lld,%31[^,],%u,%31[^,],%lld,%lld,%d", &submit, queue, &gpus, shape, &dur, &limit,
                         &prio);
        sim_job j = {0};
        if (got < 6 || gpus == 0 || dur <= 0 || limit < 0 || parse_shape(shape, &j)) {
            snprintf(err, errlen, "%s:%u: expected submit,queue,gpus,shape,duration,limit[,priority]", path, lineno);
            rc = -1;
            break;
        }
        uint32_t q = 0;
        while (q < tr->nqueues && strcmp(tr->names[q], queue))
            q++;
        if (q == tr->nqueues) {
            if (q == SIM_MAX_QUEUES) {
                snprintf(err, errlen, "%s:%u: more than %u queues", path, lineno, SIM_MAX_QUEUES);
                rc = -1;
                break;
            }
            snprintf(tr->names[q], sizeof tr->names[q], "%s", queue);
            tr->nqueues++;
        }
        if (tr->n == cap) {
            cap = cap ? 2 * cap : 1024;
            tr->jobs = realloc(tr->jobs, cap * sizeof *tr->jobs);
        }
        j.submit = submit, j.duration = dur, j.limit = limit, j.queue = q, j.gpus = gpus, j.priority = prio;
        tr->jobs[tr->n++] = j;
    }
    fclose(f);
    if (rc)
        sim_trace_free(tr);
    else
        qsort(tr->jobs, tr->n, sizeof *tr->jobs, job_submit_less); /* stable enough: ties keep no order */
    return rc;
}

int sim_trace_write(const char *path, const sim_trace *tr)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "submit,queue,gpus,shape,duration,limit,priority\n");
    for (uint32_t i = 0; i < tr->n; i++) {
        const sim_job *j = &tr->jobs[i];
        char shape[32];
        shape_text(j, shape, sizeof shape);
        fprintf(f, "%lld,%s,%u,%s,%lld,%lld,%d\n", (long long)j->submit, tr->names[j->queue], j->gpus, shape,
                (long long)j->duration, (long long)j->limit, j->priority);
    }
    return fclose(f);
}

void sim_trace_free(sim_trace *tr)
{
    free(tr->jobs);
    memset(tr, 0, sizeof *tr);
}

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static double runif(rng *r)
{
    return ((double)(rnext(r) >> 11) + 0.5) / 9007199254740992.0;
}

static double rnorm(rng *r)
{
    return sqrt(-2 * log(runif(r))) * cos(2 * M_PI * runif(r));
}

/* Sizes: single GPUs dominate (median 1, as in every Acme cluster), a
 * tail of multi-node and multi-rack gangs; on NVL72 racks the large ones
 * are whole racks. Mean about 23 GPUs, between Seren (5.7) and Kalos
 * (26.8). */
static const struct {
    uint32_t gpus;
    double p;
} sim_sizes[] = {
    {1, 0.55}, {2, 0.05}, {4, 0.08}, {8, 0.17}, {16, 0.05}, {32, 0.04},
    {64, 0.025}, {144, 0.015}, {288, 0.01}, {576, 0.008}, {1152, 0.006},
};

void sim_trace_generate(sim_trace *tr, uint32_t njobs, uint32_t nqueues, uint64_t cluster_gpus, double load,
                        uint64_t seed)
{
    memset(tr, 0, sizeof *tr);
    if (nqueues > SIM_MAX_QUEUES)
        nqueues = SIM_MAX_QUEUES;
    tr->nqueues = nqueues;
    for (uint32_t q = 0; q < nqueues; q++)
        snprintf(tr->names[q], sizeof tr->names[q], "tenant%u", q);
    tr->jobs = calloc(njobs ? njobs : 1, sizeof *tr->jobs);
    tr->n = njobs;
    rng r = {seed * 0x9e3779b97f4a7c15ull + 0x1234567};
    /* Tenants' demand skewed (Zipf-like, exponent 0.8): some ask for more
     * than their share, others less. */
    double zsum = 0, zw[SIM_MAX_QUEUES];
    for (uint32_t q = 0; q < nqueues; q++)
        zsum += zw[q] = pow(q + 1.0, -0.8);
    /* Run times: log-normal with the Acme GPU jobs' median (124 s, Kalos)
     * and mean (1,259 s): sigma^2 = 2 ln(mean / median). */
    const double mu = log(124.0), sigma = sqrt(2 * log(1259.0 / 124.0));
    double work = 0;
    for (uint32_t i = 0; i < njobs; i++) {
        sim_job *j = &tr->jobs[i];
        double u = runif(&r), acc = 0;
        size_t k = 0;
        for (; k + 1 < sizeof sim_sizes / sizeof sim_sizes[0]; k++)
            if (u < (acc += sim_sizes[k].p))
                break;
        j->gpus = sim_sizes[k].gpus;
        if (j->gpus >= 72) {
            j->whole = 1;
            j->slice_gpus = 72;
        } else if (j->gpus > 4) {
            j->pod_gpus = 4;
            j->in_rack = 1;
        } else {
            j->pod_gpus = j->gpus;
        }
        double d = exp(mu + sigma * rnorm(&r));
        if (d < 10)
            d = 10;
        if (d > 50000)
            d = 50000;
        j->duration = (int64_t)d;
        j->limit = j->duration + (int64_t)(d * runif(&r)) + 1;
        double z = runif(&r) * zsum;
        uint32_t q = 0;
        for (; q + 1 < nqueues && (z -= zw[q]) > 0; q++)
            ;
        j->queue = q;
        j->priority = runif(&r) < 0.1 ? 1 : 0;
        work += (double)j->gpus * (double)j->duration;
    }
    /* Poisson arrivals for the offered load. */
    double gap = work / (load * (double)cluster_gpus) / (njobs ? njobs : 1), t = 0;
    for (uint32_t i = 0; i < njobs; i++) {
        t += -log(runif(&r)) * gap;
        tr->jobs[i].submit = (int64_t)t;
    }
}

/* ---- the run ----------------------------------------------------------------- */

typedef struct end_ev {
    int64_t t;
    uint32_t job, gen;
} end_ev;

typedef struct heap {
    end_ev *a;
    uint32_t n, cap;
} heap;

static void heap_push(heap *h, end_ev e)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 1024;
        h->a = realloc(h->a, h->cap * sizeof *h->a);
    }
    uint32_t i = h->n++;
    while (i && (h->a[(i - 1) / 2].t > e.t || (h->a[(i - 1) / 2].t == e.t && h->a[(i - 1) / 2].job > e.job))) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = e;
}

static end_ev heap_pop(heap *h)
{
    end_ev top = h->a[0], last = h->a[--h->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && (h->a[c + 1].t < h->a[c].t || (h->a[c + 1].t == h->a[c].t && h->a[c + 1].job < h->a[c].job)))
            c++;
        if (h->a[c].t > last.t || (h->a[c].t == last.t && h->a[c].job > last.job))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = last;
    return top;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The k-th smallest of v[0 .. n) (v reordered): selection by partition,
 * linear on average, where sorting 50,000 waits a dozen times was a
 * percent of a replay's wall time. */
static double kth(double *v, uint32_t n, uint32_t k)
{
    uint32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        const double pivot = v[lo + (hi - lo) / 2];
        uint32_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                const double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

static double pct(double *v, uint32_t n, double p)
{
    if (!n)
        return 0;
    uint32_t i = (uint32_t)ceil(p * n) - 1;
    return kth(v, n, i >= n ? n - 1 : i);
}

/* Max-min fair shares of `cap` among demands (water filling). */
static void water_fill(const double *demand, uint32_t n, double cap, double *out, uint32_t *idx)
{
    uint32_t m = 0;
    for (uint32_t q = 0; q < n; q++) {
        out[q] = 0;
        if (demand[q] > 0)
            idx[m++] = q;
    }
    /* Insertion sort by demand: few queues. */
    for (uint32_t i = 1; i < m; i++)
        for (uint32_t k = i; k > 0 && demand[idx[k - 1]] > demand[idx[k]]; k--) {
            uint32_t t = idx[k];
            idx[k] = idx[k - 1];
            idx[k - 1] = t;
        }
    for (uint32_t i = 0; i < m; i++) {
        double share = cap / (m - i), d = demand[idx[i]];
        out[idx[i]] = d < share ? d : share;
        cap -= out[idx[i]];
    }
}

typedef struct busy_pt {
    int64_t t;
    uint64_t busy;
} busy_pt;

int sim_override_parse(sim_overrides *o, const char *text)
{
    static const struct {
        const char *name;
        uint32_t param;
    } names[] = {{"half_life", GPUSCHED_SCHED_PARAM_HALF_LIFE},     {"resv_depth", GPUSCHED_SCHED_PARAM_RESV_DEPTH},
                 {"order", GPUSCHED_SCHED_PARAM_ORDER},             {"strict", GPUSCHED_SCHED_PARAM_STRICT},
                 {"quotas", GPUSCHED_SCHED_PARAM_QUOTAS},           {"preempt", GPUSCHED_SCHED_PARAM_PREEMPT},
                 {"min_runtime", GPUSCHED_SCHED_PARAM_MIN_RUNTIME}, {"age_limit", GPUSCHED_SCHED_PARAM_AGE_LIMIT},
                 {"preempt_max_gpus", GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS},
                 {"large_gpus", GPUSCHED_SCHED_PARAM_LARGE_GPUS},
                 {"keep_resv", GPUSCHED_SCHED_PARAM_KEEP_RESV}};
    const char *eq = strchr(text, '=');
    if (!eq || o->n >= SIM_MAX_OVERRIDES)
        return -1;
    char *end;
    long long v = strtoll(eq + 1, &end, 10);
    if (end == eq + 1 || *end)
        return -1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) == (size_t)(eq - text) && !strncmp(text, names[i].name, (size_t)(eq - text))) {
            o->param[o->n] = names[i].param;
            o->value[o->n++] = v;
            return 0;
        }
    }
    return -1;
}

static void configure(gpusched_sched *s, int policy)
{
    /* The full cycle neither spares large gangs from eviction nor puts
     * them first: both together cost the tenants within their quota their
     * prompt start (doc/sched-sim.md, "Large gangs first, and its cost"). */
    /* Priority + EASY stays Slurm-like: its one reservation is searched
     * again at every cycle, as a backfill pass re-plans (doc/sched.md,
     * "Kept reservations"). */
    static const int64_t p[3][11] = {
        /* order, depth, quotas, preempt, half-life, min runtime, strict, age limit, preempt max, large, keep */
        {GPUSCHED_SCHED_ORDER_FIFO, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
        {GPUSCHED_SCHED_ORDER_PRIORITY, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {GPUSCHED_SCHED_ORDER_FAIR, 4, 1, 1, 3600, 600, 0, 1800, 0, 0, 1},
    };
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_ORDER, p[policy][0]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_RESV_DEPTH, p[policy][1]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_QUOTAS, p[policy][2]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_PREEMPT, p[policy][3]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_HALF_LIFE, p[policy][4]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_MIN_RUNTIME, p[policy][5]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_STRICT, p[policy][6]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_AGE_LIMIT, p[policy][7]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS, p[policy][8]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_LARGE_GPUS, p[policy][9]);
    gpusched_sched_param_set(s, GPUSCHED_SCHED_PARAM_KEEP_RESV, p[policy][10]);
}

int sim_run(gpusched_topo *topo, const sim_trace *tr, int policy, const sim_overrides *over, sim_result *res,
            char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    double wall0 = now_s();
    gpusched_cluster *c = NULL;
    gpusched_sched *s = NULL;
    gpusched_sched_decisions *d = NULL;
    int rc = -1;
    const uint32_t nq = tr->nqueues, n = tr->n;
    const uint64_t G = gpusched_topo_gpu_count(topo);
    const uint32_t lowest = gpusched_topo_level_count(topo) - 1;
    uint32_t qid[SIM_MAX_QUEUES];
    int64_t *start = calloc(n ? n : 1, sizeof *start);
    uint32_t *gen = calloc(n ? n : 1, sizeof *gen);
    uint8_t *state = calloc(n ? n : 1, 1); /* 0 future, 1 pending, 2 running, 3 done */
    double *waits = malloc((n ? n : 1) * sizeof *waits), *bigw = malloc((n ? n : 1) * sizeof *bigw);
    double *qw = malloc((n ? n : 1) * sizeof *qw);
    busy_pt *pts = NULL;
    uint32_t npts = 0, pts_cap = 0;
    heap h = {0};
    double pend_g[SIM_MAX_QUEUES] = {0}, run_g[SIM_MAX_QUEUES] = {0}, demand[SIM_MAX_QUEUES], ent[SIM_MAX_QUEUES];
    uint32_t idx[SIM_MAX_QUEUES];
    double recv[SIM_MAX_QUEUES] = {0}, entitled[SIM_MAX_QUEUES] = {0};
    if (gpusched_cluster_new(topo, NULL, &c) || gpusched_sched_new(c, NULL, &s) ||
        gpusched_sched_decisions_new(NULL, &d)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    configure(s, policy);
    for (uint32_t i = 0; over && i < over->n; i++) {
        if (gpusched_sched_param_set(s, over->param[i], over->value[i])) {
            snprintf(err, errlen, "--set: %s", gpusched_sched_errmsg(s));
            goto out;
        }
    }
    for (uint32_t q = 0; q < nq; q++) {
        gpusched_sched_queue qq = GPUSCHED_SCHED_QUEUE_INIT;
        qq.name = tr->names[q];
        uint64_t share = G / nq + (q < G % nq);
        if (gpusched_sched_queue_add(s, &qq, &qid[q]) ||
            gpusched_sched_queue_quota_set(s, qid[q], 0, share, GPUSCHED_SCHED_UNLIMITED, GPUSCHED_SCHED_UNLIMITED)) {
            snprintf(err, errlen, "queue %s: %s", tr->names[q], gpusched_sched_errmsg(s));
            goto out;
        }
    }
    uint32_t next = 0, done = 0;
    int64_t prev = n ? tr->jobs[0].submit : 0, first = prev;
    uint64_t busy = 0;
    while (done < n) {
        int64_t t = INT64_MAX;
        if (next < n)
            t = tr->jobs[next].submit;
        if (h.n && h.a[0].t < t)
            t = h.a[0].t;
        if (t == INT64_MAX) {
            snprintf(err, errlen, "%u gangs can never start (too large for the cluster?)", n - done);
            goto out;
        }
        /* The interval [prev, t): received and entitled GPU-time. */
        if (t > prev) {
            double dt = (double)(t - prev);
            for (uint32_t q = 0; q < nq; q++)
                demand[q] = pend_g[q] + run_g[q];
            water_fill(demand, nq, (double)G, ent, idx);
            for (uint32_t q = 0; q < nq; q++) {
                recv[q] += run_g[q] * dt;
                entitled[q] += ent[q] * dt;
            }
        }
        prev = t;
        while (h.n && h.a[0].t == t) {
            end_ev e = heap_pop(&h);
            if (e.gen != gen[e.job] || state[e.job] != 2)
                continue;
            const sim_job *j = &tr->jobs[e.job];
            if (gpusched_sched_job_end(s, e.job + 1, t)) {
                snprintf(err, errlen, "job_end: %s", gpusched_sched_errmsg(s));
                goto out;
            }
            state[e.job] = 3;
            run_g[j->queue] -= j->gpus;
            busy -= j->gpus;
            waits[done] = (double)(start[e.job] - j->submit);
            res->jct_mean += (double)(t - j->submit);
            res->q[j->queue].jct_mean += (double)(t - j->submit);
            done++;
        }
        for (; next < n && tr->jobs[next].submit == t; next++) {
            const sim_job *j = &tr->jobs[next];
            gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
            q.gpus = j->gpus;
            if (j->whole) {
                q.split = GPUSCHED_SPLIT_WHOLE_NODES;
                q.slice_gpus[0] = j->slice_gpus;
                q.slice_level[0] = lowest;
            } else if (j->pod_gpus) {
                q.split = GPUSCHED_SPLIT_PODS;
                q.pod_gpus = j->pod_gpus;
                if (j->in_rack)
                    q.required_level = lowest;
            }
            gpusched_sched_job sj = GPUSCHED_SCHED_JOB_INIT;
            sj.id = next + 1;
            sj.queue = qid[j->queue];
            sj.priority = j->priority;
            sj.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE;
            sj.submit_time = j->submit;
            sj.duration_limit = j->limit;
            sj.cost_hint = (uint64_t)j->gpus;
            sj.request = &q;
            if (gpusched_sched_submit(s, &sj)) {
                snprintf(err, errlen, "job %u: %s", next + 1, gpusched_sched_errmsg(s));
                goto out;
            }
            state[next] = 1;
            pend_g[j->queue] += j->gpus;
        }
        double c0 = now_s();
        if (gpusched_sched_cycle(s, t, d)) {
            snprintf(err, errlen, "cycle: %s", gpusched_sched_errmsg(s));
            goto out;
        }
        res->cycle_s += now_s() - c0;
        if (gpusched_sched_decisions_quiet(d))
            continue;
        res->cycles++;
        const uint64_t *vic, *fors, *ids;
        uint32_t nv, ns;
        gpusched_sched_decisions_evictions(d, &vic, &fors, &nv);
        for (uint32_t v = 0; v < nv; v++) {
            uint32_t k = (uint32_t)(vic[v] - 1);
            const sim_job *j = &tr->jobs[k];
            gen[k]++;
            state[k] = 1;
            run_g[j->queue] -= j->gpus;
            pend_g[j->queue] += j->gpus;
            busy -= j->gpus;
            res->preemptions++;
        }
        gpusched_sched_decisions_starts(d, &ids, &ns);
        for (uint32_t i = 0; i < ns; i++) {
            uint32_t k = (uint32_t)(ids[i] - 1);
            const sim_job *j = &tr->jobs[k];
            start[k] = t;
            state[k] = 2;
            pend_g[j->queue] -= j->gpus;
            run_g[j->queue] += j->gpus;
            busy += j->gpus;
            heap_push(&h, (end_ev){t + j->duration, k, gen[k]});
            res->started++;
        }
        res->evaluations += ns + gpusched_sched_decisions_wait_count(d);
        if (npts == pts_cap) {
            pts_cap = pts_cap ? 2 * pts_cap : 4096;
            pts = realloc(pts, pts_cap * sizeof *pts);
        }
        pts[npts++] = (busy_pt){t, busy};
    }
    /* Figures. */
    res->jobs = n;
    /* Utilization while jobs arrive (the drain after the last arrival,
     * long jobs finishing on an emptying cluster, says nothing of the
     * policy). */
    const int64_t last = n ? tr->jobs[n - 1].submit : first;
    res->span = (double)(last - first);
    res->jct_mean /= n ? n : 1;
    double busy_time = 0;
    res->bucket_s = res->span / SIM_BUCKETS;
    for (uint32_t i = 0; i + 1 < npts && pts[i].t < last; i++) {
        double a = (double)(pts[i].t - first), b = (double)((pts[i + 1].t < last ? pts[i + 1].t : last) - first);
        busy_time += (double)pts[i].busy * (b - a);
        /* Spread over the buckets it covers. */
        while (a < b && res->bucket_s > 0) {
            uint32_t k = (uint32_t)(a / res->bucket_s);
            if (k >= SIM_BUCKETS)
                k = SIM_BUCKETS - 1;
            double edge = (k + 1) * res->bucket_s;
            if (edge <= a && k + 1 < SIM_BUCKETS)
                edge = (++k + 1) * res->bucket_s; /* rounding put `a` on the edge */
            double e = b < edge || k == SIM_BUCKETS - 1 || edge <= a ? b : edge;
            res->util_t[k] += (double)pts[i].busy * (e - a);
            a = e;
        }
    }
    for (uint32_t k = 0; k < SIM_BUCKETS; k++)
        res->util_t[k] /= res->bucket_s > 0 ? res->bucket_s * (double)G : 1;
    res->util = res->span > 0 ? busy_time / (res->span * (double)G) : 0;
    uint32_t nb = 0;
    for (uint32_t k = 0; k < n; k++)
        if (tr->jobs[k].gpus >= 256)
            bigw[nb++] = (double)(start[k] - tr->jobs[k].submit);
    res->big_jobs = nb;
    res->big_wait_p50 = pct(bigw, nb, 0.5);
    res->big_wait_p99 = pct(bigw, nb, 0.99);
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t m = 0;
        for (uint32_t k = 0; k < n; k++)
            if (tr->jobs[k].queue == q)
                qw[m++] = (double)(start[k] - tr->jobs[k].submit);
        res->q[q].jobs = m;
        res->q[q].wait_p50 = pct(qw, m, 0.5);
        res->q[q].wait_p99 = pct(qw, m, 0.99);
        res->q[q].jct_mean /= m ? m : 1;
        res->q[q].gpu_time = recv[q];
        res->q[q].entitled = entitled[q];
    }
    res->wait_p50 = pct(waits, n, 0.5);
    res->wait_p99 = pct(waits, n, 0.99);
    double sx = 0, sxx = 0;
    uint32_t m = 0;
    for (uint32_t q = 0; q < nq; q++)
        if (entitled[q] > 0) {
            double x = recv[q] / entitled[q];
            sx += x, sxx += x * x, m++;
        }
    res->jain = m && sxx > 0 ? sx * sx / (m * sxx) : 1;
    rc = 0;
out:
    res->wall_s = now_s() - wall0;
    free(h.a);
    free(pts);
    free(start);
    free(gen);
    free(state);
    free(waits);
    free(bigw);
    free(qw);
    gpusched_sched_decisions_free(d);
    gpusched_sched_free(s);
    gpusched_cluster_unref(c);
    return rc;
}

void sim_result_json(FILE *f, const sim_trace *tr, const sim_result *r, const char *policy)
{
    fprintf(f,
            "{\"policy\": \"%s\", \"jobs\": %u, \"started\": %u, \"preemptions\": %u, \"cycles\": %u, "
            "\"evaluations\": %llu, \"span_s\": %.0f, \"utilization\": %.6f, \"wait_p50_s\": %.1f, "
            "\"wait_p99_s\": %.1f, \"jct_mean_s\": %.1f, \"big_jobs\": %u, \"big_wait_p50_s\": %.1f, "
            "\"big_wait_p99_s\": %.1f, \"jain\": %.6f, \"cycle_s\": %.6f, \"wall_s\": %.6f, "
            "\"jobs_per_s\": %.1f, \"decisions_per_s\": %.1f, \"bucket_s\": %.3f, \"utilization_t\": [",
            policy, r->jobs, r->started, r->preemptions, r->cycles, (unsigned long long)r->evaluations, r->span,
            r->util, r->wait_p50, r->wait_p99, r->jct_mean, r->big_jobs, r->big_wait_p50, r->big_wait_p99, r->jain,
            r->cycle_s, r->wall_s, r->wall_s > 0 ? r->jobs / r->wall_s : 0,
            r->cycle_s > 0 ? (double)r->evaluations / r->cycle_s : 0, r->bucket_s);
    for (uint32_t k = 0; k < SIM_BUCKETS; k++)
        fprintf(f, "%s%.5f", k ? ", " : "", r->util_t[k]);
    fprintf(f, "], \"queues\": [");
    for (uint32_t q = 0; q < tr->nqueues; q++)
        fprintf(f,
                "%s{\"name\": \"%s\", \"jobs\": %u, \"wait_p50_s\": %.1f, \"wait_p99_s\": %.1f, \"jct_mean_s\": %.1f, "
                "\"gpu_time\": %.1f, \"entitled\": %.1f}",
                q ? ", " : "", tr->names[q], r->q[q].jobs, r->q[q].wait_p50, r->q[q].wait_p99, r->q[q].jct_mean,
                r->q[q].gpu_time, r->q[q].entitled);
    fprintf(f, "]}\n");
}
