#!/usr/bin/env bash
# measure_build.sh: how long a fresh build takes with one of the build-time options ON and OFF, the
# others at their defaults, in fresh folders, without ccache, one after the other, ROUNDS times
# alternating, of one commit's sources (REV, default HEAD) exported to a scratch folder. OPTION is
# BALERBENCH_PCH (the default: the common headers precompiled, cmake/precompiled_headers.cmake),
# BALERBENCH_TORCH_UNITY (the sources that include LibTorch compiled a few per translation unit) or
# BALERBENCH_UNITY (the other sources, a folder's eight per translation unit; both in
# cmake/torch_unity.cmake). Prints one row per build and the medians (docs/getting_started.md quotes
# them).
#
#   [OPTION=...] [REV=...] scripts/measure_build.sh [TARGET] [ROUNDS]   TARGET: balerbench (default; what
#                                          scripts/run.sh builds) or all; ROUNDS: default 1
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${1:-balerbench}"
ROUNDS="${2:-1}"
OPTION="${OPTION:-BALERBENCH_PCH}"
case "$OPTION" in BALERBENCH_PCH | BALERBENCH_TORCH_UNITY | BALERBENCH_UNITY) ;; *) echo "measure_build.sh: OPTION is BALERBENCH_PCH, BALERBENCH_TORCH_UNITY or BALERBENCH_UNITY, not '$OPTION'" >&2; exit 2 ;; esac
case "$TARGET" in balerbench | all) ;; *) echo "measure_build.sh: TARGET is balerbench or all, not '$TARGET'" >&2; exit 2 ;; esac
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "measure_build.sh: ROUNDS is a whole number from 1, not '$ROUNDS'" >&2; exit 2; }
JOBS="${JOBS:-$(nproc)}"
TORCH_DIR="${TORCH_DIR:-/usr/lib/$(gcc -dumpmachine)/cmake/Torch}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/measure_build.XXXXXX")"
# The sources of one commit (REV, default HEAD), exported, so that the builds measure that commit and
# an edit to the checkout while they run (they take many minutes) changes nothing in them.
REV="${REV:-HEAD}"
SRC="$WORK/src"
mkdir -p "$SRC"
git -C "$ROOT" archive "$REV" | tar -x -C "$SRC" ||
  { echo "measure_build.sh: cannot export $REV from $ROOT (hint: REV names a commit of this repository)" >&2; rm -rf "$WORK"; exit 2; }
# The folders go at the end; a failed configure or build keeps them, and its log is named.
failed() { echo "measure_build.sh: $1 failed; its log: $2 (last lines above; $WORK is kept)" >&2; trap - EXIT; exit 1; }
trap 'rm -rf "$WORK"' EXIT
target_args=()
[ "$TARGET" != all ] && target_args=(--target "$TARGET")

echo "# fresh builds of $TARGET at $(git -C "$ROOT" rev-parse --short "$REV"): $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), JOBS=$JOBS, $(c++ --version | head -1), no ccache"
echo "| round | $OPTION | configure s | build s | objects |"
echo "|---:|---|---:|---:|---:|"
declare -A times
for round in $(seq 1 "$ROUNDS"); do
  order=(ON OFF)
  [ $((round % 2)) = 0 ] && order=(OFF ON)
  for value in "${order[@]}"; do
    dir="$WORK/build-$value"
    rm -rf "$dir"
    t0=$(date +%s.%N)
    cmake -S "$SRC" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$TORCH_DIR" -D"$OPTION"="$value" \
      -DBALERBENCH_BUILD_TESTS="$([ "$TARGET" = all ] && echo ON || echo OFF)" -DBALERBENCH_BUILD_BENCHMARKS=OFF \
      > "$WORK/configure-$value.log" 2>&1 || { tail -20 "$WORK/configure-$value.log"; failed configure "$WORK/configure-$value.log"; }
    t1=$(date +%s.%N)
    CCACHE_DISABLE=1 cmake --build "$dir" -j "$JOBS" "${target_args[@]}" > "$WORK/build-$value.log" 2>&1 ||
      { tail -30 "$WORK/build-$value.log"; failed build "$WORK/build-$value.log"; }
    t2=$(date +%s.%N)
    objects=$(find "$dir" -name '*.o' | wc -l)
    build_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN {print b - a}')
    times[$value]+="$build_s "
    printf '| %d | %s | %.0f | %.0f | %d |\n' "$round" "$value" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$build_s" "$objects"
  done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
on=$(echo "${times[ON]}" | median)
off=$(echo "${times[OFF]}" | median)
printf '\nmedian build: %.0f s with %s=ON, %.0f s OFF: %.2fx\n' "$on" "$OPTION" "$off" "$(awk -v a="$on" -v b="$off" 'BEGIN {print a / b}')"
