/* Exhaustive reference search (see place-ref.h). Deliberately naive: per
 * node usable GPUs from the public state, every assignment of units by
 * depth-first enumeration, constraints checked as "each domain of the
 * level holds a multiple of the slice size". */
#include <stdio.h>
#include <string.h>

#include "place-ref.h"

#define REF_MAX_NODES 2048

typedef struct ref {
    gpusched_cluster *c;
    gpusched_topo *t;
    const gpusched_place_request *q;
    uint32_t L, nnodes, u0, units_needed, pref;
    uint32_t units[REF_MAX_NODES];
    uint32_t dom[REF_MAX_NODES][GPUSCHED_MAX_LEVELS];
    uint32_t ncons;
    uint32_t cons_level[3], cons_size[3];
    uint64_t usable_gpus[REF_MAX_NODES]; /* free for the job, filters ignored */
    uint32_t take[REF_MAX_NODES];
    uint32_t suffix[REF_MAX_NODES + 1];
    place_ref_out *out;
} ref;

static uint64_t usable_mask(gpusched_cluster *c, const gpusched_place_request *q, uint32_t n)
{
    const uint64_t job_id = q->job ? q->job->id : 0; /* NULL: job 0 */
    uint64_t fr = 0, rs = 0;
    uint32_t health = 0;
    gpusched_cluster_node_state(c, n, &fr, &rs, NULL, &health);
    if (health != GPUSCHED_NODE_UP)
        return 0;
    for (uint32_t g = 0; g < 64; g++) {
        if (!(rs >> g & 1))
            continue;
        uint32_t st;
        uint64_t holder;
        gpusched_cluster_gpu_state(c, n, g, &st, &holder);
        if (holder == job_id)
            fr |= (uint64_t)1 << g;
    }
    return fr;
}

static bool eligible(gpusched_topo *t, const gpusched_place_request *q, uint32_t n)
{
    if (q->gpu_class != GPUSCHED_NONE && gpusched_topo_node_class(t, n) != q->gpu_class)
        return false;
    uint64_t lab = gpusched_topo_node_labels(t, n);
    if ((lab & q->labels_required) != q->labels_required || (lab & q->labels_forbidden))
        return false;
    for (uint32_t i = 0; i < q->avoid_count; i++)
        if (q->avoid_nodes[i] == n)
            return false;
    return true;
}

static uint32_t node_size_for_whole(gpusched_topo *t, const gpusched_place_request *q)
{
    if (q->pod_gpus)
        return q->pod_gpus;
    uint32_t w = 0;
    for (uint32_t n = 0; n < gpusched_topo_node_count(t); n++)
        if (gpusched_topo_node_gpus(t, n) > w)
            w = gpusched_topo_node_gpus(t, n);
    return w;
}

static uint32_t units_of(gpusched_topo *t, const gpusched_place_request *q, uint32_t u0, uint32_t n, uint64_t m)
{
    uint32_t gpus = gpusched_topo_node_gpus(t, n);
    if (q->split == GPUSCHED_SPLIT_WHOLE_NODES) {
        uint64_t all = gpus >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << gpus) - 1);
        return gpus == u0 && m == all;
    }
    return (uint32_t)__builtin_popcountll(m) / u0;
}

static void ref_init(ref *r, gpusched_cluster *c, const gpusched_place_request *q, place_ref_out *out)
{
    memset(r, 0, sizeof *r);
    r->c = c;
    r->t = gpusched_cluster_topo(c);
    r->q = q;
    r->out = out;
    r->L = gpusched_topo_level_count(r->t);
    r->nnodes = gpusched_topo_node_count(r->t);
    r->u0 = q->split == GPUSCHED_SPLIT_ANY ? 1 : q->split == GPUSCHED_SPLIT_PODS ? q->pod_gpus
                                                                              : node_size_for_whole(r->t, q);
    r->units_needed = q->gpus / r->u0;
    r->pref = q->preferred_level == GPUSCHED_NONE ? r->L : q->preferred_level;
    for (uint32_t n = 0; n < r->nnodes && n < REF_MAX_NODES; n++) {
        uint64_t usable = usable_mask(c, q, n);
        r->usable_gpus[n] = (uint64_t)__builtin_popcountll(usable);
        r->units[n] = eligible(r->t, q, n) ? units_of(r->t, q, r->u0, n, usable) : 0;
        for (uint32_t l = 0; l < r->L; l++)
            gpusched_topo_node_domain(r->t, n, l, &r->dom[n][l]);
    }
    for (uint32_t i = 0; i < 2; i++)
        if (q->slice_gpus[i]) {
            r->cons_level[r->ncons] = q->slice_level[i];
            r->cons_size[r->ncons++] = q->slice_gpus[i];
        }
    if (q->required_level != GPUSCHED_NONE) {
        r->cons_level[r->ncons] = q->required_level;
        r->cons_size[r->ncons++] = q->gpus;
    }
}

