"""Placement policies for the OpenB fill study (openb_fill_study.py).

A cluster state of N nodes with up to G GPUs each, as numpy arrays:
free milli-GPU per GPU (a GPU that does not exist has 0 free, so it counts
as fully used), free cpu and memory, and the node's GPU model. A pod is
(cpu, memory, num_gpu, gpu_milli, allowed models). Every policy answers
(node, gpus) for one pod, or None when it fits nowhere; the caller applies
the placement. The policies score every node at once with numpy.

The fragmentation measure follows the definition in "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent" (USENIX ATC'23), written here from the paper's text: for a node n
and a pod shape m, if m cannot run on n at all, every free milli-GPU of n is
a fragment; if it can, the fragments are the GPUs whose free share is below
what one GPU of m needs (its milli for a fraction, 1000 for whole GPUs, 0 for
a pod without GPUs). A node's fragmentation is the expectation over the
target workload's shapes; FGD puts a pod where that expectation grows least.
"""
import numpy as np

FULL = 1000


class Shapes:
    """The target workload: distinct pod shapes with their weights."""

    def __init__(self, cpu, mem, ngpu, milli, spec, weight, n_models):
        self.cpu = np.asarray(cpu, dtype=np.int64)
        self.mem = np.asarray(mem, dtype=np.int64)
        self.k = np.asarray(ngpu, dtype=np.int64)
        self.milli = np.asarray(milli, dtype=np.int64)
        self.frac = (self.k == 1) & (self.milli < FULL)
        w = np.asarray(weight, dtype=np.float64)
        self.p = w / w.sum()
        # allowed[m, model]: shape m may run on that model.
        self.allowed = np.zeros((len(self.cpu), n_models), dtype=bool)
        # spec: model indices, () for any; negative entries name models the
        # cluster lacks.
        for i, s in enumerate(spec):
            self.allowed[i, [m for m in s if m >= 0] if s else slice(None)] = True
        # Per shape, one GPU of it is usable when its free share is at least
        # thr: the milli of a fraction, 1000 for whole GPUs, 0 without GPUs.
        thr = np.where(self.frac, self.milli, np.where(self.k > 0, FULL, 0))
        self.thr_values, self.thr_id = np.unique(thr, return_inverse=True)


def fragmentation(sh, gf, cf, mf, md):
    """Expected fragmentation (milli-GPU) of S node states against shapes sh.

    gf: [S, G] free milli per GPU; cf, mf: [S] free cpu and memory; md: [S]
    model index. Returns [S] floats.
    """
    tot = gf.sum(axis=1)
    maxf = gf.max(axis=1)
    nfull = (gf == FULL).sum(axis=1)
    fits = (cf[:, None] >= sh.cpu) & (mf[:, None] >= sh.mem) & sh.allowed[:, md].T
    gpu_ok = np.where(sh.frac, maxf[:, None] >= sh.milli, nfull[:, None] >= sh.k)
    fits &= gpu_ok
    # below[s, t]: free milli on the GPUs of state s under threshold t.
    below = (gf[:, :, None] * (gf[:, :, None] < sh.thr_values)).sum(axis=1)
    frag = np.where(fits, below[:, sh.thr_id], tot[:, None])
    return frag @ sh.p


class Cluster:
    def __init__(self, cpu, mem, ngpu, model, n_models):
        self.n = len(cpu)
        self.g = int(max(ngpu))
        self.cap_cpu = np.asarray(cpu, dtype=np.int64)
        self.cap_mem = np.asarray(mem, dtype=np.int64)
        self.ngpu = np.asarray(ngpu, dtype=np.int64)
        self.model = np.asarray(model, dtype=np.int64)
        self.n_models = n_models
        self.cap_gpu = self.ngpu * FULL
        self.reset()

    def reset(self):
        self.cf = self.cap_cpu.copy()
        self.mf = self.cap_mem.copy()
        self.gf = np.where(np.arange(self.g) < self.ngpu[:, None], FULL, 0).astype(np.int64)
        self.version = np.zeros(self.n, dtype=np.int64)

    def feasible(self, pod):
        cpu, mem, k, milli, allowed = pod
        ok = (self.cf >= cpu) & (self.mf >= mem)
        if allowed is not None:
            ok &= allowed[self.model]
        if k == 0:
            return ok
        if milli < FULL:
            return ok & (self.gf.max(axis=1) >= milli)
        return ok & ((self.gf == FULL).sum(axis=1) >= k)

    def apply(self, node, gpus, pod):
        cpu, mem, k, milli, _ = pod
        self.cf[node] -= cpu
        self.mf[node] -= mem
        for g in gpus:
            self.gf[node, g] -= milli if milli < FULL else FULL
        self.version[node] += 1


