/* The table behind jobs and reservations: stable slots (so per-GPU holder
 * entries of other records never move), a dense live list for iteration and
 * an open-addressing hash from the caller's 64-bit id to the slot. */
#include <string.h>

#include "cluster-write.h"

#define GS_HASH_EMPTY UINT32_MAX
#define GS_HASH_MIN 16u

static inline uint32_t gs_hash_id(uint64_t id, uint32_t mask)
{
    /* splitmix64 finalizer: caller ids are often sequential. */
    id ^= id >> 30;
    id *= 0xbf58476d1ce4e5b9ull;
    id ^= id >> 27;
    id *= 0x94d049bb133111ebull;
    id ^= id >> 31;
    return (uint32_t)id & mask;
}

gs_hold *gs_holdtab_find_hint(const gs_holdtab *t, uint64_t id, uint32_t *node_hint)
{
    if (!t->count)
        return NULL;
    uint32_t mask = t->hcap - 1;
    for (uint32_t i = gs_hash_id(id, mask);; i = (i + 1) & mask) {
        const gs_hent *e = &t->hash[i];
        if (e->slot == GS_HASH_EMPTY)
            return NULL;
        if (e->key == id) {
            *node_hint = e->node_hint;
            return &t->rec[e->slot];
        }
    }
}

gs_hold *gs_holdtab_find(const gs_holdtab *t, uint64_t id)
{
    uint32_t hint;
    return gs_holdtab_find_hint(t, id, &hint);
}

void gs_holdtab_prefetch(const gs_holdtab *t, uint64_t id)
{
    if (t->hcap)
        __builtin_prefetch(&t->hash[gs_hash_id(id, t->hcap - 1)]);
}

static void gs_hash_put(gs_hent *hash, uint32_t mask, gs_hent e)
{
    uint32_t i = gs_hash_id(e.key, mask);
    while (hash[i].slot != GS_HASH_EMPTY)
        i = (i + 1) & mask;
    hash[i] = e;
}

static int gs_hash_grow(gs_holdtab *t, const gs_alloc *a, uint32_t need)
{
    if ((uint64_t)need * 2 <= t->hcap)
        return 0;
    uint64_t cap = t->hcap ? t->hcap : GS_HASH_MIN;
    while ((uint64_t)need * 2 > cap)
        cap *= 2;
    if (cap > ((uint64_t)1 << 32))
        return GPUSCHED_ELIMIT;
    gs_hent *hash = gs_malloc(a, (size_t)cap * sizeof *hash);
    if (!hash)
        return GPUSCHED_ENOMEM;
    for (uint64_t i = 0; i < cap; i++)
        hash[i] = (gs_hent){0, GS_HASH_EMPTY, 0};
    uint32_t mask = (uint32_t)(cap - 1);
    for (uint32_t i = 0; i < t->hcap; i++)
        if (t->hash[i].slot != GS_HASH_EMPTY)
            gs_hash_put(hash, mask, t->hash[i]);
    gs_free(a, t->hash);
    t->hash = hash;
    t->hcap = (uint32_t)cap;
    return 0;
}

static int gs_slots_grow(gs_holdtab *t, const gs_alloc *a, uint32_t need)
{
    if (need <= t->cap)
        return 0;
    if (need > GS_HOLD_MAX_SLOTS)
        return GPUSCHED_ELIMIT;
    uint64_t cap = t->cap ? (uint64_t)t->cap * 2 : 16;
    if (cap < need)
        cap = need;
    if (cap > GS_HOLD_MAX_SLOTS)
        cap = GS_HOLD_MAX_SLOTS;
    /* Each array is replaced as soon as it has grown: a larger block is
     * harmless, and `cap` only moves once all of them have. */
    gs_hold *rec = gs_realloc_array(a, t->rec, (size_t)cap, sizeof *rec);
    if (!rec)
        return GPUSCHED_ENOMEM;
    t->rec = rec;
    uint32_t *live = gs_realloc_array(a, t->live, (size_t)cap, sizeof *live);
    if (!live)
        return GPUSCHED_ENOMEM;
    t->live = live;
    uint32_t *fs = gs_realloc_array(a, t->free_slots, (size_t)cap, sizeof *fs);
    if (!fs)
        return GPUSCHED_ENOMEM;
    t->free_slots = fs;
    t->cap = (uint32_t)cap;
    return 0;
}

int gs_holdtab_prepare(gs_holdtab *t, const gs_alloc *a, uint32_t extra)
{
    if ((uint64_t)t->count + extra > GS_HOLD_MAX_SLOTS)
        return GPUSCHED_ELIMIT;
    uint32_t fresh = extra > t->nfree ? extra - t->nfree : 0;
    int rc = gs_slots_grow(t, a, t->used + fresh);
    if (rc)
        return rc;
    return gs_hash_grow(t, a, t->count + extra);
}

gs_hold *gs_holdtab_insert(gs_holdtab *t, uint64_t id, uint32_t node_hint)
{
    uint32_t slot = t->nfree ? t->free_slots[--t->nfree] : t->used++;
    gs_hold *h = &t->rec[slot];
    memset(h, 0, sizeof *h);
    h->id = id;
    h->live = t->count & GS_HOLD_MAX_SLOTS;
    t->live[t->count++] = slot;
    gs_hash_put(t->hash, t->hcap - 1, (gs_hent){id, slot, node_hint});
    return h;
}

static void gs_hash_remove(gs_holdtab *t, uint64_t id)
{
    uint32_t mask = t->hcap - 1;
    uint32_t i = gs_hash_id(id, mask);
    gs_hent *hash = t->hash;
    while (hash[i].key != id || hash[i].slot == GS_HASH_EMPTY)
        i = (i + 1) & mask;
    /* Backward-shift deletion keeps probe chains unbroken without tombstones. */
    for (uint32_t j = (i + 1) & mask; hash[j].slot != GS_HASH_EMPTY; j = (j + 1) & mask) {
        uint32_t home = gs_hash_id(hash[j].key, mask);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            hash[i] = hash[j];
            i = j;
        }
    }
    hash[i].slot = GS_HASH_EMPTY;
}

void gs_holdtab_remove(gs_holdtab *t, const gs_alloc *a, gs_hold *h)
{
    uint32_t slot = (uint32_t)(h - t->rec);
    gs_hash_remove(t, h->id);
    gs_free(a, gs_hold_block(h));
    h->npairs = 0;
    uint32_t p = h->live;
    uint32_t last = t->live[--t->count];
    t->live[p] = last;
    t->rec[last].live = p;
    t->free_slots[t->nfree++] = slot;
}

void gs_holdtab_free(gs_holdtab *t, const gs_alloc *a)
{
    for (uint32_t i = 0; i < t->count; i++)
        gs_free(a, gs_hold_block(&t->rec[t->live[i]]));
    gs_free(a, t->rec);
    gs_free(a, t->live);
    gs_free(a, t->free_slots);
    gs_free(a, t->hash);
    memset(t, 0, sizeof *t);
}

size_t gs_holdtab_bytes(const gs_holdtab *t)
{
    size_t b = (size_t)t->cap * (sizeof(gs_hold) + 2 * sizeof(uint32_t)) +
               (size_t)t->hcap * sizeof(gs_hent);
    for (uint32_t i = 0; i < t->count; i++) {
        const gs_hold *h = &t->rec[t->live[i]];
        if (h->npairs > GS_HOLD_INLINE)
            b += (size_t)h->npairs * (sizeof(uint64_t) + sizeof(uint32_t));
    }
    return b;
}
