/* Input files, number parsing and small helpers shared by the subcommands. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define SNAPSHOT_MAGIC "GSCLSNAP"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpusched: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int rc = 0;
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                snprintf(err, errlen, "cannot read: %s", strerror(errno));
                rc = -1;
            }
            break;
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    if (f != stdin)
        fclose(f);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (rc) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = n;
    return 0;
}

int write_file(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    bool out = strcmp(path, "-") == 0;
    FILE *f = out ? stdout : fopen(path, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    size_t put = fwrite(data, 1, len, f);
    int rc = out ? fflush(f) : fclose(f);
    if (put != len || rc != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

const char *input_kind_name(input_kind k)
{
    switch (k) {
    case INPUT_TEXT: return "topology";
    case INPUT_PRESET: return "preset";
    case INPUT_SNAPSHOT: return "snapshot";
    }
    return "?";
}

static void list_presets(void)
{
    fputs("gpusched: presets:", stderr);
    for (uint32_t i = 0; gpusched_topo_preset_name(i); i++)
        fprintf(stderr, " preset:%s", gpusched_topo_preset_name(i));
    fputc('\n', stderr);
}

/* The reason an input did not load: kept for --json, printed for people. */
static void input_error(input *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void input_error(input *in, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(in->err, sizeof in->err, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpusched: %s: %s\n", in->name, in->err);
}

int input_load(input *in, const char *path)
{
    char err[512] = "";
    memset(in, 0, sizeof *in);
    in->name = path;
    gpusched_topo *topo = NULL;
    int rc;
    if (strncmp(path, "preset:", 7) == 0) {
        in->kind = INPUT_PRESET;
        rc = gpusched_topo_preset(path + 7, NULL, &topo, err, sizeof err);
        if (rc) {
            input_error(in, "%s", err[0] ? err : gpusched_strerror(rc));
            if (rc == GPUSCHED_ENOENT)
                list_presets();
            return -1;
        }
    } else {
        char *data;
        size_t len;
        if (read_file(path, &data, &len, err, sizeof err)) {
            input_error(in, "%s", err);
            return -1;
        }
        in->bytes = len;
        if (len >= 8 && memcmp(data, SNAPSHOT_MAGIC, 8) == 0) {
            in->kind = INPUT_SNAPSHOT;
            rc = gpusched_cluster_restore(data, len, NULL, &in->cluster, err, sizeof err);
            free(data);
            if (rc) {
                input_error(in, "not a valid snapshot (%s): %s", gpusched_err_name(rc), err);
                return -1;
            }
            in->topo = gpusched_cluster_topo(in->cluster);
            return 0;
        }
        in->kind = INPUT_TEXT;
        rc = gpusched_topo_parse(data, len, NULL, &topo, err, sizeof err);
        free(data);
        if (rc) {
            input_error(in, "%s", err[0] ? err : gpusched_strerror(rc));
            return -1;
        }
    }
    rc = gpusched_cluster_new(topo, NULL, &in->cluster);
    gpusched_topo_unref(topo); /* the cluster holds its own reference */
    if (rc) {
        input_error(in, "%s", gpusched_strerror(rc));
        return -1;
    }
    in->topo = gpusched_cluster_topo(in->cluster);
    return 0;
}

void input_free(input *in)
{
    gpusched_cluster_unref(in->cluster);
    in->cluster = NULL;
    in->topo = NULL;
}

int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int find_level(gpusched_topo *t, const char *s, bool nodes_ok, uint32_t *level)
{
    if (!s)
        return -1;
    uint32_t nl = gpusched_topo_level_count(t);
    if (gpusched_topo_level_find(t, s, level) == 0)
        return 0;
    if (nodes_ok && strcmp(s, "node") == 0) {
        *level = nl;
        return 0;
    }
    uint64_t v;
    if (parse_u64(s, nodes_ok ? nl : nl - 1, &v) == 0) {
        *level = (uint32_t)v;
        return 0;
    }
    fprintf(stderr, "gpusched: no level '%s'; the levels are", s);
    for (uint32_t l = 0; l < nl; l++) {
        const char *name = gpusched_topo_level_name(t, l);
        fprintf(stderr, " %s", name ? name : "?");
    }
    fprintf(stderr, "%s (or their indexes 0-%u)\n", nodes_ok ? " node" : "", nodes_ok ? nl : nl - 1);
    return -1;
}

const char *level_name(gpusched_topo *t, uint32_t level)
{
    const char *n = gpusched_topo_level_name(t, level);
    return n ? n : "node";
}

int popcount64(uint64_t v)
{
    return __builtin_popcountll(v);
}

void mask_to_ranges(uint64_t mask, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < 64 && n < cap; i++) {
        if (!(mask >> i & 1))
            continue;
        int j = i;
        while (j + 1 < 64 && (mask >> (j + 1) & 1))
            j++;
        int w = j > i ? snprintf(buf + n, cap - n, "%s%d-%d", n ? "," : "", i, j)
                      : snprintf(buf + n, cap - n, "%s%d", n ? "," : "", i);
        if (w < 0)
            break;
        n += (size_t)w;
        i = j;
    }
}
