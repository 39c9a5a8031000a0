/**
 * @file fairq.h
 * @brief Fair-share task queue: tasks and tenants as struct of arrays,
 *        scoring policies, SIMD rescoring, poll, duration prediction and a
 *        decision log.
 *
 * @defgroup fairq Fair-share task queue
 * @brief Multi-tenant task queue that workers poll; every poll scores the
 *        queued tasks and hands over the best one.
 *
 * Model: tenants are numbered `0 .. max_tenants-1`; a task belongs to one
 * tenant, has one of 64 task types, a caller-chosen 64-bit id, a size (for
 * example document bytes) and an enqueue time. A worker polls with the mask
 * of task types it can run and receives the best task under the policy.
 *
 * Score of a queued task i of tenant t (higher wins, see doc/fairq.md):
 *
 *     score(i) = W_BACKLOG * backlog(t) / max_t' backlog(t')
 *              + W_WAIT    * wait(i) * (1 / max_j wait(j))        (0 if all waits are 0)
 *              + W_VTIME   * (vmax - vtime(t)) / (vmax - vmin)    (1 if vmax == vmin)
 *              + W_PRED    * wait(i) / (wait(i) + predicted(i))
 *
 * with maxima and minima over the queued tasks and the backlogged tenants
 * (not only those the polling worker can run). The default weights are the
 * memoryless policy of the model orchestrator (0.1 backlog, 0.9 wait).
 * Scores are computed in one fixed order of operations (weights divided by
 * the maxima once per poll, no fused multiply-add; doc/fairq.md), so every
 * SIMD path and the fast path give bit-identical scores and the same task.
 *
 * Ties are broken by age: among equal scores the task enqueued first wins.
 *
 * Time is a `double` in seconds on the caller's clock (any epoch). The
 * library never reads a clock; enqueue times must not decrease, and the
 * `now` of a poll must not be earlier than any enqueue time or earlier
 * `now`.
 *
 * Handle lifetime and threads: a #gpusched_fairq is created by
 * gpusched_fairq_new() and released by gpusched_fairq_free(). It is used by
 * one thread at a time (calls on different handles may run concurrently).
 * Pointers it hands out stay valid until the next call that modifies it.
 * @{
 */
#ifndef GPUSCHED_FAIRQ_H
#define GPUSCHED_FAIRQ_H

#include <stddef.h>
#include <stdint.h>

#include <gpusched/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque queue handle. */
typedef struct gpusched_fairq gpusched_fairq;

/** Number of task types; a worker mask has one bit per type. */
#define GPUSCHED_MAX_TASK_TYPES 64
/** Largest accepted `max_tenants`. */
#define GPUSCHED_MAX_TENANTS (1u << 24)
/** Worker mask that accepts every task type. */
#define GPUSCHED_FAIRQ_ALL_TYPES UINT64_MAX

/**
 * A task to enqueue. Extensible: set `size` with #GPUSCHED_FAIRQ_TASK_INIT;
 * fields are only ever appended, zero means the default.
 */
typedef struct gpusched_fairq_task {
    uint32_t size;          /**< sizeof(gpusched_fairq_task), set by the INIT macro. */
    uint32_t tenant;        /**< Tenant index, below the queue's max_tenants. */
    uint64_t id;            /**< Caller's id; unique among queued and running tasks. */
    uint32_t type;          /**< Task type, 0 .. 63. */
    uint32_t reserved0;     /**< Must be zero. */
    double enqueue_time;    /**< Seconds on the caller's clock; not below the previous enqueue. */
    double work_size;       /**< Size of the work (for example bytes), >= 0; 0: unknown. */
    double predicted;       /**< Predicted duration in seconds; 0: let the library predict. */
} gpusched_fairq_task;

/** Initializer for #gpusched_fairq_task. */
#define GPUSCHED_FAIRQ_TASK_INIT { sizeof(gpusched_fairq_task), 0, 0, 0, 0, 0, 0, 0 }

/**
 * What a poll chose and why; also one record of the decision log. Output
 * struct: set `size` to sizeof(gpusched_fairq_decision) (or an older size);
 * the library writes only the bytes that size covers.
 */
