/* The engine against exhaustive search on thousands of tiny random
 * clusters and requests: the same feasibility (no false "does not fit",
 * and the yes-or-no what-if of the planners agrees),
 * the same optimal locality vector, and every placement valid. */
#include <stdlib.h>
#include <string.h>

#include "place-test.h"
#include "cluster/txn.h"
#include "place/place-internal.h"

typedef struct pt_stats {
    uint32_t cases, invalid, fit, nofit;
    uint32_t fuller;            /* placements gs_pl_fuller_racks() answered */
    uint32_t linear;            /* children the knapsack's window added (knapsack.c) */
} pt_stats;

/* one_case() shapes its requests for locality down to nodes over several
 * racks: no preferred level, no slice, any split or pods, larger gangs. */
static bool down_to_nodes;

/* A random cluster of at most max_nodes nodes in a random state (job
 * 4242 running); *t: its topology, alive while the cluster is. */
static gpusched_cluster *random_cluster(pt_rng *r, uint32_t max_nodes, gpusched_topo **t)
{
    *t = pt_random_topo(r, max_nodes);
    gpusched_cluster *c;
    cr_assert_eq(gpusched_cluster_new(*t, NULL, &c), 0);
    gpusched_topo_unref(*t);
    pt_random_state(r, c, 4242);
    return c;
}

/* An empty uniform cluster of data centers, zones, blocks and racks with
 * the given fan-outs (the last: nodes per rack) and 4 GPUs a node. */
static gpusched_cluster *four_level_cluster(const uint32_t fan[5])
{
    static const char *const lv[] = {"dc", "zone", "block", "rack"};
    gpusched_topo *t;
    char err[128];
    cr_assert_eq(gpusched_topo_uniform(4, lv, fan, 4, "gpu", NULL, &t, err, sizeof err), 0, "%s", err);
    gpusched_cluster *c;
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    gpusched_topo_unref(t);
    return c;
}

/* four_level_cluster() with `dcs` data centers of `zones` zones each,
 * random fan-outs below and a random state; *zone_gpus: a zone's GPUs. */
static gpusched_cluster *random_four_level(pt_rng *r, uint32_t dcs, uint32_t zones, uint32_t *zone_gpus)
{
    uint32_t fan[] = {dcs, zones, 2 + pt_below(r, 3), 0, 0};
    fan[3] = 2 + pt_below(r, 4);
    fan[4] = 2 + pt_below(r, 3);
    gpusched_cluster *c = four_level_cluster(fan);
    pt_random_state(r, c, 4242);
    *zone_gpus = fan[2] * fan[3] * fan[4] * 4;
    return c;
}

/* A request of job 4242 for any split or pods of 2 GPUs, at random; the
 * caller sets its size and levels. */
static void random_split(pt_rng *r, gpusched_place_request *q, gpusched_job *job)
{
    *q = (gpusched_place_request)GPUSCHED_PLACE_REQUEST_INIT;
    pt_req_job(q, job, 4242);
    q->split = pt_below(r, 2) ? GPUSCHED_SPLIT_ANY : GPUSCHED_SPLIT_PODS;
    q->pod_gpus = q->split == GPUSCHED_SPLIT_PODS ? 2 : 0;
}

/* A random four-level cluster with a placer and a result. */
typedef struct fl_env {
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    uint32_t zone_gpus;
} fl_env;

/* dc0 + [0, dcs) data centers of zone0 + [0, zones) zones. */
static void fl_open(fl_env *e, pt_rng *r, uint32_t dc0, uint32_t dcs, uint32_t zone0, uint32_t zones)
{
    const uint32_t ndc = dc0 + pt_below(r, dcs), nzones = zone0 + pt_below(r, zones);
    e->c = random_four_level(r, ndc, nzones, &e->zone_gpus);
    cr_assert_eq(gpusched_placer_new(e->c, NULL, &e->p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &e->res), 0);
}

static void fl_close(fl_env *e)
{
    gpusched_place_result_free(e->res);
    gpusched_placer_free(e->p);
    gpusched_cluster_unref(e->c);
}

/* The placement in res is valid for q on c. */
static void assert_valid(gpusched_cluster *c, const gpusched_place_request *q, gpusched_place_result *res,
                         uint32_t round)
{
    const uint32_t *nodes;
    const uint64_t *masks;
    uint32_t n;
    cr_assert_eq(gpusched_place_result_nodes(res, &nodes, &masks, &n), 0);
    char why[256];
    cr_assert(place_ref_check(c, q, nodes, masks, n, why, sizeof why), "round %u: %s", round, why);
}

/* The request placed again by the placer with wide keys and the general
 * knapsack kernel only: the same answer. */
static void same_as_wide(gpusched_placer *pw, const gpusched_place_request *q, int rc, gpusched_place_result *res)
{
    gpusched_place_result *wres;
    cr_assert_eq(gpusched_place_result_new(NULL, &wres), 0);
    int wrc = gpusched_placer_place(pw, q, wres);
    cr_assert_eq(wrc, rc, "wide keys: %s, narrow: %s", gpusched_err_name(wrc), gpusched_err_name(rc));
    const uint32_t *a, *b;
    const uint64_t *am, *bm;
    uint32_t na = 0, nb = 0;
    if (!rc) {
        cr_assert_eq(gpusched_place_result_nodes(res, &a, &am, &na), 0);
        cr_assert_eq(gpusched_place_result_nodes(wres, &b, &bm, &nb), 0);
        cr_assert_eq(na, nb, "wide keys: %u nodes, narrow: %u", nb, na);
        for (uint32_t i = 0; i < na; i++)
            cr_assert(a[i] == b[i] && am[i] == bm[i], "wide keys: node %u differs at %u", b[i], i);
    }
    gpusched_place_result_free(wres);
}

/* Past the knapsack budget the engine fills greedily: still complete and
 * valid, locality no longer guaranteed. budget == UINT64_MAX: the default.
 * knapsack: the placer's choice of knapsack (place-internal.h), 0 as in
 * production. wide: a second placer runs its knapsacks in 128-bit keys
 * (as on topologies too large for 64-bit ones) and must return the same
 * nodes. */
