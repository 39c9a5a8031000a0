/**
 * @file sched.h
 * @brief The scheduling cycle: queues with quotas and borrowing, fair share
 *        between queues, gang admission, reservations over time and
 *        backfill, reclaim of borrowed capacity, and why every gang waits.
 *
 * @defgroup sched Scheduling cycle
 * @brief Decides, in one call, which pending gangs start, which running
 *        jobs are evicted, which gangs hold reservations, and why every
 *        other gang waits.
 *
 * Model (doc/sched.md has the details and where it differs from Kueue and
 * Slurm):
 *
 * - **Queues** form a tree. Queue 0 (#GPUSCHED_SCHED_ROOT) exists from the
 *   start; others are added under a parent. Jobs are submitted to leaf
 *   queues (queues without children). Each queue has a priority, a
 *   fair-share weight, and per *resource* a nominal quota, a borrowing
 *   limit and a lending limit. Resource 0 (#GPUSCHED_SCHED_RES_GPUS)
 *   counts every GPU; resource 1 + k counts the GPUs of GPU class k of
 *   the topology (gpusched_topo_class_count()); resource 1 + classes + k
 *   counts the topology's named resource k (gpusched_topo_resource_find():
 *   cpu, memory, ...), in its unit, asked by pod gangs. A class or named
 *   resource is enforced once some queue has a non-zero nominal quota for
 *   it.
 * - **Pod gangs** (requests with pods, resources, GPU fractions or class
 *   lists, as gpusched_placer_place() takes them): a gang uses of each
 *   named resource its pods' sum; of GPUs its whole GPUs, and for GPU
 *   fractions the pods' milli summed, rounded up to whole GPUs; of a class
 *   its GPUs when it names one class with `gpu_class` (a class list is
 *   charged to GPUs only). Pod gangs preempt (their victims may be pod
 *   gangs) and are reserved for like whole-GPU gangs (doc/sched.md, "Pod
 *   gangs").
 * - **Quota** (per resource): a queue's *subtree quota* is its nominal
 *   plus its children's subtree quotas. Its *guarantee* is the subtree
 *   quota minus its lending limit (the part nobody else may use). A
 *   queue occupies max(usage, guarantee) of its parent. A gang is
 *   admissible when, on the path from its queue to the root, every queue
 *   stays within its subtree quota (nominal admission: a guarantee, which
 *   reclaims borrowed capacity by preemption if need be), or, borrowing,
 *   when every queue on the path stays within its subtree quota plus its
 *   borrowing limit and within what its parent has left once its siblings'
 *   occupancy is counted.
 * - **Order**: by default (#GPUSCHED_SCHED_ORDER_FAIR) queues of higher
 *   priority first; among siblings of equal priority, the lowest *share*
 *   first, recursively down the tree (Slurm's fair tree). A queue's share
 *   is its dominant resource's max(usage, decayed usage) over its subtree
 *   quota, divided by its weight; the decayed usage is an exponential
 *   average of usage with half-life #GPUSCHED_SCHED_PARAM_HALF_LIFE. The
 *   order is recomputed after each start within a cycle. Inside a queue,
 *   gangs go by priority (higher first), then submit time, then id.
 * - **Starvation guard** (#GPUSCHED_SCHED_PARAM_AGE_LIMIT): gangs pending
 *   longer than the limit go first, oldest first; so do gangs of at least
 *   #GPUSCHED_SCHED_PARAM_LARGE_GPUS GPUs.
 * - **Backfill and reservations**: the first gang in the order that does
 *   not fit gets a reservation: the earliest time it fits, from the
 *   running jobs' expected ends, and the nodes it will use then (up to
 *   #GPUSCHED_SCHED_PARAM_RESV_DEPTH gangs get one; 1 is EASY backfill,
 *   more is conservative backfill). A gang behind it starts now only if
 *   its expected end is not after the earliest reservation, or it uses no
 *   reserved node. A reservation is kept by the next cycles, time and
 *   nodes, while nothing since could make it earlier or take its nodes
 *   (its time is always the earliest; a new search could pick other nodes
 *   for it); otherwise it is searched again
 *   (#GPUSCHED_SCHED_PARAM_KEEP_RESV).
 * - **Preemption** (#GPUSCHED_SCHED_PARAM_PREEMPT): a gang that fits its
 *   queue's nominal quota along the whole path but not the cluster may
 *   evict, through gpusched_placer_preempt(), preemptible jobs that run on
 *   borrowed capacity (of any priority) first, then preemptible jobs of
 *   lower priority. Victims go back to their queue, pending.
 *
 * Time is the caller's: every event and cycle carries `now` (any unit,
 * non-decreasing); durations are in the same unit. The library never
 * reads a clock; the same calls give the same decisions.
 *
 * The scheduler starts jobs as cluster jobs with the gang's id. Their
 * cluster priority encodes borrowing (see #GPUSCHED_SCHED_PRIORITY_MAX):
 * a job started on borrowed capacity has priority
 * `priority - 2^30` in the cluster, so that the preemption planner, which
 * takes the lowest priorities first, reclaims borrowed capacity first.
 * Jobs that the caller allocates in the cluster directly take capacity
 * but belong to no queue, never end in the scheduler's view, and are
 * never victims unless preemptible.
 *
 * Lifetime and threads: a #gpusched_sched holds a reference on its
 * cluster and owns its placer. It is used by one thread at a time, and
 * while it exists every change to the cluster should go through it (the
 * caller may allocate and release other jobs, but not the scheduler's).
 * A #gpusched_sched_decisions is reusable from cycle to cycle; pointers it
 * hands out stay valid until it is reused or freed.
 * @{
 */
