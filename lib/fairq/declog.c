/* The decision log: in-memory records appended by polls, and a versioned,
 * checksummed little-endian file format (doc/fairq.md) to save and read
 * them, so decisions can be replayed and weights learned offline. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "fairq-internal.h"

#define GS_FQ_LOG_MAGIC "GSFQDLOG"
/* 2: the checksum is XXH64 (version 1 had FNV-1a 64); layout unchanged. */
#define GS_FQ_LOG_VERSION 2u
#define GS_FQ_LOG_HEADER 32u
#define GS_FQ_LOG_SUM 24u /* offset of the checksum in the header */
#define GS_FQ_LOG_RECORD 108u

struct gpusched_fairq_log {
    gs_alloc alloc;
    uint64_t count;
    gpusched_fairq_decision *rec;
};

int gs_fq_log_reserve(gpusched_fairq *q, uint64_t extra)
{
    if (q->nlog + extra <= q->logcap)
        return 0;
    uint64_t cap = q->logcap ? q->logcap : 64;
    while (cap < q->nlog + extra)
        cap *= 2;
    void *p = gs_realloc_array(&q->alloc, q->log, (size_t)cap, sizeof *q->log);
    if (!p)
        return gs_error(&q->err, GPUSCHED_ENOMEM, "out of memory growing the decision log");
    q->log = p;
    q->logcap = cap;
    return 0;
}

/* Both record accessors: NULL for an empty array, never a dangling one. */
static int gs_fq_records_out(const void *owner, const gpusched_fairq_decision *rec, uint64_t n,
                             const gpusched_fairq_decision **records, uint64_t *count)
{
    if (!owner || !records || !count)
        return GPUSCHED_EINVAL;
    *records = n ? rec : NULL;
    *count = n;
    return 0;
}

GPUSCHED_API int gpusched_fairq_log_records(gpusched_fairq *q, const gpusched_fairq_decision **records,
                                            uint64_t *count)
{
    if (!q)
        return GPUSCHED_EINVAL;
    if (gs_fq_records_out(q, q->log, q->nlog, records, count))
        return gs_error(&q->err, GPUSCHED_EINVAL, "log_records: %s is NULL", records ? "count" : "records");
    return gs_ok(&q->err);
}

GPUSCHED_API int gpusched_fairq_log_clear(gpusched_fairq *q)
{
    if (!q)
        return GPUSCHED_EINVAL;
    q->nlog = 0;
    return gs_ok(&q->err);
}

/* ---- encoding: fixed little-endian fields, independent of the struct --- */

static void gs_fq_record_encode(unsigned char *p, const gpusched_fairq_decision *d)
{
    gs_wr w = {p};
    gs_wr_u32(&w, d->tenant);
    gs_wr_u64(&w, d->task_id);
    gs_wr_f64(&w, d->time);
    gs_wr_u32(&w, d->type);
    gs_wr_u32(&w, d->tenants_backlogged);
    const double f[] = {d->score, d->term_backlog, d->term_wait, d->term_vtime,
                        d->term_pred, d->predicted, d->probability};
    for (size_t i = 0; i < GS_ARRAY_LEN(f); i++)
        gs_wr_f64(&w, f[i]);
    gs_wr_u64(&w, d->candidates);
    gs_wr_u64(&w, d->queued);
    gs_wr_f64(&w, d->max_wait);
}

static void gs_fq_record_decode(const unsigned char *p, gpusched_fairq_decision *d)
{
    gs_rd r = {p, p + GS_FQ_LOG_RECORD, false};
    *d = (gpusched_fairq_decision)GPUSCHED_FAIRQ_DECISION_INIT;
    d->tenant = gs_rd_u32(&r);
    d->task_id = gs_rd_u64(&r);
    d->time = gs_rd_f64(&r);
    d->type = gs_rd_u32(&r);
    d->tenants_backlogged = gs_rd_u32(&r);
    d->score = gs_rd_f64(&r);
    d->term_backlog = gs_rd_f64(&r);
    d->term_wait = gs_rd_f64(&r);
    d->term_vtime = gs_rd_f64(&r);
    d->term_pred = gs_rd_f64(&r);
    d->predicted = gs_rd_f64(&r);
    d->probability = gs_rd_f64(&r);
    d->candidates = gs_rd_u64(&r);
    d->queued = gs_rd_u64(&r);
    d->max_wait = gs_rd_f64(&r);
}

