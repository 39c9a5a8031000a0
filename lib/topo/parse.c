/* The topology text format (doc/topology-format.md): a line-oriented
 * reader that feeds the builder. A parse is one transaction: on any error
 * the builder is rolled back to its state before the call. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "topo-builder.h"
#include "topo-export.h"

typedef struct gs_tok {
    const char *s;
    size_t len;
    uint32_t col;   /* 1-based */
} gs_tok;

/* A path component or node name: prefix, an optional [lo-hi] range, suffix. */
typedef struct gs_pat {
    gs_tok tok;
    gs_span prefix, suffix;
    uint64_t lo, hi;
    bool range, open;   /* open: "[lo-]", a counter (names only) */
} gs_pat;

typedef struct gs_parser {
    gpusched_topo_builder *b;
    uint32_t line;
} gs_parser;

static int gs_perr(gs_parser *p, uint32_t col, const char *fmt, ...) GS_PRINTF(3, 4);

static int gs_perr(gs_parser *p, uint32_t col, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return gs_error(&p->b->err, GPUSCHED_EPARSE, "line %u, column %u: %s", p->line, col, what);
}

/* Names quoted in messages are cut at the name limit. */
#define GS_Q(len) ((int)((len) > 63 ? 63 : (len)))

/* Re-labels an error the builder reported with the position of `col`. */
static int gs_pwrap(gs_parser *p, int rc, uint32_t col)
{
    if (rc == GPUSCHED_ENOMEM)
        return rc;
    char msg[GS_ERRMSG_MAX];
    snprintf(msg, sizeof msg, "%s", p->b->err.msg);
    return gs_error(&p->b->err, GPUSCHED_EPARSE, "line %u, column %u: %s", p->line, col, msg);
}

static bool gs_tok_is(const gs_tok *t, const char *s)
{
    size_t n = strlen(s);
    return t->len == n && !memcmp(t->s, s, n);
}

static int gs_number(gs_parser *p, const char *s, size_t len, uint32_t col, uint64_t *v)
{
    if (len == 0)
        return gs_perr(p, col, "a number is expected");
    if (len > 10)
        return gs_perr(p, col, "number '%.*s' is too large", GS_Q(len), s);
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return gs_perr(p, col + (uint32_t)i, "'%.*s' is not a decimal number", GS_Q(len), s);
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    if (x > UINT32_MAX)
        return gs_perr(p, col, "number '%.*s' is too large", GS_Q(len), s);
    *v = x;
    return 0;
}

static int gs_name_chars(gs_parser *p, const char *s, size_t len, uint32_t col)
{
    for (size_t i = 0; i < len; i++)
        if (!gs_name_char((unsigned char)s[i]))
        {
            unsigned char c = (unsigned char)s[i];
            if (c > ' ' && c < 127)
                return gs_perr(p, col + (uint32_t)i, "unexpected character '%c' in a name", c);
            return gs_perr(p, col + (uint32_t)i, "unexpected byte 0x%02x in a name", c);
        }
    return 0;
}

static int gs_pattern(gs_parser *p, gs_tok t, bool allow_open, gs_pat *out)
{
    *out = (gs_pat){.tok = t, .prefix = {t.s, t.len}};
    const char *open = memchr(t.s, '[', t.len);
    if (!open)
        return gs_name_chars(p, t.s, t.len, t.col);
    size_t at = (size_t)(open - t.s);
    const char *close = memchr(open, ']', t.len - at);
    if (!close)
        return gs_perr(p, t.col + (uint32_t)at, "'[' without ']'");
    const char *dash = memchr(open, '-', (size_t)(close - open));
    if (!dash)
        return gs_perr(p, t.col + (uint32_t)at, "a range is [first-last]");
    uint32_t c_lo = t.col + (uint32_t)at + 1, c_hi = t.col + (uint32_t)(dash - t.s) + 1;
    out->prefix.len = at;
    out->suffix = (gs_span){close + 1, t.len - (size_t)(close + 1 - t.s)};
    out->range = true;
    int rc = gs_name_chars(p, t.s, at, t.col);
    if (!rc)
        rc = gs_name_chars(p, out->suffix.s, out->suffix.len, t.col + (uint32_t)(close + 1 - t.s));
    if (!rc)
        rc = gs_number(p, open + 1, (size_t)(dash - open - 1), c_lo, &out->lo);
    if (rc)
        return rc;
    if (dash + 1 == close) {
        if (!allow_open)
            return gs_perr(p, c_hi, "an open range [first-] is only allowed in a node name");
        out->open = true;
        out->hi = UINT32_MAX;
        return 0;
    }
    rc = gs_number(p, dash + 1, (size_t)(close - dash - 1), c_hi, &out->hi);
    if (!rc && out->hi < out->lo)
        rc = gs_perr(p, c_hi, "range ends before it starts");
    return rc;
}

