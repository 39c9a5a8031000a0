/* Snapshot and restore (doc/snapshot-format.md): header, topology image,
 * state, checksum. Restore trusts nothing: every length is bounded before
 * it is used and the state is rebuilt through the same validation as the
 * public calls, so a hostile image can only produce an error. */
#include <stdio.h>
#include <string.h>

#include "bytes.h"
#include "cluster-write.h"
#include "topo/topo-image.h"

#define GS_SNAP_MAGIC "GSCLSNAP"
/* Version 2 appended protected_until to a job's head; version 1 images
 * still load (their jobs are never protected). Version 3 follows each
 * job's pairs with what it holds beyond GPUs (resources, fractions); it is
 * written only when some job holds such things, so that other images stay
 * version 2, byte for byte. */
#define GS_SNAP_VERSION 3u
#define GS_SNAP_VERSION_PODS 3u
#define GS_SNAP_VERSION_MIN 1u
#define GS_SNAP_HEADER 32u
#define GS_SNAP_STATE_HEAD 24u
#define GS_SNAP_JOB_HEAD 48u
#define GS_SNAP_JOB_HEAD_V1 40u
#define GS_SNAP_RESV_HEAD 16u
#define GS_SNAP_PAIR 12u

static void wr_pairs(gs_wr *w, const gs_hold *h)
{
    const uint32_t *nodes = gs_hold_nodes(h);
    const uint64_t *masks = gs_hold_masks(h);
    for (uint32_t i = 0; i < h->npairs; i++) {
        gs_wr_u32(w, nodes[i]);
        gs_wr_u64(w, masks[i]);
    }
}

/* Version 3's per-job tail: 0, or 1 then milli, GPUs per pod, the
 * resources asked per pod (count, amounts) and the pods per pair. */
static size_t podx_len(const gpusched_cluster *c, const gs_hold *h)
{
    const gs_podx *x = gs_hold_podx(c, h);
    return 4 + (x ? gs_podx_wire_len(x, h->npairs) : 0);
}

static void wr_podx(const gpusched_cluster *c, gs_wr *w, const gs_hold *h)
{
    const gs_podx *x = gs_hold_podx(c, h);
    gs_wr_u32(w, x != NULL);
    if (x)
        gs_podx_write(w, x, h->npairs);
}

static size_t gs_state_len(const gpusched_cluster *c)
{
    size_t len = GS_SNAP_STATE_HEAD + c->topo->nnodes;
    for (uint32_t i = 0; i < c->jobs.count; i++)
        len += GS_SNAP_JOB_HEAD + (size_t)GS_SNAP_PAIR * c->jobs.rec[c->jobs.live[i]].npairs +
               (c->podx_jobs ? podx_len(c, &c->jobs.rec[c->jobs.live[i]]) : 0);
    for (uint32_t i = 0; i < c->resv.count; i++)
        len += GS_SNAP_RESV_HEAD + (size_t)GS_SNAP_PAIR * c->resv.rec[c->resv.live[i]].npairs;
    return len;
}

static void gs_state_write(const gpusched_cluster *c, gs_wr *w)
{
    const struct gpusched_topo *t = c->topo;
    gs_wr_u32(w, t->nnodes);
    gs_wr_u32(w, c->jobs.count);
    gs_wr_u32(w, c->resv.count);
    gs_wr_u32(w, 0);
    gs_wr_u64(w, t->ngpus);
    gs_wr_bytes(w, c->node_health, t->nnodes);
    for (uint32_t i = 0; i < c->jobs.count; i++) {
        const gs_hold *h = &c->jobs.rec[c->jobs.live[i]];
        gs_wr_u64(w, h->id);
        gs_wr_u64(w, (uint64_t)h->start_time);
        gs_wr_u64(w, h->cost_hint);
        gs_wr_u64(w, (uint64_t)h->protected_until);
        gs_wr_u32(w, (uint32_t)h->priority);
        gs_wr_u32(w, h->tenant);
        gs_wr_u32(w, h->flags);
        gs_wr_u32(w, h->npairs);
        wr_pairs(w, h);
        if (c->podx_jobs)
            wr_podx(c, w, h);
    }
    for (uint32_t i = 0; i < c->resv.count; i++) {
        const gs_hold *h = &c->resv.rec[c->resv.live[i]];
        gs_wr_u64(w, h->id);
        gs_wr_u32(w, h->npairs);
        gs_wr_u32(w, 0);
        wr_pairs(w, h);
    }
}

