/* Resources and GPU fractions: the state a job placed with cpu, memory or
 * a fraction of a GPU holds beyond its GPU masks (gs_podx), its claim,
 * its release and the queries. The whole-GPU paths never come here: a job
 * without a podx is claimed and released exactly as before.
 *
 * A shared GPU (some fraction of it held) is neither free nor held by one
 * job: its bit leaves node_free for node_shared, its holder entry is
 * GS_HOLDER_SHARED and gpu_milli_used says how much is held. When its last
 * fraction goes, it is free again. So every aggregate of free GPUs keeps
 * counting fully free GPUs only, which is what whole-GPU requests need. */
#include <string.h>

#include "bytes.h"
#include "cluster-write.h"

static int leafsum_alloc(struct gpusched_cluster *c)
{
    const uint32_t nleaf = c->topo->ndom[c->topo->nlevels - 1];
    c->leafsum = gs_malloc(&c->alloc, (size_t)nleaf * sizeof *c->leafsum);
    c->leaf_dirty = gs_malloc(&c->alloc, nleaf);
    if (!c->leafsum || !c->leaf_dirty) {
        gs_free(&c->alloc, c->leafsum);
        gs_free(&c->alloc, c->leaf_dirty);
        c->leafsum = NULL;
        c->leaf_dirty = NULL;
        return GPUSCHED_ENOMEM;
    }
    memset(c->leaf_dirty, 1, nleaf);
    return 0;
}

/* A set's largest value and how many members hold it (n = 0, max = 0: an
 * empty set). */
static void max_add(uint32_t *max, uint32_t *n, uint32_t v)
{
    if (*n == 0 || v > *max) {
        *max = v;
        *n = 1;
    } else if (v == *max) {
        ++*n;
    }
}

/* A member's value goes from `old` to `now` (has_old/has_now: whether it
 * is a member before and after). False when the last holder of the largest
 * value left it: only a recount knows the new largest. */
static bool max_move(uint32_t *max, uint32_t *n, bool has_old, uint32_t old, bool has_now, uint32_t now)
{
    bool lost = false;
    if (has_old && old == *max && *n && --*n == 0)
        lost = true;
    if (has_now && (lost || now >= *max || *n == 0)) {
        if (lost && now < *max)
            return false; /* the others may hold more than `now` */
        max_add(max, n, now);
        return true;
    }
    if (lost)
        *max = 0;
    return !lost;
}

/* The summary follows a change of node's resource r. */
static void leaf_res(struct gpusched_cluster *c, uint32_t node, uint32_t r, uint32_t old, uint32_t now)
{
    const uint32_t leaf = gs_cl_node_leaf(c, node);
    if (!c->leafsum || c->leaf_dirty[leaf])
        return;
    gs_leafsum *s = &c->leafsum[leaf];
    s->res_sum[r] += (uint64_t)now - old; /* wraps to the right sum */
    if (!max_move(&s->res_max[r], &s->res_max_n[r], true, old, true, now))
        c->leaf_dirty[leaf] = 1;
}

/* ... and of a GPU going from shared with `old` milli free (or not shared)
 * to shared with `now` free (or not). The largest counts shared GPUs with
 * some milli free. */
static void leaf_gpu(struct gpusched_cluster *c, uint32_t node, bool was, uint32_t old, bool is, uint32_t now)
{
    const uint32_t leaf = gs_cl_node_leaf(c, node);
    if (!c->leafsum || c->leaf_dirty[leaf])
        return;
    gs_leafsum *s = &c->leafsum[leaf];
    s->shared_n += (uint32_t)is - (uint32_t)was;
    if (!max_move(&s->shared_max, &s->shared_max_n, was && old, old, is && now, now))
        c->leaf_dirty[leaf] = 1;
}

