/**
 * @file place.h
 * @brief Gang placement: requests with topology constraints, the search,
 *        results with explanations, batch placement.
 *
 * @defgroup place Gang placement
 * @brief Finds where an all-or-nothing gang of GPUs goes, or says why it
 *        cannot go anywhere.
 *
 * A request (#gpusched_place_request) asks for a number of GPUs, how they
 * split over nodes (any split, pods of g GPUs, whole nodes), an optional
 * `required` level (the whole gang in one domain of that level), up to two
 * nested slice constraints (slices of S GPUs, each inside one domain of a
 * level), a GPU class, required and forbidden labels and nodes to avoid.
 *
 * The search is complete: if a placement satisfying every hard constraint
 * exists, it is found. Among the placements it picks, in order
 * (doc/placement.md):
 * 1. the fewest domains used at each level, lexicographically from the top
 *    level down to nodes (down to the `preferred` level only, if one is given);
 * 2. the tightest fit: at each level from the top, the domains with the least
 *    free capacity that still give the optimal locality;
 * 3. the lowest index.
 *
 * Cost: a placement reads the aggregates of the domains it considers and
 * the nodes it returns. Finding the exact locality optimum is in general a
 * knapsack (pseudo-polynomial in the units held, and with several counted
 * levels a choice among subsets of domains); the search proves a greedy
 * answer or a placement built from each candidate's own bound optimal
 * against lower bounds wherever it can (an empty or evenly used cluster
 * always), and otherwise spends at most 2^24 knapsack steps on choosing
 * among candidates and as many on assigning the chosen one (tens of
 * milliseconds at 258k nodes; 8 per unit of the gang for the node count
 * once the locality down to the lowest domains is settled, and none when
 * settling it already ran out: the nodes are then the fewest of the
 * racks chosen), more only when an exact key needs its knapsacks whole
 * to be assigned. The search for that node count is bounded as a whole
 * too: 4,096 units of work plus one per 8 nodes of the answer settling
 * the domains gave (a unit: a histogram row, domain or node read, a
 * knapsack step, a subset tried). Past it that answer stands, on the
 * fewest nodes of its racks or fewer.
 * Past that bound the placement is still found whenever one exists, but
 * locality below the levels already decided is not proven optimal. The
 * cases that can reach it: locality counted over three or more levels,
 * or down to nodes with any split or pods, for a gang spanning several
 * domains of a fragmented cluster. A failure reads the aggregates of the
 * levels its constraints name (doc/placement.md, "Cost").
 *
 * Pods with resources: a request that sets `gpu_milli` (1 to 999),
 * per-pod `resources`, `gpu_classes` or `pods` places `pods` identical
 * pods (split #GPUSCHED_SPLIT_PODS), each asking for its resources (cpu,
 * memory, ... as the topology declares them) and either `pod_gpus` whole
 * GPUs (0: none) or a fraction of one GPU. A node holds as many pods as
 * every one of its free amounts allows; one gang never puts two of its
 * fractions on one GPU. With split #GPUSCHED_SPLIT_WHOLE_NODES each pod
 * has a node to itself: a node of `pod_gpus` GPUs (0: the largest node
 * size) where nothing runs (every GPU free, nothing held of any resource);
 * the pod holds all its GPUs and what it asks of the resources. The search is then: the required level's domain
 * that holds the gang with the least room to spare, inside it the fewest
 * domains of the preferred level, with slice constraints the domains of
 * each slice level that hold the most whole slices, and nodes by the request's
 * `policy` (#gpusched_place_policy). It is complete: if the pods fit
 * somewhere, they are placed. Two slice constraints nest: the one at the
 * deeper level divides the other, and the outer slices are made of whole
 * inner ones. Not with such requests yet: batches, preemption,
 * reservations.
 *
 * A placer (#gpusched_placer) is bound to one cluster; it keeps the scratch
 * memory of the search so that placements allocate nothing in steady state.
 * A result (#gpusched_place_result) is reusable from call to call.
 *
 * Lifetime and threads: a placer holds a reference on its cluster
 * (gpusched_cluster_ref()), so the two may be released in any order. A
 * placer, its cluster and a result are used by one thread at a time. Pointers a
 * result hands out stay valid until the result is reused or freed.
 * @{
 */
