/**
 * @file cluster.h
 * @brief Cluster state: free GPUs, node health, per-domain aggregates, jobs,
 *        reservations, faults, fragmentation metrics, snapshots.
 *
 * @defgroup cluster Cluster state
 * @brief The mutable state of a cluster on top of an immutable topology.
 *
 * Every GPU is in exactly one of three states:
 * - **free**: neither allocated nor reserved;
 * - **reserved**: held by a reservation, capacity kept for a job that is not
 *   running yet (for example the GPUs that preemption frees for a
 *   preemptor); reserved GPUs are free only for the job that holds the
 *   reservation;
 * - **allocated**: held by a running job.
 *
 * Each node also has a health (#gpusched_node_health). Only nodes that are
 * #GPUSCHED_NODE_UP take new work. The per-domain aggregates therefore count
 * what is usable for new work: the free GPUs of up nodes. A node that is not
 * up counts as a node with 0 free GPUs, whatever its free mask says
 * (doc/cluster.md has the definitions).
 *
 * Allocations are given as two parallel arrays: node indices in strictly
 * ascending order (each node once) and, per node, a GPU bit mask (bit i: GPU
 * i of that node). Job ids are the caller's 64-bit ids; every value is
 * valid.
 *
 * Lifetime and threads: a #gpusched_cluster is reference counted
 * (gpusched_cluster_ref(), gpusched_cluster_unref()); it holds a reference
 * on its topology, and every placer holds one on its cluster, so each lives
 * as long as anything that uses it, whatever order they are released in. A
 * cluster, its placers and their results are used by one thread at a time
 * (the count is not atomic); pointers it hands out (allocation arrays) stay valid until the
 * next call that changes the cluster. Every mutating call is atomic: it
 * either succeeds fully or changes nothing. The library never reads a
 * clock: start times are the caller's.
 * @{
 */
#ifndef GPUSCHED_CLUSTER_H
#define GPUSCHED_CLUSTER_H

#include <gpusched/common.h>
#include <gpusched/topo.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The mutable state of a cluster. */
typedef struct gpusched_cluster gpusched_cluster;

/** Health of a node. Explicitly numbered, never renumbered. */
typedef enum gpusched_node_health {
    GPUSCHED_NODE_UP = 0,       /**< Healthy: takes new work. */
    GPUSCHED_NODE_CORDONED = 1, /**< Takes no new work; running jobs stay undisturbed. */
    GPUSCHED_NODE_DRAINING = 2, /**< Takes no new work; its jobs should move off. */
    GPUSCHED_NODE_DOWN = 3,     /**< Failed: its jobs have lost their GPUs there. */
} gpusched_node_health;

/** State of one GPU, as reported by gpusched_cluster_gpu_state(). */
typedef enum gpusched_gpu_state {
    GPUSCHED_GPU_FREE = 0,      /**< Neither allocated nor reserved. */
    GPUSCHED_GPU_RESERVED = 1,  /**< Held by a reservation. */
    GPUSCHED_GPU_ALLOCATED = 2, /**< Held by a running job. */
    GPUSCHED_GPU_SHARED = 3,    /**< Fractions of it held by one or more jobs
                                     (gpusched_cluster_gpu_milli_free() says how
                                     much is left); no single job is reported.
                                     Added in 0.2.3. */
} gpusched_gpu_state;

/** Job flag: the job may be preempted. */
#define GPUSCHED_JOB_FLAG_PREEMPTIBLE (1u << 0)
/** Job flag: the job may be moved to other GPUs (it can checkpoint and
 *  restart elsewhere); defragmentation moves only such jobs. */
#define GPUSCHED_JOB_FLAG_MOVABLE (1u << 1)
/** Every job flag this version knows. */
#define GPUSCHED_JOB_FLAG_ALL (GPUSCHED_JOB_FLAG_PREEMPTIBLE | GPUSCHED_JOB_FLAG_MOVABLE)

/**
 * A job's descriptor. Extensible: fill with #GPUSCHED_JOB_INIT, then set
 * the fields; fields are only ever appended and zero means the default.
 */
