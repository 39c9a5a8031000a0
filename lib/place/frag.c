/* The fragmentation-aware policy (GPUSCHED_POLICY_FRAG, doc/resources.md).
 *
 * A node's fragmentation F is the GPU capacity (milli-GPU) it leaves that
 * the workload's pods could not use, expected over the workload's shapes:
 * for a shape the node cannot run at all (class, a resource, too few GPUs)
 * every free milli is lost; for one it can run, the free milli of the GPUs
 * too small for one of its GPUs. A pod goes where F grows least. F's
 * differences of a fraction of a GPU are mostly noise of the workload
 * estimate, so for fractions and pods without GPUs every node within
 * GS_FRAG_BAND of the least growth is as good, and packing decides: the
 * node left with the least free GPU, then the least free resources. Whole-GPU
 * pods keep the exact least growth (ties by packing): their growth counts
 * whole GPUs taken from the shapes that need them.
 *
 * F also counts the node's free GPU that its free resources (cpu, memory)
 * cannot serve at the rate the workload's GPU pods ask them: the GPU pods
 * that will take the node's free GPUs one by one take its cpu too, and once
 * the cpu is gone the GPUs left are stranded, which no single shape's test
 * sees while each of them still fits.
 *
 * Among the nodes of the band, a fraction first goes where the hole it
 * leaves on its GPU is expected to waste least once later fractions have
 * filled it (hole_waste()), counting only the fractions that the holes of
 * the large fractions do not already take: the small pods that could fill
 * the hole beside a 470-milli pod are outnumbered by the holes the 810-milli
 * pods leave, so a hole only they fit is a hole lost. */
#include <string.h>

#include "config.h"
#include "place-internal.h"

/* milli-GPU: 15% of a GPU, about the smallest common fraction. */
#define GS_FRAG_BAND ((int64_t)150 << 32) /* in F's units: milli times 2^32 */
#define GS_WL_MAX 1024u
#define GS_MILLI 1000u /* a GPU's milli */

typedef struct gs_nview {
    uint32_t ngpus;
    uint32_t total;             /* free milli over the node's GPUs */
    uint32_t nfull;             /* fully free GPUs */
    uint32_t maxfree;
    uint32_t cls;
    uint32_t res[GPUSCHED_MAX_RESOURCES];
    uint16_t free[GPUSCHED_MAX_NODE_GPUS];
} gs_nview;

static void view_of(const gpusched_placer *p, uint32_t n, gs_nview *v)
{
    const struct gpusched_cluster *c = p->c;
    const struct gpusched_topo *t = p->t;
    v->ngpus = t->node_gpus[n];
    v->cls = t->node_class[n];
    for (uint32_t i = 0; i < t->nres; i++)
        v->res[i] = c->res_free[i][n];
    const uint64_t freem = c->node_free[n], shared = c->node_shared ? c->node_shared[n] : 0;
    const uint16_t *used = c->gpu_milli_used ? &c->gpu_milli_used[gs_cl_gpu_base(c, n)] : NULL;
    for (uint32_t g = 0; g < v->ngpus; g++) {
        const uint64_t bit = (uint64_t)1 << g;
        v->free[g] = (freem & bit) ? 1000 : (shared & bit) ? (uint16_t)(1000 - used[g]) : 0;
    }
}

static void view_sums(gs_nview *v)
{
    v->total = v->nfull = v->maxfree = 0;
    for (uint32_t g = 0; g < v->ngpus; g++) {
        v->total += v->free[g];
        v->nfull += v->free[g] == 1000;
        if (v->free[g] > v->maxfree)
            v->maxfree = v->free[g];
    }
}

/* The workload compiled for node_frag, rebuilt when it changes. Weights
 * are fixed-point integers (a shape's probability times 2^32), so that F
 * is an exact integer whatever the order it is summed in: the same
 * choice on every machine. Shapes are sorted into buckets by what they
 * lose on a node they can run: nothing (no GPU), the free milli of GPUs
 * too small for fraction size k, or the milli off fully free GPUs (whole
 * GPUs, by count). A node's F is then, per bucket, the weight of its
 * shapes the node can run (a masked sum over the shapes, once per node
 * state) times the bucket's loss, plus every other shape's weight times
 * all the node's free milli: what each candidate GPU costs to score no
 * longer grows with the number of shapes. */
#define GS_WL_ONE 4294967296.0 /* 2^32: weight 1 */