#ifndef GPUSCHED_PLACE_H
#define GPUSCHED_PLACE_H

#include <gpusched/cluster.h>
#include <gpusched/common.h>
#include <gpusched/topo.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A placement engine bound to one cluster. */
typedef struct gpusched_placer gpusched_placer;
/** The outcome of one placement: nodes, GPU masks, pods, domains, or why not. */
typedef struct gpusched_place_result gpusched_place_result;

/** How a gang's GPUs split over nodes. Explicitly numbered, never renumbered. */
typedef enum gpusched_place_split {
    /** Any number of GPUs on each node used. */
    GPUSCHED_SPLIT_ANY = 0,
    /** Pods of `pod_gpus` GPUs each; a pod never straddles nodes, several
     *  pods may share a node. The result maps each pod to its node. */
    GPUSCHED_SPLIT_PODS = 1,
    /** Whole nodes only: every node used is fully free and taken whole
     *  (exclusive). Only nodes with `pod_gpus` GPUs are used (0: the
     *  topology's largest node GPU count). */
    GPUSCHED_SPLIT_WHOLE_NODES = 2,
} gpusched_place_split;

/** Request flag: commit the placement (it becomes a job in the cluster).
 *  Without it the call only plans (what-if) and changes nothing. */
#define GPUSCHED_PLACE_FLAG_COMMIT (1u << 0)

/** Number of slice constraints a request can carry. */
#define GPUSCHED_MAX_SLICES 2

/**
 * A gang placement request. Extensible: fill with
 * #GPUSCHED_PLACE_REQUEST_INIT, then set the fields. Fields are only ever
 * appended. Level fields take a topology level (0 is the top level) or
 * #GPUSCHED_NONE, which the initializer sets.
 */
typedef struct gpusched_place_request {
    uint32_t size;              /**< sizeof(gpusched_place_request), set by the initializer. */
    uint32_t flags;             /**< GPUSCHED_PLACE_FLAG_* bits; unknown bits are rejected. */
    const gpusched_job *job;    /**< The job (#GPUSCHED_JOB_INIT, then fields): its id is the
                                     job's id in the cluster when committed and names the
                                     reservation whose GPUs it may use; its flags, priority,
                                     tenant, start time and cost hint become the job's.
                                     Read during the call only. NULL: job id 0, every field 0.
                                     A pointer, not a member, so that both structs can grow. */
    uint32_t gpus;              /**< Total GPUs of the gang, at least 1. */
    uint32_t split;             /**< A #gpusched_place_split value. */
    uint32_t pod_gpus;          /**< GPUs per pod (#GPUSCHED_SPLIT_PODS) or per node
                                     (#GPUSCHED_SPLIT_WHOLE_NODES, 0: largest node). */
    uint32_t required_level;    /**< The whole gang inside one domain of this level. */
    uint32_t preferred_level;   /**< Locality is optimized down to this level only;
                                     #GPUSCHED_NONE: down to nodes. */
    uint32_t slice_gpus[GPUSCHED_MAX_SLICES];  /**< Slice sizes; 0: unused. */
    uint32_t slice_level[GPUSCHED_MAX_SLICES]; /**< Each slice of slice_gpus[i] GPUs lies
                                     inside one domain of slice_level[i]. Two slices must
                                     nest: the one at the higher level is a multiple of the
                                     other. */
    uint32_t gpu_class;         /**< GPU class index; #GPUSCHED_NONE: any class. */
    uint64_t labels_required;   /**< Label bits every node used must have. */
    uint64_t labels_forbidden;  /**< Label bits no node used may have. */
    const uint32_t *avoid_nodes;/**< Nodes not to use (any order, duplicates allowed). */
    uint32_t avoid_count;       /**< Entries in `avoid_nodes`. */
    uint32_t preempt_policy;    /**< Preemption only: a #gpusched_preempt_policy value
                                     (0: #GPUSCHED_PREEMPT_PRIORITY_FIRST). Placement
                                     ignores it. Added in 0.2.1. */
    int64_t now;                /**< Preemption and defragmentation: the caller's clock
                                     now, compared with each job's `protected_until`.
                                     Added in 0.2.1. */
    /* Pods with resources and GPU fractions (added in 0.2.3): see
     * "Pods with resources" in the group's description. */
    uint32_t pods;              /**< Pods of the gang; 0: `gpus` / `pod_gpus` (or `gpus`
                                     for a fraction). Needed for pods without GPUs. */
    uint32_t gpu_milli;         /**< 1 to 999: each pod holds this much of one GPU
                                     (milli-GPU, shared with other pods); 0 or 1000:
                                     whole GPUs. */
    const uint64_t *resources;  /**< Per pod: `resources[i]` of topology resource i
                                     (gpusched_topo_resource_find()), for i <
                                     `resource_count`; NULL when the count is 0. */
    uint32_t resource_count;    /**< Entries in `resources`, at most the topology's
                                     resource count. */
    uint32_t gpu_class_count;   /**< Entries in `gpu_classes`. */
    const uint32_t *gpu_classes;/**< GPU classes the pods may use, any of them (OpenB's
                                     "A|B|C"); with `gpu_class` also set, that class is
                                     one more. NULL when the count is 0. */
    uint32_t policy;            /**< How pods choose nodes: a #gpusched_place_policy
                                     (0: #GPUSCHED_POLICY_DEFAULT). */
} gpusched_place_request;

