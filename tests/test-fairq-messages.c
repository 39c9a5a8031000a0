/* Errors that must say what is wrong (issue 12): a decision log path that
 * is a directory is an I/O error, not an allocation of the size a directory
 * stream reports; a NaN or infinite time is named as such, not as "earlier
 * than the previous enqueue". Each failing call changes nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <gpusched/gpusched.h>

#include "failalloc.h"
#include "fairq-test.h"

Test(messages, log_read_of_a_directory_is_an_io_error)
{
    char dir[] = "/tmp/gpusched-logdir-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    failalloc fa;
    failalloc_init(&fa, -1);
    gpusched_fairq_log *log = (gpusched_fairq_log *)&fa; /* must be reset to NULL */
    char msg[256] = "";
    int rc = gpusched_fairq_log_read(dir, &fa.a, &log, msg, sizeof msg);
    rmdir(dir);
    cr_assert_eq(rc, GPUSCHED_EIO, "%s: %s", gpusched_err_name(rc), msg);
    cr_assert_null(log);
    cr_assert(strstr(msg, dir) != NULL, "the message names the path: %s", msg);
    cr_assert(strstr(msg, "is a directory") != NULL, "%s", msg);
    cr_assert(strstr(msg, "memory") == NULL, "%s", msg);
    cr_assert_eq(fa.count, 0, "nothing is allocated for a directory");
}

Test(messages, log_read_of_a_missing_file_is_an_io_error)
{
    gpusched_fairq_log *log = NULL;
    char msg[256] = "";
    cr_assert_eq(gpusched_fairq_log_read("/nonexistent/decisions.log", NULL, &log, msg, sizeof msg),
                 GPUSCHED_EIO);
    cr_assert(strstr(msg, "/nonexistent/decisions.log") != NULL, "%s", msg);
}

static void assert_queue_empty(gpusched_fairq *q)
{
    uint64_t queued = 99, running = 99;
    cr_assert_eq(gpusched_fairq_count(q, &queued, &running), 0);
    cr_assert_eq(queued, 0, "a failed enqueue queued nothing");
    cr_assert_eq(running, 0);
}

Test(messages, enqueue_time_nan_or_infinite_is_named)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(2, NULL, &q), 0);
    cr_assert_eq(fq_enqueue(q, 1, 0, 0, NAN, 0), GPUSCHED_ERANGE);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "task: enqueue time is not a number (NaN)");
    assert_queue_empty(q);
    cr_assert_eq(fq_enqueue(q, 1, 0, 0, INFINITY, 0), GPUSCHED_ERANGE);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "task: enqueue time inf is not finite");
    cr_assert_eq(fq_enqueue(q, 1, 0, 0, -INFINITY, 0), GPUSCHED_ERANGE);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "task: enqueue time -inf is not finite");
    assert_queue_empty(q);
    /* A finite time earlier than the previous one keeps its own message. */
    cr_assert_eq(fq_enqueue(q, 1, 0, 0, 5.0, 0), 0);
    cr_assert_eq(fq_enqueue(q, 2, 0, 0, 4.0, 0), GPUSCHED_ERANGE);
    cr_assert(strstr(gpusched_fairq_errmsg(q), "earlier than the previous enqueue (5)") != NULL, "%s",
              gpusched_fairq_errmsg(q));
    gpusched_fairq_free(q);
}

Test(messages, bulk_enqueue_names_the_nan_task)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(2, NULL, &q), 0);
    const uint64_t ids[3] = {1, 2, 3};
    const uint32_t tenants[3] = {0, 1, 0};
    const double times[3] = {1.0, NAN, 3.0};
    cr_assert_eq(gpusched_fairq_enqueue_batch(q, 3, ids, tenants, NULL, times, NULL), GPUSCHED_ERANGE);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "task 1: enqueue time is not a number (NaN)");
    assert_queue_empty(q);
    gpusched_fairq_free(q);
}

Test(messages, poll_time_nan_is_named)
{
    gpusched_fairq *q;
    cr_assert_eq(gpusched_fairq_new(2, NULL, &q), 0);
    cr_assert_eq(fq_enqueue(q, 1, 0, 0, 1.0, 0), 0);
    uint64_t id = 0;
    cr_assert_eq(gpusched_fairq_poll(q, NAN, ~0ull, &id, NULL), GPUSCHED_ERANGE);
    cr_assert(strstr(gpusched_fairq_errmsg(q), "now is not a number (NaN)") != NULL, "%s",
              gpusched_fairq_errmsg(q));
    cr_assert_eq(gpusched_fairq_peek(q, INFINITY, ~0ull, &id, NULL), GPUSCHED_ERANGE);
    cr_assert(strstr(gpusched_fairq_errmsg(q), "now = inf is not finite") != NULL, "%s",
              gpusched_fairq_errmsg(q));
    uint64_t queued = 0;
    cr_assert_eq(gpusched_fairq_count(q, &queued, NULL), 0);
    cr_assert_eq(queued, 1, "a failed poll took nothing");
    gpusched_fairq_free(q);
}

/* The message rule (common.h): a failing reader sets the handle's message,
 * the next succeeding call empties it, so errmsg never shows a stale one. */
Test(fairq_messages, readers_set_and_clear_the_message)
{
    gpusched_fairq *q = NULL;
    cr_assert_eq(gpusched_fairq_new(2, NULL, &q), 0);
    double v;
    cr_assert_eq(gpusched_fairq_tenant_get(q, 5, GPUSCHED_FAIRQ_TENANT_WEIGHT, &v), GPUSCHED_ERANGE);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "tenant_get: tenant 5, the queue has 2");
    cr_assert_eq(gpusched_fairq_tenant_get(q, 1, 99, &v), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "tenant_get: unknown value 99");
    cr_assert_eq(gpusched_fairq_tenant_get(q, 1, GPUSCHED_FAIRQ_TENANT_WEIGHT, &v), 0);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "", "a success empties the message");
    cr_assert_eq(gpusched_fairq_param_get(q, 999, &v), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "param_get: unknown parameter 999");
    cr_assert_eq(gpusched_fairq_predict(q, 0, 64, 1.0, &v), GPUSCHED_ERANGE);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "predict: task type 64, at most 63");
    cr_assert_eq(gpusched_fairq_simd(q, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "simd is NULL");
    cr_assert_eq(gpusched_fairq_count(q, NULL, NULL), 0);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "");
    cr_assert_eq(gpusched_fairq_log_records(q, NULL, NULL), GPUSCHED_EINVAL);
    cr_assert_str_eq(gpusched_fairq_errmsg(q), "log_records: records is NULL");
    gpusched_fairq_free(q);
}
