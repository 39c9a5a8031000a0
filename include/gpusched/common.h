/**
 * @file common.h
 * @brief Core: version, error codes, allocator hooks, CPU features and SIMD
 *        dispatch.
 *
 * @defgroup core Core
 * @brief What every other module of libgpusched stands on.
 *
 * Conventions that hold for the whole library:
 * - Functions return `int`: 0 on success or a negative `GPUSCHED_E*` code.
 *   A call that fails has changed nothing.
 * - Each handle with an `..._errmsg()` accessor (cluster, placer, fair
 *   queue, topology builder) keeps one message: every call on the handle
 *   that fails sets it (readers too: they take a non-const handle for
 *   that), and every call that succeeds empties it, so `..._errmsg()`
 *   always describes the last call (only a NULL handle leaves it alone).
 *   Constructors that have no handle yet take an optional
 *   `char *errbuf, size_t errbuf_len` pair instead. The topology, shared
 *   between threads, keeps no message: its readers return codes only.
 * - Extensible request structs start with `uint32_t size`; the library reads
 *   only the bytes that size covers and rejects unknown non-zero trailing
 *   bytes with #GPUSCHED_E2BIG.
 * - The library keeps no mutable global state, starts no threads and never
 *   reads a clock.
 * @{
 */
#ifndef GPUSCHED_COMMON_H
#define GPUSCHED_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <gpusched/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a function exported from libgpusched.so. */
#if defined(__GNUC__) || defined(__clang__)
#define GPUSCHED_API __attribute__((visibility("default")))
#else
#define GPUSCHED_API
#endif

/**
 * Error codes. Negative, explicitly numbered, never renumbered; the gaps
 * leave room for related codes to be appended to each group.
 */
typedef enum gpusched_status {
    GPUSCHED_OK = 0,            /**< Success. */
    /* Arguments: -1 .. -9 */
    GPUSCHED_EINVAL = -1,       /**< An argument is invalid (NULL, malformed). */
    GPUSCHED_ERANGE = -2,       /**< A numeric argument is out of its range. */
    GPUSCHED_E2BIG = -3,        /**< A struct has unknown non-zero trailing bytes. */
    GPUSCHED_ENOTSUP = -4,      /**< Not supported here (for example a forced SIMD path this CPU lacks). */
    /* Resources: -10 .. -19 */
    GPUSCHED_ENOMEM = -10,      /**< An allocation failed. */
    GPUSCHED_ELIMIT = -11,      /**< A documented library limit would be exceeded. */
    /* Objects and state: -20 .. -29 */
    GPUSCHED_ENOENT = -20,      /**< The named object (job, node, task, name) does not exist. */
    GPUSCHED_EEXIST = -21,      /**< The object already exists. */
    GPUSCHED_EBUSY = -22,       /**< The resource is in use (for example a GPU already allocated). */
    GPUSCHED_ESTATE = -23,      /**< The handle is in the wrong state for this call. */
    GPUSCHED_EEMPTY = -24,      /**< Nothing to return (for example no eligible task). */
    /* Decisions: -30 .. -39 */
    GPUSCHED_ENOSPC = -30,      /**< The request does not fit; the result explains why. */
    /* Data and formats: -40 .. -49 */
    GPUSCHED_EPARSE = -40,      /**< Text input does not parse; the message has line and column. */
    GPUSCHED_ECORRUPT = -41,    /**< Binary input is truncated, corrupt or inconsistent. */
    GPUSCHED_EVERSION = -42,    /**< Binary input has an unsupported format version. */
    GPUSCHED_EIO = -43,         /**< A read or write failed. */
} gpusched_status;

/**
 * Returns a static English description of an error code.
 * @param code A value returned by any gpusched function.
 * @return A non-NULL string; "unknown error" for codes not in #gpusched_status.
 */
GPUSCHED_API const char *gpusched_strerror(int code);

/**
 * Returns the symbolic name of an error code, for example "GPUSCHED_ENOSPC".
 * @param code A value returned by any gpusched function.
 * @return A non-NULL string; "GPUSCHED_UNKNOWN" for unknown codes.
 */
GPUSCHED_API const char *gpusched_err_name(int code);

/**
 * Returns the version of the library that is loaded, encoded with
 * GPUSCHED_VERSION_ENCODE(). Compare with #GPUSCHED_VERSION from the headers.
 */
GPUSCHED_API uint32_t gpusched_version(void);

/** Returns the version of the loaded library as "MAJOR.MINOR.MICRO". */
GPUSCHED_API const char *gpusched_version_string(void);

/**
 * Caller-supplied memory functions. Every allocation the library makes goes
 * through the allocator given to the handle's constructor (NULL: libc).
 *
 * Fill with GPUSCHED_ALLOCATOR_INIT, then set all three functions. The
 * functions are called from the thread that uses the handle; `user` is passed
 * back unchanged. They must behave like malloc, realloc and free: `free_fn`
 * accepts NULL, `realloc_fn(user, NULL, n)` allocates.
 */
typedef struct gpusched_allocator {
    uint32_t size;  /**< sizeof(gpusched_allocator), set by GPUSCHED_ALLOCATOR_INIT. */
    uint32_t reserved0; /**< Must be zero. */
    void *(*malloc_fn)(void *user, size_t size);              /**< Allocates. */
    void *(*realloc_fn)(void *user, void *ptr, size_t size);  /**< Resizes. */
    void (*free_fn)(void *user, void *ptr);                   /**< Releases. */
    void *user;     /**< Passed to each function. */
} gpusched_allocator;

