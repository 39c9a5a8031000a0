/**
 * @file preempt.h
 * @brief Preemption planning: which lower-priority jobs to evict so that a
 *        gang fits, and where the gang then goes.
 *
 * @defgroup preempt Preemption planning
 * @brief Victims plus target placement, planned on the aggregates and
 *        checked by the placement engine itself.
 *
 * A preemption is asked with an ordinary placement request
 * (#gpusched_place_request): the gang, its constraints, its `priority`, the
 * request's `preempt_policy` and `now`. The *eligible victims* are the
 * running jobs flagged #GPUSCHED_JOB_FLAG_PREEMPTIBLE whose priority is
 * strictly lower than the request's and that are not protected (`now` is
 * not before their `protected_until`); never the request's own job.
 * Evicting a victim frees all of its GPUs.
 *
 * The planner answers with a set of victims and the placement the gang gets
 * once they are gone (exactly what gpusched_placer_place() returns on the
 * cluster without them). Plans are ranked by the request's policy
 * (#gpusched_preempt_policy): by default the highest priority evicted as
 * low as possible, then the least total `cost_hint`, then the fewest GPUs
 * evicted, then the fewest victims. What it guarantees (doc/preempt.md):
 * - **Complete.** If evicting every eligible victim would let the gang fit,
 *   a plan is found; otherwise the call says so (#GPUSCHED_ENOSPC) and the
 *   result explains why the gang does not fit even then.
 * - **Priority first** (the default policy): no plan evicts a job of
 *   priority p when the eligible jobs of priorities below p alone can make
 *   room. This holds always, not only in the exact mode.
 * - **No eviction without need.** If the gang fits as the cluster is, the
 *   plan has no victim. Every victim of a plan is needed: without any one
 *   of them the gang does not fit (checked by the engine for plans of up to
 *   #GPUSCHED_MAX_PRUNE victims).
 * - **Least cost when the choice is small (the exact mode).** When every
 *   domain of the required level (the whole cluster for a gang without
 *   one) that can hold the gang has at most #GPUSCHED_PREEMPT_EXACT_MAX
 *   candidate victims, the plan is optimal for the policy's order (within
 *   a budget of 4,096 what-if placements per plan): a branch
 *   and bound over victim subsets, each checked by the placement engine,
 *   bounded below by the cheapest GPUs by cost per GPU (a fractional
 *   knapsack). gpusched_preempt_plan_optimality() says whether a plan is
 *   proven optimal.
 * - **A stated bound beyond it.** Otherwise the plan comes from a
 *   heuristic (per domain, victims rack by rack and by cost, the cheapest
 *   domain winning, then victims swapped for cheaper ones while the gang
 *   still fits), and gpusched_preempt_plan_optimality() gives a lower bound
 *   of the least cost any plan of the same highest priority can have, so
 *   the caller knows how far from optimal it can be. Choosing victims of
 *   least total cost is NP-hard in general (it contains knapsack).
 * - **Deterministic.** The same cluster and request give the same plan.
 *
 * With #GPUSCHED_PLACE_FLAG_COMMIT in the request's flags the plan is carried out
 * atomically: the victims are released and the gang is committed as job
 * `job_id`; on any error nothing changes.
 *
 * Moving a running job (gpusched_placer_move()) plans where it would go
 * now with its shape kept (the same split, locality and GPU class), its own
 * GPUs counting as free: the repair of a job on a failed or drained node,
 * and the step a defragmentation takes.
 *
 * Lifetime and threads: as for placement (place.h). A plan is reusable from
 * call to call; pointers it hands out stay valid until it is reused or freed.
 * @{
 */
#ifndef GPUSCHED_PREEMPT_H
#define GPUSCHED_PREEMPT_H

#include <gpusched/cluster.h>
#include <gpusched/common.h>
#include <gpusched/place.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The victims of one preemption and their totals. */
typedef struct gpusched_preempt_plan gpusched_preempt_plan;

/** Plans of up to this many victims are pruned to the victims needed. */
#define GPUSCHED_MAX_PRUNE 64u

/** Domains with at most this many candidate victims are searched exactly. */
#define GPUSCHED_PREEMPT_EXACT_MAX 24u

/** How plans are ranked (the request's `preempt_policy`). Explicitly
 *  numbered, never renumbered. */
typedef enum gpusched_preempt_policy {
    /** The default: the highest priority among the victims as low as
     *  possible (never evict priority p when jobs below p can make room, as
     *  Kubernetes, Kueue, Volcano and Slurm do), then the least total
     *  `cost_hint`, the fewest GPUs evicted, the fewest victims. */
    GPUSCHED_PREEMPT_PRIORITY_FIRST = 0,
    /** The least total `cost_hint` whatever the priorities (priority only
     *  decides eligibility), then the fewest GPUs, the fewest victims:
     *  for callers whose cost hints already weigh priority in. */
    GPUSCHED_PREEMPT_COST_FIRST = 1,
} gpusched_preempt_policy;

