#!/usr/bin/env bash
# configure_asan.sh BUILD_DIR: configures the AddressSanitizer + UndefinedBehaviorSanitizer build, with
# clang (libFuzzer comes with it), tests and fuzz targets enabled: scripts/sanitize.sh asan builds and
# runs the suites there, scripts/fuzz.sh the fuzz targets. A folder configured with another compiler
# starts afresh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:?usage: scripts/configure_asan.sh BUILD_DIR}"
command -v clang++ > /dev/null || { echo "configure_asan.sh: clang++ missing (scripts/setup.sh --sanitizers)" >&2; exit 2; }
CXX_PATH="$(command -v clang++)"
if [ -f "$BUILD/CMakeCache.txt" ] && ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++" "$BUILD/CMakeCache.txt"; then
  echo "configure_asan.sh: $BUILD was configured with another compiler; configuring afresh"
  rm -rf "$BUILD/CMakeCache.txt" "$BUILD/CMakeFiles"
fi
mkdir -p "$BUILD"
# -O1 with line tables (CMakeLists.txt adds them for sanitizer builds): what the reports need.
CC=clang CXX="$CXX_PATH" cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
  -DBALERBENCH_SANITIZE=address,undefined -DBALERBENCH_FUZZ=ON -DBALERBENCH_BUILD_BENCHMARKS=OFF \
  > "$BUILD/configure.log" 2>&1 || { tail -20 "$BUILD/configure.log"; exit 1; }