/** Initializer for #gpusched_place_request: sets size, every level and the
 *  class to #GPUSCHED_NONE, zeroes the rest. */
#define GPUSCHED_PLACE_REQUEST_INIT                                                     \
    { sizeof(gpusched_place_request), 0, NULL, 0, 0, 0, GPUSCHED_NONE, GPUSCHED_NONE, \
      {0, 0}, {GPUSCHED_NONE, GPUSCHED_NONE}, GPUSCHED_NONE, 0, 0, NULL, 0, 0, 0,     \
      0, 0, NULL, 0, 0, NULL, 0 }

/** How pods with resources or fractions choose their nodes and GPUs
 *  (doc/resources.md). Explicitly numbered, never renumbered. */
typedef enum gpusched_place_policy {
    /** The library's best: #GPUSCHED_POLICY_FRAG today. */
    GPUSCHED_POLICY_DEFAULT = 0,
    /** The first node (lowest index) that holds the pods. */
    GPUSCHED_POLICY_FIRST_FIT = 1,
    /** The node left with the least free cpu, memory and GPU (shares of
     *  its capacity, summed). */
    GPUSCHED_POLICY_BEST_FIT = 2,
    /** Fragmentation-aware: the node whose expected unusable GPU capacity,
     *  over the workload's pod shapes (gpusched_placer_workload_set(), or
     *  the shapes the placer has seen), grows least; near-ties go to the
     *  fullest node. */
    GPUSCHED_POLICY_FRAG = 3,
} gpusched_place_policy;

/** Why a placement did not fit. Explicitly numbered, never renumbered. */
typedef enum gpusched_place_reason {
    GPUSCHED_REASON_OK = 0,        /**< It fits. */
    GPUSCHED_REASON_NO_GPUS = 1,   /**< Fewer usable free GPUs in the cluster than asked. */
    GPUSCHED_REASON_ELIGIBLE = 2,  /**< Class, labels or avoided nodes leave too few GPUs. */
    GPUSCHED_REASON_SPLIT = 3,     /**< Nodes cannot hold enough pods or whole nodes. */
    GPUSCHED_REASON_SLICES = 4,    /**< Too few domains can hold the slices. */
    GPUSCHED_REASON_REQUIRED = 5,  /**< No single domain of the required level holds the gang. */
    GPUSCHED_REASON_NOT_RUN = 6,   /**< The result holds no placement yet. */
} gpusched_place_reason;

/* ---- placer ------------------------------------------------------------ */