static void leaf_count(const struct gpusched_cluster *c, uint32_t leaf, gs_leafsum *s)
{
    const struct gpusched_topo *t = c->topo;
    const uint32_t l = t->nlevels - 1, a = t->dom_start[l][leaf], b = t->dom_start[l][leaf + 1];
    memset(s, 0, sizeof *s);
    for (uint32_t r = 0; r < t->nres; r++)
        for (uint32_t n = a; n < b; n++) {
            max_add(&s->res_max[r], &s->res_max_n[r], c->res_free[r][n]);
            s->res_sum[r] += c->res_free[r][n];
        }
    for (uint32_t n = a; c->node_shared && n < b; n++)
        for (uint64_t m = c->node_shared[n]; m; m &= m - 1) {
            const uint32_t f = 1000u - c->gpu_milli_used[gs_cl_gpu_base(c, n) + gs_ctz64(m)];
            if (f)
                max_add(&s->shared_max, &s->shared_max_n, f);
            s->shared_n++;
        }
}

const gs_leafsum *gs_pods_leaf(struct gpusched_cluster *c, uint32_t leaf)
{
    if (!c->leafsum)
        return NULL;
    if (c->leaf_dirty[leaf]) {
        leaf_count(c, leaf, &c->leafsum[leaf]);
        c->leaf_dirty[leaf] = 0;
    }
    return &c->leafsum[leaf];
}

int gs_pods_create(struct gpusched_cluster *c)
{
    const struct gpusched_topo *t = c->topo;
    if (t->nres && leafsum_alloc(c))
        return GPUSCHED_ENOMEM;
    for (uint32_t r = 0; r < t->nres; r++) {
        c->res_free[r] = gs_malloc(&c->alloc, (size_t)t->nnodes * sizeof *c->res_free[r]);
        if (!c->res_free[r])
            return GPUSCHED_ENOMEM;
        memcpy(c->res_free[r], t->node_res[r], (size_t)t->nnodes * sizeof *c->res_free[r]);
    }
    return 0;
}

void gs_pods_destroy(struct gpusched_cluster *c)
{
    for (uint32_t r = 0; r < GPUSCHED_MAX_RESOURCES; r++)
        gs_free(&c->alloc, c->res_free[r]);
    gs_free(&c->alloc, c->leafsum);
    gs_free(&c->alloc, c->leaf_dirty);
    for (uint32_t s = 0; s < c->podx_cap; s++)
        gs_free(&c->alloc, c->podx_of[s]);
    gs_free(&c->alloc, c->podx_of);
    gs_free(&c->alloc, c->gpu_milli_used);
    gs_free(&c->alloc, c->node_shared);
}

size_t gs_pods_bytes(const struct gpusched_cluster *c)
{
    const struct gpusched_topo *t = c->topo;
    size_t b = (size_t)t->nres * t->nnodes * sizeof(uint32_t);
    if (c->leafsum)
        b += (size_t)t->ndom[t->nlevels - 1] * (sizeof(gs_leafsum) + 1);
    if (c->gpu_milli_used)
        b += (size_t)t->ngpus * sizeof(uint16_t) + (size_t)t->nnodes * sizeof(uint64_t);
    return b;
}

/* ---- validation -------------------------------------------------------- */

/* What the changes staged before a claim did on one node: given back by
 * releases (each resource, GPUs held whole, per GPU the milli of
 * fractions) and taken by claims (the same, and GPUs claimed whole). */
typedef struct gs_given {
    int64_t res[GPUSCHED_MAX_RESOURCES];
    uint64_t whole, taken;
    uint32_t milli[64], milli_taken[64];
} gs_given;

/* The pair of a job's pairs on `node`, or UINT32_MAX (nodes ascend). */
static uint32_t pair_on(const uint32_t *nodes, uint32_t n, uint32_t node)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (nodes[mid] < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && nodes[lo] == node ? lo : UINT32_MAX;
}

/* One job's pair `i` (mask, podx or NULL) added to g, with sign +1 for a
 * release, -1 for a claim. */
static void add_pair(gs_given *g, const gs_podx *x, uint32_t i, uint64_t mask, int sign)
{
    for (uint32_t r = 0; x && r < x->nres; r++)
        g->res[r] += sign * (int64_t)((uint64_t)x->pods[i] * x->pod_res[r]);
    if (!x || !x->milli) {
        if (sign > 0)
            g->whole |= mask;
        else
            g->taken |= mask;
        return;
    }
    for (uint64_t m = mask; m; m &= m - 1)
        (sign > 0 ? g->milli : g->milli_taken)[gs_ctz64(m)] += x->milli;
}