static size_t gs_utoa(char *dst, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        dst[i] = tmp[n - 1 - i];
    return n;
}

/* Writes prefix, value, suffix into `buf` (GPUSCHED_MAX_NAME + 32
 * bytes); over-long results are truncated here and rejected by the
 * builder's length check because they stay longer than 63 bytes. */
static gs_span gs_expand(const gs_pat *pt, uint64_t v, char *buf)
{
    if (!pt->range)
        return pt->prefix;
    size_t cap = GPUSCHED_MAX_NAME + 1, n = 0;
    size_t k = pt->prefix.len < cap ? pt->prefix.len : cap;
    memcpy(buf, pt->prefix.s, k);
    n = k;
    n += gs_utoa(buf + n, v);
    k = pt->suffix.len < cap ? pt->suffix.len : cap;
    memcpy(buf + n, pt->suffix.s, k);
    return (gs_span){buf, n + k};
}

typedef struct gs_props {
    uint64_t gpus, count;
    uint32_t cls;
    uint64_t labels;
    uint32_t gpus_col;
    bool have_gpus, have_count, have_class, have_labels;
    uint32_t res_seen;                      /* bit r: NAME=VALUE of resource r given */
    uint32_t res[GPUSCHED_MAX_RESOURCES];
} gs_props;

static int gs_prop_labels(gs_parser *p, const gs_tok *v, uint64_t *mask)
{
    size_t i = 0;
    while (i < v->len) {
        const char *comma = memchr(v->s + i, ',', v->len - i);
        size_t end = comma ? (size_t)(comma - v->s) : v->len;
        uint32_t col = v->col + (uint32_t)i;
        if (end == i)
            return gs_perr(p, col, "empty label name");
        int rc = gs_name_chars(p, v->s + i, end - i, col);
        uint32_t bit = 0;
        if (!rc && (rc = gs_builder_label(p->b, v->s + i, end - i, &bit)))
            return gs_pwrap(p, rc, col);
        if (rc)
            return rc;
        *mask |= (uint64_t)1 << bit;
        i = end + 1;
        if (comma && i == v->len)
            return gs_perr(p, v->col + (uint32_t)end, "trailing ',' in labels");
    }
    return 0;
}

/* NAME=VALUE for a declared resource: a decimal uint32. */
static int gs_prop_resource(gs_parser *p, const gs_tok *t, const gs_tok *key, const gs_tok *val,
                            gs_props *pr)
{
    uint32_t r = gs_builder_resource_find(p->b, key->s, key->len);
    if (r == GPUSCHED_NONE)
        return gs_perr(p, t->col, "unknown property '%.*s'", GS_Q(key->len), key->s);
    if (pr->res_seen & (1u << r))
        return gs_perr(p, t->col, "property '%.*s' given twice", GS_Q(key->len), key->s);
    uint64_t v;
    int rc = gs_number(p, val->s, val->len, val->col, &v);
    if (rc)
        return rc;
    pr->res_seen |= 1u << r;
    pr->res[r] = (uint32_t)v;
    return 0;
}

static int gs_prop(gs_parser *p, const gs_tok *t, gs_props *pr)
{
    const char *eq = memchr(t->s, '=', t->len);
    if (!eq)
        return gs_perr(p, t->col, "'%.*s' is not a key=value property", GS_Q(t->len), t->s);
    gs_tok key = {t->s, (size_t)(eq - t->s), t->col};
    gs_tok val = {eq + 1, t->len - key.len - 1, t->col + (uint32_t)key.len + 1};
    bool *seen;
    if (gs_tok_is(&key, "gpus"))
        seen = &pr->have_gpus;
    else if (gs_tok_is(&key, "count"))
        seen = &pr->have_count;
    else if (gs_tok_is(&key, "class"))
        seen = &pr->have_class;
    else if (gs_tok_is(&key, "labels"))
        seen = &pr->have_labels;
    else
        return gs_prop_resource(p, t, &key, &val, pr);
    if (*seen)
        return gs_perr(p, t->col, "property '%.*s' given twice", GS_Q(key.len), key.s);
    *seen = true;
    if (seen == &pr->have_gpus) {
        pr->gpus_col = val.col;
        return gs_number(p, val.s, val.len, val.col, &pr->gpus);
    }
    if (seen == &pr->have_count) {
        int rc = gs_number(p, val.s, val.len, val.col, &pr->count);
        if (!rc && pr->count == 0)
            rc = gs_perr(p, val.col, "count must be at least 1");
        return rc;
    }
    if (seen == &pr->have_labels)
        return gs_prop_labels(p, &val, &pr->labels);
    int rc = gs_name_chars(p, val.s, val.len, val.col);
    if (!rc && val.len == 0)
        rc = gs_perr(p, val.col, "empty class name");
    if (!rc && (rc = gs_builder_class(p->b, val.s, val.len, &pr->cls)))
        return gs_pwrap(p, rc, val.col);
    return rc;
}