/* Every domain of each constrained level holds a multiple of its size. */
static bool constraints_hold(const ref *r, const uint32_t *gpus_of_node)
{
    for (uint32_t k = 0; k < r->ncons; k++) {
        uint32_t l = r->cons_level[k];
        uint32_t nd = gpusched_topo_domain_count(r->t, l);
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t sum = 0;
            for (uint32_t n = 0; n < r->nnodes; n++)
                if (r->dom[n][l] == d)
                    sum += gpus_of_node[n];
            if (sum % r->cons_size[k])
                return false;
        }
    }
    return true;
}

static void locality_of(const ref *r, const uint32_t *gpus_of_node, uint32_t *loc)
{
    memset(loc, 0, sizeof(uint32_t) * (GPUSCHED_MAX_LEVELS + 1));
    for (uint32_t l = 0; l <= r->L; l++) {
        if (l > r->pref)
            break;
        bool seen[4096] = {false};
        for (uint32_t n = 0; n < r->nnodes; n++) {
            if (!gpus_of_node[n])
                continue;
            uint32_t d = l == r->L ? n : r->dom[n][l];
            if (d < 4096 && !seen[d]) {
                seen[d] = true;
                loc[l]++;
            }
        }
    }
}

/* Free GPUs of the one domain used at each level from the top, while one is. */
static uint32_t fit_of(const ref *r, const uint32_t *gpus_of_node, const uint32_t *loc, uint64_t *fit)
{
    uint32_t nfit = 0;
    for (uint32_t l = 0; l <= r->L && l <= r->pref && loc[l] == 1; l++) {
        uint32_t d = UINT32_MAX;
        for (uint32_t n = 0; n < r->nnodes && d == UINT32_MAX; n++)
            if (gpus_of_node[n])
                d = l == r->L ? n : r->dom[n][l];
        uint64_t free_gpus = 0;
        for (uint32_t n = 0; n < r->nnodes; n++)
            if ((l == r->L ? n : r->dom[n][l]) == d)
                free_gpus += r->usable_gpus[n];
        /* Ties between equally free domains go to the lowest index. */
        fit[nfit++] = free_gpus << 32 | d;
    }
    return nfit;
}

