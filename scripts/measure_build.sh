#!/usr/bin/env bash
# measure_build.sh: how long a fresh build takes with the sources that include LibTorch compiled a few
# per translation unit (BALERBENCH_TORCH_UNITY=ON, the default: cmake/torch_unity.cmake) and one by
# one (OFF), in fresh folders, without ccache, one after the other, ROUNDS times alternating.
# Prints one row per build and the medians (docs/development.md quotes them).
#
#   scripts/measure_build.sh [TARGET] [ROUNDS]   TARGET: balerbench (default; what scripts/run.sh builds)
#                                                or all; ROUNDS: default 1
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${1:-balerbench}"
ROUNDS="${2:-1}"
JOBS="${JOBS:-$(nproc)}"
TORCH_DIR="${TORCH_DIR:-/usr/lib/$(gcc -dumpmachine)/cmake/Torch}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/measure_build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
target_args=()
[ "$TARGET" != all ] && target_args=(--target "$TARGET")

echo "# fresh builds of $TARGET: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), JOBS=$JOBS, $(c++ --version | head -1), no ccache"
echo "| round | BALERBENCH_TORCH_UNITY | configure s | build s | objects |"
echo "|---:|---|---:|---:|---:|"
declare -A times
for round in $(seq 1 "$ROUNDS"); do
  order=(ON OFF)
  [ $((round % 2)) = 0 ] && order=(OFF ON)
  for unity in "${order[@]}"; do
    dir="$WORK/build-$unity"
    rm -rf "$dir"
    t0=$(date +%s.%N)
    cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$TORCH_DIR" -DBALERBENCH_TORCH_UNITY="$unity" \
      -DBALERBENCH_BUILD_TESTS="$([ "$TARGET" = all ] && echo ON || echo OFF)" -DBALERBENCH_BUILD_BENCHMARKS=OFF \
      > "$WORK/configure-$unity.log" 2>&1 || { tail -20 "$WORK/configure-$unity.log"; exit 1; }
    t1=$(date +%s.%N)
    CCACHE_DISABLE=1 cmake --build "$dir" -j "$JOBS" "${target_args[@]}" > "$WORK/build-$unity.log" 2>&1 ||
      { grep -m20 -A5 error "$WORK/build-$unity.log"; exit 1; }
    t2=$(date +%s.%N)
    objects=$(find "$dir" -name '*.o' | wc -l)
    build_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN {print b - a}')
    times[$unity]+="$build_s "
    printf '| %d | %s | %.0f | %.0f | %d |\n' "$round" "$unity" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$build_s" "$objects"
  done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
on=$(echo "${times[ON]}" | median)
off=$(echo "${times[OFF]}" | median)
printf '\nmedian build: %.0f s grouped (ON), %.0f s one by one (OFF): %.2fx\n' "$on" "$off" "$(awk -v a="$on" -v b="$off" 'BEGIN {print a / b}')"
