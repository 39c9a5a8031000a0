#include <string.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "core.h"

static const int all_codes[] = {
    GPUSCHED_OK, GPUSCHED_EINVAL, GPUSCHED_ERANGE, GPUSCHED_E2BIG, GPUSCHED_ENOTSUP,
    GPUSCHED_ENOMEM, GPUSCHED_ELIMIT, GPUSCHED_ENOENT, GPUSCHED_EEXIST, GPUSCHED_EBUSY,
    GPUSCHED_ESTATE, GPUSCHED_EEMPTY, GPUSCHED_ENOSPC, GPUSCHED_EPARSE, GPUSCHED_ECORRUPT,
    GPUSCHED_EVERSION, GPUSCHED_EIO,
};

Test(errors, every_code_has_name_and_text)
{
    for (size_t i = 0; i < sizeof all_codes / sizeof all_codes[0]; i++) {
        int c = all_codes[i];
        cr_assert(c <= 0);
        cr_assert_str_neq(gpusched_strerror(c), "unknown error", "code %d", c);
        cr_assert_str_neq(gpusched_err_name(c), "GPUSCHED_UNKNOWN", "code %d", c);
        cr_assert(strncmp(gpusched_err_name(c), "GPUSCHED_", 9) == 0);
        for (size_t j = 0; j < i; j++)
            cr_assert_neq(all_codes[j], c, "codes must be distinct");
    }
}

Test(errors, pinned_values)
{
    /* Codes are ABI: renumbering one breaks every caller. */
    cr_assert_eq(GPUSCHED_EINVAL, -1);
    cr_assert_eq(GPUSCHED_ENOMEM, -10);
    cr_assert_eq(GPUSCHED_ENOENT, -20);
    cr_assert_eq(GPUSCHED_ENOSPC, -30);
    cr_assert_eq(GPUSCHED_EPARSE, -40);
    cr_assert_eq(GPUSCHED_EIO, -43);
}

Test(errors, unknown_code)
{
    cr_assert_str_eq(gpusched_strerror(-9999), "unknown error");
    cr_assert_str_eq(gpusched_err_name(12345), "GPUSCHED_UNKNOWN");
    cr_assert_str_eq(gpusched_err_name(GPUSCHED_ENOSPC), "GPUSCHED_ENOSPC");
}

Test(errors, handle_message_pattern)
{
    gs_err e;
    gs_err_clear(&e);
    cr_assert_eq(gs_error(&e, GPUSCHED_ERANGE, "field %s is %d", "gpus", 65), GPUSCHED_ERANGE);
    cr_assert_eq(e.code, GPUSCHED_ERANGE);
    cr_assert_str_eq(e.msg, "field gpus is 65");
    char buf[8];
    gs_err_export(&e, buf, sizeof buf);
    cr_assert_str_eq(buf, "field g", "export truncates and terminates");
    gs_err_clear(&e);
    gs_err_export(&e, buf, sizeof buf);
    cr_assert_str_eq(buf, "");
    cr_assert_eq(gs_error(NULL, GPUSCHED_EIO, "ignored"), GPUSCHED_EIO);
}

Test(errors, long_message_is_truncated_not_overflowed)
{
    gs_err e;
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    gs_error(&e, GPUSCHED_EINVAL, "%s", big);
    cr_assert_eq(strlen(e.msg), GS_ERRMSG_MAX - 1);
}

Test(version, runtime_matches_headers)
{
    cr_assert_eq(gpusched_version(), (uint32_t)GPUSCHED_VERSION);
    cr_assert_str_eq(gpusched_version_string(), GPUSCHED_VERSION_STRING);
    cr_assert_eq(GPUSCHED_VERSION_ENCODE(1, 2, 3), 0x010203ul);
    cr_assert(GPUSCHED_VERSION_ENCODE(0, 10, 0) > GPUSCHED_VERSION_ENCODE(0, 9, 99));
}

/* Every enumeration's range, as the library reports it, against the
 * headers' first and last values; unknown families are refused. */
Test(enums, bounds_match_the_headers)
{
    static const struct {
        uint32_t which, first, last;
    } want[] = {
        {GPUSCHED_ENUM_SIMD, GPUSCHED_SIMD_SCALAR, GPUSCHED_SIMD_NEON},
        {GPUSCHED_ENUM_NODE_HEALTH, GPUSCHED_NODE_UP, GPUSCHED_NODE_DOWN},
        {GPUSCHED_ENUM_GPU_STATE, GPUSCHED_GPU_FREE, GPUSCHED_GPU_SHARED},
        {GPUSCHED_ENUM_SPLIT, GPUSCHED_SPLIT_ANY, GPUSCHED_SPLIT_WHOLE_NODES},
        {GPUSCHED_ENUM_REASON, GPUSCHED_REASON_OK, GPUSCHED_REASON_NOT_RUN},
        {GPUSCHED_ENUM_FAIRQ_PARAM, GPUSCHED_FAIRQ_PARAM_W_BACKLOG, GPUSCHED_FAIRQ_PARAM_LAG_CAP},
        {GPUSCHED_ENUM_FAIRQ_POLICY, GPUSCHED_FAIRQ_POLICY_DES, GPUSCHED_FAIRQ_POLICY_LAGCAP},
        {GPUSCHED_ENUM_FAIRQ_TENANT, GPUSCHED_FAIRQ_TENANT_WEIGHT, GPUSCHED_FAIRQ_TENANT_SERVICE},
        {GPUSCHED_ENUM_PREEMPT_POLICY, GPUSCHED_PREEMPT_PRIORITY_FIRST, GPUSCHED_PREEMPT_COST_FIRST},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint32_t first = 99, last = 99;
        cr_assert_eq(gpusched_enum_bounds(want[i].which, &first, &last), 0);
        cr_assert_eq(first, want[i].first, "enum %u", want[i].which);
        cr_assert_eq(last, want[i].last, "enum %u", want[i].which);
    }
    cr_assert_eq(gpusched_enum_bounds(GPUSCHED_ENUM_REASON, NULL, NULL), 0);
    cr_assert_eq(gpusched_enum_bounds(0, NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_eq(gpusched_enum_bounds(GPUSCHED_ENUM_PREEMPT_POLICY + 1, NULL, NULL), GPUSCHED_EINVAL);
}

/* Every error code's value is part of the ABI: pinned here. */
Test(errors, codes_are_pinned)
{
    cr_assert_eq(GPUSCHED_OK, 0);
    cr_assert_eq(GPUSCHED_EINVAL, -1);
    cr_assert_eq(GPUSCHED_ERANGE, -2);
    cr_assert_eq(GPUSCHED_E2BIG, -3);
    cr_assert_eq(GPUSCHED_ENOTSUP, -4);
    cr_assert_eq(GPUSCHED_ENOMEM, -10);
    cr_assert_eq(GPUSCHED_ELIMIT, -11);
    cr_assert_eq(GPUSCHED_ENOENT, -20);
    cr_assert_eq(GPUSCHED_EEXIST, -21);
    cr_assert_eq(GPUSCHED_EBUSY, -22);
    cr_assert_eq(GPUSCHED_ESTATE, -23);
    cr_assert_eq(GPUSCHED_EEMPTY, -24);
    cr_assert_eq(GPUSCHED_ENOSPC, -30);
    cr_assert_eq(GPUSCHED_EPARSE, -40);
    cr_assert_eq(GPUSCHED_ECORRUPT, -41);
    cr_assert_eq(GPUSCHED_EVERSION, -42);
    cr_assert_eq(GPUSCHED_EIO, -43);
}
