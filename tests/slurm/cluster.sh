#!/bin/bash
# A real Slurm cluster on this machine, for the integration test and the
# side-by-side measure (doc/slurm.md): munged, slurmctld and one slurmd per
# simulated node (slurmd -N name, a port each), every file in $GS_DIR.
# GPUs are GRES counts with no device files, so no GPU is needed.
# Sourced, not run: gs_cluster_start and gs_cluster_stop, and SLURM_CONF
# exported for the client commands. Nothing outside $GS_DIR is written.
#
# Shape: GS_BLOCKS blocks x GS_RACKS racks x GS_NODES nodes x GS_GPUS GPUs.
# GS_PLACER=gpusched: jobs are placed by gpusched-slurm (the partition is
# topology-aware but the daemon chooses every node list);
# GS_PLACER=slurm: select/cons_tres with topology/tree alone.

: "${GS_BLOCKS:=2}" "${GS_RACKS:=2}" "${GS_NODES:=4}" "${GS_GPUS:=4}"
: "${GS_PORT_BASE:=$((17000 + ($$ % 2000) * 10))}"

gs_node_name() { echo "b$1r$2n$3"; }   # block, rack, node

# topology.conf: one leaf switch per rack, one switch per block, one root.
gs_write_topology() {
    local b r n nodes blocks=""
    : > "$GS_DIR/topology.conf"
    for ((b = 0; b < GS_BLOCKS; b++)); do
        local racks=""
        for ((r = 0; r < GS_RACKS; r++)); do
            echo "SwitchName=b${b}r${r} Nodes=b${b}r${r}n[0-$((GS_NODES - 1))]" >> "$GS_DIR/topology.conf"
            racks="$racks${racks:+,}b${b}r${r}"
        done
        echo "SwitchName=b${b} Switches=$racks" >> "$GS_DIR/topology.conf"
        blocks="$blocks${blocks:+,}b${b}"
    done
    echo "SwitchName=root Switches=$blocks" >> "$GS_DIR/topology.conf"
}

gs_write_conf() {
    local b r n i=0 port nodelist=""
    cat > "$GS_DIR/slurm.conf" <<CONF
ClusterName=gstest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$GS_PORT_BASE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$GS_DIR/munge/munge.sock
StateSaveLocation=$GS_DIR/state
SlurmdSpoolDir=$GS_DIR/spool/%n
SlurmctldPidFile=$GS_DIR/slurmctld.pid
SlurmdPidFile=$GS_DIR/slurmd-%n.pid
SlurmctldLogFile=$GS_DIR/log/slurmctld.log
SlurmdLogFile=$GS_DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=error
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
# Every slurmd runs on this one machine: the declared CPUs and memory are
# taken as they are, not checked against the machine's.
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
TopologyPlugin=topology/tree
GresTypes=gpu
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2,defer_batch
MinJobAge=600
KillWait=1
InactiveLimit=0
SlurmdTimeout=60
MessageTimeout=20
PreemptType=preempt/none
JobRequeue=1
CONF
    # GS_JOB_SUBMIT=path/to/job_submit.lua: the rule that holds every job
    # (integrations/slurm), read by slurmctld from beside slurm.conf.
    if [ -n "${GS_JOB_SUBMIT:-}" ]; then
        cp "$GS_JOB_SUBMIT" "$GS_DIR/job_submit.lua"
        echo "JobSubmitPlugins=lua" >> "$GS_DIR/slurm.conf"
    fi
    # Every node has the same GPU count: one line without NodeName= serves
    # all. Slurm's gres/gpu drops GPUs that have no File=, so each GPU is an
    # empty file in $GS_DIR/dev (no cgroup confines devices here, so a
    # plain file is enough; every slurmd shares them).
    mkdir -p "$GS_DIR/dev"
    local g
    for ((g = 0; g < GS_GPUS; g++)); do : > "$GS_DIR/dev/gpu$g"; done
    echo "Name=gpu Count=$GS_GPUS File=$GS_DIR/dev/gpu[0-$((GS_GPUS - 1))]" > "$GS_DIR/gres.conf"
    for ((b = 0; b < GS_BLOCKS; b++)); do
        for ((r = 0; r < GS_RACKS; r++)); do
            for ((n = 0; n < GS_NODES; n++)); do
                port=$((GS_PORT_BASE + 1 + i)); i=$((i + 1))
                local name; name=$(gs_node_name $b $r $n)
                echo "NodeName=$name NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=4 RealMemory=1000 Gres=gpu:$GS_GPUS Features=rack$r State=UNKNOWN" >> "$GS_DIR/slurm.conf"
                nodelist="$nodelist${nodelist:+,}$name"
            done
        done
    done
    echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >> "$GS_DIR/slurm.conf"
    GS_NODELIST=$nodelist
}