/* The sum over ops[0, n) (validated: a release's op->slot is set). */
static void given_on(const struct gpusched_cluster *c, const gs_op *ops, uint32_t n, uint32_t node, gs_given *g)
{
    memset(g, 0, sizeof *g);
    for (uint32_t k = 0; k < n; k++) {
        const gs_op *op = &ops[k];
        if (op->kind == GS_OP_RELEASE) {
            const gs_hold *h = &c->jobs.rec[op->slot];
            const uint32_t i = pair_on(gs_hold_nodes(h), h->npairs, node);
            if (i != UINT32_MAX)
                add_pair(g, gs_hold_podx(c, h), i, gs_hold_masks(h)[i], +1);
        } else if (op->kind == GS_OP_CLAIM) {
            const uint32_t i = pair_on(op->nodes, op->n, node);
            if (i != UINT32_MAX)
                add_pair(g, op->podx, i, op->masks[i], -1);
        }
    }
}

static int check_res(struct gpusched_cluster *c, const gs_podx *x, uint32_t i, uint32_t node, uint32_t pods,
                     const gs_given *g)
{
    const struct gpusched_topo *t = c->topo;
    for (uint32_t r = 0; r < x->nres; r++) {
        const uint64_t want = (uint64_t)pods * x->pod_res[r];
        const int64_t have = (int64_t)c->res_free[r][node] + (g ? g->res[r] : 0);
        if (have < 0 || want > (uint64_t)have)
            return gs_error(&c->err, GPUSCHED_EBUSY, "pair %u: node %u has %lld %s free, %u pods ask for %llu", i,
                            node, (long long)(have < 0 ? 0 : have), t->res_names[r], pods, (unsigned long long)want);
    }
    return 0;
}

static int check_gpus(struct gpusched_cluster *c, const gs_podx *x, uint32_t i, uint32_t node, uint64_t mask,
                      uint32_t pods, const gs_given *g)
{
    const uint32_t gpus = gs_cl_node_gpus(c, node);
    const uint64_t all = gs_node_all_mask(gpus);
    const uint32_t n = (uint32_t)__builtin_popcountll(mask);
    if (mask & ~all)
        return gs_error(&c->err, GPUSCHED_EINVAL, "pair %u: node %u has %u GPUs, mask 0x%llx names GPU %u", i,
                        node, gpus, (unsigned long long)mask, gs_ctz64(mask & ~all));
    if (x->milli == 0 ? (uint64_t)pods * x->pod_gpus != n : n != pods)
        return gs_error(&c->err, GPUSCHED_EINVAL, "pair %u: %u pods of %u GPUs on node %u, mask has %u GPUs", i,
                        pods, x->milli ? 1 : x->pod_gpus, node, n);
    /* Each GPU as the earlier changes leave it: held whole (not given back,
     * or claimed whole), or with `used` milli of fractions (0: free). */
    const uint64_t shared = c->node_shared ? c->node_shared[node] : 0;
    const uint32_t base = gs_cl_gpu_base(c, node);
    for (uint64_t m = mask; m; m &= m - 1) {
        const uint32_t k = gs_ctz64(m);
        const uint64_t bit = (uint64_t)1 << k;
        const bool whole = (g && (g->taken & bit)) ||
                           (!(shared & bit) && !((c->node_free[node] | (g ? g->whole : 0)) & bit));
        uint32_t used = shared & bit ? c->gpu_milli_used[base + k] - (g ? g->milli[k] : 0) : 0;
        used += g ? g->milli_taken[k] : 0;
        if (whole || (x->milli == 0 && used))
            return gs_error(&c->err, GPUSCHED_EBUSY, "pair %u: node %u GPU %u is not free", i, node, k);
        if (used + x->milli > 1000)
            return gs_error(&c->err, GPUSCHED_EBUSY, "pair %u: node %u GPU %u has %u milli free, a pod asks for %u",
                            i, node, k, 1000 - used, x->milli);
    }
    return 0;
}

