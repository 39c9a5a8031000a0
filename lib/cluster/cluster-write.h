/* The cluster's write side: everything that changes node masks, GPU
 * holders, aggregates and the job and reservation tables. Only files of
 * lib/cluster include it; every other module changes a cluster through a
 * transaction (txn.h). Internal; never installed. */
#ifndef GS_CLUSTER_WRITE_H
#define GS_CLUSTER_WRITE_H

#include "cluster-internal.h"

/* Aggregate arrays of `c` (c->topo, c->nlevels and c->hist_width set):
 * allocation, recomputation from scratch out of `src`'s node state (the
 * invariant checker computes into a scratch struct), release. */
int gs_aggs_alloc(struct gpusched_cluster *c, const gs_alloc *a);
void gs_aggs_compute(struct gpusched_cluster *dst, const struct gpusched_cluster *src);
void gs_aggs_free(struct gpusched_cluster *c, const gs_alloc *a);
size_t gs_aggs_bytes(const struct gpusched_cluster *c);

/* The low-level update every mutation goes through: node `n` had usable
 * mask `old_avail` (gs_cluster_node_avail before the change) and has
 * gs_cluster_node_avail(c, n) now; updates every aggregate on its path.
 * O(levels). */
void gs_cluster_node_changed(struct gpusched_cluster *c, uint32_t n, uint64_t old_avail);

/* Up to this many pairs, updating the aggregates node by node is cheaper
 * than gathering per-domain deltas. */
#define GS_BATCH_MIN_PAIRS 4

/* Claims (GPUs free -> allocated to `holder`) or releases (allocated ->
 * free, `holder` 0) the GPUs of n pairs, nodes ascending; aggregates are
 * updated once per lowest domain touched. Never touches node_resv.
 * Returns the GPUs of the masks. */
uint32_t gs_cluster_nodes_set(struct gpusched_cluster *c, uint32_t n, const uint32_t *nodes,
                              const uint64_t *masks, int claim, uint32_t holder);

/* Applies n flips (XOR of node_free and node_resv), nodes ascending:
 * the temporaries of a transaction and their undoing. */
void gs_cluster_flips_apply(struct gpusched_cluster *c, const gs_flip *f, uint32_t n);

/* Makes room for `extra` more records (slots and hash) so that the inserts
 * that follow cannot fail. Moves the records: gs_hold pointers taken before
 * it are stale. GPUSCHED_ENOMEM or GPUSCHED_ELIMIT; the table stays valid. */
int gs_holdtab_prepare(gs_holdtab *t, const gs_alloc *a, uint32_t extra);
/* A zeroed record with `id` set, appended to the live list. Needs room. */
gs_hold *gs_holdtab_insert(gs_holdtab *t, uint64_t id, uint32_t node_hint);
/* Frees the record's pair block and its slot; the live list order changes
 * (the last live record takes its place). */
void gs_holdtab_remove(gs_holdtab *t, const gs_alloc *a, gs_hold *h);
void gs_holdtab_free(gs_holdtab *t, const gs_alloc *a);



/* Resources and GPU fractions (pods.c): the state's arrays, a claim's
 * validation, its allocations, its application, a podx job's release and
 * lending in a transaction, the invariants. */
int gs_pods_create(struct gpusched_cluster *c);
void gs_pods_destroy(struct gpusched_cluster *c);
void gs_stamps_free(struct gpusched_cluster *c);
size_t gs_stamps_bytes(const struct gpusched_cluster *c);
size_t gs_pods_bytes(const struct gpusched_cluster *c);
/* A claim with a podx, against the state as the changes before[0,
 * nbefore) (validated already: releases and claims) leave it. */
int gs_pods_validate_claim(struct gpusched_cluster *c, gs_op *op, const gs_op *before, uint32_t nbefore);
int gs_pods_prepare(struct gpusched_cluster *c, gs_op *op);
/* The arrays pods need (racks' summaries; with `fractions`, the milli per
 * GPU and the shared masks), allocated on first use. GPUSCHED_ENOMEM. */