typedef struct gpusched_job {
    uint32_t size;        /**< sizeof(gpusched_job), set by #GPUSCHED_JOB_INIT. */
    uint32_t flags;       /**< GPUSCHED_JOB_* bits; unknown bits are rejected. */
    uint64_t id;          /**< The caller's job id, unique among running jobs. */
    int32_t priority;     /**< Higher runs first; preemption takes lower priorities. */
    uint32_t tenant;      /**< The caller's tenant id. */
    int64_t start_time;   /**< Start time on the caller's clock, in the caller's unit. */
    uint64_t cost_hint;   /**< Cost of preempting the job, in the caller's unit
                               (for example GPU-seconds lost since the last checkpoint). */
    int64_t protected_until; /**< Not a preemption victim while the request's `now` is
                               before this time (caller's clock; for example its start
                               plus a minimum runtime), so that a job that just started
                               is not evicted again at once. 0: never protected (for
                               any `now` >= 0). Added in 0.2.1; a caller built against
                               the shorter struct gets 0 here. */
} gpusched_job;

/** Initializer for #gpusched_job: sets size, zeroes the rest. */
#define GPUSCHED_JOB_INIT { sizeof(gpusched_job), 0, 0, 0, 0, 0, 0, 0 }

/* ---- lifetime ---------------------------------------------------------- */

/**
 * Creates an empty cluster on a topology: every GPU free, every node up, no
 * jobs, no reservations.
 * @param topo The topology; the cluster takes a reference (gpusched_topo_ref()).
 * @param alloc Allocator for everything the cluster allocates; NULL: libc.
 * @param[out] out The cluster.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `topo` or `out` is NULL, or `alloc` is invalid.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_cluster_new(gpusched_topo *topo, const gpusched_allocator *alloc,
                                      gpusched_cluster **out);

/**
 * Takes a reference on a cluster.
 * @param c The cluster; NULL is accepted.
 * @return `c`.
 */
GPUSCHED_API gpusched_cluster *gpusched_cluster_ref(gpusched_cluster *c);

/**
 * Drops a reference; the last one frees the cluster and drops its topology
 * reference. The creator (new, restore, replay) holds the first reference.
 * @param c The cluster; NULL is accepted (no-op).
 */
GPUSCHED_API void gpusched_cluster_unref(gpusched_cluster *c);

/**
 * The message of the cluster's last error ("" if the last call succeeded).
 * @param c The cluster (NULL gives a fixed message).
 * @return A string owned by the cluster, valid until its next call.
 */
GPUSCHED_API const char *gpusched_cluster_errmsg(const gpusched_cluster *c);

/**
 * The cluster's topology (borrowed: the cluster keeps its reference).
 * @param c The cluster.
 * @return The topology, or NULL if `c` is NULL.
 */
GPUSCHED_API gpusched_topo *gpusched_cluster_topo(const gpusched_cluster *c);

/**
 * Bytes of memory the cluster state holds, not counting its topology
 * (gpusched_topo_memory_bytes() gives that).
 * @param c The cluster.
 * @return Bytes, 0 if `c` is NULL.
 */
GPUSCHED_API size_t gpusched_cluster_memory_bytes(const gpusched_cluster *c);

/* ---- nodes and GPUs ---------------------------------------------------- */

/**
 * The state of one node. Every output may be NULL.
 * @param c The cluster.
 * @param node Node index.
 * @param[out] free_mask GPUs that are free.
 * @param[out] reserved_mask GPUs held by reservations.
 * @param[out] allocated_mask GPUs held by jobs.
 * @param[out] health A #gpusched_node_health value.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 * @retval GPUSCHED_ERANGE `node` is out of range.
 */
GPUSCHED_API int gpusched_cluster_node_state(gpusched_cluster *c, uint32_t node, uint64_t *free_mask,
                                             uint64_t *reserved_mask, uint64_t *allocated_mask,
                                             uint32_t *health);

