/* The gpusched command-line tool: shared declarations (doc/cli.md). The
 * tool uses the library's public API only. */
#ifndef GPUSCHED_CLI_H
#define GPUSCHED_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <gpusched/gpusched.h>

/* Exit codes (documented in --help and doc/cli.md). */
enum {
    CLI_OK = 0,
    CLI_FAIL = 1,    /* bad input, a failed check, a library error */
    CLI_USAGE = 2,   /* bad command line */
    CLI_NOFIT = 3,   /* place: the gang does not fit (the answer explains) */
};

/* ---- output ----------------------------------------------------------- */

/* A streaming JSON writer: pretty-printed, keys in the order written. A NULL
 * key is for array members. Strings are escaped as RFC 8259 asks. */
typedef struct json {
    FILE *f;
    int depth;
    bool first[32]; /* per depth: nothing written at this depth yet */
} json;

void json_init(json *j, FILE *f);
void json_open(json *j, const char *key, char brace);  /* '{' or '[' */
void json_close(json *j, char brace);                  /* '}' or ']' */
void json_str(json *j, const char *key, const char *v);
void json_u64(json *j, const char *key, uint64_t v);
void json_i64(json *j, const char *key, int64_t v);
void json_num(json *j, const char *key, double v);
void json_bool(json *j, const char *key, bool v);
void json_null(json *j, const char *key);
void json_end(json *j); /* the final newline */

/* ---- input ------------------------------------------------------------ */

/* What a FILE argument held. A topology text, a preset ("preset:NAME") or
 * a snapshot all give a cluster (an empty one for the first two). */
typedef enum input_kind { INPUT_TEXT, INPUT_PRESET, INPUT_SNAPSHOT } input_kind;

typedef struct input {
    const char *name;         /* as given on the command line */
    input_kind kind;
    gpusched_topo *topo;      /* borrowed from the cluster */
    gpusched_cluster *cluster;
    size_t bytes;             /* size of the file (0 for a preset) */
    char err[600];            /* why it did not load ("" when it did) */
} input;

/* Reads FILE ("-" for standard input, "preset:NAME" for a built-in
 * topology). On failure prints "gpusched: FILE: why" and returns non-zero. */
int input_load(input *in, const char *path);
void input_free(input *in);
/* Reads a whole file ("-": standard input) into a malloc'd buffer. */
int read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);
int write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);
const char *input_kind_name(input_kind k);

/* ---- helpers ---------------------------------------------------------- */

void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parses an unsigned decimal integer of at most `max`; 0 on success. */
int parse_u64(const char *s, uint64_t max, uint64_t *out);
int parse_i64(const char *s, int64_t *out);
/* A level by name or index; nodes_ok also accepts "node" for the node level
 * (returns gpusched_topo_level_count()). */
int find_level(gpusched_topo *t, const char *s, bool nodes_ok, uint32_t *level);
/* The level name, or "node" for the node level. */
const char *level_name(gpusched_topo *t, uint32_t level);
/* "0-3,6" for a GPU mask. */
void mask_to_ranges(uint64_t mask, char *buf, size_t cap);
int popcount64(uint64_t v);

/* ---- subcommands ------------------------------------------------------ */

int cmd_topo(int argc, char **argv);
int cmd_place(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_frag(int argc, char **argv);
int cmd_draw(int argc, char **argv);

#endif
