/* The topology text parser. Any input parses or fails with EPARSE and a
 * message; a topology that parses exports to a text that parses to the
 * same export (the round trip gpusched_topo_export promises), and a failed
 * parse into a builder leaves it unchanged. */
#include <stdlib.h>
#include <string.h>

#include <gpusched/gpusched.h>

#include "fuzz.h"

static char *export_text(const gpusched_topo *t, size_t *len)
{
    FUZZ_CHECK(gpusched_topo_export(t, NULL, 0, len) == GPUSCHED_ERANGE, "size query");
    char *buf = malloc(*len + 1);
    FUZZ_CHECK(buf, "malloc");
    int rc = gpusched_topo_export(t, buf, *len + 1, len);
    FUZZ_CHECK(rc == 0, "export: %s", gpusched_err_name(rc));
    return buf;
}

/* 64 MiB: about a million nodes, a fraction of a second to build. */
#define FUZZ_TEXT_BUDGET (64u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_budget fb;
    fuzz_budget_init(&fb, FUZZ_TEXT_BUDGET);
    gpusched_topo *t = NULL;
    char err[256];
    int rc = gpusched_topo_parse((const char *)data, size, &fb.a, &t, err, sizeof err);
    if (rc) {
        FUZZ_CHECK(rc == GPUSCHED_EPARSE || (rc == GPUSCHED_ENOMEM && fb.refused), "parse: %s (%s)",
                   gpusched_err_name(rc), err);
        FUZZ_CHECK(fb.live == 0, "%zu bytes leaked by a failed parse", fb.live);
        FUZZ_CHECK(!t && err[0], "a failed parse has a message and no topology");
        return 0;
    }
    FUZZ_CHECK(gpusched_topo_node_count(t) <= GPUSCHED_MAX_TEXT_NODES, "node limit");
    FUZZ_CHECK(gpusched_topo_gpu_count(t) <= GPUSCHED_MAX_TEXT_GPUS, "GPU limit");
    size_t len, len2;
    char *text = export_text(t, &len);
    gpusched_topo *back = NULL;
    rc = gpusched_topo_parse(text, len, NULL, &back, err, sizeof err);
    FUZZ_CHECK(rc == 0, "export does not parse back: %s", err);
    char *text2 = export_text(back, &len2);
    FUZZ_CHECK(len == len2 && !memcmp(text, text2, len), "export, parse, export changed the text");
    FUZZ_CHECK(gpusched_topo_node_count(back) == gpusched_topo_node_count(t), "node count");
    free(text2);
    gpusched_topo_unref(back);

    /* A parse is a transaction: the same text again into the same builder
     * fails (its first node is a duplicate) and leaves the builder as the
     * first parse made it. */
    gpusched_topo_builder *b = NULL;
    FUZZ_CHECK(gpusched_topo_builder_new(NULL, &b) == 0, "builder");
    rc = gpusched_topo_builder_parse(b, (const char *)data, size);
    FUZZ_CHECK(rc == 0, "parses alone but not into a builder: %s", gpusched_topo_builder_errmsg(b));
    rc = gpusched_topo_builder_parse(b, (const char *)data, size);
    FUZZ_CHECK(rc == GPUSCHED_EPARSE, "the same text twice: %s", gpusched_err_name(rc));
    FUZZ_CHECK(gpusched_topo_builder_freeze(b, &back) == 0, "freeze: %s", gpusched_topo_builder_errmsg(b));
    gpusched_topo_builder_free(b);
    text2 = export_text(back, &len2);
    FUZZ_CHECK(len == len2 && !memcmp(text, text2, len), "a failed parse changed the builder");
    free(text);
    free(text2);
    gpusched_topo_unref(back);
    gpusched_topo_unref(t);
    FUZZ_CHECK(fb.live == 0, "%zu bytes live after the last unref", fb.live);
    return 0;
}
