/* The fairq decision log reader. gpusched_fairq_log_read takes a path, so
 * each input goes to a memory file (memfd) read through /proc/self/fd.
 * Any input (checksum recomputed: fuzz-seal.h) reads or fails with
 * ECORRUPT or EVERSION; a log that reads has exactly the records the
 * file's size says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gpusched/gpusched.h>

#include "fuzz.h"
#include "fuzz-seal.h"

static int memfd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
    uint8_t *data = malloc(size ? size : 1);
    FUZZ_CHECK(data, "malloc");
    memcpy(data, input, size);
    fuzz_seal_declog(data, size);
    if (memfd < 0) {
        memfd = memfd_create("gs-fuzz-declog", 0);
        FUZZ_CHECK(memfd >= 0, "memfd_create");
        snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
    }
    FUZZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate");
    FUZZ_CHECK(pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite");
    free(data);
    gpusched_fairq_log *log = NULL;
    char err[256];
    int rc = gpusched_fairq_log_read(path, NULL, &log, err, sizeof err);
    if (rc) {
        FUZZ_CHECK(rc == GPUSCHED_ECORRUPT || rc == GPUSCHED_EVERSION, "read: %s (%s)",
                   gpusched_err_name(rc), err);
        FUZZ_CHECK(!log && err[0], "a failed read has a message and no log");
        return 0;
    }
    const gpusched_fairq_decision *rec;
    uint64_t n;
    FUZZ_CHECK(gpusched_fairq_log_view(log, &rec, &n) == 0, "view");
    FUZZ_CHECK(size == 32 + n * 108, "%llu records in %zu bytes", (unsigned long long)n, size);
    for (uint64_t i = 0; i < n; i++)
        FUZZ_CHECK(rec[i].size == sizeof rec[i], "record %llu", (unsigned long long)i);
    gpusched_fairq_log_free(log);
    return 0;
}
