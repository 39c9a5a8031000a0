/* Validating a request and reducing its constraints to one chain of
 * nested units (doc/placement.md, "Units"). */
#include <string.h>

#include "gpusched/preempt.h"
#include "place-internal.h"

#define REQ_MIN_SIZE (offsetof(gpusched_place_request, avoid_count) + sizeof(uint32_t))

static int check_level(gpusched_placer *p, uint32_t level, const char *field, bool allow_nodes)
{
    uint32_t lim = p->nlevels + (allow_nodes ? 1u : 0u);
    if (level != GPUSCHED_NONE && level >= lim)
        return gs_error(&p->err, GPUSCHED_ERANGE, "place request: %s is %u but the topology has %u levels",
                        field, level, p->nlevels);
    return 0;
}

/* Slice i's own fields, the same for whole-GPU gangs and pods: 1 when it
 * is unset, 0 when it is set and its level exists, or an error. */
int gs_pl_check_slice(gpusched_placer *p, const gpusched_place_request *q, uint32_t i)
{
    if (!q->slice_gpus[i]) {
        if (q->slice_level[i] != GPUSCHED_NONE)
            return gs_error(&p->err, GPUSCHED_EINVAL, "place request: slice_level[%u] is set but slice_gpus[%u] is 0",
                            i, i);
        return 1;
    }
    if (q->slice_level[i] == GPUSCHED_NONE)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: slice_gpus[%u] is %u but slice_level[%u] is unset", i,
                        q->slice_gpus[i], i);
    char field[24] = "slice_level[0]";
    field[12] = (char)('0' + i);
    return check_level(p, q->slice_level[i], field, false);
}

static int load_split(gpusched_placer *p, gs_pl_req *r)
{
    const gpusched_place_request *q = &r->in;
    switch (q->split) {
    case GPUSCHED_SPLIT_ANY:
        if (q->pod_gpus)
            return gs_error(&p->err, GPUSCHED_EINVAL,
                            "place request: pod_gpus is %u but split is any (set it to 0)", q->pod_gpus);
        gs_pl_set_u0(r, 1);
        return 0;
    case GPUSCHED_SPLIT_PODS:
        if (!q->pod_gpus || q->pod_gpus > GPUSCHED_MAX_NODE_GPUS)
            return gs_error(&p->err, GPUSCHED_EINVAL, "place request: pod_gpus is %u, 1 to %u expected",
                            q->pod_gpus, GPUSCHED_MAX_NODE_GPUS);
        gs_pl_set_u0(r, q->pod_gpus);
        break;
    case GPUSCHED_SPLIT_WHOLE_NODES:
        if (q->pod_gpus > GPUSCHED_MAX_NODE_GPUS)
            return gs_error(&p->err, GPUSCHED_EINVAL, "place request: pod_gpus (node size) is %u, 0 to %u expected",
                            q->pod_gpus, GPUSCHED_MAX_NODE_GPUS);
        gs_pl_set_u0(r, q->pod_gpus ? q->pod_gpus : p->t->max_node_gpus);
        r->whole_w = r->u0;
        break;
    default:
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: split is %u, not a gpusched_place_split", q->split);
    }
    if (q->gpus % r->u0)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: %u GPUs is not a multiple of %s of %u GPUs",
                        q->gpus, q->split == GPUSCHED_SPLIT_PODS ? "pods" : "nodes", r->u0);
    return 0;
}

