/* Snapshot and restore: round trips to identical bytes, and images that are
 * truncated, corrupted, hostile (valid checksum, bad content) or read out
 * of memory, none of which may create anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cluster-test.h"
#include "cluster/cluster-internal.h"
#include "cluster/txn.h"
#include "failalloc.h"

#define OK(c, call) cr_assert_eq((call), 0, "%s: %s", #call, gpusched_cluster_errmsg(c))

static uint64_t rng = 88172645463325252ull;
static uint32_t below(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* A cluster with single- and multi-node jobs, reservations, and nodes in
 * every health. */
static gpusched_cluster *busy_cluster(gpusched_topo *t)
{
    gpusched_cluster *c = ct_cluster(t);
    uint32_t nnodes = gpusched_topo_node_count(t);
    for (uint64_t id = 1; id < 40; id++) {
        uint32_t nodes[4];
        uint64_t masks[4];
        uint32_t n = 0;
        for (uint32_t node = below(nnodes); node < nnodes && n < 1 + id % 3; node += 1 + below(3)) {
            uint64_t f;
            OK(c, gpusched_cluster_node_state(c, node, &f, NULL, NULL, NULL));
            uint64_t m = f & (uint64_t)(rng | 1);
            if (m) {
                nodes[n] = node;
                masks[n++] = m;
            }
        }
        if (!n)
            continue;
        gpusched_job j = ct_job(id * 1000003);
        j.priority = (int32_t)id - 20;
        j.tenant = (uint32_t)id % 5;
        j.flags = id % 2 ? GPUSCHED_JOB_FLAG_PREEMPTIBLE : 0;
        j.start_time = -(int64_t)id;
        j.cost_hint = id * id;
        int rc = id % 5 == 0 ? gpusched_cluster_reserve(c, id, n, nodes, masks)
                             : gpusched_cluster_allocate(c, &j, n, nodes, masks);
        cr_assert_eq(rc, 0, "%s", gpusched_cluster_errmsg(c));
    }
    uint64_t hit[64];
    OK(c, gpusched_cluster_node_health_set(c, 1, GPUSCHED_NODE_DOWN, hit, 64, NULL));
    OK(c, gpusched_cluster_node_health_set(c, 2, GPUSCHED_NODE_DRAINING, hit, 64, NULL));
    OK(c, gpusched_cluster_node_health_set(c, 3, GPUSCHED_NODE_CORDONED, hit, 64, NULL));
    OK(c, gpusched_cluster_check(c));
    return c;
}

static uint8_t *snap(gpusched_cluster *c, size_t *len)
{
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, len), GPUSCHED_ERANGE);
    uint8_t *buf = malloc(*len);
    size_t len2;
    OK(c, gpusched_cluster_snapshot(c, buf, *len, &len2));
    cr_assert_eq(len2, *len);
    return buf;
}