GPUSCHED_API int gpusched_cluster_snapshot(gpusched_cluster *c, void *buf, size_t cap, size_t *len)
{
    if (!c)
        return GPUSCHED_EINVAL;
    if (!len)
        return gs_error(&c->err, GPUSCHED_EINVAL, "len is NULL");
    if (c->txn.open)
        return gs_error(&c->err, GPUSCHED_ESTATE, "a transaction is open on this cluster");
    size_t topo_len = 0;
    int rc = gs_topo_image_size(c->topo, &topo_len);
    if (rc)
        return gs_error(&c->err, rc, "topology image: %s", gpusched_strerror(rc));
    size_t state_len = gs_state_len(c);
    size_t total = GS_SNAP_HEADER + topo_len + state_len + 8;
    *len = total;
    if (cap < total)
        return gs_error(&c->err, GPUSCHED_ERANGE, "snapshot takes %zu bytes, the buffer %zu", total, cap);
    if (!buf)
        return gs_error(&c->err, GPUSCHED_EINVAL, "buf is NULL");
    gs_wr w = {buf};
    gs_wr_bytes(&w, GS_SNAP_MAGIC, 8);
    gs_wr_u32(&w, c->podx_jobs ? GS_SNAP_VERSION_PODS : 2u);
    gs_wr_u32(&w, 0);
    gs_wr_u64(&w, topo_len);
    gs_wr_u64(&w, state_len);
    size_t written = 0;
    rc = gs_topo_image_write(c->topo, w.p, topo_len, &written);
    if (rc || written != topo_len)
        return gs_error(&c->err, rc ? rc : GPUSCHED_ECORRUPT, "topology image: %s", gpusched_strerror(rc));
    w.p += topo_len; /* written in place by the topology's writer */
    gs_state_write(c, &w);
    gs_wr_u64(&w, gs_checksum64(buf, total - 8));
    return gs_ok(&c->err);
}

/* ---- reader ------------------------------------------------------------- */

typedef struct gs_restore {
    gpusched_cluster *c;
    gs_err *err;
    uint32_t *nodes;        /* scratch for one record's pairs */
    uint64_t *masks;
    uint32_t scratch_cap;
    uint32_t version;       /* the image's format version */
    gs_podx *podx;          /* scratch for one job's podx */
} gs_restore;

/* Reads version 3's tail of a job with n pairs into s->podx; *has: whether
 * the job holds anything beyond GPUs. */
static int gs_read_podx(gs_restore *s, gs_rd *r, uint32_t n, uint32_t index, bool *has)
{
    *has = false;
    if (gs_rd_left(r) < 4)
        return gs_error(s->err, GPUSCHED_ECORRUPT, "job %u: truncated", index);
    uint32_t flag = gs_rd_u32(r);
    if (flag > 1)
        return gs_error(s->err, GPUSCHED_ECORRUPT, "job %u: resources flag %u", index, flag);
    if (!flag)
        return 0;
    int rc = gs_podx_read(r, n, s->c->topo->nres, &s->c->alloc, &s->podx);
    if (rc == GPUSCHED_ENOMEM)
        return gs_error(s->err, rc, "out of memory reading job %u", index);
    if (rc)
        return gs_error(s->err, rc, "job %u: its pods' resources are malformed or truncated", index);
    *has = true;
    return 0;
}

static int gs_read_pairs(gs_restore *s, gs_rd *r, uint32_t n, const char *what, uint32_t index)
{
    if (n == 0 || n > s->c->topo->nnodes)
        return gs_error(s->err, GPUSCHED_ECORRUPT, "%s %u: %u pairs", what, index, n);
    if (gs_rd_left(r) < (size_t)n * GS_SNAP_PAIR)
        return gs_error(s->err, GPUSCHED_ECORRUPT, "%s %u: %u pairs run past the state", what, index, n);
    if (n > s->scratch_cap) {
        const gs_alloc *a = &s->c->alloc;
        uint32_t *nodes = gs_realloc_array(a, s->nodes, n, sizeof *nodes);
        if (nodes)
            s->nodes = nodes;
        uint64_t *masks = nodes ? gs_realloc_array(a, s->masks, n, sizeof *masks) : NULL;
        if (!masks)
            return gs_error(s->err, GPUSCHED_ENOMEM, "out of memory reading %s %u", what, index);
        s->masks = masks;
        s->scratch_cap = n;
    }
    for (uint32_t i = 0; i < n; i++) {
        s->nodes[i] = gs_rd_u32(r);
        s->masks[i] = gs_rd_u64(r);
    }
    return 0;
}

/* A validation failure of the cluster becomes a corrupt image; a lack of
 * memory stays what it is. */
