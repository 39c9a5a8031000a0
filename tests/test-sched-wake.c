/* The wake (lib/sched/wake.c): the time a cycle with nothing new stops
 * being quiet, kept in order as gangs start, end, are evicted and
 * submitted, instead of computed by a pass over every gang. Each cycle
 * of these tests is followed by gpusched_sched_check(), which compares the
 * kept wake with that pass (st_cycle()); the random sequences change the
 * protection and the age limit up and down, so that dropped entries must
 * come back. */
#include <stdlib.h>

#include "sched-test.h"

/* A victim protected until start + min_runtime makes a quiet cycle before
 * that time, and a cycle at it is not quiet (it may evict the victim). */
Test(sched_wake, a_protection_end_wakes_the_cycle)
{
    st_env e = st_env_small();
    uint32_t a = st_queue(&e, "a", 0, 48), b = st_queue(&e, "b", 0, 48);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_MIN_RUNTIME, 50), 0);
    cr_assert_eq(st_submit_full(&e, 1, a, 96, 0, 0, 1000, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    st_cycle(&e, 10); /* starts at 10 on borrowed GPUs, protected until 60 */
    cr_assert(st_started(&e, 1));
    cr_assert_eq(st_submit_full(&e, 2, b, 8, 0, 10, 100, 0), 0); /* within its quota: reclaims */
    st_cycle(&e, 10);
    cr_assert_not(st_started(&e, 2));
    st_cycle(&e, 59);
    cr_assert(gpusched_sched_decisions_quiet(e.d), "before the protection ends, nothing is new");
    st_cycle(&e, 60);
    cr_assert_not(gpusched_sched_decisions_quiet(e.d), "at its end the victim may be evicted");
    cr_assert(st_started(&e, 2));
    st_env_free(&e);
}

/* A protection raised after the wake dropped a victim whose protection had
 * ended brings it back: its new end is after now again. */
Test(sched_wake, a_longer_protection_brings_a_victim_back)
{
    st_env e = st_env_small();
    uint32_t q = st_queue(&e, "team", 0, 96);
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_MIN_RUNTIME, 5), 0);
    cr_assert_eq(st_submit_full(&e, 1, q, 88, 0, 0, 1000, GPUSCHED_JOB_FLAG_PREEMPTIBLE), 0);
    st_cycle(&e, 0);
    cr_assert_eq(st_submit_full(&e, 2, q, 16, -5, 0, 100, 0), 0); /* lower priority: no eviction */
    st_cycle(&e, 20); /* protection ended at 5: dropped */
    cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_MIN_RUNTIME, 100), 0);
    st_cycle(&e, 30); /* the check: protected again until 100 */
    st_cycle(&e, 99);
    cr_assert(gpusched_sched_decisions_quiet(e.d));
    st_cycle(&e, 100);
    cr_assert_not(gpusched_sched_decisions_quiet(e.d));
    st_env_free(&e);
}

/* Random submits (any submit time up to now), ends, cancels, cycles and
 * parameter changes; every cycle checks the kept wake against the pass. */
Test(sched_wake, the_kept_wake_is_the_pass_over_every_gang)
{
    for (uint32_t seed = 1; seed <= 60; seed++) {
        srand(seed);
        st_env e = st_env_small();
        uint32_t q[3];
        q[0] = st_queue(&e, "a", 0, 40);
        q[1] = st_queue(&e, "b", 0, 40);
        q[2] = st_queue(&e, "c", 0, 16);
        cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_PREEMPT, 1), 0);
        cr_assert_eq(gpusched_sched_param_set(e.s, GPUSCHED_SCHED_PARAM_RESV_DEPTH, 1 + rand() % 3), 0);
        int64_t now = 0;
        uint64_t next_id = 1;
        uint64_t live[256];
        uint32_t nlive = 0;
        for (uint32_t step = 0; step < 300; step++) {
            const int op = rand() % 10;
            if (op < 4 && nlive < 256) {
                const uint32_t gpus = 1u << (rand() % 6);
                const uint32_t flags = rand() % 2 ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
                const int64_t submit = now - rand() % 200;
                if (st_submit_full(&e, next_id, q[rand() % 3], gpus, rand() % 3, submit, 1 + rand() % 300, flags) ==
                    0)
                    live[nlive++] = next_id;
                next_id++;
            } else if (op < 6 && nlive) {
                const uint32_t k = (uint32_t)rand() % nlive;
                /* An end if it runs, a cancel if it waits: one succeeds. */
                if (gpusched_sched_job_end(e.s, live[k], now) == 0 || gpusched_sched_cancel(e.s, live[k]) == 0)
                    live[k] = live[--nlive];
            } else if (op < 7) {
                const int which = rand() % 2;
                const int64_t v = rand() % 4 ? rand() % 120 : 0;
                cr_assert_eq(gpusched_sched_param_set(e.s,
                                                      which ? GPUSCHED_SCHED_PARAM_MIN_RUNTIME
                                                            : GPUSCHED_SCHED_PARAM_AGE_LIMIT,
                                                      v),
                             0);
            } else {
                now += rand() % 40;
                st_cycle(&e, now); /* checks the wake */
            }
        }
        st_env_free(&e);
    }
}
