#!/usr/bin/env bash
# local_cluster.sh: a one-node Slurm on this machine (Debian 12, as root), to run the cluster path of
# docs/clusters.md for real: munged as user munge, then slurmctld and slurmd with proctrack/linuxproc,
# task/none and select/cons_tres, on ports and in a folder of their own (state, spool, logs, pids,
# munge's socket), so that nothing of a system Slurm or munge is touched. Installs Debian's slurmctld,
# slurmd, slurm-client and munge when missing.
#
#   scripts/slurm/local_cluster.sh start   bring the cluster up (waits until the node is idle)
#   scripts/slurm/local_cluster.sh stop    stop every daemon start started, by its process id
#   scripts/slurm/local_cluster.sh test    start, run the documented path end to end, stop:
#       1. sbatch --array=0-1 scripts/slurm/sweep_array.sbatch of a small CPU experiment, then
#          scripts/slurm/merge.sh with --dependency=afterok on the array, then the report;
#          checks: every trial of the grid ran exactly once, and the merged database equals a
#          one-process `balerbench run` of the same experiment apart from timings (trial keys and
#          statuses, per-epoch losses, the report's configuration rows);
#       2. a task killed by its time limit (--time=1) keeps every trial it finished, and the same
#          sbatch again resumes the rest: every trial once.
#
# Environment: BALERBENCH_SLURM_DIR (default /tmp/balerbench-slurm: the cluster's folder),
# BALERBENCH_BIN (default build/harness/balerbench), SLURM_PORT_BASE (default 16817: slurmctld on it,
# slurmd on the next). Exit code 0 when all is well; 1 with the reason when a daemon cannot start or
# a check fails; 2 for a usage error.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${BALERBENCH_SLURM_DIR:-/tmp/balerbench-slurm}"
BB="${BALERBENCH_BIN:-$ROOT/build/harness/balerbench}"
PORT="${SLURM_PORT_BASE:-16817}"
export SLURM_CONF="$DIR/slurm.conf"

say() { echo "local_cluster: $*"; }
die() { echo "local_cluster: error: $*" >&2; exit 1; }

