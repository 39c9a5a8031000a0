/* The binary image (topo-image.h). Every count is checked against the
 * bytes present before anything is allocated, every array element is
 * range-checked, and the names are re-indexed with duplicate detection, so
 * no input can make the reader crash, over-allocate or build a topology
 * that breaks the invariants other modules rely on. */
#include <string.h>

#include "bytes.h"
#include "topo-construct.h"
#include "topo-builder.h"
#include "topo-image.h"

#define GS_IMG_MAGIC "gpustopo"
#define GS_IMG_HEADER 48u  /* magic, version, kind, length, checksum, 4 counts */
#define GS_IMG_BODY 32u    /* the checksum covers [GS_IMG_BODY, length) */

/* ---- writing ----------------------------------------------------------- */

/* A level, class or label name: its length in one byte, then its bytes. */
static void gs_wname(gs_wr *w, const char *s)
{
    size_t n = strlen(s);
    gs_wr_u8(w, (uint8_t)n);
    gs_wr_bytes(w, s, n);
}

static bool gs_is_uniform(const gpusched_topo *t) { return t->names->kind == GS_NAMES_UNIFORM; }

/* Version 3 only where there is something version 2 cannot hold, so that
 * the image of a topology without resources stays what it was. */
static uint32_t gs_version_of(const gpusched_topo *t)
{
    return t->nres ? GS_TOPO_IMAGE_VERSION : GS_TOPO_IMAGE_VERSION_PLAIN;
}

static size_t gs_names_size(const gpusched_topo *t)
{
    size_t n = 0;
    for (uint32_t l = 0; l < t->nlevels; l++)
        n += 1 + strlen(t->level_names[l]);
    for (uint32_t c = 0; c < t->nclasses; c++)
        n += 1 + strlen(t->class_names[c]);
    for (uint32_t i = 0; i < t->nlabels; i++)
        n += 1 + strlen(t->label_names[i]);
    if (t->nres)
        n += 4;
    for (uint32_t r = 0; r < t->nres; r++)
        n += 1 + strlen(t->res_names[r]);
    return n;
}

/* Bytes of the stored-kind arrays after ndom[] and pool_len. */
static uint64_t gs_stored_arrays(uint32_t nlevels, const uint32_t *ndom, uint32_t nnodes,
                                 uint32_t nlabels, uint32_t pool_len)
{
    uint64_t n = 0;
    for (uint32_t l = 0; l < nlevels; l++)
        n += 4ull * ndom[l] * 2;  /* parents and name offsets */
    n -= 4ull * ndom[0];          /* level 0 has no parents */
    n += 4ull * ndom[nlevels - 1];  /* node count of each lowest domain */
    n += (uint64_t)nnodes * (1 + 1 + 4 + (nlabels ? 8 : 0));
    return n + pool_len;
}

int gs_topo_image_size(const gpusched_topo *t, size_t *size)
{
    if (!t || !size)
        return GPUSCHED_EINVAL;
    uint64_t n = GS_IMG_HEADER + gs_names_size(t);
    if (gs_is_uniform(t))
        n += 4ull * (t->nlevels + 1) + 4;
    else
        n += 4ull * t->nlevels + 4 +
             gs_stored_arrays(t->nlevels, t->ndom, t->nnodes, t->nlabels, t->names->pool.len);
    n += 4ull * t->nres * t->nnodes;
    *size = (size_t)n;
    return 0;
}