int gs_pods_ensure(struct gpusched_cluster *c, bool fractions);
void gs_pods_apply_claim(struct gpusched_cluster *c, gs_op *op);
void gs_pods_release(struct gpusched_cluster *c, gs_hold *h);
/* Lends (or takes back) what podx job h holds beyond its whole GPUs: its
 * resources and its fractions (a GPU whose fractions are all lent counts
 * as free); the GPU holders are left alone. Cannot fail. */
void gs_pods_lend(struct gpusched_cluster *c, const gs_hold *h, bool lend);
/* Whether h's lending can be taken back now: nothing took the resources
 * or the GPU room it gave since. */
bool gs_pods_can_unlend(const struct gpusched_cluster *c, const gs_hold *h);
/* Takes (or gives back) what n pairs of pods `x` hold beyond their whole
 * GPUs (resources, fractions), as a transaction's hold; cannot fail. */
void gs_pods_take(struct gpusched_cluster *c, const gs_podx *x, uint32_t n, const uint32_t *nodes,
                  const uint64_t *masks, bool take);
/* Whether n pairs of pods `x` fit as the cluster is now: 0 or
 * GPUSCHED_EBUSY / GPUSCHED_EINVAL with a message. */
int gs_pods_check_pairs(struct gpusched_cluster *c, const gs_podx *x, uint32_t n, const uint32_t *nodes,
                        const uint64_t *masks);
int gs_pods_check(struct gpusched_cluster *c);
/* A podx on the wire (snapshot and journal version 3): milli, GPUs per
 * pod, resource count and amounts, pods per pair, all u32. The reader
 * bounds every length by the input before allocating into *buf (reused);
 * GPUSCHED_ECORRUPT or GPUSCHED_ENOMEM. */
struct gs_wr;
struct gs_rd;
size_t gs_podx_wire_len(const gs_podx *x, uint32_t npairs);
void gs_podx_write(struct gs_wr *w, const gs_podx *x, uint32_t npairs);
int gs_podx_read(struct gs_rd *r, uint32_t npairs, uint32_t nres_max, const gs_alloc *a, gs_podx **buf);

/* Applies a validated claim with its prepared pair block (ops.c): consumes
 * the job's reservation, inserts the job, claims its GPUs. */
void gs_cluster_commit_apply(struct gpusched_cluster *c, const gpusched_job *job, uint32_t n,
                             const uint32_t *nodes, const uint64_t *masks, void *block, gs_hold *own);

void gs_cluster_job_unlend(struct gpusched_cluster *c, gs_hold *h);

/* The preemption index (pindex.c): the lowest-level domains of `nodes`
 * hold changed jobs; the index's memory. */
void gs_pindex_mark(struct gpusched_cluster *c, uint32_t n, const uint32_t *nodes);
void gs_pindex_free(struct gpusched_cluster *c);
/* Its memory, 0 until built. */
size_t gs_pindex_bytes(const struct gpusched_cluster *c);
/* The invariant checker's part: the index agrees with the jobs. */
int gs_pindex_check(struct gpusched_cluster *c);

/* ---- helpers shared by the module's files -------------------------------- */

/* Frees a cluster whatever its reference count (its creators' failure paths). */
void gs_cluster_destroy(gpusched_cluster *c);
/* Creates an empty cluster on `topo` (takes a reference on success). */
int gs_cluster_create(gpusched_topo *topo, const gs_alloc *a, gpusched_cluster **out);
/* ERANGE with a message unless `node` is a node of the topology. */
int gs_cluster_node_arg(gpusched_cluster *c, uint32_t node);
/* Checks (node, mask) pairs: ascending, in range, nodes up, GPUs free or in
 * `own` (a reservation whose GPUs count as free; may be NULL); with `ovl`,
 * as earlier changes of the transaction left them (GPUs given up count as
 * free, GPUs taken do not). */
int gs_cluster_check_pairs(gpusched_cluster *c, uint32_t n, const uint32_t *nodes, const uint64_t *masks,
                           const gs_hold *own, const gs_ovl *ovl);