int gs_pods_validate_claim(struct gpusched_cluster *c, gs_op *op, const gs_op *before, uint32_t nbefore)
{
    const gs_podx *x = op->podx;
    if (op->n == 0 || x->npairs != op->n)
        return gs_error(&c->err, GPUSCHED_EINVAL, "job %llu: empty allocation", (unsigned long long)op->job.id);
    if (x->nres > c->topo->nres || x->milli >= 1000)
        return gs_error(&c->err, GPUSCHED_EINVAL, "job %llu: bad pod shape", (unsigned long long)op->job.id);
    bool released = false; /* a move releases the job first */
    for (uint32_t k = 0; k < nbefore && !released; k++)
        released = before[k].kind == GS_OP_RELEASE && before[k].job.id == op->job.id;
    if (!released && gs_cluster_job_find(c, op->job.id))
        return gs_error(&c->err, GPUSCHED_EEXIST, "job %llu is already running", (unsigned long long)op->job.id);
    if (c->resv.count && gs_cluster_resv_find(c, op->job.id))
        return gs_error(&c->err, GPUSCHED_EINVAL,
                        "job %llu has a reservation: reservations do not hold resources or GPU fractions yet",
                        (unsigned long long)op->job.id);
    for (uint32_t i = 0; i < op->n; i++) {
        const uint32_t node = op->nodes[i];
        if (node >= c->topo->nnodes)
            return gs_error(&c->err, GPUSCHED_ERANGE, "pair %u: node %u out of range (the topology has %u)", i,
                            node, c->topo->nnodes);
        if (i > 0 && node <= op->nodes[i - 1])
            return gs_error(&c->err, GPUSCHED_EINVAL, "pair %u: node %u follows node %u (nodes must be ascending)",
                            i, node, op->nodes[i - 1]);
        if (x->pods[i] == 0)
            return gs_error(&c->err, GPUSCHED_EINVAL, "pair %u: no pod on node %u", i, node);
        if (c->nodes_not_up && c->node_health[node] != GPUSCHED_NODE_UP)
            return gs_error(&c->err, GPUSCHED_ESTATE, "pair %u: node %u is not up (health %u)", i, node,
                            c->node_health[node]);
        gs_given given, *g = NULL;
        if (nbefore) {
            given_on(c, before, nbefore, node, &given);
            g = &given;
        }
        int rc = check_res(c, x, i, node, x->pods[i], g);
        if (!rc)
            rc = check_gpus(c, x, i, node, op->masks[i], x->pods[i], g);
        if (rc)
            return rc;
    }
    return 0;
}

int gs_pods_ensure(struct gpusched_cluster *c, bool fractions)
{
    const struct gpusched_topo *t = c->topo;
    if (!c->leafsum && leafsum_alloc(c))
        return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for GPU fractions");
    if (fractions && !c->gpu_milli_used) {
        c->gpu_milli_used = gs_calloc(&c->alloc, (size_t)t->ngpus, sizeof *c->gpu_milli_used);
        c->node_shared = gs_calloc(&c->alloc, t->nnodes, sizeof *c->node_shared);
        if (!c->gpu_milli_used || !c->node_shared) {
            gs_free(&c->alloc, c->gpu_milli_used);
            gs_free(&c->alloc, c->node_shared);
            c->gpu_milli_used = NULL;
            c->node_shared = NULL;
            return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for GPU fractions");
        }
    }
    return 0;
}