static void round_trip(gpusched_topo *t)
{
    gpusched_cluster *c = busy_cluster(t);
    cr_assert_gt(gpusched_cluster_job_count(c), 10);
    cr_assert_gt(gpusched_cluster_resv_count(c), 2);
    size_t len;
    uint8_t *img = snap(c, &len);
    gpusched_cluster *back = NULL;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(img, len, NULL, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(gpusched_cluster_check(back), 0, "%s", gpusched_cluster_errmsg(back));
    cr_assert_eq(ct_fingerprint(back), ct_fingerprint(c));
    cr_assert_str_eq(gpusched_cluster_errmsg(back), "");
    size_t len2;
    uint8_t *img2 = snap(back, &len2);
    cr_assert_eq(len2, len);
    cr_assert_arr_eq(img2, img, len, "restore then snapshot gives the same bytes");
    /* The restored cluster works on its own topology. */
    gpusched_topo *bt = gpusched_cluster_topo(back);
    cr_assert_neq(bt, gpusched_cluster_topo(c));
    cr_assert_eq(gpusched_topo_gpu_count(bt), gpusched_topo_gpu_count(gpusched_cluster_topo(c)));
    uint64_t id;
    OK(back, gpusched_cluster_job_at(back, 0, &id));
    OK(back, gpusched_cluster_release(back, id));
    OK(back, gpusched_cluster_check(back));
    free(img);
    free(img2);
    gpusched_cluster_unref(back);
    gpusched_cluster_unref(c);
}

Test(cluster_snapshot, round_trip_uniform) { round_trip(ct_uniform()); }
Test(cluster_snapshot, round_trip_mixed) { round_trip(ct_mixed()); }

Test(cluster_snapshot, round_trip_preset_and_empty)
{
    gpusched_topo *t;
    char err[256];
    cr_assert_eq(gpusched_topo_preset("tiny", NULL, &t, err, sizeof err), 0, "%s", err);
    gpusched_cluster *c = ct_cluster(t);
    size_t len;
    uint8_t *img = snap(c, &len);
    gpusched_cluster *back;
    cr_assert_eq(gpusched_cluster_restore(img, len, NULL, &back, NULL, 0), 0);
    cr_assert_eq(ct_fingerprint(back), ct_fingerprint(c));
    free(img);
    gpusched_cluster_unref(back);
    gpusched_cluster_unref(c);
}

Test(cluster_snapshot, argument_errors)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    size_t len;
    cr_assert_eq(gpusched_cluster_snapshot(NULL, NULL, 0, &len), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "len is NULL");
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, &len), GPUSCHED_ERANGE);
    char msg[128];
    snprintf(msg, sizeof msg, "snapshot takes %zu bytes, the buffer 0", len);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), msg);
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, len, &len), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_cluster_errmsg(c), "buf is NULL");
    gpusched_cluster *out = NULL;
    char err[256];
    cr_assert_eq(gpusched_cluster_restore(NULL, 10, NULL, &out, err, sizeof err), GPUSCHED_EINVAL);
    cr_assert_str_eq(err, "buf or out is NULL");
    cr_assert_eq(gpusched_cluster_restore("x", 1, NULL, NULL, err, sizeof err), GPUSCHED_EINVAL);
    gpusched_allocator bad = GPUSCHED_ALLOCATOR_INIT;
    cr_assert_eq(gpusched_cluster_restore("x", 1, &bad, &out, err, sizeof err), GPUSCHED_EINVAL);
    cr_assert_str_eq(err, "invalid allocator");
    cr_assert_null(out);
    /* Inside a transaction (a placement in progress) nothing is saved. */
    uint32_t node = 0;
    uint64_t mask = 1;
    OK(c, gpusched_cluster_reserve(c, 9, 1, &node, &mask));
    gs_hold *r = gs_cluster_resv_find(c, 9);
    OK(c, gs_txn_begin(c));
    OK(c, gs_txn_lend_resv(c, r));
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, &len), GPUSCHED_ESTATE);
    gs_txn_rollback(c);
    cr_assert_eq(gpusched_cluster_snapshot(c, NULL, 0, &len), GPUSCHED_ERANGE, "after it, the size query works");
    gpusched_cluster_unref(c);
}

static int restore_rc(const uint8_t *img, size_t len, char *err, size_t errlen)
{
    gpusched_cluster *out = NULL;
    int rc = gpusched_cluster_restore(img, len, NULL, &out, err, errlen);
    if (rc)
        cr_assert_null(out, "a failed restore created a cluster");
    else
        gpusched_cluster_unref(out);
    return rc;
}

