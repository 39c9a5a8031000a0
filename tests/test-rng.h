/* A seeded generator (splitmix64) for the kernel tests, with no other
 * dependency: the AArch64 cross tests (tests/cross) include it too. */
#ifndef GS_TEST_RNG_H
#define GS_TEST_RNG_H

#include <stdint.h>

static uint64_t rng_state;

static inline uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint32_t rndu(uint32_t n) { return (uint32_t)(rnd() % n); }

#endif