#ifndef GPUSCHED_SCHED_H
#define GPUSCHED_SCHED_H

#include <gpusched/cluster.h>
#include <gpusched/common.h>
#include <gpusched/place.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A scheduler over one cluster. */
typedef struct gpusched_sched gpusched_sched;
/** The decisions of one cycle: starts, evictions, reservations, waits. */
typedef struct gpusched_sched_decisions gpusched_sched_decisions;

/** The root queue's id; it always exists. */
#define GPUSCHED_SCHED_ROOT 0u
/** Largest number of queues, the root included. */
#define GPUSCHED_SCHED_MAX_QUEUES 65536u
/** Deepest queue tree: the root is depth 0, its children depth 1. */
#define GPUSCHED_SCHED_MAX_DEPTH 16u
/** A borrowing or lending limit that does not limit. */
#define GPUSCHED_SCHED_UNLIMITED UINT64_MAX
/** The largest quota or limit, and the largest sum of nominal quotas in
 *  one subtree (2^62). */
#define GPUSCHED_SCHED_QUOTA_MAX (1ull << 62)
/** Resource 0: every GPU, whatever its class. Resource 1 + k: GPUs of
 *  class k. */
#define GPUSCHED_SCHED_RES_GPUS 0u
/** Job priorities lie in [-GPUSCHED_SCHED_PRIORITY_MAX,
 *  GPUSCHED_SCHED_PRIORITY_MAX], so that the borrowing tier fits in the
 *  cluster's 32-bit priority. */
#define GPUSCHED_SCHED_PRIORITY_MAX ((1 << 29) - 1)
/** Longest queue name, without the terminating NUL. */
#define GPUSCHED_SCHED_NAME_MAX 63u

/**
 * A queue to add. Extensible: fill with #GPUSCHED_SCHED_QUEUE_INIT, then
 * set the fields. Quotas are set per resource with
 * gpusched_sched_queue_quota_set() (a new queue has nominal 0, unlimited
 * borrowing and lending on every resource).
 */
typedef struct gpusched_sched_queue {
    uint32_t size;          /**< sizeof(gpusched_sched_queue), set by the initializer. */
    uint32_t parent;        /**< The parent queue's id; it must have no pending or running jobs. */
    const char *name;       /**< Unique name, 1 to #GPUSCHED_SCHED_NAME_MAX bytes of
                                 [A-Za-z0-9._-]; copied. */
    int32_t priority;       /**< Queues of higher priority go first among their siblings. */
    uint32_t weight;        /**< Fair-share weight, 1 to 1,000,000; 0 means 1. */
} gpusched_sched_queue;

/** Initializer for #gpusched_sched_queue: sets size, zeroes the rest. */
#define GPUSCHED_SCHED_QUEUE_INIT { sizeof(gpusched_sched_queue), 0, NULL, 0, 0 }

/**
 * A gang to submit. Extensible: fill with #GPUSCHED_SCHED_JOB_INIT.
 */