Test(cluster_snapshot, every_truncation_fails)
{
    gpusched_cluster *c = busy_cluster(ct_uniform());
    size_t len;
    uint8_t *img = snap(c, &len);
    char err[256];
    for (size_t n = 0; n < len; n++) {
        int rc = restore_rc(img, n, err, sizeof err);
        cr_assert(rc == GPUSCHED_ECORRUPT, "truncated to %zu of %zu: %s (%s)", n, len, gpusched_err_name(rc),
                  err);
    }
    cr_assert_eq(restore_rc(img, 10, err, sizeof err), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(err, "image of 10 bytes is shorter than a header");
    free(img);
    gpusched_cluster_unref(c);
}

Test(cluster_snapshot, every_flipped_byte_fails)
{
    gpusched_cluster *c = busy_cluster(ct_mixed());
    size_t len;
    uint8_t *img = snap(c, &len);
    char err[256];
    for (size_t i = 0; i < len; i++) {
        uint8_t bit = (uint8_t)(1u << (i % 8));
        img[i] ^= bit;
        int rc = restore_rc(img, len, err, sizeof err);
        cr_assert(rc == GPUSCHED_ECORRUPT || rc == GPUSCHED_EVERSION, "byte %zu flipped: %s", i,
                  gpusched_err_name(rc));
        img[i] ^= bit;
    }
    img[len - 1] ^= 1;
    cr_assert_eq(restore_rc(img, len, err, sizeof err), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(err, "checksum mismatch");
    img[len - 1] ^= 1;
    img[0] = 'X';
    cr_assert_eq(restore_rc(img, len, err, sizeof err), GPUSCHED_ECORRUPT);
    cr_assert_str_eq(err, "not a cluster snapshot (bad magic)");
    free(img);
    gpusched_cluster_unref(c);
}

/* ---- hostile images: valid checksum, bad content ----------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void reseal(uint8_t *img, size_t len)
{
    put64(img + len - 8, gs_checksum64(img, len - 8));
}

typedef struct image {
    uint8_t *b;
    size_t len;
    size_t state;   /* offset of the state section */
    size_t jobs;    /* offset of the first job */
    uint32_t nnodes;
} image;

/* Two jobs (ids 1: node 0 mask 0x3; 2: nodes 1-2 mask 0x1 each), one
 * reservation (id 3: node 3 mask 0x3), on the 24-node uniform topology. */
static image small_image(void)
{
    gpusched_cluster *c = ct_cluster(ct_uniform());
    uint32_t n0 = 0, n12[] = {1, 2}, n3 = 3;
    uint64_t m0 = 0x3, m12[] = {0x1, 0x1};
    gpusched_job j1 = ct_job(1), j2 = ct_job(2);
    OK(c, gpusched_cluster_allocate(c, &j1, 1, &n0, &m0));
    OK(c, gpusched_cluster_allocate(c, &j2, 2, n12, m12));
    OK(c, gpusched_cluster_reserve(c, 3, 1, &n3, &m0));
    image im;
    im.b = snap(c, &im.len);
    im.state = 32 + get64(im.b + 16);
    im.nnodes = 24;
    im.jobs = im.state + 24 + im.nnodes;
    gpusched_cluster_unref(c);
    cr_assert_eq(restore_rc(im.b, im.len, NULL, 0), 0);
    return im;
}

static void expect_hostile(image *im, int code, const char *msg)
{
    reseal(im->b, im->len);
    char err[256];
    int rc = restore_rc(im->b, im->len, err, sizeof err);
    cr_assert_eq(rc, code, "%s: %s (expected: %s)", gpusched_err_name(rc), err, msg);
    cr_assert_str_eq(err, msg);
}

Test(cluster_snapshot, hostile_header)
{
    image im = small_image();
    put32(im.b + 8, 4);
    expect_hostile(&im, GPUSCHED_EVERSION, "snapshot version 4, this library reads 1 to 3");
    put32(im.b + 8, 0);
    expect_hostile(&im, GPUSCHED_EVERSION, "snapshot version 0, this library reads 1 to 3");
    put32(im.b + 8, 2);
    put32(im.b + 12, 4);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "unknown flags 0x4");
    put32(im.b + 12, 0);
    uint64_t topo_len = get64(im.b + 16);
    put64(im.b + 16, ~0ull);
    char msg[160];
    snprintf(msg, sizeof msg, "section lengths 18446744073709551615 + %llu do not match the image's %zu body bytes",
             (unsigned long long)get64(im.b + 24), im.len - 40);
    expect_hostile(&im, GPUSCHED_ECORRUPT, msg);
    put64(im.b + 16, topo_len);
    free(im.b);
}