static void one_case(pt_rng *r, pt_stats *st, uint32_t max_nodes, uint64_t budget, uint8_t knapsack, bool wide)
{
    gpusched_topo *t;
    gpusched_cluster *c = random_cluster(r, max_nodes, &t);
    const uint64_t job = 4242;
    gpusched_placer *p;
    gpusched_place_result *res, *probe;
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &probe), 0);
    if (budget != UINT64_MAX)
        p->dp_budget_max = budget;
    p->knapsack = knapsack;
    gpusched_placer *pw = NULL;
    if (wide) {
        /* Also the knapsack's two kernels: the window wherever a frontier
         * is linear against the general loop only (knapsack.c). */
        cr_assert_eq(gpusched_placer_new(c, NULL, &pw), 0);
        pw->knapsack = knapsack;
        pw->wide_keys = true;
        pw->linear_mode = 1;
        p->linear_mode = 2;
    }
    for (int k = 0; k < 8; k++) {
        gpusched_place_request q;
        gpusched_job qjob;
        uint32_t avoid[4];
        pt_random_request(r, t, &q, &qjob, job, avoid);
        if (down_to_nodes) {
            q.preferred_level = GPUSCHED_NONE;
            q.slice_gpus[0] = q.slice_gpus[1] = 0;
            if (q.split == GPUSCHED_SPLIT_WHOLE_NODES) {
                q.split = GPUSCHED_SPLIT_ANY;
                q.pod_gpus = 0;
            }
            q.gpus *= 1 + pt_below(r, 3);
        }
        st->cases++;
        int rc = gpusched_placer_place(p, &q, res);
        if (pw)
            same_as_wide(pw, &q, rc, res);
        if (rc != 0 && rc != GPUSCHED_ENOSPC) {
            cr_assert(rc == GPUSCHED_EINVAL, "rc %s: %s", gpusched_err_name(rc), gpusched_placer_errmsg(p));
            st->invalid++;
            continue;
        }
        place_ref_out want;
        place_ref_solve(c, &q, &want);
        char ctx[256];
        snprintf(ctx, sizeof ctx,
                 "seed-case %u: gpus %u split %u pod %u req %d pref %d slices %u@%d %u@%d class %d lab +%llx -%llx avoid %u",
                 st->cases, q.gpus, q.split, q.pod_gpus, (int)q.required_level, (int)q.preferred_level,
                 q.slice_gpus[0], (int)q.slice_level[0], q.slice_gpus[1], (int)q.slice_level[1], (int)q.gpu_class,
                 (unsigned long long)q.labels_required, (unsigned long long)q.labels_forbidden, q.avoid_count);
        cr_assert_eq(rc == 0, want.feasible, "%s: engine %s (%s), reference %s", ctx, rc ? "no fit" : "fits",
                     gpusched_place_result_message(res), want.feasible ? "fits" : "no fit");
        /* The yes-or-no what-if (capacities alone, no nodes chosen) agrees. */
        gs_pl_req lr;
        cr_assert_eq(gs_pl_req_load(p, &q, &lr), 0);
        cr_assert_eq(gs_txn_begin(c), 0);
        int frc = gs_pl_feasible(p, &lr, probe);
        gs_txn_rollback(c);
        cr_assert_eq(frc == 0, want.feasible, "%s: feasible says %s", ctx, gpusched_err_name(frc));
        if (rc) {
            cr_assert_neq(gpusched_place_result_reason(res), GPUSCHED_REASON_OK);
            cr_assert_neq(gpusched_place_result_message(res)[0], '\0');
            st->nofit++;
            continue;
        }
        st->fit++;
        const uint32_t *nodes;
        const uint64_t *masks;
        uint32_t n;
        cr_assert_eq(gpusched_place_result_nodes(res, &nodes, &masks, &n), 0);
        char why[256];
        cr_assert(place_ref_check(c, &q, nodes, masks, n, why, sizeof why), "%s: invalid placement: %s", ctx, why);
        /* Whatever the budget, the placement has the key its candidate
         * was chosen by. */
        cr_assert_eq(p->key_misses, 0, "%s: the assignment missed the key its candidate won by", ctx);
        if (budget != UINT64_MAX)
            continue;
        cr_assert_eq(p->node_work_spent, 0u, "%s: the search down to nodes ran out of work", ctx);
        uint32_t got[GPUSCHED_MAX_LEVELS + 1];
        place_ref_locality(c, &q, nodes, n, got);
        for (uint32_t l = 0; l <= want.nlevels; l++)
            cr_assert_eq(got[l], want.locality[l], "%s: level %u uses %u domains, optimum %u", ctx, l, got[l],
                         want.locality[l]);
        uint64_t fit[GPUSCHED_MAX_LEVELS + 1];
        uint32_t nfit;
        place_ref_fit(c, &q, nodes, n, fit, &nfit);
        cr_assert_eq(nfit, want.nfit, "%s: single-domain levels %u, reference %u", ctx, nfit, want.nfit);
        for (uint32_t l = 0; l < nfit; l++)
            cr_assert_eq(fit[l], want.fit[l],
                         "%s: level %u: chose domain %llu with %llu free GPUs, the tightest is %llu with %llu", ctx, l,
                         (unsigned long long)(fit[l] & 0xffffffff), (unsigned long long)(fit[l] >> 32),
                         (unsigned long long)(want.fit[l] & 0xffffffff), (unsigned long long)(want.fit[l] >> 32));
    }
    st->fuller += p->fuller_racks;
    st->linear += p->linear_children;
    gpusched_place_result_free(res);
    gpusched_place_result_free(probe);
    gpusched_placer_free(p);
    gpusched_placer_free(pw);
    gpusched_cluster_unref(c);
}

static pt_stats run_with(uint64_t seed, uint32_t rounds, uint32_t max_nodes, uint64_t budget, uint8_t knapsack,
                         bool wide)
{
    pt_rng r = {seed};
    pt_stats st = {0};
    for (uint32_t i = 0; i < rounds; i++)
        one_case(&r, &st, max_nodes, budget, knapsack, wide);
    cr_log_info("%u cases: %u invalid, %u fit, %u do not fit", st.cases, st.invalid, st.fit, st.nofit);
    cr_assert_gt(st.fit, st.cases / 8, "too few feasible cases to mean anything");
    cr_assert_gt(st.nofit, 0);
    return st;
}

static void run(uint64_t seed, uint32_t rounds, uint32_t max_nodes, uint64_t budget)
{
    run_with(seed, rounds, max_nodes, budget, 0, false);
}

Test(place_property, small_clusters_match_exhaustive_search) { run(0x9e3779b97f4a7c15ull, 3000, 8, UINT64_MAX); }

/* The two knapsacks (over units, over counts of children and grandchildren)
 * each on their own, wherever they apply: the production choice between
 * them is by cost, which on clusters this small is mostly the first. */
Test(place_property, each_knapsack_matches_exhaustive_search)
{
    run_with(0x7f4a7c159e3779b9ull, 1500, 12, UINT64_MAX, 1, false);
    run_with(0x7f4a7c159e3779b9ull, 1500, 12, UINT64_MAX, 2, false);
}

/* Every key of these clusters fits in 64 bits, so production runs the
 * knapsack rows in 64 bits; the 128-bit rows (for topologies too large for
 * that) must choose the same nodes, with each knapsack. */
Test(place_property, wide_key_knapsacks_choose_the_same_nodes)
{
    pt_stats a = run_with(0x3c6ef372fe94f82bull, 700, 12, UINT64_MAX, 0, true);
    pt_stats b = run_with(0x3c6ef372fe94f82bull, 700, 12, UINT64_MAX, 1, true);
    cr_log_info("%u and %u children added by the knapsack's window", a.linear, b.linear);
    cr_assert(a.linear > 20 && b.linear > 20);
}

Test(place_property, larger_clusters_match_exhaustive_search) { run(0x2545f4914f6cdd1dull, 1500, 12, UINT64_MAX); }

/* Locality down to nodes over several racks, where the search counted
 * down to racks answers first and its nodes are taken again, bounded,
 * and (gs_pl_fuller_racks) chosen again on fuller racks of the same
 * blocks: every answer has the exhaustive search's locality. */
Test(place_property, nodes_after_racks_match_exhaustive_search)
{
    const bool slow = getenv("GPUSCHED_UNDER_VALGRIND") != NULL;
    down_to_nodes = true;
    pt_stats st = run_with(0x510e527fade682d1ull, slow ? 300 : 3000, 12, UINT64_MAX, 0, false);
    down_to_nodes = false;
    cr_log_info("%u answered on fuller racks", st.fuller);
    cr_assert_gt(st.fuller, slow ? 0u : 10u);
}

Test(place_property, past_the_knapsack_budget_still_complete_and_valid)
{
    run(0x51ed270b27a3e5f1ull, 1500, 12, 0);
}

/* A random request counted down to nodes that the search counts down to
 * racks first (gs_pl_req_coarse), placed into res, and with the lowest
 * domain level preferred into low; lr: its loaded form, q: the request
 * (its job and avoided nodes are static: valid until the next call). -1
 * when the draw is no such request, else the placements' rc (asserted
 * equal). */
