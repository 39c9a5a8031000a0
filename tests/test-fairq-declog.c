/* Decision log: round trip through a file, and every kind of damage
 * (truncation at any length, bad magic, unknown version, flipped bytes)
 * rejected with ECORRUPT or EVERSION and nothing created. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "bytes.h"
#include "core.h"
#include "failalloc.h"

static char path[64];

static void setup(void)
{
    unsetenv("GPUSCHED_SIMD");
    snprintf(path, sizeof path, "/tmp/gs-fairq-declog-%d.bin", (int)getpid());
}

static void teardown(void) { unlink(path); }

TestSuite(declog, .init = setup, .fini = teardown);

static gpusched_fairq *logged_queue(int polls)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(3, NULL, &q), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_LOG, 1), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_EXPLORE, 0.2), 0);
    cr_assert_eq(gpusched_fairq_param_set(q, GPUSCHED_FAIRQ_PARAM_SEED, 7), 0);
    for (int i = 0; i < polls + 5; i++) {
        gpusched_fairq_task t = GPUSCHED_FAIRQ_TASK_INIT;
        t.id = 1000 + (uint64_t)i, t.tenant = (uint32_t)(i % 3), t.type = (uint32_t)(i % 5);
        t.enqueue_time = i * 0.25, t.work_size = 100 + i;
        cr_assert_eq(gpusched_fairq_enqueue(q, &t), 0);
    }
    for (int i = 0; i < polls; i++) {
        uint64_t id;
        cr_assert_eq(gpusched_fairq_poll(q, 100 + i, ~0ull, &id, NULL), 0);
    }
    return q;
}

static void write_bytes(const unsigned char *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
}

static size_t read_bytes(unsigned char **buf)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)n);
    cr_assert_eq(fread(*buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return (size_t)n;
}

static int try_read(int expect)
{
    gpusched_fairq_log *log = (gpusched_fairq_log *)&log; /* must be reset to NULL */
    char msg[256] = "";
    int rc = gpusched_fairq_log_read(path, NULL, &log, msg, sizeof msg);
    cr_assert_eq(rc, expect, "got %s (%s)", gpusched_err_name(rc), msg);
    if (rc) {
        cr_assert_null(log, "nothing is created on error");
        cr_assert_str_neq(msg, "");
    }
    gpusched_fairq_log_free(log);
    return rc;
}

