/* The result object: what the search chose, laid out as flat arrays the
 * caller reads in place. */
#include <stdio.h>
#include <string.h>

#include "place-internal.h"

GPUSCHED_API int gpusched_place_result_new(const gpusched_allocator *alloc, gpusched_place_result **out)
{
    if (!out)
        return GPUSCHED_EINVAL;
    gs_alloc a;
    int rc = gs_alloc_init(&a, alloc);
    if (rc)
        return rc;
    gpusched_place_result *res = gs_calloc(&a, 1, sizeof *res);
    if (!res)
        return GPUSCHED_ENOMEM;
    res->alloc = a;
    gs_pl_result_reset(res, 0);
    *out = res;
    return 0;
}

GPUSCHED_API void gpusched_place_result_free(gpusched_place_result *res)
{
    if (!res)
        return;
    gs_alloc a = res->alloc;
    gs_free(&a, res->nodes);
    gs_free(&a, res->masks);
    gs_free(&a, res->pod_nodes);
    gs_free(&a, res->doms);
    gs_free(&a, res);
}

void gs_pl_result_reset(gpusched_place_result *res, uint32_t nlevels)
{
    res->reason = GPUSCHED_PLACE_NOT_RUN;
    res->committed = 0;
    res->msg[0] = '\0';
    res->nlevels = nlevels;
    res->n = res->npods = res->ndoms_total = 0;
    memset(res->dom_off, 0, sizeof res->dom_off);
    memset(res->locality, 0, sizeof res->locality);
}

static int grow(const gs_alloc *a, void **arr, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c = c > UINT32_MAX / 2 ? need : 2 * c;
    void *n = gs_realloc_array(a, *arr, c, elem);
    if (!n)
        return GPUSCHED_ENOMEM;
    *arr = n;
    *cap = c;
    return 0;
}

static int reserve_arrays(gpusched_placer *p, gpusched_place_result *res, uint32_t npods)
{
    uint32_t n = p->nout, L = p->nlevels;
    uint32_t cap = res->cap;
    int rc = grow(&res->alloc, (void **)&res->nodes, &cap, n, sizeof *res->nodes);
    if (rc)
        return rc;
    cap = res->cap;
    if ((rc = grow(&res->alloc, (void **)&res->masks, &cap, n, sizeof *res->masks)))
        return rc;
    res->cap = cap;
    if ((rc = grow(&res->alloc, (void **)&res->pod_nodes, &res->pod_cap, npods, sizeof *res->pod_nodes)))
        return rc;
    uint64_t doms = (uint64_t)n * L;
    if (doms > UINT32_MAX)
        return GPUSCHED_ELIMIT;
    return grow(&res->alloc, (void **)&res->doms, &res->doms_cap, (uint32_t)doms, sizeof *res->doms);
}

/* The lowest free GPUs of the node: a job's GPUs stay packed. */
static uint64_t low_bits(uint64_t avail, uint32_t count)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t bit = avail & (~avail + 1);
        m |= bit;
        avail ^= bit;
    }
    return m;
}

/* Domains used per level: nodes are ascending and domains contiguous, so
 * each level's domains come out ascending and a repeat is the previous one. */
static void fill_domains(gpusched_placer *p, gpusched_place_result *res)
{
    const struct gpusched_topo *t = p->t;
    uint32_t L = p->nlevels;
    uint32_t count[GS_MAX_LEVELS] = {0};
    uint32_t last[GS_MAX_LEVELS];
    for (uint32_t l = 0; l < L; l++)
        last[l] = GPUSCHED_NONE;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t l = 0; l < L; l++) {
            last[l] = GPUSCHED_NONE;
            if (pass) {
                res->dom_off[l + 1] = res->dom_off[l] + count[l];
                count[l] = 0;
            }
        }
        for (uint32_t i = 0; i < res->n; i++) {
            uint32_t d = t->node_leaf[res->nodes[i]];
            for (uint32_t l = L; l-- > 0;) {
                if (d == last[l])
                    break; /* the parents are the same too */
                last[l] = d;
                if (pass)
                    res->doms[res->dom_off[l] + count[l]] = d;
                count[l]++;
                if (l)
                    d = t->dom_parent[l][d];
            }
        }
    }
    for (uint32_t l = 0; l < L; l++)
        res->locality[l] = count[l];
    res->locality[L] = res->n;
    res->dom_off[L + 1] = res->dom_off[L];
    res->ndoms_total = res->dom_off[L];
}

