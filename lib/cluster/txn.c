/* Transactions: temporaries as XOR flips, staged changes, the commit
 * (txn.h has the model). */
#include <string.h>

#include "cluster-write.h"
#include "txn.h"

int gs_txn_begin(struct gpusched_cluster *c)
{
    if (c->txn.open)
        return gs_error(&c->err, GPUSCHED_ESTATE, "a transaction is already open on this cluster");
    c->txn.open = true;
    return 0;
}

/* ---- temporaries --------------------------------------------------------- */

/* Room for one more group of `nflips` flips. */
static int room(struct gpusched_cluster *c, uint32_t nflips)
{
    gs_txn_state *x = &c->txn;
    if (nflips > UINT32_MAX - x->nflips)
        return GPUSCHED_ENOMEM;
    if (gs_grow(&c->alloc, (void **)&x->groups, &x->groups_cap, x->ngroups + 1, sizeof *x->groups) ||
        gs_grow(&c->alloc, (void **)&x->flips, &x->flips_cap, x->nflips + nflips, sizeof *x->flips))
        return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory recording a temporary change");
    return 0;
}

static gs_tgroup *push_group(struct gpusched_cluster *c, uint32_t kind, uint32_t slot, uint32_t n)
{
    gs_txn_state *x = &c->txn;
    gs_tgroup *g = &x->groups[x->ngroups++];
    *g = (gs_tgroup){kind, slot, x->nflips, n};
    x->nflips += n;
    return g;
}

static void group_lent_flags(struct gpusched_cluster *c, const gs_tgroup *g, bool lent)
{
    if (g->kind == GS_TG_LEND_JOB) {
        c->jobs.rec[g->slot].lent = lent;
        if (!lent)
            c->txn.job_group[g->slot] = 0;
    } else if (g->kind == GS_TG_LEND_RESV) {
        c->resv.rec[g->slot].lent = lent;
        if (lent)
            c->nlent++;
        else
            c->nlent--;
    }
}

/* Undoes group `i` in place (its flips applied again) and marks it dead. */
static void kill_group(struct gpusched_cluster *c, uint32_t i)
{
    gs_tgroup *g = &c->txn.groups[i];
    gs_cluster_flips_apply(c, c->txn.flips + g->first, g->n);
    if (g->kind == GS_TG_LEND_JOB && gs_hold_podx(c, &c->jobs.rec[g->slot]))
        gs_pods_lend(c, &c->jobs.rec[g->slot], false);
    if (g->kind == GS_TG_HOLD_PODS) {
        const gs_kept_pods *k = &c->txn.kept[g->slot];
        gs_pods_take(c, k->x, k->n, k->nodes, k->masks, false);
    }
    group_lent_flags(c, g, false);
    g->kind = GS_TG_DEAD;
}

/* Drops dead groups from the top, so that the log stays as long as what
 * is still in effect when temporaries are taken back in order. */
static void trim(struct gpusched_cluster *c)
{
    gs_txn_state *x = &c->txn;
    while (x->ngroups && x->groups[x->ngroups - 1].kind == GS_TG_DEAD)
        x->nflips = x->groups[--x->ngroups].first;
}

uint32_t gs_txn_mark(const struct gpusched_cluster *c)
{
    return c->txn.ngroups;
}

void gs_txn_undo_to(struct gpusched_cluster *c, uint32_t mark)
{
    gs_txn_state *x = &c->txn;
    while (x->ngroups > mark) {
        if (x->groups[x->ngroups - 1].kind != GS_TG_DEAD)
            kill_group(c, x->ngroups - 1);
        x->nflips = x->groups[--x->ngroups].first;
    }
    trim(c);
}

/* Undoes group `i`: popped when it is the last, else undone in place,
 * which needs the GPUs it freed still free (nothing took them since). */
