/* The topology's binary image (lib/topo/image.c, embedded in snapshots).
 * Any input (checksum recomputed: fuzz-seal.h) reads or fails with
 * ECORRUPT or EVERSION; an image that reads writes back to exactly the
 * bytes it took. */
#include <stdlib.h>
#include <string.h>

#include "topo/topo-image.h"

#include "fuzz.h"
#include "fuzz-seal.h"

/* What the harness lets an image claim, as a snapshot's state section of
 * 1 MiB would: enough for every shape, small enough for -rss_limit_mb. */
#define FUZZ_IMAGE_MAX_NODES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
    uint8_t *data = malloc(size ? size : 1);
    FUZZ_CHECK(data, "malloc");
    memcpy(data, input, size);
    fuzz_seal_topo_image(data, size);
    gs_alloc a;
    gs_alloc_init(&a, NULL);
    gs_err e = {0};
    gpusched_topo *t = NULL;
    size_t consumed = 0;
    int rc = gs_topo_image_read(data, size, FUZZ_IMAGE_MAX_NODES, &a, &t, &consumed, &e);
    if (rc) {
        FUZZ_CHECK(rc == GPUSCHED_ECORRUPT || rc == GPUSCHED_EVERSION, "read: %s (%s)",
                   gpusched_err_name(rc), e.msg);
        FUZZ_CHECK(!t && e.msg[0], "a failed read has a message and no topology");
        free(data);
        return 0;
    }
    FUZZ_CHECK(consumed <= size && gpusched_topo_node_count(t) <= FUZZ_IMAGE_MAX_NODES, "bounds");
    size_t len = 0;
    FUZZ_CHECK(gs_topo_image_size(t, &len) == 0 && len == consumed, "size %zu, consumed %zu", len, consumed);
    uint8_t *buf = malloc(len);
    size_t written = 0;
    FUZZ_CHECK(buf && gs_topo_image_write(t, buf, len, &written) == 0 && written == len, "write");
    FUZZ_CHECK(!memcmp(buf, data, len), "read then write changed the bytes");
    free(buf);
    free(data);
    gpusched_topo_unref(t);
    return 0;
}