def whole_gpus(gf_row, k):
    """The first k fully free GPUs of a node."""
    return [int(g) for g in np.flatnonzero(gf_row == FULL)[:k]]


def frac_gpu_bestfit(gf_row, milli):
    """The GPU with the least free share that still holds milli."""
    free = np.where(gf_row >= milli, gf_row, FULL + 1)
    return [int(np.argmin(free))]


def gpus_for(gf_row, pod, frac_choice):
    _, _, k, milli, _ = pod
    if k == 0:
        return []
    if milli < FULL:
        return frac_choice(gf_row, milli)
    return whole_gpus(gf_row, k)


class FirstFit:
    """The first node (in node-list order) where the pod fits."""

    def __init__(self, cl, shapes, rng):
        self.cl = cl

    def place(self, pod, shape_id):
        ok = np.flatnonzero(self.cl.feasible(pod))
        if len(ok) == 0:
            return None
        n = int(ok[0])
        return n, gpus_for(self.cl.gf[n], pod, frac_gpu_bestfit)


class RandomFit:
    """A node drawn uniformly among those where the pod fits; a random GPU."""

    def __init__(self, cl, shapes, rng):
        self.cl, self.rng = cl, rng

    def place(self, pod, shape_id):
        ok = np.flatnonzero(self.cl.feasible(pod))
        if len(ok) == 0:
            return None
        n = int(self.rng.choice(ok))
        return n, gpus_for(self.cl.gf[n], pod, self._gpu)

    def _gpu(self, gf_row, milli):
        return [int(self.rng.choice(np.flatnonzero(gf_row >= milli)))]


class BestFit:
    """The node with the least leftover after placement: the sum over cpu,
    memory and GPU of the free share of each (free / capacity, equal
    weights). A fraction goes to the fullest GPU that holds it."""

    def __init__(self, cl, shapes, rng):
        self.cl = cl
        self.gcap = np.maximum(cl.cap_gpu, 1)

    def place(self, pod, shape_id):
        cl = self.cl
        ok = cl.feasible(pod)
        if not ok.any():
            return None
        cpu, mem, k, milli, _ = pod
        gpu = k * milli
        left = ((cl.cf - cpu) / cl.cap_cpu + (cl.mf - mem) / cl.cap_mem
                + (cl.gf.sum(axis=1) - gpu) / self.gcap)
        n = int(np.argmin(np.where(ok, left, np.inf)))
        return n, gpus_for(cl.gf[n], pod, frac_gpu_bestfit)


