#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in build-asan/ (the folder
# of scripts/sanitize.sh asan, so one instrumented build of the library serves both), and runs
# each on its seeds: the hand-written ones in fuzz/corpus/<target>/, and those made here at run time
# (NumPy's .npy and .npz files by fuzz/make_seeds.py; the shipped experiments and run configs).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   each target for SECONDS (default 30; CI's bounded run),
#                                           stopping early after RUNS executions (env, default 1000000)
# Targets: fuzz_npy fuzz_npz fuzz_run_config fuzz_experiment fuzz_wattmeter fuzz_powercap fuzz_merge
# fuzz_zeus_trace fuzz_report_text
# (default: all).
# A finding stops its target: the input is written to build-asan/artifacts/; turn it into a regression
# test with the input under tests/fixtures/. Installs Debian's clang and libclang-rt-dev when missing
# (scripts/setup.sh --sanitizers); the normal build does not need them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BALERBENCH_ASAN_BUILD_DIR:-$ROOT/build-asan}"  # shared with scripts/sanitize.sh asan
SECONDS_EACH="${1:-30}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] &&
  TARGETS=(fuzz_npy fuzz_npz fuzz_run_config fuzz_experiment fuzz_wattmeter fuzz_powercap fuzz_merge fuzz_zeus_trace
           fuzz_report_text)
RUNS="${RUNS:-1000000}"
"$ROOT/scripts/setup.sh" --sanitizers --packages-only
"$ROOT/scripts/configure_asan.sh" "$BUILD"
mkdir -p "$BUILD/artifacts"
targets=()
for t in "${TARGETS[@]}"; do targets+=(--target "$t"); done
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" "${targets[@]}" > "$BUILD/fuzz-build.log" 2>&1 ||
  { grep -m20 -B2 -A6 error "$BUILD/fuzz-build.log"; exit 1; }
# Seeds that are data files or copies are made here, not committed: NumPy writes the .npy and .npz
# seeds (fuzz/make_seeds.py), and the shipped experiments and run configs seed their parsers.
rm -rf "$BUILD/seeds" && mkdir -p "$BUILD/seeds/fuzz_experiment" "$BUILD/seeds/fuzz_run_config" "$BUILD/seeds/fuzz_merge"
"${PYTHON:-/usr/bin/python3}" "$ROOT/fuzz/make_seeds.py" "$BUILD/seeds" ||
  echo "fuzz.sh: no NumPy seeds (${PYTHON:-/usr/bin/python3} with numpy missing); the npy and npz targets start from nothing" >&2
cp "$ROOT/tests/fixtures/store_v1.sqlite" "$BUILD/seeds/fuzz_merge/"  # schema 1: migrated, then merged
# Hostile copies of it (issue 50): text in a number's column, a time beyond the year 9999, an experiment
# name with a bidirectional override. Each must be an InputError naming its column.
"${PYTHON:-/usr/bin/python3}" - "$ROOT/tests/fixtures/store_v1.sqlite" "$BUILD/seeds/fuzz_merge" <<'PY' ||
import shutil, sqlite3, sys
source, out = sys.argv[1], sys.argv[2]
for name, sql in [("text_in_a_number.sqlite", "update trials set train_s='abc'"),
                  ("time_beyond_9999.sqlite", "update trials set started_unix_s=1e300"),
                  ("bidi_name.sqlite", "update trials set experiment='gnp' || char(8238) || 'fdp'; "
                                       "update experiments set name='gnp' || char(8238) || 'fdp'")]:
    shutil.copy(source, out + "/" + name)
    c = sqlite3.connect(out + "/" + name)
    c.executescript(sql)
    c.close()
PY
  echo "fuzz.sh: no hostile merge seeds (${PYTHON:-/usr/bin/python3} without sqlite3)" >&2
# Zeus's traces where they lie (../shared, never copied into the project): the head of each file, behind
# the byte that names it a train (0) or power (1) trace, and a pair to replay (2, the two split at '\f').
ZEUS="$ROOT/../shared/data/zeus_nsdi23"
if [ -f "$ZEUS/summary_train.csv" ]; then
  mkdir -p "$BUILD/seeds/fuzz_zeus_trace"
  { printf '\000'; head -n 60 "$ZEUS/summary_train.csv"; } > "$BUILD/seeds/fuzz_zeus_trace/train"
  for p in "$ZEUS"/summary_power_*.csv; do
    { printf '\001'; head -n 60 "$p"; } > "$BUILD/seeds/fuzz_zeus_trace/$(basename "$p" .csv)"
  done
  { printf '\002'; grep -E '^(dataset|sentiment140),' "$ZEUS/summary_train.csv" | grep -E '^dataset|,0.84,'; printf '\f';
    grep -E '^(dataset|sentiment140),' "$ZEUS/summary_power_v100.csv"; } > "$BUILD/seeds/fuzz_zeus_trace/pair"
fi
for f in "$ROOT"/experiments/*.json; do
  if grep -q '"schema_version"' "$f"; then cp "$f" "$BUILD/seeds/fuzz_experiment/"; else cp "$f" "$BUILD/seeds/fuzz_run_config/"; fi
done
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
printf '| target | seconds | executions | corpus | result |\n|---|---:|---:|---:|---|\n' > "$BUILD/fuzz-summary.md"
for t in "${TARGETS[@]}"; do
  work="$BUILD/corpus/$t"
  mkdir -p "$work"
  cp -n "$ROOT/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true  # hand-written seeds
  cp -n "$BUILD/seeds/$t/"* "$work/" 2>/dev/null || true        # NumPy's files and the shipped configs
  log="$BUILD/$t.log"
  if "$BUILD/fuzz/$t" "$work" -max_total_time="$SECONDS_EACH" -runs="$RUNS" -rss_limit_mb=2048 \
       -artifact_prefix="$BUILD/artifacts/$t-" -print_final_stats=1 > "$log" 2>&1; then
    result="no finding"
  else
    result="FINDING (see $log and $BUILD/artifacts/)"
    status=1
  fi
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo '?')"
  secs="$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' || echo "$SECONDS_EACH")"
  printf '| %s | %s | %s | %s | %s |\n' "$t" "$secs" "$execs" "$(ls "$work" | wc -l)" "$result" >> "$BUILD/fuzz-summary.md"
done
cat "$BUILD/fuzz-summary.md"
exit $status