static int place_both_ways(pt_rng *r, gpusched_topo *t, gpusched_placer *p, bool no_slices,
                           gpusched_place_result *res, gpusched_place_result *low, gs_pl_req *lr,
                           gpusched_place_request *out)
{
    const uint32_t L = gpusched_topo_level_count(t);
    gpusched_place_request q;
    static gpusched_job job;
    static uint32_t avoid[4];
    pt_random_request(r, t, &q, &job, 4242, avoid);
    q.gpus *= 1 + pt_below(r, 24); /* still a multiple of the unit */
    q.preferred_level = GPUSCHED_NONE;
    if (no_slices)
        q.slice_gpus[0] = q.slice_gpus[1] = 0;
    gs_pl_req coarse;
    if (L == 0 || gs_pl_req_load(p, &q, lr) || !gs_pl_req_coarse(p, lr, &coarse))
        return -1;
    int rc = gpusched_placer_place(p, &q, res);
    gpusched_place_request ql = q;
    ql.preferred_level = L - 1;
    cr_assert_eq(gpusched_placer_place(p, &ql, low), rc);
    if (out)
        *out = q;
    return rc;
}

/* Locality counted down to nodes first tries the search counted down to
 * the lowest domain level; when its knapsack runs out of budget the full
 * search may do worse than that first answer, which is then kept. So with
 * no budget at all, the answer is never worse (locality vector, nodes
 * last) than the same request's with the lowest domain level preferred. */
Test(place_property, past_the_budget_no_worse_than_counting_down_to_racks)
{
    pt_rng r = {0x9b05688c2b3e6c1full};
    uint32_t compared = 0, better = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 30 : 300;
    for (uint32_t round = 0; round < rounds; round++) {
        gpusched_topo *t;
        gpusched_cluster *c = random_cluster(&r, 300, &t);
        gpusched_placer *p;
        gpusched_place_result *res, *low;
        cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
        p->dp_budget_max = 0;
        cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
        cr_assert_eq(gpusched_place_result_new(NULL, &low), 0);
        for (int k = 0; k < 8; k++) {
            gs_pl_req lr;
            if (place_both_ways(&r, t, p, false, res, low, &lr, NULL))
                continue;
            const uint32_t *a, *b;
            uint32_t na, nb;
            cr_assert_eq(gpusched_place_result_locality(res, &a, &na), 0);
            cr_assert_eq(gpusched_place_result_locality(low, &b, &nb), 0);
            cr_assert_eq(na, nb);
            uint32_t i = 0;
            while (i < na && a[i] == b[i])
                i++;
            cr_assert(i == na || a[i] < b[i], "level %u: %u domains down to nodes, %u down to racks", i, a[i], b[i]);
            compared++;
            better += i < na;
        }
        gpusched_place_result_free(res);
        gpusched_place_result_free(low);
        gpusched_placer_free(p);
        gpusched_cluster_unref(c);
    }
    cr_log_info("%u compared, %u better down to nodes", compared, better);
    cr_assert_gt(compared, rounds / 4);
    cr_assert_gt(better, 0);
}

/* The fewest nodes of racks[0 .. n) holding `units` units (a node of the
 * lowest domain level gives its free GPUs over u0, or 1 when whole): the
 * nodes with the most units first, by a plain sort. */
static uint32_t fewest_nodes_of_racks(const gpusched_cluster *c, const gpusched_topo *t, const gs_pl_req *lr,
                                      const uint32_t *racks, uint32_t n, uint64_t units)
{
    const uint32_t low = gpusched_topo_level_count(t) - 1;
    uint32_t vals[512], nv = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t a = t->dom_start[low][racks[i]], b = t->dom_start[low][racks[i] + 1];
        for (uint32_t x = a; x < b; x++) {
            cr_assert_lt(nv, 512u);
            vals[nv++] = gs_pl_units_of_mask(lr, t, x, gs_cluster_node_avail(c, x));
        }
    }
    for (uint32_t i = 1; i < nv; i++)
        for (uint32_t j = i; j > 0 && vals[j] > vals[j - 1]; j--) {
            uint32_t tmp = vals[j];
            vals[j] = vals[j - 1];
            vals[j - 1] = tmp;
        }
    uint32_t used = 0;
    for (uint64_t held = 0; held < units && used < nv; used++)
        held += vals[used];
    return used;
}

/* Locality down to nodes, no slice: the answer uses no more nodes than
 * the fewest nodes of the racks the search counted down to racks chose,
 * unless it uses fewer domains above the nodes; half the clusters with
 * no knapsack budget, where the search down to nodes is skipped once one
 * is refused. doc/placement.md, "Counted levels". */
Test(place_property, nodes_are_the_fewest_of_the_racks_chosen)
{
    pt_rng r = {0x3c6ef372fe94f82bull};
    uint32_t compared = 0, fewer = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 40 : 400;
    for (uint32_t round = 0; round < rounds; round++) {
        gpusched_topo *t;
        gpusched_cluster *c = random_cluster(&r, 300, &t);
        gpusched_placer *p;
        gpusched_place_result *res, *low;
        cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
        if (round & 1)
            p->dp_budget_max = 0;
        cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
        cr_assert_eq(gpusched_place_result_new(NULL, &low), 0);
        const uint32_t L = gpusched_topo_level_count(t);
        for (int k = 0; k < 8; k++) {
            gs_pl_req lr;
            if (place_both_ways(&r, t, p, true, res, low, &lr, NULL))
                continue;
            const uint32_t *a, *b, *racks;
            uint32_t na, nb, nracks;
            cr_assert_eq(gpusched_place_result_locality(res, &a, &na), 0);
            cr_assert_eq(gpusched_place_result_locality(low, &b, &nb), 0);
            cr_assert_eq(gpusched_place_result_domains(low, L - 1, &racks, &nracks), 0);
            uint32_t i = 0;
            while (i < L && a[i] == b[i])
                i++;
            const uint32_t best = fewest_nodes_of_racks(c, t, &lr, racks, nracks, lr.gpus / lr.u0);
            if (i == L) {
                cr_assert_leq(a[L], best, "%u nodes, the coarse answer's racks hold it on %u", a[L], best);
            } else {
                cr_assert_lt(a[i], b[i], "level %u: %u domains down to nodes, %u down to racks", i, a[i], b[i]);
            }
            compared++;
            fewer += a[L] < b[L];
        }
        gpusched_place_result_free(res);
        gpusched_place_result_free(low);
        gpusched_placer_free(p);
        gpusched_cluster_unref(c);
    }
    cr_log_info("%u compared, %u on fewer nodes than the coarse answer", compared, fewer);
    cr_assert_gt(compared, rounds / 4);
    cr_assert_gt(fewer, compared / 20);
}

/* The search down to nodes after an exact answer down to racks has a
 * work budget in proportion to that answer; past it the answer down to
 * racks stands, on the fewest nodes of its racks, and is not claimed
 * exact (a knapsack counts as refused). A placer whose budget is one unit
 * runs out on every such search that does any work; with the production
 * budget the answers are never worse. (On the exhaustive-search tests'
 * clusters the production budget never runs out: one_case() checks.) */