static void gs_write_stored(gs_wr *w, const gpusched_topo *t)
{
    const gs_names *nm = t->names;
    uint32_t L = t->nlevels;
    for (uint32_t l = 0; l < L; l++)
        gs_wr_u32(w, t->ndom[l]);
    gs_wr_u32(w, nm->pool.len);
    for (uint32_t l = 1; l < L; l++)
        for (uint32_t d = 0; d < t->ndom[l]; d++)
            gs_wr_u32(w, t->dom_parent[l][d]);
    for (uint32_t d = 0; d < t->ndom[L - 1]; d++)
        gs_wr_u32(w, gs_topo_dom_nodes(t, L - 1, d));
    gs_wr_bytes(w, t->node_gpus, t->nnodes);
    gs_wr_bytes(w, t->node_class, t->nnodes);
    if (t->nlabels)
        for (uint32_t n = 0; n < t->nnodes; n++)
            gs_wr_u64(w, t->node_labels[n]);
    for (uint32_t n = 0; n < t->nnodes; n++)
        gs_wr_u32(w, nm->node_name[n]);
    for (uint32_t l = 0; l < L; l++)
        for (uint32_t d = 0; d < t->ndom[l]; d++)
            gs_wr_u32(w, nm->dom_name[l][d]);
    gs_wr_bytes(w, nm->pool.buf, nm->pool.len);
}

int gs_topo_image_write(const gpusched_topo *t, uint8_t *buf, size_t cap, size_t *written)
{
    size_t size;
    int rc = gs_topo_image_size(t, &size);
    if (rc || !written)
        return GPUSCHED_EINVAL;
    *written = size;
    if (!buf || cap < size)
        return GPUSCHED_ERANGE;
    gs_wr w = {buf};
    gs_wr_bytes(&w, GS_IMG_MAGIC, 8);
    gs_wr_u32(&w, gs_version_of(t));
    gs_wr_u32(&w, gs_is_uniform(t) ? GS_NAMES_UNIFORM : GS_NAMES_STORED);
    gs_wr_u64(&w, size);
    gs_wr_u64(&w, 0); /* checksum, filled last */
    gs_wr_u32(&w, t->nlevels);
    gs_wr_u32(&w, t->nnodes);
    gs_wr_u32(&w, t->nclasses);
    gs_wr_u32(&w, t->nlabels);
    for (uint32_t l = 0; l < t->nlevels; l++)
        gs_wname(&w, t->level_names[l]);
    for (uint32_t c = 0; c < t->nclasses; c++)
        gs_wname(&w, t->class_names[c]);
    for (uint32_t i = 0; i < t->nlabels; i++)
        gs_wname(&w, t->label_names[i]);
    if (t->nres)
        gs_wr_u32(&w, t->nres);
    for (uint32_t r = 0; r < t->nres; r++)
        gs_wname(&w, t->res_names[r]);
    if (gs_is_uniform(t)) {
        for (uint32_t l = 0; l <= t->nlevels; l++)
            gs_wr_u32(&w, t->names->fanout[l]);
        gs_wr_u32(&w, t->node_gpus[0]);
    } else {
        gs_write_stored(&w, t);
    }
    for (uint32_t r = 0; r < t->nres; r++)
        for (uint32_t n = 0; n < t->nnodes; n++)
            gs_wr_u32(&w, t->node_res[r][n]);
    gs_wr sum = {buf + 24};
    gs_wr_u64(&sum, gs_checksum64(buf + GS_IMG_BODY, size - GS_IMG_BODY));
    return 0;
}

/* ---- reading ----------------------------------------------------------- */

/* The image's bytes, from its start to its end (the end of the buffer
 * until the header says where the image ends); positions in messages
 * count from the start. Every section is bounded (gs_need) before it is
 * read, so the reader never goes bad and a short read is reported where
 * it was found. */
typedef struct gs_ird {
    gs_rd in;
    const uint8_t *start;
    gs_err *e;
} gs_ird;

static size_t gs_pos(const gs_ird *r) { return (size_t)(r->in.p - r->start); }

static int gs_corrupt_at(gs_ird *r, const char *what, size_t at)
{
    return gs_error(r->e, GPUSCHED_ECORRUPT, "topology image: %s (at byte %zu)", what, at);
}

static int gs_corrupt(gs_ird *r, const char *what) { return gs_corrupt_at(r, what, gs_pos(r)); }

