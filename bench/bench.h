/* The benchmark harness shared by every scenario file (bench/bench-*.c).
 * Contract: ../doc/bench.md. */
#ifndef GSB_BENCH_H
#define GSB_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpusched/place.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gsb_ctx gsb_ctx;

/* A scenario emits one or more records whose names start with its name. */
typedef struct gsb_scenario {
    const char *name;
    void (*run)(gsb_ctx *b);
} gsb_scenario;

/* Records one figure. `params_json` is a JSON object body without braces,
 * for example "\"gpus\": 1032192", or NULL. */
void gsb_report(gsb_ctx *b, const char *name, double value, const char *unit,
                const char *params_json);
/* Reduced sizes for CI. */
bool gsb_quick(const gsb_ctx *b);
/* Monotonic time in nanoseconds (the bench may read clocks; the library
 * never does). */
double gsb_now_ns(void);

/* The job size mix of the placement and preemption scenarios (mix.c): a
 * size from a random number, and a committing request of that size shaped
 * as those scenarios shape it (small jobs in one rack, in pods of 4 from 4
 * GPUs on; 72 and more as whole racks, preferring one block). The request
 * points to *job, filled as job `id` (every other field 0): *job must
 * outlive every use of q. */
uint32_t gsb_mix_size(uint64_t random);
void gsb_mix_request(gpusched_place_request *q, gpusched_job *job, uint64_t id, uint32_t gpus);
/* Median of `n` values (sorts `v` in place). */
double gsb_median(double *v, size_t n);
/* Number of timed repetitions to take a median over. */
int gsb_reps(const gsb_ctx *b);
/* Path of the shared data folder (../shared/data from the source root),
 * or NULL if it cannot be found. */
const char *gsb_data_dir(const gsb_ctx *b);
/* The machine's single-core read bandwidth in bytes/s, measured once per
 * run on first use (core.membw.read reports it). */
double gsb_membw_bytes_per_s(gsb_ctx *b);

/* Keeps the optimizer from deleting a computation. */
static inline void gsb_consume(uint64_t v)
{
    __asm__ volatile("" : : "r"(v) : "memory");
}

/* place.sweep (bench-sweep.c): every gang shape against its budget.
 * GSB_SWEEP_SHAPE=name runs one cluster shape only; GSB_SWEEP_CASE=substr
 * times only the cases whose name contains substr. */
void gsb_place_sweep(gsb_ctx *b);

/* Harness entry points (bench/harness.c). */
gsb_ctx *gsb_ctx_new(bool quick, bool json, const char *filter);
void gsb_ctx_free(gsb_ctx *b);
bool gsb_selected(const gsb_ctx *b, const char *scenario);
void gsb_print_json(const gsb_ctx *b);
size_t gsb_record_count(const gsb_ctx *b);
void gsb_record_get(const gsb_ctx *b, size_t i, const char **name, double *value, const char **unit);
/* NULL-terminated list of the module tables. */
extern const gsb_scenario *const gsb_tables[];

/* Scenario tables, one per module (bench/bench-<module>.c). */
extern const gsb_scenario gsb_core_scenarios[];
extern const gsb_scenario gsb_place_scenarios[];
extern const gsb_scenario gsb_topo_scenarios[];
extern const gsb_scenario gsb_cluster_scenarios[];
extern const gsb_scenario gsb_fairq_scenarios[];
extern const gsb_scenario gsb_preempt_scenarios[];
extern const gsb_scenario gsb_sched_scenarios[];
extern const gsb_scenario gsb_pods_scenarios[];

#ifdef __cplusplus
}
#endif

#endif