/**
 * The state of nodes `first` .. `first + count - 1` in one call: what
 * gpusched_cluster_node_state() gives for each, into arrays of `count`
 * entries (one call for a whole cluster, from Python or another language
 * where a call per node costs more than the copy). Every output may be NULL.
 * @param c The cluster.
 * @param first The first node.
 * @param count The number of nodes (0 is valid and writes nothing).
 * @param[out] free_masks GPUs that are free, per node.
 * @param[out] reserved_masks GPUs held by reservations, per node.
 * @param[out] allocated_masks GPUs held by jobs, per node.
 * @param[out] health #gpusched_node_health values, per node.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 * @retval GPUSCHED_ERANGE The range goes past the last node; nothing is written.
 */
GPUSCHED_API int gpusched_cluster_nodes_state(gpusched_cluster *c, uint32_t first, uint32_t count,
                                              uint64_t *free_masks, uint64_t *reserved_masks,
                                              uint64_t *allocated_masks, uint32_t *health);

/**
 * Which job or reservation holds one GPU.
 * @param c The cluster.
 * @param node Node index.
 * @param gpu GPU index on the node.
 * @param[out] state A #gpusched_gpu_state value.
 * @param[out] job_id The job (allocated) or the reservation's job (reserved);
 *             0 when free. May be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `state` is NULL.
 * @retval GPUSCHED_ERANGE `node` or `gpu` is out of range.
 */
GPUSCHED_API int gpusched_cluster_gpu_state(gpusched_cluster *c, uint32_t node, uint32_t gpu,
                                            uint32_t *state, uint64_t *job_id);

/**
 * A node's free amount of a resource the topology declares
 * (gpusched_topo_resource_count()): its capacity less what the pods placed
 * there with that resource hold.
 * @param c The cluster.
 * @param node Node index.
 * @param resource Resource index.
 * @param[out] amount The free amount.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `amount` is NULL.
 * @retval GPUSCHED_ERANGE `node` or `resource` is out of range.
 * Added in 0.2.3.
 */
GPUSCHED_API int gpusched_cluster_node_resource_free(gpusched_cluster *c, uint32_t node, uint32_t resource,
                                                     uint32_t *amount);

/**
 * The free milli-GPU of one GPU: 1000 for a free GPU, 0 for a GPU held
 * whole or reserved, 1000 less the fractions held for a shared GPU.
 * @param c The cluster.
 * @param node Node index.
 * @param gpu GPU index on the node.
 * @param[out] milli Free milli-GPU, 0 to 1000.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `milli` is NULL.
 * @retval GPUSCHED_ERANGE `node` or `gpu` is out of range.
 * Added in 0.2.3.
 */
GPUSCHED_API int gpusched_cluster_gpu_milli_free(gpusched_cluster *c, uint32_t node, uint32_t gpu,
                                                 uint32_t *milli);

/**
 * The jobs that hold GPUs on a node, each once, in order of their lowest GPU
 * on the node.
 * @param c The cluster.
 * @param node Node index.
 * @param ids Receives up to `cap` job ids (may be NULL when `cap` is 0).
 * @param cap Capacity of `ids`.
 * @param[out] count Number of jobs on the node (even when it exceeds `cap`).
 * @retval 0 Success: all ids fit.
 * @retval GPUSCHED_EINVAL `c` or `count` is NULL, or `ids` is NULL while the node has jobs.
 * @retval GPUSCHED_ERANGE `node` out of range, or `cap` too small (`*count` says how many).
 */
GPUSCHED_API int gpusched_cluster_node_jobs(gpusched_cluster *c, uint32_t node, uint64_t *ids,
                                            uint32_t cap, uint32_t *count);