install_packages() {
  local p missing=()
  for p in slurmctld slurmd slurm-client munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  say "installing Debian's ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

write_slurm_conf() {
  local host cpus mem_mb
  host="$(hostname -s)"
  cpus="$(nproc)"
  mem_mb="$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
  cat > "$SLURM_CONF" <<EOF
# A one-node cluster for balerbench's tests (scripts/slurm/local_cluster.sh).
ClusterName=balerbench-local
SlurmctldHost=$host
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=5
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=cpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

# pid_of NAME: the pid in DIR/NAME.pid when that process is alive, else nothing.
pid_of() {
  local f="$DIR/$1.pid" pid
  [ -s "$f" ] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then echo "$pid"; fi
}

start_munged() {
  install -d -o munge -g munge -m 0755 "$DIR/munge"
  runuser -u munge -- /usr/sbin/munged --socket="$DIR/munge/munge.socket" --pid-file="$DIR/munge/munged.pid" \
    --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed" --key-file=/etc/munge/munge.key ||
    die "munged did not start: $(tail -3 "$DIR/munge/munged.log" 2>/dev/null) (hint: /etc/munge/munge.key must exist, owned by munge, mode 0400 or 0600; mungekey --create makes one)"
  cp "$DIR/munge/munged.pid" "$DIR/munged.pid"
  munge -n --socket="$DIR/munge/munge.socket" | unmunge --socket="$DIR/munge/munge.socket" > /dev/null ||
    die "munged runs but a credential does not round-trip (see $DIR/munge/munged.log)"
}

start() {
  [ "$(id -u)" -eq 0 ] || die "needs root (it starts munged as user munge, and slurmctld and slurmd)"
  if [ -n "$(pid_of slurmctld)$(pid_of slurmd)$(pid_of munged)" ]; then
    die "a cluster started from $DIR is running already (scripts/slurm/local_cluster.sh stop)"
  fi
  install_packages
  case "$DIR" in
    /tmp/*|/var/tmp/*|"$HOME"/*) ;;
    *) die "BALERBENCH_SLURM_DIR=$DIR: start empties this folder, so it must lie under /tmp, /var/tmp or \$HOME" ;;
  esac
  rm -rf "$DIR"
  mkdir -p "$DIR/state" "$DIR/spool"
  chmod 0755 "$DIR"
  write_slurm_conf
  start_munged
  /usr/sbin/slurmctld -i || die "slurmctld did not start: $(tail -5 "$DIR/slurmctld.log" 2>/dev/null)"
  /usr/sbin/slurmd || die "slurmd did not start: $(tail -5 "$DIR/slurmd.log" 2>/dev/null)"
  local i state=""
  for i in $(seq 60); do
    state="$(sinfo -h -o '%T' 2>/dev/null | head -1 || true)"
    if [ "$state" = idle ]; then break; fi
    sleep 1
  done
  if [ "$state" != idle ]; then
    echo "--- slurmctld.log"; tail -15 "$DIR/slurmctld.log" 2>/dev/null || true
    echo "--- slurmd.log"; tail -15 "$DIR/slurmd.log" 2>/dev/null || true
    stop
    die "the node did not become idle in 60 s (state '${state:-none}'; the logs are above)"
  fi
  say "up: slurmctld pid $(pid_of slurmctld), slurmd pid $(pid_of slurmd), munged pid $(pid_of munged);" \
      "SLURM_CONF=$SLURM_CONF"
}

stop() {
  local name pid i
  # Jobs still queued or running on this cluster (a test that failed half-way) go first, so that no
  # slurmstepd or job outlives the daemons.
  if [ -n "$(pid_of slurmctld)" ] && [ -n "$(squeue -h 2>/dev/null)" ]; then
    scancel --quiet --full --user="$(id -un)" 2>/dev/null || true
    for i in $(seq 30); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.5; done
    say "cancelled the jobs left on the cluster"
  fi
  for name in slurmd slurmctld munged; do
    pid="$(pid_of "$name")"
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
    say "stopped $name (pid $pid)"
  done
}

# wait_for_jobs JOBID...: until none of them is pending or running (at most 10 minutes).
wait_for_jobs() {
  local i
  for i in $(seq 600); do
    if [ -z "$(squeue -h -j "$(IFS=,; echo "$*")" 2>/dev/null)" ]; then return 0; fi
    sleep 1
  done
  die "jobs $* still queued or running after 10 minutes: $(squeue)"
}

# job_states JOBID: the states of the job's steps and array tasks as slurmctld remembers them.
job_states() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | sort | uniq -c | tr '\n' ' '; }

run_test() {
  [ -x "$BB" ] || die "$BB is not built (hint: scripts/setup.sh, or BALERBENCH_BIN=PATH)"
  local work t0 t_start
  t0=$SECONDS
  start
  t_start=$((SECONDS - t0))
  trap 'stop' EXIT
  work="$DIR/work"
  mkdir -p "$work"
  # A small CPU experiment: 4 trials of 2 epochs on 4,000 rows, one thread (the same bits in any process).
  cat > "$work/slurm_small.json" <<'EOF'
{"schema_version": 1, "name": "slurm_small",
 "dataset": {"generator": {"kind": "cms", "rows": 4000, "seed": 0}},
 "model": {"name": "AE", "compression_ratio": 1.6},
 "training": {"lr": 0.001, "test_size": 0.2, "threads": 1},
 "sweep": {"batch_size": [256, 512], "precision": ["fp32", "fp64"], "epochs": [2], "repeats": 1},
 "target": {"relative_error": 0.5},
 "energy": {"meters": ["cpu_estimate", "ram_estimate"], "sample_hz": 10}}
EOF
  local exp="$work/slurm_small.json" array merge t1
  export BALERBENCH_ROOT="$work" BALERBENCH_BIN="$BB"
  t1=$SECONDS
  array="$(sbatch --parsable --chdir="$work" --array=0-1 "$ROOT/scripts/slurm/sweep_array.sbatch" "$exp")" ||
    die "sbatch --array refused the job"
  merge="$(sbatch --parsable --chdir="$work" --dependency=afterok:"$array" "$ROOT/scripts/slurm/merge.sh" "$exp")" ||
    die "sbatch of merge.sh refused the job"
  say "submitted array job $array (tasks 0-1) and merge job $merge (afterok:$array)"
  wait_for_jobs "$array" "$merge"
  say "array and merge finished in $((SECONDS - t1)) s: array $(job_states "$array"); merge $(job_states "$merge")"
  [ -s "$work/results/slurm_small.sqlite" ] ||
    die "merge.sh wrote no results/slurm_small.sqlite; its log: $(cat "$work"/balerbench-merge_"$merge".log 2>/dev/null)"
  "$BB" run "$exp" --db "$work/one_process.sqlite" --progress none --tables none > "$work/one_process.log" 2>&1 ||
    die "the one-process run failed: $(tail -5 "$work/one_process.log")"
  /usr/bin/python3 "$ROOT/scripts/slurm/compare_runs.py" --bb "$BB" --experiment slurm_small --expect-trials 4 \
    "$work/results/slurm_small.sqlite" "$work/one_process.sqlite" || die "the merged results differ (above)"
  grep -q '^### ' "$work"/balerbench-merge_"$merge".log || die "merge.sh printed no report tables"

  # A time limit: one task, --time=1 (Slurm ends it between 60 and 90 s), trials spaced by a cooldown.
  sed -e 's/"name": "slurm_small"/"name": "slurm_timelimit"/' \
      -e 's/"sample_hz": 10}/"sample_hz": 10, "cooldown_s": 12}/' \
      -e 's/"repeats": 1/"repeats": 3/' "$exp" > "$work/slurm_timelimit.json"
  local killed resumed done_first
  t1=$SECONDS
  killed="$(sbatch --parsable --chdir="$work" --array=0 --time=1 "$ROOT/scripts/slurm/sweep_array.sbatch" \
    "$work/slurm_timelimit.json")"
  wait_for_jobs "$killed"
  job_states "$killed" | grep -q TIMEOUT || die "job $killed was not ended by its time limit: $(job_states "$killed")"
  done_first="$(/usr/bin/python3 "$ROOT/scripts/slurm/compare_runs.py" --count "$work/results/slurm/slurm_timelimit_shard0.sqlite")"
  say "job $killed ended by its time limit after $((SECONDS - t1)) s with $done_first of 12 trials stored"
  [ "$done_first" -ge 1 ] && [ "$done_first" -lt 12 ] || die "expected some but not all trials before the limit, got $done_first"
  resumed="$(sbatch --parsable --chdir="$work" --array=0 "$ROOT/scripts/slurm/sweep_array.sbatch" "$work/slurm_timelimit.json")"
  wait_for_jobs "$resumed"
  grep -q "$done_first already in" "$work"/balerbench_"$resumed"_0.log ||
    die "the resubmitted task did not resume: $(grep -m1 'trials in the grid' "$work"/balerbench_"$resumed"_0.log)"
  /usr/bin/python3 "$ROOT/scripts/slurm/compare_runs.py" --expect-trials 12 --once \
    "$work/results/slurm/slurm_timelimit_shard0.sqlite" || die "the resumed sweep did not store every trial once"
  say "resubmitted as job $resumed: resumed after the $done_first stored trials, 12 of 12 stored once"
  say "test passed in $((SECONDS - t0)) s (cluster start $t_start s)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  test) run_test ;;
  *) echo "usage: scripts/slurm/local_cluster.sh start|stop|test" >&2; exit 2 ;;
esac
