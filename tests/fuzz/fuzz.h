/* Shared by the libFuzzer harnesses: a failed check aborts, which libFuzzer
 * reports as a crash and keeps the input. */
#ifndef GS_FUZZ_H
#define GS_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a stream of numbers, two bytes each (0 once it is used
 * up), so that every byte string decodes to some sequence of calls. */
typedef struct fuzz_rd {
    const uint8_t *p;
    size_t n;
} fuzz_rd;

/* The next number, below `below` (0: any 16-bit value). */
static inline uint32_t fuzz_take(fuzz_rd *r, uint32_t below)
{
    uint32_t v = 0;
    for (int i = 0; i < 2 && r->n; i++, r->p++, r->n--)
        v = v << 8 | *r->p;
    return below ? v % below : v;
}

#define FUZZ_CHECK(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* An allocator with a budget of live bytes, the caller's own limit on
 * what a load may take: a text may legitimately declare up to
 * GPUSCHED_MAX_TEXT_NODES nodes (gigabytes), more than a fuzzer's
 * -rss_limit_mb, so the harness caps memory the way an embedding
 * application would and accepts ENOMEM when the cap was hit. */
typedef struct fuzz_budget {
    gpusched_allocator a;
    size_t cap, live;
    int refused;
} fuzz_budget;

#define FUZZ_BUDGET_HEAD 16

static inline void *fuzz_budget_realloc(void *user, void *ptr, size_t size)
{
    fuzz_budget *fb = user;
    unsigned char *head = ptr ? (unsigned char *)ptr - FUZZ_BUDGET_HEAD : NULL;
    size_t old = 0;
    if (head)
        memcpy(&old, head, sizeof old);
    if (size > fb->cap || fb->live - old > fb->cap - size) {
        fb->refused = 1;
        return NULL;
    }
    unsigned char *p = realloc(head, FUZZ_BUDGET_HEAD + size);
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    fb->live = fb->live - old + size;
    return p + FUZZ_BUDGET_HEAD;
}

static inline void *fuzz_budget_malloc(void *user, size_t size) { return fuzz_budget_realloc(user, NULL, size); }

static inline void fuzz_budget_free(void *user, void *ptr)
{
    fuzz_budget *fb = user;
    if (!ptr)
        return;
    unsigned char *head = (unsigned char *)ptr - FUZZ_BUDGET_HEAD;
    size_t old;
    memcpy(&old, head, sizeof old);
    fb->live -= old;
    free(head);
}

static inline void fuzz_budget_init(fuzz_budget *fb, size_t cap)
{
    *fb = (fuzz_budget){.a = GPUSCHED_ALLOCATOR_INIT, .cap = cap};
    fb->a.malloc_fn = fuzz_budget_malloc;
    fb->a.realloc_fn = fuzz_budget_realloc;
    fb->a.free_fn = fuzz_budget_free;
    fb->a.user = fb;
}

#endif