/**
 * Changes a node's health and reports the jobs hit: the jobs that hold GPUs
 * on the node (for #GPUSCHED_NODE_DOWN they have lost them; for
 * #GPUSCHED_NODE_DRAINING they should move). The jobs stay allocated: the
 * caller (or the preemption engine) decides what to do with them and
 * releases them. Reservations on the node stay too. Setting a node back to
 * #GPUSCHED_NODE_UP makes its free GPUs usable again. Setting the health a
 * node has changes nothing and writes no journal record (the jobs hit are
 * still reported).
 * @param c The cluster.
 * @param node Node index.
 * @param health A #gpusched_node_health value.
 * @param hit Receives up to `cap` job ids, as gpusched_cluster_node_jobs() orders them
 *        (may be NULL when `cap` is 0).
 * @param cap Capacity of `hit`.
 * @param[out] nhit Number of jobs hit; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL, `health` is not a health, or `hit` is NULL
 *         while jobs are hit.
 * @retval GPUSCHED_ERANGE `node` out of range, or `cap` too small: nothing changed,
 *         `*nhit` says how many ids are needed.
 */
GPUSCHED_API int gpusched_cluster_node_health_set(gpusched_cluster *c, uint32_t node, uint32_t health,
                                                  uint64_t *hit, uint32_t cap, uint32_t *nhit);

/* ---- aggregates -------------------------------------------------------- */

/**
 * Free GPUs usable for new work in a domain: free GPUs on up nodes.
 * O(1).
 * @param c The cluster.
 * @param level A topology level, or #GPUSCHED_NONE for the whole cluster.
 * @param domain Domain index at `level` (ignored for #GPUSCHED_NONE).
 * @param[out] gpus The count.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `gpus` is NULL.
 * @retval GPUSCHED_ERANGE Level or domain out of range.
 */
GPUSCHED_API int gpusched_cluster_domain_free_gpus(gpusched_cluster *c, uint32_t level, uint32_t domain,
                                                   uint64_t *gpus);

/**
 * Fully free nodes in a domain: up nodes with every GPU free (none
 * allocated, none reserved). O(1).
 * @param c The cluster.
 * @param level A topology level, or #GPUSCHED_NONE for the whole cluster.
 * @param domain Domain index at `level` (ignored for #GPUSCHED_NONE).
 * @param[out] nodes The count.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `nodes` is NULL.
 * @retval GPUSCHED_ERANGE Level or domain out of range.
 */
GPUSCHED_API int gpusched_cluster_domain_free_nodes(gpusched_cluster *c, uint32_t level, uint32_t domain,
                                                    uint32_t *nodes);

/**
 * Nodes in a domain that have at least `gpus` free GPUs usable for new work,
 * so that "can this domain hold k nodes with g free GPUs each" is
 * `count >= k`. O(max GPUs per node), never visits nodes.
 * @param c The cluster.
 * @param level A topology level, or #GPUSCHED_NONE for the whole cluster.
 * @param domain Domain index at `level` (ignored for #GPUSCHED_NONE).
 * @param gpus Free GPUs per node asked for, 0 to #GPUSCHED_MAX_NODE_GPUS
 *        (0 counts every node).
 * @param[out] nodes The count.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `nodes` is NULL.
 * @retval GPUSCHED_ERANGE Level, domain or `gpus` out of range.
 */
GPUSCHED_API int gpusched_cluster_domain_nodes_with_free(gpusched_cluster *c, uint32_t level,
                                                         uint32_t domain, uint32_t gpus,
                                                         uint32_t *nodes);

/**
 * The histogram of a domain's nodes by free GPUs usable for new work:
 * `hist[k]` is the number of nodes with exactly k such GPUs (non-up nodes
 * count in `hist[0]`). O(max GPUs per node).
 * @param c The cluster.
 * @param level A topology level, or #GPUSCHED_NONE for the whole cluster.
 * @param domain Domain index at `level` (ignored for #GPUSCHED_NONE).
 * @param hist Receives up to `cap` counts (may be NULL when `cap` is 0).
 * @param cap Capacity of `hist`.
 * @param[out] len Entries in the histogram: the topology's largest node GPU count plus one.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `len` is NULL.
 * @retval GPUSCHED_ERANGE Level or domain out of range, or `cap` below `*len`.
 */
GPUSCHED_API int gpusched_cluster_domain_histogram(gpusched_cluster *c, uint32_t level, uint32_t domain,
                                                   uint32_t *hist, uint32_t cap, uint32_t *len);