static int undo_group(struct gpusched_cluster *c, uint32_t i, const char *what, uint64_t id)
{
    gs_txn_state *x = &c->txn;
    const gs_tgroup *g = &x->groups[i];
    if (i + 1 < x->ngroups) {
        const gs_flip *f = x->flips + g->first;
        for (uint32_t k = 0; k < g->n; k++)
            if ((c->node_free[f[k].node] & f[k].fx) != f[k].fx)
                return gs_error(&c->err, GPUSCHED_ESTATE,
                                "%s %llu cannot be taken back: node %u has GPUs of it held since",
                                what, (unsigned long long)id, f[k].node);
        if (g->kind == GS_TG_LEND_JOB && gs_hold_podx(c, &c->jobs.rec[g->slot]) &&
            !gs_pods_can_unlend(c, &c->jobs.rec[g->slot]))
            return gs_error(&c->err, GPUSCHED_ESTATE,
                            "%s %llu cannot be taken back: its resources or GPU fractions were taken since", what,
                            (unsigned long long)id);
    }
    kill_group(c, i);
    trim(c);
    return 0;
}

int gs_txn_lend_job(struct gpusched_cluster *c, gs_hold *h)
{
    if (h->lent)
        return 0;
    gs_txn_state *x = &c->txn;
    const uint32_t slot = gs_hold_slot(&c->jobs, h);
    int rc = room(c, h->npairs);
    if (rc)
        return rc;
    if (gs_grow(&c->alloc, (void **)&x->job_group, &x->job_group_cap, c->jobs.used, sizeof *x->job_group))
        return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory recording a temporary change");
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    gs_tgroup *g = push_group(c, GS_TG_LEND_JOB, slot, h->npairs);
    gs_flip *f = x->flips + g->first;
    /* Whole GPUs are flipped; fractions and resources are given back by
     * gs_pods_lend (a GPU other jobs share stays shared). */
    const gs_podx *px = gs_hold_podx(c, h);
    const bool shared = px && px->milli;
    for (uint32_t i = 0; i < h->npairs; i++)
        f[i] = (gs_flip){nodes[i], shared ? 0 : masks[i] & ~c->node_free[nodes[i]], 0};
    gs_cluster_flips_apply(c, f, g->n);
    if (px)
        gs_pods_lend(c, h, true);
    h->lent = 1;
    x->job_group[slot] = x->ngroups;
    return 0;
}

int gs_txn_unlend_job(struct gpusched_cluster *c, gs_hold *h)
{
    if (!h->lent)
        return 0;
    const uint32_t slot = gs_hold_slot(&c->jobs, h);
    return undo_group(c, c->txn.job_group[slot] - 1, "job", h->id);
}

int gs_txn_lend_resv(struct gpusched_cluster *c, gs_hold *r)
{
    if (r->lent)
        return 0;
    int rc = room(c, r->npairs);
    if (rc)
        return rc;
    const uint32_t *nodes = gs_hold_nodes(r);
    const uint64_t *masks = gs_hold_masks(r);
    gs_tgroup *g = push_group(c, GS_TG_LEND_RESV, gs_hold_slot(&c->resv, r), r->npairs);
    gs_flip *f = c->txn.flips + g->first;
    for (uint32_t i = 0; i < r->npairs; i++) {
        /* GPUs of the reservation held for its job meanwhile are not lent. */
        uint64_t bits = masks[i] & c->node_resv[nodes[i]];
        f[i] = (gs_flip){nodes[i], bits, bits};
    }
    gs_cluster_flips_apply(c, f, g->n);
    group_lent_flags(c, g, true);
    return 0;
}

int gs_txn_unlend_resv(struct gpusched_cluster *c, gs_hold *r)
{
    if (!r->lent)
        return 0;
    const uint32_t slot = gs_hold_slot(&c->resv, r);
    uint32_t i = c->txn.ngroups;
    while (i-- > 0)
        if (c->txn.groups[i].kind == GS_TG_LEND_RESV && c->txn.groups[i].slot == slot)
            break;
    return undo_group(c, i, "reservation of job", r->id);
}

/* The reservation slot a GPU's holder names, or UINT32_MAX. */
static uint32_t holder_resv(const struct gpusched_cluster *c, uint32_t node, uint32_t gpu)
{
    uint32_t h = c->gpu_holder[gs_cl_gpu_base(c, node) + gpu];
    return (h & GS_HOLDER_RESV) && h != GS_HOLDER_SHARED ? h & ~GS_HOLDER_RESV : UINT32_MAX;
}

