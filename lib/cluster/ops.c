/* Staged changes: validation against the state as earlier changes of the
 * same transaction leave it, the allocations, and the application that
 * cannot fail. The commit of a transaction and the journal's replay both
 * come through here, so a replayed record changes the state exactly as the
 * commit that wrote it did. */
#include <string.h>

#include "cluster-write.h"

/* ---- the overlay: what earlier changes of the transaction did ------------ */

static uint32_t ovl_hash(uint64_t k, uint32_t mask)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k & mask;
}

static int ovl_reset(struct gpusched_cluster *c, gs_ovl *o, uint64_t keys)
{
    uint32_t cap = 16;
    while (cap < 2 * keys && cap < (1u << 31))
        cap *= 2;
    if (cap > o->cap) {
        gs_ovl_ent *e = gs_realloc_array(&c->alloc, o->e, cap, sizeof *e);
        if (!e)
            return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory checking a transaction");
        o->e = e;
        o->cap = cap;
    }
    memset(o->e, 0, (size_t)o->cap * sizeof *o->e);
    return 0;
}

static gs_ovl_ent *ovl_get(const gs_ovl *o, uint64_t key)
{
    const uint32_t mask = o->cap - 1;
    for (uint32_t i = ovl_hash(key, mask);; i = (i + 1) & mask) {
        gs_ovl_ent *e = &o->e[i];
        if (!e->used) {
            e->used = 1;
            e->key = key;
            return e;
        }
        if (e->key == key)
            return e;
    }
}

/* GPUs of `node` given up (a) and taken (b) by earlier changes. */
void gs_ovl_node(const gs_ovl *o, uint32_t node, uint64_t *given, uint64_t *taken)
{
    const uint32_t mask = o->cap - 1;
    for (uint32_t i = ovl_hash(node, mask);; i = (i + 1) & mask) {
        const gs_ovl_ent *e = &o->e[i];
        if (!e->used) {
            *given = *taken = 0;
            return;
        }
        if (e->key == node) {
            *given = e->a;
            *taken = e->b;
            return;
        }
    }
}

/* ---- validation ------------------------------------------------------------ */

#define ID_RELEASED 1u
#define ID_CLAIMED 2u

static int validate_claim(struct gpusched_cluster *c, gs_op *op, bool multi)
{
    const uint64_t id = op->job.id;
    gs_ovl_ent *e = multi ? ovl_get(&c->txn.ids_ovl, id) : NULL;
    if (e && (e->a & ID_CLAIMED))
        return gs_error(&c->err, GPUSCHED_EEXIST, "job %llu is claimed twice in one transaction",
                        (unsigned long long)id);
    if (gs_cluster_job_find(c, id) && !(e && (e->a & ID_RELEASED)))
        return gs_error(&c->err, GPUSCHED_EEXIST, "job %llu is already running", (unsigned long long)id);
    const gs_hold *own = c->resv.count ? gs_cluster_resv_find(c, id) : NULL;
    op->own = own ? gs_hold_slot(&c->resv, own) + 1 : 0;
    int rc = gs_cluster_check_pairs(c, op->n, op->nodes, op->masks, own, multi ? &c->txn.nodes_ovl : NULL);
    if (rc || !multi)
        return rc;
    e->a |= ID_CLAIMED;
    if (own) {
        /* The reservation is consumed: what the claim leaves of it is free. */
        const uint32_t *rn = gs_hold_nodes(own);
        const uint64_t *rm = gs_hold_masks(own);
        for (uint32_t i = 0; i < own->npairs; i++)
            ovl_get(&c->txn.nodes_ovl, rn[i])->a |= rm[i];
    }
    for (uint32_t i = 0; i < op->n; i++)
        ovl_get(&c->txn.nodes_ovl, op->nodes[i])->b |= op->masks[i];
    return 0;
}

/* A claim with resources or fractions, against what ops[0, i) did; in a
 * transaction of several changes its GPUs are then taken for the later
 * whole-GPU claims. */
static int validate_pods_claim(struct gpusched_cluster *c, gs_op *ops, uint32_t i, bool multi)
{
    gs_op *op = &ops[i];
    gs_ovl_ent *e = multi ? ovl_get(&c->txn.ids_ovl, op->job.id) : NULL;
    if (e && (e->a & ID_CLAIMED))
        return gs_error(&c->err, GPUSCHED_EEXIST, "job %llu is claimed twice in one transaction",
                        (unsigned long long)op->job.id);
    int rc = gs_pods_validate_claim(c, op, ops, i);
    if (rc || !multi)
        return rc;
    e->a |= ID_CLAIMED;
    for (uint32_t k = 0; k < op->n; k++)
        ovl_get(&c->txn.nodes_ovl, op->nodes[k])->b |= op->masks[k];
    return 0;
}