typedef struct gpusched_sched_job {
    uint32_t size;          /**< sizeof(gpusched_sched_job), set by the initializer. */
    uint32_t queue;         /**< A leaf queue's id. */
    uint64_t id;            /**< The job id, unique among the scheduler's jobs and the
                                 cluster's running jobs. */
    int32_t priority;       /**< Within ±#GPUSCHED_SCHED_PRIORITY_MAX; higher goes first. */
    uint32_t flags;         /**< GPUSCHED_JOB_FLAG_* bits of the job once running
                                 (#GPUSCHED_JOB_FLAG_PREEMPTIBLE makes it a possible victim). */
    int64_t submit_time;    /**< The caller's clock; orders gangs of equal priority. */
    int64_t duration_limit; /**< Declared limit of its run time; 0: none. */
    int64_t duration_predicted; /**< Predicted run time; 0: none. The expected run time
                                 is the prediction if given, else the limit; a gang
                                 with neither is expected to run forever. */
    uint64_t cost_hint;     /**< Cost of preempting it (see #gpusched_job). */
    const gpusched_place_request *request; /**< The gang's shape: gpus, split, levels,
                                 slices, class, labels, avoided nodes. Copied. Its `job`,
                                 `flags`, `preempt_policy` and `now` must be 0/NULL: the
                                 scheduler sets them. */
} gpusched_sched_job;

/** Initializer for #gpusched_sched_job: sets size, zeroes the rest. */
#define GPUSCHED_SCHED_JOB_INIT { sizeof(gpusched_sched_job), 0, 0, 0, 0, 0, 0, 0, 0, NULL }

/** Scheduler parameters (gpusched_sched_param_set()). Explicitly numbered,
 *  never renumbered. Values are int64_t. */
typedef enum gpusched_sched_param {
    /** Half-life of the decayed usage, in the caller's time unit, [0, 2^53];
     *  0 (the default): shares use current usage only. */
    GPUSCHED_SCHED_PARAM_HALF_LIFE = 1,
    /** How many blocked gangs get a reservation, [0, 64]; default 1 (EASY
     *  backfill); 0: no reservation (greedy first fit, big gangs may
     *  starve). */
    GPUSCHED_SCHED_PARAM_RESV_DEPTH = 2,
    /** A #gpusched_sched_order value; default #GPUSCHED_SCHED_ORDER_FAIR. */
    GPUSCHED_SCHED_PARAM_ORDER = 3,
    /** 1: a gang waits behind every gang before it that does not start (no
     *  backfill at all); 0 (default): backfill. */
    GPUSCHED_SCHED_PARAM_STRICT = 4,
    /** 1 (default): quotas are enforced; 0: ignored (usage is still counted). */
    GPUSCHED_SCHED_PARAM_QUOTAS = 5,
    /** 1 (default): preemption (borrowed capacity first, then lower
     *  priority) for gangs within their nominal quota; 0: never evict. */
    GPUSCHED_SCHED_PARAM_PREEMPT = 6,
    /** A started job is no victim before its start plus this, [0, 2^53]
     *  (its cluster `protected_until`); default 0. A job is never a victim
     *  at the time it started (at least 1 is used): a cycle does not evict
     *  a gang it started. */
    GPUSCHED_SCHED_PARAM_MIN_RUNTIME = 7,
    /** The starvation guard, [0, 2^53]: a gang pending for longer than
     *  this goes before every gang that has waited less, oldest first,
     *  whatever the order (so it becomes the head and gets a reservation);
     *  0 (the default): off. */
    GPUSCHED_SCHED_PARAM_AGE_LIMIT = 8,
    /** A gang of more GPUs than this starts not preemptible, whatever its
     *  flags: it is never a victim (it may still preempt), [0, 2^32 - 1];
     *  0 (the default): no limit. Evicting a large gang throws away the
     *  most work and puts it back among the gangs that wait longest for
     *  room (doc/sched-sim.md, "Sparing large gangs"). Read when a gang
     *  starts: gangs running when it changes keep what they started with.
     *  Added in 0.2.3. */
    GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS = 9,
    /** A gang of at least this many GPUs goes first, as a gang past the
     *  starvation guard's age limit does: those gangs before every other,
     *  oldest first, whatever the order, [0, 2^32 - 1]; 0 (the default):
     *  off. A large gang cannot backfill: in the fair order a heavy
     *  queue's large gang comes after every lighter queue's gangs, the
     *  reservations go to theirs, and it waits for the age limit while the
     *  small ones fill every gap (doc/sched.md, "Large gangs first").
     *  With #GPUSCHED_SCHED_PARAM_PREEMPT_MAX_GPUS it also holds back the
     *  gangs within their quota: the large gangs keep the reservations
     *  and cannot be evicted (doc/sched-sim.md, "Large gangs first, and
     *  its cost"). Added in 0.2.3. */
    GPUSCHED_SCHED_PARAM_LARGE_GPUS = 10,
    /** 1 (the default): a reservation is kept by the next cycles, time and
     *  nodes, while no change since could make it earlier or take its
     *  nodes, and searched again otherwise; 0: every cycle searches every
     *  reservation again (a backfill pass of Slurm re-plans them all). A
     *  kept reservation's time is the one a new search finds; its nodes
     *  are the ones it got first, where a new search might pick others
     *  (doc/sched.md, "Kept reservations"). Added in 0.2.3. */
    GPUSCHED_SCHED_PARAM_KEEP_RESV = 11,
} gpusched_sched_param;

