/* Kernels of the fragmentation policy's cached scan (frag.c), one per SIMD
 * path (doc/simd.md). They read a shape's per-node records as arrays:
 *   seen[n]    the node's change stamp the record is of (cluster-internal.h);
 *   growth[n]  F after minus F before, GS_FS_NO_FIT if the node cannot hold
 *              the pod;
 *   pack[n]    the packing key, lower packs better: the GPU milli left
 *              << 32 | the resources left (fixed point, frag.c).
 * Every path returns exactly what the scalar reference returns (integers
 * only: no rounding can differ). Self-contained, so that the AArch64 cross
 * test builds it alone (tests/cross). */
#ifndef GS_PLACE_FSCAN_H
#define GS_PLACE_FSCAN_H

#include <stdint.h>

#define GS_FS_NO_FIT INT64_MAX
#define GS_FS_NONE UINT32_MAX

/* Nodes of [first, end) whose record is stale (seen[n] != stamp[n]),
 * ascending, into out (room for end - first); their count. */
typedef uint32_t (*gs_fs_stale_fn)(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end,
                                   uint32_t *out);
/* The least growth[n] over [first, end); GS_FS_NO_FIT if the range is empty
 * or no node fits. */
typedef int64_t (*gs_fs_least_fn)(const int64_t *growth, uint32_t first, uint32_t end);
/* The node of [first, end) with the least pack[n] among those with
 * growth[n] <= top (top < GS_FS_NO_FIT), the lowest index on ties;
 * GS_FS_NONE if there is none. */
typedef uint32_t (*gs_fs_best_fn)(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end,
                                  int64_t top);

typedef struct gs_fs_ops {
    gs_fs_stale_fn stale;
    gs_fs_least_fn least;
    gs_fs_best_fn best;
} gs_fs_ops;

uint32_t gs_fs_stale_scalar(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end, uint32_t *out);
int64_t gs_fs_least_scalar(const int64_t *growth, uint32_t first, uint32_t end);
uint32_t gs_fs_best_scalar(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end, int64_t top);

uint32_t gs_fs_stale_avx2(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end, uint32_t *out);
int64_t gs_fs_least_avx2(const int64_t *growth, uint32_t first, uint32_t end);
uint32_t gs_fs_best_avx2(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end, int64_t top);

uint32_t gs_fs_stale_avx512(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end,
                            uint32_t *out);
int64_t gs_fs_least_avx512(const int64_t *growth, uint32_t first, uint32_t end);
uint32_t gs_fs_best_avx512(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end, int64_t top);

uint32_t gs_fs_stale_neon(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end, uint32_t *out);
int64_t gs_fs_least_neon(const int64_t *growth, uint32_t first, uint32_t end);
uint32_t gs_fs_best_neon(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end, int64_t top);

#endif