Test(declog, round_trip)
{
    gpusched_fairq *q = logged_queue(40);
    const gpusched_fairq_decision *mem;
    uint64_t n;
    cr_assert_eq(gpusched_fairq_log_records(q, &mem, &n), 0);
    cr_assert_eq(n, 40);
    cr_assert_eq(gpusched_fairq_log_save(q, path), 0);
    gpusched_fairq_log *log = NULL;
    cr_assert_eq(gpusched_fairq_log_read(path, NULL, &log, NULL, 0), 0);
    const gpusched_fairq_decision *rec;
    uint64_t m;
    cr_assert_eq(gpusched_fairq_log_view(log, &rec, &m), 0);
    cr_assert_eq(m, n);
    bool explored = false;
    for (uint64_t i = 0; i < n; i++) {
        cr_assert_eq(memcmp(&rec[i], &mem[i], sizeof rec[i]), 0, "record %llu differs",
                     (unsigned long long)i);
        cr_assert_eq(rec[i].time, 100.0 + (double)i);
        explored |= rec[i].probability < 1;
    }
    cr_assert(explored, "exploration recorded probabilities");
    gpusched_fairq_log_free(log);
    cr_assert_eq(gpusched_fairq_log_clear(q), 0);
    cr_assert_eq(gpusched_fairq_log_records(q, &mem, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(gpusched_fairq_log_save(q, path), 0);
    try_read(0);
    cr_assert_eq(gpusched_fairq_log_save(q, "/nonexistent-dir/x.bin"), GPUSCHED_EIO);
    gpusched_fairq_free(q);
}

Test(declog, damage_is_rejected)
{
    gpusched_fairq *q = logged_queue(5);
    cr_assert_eq(gpusched_fairq_log_save(q, path), 0);
    gpusched_fairq_free(q);
    unsigned char *good;
    size_t n = read_bytes(&good);
    unsigned char *bad = malloc(n);
    for (size_t len = 0; len < n; len++) {
        write_bytes(good, len);
        try_read(GPUSCHED_ECORRUPT);
    }
    /* Every single-byte flip is caught (version flips say EVERSION). */
    for (size_t i = 0; i < n; i++) {
        memcpy(bad, good, n);
        bad[i] ^= 0x40;
        write_bytes(bad, n);
        try_read(i >= 8 && i < 12 ? GPUSCHED_EVERSION : GPUSCHED_ECORRUPT);
    }
    /* Trailing garbage. */
    unsigned char *longer = malloc(n + 3);
    memcpy(longer, good, n);
    memset(longer + n, 0, 3);
    write_bytes(longer, n + 3);
    try_read(GPUSCHED_ECORRUPT);
    write_bytes(good, n);
    try_read(0);
    unlink(path);
    try_read(GPUSCHED_EIO);
    gpusched_fairq_log *log;
    cr_assert_eq(gpusched_fairq_log_read(NULL, NULL, &log, NULL, 0), GPUSCHED_EINVAL);
    free(good);
    free(bad);
    free(longer);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Sizes are checked against the header before the file is read into
 * memory: a header claiming 2^60 records in a small file, or a file whose
 * size is not the header's, allocates nothing. */
Test(declog, sizes_are_checked_before_allocating)
{
    gpusched_fairq *q = logged_queue(3);
    cr_assert_eq(gpusched_fairq_log_save(q, path), 0);
    gpusched_fairq_free(q);
    unsigned char *good;
    size_t n = read_bytes(&good);
    cr_assert_eq(n, 32 + 3 * 108);
    const uint64_t claims[] = {1ull << 60, UINT64_MAX, 4, 2, 0};
    for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        put_u64(good + 16, claims[i]);
        write_bytes(good, n);
        failalloc fa;
        failalloc_init(&fa, -1);
        gpusched_fairq_log *log = NULL;
        char msg[256];
        cr_assert_eq(gpusched_fairq_log_read(path, &fa.a, &log, msg, sizeof msg), GPUSCHED_ECORRUPT);
        char want[128];
        snprintf(want, sizeof want, "header says %llu records, file has 356 bytes", (unsigned long long)claims[i]);
        cr_assert_str_eq(msg, want);
        cr_assert_null(log);
        cr_assert_eq(fa.count, 0, "claim %llu: nothing allocated", (unsigned long long)claims[i]);
    }
    free(good);
}

/* A directory opens as a stream on Linux but cannot be read: an I/O
 * error, not an allocation of whatever size the stream reports. */
Test(declog, directory_is_an_io_error)
{
    failalloc fa;
    failalloc_init(&fa, -1);
    gpusched_fairq_log *log = NULL;
    char msg[256];
    cr_assert_eq(gpusched_fairq_log_read("/tmp", &fa.a, &log, msg, sizeof msg), GPUSCHED_EIO, "%s", msg);
    cr_assert_null(log);
    cr_assert_eq(fa.count, 0);
}

static int read_op(failalloc *fa, void *ctx)
{
    gpusched_fairq_log **log = ctx;
    return gpusched_fairq_log_read(path, &fa->a, log, NULL, 0);
}

static void read_undo(void *ctx)
{
    gpusched_fairq_log **log = ctx;
    const gpusched_fairq_decision *rec;
    uint64_t n;
    cr_assert_eq(gpusched_fairq_log_view(*log, &rec, &n), 0);
    cr_assert_eq(n, 25);
    cr_assert_eq(rec[24].time, 124.0);
    gpusched_fairq_log_free(*log);
}

Test(declog, read_survives_every_allocation_failure)
{
    gpusched_fairq *q = logged_queue(25);
    cr_assert_eq(gpusched_fairq_log_save(q, path), 0);
    gpusched_fairq_free(q);
    gpusched_fairq_log *log = NULL;
    cr_assert_geq(failalloc_sweep_retry(read_op, read_undo, &log), 2);
}

/* The bytes of a saved log of `polls` decisions. */
static size_t saved_log(int polls, unsigned char **buf)
{
    gpusched_fairq *q = logged_queue(polls);
    cr_assert_eq(gpusched_fairq_log_save(q, path), 0);
    gpusched_fairq_free(q);
    return read_bytes(buf);
}

/* Version 2 (doc/fairq.md): the checksum at 24 is XXH64 (seed 0) of the
 * whole file with those eight bytes taken as zero, so other tools can
 * check a log; a version 1 file (FNV-1a) is refused as a version. */
Test(declog, version_2_checksum_is_xxh64_of_the_file)
{
    unsigned char *b;
    size_t n = saved_log(4, &b);
    cr_assert_eq(gs_le32(b + 8), 2);
    uint64_t stored = gs_le64(b + 24);
    memset(b + 24, 0, 8);
    cr_assert_eq(stored, gs_checksum64(b, n));
    put_u64(b + 24, stored);
    b[8] = 1;
    write_bytes(b, n);
    gpusched_fairq_log *log = NULL;
    char msg[256];
    cr_assert_eq(gpusched_fairq_log_read(path, NULL, &log, msg, sizeof msg), GPUSCHED_EVERSION);
    cr_assert_str_eq(msg, "format version 1, this library reads 2");
    cr_assert_null(log);
    free(b);
}