/**
 * Fragmentation by GPU fractions, O(1) (kept incrementally): the GPUs that
 * pods share (some milli-GPU held by fractions) and the milli-GPU left free
 * on them, which only fractions can use (whole-GPU gangs count a shared
 * GPU as taken). A cluster without fractions answers 0 and 0. Every output
 * may be NULL.
 * @param c The cluster.
 * @param[out] shared_gpus GPUs shared by fractions.
 * @param[out] free_milli Milli-GPU free on them.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 * Added in 0.2.3.
 */
GPUSCHED_API int gpusched_cluster_frag_shared(gpusched_cluster *c, uint64_t *shared_gpus, uint64_t *free_milli);

/**
 * Fragmentation metrics of one level, O(1) (kept incrementally). For the
 * level of nodes, pass `level` equal to gpusched_topo_level_count(): its
 * "domains" are the nodes. Definitions (doc/cluster.md):
 * - a domain is *fully free* when every one of its nodes is up with every
 *   GPU free;
 * - `stranded_gpus`: free GPUs usable for new work that lie in domains that
 *   are not fully free, i.e. GPUs that a gang asking for whole domains of
 *   this level cannot use;
 * - `gang_gpus`: the GPUs of all fully free domains, the largest gang made
 *   of whole domains of this level that could start now.
 * Every output may be NULL.
 * @param c The cluster.
 * @param level 0 to gpusched_topo_level_count() inclusive.
 * @param[out] free_domains Number of fully free domains.
 * @param[out] stranded_gpus Free GPUs outside fully free domains.
 * @param[out] gang_gpus GPUs in fully free domains.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 * @retval GPUSCHED_ERANGE `level` out of range.
 */
GPUSCHED_API int gpusched_cluster_frag(gpusched_cluster *c, uint32_t level, uint32_t *free_domains,
                                       uint64_t *stranded_gpus, uint64_t *gang_gpus);

/* ---- jobs -------------------------------------------------------------- */

/**
 * Allocates GPUs to a new job, all or nothing. Every GPU must be free, or
 * reserved by a reservation of the same job id; every node must be up. If
 * the job holds a reservation, the reservation is consumed: its GPUs that
 * the allocation uses become allocated, the others become free. This is
 * also how a placement is committed.
 * @param c The cluster.
 * @param job The descriptor (#GPUSCHED_JOB_INIT, then fields); copied.
 * @param n Number of (node, mask) pairs, at least 1.
 * @param nodes `n` node indices, strictly ascending.
 * @param masks `n` GPU masks, non-zero, within each node's GPUs.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument, bad flags, zero mask, nodes not ascending,
 *         or bits past a node's GPUs.
 * @retval GPUSCHED_E2BIG Unknown non-zero bytes past the known descriptor.
 * @retval GPUSCHED_ERANGE A node index is out of range.
 * @retval GPUSCHED_EEXIST A running job has this id.
 * @retval GPUSCHED_EBUSY A GPU is allocated, or reserved for another job.
 * @retval GPUSCHED_ESTATE A node is not up.
 * @retval GPUSCHED_ELIMIT Too many jobs (2^31 - 1).
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_cluster_allocate(gpusched_cluster *c, const gpusched_job *job, uint32_t n,
                                        const uint32_t *nodes, const uint64_t *masks);

/**
 * Releases a job: its GPUs become free (on nodes that are not up they are
 * free but not usable until the node is up again).
 * @param c The cluster.
 * @param job_id The job.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 * @retval GPUSCHED_ENOENT No running job has this id.
 */
GPUSCHED_API int gpusched_cluster_release(gpusched_cluster *c, uint64_t job_id);

/**
 * Updates a running job's descriptor fields (priority, tenant, flags, start
 * time, cost hint); the allocation is not changed.
 * @param c The cluster.
 * @param job The new descriptor; `job->id` names the job.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument or bad flags.
 * @retval GPUSCHED_E2BIG Unknown trailing bytes.
 * @retval GPUSCHED_ENOENT No running job has this id.
 */
GPUSCHED_API int gpusched_cluster_job_update(gpusched_cluster *c, const gpusched_job *job);