Test(place_property, past_the_work_budget_the_answer_down_to_racks_stands)
{
    pt_rng r = {0x6a09e667f3bcc908ull};
    uint32_t compared = 0, spent = 0, fewer = 0, spent_default = 0, unmetered_fewer = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 30 : 300;
    for (uint32_t round = 0; round < rounds; round++) {
        gpusched_topo *t;
        gpusched_cluster *c = random_cluster(&r, 300, &t);
        gpusched_placer *p, *pw, *pu;
        gpusched_place_result *res, *low, *resw;
        cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
        cr_assert_eq(gpusched_placer_new(c, NULL, &pw), 0);
        cr_assert_eq(gpusched_placer_new(c, NULL, &pu), 0);
        pw->node_work_max = 1;
        pu->node_work_max = UINT64_MAX;
        cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
        cr_assert_eq(gpusched_place_result_new(NULL, &low), 0);
        cr_assert_eq(gpusched_place_result_new(NULL, &resw), 0);
        const uint32_t L = gpusched_topo_level_count(t);
        for (int k = 0; k < 8; k++) {
            gs_pl_req lr;
            gpusched_place_request q;
            pt_rng again = r, third = r;
            if (place_both_ways(&r, t, p, true, res, low, &lr, NULL))
                continue;
            const uint32_t spent_before = pw->node_work_spent;
            const uint64_t refused_before = pw->dp_refused;
            cr_assert_eq(place_both_ways(&again, t, pw, true, resw, low, &lr, &q), 0);
            assert_valid(c, &q, resw, round);
            const uint32_t *a, *b, *w, *racks;
            uint32_t na, nb, nw, nracks;
            cr_assert_eq(gpusched_place_result_locality(res, &a, &na), 0);
            cr_assert_eq(gpusched_place_result_locality(low, &b, &nb), 0);
            cr_assert_eq(gpusched_place_result_locality(resw, &w, &nw), 0);
            cr_assert_eq(gpusched_place_result_domains(low, L - 1, &racks, &nracks), 0);
            for (uint32_t i = 0; i < L; i++) {
                cr_assert_eq(w[i], b[i], "round %u, level %u: %u domains past the budget, %u down to racks", round,
                             i, w[i], b[i]);
                cr_assert_eq(a[i], b[i], "round %u, level %u: %u domains down to nodes, %u down to racks", round, i,
                             a[i], b[i]);
            }
            const uint32_t best = fewest_nodes_of_racks(c, t, &lr, racks, nracks, lr.gpus / lr.u0);
            cr_assert_leq(w[L], best, "round %u: %u nodes past the budget, the racks hold it on %u", round, w[L], best);
            cr_assert_leq(a[L], w[L], "round %u: %u nodes with the budget, %u past it", round, a[L], w[L]);
            if (pw->node_work_spent != spent_before)
                cr_assert_neq(pw->dp_refused, refused_before, "round %u: past the budget, claimed exact", round);
            fewer += a[L] < w[L];
            /* Unmetered: never fewer domains, and how often fewer nodes. */
            const uint32_t nodes_metered = a[L];
            cr_assert_eq(place_both_ways(&third, t, pu, true, resw, low, &lr, NULL), 0);
            cr_assert_eq(gpusched_place_result_locality(resw, &w, &nw), 0);
            for (uint32_t i = 0; i < L; i++)
                cr_assert_eq(w[i], b[i], "round %u, level %u: %u domains unmetered, %u down to racks", round, i, w[i],
                             b[i]);
            unmetered_fewer += w[L] < nodes_metered;
            spent += pw->node_work_spent != spent_before;
            compared++;
        }
        gpusched_place_result_free(res);
        gpusched_place_result_free(low);
        gpusched_place_result_free(resw);
        spent_default += p->node_work_spent;
        gpusched_placer_free(p);
        gpusched_placer_free(pw);
        gpusched_placer_free(pu);
        gpusched_cluster_unref(c);
    }
    cr_log_info("%u compared, %u past the work budget of one unit, %u on fewer nodes with the production budget (%u "
                "past it), %u on fewer still unmetered",
                compared, spent, fewer, spent_default, unmetered_fewer);
    cr_assert_gt(compared, rounds / 4);
    cr_assert_gt(spent, compared / 20);
}

/* Lexicographic order of two locality vectors over their first n
 * levels: <0, 0 or >0. */
static int vector_cmp(const uint32_t *a, const uint32_t *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    return 0;
}

/* Two placers on one cluster, the rack witness on (p) and off (po), and
 * a result each. */
typedef struct wp_env {
    gpusched_cluster *c;
    gpusched_placer *p, *po;
    gpusched_place_result *res, *reso;
} wp_env;

static void wp_open(wp_env *e, gpusched_cluster *c)
{
    e->c = c;
    cr_assert_eq(gpusched_placer_new(c, NULL, &e->p), 0);
    cr_assert_eq(gpusched_placer_new(c, NULL, &e->po), 0);
    e->po->witness_off = true;
    cr_assert_eq(gpusched_place_result_new(NULL, &e->res), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &e->reso), 0);
}

static void wp_close(wp_env *e)
{
    gpusched_place_result_free(e->res);
    gpusched_place_result_free(e->reso);
    gpusched_placer_free(e->p);
    gpusched_placer_free(e->po);
    gpusched_cluster_unref(e->c);
}

/* q placed with the witness and without, with the same outcome; when
 * placed, asserted valid, and *cmp the order of their locality vectors
 * above the nodes (not counted). Whether it was placed. */
static bool place_with_and_without_witness(wp_env *e, const gpusched_place_request *q, uint32_t round, int *cmp)
{
    int rc = gpusched_placer_place(e->p, q, e->res);
    cr_assert_eq(gpusched_placer_place(e->po, q, e->reso), rc);
    if (rc)
        return false;
    const uint32_t *a, *b;
    uint32_t na, nb;
    cr_assert_eq(gpusched_place_result_locality(e->res, &a, &na), 0);
    cr_assert_eq(gpusched_place_result_locality(e->reso, &b, &nb), 0);
    cr_assert_eq(na, nb);
    *cmp = vector_cmp(a, b, na - 1);
    assert_valid(e->c, q, e->res, round);
    return true;
}

/* Four levels (data center, zone, block, rack), locality counted down to
 * racks, gangs larger than a zone or a data center: the rack witness
 * (lib/place/rackwitness.c) answers where it meets its bound, and must
 * give the locality the knapsack gives with no witness at all (exact on
 * clusters this small), in valid placements. */
Test(place_property, rack_witness_matches_the_knapsack_on_four_levels)
{
    pt_rng r = {0x510e527fade682d1ull};
    uint32_t compared = 0, witnessed = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 12 : 120;
    for (uint32_t round = 0; round < rounds; round++) {
        const uint32_t dcs = 1 + pt_below(&r, 2), zones = 2 + pt_below(&r, 3);
        uint32_t zone_gpus;
        gpusched_cluster *c = random_four_level(&r, dcs, zones, &zone_gpus);
        wp_env e;
        wp_open(&e, c);
        const uint32_t dc_gpus = zones * zone_gpus;
        for (int k = 0; k < 8; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            /* Larger than a zone (candidates are data centers), or than a
             * data center (the gang spans the cluster's top level). */
            const uint32_t span = pt_below(&r, 2) ? zone_gpus : dc_gpus;
            q.gpus = (span / 4 + pt_below(&r, span + 1)) & ~1u;
            q.preferred_level = 3;
            q.required_level = pt_below(&r, 2) ? GPUSCHED_NONE : 0;
            const uint32_t before = e.p->rack_witnesses;
            int cmp;
            if (!place_with_and_without_witness(&e, &q, round, &cmp))
                continue;
            cr_assert_eq(cmp, 0, "round %u: other domain counts with the witness than without", round);
            compared++;
            witnessed += e.p->rack_witnesses != before;
        }
        wp_close(&e);
    }
    cr_log_info("%u compared, %u assigned by the rack witness", compared, witnessed);
    cr_assert_gt(compared, rounds);
    cr_assert_gt(witnessed, rounds / 10);
}

/* A uniform cluster of blocks and racks (12 to 24 blocks, enough that
 * choosing among them is past the subsets tried whole), or of zones,
 * blocks and racks (random fan-outs, 4 GPUs a node, random state);
 * *block_gpus: a block's GPUs, *gpus: the cluster's. */
