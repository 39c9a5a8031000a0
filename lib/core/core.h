/* Internal core API shared by every module. Never installed. */
#ifndef GS_CORE_H
#define GS_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/common.h"

#if defined(__GNUC__) || defined(__clang__)
#define GS_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define GS_LIKELY(x) __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GS_PRINTF(fmt, args)
#define GS_LIKELY(x) (x)
#define GS_UNLIKELY(x) (x)
#endif

#define GS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- allocation ------------------------------------------------------ */

/* A resolved allocator: copied into every handle so that the caller's
 * struct need not outlive the constructor call. */
typedef struct gs_alloc {
    void *(*malloc_fn)(void *user, size_t size);
    void *(*realloc_fn)(void *user, void *ptr, size_t size);
    void (*free_fn)(void *user, void *ptr);
    void *user;
} gs_alloc;

/* Validates `src` (NULL means libc) and resolves it into `dst`. */
int gs_alloc_init(gs_alloc *dst, const gpusched_allocator *src);
void *gs_malloc(const gs_alloc *a, size_t size);
/* Zeroed array of `count` elements; NULL on overflow or failure. */
void *gs_calloc(const gs_alloc *a, size_t count, size_t elem);
/* Resizes an array; on failure returns NULL and leaves `ptr` valid. */
void *gs_realloc_array(const gs_alloc *a, void *ptr, size_t count, size_t elem);
void gs_free(const gs_alloc *a, void *ptr);
/* Grows *arr (of *cap elements of `elem` bytes) to hold at least `need`,
 * doubling from 64; on failure *arr and *cap are unchanged.
 * GPUSCHED_ENOMEM or 0. */
int gs_grow(const gs_alloc *a, void **arr, uint32_t *cap, uint32_t need, size_t elem);
/* The first step of every handle constructor: resolves the caller's
 * allocator into `a` and allocates a zeroed object of `size` bytes with it.
 * Returns the allocator's error, GPUSCHED_ENOMEM, or 0. */
int gs_object_new(const gpusched_allocator *alloc, size_t size, gs_alloc *a, void **obj);
/* Duplicates a NUL-terminated string. */
char *gs_strdup(const gs_alloc *a, const char *s);

/* ---- errors ---------------------------------------------------------- */

#define GS_ERRMSG_MAX 256

/* Last error of a handle: every handle embeds one and exposes `msg`. */
typedef struct gs_err {
    int code;
    char msg[GS_ERRMSG_MAX];
} gs_err;

/* Records `code` and a formatted message in `e` (if non-NULL) and returns
 * `code`, so that callers write `return gs_error(&h->err, GPUSCHED_EINVAL, ...)`. */
int gs_error(gs_err *e, int code, const char *fmt, ...) GS_PRINTF(3, 4);
int gs_verror(gs_err *e, int code, const char *fmt, va_list ap) GS_PRINTF(3, 0);
/* Clears the last error. */
void gs_err_clear(gs_err *e);

/* The rule every handle keeps (common.h): a call that fails on a handle
 * sets its message; a call that succeeds leaves it empty. Public calls end
 * with `return gs_ok(&h->err);` on success and `return gs_error(...)` on
 * failure. */
static inline int gs_ok(gs_err *e)
{
    gs_err_clear(e);
    return 0;
}
/* Copies the message of `e` to a caller buffer (may be NULL / 0). */
void gs_err_export(const gs_err *e, char *buf, size_t len);

/* ---- extensible structs ---------------------------------------------- */

/* Copies a caller's size-prefixed struct into `dst` (known size
 * `known`): reads min(caller size, known) bytes, zero-fills the rest, and
 * rejects a caller size below `min_size` (EINVAL) or non-zero bytes past
 * `known` (E2BIG). The caller's size is its first uint32_t. */
int gs_struct_copy_in(void *dst, size_t known, const void *src, size_t min_size,
                      gs_err *e, const char *what);

/* ---- CPU features and dispatch --------------------------------------- */

/* Detected features (GPUSCHED_CPU_* bits); pure, cheap enough to call at
 * handle creation. */
uint32_t gs_cpu_detect(void);
/* Paths compiled into this build (bit 1u << GPUSCHED_SIMD_*). */
uint32_t gs_simd_compiled(void);
/* Paths this CPU can run (bit 1u << GPUSCHED_SIMD_*). */
uint32_t gs_simd_runnable(uint32_t cpu_features);
/* Picks a path for a module that implements the paths in `module_mask`:
 * the env override GPUSCHED_SIMD if set, else the best path in
 * module_mask & compiled & runnable. Scalar is always a candidate. */
int gs_simd_choose(uint32_t module_mask, uint32_t *out, gs_err *e);

/* Values of the public enumerations without a count in the headers
 * (gpusched_enum_bounds() gives callers the same). */
#define GS_SIMD_PATHS (GPUSCHED_SIMD_NEON + 1)
#define GS_NODE_HEALTHS 4u

/* ---- small helpers --------------------------------------------------- */

/* Without a popcnt target the builtin becomes a libgcc call that costs
 * more than this bit trick; with one (-mpopcnt, -march=...) use it. */
static inline uint32_t gs_popcount64(uint64_t x)
{
#if defined(__POPCNT__) || !(defined(__x86_64__) || defined(__i386__))
    return (uint32_t)__builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (uint32_t)((x * 0x0101010101010101ull) >> 56);
#endif
}
static inline uint32_t gs_ctz64(uint64_t x) { return (uint32_t)__builtin_ctzll(x); }

/* Division of 32-bit numerators by a divisor fixed over a loop: a 64-bit
 * divide costs tens of cycles, a multiply by the rounded-up reciprocal
 * (Lemire, Kaser and Kurz, "Faster remainder by direct computation")
 * one, exact for every 32-bit numerator; plain division where there is
 * no 128-bit product. */
typedef struct gs_divisor {
    uint64_t m;                 /* 2^64 / d rounded up; 0 for d = 1 */
    uint32_t d;
} gs_divisor;

static inline gs_divisor gs_divisor_of(uint32_t d)
{
    return (gs_divisor){d > 1 ? UINT64_MAX / d + 1 : 0, d};
}

static inline uint32_t gs_divide(gs_divisor v, uint32_t n)
{
#ifdef __SIZEOF_INT128__
    __extension__ typedef unsigned __int128 gs_u128;
    return v.d > 1 ? (uint32_t)(((gs_u128)v.m * n) >> 64) : n;
#else
    return n / v.d;
#endif
}

/* XXH64 with seed 0 of `len` bytes: the checksum of every binary format
 * the library writes (snapshots, topology images, journal records,
 * decision logs). */
uint64_t gs_checksum64(const void *data, size_t len);

/* FNV-1a 64-bit, used for name hashing (not for checksums). */
uint64_t gs_hash_bytes(const void *data, size_t len, uint64_t seed);

#endif
