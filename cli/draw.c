/* gpusched draw FILE: an SVG picture of a cluster's occupancy, one cell per
 * node grouped by the two lowest levels, with a legend and a bar per level
 * of how the free GPUs split into whole free domains and stranded ones. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char draw_usage[] =
    "usage: gpusched draw FILE [-o OUT.svg] [--color free|job] [--domain PATH]\n"
    "                          [--max-nodes N] [--title TEXT] [--json]\n"
    "\n"
    "Draws the cluster of FILE (a snapshot; a topology gives an empty\n"
    "cluster) as SVG: one cell per node, nodes stacked in columns by their\n"
    "lowest-level domain (rack), columns grouped in panels by the level above\n"
    "(block). Below, one bar per level: the share of the free GPUs that lie\n"
    "in fully free domains of that level and the share that is stranded.\n"
    "\n"
    "  --color free     cells colored by free usable GPUs (default)\n"
    "  --color job      each GPU a stripe colored by the job that holds it\n"
    "  --domain PATH    only this domain (for example z0/b3), for big clusters\n"
    "  --max-nodes N    refuse to draw more nodes than this (default 4096)\n"
    "  -o OUT           write to OUT (default standard output)\n"
    "  --json           print a summary of what was drawn as JSON (needs -o)\n"
    "\n"
    "Nodes that are not up are crossed out; reserved GPUs are amber.\n";

/* Cell geometry in pixels. */
enum { CELL = 14, GAP = 3, PANEL_GAP = 18, MARGIN = 16, TITLE_H = 34, LABEL_H = 16, PANEL_TITLE_H = 16 };

/* Distinct colors for jobs (by order of first appearance). */
static const char *const job_colors[] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
    "#9c755f", "#e15759", "#bab0ac", "#86bcb6", "#d37295", "#a0cbe8",
};
#define NJOB_COLORS (sizeof job_colors / sizeof job_colors[0])
#define FREE_COLOR "#f4f4f4"
#define RESERVED_COLOR "#f5b335"
#define OTHER_JOBS_COLOR "#7f7f7f"

/* Free mode: a ramp from "nothing free" (dark) to "all free" (light). */
static void ramp(double x, char *out, size_t cap)
{
    static const int lo[3] = {0x23, 0x37, 0x6b}, hi[3] = {0xe6, 0xf2, 0xd8};
    int c[3];
    for (int i = 0; i < 3; i++)
        c[i] = (int)(lo[i] + (hi[i] - lo[i]) * x + 0.5);
    snprintf(out, cap, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

typedef struct job_color {
    uint64_t id;
    uint64_t gpus;
} job_color;

typedef struct drawing {
    gpusched_topo *t;
    gpusched_cluster *c;
    uint32_t first, count;    /* the nodes drawn */
    uint32_t group_level, col_level; /* panels, columns (GPUSCHED_NONE: one panel) */
    bool by_job;
    job_color *jobs;          /* jobs seen, in order of first appearance */
    uint32_t njobs, cap_jobs;
    uint32_t max_gpus;
} drawing;

static uint32_t job_index(drawing *d, uint64_t id)
{
    for (uint32_t i = 0; i < d->njobs; i++)
        if (d->jobs[i].id == id) {
            d->jobs[i].gpus++;
            return i;
        }
    if (d->njobs == d->cap_jobs) {
        uint32_t cap = d->cap_jobs ? d->cap_jobs * 2 : 64;
        job_color *j = realloc(d->jobs, sizeof *j * cap);
        if (!j)
            return UINT32_MAX;
        d->jobs = j, d->cap_jobs = cap;
    }
    d->jobs[d->njobs].id = id;
    d->jobs[d->njobs].gpus = 1;
    return d->njobs++;
}

static const char *job_fill(uint32_t idx)
{
    return idx < NJOB_COLORS ? job_colors[idx] : OTHER_JOBS_COLOR;
}

static void cell(drawing *d, FILE *f, uint32_t node, int x, int y)
{
    uint64_t fr = 0, rs = 0, al = 0;
    uint32_t health = 0, g = gpusched_topo_node_gpus(d->t, node);
    char name[GPUSCHED_MAX_NAME + 1], fill[16];
    gpusched_cluster_node_state(d->c, node, &fr, &rs, &al, &health);
    gpusched_topo_node_name(d->t, node, name, sizeof name);
    uint32_t nfree = health == GPUSCHED_NODE_UP ? (uint32_t)popcount64(fr) : 0;
    fprintf(f, "<g><title>");
    xml_text(f, name);
    fprintf(f, ": %u of %u GPUs free, %d allocated, %d reserved%s</title>", nfree, g, popcount64(al),
            popcount64(rs), health == GPUSCHED_NODE_UP ? "" : health == GPUSCHED_NODE_DOWN ? ", down" : ", not up");
    if (!d->by_job) {
        ramp(g ? (double)nfree / g : 0, fill, sizeof fill);
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"%s/>", x, y, CELL, CELL, fill,
                rs ? " stroke=\"" RESERVED_COLOR "\" stroke-width=\"2\"" : "");
    } else {
        /* One vertical stripe per GPU, runs of the same holder merged. */
        double w = (double)CELL / g;
        uint32_t start = 0;
        const char *prev = NULL;
        for (uint32_t i = 0; i <= g; i++) {
            const char *col = NULL;
            if (i < g) {
                uint32_t state = 0;
                uint64_t id = 0;
                gpusched_cluster_gpu_state(d->c, node, i, &state, &id);
                col = state == GPUSCHED_GPU_FREE ? FREE_COLOR
                      : state == GPUSCHED_GPU_RESERVED ? RESERVED_COLOR
                                                       : job_fill(job_index(d, id));
            }
            if (prev && (i == g || strcmp(col, prev) != 0)) {
                fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>", x + start * w, y,
                        (i - start) * w, CELL, prev);
                start = i;
            }
            prev = col;
        }
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\" "
                   "stroke-width=\"0.5\"/>", x, y, CELL, CELL);
    }
    if (health != GPUSCHED_NODE_UP)
        fprintf(f, "<path d=\"M%d %dl%d %dM%d %dl%d %d\" stroke=\"#c0392b\" stroke-width=\"2\"/>", x, y, CELL, CELL,
                x + CELL, y, -CELL, CELL);
    fprintf(f, "</g>\n");
}