/* Splits a node path at '/' into exactly nlevels patterns. */
static int gs_path(gs_parser *p, const gs_tok *t, gs_pat *pats)
{
    uint32_t L = p->b->nlevels, k = 0;
    size_t i = 0;
    for (;;) {
        const char *slash = memchr(t->s + i, '/', t->len - i);
        size_t end = slash ? (size_t)(slash - t->s) : t->len;
        uint32_t col = t->col + (uint32_t)i;
        if (k == L)
            return gs_perr(p, col - 1, "the path has more than %u components (one per level)", L);
        if (end == i)
            return gs_perr(p, col, "empty path component");
        int rc = gs_pattern(p, (gs_tok){t->s + i, end - i, col}, false, &pats[k++]);
        if (rc)
            return rc;
        if (!slash)
            break;
        i = end + 1;
    }
    if (k != L)
        return gs_perr(p, t->col, "the path has %u components, %u expected (one per level)", k, L);
    return 0;
}

/* How many nodes a line stands for, and whether its name can number them. */
static int gs_node_total(gs_parser *p, const gs_tok *f, const gs_pat *path, const gs_pat *name,
                         uint64_t count, uint64_t gpus, uint64_t *total)
{
    gpusched_topo_builder *b = p->b;
    uint64_t n = count;
    for (uint32_t l = 0; l < b->nlevels; l++) {
        n *= path[l].range ? path[l].hi - path[l].lo + 1 : 1;
        if (n > UINT32_MAX - 1 - (uint64_t)b->nnodes)
            return gs_perr(p, f[1].col, "the line expands to too many nodes");
    }
    if (!name->range && n > 1)
        return gs_perr(p, f[2].col, "a line of several nodes needs a range in the name, like n[0-]");
    if (name->range && !name->open && name->hi - name->lo + 1 != n)
        return gs_perr(p, f[2].col, "the name range has %llu values for %llu nodes",
                       (unsigned long long)(name->hi - name->lo + 1), (unsigned long long)n);
    if (name->open && name->lo + n - 1 > UINT32_MAX)
        return gs_perr(p, f[2].col, "the name counter passes 2^32-1");
    /* The text limits, checked before a node is added: a ranged line is a
     * few bytes that would otherwise cost memory per node it names. */
    if (b->nnodes + n > GPUSCHED_MAX_TEXT_NODES)
        return gs_perr(p, f[1].col, "the line brings the topology to %llu nodes, a text may declare at most %u",
                       (unsigned long long)(b->nnodes + n), GPUSCHED_MAX_TEXT_NODES);
    if (b->ngpus + n * gpus > GPUSCHED_MAX_TEXT_GPUS)
        return gs_perr(p, f[1].col, "the line brings the topology to %llu GPUs, a text may declare at most %u",
                       (unsigned long long)(b->ngpus + n * gpus), GPUSCHED_MAX_TEXT_GPUS);
    *total = n;
    return 0;
}

/* Adds the nodes of a line: an odometer over the path ranges (the
 * rightmost fastest), `count` nodes per path, the name counter running
 * across all of them. */