/**
 * Creates an empty plan (no victims).
 *
 * With `GPUSCHED_PREEMPT_WHOLE=0` in the environment at creation, plans
 * for gangs whose slices each fill a domain take the general search
 * instead of being decided by count (doc/preempt.md, step 1c): for tests
 * that compare the two.
 * @param alloc Allocator; NULL: libc.
 * @param[out] out The plan.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `out` is NULL or `alloc` is invalid.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_preempt_plan_new(const gpusched_allocator *alloc, gpusched_preempt_plan **out);

/** Frees a plan; NULL is accepted. */
GPUSCHED_API void gpusched_preempt_plan_free(gpusched_preempt_plan *plan);

/**
 * Plans the preemption that lets a gang fit, and with
 * #GPUSCHED_PLACE_FLAG_COMMIT carries it out. A gang of pods with
 * resources or GPU fractions may evict jobs holding resources (their cpu,
 * memory and fractions come free with them); its plan has the least
 * highest victim priority and no victim it can spare, but is not proven
 * cheapest (gpusched_preempt_plan_optimality() says exact 0). A whole-GPU
 * gang may evict jobs of pods holding whole GPUs, never a job of GPU
 * fractions or of pods without GPUs.
 * @param p The placer.
 * @param req The gang (#GPUSCHED_PLACE_REQUEST_INIT, then fields); its
 *        `priority` decides which jobs are eligible victims.
 * @param res Receives the placement the gang gets once the victims are
 *        gone, or why it does not fit even with every eligible victim gone.
 * @param plan Receives the victims (none on failure).
 * @retval 0 A plan (possibly without victims); carried out if asked.
 * @retval GPUSCHED_ENOSPC No set of eligible victims makes the gang fit:
 *         `res` explains; nothing changed.
 * @retval GPUSCHED_EINVAL NULL argument or an invalid request field.
 * @retval GPUSCHED_E2BIG Unknown non-zero bytes past the known request.
 * @retval GPUSCHED_ERANGE A level, class or avoided node is out of range.
 * @retval GPUSCHED_EEXIST Commit asked and a running job has this id.
 * @retval GPUSCHED_ENOMEM Out of memory; nothing changed.
 */
GPUSCHED_API int gpusched_placer_preempt(gpusched_placer *p, const gpusched_place_request *req,
                                         gpusched_place_result *res, gpusched_preempt_plan *plan);

/**
 * The victims of a plan: job ids, ascending.
 * @param plan The plan.
 * @param[out] ids The ids; valid until the plan is reused or freed (NULL when there is none).
 * @param[out] n The number of victims.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL A NULL argument.
 */
GPUSCHED_API int gpusched_preempt_plan_victims(const gpusched_preempt_plan *plan, const uint64_t **ids,
                                               uint32_t *n);

/**
 * The totals of a plan.
 * @param plan The plan.
 * @param[out] cost Sum of the victims' `cost_hint`; may be NULL.
 * @param[out] gpus GPUs the victims hold; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `plan` is NULL.
 */
GPUSCHED_API int gpusched_preempt_plan_totals(const gpusched_preempt_plan *plan, uint64_t *cost, uint64_t *gpus);

/**
 * How good a plan is known to be.
 * @param plan The plan (after gpusched_placer_defrag(): 0 and 0).
 * @param[out] exact 1 when the plan is proven optimal for the request's
 *        policy (the exact mode covered every domain that could hold the
 *        gang, or the plan has no victim), 0 when it comes from the
 *        heuristic; may be NULL.
 * @param[out] cost_lower_bound No plan with the same highest victim
 *        priority (any plan, under #GPUSCHED_PREEMPT_COST_FIRST) costs less
 *        than this; equal to the plan's cost when exact; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `plan` is NULL.
 */
GPUSCHED_API int gpusched_preempt_plan_optimality(const gpusched_preempt_plan *plan, uint32_t *exact,
                                                  uint64_t *cost_lower_bound);

/**
 * What protection kept out of a plan: the jobs that would have been
 * eligible victims but for their `protected_until` (the request's `now` is
 * before it), so that a caller can tell a gang that waits because of
 * protection from one that waits for want of victims. None when the gang
 * fits without victims. Counted over the jobs the planner looked at: every
 * job, except for a gang required inside one lowest-level domain, whose
 * plan looks only at the domains that can beat it (doc/preempt.md, "the
 * preemption index").
 * @param plan The plan (of the last gpusched_placer_preempt() call, also
 *        when it returned #GPUSCHED_ENOSPC; nothing is counted when the
 *        gang fits without victims, nor after gpusched_placer_defrag()).
 * @param[out] jobs Protected jobs; may be NULL.
 * @param[out] gpus Their GPUs; may be NULL.
 * @param[out] until The earliest time one of them stops being protected
 *        (0 when there is none); may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `plan` is NULL.
 */
GPUSCHED_API int gpusched_preempt_plan_protected(const gpusched_preempt_plan *plan, uint32_t *jobs,
                                                 uint64_t *gpus, int64_t *until);

