/* Journal replay. The input is a journal (each record's checksum
 * recomputed, so that mutations reach the fields behind it) applied to a
 * small cluster with jobs and reservations: every record applies or the
 * reading stops with ECORRUPT or EVERSION at the first bad one. The
 * standby then holds exactly the records before it: it passes the
 * invariant checker and snapshots to the same bytes as a replay of those
 * records alone, and a replay of the whole input fails exactly when the
 * apply did, creating nothing. */
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#include "fuzz.h"

uint64_t gs_checksum64(const void *data, size_t len);

static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* Recomputes the checksum of every record whose frame is whole; returns
 * the ends of the records in `ends` (at most `cap`). */
static size_t seal(uint8_t *b, size_t len, size_t *ends, size_t cap)
{
    size_t at = 0, n = 0;
    while (len - at >= 32 && n < cap) {
        size_t rec = 24 + (size_t)get32(b + at + 8) + 8;
        if (rec > len - at)
            break;
        uint64_t sum = gs_checksum64(b + at, rec - 8);
        for (int i = 0; i < 8; i++)
            b[at + rec - 8 + i] = (uint8_t)(sum >> (8 * i));
        at += rec;
        ends[n++] = at;
    }
    return n;
}

/* The base: a cluster of 6 nodes of 4 GPUs with two jobs and a reservation. */
static uint8_t *base_snapshot(size_t *len)
{
    static const char *lv[] = {"rack"};
    const uint32_t fan[] = {2, 3};
    gpusched_topo *t = NULL;
    char err[256];
    FUZZ_CHECK(gpusched_topo_uniform(1, lv, fan, 4, NULL, NULL, &t, err, sizeof err) == 0, "topo: %s", err);
    gpusched_cluster *c = NULL;
    FUZZ_CHECK(gpusched_cluster_new(t, NULL, &c) == 0, "cluster");
    gpusched_topo_unref(t);
    gpusched_job j = GPUSCHED_JOB_INIT;
    uint32_t nodes[] = {0, 1};
    uint64_t masks[] = {0xf, 0x3};
    j.id = 1;
    FUZZ_CHECK(gpusched_cluster_allocate(c, &j, 2, nodes, masks) == 0, "job 1");
    j.id = 2;
    j.flags = GPUSCHED_JOB_FLAG_PREEMPTIBLE | GPUSCHED_JOB_FLAG_MOVABLE;
    FUZZ_CHECK(gpusched_cluster_allocate(c, &j, 1, &nodes[1], &(uint64_t){0xc}) == 0, "job 2");
    uint32_t n3 = 3;
    FUZZ_CHECK(gpusched_cluster_reserve(c, 7, 1, &n3, &(uint64_t){0x5}) == 0, "reservation");
    FUZZ_CHECK(gpusched_cluster_snapshot(c, NULL, 0, len) == GPUSCHED_ERANGE, "size");
    uint8_t *b = malloc(*len);
    FUZZ_CHECK(b && gpusched_cluster_snapshot(c, b, *len, len) == 0, "snapshot");
    gpusched_cluster_unref(c);
    return b;
}

static uint8_t *snap(gpusched_cluster *c, size_t *len)
{
    FUZZ_CHECK(gpusched_cluster_snapshot(c, NULL, 0, len) == GPUSCHED_ERANGE, "size");
    uint8_t *b = malloc(*len);
    FUZZ_CHECK(b && gpusched_cluster_snapshot(c, b, *len, len) == 0, "snapshot");
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size)
{
    static uint8_t *base;
    static size_t base_len;
    if (!base)
        base = base_snapshot(&base_len);
    uint8_t *data = malloc(size ? size : 1);
    FUZZ_CHECK(data, "malloc");
    memcpy(data, input, size);
    size_t ends[256];
    size_t nrec = seal(data, size, ends, 256);
    char err[256];
    gpusched_cluster *standby = NULL;
    FUZZ_CHECK(gpusched_cluster_restore(base, base_len, NULL, &standby, err, sizeof err) == 0, "restore: %s", err);
    uint32_t applied = 0;
    int rc = gpusched_cluster_journal_apply(standby, data, size, &applied);
    FUZZ_CHECK(rc == 0 || rc == GPUSCHED_ECORRUPT || rc == GPUSCHED_EVERSION, "apply: %s: %s", gpusched_err_name(rc),
               gpusched_cluster_errmsg(standby));
    FUZZ_CHECK(rc != 0 || applied == nrec, "every record applied (%u of %zu)", applied, nrec);
    FUZZ_CHECK(applied <= nrec, "applied %u of %zu framed records", applied, nrec);
    FUZZ_CHECK(gpusched_cluster_check(standby) == 0, "check: %s", gpusched_cluster_errmsg(standby));
    /* The standby equals a replay of the records it applied. */
    gpusched_cluster *prefix = NULL;
    FUZZ_CHECK(gpusched_cluster_replay(base, base_len, data, applied ? ends[applied - 1] : 0, NULL, &prefix, err,
                                       sizeof err) == 0,
               "replay of the applied records: %s", err);
    size_t a_len, b_len;
    uint8_t *a = snap(standby, &a_len), *b = snap(prefix, &b_len);
    FUZZ_CHECK(a_len == b_len && !memcmp(a, b, a_len), "the standby differs from a replay of its records");
    free(a);
    free(b);
    gpusched_cluster_unref(prefix);
    /* The whole input: replay succeeds exactly when the apply did. */
    gpusched_cluster *whole = NULL;
    int rrc = gpusched_cluster_replay(base, base_len, data, size, NULL, &whole, err, sizeof err);
    FUZZ_CHECK(rrc == rc, "replay %s, apply %s", gpusched_err_name(rrc), gpusched_err_name(rc));
    FUZZ_CHECK(rrc ? whole == NULL : whole != NULL, "a failed replay creates nothing");
    gpusched_cluster_unref(whole);
    gpusched_cluster_unref(standby);
    free(data);
    return 0;
}