/** The order of pending gangs (#GPUSCHED_SCHED_PARAM_ORDER). */
typedef enum gpusched_sched_order {
    /** Queue priority, then fair share down the queue tree, then the
     *  gang's priority, submit time, id. */
    GPUSCHED_SCHED_ORDER_FAIR = 0,
    /** The gang's priority, then submit time, then id, across queues. */
    GPUSCHED_SCHED_ORDER_PRIORITY = 1,
    /** Submit time, then id (first come, first served). */
    GPUSCHED_SCHED_ORDER_FIFO = 2,
} gpusched_sched_order;

/** Why a gang waits. Explicitly numbered, never renumbered. */
typedef enum gpusched_sched_reason {
    /** It does not wait (it started, or was not evaluated). */
    GPUSCHED_SCHED_WAIT_NONE = 0,
    /** Starting it would exceed a quota: `queue`, `resource`, `used`,
     *  `requested`, `limit` say where (limit: what that queue may hold on
     *  that resource now). */
    GPUSCHED_SCHED_WAIT_QUOTA = 1,
    /** It does not fit the cluster now (`place_reason`, `free_gpus`; the
     *  message has the placement's explanation); `time` is its reservation's
     *  start if it holds one, else -1. */
    GPUSCHED_SCHED_WAIT_FIT = 2,
    /** It fits now, but only on nodes reserved for `blocking_job` from
     *  `time`, and it is not expected to end by then. */
    GPUSCHED_SCHED_WAIT_RESERVATION = 3,
    /** The cluster had the GPUs at the start of the cycle (`free_gpus`)
     *  but gangs before it in the order, of queues of lower share or higher
     *  priority, took `taken_gpus` of them this cycle. */
    GPUSCHED_SCHED_WAIT_SHARE = 4,
    /** Strict order (#GPUSCHED_SCHED_PARAM_STRICT): a gang before it
     *  (`blocking_job`) waits. */
    GPUSCHED_SCHED_WAIT_ORDER = 5,
} gpusched_sched_reason;

/**
 * Why one gang waits, with numbers. Output struct: set `size` (the
 * initializer does); the library writes only the bytes it covers.
 */
typedef struct gpusched_sched_wait {
    uint32_t size;          /**< Set by the caller (#GPUSCHED_SCHED_WAIT_INIT). */
    uint32_t reason;        /**< A #gpusched_sched_reason. */
    uint64_t job_id;        /**< The waiting gang. */
    uint32_t seq;           /**< Its position among the cycle's evaluations (starts share the
                                 count), so that decisions can be replayed in order. */
    uint32_t queue;         /**< QUOTA: the queue whose limit it would exceed; else its own. */
    uint32_t resource;      /**< QUOTA: the resource. */
    uint32_t place_reason;  /**< FIT: the #gpusched_place_reason. */
    uint64_t used;          /**< QUOTA: that queue's usage of the resource. */
    uint64_t requested;     /**< The gang's GPUs (of that resource). */
    uint64_t limit;         /**< QUOTA: what the queue may hold there now. */
    uint64_t free_gpus;     /**< FIT: usable free GPUs now; SHARE: at the cycle's start. */
    uint64_t taken_gpus;    /**< SHARE: GPUs started this cycle before it. */
    uint64_t blocking_job;  /**< RESERVATION, ORDER: the gang in its way. */
    int64_t time;           /**< FIT: its reservation's start, -1 if none; RESERVATION:
                                 the blocking reservation's start. */
    double share;           /**< Its queue's share when it was evaluated. */
} gpusched_sched_wait;

