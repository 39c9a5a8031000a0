/* The binary image: round trips, compact uniform images, and hostile
 * input (every truncation, byte flips with and without a valid checksum). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "bytes.h"
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
    img[8] = 4;
    cr_assert_eq(gs_topo_image_read(img, size, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &consumed, &e),
                 GPUSCHED_EVERSION);
    cr_assert_str_eq(e.msg, "topology image: version 4, this library reads 2 to 3");
    img[8] = 1; /* version 1 (FNV-1a checksums) is no longer read */
    cr_assert_eq(gs_topo_image_read(img, size, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &consumed, &e),
                 GPUSCHED_EVERSION);
    cr_assert_str_eq(e.msg, "topology image: version 1, this library reads 2 to 3");
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

/* ---- resources (version 3) ---------------------------------------------- */

static const char with_res[] = "levels zone rack\n"
                               "classes h100 a100\n"
                               "labels ib\n"
                               "resources cpu memory nic\n"
                               "node z0/r[0-2] h[0-] count=3 gpus=8 class=h100 labels=ib cpu=112000 memory=2097152\n"
                               "node z1/r0 a0 gpus=4 class=a100 memory=4294967295 nic=1\n"
                               "node z1/r1 a1 gpus=2 class=a100\n";

/* The text of tests/fuzz/gen-seeds.c whose image is corpus/topo-image/mixed.img. */
static const char seed_mixed[] = "# zones of uneven racks\n"
                                 "levels zone rack\n"
                                 "classes h100 a100\n"
                                 "labels ib nvme spot\n"
                                 "node z0/r[0-2] h[0-] count=3 gpus=8 class=h100 labels=ib\n"
                                 "node z1/r0 a0 gpus=4 class=a100 labels=nvme,spot\n"
                                 "node z1/r1 a1 gpus=2 class=a100\r\n"
                                 "node z1/r[2-3]x big[7-8] gpus=64\n";

static uint32_t img_version(const uint8_t *img) { return gs_le32(img + 8); }
static uint64_t img_checksum(const uint8_t *img) { return gs_le64(img + 24); }

Test(topo_image, resources_roundtrip_as_version_3)
{
    gpusched_topo *t = parse(with_res);
    roundtrip(t);
    topo_assert_roundtrips(t);
    size_t size;
    uint8_t *img = image_of(t, &size);
    cr_assert_eq(img_version(img), 3);
    /* The same topology less its resources: version 2, smaller by the
     * count, the names (in the resource section, and in the name pool,
     * which holds every name the builder interned, as for classes and
     * labels) and 4 bytes per node and resource. */
    gpusched_topo *plain = parse("levels zone rack\nclasses h100 a100\nlabels ib\n"
                                 "node z0/r[0-2] h[0-] count=3 gpus=8 class=h100 labels=ib\n"
                                 "node z1/r0 a0 gpus=4 class=a100\nnode z1/r1 a1 gpus=2 class=a100\n");
    size_t psize;
    uint8_t *pimg = image_of(plain, &psize);
    cr_assert_eq(img_version(pimg), 2);
    cr_assert_eq(size - psize, 4 + 2 * ((1 + 3) + (1 + 6) + (1 + 3)) + 4 * 3 * 11, "%zu - %zu", size, psize);
    free(pimg);
    gpusched_topo_unref(plain);
    free(img);
    gpusched_topo_unref(t);
}

/* A topology without resources is written exactly as before resources
 * existed: the seed image checked in with version 2 reads and writes back
 * byte for byte, and the text it came from gives the same bytes. */
Test(topo_image, images_without_resources_are_unchanged)
{
    const char *root = getenv("GPUSCHED_SOURCE_ROOT");
    cr_assert_not_null(root, "GPUSCHED_SOURCE_ROOT is not set (meson test sets it)");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fuzz/corpus/topo-image/mixed.img", root);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    uint8_t golden[4096];
    size_t glen = fread(golden, 1, sizeof golden, f);
    fclose(f);
    cr_assert_gt(glen, 48);
    cr_assert_eq(img_version(golden), 2);

    gpusched_topo *t = parse(seed_mixed);
    size_t size;
    uint8_t *img = image_of(t, &size);
    cr_assert_eq(size, glen);
    cr_assert_eq(memcmp(img, golden, glen), 0, "the version 2 image changed");
    roundtrip(t);
    free(img);
    gpusched_topo_unref(t);
}

