/* Division by a fixed divisor through its reciprocal (core.h gs_divide)
 * against the machine's division: every small numerator and divisor,
 * numerators near multiples and near 2^32, and random pairs. */
#include <criterion/criterion.h>

#include "core.h"

static void check(uint32_t n, uint32_t d)
{
    const uint32_t q = gs_divide(gs_divisor_of(d), n);
    cr_assert_eq(q, n / d, "%u / %u: %u, not %u", n, d, q, n / d);
}

Test(core_divide, small_numerators_and_divisors)
{
    for (uint32_t d = 1; d <= 600; d++)
        for (uint32_t n = 0; n <= 5000; n++)
            check(n, d);
}

Test(core_divide, multiples_and_the_largest_numerators)
{
    for (uint32_t d = 1; d <= 4096; d++) {
        for (uint64_t k = 1; k * d <= UINT32_MAX; k *= 3) {
            check((uint32_t)(k * d), d);
            check((uint32_t)(k * d - 1), d);
        }
        check(UINT32_MAX, d);
        check(UINT32_MAX - 1, d);
        check(UINT32_MAX - d, d);
    }
    check(UINT32_MAX, UINT32_MAX);
    check(UINT32_MAX - 1, UINT32_MAX);
}

Test(core_divide, random_pairs)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1000000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        const uint32_t d = (uint32_t)(s >> 40) >> (s & 31);
        check((uint32_t)s, d ? d : 1);
    }
}
