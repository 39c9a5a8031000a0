#!/bin/bash
# Side by side (doc/slurm.md): the integration test's cluster and job mix,
# once placed by gpusched-slurm and once by Slurm alone (select/cons_tres,
# topology/tree, no daemon, jobs not held). Prints each run's figures as
# JSON and Slurm's sdiag scheduler statistics.
# Usage: compare.sh PATH/TO/gpusched-slurm
set -u
daemon=$1
here=$(cd "$(dirname "$0")" && pwd)
: "${GS_BLOCKS:=4}" "${GS_RACKS:=4}" "${GS_NODES:=4}" "${GS_GPUS:=4}"
export GS_BLOCKS GS_RACKS GS_NODES GS_GPUS
# shellcheck source=cluster.sh
. "$here/cluster.sh"
# shellcheck source=mix.sh
. "$here/mix.sh"

dpid="" spid="" GS_DIR=""
cleanup() {
    [ -n "$GS_DIR" ] || return 0
    touch "$GS_DIR/stop"
    [ -n "$spid" ] && wait "$spid" 2>/dev/null
    [ -n "$dpid" ] && kill "$dpid" 2>/dev/null
    scancel --quiet -p gpu 2>/dev/null
    gs_cluster_stop
    rm -rf "$GS_DIR"
    dpid="" spid="" GS_DIR=""
}
trap cleanup EXIT
# A timeout (meson test sends SIGTERM) or ^C still runs the cleanup.
trap "exit 1" TERM INT

run() {
    local mode=$1
    GS_DIR=$(mktemp -d /tmp/gpusched-compare.XXXXXX)
    export GS_DIR
    gs_cluster_start || return 1
    GS_HOLD=""
    if [ "$mode" = gpusched ]; then
        GS_HOLD=-H
        "$daemon" -P -p gpu -l root,block,rack -s "$GS_DIR/counters" -i 500 2> "$GS_DIR/daemon.log" &
        dpid=$!
    fi
    python3 "$here/check.py" sample "$GS_DIR" &
    spid=$!
    gs_submit_mix
    gs_wait_running 60 $singles $racks $gangs $sliced >/dev/null
    scontrol update nodename="$(squeue -h -j "$(echo $singles | cut -d' ' -f1)" -o %N)" state=drain reason=compare
    sleep 2
    urgent=$(gs_submit_urgent)
    gs_wait_running 30 "$urgent" >/dev/null
    sleep 3
    touch "$GS_DIR/stop"; wait $spid; spid=""
    { for j in $singles; do echo "$j single"; done
      for j in $racks; do echo "$j rack"; done
      for j in $gangs; do echo "$j gang"; done
      echo "$sliced sliced"; echo "$never never"; echo "$urgent urgent"; } > "$GS_DIR/kinds"
    echo "=== $mode"
    python3 "$here/check.py" report "$GS_DIR" "$GS_GPUS"
    [ -f "$GS_DIR/counters" ] && grep -E "latency_us_(sum|count)|decisions_total" "$GS_DIR/counters"
    sdiag | sed -n '/Main schedule statistics/,/Last queue length/p;/Backfilling stats/,/Last depth cycle/p' | grep -E "statistics|stats|cycle:|Total|Last depth"
    cleanup
}

run gpusched
run slurm