/**
 * Creates a placer for a cluster.
 * @param cluster The cluster; it must outlive the placer.
 * @param alloc Allocator for the placer's memory; NULL: libc.
 * @param[out] out The placer.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `cluster` or `out` is NULL, or `alloc` is invalid,
 *         or GPUSCHED_SIMD names no path (doc/simd.md).
 * @retval GPUSCHED_ENOTSUP GPUSCHED_SIMD forces a path this CPU cannot run
 *         or this build lacks.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_placer_new(gpusched_cluster *cluster, const gpusched_allocator *alloc,
                                     gpusched_placer **out);

/** Frees a placer; NULL is accepted. The cluster is not affected. */
GPUSCHED_API void gpusched_placer_free(gpusched_placer *p);

/**
 * The message of the placer's last error ("" if the last call succeeded or
 * only did not fit: a "does not fit" is explained by the result).
 * @param p The placer (NULL gives a fixed message).
 * @return A string owned by the placer, valid until its next call.
 */
GPUSCHED_API const char *gpusched_placer_errmsg(const gpusched_placer *p);

/**
 * Places one gang. With #GPUSCHED_PLACE_FLAG_COMMIT the placement becomes job
 * `job->id` of the cluster (consuming the job's reservation, if any);
 * without it nothing changes.
 * @param p The placer.
 * @param req The request (#GPUSCHED_PLACE_REQUEST_INIT, then fields); copied.
 * @param res Receives the placement or the reason it does not fit.
 * @retval 0 Placed (and committed if asked).
 * @retval GPUSCHED_ENOSPC Does not fit: `res` says why; nothing changed.
 * @retval GPUSCHED_EINVAL NULL argument or an invalid field (the message names it).
 * @retval GPUSCHED_E2BIG Unknown non-zero bytes past the known request.
 * @retval GPUSCHED_ERANGE A level, class or avoided node is out of range.
 * @retval GPUSCHED_EEXIST Commit asked and a running job has this id.
 * @retval GPUSCHED_ENOMEM Out of memory; nothing changed.
 */
GPUSCHED_API int gpusched_placer_place(gpusched_placer *p, const gpusched_place_request *req,
                                       gpusched_place_result *res);

/**
 * Places a sequence of gangs in order, each seeing the ones before it:
 * the GPUs of every request that fits, committed or plan-only, are taken
 * for the requests after it, and for requests with pods their resources
 * and GPU fractions too (a plan-only request's are given back when the
 * call returns, so a batch of plan-only requests is a what-if of the whole
 * sequence). A request that does not fit is reported in its result and the
 * batch goes on. Every request is validated before anything is placed, and
 * the committed requests are committed together at the end: on any error
 * nothing changed.
 * @param p The placer.
 * @param n Number of requests.
 * @param reqs `n` requests.
 * @param results `n` distinct results.
 * @param[out] placed Number of requests that fit; may be NULL.
 * @retval 0 Every request was processed (each result says whether it fit).
 * @retval GPUSCHED_EINVAL / GPUSCHED_E2BIG / GPUSCHED_ERANGE / GPUSCHED_EEXIST A request
 *         is invalid (the message names which); nothing changed.
 * @retval GPUSCHED_ENOMEM Out of memory; nothing changed.
 */
GPUSCHED_API int gpusched_placer_place_batch(gpusched_placer *p, uint32_t n,
                                             const gpusched_place_request *const *reqs,
                                             gpusched_place_result *const *results, uint32_t *placed);

/**
 * Sets the workload #GPUSCHED_POLICY_FRAG expects: the shapes of the pods
 * that will come and their weights (for example counts in a trace). Each
 * shape is a request (its pod fields: `pod_gpus`, `gpu_milli`, `resources`,
 * classes); a whole-GPU request counts as pods of `pod_gpus` GPUs. Without
 * a workload (n = 0, the default) the placer learns it: every request it
 * places with that policy adds its shape, weighted by count.
 * @param p The placer.
 * @param n Number of shapes (at most 1024); 0 returns to learning.
 * @param shapes `n` requests.
 * @param weights `n` finite weights >= 0.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL A NULL array, shape or invalid shape (the message
 *         names it), or a bad weight; the workload is unchanged.
 * @retval GPUSCHED_ELIMIT More than 1024 shapes.
 * @retval GPUSCHED_ENOMEM Out of memory; the workload is unchanged.
 * Added in 0.2.3.
 */