typedef struct gs_wlc {
    uint64_t epoch;
    uint32_t *fb_seen;          /* per node: the node's stamp fb_val is of, 0: none */
    int64_t *fb_val;            /* per node: F as it is */
    uint32_t m, nres, nneed, nwhole, nbuckets, nclasses;
    uint64_t wtot;              /* sum of w */
    /* Per resource, the milli-GPU the workload's GPU pods ask per unit of
     * the resource, times 2^32 (0: none of them asks it): a node's free
     * resource r serves res * rate[r] / 2^32 of its free milli. */
    uint64_t rate[GPUSCHED_MAX_RESOURCES];
    uint64_t *w;                /* [m] fixed-point weights, by bucket */
    uint32_t *req;              /* [nres][m] resources asked */
    uint8_t *cls_ok;            /* [nclasses][m] 1: the class may run the shape */
    uint32_t bstart[1 + GS_WL_MAX + GPUSCHED_MAX_NODE_GPUS + 1];
    uint16_t need[GS_WL_MAX];   /* bucket 1 + k: fractions of need[k] milli */
    uint8_t gneed[GPUSCHED_MAX_NODE_GPUS + 1]; /* bucket 1 + nneed + j: gneed[j] whole GPUs */
    /* waste[f]: the milli a shared GPU with f free is expected to keep
     * unused once the workload's fractions have filled it (hole_waste()). */
    uint16_t waste[GS_MILLI];
} gs_wlc;

static void wlc_free_tables(gpusched_placer *p, gs_wlc *c)
{
    gs_free(&p->alloc, c->w);
    gs_free(&p->alloc, c->req);
    gs_free(&p->alloc, c->cls_ok);
    c->w = NULL;
    c->req = NULL;
    c->cls_ok = NULL;
}

/* Bucket of workload shape w (the need and gneed lists grown as met). */
static uint32_t wlc_bucket(gs_wlc *c, const gs_pod_shape *w)
{
    if (w->milli) {
        uint32_t k = 0;
        while (k < c->nneed && c->need[k] != w->milli)
            k++;
        if (k == c->nneed)
            c->need[c->nneed++] = (uint16_t)w->milli;
        return 1 + k;
    }
    if (w->pod_gpus) {
        uint32_t j = 0;
        while (j < c->nwhole && c->gneed[j] != w->pod_gpus)
            j++;
        if (j == c->nwhole)
            c->gneed[c->nwhole++] = (uint8_t)w->pod_gpus;
        return GS_WL_MAX + 1 + j; /* renumbered once nneed is known */
    }
    return 0;
}

/* The workload's fractions by size: at[s], the weight of the shapes that
 * ask s milli of one GPU. */
static void frac_weights(const gpusched_placer *p, double *at)
{
    memset(at, 0, GS_MILLI * sizeof *at);
    for (uint32_t i = 0; i < p->nwl; i++)
        if (p->wl[i].milli && p->wl[i].milli < GS_MILLI)
            at[p->wl[i].milli] += p->wl[i].weight;
}

/* The fractions left for other holes once the holes that fractions leave
 * beside their own kind took theirs. A GPU holding pods of s milli alone
 * holds k = 1000 / s of them and keeps 1000 - k s (an 810 190, two 470s
 * 60): one such hole per k pods. Those holes, the smallest first, each take
 * one pod of the largest size that fits (the best fit). A size they take
 * entirely (on OpenB the pods of 160 milli or less, outnumbered by the
 * 810s' holes) cannot be counted on to fill any other hole. */
static void holes_absorb(double *at, double *holes)
{
    memset(holes, 0, GS_MILLI * sizeof *holes);
    for (uint32_t s = 1; s < GS_MILLI; s++)
        if (at[s] > 0 && GS_MILLI % s)
            holes[GS_MILLI % s] += at[s] / (GS_MILLI / s);
    for (uint32_t h = 1; h < GS_MILLI; h++)
        for (uint32_t s = h; s >= 1 && holes[h] > 0; s--) {
            const double take = at[s] < holes[h] ? at[s] : holes[h];
            at[s] -= take;
            holes[h] -= take;
        }
}

/* waste[f] for f = 0..999: a hole of f milli keeps f if no fraction left
 * fits it, else what the hole that the next fitting fraction leaves keeps,
 * expected over those fractions' weights. Rounded to a milli once per
 * workload: the same integers on every machine. */
static void hole_waste(gs_wlc *c, const double *at, double *w)
{
    uint16_t size[GS_MILLI];
    uint32_t ns = 0;
    for (uint32_t s = 1; s < GS_MILLI; s++)
        if (at[s] > 0)
            size[ns++] = (uint16_t)s;
    for (uint32_t f = 0; f < GS_MILLI; f++) {
        double sum = 0, weight = 0;
        for (uint32_t k = 0; k < ns && size[k] <= f; k++) {
            sum += at[size[k]] * w[f - size[k]];
            weight += at[size[k]];
        }
        w[f] = weight > 0 ? sum / weight : f;
        c->waste[f] = (uint16_t)(w[f] + 0.5);
    }
}