int gs_pods_prepare(struct gpusched_cluster *c, gs_op *op)
{
    int rc = gs_pods_ensure(c, op->podx->milli != 0);
    if (rc)
        return rc;
    if (c->podx_cap < c->jobs.cap) {
        /* Room for every slot the table has: the claim's is among them. */
        gs_podx **of = gs_realloc_array(&c->alloc, c->podx_of, c->jobs.cap, sizeof *of);
        if (!of)
            return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for a job's resources");
        memset(of + c->podx_cap, 0, (size_t)(c->jobs.cap - c->podx_cap) * sizeof *of);
        c->podx_of = of;
        c->podx_cap = c->jobs.cap;
    }
    const size_t size = gs_podx_size(op->n);
    op->podx_copy = gs_malloc(&c->alloc, size);
    if (!op->podx_copy)
        return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for a job's resources");
    memcpy(op->podx_copy, op->podx, size);
    return 0;
}

/* ---- application ------------------------------------------------------- */

static void res_add(struct gpusched_cluster *c, const gs_podx *x, uint32_t node, uint32_t pods, int sign)
{
    for (uint32_t r = 0; r < x->nres; r++) {
        const uint32_t amount = pods * x->pod_res[r], old = c->res_free[r][node];
        c->res_free[r][node] = sign > 0 ? old + amount : old - amount;
        gs_cluster_node_touch(c, node);
        leaf_res(c, node, r, old, c->res_free[r][node]);
    }
}

/* Fractions of `milli` on the GPUs of `mask`, taken (sign > 0) or given
 * back; a GPU whose last fraction goes is free again. A temporary change
 * (`temp`, a transaction's lending) leaves the GPU holders alone. */
static void milli_move(struct gpusched_cluster *c, uint32_t node, uint64_t mask, uint32_t milli, int sign, bool temp)
{
    const uint64_t old = gs_cluster_node_avail(c, node);
    const uint32_t base = gs_cl_gpu_base(c, node);
    for (; mask; mask &= mask - 1) {
        const uint32_t g = gs_ctz64(mask);
        const uint64_t bit = (uint64_t)1 << g;
        uint16_t *used = &c->gpu_milli_used[base + g];
        const uint32_t now_used = sign > 0 ? *used + milli : *used - milli;
        leaf_gpu(c, node, *used != 0, 1000u - *used, now_used != 0, 1000u - now_used);
        c->shared_gpus += (uint64_t)(now_used != 0) - (uint64_t)(*used != 0);
        c->shared_free_milli += (uint64_t)(now_used ? 1000u - now_used : 0) - (uint64_t)(*used ? 1000u - *used : 0);
        if (sign > 0) {
            *used = (uint16_t)(*used + milli);
            c->node_free[node] &= ~bit;
            c->node_shared[node] |= bit;
            if (!temp)
                c->gpu_holder[base + g] = GS_HOLDER_SHARED;
        } else if ((*used = (uint16_t)(*used - milli)) == 0) {
            c->node_free[node] |= bit;
            c->node_shared[node] &= ~bit;
            if (!temp)
                c->gpu_holder[base + g] = 0;
        }
    }
    gs_cluster_node_changed(c, node, old);
}

void gs_pods_apply_claim(struct gpusched_cluster *c, gs_op *op)
{
    gs_hold *h = gs_holdtab_insert(&c->jobs, op->job.id, op->nodes[0]);
    const gpusched_job *job = &op->job;
    h->start_time = job->start_time;
    h->cost_hint = job->cost_hint;
    h->protected_until = job->protected_until;
    h->priority = job->priority;
    h->tenant = job->tenant;
    h->flags = job->flags;
    gs_hold_set_pairs(h, op->n, op->nodes, op->masks, op->block);
    const uint32_t holder = gs_hold_slot(&c->jobs, h) + 1;
    const gs_podx *x = c->podx_of[holder - 1] = op->podx_copy;
    op->podx_copy = NULL;
    for (uint32_t i = 0; i < op->n; i++) {
        const uint32_t node = op->nodes[i];
        res_add(c, x, node, x->pods[i], -1);
        if (x->milli)
            milli_move(c, node, op->masks[i], x->milli, +1, false);
        else if (op->masks[i])
            gs_cluster_node_move(c, node, op->masks[i], 0, c->node_resv[node], holder);
    }
    if (x->milli)
        h->ngpus = 0; /* no GPU is held whole */
    c->podx_jobs++;
    c->podx_gen++;
}