static int gs_restore_fail(gs_restore *s, int rc, const char *what, uint32_t index)
{
    if (rc == GPUSCHED_ENOMEM)
        return gs_error(s->err, rc, "out of memory restoring %s %u", what, index);
    return gs_error(s->err, GPUSCHED_ECORRUPT, "%s %u: %s", what, index, s->c->err.msg);
}

static int gs_restore_jobs(gs_restore *s, gs_rd *r, uint32_t njobs)
{
    for (uint32_t i = 0; i < njobs; i++) {
        if (gs_rd_left(r) < (s->version >= 2 ? GS_SNAP_JOB_HEAD : GS_SNAP_JOB_HEAD_V1))
            return gs_error(s->err, GPUSCHED_ECORRUPT, "job %u: truncated", i);
        gpusched_job j = GPUSCHED_JOB_INIT;
        j.id = gs_rd_u64(r);
        j.start_time = (int64_t)gs_rd_u64(r);
        j.cost_hint = gs_rd_u64(r);
        if (s->version >= 2)
            j.protected_until = (int64_t)gs_rd_u64(r);
        j.priority = (int32_t)gs_rd_u32(r);
        j.tenant = gs_rd_u32(r);
        j.flags = gs_rd_u32(r);
        uint32_t n = gs_rd_u32(r);
        int rc = gs_read_pairs(s, r, n, "job", i);
        if (rc)
            return rc;
        gs_op op = {.kind = GS_OP_CLAIM, .n = n, .nodes = s->nodes, .masks = s->masks};
        bool has = false;
        if (s->version >= GS_SNAP_VERSION_PODS && (rc = gs_read_podx(s, r, n, i, &has)))
            return rc;
        if (has)
            op.podx = s->podx;
        if ((rc = gs_cluster_job_copy_in(s->c, &op.job, &j)) || (rc = gs_txn_commit_one(s->c, &op)))
            return gs_restore_fail(s, rc, "job", i);
    }
    return 0;
}

static int gs_restore_resv(gs_restore *s, gs_rd *r, uint32_t nresv)
{
    for (uint32_t i = 0; i < nresv; i++) {
        if (gs_rd_left(r) < GS_SNAP_RESV_HEAD)
            return gs_error(s->err, GPUSCHED_ECORRUPT, "reservation %u: truncated", i);
        uint64_t id = gs_rd_u64(r);
        uint32_t n = gs_rd_u32(r);
        if (gs_rd_u32(r) != 0)
            return gs_error(s->err, GPUSCHED_ECORRUPT, "reservation %u: reserved field is not zero", i);
        if (gs_cluster_resv_find(s->c, id))
            return gs_error(s->err, GPUSCHED_ECORRUPT, "reservation %u: job %llu has two reservations", i,
                            (unsigned long long)id);
        int rc = gs_read_pairs(s, r, n, "reservation", i);
        if (rc)
            return rc;
        if ((rc = gpusched_cluster_reserve(s->c, id, n, s->nodes, s->masks)))
            return gs_restore_fail(s, rc, "reservation", i);
    }
    return 0;
}

static int gs_restore_state(gs_restore *s, gs_rd *r)
{
    gpusched_cluster *c = s->c;
    const struct gpusched_topo *t = c->topo;
    if (gs_rd_left(r) < GS_SNAP_STATE_HEAD)
        return gs_error(s->err, GPUSCHED_ECORRUPT, "state section truncated");
    uint32_t nnodes = gs_rd_u32(r), njobs = gs_rd_u32(r), nresv = gs_rd_u32(r), zero = gs_rd_u32(r);
    uint64_t ngpus = gs_rd_u64(r);
    if (nnodes != t->nnodes || ngpus != t->ngpus || zero)
        return gs_error(s->err, GPUSCHED_ECORRUPT,
                        "state describes %u nodes and %llu GPUs, the topology %u and %llu", nnodes,
                        (unsigned long long)ngpus, t->nnodes, (unsigned long long)t->ngpus);
    if (gs_rd_left(r) < nnodes)
        return gs_error(s->err, GPUSCHED_ECORRUPT, "node health truncated");
    const unsigned char *health = gs_rd_bytes(r, nnodes);
    for (uint32_t n = 0; n < nnodes; n++)
        if (health[n] >= GS_NODE_HEALTHS)
            return gs_error(s->err, GPUSCHED_ECORRUPT, "node %u: health %u", n, health[n]);
    int rc;
    /* Jobs and reservations go in while every node is up (they may sit on
     * nodes that failed later); health comes last. */
    if ((rc = gs_restore_jobs(s, r, njobs)) || (rc = gs_restore_resv(s, r, nresv)))
        return rc;
    for (uint32_t n = 0; n < nnodes; n++)
        if (health[n] != GPUSCHED_NODE_UP) {
            uint64_t old = gs_cluster_node_avail(c, n);
            c->node_health[n] = health[n];
            c->nodes_not_up++;
            gs_cluster_node_changed(c, n, old);
        }
    if (gs_rd_left(r))
        return gs_error(s->err, GPUSCHED_ECORRUPT, "%zu bytes left after the state", gs_rd_left(r));
    return 0;
}

