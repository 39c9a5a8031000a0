#include "topo-hash.h"

static void gs_hindex_place(gs_hslot *slots, uint32_t mask, uint32_t id, uint32_t hash)
{
    uint32_t i = hash & mask;
    while (slots[i].id != GS_HEMPTY)
        i = (i + 1) & mask;
    slots[i] = (gs_hslot){id, hash};
}

int gs_hindex_reserve(gs_hindex *h, const gs_alloc *a, uint32_t extra)
{
    uint64_t need = (uint64_t)h->count + extra;
    uint64_t cap = h->slots ? (uint64_t)h->mask + 1 : 0;
    if (need * 2 <= cap)
        return 0;
    uint64_t ncap = cap ? cap : 16;
    while (ncap < need * 2)
        ncap *= 2;
    if (ncap > ((uint64_t)1 << 31))
        return GPUSCHED_ELIMIT;
    gs_hslot *slots = gs_malloc(a, (size_t)ncap * sizeof *slots);
    if (!slots)
        return GPUSCHED_ENOMEM;
    memset(slots, 0xff, (size_t)ncap * sizeof *slots);
    uint32_t nmask = (uint32_t)(ncap - 1);
    for (uint64_t i = 0; i < cap; i++)
        if (h->slots[i].id != GS_HEMPTY)
            gs_hindex_place(slots, nmask, h->slots[i].id, h->slots[i].hash);
    gs_free(a, h->slots);
    h->slots = slots;
    h->mask = nmask;
    return 0;
}

void gs_hindex_insert(gs_hindex *h, uint32_t id, uint32_t hash)
{
    gs_hindex_place(h->slots, h->mask, id, hash);
    h->count++;
}

void gs_hindex_clear(gs_hindex *h)
{
    if (h->slots)
        memset(h->slots, 0xff, ((size_t)h->mask + 1) * sizeof *h->slots);
    h->count = 0;
}

void gs_hindex_free(gs_hindex *h, const gs_alloc *a)
{
    gs_free(a, h->slots);
    *h = (gs_hindex){0};
}

size_t gs_hindex_bytes(const gs_hindex *h)
{
    return h->slots ? ((size_t)h->mask + 1) * sizeof *h->slots : 0;
}

int gs_pool_reserve(gs_pool *p, const gs_alloc *a, size_t bytes)
{
    uint64_t need = (uint64_t)p->len + bytes;
    if (need <= p->cap)
        return 0;
    if (need > UINT32_MAX)
        return GPUSCHED_ELIMIT;
    uint64_t ncap = p->cap ? p->cap : 256;
    while (ncap < need)
        ncap *= 2;
    if (ncap > UINT32_MAX)
        ncap = UINT32_MAX;
    char *buf = gs_realloc_array(a, p->buf, (size_t)ncap, 1);
    if (!buf)
        return GPUSCHED_ENOMEM;
    p->buf = buf;
    p->cap = (uint32_t)ncap;
    return 0;
}

uint32_t gs_pool_add(gs_pool *p, const char *s, size_t len)
{
    uint32_t off = p->len;
    memcpy(p->buf + off, s, len);
    p->buf[off + len] = '\0';
    p->len += (uint32_t)len + 1;
    return off;
}