static gpusched_cluster *random_blocks_and_racks(pt_rng *r, uint32_t levels, uint32_t *block_gpus, uint32_t *gpus)
{
    static const char *const lv3[] = {"zone", "block", "rack"}, *const lv2[] = {"block", "rack"};
    uint32_t fan[4], k = 0;
    if (levels == 3)
        fan[k++] = 2 + pt_below(r, 3);
    fan[k++] = levels == 3 ? 2 + pt_below(r, 5) : 12 + pt_below(r, 13);
    fan[k++] = levels == 3 ? 2 + pt_below(r, 4) : 3 + pt_below(r, 6);
    fan[k++] = 2 + pt_below(r, 3);
    gpusched_topo *t;
    char err[128];
    cr_assert_eq(gpusched_topo_uniform(levels, levels == 3 ? lv3 : lv2, fan, 4, "gpu", NULL, &t, err, sizeof err), 0,
                 "%s", err);
    gpusched_cluster *c;
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    gpusched_topo_unref(t);
    pt_random_state(r, c, 4242);
    *block_gpus = fan[k - 2] * fan[k - 1] * 4;
    *gpus = *block_gpus * fan[0] * (levels == 3 ? fan[1] : 1);
    return c;
}

/* The rack witness at the root, locality counted down to racks, gangs of
 * more than a block, in valid placements. Over zones, blocks and racks:
 * the same locality as the knapsack alone (exact on clusters this small).
 * Right above the blocks (a cluster of blocks and racks) it only stands
 * in for a knapsack past its budget: with a budget of 64 steps, never a
 * worse locality than the knapsack alone with the same budget, and
 * sometimes a better one. */
Test(place_property, rack_witness_at_the_root_of_two_and_three_levels)
{
    pt_rng r = {0x1f83d9abfb41bd6bull};
    uint32_t compared = 0, witnessed = 0, better = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 16 : 160;
    for (uint32_t round = 0; round < rounds; round++) {
        const uint32_t levels = 2 + round % 2;
        uint32_t block_gpus, gpus;
        gpusched_cluster *c = random_blocks_and_racks(&r, levels, &block_gpus, &gpus);
        wp_env e;
        wp_open(&e, c);
        if (levels == 2)
            e.p->dp_budget_max = e.po->dp_budget_max = 64;
        for (int k = 0; k < 8; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            q.gpus = (block_gpus + 2 + pt_below(&r, (levels == 3 ? 3 * block_gpus : gpus / 2) + 1)) & ~1u;
            q.preferred_level = levels - 1;
            const uint32_t before = e.p->rack_witnesses;
            int cmp;
            if (!place_with_and_without_witness(&e, &q, round, &cmp))
                continue;
            if (levels == 3)
                cr_assert_eq(cmp, 0, "round %u: other domain counts with the witness", round);
            cr_assert_leq(cmp, 0, "round %u (%u levels): a worse locality with the witness", round, levels);
            compared++;
            better += cmp < 0;
            witnessed += e.p->rack_witnesses != before;
        }
        wp_close(&e);
    }
    cr_log_info("%u compared, %u assigned by the rack witness, %u better than the knapsack past its budget", compared,
                witnessed, better);
    cr_assert_gt(compared, rounds);
    cr_assert_gt(witnessed, rounds / 10);
    cr_assert_gt(better, 0);
}

/* q placed by both placers of e (the second with a shortcut off): the
 * same outcome and, when placed, the very same nodes and GPUs. Whether
 * it was placed. */
static bool place_both_the_same(wp_env *e, const gpusched_place_request *q, uint32_t round)
{
    const int rc = gpusched_placer_place(e->p, q, e->res);
    cr_assert_eq(gpusched_placer_place(e->po, q, e->reso), rc, "round %u: outcomes differ", round);
    if (rc)
        return false;
    const uint32_t *a, *b;
    const uint64_t *am, *bm;
    uint32_t na, nb;
    cr_assert_eq(gpusched_place_result_nodes(e->res, &a, &am, &na), 0);
    cr_assert_eq(gpusched_place_result_nodes(e->reso, &b, &bm, &nb), 0);
    cr_assert_eq(na, nb, "round %u: %u nodes, %u with the shortcut off", round, na, nb);
    for (uint32_t i = 0; i < na; i++)
        cr_assert(a[i] == b[i] && am[i] == bm[i], "round %u: node %u differs at %u", round, a[i], i);
    return true;
}

/* Gangs spilling over the top of three and four levels (more than a data
 * center; racks or nodes counted) on random states, budgets from 16 steps
 * up to 16 << (shifts - 1) (so that knapsacks are refused): the placer
 * as in production and one with a shortcut switched off give the very
 * same nodes. The shortcut's count over the rounds (never taken with it
 * off) into *taken; the placements made into *placed. */
typedef struct spill_check {
    uint64_t seed;
    uint32_t state_seed, shifts;
    void (*switch_off)(gpusched_placer *po);
    uint32_t (*taken)(const gpusched_placer *p);
} spill_check;

static void spill_over_the_top(const spill_check *k, uint32_t rounds, uint32_t *placed, uint32_t *taken)
{
    pt_rng r = {k->seed};
    *placed = *taken = 0;
    for (uint32_t round = 0; round < rounds; round++) {
        /* Data centers of zones of several blocks (up to 1,728 nodes, which
         * the checker takes): fills one block short. */
        uint32_t fan[] = {2 + pt_below(&r, 2), 2 + pt_below(&r, 3), 3 + pt_below(&r, 4), 3 + pt_below(&r, 4),
                          2 + pt_below(&r, 3)};
        gpusched_cluster *c = four_level_cluster(fan);
        pt_random_state(&r, c, k->state_seed);
        const uint32_t top_gpus = fan[1] * fan[2] * fan[3] * fan[4] * 4, gpus = top_gpus * fan[0];
        wp_env e;
        wp_open(&e, c);
        e.po->witness_off = false;
        k->switch_off(e.po);
        e.p->dp_budget_max = e.po->dp_budget_max = (uint64_t)16 << pt_below(&r, k->shifts);
        e.p->node_work_max = e.po->node_work_max = UINT64_MAX / 2; /* not the meter: work differs */
        for (int j = 0; j < 8; j++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            q.gpus = (top_gpus + pt_below(&r, gpus / 2 + 1)) & ~1u; /* more than a data center */
            q.preferred_level = pt_below(&r, 2) ? 3 : (uint32_t)GPUSCHED_NONE; /* racks or nodes */
            if (!place_both_the_same(&e, &q, round))
                continue;
            assert_valid(c, &q, e.res, round);
            (*placed)++;
        }
        *taken += k->taken(e.p);
        cr_assert_eq(k->taken(e.po), 0);
        wp_close(&e);
    }
}

static void shortcut_off(gpusched_placer *po) { po->root_shortcut_off = true; }
static uint32_t roots_beaten(const gpusched_placer *p) { return p->root_beaten; }

/* The root's knapsack hands its shares out only when they may beat the
 * rack witness (search.c assign_root): the very same nodes as handing
 * them out and comparing after. */
Test(place_property, beaten_root_shares_are_not_handed_out)
{
    const spill_check k = {0x6a09e667f3bcc908ull, 4242, 4, shortcut_off, roots_beaten};
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 40 : 400;
    uint32_t placed, beaten;
    spill_over_the_top(&k, rounds, &placed, &beaten);
    cr_log_info("%u placed, %u root knapsacks beaten by the witness before handing out", placed, beaten);
    cr_assert_gt(placed, rounds);
    cr_assert_gt(beaten, rounds / 20);
}

static void stop_early_off(gpusched_placer *po) { po->stop_early_off = true; }
static uint32_t stopped_early(const gpusched_placer *p) { return p->stopped_early; }

