#!/bin/bash
# The Slurm integration test (doc/slurm.md): a real cluster on this machine
# (cluster.sh: munged, slurmctld, one slurmd per node, 4 blocks x 4 racks x
# 4 nodes x 4 GPUs by default), gpusched-slurm placing its jobs, and a mix
# of sleep jobs: single GPUs, whole racks, multi-rack gangs, a sliced gang,
# a gang that can never fit, a high-priority gang that needs preemption and
# a node drained mid-run. Checks from scontrol that every job ran on the
# nodes the library chose, with all its nodes at once, that no GPU was
# held twice, and that the waiting gang's reason is in the log and in its
# comment. Exit 77 (skipped) only without Slurm, the daemon, root or a
# cgroup filesystem.
# Usage: test-slurm.sh PATH/TO/gpusched-slurm
set -u
daemon=${1:-}
here=$(cd "$(dirname "$0")" && pwd)
for p in munged slurmctld slurmd sbatch scontrol squeue; do
    command -v "$p" >/dev/null || { echo "SKIP: $p not installed (tools/deps installs slurm-wlm)"; exit 77; }
done
[ -x "$daemon" ] || { echo "SKIP: gpusched-slurm not built (no libslurm-dev, or -Dslurm=disabled)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: slurmd needs root to run jobs as their user"; exit 77; }
# Slurm 22.05's slurmd refuses to start without a cgroup filesystem, even
# with proctrack/linuxproc and task/none (its cgroup plugin initializes
# regardless). Every systemd host and container runtime mounts one; a bare
# chroot does not (tools/fresh-root-check binds the host's).
grep -q ' /sys/fs/cgroup[ /]' /proc/mounts ||
    { echo "SKIP: no cgroup filesystem on /sys/fs/cgroup (slurmd needs one)"; exit 77; }

: "${GS_BLOCKS:=4}" "${GS_RACKS:=4}" "${GS_NODES:=4}" "${GS_GPUS:=4}"
GS_DIR=$(mktemp -d /tmp/gpusched-slurm.XXXXXX)
# The shipped job_submit rule holds every job of the partition: the mix is
# also submitted with sbatch -H, the urgent gang only through the rule.
GS_JOB_SUBMIT=$here/../../integrations/slurm/job_submit.lua
export GS_DIR GS_BLOCKS GS_RACKS GS_NODES GS_GPUS GS_JOB_SUBMIT
# shellcheck source=cluster.sh
. "$here/cluster.sh"
dpid="" spid=""
cleanup() {
    [ -n "$spid" ] && { touch "$GS_DIR/stop"; wait "$spid" 2>/dev/null; }
    [ -n "$dpid" ] && { kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; }
    scancel --quiet --full -p gpu 2>/dev/null
    gs_cluster_stop
    [ -n "${GS_KEEP:-}" ] && echo "kept $GS_DIR" || rm -rf "$GS_DIR"
}
trap cleanup EXIT
# A timeout (meson test sends SIGTERM) or ^C still runs the cleanup.
trap "exit 1" TERM INT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
t0=$(date +%s)

gs_cluster_start || { echo "FAIL: the cluster did not start"; gs_cluster_logs; exit 1; }
echo "cluster up: $((GS_BLOCKS * GS_RACKS * GS_NODES)) nodes in $(( $(date +%s) - t0 )) s"
"$daemon" -P -p gpu -l root,block,rack -s "$GS_DIR/counters" -i 500 2> "$GS_DIR/daemon.log" &
dpid=$!
python3 "$here/check.py" sample "$GS_DIR" &
spid=$!

# shellcheck source=mix.sh
. "$here/mix.sh"
GS_HOLD=-H gs_submit_mix
# Three nodes of 2 GPUs: the library packs such pods two to a node, Slurm
# gives each node of the job 2 GPUs, so the daemon spreads them.
spread=$(GS_HOLD=-H gs_sub --requeue --nice=100 -N3 --gres=gpu:2)
left=$(gs_wait_running 60 $singles $racks $gangs $sliced $spread) || fail "jobs not running after 60 s:$left"

# A node running a single-GPU job is drained mid-run: the daemon reports
# the job hit and places nothing there from then on.
first=$(echo $singles | cut -d' ' -f1)
drained=$(squeue -h -j "$first" -o %N)
scontrol update nodename="$drained" state=drain reason=gpusched-test
sleep 2

# 128 GPUs at the highest priority: more than is free, so the library
# chooses victims among the lower-priority requeueable jobs.
urgent=$(GS_HOLD="" gs_submit_urgent)
gs_wait_running 60 "$urgent" >/dev/null || fail "the high-priority gang $urgent did not start"
sleep 3
touch "$GS_DIR/stop"; wait "$spid"; spid=""

# The daemon stops on SIGTERM; a non-zero status (a sanitizer report in the
# instrumented build, say) fails the test.
kill "$dpid"; wait "$dpid"; drc=$?; dpid=""
[ "$drc" -eq 0 ] || fail "gpusched-slurm exited with status $drc"

log=$GS_DIR/daemon.log
grep -q "job $urgent: requeued job" "$log" || fail "no victim requeued for job $urgent"
grep -q "job $urgent: placed on .*" "$log" || fail "job $urgent not placed"
grep -q "job $spread: placed on .*: 3 pods of 2 GPUs on distinct nodes" "$log" || fail "job $spread not spread"
grep -q "job $never: waits: required rack" "$log" || fail "the reason job $never waits is not in the log"
squeue -h -j "$never" -o %k | grep -q "gpusched: waits: " || fail "the reason job $never waits is not in its comment"
grep -q "node $drained: draining; jobs hit: .*$first" "$log" || fail "the drain of $drained did not report job $first"
grep -q "job $first: repair plan: " "$log" || fail "no repair plan logged for job $first"
for list in $(sed -n "/node $drained: draining/,\$p" "$log" | sed -n 's/.*: placed on \([^:]*\): .*/\1/p'); do
    scontrol show hostnames "$list" | grep -qx "$drained" && fail "placed on drained node $drained: $list"
done
grep -q 'gpusched_slurm_decisions_total{outcome="placed"} [1-9]' "$GS_DIR/counters" || fail "counters: no placement counted"
python3 "$here/check.py" verify "$GS_DIR" "$GS_GPUS" || fail "scontrol shows a job off its placement or a GPU held twice"

echo "--- daemon log"
cat "$log"
echo "--- counters"
grep -v _bucket "$GS_DIR/counters"
echo "--- $(( $(date +%s) - t0 )) s, $fails failures"
[ "$fails" -eq 0 ]
