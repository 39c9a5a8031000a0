/* The journal (doc/journal.md): one record per committed transaction, the
 * changes and not the request, written before they are applied; and its
 * replay through the same validation and application as the commit. */
#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "cluster-write.h"

#define GS_JR_MAGIC 0x524a5347u /* "GSJR" */
/* Version 2 appended protected_until to a job; version 1 records still
 * replay (their jobs are never protected). Version 3 adds the change
 * GS_JR_CLAIM_PODS (a claim with what it holds beyond GPUs); it is written
 * only for records that hold one, so that others stay version 2. */
#define GS_JR_VERSION 3u
#define GS_JR_VERSION_PODS 3u
/* The record's kind byte of a claim with a podx (the op's kind stays
 * GS_OP_CLAIM in memory). */
#define GS_JR_CLAIM_PODS 8u
#define GS_JR_VERSION_MIN 1u
#define GS_JR_HEAD 24u
#define GS_JR_TAIL 8u
#define GS_JR_PAIR 12u
/* The smallest op (HEALTH): kind, node, health. */
#define GS_JR_MIN_OP 6u

/* ---- encoding -------------------------------------------------------------- */

static size_t op_size(const gs_op *op)
{
    switch (op->kind) {
    case GS_OP_CLAIM:
        return 1 + 8 + 4 + 4 + 4 + 8 + 8 + 8 + 4 + (size_t)GS_JR_PAIR * op->n +
               (op->podx ? gs_podx_wire_len(op->podx, op->n) : 0);
    case GS_OP_RESERVE:
        return 1 + 8 + 4 + (size_t)GS_JR_PAIR * op->n;
    case GS_OP_RELEASE_TO_RESV:
        return 1 + 8 + 8;
    case GS_OP_HEALTH:
        return GS_JR_MIN_OP;
    case GS_OP_UPDATE:
        return 1 + 8 + 4 + 4 + 4 + 8 + 8 + 8;
    default: /* RELEASE, UNRESERVE */
        return 1 + 8;
    }
}

static void put_job(gs_wr *w, const gpusched_job *j)
{
    gs_wr_u64(w, j->id);
    gs_wr_u32(w, j->flags);
    gs_wr_u32(w, (uint32_t)j->priority);
    gs_wr_u32(w, j->tenant);
    gs_wr_u64(w, (uint64_t)j->start_time);
    gs_wr_u64(w, j->cost_hint);
    gs_wr_u64(w, (uint64_t)j->protected_until);
}

static void put_pairs(gs_wr *w, uint32_t n, const uint32_t *nodes, const uint64_t *masks)
{
    gs_wr_u32(w, n);
    for (uint32_t i = 0; i < n; i++) {
        gs_wr_u32(w, nodes[i]);
        gs_wr_u64(w, masks[i]);
    }
}

static void put_op(gs_wr *w, const gs_op *op)
{
    gs_wr_u8(w, (uint8_t)(op->kind == GS_OP_CLAIM && op->podx ? GS_JR_CLAIM_PODS : op->kind));
    switch (op->kind) {
    case GS_OP_CLAIM:
        put_job(w, &op->job);
        put_pairs(w, op->n, op->nodes, op->masks);
        if (op->podx)
            gs_podx_write(w, op->podx, op->n);
        break;
    case GS_OP_RESERVE:
        gs_wr_u64(w, op->job.id);
        put_pairs(w, op->n, op->nodes, op->masks);
        break;
    case GS_OP_RELEASE_TO_RESV:
        gs_wr_u64(w, op->job.id);
        gs_wr_u64(w, op->id2);
        break;
    case GS_OP_HEALTH:
        gs_wr_u32(w, op->node);
        gs_wr_u8(w, (uint8_t)op->health);
        break;
    case GS_OP_UPDATE:
        put_job(w, &op->job);
        break;
    default:
        gs_wr_u64(w, op->job.id);
        break;
    }
}