/* Once the spending has stopped at the root (a knapsack refused with the
 * rack witness in hand), the root's knapsack is refused before the rest
 * of its children's frontiers are computed (frontier.c gs_pl_dp): the
 * very same nodes as computing them all. */
Test(place_property, stopped_knapsacks_skip_their_children)
{
    const spill_check k = {0x3c6ef372fe94f82bull, 4243, 14, stop_early_off, stopped_early};
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 40 : 400;
    uint32_t placed, stopped;
    spill_over_the_top(&k, rounds, &placed, &stopped);
    cr_log_info("%u placed, %u root knapsacks refused before their children's frontiers", placed, stopped);
    cr_assert_gt(placed, rounds);
    cr_assert_gt(stopped, rounds / 20);
}

/* Clusters of two to four levels in turn by round (blocks and racks,
 * zones above them, or four levels); *block_gpus: a block's GPUs, *gpus:
 * the cluster's, or four blocks' on four levels. */
static gpusched_cluster *two_to_four_levels(pt_rng *r, uint32_t round, uint32_t *block_gpus, uint32_t *gpus)
{
    if (round % 3 != 2)
        return random_blocks_and_racks(r, 2 + round % 3, block_gpus, gpus);
    gpusched_cluster *c = random_four_level(r, 1 + pt_below(r, 2), 2 + pt_below(r, 3), block_gpus);
    *gpus = *block_gpus * 4;
    return c;
}

/* Locality down to nodes: the search counted down to racks defers its
 * nodes (counted from the racks' histograms, handed out only if kept).
 * On two to four levels, any split or pods, gangs from a rack to half
 * the cluster: the very same nodes as handing them out at once, and every
 * count the number of nodes its hand-out took. */
Test(place_property, deferred_nodes_are_the_nodes_handed_out)
{
    pt_rng r = {0xbb67ae8584caa73bull};
    uint32_t placed = 0, kept = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 30 : 300;
    for (uint32_t round = 0; round < rounds; round++) {
        uint32_t block_gpus, gpus;
        gpusched_cluster *c = two_to_four_levels(&r, round, &block_gpus, &gpus);
        wp_env e;
        wp_open(&e, c);
        e.po->witness_off = false;
        e.po->defer_off = true;
        for (int k = 0; k < 8; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            q.gpus = (8 + pt_below(&r, gpus / 2)) & ~1u;
            q.preferred_level = GPUSCHED_NONE;
            const uint32_t flushed = e.p->defer_mismatch;
            const bool placed_both = place_both_the_same(&e, &q, round);
            cr_assert_eq(e.p->defer_mismatch, flushed, "round %u: a deferred count was not the nodes taken", round);
            if (!placed_both)
                continue;
            assert_valid(c, &q, e.res, round);
            placed++;
        }
        kept += e.p->defer_flushed;
        wp_close(&e);
    }
    cr_log_info("%u placed, %u deferred answers kept and handed out", placed, kept);
    cr_assert_gt(placed, rounds);
    cr_assert_gt(kept, rounds / 10);
}

/* The rack witness's blocks by their scores at each threshold are sorted
 * again from the last threshold's order (rackwitness.c resort_scores):
 * on four levels, gangs larger than a zone or a data center, every such
 * order in order, and the very same nodes as sorting each threshold
 * afresh. */
Test(place_property, witness_blocks_resorted_as_sorted_afresh)
{
    pt_rng r = {0x9b05688c2b3e6c1full};
    uint32_t placed = 0, resorts = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 12 : 120;
    for (uint32_t round = 0; round < rounds; round++) {
        const uint32_t dcs = 1 + pt_below(&r, 2), zones = 2 + pt_below(&r, 3);
        uint32_t zone_gpus;
        gpusched_cluster *c = random_four_level(&r, dcs, zones, &zone_gpus);
        wp_env e;
        wp_open(&e, c);
        e.po->witness_off = false;
        e.po->resort_off = true;
        e.p->resort_check = true;
        for (int k = 0; k < 8; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            const uint32_t span = pt_below(&r, 2) ? zone_gpus : zones * zone_gpus;
            q.gpus = (span / 4 + pt_below(&r, span + 1)) & ~1u;
            q.preferred_level = 3;
            q.required_level = pt_below(&r, 2) ? GPUSCHED_NONE : 0;
            if (!place_both_the_same(&e, &q, round))
                continue;
            assert_valid(c, &q, e.res, round);
            placed++;
        }
        resorts += e.p->resorts;
        cr_assert_eq(e.p->resorts_unsorted, 0, "round %u: an order sorted again is out of order", round);
        cr_assert_eq(e.po->resorts, 0);
        wp_close(&e);
    }
    cr_log_info("%u placed, %u block orders sorted again", placed, resorts);
    cr_assert_gt(placed, rounds);
    cr_assert_gt(resorts, rounds);
}

/* The search down to nodes is not run when its work budget is below the
 * nodes any answer it may keep hands out (search.c
 * search_down_to_nodes): on two to four levels, gangs from a rack to
 * half the cluster, random budgets, the very same nodes as running it. */
Test(place_property, node_searches_past_their_budget_are_not_run)
{
    pt_rng r = {0x1f83d9abfb41bd6bull};
    uint32_t placed = 0, skipped = 0, spent = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 30 : 300;
    for (uint32_t round = 0; round < rounds; round++) {
        uint32_t block_gpus, gpus;
        gpusched_cluster *c = two_to_four_levels(&r, round, &block_gpus, &gpus);
        wp_env e;
        wp_open(&e, c);
        e.po->witness_off = false;
        e.po->node_skip_off = true;
        for (int k = 0; k < 8; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            q.gpus = (block_gpus / 2 + pt_below(&r, gpus / 2 + 1)) & ~1u;
            q.preferred_level = GPUSCHED_NONE;
            e.p->node_work_max = e.po->node_work_max = 1 + pt_below(&r, 2 * q.gpus);
            if (!place_both_the_same(&e, &q, round))
                continue;
            assert_valid(c, &q, e.res, round);
            placed++;
        }
        skipped += e.p->node_work_skipped;
        spent += e.po->node_work_spent;
        cr_assert_eq(e.po->node_work_skipped, 0);
        wp_close(&e);
    }
    cr_log_info("%u placed, %u node searches not run, %u run past their budget", placed, skipped, spent);
    cr_assert_gt(placed, rounds);
    cr_assert_gt(skipped, rounds / 10);
}

/* With several data centers as candidates, each candidate's knapsack
 * spends from one budget: the winner's assignment must still have the key
 * it won by (it once fell back to greedy shares, one block more). Budgets
 * small enough that the evaluations run out. */
Test(place_property, an_assignment_keeps_the_key_its_candidate_won_by)
{
    pt_rng r = {0x3c6ef372fe94f82bull};
    uint32_t placed = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 20 : 200;
    for (uint32_t round = 0; round < rounds; round++) {
        fl_env e;
        fl_open(&e, &r, 2, 3, 2, 2);
        e.p->dp_budget_max = (uint64_t)16 << pt_below(&r, 10);
        for (int k = 0; k < 8; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            q.gpus = (e.zone_gpus / 2 + pt_below(&r, e.zone_gpus + 1)) & ~1u; /* candidates: data centers */
            q.preferred_level = pt_below(&r, 2) ? 3 : GPUSCHED_NONE;
            int rc = gpusched_placer_place(e.p, &q, e.res);
            cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "round %u: %s", round, gpusched_placer_errmsg(e.p));
            cr_assert_eq(e.p->key_misses, 0, "round %u, request %d (%u GPUs, budget %llu): the assignment missed the "
                         "key its candidate won by", round, k, q.gpus, (unsigned long long)e.p->dp_budget_max);
            if (rc)
                continue;
            assert_valid(e.c, &q, e.res, round);
            placed++;
        }
        fl_close(&e);
    }
    cr_log_info("%u placed", placed);
    cr_assert_gt(placed, rounds);
}

