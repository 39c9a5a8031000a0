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

#include "bytes.h"
#include "core.h"

/* Writes the checksum v at p (little-endian). */
static inline void fuzz_put64(uint8_t *p, uint64_t v)
{
    gs_wr w = {p};
    gs_wr_u64(&w, v);
}

/* A topology image: the checksum at 24 is XXH64 of [32, length in the
 * header). */
static inline void fuzz_seal_topo_image(uint8_t *b, size_t len)
{
    if (len < 48)
        return;
    uint64_t total = gs_le64(b + 16);
    if (total >= 48 && total <= len)
        fuzz_put64(b + 24, gs_checksum64(b + 32, (size_t)total - 32));
}

/* A snapshot: its topology image at 32, then the whole-image checksum in
 * the last 8 bytes. */
static inline void fuzz_seal_snapshot(uint8_t *b, size_t len)
{
    if (len < 40)
        return;
    uint64_t topo_len = gs_le64(b + 16);
    if (topo_len <= len - 40)
        fuzz_seal_topo_image(b + 32, (size_t)topo_len);
    fuzz_put64(b + len - 8, gs_checksum64(b, len - 8));
}

/* A decision log: the checksum at 24 is XXH64 of the whole file with
 * those eight bytes taken as zero. */
static inline void fuzz_seal_declog(uint8_t *b, size_t len)
{
    if (len < 32)
        return;
    memset(b + 24, 0, 8);
    fuzz_put64(b + 24, gs_checksum64(b, len));
}

#endif