/**
 * Number of running jobs.
 * @param c The cluster.
 * @return The count, 0 if `c` is NULL.
 */
GPUSCHED_API uint32_t gpusched_cluster_job_count(const gpusched_cluster *c);

/**
 * Iterates jobs: the id of job number `index`, 0 to
 * gpusched_cluster_job_count() - 1. The order is deterministic but changes
 * when jobs are released.
 * @param c The cluster.
 * @param index Position.
 * @param[out] job_id The id.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `job_id` is NULL.
 * @retval GPUSCHED_ERANGE `index` is past the last job.
 */
GPUSCHED_API int gpusched_cluster_job_at(gpusched_cluster *c, uint32_t index, uint64_t *job_id);

/**
 * Looks a job up by id and copies its descriptor out.
 * @param c The cluster.
 * @param job_id The job.
 * @param[out] job Receives the descriptor; the caller sets `job->size`
 *        (#GPUSCHED_JOB_INIT) and the library writes no more than that. May be NULL
 *        to test existence.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL or `job->size` is below the first version.
 * @retval GPUSCHED_ENOENT No running job has this id.
 */
GPUSCHED_API int gpusched_cluster_job_find(gpusched_cluster *c, uint64_t job_id, gpusched_job *job);

/**
 * A job's allocation, zero copy: pointers into the cluster, valid until the
 * next call that changes it.
 * @param c The cluster.
 * @param job_id The job.
 * @param[out] nodes Node indices, ascending.
 * @param[out] masks GPU masks, one per node.
 * @param[out] n Number of pairs.
 * @param[out] gpus Total GPUs; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument.
 * @retval GPUSCHED_ENOENT No running job has this id.
 */
GPUSCHED_API int gpusched_cluster_job_allocation(gpusched_cluster *c, uint64_t job_id, const uint32_t **nodes,
                                            const uint64_t **masks, uint32_t *n, uint32_t *gpus);

/* ---- reservations ------------------------------------------------------ */

/**
 * Reserves GPUs for a job that is not running yet, all or nothing. Every
 * GPU must be free and every node up. If the job id already holds a
 * reservation, the GPUs are added to it. A reservation is independent of
 * running jobs; gpusched_cluster_allocate() with the same id consumes it.
 * @param c The cluster.
 * @param job_id The job the capacity is kept for.
 * @param n Number of (node, mask) pairs, at least 1.
 * @param nodes `n` node indices, strictly ascending.
 * @param masks `n` GPU masks, non-zero, within each node's GPUs.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument, zero mask, nodes not ascending, or bits
 *         past a node's GPUs.
 * @retval GPUSCHED_ERANGE A node index is out of range.
 * @retval GPUSCHED_EBUSY A GPU is not free.
 * @retval GPUSCHED_ESTATE A node is not up.
 * @retval GPUSCHED_ELIMIT Too many reservations (2^31 - 1).
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_cluster_reserve(gpusched_cluster *c, uint64_t job_id, uint32_t n,
                                          const uint32_t *nodes, const uint64_t *masks);

/**
 * Releases a running job and keeps all its GPUs reserved for another job,
 * atomically: the preemption step "evict a victim, hold its GPUs for the
 * preemptor". The GPUs are added to the reservation of `resv_job_id`
 * (created if needed), whatever the health of their nodes; none of them
 * becomes free in between.
 * @param c The cluster.
 * @param job_id The running job to release (the victim).
 * @param resv_job_id The job the GPUs are kept for.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 * @retval GPUSCHED_ENOENT No running job has id `job_id`.
 * @retval GPUSCHED_ELIMIT Too many reservations.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_cluster_release_to_resv(gpusched_cluster *c, uint64_t job_id,
                                                  uint64_t resv_job_id);

/**
 * Drops a reservation: its GPUs become free.
 * @param c The cluster.
 * @param job_id The reservation's job.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 * @retval GPUSCHED_ENOENT No reservation for this id.
 */
GPUSCHED_API int gpusched_cluster_unreserve(gpusched_cluster *c, uint64_t job_id);