/* The same request under knapsack budgets from 4 to 2^24 steps, on
 * clusters too large for the exhaustive reference: a placement during
 * which no knapsack was refused for the budget claims the optimum, so no
 * budget may give a better locality vector over the counted levels. Past
 * the budget the vectors may go either way (both happen here). */
Test(place_property, an_exact_placement_is_never_beaten_by_another_budget)
{
    pt_rng r = {0x1234abcdull};
    uint32_t exact = 0, runs = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 20 : 200;
    enum { NB = 12 };
    for (uint32_t round = 0; round < rounds; round++) {
        fl_env e;
        fl_open(&e, &r, 1, 3, 2, 3);
        for (int k = 0; k < 6; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            q.gpus = (e.zone_gpus / 2 + pt_below(&r, 2 * e.zone_gpus + 1)) & ~1u;
            q.preferred_level = pt_below(&r, 2) ? 3 : GPUSCHED_NONE;
            uint32_t vec[NB][GPUSCHED_MAX_LEVELS + 1], n = 0, counted = 0;
            bool was_exact[NB];
            for (uint32_t b = 0; b < NB; b++) {
                e.p->dp_budget_max = (uint64_t)4 << (2 * b);
                const uint64_t refused = e.p->dp_refused;
                if (gpusched_placer_place(e.p, &q, e.res))
                    break;
                assert_valid(e.c, &q, e.res, round);
                const uint32_t *loc;
                uint32_t nl = 0;
                cr_assert_eq(gpusched_place_result_locality(e.res, &loc, &nl), 0);
                counted = q.preferred_level == GPUSCHED_NONE ? nl : q.preferred_level + 1;
                memcpy(vec[n], loc, counted * sizeof *loc);
                was_exact[n++] = e.p->dp_refused == refused;
            }
            for (uint32_t i = 0; i < n; i++) {
                runs++;
                exact += was_exact[i];
                for (uint32_t j = 0; was_exact[i] && j < n; j++)
                    cr_assert_leq(vector_cmp(vec[i], vec[j], counted), 0,
                                  "round %u, request %d (%u GPUs, split %u): exact at budget %llu, beaten at %llu",
                                  round, k, q.gpus, q.split, 4ull << (2 * i), 4ull << (2 * j));
            }
        }
        fl_close(&e);
    }
    cr_log_info("%u placements, %u exact", runs, exact);
    cr_assert_gt(exact, runs / 4);
    cr_assert_lt(exact, runs);
}

/* The placements in a and b are the same nodes and GPUs. */
static bool same_nodes(gpusched_place_result *a, gpusched_place_result *b)
{
    const uint32_t *na, *nb;
    const uint64_t *ma, *mb;
    uint32_t ca, cb;
    cr_assert_eq(gpusched_place_result_nodes(a, &na, &ma, &ca), 0);
    cr_assert_eq(gpusched_place_result_nodes(b, &nb, &mb, &cb), 0);
    if (ca != cb)
        return false;
    for (uint32_t i = 0; i < ca; i++)
        if (na[i] != nb[i] || ma[i] != mb[i])
            return false;
    return true;
}

/* A placer's memos (capacities, subsets, witnesses, knapsack scratch)
 * never change an answer: one placer serving a sequence of requests,
 * some committed, with jobs released between them, answers each exactly
 * as a new placer does, and its yes-or-no what-if agrees. */
Test(place_property, answers_do_not_depend_on_the_placer_history)
{
    pt_rng r = {0x77aa55ccull};
    uint32_t compared = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 15 : 150;
    for (uint32_t round = 0; round < rounds; round++) {
        fl_env e;
        fl_open(&e, &r, 1, 3, 2, 3);
        gpusched_place_result *fresh_res;
        cr_assert_eq(gpusched_place_result_new(NULL, &fresh_res), 0);
        for (uint32_t k = 0; k < 10; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            job.id = 10000 + k;
            q.gpus = (2 + pt_below(&r, 2 * e.zone_gpus + 1)) & ~1u;
            const uint32_t pref = pt_below(&r, 5);
            q.preferred_level = pref == 4 ? GPUSCHED_NONE : pref;
            if (pt_below(&r, 3) == 0)
                q.required_level = pt_below(&r, 2);
            gpusched_placer *fresh;
            cr_assert_eq(gpusched_placer_new(e.c, NULL, &fresh), 0);
            const int frc = gpusched_placer_place(fresh, &q, fresh_res);
            gpusched_placer_free(fresh);
            if (pt_below(&r, 3) == 0)
                q.flags |= GPUSCHED_PLACE_FLAG_COMMIT;
            /* The yes-or-no what-if (capacities only) agrees. */
            gs_pl_req lr;
            cr_assert_eq(gs_pl_req_load(e.p, &q, &lr), 0);
            cr_assert_eq(gs_txn_begin(e.c), 0);
            const int yes = gs_pl_feasible(e.p, &lr, e.res) == 0;
            gs_txn_rollback(e.c);
            cr_assert_eq(yes, frc == 0, "round %u, request %u: feasible says %d, placement %s", round, k, yes,
                         gpusched_err_name(frc));
            const int rc = gpusched_placer_place(e.p, &q, e.res);
            cr_assert_eq(rc, frc, "round %u, request %u: %s with history, %s without", round, k,
                         gpusched_err_name(rc), gpusched_err_name(frc));
            if (!rc) {
                cr_assert(same_nodes(e.res, fresh_res), "round %u, request %u (%u GPUs): other nodes with history",
                          round, k, q.gpus);
                compared++;
            }
            if (k > 0 && pt_below(&r, 4) == 0)
                gpusched_cluster_release(e.c, 10000 + pt_below(&r, k)); /* ENOENT when it did not run: fine */
        }
        gpusched_place_result_free(fresh_res);
        fl_close(&e);
    }
    cr_log_info("%u placements compared", compared);
    cr_assert_gt(compared, rounds * 5);
}

/* A gang that needs more zones than the rack witness tries choices of
 * (64): placed, valid, on the fewest zones. */
Test(place_property, rack_witness_past_its_choices)
{
    const uint32_t fan[] = {1, 80, 1, 2, 1};
    gpusched_cluster *c = four_level_cluster(fan);
    /* One node of every zone half used: each zone holds 4 GPUs whole and 2 more. */
    for (uint32_t z = 0; z < 80; z++) {
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = 100 + z;
        uint32_t node = 2 * z;
        uint64_t mask = 0x3;
        cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &node, &mask), 0);
    }
    gpusched_placer *p;
    gpusched_place_result *res;
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    gpusched_place_request q = GPUSCHED_PLACE_REQUEST_INIT;
    gpusched_job job;
    pt_req_job(&q, &job, 4242);
    q.gpus = 70 * 6; /* 70 zones at 6 free GPUs each */
    q.preferred_level = 3;
    cr_assert_eq(gpusched_placer_place(p, &q, res), 0, "%s", gpusched_placer_errmsg(p));
    const uint32_t *nodes, *loc;
    const uint64_t *masks;
    uint32_t n, nl;
    cr_assert_eq(gpusched_place_result_nodes(res, &nodes, &masks, &n), 0);
    char why[256];
    cr_assert(place_ref_check(c, &q, nodes, masks, n, why, sizeof why), "%s", why);
    cr_assert_eq(gpusched_place_result_locality(res, &loc, &nl), 0);
    cr_assert_eq(loc[1], 70, "zones used: %u", loc[1]);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
}