/** Initializer for #gpusched_sched_wait. */
#define GPUSCHED_SCHED_WAIT_INIT { sizeof(gpusched_sched_wait), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/** State of a job in the scheduler (gpusched_sched_job_state()). */
typedef enum gpusched_sched_job_status {
    GPUSCHED_SCHED_JOB_PENDING = 1,  /**< Waiting in its queue. */
    GPUSCHED_SCHED_JOB_RUNNING = 2,  /**< Started; a job of the cluster. */
} gpusched_sched_job_status;

/* ---- lifetime ------------------------------------------------------------ */

/**
 * Creates a scheduler over a cluster, with only the root queue. The
 * resources are GPUs and one per GPU class of the cluster's topology.
 *
 * With `GPUSCHED_SCHED_QUICK=0` in the environment at creation, its cycles
 * evaluate every pending gang in full (no quick waits, admissions by
 * walking the queue path, reservation searches without the hint of the
 * gang's last one): slower, never different; for tests that
 * compare the two (doc/sched.md, "What is built and what is not"). With
 * `GPUSCHED_SCHED_WHOLE=0`, gangs whose slices each fill a domain are
 * reserved for and tried by searches instead of by counting wholly free
 * domains: slower, and a reservation may lie on other domains of the
 * same time (doc/sched.md, "twelfth session").
 * @param cluster The cluster; the scheduler takes a reference.
 * @param alloc Allocator for everything the scheduler allocates; NULL: libc.
 * @param[out] out The scheduler.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `cluster` or `out` is NULL, or `alloc` is invalid.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_sched_new(gpusched_cluster *cluster, const gpusched_allocator *alloc,
                                    gpusched_sched **out);

/** Frees a scheduler (its running jobs stay in the cluster); NULL is accepted. */
GPUSCHED_API void gpusched_sched_free(gpusched_sched *s);

/**
 * The message of the scheduler's last error ("" if the last call succeeded).
 * @param s The scheduler (NULL gives a fixed message).
 * @return A string owned by the scheduler, valid until its next call.
 */
GPUSCHED_API const char *gpusched_sched_errmsg(const gpusched_sched *s);

/**
 * Sets a parameter.
 * @param s The scheduler.
 * @param param A #gpusched_sched_param.
 * @param value Within gpusched_sched_param_bounds().
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `s` is NULL or `param` unknown.
 * @retval GPUSCHED_ERANGE `value` out of bounds.
 */
GPUSCHED_API int gpusched_sched_param_set(gpusched_sched *s, uint32_t param, int64_t value);

/**
 * Reads a parameter.
 * @param s The scheduler.
 * @param param A #gpusched_sched_param.
 * @param[out] value Its value.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument or unknown `param`.
 */
GPUSCHED_API int gpusched_sched_param_get(gpusched_sched *s, uint32_t param, int64_t *value);

/**
 * The accepted range of a parameter.
 * @param param A #gpusched_sched_param.
 * @param[out] lo Smallest value.
 * @param[out] hi Largest value.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL Unknown `param` or NULL output.
 */
GPUSCHED_API int gpusched_sched_param_bounds(uint32_t param, int64_t *lo, int64_t *hi);

/* ---- queues ---------------------------------------------------------------- */

/**
 * Adds a queue under a parent.
 * @param s The scheduler.
 * @param q The queue (#GPUSCHED_SCHED_QUEUE_INIT, then fields); copied.
 * @param[out] id The new queue's id (ids are given in order, from 1).
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument, bad name or weight.
 * @retval GPUSCHED_E2BIG Unknown non-zero trailing bytes.
 * @retval GPUSCHED_ENOENT No queue `parent`.
 * @retval GPUSCHED_EEXIST A queue has this name.
 * @retval GPUSCHED_ESTATE The parent has jobs (only leaves hold jobs).
 * @retval GPUSCHED_ELIMIT Too many queues, or the tree too deep.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_sched_queue_add(gpusched_sched *s, const gpusched_sched_queue *q, uint32_t *id);

/**
 * Moves a queue under another parent, with its subtree.
 * @param s The scheduler.
 * @param queue The queue (not the root).
 * @param parent The new parent.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `queue` is the root, or `parent` is `queue` or in its
 *         subtree (the tree would have a cycle).
 * @retval GPUSCHED_ENOENT No such queue.
 * @retval GPUSCHED_ESTATE The new parent has jobs.
 * @retval GPUSCHED_ELIMIT The tree would be too deep.
 */
GPUSCHED_API int gpusched_sched_queue_parent_set(gpusched_sched *s, uint32_t queue, uint32_t parent);

