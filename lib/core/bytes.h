/* Little-endian byte writer and bounded reader: every binary format the
 * library writes (snapshots, topology images, journal records, decision
 * logs) is little-endian whatever the host, and every one of them is
 * encoded and decoded here. Internal; never installed.
 *
 *   gs_le32, gs_le64     load at a pointer the caller has bounded
 *   gs_wr_*              write at a pointer into a buffer the caller sized
 *   gs_rd_*              read [p, end); past the end yields zeros and `bad`
 *
 * A double travels as the bit pattern of its IEEE 754 binary64 value
 * (gs_wr_f64, gs_rd_f64), so a value reads back bit for bit. */
#ifndef GS_BYTES_H
#define GS_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A load or store is one unaligned move (journal records are written on
 * every commit, checksums read every word of an image): the encoding
 * itself on little-endian hosts, followed or preceded by a byte swap on
 * big-endian ones. These convert between the host's order and
 * little-endian (either way: it is the same swap). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static inline uint32_t gs_le32_host(uint32_t v) { return v; }
static inline uint64_t gs_le64_host(uint64_t v) { return v; }
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static inline uint32_t gs_le32_host(uint32_t v) { return __builtin_bswap32(v); }
static inline uint64_t gs_le64_host(uint64_t v) { return __builtin_bswap64(v); }
#else
#error "bytes.h: the host's byte order is unknown (__BYTE_ORDER__)"
#endif

/* ---- loads at a pointer ---------------------------------------------------- */

static inline uint32_t gs_le32(const void *at)
{
    uint32_t v;
    memcpy(&v, at, 4);
    return gs_le32_host(v);
}

static inline uint64_t gs_le64(const void *at)
{
    uint64_t v;
    memcpy(&v, at, 8);
    return gs_le64_host(v);
}

/* ---- writer ---------------------------------------------------------------- */

/* Writes at p, which the caller sized; p ends past the last byte written. */
typedef struct gs_wr {
    unsigned char *p;
} gs_wr;

static inline void gs_wr_bytes(gs_wr *w, const void *src, size_t n)
{
    if (n)
        memcpy(w->p, src, n);
    w->p += n;
}

static inline void gs_wr_u8(gs_wr *w, uint8_t v) { *w->p++ = v; }

static inline void gs_wr_u32(gs_wr *w, uint32_t v)
{
    v = gs_le32_host(v);
    gs_wr_bytes(w, &v, 4);
}

static inline void gs_wr_u64(gs_wr *w, uint64_t v)
{
    v = gs_le64_host(v);
    gs_wr_bytes(w, &v, 8);
}

static inline void gs_wr_f64(gs_wr *w, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    gs_wr_u64(w, u);
}

/* ---- bounded reader -------------------------------------------------------- */

/* Reads [p, end); a read past the end yields zeros (gs_rd_bytes: NULL),
 * takes nothing, sets `bad` and moves p to the end, so a parser checks once
 * after a group of reads instead of before each. A parser that reports the
 * position of a short read checks gs_rd_left first. */
typedef struct gs_rd {
    const unsigned char *p, *end;
    bool bad;
} gs_rd;

/* A reader over the n bytes at p; p may be NULL when n is 0 (NULL + 0 is
 * undefined behaviour in C). */
static inline gs_rd gs_rd_over(const void *p, size_t n)
{
    const unsigned char *b = p;
    return (gs_rd){b, n ? b + n : b, false};
}

static inline size_t gs_rd_left(const gs_rd *r) { return (size_t)(r->end - r->p); }

/* Whether n more bytes are there; if not, the reader goes bad. */
static inline bool gs_rd_take(gs_rd *r, size_t n)
{
    if (r->bad || gs_rd_left(r) < n) {
        r->bad = true;
        r->p = r->end;
        return false;
    }
    return true;
}

static inline uint8_t gs_rd_u8(gs_rd *r) { return gs_rd_take(r, 1) ? *r->p++ : 0; }

static inline uint32_t gs_rd_u32(gs_rd *r)
{
    if (!gs_rd_take(r, 4))
        return 0;
    uint32_t v = gs_le32(r->p);
    r->p += 4;
    return v;
}

static inline uint64_t gs_rd_u64(gs_rd *r)
{
    if (!gs_rd_take(r, 8))
        return 0;
    uint64_t v = gs_le64(r->p);
    r->p += 8;
    return v;
}

static inline double gs_rd_f64(gs_rd *r)
{
    uint64_t u = gs_rd_u64(r);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* The next n bytes, in place, or NULL if there are fewer. */
static inline const unsigned char *gs_rd_bytes(gs_rd *r, size_t n)
{
    if (!gs_rd_take(r, n))
        return NULL;
    const unsigned char *at = r->p;
    r->p += n;
    return at;
}

static inline bool gs_rd_skip(gs_rd *r, size_t n) { return gs_rd_bytes(r, n) != NULL; }

#endif