static bool lex_less64(const uint64_t *a, uint32_t na, const uint64_t *b, uint32_t nb)
{
    for (uint32_t i = 0; i < na && i < nb; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return na < nb;
}

static bool lex_less(const uint32_t *a, const uint32_t *b, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return false;
}

static void enumerate(ref *r, uint32_t n, uint32_t rem)
{
    if (rem == 0) {
        uint32_t gpus[REF_MAX_NODES] = {0};
        for (uint32_t i = 0; i < r->nnodes; i++)
            gpus[i] = i < n ? r->take[i] * r->u0 : 0;
        if (!constraints_hold(r, gpus))
            return;
        uint32_t loc[GPUSCHED_MAX_LEVELS + 1];
        locality_of(r, gpus, loc);
        uint64_t fit[GPUSCHED_MAX_LEVELS + 1];
        uint32_t nfit = fit_of(r, gpus, loc, fit);
        r->out->assignments++;
        bool better = !r->out->feasible || lex_less(loc, r->out->locality, r->L + 1) ||
                      (!lex_less(r->out->locality, loc, r->L + 1) &&
                       lex_less64(fit, nfit, r->out->fit, r->out->nfit));
        if (better) {
            r->out->feasible = true;
            memcpy(r->out->locality, loc, sizeof loc);
            memcpy(r->out->fit, fit, sizeof fit);
            r->out->nfit = nfit;
        }
        return;
    }
    if (n == r->nnodes || r->suffix[n] < rem)
        return;
    uint32_t most = r->units[n] < rem ? r->units[n] : rem;
    for (uint32_t a = 0; a <= most; a++) {
        r->take[n] = a;
        enumerate(r, n + 1, rem - a);
    }
    r->take[n] = 0;
}

void place_ref_solve(gpusched_cluster *c, const gpusched_place_request *req, place_ref_out *out)
{
    ref r;
    memset(out, 0, sizeof *out);
    ref_init(&r, c, req, out);
    out->nlevels = r.L;
    if (r.nnodes > REF_MAX_NODES)
        return;
    for (uint32_t n = r.nnodes; n-- > 0;)
        r.suffix[n] = r.suffix[n + 1] + r.units[n];
    enumerate(&r, 0, r.units_needed);
}

void place_ref_locality(gpusched_cluster *c, const gpusched_place_request *req, const uint32_t *nodes, uint32_t n,
                        uint32_t *locality)
{
    place_ref_out out;
    ref r;
    ref_init(&r, c, req, &out);
    uint32_t gpus[REF_MAX_NODES] = {0};
    for (uint32_t i = 0; i < n; i++)
        if (nodes[i] < REF_MAX_NODES)
            gpus[nodes[i]] = 1;
    locality_of(&r, gpus, locality);
}

void place_ref_fit(gpusched_cluster *c, const gpusched_place_request *req, const uint32_t *nodes, uint32_t n,
                   uint64_t *fit, uint32_t *nfit)
{
    place_ref_out out;
    ref r;
    ref_init(&r, c, req, &out);
    uint32_t gpus[REF_MAX_NODES] = {0};
    for (uint32_t i = 0; i < n; i++)
        if (nodes[i] < REF_MAX_NODES)
            gpus[nodes[i]] = 1;
    uint32_t loc[GPUSCHED_MAX_LEVELS + 1];
    locality_of(&r, gpus, loc);
    *nfit = fit_of(&r, gpus, loc, fit);
}

bool place_ref_check(gpusched_cluster *c, const gpusched_place_request *req, const uint32_t *nodes,
                     const uint64_t *masks, uint32_t n, char *why, size_t cap)
{
    place_ref_out out;
    ref r;
    ref_init(&r, c, req, &out);
    uint32_t gpus[REF_MAX_NODES] = {0};
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t node = nodes[i];
        if (node >= r.nnodes || node >= REF_MAX_NODES || (i && nodes[i - 1] >= node)) {
            snprintf(why, cap, "node %u out of order or range", node);
            return false;
        }
        if (!eligible(r.t, req, node)) {
            snprintf(why, cap, "node %u is not eligible", node);
            return false;
        }
        uint64_t usable = usable_mask(c, req, node);
        if (!masks[i] || (masks[i] & ~usable)) {
            snprintf(why, cap, "node %u: mask 0x%llx not within usable 0x%llx", node, (unsigned long long)masks[i],
                     (unsigned long long)usable);
            return false;
        }
        uint32_t g = (uint32_t)__builtin_popcountll(masks[i]);
        if (req->split == GPUSCHED_SPLIT_PODS && g % r.u0) {
            snprintf(why, cap, "node %u: %u GPUs is not whole pods of %u", node, g, r.u0);
            return false;
        }
        if (req->split == GPUSCHED_SPLIT_WHOLE_NODES && (units_of(r.t, req, r.u0, node, usable) != 1 ||
                                                         g != gpusched_topo_node_gpus(r.t, node))) {
            snprintf(why, cap, "node %u is not taken whole", node);
            return false;
        }
        gpus[node] = g;
        total += g;
    }
    if (total != req->gpus) {
        snprintf(why, cap, "%llu GPUs placed, %u asked", (unsigned long long)total, req->gpus);
        return false;
    }
    if (!constraints_hold(&r, gpus)) {
        snprintf(why, cap, "a slice or the required level is violated");
        return false;
    }
    return true;
}
