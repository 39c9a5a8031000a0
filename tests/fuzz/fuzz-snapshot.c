/* Cluster snapshot restore. Any input (checksums recomputed: fuzz-seal.h)
 * restores or fails with ECORRUPT or
 * EVERSION and creates nothing; a cluster that restores passes the
 * invariant checker and snapshots to exactly the input bytes (an image of
 * an older format version: to an image that restores to the same bytes
 * again). */
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#include "fuzz.h"
#include "fuzz-seal.h"

/* The format version snapshots are written in (doc/snapshot-format.md). */
#define FUZZ_SNAPSHOT_VERSION 2u

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
    uint8_t *data = malloc(size ? size : 1);
    FUZZ_CHECK(data, "malloc");
    memcpy(data, input, size);
    fuzz_seal_snapshot(data, size);
    gpusched_cluster *c = NULL;
    char err[256];
    int rc = gpusched_cluster_restore(data, size, NULL, &c, err, sizeof err);
    if (rc) {
        FUZZ_CHECK(rc == GPUSCHED_ECORRUPT || rc == GPUSCHED_EVERSION, "restore: %s (%s)",
                   gpusched_err_name(rc), err);
        FUZZ_CHECK(!c && err[0], "a failed restore has a message and no cluster");
        free(data);
        return 0;
    }
    rc = gpusched_cluster_check(c);
    FUZZ_CHECK(rc == 0, "check: %s", gpusched_cluster_errmsg(c));
    size_t len = 0;
    FUZZ_CHECK(gpusched_cluster_snapshot(c, NULL, 0, &len) == GPUSCHED_ERANGE, "size query");
    uint8_t *buf = malloc(len);
    FUZZ_CHECK(buf && gpusched_cluster_snapshot(c, buf, len, &len) == 0, "snapshot");
    uint32_t version;
    memcpy(&version, data + 8, sizeof version); /* checked by the restore: a known one */
    if (version == FUZZ_SNAPSHOT_VERSION) {
        FUZZ_CHECK(len == size, "snapshot takes %zu bytes, the input %zu", len, size);
        FUZZ_CHECK(!memcmp(buf, data, size), "restore then snapshot changed the bytes");
    } else {
        gpusched_cluster *again = NULL;
        rc = gpusched_cluster_restore(buf, len, NULL, &again, err, sizeof err);
        FUZZ_CHECK(rc == 0, "an upgraded image does not restore: %s", err);
        size_t len2 = 0;
        uint8_t *buf2 = malloc(len);
        FUZZ_CHECK(buf2 && gpusched_cluster_snapshot(again, buf2, len, &len2) == 0, "snapshot again");
        FUZZ_CHECK(len2 == len && !memcmp(buf, buf2, len), "an upgraded image is not a fixed point");
        free(buf2);
        gpusched_cluster_unref(again);
    }
    free(buf);
    free(data);
    gpusched_cluster_unref(c);
    return 0;
}