static int gs_restore_image(const unsigned char *b, size_t len, const gs_alloc *a, gpusched_cluster **out,
                            gs_err *e)
{
    if (len < GS_SNAP_HEADER + 8)
        return gs_error(e, GPUSCHED_ECORRUPT, "image of %zu bytes is shorter than a header", len);
    if (memcmp(b, GS_SNAP_MAGIC, 8))
        return gs_error(e, GPUSCHED_ECORRUPT, "not a cluster snapshot (bad magic)");
    gs_rd r = {b + 8, b + len, false};
    uint32_t version = gs_rd_u32(&r), flags = gs_rd_u32(&r);
    uint64_t topo_len = gs_rd_u64(&r), state_len = gs_rd_u64(&r);
    if (version < GS_SNAP_VERSION_MIN || version > GS_SNAP_VERSION)
        return gs_error(e, GPUSCHED_EVERSION, "snapshot version %u, this library reads %u to %u", version,
                        GS_SNAP_VERSION_MIN, GS_SNAP_VERSION);
    if (flags)
        return gs_error(e, GPUSCHED_ECORRUPT, "unknown flags 0x%x", flags);
    uint64_t body = len - GS_SNAP_HEADER - 8;
    if (topo_len > body || state_len != body - topo_len)
        return gs_error(e, GPUSCHED_ECORRUPT,
                        "section lengths %llu + %llu do not match the image's %llu body bytes",
                        (unsigned long long)topo_len, (unsigned long long)state_len,
                        (unsigned long long)body);
    if (gs_le64(b + len - 8) != gs_checksum64(b, len - 8))
        return gs_error(e, GPUSCHED_ECORRUPT, "checksum mismatch");

    /* The state holds one health byte per node: a topology with more nodes
     * than that cannot match it, and a uniform image would otherwise claim
     * billions of nodes in a few bytes and be built before the mismatch
     * shows. */
    uint64_t room = state_len < GS_SNAP_STATE_HEAD ? 0 : state_len - GS_SNAP_STATE_HEAD;
    uint32_t max_nodes = room < GS_TOPO_IMAGE_ANY_NODES ? (uint32_t)room : GS_TOPO_IMAGE_ANY_NODES;
    gpusched_topo *topo = NULL;
    size_t consumed = 0;
    int rc = gs_topo_image_read(b + GS_SNAP_HEADER, (size_t)topo_len, max_nodes, a, &topo, &consumed, e);
    if (rc)
        return rc;
    if (consumed != topo_len) {
        gpusched_topo_unref(topo);
        return gs_error(e, GPUSCHED_ECORRUPT, "topology image takes %zu bytes, its section %llu", consumed,
                        (unsigned long long)topo_len);
    }
    gs_restore s = {.err = e, .version = version};
    rc = gs_cluster_create(topo, a, &s.c);
    gpusched_topo_unref(topo); /* the cluster holds its own reference */
    if (rc)
        return gs_error(e, rc, "out of memory creating the cluster");
    gs_rd st = {b + GS_SNAP_HEADER + topo_len, b + len - 8, false};
    rc = gs_restore_state(&s, &st);
    gs_free(a, s.nodes);
    gs_free(a, s.masks);
    gs_free(a, s.podx);
    if (rc) {
        gpusched_cluster_unref(s.c);
        return rc;
    }
    gs_err_clear(&s.c->err);
    *out = s.c;
    return 0;
}

GPUSCHED_API int gpusched_cluster_restore(const void *buf, size_t len, const gpusched_allocator *alloc,
                                          gpusched_cluster **out, char *errbuf, size_t errbuf_len)
{
    gs_err e = {0};
    gs_alloc a;
    int rc;
    if (!buf || !out)
        rc = gs_error(&e, GPUSCHED_EINVAL, "buf or out is NULL");
    else if (gs_alloc_init(&a, alloc))
        rc = gs_error(&e, GPUSCHED_EINVAL, "invalid allocator");
    else
        rc = gs_restore_image(buf, len, &a, out, &e);
    gs_err_export(&e, errbuf, errbuf_len);
    return rc;
}