static size_t record_size(const gs_op *ops, uint32_t n)
{
    size_t len = GS_JR_HEAD + GS_JR_TAIL;
    for (uint32_t i = 0; i < n; i++)
        len += op_size(&ops[i]);
    return len;
}

static void write_record(unsigned char *buf, size_t len, uint64_t seq, const gs_op *ops, uint32_t n)
{
    gs_wr w = {buf};
    bool pods = false;
    for (uint32_t i = 0; i < n; i++)
        pods = pods || (ops[i].kind == GS_OP_CLAIM && ops[i].podx);
    gs_wr_u32(&w, GS_JR_MAGIC);
    gs_wr_u32(&w, pods ? GS_JR_VERSION_PODS : 2u);
    gs_wr_u32(&w, (uint32_t)(len - GS_JR_HEAD - GS_JR_TAIL));
    gs_wr_u32(&w, n);
    gs_wr_u64(&w, seq);
    for (uint32_t i = 0; i < n; i++)
        put_op(&w, &ops[i]);
    gs_wr_u64(&w, gs_checksum64(buf, len - GS_JR_TAIL));
}

/* Makes room for `need` bytes in *buf (of *cap), doubling. */
static int reserve_bytes(const gs_alloc *a, unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : 2 * n;
    unsigned char *p = gs_realloc_array(a, *buf, n, 1);
    if (!p)
        return GPUSCHED_ENOMEM;
    *buf = p;
    *cap = n;
    return 0;
}

int gs_journal_emit(struct gpusched_cluster *c, const gs_op *ops, uint32_t n)
{
    gs_journal *j = &c->journal;
    const size_t len = record_size(ops, n);
    if (len - GS_JR_HEAD - GS_JR_TAIL > UINT32_MAX)
        return gs_error(&c->err, GPUSCHED_ELIMIT, "journal record of %zu bytes is too large", len);
    const uint64_t seq = j->seq + 1;
    if (!j->sink) {
        if (len > SIZE_MAX - j->len || reserve_bytes(&c->alloc, &j->buf, &j->cap, j->len + len))
            return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory growing the journal buffer");
        write_record(j->buf + j->len, len, seq, ops, n);
        j->len += len;
    } else {
        if (reserve_bytes(&c->alloc, &j->rec, &j->rec_cap, len))
            return gs_error(&c->err, GPUSCHED_ENOMEM, "out of memory writing a journal record");
        write_record(j->rec, len, seq, ops, n);
        if (j->sink(j->user, j->rec, len) != 0)
            return gs_error(&c->err, GPUSCHED_EIO, "the journal sink refused record %llu",
                            (unsigned long long)seq);
    }
    j->seq = seq;
    return 0;
}

void gs_journal_free(struct gpusched_cluster *c)
{
    gs_free(&c->alloc, c->journal.buf);
    gs_free(&c->alloc, c->journal.rec);
    memset(&c->journal, 0, sizeof c->journal);
}

size_t gs_journal_bytes(const struct gpusched_cluster *c)
{
    return c->journal.cap + c->journal.rec_cap;
}

/* ---- public: starting, reading, clearing ------------------------------------- */