/**
 * Sets a queue's quota for one resource.
 * @param s The scheduler.
 * @param queue The queue (the root too: its nominal is a pool shared by all).
 * @param resource #GPUSCHED_SCHED_RES_GPUS, 1 + a GPU class, or 1 + the
 *        class count + a topology resource (cpu, memory, ...).
 * @param nominal Nominal quota, 0 to #GPUSCHED_SCHED_QUOTA_MAX.
 * @param borrowing_limit How far above its subtree quota it may go, or
 *        #GPUSCHED_SCHED_UNLIMITED.
 * @param lending_limit How much of its subtree quota others may use, or
 *        #GPUSCHED_SCHED_UNLIMITED.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `s` is NULL.
 * @retval GPUSCHED_ENOENT No such queue.
 * @retval GPUSCHED_ERANGE `resource` out of range, `nominal` or a limit above
 *         #GPUSCHED_SCHED_QUOTA_MAX and not unlimited, or a subtree's sum of
 *         nominal quotas would pass #GPUSCHED_SCHED_QUOTA_MAX; nothing changed.
 */
GPUSCHED_API int gpusched_sched_queue_quota_set(gpusched_sched *s, uint32_t queue, uint32_t resource,
                                                uint64_t nominal, uint64_t borrowing_limit,
                                                uint64_t lending_limit);

/**
 * Looks a queue up by name.
 * @param s The scheduler.
 * @param name The name ("root" is queue 0).
 * @param[out] id Its id.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument.
 * @retval GPUSCHED_ENOENT No queue has this name.
 */
GPUSCHED_API int gpusched_sched_queue_find(gpusched_sched *s, const char *name, uint32_t *id);

/**
 * Number of queues, the root included (ids 0 .. count - 1).
 * @param s The scheduler.
 * @return The count, 0 for NULL.
 */
GPUSCHED_API uint32_t gpusched_sched_queue_count(const gpusched_sched *s);

/**
 * A queue's name.
 * @param s The scheduler.
 * @param queue The queue.
 * @return Its name, owned by the scheduler; NULL if there is no such queue.
 */
GPUSCHED_API const char *gpusched_sched_queue_name(const gpusched_sched *s, uint32_t queue);

/**
 * A queue's usage of one resource and its standing. Every output may be NULL.
 * @param s The scheduler.
 * @param queue The queue.
 * @param resource The resource.
 * @param[out] used What its subtree's running jobs use of that resource
 *        (GPUs, or the named resource's unit).
 * @param[out] quota Its subtree quota (nominal plus its children's).
 * @param[out] decayed Its decayed usage, as of the last event or cycle.
 * @param[out] share Its fair share (dominant over the enforced resources,
 *        divided by weight; the same for every `resource`).
 * @param[out] pending Its subtree's pending gangs.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `s` is NULL.
 * @retval GPUSCHED_ENOENT No such queue.
 * @retval GPUSCHED_ERANGE `resource` out of range.
 */
GPUSCHED_API int gpusched_sched_queue_usage(gpusched_sched *s, uint32_t queue, uint32_t resource,
                                            uint64_t *used, uint64_t *quota, double *decayed,
                                            double *share, uint32_t *pending);

/* ---- events ------------------------------------------------------------------ */

/**
 * Submits a gang: it waits in its queue until a cycle starts it.
 * @param s The scheduler.
 * @param job The gang (#GPUSCHED_SCHED_JOB_INIT, then fields); copied.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument or invalid field (the message names it),
 *         including an invalid request.
 * @retval GPUSCHED_E2BIG Unknown trailing bytes.
 * @retval GPUSCHED_ENOENT No such queue.
 * @retval GPUSCHED_ESTATE The queue is not a leaf.
 * @retval GPUSCHED_ERANGE Priority, durations or a request field out of range.
 * @retval GPUSCHED_EEXIST The id is taken.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_sched_submit(gpusched_sched *s, const gpusched_sched_job *job);

/**
 * Withdraws a pending gang.
 * @param s The scheduler.
 * @param job_id The gang.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `s` is NULL.
 * @retval GPUSCHED_ENOENT No such job.
 * @retval GPUSCHED_ESTATE It is running (end it with gpusched_sched_job_end()).
 */
GPUSCHED_API int gpusched_sched_cancel(gpusched_sched *s, uint64_t job_id);

