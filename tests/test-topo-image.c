/* The binary image: round trips, compact uniform images, and hostile
 * input (every truncation, byte flips with and without a valid checksum). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "failalloc.h"
#include "topo/topo-image.h"
#include "topocheck.h"

static gs_alloc libc_alloc(void)
{
    gs_alloc a;
    gs_alloc_init(&a, NULL);
    return a;
}

static uint8_t *image_of(const gpusched_topo *t, size_t *size)
{
    cr_assert_eq(gs_topo_image_size(t, size), 0);
    uint8_t *buf = malloc(*size + 16);
    size_t written = 0;
    cr_assert_eq(gs_topo_image_write(t, buf, *size - 1, &written), GPUSCHED_ERANGE);
    cr_assert_eq(written, *size);
    cr_assert_eq(gs_topo_image_write(t, buf, *size + 16, &written), 0);
    cr_assert_eq(written, *size);
    return buf;
}

static gpusched_topo *parse(const char *text)
{
    gpusched_topo *t;
    char err[256];
    cr_assert_eq(gpusched_topo_parse(text, strlen(text), NULL, &t, err, sizeof err), 0, "%s", err);
    return t;
}

static const char mixed[] = "levels zone rack\n"
                            "classes h100 a100\n"
                            "labels ib nvme spot\n"
                            "node z0/r[0-2] h[0-] count=3 gpus=8 class=h100 labels=ib\n"
                            "node z1/r0 a0 gpus=4 class=a100 labels=nvme,spot\n"
                            "node z1/r1 a1 gpus=2 class=a100\n";

static void roundtrip(const gpusched_topo *t)
{
    size_t size;
    uint8_t *img = image_of(t, &size);
    /* Trailing bytes belong to the caller: consumed stops at the image. */
    memset(img + size, 0xab, 16);
    gs_alloc a = libc_alloc();
    gpusched_topo *back = NULL;
    size_t consumed = 0;
    gs_err e = {0};
    cr_assert_eq(gs_topo_image_read(img, size + 16, GS_TOPO_IMAGE_ANY_NODES, &a, &back, &consumed, &e), 0,
                 "%s", e.msg);
    cr_assert_eq(consumed, size);
    topo_assert_valid(back);
    topo_assert_equal(t, back);
    size_t size2;
    uint8_t *img2 = image_of(back, &size2);
    cr_assert_eq(size2, size);
    cr_assert_eq(memcmp(img, img2, size), 0, "read then write changed the bytes");
    free(img);
    free(img2);
    gpusched_topo_unref(back);
}

Test(topo_image, roundtrip_stored_and_uniform)
{
    gpusched_topo *t = parse(mixed);
    roundtrip(t);
    gpusched_topo_unref(t);
    for (uint32_t i = 0; gpusched_topo_preset_name(i); i++) {
        cr_assert_eq(gpusched_topo_preset(gpusched_topo_preset_name(i), NULL, &t, NULL, 0), 0);
        size_t size;
        cr_assert_eq(gs_topo_image_size(t, &size), 0);
        cr_assert_lt(size, 128, "a uniform image holds its parameters only");
        roundtrip(t);
        gpusched_topo_unref(t);
    }
    /* A uniform shape read from text is stored: written per node. */
    t = parse("levels rack\nnode r[0-3] n[0-] count=4 gpus=8\n");
    roundtrip(t);
    gpusched_topo_unref(t);
}