/** Initializer for #gpusched_allocator: sets size, zeroes the rest. */
#define GPUSCHED_ALLOCATOR_INIT { sizeof(gpusched_allocator), 0, 0, 0, 0, 0 }

/**
 * Checks an allocator before it is handed to a constructor.
 * @param alloc The allocator; NULL (meaning libc) is valid.
 * @retval 0 It is usable.
 * @retval GPUSCHED_EINVAL A function is missing or `size` is too small.
 * @retval GPUSCHED_E2BIG Unknown non-zero bytes beyond the known fields.
 */
GPUSCHED_API int gpusched_allocator_check(const gpusched_allocator *alloc);

/** CPU feature bits reported by gpusched_cpu_features(). */
enum gpusched_cpu_feature {
    GPUSCHED_CPU_SSE2 = 1u << 0,   /**< x86-64 baseline. */
    GPUSCHED_CPU_AVX2 = 1u << 1,   /**< AVX2 and FMA, with OS support for YMM state. */
    GPUSCHED_CPU_AVX512 = 1u << 2, /**< AVX-512 F, BW, DQ and VL, with OS support for ZMM state. */
    GPUSCHED_CPU_NEON = 1u << 3,   /**< AArch64 Advanced SIMD. */
};

/**
 * SIMD code paths. A module picks one when a handle is created: the best
 * path this CPU runs and this build contains, unless the environment variable
 * `GPUSCHED_SIMD` (scalar, sse2, avx2, avx512 or neon) forces one. A module
 * without the forced path uses its best path below it.
 */
typedef enum gpusched_simd {
    GPUSCHED_SIMD_SCALAR = 0,  /**< Portable C reference. */
    GPUSCHED_SIMD_SSE2 = 1,    /**< Reserved: no module has an SSE2 kernel, so no build
                                    contains this path and forcing it runs scalar. */
    GPUSCHED_SIMD_AVX2 = 2,    /**< x86-64 AVX2. */
    GPUSCHED_SIMD_AVX512 = 3,  /**< x86-64 AVX-512. */
    GPUSCHED_SIMD_NEON = 4,    /**< AArch64 NEON. */
} gpusched_simd;

/**
 * The enumerations whose range gpusched_enum_bounds() reports. Enums grow
 * by appending values, so the range is asked of the library that is loaded
 * instead of compiled in as a count.
 */
typedef enum gpusched_enum {
    GPUSCHED_ENUM_SIMD = 1,         /**< #gpusched_simd */
    GPUSCHED_ENUM_NODE_HEALTH = 2,  /**< gpusched_node_health (cluster.h) */
    GPUSCHED_ENUM_GPU_STATE = 3,    /**< gpusched_gpu_state (cluster.h) */
    GPUSCHED_ENUM_SPLIT = 4,        /**< gpusched_place_split (place.h) */
    GPUSCHED_ENUM_REASON = 5,       /**< gpusched_place_reason (place.h) */
    GPUSCHED_ENUM_FAIRQ_PARAM = 6,  /**< gpusched_fairq_param (fairq.h) */
    GPUSCHED_ENUM_FAIRQ_POLICY = 7, /**< gpusched_fairq_policy (fairq.h) */
    GPUSCHED_ENUM_FAIRQ_TENANT = 8, /**< gpusched_fairq_tenant_value (fairq.h) */
    GPUSCHED_ENUM_PREEMPT_POLICY = 9, /**< gpusched_preempt_policy (preempt.h) */
} gpusched_enum;

/**
 * The smallest and largest value of an enumeration in this library; every
 * value in between is valid.
 * @param which A #gpusched_enum.
 * @param[out] first Smallest value; may be NULL.
 * @param[out] last Largest value; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `which` is not a #gpusched_enum.
 */
GPUSCHED_API int gpusched_enum_bounds(uint32_t which, uint32_t *first, uint32_t *last);

/**
 * Reports the CPU's features and the SIMD path the library would choose now.
 *
 * @param[out] detected Bit mask of #gpusched_cpu_feature; may be NULL.
 * @param[out] chosen   The #gpusched_simd value chosen for a module that has
 *                      every path this build contains; may be NULL.
 * @retval 0 Success.
 * @retval GPUSCHED_EINVAL `GPUSCHED_SIMD` names no known path.
 * @retval GPUSCHED_ENOTSUP `GPUSCHED_SIMD` forces a path that this CPU cannot
 *         run or this build does not contain.
 */
GPUSCHED_API int gpusched_cpu_features(uint32_t *detected, uint32_t *chosen);

/**
 * Bit mask of the SIMD paths compiled into this build: bit `1u << p` for each
 * #gpusched_simd value `p`. The scalar path is always present.
 */
GPUSCHED_API uint32_t gpusched_simd_compiled(void);

/**
 * Returns the lowercase name of a SIMD path ("scalar", "avx2", ...), or
 * "unknown".
 */
GPUSCHED_API const char *gpusched_simd_name(uint32_t simd);

#ifdef __cplusplus
}
#endif

/** @} */
#endif