static int gs_need(gs_ird *r, uint64_t bytes)
{
    return bytes <= gs_rd_left(&r->in) ? 0 : gs_corrupt(r, "truncated");
}

static int gs_r32(gs_ird *r, uint32_t *v)
{
    int rc = gs_need(r, 4);
    if (!rc)
        *v = gs_rd_u32(&r->in);
    return rc;
}

/* A level, class or label name into `dst` (64 bytes, NUL-terminated). */
static int gs_rname(gs_ird *r, char *dst)
{
    int rc = gs_need(r, 1);
    if (rc)
        return rc;
    uint8_t n = gs_rd_u8(&r->in);
    if ((rc = gs_need(r, n)))
        return rc;
    if (gs_name_check((const char *)r->in.p, n))
        return gs_corrupt(r, "invalid name");
    memcpy(dst, gs_rd_bytes(&r->in, n), n);
    dst[n] = '\0';
    return 0;
}

typedef struct gs_imeta {
    uint32_t version, kind, nlevels, nnodes, nclasses, nlabels, nres;
    char levels[GS_MAX_LEVELS][GPUSCHED_MAX_NAME + 1];
    char (*classes)[GPUSCHED_MAX_NAME + 1];   /* caller's scratch, 255 entries */
    char labels[GPUSCHED_MAX_LABELS][GPUSCHED_MAX_NAME + 1];
    char res[GPUSCHED_MAX_RESOURCES][GPUSCHED_MAX_NAME + 1];
} gs_imeta;

static int gs_rdistinct(gs_ird *r, char (*names)[GPUSCHED_MAX_NAME + 1], uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int rc = gs_rname(r, names[i]);
        if (rc)
            return rc;
        for (uint32_t k = 0; k < i; k++)
            if (!strcmp(names[k], names[i]))
                return gs_corrupt(r, "duplicate level, class or label name");
    }
    return 0;
}

/* Version 3: the resource count and names. A version 3 image without a
 * resource would be written as version 2, so it is not canonical. */
static int gs_read_res_names(gs_ird *r, gs_imeta *m)
{
    size_t at = gs_pos(r);
    int rc = gs_r32(r, &m->nres);
    if (rc)
        return rc;
    if (m->nres < 1 || m->nres > GPUSCHED_MAX_RESOURCES)
        return gs_corrupt_at(r, "resource count out of range", at);
    for (uint32_t i = 0; i < m->nres; i++) {
        at = gs_pos(r);
        if ((rc = gs_rname(r, m->res[i])))
            return rc;
        if (gs_resource_reserved(m->res[i], strlen(m->res[i])))
            return gs_corrupt_at(r, "reserved resource name", at);
        for (uint32_t k = 0; k < i; k++)
            if (!strcmp(m->res[k], m->res[i]))
                return gs_corrupt_at(r, "duplicate resource name", at);
    }
    return 0;
}