/* The last path component of a domain's name, for column labels. */
static void short_name(gpusched_topo *t, uint32_t level, uint32_t dom, char *buf, size_t cap)
{
    char path[(GPUSCHED_MAX_NAME + 1) * GPUSCHED_MAX_LEVELS];
    gpusched_topo_domain_name(t, level, dom, path, sizeof path);
    const char *slash = strrchr(path, '/');
    snprintf(buf, cap, "%s", slash ? slash + 1 : path);
}

typedef struct layout {
    int width, height, grid_bottom;
} layout;

/* Panels (group domains) laid out left to right, wrapping at about 1100
 * pixels; returns the geometry, and with f set draws. */
static layout panels(drawing *d, FILE *f, int y0)
{
    layout lay = {0, 0, 0};
    uint32_t last = d->first + d->count;
    int x = MARGIN, y = y0, row_h = 0, max_x = 0;
    uint32_t node = d->first;
    while (node < last) {
        uint32_t gdom = 0, gfirst = d->first, gcount = d->count;
        if (d->group_level != GPUSCHED_NONE) {
            gpusched_topo_node_domain(d->t, node, d->group_level, &gdom);
            gpusched_topo_domain_nodes(d->t, d->group_level, gdom, &gfirst, &gcount);
            if (gfirst < d->first)
                gcount -= d->first - gfirst, gfirst = d->first;
            if (gfirst + gcount > last)
                gcount = last - gfirst;
        }
        /* Columns of this panel and the tallest one. */
        int cols = 0, tallest = 0;
        for (uint32_t n = gfirst; n < gfirst + gcount;) {
            uint32_t cd, cf, cc;
            gpusched_topo_node_domain(d->t, n, d->col_level, &cd);
            gpusched_topo_domain_nodes(d->t, d->col_level, cd, &cf, &cc);
            uint32_t end = cf + cc < gfirst + gcount ? cf + cc : gfirst + gcount;
            if ((int)(end - n) > tallest)
                tallest = (int)(end - n);
            cols++;
            n = end;
        }
        int pw = cols * (CELL + GAP) - GAP, ph = PANEL_TITLE_H + tallest * (CELL + GAP) - GAP + LABEL_H;
        if (pw < 60)
            pw = 60;
        if (x > MARGIN && x + pw > 1100) {
            x = MARGIN;
            y += row_h + PANEL_GAP;
            row_h = 0;
        }
        if (f) {
            char path[(GPUSCHED_MAX_NAME + 1) * GPUSCHED_MAX_LEVELS] = "";
            if (d->group_level != GPUSCHED_NONE)
                gpusched_topo_domain_name(d->t, d->group_level, gdom, path, sizeof path);
            fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"panel\">", x, y + 11);
            xml_text(f, path);
            fprintf(f, "</text>\n");
            int cx = x;
            for (uint32_t n = gfirst; n < gfirst + gcount;) {
                uint32_t cd, cf, cc;
                gpusched_topo_node_domain(d->t, n, d->col_level, &cd);
                gpusched_topo_domain_nodes(d->t, d->col_level, cd, &cf, &cc);
                uint32_t end = cf + cc < gfirst + gcount ? cf + cc : gfirst + gcount;
                int cy = y + PANEL_TITLE_H;
                for (uint32_t k = n; k < end; k++, cy += CELL + GAP)
                    cell(d, f, k, cx, cy);
                char label[(GPUSCHED_MAX_NAME + 1) * GPUSCHED_MAX_LEVELS];
                short_name(d->t, d->col_level, cd, label, sizeof label);
                fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"col\">", cx + CELL / 2,
                        y + PANEL_TITLE_H + tallest * (CELL + GAP) + 9);
                xml_text(f, label);
                fprintf(f, "</text>\n");
                cx += CELL + GAP;
                n = end;
            }
        }
        x += pw + PANEL_GAP;
        if (x > max_x)
            max_x = x;
        if (ph > row_h)
            row_h = ph;
        node = gfirst + gcount;
    }
    lay.width = max_x - PANEL_GAP + MARGIN;
    lay.grid_bottom = y + row_h;
    return lay;
}

