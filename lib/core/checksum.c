/* The checksum of every binary format (snapshots, topology images, journal
 * records, decision logs): XXH64 (seed 0), eight bytes at a time, so that
 * checking a large image costs far less than FNV-1a's byte loop. Reads
 * little-endian words whatever the host, so images are portable. */
#include <string.h>

#include "bytes.h"
#include "core.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t round64(uint64_t acc, uint64_t in)
{
    acc += in * P2;
    acc = rotl(acc, 31);
    return acc * P1;
}

static inline uint64_t merge64(uint64_t acc, uint64_t v)
{
    acc ^= round64(0, v);
    return acc * P1 + P4;
}

uint64_t gs_checksum64(const void *data, size_t len)
{
    const unsigned char *p = data, *end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = (uint64_t)0 - P1;
        const unsigned char *limit = end - 32;
        do {
            v1 = round64(v1, gs_le64(p));
            v2 = round64(v2, gs_le64(p + 8));
            v3 = round64(v3, gs_le64(p + 16));
            v4 = round64(v4, gs_le64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = merge64(h, v1);
        h = merge64(h, v2);
        h = merge64(h, v3);
        h = merge64(h, v4);
    } else {
        h = P5;
    }
    h += (uint64_t)len;
    for (; p + 8 <= end; p += 8) {
        h ^= round64(0, gs_le64(p));
        h = rotl(h, 27) * P1 + P4;
    }
    if (p + 4 <= end) {
        h ^= (uint64_t)gs_le32(p) * P1;
        h = rotl(h, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++) {
        h ^= (*p) * P5;
        h = rotl(h, 11) * P1;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}