/**
 * A running job ended (completed, failed or killed): its GPUs are released
 * in the cluster and its usage leaves its queues.
 * @param s The scheduler.
 * @param job_id The job.
 * @param now The caller's clock, not before the last event or cycle.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `s` is NULL.
 * @retval GPUSCHED_ENOENT No such job.
 * @retval GPUSCHED_ESTATE It is not running.
 * @retval GPUSCHED_ERANGE `now` is before the last event or cycle.
 */
GPUSCHED_API int gpusched_sched_job_end(gpusched_sched *s, uint64_t job_id, int64_t now);

/**
 * Changes a node's health through the scheduler. Going down, the
 * scheduler's jobs on the node are released and go back to their queues,
 * pending (they count as evictions of the next cycle's decisions).
 * @param s The scheduler.
 * @param node The node.
 * @param health A #gpusched_node_health.
 * @param now The caller's clock.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `s` is NULL or `health` unknown.
 * @retval GPUSCHED_ERANGE `node` out of range or `now` before the last event.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_sched_node_health_set(gpusched_sched *s, uint32_t node, uint32_t health, int64_t now);

/**
 * A job's state, and for a pending one why it waited in the last cycle
 * that evaluated it.
 * @param s The scheduler.
 * @param job_id The job.
 * @param[out] status A #gpusched_sched_job_status; may be NULL.
 * @param[out] wait Why it waits (reason #GPUSCHED_SCHED_WAIT_NONE if running
 *        or not evaluated yet, or if the last cycle that was not quiet
 *        failed before it reached the gang); may be NULL. Set its `size`
 *        first.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `s` is NULL, or `wait->size` too small.
 * @retval GPUSCHED_ENOENT No such job.
 */
GPUSCHED_API int gpusched_sched_job_state(gpusched_sched *s, uint64_t job_id, uint32_t *status,
                                          gpusched_sched_wait *wait);

/**
 * Counts of jobs. Every output may be NULL.
 * @param s The scheduler.
 * @param[out] pending Pending gangs.
 * @param[out] running Running jobs.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `s` is NULL.
 */
GPUSCHED_API int gpusched_sched_counts(gpusched_sched *s, uint32_t *pending, uint32_t *running);

/* ---- the cycle ------------------------------------------------------------------ */

/**
 * Runs one scheduling cycle at time `now`: evaluates pending gangs in
 * order, starts those that may start (committed to the cluster through
 * the placer), evicts victims where a gang within its nominal quota needs
 * them, makes reservations for the first blocked gangs and records why
 * every other gang waits. A cycle with nothing new since the last one
 * (no event; no time crossing an expected end while there are
 * reservations, a protection's end or the age limit of a pending gang;
 * the fair order of the queues as the last cycle left it;
 * no eviction, and no start after a reservation, by the last cycle)
 * changes nothing and reports itself quiet: the previous explanations
 * stand.
 * @param s The scheduler.
 * @param now The caller's clock, not before the last event or cycle.
 * @param d Receives the decisions (reset first).
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument.
 * @retval GPUSCHED_ERANGE `now` is before the last event or cycle.
 * @retval GPUSCHED_ENOMEM Out of memory: the starts made so far stand (each
 *         start is its own cluster transaction) and are in `d`.
 */
GPUSCHED_API int gpusched_sched_cycle(gpusched_sched *s, int64_t now, gpusched_sched_decisions *d);

/**
 * Checks the scheduler's invariants against a recomputation from its jobs:
 * usage per queue and resource, borrowing limits never exceeded, every
 * running job present in the cluster with its GPUs. O(jobs + queues).
 * @param s The scheduler.
 * @retval 0 Consistent.
 * @retval GPUSCHED_EINVAL `s` is NULL.
 * @retval GPUSCHED_ECORRUPT An inconsistency; the message names it.
 */
GPUSCHED_API int gpusched_sched_check(gpusched_sched *s);

/* ---- decisions ---------------------------------------------------------------- */

/**
 * Creates an empty decisions object.
 * @param alloc Allocator; NULL: libc.
 * @param[out] out The object.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `out` NULL or `alloc` invalid.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_sched_decisions_new(const gpusched_allocator *alloc, gpusched_sched_decisions **out);

/** Frees a decisions object; NULL is accepted. */
GPUSCHED_API void gpusched_sched_decisions_free(gpusched_sched_decisions *d);

/**
 * Whether the cycle was quiet: nothing new since the cycle before, nothing
 * evaluated, nothing decided.
 * @param d The decisions.
 * @return 1 if quiet, 0 otherwise (and for NULL).
 */
GPUSCHED_API int gpusched_sched_decisions_quiet(const gpusched_sched_decisions *d);