int gs_txn_hold(struct gpusched_cluster *c, uint64_t for_job, uint32_t n, const uint32_t *nodes,
                const uint64_t *masks)
{
    const gs_hold *own = gs_cluster_resv_find(c, for_job);
    const uint32_t own_slot = own ? gs_hold_slot(&c->resv, own) : UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t rest = masks[i] & ~c->node_free[nodes[i]];
        uint64_t bad = rest & ~c->node_resv[nodes[i]];
        for (uint64_t r = rest & c->node_resv[nodes[i]]; !bad && r; r &= r - 1)
            if (holder_resv(c, nodes[i], gs_ctz64(r)) != own_slot)
                bad = r & -r;
        if (bad)
            return gs_error(&c->err, GPUSCHED_ESTATE, "hold for job %llu: node %u GPU %u is not free",
                            (unsigned long long)for_job, nodes[i], gs_ctz64(bad));
    }
    int rc = room(c, n);
    if (rc)
        return rc;
    gs_tgroup *g = push_group(c, GS_TG_HOLD, 0, n);
    gs_flip *f = c->txn.flips + g->first;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t from_free = masks[i] & c->node_free[nodes[i]];
        f[i] = (gs_flip){nodes[i], from_free, masks[i] & ~from_free};
    }
    gs_cluster_flips_apply(c, f, n);
    return 0;
}

gs_podx *gs_txn_keep_pods(struct gpusched_cluster *c, const gs_podx *x, uint32_t n, const uint32_t *nodes,
                          const uint64_t *masks)
{
    gs_txn_state *t = &c->txn;
    if (gs_grow(&c->alloc, (void **)&t->kept, &t->kept_cap, t->nkept + 1, sizeof *t->kept)) {
        gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory keeping a placement of pods");
        return NULL;
    }
    gs_podx *copy = gs_malloc(&c->alloc, gs_podx_size(n));
    if (!copy) {
        gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory keeping a placement of pods");
        return NULL;
    }
    memcpy(copy, x, gs_podx_size(n));
    t->kept[t->nkept++] = (gs_kept_pods){copy, nodes, masks, n};
    return copy;
}

int gs_txn_hold_pods(struct gpusched_cluster *c, const gs_podx *x)
{
    gs_txn_state *t = &c->txn;
    uint32_t k = t->nkept;
    while (k-- > 0 && t->kept[k].x != x)
        ;
    if (k == UINT32_MAX)
        return gs_error(&c->err, GPUSCHED_EINVAL, "hold of pods: the placement is not kept by the transaction");
    const gs_kept_pods *kp = &t->kept[k];
    int rc = gs_pods_ensure(c, x->milli != 0);
    if (!rc)
        rc = gs_pods_check_pairs(c, x, kp->n, kp->nodes, kp->masks);
    if (rc)
        return rc;
    if ((rc = room(c, kp->n)))
        return rc;
    gs_tgroup *g = push_group(c, GS_TG_HOLD_PODS, k, kp->n);
    gs_flip *f = t->flips + g->first;
    for (uint32_t i = 0; i < kp->n; i++)
        f[i] = (gs_flip){kp->nodes[i], x->milli ? 0 : kp->masks[i], 0};
    gs_cluster_flips_apply(c, f, g->n);
    gs_pods_take(c, x, kp->n, kp->nodes, kp->masks, true);
    return 0;
}

/* ---- staged changes ------------------------------------------------------ */