static int legend(drawing *d, FILE *f, int x, int y, int width)
{
    char fill[16];
    if (!d->by_job) {
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"head\">free GPUs per node</text>\n", x, y + 10);
        uint32_t steps = d->max_gpus < 8 ? d->max_gpus : 8;
        for (uint32_t s = 0; s <= steps; s++) {
            double frac = steps ? (double)s / steps : 1;
            ramp(frac, fill, sizeof fill);
            int sx = x + 150 + (int)s * 34;
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#999\" "
                       "stroke-width=\"0.5\"/><text x=\"%d\" y=\"%d\" class=\"small\">%u</text>\n",
                    sx, y, CELL, CELL, fill, sx + CELL + 2, y + 11, (uint32_t)(frac * d->max_gpus + 0.5));
        }
        y += CELL + 8;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"" RESERVED_COLOR
                   "\" stroke-width=\"2\"/><text x=\"%d\" y=\"%d\" class=\"small\">holds reserved GPUs</text>\n",
                x, y, CELL, CELL, x + CELL + 6, y + 11);
        y += CELL + 8;
    } else {
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"head\">GPUs by job</text>\n", x, y + 10);
        int sx = x + 100;
        const char *fixed[2][2] = {{FREE_COLOR, "free"}, {RESERVED_COLOR, "reserved"}};
        for (int i = 0; i < 2; i++, sx += 80)
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#999\" "
                       "stroke-width=\"0.5\"/><text x=\"%d\" y=\"%d\" class=\"small\">%s</text>\n",
                    sx, y, CELL, CELL, fixed[i][0], sx + CELL + 4, y + 11, fixed[i][1]);
        for (uint32_t i = 0; i < d->njobs && i <= NJOB_COLORS; i++) {
            if (sx + 110 > width - MARGIN) {
                sx = x + 100;
                y += CELL + 6;
            }
            if (i == NJOB_COLORS) {
                fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"" OTHER_JOBS_COLOR
                           "\"/><text x=\"%d\" y=\"%d\" class=\"small\">%u other jobs</text>\n",
                        sx, y, CELL, CELL, sx + CELL + 4, y + 11, d->njobs - (uint32_t)NJOB_COLORS);
                break;
            }
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
                       "class=\"small\">job %" PRIu64 " (%" PRIu64 ")</text>\n",
                    sx, y, CELL, CELL, job_fill(i), sx + CELL + 4, y + 11, d->jobs[i].id, d->jobs[i].gpus);
            sx += 110;
        }
        y += CELL + 8;
    }
    fprintf(f, "<path d=\"M%d %dl%d %dM%d %dl%d %d\" stroke=\"#c0392b\" stroke-width=\"2\"/><text x=\"%d\" "
               "y=\"%d\" class=\"small\">node not up (cordoned, draining or down)</text>\n",
            x, y, CELL, CELL, x + CELL, y, -CELL, CELL, x + CELL + 6, y + 11);
    return y + CELL + 10;
}