/**
 * Number of reservations.
 * @param c The cluster.
 * @return The count, 0 if `c` is NULL.
 */
GPUSCHED_API uint32_t gpusched_cluster_resv_count(const gpusched_cluster *c);

/**
 * Iterates reservations: the job id of reservation number `index`, 0 to
 * gpusched_cluster_resv_count() - 1 (deterministic order, changed by drops).
 * @param c The cluster.
 * @param index Position.
 * @param[out] job_id The reservation's job id.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `job_id` is NULL.
 * @retval GPUSCHED_ERANGE `index` is past the last reservation.
 */
GPUSCHED_API int gpusched_cluster_resv_at(gpusched_cluster *c, uint32_t index, uint64_t *job_id);

/**
 * A reservation's GPUs, zero copy (valid until the next change).
 * @param c The cluster.
 * @param job_id The reservation's job.
 * @param[out] nodes Node indices, ascending.
 * @param[out] masks GPU masks, one per node.
 * @param[out] n Number of pairs.
 * @param[out] gpus Total GPUs; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument.
 * @retval GPUSCHED_ENOENT No reservation for this id.
 */
GPUSCHED_API int gpusched_cluster_resv_allocation(gpusched_cluster *c, uint64_t job_id, const uint32_t **nodes,
                                             const uint64_t **masks, uint32_t *n, uint32_t *gpus);

/* ---- checking and snapshots -------------------------------------------- */

/**
 * The invariant checker: recomputes every aggregate, mask, holder and
 * counter from the jobs and reservations and compares. O(nodes + GPUs +
 * domains); for tests and debugging.
 * @param c The cluster.
 * @retval 0 Consistent.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 * @retval GPUSCHED_ECORRUPT An inconsistency; the message names it.
 */
GPUSCHED_API int gpusched_cluster_check(gpusched_cluster *c);

/**
 * Writes a snapshot: a versioned, checksummed binary image of the topology
 * and the state (doc/snapshot-format.md). Call with `cap` 0 to learn the size.
 * @param c The cluster.
 * @param buf Destination (may be NULL when `cap` is 0).
 * @param cap Size of `buf`.
 * @param[out] len Bytes the image takes.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` or `len` is NULL.
 * @retval GPUSCHED_ERANGE `cap` is too small; `*len` says how much is needed.
 */
GPUSCHED_API int gpusched_cluster_snapshot(gpusched_cluster *c, void *buf, size_t cap, size_t *len);

/**
 * Restores a cluster, with a topology of its own, from a snapshot. The
 * whole image is validated; a truncated, corrupt or hostile image returns an
 * error and creates nothing. A restored cluster snapshots to the same bytes.
 * @param buf The image.
 * @param len Its length.
 * @param alloc Allocator for the cluster and its topology; NULL: libc.
 * @param[out] out The cluster (its topology: gpusched_cluster_topo()).
 * @param errbuf Receives the error message (may be NULL).
 * @param errbuf_len Size of `errbuf`.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument or invalid allocator.
 * @retval GPUSCHED_ECORRUPT Truncated, corrupt or inconsistent image.
 * @retval GPUSCHED_EVERSION Unsupported format version.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_cluster_restore(const void *buf, size_t len, const gpusched_allocator *alloc,
                                          gpusched_cluster **out, char *errbuf, size_t errbuf_len);

/* ---- journal ------------------------------------------------------------ */

/**
 * Receives one journal record: the changes of one committed transaction,
 * self-contained (versioned, checksummed; doc/journal.md). Called before the
 * changes are applied, so a record the sink accepts is always followed by
 * them (write-ahead). The record is only valid during the call.
 * @param user The pointer given to gpusched_cluster_journal_start().
 * @param record The record's bytes.
 * @param len Their length.
 * @return 0 to accept; any other value refuses the record, and the call
 *         that committed fails with #GPUSCHED_EIO having changed nothing.
 */
typedef int (*gpusched_journal_sink)(void *user, const void *record, size_t len);

