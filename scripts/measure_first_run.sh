#!/usr/bin/env bash
# measure_first_run.sh: what scripts/run.sh costs on a fresh Debian 12 machine, measured in a new root
# file system: `debootstrap bookworm`, a clone of this repository's REV (default: the current branch)
# with ../shared bound read-only beside it, then `scripts/run.sh` twice in `chroot` under `env -i`
# (the first run installs and builds; the second finds everything in place). Prints the wall time of
# each run, each set-up step's seconds (from run.sh's own lines), the packages installed and the disk
# used, and the load average while it ran (a figure taken on a busy machine says so). Needs root,
# debootstrap and the network; leaves its folder for a look (its path is printed).
#
#   scripts/measure_first_run.sh [WORK]     # WORK: an empty folder (default: a new one under /tmp)
#   REV=issue53 scripts/measure_first_run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-$(mktemp -d "${TMPDIR:-/tmp}/first_run.XXXXXX")}"
REV="${REV:-$(git -C "$ROOT" rev-parse --abbrev-ref HEAD)}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" = 0 ] || { echo "measure_first_run.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
command -v debootstrap > /dev/null || { echo "measure_first_run.sh: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
[ -z "$(ls -A "$WORK" 2>/dev/null)" ] || { echo "measure_first_run.sh: $WORK is not empty (hint: give a new folder)" >&2; exit 2; }
git -C "$ROOT" rev-parse --verify -q "$REV^{commit}" > /dev/null ||
  { echo "measure_first_run.sh: '$REV' is not a commit of $ROOT (hint: REV=a branch or commit)" >&2; exit 2; }
R="$WORK/root"
mkdir -p "$R"
cleanup() {
  for m in sys dev/pts dev proc work/shared; do mountpoint -q "$R/$m" && umount "$R/$m"; done
  [ -n "${LOGGER:-}" ] && kill "$LOGGER" 2> /dev/null || true
}
trap cleanup EXIT

echo "measure_first_run.sh: $WORK (debootstrap bookworm from $MIRROR) ..."
debootstrap bookworm "$R" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 ||
  { tail -5 "$WORK/debootstrap.log"; echo "measure_first_run.sh: debootstrap failed (log: $WORK/debootstrap.log)" >&2; exit 1; }
mkdir -p "$R/work/shared"
git clone -q --no-hardlinks "$ROOT" "$R/work/main"
git -C "$R/work/main" checkout -q "$REV"
if [ -d "$ROOT/../shared" ]; then
  mount --bind "$ROOT/../shared" "$R/work/shared" && mount -o remount,bind,ro "$R/work/shared"
fi
mount -t proc proc "$R/proc"; mount --bind /dev "$R/dev"; mount --bind /dev/pts "$R/dev/pts"; mount -t sysfs sys "$R/sys"
cp /etc/resolv.conf "$R/etc/resolv.conf"
chroot "$R" dpkg-query -W -f='${Status}\n' | grep -c "install ok installed" > "$WORK/packages_before.txt"
du -sxm "$R" | cut -f1 > "$WORK/disk_before_mb.txt"
( while true; do echo "$(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 10; done ) > "$WORK/loadavg.log" &
LOGGER=$!

run_once() {  # run_once NAME: time scripts/run.sh in the new root, each line stamped with the time
  local t0 t1
  t0=$(date +%s)
  chroot "$R" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb \
    bash -c 'cd /work/main && scripts/run.sh' 2>&1 |
    while IFS= read -r line; do printf '[%s] %s\n' "$(date +%T)" "$line"; done > "$WORK/run_$1.log"
  local rc=${PIPESTATUS[0]}
  t1=$(date +%s)
  echo "$((t1 - t0))" > "$WORK/run_$1_s.txt"
  [ "$rc" = 0 ] || { tail -20 "$WORK/run_$1.log"; echo "measure_first_run.sh: run.sh failed (log: $WORK/run_$1.log)" >&2; exit 1; }
}
run_once first
run_once second
kill "$LOGGER"; LOGGER=""
chroot "$R" dpkg-query -W -f='${Status}\n' | grep -c "install ok installed" > "$WORK/packages_after.txt"
du -sxm "$R" | cut -f1 > "$WORK/disk_after_mb.txt"
apt_cache_mb=$(du -sxm "$R/var/cache/apt" | cut -f1)

echo "# scripts/run.sh on a fresh Debian 12 at $(git -C "$ROOT" rev-parse --short "$REV"): $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(date +%F)"
echo "first run: $(cat "$WORK/run_first_s.txt") s; second run: $(cat "$WORK/run_second_s.txt") s"
echo "packages: $(cat "$WORK/packages_before.txt") before, $(cat "$WORK/packages_after.txt") after"
echo "disk: $(( $(cat "$WORK/disk_after_mb.txt") - $(cat "$WORK/disk_before_mb.txt") )) MB more (apt's cache: $apt_cache_mb MB)"
echo "the first run's steps (seconds, as run.sh printed them):"
grep -o 'setup: .* done ([0-9]*s)' "$WORK/run_first.log" | sed 's/^/  /'
echo "load average (1 min) while it ran: $(awk '{print $2}' "$WORK/loadavg.log" | sort -n | awk '{a[NR]=$1} END {print "median " a[int((NR+1)/2)] ", max " a[NR]}')"
echo "logs: $WORK"
