/* Checksums recomputed over a fuzzer's input before it is read. Random
 * mutations almost never keep a 64-bit checksum valid, so without this the
 * image, snapshot and log fuzzers would only ever test the checksum
 * comparison (the unit tests cover that) and never the fields behind it.
 * Each takes a copy and fixes it in place where the header makes the
 * checksum's range known; other bytes are left as the fuzzer made them. */
#ifndef GS_FUZZ_SEAL_H
#define GS_FUZZ_SEAL_H

#include <stdint.h>
#include <string.h>

#include "core.h"

uint64_t gs_checksum64(const void *data, size_t len);

static inline uint64_t fuzz_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline void fuzz_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A topology image: the checksum at 24 covers [32, length in the header). */
static inline void fuzz_seal_topo_image(uint8_t *b, size_t len)
{
    if (len < 48)
        return;
    uint64_t total = fuzz_get64(b + 16);
    if (total >= 48 && total <= len)
        fuzz_put64(b + 24, gs_hash_bytes(b + 32, (size_t)total - 32, 0));
}

/* A snapshot: its topology image at 32, then the whole-image checksum in
 * the last 8 bytes. */
static inline void fuzz_seal_snapshot(uint8_t *b, size_t len)
{
    if (len < 40)
        return;
    uint64_t topo_len = fuzz_get64(b + 16);
    if (topo_len <= len - 40)
        fuzz_seal_topo_image(b + 32, (size_t)topo_len);
    fuzz_put64(b + len - 8, gs_checksum64(b, len - 8));
}

/* A decision log: the checksum at 24 covers bytes [0, 24) and [32, end). */
static inline void fuzz_seal_declog(uint8_t *b, size_t len)
{
    if (len < 32)
        return;
    uint64_t h = gs_hash_bytes(b, 24, 0);
    fuzz_put64(b + 24, gs_hash_bytes(b + 32, len - 32, h));
}

#endif