/**
 * Starts journaling: from now on every call that changes the cluster (alloc,
 * release, reserve, unreserve, release_to_resv, job_update,
 * set_node_health, and every committed placement, preemption, move and
 * defragmentation) appends one record. Replaying the records on a snapshot
 * taken when journaling started rebuilds this cluster bit for bit
 * (gpusched_cluster_replay(), gpusched_cluster_journal_apply()).
 * @param c The cluster.
 * @param sink Receives each record; NULL: records are appended to the
 *        cluster's own buffer (gpusched_cluster_journal_view()).
 * @param user Passed to `sink`.
 * @retval 0 Success (a journal already started is replaced; its buffer is kept).
 * @retval GPUSCHED_EINVAL `c` is NULL.
 */
GPUSCHED_API int gpusched_cluster_journal_start(gpusched_cluster *c, gpusched_journal_sink sink, void *user);

/**
 * Stops journaling. The buffer's records stay readable until
 * gpusched_cluster_journal_clear() or the cluster is freed.
 * @param c The cluster.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 */
GPUSCHED_API int gpusched_cluster_journal_stop(gpusched_cluster *c);

/**
 * The records appended to the cluster's own buffer (journal started with a
 * NULL sink), oldest first, back to back.
 * @param c The cluster.
 * @param[out] bytes The buffer, valid until the next call that changes the
 *        cluster or the journal; NULL when empty.
 * @param[out] len Its length in bytes.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument.
 */
GPUSCHED_API int gpusched_cluster_journal_view(gpusched_cluster *c, const void **bytes, size_t *len);

/**
 * Empties the cluster's journal buffer (for example once its records are
 * stored elsewhere). Sequence numbers go on from where they were.
 * @param c The cluster.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `c` is NULL.
 */
GPUSCHED_API int gpusched_cluster_journal_clear(gpusched_cluster *c);

/**
 * Applies journal records to a cluster, in order, each atomically: a hot
 * standby that restored the primary's snapshot keeps the same state by
 * applying the primary's records as they arrive. Records must follow each
 * other (consecutive sequence numbers, also across calls on this cluster).
 * At the first bad record (truncated, corrupt, out of sequence, or changes
 * that do not apply to this state) it stops with an error: the records
 * before it are applied, nothing of it is.
 * @param c The cluster.
 * @param bytes Records back to back.
 * @param len Their length; 0 applies nothing.
 * @param[out] applied Records applied (may be NULL).
 * @retval 0 Every record applied.
 * @retval GPUSCHED_EINVAL `c` is NULL, or `bytes` is NULL with `len` > 0.
 * @retval GPUSCHED_ECORRUPT A record is truncated, corrupt, out of sequence
 *         or does not apply; the message says which record and why.
 * @retval GPUSCHED_EVERSION A record has an unsupported format version.
 * @retval GPUSCHED_ENOMEM Out of memory (the record was not applied).
 */
GPUSCHED_API int gpusched_cluster_journal_apply(gpusched_cluster *c, const void *bytes, size_t len,
                                                uint32_t *applied);

/**
 * Rebuilds a cluster from a snapshot and the journal written after it: the
 * result snapshots to the same bytes as the cluster that wrote both. A bad
 * snapshot or record gives an error and creates nothing.
 * @param snapshot A snapshot (gpusched_cluster_snapshot()).
 * @param snapshot_len Its length.
 * @param journal Records back to back (may be NULL when `journal_len` is 0).
 * @param journal_len Their length.
 * @param alloc Allocator for the cluster and its topology; NULL: libc.
 * @param[out] out The cluster.
 * @param errbuf Receives the error message (may be NULL).
 * @param errbuf_len Size of `errbuf`.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument or invalid allocator.
 * @retval GPUSCHED_ECORRUPT The snapshot or a record is bad (the message
 *         names the record).
 * @retval GPUSCHED_EVERSION Unsupported format version.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_cluster_replay(const void *snapshot, size_t snapshot_len, const void *journal,
                                         size_t journal_len, const gpusched_allocator *alloc,
                                         gpusched_cluster **out, char *errbuf, size_t errbuf_len);

#ifdef __cplusplus
}
#endif

/** @} */
#endif