void gs_pods_release(struct gpusched_cluster *c, gs_hold *h)
{
    const uint32_t slot = gs_hold_slot(&c->jobs, h);
    const gs_podx *x = c->podx_of[slot];
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++) {
        res_add(c, x, nodes[i], x->pods[i], +1);
        if (x->milli)
            milli_move(c, nodes[i], masks[i], x->milli, -1, false);
        else if (masks[i])
            gs_cluster_node_move(c, nodes[i], masks[i], masks[i], c->node_resv[nodes[i]], 0);
    }
    gs_free(&c->alloc, c->podx_of[slot]);
    c->podx_of[slot] = NULL;
    c->podx_jobs--;
    c->podx_gen++;
    gs_holdtab_remove(&c->jobs, &c->alloc, h);
}

/* ---- lending and holding in a transaction --------------------------------- */

void gs_pods_take(struct gpusched_cluster *c, const gs_podx *x, uint32_t n, const uint32_t *nodes,
                  const uint64_t *masks, bool take)
{
    for (uint32_t i = 0; i < n; i++) {
        res_add(c, x, nodes[i], x->pods[i], take ? -1 : +1);
        if (x->milli)
            milli_move(c, nodes[i], masks[i], x->milli, take ? +1 : -1, true);
    }
}

int gs_pods_check_pairs(struct gpusched_cluster *c, const gs_podx *x, uint32_t n, const uint32_t *nodes,
                        const uint64_t *masks)
{
    for (uint32_t i = 0; i < n; i++) {
        int rc = check_res(c, x, i, nodes[i], x->pods[i], NULL);
        if (!rc)
            rc = check_gpus(c, x, i, nodes[i], masks[i], x->pods[i], NULL);
        if (rc)
            return rc;
    }
    return 0;
}

void gs_pods_lend(struct gpusched_cluster *c, const gs_hold *h, bool lend)
{
    const gs_podx *x = c->podx_of[gs_hold_slot(&c->jobs, h)];
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++) {
        res_add(c, x, nodes[i], x->pods[i], lend ? +1 : -1);
        if (x->milli)
            milli_move(c, nodes[i], masks[i], x->milli, lend ? -1 : +1, true);
    }
}

bool gs_pods_can_unlend(const struct gpusched_cluster *c, const gs_hold *h)
{
    const gs_podx *x = c->podx_of[gs_hold_slot(&c->jobs, h)];
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++) {
        const uint32_t node = nodes[i];
        for (uint32_t r = 0; r < x->nres; r++)
            if (c->res_free[r][node] < (uint64_t)x->pods[i] * x->pod_res[r])
                return false;
        const uint32_t base = gs_cl_gpu_base(c, node);
        for (uint64_t m = x->milli ? masks[i] : 0; m; m &= m - 1) {
            const uint32_t g = gs_ctz64(m), used = c->gpu_milli_used[base + g];
            /* A GPU the lending freed must still be free, and a shared one
             * must still have room for the fraction. */
            if ((used == 0 && !(c->node_free[node] & ((uint64_t)1 << g))) || used + x->milli > 1000)
                return false;
        }
    }
    return true;
}

/* ---- invariants -------------------------------------------------------- */

/* Rebuilds the free resources and the milli held per GPU from the jobs and
 * compares them with the state. */
