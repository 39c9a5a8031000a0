/* A small streaming JSON writer for --json output. */
#include <inttypes.h>
#include <math.h>

#include "cli.h"

void json_init(json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->first[0] = true;
}

static void indent(json *j)
{
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

static void quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* Separator, newline and indentation before a member, then its key. */
static void member(json *j, const char *key)
{
    if (j->depth > 0) {
        if (!j->first[j->depth])
            fputc(',', j->f);
        fputc('\n', j->f);
        indent(j);
    }
    j->first[j->depth] = false;
    if (key) {
        quoted(j->f, key);
        fputs(": ", j->f);
    }
}

void json_open(json *j, const char *key, char brace)
{
    member(j, key);
    fputc(brace, j->f);
    if (j->depth + 1 < (int)(sizeof j->first / sizeof j->first[0]))
        j->depth++;
    j->first[j->depth] = true;
}

void json_close(json *j, char brace)
{
    bool empty = j->first[j->depth];
    j->depth--;
    if (!empty) {
        fputc('\n', j->f);
        indent(j);
    }
    fputc(brace, j->f);
}

void json_str(json *j, const char *key, const char *v)
{
    member(j, key);
    if (v)
        quoted(j->f, v);
    else
        fputs("null", j->f);
}

void json_u64(json *j, const char *key, uint64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void json_i64(json *j, const char *key, int64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void json_num(json *j, const char *key, double v)
{
    member(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.10g", v);
    else
        fputs("null", j->f);
}

void json_bool(json *j, const char *key, bool v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->f);
}

void json_null(json *j, const char *key)
{
    member(j, key);
    fputs("null", j->f);
}

void json_end(json *j)
{
    fputc('\n', j->f);
    fflush(j->f);
}