GPUSCHED_API int gpusched_cluster_journal_start(gpusched_cluster *c, gpusched_journal_sink sink, void *user)
{
    if (!c)
        return GPUSCHED_EINVAL;
    c->journal.on = true;
    c->journal.sink = sink;
    c->journal.user = user;
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_journal_stop(gpusched_cluster *c)
{
    if (!c)
        return GPUSCHED_EINVAL;
    c->journal.on = false;
    c->journal.sink = NULL;
    c->journal.user = NULL;
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_journal_view(gpusched_cluster *c, const void **bytes, size_t *len)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (!bytes || !len)
        return gs_error(&c->err, GPUSCHED_EINVAL, "journal view: %s is NULL", bytes ? "len" : "bytes");
    *bytes = c->journal.len ? c->journal.buf : NULL;
    *len = c->journal.len;
    return gs_ok(&c->err);
}

GPUSCHED_API int gpusched_cluster_journal_clear(gpusched_cluster *c)
{
    if (!c)
        return GPUSCHED_EINVAL;
    c->journal.len = 0;
    return gs_ok(&c->err);
}

/* ---- decoding ---------------------------------------------------------------- */

/* Room for a record's ops and pairs, kept by the caller across records. */
typedef struct gs_jr_scratch {
    gs_op *ops;
    uint32_t ops_cap;
    uint32_t *nodes;
    uint64_t *masks;
    uint32_t pairs_cap;
    gs_podx **podx;         /* one per claim with a podx of the record */
    uint32_t podx_cap;
} gs_jr_scratch;

/* The podx of a claim with n pairs, into the scratch; the record's length
 * bounds it. */
static int get_podx(gs_rd *r, gs_op *op, gs_jr_scratch *s, const gs_alloc *a, uint32_t nres_max, uint32_t k)
{
    if (k >= s->podx_cap) {
        uint32_t cap = s->podx_cap;
        if (gs_grow(a, (void **)&s->podx, &cap, k + 1, sizeof *s->podx))
            return GPUSCHED_ENOMEM;
        memset(s->podx + s->podx_cap, 0, (size_t)(cap - s->podx_cap) * sizeof *s->podx);
        s->podx_cap = cap;
    }
    int rc = gs_podx_read(r, op->n, nres_max, a, &s->podx[k]);
    if (!rc)
        op->podx = s->podx[k];
    return rc;
}

static void get_job(gs_rd *r, gpusched_job *j, uint32_t version)
{
    *j = (gpusched_job)GPUSCHED_JOB_INIT;
    j->id = gs_rd_u64(r);
    j->flags = gs_rd_u32(r);
    j->priority = (int32_t)gs_rd_u32(r);
    j->tenant = gs_rd_u32(r);
    j->start_time = (int64_t)gs_rd_u64(r);
    j->cost_hint = gs_rd_u64(r);
    if (version >= 2)
        j->protected_until = (int64_t)gs_rd_u64(r);
}

/* Reads n pairs into the scratch at *used. The record's length bounds
 * them (12 bytes a pair): the scratch was sized for all a record can hold
 * before its changes were read, so the arrays never move meanwhile. */
static int get_pairs(gs_rd *r, gs_op *op, gs_jr_scratch *s, uint32_t *used)
{
    uint32_t n = gs_rd_u32(r);
    if (r->bad || (uint64_t)n * GS_JR_PAIR > gs_rd_left(r))
        return GPUSCHED_ECORRUPT;
    for (uint32_t i = 0; i < n; i++) {
        s->nodes[*used + i] = gs_rd_u32(r);
        s->masks[*used + i] = gs_rd_u64(r);
    }
    op->n = n;
    op->nodes = n ? s->nodes + *used : NULL;
    op->masks = n ? s->masks + *used : NULL;
    *used += n;
    return 0;
}

static int get_op(struct gpusched_cluster *c, gs_rd *r, gs_op *op, gs_jr_scratch *s, uint32_t *used,
                  uint32_t version, uint32_t *pods_seen)
{
    memset(op, 0, sizeof *op);
    op->kind = gs_rd_u8(r);
    int rc = 0;
    switch (op->kind) {
    case GS_JR_CLAIM_PODS:
        if (version < GS_JR_VERSION_PODS)
            return GPUSCHED_ECORRUPT;
        op->kind = GS_OP_CLAIM;
        get_job(r, &op->job, version);
        rc = get_pairs(r, op, s, used);
        if (!rc && !r->bad)
            rc = get_podx(r, op, s, &c->alloc, c->topo->nres, (*pods_seen)++);
        break;
    case GS_OP_CLAIM:
        get_job(r, &op->job, version);
        rc = get_pairs(r, op, s, used);
        break;
    case GS_OP_RESERVE:
        op->job.id = gs_rd_u64(r);
        rc = get_pairs(r, op, s, used);
        break;
    case GS_OP_RELEASE:
    case GS_OP_UNRESERVE:
        op->job.id = gs_rd_u64(r);
        break;
    case GS_OP_RELEASE_TO_RESV:
        op->job.id = gs_rd_u64(r);
        op->id2 = gs_rd_u64(r);
        break;
    case GS_OP_HEALTH:
        op->node = gs_rd_u32(r);
        op->health = gs_rd_u8(r);
        break;
    case GS_OP_UPDATE:
        get_job(r, &op->job, version);
        break;
    default:
        return GPUSCHED_ECORRUPT;
    }
    if (rc)
        return rc;
    return r->bad ? GPUSCHED_ECORRUPT : 0;
}

/* Checks one record's frame at the start of `r` and reads its ops. */
static int read_record(struct gpusched_cluster *c, gs_rd *r, uint32_t index, gs_jr_scratch *s, uint32_t *nops,
                       uint64_t *seq)
{
    const unsigned char *start = r->p;
    if (gs_rd_left(r) < GS_JR_HEAD + GS_JR_TAIL)
        return gs_error(&c->err, GPUSCHED_ECORRUPT, "journal record %u: truncated (%zu bytes left)", index,
                        gs_rd_left(r));
    uint32_t magic = gs_rd_u32(r), version = gs_rd_u32(r), payload = gs_rd_u32(r), n = gs_rd_u32(r);
    *seq = gs_rd_u64(r);
    if (magic != GS_JR_MAGIC)
        return gs_error(&c->err, GPUSCHED_ECORRUPT, "journal record %u: bad magic 0x%08x", index, magic);
    if (version < GS_JR_VERSION_MIN || version > GS_JR_VERSION)
        return gs_error(&c->err, GPUSCHED_EVERSION,
                        "journal record %u: format version %u (this library reads %u to %u)", index, version,
                        GS_JR_VERSION_MIN, GS_JR_VERSION);
    if (payload > gs_rd_left(r) || gs_rd_left(r) - payload < GS_JR_TAIL)
        return gs_error(&c->err, GPUSCHED_ECORRUPT, "journal record %u: truncated (%u bytes of changes announced)",
                        index, payload);
    const size_t len = GS_JR_HEAD + (size_t)payload + GS_JR_TAIL;
    gs_rd tail = {start + len - GS_JR_TAIL, start + len, false};
    if (gs_rd_u64(&tail) != gs_checksum64(start, len - GS_JR_TAIL))
        return gs_error(&c->err, GPUSCHED_ECORRUPT, "journal record %u: checksum mismatch", index);
    if (n == 0 || (uint64_t)n * GS_JR_MIN_OP > payload)
        return gs_error(&c->err, GPUSCHED_ECORRUPT, "journal record %u: %u changes cannot fit in %u bytes", index,
                        n, payload);
    const uint32_t max_pairs = payload / GS_JR_PAIR;
    uint32_t cap = s->pairs_cap;
    if (gs_grow(&c->alloc, (void **)&s->ops, &s->ops_cap, n, sizeof *s->ops) ||
        (max_pairs && (gs_grow(&c->alloc, (void **)&s->nodes, &cap, max_pairs, sizeof *s->nodes) ||
                       gs_grow(&c->alloc, (void **)&s->masks, &s->pairs_cap, max_pairs, sizeof *s->masks))))
        return gs_error(&c->err, GPUSCHED_ENOMEM, "journal record %u: out of memory", index);
    gs_rd body = {r->p, r->p + payload, false};
    uint32_t used = 0;
    uint32_t pods_seen = 0;
    for (uint32_t i = 0; i < n; i++) {
        int rc = get_op(c, &body, &s->ops[i], s, &used, version, &pods_seen);
        if (rc == GPUSCHED_ENOMEM)
            return gs_error(&c->err, rc, "journal record %u: out of memory", index);
        if (rc)
            return gs_error(&c->err, rc, "journal record %u: change %u is malformed", index, i);
    }
    if (gs_rd_left(&body))
        return gs_error(&c->err, GPUSCHED_ECORRUPT, "journal record %u: %zu bytes after its changes", index,
                        gs_rd_left(&body));
    r->p = start + len;
    *nops = n;
    return 0;
}

/* A change that does not apply to this state is a bad record: the message
 * keeps the reason. */
static int not_applicable(struct gpusched_cluster *c, int rc, uint32_t index)
{
    if (rc == GPUSCHED_ENOMEM || rc == GPUSCHED_ELIMIT || rc == GPUSCHED_EIO)
        return rc;
    char why[GS_ERRMSG_MAX];
    memcpy(why, c->err.msg, sizeof why);
    return gs_error(&c->err, GPUSCHED_ECORRUPT, "journal record %u does not apply: %.200s", index, why);
}

GPUSCHED_API int gpusched_cluster_journal_apply(gpusched_cluster *c, const void *bytes, size_t len,
                                                uint32_t *applied)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (applied)
        *applied = 0;
    if (!bytes && len)
        return gs_error(&c->err, GPUSCHED_EINVAL, "journal apply: bytes is NULL");
    if (c->txn.open)
        return gs_error(&c->err, GPUSCHED_ESTATE, "a transaction is open on this cluster");
    gs_rd r = gs_rd_over(bytes, len);
    gs_jr_scratch s = {0};
    int rc = 0;
    uint32_t index = 0;
    while (!rc && gs_rd_left(&r)) {
        uint32_t n = 0;
        uint64_t seq = 0;
        rc = read_record(c, &r, index, &s, &n, &seq);
        if (!rc && c->applied_seq && seq != c->applied_seq + 1)
            rc = gs_error(&c->err, GPUSCHED_ECORRUPT, "journal record %u: sequence %llu follows %llu", index,
                          (unsigned long long)seq, (unsigned long long)c->applied_seq);
        if (!rc && (rc = gs_txn_commit_ops(c, s.ops, n)))
            rc = not_applicable(c, rc, index);
        if (!rc) {
            c->applied_seq = seq;
            index++;
            if (applied)
                *applied = index;
        }
    }
    gs_free(&c->alloc, s.ops);
    gs_free(&c->alloc, s.nodes);
    gs_free(&c->alloc, s.masks);
    for (uint32_t k = 0; k < s.podx_cap; k++)
        gs_free(&c->alloc, s.podx[k]);
    gs_free(&c->alloc, s.podx);
    if (!rc)
        gs_err_clear(&c->err);
    return rc;
}

GPUSCHED_API int gpusched_cluster_replay(const void *snapshot, size_t snapshot_len, const void *journal,
                                         size_t journal_len, const gpusched_allocator *alloc,
                                         gpusched_cluster **out, char *errbuf, size_t errbuf_len)
{
    if (!out || (!journal && journal_len)) {
        gs_err e = {0};
        gs_error(&e, GPUSCHED_EINVAL, "replay: %s is NULL", out ? "journal" : "out");
        gs_err_export(&e, errbuf, errbuf_len);
        return GPUSCHED_EINVAL;
    }
    gpusched_cluster *c = NULL;
    int rc = gpusched_cluster_restore(snapshot, snapshot_len, alloc, &c, errbuf, errbuf_len);
    if (rc)
        return rc;
    rc = gpusched_cluster_journal_apply(c, journal, journal_len, NULL);
    if (rc) {
        gs_err_export(&c->err, errbuf, errbuf_len);
        gpusched_cluster_unref(c);
        return rc;
    }
    *out = c;
    return 0;
}
