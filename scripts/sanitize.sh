#!/usr/bin/env bash
# sanitize.sh: the test suites under LLVM/GCC sanitizers, in their own build folders.
#
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer, with clang: build-asan/, then
#                              the unit suite (each program's tests in two processes: tests/CMakeLists.txt)
#                              and the integration suite (every test, or half of them: ASAN_HALF=0|1,
#                              below). The same folder holds the libFuzzer targets (scripts/fuzz.sh).
#   scripts/sanitize.sh tsan   ThreadSanitizer: build-tsan/, then the two test programs whose tests run
#                              the threads beside training: the sampler and meters, sessions,
#                              LiveMetrics, the Prometheus server and the InfluxDB exporter
#                              (unit_tests_energy), the power-limit guard and its journal
#                              (unit_tests_sweep); and the fused engine's shard pool, governor and
#                              threaded engine tests (unit_tests_torch, filtered)
#
# What is left out, and why:
#   - LibTorch, OpenBLAS and the Debian libraries are not instrumented (prebuilt). ASan still checks
#     every access our code makes; TSan cannot see the synchronisation inside LibTorch's thread
#     pools, so the tsan run keeps to tests that start no LibTorch parallel work (ATen single-threaded:
#     OMP_NUM_THREADS=1), and to the suites whose threads are ours.
#   - MonitoringServers (real Prometheus and InfluxDB servers) and ReportPage (the HTML report in a
#     headless browser: the page's script, not our C++, is what it tests) run in the normal build only;
#     the C++ that writes the page runs under ASan in the unit and CLI tests. So does ReadmeTour (the
#     README's tour run as written, a check of the documentation, some minutes of training under ASan):
#     every command it runs is run under ASan by the CLI tests.
#   - BalerInterop (the real Baler in Python: its minutes are Python's, which ASan does not see; the C++
#     side of the same files runs under ASan in BalerProjectCli and the unit tests) runs in the normal
#     build only; PrecisionNumerics' two long numerics tests (30 epochs in each precision, the step's
#     code the same as the engine tests' few epochs) skip themselves under ASan.
#   - The integration suite: half of it per CI run (ASAN_HALF, below).
#   - ASan's leak checker is off: LibTorch keeps process-lifetime allocations (its op registry) that
#     it reports as leaks at exit.
# Extra arguments go to ctest (asan) or to the test programs (tsan, e.g. --gtest_filter=...). Under
# asan a unit program is two ctest entries (NAME.shard0 and NAME.shard1), so ctest's -R selects whole
# programs' halves there; with -R, leave ASAN_HALF at all (a half of a filtered list may be empty).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KIND="${1:?usage: scripts/sanitize.sh asan|tsan [ctest args]}"
shift
JOBS="${JOBS:-$(nproc)}"
case "$KIND" in
  asan) BUILD="${BALERBENCH_ASAN_BUILD_DIR:-$ROOT/build-asan}" ;;
  tsan) BUILD="$ROOT/build-tsan" ;;
  *) echo "sanitize.sh: unknown kind '$KIND' (asan, tsan)" >&2; exit 2 ;;
esac
case "${ASAN_HALF:-all}" in
  all | 0 | 1) ;;
  *) echo "sanitize.sh: ASAN_HALF is 0, 1 or all, not '$ASAN_HALF'" >&2; exit 2 ;;
esac
"$ROOT/scripts/setup.sh" --sanitizers --packages-only
if [ "$KIND" = asan ]; then
  "$ROOT/scripts/configure_asan.sh" "$BUILD"
else
  mkdir -p "$BUILD"
  # Without precompiled headers and without the folders' unity groups (BALERBENCH_PCH=OFF,
  # BALERBENCH_UNITY=OFF): every library source that does not include LibTorch then compiles alone from
  # its own includes, a check that each includes what it uses, which the other builds cannot make.
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBALERBENCH_SANITIZE=thread -DBALERBENCH_PCH=OFF \
    -DBALERBENCH_UNITY=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
    -DBALERBENCH_BUILD_BENCHMARKS=OFF > "$BUILD/sanitize-cmake.log" 2>&1 || { tail -20 "$BUILD/sanitize-cmake.log"; exit 1; }
fi
cd "$BUILD"
if [ "$KIND" = asan ]; then
  cmake --build . -j "$JOBS" > "$BUILD/sanitize-build.log" 2>&1 || { grep -m20 -B2 -A6 error "$BUILD/sanitize-build.log"; exit 1; }
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  excluded="MonitoringServers|ReportPage.InARealBrowser|ReadmeTour|BalerInterop"
  status=0
  ctest -j "$JOBS" -L unit -E "$excluded" --output-on-failure "$@" || status=1
  # The integration tests: each runs the CLI a few times, and each run of it spends some 2 s starting
  # under ASan, so all of them take some 24 min on 2 cores. ASAN_HALF=0 or 1 runs every other one of
  # those left after -L and -E (ctest -I), ASAN_HALF=all (the default) every one. .ci/run draws the
  # half from the commit's hash.
  if [ "${ASAN_HALF:-all}" = all ]; then
    ctest -j "$JOBS" -L integration -E "$excluded" --output-on-failure "$@" || status=1
  else
    echo "== the integration tests' half $ASAN_HALF (every other one; ASAN_HALF=$((1 - ASAN_HALF)) runs the rest)"
    ctest -j "$JOBS" -L integration -E "$excluded" -I "$((1 + ASAN_HALF)),,2" --output-on-failure "$@" || status=1
  fi
  exit $status
fi
cmake --build . -j "$JOBS" --target unit_tests_energy unit_tests_sweep unit_tests_torch > "$BUILD/sanitize-build.log" 2>&1 ||
  { grep -m20 -B2 -A6 error "$BUILD/sanitize-build.log"; exit 1; }
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
export OMP_NUM_THREADS=1
# The two programs whose tests run our threads: meters and the sampler, sessions, LiveMetrics, the
# Prometheus server and InfluxDB exporter (unit_tests_energy); the power-limit guard, its journal and
# the optimiser, the results database (unit_tests_sweep).
status=0
for t in unit_tests_energy unit_tests_sweep; do
  echo "== $t under ThreadSanitizer"
  "./tests/$t" "$@" || status=1
done
# The fused engine's own threads (std::threads, which TSan sees): the shard pool, its governor, and
# the engine's tests that run shards on them. LibTorch's OpenMP stays at one thread (above).
if [ $# -eq 0 ]; then
  echo "== unit_tests_torch (the fused engine's threads) under ThreadSanitizer"
  ./tests/unit_tests_torch --gtest_filter='ShardPool.*:ThreadGovernor.*:FusedEngine.TheThreads*:FusedEngine.AdamInParts*:FusedEngine.TwoWorkers*:FusedEngine.TheThreadCount*' ||
    status=1
fi
exit $status