static void describe(gpusched_placer *p, gpusched_place_result *res)
{
    char gpus[32], nodes[32];
    gs_pl_fmt_count(gpus, sizeof gpus, p->req->gpus);
    gs_pl_fmt_count(nodes, sizeof nodes, res->n);
    int o = snprintf(res->msg, sizeof res->msg, "%s GPUs on %s nodes in", gpus, nodes);
    for (uint32_t l = 0; l < p->nlevels && o > 0 && (size_t)o < sizeof res->msg; l++)
        o += snprintf(res->msg + o, sizeof res->msg - (size_t)o, "%s %u %s%s", l ? "," : "", res->locality[l],
                      p->t->level_names[l], res->locality[l] == 1 ? "" : "s");
}

int gs_pl_result_fill(gpusched_placer *p, gpusched_place_result *res)
{
    const gs_pl_req *r = p->req;
    uint32_t npods = r->split == GPUSCHED_SPLIT_PODS ? r->gpus / r->u0 : 0;
    int rc = reserve_arrays(p, res, npods);
    if (rc)
        return rc;
    gs_pl_result_reset(res, p->nlevels);
    res->n = p->nout;
    for (uint32_t i = 0; i < p->nout; i++) {
        uint32_t node = p->out_nodes[i], units = p->out_units[i];
        uint64_t avail = gs_cluster_node_avail(p->c, node);
        res->nodes[i] = node;
        res->masks[i] = low_bits(avail, units * r->u0);
        for (uint32_t k = 0; npods && k < units; k++)
            res->pod_nodes[res->npods++] = node;
    }
    fill_domains(p, res);
    res->reason = GPUSCHED_PLACE_OK;
    describe(p, res);
    return 0;
}

GPUSCHED_API uint32_t gpusched_place_result_reason(const gpusched_place_result *res)
{
    return res ? res->reason : GPUSCHED_PLACE_NOT_RUN;
}

const char *gpusched_place_result_message(const gpusched_place_result *res)
{
    return res ? res->msg : "";
}

GPUSCHED_API int gpusched_place_result_committed(const gpusched_place_result *res)
{
    return res ? res->committed : 0;
}

GPUSCHED_API int gpusched_place_result_nodes(const gpusched_place_result *res, const uint32_t **nodes, const uint64_t **masks,
                                uint32_t *n)
{
    if (!res || !nodes || !masks || !n)
        return GPUSCHED_EINVAL;
    *nodes = res->nodes;
    *masks = res->masks;
    *n = res->n;
    return 0;
}

GPUSCHED_API int gpusched_place_result_pods(const gpusched_place_result *res, const uint32_t **pod_nodes, uint32_t *n)
{
    if (!res || !pod_nodes || !n)
        return GPUSCHED_EINVAL;
    *pod_nodes = res->pod_nodes;
    *n = res->npods;
    return 0;
}

GPUSCHED_API int gpusched_place_result_domains(const gpusched_place_result *res, uint32_t level, const uint32_t **domains,
                                  uint32_t *n)
{
    if (!res || !domains || !n)
        return GPUSCHED_EINVAL;
    if (level > res->nlevels)
        return GPUSCHED_ERANGE;
    if (level == res->nlevels) {
        *domains = res->nodes;
        *n = res->n;
        return 0;
    }
    *domains = res->doms ? res->doms + res->dom_off[level] : NULL;
    *n = res->dom_off[level + 1] - res->dom_off[level];
    return 0;
}

GPUSCHED_API int gpusched_place_result_locality(const gpusched_place_result *res, const uint32_t **counts, uint32_t *n)
{
    if (!res || !counts || !n)
        return GPUSCHED_EINVAL;
    *counts = res->locality;
    *n = res->reason == GPUSCHED_PLACE_OK ? res->nlevels + 1 : 0;
    return 0;
}