int gs_pods_check(struct gpusched_cluster *c)
{
    const struct gpusched_topo *t = c->topo;
    if (!c->podx_jobs && !c->gpu_milli_used && t->nres == 0)
        return 0;
    uint64_t *used = gs_calloc(&c->alloc, (size_t)t->nnodes * (t->nres ? t->nres : 1), sizeof *used);
    uint32_t *milli = c->gpu_milli_used ? gs_calloc(&c->alloc, (size_t)t->ngpus, sizeof *milli) : NULL;
    int rc = 0;
    if (!used || (c->gpu_milli_used && !milli)) {
        rc = gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory checking resources");
        goto out;
    }
    uint32_t seen = 0;
    for (uint32_t k = 0; k < c->jobs.count && !rc; k++) {
        const gs_hold *h = &c->jobs.rec[c->jobs.live[k]];
        const gs_podx *x = gs_hold_podx(c, h);
        if (!x)
            continue;
        seen++;
        const uint32_t *nodes = gs_hold_nodes(h);
        const uint64_t *masks = gs_hold_masks(h);
        for (uint32_t i = 0; i < h->npairs && !rc; i++) {
            for (uint32_t r = 0; r < x->nres; r++)
                used[(size_t)r * t->nnodes + nodes[i]] += (uint64_t)x->pods[i] * x->pod_res[r];
            if (!x->milli)
                continue;
            if (!milli)
                rc = gs_error(&c->err, GPUSCHED_EINVAL, "check: job %llu holds fractions, no GPU is shared",
                              (unsigned long long)h->id);
            for (uint64_t m = masks[i]; m && !rc; m &= m - 1)
                milli[t->node_gpu_base[nodes[i]] + gs_ctz64(m)] += x->milli;
        }
    }
    if (!rc && seen != c->podx_jobs)
        rc = gs_error(&c->err, GPUSCHED_EINVAL, "check: %u jobs hold resources, the count says %u", seen,
                      c->podx_jobs);
    for (uint32_t r = 0; r < t->nres && !rc; r++)
        for (uint32_t n = 0; n < t->nnodes && !rc; n++)
            if ((uint64_t)c->res_free[r][n] + used[(size_t)r * t->nnodes + n] != t->node_res[r][n])
                rc = gs_error(&c->err, GPUSCHED_EINVAL, "check: node %u: %s free %u + held %llu != capacity %u", n,
                              t->res_names[r], c->res_free[r][n],
                              (unsigned long long)used[(size_t)r * t->nnodes + n], t->node_res[r][n]);
    uint64_t shared_n = 0, shared_free = 0;
    for (uint32_t n = 0; milli && n < t->nnodes && !rc; n++) {
        for (uint32_t g = 0; g < t->node_gpus[n] && !rc; g++) {
            const uint32_t i = t->node_gpu_base[n] + g;
            const uint64_t bit = (uint64_t)1 << g;
            const bool shared = (c->node_shared[n] & bit) != 0;
            if (milli[i] != c->gpu_milli_used[i] || milli[i] > 1000 || shared != (milli[i] > 0) ||
                (shared && ((c->node_free[n] | c->node_resv[n]) & bit)) ||
                (shared != (c->gpu_holder[i] == GS_HOLDER_SHARED)))
                rc = gs_error(&c->err, GPUSCHED_EINVAL,
                              "check: node %u GPU %u: jobs hold %u milli, the state says %u (shared %d, holder 0x%x)",
                              n, g, milli[i], c->gpu_milli_used[i], shared, c->gpu_holder[i]);
            shared_n += shared;
            shared_free += shared ? 1000u - milli[i] : 0;
        }
    }
    if (!rc && (shared_n != c->shared_gpus || shared_free != c->shared_free_milli))
        rc = gs_error(&c->err, GPUSCHED_EINVAL, "check: %llu GPUs shared with %llu milli free, counted %llu and %llu",
                      (unsigned long long)shared_n, (unsigned long long)shared_free,
                      (unsigned long long)c->shared_gpus, (unsigned long long)c->shared_free_milli);
    /* The summaries kept up to date incrementally match a recount. */
    for (uint32_t leaf = 0; c->leafsum && !rc && leaf < t->ndom[t->nlevels - 1]; leaf++) {
        gs_leafsum fresh;
        if (c->leaf_dirty[leaf])
            continue;
        leaf_count(c, leaf, &fresh);
        if (memcmp(&fresh, &c->leafsum[leaf], sizeof fresh))
            rc = gs_error(&c->err, GPUSCHED_EINVAL,
                          "check: the summary of lowest domain %u is stale (shared %u max %u x%u, counted %u max %u x%u)",
                          leaf, c->leafsum[leaf].shared_n, c->leafsum[leaf].shared_max, c->leafsum[leaf].shared_max_n,
                          fresh.shared_n, fresh.shared_max, fresh.shared_max_n);
    }
out:
    gs_free(&c->alloc, used);
    gs_free(&c->alloc, milli);
    return rc;
}