static inline int check_filters(gpusched_placer *p, const gpusched_place_request *q)
{
    const struct gpusched_topo *t = p->t;
    if (q->gpu_class != GPUSCHED_NONE && q->gpu_class >= t->nclasses)
        return gs_error(&p->err, GPUSCHED_ERANGE, "place request: gpu_class is %u but the topology has %u classes",
                        q->gpu_class, t->nclasses);
    uint64_t known = t->nlabels >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << t->nlabels) - 1);
    if ((q->labels_required | q->labels_forbidden) & ~known)
        return gs_error(&p->err, GPUSCHED_ERANGE, "place request: label bit %u is set but the topology has %u labels",
                        gs_ctz64((q->labels_required | q->labels_forbidden) & ~known), t->nlabels);
    if (q->labels_required & q->labels_forbidden)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: label bit %u is both required and forbidden",
                        gs_ctz64(q->labels_required & q->labels_forbidden));
    if (q->avoid_count && !q->avoid_nodes)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: avoid_count is %u but avoid_nodes is NULL",
                        q->avoid_count);
    for (uint32_t i = 0; i < q->avoid_count; i++)
        if (q->avoid_nodes[i] >= t->nnodes)
            return gs_error(&p->err, GPUSCHED_ERANGE, "place request: avoid_nodes[%u] is %u but the topology has %u nodes",
                            i, q->avoid_nodes[i], t->nnodes);
    return 0;
}

/* Gathers the slices and the required level as constraints, shallowest
 * first. */
static int gather_constraints(gpusched_placer *p, gs_pl_req *r, gs_pl_cons *all, uint32_t *n)
{
    const gpusched_place_request *q = &r->in;
    *n = 0;
    for (uint32_t i = 0; i < GPUSCHED_MAX_SLICES; i++) {
        int rc = gs_pl_check_slice(p, q, i);
        if (rc < 0)
            return rc;
        if (rc)
            continue;
        if (q->slice_gpus[i] % r->u0 || q->gpus % q->slice_gpus[i])
            return gs_error(&p->err, GPUSCHED_EINVAL,
                            "place request: slices of %u GPUs must be a multiple of %u and divide %u",
                            q->slice_gpus[i], r->u0, q->gpus);
        all[(*n)++] = (gs_pl_cons){q->slice_level[i], q->slice_gpus[i]};
    }
    if (q->required_level != GPUSCHED_NONE)
        all[(*n)++] = (gs_pl_cons){q->required_level, q->gpus};
    /* Insertion sort: by level, the larger size first on one level. */
    for (uint32_t i = 1; i < *n; i++)
        for (uint32_t j = i; j > 0; j--) {
            gs_pl_cons *a = &all[j - 1], *b = &all[j];
            if (a->level < b->level || (a->level == b->level && a->size >= b->size))
                break;
            gs_pl_cons tmp = *a;
            *a = *b;
            *b = tmp;
        }
    return 0;
}

/* Keeps the constraints that bind: from the deepest up, a shallower one
 * is kept only if it is larger (then it must be a multiple); a smaller one
 * is implied by the deeper one (if it divides it). */
static int chain_constraints(gpusched_placer *p, gs_pl_req *r, const gs_pl_cons *all, uint32_t n)
{
    gs_pl_cons kept[GPUSCHED_MAX_SLICES + 1];
    uint32_t nk = 0;
    for (uint32_t i = n; i-- > 0;) {
        const gs_pl_cons *c = &all[i];
        if (nk) {
            const gs_pl_cons *deeper = &kept[nk - 1];
            if (c->level == deeper->level || c->size <= deeper->size) {
                uint32_t big = c->size > deeper->size ? c->size : deeper->size;
                uint32_t small = c->size > deeper->size ? deeper->size : c->size;
                if (big % small)
                    return gs_error(&p->err, GPUSCHED_EINVAL,
                                    "place request: constraints of %u GPUs at level %u and %u GPUs at level %u do not nest",
                                    c->size, c->level, deeper->size, deeper->level);
                if (c->level == deeper->level)
                    kept[nk - 1].size = big;
                continue;
            }
            if (c->size % deeper->size)
                return gs_error(&p->err, GPUSCHED_EINVAL,
                                "place request: slices of %u GPUs at level %u are not made of whole slices of %u GPUs at level %u",
                                c->size, c->level, deeper->size, deeper->level);
        }
        kept[nk++] = *c;
    }
    r->ncons = nk;
    for (uint32_t i = 0; i < nk; i++)
        r->cons[i] = kept[nk - 1 - i];
    r->stop = nk && r->cons[0].size == r->gpus ? (int32_t)r->cons[0].level : -1;
    r->deepest_cons = nk ? (int32_t)r->cons[nk - 1].level : -1;
    return 0;
}

