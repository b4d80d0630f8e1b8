#!/usr/bin/env bash
# Single-node Slurm cluster on this machine, for dlbench's tests.
#   bash scripts/services/slurm.sh up|down|status
# Needs root and apt-get (Debian 12). Daemons run without systemd; all state
# (configs, spool, logs, pid files) lives in $DLBENCH_SLURM_DIR. No accounting
# database: dlbench reads job states from slurmctld (squeue), not sacct.
set -Eeuo pipefail
trap 'echo "slurm.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

dir=${DLBENCH_SLURM_DIR:-/tmp/dlbench-slurm}
conf=$dir/slurm.conf
host=$(hostname -s 2>/dev/null || echo localhost)
export SLURM_CONF=$conf
die() { echo "slurm.sh: $*" >&2; exit 1; }
# A daemon is up if its pid file names a live (not zombie: PID 1 here may not
# reap) process of that name.
running() {
    local pid; pid=$(cat "$dir/$1.pid" 2>/dev/null) || return 1
    [[ $(ps -o stat=,comm= -p "$pid" 2>/dev/null) =~ ^[^Z][^\ ]*\ +$1$ ]]
}
wait_for() { local i; for i in $(seq "$1"); do eval "$2" && return 0; sleep 1; done; return 1; }

install_packages() {
    local missing="" p
    for p in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge; do
        command -v "${p%%:*}" >/dev/null || missing="$missing ${p#*:}"
    done
    [ -z "$missing" ] && return 0
    [ "$(id -u)" = 0 ] || die "need root to install$missing"
    export DEBIAN_FRONTEND=noninteractive
    # Refresh the package lists only when apt does not know the packages yet.
    apt-cache show slurmctld slurmd >/dev/null 2>&1 || apt-get update -qq >"$dir/apt.log" 2>&1
    apt-get install -y -qq --no-install-recommends $missing >>"$dir/apt.log" 2>&1 \
        || die "apt-get install$missing failed (see $dir/apt.log)"
}

start_munge() {
    # Normally systemd's job. libmunge has the socket path compiled in, so munge
    # keeps its Debian locations (/etc/munge, /run/munge).
    [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
    chmod 0400 /etc/munge/munge.key
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
    # --force: start even over a stale socket left by a killed munged.
    runuser -u munge -- munged --force || die "munged did not start (see /var/log/munge/munged.log)"
    touch "$dir/munged.ours"
}

write_conf() {
    mkdir -p "$dir/ctld" "$dir/d"
    # CPUs, sockets, cores and RealMemory exactly as slurmd detects them, so the
    # node registers without being drained for a mismatch.
    local node
    node=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*/NodeName=$host/")
    cat > "$conf" <<CONF
ClusterName=dlbench
SlurmctldHost=$host(127.0.0.1)
# root runs everything: no slurm user or file ownership to set up.
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
AuthType=auth/munge
# No cgroups in this container: track job processes through /proc, no binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
MailProg=/bin/true
# Allocate single CPUs, not whole nodes, memory not consumable: two 1-CPU jobs
# run side by side and --cpus-per-task works.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# A node that was down comes back by itself after a restart.
ReturnToService=2
# Kill quickly: SIGKILL 5 s after SIGTERM on cancel/timeout, no grace minutes.
KillWait=5
OverTimeLimit=0
# No accounting database (sacct stays unavailable); finished jobs stay visible to
# squeue --states=all for MinJobAge seconds, which is how dlbench reads their end.
AccountingStorageType=accounting_storage/none
MinJobAge=600
# Schedule a batch job as soon as it is submitted or a node frees up: the default
# batch_sched_delay (3 s) lets jobs wait for the next pass, which put a 3-second grid
# under one-job-per-trial runs (measured: 0.9 s from one job's end to the next's start).
SchedulerParameters=batch_sched_delay=0
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    # Client commands read /etc/slurm/slurm.conf unless SLURM_CONF is set: point
    # it at ours, unless a config that is not ours is there.
    mkdir -p /etc/slurm
    if [ ! -e /etc/slurm/slurm.conf ] || [ -L /etc/slurm/slurm.conf ]; then
        ln -sfn "$conf" /etc/slurm/slurm.conf
    else
        echo "slurm.sh: /etc/slurm/slurm.conf is not ours; export SLURM_CONF=$conf" >&2
    fi
}

up() {
    local t0=$SECONDS other
    # Ports 6817-6818 are fixed: one cluster per machine.
    other=$(dirname "$(readlink /etc/slurm/slurm.conf 2>/dev/null || echo "$conf")")
    [ "$other" = "$dir" ] || ! DLBENCH_SLURM_DIR=$other bash "$0" status >/dev/null 2>&1 \
        || die "a cluster from $other is up; stop it first: DLBENCH_SLURM_DIR=$other $0 down"
    mkdir -p "$dir"
    install_packages
    start_munge
    write_conf
    running slurmctld || slurmctld || die "slurmctld did not start (see $dir/slurmctld.log)"
    running slurmd    || slurmd    || die "slurmd did not start (see $dir/slurmd.log)"
    wait_for 60 '[[ $(sinfo -h -o %T 2>/dev/null) =~ ^(idle|mixed|allocated) ]]' \
        || die "node is '$(sinfo -h -o %T 2>&1)' after 60 s, not idle (see $dir/slurmctld.log, $dir/slurmd.log)"
    echo "slurm up in $((SECONDS - t0)) s: node $host $(sinfo -h -o %T), config $conf"
}

down() {
    local d
    # Cancel what still runs: killing slurmd would leave job processes behind.
    if running slurmctld && [ -n "$(squeue -h -o %i 2>/dev/null)" ]; then
        scancel --partition=debug || true
        wait_for 15 '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' || true
    fi
    for d in slurmd slurmctld; do
        running $d && kill "$(cat "$dir/$d.pid")"
        wait_for 20 "! running $d" || true
    done
    if [ -f "$dir/munged.ours" ]; then
        kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
        rm -f "$dir/munged.ours"
    fi
    echo "slurm down"
}

status() {
    if running slurmctld && running slurmd; then
        echo "slurm up: $(sinfo -h -o '%N %T' 2>&1 | head -1)"
    else
        echo "slurm down"; exit 1
    fi
}

case ${1:-} in
    up) up ;; down) down ;; status) status ;;
    *) die "usage: $0 up|down|status" ;;
esac
