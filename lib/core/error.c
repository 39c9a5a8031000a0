#include <stdio.h>
#include <string.h>

#include "core.h"

struct gs_code_info {
    int code;
    const char *name;
    const char *text;
};

static const struct gs_code_info gs_codes[] = {
    {GPUSCHED_OK, "GPUSCHED_OK", "success"},
    {GPUSCHED_EINVAL, "GPUSCHED_EINVAL", "invalid argument"},
    {GPUSCHED_ERANGE, "GPUSCHED_ERANGE", "value out of range"},
    {GPUSCHED_E2BIG, "GPUSCHED_E2BIG", "struct has unknown non-zero trailing bytes"},
    {GPUSCHED_ENOTSUP, "GPUSCHED_ENOTSUP", "not supported"},
    {GPUSCHED_ENOMEM, "GPUSCHED_ENOMEM", "out of memory"},
    {GPUSCHED_ELIMIT, "GPUSCHED_ELIMIT", "library limit exceeded"},
    {GPUSCHED_ENOENT, "GPUSCHED_ENOENT", "no such object"},
    {GPUSCHED_EEXIST, "GPUSCHED_EEXIST", "object already exists"},
    {GPUSCHED_EBUSY, "GPUSCHED_EBUSY", "resource in use"},
    {GPUSCHED_ESTATE, "GPUSCHED_ESTATE", "wrong state for this call"},
    {GPUSCHED_EEMPTY, "GPUSCHED_EEMPTY", "nothing to return"},
    {GPUSCHED_ENOSPC, "GPUSCHED_ENOSPC", "request does not fit"},
    {GPUSCHED_EPARSE, "GPUSCHED_EPARSE", "parse error"},
    {GPUSCHED_ECORRUPT, "GPUSCHED_ECORRUPT", "corrupt or truncated data"},
    {GPUSCHED_EVERSION, "GPUSCHED_EVERSION", "unsupported format version"},
    {GPUSCHED_EIO, "GPUSCHED_EIO", "input/output error"},
};

static const struct gs_code_info *gs_code_find(int code)
{
    for (size_t i = 0; i < GS_ARRAY_LEN(gs_codes); i++)
        if (gs_codes[i].code == code)
            return &gs_codes[i];
    return NULL;
}

GPUSCHED_API const char *gpusched_strerror(int code)
{
    const struct gs_code_info *info = gs_code_find(code);
    return info ? info->text : "unknown error";
}

GPUSCHED_API const char *gpusched_err_name(int code)
{
    const struct gs_code_info *info = gs_code_find(code);
    return info ? info->name : "GPUSCHED_UNKNOWN";
}

int gs_verror(gs_err *e, int code, const char *fmt, va_list ap)
{
    if (!e)
        return code;
    e->code = code;
    int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    if (n < 0)
        snprintf(e->msg, sizeof e->msg, "%s", gpusched_strerror(code));
    return code;
}

int gs_error(gs_err *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gs_verror(e, code, fmt, ap);
    va_end(ap);
    return code;
}

void gs_err_clear(gs_err *e)
{
    if (!e)
        return;
    e->code = 0;
    e->msg[0] = '\0';
}

void gs_err_export(const gs_err *e, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    snprintf(buf, len, "%s", e && e->code ? e->msg : "");
}