static int derive_weights(gpusched_placer *p, gs_pl_req *r);

/* unit[l]: the size of the shallowest constraint at level l or below it. */
static int derive_units(gpusched_placer *p, gs_pl_req *r)
{
    int32_t L = (int32_t)p->nlevels;
    for (int32_t l = -1; l <= L; l++) {
        uint32_t u = r->u0;
        for (uint32_t i = 0; i < r->ncons; i++)
            if ((int32_t)r->cons[i].level >= l) {
                u = r->cons[i].size;
                break;
            }
        r->unit[LV(l)] = u;
    }
    for (int32_t l = -1; l < L; l++)
        r->ratio[LV(l)] = r->unit[LV(l)] / r->unit[LV(l + 1)];
    return derive_weights(p, r);
}

/* Key weights, deepest counted level first. */
static int derive_weights(gpusched_placer *p, gs_pl_req *r)
{
    int32_t L = (int32_t)p->nlevels;
    gs_key w = 1;
    memset(r->weight, 0, sizeof r->weight);
    for (int32_t l = r->pref; l >= 0; l--) {
        r->weight[LV(l)] = w;
        uint64_t count = l == L ? p->t->nnodes : p->t->ndom[l];
        /* Keys add up to one count per domain of each level: the top
         * two bits stay free so sums of keys never wrap. count + 1 is at
         * most 2^33, so the product cannot wrap while w < 2^92. */
        if ((w >> 92) || (w *= (gs_key)(count + 1)) >> 126)
            return gs_error(&p->err, GPUSCHED_ELIMIT,
                            "place request: the topology is too large for exact locality keys (set preferred_level)");
    }
    /* Every key counts at most every domain of each counted level, so it
     * is at most sum count x weight = w - 1 (the weights telescope). */
    r->key64 = !(w >> 62);
    return 0;
}

/* The job descriptor the request points to, copied in like every
 * extensible struct (its own size field), and its flags checked. */
static int load_job(gpusched_placer *p, gs_pl_req *r)
{
    const gpusched_job *src = r->in.job;
    r->in.job = NULL;
    r->job = (gpusched_job)GPUSCHED_JOB_INIT;
    if (src) {
        int rc = gs_struct_copy_in(&r->job, sizeof r->job, src, GS_JOB_MIN_SIZE, &p->err, "place request: job");
        if (rc)
            return rc;
    }
    if (r->job.flags & ~(uint32_t)GPUSCHED_JOB_FLAG_ALL)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: job %llu: unknown flags 0x%x",
                        (unsigned long long)r->job.id, r->job.flags & ~(uint32_t)GPUSCHED_JOB_FLAG_ALL);
    return 0;
}