static int validate_release(struct gpusched_cluster *c, gs_op *op, bool multi)
{
    const uint64_t id = op->job.id;
    gs_ovl_ent *e = multi ? ovl_get(&c->txn.ids_ovl, id) : NULL;
    gs_hold *h = op->found ? op->found : gs_cluster_job_find(c, id);
    if (!h || (e && e->a))
        return gs_error(&c->err, GPUSCHED_ENOENT, "no running job %llu", (unsigned long long)id);
    op->slot = gs_hold_slot(&c->jobs, h);
    if (!multi)
        return 0;
    e->a |= ID_RELEASED;
    const gs_podx *x = gs_hold_podx(c, h);
    if (x && x->milli)
        return 0; /* its GPUs stay shared with other jobs, or may */
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++)
        ovl_get(&c->txn.nodes_ovl, nodes[i])->a |= masks[i];
    return 0;
}

static int validate_one(struct gpusched_cluster *c, gs_op *op)
{
    const uint64_t id = op->job.id;
    switch (op->kind) {
    case GS_OP_RESERVE: {
        int rc = gs_cluster_check_pairs(c, op->n, op->nodes, op->masks, NULL, NULL);
        if (rc)
            return rc;
        const gs_hold *r = gs_cluster_resv_find(c, id);
        op->merged = r ? gs_resv_merged_count(r, op->n, op->nodes) : op->n;
        return 0;
    }
    case GS_OP_UNRESERVE:
        if (!gs_cluster_resv_find(c, id))
            return gs_error(&c->err, GPUSCHED_ENOENT, "no reservation for job %llu", (unsigned long long)id);
        return 0;
    case GS_OP_RELEASE_TO_RESV: {
        const gs_hold *h = gs_cluster_job_find(c, id);
        if (!h)
            return gs_error(&c->err, GPUSCHED_ENOENT, "no running job %llu", (unsigned long long)id);
        if (gs_hold_podx(c, h))
            return gs_error(&c->err, GPUSCHED_EINVAL,
                            "job %llu holds resources or GPU fractions: reservations do not hold them yet",
                            (unsigned long long)id);
        op->slot = gs_hold_slot(&c->jobs, h);
        const gs_hold *r = gs_cluster_resv_find(c, op->id2);
        op->merged = r ? gs_resv_merged_count(r, h->npairs, gs_hold_nodes(h)) : h->npairs;
        return 0;
    }
    case GS_OP_HEALTH: {
        int rc = gs_cluster_node_arg(c, op->node);
        if (rc)
            return rc;
        if (op->health >= GS_NODE_HEALTHS)
            return gs_error(&c->err, GPUSCHED_EINVAL, "health %u is not a gpusched_node_health", op->health);
        return 0;
    }
    case GS_OP_UPDATE: {
        const gs_hold *h = gs_cluster_job_find(c, id);
        if (!h)
            return gs_error(&c->err, GPUSCHED_ENOENT, "no running job %llu", (unsigned long long)id);
        if (op->job.flags & ~(uint32_t)GPUSCHED_JOB_FLAG_ALL)
            return gs_error(&c->err, GPUSCHED_EINVAL, "job %llu: unknown flags 0x%x", (unsigned long long)id,
                            op->job.flags & ~(uint32_t)GPUSCHED_JOB_FLAG_ALL);
        op->slot = gs_hold_slot(&c->jobs, h);
        return 0;
    }
    default:
        return gs_error(&c->err, GPUSCHED_EINVAL, "unknown change kind %u", op->kind);
    }
}