/* One bar per level: of the free usable GPUs, the share in fully free
 * domains of the level (a whole-domain gang can use them) and the share
 * stranded outside them. The two add up to the free GPUs. */
static int frag_bars(drawing *d, FILE *f, int x, int y, int width)
{
    uint32_t nl = gpusched_topo_level_count(d->t);
    uint64_t free_gpus = 0;
    gpusched_cluster_domain_free_gpus(d->c, GPUSCHED_NONE, 0, &free_gpus);
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"head\">free GPUs by level, whole cluster (%" PRIu64
               " free): in fully free domains / stranded</text>\n", x, y + 10, free_gpus);
    y += 18;
    int bar_w = width - 2 * MARGIN - 120 - 90;
    if (bar_w < 200)
        bar_w = 200;
    for (uint32_t l = 0; l <= nl; l++, y += CELL + 6) {
        uint64_t stranded = 0, gang = 0;
        uint32_t fd = 0;
        gpusched_cluster_frag(d->c, l, &fd, &stranded, &gang);
        double share = free_gpus ? (double)gang / (double)free_gpus : 0;
        int gw = (int)(share * bar_w + 0.5);
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"small\">", x, y + 11);
        xml_text(f, level_name(d->t, l));
        fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#59a14f\"><title>%" PRIu64
                   " GPUs in %u fully free domains</title></rect>"
                   "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#e15759\"><title>%" PRIu64
                   " GPUs stranded</title></rect><text x=\"%d\" y=\"%d\" class=\"small\">%.0f%% stranded</text>\n",
                x + 120, y, gw, CELL, gang, fd, x + 120 + gw, y, free_gpus ? bar_w - gw : 0, CELL, stranded,
                x + 120 + bar_w + 6, y + 11, free_gpus ? 100.0 * (double)stranded / (double)free_gpus : 0.0);
    }
    return y + 4;
}

static int find_domain(gpusched_topo *t, const char *path, uint32_t *level, uint32_t *dom)
{
    for (uint32_t l = 0; l < gpusched_topo_level_count(t); l++)
        if (gpusched_topo_domain_find(t, l, path, dom) == 0) {
            *level = l;
            return 0;
        }
    return -1;
}