GPUSCHED_API int gpusched_placer_workload_set(gpusched_placer *p, uint32_t n,
                                              const gpusched_place_request *const *shapes, const double *weights);

/* ---- results ----------------------------------------------------------- */

/**
 * Creates an empty result (reason #GPUSCHED_REASON_NOT_RUN).
 * @param alloc Allocator; NULL: libc.
 * @param[out] out The result.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `out` is NULL or `alloc` is invalid.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_place_result_new(const gpusched_allocator *alloc, gpusched_place_result **out);

/** Frees a result; NULL is accepted. */
GPUSCHED_API void gpusched_place_result_free(gpusched_place_result *res);

/**
 * Why the gang did not fit, or #GPUSCHED_REASON_OK.
 * @param res The result.
 * @return A #gpusched_place_reason value (#GPUSCHED_REASON_NOT_RUN for NULL).
 */
GPUSCHED_API uint32_t gpusched_place_result_reason(const gpusched_place_result *res);

/**
 * A readable explanation: where it went, or which constraint failed and by
 * how much (for example "required rack: the best rack holds 3 of 4 pods").
 * @param res The result.
 * @return A string owned by the result ("" for NULL).
 */
GPUSCHED_API const char *gpusched_place_result_message(const gpusched_place_result *res);

/**
 * Whether the placement was committed (it is now a running job).
 * @param res The result.
 * @return 1 if committed, 0 otherwise.
 */
GPUSCHED_API int gpusched_place_result_committed(const gpusched_place_result *res);

/**
 * The chosen nodes and their GPU masks, zero copy.
 * @param res The result.
 * @param[out] nodes Node indices, ascending.
 * @param[out] masks GPU masks, one per node (bit i: GPU i of the node).
 * @param[out] n Number of nodes (0 when it did not fit).
 * @retval 0 Success. @retval GPUSCHED_EINVAL NULL argument.
 */
GPUSCHED_API int gpusched_place_result_nodes(const gpusched_place_result *res, const uint32_t **nodes,
                                             const uint64_t **masks, uint32_t *n);

/**
 * The node of every pod (#GPUSCHED_SPLIT_PODS; otherwise no pods), zero copy.
 * Pods are numbered in node order.
 * @param res The result.
 * @param[out] pod_nodes Node index of pod i.
 * @param[out] n Number of pods.
 * @retval 0 Success. @retval GPUSCHED_EINVAL NULL argument.
 */
GPUSCHED_API int gpusched_place_result_pods(const gpusched_place_result *res, const uint32_t **pod_nodes,
                                            uint32_t *n);

/**
 * The domains used at one level, ascending, zero copy.
 * @param res The result.
 * @param level A topology level; gpusched_topo_level_count() gives the nodes.
 * @param[out] domains Domain indices.
 * @param[out] n Number of domains.
 * @retval 0 Success. @retval GPUSCHED_EINVAL NULL argument.
 * @retval GPUSCHED_ERANGE `level` out of range.
 */
GPUSCHED_API int gpusched_place_result_domains(const gpusched_place_result *res, uint32_t level,
                                               const uint32_t **domains, uint32_t *n);

/**
 * The locality vector: the number of domains used at each level, top
 * first, then the number of nodes (gpusched_topo_level_count() + 1 entries).
 * @param res The result.
 * @param[out] counts The counts.
 * @param[out] n Number of entries (0 when it did not fit).
 * @retval 0 Success. @retval GPUSCHED_EINVAL NULL argument.
 */
GPUSCHED_API int gpusched_place_result_locality(const gpusched_place_result *res, const uint32_t **counts,
                                                uint32_t *n);

#ifdef __cplusplus
}
#endif

/** @} */
#endif
