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
    gpusched_place_result *res;
    int rc = gs_object_new(alloc, sizeof *res, &a, (void **)&res);
    if (rc)
        return rc;
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
    gpusched_topo_unref(res->topo);
    gs_free(&a, res);
}

void gs_pl_result_reset(gpusched_place_result *res, uint32_t nlevels)
{
    res->reason = GPUSCHED_REASON_NOT_RUN;
    res->committed = 0;
    res->msg[0] = '\0';
    res->msg_topo = NULL;
    res->nlevels = nlevels;
    res->n = res->npods = res->ndoms_total = 0;
    res->pods_u0 = 0;
    memset(res->dom_off, 0, sizeof res->dom_off);
    memset(res->locality, 0, sizeof res->locality);
}

void gs_pl_result_fail(gpusched_placer *p, gpusched_place_result *res, uint32_t reason, const char *msg)
{
    gs_pl_result_reset(res, p->nlevels);
    res->reason = reason;
    snprintf(res->msg, sizeof res->msg, "%s", msg);
}

/* Nodes and masks are already in place (the search writes them). */
static int reserve_arrays(gpusched_placer *p, gpusched_place_result *res, uint32_t npods)
{
    uint32_t L = p->nlevels;
    int rc;
    if ((rc = gs_grow(&res->alloc, (void **)&res->pod_nodes, &res->pod_cap, npods, sizeof *res->pod_nodes)))
        return rc;
    uint64_t doms = 0;
    for (uint32_t l = 0; l < L; l++)
        doms += p->ndoms[l];
    return gs_grow(&res->alloc, (void **)&res->doms, &res->doms_cap, (uint32_t)doms, sizeof *res->doms);
}

/* Domains used per level, concatenated: ascending within each level. */
static void fill_domains(gpusched_placer *p, gpusched_place_result *res)
{
    uint32_t L = p->nlevels, o = 0;
    for (uint32_t l = 0; l < L; l++) {
        res->dom_off[l] = o;
        memcpy(res->doms + o, p->out_doms[l], p->ndoms[l] * sizeof *res->doms);
        o += p->ndoms[l];
        res->locality[l] = p->ndoms[l];
    }
    res->dom_off[L] = res->dom_off[L + 1] = o;
    res->locality[L] = res->n;
    res->ndoms_total = o;
}

static void describe(gpusched_place_result *res)
{
    char gpus[32], nodes[32];
    const struct gpusched_topo *t = res->msg_topo;
    res->msg_topo = NULL;
    gs_pl_fmt_count(gpus, sizeof gpus, res->msg_gpus);
    gs_pl_fmt_count(nodes, sizeof nodes, res->n);
    int o = snprintf(res->msg, sizeof res->msg, "%s GPUs on %s nodes in", gpus, nodes);
    for (uint32_t l = 0; l < res->nlevels && o > 0 && (size_t)o < sizeof res->msg; l++)
        o += snprintf(res->msg + o, sizeof res->msg - (size_t)o, "%s %u %s%s", l ? "," : "", res->locality[l],
                      t->level_names[l], res->locality[l] == 1 ? "" : "s");
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
    res->pods_u0 = npods ? r->u0 : 0;
    fill_domains(p, res);
    res->reason = GPUSCHED_REASON_OK;
    if (res->topo != p->t) {
        gpusched_topo_unref(res->topo);
        res->topo = gpusched_topo_ref((gpusched_topo *)p->t);
    }
    res->msg_topo = p->t;
    res->msg_gpus = r->gpus;
    return 0;
}

GPUSCHED_API uint32_t gpusched_place_result_reason(const gpusched_place_result *res)
{
    return res ? res->reason : GPUSCHED_REASON_NOT_RUN;
}

const char *gpusched_place_result_message(const gpusched_place_result *res)
{
    if (!res)
        return "";
    if (res->msg_topo)
        describe((gpusched_place_result *)res);
    return res->msg;
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

/* Each node once per pod it holds (the room was reserved by the fill). */
static void write_pods(gpusched_place_result *res)
{
    const uint32_t u0 = res->pods_u0;
    res->pods_u0 = 0;
    for (uint32_t i = 0; i < res->n; i++)
        for (uint32_t k = gs_popcount64(res->masks[i]) / u0; k-- > 0;)
            res->pod_nodes[res->npods++] = res->nodes[i];
}

GPUSCHED_API int gpusched_place_result_pods(const gpusched_place_result *res, const uint32_t **pod_nodes, uint32_t *n)
{
    if (!res || !pod_nodes || !n)
        return GPUSCHED_EINVAL;
    if (res->pods_u0)
        write_pods((gpusched_place_result *)res);
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
    *n = res->reason == GPUSCHED_REASON_OK ? res->nlevels + 1 : 0;
    return 0;
}
