#!/bin/sh
# Regenerates the pictures in doc/pictures (doc/cli.md, README):
#   occupancy-jobs.svg, occupancy-free.svg  gpusched draw of a scenario built
#                                           with gpusched place -o
#   plot-cluster.png                        examples/python/plot_cluster.py
#                                           (matplotlib) of its demo
#   doc/pictures/make-pictures.sh [BUILD_DIR]     (default build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
g=$build/cli/gpusched
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# 2 blocks x 4 racks x 6 nodes x 8 GPUs.
printf 'levels block rack\nclasses h100\nnode b[0-1]/r[0-3] n[0-] count=6 gpus=8 class=h100\n' > topo.txt
prev=topo.txt
i=0
place() { # place ARGS...: commits one more gang onto the scenario
    i=$((i + 1))
    "$g" place "$prev" --job "$i" "$@" -o "s$i.snap" > /dev/null
    prev=s$i.snap
}
place --gpus 96 --pod-gpus 8 --required block
place --gpus 40 --pod-gpus 8 --required rack
place --gpus 12
place --gpus 6 --pod-gpus 2
place --gpus 20 --pod-gpus 4 --required rack
place --gpus 3
place --gpus 16 --whole-nodes --required rack
place --gpus 10 --pod-gpus 2
"$g" draw "$prev" --color job --title "gpusched draw --color job: 48 nodes, 8 jobs" -o "$here/occupancy-jobs.svg"
"$g" draw "$prev" --color free --title "gpusched draw --color free: the same cluster" -o "$here/occupancy-free.svg"
"$g" frag "$prev"
GPUSCHED_LIBRARY=$build/lib/libgpusched.so.0.2 PYTHONPATH=$root/python \
    /usr/bin/python3 "$root/examples/python/plot_cluster.py" -o "$here/plot-cluster.png"