class FGD:
    """Fragmentation gradient descent: the node (and GPU) where the
    expected fragmentation grows least.

    Options beyond the paper (each a policy of the study):
    - the target workload (Shapes) may weigh a shape by its count times its
      GPU request (the study's fgd-demand policies), so fragmentation
      against an 8-GPU pod counts as much as the 8 GPUs it would have
      taken; the paper weighs shapes by count.
    - pack=True: among the nodes whose growth is within tol milli-GPU of
      the least (whole_tol for whole-GPU pods, tol when not given), the one
      left with the least free GPU, then the least free cpu share. With
      tol 0 packing only breaks the many exact ties (empty nodes of one
      kind, pods without GPUs) instead of node order; with a band it
      prefers packing whenever FGD's estimate barely separates the nodes.
    - holes=True: a fraction goes first to the shared GPU it fills best
      (least free share left), FGD deciding only among equals.

    The growth of node n for shape s only changes when n changes, so it is
    cached per (shape, node) and recomputed only for the nodes changed
    since that shape was last scored.
    """

    def __init__(self, cl, shapes, rng, pack=False, tol=0.0, holes=False, whole_tol=None,
                 fill=False):
        self.cl, self.sh = cl, shapes
        self.pack, self.tol, self.holes = pack, tol, holes
        self.fill = unfillable(shapes) if fill else None
        self.whole_tol = tol if whole_tol is None else whole_tol
        self.cur = fragmentation(shapes, cl.gf, cl.cf, cl.mf, cl.model)
        self.cur_version = cl.version.copy()
        n_shapes = len(shapes.cpu)
        self.delta = np.full((n_shapes, cl.n), np.inf)
        self.gpu = np.zeros((n_shapes, cl.n), dtype=np.int64)
        self.seen = np.full((n_shapes, cl.n), -1, dtype=np.int64)
        self.cols = np.arange(cl.g)

    def _refresh_current(self):
        cl = self.cl
        d = np.flatnonzero(self.cur_version != cl.version)
        if len(d):
            self.cur[d] = fragmentation(self.sh, cl.gf[d], cl.cf[d], cl.mf[d], cl.model[d])
            self.cur_version[d] = cl.version[d]

    def _score(self, pod, s, d):
        """Growth of fragmentation on nodes d for the pod; inf where it does
        not fit. For a fraction, the best GPU of each node too."""
        cl, sh = self.cl, self.sh
        cpu, mem, k, milli, _ = pod
        ok = cl.feasible(pod)[d]
        delta = np.full(len(d), np.inf)
        gpu = np.zeros(len(d), dtype=np.int64)
        if not ok.any():
            return delta, gpu
        d_ok = d[ok]
        gf = cl.gf[d_ok]
        cf = cl.cf[d_ok] - cpu
        mf = cl.mf[d_ok] - mem
        md = cl.model[d_ok]
        if k > 0 and milli < FULL:
            # One candidate state per (node, GPU that holds the fraction).
            ni, gi = np.nonzero(gf >= milli)
            after = gf[ni].copy()
            after[np.arange(len(ni)), gi] -= milli
            f = fragmentation(sh, after, cf[ni], mf[ni], md[ni])
            # Within a node, ties go to the fullest GPU.
            f_tb = f + 1e-7 * gf[ni, gi]
            best = np.full((len(d_ok), cl.g), np.inf)
            best[ni, gi] = f_tb
            g_best = np.argmin(best, axis=1)
            f_node = best[np.arange(len(d_ok)), g_best]
            delta[ok] = f_node - self.cur[d_ok]
            gpu[ok] = g_best
        else:
            after = gf
            if k > 0:
                full = gf == FULL
                take = full & (np.cumsum(full, axis=1) <= k)
                after = np.where(take, 0, gf)
            f = fragmentation(sh, after, cf, mf, md)
            delta[ok] = f - self.cur[d_ok]
        return delta, gpu

    def place(self, pod, s):
        cl = self.cl
        self._refresh_current()
        d = np.flatnonzero(self.seen[s] != cl.version)
        if len(d):
            self.delta[s, d], self.gpu[s, d] = self._score(pod, s, d)
            self.seen[s, d] = cl.version[d]
        delta = self.delta[s]
        best = delta.min()
        if not np.isfinite(best):
            return None
        cpu, mem, k, milli, _ = pod
        if self.holes and k == 1 and milli < FULL:
            hole = self._hole(pod, delta)
            if hole is not None:
                return hole
        if self.pack:
            tol = self.whole_tol if milli >= FULL else self.tol
            cand = np.flatnonzero(delta <= best + tol + 1e-9)
            gleft = cl.gf[cand].sum(axis=1) - k * milli
            cleft = (cl.cf[cand] - cpu) / cl.cap_cpu[cand]
            if self.fill is not None and k == 1 and milli < FULL:
                gf = cl.gf[cand]
                waste = np.where(gf >= milli, self.fill[np.maximum(gf - milli, 0)], FULL + 1)
                w = waste.min(axis=1)
                n = int(cand[np.lexsort((cleft, gleft, w))[0]])
                row = np.where(waste[np.flatnonzero(cand == n)[0]] == w.min(), cl.gf[n], FULL + 1)
                return n, [int(np.argmin(row))]
            n = int(cand[np.lexsort((cleft, gleft))[0]])
        else:
            n = int(np.argmin(delta))
        if k == 0:
            return n, []
        if milli < FULL:
            return n, [int(self.gpu[s, n])]
        return n, whole_gpus(cl.gf[n], k)

    def _hole(self, pod, delta):
        """A fraction into the shared GPU it fills best (the least free
        share left), ties by the least fragmentation growth."""
        cl = self.cl
        milli = pod[3]
        ok = np.isfinite(delta)[:, None] & (cl.gf >= milli) & (cl.gf < FULL)
        if not ok.any():
            return None
        left = np.where(ok, cl.gf - milli, FULL + 1)
        per_node = left.min(axis=1)
        m = per_node.min()
        cand = np.flatnonzero(per_node == m)
        n = int(cand[np.argmin(delta[cand])])
        return n, [int(np.argmin(left[n]))]


def unfillable(sh, min_share=0.01):
    """fill[r]: the least free share a GPU with r milli free can be left
    with, filling it with fractions of the shapes that are at least
    min_share of the workload (any number of each)."""
    sizes = sorted({int(m) for m, f, p in zip(sh.milli, sh.frac, sh.p) if f}
                   - {0})
    share = {}
    for m, f, p in zip(sh.milli, sh.frac, sh.p):
        if f:
            share[int(m)] = share.get(int(m), 0.0) + p
    sizes = [m for m in sizes if share[m] >= min_share]
    reach = np.zeros(FULL + 1, dtype=bool)
    reach[0] = True
    for r in range(1, FULL + 1):
        reach[r] = any(r >= m and reach[r - m] for m in sizes)
    fill = np.zeros(FULL + 1, dtype=np.int64)
    best = 0
    for r in range(FULL + 1):
        if reach[r]:
            best = r
        fill[r] = r - best
    return fill