/* The image's checksum is the topology's content hash: it changes with
 * the resources, their names and every capacity, and not otherwise. */
Test(topo_image, checksum_follows_resources)
{
    static const char *const texts[] = {
        "levels r\nnode r0 a gpus=8\nnode r0 b gpus=8\n",
        "levels r\nresources cpu\nnode r0 a gpus=8\nnode r0 b gpus=8\n",
        "levels r\nresources cpu\nnode r0 a gpus=8 cpu=1\nnode r0 b gpus=8\n",
        "levels r\nresources cpu\nnode r0 a gpus=8\nnode r0 b gpus=8 cpu=1\n",
        "levels r\nresources cpu\nnode r0 a gpus=8 cpu=2\nnode r0 b gpus=8\n",
        "levels r\nresources mem\nnode r0 a gpus=8 mem=1\nnode r0 b gpus=8\n",
        "levels r\nresources cpu mem\nnode r0 a gpus=8 cpu=1\nnode r0 b gpus=8\n",
        "levels r\nresources mem cpu\nnode r0 a gpus=8 cpu=1\nnode r0 b gpus=8\n",
    };
    enum { N = sizeof texts / sizeof texts[0] };
    uint64_t sums[N];
    for (size_t i = 0; i < N; i++) {
        gpusched_topo *t = parse(texts[i]);
        size_t size;
        uint8_t *img = image_of(t, &size);
        sums[i] = img_checksum(img);
        for (size_t k = 0; k < i; k++)
            cr_assert_neq(sums[k], sums[i], "texts %zu and %zu hash alike", k, i);
        free(img);
        /* The same text again hashes the same. */
        gpusched_topo *again = parse(texts[i]);
        uint8_t *img2 = image_of(again, &size);
        cr_assert_eq(img_checksum(img2), sums[i]);
        free(img2);
        gpusched_topo_unref(again);
        gpusched_topo_unref(t);
    }
}

Test(topo_image, resources_every_truncation_is_corrupt)
{
    gpusched_topo *t = parse(with_res);
    size_t size;
    uint8_t *img = image_of(t, &size);
    for (size_t n = 0; n < size; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, img, n);
        cr_assert_eq(read_expect_clean_error(cut, n, "truncated at", n), GPUSCHED_ECORRUPT);
        free(cut);
    }
    free(img);
    gpusched_topo_unref(t);
}

Test(topo_image, resources_flipped_bytes)
{
    gpusched_topo *t = parse(with_res);
    size_t size;
    uint8_t *img = image_of(t, &size);
    for (size_t i = 0; i < size; i++) {
        img[i] ^= 0x10;
        cr_assert_neq(read_expect_clean_error(img, size, "byte", i), 0, "flip at byte %zu accepted", i);
        img[i] ^= 0x10;
    }
    free(img);
    flip_all(t, true);
    gpusched_topo_unref(t);
}

/* Hand-made version 3 images with a valid checksum. */
static void expect_corrupt(uint8_t *img, size_t size, const char *msg)
{
    fix_checksum(img, size);
    failalloc fa;
    failalloc_init(&fa, -1);
    gs_alloc a;
    gs_alloc_init(&a, &fa.a);
    gpusched_topo *out = NULL;
    size_t consumed;
    gs_err e = {0};
    cr_assert_eq(gs_topo_image_read(img, size, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &consumed, &e),
                 GPUSCHED_ECORRUPT, "%s", msg);
    cr_assert_str_eq(e.msg, msg);
    cr_assert_null(out);
    cr_assert_eq(fa.count, 0, "%s: allocated before refusing", msg);
}