gs_op *gs_txn_stage(struct gpusched_cluster *c, uint32_t kind)
{
    gs_txn_state *x = &c->txn;
    if (gs_grow(&c->alloc, (void **)&x->ops, &x->ops_cap, x->nops + 1, sizeof *x->ops)) {
        gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory staging a change");
        return NULL;
    }
    gs_op *op = &x->ops[x->nops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    return op;
}

int gs_txn_stage_claim(struct gpusched_cluster *c, const gpusched_job *job, uint32_t n, const uint32_t *nodes,
                       const uint64_t *masks)
{
    gs_op *op = gs_txn_stage(c, GS_OP_CLAIM);
    if (!op)
        return GPUSCHED_ENOMEM;
    op->job = *job;
    op->n = n;
    op->nodes = nodes;
    op->masks = masks;
    return 0;
}

int gs_txn_stage_claim_pods(struct gpusched_cluster *c, const gpusched_job *job, uint32_t n,
                            const uint32_t *nodes, const uint64_t *masks, const gs_podx *podx)
{
    int rc = gs_txn_stage_claim(c, job, n, nodes, masks);
    if (!rc)
        c->txn.ops[c->txn.nops - 1].podx = podx;
    return rc;
}

int gs_txn_stage_release(struct gpusched_cluster *c, uint64_t id)
{
    gs_op *op = gs_txn_stage(c, GS_OP_RELEASE);
    if (!op)
        return GPUSCHED_ENOMEM;
    op->job.id = id;
    return 0;
}

/* ---- the end --------------------------------------------------------------- */

static void close_txn(struct gpusched_cluster *c)
{
    for (uint32_t k = 0; k < c->txn.nkept; k++)
        gs_free(&c->alloc, c->txn.kept[k].x);
    c->txn.nkept = 0;
    c->txn.nops = 0;
    c->txn.open = false;
}

void gs_txn_rollback(struct gpusched_cluster *c)
{
    gs_txn_undo_to(c, 0);
    close_txn(c);
}

/* Validation, allocations, the journal record, then the changes: every
 * step that can fail comes before the first change. */
static int commit_ops(struct gpusched_cluster *c, gs_op *ops, uint32_t n)
{
    int rc = gs_ops_validate(c, ops, n);
    if (!rc)
        rc = gs_ops_prepare(c, ops, n);
    if (!rc && c->journal.on)
        rc = gs_journal_emit(c, ops, n);
    if (rc) {
        for (uint32_t i = 0; i < n; i++) {
            gs_free(&c->alloc, ops[i].block);
            gs_free(&c->alloc, ops[i].podx_copy);
            ops[i].block = NULL;
            ops[i].podx_copy = NULL;
        }
        return rc;
    }
    gs_ops_apply(c, ops, n);
    c->changes++;
    return gs_ok(&c->err);
}

int gs_txn_commit(struct gpusched_cluster *c)
{
    /* The staged changes were decided on the temporaries; they are checked
     * and applied on the state as it was when the transaction began. */
    gs_txn_undo_to(c, 0);
    int rc = c->txn.nops ? commit_ops(c, c->txn.ops, c->txn.nops) : 0;
    close_txn(c);
    return rc;
}

int gs_txn_commit_one(struct gpusched_cluster *c, gs_op *op)
{
    return gs_txn_commit_ops(c, op, 1);
}

int gs_txn_commit_ops(struct gpusched_cluster *c, gs_op *ops, uint32_t n)
{
    if (c->txn.open)
        return gs_error(&c->err, GPUSCHED_ESTATE, "a transaction is open on this cluster");
    return commit_ops(c, ops, n);
}

void gs_txn_free(struct gpusched_cluster *c)
{
    gs_txn_state *x = &c->txn;
    gs_free(&c->alloc, x->flips);
    gs_free(&c->alloc, x->groups);
    gs_free(&c->alloc, x->job_group);
    gs_free(&c->alloc, x->ops);
    gs_free(&c->alloc, x->nodes_ovl.e);
    gs_free(&c->alloc, x->ids_ovl.e);
    for (uint32_t k = 0; k < x->nkept; k++)
        gs_free(&c->alloc, x->kept[k].x);
    gs_free(&c->alloc, x->kept);
    memset(x, 0, sizeof *x);
}

size_t gs_txn_bytes(const struct gpusched_cluster *c)
{
    const gs_txn_state *x = &c->txn;
    return (size_t)x->flips_cap * sizeof *x->flips + (size_t)x->groups_cap * sizeof *x->groups +
           (size_t)x->job_group_cap * sizeof *x->job_group + (size_t)x->ops_cap * sizeof *x->ops +
           ((size_t)x->nodes_ovl.cap + x->ids_ovl.cap) * sizeof(gs_ovl_ent) + (size_t)x->kept_cap * sizeof *x->kept;
}
