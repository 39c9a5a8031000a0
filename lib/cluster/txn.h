/* Cluster transactions: the only way anything outside lib/cluster changes
 * a cluster. Internal; never installed. doc/transactions.md has the model.
 *
 * A transaction holds two kinds of change:
 *
 *  - Temporaries, which the searches of the open transaction see and which
 *    are always undone: lending a job (its GPUs count as free), lending a
 *    reservation (its GPUs count as free), holding GPUs for a planned
 *    placement (they count as taken). Each is recorded as a group of
 *    per-node XOR flips of the free and reserved masks; flips commute, so
 *    undoing every group, in any order, restores the masks and (through
 *    the same incremental update) the aggregates bit for bit. A lent job
 *    with resources or GPU fractions also gives them back, as additions
 *    its record determines (they commute too). Temporaries never touch
 *    the job and reservation tables or the GPU holders.
 *
 *  - Staged changes (claim GPUs for a job, release a job, and the
 *    cluster's own reservation, health and descriptor changes), applied
 *    only by the commit, in order, after the temporaries are undone.
 *
 * The commit validates the staged changes against the cluster as it was
 * when the transaction began (a claim may use GPUs that are free, in its
 * job's own reservation, or given up by an earlier change of the same
 * transaction), makes every allocation, writes the journal record (the
 * journal sink may refuse it), and only then applies: a commit that
 * fails has changed nothing. A rollback undoes the temporaries and drops
 * the staged changes. Plan-only calls are transactions that roll back.
 *
 * The arrays a staged change names (nodes, masks, the job descriptor) are
 * borrowed: they must stay unchanged until the commit or rollback.
 *
 * One transaction is open at a time per cluster; every public call opens
 * and closes its own, so none is ever open between calls. */
#ifndef GS_CLUSTER_TXN_H
#define GS_CLUSTER_TXN_H

#include "cluster-internal.h"

/* Opens a transaction. GPUSCHED_ESTATE if one is open already. */
int gs_txn_begin(struct gpusched_cluster *c);

/* ---- temporaries --------------------------------------------------------- */

/* Lends a running job: its GPUs count as free until unlent or the
 * transaction ends, and so do its resources and GPU fractions (a GPU
 * whose fractions are all lent is free). No-op if lent. GPUSCHED_ENOMEM
 * (nothing changed). */
int gs_txn_lend_job(struct gpusched_cluster *c, gs_hold *h);
/* Takes a lent job back (no-op if not lent). The last temporary is popped;
 * an earlier one is undone in place, which needs its GPUs free now
 * (GPUSCHED_ESTATE otherwise: something holds them). */
int gs_txn_unlend_job(struct gpusched_cluster *c, gs_hold *h);
/* The same for a reservation: its GPUs that are reserved count as free. */
int gs_txn_lend_resv(struct gpusched_cluster *c, gs_hold *r);
int gs_txn_unlend_resv(struct gpusched_cluster *c, gs_hold *r);
/* Holds GPUs for a planned placement of job `for_job`: each GPU must be
 * free now or reserved for that job; it then counts as neither.
 * GPUSCHED_ESTATE (with a message) or GPUSCHED_ENOMEM; nothing changed. */
int gs_txn_hold(struct gpusched_cluster *c, uint64_t for_job, uint32_t n, const uint32_t *nodes,
                const uint64_t *masks);

/* A placement of pods kept until the transaction closes: a copy of `x`
 * (n pairs) the transaction owns, with the pairs borrowed (they must stay
 * unchanged until then). A staged claim of pods may borrow the copy (a
 * batch stages several). NULL when out of memory (c->err says so). */
gs_podx *gs_txn_keep_pods(struct gpusched_cluster *c, const gs_podx *x, uint32_t n, const uint32_t *nodes,
                          const uint64_t *masks);
/* Holds a kept placement of pods (`x` as gs_txn_keep_pods returned it):
 * its whole GPUs, resources and fractions count as taken until the
 * transaction ends. Each pair must fit as the cluster is now
 * (GPUSCHED_EBUSY with a message); GPUSCHED_ENOMEM; nothing changed. */
int gs_txn_hold_pods(struct gpusched_cluster *c, const gs_podx *x);

/* A point in the temporaries, and undoing everything done after it. */
uint32_t gs_txn_mark(const struct gpusched_cluster *c);
void gs_txn_undo_to(struct gpusched_cluster *c, uint32_t mark);

/* ---- staged changes ------------------------------------------------------ */

/* Claim GPUs for job `job` (a full, checked descriptor) at commit; a
 * reservation of the job is consumed (GPUs it does not use become free). */
/* gs_txn_stage_claim for pods with resources or GPU fractions: `podx`
 * (npairs == n, borrowed until the commit) says what each pair holds. */
int gs_txn_stage_claim_pods(struct gpusched_cluster *c, const gpusched_job *job, uint32_t n,
                            const uint32_t *nodes, const uint64_t *masks, const gs_podx *podx);
int gs_txn_stage_claim(struct gpusched_cluster *c, const gpusched_job *job, uint32_t n, const uint32_t *nodes,
                       const uint64_t *masks);
/* Release running job `id` at commit. */
int gs_txn_stage_release(struct gpusched_cluster *c, uint64_t id);

/* ---- the end --------------------------------------------------------------- */

/* Validates, allocates, journals, undoes the temporaries and applies the
 * staged changes. 0, or an error with c->err set and nothing changed. The
 * transaction is closed either way. */
int gs_txn_commit(struct gpusched_cluster *c);
/* Undoes the temporaries and drops the staged changes. */
void gs_txn_rollback(struct gpusched_cluster *c);

#endif