static int wlc_build(gpusched_placer *p)
{
    gs_wlc *c = p->wlc;
    if (!c && !(c = p->wlc = gs_calloc(&p->alloc, 1, sizeof *c)))
        return GPUSCHED_ENOMEM;
    if (c->w && c->epoch == p->wl_epoch)
        return 0;
    wlc_free_tables(p, c);
    const uint32_t m = p->nwl, mm = m ? m : 1, ncls = p->t->nclasses ? p->t->nclasses : 1;
    c->w = gs_calloc(&p->alloc, mm, sizeof *c->w);
    c->req = gs_calloc(&p->alloc, (size_t)GPUSCHED_MAX_RESOURCES * mm, sizeof *c->req);
    c->cls_ok = gs_calloc(&p->alloc, (size_t)ncls * mm, 1);
    uint32_t *bucket = gs_arena_get(&p->arena, mm * sizeof *bucket);
    double *frac = gs_arena_get(&p->arena, 2 * GS_MILLI * sizeof *frac); /* and hole scratch */
    if (!c->w || !c->req || !c->cls_ok || !bucket || !frac) {
        wlc_free_tables(p, c);
        return GPUSCHED_ENOMEM;
    }
    if (c->fb_seen)
        memset(c->fb_seen, 0, (size_t)p->t->nnodes * sizeof *c->fb_seen);
    c->m = m;
    c->nclasses = ncls;
    c->nneed = c->nwhole = c->nres = 0;
    double total = 0;
    for (uint32_t i = 0; i < m; i++) {
        total += p->wl[i].weight;
        bucket[i] = wlc_bucket(c, &p->wl[i]);
        if (p->wl[i].nres > c->nres)
            c->nres = p->wl[i].nres;
    }
    c->nbuckets = 1 + c->nneed + c->nwhole;
    uint32_t count[1 + GS_WL_MAX + GPUSCHED_MAX_NODE_GPUS + 1] = {0};
    for (uint32_t i = 0; i < m; i++) {
        if (bucket[i] > GS_WL_MAX)
            bucket[i] = bucket[i] - GS_WL_MAX + c->nneed;
        count[bucket[i]]++;
    }
    c->bstart[0] = 0;
    for (uint32_t b = 0; b < c->nbuckets; b++)
        c->bstart[b + 1] = c->bstart[b] + count[b];
    /* Weights as probabilities, in fixed point: F is an expectation in
     * milli-GPU times 2^32, which the band compares exactly. */
    c->wtot = 0;
    uint32_t at[1 + GS_WL_MAX + GPUSCHED_MAX_NODE_GPUS + 1];
    memcpy(at, c->bstart, sizeof at);
    for (uint32_t i = 0; i < m; i++) {
        const gs_pod_shape *w = &p->wl[i];
        const uint32_t j = at[bucket[i]]++;
        c->w[j] = total > 0 ? (uint64_t)(w->weight / total * GS_WL_ONE + 0.5) : 0;
        c->wtot += c->w[j];
        for (uint32_t r = 0; r < w->nres; r++)
            c->req[(size_t)r * m + j] = w->res[r];
        for (uint32_t k = 0; k < ncls; k++)
            c->cls_ok[(size_t)k * m + j] = gs_shape_class_ok(w, k);
    }
    /* The rates, over the shapes that ask GPUs (pods without GPUs can go
     * where no GPU is left, so they do not say what the GPUs need),
     * weighted as the workload: rounded once per workload, the same
     * integers on every machine. */
    for (uint32_t r = 0; r < GPUSCHED_MAX_RESOURCES; r++) {
        double milli = 0, asked = 0;
        for (uint32_t i = 0; i < m; i++) {
            const gs_pod_shape *w = &p->wl[i];
            if (!w->milli && !w->pod_gpus)
                continue;
            milli += w->weight * (w->milli ? (double)w->milli : 1000.0 * w->pod_gpus);
            asked += w->weight * (r < w->nres ? (double)w->res[r] : 0.0);
        }
        const double rate = asked > 0 ? milli / asked * GS_WL_ONE : 0;
        c->rate[r] = rate >= 0x1p62 ? (uint64_t)1 << 62 : (uint64_t)(rate + 0.5);
    }
    frac_weights(p, frac);
    holes_absorb(frac, frac + GS_MILLI);
    hole_waste(c, frac, frac + GS_MILLI);
    c->epoch = p->wl_epoch;
    return 0;
}

/* Per bucket, the weight of the shapes a node of class cls with free
 * resources res can run. */
static void shape_sums(const gs_wlc *c, uint32_t cls, const uint32_t *res, uint64_t *acc)
{
    const uint32_t m = c->m;
    uint8_t ok[GS_WL_MAX];
    memcpy(ok, &c->cls_ok[(size_t)cls * m], m);
    for (uint32_t r = 0; r < c->nres; r++) {
        const uint32_t *q = &c->req[(size_t)r * m], have = res[r];
        for (uint32_t i = 0; i < m; i++)
            ok[i] &= q[i] <= have;
    }
    for (uint32_t b = 0; b < c->nbuckets; b++) {
        uint64_t s = 0;
        for (uint32_t i = c->bstart[b]; i < c->bstart[b + 1]; i++)
            s += c->w[i] & (0 - (uint64_t)ok[i]);
        acc[b] = s;
    }
}