Test(cluster_snapshot, hostile_state)
{
    image im = small_image();
    uint8_t *st = im.b + im.state, *job1 = im.b + im.jobs, *job2 = job1 + 48 + 12;
    uint8_t *resv = job2 + 48 + 24;
    put32(st, 23);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "state describes 23 nodes and 96 GPUs, the topology 24 and 96");
    put32(st, 24);
    st[24 + 5] = 4;
    expect_hostile(&im, GPUSCHED_ECORRUPT, "node 5: health 4");
    st[24 + 5] = 0;
    put32(st + 4, 3); /* one more job than present: the reservation is read as a job */
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 2: truncated");
    put32(st + 4, 2);
    put32(st + 8, 2);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "reservation 1: truncated");
    put32(st + 8, 1);

    put64(job2, 1); /* duplicate id */
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: job 1 is already running");
    put64(job2, 2);
    put32(job2 + 44, 100000);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: 100000 pairs");
    put32(job2 + 44, 20);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: 20 pairs run past the state");
    put32(job2 + 44, 2);
    put32(job2 + 40, 0x10); /* flags */
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: job 2: unknown flags 0x10");
    put32(job2 + 40, 0);
    put32(job2 + 48, 0); /* overlaps job 1 on node 0 */
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: pair 0: node 0 GPU 0 is allocated to job 1");
    put32(job2 + 48, 1);
    put32(job2 + 60, 1);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: pair 1: node 1 follows node 1 (nodes must be strictly ascending)");
    put32(job2 + 60, 99);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: pair 1: node 99 out of range (the topology has 24)");
    put32(job2 + 60, 2);
    put64(job2 + 64, 0x30);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: pair 1: node 2 has 4 GPUs, mask 0x30 names GPU 4");
    put64(job2 + 64, 0);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "job 1: pair 1: node 2 has an empty GPU mask");
    put64(job2 + 64, 1);

    put32(resv + 12, 1);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "reservation 0: reserved field is not zero");
    put32(resv + 12, 0);
    put32(resv + 16, 0); /* onto job 1's GPUs */
    expect_hostile(&im, GPUSCHED_ECORRUPT, "reservation 0: pair 0: node 0 GPU 0 is allocated to job 1");
    put32(resv + 16, 3);
    put32(resv + 8, 0);
    expect_hostile(&im, GPUSCHED_ECORRUPT, "reservation 0: 0 pairs");
    put32(resv + 8, 1);
    expect_hostile(&im, 0, "");
    free(im.b);
}

Test(cluster_snapshot, trailing_bytes_and_duplicate_reservation)
{
    image im = small_image();
    /* Grow the state by one zero byte: lengths agree, content does not. */
    uint8_t *b = calloc(1, im.len + 1);
    memcpy(b, im.b, im.len - 8);
    put64(b + 24, get64(im.b + 24) + 1);
    image big = {b, im.len + 1, im.state, im.jobs, im.nnodes};
    expect_hostile(&big, GPUSCHED_ECORRUPT, "1 bytes left after the state");
    /* Two reservations for one job. */
    uint8_t *d = calloc(1, im.len + 28);
    size_t resv = im.len - 8 - 28;
    memcpy(d, im.b, im.len - 8);
    memcpy(d + im.len - 8, im.b + resv, 28);
    put64(d + 24, get64(im.b + 24) + 28);
    put32(d + im.state + 8, 2);
    image dup = {d, im.len + 28, im.state, im.jobs, im.nnodes};
    expect_hostile(&dup, GPUSCHED_ECORRUPT, "reservation 1: job 3 has two reservations");
    free(b);
    free(d);
    free(im.b);
}

Test(cluster_snapshot, random_mutations_never_crash)
{
    image im = small_image();
    uint8_t *b = malloc(im.len);
    int accepted = 0;
    for (int i = 0; i < 3000; i++) {
        memcpy(b, im.b, im.len);
        int edits = 1 + (int)below(4);
        for (int k = 0; k < edits; k++)
            b[32 + below((uint32_t)(im.len - 40))] = (uint8_t)below(256);
        reseal(b, im.len);
        gpusched_cluster *out = NULL;
        int rc = gpusched_cluster_restore(b, im.len, NULL, &out, NULL, 0);
        if (rc == 0) {
            accepted++;
            cr_assert_eq(gpusched_cluster_check(out), 0, "%s", gpusched_cluster_errmsg(out));
            gpusched_cluster_unref(out);
        } else {
            cr_assert(rc == GPUSCHED_ECORRUPT || rc == GPUSCHED_EVERSION, "%s", gpusched_err_name(rc));
            cr_assert_null(out);
        }
    }
    cr_assert_gt(accepted, 0, "some mutations (job fields) are valid images");
    free(b);
    free(im.b);
}

