/* The scan kernels' portable reference (fscan.h). */
#include "fscan.h"

uint32_t gs_fs_stale_scalar(const uint32_t *seen, const uint32_t *stamp, uint32_t first, uint32_t end, uint32_t *out)
{
    uint32_t k = 0;
    for (uint32_t n = first; n < end; n++)
        if (seen[n] != stamp[n])
            out[k++] = n;
    return k;
}

int64_t gs_fs_least_scalar(const int64_t *growth, uint32_t first, uint32_t end)
{
    int64_t m = GS_FS_NO_FIT;
    for (uint32_t n = first; n < end; n++)
        m = growth[n] < m ? growth[n] : m;
    return m;
}

uint32_t gs_fs_best_scalar(const int64_t *growth, const uint64_t *pack, uint32_t first, uint32_t end, int64_t top)
{
    uint32_t best = GS_FS_NONE;
    for (uint32_t n = first; n < end; n++)
        if (growth[n] <= top && (best == GS_FS_NONE || pack[n] < pack[best]))
            best = n;
    return best;
}