gs_cluster_start() {
    mkdir -p "$GS_DIR"/{munge,state,spool,log}
    export SLURM_CONF="$GS_DIR/slurm.conf"
    gs_write_topology
    gs_write_conf
    # A key of its own and a socket of its own: the machine's munged, if
    # any, is not used or touched.
    dd if=/dev/urandom of="$GS_DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 700 "$GS_DIR/munge"; chmod 400 "$GS_DIR/munge/munge.key"
    munged --force --key-file="$GS_DIR/munge/munge.key" --socket="$GS_DIR/munge/munge.sock" \
        --pid-file="$GS_DIR/munge/munged.pid" --log-file="$GS_DIR/log/munged.log" \
        --seed-file="$GS_DIR/munge/seed" || { echo "cluster: munged failed" >&2; return 1; }
    slurmctld -c -i -f "$SLURM_CONF" || { echo "cluster: slurmctld failed" >&2; return 1; }
    local name
    for name in ${GS_NODELIST//,/ }; do
        mkdir -p "$GS_DIR/spool/$name"
        slurmd -N "$name" -f "$SLURM_CONF" || { echo "cluster: slurmd -N $name failed" >&2; return 1; }
    done
    gs_wait_idle
}

# What a failed start left in the logs: slurmctld's, munged's and those of
# the slurmd that wrote anything (one that refused to start says why there).
gs_cluster_logs() {
    local f
    for f in "$GS_DIR"/log/*.log; do
        [ -s "$f" ] || continue
        echo "--- $f"
        tail -20 "$f"
    done
}

# Waits until every node is idle (slurmd registered) or gives up.
gs_wait_idle() {
    local want i
    want=$(echo "$GS_NODELIST" | tr ',' '\n' | wc -l)
    for ((i = 0; i < 60; i++)); do
        [ "$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l)" -ge "$want" ] && return 0
        sleep 1
    done
    echo "cluster: nodes not idle after 60 s" >&2
    sinfo -N >&2
    return 1
}

gs_kill_pidfile() {
    local f=$1 pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f" 2>/dev/null) || return 0
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
}

# Cancels every job and waits (up to 20 s) until none is left: a job's
# slurmstepd and processes belong to no slurmd once it is gone, so they
# are ended while slurmd still runs.
gs_drain_jobs() {
    local i
    [ -f "$GS_DIR/slurmctld.pid" ] && kill -0 "$(cat "$GS_DIR/slurmctld.pid")" 2>/dev/null || return 0
    timeout 20 squeue -h -o %i 2>/dev/null | xargs -r timeout 20 scancel --quiet --full 2>/dev/null
    for ((i = 0; i < 20; i++)); do
        [ -z "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && return 0
        sleep 1
    done
}

# A slurmstepd of this cluster still there (its slurmd was stopped first):
# found by the SLURM_CONF it inherited, ended with its processes, by pid.
gs_kill_stray_steps() {
    local p kid pgid
    for p in $(pgrep -x slurmstepd); do
        tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$GS_DIR/slurm.conf" || continue
        for kid in $(pgrep -P "$p"); do
            # The job's script leads its own process group (its sleep too).
            pgid=$(ps -o pgid= -p "$kid" | tr -d ' ')
            if [ -n "$pgid" ] && [ "$pgid" = "$kid" ]; then kill -9 -- "-$pgid" 2>/dev/null; else kill -9 "$kid" 2>/dev/null; fi
        done
        kill -9 "$p" 2>/dev/null
    done
}

# Stops every process started by gs_cluster_start, each by its pid file.
gs_cluster_stop() {
    local f
    gs_drain_jobs
    for f in "$GS_DIR"/slurmd-*.pid; do gs_kill_pidfile "$f"; done
    gs_kill_pidfile "$GS_DIR/slurmctld.pid"
    # munged goes last so the daemons can still authenticate.
    sleep 1
    gs_kill_stray_steps
    gs_kill_pidfile "$GS_DIR/munge/munged.pid"
}