static int gs_node_expand(gs_parser *p, const gs_tok *f, const gs_pat *path, const gs_pat *name,
                          const gs_props *pr, uint64_t total)
{
    gpusched_topo_builder *b = p->b;
    uint64_t v[GS_MAX_LEVELS];
    char bufs[GS_MAX_LEVELS + 1][GPUSCHED_MAX_NAME * 2 + 32];
    gs_span comp[GS_MAX_LEVELS];
    for (uint32_t l = 0; l < b->nlevels; l++) {
        v[l] = path[l].lo;
        comp[l] = gs_expand(&path[l], v[l], bufs[l]);
    }
    uint64_t counter = name->lo;
    for (uint64_t done = 0; done < total;) {
        for (uint32_t l = 0; l < b->nlevels; l++)
            if (comp[l].len > GPUSCHED_MAX_NAME)
                return gs_perr(p, path[l].tok.col, "%s name '%.*s...' is longer than 63 bytes",
                               gs_pool_str(&b->pool, b->level_name[l]), 32, comp[l].s);
        for (uint64_t c = 0; c < pr->count; c++, done++) {
            gs_span nm = gs_expand(name, counter++, bufs[GS_MAX_LEVELS]);
            if (nm.len > GPUSCHED_MAX_NAME)
                return gs_perr(p, f[2].col, "node name '%.*s...' is longer than 63 bytes", 32, nm.s);
            int rc = gs_builder_add_valid(b, comp, nm, (uint32_t)pr->gpus, pr->cls, pr->labels);
            if (rc)
                return gs_pwrap(p, rc, f[2].col);
            for (uint32_t m = pr->res_seen; m; m &= m - 1)
                b->node_res[gs_ctz64(m)][b->nnodes - 1] = pr->res[gs_ctz64(m)];
        }
        for (uint32_t l = b->nlevels; l-- > 0;) {
            if (!path[l].range)
                continue;
            if (v[l] < path[l].hi) {
                comp[l] = gs_expand(&path[l], ++v[l], bufs[l]);
                break;
            }
            v[l] = path[l].lo;
            comp[l] = gs_expand(&path[l], v[l], bufs[l]);
        }
    }
    return 0;
}

static int gs_node_line(gs_parser *p, const gs_tok *f, uint32_t nf)
{
    gpusched_topo_builder *b = p->b;
    if (!b->nlevels)
        return gs_perr(p, f[0].col, "'node' before 'levels'");
    if (nf < 3)
        return gs_perr(p, f[0].col, "'node' needs a path, a name and gpus=N");
    gs_pat path[GS_MAX_LEVELS], name;
    int rc = gs_pattern(p, f[2], true, &name);
    if (!rc && !name.range)
        gs_builder_prefetch_name(b, name.prefix.s, name.prefix.len);
    if (!rc)
        rc = gs_path(p, &f[1], path);
    gs_props pr = {.count = 1};
    for (uint32_t i = 3; !rc && i < nf; i++)
        rc = gs_prop(p, &f[i], &pr);
    if (rc)
        return rc;
    if (!pr.have_gpus)
        return gs_perr(p, f[0].col, "'node' needs gpus=N");
    if (pr.gpus > GPUSCHED_MAX_NODE_GPUS)
        return gs_perr(p, pr.gpus_col, "gpus=%llu, 0 to %d allowed", (unsigned long long)pr.gpus,
                       GPUSCHED_MAX_NODE_GPUS);
    if (!pr.have_class && (rc = gs_builder_class(b, "default", 7, &pr.cls)))
        return gs_pwrap(p, rc, f[0].col);
    uint64_t total = 0;
    rc = gs_node_total(p, f, path, &name, pr.count, pr.gpus, &total);
    return rc ? rc : gs_node_expand(p, f, path, &name, &pr, total);
}

static int gs_levels_line(gs_parser *p, const gs_tok *f, uint32_t nf)
{
    gpusched_topo_builder *b = p->b;
    uint32_t n = nf - 1;
    if (n == 0)
        return gs_perr(p, f[0].col, "'levels' needs at least one name");
    if (n > GS_MAX_LEVELS)
        return gs_perr(p, f[GS_MAX_LEVELS + 1].col, "more than %d levels", GS_MAX_LEVELS);
    for (uint32_t i = 1; i < nf; i++) {
        int rc = gs_name_chars(p, f[i].s, f[i].len, f[i].col);
        if (rc)
            return rc;
    }
    if (b->nlevels) {
        bool same = b->nlevels == n;
        for (uint32_t l = 0; same && l < n; l++)
            same = gs_pool_eq(&b->pool, b->level_name[l], f[l + 1].s, f[l + 1].len);
        if (!same)
            return gs_perr(p, f[0].col, "levels differ from the levels already set");
        return 0;
    }
    gs_span names[GS_MAX_LEVELS];
    for (uint32_t l = 0; l < n; l++)
        names[l] = (gs_span){f[l + 1].s, f[l + 1].len};
    int rc = gs_builder_levels(b, n, names);
    return rc ? gs_pwrap(p, rc, f[1].col) : 0;
}

typedef int (*gs_intern_fn)(gpusched_topo_builder *b, const char *name, size_t len, uint32_t *id);