int gs_ops_validate(struct gpusched_cluster *c, gs_op *ops, uint32_t n)
{
    if (n == 1 && ops->kind == GS_OP_RELEASE)
        return validate_release(c, ops, false);
    const bool multi = n > 1;
    if (multi) {
        uint64_t pairs = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (ops[i].kind != GS_OP_CLAIM && ops[i].kind != GS_OP_RELEASE)
                return gs_error(&c->err, GPUSCHED_EINVAL,
                                "change %u: kind %u only comes alone in a transaction", i, ops[i].kind);
            const gs_hold *h = ops[i].kind == GS_OP_RELEASE ? gs_cluster_job_find(c, ops[i].job.id) : NULL;
            const gs_hold *r = ops[i].kind == GS_OP_CLAIM ? gs_cluster_resv_find(c, ops[i].job.id) : NULL;
            pairs += ops[i].n + (h ? h->npairs : 0) + (r ? r->npairs : 0);
        }
        int rc = ovl_reset(c, &c->txn.nodes_ovl, pairs);
        if (rc || (rc = ovl_reset(c, &c->txn.ids_ovl, n)))
            return rc;
    }
    for (uint32_t i = 0; i < n; i++) {
        gs_op *op = &ops[i];
        if (op->kind == GS_OP_CLAIM && op->job.flags & ~(uint32_t)GPUSCHED_JOB_FLAG_ALL)
            return gs_error(&c->err, GPUSCHED_EINVAL, "job %llu: unknown flags 0x%x",
                            (unsigned long long)op->job.id, op->job.flags & ~(uint32_t)GPUSCHED_JOB_FLAG_ALL);
        int rc = op->kind == GS_OP_CLAIM && op->podx ? validate_pods_claim(c, ops, i, multi)
                 : op->kind == GS_OP_CLAIM           ? validate_claim(c, op, multi)
                 : op->kind == GS_OP_RELEASE ? validate_release(c, op, multi)
                                             : validate_one(c, op);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- allocations ------------------------------------------------------------ */

static int table_room(struct gpusched_cluster *c, gs_holdtab *t, uint32_t extra, const char *what)
{
    int rc = gs_holdtab_prepare(t, &c->alloc, extra);
    if (rc == GPUSCHED_ENOMEM)
        return gs_error(&c->err, rc, "out of memory growing the %s table", what);
    if (rc)
        return gs_error(&c->err, rc, "too many %ss", what);
    return 0;
}

static int block_for(struct gpusched_cluster *c, gs_op *op, uint32_t pairs, const char *what)
{
    op->block = gs_pairs_block(&c->alloc, pairs);
    if (pairs > GS_HOLD_INLINE && !op->block)
        return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory for %u %s pairs", pairs, what);
    return 0;
}

int gs_ops_prepare(struct gpusched_cluster *c, gs_op *ops, uint32_t n)
{
    /* The common case, one release: nothing to allocate. */
    if (n == 1 && ops->kind != GS_OP_CLAIM && ops->kind != GS_OP_RESERVE && ops->kind != GS_OP_RELEASE_TO_RESV)
        return 0;
    uint32_t claims = 0;
    for (uint32_t i = 0; i < n; i++)
        claims += ops[i].kind == GS_OP_CLAIM;
    int rc = claims ? table_room(c, &c->jobs, claims, "job") : 0;
    for (uint32_t i = 0; !rc && i < n; i++) {
        gs_op *op = &ops[i];
        if (op->kind == GS_OP_CLAIM) {
            rc = block_for(c, op, op->n, "allocation");
            if (!rc && op->podx)
                rc = gs_pods_prepare(c, op);
        } else if (op->kind == GS_OP_RESERVE || op->kind == GS_OP_RELEASE_TO_RESV) {
            const uint64_t rid = op->kind == GS_OP_RESERVE ? op->job.id : op->id2;
            if (!gs_cluster_resv_find(c, rid))
                rc = table_room(c, &c->resv, 1, "reservation");
            if (!rc)
                rc = block_for(c, op, op->merged, "reservation");
        }
    }
    return rc;
}

/* ---- application ------------------------------------------------------------ */

static void apply_health(struct gpusched_cluster *c, uint32_t node, uint32_t health)
{
    uint64_t old = gs_cluster_node_avail(c, node);
    c->nodes_not_up += (health != GPUSCHED_NODE_UP) - (c->node_health[node] != GPUSCHED_NODE_UP);
    c->node_health[node] = (uint8_t)health;
    gs_cluster_node_changed(c, node, old);
}

static void apply_update(struct gpusched_cluster *c, gs_hold *h, const gpusched_job *j)
{
    h->start_time = j->start_time;
    h->cost_hint = j->cost_hint;
    h->protected_until = j->protected_until;
    h->priority = j->priority;
    h->tenant = j->tenant;
    h->flags = j->flags;
}

/* The preemption index learns which domains' jobs change. */
static void mark_job(struct gpusched_cluster *c, const gs_hold *h)
{
    gs_pindex_mark(c, h->npairs, gs_hold_nodes(h));
}

void gs_ops_apply(struct gpusched_cluster *c, gs_op *ops, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        gs_op *op = &ops[i];
        switch (op->kind) {
        case GS_OP_CLAIM:
            if (op->podx) {
                gs_pods_apply_claim(c, op);
                gs_pindex_mark(c, op->n, op->nodes);
                break;
            }
            gs_cluster_commit_apply(c, &op->job, op->n, op->nodes, op->masks, op->block,
                                    op->own ? &c->resv.rec[op->own - 1] : NULL);
            gs_pindex_mark(c, op->n, op->nodes);
            break;
        case GS_OP_RELEASE:
            mark_job(c, &c->jobs.rec[op->slot]);
            gs_cluster_job_drop(c, &c->jobs.rec[op->slot]);
            break;
        case GS_OP_RESERVE:
            gs_resv_add(c, op->job.id, op->n, op->nodes, op->masks, op->merged, op->block);
            break;
        case GS_OP_UNRESERVE:
            gs_cluster_resv_drop(c, gs_cluster_resv_find(c, op->job.id));
            break;
        case GS_OP_RELEASE_TO_RESV:
            mark_job(c, &c->jobs.rec[op->slot]);
            gs_resv_take_job(c, &c->jobs.rec[op->slot], op->id2, op->merged, op->block);
            break;
        case GS_OP_HEALTH:
            apply_health(c, op->node, op->health);
            break;
        case GS_OP_UPDATE:
            mark_job(c, &c->jobs.rec[op->slot]);
            apply_update(c, &c->jobs.rec[op->slot], &op->job);
            break;
        }
        op->block = NULL; /* owned by the record now */
    }
}