/**
 * Plans the moves that let a gang fit without evicting anyone, and with
 * #GPUSCHED_PLACE_FLAG_COMMIT carries them out: defragmentation.
 *
 * The jobs that may move are the running jobs flagged #GPUSCHED_JOB_FLAG_MOVABLE
 * whose priority is not above the request's and that are not protected
 * (never the request's own job). A move keeps the job's shape, as gpusched_placer_move() does. Movers are
 * chosen as a preemption chooses victims (the same domains, order and
 * pruning), then checked: with the gang's GPUs taken, every mover, largest
 * first, must find a place for its shape; of the domains whose movers all
 * find one, the cheapest (least total cost hint, then GPUs, then movers)
 * is the plan. The exact mode does not apply to moves. Unlike preemption this is
 * not complete: a gang that only a chain of moves would make room for may
 * get #GPUSCHED_ENOSPC.
 *
 * The plan lists the moves (gpusched_preempt_plan_move_count(),
 * gpusched_preempt_plan_move()) and no victims; its totals are the movers'
 * cost hints and GPUs. The commit is atomic: the movers keep their ids and
 * descriptors, only their GPUs change, and the gang becomes job `job_id`.
 * @param p The placer.
 * @param req The gang; its `priority` bounds the movers'.
 * @param res Receives the gang's placement once the moves are made, or why
 *        it does not fit as the cluster is.
 * @param plan Receives the moves (none on failure).
 * @retval 0 A plan (possibly without moves); carried out if asked.
 * @retval GPUSCHED_ENOSPC No plan found: `res` explains why the gang does
 *         not fit now; nothing changed.
 * @retval GPUSCHED_EINVAL / GPUSCHED_E2BIG / GPUSCHED_ERANGE / GPUSCHED_EEXIST As for
 *         gpusched_placer_preempt().
 * @retval GPUSCHED_ENOMEM Out of memory; nothing changed.
 */
GPUSCHED_API int gpusched_placer_defrag(gpusched_placer *p, const gpusched_place_request *req,
                                        gpusched_place_result *res, gpusched_preempt_plan *plan);

/**
 * The number of moves of a plan (0 for a preemption's).
 * @param plan The plan (NULL gives 0).
 * @return The moves.
 */
GPUSCHED_API uint32_t gpusched_preempt_plan_move_count(const gpusched_preempt_plan *plan);

/**
 * One move of a plan: the job and the GPUs it moves to.
 * @param plan The plan.
 * @param index 0 .. gpusched_preempt_plan_move_count() - 1.
 * @param[out] job_id The job that moves.
 * @param[out] nodes Its new nodes, ascending; valid until the plan is reused or freed.
 * @param[out] masks Its GPUs on each of them.
 * @param[out] n The number of nodes.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL A NULL argument.
 * @retval GPUSCHED_ERANGE `index` is out of range.
 */
GPUSCHED_API int gpusched_preempt_plan_move(const gpusched_preempt_plan *plan, uint32_t index, uint64_t *job_id,
                                            const uint32_t **nodes, const uint64_t **masks, uint32_t *n);

/**
 * Plans moving a running job to the best GPUs for its shape now, and with
 * #GPUSCHED_PLACE_FLAG_COMMIT moves it (atomically: the job keeps its id and
 * descriptor, only its GPUs change).
 *
 * The shape is derived from the job's current GPUs: whole nodes if it holds
 * whole nodes of one size, else pods of the greatest common divisor of its
 * GPUs per node (any split when that is 1); required level: the deepest
 * level with one domain holding all of it; when it spans several
 * lowest-level domains, slices of the greatest common divisor of its GPUs
 * per such domain, each inside one; its GPU class when it has one class.
 * A job of pods (resources, GPU fractions) moves as the same pods: their
 * count, GPUs or fraction and resources, in the deepest domain that holds
 * all of it, on its class when it has one (its slices and class list are
 * not known to the cluster and are not kept).
 * The job's GPUs count as free for the search on nodes that are up, so a
 * job on a node that is down, cordoned or draining moves off that node,
 * and a healthy job may stay where it is (the result then lists its own
 * GPUs).
 * @param p The placer.
 * @param job_id A running job.
 * @param flags 0 (plan only) or #GPUSCHED_PLACE_FLAG_COMMIT.
 * @param res Receives the new placement, or why the job fits nowhere.
 * @retval 0 A placement (committed if asked).
 * @retval GPUSCHED_ENOSPC No placement for the shape: `res` explains; nothing changed.
 * @retval GPUSCHED_EINVAL `p` or `res` is NULL, or unknown flags.
 * @retval GPUSCHED_ENOENT No running job has this id.
 * @retval GPUSCHED_ENOMEM Out of memory; nothing changed.
 */
GPUSCHED_API int gpusched_placer_move(gpusched_placer *p, uint64_t job_id, uint32_t flags,
                                      gpusched_place_result *res);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