static int gs_read_meta(gs_ird *r, gs_imeta *m, uint32_t max_nodes, size_t *length)
{
    int rc = gs_need(r, GS_IMG_HEADER);
    if (rc)
        return rc;
    const uint8_t *p = r->in.p; /* the header, read in place; the position stays 0 */
    if (memcmp(p, GS_IMG_MAGIC, 8))
        return gs_corrupt(r, "bad magic");
    m->version = gs_le32(p + 8);
    if (m->version < GS_TOPO_IMAGE_VERSION_PLAIN || m->version > GS_TOPO_IMAGE_VERSION)
        return gs_error(r->e, GPUSCHED_EVERSION, "topology image: version %u, this library reads %u to %u",
                        m->version, GS_TOPO_IMAGE_VERSION_PLAIN, GS_TOPO_IMAGE_VERSION);
    m->kind = gs_le32(p + 12);
    uint64_t total = gs_le64(p + 16);
    if (m->kind != GS_NAMES_STORED && m->kind != GS_NAMES_UNIFORM)
        return gs_corrupt(r, "unknown kind");
    if (total < GS_IMG_HEADER || total > gs_rd_left(&r->in))
        return gs_corrupt(r, total < GS_IMG_HEADER ? "bad length" : "truncated");
    if (gs_le64(p + 24) != gs_checksum64(p + GS_IMG_BODY, (size_t)total - GS_IMG_BODY))
        return gs_corrupt(r, "checksum mismatch");
    /* From here on the image ends where its header says. */
    r->in.end = r->start + total;
    *length = (size_t)total;
    m->nlevels = gs_le32(p + 32);
    m->nnodes = gs_le32(p + 36);
    m->nclasses = gs_le32(p + 40);
    m->nlabels = gs_le32(p + 44);
    gs_rd_skip(&r->in, GS_IMG_HEADER);
    if (m->nlevels < 1 || m->nlevels > GS_MAX_LEVELS || m->nnodes < 1 || m->nnodes == UINT32_MAX ||
        m->nclasses < 1 || m->nclasses > GPUSCHED_MAX_CLASSES || m->nlabels > GPUSCHED_MAX_LABELS)
        return gs_corrupt(r, "count out of range");
    if (m->nnodes > max_nodes)
        return gs_error(r->e, GPUSCHED_ECORRUPT, "topology image: %u nodes, more than the %u its container can hold",
                        m->nnodes, max_nodes);
    if ((rc = gs_rdistinct(r, m->levels, m->nlevels)) || (rc = gs_rdistinct(r, m->classes, m->nclasses)) ||
        (rc = gs_rdistinct(r, m->labels, m->nlabels)))
        return rc;
    return m->version == GS_TOPO_IMAGE_VERSION_PLAIN ? 0 : gs_read_res_names(r, m);
}

static int gs_set_meta(gpusched_topo *t, const gs_imeta *m)
{
    const char *lv[GS_MAX_LEVELS], *cls[GPUSCHED_MAX_CLASSES], *lab[GPUSCHED_MAX_LABELS];
    for (uint32_t l = 0; l < m->nlevels; l++)
        lv[l] = m->levels[l];
    for (uint32_t c = 0; c < m->nclasses; c++)
        cls[c] = m->classes[c];
    for (uint32_t i = 0; i < m->nlabels; i++)
        lab[i] = m->labels[i];
    return gs_topo_set_meta(t, lv, m->nclasses, cls, m->nlabels, lab);
}

static int gs_set_resources(gpusched_topo *t, const gs_imeta *m)
{
    const char *res[GPUSCHED_MAX_RESOURCES];
    for (uint32_t k = 0; k < m->nres; k++)
        res[k] = m->res[k];
    return gs_topo_set_resources(t, m->nres, res);
}

static int gs_read_uniform(gs_ird *r, const gs_imeta *m, const gs_alloc *a, gpusched_topo **out)
{
    uint32_t fan[GS_MAX_LEVELS + 1], gpus;
    int rc = 0;
    for (uint32_t l = 0; !rc && l <= m->nlevels; l++)
        rc = gs_r32(r, &fan[l]);
    if (rc || (rc = gs_r32(r, &gpus)))
        return rc;
    if (gs_rd_left(&r->in))
        return gs_corrupt(r, "trailing bytes");
    const char *lv[GS_MAX_LEVELS];
    for (uint32_t l = 0; l < m->nlevels; l++)
        lv[l] = m->levels[l];
    if (m->nclasses != 1 || m->nlabels != 0 || m->nres != 0)
        return gs_corrupt(r, "uniform topology with labels, resources or several classes");
    gs_err scratch = {0};
    rc = gs_uniform_check_args(m->nlevels, lv, fan, gpus, m->classes[0], &scratch);
    uint64_t nodes = 1;
    for (uint32_t l = 0; !rc && l <= m->nlevels; l++)
        nodes *= fan[l];
    if (rc || nodes != m->nnodes)
        return gs_corrupt(r, "inconsistent uniform shape");
    rc = gs_topo_uniform(m->nlevels, lv, fan, gpus, m->classes[0], a, out, r->e);
    return rc;
}