/* The free milli of node view v beyond what its scarcest resource serves
 * at the workload's rate, times 2^32 (integers only: every product is
 * below total * 2^32 <= 2^48). */
static uint64_t stranded(const gs_wlc *c, const gs_nview *v)
{
    const uint64_t need = (uint64_t)v->total << 32;
    uint64_t worst = 0;
    for (uint32_t r = 0; r < c->nres; r++) {
        const uint64_t rate = c->rate[r];
        if (!rate || v->res[r] >= need / rate + 1)
            continue;
        const uint64_t served = (uint64_t)v->res[r] * rate;
        if (served < need && need - served > worst)
            worst = need - served;
    }
    return worst;
}

/* The expected free milli of node view v that the workload's pods cannot
 * use, times 2^32, given the bucket sums of the shapes v can run, plus
 * the free milli its resources strand (stranded()). */
static int64_t node_frag(const gs_wlc *c, const gs_nview *v, const uint64_t *acc)
{
    uint64_t f = 0, runnable = acc[0];
    for (uint32_t k = 0; k < c->nneed; k++) {
        const uint64_t a = acc[1 + k];
        if (!a)
            continue;
        runnable += a;
        uint32_t loss = v->total;
        if (v->maxfree >= c->need[k]) {
            loss = 0;
            for (uint32_t g = 0; g < v->ngpus; g++)
                loss += v->free[g] < c->need[k] ? v->free[g] : 0;
        }
        f += a * loss;
    }
    const uint32_t whole_lost = v->total - 1000 * v->nfull;
    for (uint32_t j = 0; j < c->nwhole; j++) {
        const uint64_t a = acc[1 + c->nneed + j];
        runnable += a;
        f += a * (v->nfull >= c->gneed[j] ? whole_lost : v->total);
    }
    f += (c->wtot - runnable) * v->total;
    return (int64_t)(f + stranded(c, v));
}

/* The packing key, lower packs better: the expected waste of the hole a
 * fraction leaves (0 for other pods), the GPU milli left, then the free
 * resources left as shares of capacity, summed, in fixed point (2^26 per
 * resource: 8 of them fit in 32 bits), so that every SIMD path compares the
 * same integers (fscan.h). milli_left is at most 64 x 1000 < 2^16, waste
 * under 2^10: the key stays below 2^63. */
static uint64_t pack_key(const gpusched_placer *p, uint32_t n, const gs_nview *v, uint32_t waste,
                         uint32_t milli_left)
{
    const struct gpusched_topo *t = p->t;
    uint64_t s = 0;
    for (uint32_t i = 0; i < t->nres; i++)
        if (t->node_res[i][n])
            s += ((uint64_t)v->res[i] << 26) / t->node_res[i][n];
    return (uint64_t)waste << 48 | (uint64_t)milli_left << 32 | s;
}

typedef struct gs_cand {
    uint32_t node;
    uint64_t pack;              /* pack_key() */
    uint64_t mask;
    int64_t growth;             /* F after minus F before */
} gs_cand;

/* F of node n as it is: shared by every shape's candidates, cached by the
 * node's stamp (cluster-internal.h) once the cache is in use (stamp 0:
 * not cached). */
static int64_t frag_before(const gpusched_placer *p, uint32_t n, uint32_t stamp, const gs_nview *v)
{
    gs_wlc *c = p->wlc;
    if (c->fb_seen && stamp && c->fb_seen[n] == stamp)
        return c->fb_val[n];
    uint64_t acc[1 + GS_WL_MAX + GPUSCHED_MAX_NODE_GPUS];
    shape_sums(c, v->cls, v->res, acc);
    const int64_t f = node_frag(c, v, acc);
    if (c->fb_seen && stamp) {
        c->fb_val[n] = f;
        c->fb_seen[n] = stamp;
    }
    return f;
}

/* The best GPU choice on node n (the least growth; ties: the fullest GPU)
 * and its candidate record. */