/* `classes`, `labels` or `resources`: names declared in order. */
static int gs_names_line(gs_parser *p, const gs_tok *f, uint32_t nf, gs_intern_fn intern)
{
    for (uint32_t i = 1; i < nf; i++) {
        uint32_t id;
        int rc = gs_name_chars(p, f[i].s, f[i].len, f[i].col);
        if (rc)
            return rc;
        rc = intern(p->b, f[i].s, f[i].len, &id);
        if (rc)
            return gs_pwrap(p, rc, f[i].col);
    }
    return 0;
}

static int gs_line(gs_parser *p, const char *s, size_t len)
{
    gs_tok f[GS_TEXT_MAX_FIELDS];
    uint32_t nf = 0;
    size_t i = 0;
    for (;;) {
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == len || s[i] == '#')
            break;
        size_t start = i;
        while (i < len && s[i] != ' ' && s[i] != '\t' && s[i] != '#')
            i++;
        if (nf == GS_TEXT_MAX_FIELDS)
            return gs_perr(p, (uint32_t)start + 1, "more than 16 fields on a line");
        f[nf++] = (gs_tok){s + start, i - start, (uint32_t)start + 1};
    }
    if (nf == 0)
        return 0;
    if (gs_tok_is(&f[0], "node"))
        return gs_node_line(p, f, nf);
    if (gs_tok_is(&f[0], "levels"))
        return gs_levels_line(p, f, nf);
    if (gs_tok_is(&f[0], "classes"))
        return gs_names_line(p, f, nf, gs_builder_class);
    if (gs_tok_is(&f[0], "labels"))
        return gs_names_line(p, f, nf, gs_builder_label);
    if (gs_tok_is(&f[0], "resources"))
        return gs_names_line(p, f, nf, gs_builder_resource);
    return gs_perr(p, f[0].col,
                   "unknown directive '%.*s' (node, levels, classes, labels or resources expected)",
                   GS_Q(f[0].len), f[0].s);
}

static int gs_parse(gs_parser *p, const char *text, size_t len)
{
    size_t pos = 0;
    p->line = 0;
    while (pos < len) {
        p->line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t n = end - pos;
        if (n && text[pos + n - 1] == '\r')
            n--;
        if (n > UINT32_MAX / 2)
            return gs_perr(p, 1, "line too long");
        int rc = gs_line(p, text + pos, n);
        if (rc)
            return rc;
        pos = end + 1;
    }
    return 0;
}

GPUSCHED_API int gpusched_topo_builder_parse(gpusched_topo_builder *b, const char *text, size_t len)
{
    if (!b)
        return GPUSCHED_EINVAL;
    if (!text && len)
        return gs_error(&b->err, GPUSCHED_EINVAL, "text is NULL");
    gs_bmark m;
    gs_builder_mark(b, &m);
    gs_parser p = {b, 0};
    int rc = gs_parse(&p, text, len);
    if (rc) {
        if (rc == GPUSCHED_ENOMEM)
            gs_error(&b->err, rc, "line %u: out of memory", p.line);
        gs_builder_rollback(b, &m);
        return rc;
    }
    return gs_ok(&b->err);
}

GPUSCHED_API int gpusched_topo_parse(const char *text, size_t len, const gpusched_allocator *alloc,
                                     gpusched_topo **out, char *errbuf, size_t errbuf_len)
{
    gs_err e = {0};
    gpusched_topo_builder *b = NULL;
    int rc = out ? 0 : gs_error(&e, GPUSCHED_EINVAL, "out is NULL");
    if (!rc && (rc = gpusched_topo_builder_new(alloc, &b)))
        gs_error(&e, rc, rc == GPUSCHED_ENOMEM ? "out of memory" : "invalid allocator");
    if (!rc)
        rc = gpusched_topo_builder_parse(b, text, len);
    if (!rc) {
        if (!b->nlevels)
            rc = gs_error(&b->err, GPUSCHED_EPARSE, "end of text: no 'levels' line");
        else if (!b->nnodes)
            rc = gs_error(&b->err, GPUSCHED_EPARSE, "end of text: no 'node' line");
        else if (!b->ngpus)
            rc = gs_error(&b->err, GPUSCHED_EPARSE, "end of text: every node has 0 GPUs (a topology needs one)");
        else
            rc = gpusched_topo_builder_freeze(b, out);
    }
    if (b && rc)
        e = b->err;
    gpusched_topo_builder_free(b);
    gs_err_export(&e, errbuf, errbuf_len);
    return rc;
}