/* The shape arrays: parents must make every domain's children one
 * non-empty contiguous run, and leaf sizes must be non-empty and add up. */
static int gs_read_shape(gs_ird *r, gpusched_topo *t)
{
    uint32_t L = t->nlevels;
    for (uint32_t l = 1; l < L; l++) {
        uint32_t *cs = t->child_start[l - 1];
        uint32_t prev = 0;
        cs[0] = 0;
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            uint32_t p = gs_rd_u32(&r->in);
            if (d == 0 ? p != 0 : (p != prev && p != prev + 1))
                return gs_corrupt(r, "domain parents are not contiguous");
            if (p >= t->ndom[l - 1])
                return gs_corrupt(r, "domain parent out of range");
            if (p != prev)
                cs[p] = d;
            t->dom_parent[l][d] = prev = p;
        }
        if (prev != t->ndom[l - 1] - 1)
            return gs_corrupt(r, "a domain has no child");
        cs[t->ndom[l - 1]] = t->ndom[l];
    }
    uint32_t *ds = t->dom_start[L - 1];
    uint64_t node = 0;
    for (uint32_t d = 0; d < t->ndom[L - 1]; d++) {
        uint32_t n = gs_rd_u32(&r->in);
        if (n == 0 || n > t->nnodes - node)
            return gs_corrupt(r, "bad node count of a lowest domain");
        ds[d] = (uint32_t)node;
        for (uint32_t k = 0; k < n; k++)
            t->node_leaf[node + k] = d;
        node += n;
    }
    if (node != t->nnodes)
        return gs_corrupt(r, "lowest domains do not cover the nodes");
    ds[t->ndom[L - 1]] = t->nnodes;
    gs_topo_finish_ranges(t);
    return 0;
}

static int gs_read_nodes(gs_ird *r, gpusched_topo *t)
{
    memcpy(t->node_gpus, gs_rd_bytes(&r->in, t->nnodes), t->nnodes);
    memcpy(t->node_class, gs_rd_bytes(&r->in, t->nnodes), t->nnodes);
    for (uint32_t n = 0; n < t->nnodes; n++) {
        if (t->node_gpus[n] > GPUSCHED_MAX_NODE_GPUS)
            return gs_corrupt(r, "node GPU count out of range");
        if (t->node_class[n] >= t->nclasses)
            return gs_corrupt(r, "node class out of range");
    }
    if (t->nlabels) {
        uint64_t bad = t->nlabels == 64 ? 0 : ~0ull << t->nlabels;
        for (uint32_t n = 0; n < t->nnodes; n++) {
            t->node_labels[n] = gs_rd_u64(&r->in);
            if (t->node_labels[n] & bad)
                return gs_corrupt(r, "node label out of range");
        }
    }
    if (gs_topo_finish_gpus(t))
        return gs_corrupt(r, "more than 2^32-1 GPUs");
    if (t->ngpus == 0)
        return gs_corrupt(r, "every node has 0 GPUs");
    return 0;
}

/* A name offset must start a valid, NUL-terminated name inside the pool. */
static bool gs_pool_name_ok(const gs_pool *pool, uint32_t off)
{
    if (off >= pool->len)
        return false;
    size_t room = pool->len - off;
    const char *s = pool->buf + off;
    const char *nul = memchr(s, '\0', room < GPUSCHED_MAX_NAME + 1 ? room : GPUSCHED_MAX_NAME + 1);
    return nul && !gs_name_check(s, (size_t)(nul - s));
}