static void node_cand(const gpusched_placer *p, const gs_pl_req *r, uint32_t n, uint32_t stamp, gs_cand *out)
{
    const gs_pod_shape *s = &r->shape;
    gs_nview before, v;
    view_of(p, n, &before);
    view_sums(&before);
    v = before;
    for (uint32_t i = 0; i < s->nres; i++)
        v.res[i] -= s->res[i];
    const int64_t f0 = frag_before(p, n, stamp, &before);
    /* The shapes the node runs once the pod's resources are taken: the
     * same for every GPU the pod may take. */
    const gs_wlc *c = p->wlc;
    uint64_t acc[1 + GS_WL_MAX + GPUSCHED_MAX_NODE_GPUS];
    shape_sums(c, v.cls, v.res, acc);
    out->node = n;
    if (s->milli) {
        int64_t best = 0;
        uint32_t best_g = 64, tried = 0;
        uint16_t seen[GPUSCHED_MAX_NODE_GPUS]; /* one GPU per free amount */
        for (uint32_t g = 0; g < v.ngpus; g++) {
            const uint16_t f = v.free[g];
            if (f < s->milli)
                continue;
            bool dup = false;
            for (uint32_t k = 0; k < tried && !dup; k++)
                dup = seen[k] == f;
            if (dup)
                continue;
            seen[tried++] = f;
            v.free[g] = (uint16_t)(f - s->milli);
            view_sums(&v);
            const int64_t grow = node_frag(c, &v, acc) - f0;
            v.free[g] = f;
            if (best_g == 64 || grow < best || (grow == best && f < v.free[best_g])) {
                best = grow;
                best_g = g;
            }
        }
        out->growth = best;
        out->mask = (uint64_t)1 << best_g;
        out->pack = pack_key(p, n, &v, c->waste[v.free[best_g] - s->milli], before.total - s->milli);
    } else {
        uint64_t mask = 0;
        for (uint32_t g = 0, k = 0; g < v.ngpus && k < s->pod_gpus; g++)
            if (v.free[g] == 1000 && (p->c->node_free[n] >> g & 1)) {
                v.free[g] = 0;
                mask |= (uint64_t)1 << g;
                k++;
            }
        view_sums(&v);
        out->growth = node_frag(c, &v, acc) - f0;
        out->mask = mask;
        out->pack = pack_key(p, n, &v, 0, v.total);
    }
}

/* ---- the cache --------------------------------------------------------------- */

/* A shape's candidates, per node, as of the node's stamp stored with
 * them: a placement scores only the nodes that changed since the shape
 * was last placed (usually the one the last pod went to), and finds them
 * by comparing stamps. */
typedef struct gs_fslot {
    gs_pod_shape shape;
    uint64_t epoch;             /* wl_epoch the growths were computed in */
    uint64_t used;              /* fclock of the last use: LRU */
    /* Per node, as arrays that the scans read one at a time: */
    uint32_t *seen;             /* the node's stamp the record is of, 0: none */
    int64_t *growth;            /* GS_NO_FIT: the node's state cannot hold the pod */
    uint64_t *mask;             /* the GPUs the pod takes */
    uint64_t *pack;             /* its packing key */
} gs_fslot;

#define GS_NO_FIT GS_FS_NO_FIT

/* Scans of fewer nodes are not cached: a rack costs less to rescore than
 * to fingerprint and store. */
#define GS_FCACHE_MIN_NODES 256u
/* Memory the cache may take: slots of nnodes entries each. */
#define GS_FCACHE_BYTES ((size_t)64 << 20)
#define GS_FSLOT_NODE_BYTES (sizeof(uint32_t) + 2 * sizeof(uint64_t) + sizeof(int64_t))

static gs_fslot *fslot_for(gpusched_placer *p, const gs_pod_shape *s);

/* Brings the slot's record of node n up to date with its state. */
static void fslot_refresh(const gpusched_placer *p, const gs_pl_req *r, gs_fslot *f, uint32_t n, uint32_t stamp)
{
    gs_cand x;
    f->seen[n] = stamp;
    if (!gs_pl_pod_fits_state(p, r, n)) {
        f->growth[n] = GS_NO_FIT;
        return;
    }
    node_cand(p, r, n, stamp, &x);
    f->growth[n] = x.growth;
    f->mask[n] = x.mask;
    f->pack[n] = x.pack;
}

/* Whether the pod may take GPUs `mask` of node n as it is now: a cached
 * mask is checked before use, so that a writer that failed to bump a stamp
 * could cost a choice but never an invalid placement. */
static bool mask_valid(const gpusched_placer *p, const gs_pl_req *r, uint32_t n, uint64_t mask)
{
    const struct gpusched_cluster *c = p->c;
    const uint64_t avail = c->node_free[n];
    if (!r->shape.milli)
        return (mask & avail) == mask && (uint32_t)gs_popcount64(mask) == r->shape.pod_gpus;
    if (gs_popcount64(mask) != 1)
        return false;
    if (mask & avail)
        return true;
    const uint32_t g = gs_ctz64(mask);
    return c->node_shared && (c->node_shared[n] & mask) &&
           c->gpu_milli_used[gs_cl_gpu_base(c, n) + g] + r->shape.milli <= 1000;
}

/* The node of [first, end) the cached slot chooses: every node's record
 * brought up to date, the least growth among those the request may use,
 * then the best packing within the band. */
