/* The exhaustive reference for gang placement, for tests on tiny
 * clusters: every assignment of units to nodes is tried, so feasibility and
 * the optimal locality vector are known for certain. Uses only the public
 * API and plain arrays, independent of the engine's reasoning. */
#ifndef GS_TEST_PLACE_REF_H
#define GS_TEST_PLACE_REF_H

#include <stdbool.h>
#include <stddef.h>

#include <gpusched/gpusched.h>

typedef struct place_ref_out {
    bool feasible;
    uint32_t nlevels;
    /* Domains used per level, then nodes; levels below the preferred one
     * are left at 0 (they are not optimized). */
    uint32_t locality[GPUSCHED_MAX_LEVELS + 1];
    uint64_t assignments;   /* feasible assignments seen */
    /* Best fit among the optimal assignments: for the levels from the top
     * (down to the preferred one) where one domain is used, that domain's
     * usable free GPUs (for the job, whatever the filters) in the high 32
     * bits and its index in the low ones; the smallest such list, compared
     * from the top. */
    uint32_t nfit;
    uint64_t fit[GPUSCHED_MAX_LEVELS + 1];
} place_ref_out;

/* Exhaustive optimum for `req` (assumed valid) on the current state. */
void place_ref_solve(gpusched_cluster *c, const gpusched_place_request *req, place_ref_out *out);

/* Checks that a placement honours every hard constraint of `req` on the
 * state before it was committed: GPUs usable by the job, eligible nodes,
 * split, slices, required level. Returns true or writes why not. */
bool place_ref_check(gpusched_cluster *c, const gpusched_place_request *req, const uint32_t *nodes,
                     const uint64_t *masks, uint32_t n, char *why, size_t cap);

/* The best-fit list (see place_ref_out) of a placement. */
void place_ref_fit(gpusched_cluster *c, const gpusched_place_request *req, const uint32_t *nodes, uint32_t n,
                   uint64_t *fit, uint32_t *nfit);

/* The locality vector of a placement, truncated like place_ref_solve. */
void place_ref_locality(gpusched_cluster *c, const gpusched_place_request *req, const uint32_t *nodes,
                        uint32_t n, uint32_t *locality);

#endif