/* Copies in and checks a caller's job descriptor. */
int gs_cluster_job_copy_in(gpusched_cluster *c, gpusched_job *dst, const gpusched_job *src);
/* A block for n > GS_HOLD_INLINE pairs (NULL for fewer, or on failure). */
void *gs_pairs_block(const gs_alloc *a, uint32_t n);
void gs_hold_set_pairs(gs_hold *h, uint32_t n, const uint32_t *nodes, const uint64_t *masks, void *block);
/* The same without counting the GPUs (the caller sets ngpus). */
void gs_hold_store_pairs(gs_hold *h, uint32_t n, const uint32_t *nodes, const uint64_t *masks, void *block);
/* Sets the GPUs of `mask` on `node` to: free where `to_free` has a bit,
 * reserved where `to_resv` has one, else allocated; holder entries to
 * `holder`; updates the aggregates. O(levels + popcount(mask)). */
void gs_cluster_node_move(gpusched_cluster *c, uint32_t node, uint64_t mask, uint64_t to_free,
                          uint64_t to_resv, uint32_t holder);
/* Release a job / drop a reservation (its GPUs become free). */
void gs_cluster_job_drop(gpusched_cluster *c, gs_hold *h);
void gs_cluster_resv_drop(gpusched_cluster *c, gs_hold *r);
/* Iteration: the id of live record `index` of `t`. */
int gs_cluster_id_at(gpusched_cluster *c, const gs_holdtab *t, uint32_t index, uint64_t *job_id,
                     const char *what);
int gs_cluster_pairs_out(gpusched_cluster *c, const gs_hold *h, const uint32_t **nodes,
                         const uint64_t **masks, uint32_t *n, uint32_t *gpus);


void gs_cluster_resv_unlend(struct gpusched_cluster *c, gs_hold *r);

/* Reservations (resv.c): pairs after merging n pairs into `r`; adding
 * pairs to the reservation of `id` (created if none; `merged` pairs after,
 * `block` prepared for them); a job's GPUs becoming the reservation of
 * `resv_id` (the job goes). */
uint32_t gs_resv_merged_count(const gs_hold *r, uint32_t n, const uint32_t *nodes);
void gs_resv_add(struct gpusched_cluster *c, uint64_t id, uint32_t n, const uint32_t *nodes,
                 const uint64_t *masks, uint32_t merged, void *block);
void gs_resv_take_job(struct gpusched_cluster *c, gs_hold *h, uint64_t resv_id, uint32_t merged, void *block);

/* The overlay's masks of `node`: given up and taken by earlier changes. */
void gs_ovl_node(const gs_ovl *o, uint32_t node, uint64_t *given, uint64_t *taken);

/* ---- staged changes (ops.c) and the journal (journal.c) ------------------ */

/* A new staged change of `kind`, zeroed; NULL (c->err set) on ENOMEM. */
gs_op *gs_txn_stage(struct gpusched_cluster *c, uint32_t kind);
/* Checks changes against the state, in order, each seeing the earlier
 * ones. Sets c->err. */
int gs_ops_validate(struct gpusched_cluster *c, gs_op *ops, uint32_t n);
/* Every allocation the changes need (table room, pair blocks). */
int gs_ops_prepare(struct gpusched_cluster *c, gs_op *ops, uint32_t n);
/* Applies validated, prepared changes. Cannot fail. */
void gs_ops_apply(struct gpusched_cluster *c, gs_op *ops, uint32_t n);
/* Writes the record of validated changes to the journal (buffer or sink). */
int gs_journal_emit(struct gpusched_cluster *c, const gs_op *ops, uint32_t n);
void gs_journal_free(struct gpusched_cluster *c);
size_t gs_journal_bytes(const struct gpusched_cluster *c);
/* Stages one change and commits it: the cluster's own public calls. */
int gs_txn_commit_one(struct gpusched_cluster *c, gs_op *op);
/* Commits changes without temporaries: the journal's replay. */
int gs_txn_commit_ops(struct gpusched_cluster *c, gs_op *ops, uint32_t n);
void gs_txn_free(struct gpusched_cluster *c);
size_t gs_txn_bytes(const struct gpusched_cluster *c);

#endif