/* ---- encoding (snapshot version 3 and journal version 3 share it) ------- */

size_t gs_podx_wire_len(const gs_podx *x, uint32_t npairs)
{
    return 12 + 4 * (size_t)x->nres + 4 * (size_t)npairs;
}

void gs_podx_write(gs_wr *w, const gs_podx *x, uint32_t npairs)
{
    gs_wr_u32(w, x->milli);
    gs_wr_u32(w, x->pod_gpus);
    gs_wr_u32(w, x->nres);
    for (uint32_t r = 0; r < x->nres; r++)
        gs_wr_u32(w, x->pod_res[r]);
    for (uint32_t i = 0; i < npairs; i++)
        gs_wr_u32(w, x->pods[i]);
}

int gs_podx_read(gs_rd *r, uint32_t npairs, uint32_t nres_max, const gs_alloc *a, gs_podx **buf)
{
    if (gs_rd_left(r) < 12)
        return GPUSCHED_ECORRUPT;
    const uint32_t milli = gs_rd_u32(r), pod_gpus = gs_rd_u32(r), nres = gs_rd_u32(r);
    if (nres > nres_max || milli >= 1000 || pod_gpus > GPUSCHED_MAX_NODE_GPUS ||
        gs_rd_left(r) < 4 * ((size_t)nres + npairs))
        return GPUSCHED_ECORRUPT;
    gs_podx *x = gs_realloc_array(a, *buf, 1, gs_podx_size(npairs));
    if (!x)
        return GPUSCHED_ENOMEM;
    *buf = x;
    memset(x, 0, sizeof *x);
    x->milli = milli;
    x->pod_gpus = pod_gpus;
    x->nres = nres;
    for (uint32_t k = 0; k < nres; k++)
        x->pod_res[k] = gs_rd_u32(r);
    x->npairs = npairs;
    for (uint32_t i = 0; i < npairs; i++)
        x->pods[i] = gs_rd_u32(r);
    return 0;
}

/* ---- queries ----------------------------------------------------------- */

GPUSCHED_API int gpusched_cluster_frag_shared(gpusched_cluster *c, uint64_t *shared_gpus, uint64_t *free_milli)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (shared_gpus)
        *shared_gpus = c->shared_gpus;
    if (free_milli)
        *free_milli = c->shared_free_milli;
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_node_resource_free(gpusched_cluster *c, uint32_t node, uint32_t resource,
                                                     uint32_t *amount)
{
    if (!c || !amount)
        return c ? gs_error(&c->err, GPUSCHED_EINVAL, "node resource: amount is NULL") : GPUSCHED_EINVAL;
    int rc = gs_cluster_node_arg(c, node);
    if (rc)
        return rc;
    if (resource >= c->topo->nres)
        return gs_error(&c->err, GPUSCHED_ERANGE, "resource %u out of range (the topology declares %u)", resource,
                        c->topo->nres);
    *amount = c->res_free[resource][node];
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_gpu_milli_free(gpusched_cluster *c, uint32_t node, uint32_t gpu, uint32_t *milli)
{
    if (!c || !milli)
        return c ? gs_error(&c->err, GPUSCHED_EINVAL, "GPU milli: milli is NULL") : GPUSCHED_EINVAL;
    int rc = gs_cluster_node_arg(c, node);
    if (rc)
        return rc;
    if (gpu >= c->topo->node_gpus[node])
        return gs_error(&c->err, GPUSCHED_ERANGE, "node %u has %u GPUs, GPU %u asked", node,
                        c->topo->node_gpus[node], gpu);
    const uint64_t bit = (uint64_t)1 << gpu;
    if (c->node_shared && (c->node_shared[node] & bit))
        *milli = 1000u - c->gpu_milli_used[c->topo->node_gpu_base[node] + gpu];
    else
        *milli = (c->node_free[node] & bit) ? 1000u : 0u;
    return gs_ok(&c->err);
}
