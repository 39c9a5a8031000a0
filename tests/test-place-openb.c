/* Replay of the real openb trace (1,213 nodes in racks of 16, 8,152 pods):
 * every pod placed at its creation and released at its deletion, with the
 * placement checked against the constraints and the cluster's invariants
 * checked after every step. */
#include <stdlib.h>

#include "openb-trace.h"
#include "place-test.h"

Test(place_openb, replay_keeps_every_invariant)
{
    openb_trace tr;
    char err[256];
    const char *dir = getenv("GPUSCHED_DATA_DIR");
    /* The trace is in the repository (tests/data/openb): missing is a
     * failure, not a skip (doc/testing.md). */
    cr_assert_eq(openb_load(dir, &tr, err, sizeof err), 0, "openb data missing from the repository: %s", err);
    cr_assert_eq(gpusched_topo_node_count(tr.topo), 1213);
    cr_assert_eq(gpusched_topo_domain_count(tr.topo, 0), 76); /* ceil(1213 / 16) */
    gpusched_cluster *c;
    gpusched_placer *p;
    gpusched_place_result *res;
    cr_assert_eq(gpusched_cluster_new(tr.topo, NULL, &c), 0);
    cr_assert_eq(gpusched_placer_new(c, NULL, &p), 0);
    cr_assert_eq(gpusched_place_result_new(NULL, &res), 0);
    uint8_t *running = calloc(tr.npods, 1);
    uint32_t placed = 0, tried = 0;
    for (uint32_t i = 0; i < tr.nev; i++) {
        const openb_event *ev = &tr.ev[i];
        if (ev->release) {
            if (running[ev->pod])
                cr_assert_eq(gpusched_cluster_release(c, (uint64_t)ev->pod + 1), 0);
            running[ev->pod] = 0;
        } else {
            tried++;
            gpusched_place_request q;
            gpusched_job job;
            openb_request(ev, &q, &job);
            q.flags = 0;
            int rc = gpusched_placer_place(p, &q, res);
            cr_assert(rc == 0 || rc == GPUSCHED_ENOSPC, "%s", gpusched_placer_errmsg(p));
            if (rc == 0) {
                const uint32_t *nodes;
                const uint64_t *masks;
                uint32_t n;
                gpusched_place_result_nodes(res, &nodes, &masks, &n);
                cr_assert_eq(n, 1, "a pod never straddles nodes");
                char why[256];
                cr_assert(place_ref_check(c, &q, nodes, masks, n, why, sizeof why), "pod %u: %s", ev->pod, why);
                q.flags = GPUSCHED_PLACE_FLAG_COMMIT;
                cr_assert_eq(gpusched_placer_place(p, &q, res), 0);
                const uint32_t *again;
                gpusched_place_result_nodes(res, &again, &masks, &n);
                cr_assert_eq(again[0], nodes[0], "plan and commit agree");
                running[ev->pod] = 1;
                placed++;
            }
        }
        cr_assert_eq(gpusched_cluster_check(c), 0, "after event %u: %s", i, gpusched_cluster_errmsg(c));
    }
    cr_log_info("openb: %u of %u pods placed at creation", placed, tried);
    cr_assert_eq(tried, tr.npods);
    cr_assert_gt(placed, tried * 9 / 10);
    free(running);
    gpusched_place_result_free(res);
    gpusched_placer_free(p);
    gpusched_cluster_unref(c);
    openb_free(&tr);
}