typedef struct fa_ctx {
    failalloc *fa;
    uint8_t *img;
    size_t len;
    gpusched_cluster *out;
} fa_ctx;

static int fa_restore(failalloc *fa, void *ctx)
{
    fa_ctx *x = ctx;
    x->fa = fa;
    char err[256];
    int rc = gpusched_cluster_restore(x->img, x->len, &fa->a, &x->out, err, sizeof err);
    if (rc)
        cr_assert_null(x->out);
    return rc;
}

static void fa_free(void *ctx)
{
    fa_ctx *x = ctx;
    x->fa->fail_at = -1;
    cr_assert_eq(gpusched_cluster_check(x->out), 0);
    gpusched_cluster_unref(x->out);
    x->out = NULL;
}

Test(cluster_snapshot, restore_survives_every_allocation_failure)
{
    gpusched_cluster *c = busy_cluster(ct_mixed());
    fa_ctx x = {0};
    x.img = snap(c, &x.len);
    long n = failalloc_sweep_retry(fa_restore, fa_free, &x);
    cr_assert_gt(n, 10);
    free(x.img);
    gpusched_cluster_unref(c);
    /* A uniform (preset) topology image takes another path. */
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_preset("tiny", NULL, &t, NULL, 0), 0);
    c = busy_cluster(t);
    x.img = snap(c, &x.len);
    cr_assert_gt(failalloc_sweep_retry(fa_restore, fa_free, &x), 5);
    free(x.img);
    gpusched_cluster_unref(c);
}

Test(cluster_snapshot, checksum_is_xxh64)
{
    /* Published XXH64 values (seed 0), so other tools can check images. */
    cr_assert_eq(gs_checksum64("", 0), 0xEF46DB3751D8E999ull);
    cr_assert_eq(gs_checksum64("a", 1), 0xD24EC4F1A98C6E5Bull);
    cr_assert_eq(gs_checksum64("abc", 3), 0x44BC2CF5AD770999ull);
    const char *s = "Nobody inspects the spammish repetition";
    cr_assert_eq(gs_checksum64(s, strlen(s)), 0xFBCEA83C8A378BF1ull);
}

/* ---- memory bounded by the input --------------------------------------- */

/* Issue 12's repro: a 160-byte "tiny" snapshot (16 nodes in its state)
 * whose uniform topology image says 2^31 nodes, fanout {1, 1, 2^31}, both
 * checksums valid. Restore used to build the whole topology (23.9 GB)
 * before comparing node counts. (Topology image version 2: the bytes of
 * the original report with the image's version and both checksums
 * rewritten, XXH64 throughout.) */
static const char issue12_hex[] =
    "4753434c534e415001000000000000005000000000000000280000000000000067707573746f706f"
    "020000000200000050000000000000002109c700defbf2820200000000000080010000000000000005"
    "626c6f636b047261636b04683130300100000001000000000000800100000010000000000000000000"
    "000000000000800000000000000000000000000000000000000000000000b008c0604cf7d74c";

static size_t unhex(const char *hex, uint8_t *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        cr_assert_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
        out[i] = (uint8_t)v;
    }
    return n;
}

/* Restores under a 1 MiB budget: an attempt to allocate per claimed node
 * is refused instead of running the machine out of memory. */
static int budget_restore(const uint8_t *img, size_t len, budgetalloc *ba, char *err, size_t errlen)
{
    budgetalloc_init(ba, 1u << 20);
    gpusched_cluster *out = NULL;
    int rc = gpusched_cluster_restore(img, len, &ba->a, &out, err, errlen);
    if (rc)
        cr_assert_null(out);
    gpusched_cluster_unref(out);
    cr_assert_eq(ba->live, 0);
    return rc;
}