static int gs_read_names(gs_ird *r, gpusched_topo *t)
{
    gs_names *nm = t->names;
    /* The pool follows the offsets: copied first, so they can be checked. */
    size_t pool_at = 4ull * t->nnodes;
    for (uint32_t l = 0; l < t->nlevels; l++)
        pool_at += 4ull * t->ndom[l];
    memcpy(nm->pool.buf, r->in.p + pool_at, nm->pool.len);
    /* A bad offset is reported at its own position. */
    for (uint32_t n = 0; n < t->nnodes; n++) {
        size_t at = gs_pos(r);
        if (!gs_pool_name_ok(&nm->pool, nm->node_name[n] = gs_rd_u32(&r->in)))
            return gs_corrupt_at(r, "bad node name", at);
    }
    for (uint32_t l = 0; l < t->nlevels; l++)
        for (uint32_t d = 0; d < t->ndom[l]; d++) {
            size_t at = gs_pos(r);
            if (!gs_pool_name_ok(&nm->pool, nm->dom_name[l][d] = gs_rd_u32(&r->in)))
                return gs_corrupt_at(r, "bad domain name", at);
        }
    gs_rd_skip(&r->in, nm->pool.len);
    if (gs_names_index(t, true))
        return gs_corrupt(r, "duplicate node name or domain name under one parent");
    return 0;
}

static int gs_read_stored(gs_ird *r, const gs_imeta *m, const gs_alloc *a, gpusched_topo **out)
{
    uint32_t ndom[GS_MAX_LEVELS], pool_len;
    int rc = 0;
    for (uint32_t l = 0; !rc && l < m->nlevels; l++) {
        rc = gs_r32(r, &ndom[l]);
        if (!rc && (ndom[l] == 0 || ndom[l] > m->nnodes || (l && ndom[l] < ndom[l - 1])))
            rc = gs_corrupt(r, "domain count out of range");
    }
    if (rc || (rc = gs_r32(r, &pool_len)))
        return rc;
    uint64_t need = gs_stored_arrays(m->nlevels, ndom, m->nnodes, m->nlabels, pool_len) +
                    4ull * m->nres * m->nnodes;
    if (need != gs_rd_left(&r->in))
        return gs_corrupt(r, need > gs_rd_left(&r->in) ? "truncated" : "trailing bytes");
    gpusched_topo *t = NULL;
    rc = gs_topo_alloc(a, m->nlevels, ndom, m->nnodes, &t);
    if (!rc)
        rc = gs_set_meta(t, m);
    if (!rc)
        rc = gs_names_new_stored(t, pool_len, true);
    if (!rc)
        rc = gs_set_resources(t, m);
    if (rc) {
        gs_topo_destroy(t);
        return gs_error(r->e, rc, "out of memory");
    }
    if ((rc = gs_read_shape(r, t)) || (rc = gs_read_nodes(r, t)) || (rc = gs_read_names(r, t))) {
        gs_topo_destroy(t);
        return rc;
    }
    /* Any capacity is valid: the bytes were counted above. */
    for (uint32_t k = 0; k < t->nres; k++)
        for (uint32_t n = 0; n < t->nnodes; n++)
            t->node_res[k][n] = gs_rd_u32(&r->in);
    *out = t;
    return 0;
}

int gs_topo_image_read(const uint8_t *buf, size_t len, uint32_t max_nodes, const gs_alloc *a,
                       gpusched_topo **out, size_t *consumed, gs_err *e)
{
    if (!buf || !a || !out || !consumed)
        return gs_error(e, GPUSCHED_EINVAL, "topology image: NULL argument");
    char classes[GPUSCHED_MAX_CLASSES][GPUSCHED_MAX_NAME + 1];
    gs_imeta m = {.classes = classes};
    gs_ird r = {{buf, buf + len, false}, buf, e};
    size_t length = 0;
    int rc = gs_read_meta(&r, &m, max_nodes, &length);
    if (rc)
        return rc;
    gpusched_topo *t = NULL;
    rc = m.kind == GS_NAMES_UNIFORM ? gs_read_uniform(&r, &m, a, &t) : gs_read_stored(&r, &m, a, &t);
    if (rc)
        return rc;
    *out = t;
    *consumed = length;
    return 0;
}
