/* The id -> index maps of the queue (task ids, running ids, key codes).
 * Entries are 8 bytes, a hash and an index; the key lives in its own
 * column and is compared only on a hash match. Load stays at or below one
 * half. */
#include <string.h>

#include "fairq-internal.h"

/* murmur3's finalizer. */
static inline uint32_t gs_fq_mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* With runs, the low 3 bits of the key pick the entry within its line and
 * only the rest is mixed, to pick the line. */
static inline uint32_t gs_fq_hash_in(const gs_fq_idmap *m, uint64_t k)
{
    if (!m->runs)
        return gs_fq_mix(k);
    return gs_fq_mix(k >> 3) << 3 | (uint32_t)(k & 7);
}

#define GS_FQ_LINE 64u

static uint64_t gs_fq_entry(uint32_t hash, uint32_t index)
{
    return (uint64_t)hash << 32 | (uint64_t)(index + 1);
}

static uint32_t gs_fq_entry_index(uint64_t e) { return (uint32_t)e - 1; }
static uint32_t gs_fq_entry_hash(uint64_t e) { return (uint32_t)(e >> 32); }

static void gs_fq_idmap_place(uint64_t *tab, uint32_t mask, uint64_t entry)
{
    uint32_t h = gs_fq_entry_hash(entry) & mask;
    while (tab[h])
        h = (h + 1) & mask;
    tab[h] = entry;
}

int gs_fq_idmap_reserve(gs_fq_idmap *m, const gs_alloc *a, const uint64_t *keys, uint32_t want)
{
    (void)keys; /* entries carry their hash: no key is read to rehash */
    uint64_t need = 2ull * ((uint64_t)m->count + want);
    uint64_t cap = m->tab ? (uint64_t)m->mask + 1 : 0;
    if (need <= cap)
        return 0;
    uint64_t ncap = cap ? cap : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > (1ull << 32))
        return GPUSCHED_ELIMIT;
    /* One line of slack to align the table: a run of 8 keys is one line. */
    void *raw = gs_calloc(a, (size_t)ncap + GS_FQ_LINE / sizeof(uint64_t), sizeof(uint64_t));
    if (!raw)
        return GPUSCHED_ENOMEM;
    uint64_t *tab = (uint64_t *)(((uintptr_t)raw + GS_FQ_LINE - 1) & ~(uintptr_t)(GS_FQ_LINE - 1));
    for (uint64_t i = 0; i < cap; i++)
        if (m->tab[i])
            gs_fq_idmap_place(tab, (uint32_t)(ncap - 1), m->tab[i]);
    gs_free(a, m->raw);
    m->raw = raw;
    m->tab = tab;
    m->mask = (uint32_t)(ncap - 1);
    return 0;
}

void gs_fq_idmap_free(gs_fq_idmap *m, const gs_alloc *a)
{
    gs_free(a, m->raw);
    *m = (gs_fq_idmap){.runs = m->runs};
}

/* Position of the first entry for `key` whose index is alive (alive may
 * be NULL: every index is), or whose index is `only` if that is not
 * GS_FQ_NONE. */
static inline __attribute__((always_inline)) uint32_t gs_fq_idmap_pos_if(const gs_fq_idmap *m, const uint64_t *keys, uint64_t key,
                                   const uint32_t *alive, uint32_t only)
{
    if (!m->tab)
        return GS_FQ_NONE;
    uint32_t hash = gs_fq_hash_in(m, key);
    for (uint32_t h = hash & m->mask;; h = (h + 1) & m->mask) {
        uint64_t e = m->tab[h];
        if (!e)
            return GS_FQ_NONE;
        uint32_t i = gs_fq_entry_index(e);
        if (gs_fq_entry_hash(e) == hash && keys[i] == key && (!alive || alive[i]) &&
            (only == GS_FQ_NONE || i == only))
            return h;
    }
}

static uint32_t gs_fq_idmap_pos(const gs_fq_idmap *m, const uint64_t *keys, uint64_t key)
{
    return gs_fq_idmap_pos_if(m, keys, key, NULL, GS_FQ_NONE);
}

void gs_fq_idmap_prefetch(const gs_fq_idmap *m, uint64_t key)
{
    if (m->tab)
        __builtin_prefetch(&m->tab[gs_fq_hash_in(m, key) & m->mask]);
}

uint32_t gs_fq_idmap_find(const gs_fq_idmap *m, const uint64_t *keys, uint64_t key)
{
    uint32_t h = gs_fq_idmap_pos(m, keys, key);
    return h == GS_FQ_NONE ? GS_FQ_NONE : gs_fq_entry_index(m->tab[h]);
}

uint32_t gs_fq_idmap_find_live(const gs_fq_idmap *m, const uint64_t *keys, uint64_t key,
                               const uint32_t *alive)
{
    uint32_t h = gs_fq_idmap_pos_if(m, keys, key, alive, GS_FQ_NONE);
    return h == GS_FQ_NONE ? GS_FQ_NONE : gs_fq_entry_index(m->tab[h]);
}

void gs_fq_idmap_insert(gs_fq_idmap *m, const uint64_t *keys, uint32_t index)
{
    gs_fq_idmap_place(m->tab, m->mask, gs_fq_entry(gs_fq_hash_in(m, keys[index]), index));
    m->count++;
}

/* Backward-shift deletion keeps probe chains unbroken without tombstones. */
static void gs_fq_idmap_erase(gs_fq_idmap *m, uint32_t hole)
{
    m->tab[hole] = 0;
    m->count--;
    for (uint32_t j = (hole + 1) & m->mask; m->tab[j]; j = (j + 1) & m->mask) {
        uint32_t home = gs_fq_entry_hash(m->tab[j]) & m->mask;
        /* The entry at j may move to the hole if its home is not in (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays)
            continue;
        m->tab[hole] = m->tab[j];
        m->tab[j] = 0;
        hole = j;
    }
}

void gs_fq_idmap_remove(gs_fq_idmap *m, const uint64_t *keys, uint64_t key)
{
    uint32_t h = gs_fq_idmap_pos(m, keys, key);
    if (h != GS_FQ_NONE)
        gs_fq_idmap_erase(m, h);
}

void gs_fq_idmap_remove_index(gs_fq_idmap *m, const uint64_t *keys, uint32_t index)
{
    uint32_t h = gs_fq_idmap_pos_if(m, keys, keys[index], NULL, index);
    if (h != GS_FQ_NONE)
        gs_fq_idmap_erase(m, h);
}

void gs_fq_idmap_relabel(gs_fq_idmap *m, const uint64_t *keys, uint64_t key, uint32_t index)
{
    uint32_t h = gs_fq_idmap_pos(m, keys, key);
    if (h != GS_FQ_NONE)
        m->tab[h] = gs_fq_entry(gs_fq_entry_hash(m->tab[h]), index);
}

void gs_fq_idmap_clear(gs_fq_idmap *m)
{
    if (m->tab)
        memset(m->tab, 0, ((size_t)m->mask + 1) * sizeof *m->tab);
    m->count = 0;
}