int gs_pl_req_load(gpusched_placer *p, const gpusched_place_request *in, gs_pl_req *r)
{
    /* The pod fields at the end are set by gs_pl_pods_load, and only for
     * pods: a whole-GPU request does not pay for clearing them. */
    memset(r, 0, offsetof(gs_pl_req, pods_path));
    r->pods_path = false;
    int rc = gs_struct_copy_in(&r->in, sizeof r->in, in, REQ_MIN_SIZE, &p->err, "place request");
    if (rc)
        return rc;
    const gpusched_place_request *q = &r->in;
    if ((rc = load_job(p, r)))
        return rc;
    /* The running-job check (gs_pl_req_not_running, after the search)
     * misses on a large job table; its line loads meanwhile. */
    if (q->flags & GPUSCHED_PLACE_FLAG_COMMIT)
        gs_holdtab_prefetch(&p->c->jobs, r->job.id);
    if (q->flags & ~GPUSCHED_PLACE_FLAG_COMMIT)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: unknown flags 0x%x", q->flags & ~GPUSCHED_PLACE_FLAG_COMMIT);
    if ((rc = gs_pl_pods_load(p, r)))
        return rc;
    if (r->pods_path) {
        if ((rc = check_level(p, q->required_level, "required_level", false)) ||
            (rc = check_level(p, q->preferred_level, "preferred_level", true)) || (rc = check_filters(p, q)))
            return rc;
        r->split = GPUSCHED_SPLIT_PODS;
        r->pref = q->preferred_level == GPUSCHED_NONE ? (int32_t)p->nlevels : (int32_t)q->preferred_level;
        r->stop = q->required_level == GPUSCHED_NONE ? -1 : (int32_t)q->required_level;
        return 0;
    }
    if (!q->gpus)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: gpus is 0");
    if (q->preempt_policy > GPUSCHED_PREEMPT_COST_FIRST)
        return gs_error(&p->err, GPUSCHED_EINVAL, "place request: preempt_policy %u unknown (0 to %u)",
                        q->preempt_policy, (unsigned)GPUSCHED_PREEMPT_COST_FIRST);
    r->gpus = q->gpus;
    r->split = q->split;
    if ((rc = load_split(p, r)) || (rc = check_level(p, q->required_level, "required_level", false)) ||
        (rc = check_level(p, q->preferred_level, "preferred_level", true)) || (rc = check_filters(p, q)))
        return rc;
    gs_pl_cons all[GPUSCHED_MAX_SLICES + 1];
    uint32_t n;
    if ((rc = gather_constraints(p, r, all, &n)) || (rc = chain_constraints(p, r, all, n)))
        return rc;
    r->pref = q->preferred_level == GPUSCHED_NONE ? (int32_t)p->nlevels : (int32_t)q->preferred_level;
    /* A node that holds at most one unit (whole nodes, pods of more than
     * half the largest node) makes every placement use as many nodes as
     * units: counting nodes orders nothing, so the search stops at the
     * lowest domain level (doc/placement.md, "Counted levels"). A pod
     * that fits on one node still looks for the tightest node. */
    if (r->pref == (int32_t)p->nlevels &&
        (r->whole_w || (p->t->max_node_gpus < 2 * r->u0 && r->gpus > r->u0)))
        r->pref = (int32_t)p->nlevels - 1;
    r->filtered = q->gpu_class != GPUSCHED_NONE || q->labels_required || q->labels_forbidden || q->avoid_count;
    /* Whole nodes on a topology with other node sizes: the fully-free-node
     * aggregate also counts nodes of other sizes, so it is only a bound. */
    const bool uniform_w = !r->whole_w || (p->min_node_gpus == r->whole_w && p->t->max_node_gpus == r->whole_w);
    r->agg_exact_nodes = !r->filtered && uniform_w;
    r->avoid_exact = uniform_w && q->avoid_count && q->gpu_class == GPUSCHED_NONE && !q->labels_required &&
                     !q->labels_forbidden;
    return derive_units(p, r);
}

bool gs_pl_req_coarse(gpusched_placer *p, const gs_pl_req *r, gs_pl_req *out)
{
    const int32_t L = (int32_t)p->nlevels;
    if (r->pref != L || L == 0 || !r->agg_exact_nodes || r->gpus <= p->t->max_node_gpus)
        return false;
    *out = *r;
    out->pref = L - 1;
    return derive_weights(p, out) == 0;
}

int gs_pl_req_whole_gpus(gpusched_placer *p, const gs_pl_req *r, const char *what)
{
    if (r->pods_path)
        return gs_error(&p->err, GPUSCHED_EINVAL,
                        "%s: requests with resources, GPU fractions or class lists are not supported here yet", what);
    return 0;
}

int gs_pl_req_not_running(gpusched_placer *p, const gs_pl_req *r)
{
    if ((r->in.flags & GPUSCHED_PLACE_FLAG_COMMIT) && gs_cluster_job_find(p->c, r->job.id))
        return gs_error(&p->err, GPUSCHED_EEXIST, "place request: job %llu is already running",
                        (unsigned long long)r->job.id);
    return 0;
}