typedef struct gpusched_fairq_decision {
    uint32_t size;          /**< Set by the caller before the call. */
    uint32_t tenant;        /**< Tenant of the chosen task. */
    uint64_t task_id;       /**< Id of the chosen task. */
    double time;            /**< The `now` of the poll. */
    uint32_t type;          /**< Type of the chosen task. */
    uint32_t tenants_backlogged; /**< Tenants with queued tasks before the poll. */
    double score;           /**< Total score of the chosen task. */
    double term_backlog;    /**< backlog(t) / max backlog, before its weight. */
    double term_wait;       /**< wait / max wait, before its weight. */
    double term_vtime;      /**< Fair-share term in [0, 1], before its weight. */
    double term_pred;       /**< wait / (wait + predicted), before its weight. */
    double predicted;       /**< Predicted duration of the task, seconds. */
    double probability;     /**< Probability the choice had: 1 unless exploring. */
    uint64_t candidates;    /**< Queued tasks the worker could run. */
    uint64_t queued;        /**< Queued tasks before the poll. */
    double max_wait;        /**< Longest wait in the queue before the poll, seconds. */
} gpusched_fairq_decision;

/** Initializer for #gpusched_fairq_decision. */
#define GPUSCHED_FAIRQ_DECISION_INIT { sizeof(gpusched_fairq_decision), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/** Queue parameters for gpusched_fairq_param_set(); values are doubles. */
typedef enum gpusched_fairq_param {
    GPUSCHED_FAIRQ_PARAM_W_BACKLOG = 1,   /**< Weight of the backlog term, [0, 1e6]. Default 0.1. */
    GPUSCHED_FAIRQ_PARAM_W_WAIT = 2,      /**< Weight of the wait term, [0, 1e6]. Default 0.9. */
    GPUSCHED_FAIRQ_PARAM_W_VTIME = 3,     /**< Weight of the fair-share (virtual time) term, [0, 1e6]. Default 0. */
    GPUSCHED_FAIRQ_PARAM_W_PRED = 4,      /**< Weight of the predicted-duration term, [0, 1e6]. Default 0. */
    GPUSCHED_FAIRQ_PARAM_HALF_LIFE = 5,   /**< Half-life of virtual time in seconds, [0, 1e12]; 0: no decay. */
    GPUSCHED_FAIRQ_PARAM_PRED_ALPHA = 6,  /**< Smoothing factor of the predictor, [1e-6, 1]. Default 0.05. */
    GPUSCHED_FAIRQ_PARAM_PRED_DEFAULT = 7, /**< Prediction in seconds with no history at all, [1e-9, 1e12]. Default 1. */
    GPUSCHED_FAIRQ_PARAM_SCAN = 8,        /**< 0: fast path when the policy allows; 1: always rescore every task. */
    GPUSCHED_FAIRQ_PARAM_LOG = 9,         /**< 1: append a decision record per poll; 0: do not. */
    GPUSCHED_FAIRQ_PARAM_EXPLORE = 10,    /**< Softmax temperature for exploration, [0, 1e6]; 0: greedy. */
    GPUSCHED_FAIRQ_PARAM_SEED = 11,       /**< Seed of the exploration generator, an integer in [0, 2^53]. */
    /** Lag cap in typical task costs, [0, 1e6]; 0 (default): off. With it
     *  (and W_VTIME > 0) the fair-share term compares each tenant's service
     *  with its share of all service given: weighted max-min over the
     *  cumulative demands (the predicted cost of each tenant's enqueued
     *  tasks, corrected at completion). It is 1 for a tenant owed more
     *  than its allowance, 0 for one served more than its allowance beyond
     *  its share, 1/2 otherwise; the allowance is LAG_CAP typical costs
     *  times the tenant's weight over the mean weight of the tenants that
     *  asked for work. A typical cost is the prediction from every
     *  completion at their mean size (PRED_DEFAULT before the first). Idle
     *  time is not forgotten (no virtual-clock clamp); HALF_LIFE forgets
     *  old service and demand alike. With W_VTIME / 2 > W_WAIT + W_BACKLOG
     *  + W_PRED the tiers never mix and the oldest task of the best tier
     *  wins (doc/fairq.md states the resulting bound). Polls cost
     *  O(tenants) more while it is on. */
    GPUSCHED_FAIRQ_PARAM_LAG_CAP = 12,
} gpusched_fairq_param;

/** Weight presets for gpusched_fairq_policy_set(). */
typedef enum gpusched_fairq_policy {
    /** The memoryless model policy: W_BACKLOG 0.1, W_WAIT 0.9, others 0 (LAG_CAP too). */
    GPUSCHED_FAIRQ_POLICY_DES = 1,
    /** Stateful fair share: W_VTIME 1, W_WAIT 0.05, others 0 (LAG_CAP too). */
    GPUSCHED_FAIRQ_POLICY_STATEFUL = 2,
    /** Fair without the slow tail: oldest task first among the tenants
     *  within the lag cap: W_VTIME 2, W_WAIT 0.9, LAG_CAP 16, others 0. */
    GPUSCHED_FAIRQ_POLICY_LAGCAP = 3,
} gpusched_fairq_policy;