/**
 * The gangs started, in the order they started, zero copy.
 * @param d The decisions.
 * @param[out] ids Their ids.
 * @param[out] n How many.
 * @retval 0 Success. @retval GPUSCHED_EINVAL NULL argument.
 */
GPUSCHED_API int gpusched_sched_decisions_starts(const gpusched_sched_decisions *d, const uint64_t **ids,
                                                 uint32_t *n);

/**
 * One started gang: where it runs and when it was evaluated.
 * @param d The decisions.
 * @param index 0 .. number of starts - 1.
 * @param[out] job_id Its id; may be NULL.
 * @param[out] seq Its position among the cycle's evaluations; may be NULL.
 * @param[out] nodes Its nodes, ascending (valid until `d` is reused).
 * @param[out] masks Its GPUs per node.
 * @param[out] n Number of nodes.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL `d`, `nodes`, `masks` or `n`.
 * @retval GPUSCHED_ERANGE `index` out of range.
 */
GPUSCHED_API int gpusched_sched_decisions_start(const gpusched_sched_decisions *d, uint32_t index,
                                                uint64_t *job_id, uint32_t *seq, const uint32_t **nodes,
                                                const uint64_t **masks, uint32_t *n);

/**
 * The jobs evicted (they went back to their queues), and for each the gang
 * it was evicted for (0 when its node went down), zero copy.
 * @param d The decisions.
 * @param[out] victims Victim ids.
 * @param[out] for_jobs The preemptor of each.
 * @param[out] n How many.
 * @retval 0 Success. @retval GPUSCHED_EINVAL NULL argument.
 */
GPUSCHED_API int gpusched_sched_decisions_evictions(const gpusched_sched_decisions *d, const uint64_t **victims,
                                                    const uint64_t **for_jobs, uint32_t *n);

/**
 * Number of reservations made.
 * @param d The decisions (NULL gives 0).
 * @return The count.
 */
GPUSCHED_API uint32_t gpusched_sched_decisions_reservation_count(const gpusched_sched_decisions *d);

/**
 * One reservation: the gang, the earliest time it fits (from the expected
 * ends of the running jobs), the smallest domain holding the nodes it will
 * use then, and those nodes.
 * @param d The decisions.
 * @param index 0 .. gpusched_sched_decisions_reservation_count() - 1.
 * @param[out] job_id The gang; may be NULL.
 * @param[out] time When it is expected to fit; may be NULL.
 * @param[out] level The domain's level (#GPUSCHED_NONE when the nodes span
 *        several domains of the top level: the whole cluster); may be NULL.
 * @param[out] domain The domain's index at that level (0 for the whole
 *        cluster); may be NULL.
 * @param[out] nodes The reserved nodes, ascending (valid until `d` is reused);
 *        may be NULL.
 * @param[out] n Their number; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `d` is NULL.
 * @retval GPUSCHED_ERANGE `index` out of range.
 */
GPUSCHED_API int gpusched_sched_decisions_reservation(const gpusched_sched_decisions *d, uint32_t index,
                                                      uint64_t *job_id, int64_t *time, uint32_t *level,
                                                      uint32_t *domain, const uint32_t **nodes, uint32_t *n);

/**
 * Number of gangs that wait, each with an explanation.
 * @param d The decisions (NULL gives 0).
 * @return The count.
 */
GPUSCHED_API uint32_t gpusched_sched_decisions_wait_count(const gpusched_sched_decisions *d);

/**
 * Why one gang waits.
 * @param d The decisions.
 * @param index 0 .. gpusched_sched_decisions_wait_count() - 1.
 * @param[out] wait Receives the explanation; set its `size` first.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL NULL argument or `wait->size` too small.
 * @retval GPUSCHED_ERANGE `index` out of range.
 */
GPUSCHED_API int gpusched_sched_decisions_wait(const gpusched_sched_decisions *d, uint32_t index,
                                               gpusched_sched_wait *wait);

/**
 * The explanation of one wait as text, for example
 * "over quota: queue team-a (gpus) holds 56 of 64, 16 asked".
 * @param d The decisions.
 * @param index As for gpusched_sched_decisions_wait().
 * @return A string owned by `d`, valid until its next call; "" when out of
 *         range or NULL.
 */
GPUSCHED_API const char *gpusched_sched_decisions_wait_message(gpusched_sched_decisions *d, uint32_t index);

#ifdef __cplusplus
}
#endif

/** @} */
#endif