Test(topo_image, hostile_resource_sections)
{
    /* Names: "r" (2 bytes), counts at 32; resources at 48 + 2 + 8 ("default"). */
    gpusched_topo *t = parse("levels r\nresources cpu mem\nnode r0 a gpus=8 cpu=5\n");
    size_t size;
    uint8_t *img = image_of(t, &size);
    const size_t at = 48 + 2 + 8;
    cr_assert_eq(gs_le32(img + at), 2, "the resource count is where the test expects it");
    uint8_t *bad = malloc(size);

    memcpy(bad, img, size);
    bad[at] = 0;
    expect_corrupt(bad, size, "topology image: resource count out of range (at byte 58)");
    memcpy(bad, img, size);
    bad[at] = 9;
    expect_corrupt(bad, size, "topology image: resource count out of range (at byte 58)");
    memcpy(bad, img, size);
    bad[at + 3] = 0x80; /* 2^31 + 2 resources */
    expect_corrupt(bad, size, "topology image: resource count out of range (at byte 58)");
    memcpy(bad, img, size);
    memcpy(bad + at + 9, "cpu", 3); /* "mem" -> "cpu" */
    expect_corrupt(bad, size, "topology image: duplicate resource name (at byte 66)");
    memcpy(bad, img, size);
    bad[at + 4] = 4; /* "cpu" -> "cpu\3" as a longer name: the rest misreads */
    bad[at + 4 + 1 + 3] = 'x';
    failalloc fa;
    failalloc_init(&fa, -1);
    gs_alloc a;
    gs_alloc_init(&a, &fa.a);
    fix_checksum(bad, size);
    gpusched_topo *out = NULL;
    size_t consumed;
    cr_assert_eq(gs_topo_image_read(bad, size, GS_TOPO_IMAGE_ANY_NODES, &a, &out, &consumed, NULL),
                 GPUSCHED_ECORRUPT);
    cr_assert_eq(fa.live, 0);
    free(bad);
    free(img);
    gpusched_topo_unref(t);

    /* A reserved name, which the builder never writes. */
    t = parse("levels r\nresources coun\nnode r0 a gpus=8\n");
    img = image_of(t, &size);
    cr_assert_eq(img[at + 4], 4);
    memcpy(img + at + 5, "gpus", 4);
    expect_corrupt(img, size, "topology image: reserved resource name (at byte 62)");
    free(img);
    gpusched_topo_unref(t);

    /* A version 2 image relabelled 3: its first node-array bytes are read
     * as a resource count and the lengths no longer add up. */
    t = parse("levels r\nnode r0 a gpus=8\n");
    img = image_of(t, &size);
    cr_assert_eq(img_version(img), 2);
    img[8] = 3;
    fix_checksum(img, size);
    cr_assert_eq(read_expect_clean_error(img, size, "relabelled", 8), GPUSCHED_ECORRUPT);
    free(img);
    gpusched_topo_unref(t);

    /* A uniform image with a resource section appended: refused. */
    cr_assert_eq(gpusched_topo_preset("tiny", NULL, &t, NULL, 0), 0);
    img = image_of(t, &size);
    size_t usize = size + 8;
    uint8_t *u = calloc(1, usize);
    size_t names = 48 + (1 + 5) + (1 + 4) + (1 + 4); /* block, rack, h100 */
    memcpy(u, img, names);
    u[8] = 3;
    u[names] = 1; /* one resource, "cpu" */
    memcpy(u + names + 4, "\3cpu", 4);
    memcpy(u + names + 8, img + names, size - names);
    for (int i = 0; i < 8; i++)
        u[16 + i] = (uint8_t)(usize >> (8 * i));
    char msg[128];
    snprintf(msg, sizeof msg,
             "topology image: uniform topology with labels, resources or several classes (at byte %zu)", usize);
    expect_corrupt(u, usize, msg);
    free(u);
    free(img);
    gpusched_topo_unref(t);
}

/* Capacities are counted against the image's length before anything is
 * allocated: a stored image that claims more nodes than its bytes hold is
 * refused, resources or not. */
Test(topo_image, resource_arrays_are_bounded_by_the_input)
{
    gpusched_topo *t = parse(with_res);
    size_t size;
    uint8_t *img = image_of(t, &size);
    /* One node more than the arrays hold, checksum fixed. */
    uint32_t nn = gs_le32(img + 36) + 1;
    for (int i = 0; i < 4; i++)
        img[36 + i] = (uint8_t)(nn >> (8 * i));
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
    cr_assert_eq(fa.count, 0, "%s", e.msg);
    free(img);
    gpusched_topo_unref(t);
}

Test(topo_image, resources_allocation_failures)
{
    gpusched_topo *t = parse(with_res);
    struct read_ctx c = {0};
    c.img = image_of(t, &c.size);
    cr_assert_gt(failalloc_sweep_retry(read_op, read_undo, &c), 10);
    free(c.img);
    gpusched_topo_unref(t);
}
