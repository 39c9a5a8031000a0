#!/usr/bin/env python3
"""Pictures of a cluster with matplotlib (Debian python3-matplotlib): its
occupancy, one cell per node grouped by rack and block and colored by free
GPUs or by job, and its fragmentation per level as a bar chart. The C tool
draws the same occupancy without Python: gpusched draw (doc/cli.md).

    plot_cluster.py [SNAPSHOT] [-o OUT.png|OUT.svg] [--color free|job]

Without SNAPSHOT it draws a demo: a few gangs placed on the "tiny" preset.
Exits 77 (skipped) when matplotlib is not installed.
"""
import argparse
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Patch, Rectangle
except ImportError:
    print("matplotlib is not installed (Debian: python3-matplotlib)", file=sys.stderr)
    sys.exit(77)

import gpusched

JOB_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
              "#9c755f", "#e15759", "#bab0ac", "#86bcb6", "#d37295", "#a0cbe8"]
FREE, RESERVED, OTHER = "#f4f4f4", "#f5b335", "#7f7f7f"


def demo_cluster():
    """tiny (2 blocks x 2 racks x 4 nodes x 8 GPUs) with a few gangs, a
    small job in block b1 and a node down."""
    topo = gpusched.Topology.preset("tiny")
    c = gpusched.Cluster(topo)
    c.place(16, pod_gpus=8, required="rack", job_id=1, commit=True)
    c.place(12, job_id=2, commit=True)
    c.place(4, pod_gpus=2, job_id=3, commit=True)
    c.place(24, pod_gpus=8, required="rack", job_id=4, commit=True)
    c.place(6, pod_gpus=2, job_id=5, commit=True)
    c.allocate(6, {13: 0b11})            # a small job that breaks up block b1
    c.set_node_health(9, gpusched.NodeHealth.DOWN)
    return c


def layout(topo):
    """(node, x, y) per node: columns by the lowest level, panels by the one
    above it, panels side by side."""
    levels = topo.levels
    col_level = len(levels) - 1
    cells, x, last_group, last_col, y = [], -1, None, None, 0
    for n in range(topo.node_count):
        group = topo.node_domain(n, col_level - 1) if col_level > 0 else 0
        col = topo.node_domain(n, col_level)
        if group != last_group and last_group is not None:
            x += 1  # a gap between panels
        if col != last_col:
            x, y = x + 1, 0
        cells.append((n, x, y))
        y += 1
        last_group, last_col = group, col
    return cells


def occupancy(ax, cluster, color="free"):
    """Draws one cell per node. color "free": shade by free usable GPUs;
    "job": one stripe per GPU colored by the job that holds it."""
    topo = cluster.topology
    state = cluster.nodes_state()
    cmap = plt.get_cmap("YlGnBu_r")
    jobs = {}
    cells = layout(topo)
    for n, x, y in cells:
        g = topo.node_gpus(n)
        up = state.health[n] == gpusched.NodeHealth.UP
        free = bin(state.free[n]).count("1") if up else 0
        if color == "free":
            ax.add_patch(Rectangle((x, -y), 0.9, 0.9, color=cmap(free / g)))
        else:
            for i in range(g):
                s, job = cluster.gpu_state(n, i)
                if s == gpusched.GpuState.FREE:
                    c = FREE
                elif s == gpusched.GpuState.RESERVED:
                    c = RESERVED
                else:
                    idx = jobs.setdefault(job, len(jobs))
                    c = JOB_COLORS[idx] if idx < len(JOB_COLORS) else OTHER
                ax.add_patch(Rectangle((x + 0.9 * i / g, -y), 0.9 / g, 0.9, color=c, linewidth=0))
            ax.add_patch(Rectangle((x, -y), 0.9, 0.9, fill=False, edgecolor="#999", linewidth=0.5))
        if not up:
            ax.plot([x, x + 0.9], [-y, -y + 0.9], color="#c0392b")
            ax.plot([x, x + 0.9], [-y + 0.9, -y], color="#c0392b")
    xs = [x for _, x, _ in cells]
    ys = [y for _, _, y in cells]
    ax.set_xlim(-0.2, max(xs) + 1.1)
    ax.set_ylim(-max(ys) - 0.3, 1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    # Label each column by its lowest-level domain's full path.
    col_level = len(topo.levels) - 1
    seen = set()
    for n, x, _ in cells:
        d = topo.node_domain(n, col_level)
        if d not in seen:
            seen.add(d)
            ax.text(x + 0.45, 1.1, topo.domain_name(col_level, d), ha="center", fontsize=7, rotation=90)
    if color == "free":
        sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, max(topo.node_gpus(n) for n in range(topo.node_count))))
        ax.figure.colorbar(sm, ax=ax, fraction=0.04, label="free GPUs per node")
    else:
        handles = [Patch(color=FREE, label="free"), Patch(color=RESERVED, label="reserved")]
        handles += [Patch(color=JOB_COLORS[i] if i < len(JOB_COLORS) else OTHER, label=f"job {j}")
                    for j, i in list(jobs.items())[:len(JOB_COLORS)]]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    ax.set_title(f"occupancy: {topo.node_count} nodes, {cluster.free_gpus()} of {topo.gpu_count} GPUs free",
                 fontsize=9)


def frag_bars(ax, cluster):
    """One bar per level: the free GPUs in fully free domains (a gang of
    whole domains can use them) and those stranded outside them."""
    topo = cluster.topology
    names = list(topo.levels) + ["node"]
    frags = [cluster.frag(level) for level in names]
    gang = [f.gang_gpus for f in frags]
    stranded = [f.stranded_gpus for f in frags]
    ax.barh(names, gang, color="#59a14f", label="in fully free domains")
    ax.barh(names, stranded, left=gang, color="#e15759", label="stranded")
    ax.invert_yaxis()
    ax.set_xlabel("free GPUs")
    ax.set_title("fragmentation per level", fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    for i, (g, s) in enumerate(zip(gang, stranded)):
        if g + s:
            ax.text(g + s, i, f" {100 * s / (g + s):.0f}% stranded", va="center", fontsize=7)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshot", nargs="?", help="a cluster snapshot (default: a demo on tiny)")
    ap.add_argument("-o", "--output", default="cluster.png", help="PNG or SVG file to write")
    ap.add_argument("--color", choices=["free", "job"], default="job")
    args = ap.parse_args(argv)
    cluster = gpusched.Cluster.load(args.snapshot) if args.snapshot else demo_cluster()
    with cluster:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 2]})
        occupancy(ax1, cluster, args.color)
        frag_bars(ax2, cluster)
        fig.tight_layout()
        fig.savefig(args.output, dpi=100, metadata={"Date": None} if args.output.endswith(".svg") else None)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