Test(cluster_snapshot, issue12_huge_uniform_image_is_refused_before_allocating)
{
    uint8_t img[sizeof issue12_hex / 2];
    size_t len = unhex(issue12_hex, img);
    cr_assert_eq(len, 160);
    budgetalloc ba;
    char err[256];
    cr_assert_eq(budget_restore(img, len, &ba, err, sizeof err), GPUSCHED_ECORRUPT, "%s", err);
    cr_assert_str_eq(err, "topology image: 2147483648 nodes, more than the 16 its container can hold");
    cr_assert_eq(ba.peak, 0, "refused before any allocation");
    cr_assert_eq(ba.refused, 0);

    /* The second shape of the issue: fanout {1, 65535, 65535}, 4.29e9 nodes. */
    uint8_t *ti = img + 32;
    put32(ti + 36, 65535u * 65535u);
    put32(ti + 48 + 16 + 4, 65535);
    put32(ti + 48 + 16 + 8, 65535);
    put64(ti + 24, gs_checksum64(ti + 32, 80 - 32));
    reseal(img, len);
    cr_assert_eq(budget_restore(img, len, &ba, err, sizeof err), GPUSCHED_ECORRUPT, "%s", err);
    cr_assert_str_eq(err, "topology image: 4294836225 nodes, more than the 16 its container can hold");
    cr_assert_eq(ba.peak, 0);

    /* With the claim put back to the 16 nodes the state describes (fanout
     * {2, 2, 4}) the same bytes restore, within the budget. */
    put32(ti + 36, 16);
    put32(ti + 48 + 16, 2);
    put32(ti + 48 + 16 + 4, 2);
    put32(ti + 48 + 16 + 8, 4);
    put32(ti + 48 + 16 + 12, 8);
    put64(ti + 24, gs_checksum64(ti + 32, 80 - 32));
    reseal(img, len);
    cr_assert_eq(budget_restore(img, len, &ba, err, sizeof err), 0, "%s", err);
    cr_assert_gt(ba.peak, 0);
    cr_assert_eq(ba.refused, 0);
}

/* A uniform image may be as large as the state has room for: a state
 * section padded to a million node-health bytes justifies the claim, and
 * the restore then fails on the count mismatch, having allocated in
 * proportion to those bytes and no more. */
Test(cluster_snapshot, uniform_claim_is_bounded_by_the_state_bytes)
{
    gpusched_topo *t;
    cr_assert_eq(gpusched_topo_preset("tiny", NULL, &t, NULL, 0), 0);
    gpusched_cluster *c = ct_cluster(t);
    size_t len;
    uint8_t *small = snap(c, &len);
    gpusched_cluster_unref(c);
    uint64_t topo_len = get64(small + 16);
    const uint32_t claimed = 1u << 20;   /* 1,048,576 nodes: 64 x 128 x 128 */
    size_t state_len = 24 + claimed, big_len = 32 + topo_len + state_len + 8;
    uint8_t *big = calloc(1, big_len);
    memcpy(big, small, 32 + topo_len);
    put64(big + 24, state_len);
    uint8_t *ti = big + 32;
    put32(ti + 36, claimed);
    put32(ti + 48 + 16, 64);
    put32(ti + 48 + 16 + 4, 128);
    put32(ti + 48 + 16 + 8, 128);
    put64(ti + 24, gs_checksum64(ti + 32, topo_len - 32));
    uint8_t *st = big + 32 + topo_len;
    put32(st, claimed);
    put64(st + 16, 8ull * claimed + 1);   /* the GPU count does not match */
    reseal(big, big_len);
    budgetalloc ba;
    /* 8 GPUs per node: about 67 bytes per node-health byte when this was
     * written (topology, per-node and per-GPU state, aggregates). */
    budgetalloc_init(&ba, 128 * big_len);
    gpusched_cluster *out = NULL;
    char err[256];
    int rc = gpusched_cluster_restore(big, big_len, &ba.a, &out, err, sizeof err);
    cr_assert_eq(rc, GPUSCHED_ECORRUPT, "%s: %s (peak %zu bytes)", gpusched_err_name(rc), err, ba.peak);
    cr_assert_str_eq(err, "state describes 1048576 nodes and 8388609 GPUs, the topology 1048576 and 8388608");
    cr_assert_eq(ba.refused, 0, "a justified topology fits in 128 times the input");
    cr_assert_eq(ba.live, 0);
    cr_assert_gt(ba.peak, big_len, "the topology was built");
    free(big);
    free(small);
}
