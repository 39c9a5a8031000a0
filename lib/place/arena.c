/* Scratch memory for one search: bump allocation in chunks that never
 * move, so that frontiers and DP tables can point into it while deeper
 * calls allocate more. Chunks are kept across searches: a placer in steady
 * state allocates nothing. */
#include "place-internal.h"

#define ARENA_CHUNK_MIN ((size_t)256 << 10)

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

static void *take(gs_arena_chunk *c, size_t bytes)
{
    void *ptr = c->data + c->top;
    c->top += bytes;
    return ptr;
}

void *gs_arena_get(gs_arena *a, size_t bytes)
{
    bytes = align16(bytes ? bytes : 1);
    if (a->cur && a->cur->cap - a->cur->top >= bytes)
        return take(a->cur, bytes);
    /* Newer chunks kept from earlier searches come next. */
    gs_arena_chunk *next = a->cur ? a->cur->next : a->head;
    while (next && next->cap < bytes)
        next = next->next;
    if (next) {
        for (gs_arena_chunk *c = a->cur ? a->cur->next : a->head; c != next; c = c->next)
            c->top = 0;
        next->top = 0;
        a->cur = next;
        return take(next, bytes);
    }
    size_t cap = bytes > ARENA_CHUNK_MIN ? bytes : ARENA_CHUNK_MIN;
    gs_arena_chunk *n = gs_malloc(a->alloc, sizeof *n + cap);
    if (!n)
        return NULL;
    n->cap = cap;
    n->top = 0;
    n->next = NULL;
    gs_arena_chunk **link = &a->head;
    while (*link)
        link = &(*link)->next;
    *link = n;
    a->cur = n;
    return take(n, bytes);
}

gs_arena_mark gs_arena_save(const gs_arena *a)
{
    return (gs_arena_mark){a->cur, a->cur ? a->cur->top : 0};
}

void gs_arena_restore(gs_arena *a, gs_arena_mark m)
{
    a->cur = m.chunk;
    if (m.chunk)
        m.chunk->top = m.top;
}

void gs_arena_reset(gs_arena *a)
{
    a->cur = NULL;
}

void gs_arena_free(gs_arena *a)
{
    while (a->head) {
        gs_arena_chunk *c = a->head;
        a->head = c->next;
        gs_free(a->alloc, c);
    }
    a->cur = NULL;
}