/* The checksum: XXH64 of the whole file with its own eight bytes (at 24)
 * taken as zero. Clears them in `buf` and returns the sum. */
static uint64_t gs_fq_log_checksum(unsigned char *buf, size_t len)
{
    memset(buf + GS_FQ_LOG_SUM, 0, 8);
    return gs_checksum64(buf, len);
}

GPUSCHED_API int gpusched_fairq_log_save(gpusched_fairq *q, const char *path)
{
    if (!q || !path)
        return q ? gs_error(&q->err, GPUSCHED_EINVAL, "log_save: path is NULL") : GPUSCHED_EINVAL;
    size_t len = GS_FQ_LOG_HEADER + (size_t)q->nlog * GS_FQ_LOG_RECORD;
    unsigned char *buf = gs_malloc(&q->alloc, len);
    if (!buf)
        return gs_error(&q->err, GPUSCHED_ENOMEM, "log_save: out of memory for %zu bytes", len);
    gs_wr w = {buf};
    gs_wr_bytes(&w, GS_FQ_LOG_MAGIC, 8);
    gs_wr_u32(&w, GS_FQ_LOG_VERSION);
    gs_wr_u32(&w, GS_FQ_LOG_RECORD);
    gs_wr_u64(&w, q->nlog);
    for (uint64_t i = 0; i < q->nlog; i++)
        gs_fq_record_encode(buf + GS_FQ_LOG_HEADER + i * GS_FQ_LOG_RECORD, &q->log[i]);
    uint64_t sum = gs_fq_log_checksum(buf, len);
    w.p = buf + GS_FQ_LOG_SUM;
    gs_wr_u64(&w, sum);
    FILE *f = fopen(path, "wb");
    int rc = 0;
    if (!f)
        rc = gs_error(&q->err, GPUSCHED_EIO, "log_save: cannot open %s for writing", path);
    else if (fwrite(buf, 1, len, f) != len)
        rc = gs_error(&q->err, GPUSCHED_EIO, "log_save: short write to %s", path);
    if (f && fclose(f) != 0 && !rc)
        rc = gs_error(&q->err, GPUSCHED_EIO, "log_save: cannot close %s", path);
    if (rc && f)
        remove(path);
    gs_free(&q->alloc, buf);
    if (!rc)
        gs_err_clear(&q->err);
    return rc;
}

/* The header's fields against the file's size: the record count must
 * account for every byte, so this decides, before anything is allocated,
 * whether the size is a log's. `got` is how many header bytes there are. */
static int gs_fq_log_header(const unsigned char *head, size_t got, uint64_t size, uint64_t *count,
                            gs_err *e)
{
    if (got < GS_FQ_LOG_HEADER)
        return gs_error(e, GPUSCHED_ECORRUPT, "truncated header: %zu of %u bytes", got, GS_FQ_LOG_HEADER);
    if (memcmp(head, GS_FQ_LOG_MAGIC, 8) != 0)
        return gs_error(e, GPUSCHED_ECORRUPT, "bad magic: not a fairq decision log");
    gs_rd r = {head + 8, head + GS_FQ_LOG_SUM, false};
    uint32_t version = gs_rd_u32(&r);
    uint32_t rec = gs_rd_u32(&r);
    uint64_t n = gs_rd_u64(&r);
    if (version != GS_FQ_LOG_VERSION)
        return gs_error(e, GPUSCHED_EVERSION, "format version %u, this library reads %u", version,
                        GS_FQ_LOG_VERSION);
    if (rec != GS_FQ_LOG_RECORD)
        return gs_error(e, GPUSCHED_ECORRUPT, "record size %u, version %u has %u", rec, GS_FQ_LOG_VERSION,
                        GS_FQ_LOG_RECORD);
    if (size < GS_FQ_LOG_HEADER || n > (size - GS_FQ_LOG_HEADER) / GS_FQ_LOG_RECORD ||
        GS_FQ_LOG_HEADER + n * GS_FQ_LOG_RECORD != size)
        return gs_error(e, GPUSCHED_ECORRUPT, "header says %llu records, file has %llu bytes",
                        (unsigned long long)n, (unsigned long long)size);
    *count = n;
    return 0;
}

/* Reads the header first and the rest only once the header has justified
 * the file's size, so a file costs at most its own bytes plus its records,
 * and a directory or unreadable file is an I/O error, not an allocation of
 * whatever size the stream reports. */