int cmd_draw(int argc, char **argv)
{
    bool as_json = false;
    const char *out = "-", *color = "free", *domain = NULL, *title = NULL;
    uint64_t max_nodes = 4096;
    enum { O_COLOR = 256, O_DOMAIN, O_MAX, O_TITLE, O_JSON };
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"color", required_argument, NULL, O_COLOR},
        {"domain", required_argument, NULL, O_DOMAIN}, {"max-nodes", required_argument, NULL, O_MAX},
        {"title", required_argument, NULL, O_TITLE}, {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case O_COLOR: color = optarg; break;
        case O_DOMAIN: domain = optarg; break;
        case O_MAX:
            if (parse_u64(optarg, UINT32_MAX, &max_nodes)) {
                cli_error("--max-nodes: '%s' is not a count", optarg);
                return CLI_USAGE;
            }
            break;
        case O_TITLE: title = optarg; break;
        case O_JSON: as_json = true; break;
        case 'h': fputs(draw_usage, stdout); return CLI_OK;
        default: fputs(draw_usage, stderr); return CLI_USAGE;
        }
    }
    if (optind != argc - 1) {
        cli_error("draw takes one FILE (gpusched draw --help)");
        return CLI_USAGE;
    }
    if (strcmp(color, "free") && strcmp(color, "job")) {
        cli_error("--color takes free or job, not '%s'", color);
        return CLI_USAGE;
    }
    if (as_json && strcmp(out, "-") == 0) {
        cli_error("--json prints a summary on standard output: give the picture -o OUT.svg");
        return CLI_USAGE;
    }
    input in;
    if (input_load(&in, argv[optind]))
        return CLI_FAIL;
    drawing d;
    memset(&d, 0, sizeof d);
    d.t = in.topo, d.c = in.cluster, d.by_job = strcmp(color, "job") == 0;
    uint32_t nl = gpusched_topo_level_count(d.t);
    d.col_level = nl - 1;
    d.group_level = nl >= 2 ? nl - 2 : GPUSCHED_NONE;
    d.first = 0, d.count = gpusched_topo_node_count(d.t);
    int rc = CLI_FAIL;
    if (domain) {
        uint32_t level, dom;
        if (find_domain(d.t, domain, &level, &dom)) {
            cli_error("%s: no domain '%s' (full paths such as b0/r1; gpusched topo convert --to json lists them)",
                      in.name, domain);
            goto done;
        }
        gpusched_topo_domain_nodes(d.t, level, dom, &d.first, &d.count);
        if (level == nl - 1)
            d.group_level = GPUSCHED_NONE;
    }
    if (d.count > max_nodes) {
        cli_error("%s: %u nodes to draw, more than --max-nodes %" PRIu64 ": draw one domain with --domain PATH "
                  "(for example the first %s) or raise --max-nodes",
                  in.name, d.count, max_nodes, nl >= 2 ? gpusched_topo_level_name(d.t, nl - 2) : "rack");
        goto done;
    }
    for (uint32_t n = d.first; n < d.first + d.count; n++) {
        uint32_t g = gpusched_topo_node_gpus(d.t, n);
        if (g > d.max_gpus)
            d.max_gpus = g;
    }
    layout lay = panels(&d, NULL, TITLE_H);
    int width = lay.width < 640 ? 640 : lay.width;
    /* The body first, into memory: the height is known once the legend
     * and the bars are laid out. */
    char *body = NULL;
    size_t body_len = 0;
    FILE *m = open_memstream(&body, &body_len);
    if (!m) {
        cli_error("out of memory");
        goto done;
    }
    fprintf(m, "<text x=\"%d\" y=\"22\" class=\"title\">", MARGIN);
    xml_text(m, title ? title : in.name);
    if (!title) {
        if (domain) {
            fputs(" / ", m);
            xml_text(m, domain);
        }
        fprintf(m, ": %u nodes, colored by %s", d.count, d.by_job ? "job" : "free GPUs");
    }
    fprintf(m, "</text>\n");
    panels(&d, m, TITLE_H);
    int y = legend(&d, m, MARGIN, lay.grid_bottom + 20, width);
    int height = frag_bars(&d, m, MARGIN, y + 6, width) + MARGIN;
    if (fclose(m) != 0 || !body) {
        free(body);
        cli_error("out of memory");
        goto done;
    }
    FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
    if (!f) {
        free(body);
        cli_error("cannot create %s", out);
        goto done;
    }
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
               "<style>.title{font-size:15px;font-weight:bold}.panel{font-size:11px;fill:#333}"
               ".col{font-size:8px;fill:#666;text-anchor:middle}.head{font-size:12px;font-weight:bold}"
               ".small{font-size:10px;fill:#333}</style>\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height, width, height);
    fwrite(body, 1, body_len, f);
    fprintf(f, "</svg>\n");
    free(body);
    if (f != stdout ? fclose(f) != 0 : fflush(f) != 0) {
        cli_error("cannot write %s", out);
        goto done;
    }
    if (as_json) {
        json j;
        json_init(&j, stdout);
        json_open(&j, NULL, '{');
        json_str(&j, "file", in.name);
        json_str(&j, "output", out);
        json_str(&j, "color", color);
        json_str(&j, "domain", domain);
        json_u64(&j, "nodes", d.count);
        json_u64(&j, "width", (uint64_t)width);
        json_u64(&j, "height", (uint64_t)height);
        json_open(&j, "jobs", '[');
        for (uint32_t i = 0; i < d.njobs; i++) {
            json_open(&j, NULL, '{');
            json_u64(&j, "id", d.jobs[i].id);
            json_u64(&j, "gpus_drawn", d.jobs[i].gpus);
            json_str(&j, "color", job_fill(i));
            json_close(&j, '}');
        }
        json_close(&j, ']');
        json_close(&j, '}');
        json_end(&j);
    }
    rc = CLI_OK;
done:
    free(d.jobs);
    input_free(&in);
    return rc;
}