static uint32_t choose_cached(gpusched_placer *p, const gs_pl_req *r, gs_fslot *f, uint32_t first, uint32_t end)
{
    uint32_t *stale = gs_arena_get(&p->arena, (size_t)(end - first) * sizeof *stale);
    if (!stale) {
        /* No scratch: every record of the range afresh, in place. */
        for (uint32_t n = first; n < end; n++)
            fslot_refresh(p, r, f, n, p->c->node_stamp[n]);
    } else {
        const uint32_t k = p->fs.stale(f->seen, p->c->node_stamp, first, end, stale);
        for (uint32_t i = 0; i < k; i++)
            fslot_refresh(p, r, f, stale[i], p->c->node_stamp[stale[i]]);
    }
    const gpusched_place_request *q = &r->in;
    const bool filter = q->labels_required || q->labels_forbidden || q->avoid_count;
    int64_t least = GS_NO_FIT;
    if (!filter) {
        least = p->fs.least(f->growth, first, end);
    } else {
        for (uint32_t n = first; n < end; n++)
            if (f->growth[n] < least && gs_pl_pod_node_ok(p, r, n))
                least = f->growth[n];
    }
    if (least == GS_NO_FIT)
        return GPUSCHED_NONE;
    const int64_t band = r->shape.pod_gpus ? 0 : GS_FRAG_BAND;
    const int64_t top = least > GS_NO_FIT - 1 - band ? GS_NO_FIT - 1 : least + band;
    if (!filter)
        return p->fs.best(f->growth, f->pack, first, end, top);
    uint32_t best = GPUSCHED_NONE;
    for (uint32_t n = first; n < end; n++)
        if (f->growth[n] <= top && gs_pl_pod_node_ok(p, r, n) && (best == GPUSCHED_NONE || f->pack[n] < f->pack[best]))
            best = n;
    return best;
}

/* The same choice without a cache, for small ranges. */
static int choose_uncached(gpusched_placer *p, const gs_pl_req *r, uint32_t first, uint32_t end, uint32_t *node,
                           uint64_t *mask)
{
    gs_cand *cand = gs_arena_get(&p->arena, (size_t)(end - first) * sizeof *cand);
    if (!cand)
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    int64_t least = 0;
    uint32_t k = 0;
    for (uint32_t n = first; n < end; n++) {
        if (!gs_pl_pod_node_ok(p, r, n) || !gs_pl_pod_fits_state(p, r, n))
            continue;
        node_cand(p, r, n, 0, &cand[k]);
        if (k == 0 || cand[k].growth < least)
            least = cand[k].growth;
        k++;
    }
    if (!k)
        return 0;
    const int64_t band = r->shape.pod_gpus ? 0 : GS_FRAG_BAND;
    const gs_cand *best = NULL;
    for (uint32_t i = 0; i < k; i++)
        if (cand[i].growth <= least + band && (!best || cand[i].pack < best->pack))
            best = &cand[i];
    *node = best->node;
    *mask = best->mask;
    return 0;
}

int gs_pl_frag_choose(gpusched_placer *p, const gs_pl_req *r, uint32_t first, uint32_t end, uint32_t *node,
                      uint64_t *mask)
{
    *node = GPUSCHED_NONE;
    if (wlc_build(p))
        return gs_error(&p->err, GPUSCHED_ENOMEM, "place: out of memory");
    gs_fslot *slot = end - first >= GS_FCACHE_MIN_NODES ? fslot_for(p, &r->shape) : NULL;
    if (!slot)
        return choose_uncached(p, r, first, end, node, mask);
    for (;;) {
        const uint32_t n = choose_cached(p, r, slot, first, end);
        if (n == GPUSCHED_NONE)
            return 0;
        if (mask_valid(p, r, n, slot->mask[n])) {
            *node = n;
            *mask = slot->mask[n];
            return 0;
        }
        /* A stale record (a writer missed its stamp): afresh, and again. */
        fslot_refresh(p, r, slot, n, p->c->node_stamp[n]);
        if (!mask_valid(p, r, n, slot->mask[n]))
            slot->growth[n] = GS_NO_FIT; /* cannot happen: node_cand picks from the state */
    }
}

static bool same_shape(const gs_pod_shape *a, const gs_pod_shape *b);

static void fslot_free(gpusched_placer *p, gs_fslot *f)
{
    gs_free(&p->alloc, f->seen);
    gs_free(&p->alloc, f->growth);
    gs_free(&p->alloc, f->mask);
    gs_free(&p->alloc, f->pack);
    f->seen = NULL;
    f->growth = NULL;
    f->mask = NULL;
    f->pack = NULL;
}

/* The slot of shape s, valid for the current workload: found, or made
 * (the least recently used one reused when the cache is full). NULL when
 * out of memory: the choice is then computed without the cache. */