static int gs_fq_read_file(const gs_alloc *a, const char *path, unsigned char **out, size_t *len,
                           uint64_t *count, gs_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gs_error(e, GPUSCHED_EIO, "cannot open %s", path);
    /* A directory opens as a stream on Linux, and its size reads as
     * LONG_MAX: try one byte first, so it is an I/O error, not a huge
     * allocation. */
    if (fgetc(f) == EOF && ferror(f)) {
        bool dir = errno == EISDIR;
        fclose(f);
        return gs_error(e, GPUSCHED_EIO, "cannot read %s%s", path, dir ? ": it is a directory" : "");
    }
    rewind(f);
    unsigned char head[GS_FQ_LOG_HEADER];
    size_t got = fread(head, 1, sizeof head, f);
    long n = -1;
    if (!ferror(f) && fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return gs_error(e, GPUSCHED_EIO, "cannot read %s", path);
    }
    int rc = gs_fq_log_header(head, got, (uint64_t)n, count, e);
    if (rc) {
        fclose(f);
        return rc;
    }
    unsigned char *buf = gs_malloc(a, (size_t)n);
    if (!buf) {
        fclose(f);
        return gs_error(e, GPUSCHED_ENOMEM, "out of memory reading %ld bytes", n);
    }
    got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    if (got != (size_t)n) {
        gs_free(a, buf);
        return gs_error(e, GPUSCHED_EIO, "short read from %s", path);
    }
    *out = buf;
    *len = (size_t)n;
    return 0;
}

/* The whole file: the header again (the file may have changed between the
 * two reads) and the checksum (which clears the stored sum in `buf`). */
static int gs_fq_log_validate(unsigned char *buf, size_t len, uint64_t *count, gs_err *e)
{
    int rc = gs_fq_log_header(buf, len, len, count, e);
    if (rc)
        return rc;
    uint64_t sum = gs_le64(buf + GS_FQ_LOG_SUM);
    if (gs_fq_log_checksum(buf, len) != sum)
        return gs_error(e, GPUSCHED_ECORRUPT, "checksum mismatch");
    return 0;
}

static int gs_fq_log_build(const gs_alloc *a, const unsigned char *buf, uint64_t n,
                           gpusched_fairq_log **out, gs_err *e)
{
    gpusched_fairq_log *log = gs_calloc(a, 1, sizeof *log);
    gpusched_fairq_decision *rec = gs_calloc(a, n ? (size_t)n : 1, sizeof *rec);
    if (!log || !rec) {
        gs_free(a, log);
        gs_free(a, rec);
        return gs_error(e, GPUSCHED_ENOMEM, "out of memory for %llu records", (unsigned long long)n);
    }
    for (uint64_t i = 0; i < n; i++)
        gs_fq_record_decode(buf + GS_FQ_LOG_HEADER + i * GS_FQ_LOG_RECORD, &rec[i]);
    *log = (gpusched_fairq_log){.alloc = *a, .count = n, .rec = rec};
    *out = log;
    return 0;
}

GPUSCHED_API int gpusched_fairq_log_read(const char *path, const gpusched_allocator *alloc,
                                         gpusched_fairq_log **out, char *errbuf, size_t errbuf_len)
{
    gs_err e = {0};
    gs_alloc a;
    int rc = 0;
    if (out)
        *out = NULL;
    if (!path || !out)
        rc = gs_error(&e, GPUSCHED_EINVAL, "log_read: path and out are required");
    else if ((rc = gs_alloc_init(&a, alloc)))
        gs_error(&e, rc, "log_read: invalid allocator");
    unsigned char *buf = NULL;
    size_t len = 0;
    uint64_t n = 0;
    if (!rc && !(rc = gs_fq_read_file(&a, path, &buf, &len, &n, &e)) &&
        !(rc = gs_fq_log_validate(buf, len, &n, &e)))
        rc = gs_fq_log_build(&a, buf, n, out, &e);
    if (buf)
        gs_free(&a, buf);
    gs_err_export(&e, errbuf, errbuf_len);
    return rc;
}

GPUSCHED_API int gpusched_fairq_log_view(const gpusched_fairq_log *log,
                                         const gpusched_fairq_decision **records, uint64_t *count)
{
    return gs_fq_records_out(log, log ? log->rec : NULL, log ? log->count : 0, records, count);
}

GPUSCHED_API void gpusched_fairq_log_free(gpusched_fairq_log *log)
{
    if (!log)
        return;
    gs_alloc a = log->alloc;
    gs_free(&a, log->rec);
    gs_free(&a, log);
}