/** Per-tenant values for gpusched_fairq_tenant_get(). */
typedef enum gpusched_fairq_tenant_value {
    GPUSCHED_FAIRQ_TENANT_WEIGHT = 1,   /**< Share weight (default 1). */
    GPUSCHED_FAIRQ_TENANT_BACKLOG = 2,  /**< Queued tasks. */
    GPUSCHED_FAIRQ_TENANT_RUNNING = 3,  /**< Polled and not yet completed tasks. */
    GPUSCHED_FAIRQ_TENANT_VTIME = 4,    /**< Virtual time: cost received divided by weight (decayed). */
    GPUSCHED_FAIRQ_TENANT_SERVICE = 5,  /**< Cost received in seconds: predicted at dispatch, actual once complete. */
} gpusched_fairq_tenant_value;

/**
 * Creates an empty queue with the memoryless (DES) policy.
 * @param max_tenants Number of tenants, 1 .. #GPUSCHED_MAX_TENANTS.
 * @param alloc Allocator for every allocation of the queue; NULL: libc.
 * @param[out] out The new queue.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `out` is NULL or the allocator is invalid.
 * @retval GPUSCHED_ERANGE `max_tenants` is out of range.
 * @retval GPUSCHED_ENOTSUP `GPUSCHED_SIMD` forces a path this CPU cannot run.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_fairq_new(uint32_t max_tenants, const gpusched_allocator *alloc,
                                    gpusched_fairq **out);

/**
 * Releases a queue and everything it owns.
 * @param q The queue; NULL is allowed.
 */
GPUSCHED_API void gpusched_fairq_free(gpusched_fairq *q);

/**
 * Returns the message of the last failed call on the queue.
 * @param q The queue; NULL gives "".
 * @return A string owned by the queue, "" when the last call succeeded.
 */
GPUSCHED_API const char *gpusched_fairq_errmsg(const gpusched_fairq *q);

/**
 * Sets a parameter.
 * @param q The queue.
 * @param param A #gpusched_fairq_param.
 * @param value The new value, within gpusched_fairq_param_bounds().
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` is NULL or `param` is unknown.
 * @retval GPUSCHED_ERANGE `value` is out of bounds or not a number.
 */
GPUSCHED_API int gpusched_fairq_param_set(gpusched_fairq *q, uint32_t param, double value);

/**
 * Reads a parameter.
 * @param q The queue.
 * @param param A #gpusched_fairq_param.
 * @param[out] value Its current value.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL An argument is NULL or `param` is unknown.
 */
GPUSCHED_API int gpusched_fairq_param_get(gpusched_fairq *q, uint32_t param, double *value);

/**
 * Reports the accepted range of a parameter.
 * @param param A #gpusched_fairq_param.
 * @param[out] lo Smallest accepted value.
 * @param[out] hi Largest accepted value.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `param` is unknown or an output is NULL.
 */
GPUSCHED_API int gpusched_fairq_param_bounds(uint32_t param, double *lo, double *hi);

/**
 * Sets all four weights to a preset (#gpusched_fairq_policy).
 * @param q The queue.
 * @param policy The preset.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` is NULL or `policy` is unknown.
 */
GPUSCHED_API int gpusched_fairq_policy_set(gpusched_fairq *q, uint32_t policy);

/**
 * Sets a tenant's share weight: its virtual time grows by cost / weight.
 * @param q The queue.
 * @param tenant Tenant index.
 * @param weight In [1e-6, 1e6].
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` is NULL.
 * @retval GPUSCHED_ERANGE `tenant` or `weight` is out of range.
 */
GPUSCHED_API int gpusched_fairq_tenant_weight_set(gpusched_fairq *q, uint32_t tenant, double weight);

/**
 * Reads a per-tenant value.
 * @param q The queue.
 * @param tenant Tenant index.
 * @param what A #gpusched_fairq_tenant_value.
 * @param[out] value The value.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL An argument is NULL or `what` is unknown.
 * @retval GPUSCHED_ERANGE `tenant` is out of range.
 */
GPUSCHED_API int gpusched_fairq_tenant_get(gpusched_fairq *q, uint32_t tenant, uint32_t what,
                                           double *value);