Test(topo_image, bad_arguments)
{
    gpusched_topo *t = parse(mixed);
    size_t size;
    uint8_t buf[8];
    cr_assert_eq(gs_topo_image_size(NULL, &size), GPUSCHED_EINVAL);
    cr_assert_eq(gs_topo_image_write(t, NULL, 0, &size), GPUSCHED_ERANGE);
    cr_assert_eq(gs_topo_image_write(t, buf, sizeof buf, NULL), GPUSCHED_EINVAL);
    gs_alloc a = libc_alloc();
    gpusched_topo *out = NULL;
    cr_assert_eq(gs_topo_image_read(NULL, 0, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &size, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gs_topo_image_read(buf, 0, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &size, NULL), GPUSCHED_ECORRUPT);
    gpusched_topo_unref(t);
}

static int read_expect_clean_error(const uint8_t *img, size_t len, const char *what, size_t at)
{
    failalloc fa;
    failalloc_init(&fa, -1);
    gs_alloc a;
    gs_alloc_init(&a, &fa.a);
    gpusched_topo *out = NULL;
    size_t consumed = 0;
    gs_err e = {0};
    int rc = gs_topo_image_read(img, len, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &consumed, &e);
    if (rc == 0) {
        topo_assert_valid(out);
        gpusched_topo_unref(out);
    } else {
        cr_assert(rc == GPUSCHED_ECORRUPT || rc == GPUSCHED_EVERSION, "%s %zu: %s", what, at,
                  gpusched_err_name(rc));
        cr_assert_null(out);
        cr_assert_neq(e.msg[0], '\0');
    }
    cr_assert_eq(fa.live, 0, "%s %zu: leak", what, at);
    return rc;
}

Test(topo_image, every_truncation_is_corrupt)
{
    gpusched_topo *t = parse(mixed);
    size_t size;
    uint8_t *img = image_of(t, &size);
    for (size_t n = 0; n < size; n++) {
        uint8_t *cut = malloc(n ? n : 1); /* exact size, so ASan sees over-reads */
        memcpy(cut, img, n);
        cr_assert_eq(read_expect_clean_error(cut, n, "truncated at", n), GPUSCHED_ECORRUPT);
        free(cut);
    }
    free(img);
    gpusched_topo_unref(t);
}

static void fix_checksum(uint8_t *img, size_t size)
{
    uint64_t h = gs_checksum64(img + 32, size - 32);
    for (int i = 0; i < 8; i++)
        img[24 + i] = (uint8_t)(h >> (8 * i));
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void flip_all(const gpusched_topo *t, bool recompute)
{
    size_t size;
    uint8_t *img = image_of(t, &size);
    uint8_t *bad = malloc(size);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int rejected = 0;
    for (size_t i = 0; i < size; i++)
        for (int k = 0; k < 3; k++) {
            memcpy(bad, img, size);
            uint8_t v = k == 0 ? (uint8_t)(bad[i] ^ 1) : k == 1 ? 0xff : (uint8_t)xorshift(&seed);
            if (v == bad[i])
                continue;
            bad[i] = v;
            if (recompute && i >= 32)
                fix_checksum(bad, size);
            rejected += read_expect_clean_error(bad, size, "byte", i) != 0;
        }
    if (!recompute)
        cr_assert_gt(rejected, 0);
    free(bad);
    free(img);
}

Test(topo_image, flipped_bytes_are_rejected_by_the_checksum)
{
    gpusched_topo *t = parse(mixed);
    size_t size;
    uint8_t *img = image_of(t, &size);
    for (size_t i = 0; i < size; i++) {
        img[i] ^= 0x10;
        int rc = read_expect_clean_error(img, size, "byte", i);
        cr_assert_neq(rc, 0, "flip at byte %zu accepted", i);
        img[i] ^= 0x10;
    }
    free(img);
    gpusched_topo_unref(t);
}

/* With the checksum recomputed, every field's own validation is exercised:
 * each read either fails cleanly or yields a topology that passes every
 * invariant (a changed GPU count, say, is a valid topology). */
Test(topo_image, flipped_fields_with_valid_checksum)
{
    gpusched_topo *t = parse(mixed);
    flip_all(t, true);
    gpusched_topo_unref(t);
    cr_assert_eq(gpusched_topo_preset("tiny", NULL, &t, NULL, 0), 0);
    flip_all(t, true);
    gpusched_topo_unref(t);
}

Test(topo_image, hostile_counts_allocate_nothing)
{
    gpusched_topo *t = parse(mixed);
    size_t size;
    uint8_t *img = image_of(t, &size);
    /* nnodes = 2^32-2 and ndom[] huge, checksum fixed: must be refused
     * before any allocation. */
    img[36] = 0xfe, img[37] = 0xff, img[38] = 0xff, img[39] = 0xff;
    fix_checksum(img, size);
    failalloc fa;
    failalloc_init(&fa, -1);
    gs_alloc a;
    gs_alloc_init(&a, &fa.a);
    gpusched_topo *out = NULL;
    size_t consumed;
    gs_err e = {0};
    cr_assert_eq(gs_topo_image_read(img, size, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &consumed, &e),
                 GPUSCHED_ECORRUPT);
    cr_assert_eq(fa.count, 0);
    img[8] = 3;
    cr_assert_eq(gs_topo_image_read(img, size, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &consumed, &e),
                 GPUSCHED_EVERSION);
    cr_assert_str_eq(e.msg, "topology image: version 3, this library reads 2");
    img[8] = 1; /* version 1 (FNV-1a checksums) is no longer read */
    cr_assert_eq(gs_topo_image_read(img, size, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &consumed, &e),
                 GPUSCHED_EVERSION);
    cr_assert_str_eq(e.msg, "topology image: version 1, this library reads 2");
    free(img);
    gpusched_topo_unref(t);
}

struct read_ctx {
    uint8_t *img;
    size_t size;
    gpusched_topo *t;
};

static int read_op(failalloc *fa, void *ctx)
{
    struct read_ctx *c = ctx;
    gs_alloc a;
    gs_alloc_init(&a, &fa->a);
    size_t consumed;
    return gs_topo_image_read(c->img, c->size, GS_TOPO_IMAGE_ANY_NODES, &a, &c->t, &consumed, NULL);
}

static void read_undo(void *ctx)
{
    struct read_ctx *c = ctx;
    gpusched_topo_unref(c->t);
}

Test(topo_image, allocation_failures)
{
    gpusched_topo *t = parse(mixed);
    struct read_ctx c = {0};
    c.img = image_of(t, &c.size);
    cr_assert_gt(failalloc_sweep_retry(read_op, read_undo, &c), 10);
    free(c.img);
    gpusched_topo_unref(t);
    cr_assert_eq(gpusched_topo_preset("tiny", NULL, &t, NULL, 0), 0);
    c.img = image_of(t, &c.size);
    cr_assert_gt(failalloc_sweep_retry(read_op, read_undo, &c), 3);
    free(c.img);
    gpusched_topo_unref(t);
}

/* A uniform image is a few dozen bytes whatever the topology's size, so
 * the reader takes the node count its container can justify and refuses a
 * larger claim before allocating; a stored image is refused the same way. */
static int read_limited(const gpusched_topo *t, uint32_t max_nodes, long *allocs, char *msg)
{
    size_t size;
    uint8_t *img = image_of(t, &size);
    failalloc fa;
    failalloc_init(&fa, -1);
    gs_alloc a;
    gs_alloc_init(&a, &fa.a);
    gpusched_topo *out = NULL;
    size_t consumed;
    gs_err e = {0};
    int rc = gs_topo_image_read(img, size, max_nodes, &a, &out, &consumed, &e);
    strcpy(msg, e.msg);
    gpusched_topo_unref(out);
    cr_assert_eq(fa.live, 0);
    *allocs = fa.count;
    free(img);
    return rc;
}

Test(topo_image, node_claims_past_the_container_limit_allocate_nothing)
{
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_preset("gb200-nvl72-1m", NULL, &t, NULL, 0), 0);
    long allocs;
    char msg[GS_ERRMSG_MAX];
    cr_assert_eq(read_limited(t, 258047, &allocs, msg), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(msg, "topology image: 258048 nodes, more than the 258047 its container can hold");
    cr_assert_eq(allocs, 0);
    cr_assert_eq(read_limited(t, 258048, &allocs, msg), 0, "%s", msg);
    cr_assert_gt(allocs, 0);
    gpusched_topo_unref(t);
    t = parse(mixed);
    cr_assert_eq(read_limited(t, 10, &allocs, msg), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(msg, "topology image: 11 nodes, more than the 10 its container can hold");
    cr_assert_eq(allocs, 0);
    cr_assert_eq(read_limited(t, 11, &allocs, msg), 0, "%s", msg);
    gpusched_topo_unref(t);
}
