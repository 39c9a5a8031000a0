/* Cluster snapshot restore. Any input (checksums recomputed: fuzz-seal.h)
 * restores or fails with ECORRUPT or
 * EVERSION and creates nothing; a cluster that restores passes the
 * invariant checker and snapshots to exactly the input bytes. */
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#include "fuzz.h"
#include "fuzz-seal.h"

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
    FUZZ_CHECK(len == size, "snapshot takes %zu bytes, the input %zu", len, size);
    uint8_t *buf = malloc(len);
    FUZZ_CHECK(buf && gpusched_cluster_snapshot(c, buf, len, &len) == 0, "snapshot");
    FUZZ_CHECK(!memcmp(buf, data, size), "restore then snapshot changed the bytes");
    free(buf);
    free(data);
    gpusched_cluster_unref(c);
    return 0;
}