/**
 * Enqueues one task. Its duration is predicted now (unless given) and
 * stored, so polls pay nothing for prediction.
 * @param q The queue.
 * @param task The task, filled from #GPUSCHED_FAIRQ_TASK_INIT.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL A NULL argument or a bad `size` field.
 * @retval GPUSCHED_E2BIG Unknown non-zero trailing bytes in `task`.
 * @retval GPUSCHED_ERANGE Tenant, type, time, size or prediction out of range.
 * @retval GPUSCHED_EEXIST The id is already queued or running.
 * @retval GPUSCHED_ELIMIT The queue holds 2^31 slots.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_fairq_enqueue(gpusched_fairq *q, const gpusched_fairq_task *task);

/**
 * Enqueues `n` tasks from columns, all or none (for callers that cross a
 * language boundary once per batch). Enqueue times must not decrease.
 * @param q The queue.
 * @param n Number of tasks.
 * @param ids Task ids (`n` values).
 * @param tenants Tenant indices.
 * @param types Task types; NULL: all 0.
 * @param enqueue_times Enqueue times in seconds.
 * @param work_sizes Work sizes; NULL: all 0 (unknown).
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL A required array is NULL.
 * @retval GPUSCHED_ERANGE A value is out of range; the message names its index.
 * @retval GPUSCHED_EEXIST An id is queued, running or repeated in the batch.
 * @retval GPUSCHED_ELIMIT The queue would exceed 2^31 slots.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_fairq_enqueue_batch(gpusched_fairq *q, uint32_t n, const uint64_t *ids,
                                             const uint32_t *tenants, const uint8_t *types,
                                             const double *enqueue_times, const double *work_sizes);

/**
 * Removes a queued task without running it.
 * @param q The queue.
 * @param id Its id.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` is NULL.
 * @retval GPUSCHED_ENOENT No queued task has this id.
 */
GPUSCHED_API int gpusched_fairq_cancel(gpusched_fairq *q, uint64_t id);

/**
 * Chooses the best task a worker can run, removes it from the queue,
 * charges its tenant the predicted cost and records it as running.
 * @param q The queue.
 * @param now Current time, seconds, not earlier than any enqueue or poll.
 * @param type_mask Bit `1 << type` for each type the worker runs.
 * @param[out] id The chosen task's id.
 * @param[out] detail What was chosen and its score terms; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` or `id` is NULL, or `detail->size` is too small.
 * @retval GPUSCHED_ERANGE `now` is earlier than allowed or not finite.
 * @retval GPUSCHED_EEMPTY No queued task matches the mask.
 * @retval GPUSCHED_ENOMEM Out of memory (running table or decision log).
 */
GPUSCHED_API int gpusched_fairq_poll(gpusched_fairq *q, double now, uint64_t type_mask, uint64_t *id,
                                     gpusched_fairq_decision *detail);

/**
 * Like gpusched_fairq_poll() but changes nothing: reports the task a poll
 * would choose (exploration is not applied, probability is 1). Not const:
 * the queue keeps per-poll scratch and its last error.
 * @param q The queue.
 * @param now Current time, seconds.
 * @param type_mask Types the worker runs.
 * @param[out] id The task's id.
 * @param[out] detail Score terms; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` or `id` is NULL, or `detail->size` is too small.
 * @retval GPUSCHED_ERANGE `now` is earlier than allowed or not finite.
 * @retval GPUSCHED_EEMPTY No queued task matches the mask.
 */
GPUSCHED_API int gpusched_fairq_peek(gpusched_fairq *q, double now, uint64_t type_mask,
                                     uint64_t *id, gpusched_fairq_decision *detail);

/**
 * Polls for `k` workers in order, as `k` calls of gpusched_fairq_poll().
 * A worker for which no task matches gets `got[i] = 0`.
 * @param q The queue.
 * @param now Current time, seconds.
 * @param k Number of workers.
 * @param type_masks One mask per worker.
 * @param[out] ids One id per worker (unchanged where `got[i]` is 0).
 * @param[out] got 1 where worker i received a task, else 0.
 * @param[out] n_got Number of tasks handed out; may be NULL.
 * @retval 0 Success (possibly with no task handed out).
 * @retval GPUSCHED_EINVAL A required pointer is NULL.
 * @retval GPUSCHED_ERANGE `now` is earlier than allowed.
 * @retval GPUSCHED_ENOMEM Out of memory; nothing was handed out.
 */
GPUSCHED_API int gpusched_fairq_poll_batch(gpusched_fairq *q, double now, uint32_t k,
                                           const uint64_t *type_masks, uint64_t *ids, uint8_t *got,
                                           uint32_t *n_got);