static gs_fslot *fslot_for(gpusched_placer *p, const gs_pod_shape *s)
{
    const uint32_t nn = p->t->nnodes;
    gs_wlc *c = p->wlc;
    if (gs_cluster_track_nodes(p->c))
        return NULL;
    if (!c->fb_seen) {
        c->fb_val = gs_malloc(&p->alloc, (size_t)nn * sizeof *c->fb_val);
        c->fb_seen = c->fb_val ? gs_calloc(&p->alloc, nn, sizeof *c->fb_seen) : NULL;
        if (!c->fb_seen) {
            gs_free(&p->alloc, c->fb_val);
            c->fb_val = NULL;
            return NULL;
        }
    }
    if (!p->max_fslots) {
        size_t per = (size_t)nn * GS_FSLOT_NODE_BYTES;
        size_t m = GS_FCACHE_BYTES / (per ? per : 1);
        p->max_fslots = m > 256 ? 256 : m < 1 ? 1 : (uint32_t)m;
        if (!(p->fslots = gs_calloc(&p->alloc, p->max_fslots, sizeof *p->fslots)))
            return NULL;
    }
    gs_fslot *f = NULL;
    for (uint32_t i = 0; i < p->nfslots && !f; i++)
        if (same_shape(&p->fslots[i].shape, s))
            f = &p->fslots[i];
    if (!f) {
        if (p->nfslots < p->max_fslots) {
            f = &p->fslots[p->nfslots];
            if (!(f->seen = gs_calloc(&p->alloc, nn, sizeof *f->seen)) ||
                !(f->growth = gs_malloc(&p->alloc, (size_t)nn * sizeof *f->growth)) ||
                !(f->mask = gs_malloc(&p->alloc, (size_t)nn * sizeof *f->mask)) ||
                !(f->pack = gs_malloc(&p->alloc, (size_t)nn * sizeof *f->pack))) {
                fslot_free(p, f);
                return NULL;
            }
            p->nfslots++;
        } else {
            f = &p->fslots[0];
            for (uint32_t i = 1; i < p->nfslots; i++)
                if (p->fslots[i].used < f->used)
                    f = &p->fslots[i];
            memset(f->seen, 0, (size_t)nn * sizeof *f->seen);
        }
        f->shape = *s;
        f->epoch = p->wl_epoch;
    }
    if (f->epoch != p->wl_epoch) {
        memset(f->seen, 0, (size_t)nn * sizeof *f->seen);
        f->epoch = p->wl_epoch;
    }
    f->used = ++p->fclock;
    return f;
}

int gs_pl_fs_choose(gs_fs_ops *ops, uint32_t *simd)
{
    /* A kernel for every path the build has. */
    int rc = gs_simd_choose(gs_simd_compiled(), simd, NULL);
    if (rc)
        return rc;
    *ops = (gs_fs_ops){gs_fs_stale_scalar, gs_fs_least_scalar, gs_fs_best_scalar};
    switch (*simd) {
#if GPUSCHED_HAVE_AVX2
    case GPUSCHED_SIMD_AVX2: *ops = (gs_fs_ops){gs_fs_stale_avx2, gs_fs_least_avx2, gs_fs_best_avx2}; break;
#endif
#if GPUSCHED_HAVE_AVX512
    case GPUSCHED_SIMD_AVX512: *ops = (gs_fs_ops){gs_fs_stale_avx512, gs_fs_least_avx512, gs_fs_best_avx512}; break;
#endif
#if GPUSCHED_HAVE_NEON
    case GPUSCHED_SIMD_NEON: *ops = (gs_fs_ops){gs_fs_stale_neon, gs_fs_least_neon, gs_fs_best_neon}; break;
#endif
    default: break;
    }
    return 0;
}

void gs_pl_frag_free(gpusched_placer *p)
{
    if (p->wlc) {
        wlc_free_tables(p, p->wlc);
        gs_free(&p->alloc, p->wlc->fb_seen);
        gs_free(&p->alloc, p->wlc->fb_val);
    }
    gs_free(&p->alloc, p->wlc);
    p->wlc = NULL;
    for (uint32_t i = 0; i < p->nfslots; i++)
        fslot_free(p, &p->fslots[i]);
    gs_free(&p->alloc, p->fslots);
    p->fslots = NULL;
    p->nfslots = p->max_fslots = 0;
}

/* ---- the workload ---------------------------------------------------------- */

static bool same_shape(const gs_pod_shape *a, const gs_pod_shape *b)
{
    if (a->pod_gpus != b->pod_gpus || a->milli != b->milli || a->any_class != b->any_class ||
        a->whole_node != b->whole_node)
        return false;
    if (!a->any_class && memcmp(a->classes, b->classes, sizeof a->classes))
        return false;
    uint32_t n = a->nres > b->nres ? a->nres : b->nres;
    for (uint32_t i = 0; i < n; i++)
        if ((i < a->nres ? a->res[i] : 0) != (i < b->nres ? b->res[i] : 0))
            return false;
    return true;
}

static int shapes_add(gpusched_placer *p, gs_pod_shape **arr, uint32_t *n, uint32_t *cap, const gs_pod_shape *s,
                      double weight)
{
    for (uint32_t i = 0; i < *n; i++)
        if (same_shape(&(*arr)[i], s)) {
            (*arr)[i].weight += weight;
            return 0;
        }
    if (*n == GS_WL_MAX)
        return GPUSCHED_ELIMIT;
    if (gs_grow(&p->alloc, (void **)arr, cap, *n + 1, sizeof **arr))
        return GPUSCHED_ENOMEM;
    (*arr)[*n] = *s;
    (*arr)[(*n)++].weight = weight;
    return 0;
}

static int wl_add(gpusched_placer *p, const gs_pod_shape *s, double weight)
{
    return shapes_add(p, &p->wl, &p->nwl, &p->wl_cap, s, weight);
}

