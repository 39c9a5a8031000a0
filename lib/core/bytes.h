/* Little-endian byte writer and bounded reader: every binary format the
 * library writes (snapshots, topology images, journal records, decision
 * logs) is little-endian whatever the host. Internal; never installed. */
#ifndef GS_BYTES_H
#define GS_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Writes at p, which the caller sized. */
typedef struct gs_wr {
    unsigned char *p;
} gs_wr;

static inline void gs_wr_u8(gs_wr *w, uint8_t v) { *w->p++ = v; }

/* On little-endian hosts a store is the encoding: one unaligned move
 * instead of a byte loop (journal records are written on every commit). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GS_BYTES_LE 1
#else
#define GS_BYTES_LE 0
#endif

static inline void gs_wr_u32(gs_wr *w, uint32_t v)
{
    if (GS_BYTES_LE) {
        memcpy(w->p, &v, 4);
        w->p += 4;
        return;
    }
    for (int i = 0; i < 4; i++)
        *w->p++ = (unsigned char)(v >> (8 * i));
}

static inline void gs_wr_u64(gs_wr *w, uint64_t v)
{
    if (GS_BYTES_LE) {
        memcpy(w->p, &v, 8);
        w->p += 8;
        return;
    }
    for (int i = 0; i < 8; i++)
        *w->p++ = (unsigned char)(v >> (8 * i));
}

static inline void gs_wr_bytes(gs_wr *w, const void *src, size_t n)
{
    memcpy(w->p, src, n);
    w->p += n;
}

/* Reads [p, end); a read past the end yields zeros and sets `bad`, so a
 * parser checks once after a group of reads instead of before each. */
typedef struct gs_rd {
    const unsigned char *p, *end;
    bool bad;
} gs_rd;

static inline size_t gs_rd_left(const gs_rd *r) { return (size_t)(r->end - r->p); }

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
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
    r->p += 4;
    return v;
}

static inline uint64_t gs_rd_u64(gs_rd *r)
{
    if (!gs_rd_take(r, 8))
        return 0;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | r->p[i];
    r->p += 8;
    return v;
}

#endif
