/* One line per event on stderr, with a UTC time stamp: the daemon's log is
 * where a site admin reads why a gang waits, so every line stands alone. */
#include "gss.h"

#include <stdarg.h>
#include <time.h>

void gss_log(const char *fmt, ...)
{
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s ", ts);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}