/* Larger clusters and gangs, so that the knapsack's frontiers are long
 * (no exhaustive reference: too many nodes): the 64-bit rows and the
 * 128-bit rows choose the same nodes. */
Test(place_property, knapsack_widths_agree_on_larger_clusters)
{
    pt_rng r = {0x6a09e667f3bcc909ull};
    uint32_t compared = 0, fits = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 15 : 150;
    for (uint32_t round = 0; round < rounds; round++) {
        gpusched_topo *t;
        gpusched_cluster *c = random_cluster(&r, 300, &t);
        gpusched_placer *p, *pw;
        gpusched_place_result *res;
        cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
        cr_assert_eq(gpusched_placer_new(c, NULL, &pw), 0);
        pw->wide_keys = true;
        cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
        for (int k = 0; k < 6; k++) {
            gpusched_place_request q;
            gpusched_job job;
            uint32_t avoid[4];
            pt_random_request(&r, t, &q, &job, 4242, avoid);
            q.gpus *= 1 + pt_below(&r, 24); /* still a multiple of the unit */
            if (pt_below(&r, 2))
                q.preferred_level = GPUSCHED_NONE; /* counted down to nodes */
            int rc = gpusched_placer_place(p, &q, res);
            same_as_wide(pw, &q, rc, res);
            compared++;
            fits += rc == 0;
        }
        gpusched_place_result_free(res);
        gpusched_placer_free(p);
        gpusched_placer_free(pw);
        gpusched_cluster_unref(c);
    }
    cr_log_info("%u requests compared, %u placed", compared, fits);
    cr_assert_gt(fits, compared / 8, "too few feasible cases to mean anything");
}

/* A uniform cluster whose blocks repeat a few random fill patterns: many
 * subsets of equal capacity and equal counts, where the order of the
 * enumeration decides. */
static gpusched_cluster *periodic_cluster(pt_rng *r, gpusched_topo **out)
{
    const uint32_t fan[] = {3 + pt_below(r, 5), 2 + pt_below(r, 3), 2 + pt_below(r, 3)};
    gpusched_topo *t = pt_uniform(2, fan, 4);
    gpusched_cluster *c;
    cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
    const uint32_t per_block = fan[1] * fan[2], period = 1 + pt_below(r, 2);
    uint64_t pattern[2][16];
    for (uint32_t k = 0; k < period; k++)
        for (uint32_t i = 0; i < per_block; i++)
            pattern[k][i] = pt_below(r, 2) ? pt_next(r) & 0xf : 0;
    uint64_t id = 1000;
    for (uint32_t n = 0; n < fan[0] * per_block; n++) {
        uint64_t m = pattern[(n / per_block) % period][n % per_block];
        if (m) {
            gpusched_job j = GPUSCHED_JOB_INIT;
            j.id = id++;
            cr_assert_eq(gpusched_cluster_allocate(c, &j, 1, &n, &m), 0);
        }
    }
    *out = t;
    return c;
}

/* Blocks of 32 to 63 racks (the subsets search counts each block's racks
 * by capacity in banks from 32 on, subsets.c runs_desc): the very same
 * nodes as counting them in one bank. */
Test(place_property, subsets_count_wide_blocks_in_banks)
{
    pt_rng r = {0x243f6a8885a308d3ull};
    uint32_t placed = 0, banked = 0;
    const uint32_t rounds = getenv("GPUSCHED_UNDER_VALGRIND") ? 20 : 200;
    for (uint32_t round = 0; round < rounds; round++) {
        const uint32_t fan[] = {3 + pt_below(&r, 6), 32 + pt_below(&r, 32), 1 + pt_below(&r, 2)};
        gpusched_topo *t = pt_uniform(2, fan, 4);
        gpusched_cluster *c;
        cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
        gpusched_topo_unref(t);
        pt_random_state(&r, c, 4242);
        wp_env e;
        wp_open(&e, c);
        e.po->witness_off = false;
        e.po->runs_unbanked = true;
        const uint32_t block_gpus = fan[1] * fan[2] * 4;
        for (int k = 0; k < 8; k++) {
            gpusched_place_request q;
            gpusched_job job;
            random_split(&r, &q, &job);
            q.gpus = (block_gpus / 2 + pt_below(&r, 3 * block_gpus)) & ~1u;
            q.preferred_level = pt_below(&r, 2) ? 1 : GPUSCHED_NONE;
            if (!place_both_the_same(&e, &q, round))
                continue;
            assert_valid(c, &q, e.res, round);
            placed++;
        }
        banked += e.p->runs_banked;
        cr_assert_eq(e.po->runs_banked, 0);
        wp_close(&e);
    }
    cr_log_info("%u placed, %u blocks' racks counted in banks", placed, banked);
    cr_assert_gt(placed, rounds);
    cr_assert_gt(banked, rounds);
}

/* The subsets search (several children of a domain, the fewest
 * grandchildren in them) runs as a branch and bound that skips what cannot
 * win; it must choose exactly what trying every subset chooses, ties by
 * least capacity and then by order included, which the reference above
 * does not see (it checks the locality and the tightest single domains).
 * Two placers over one cluster, one trying every subset by the plain loop,
 * the other by the branch and bound from the first (in production it
 * starts after 64): the same nodes. */
Test(place_property, subsets_branch_and_bound_matches_every_subset)
{
    pt_rng r = {0x3c6ef372fe94f82bull};
    uint32_t searched = 0, fit = 0;
    for (uint32_t round = 0; round < 3000; round++) {
        const uint64_t job = 4242;
        gpusched_topo *t;
        gpusched_cluster *c;
        if (round & 1) {
            c = periodic_cluster(&r, &t);
        } else {
            t = pt_random_topo(&r, 12);
            cr_assert_eq(gpusched_cluster_new(t, NULL, &c), 0);
            pt_random_state(&r, c, job);
        }
        gpusched_placer *fast, *plain;
        gpusched_place_result *a, *b;
        cr_assert_eq(gpusched_placer_new(c, NULL, &fast), 0);
        cr_assert_eq(gpusched_placer_new(c, NULL, &plain), 0);
        cr_assert_eq(gpusched_place_result_new(NULL, &a), 0);
        cr_assert_eq(gpusched_place_result_new(NULL, &b), 0);
        fast->subsets_mode = 2;
        plain->subsets_mode = 1;
        for (int k = 0; k < 8; k++) {
            gpusched_place_request q;
            gpusched_job qjob;
            uint32_t avoid[4];
            pt_random_request(&r, t, &q, &qjob, job, avoid);
            const int ra = gpusched_placer_place(fast, &q, a), rb = gpusched_placer_place(plain, &q, b);
            cr_assert_eq(ra, rb);
            if (ra)
                continue;
            fit++;
            const uint32_t *na, *nb;
            const uint64_t *ma, *mb;
            uint32_t ca, cb;
            gpusched_place_result_nodes(a, &na, &ma, &ca);
            gpusched_place_result_nodes(b, &nb, &mb, &cb);
            cr_assert_eq(ca, cb, "round %u: %u nodes against %u", round, ca, cb);
            for (uint32_t i = 0; i < ca; i++) {
                cr_assert_eq(na[i], nb[i], "round %u: node %u of %u differs", round, i, ca);
                cr_assert_eq(ma[i], mb[i]);
            }
        }
        searched += fast->subsets_bb;
        cr_assert_eq(plain->subsets_bb, 0);
        gpusched_place_result_free(a);
        gpusched_place_result_free(b);
        gpusched_placer_free(fast);
        gpusched_placer_free(plain);
        gpusched_cluster_unref(c);
        gpusched_topo_unref(t);
    }
    cr_log_info("%u placements, %u branch and bound searches", fit, searched);
    cr_assert_gt(searched, 200, "too few searches by branch and bound to mean anything (%u)", searched);
}