/**
 * Reports that a polled task finished: corrects its tenant's virtual time
 * and service from the predicted to the actual cost and trains the
 * duration predictor.
 * @param q The queue.
 * @param id The task's id.
 * @param actual_duration Seconds, in [0, 1e12].
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` is NULL.
 * @retval GPUSCHED_ERANGE `actual_duration` is out of range.
 * @retval GPUSCHED_ENOENT No running task has this id.
 */
GPUSCHED_API int gpusched_fairq_complete(gpusched_fairq *q, uint64_t id, double actual_duration);

/**
 * Predicts the duration of a task that is not enqueued (the value enqueue
 * would store).
 * @param q The queue.
 * @param tenant Tenant index.
 * @param type Task type.
 * @param work_size Size of the work, >= 0 (0: unknown).
 * @param[out] seconds The prediction, > 0.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL A NULL argument.
 * @retval GPUSCHED_ERANGE Tenant, type or size out of range.
 */
GPUSCHED_API int gpusched_fairq_predict(gpusched_fairq *q, uint32_t tenant, uint32_t type,
                                        double work_size, double *seconds);

/**
 * Counts tasks.
 * @param q The queue.
 * @param[out] queued Queued tasks; may be NULL.
 * @param[out] running Polled, not yet completed tasks; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` is NULL.
 */
GPUSCHED_API int gpusched_fairq_count(gpusched_fairq *q, uint64_t *queued, uint64_t *running);

/**
 * Reports the SIMD path (#gpusched_simd) the queue's full rescore uses.
 * @param q The queue.
 * @param[out] simd The path.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL An argument is NULL.
 */
GPUSCHED_API int gpusched_fairq_simd(gpusched_fairq *q, uint32_t *simd);

/** @name Decision log
 * With #GPUSCHED_FAIRQ_PARAM_LOG set, each poll appends a
 * #gpusched_fairq_decision to the queue's log; the log can be saved to a
 * versioned, checksummed file (format in doc/fairq.md) and read back.
 * @{ */

/** Opaque decision log read from a file. */
typedef struct gpusched_fairq_log gpusched_fairq_log;

/**
 * Gives read access to the decisions recorded so far.
 * @param q The queue.
 * @param[out] records Pointer to the first record (valid until the next
 *             modifying call); NULL when there is none.
 * @param[out] count Number of records.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL An argument is NULL.
 */
GPUSCHED_API int gpusched_fairq_log_records(gpusched_fairq *q,
                                            const gpusched_fairq_decision **records, uint64_t *count);

/**
 * Forgets the decisions recorded so far.
 * @param q The queue.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `q` is NULL.
 */
GPUSCHED_API int gpusched_fairq_log_clear(gpusched_fairq *q);

/**
 * Writes the recorded decisions to a file (replaced if it exists).
 * @param q The queue.
 * @param path File name.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL A NULL argument.
 * @retval GPUSCHED_EIO The file cannot be written (the message says why).
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_fairq_log_save(gpusched_fairq *q, const char *path);

/**
 * Reads a decision log file.
 * @param path File name.
 * @param alloc Allocator; NULL: libc.
 * @param[out] out The log, or NULL on error (nothing is created).
 * @param[out] errbuf Buffer for an error message; may be NULL.
 * @param errbuf_len Its size.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL A NULL argument or an invalid allocator.
 * @retval GPUSCHED_EIO The file cannot be read.
 * @retval GPUSCHED_ECORRUPT Bad magic, truncated, or checksum mismatch.
 * @retval GPUSCHED_EVERSION Unsupported format version.
 * @retval GPUSCHED_ENOMEM Out of memory.
 */
GPUSCHED_API int gpusched_fairq_log_read(const char *path, const gpusched_allocator *alloc,
                                         gpusched_fairq_log **out, char *errbuf, size_t errbuf_len);

/**
 * Gives access to the records of a log read from a file.
 * @param log The log.
 * @param[out] records Pointer to the first record, valid until the log is freed.
 * @param[out] count Number of records.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL An argument is NULL.
 */
GPUSCHED_API int gpusched_fairq_log_view(const gpusched_fairq_log *log,
                                         const gpusched_fairq_decision **records, uint64_t *count);

/**
 * Releases a log read from a file.
 * @param log The log; NULL is allowed.
 */
GPUSCHED_API void gpusched_fairq_log_free(gpusched_fairq_log *log);
/** @} */

#ifdef __cplusplus
}
#endif

/** @} */
#endif