/* Counts a shape in the learned workload; false when the table is full
 * (it keeps what it learned). */
static bool wl_count(gpusched_placer *p, const gs_pod_shape *s)
{
    if (shapes_add(p, &p->learn, &p->nlearn, &p->learn_cap, s, 1.0))
        return false;
    p->learned++;
    return true;
}

/* The learned counts become the workload after 1, 2, 4, ... 1024 requests,
 * then every 1024: often enough to follow a changing mix, rarely enough
 * that cached growths stay valid between refreshes. */
void gs_pl_wl_refresh(gpusched_placer *p)
{
    if (p->next_refresh == 0)
        p->next_refresh = 1;
    if (p->learned < p->next_refresh)
        return;
    while (p->next_refresh <= p->learned)
        p->next_refresh = p->next_refresh < 1024 ? 2 * p->next_refresh : p->next_refresh + 1024;
    if (gs_grow(&p->alloc, (void **)&p->wl, &p->wl_cap, p->nlearn, sizeof *p->wl))
        return;
    memcpy(p->wl, p->learn, (size_t)p->nlearn * sizeof *p->wl);
    p->nwl = p->nlearn;
    p->wl_epoch++;
}

/* Whether the learned workload counts request r: a pod request for the
 * policy, while no workload is set. */
static bool wl_learns(const gpusched_placer *p, const gs_pl_req *r)
{
    return r->pods_path && r->policy == GPUSCHED_POLICY_FRAG && !p->wl_fixed;
}

void gs_pl_wl_seen(gpusched_placer *p, const gs_pl_req *r)
{
    if (wl_learns(p, r))
        wl_count(p, &r->shape);
}

void gs_pl_wl_placed(gpusched_placer *p, const gs_pl_req *r)
{
    if (wl_learns(p, r) && wl_count(p, &r->shape))
        gs_pl_wl_refresh(p);
}

void gs_pl_wl_free(gpusched_placer *p)
{
    gs_free(&p->alloc, p->wl);
    gs_free(&p->alloc, p->learn);
    p->wl = p->learn = NULL;
    p->nwl = p->wl_cap = p->nlearn = p->learn_cap = 0;
    p->learned = p->next_refresh = 0;
}

GPUSCHED_API int gpusched_placer_workload_set(gpusched_placer *p, uint32_t n,
                                              const gpusched_place_request *const *shapes, const double *weights)
{
    if (!p)
        return GPUSCHED_EINVAL;
    if (n && (!shapes || !weights))
        return gs_error(&p->err, GPUSCHED_EINVAL, "workload: %s is NULL", shapes ? "weights" : "shapes");
    if (n > GS_WL_MAX)
        return gs_error(&p->err, GPUSCHED_ELIMIT, "workload: %u shapes, at most %u", n, GS_WL_MAX);
    gs_pod_shape *keep = p->wl;
    uint32_t keep_n = p->nwl, keep_cap = p->wl_cap;
    p->wl = NULL;
    p->nwl = p->wl_cap = 0;
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        gs_pl_req r;
        if (!shapes[i]) {
            rc = gs_error(&p->err, GPUSCHED_EINVAL, "workload: shape %u is NULL", i);
        } else if (!(weights[i] >= 0) || weights[i] > 1e300) {
            rc = gs_error(&p->err, GPUSCHED_EINVAL, "workload: weight %u is %g, a finite number >= 0 expected", i,
                          weights[i]);
        } else if ((rc = gs_pl_req_load(p, shapes[i], &r)) == 0) {
            if (!r.pods_path) {
                /* A whole-GPU request is a shape too: pods of pod_gpus GPUs. */
                memset(&r.shape, 0, sizeof r.shape);
                r.shape.pod_gpus = r.u0;
                r.shape.any_class = r.in.gpu_class == GPUSCHED_NONE;
                if (!r.shape.any_class)
                    r.shape.classes[r.in.gpu_class >> 6] |= (uint64_t)1 << (r.in.gpu_class & 63);
            }
            if (weights[i] > 0 && (rc = wl_add(p, &r.shape, weights[i])))
                rc = gs_error(&p->err, rc, "workload: out of memory");
        } else {
            char msg[GS_ERRMSG_MAX];
            memcpy(msg, p->err.msg, sizeof msg);
            rc = gs_error(&p->err, rc, "workload: shape %u: %s", i, msg);
        }
    }
    if (rc) {
        gs_free(&p->alloc, p->wl);
        p->wl = keep;
        p->nwl = keep_n;
        p->wl_cap = keep_cap;
        return rc;
    }
    gs_free(&p->alloc, keep);
    p->wl_fixed = n > 0;
    p->wl_epoch++;
    /* Learning starts afresh from the next request. */
    gs_free(&p->alloc, p->learn);
    p->learn = NULL;
    p->nlearn = p->learn_cap = 0;
    p->learned = p->next_refresh = 0;
    return gs_ok(&p->err);
}
