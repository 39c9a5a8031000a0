/* Open-addressing index from names to dense uint32 ids, shared by the
 * builder and the frozen name tables. It stores only (id, hash) pairs: the
 * keys live in the caller's string pool, so the caller supplies equality.
 * Linear probing, power-of-two capacity, load at most 1/2. */
#ifndef GS_TOPO_HASH_H
#define GS_TOPO_HASH_H

#include <string.h>

#include "core.h"

typedef struct gs_hslot {
    uint32_t id;    /* UINT32_MAX: empty */
    uint32_t hash;
} gs_hslot;

typedef struct gs_hindex {
    gs_hslot *slots;
    uint32_t mask;  /* capacity - 1; 0 with slots == NULL when empty */
    uint32_t count;
} gs_hindex;

#define GS_HEMPTY UINT32_MAX

static inline uint32_t gs_hash32(const void *data, size_t len, uint64_t seed)
{
    uint64_t h = gs_hash_bytes(data, len, seed);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return (uint32_t)(h ^ (h >> 32));
}

/* Hash of a domain name under its parent: domain names are relative. */
static inline uint32_t gs_dom_hash(uint32_t parent, const char *s, size_t len)
{
    return gs_hash32(s, len, (uint64_t)parent + 1);
}

/* Makes room for `extra` more entries without further allocation.
 * On failure the index is unchanged. */
int gs_hindex_reserve(gs_hindex *h, const gs_alloc *a, uint32_t extra);
/* Inserts an id whose key is known to be absent; capacity must be reserved. */
void gs_hindex_insert(gs_hindex *h, uint32_t id, uint32_t hash);
/* Forgets every entry, keeps the capacity. */
void gs_hindex_clear(gs_hindex *h);
void gs_hindex_free(gs_hindex *h, const gs_alloc *a);
size_t gs_hindex_bytes(const gs_hindex *h);

/* First slot to probe for `hash`; walk with gs_hindex_next until an empty
 * slot. Callers compare the key of each id whose hash matches. */
static inline uint32_t gs_hindex_first(const gs_hindex *h, uint32_t hash) { return hash & h->mask; }
static inline uint32_t gs_hindex_next(const gs_hindex *h, uint32_t i) { return (i + 1) & h->mask; }

/* A pool of NUL-terminated strings addressed by 32-bit offsets. */
typedef struct gs_pool {
    char *buf;
    uint32_t len, cap;
} gs_pool;

/* Makes room for `bytes` more bytes; ELIMIT past 4 GiB. */
int gs_pool_reserve(gs_pool *p, const gs_alloc *a, size_t bytes);
/* Appends a string (capacity reserved) and returns its offset. */
uint32_t gs_pool_add(gs_pool *p, const char *s, size_t len);
/* Whether the string at `off` is `s`. An equal string and its NUL end
 * before the pool does, so a query longer than what is left is unequal
 * without reading: memcmp may read all `len` bytes, past a short name's
 * NUL and past the pool (found by fuzzing: a long label name compared
 * with a short one stored last). */
static inline bool gs_pool_eq(const gs_pool *p, uint32_t off, const char *s, size_t len)
{
    return len < (size_t)p->len - off && memcmp(p->buf + off, s, len) == 0 && p->buf[off + len] == '\0';
}
static inline const char *gs_pool_str(const gs_pool *p, uint32_t off) { return p->buf + off; }

#endif
