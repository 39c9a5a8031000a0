#!/bin/bash
# The job mix of the integration test and of the side-by-side measure
# (doc/slurm.md), sourced. With GS_HOLD=-H every job is submitted held for
# gpusched-slurm to place; with GS_HOLD empty Slurm places them itself.
# Sets: singles, racks, gangs, sliced, never (job ids); gs_submit_urgent
# prints the id of the high-priority gang.

gs_sub() { sbatch ${GS_HOLD:-} --parsable -o /dev/null "$@" --wrap "sleep 600"; }

gs_submit_mix() {
    local low="--requeue --nice=100" i
    singles=""
    for i in 1 2 3 4 5 6; do singles="$singles $(gs_sub $low --gpus=1)"; done
    # Whole racks: 4 nodes x 4 GPUs in one leaf switch.
    racks="$(gs_sub $low -N4 --gres=gpu:4 --switches=1) $(gs_sub $low -N4 --gres=gpu:4 --switches=1)"
    # Multi-rack gangs of whole nodes.
    gangs="$(gs_sub --requeue --nice=50 -N8 --gres=gpu:4) $(gs_sub --requeue --nice=50 -N12 --gres=gpu:4)"
    # 32 GPUs as two slices of one rack each (the slice is gpusched's; Slurm
    # reads the comment as a comment).
    sliced=$(gs_sub $low --gpus=32 --comment "gpusched: slice=16@rack")
    # Five whole nodes in one rack of four: never fits.
    never=$(gs_sub -N5 --gres=gpu:4 --switches=1)
}

# 128 GPUs at the highest priority: more than is free once the mix runs.
gs_submit_urgent() { gs_sub --nice=-100 -N32 --gres=gpu:4; }

# Waits up to $1 seconds until the jobs run; prints those that do not.
gs_wait_running() {
    local t=$1 i j left
    shift
    for ((i = 0; i < t; i++)); do
        left=""
        for j in "$@"; do
            [ "$(squeue -h -j "$j" -o %T 2>/dev/null)" = RUNNING ] || left="$left $j"
        done
        [ -z "$left" ] && return 0
        sleep 1
    done
    echo "$left"
    return 1
}
