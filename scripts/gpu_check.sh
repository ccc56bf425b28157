#!/usr/bin/env bash
# gpu_check.sh: everything a lent GPU machine is for, in stages that each fit
# one device call (10 minutes); logs and results go under $OUT.
#
#   scripts/gpu_check.sh build   build against PyTorch's LibTorch (torch.utils.cmake_prefix_path)
#                                with the dependencies in .carry/ (scripts/gpu_carry.sh prepares it)
#   scripts/gpu_check.sh test    ctest: the gpu label, then unit and integration
#   scripts/gpu_check.sh bench   1000 epochs of 520,000 CMS-like rows at batch 512 in fp32 and
#                                amp_fp16 (EPOCHS=N for fewer), and Baler's Python loop on the
#                                same GPU (bench_gpu_python.py), at the power limit in force
#   scripts/gpu_check.sh gputest ctest -L gpu only
#   scripts/gpu_check.sh sweep   experiments/gpu_amp_tta.json (520,000 rows, 20% validation, to 10%
#                                relative error; fp32 and three AMP modes at batch 512 and 4096) into
#                                $OUT/gpu_amp_tta.sqlite, its reports, and each trial's evaluation share
#   scripts/gpu_check.sh kernels the kernels of one training step, ours against PyTorch's one graph per
#                                step, per precision (Nsight Compute, one duration metric per kernel)
#   scripts/gpu_check.sh amp     scripts/bench_gpu_amp.py: our engine against PyTorch eager, one graph
#                                per step, and torch.compile inside the graph, per precision
#   scripts/gpu_check.sh protocol experiments/gpu_protocol.json (issue 39): AMP against FP32 with the
#                                measurement protocol on (MaxPower from the GPU, the thermal wait, windows
#                                of 60 meter updates and more), doctor's power check, and the tables
#                                for publication (precision, cost, convergence, trials) under
#                                $OUT/protocol/, headed by the GPU, driver and limits as found. ROWS,
#                                REPEATS, EPOCHS, TARGET and DEVICE override the experiment's
#   scripts/gpu_check.sh state   the GPU as balerbench reads it (system --json, doctor --json) beside
#                                nvidia-smi -q, and a 2-trial sweep's provenance (gpu_state.py compares)
#   scripts/gpu_check.sh fused   the fused CUDA engine (issue 38, docs/fused_cuda.md), in one call: the
#                                build with BALERBENCH_CUDA_ENGINE=ON (balerbench, gpu_tests and the
#                                registry's unit test only), its kernels' registers and shared memory
#                                (ptxas), its gpu tests, compute-sanitizer memcheck, racecheck and
#                                synccheck on a short run, then the benchmark (below) with what is
#                                left of the call's FUSED_BUDGET_S=570; logs and results under $OUT/fused/
#   scripts/gpu_check.sh fusedbench  the fused stage's benchmark alone (same warm machine, build-gpu/):
#                                scripts/bench_fused_cuda.py, one precision at a time (PRECISIONS, default
#                                fp32 tf32 amp_bf16 amp_fp16: fused, libtorch, PyTorch graph and
#                                torch.compile+graph; 1000 epochs from WINDOW_S-second windows, default
#                                30; about 3 minutes each), as many as FUSEDBENCH_BUDGET_S=560 holds; it
#                                names the precisions left for the next call
#   scripts/gpu_check.sh interop the Baler interop tests with this machine's PyTorch (weights_only by
#                                default since 2.6), and a Baler project trained with c.device = "cuda";
#                                needs the real Baler at .peers/baler (git-ignored; copied from
#                                ../shared/peers/baler when missing, as gpu_carry.sh does) and carried
#
# Device tool: run(command="OUT=$OUT scripts/gpu_check.sh build test", carry=[".carry"]), then
# "scripts/gpu_check.sh bench" on the same warm machine (build-gpu/ stays there).
# Read-only on the GPU: nvidia-smi is only queried, never used to set anything.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$ROOT/output/gpu_check}"
BUILD="${BALERBENCH_BUILD_DIR:-$ROOT/build-gpu}"
# TORCH_PREFIX: a folder holding Torch/TorchConfig.cmake (default: PyTorch's, from python3).
# TARGETS: build only these (default: everything); scripts/check_carry_build.sh uses both.
TARGETS="${TARGETS:-}"
# The carried libraries (and theirs: libcpp-httplib needs libssl and brotli) for every program run here.
export LD_LIBRARY_PATH="$ROOT/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
JOBS="${JOBS:-$(nproc)}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
# PyTorch's wheels link parts of a newer libstdc++ into libtorch.so and export them. Programs built
# against it bind std::filesystem::remove_all (and others) to libtorch's copy, and the test programs'
# TempDir crashed on a null call there (PyTorch 2.11: 104 of 293 unit tests; 0 with the preload).
# Debian's LibTorch exports none, so this is for the GPU machine's PyTorch only.
# The real Baler is never committed: .peers/baler (git-ignored) is a copy of ../shared/peers/baler,
# made here when missing and that folder is beside the checkout (on a lent machine it is carried).
copy_baler_peer() {
  local src="$ROOT/../shared/peers/baler"
  [ -f "$ROOT/.peers/baler/baler/__init__.py" ] || [ ! -f "$src/baler/__init__.py" ] ||
    { mkdir -p "$ROOT/.peers" && rm -rf "$ROOT/.peers/baler" && cp -r "$src" "$ROOT/.peers/baler"; }
}
preload_libstdcxx() {
  local torch_lib std
  torch_lib="$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch.so"))' 2>/dev/null)" || return 0
  # grep reads all of nm's output (no -q): under pipefail, nm killed by SIGPIPE after an early
  # match made the test false, and the preload never happened (2026-11-25, PyTorch 2.11).
  if [ -f "$torch_lib" ] && nm -D --defined-only "$torch_lib" 2>/dev/null | grep '_ZNSt10filesystem.*remove_all' > /dev/null; then
    std="$(${CXX:-c++} -print-file-name=libstdc++.so.6)"
    [ -f "$std" ] && export LD_PRELOAD="$std${LD_PRELOAD:+:$LD_PRELOAD}" &&
      echo "libtorch.so exports std::filesystem: LD_PRELOAD=$std"
  fi
}
preload_libstdcxx
[ -d "$ROOT/.carry" ] || { echo "gpu_check.sh: .carry/ missing (run scripts/gpu_carry.sh here and carry it)" >&2; exit 2; }

gpu_state() {  # the GPU as found: name, driver, power limits (read only)
  if ! command -v nvidia-smi > /dev/null; then echo "gpu_check.sh: no nvidia-smi here (no GPU state to record)"; return; fi
  nvidia-smi --query-gpu=name,uuid,driver_version,power.limit,enforced.power.limit,power.default_limit,power.max_limit,clocks.max.sm,temperature.gpu \
    --format=csv > "$OUT/gpu_state.csv" 2>&1 || true
  cat "$OUT/gpu_state.csv"
}

stage_build() {
  local torch_prefix gtest_prefix="$BUILD/gtest-prefix"
  torch_prefix="${TORCH_PREFIX:-$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')}" ||
    { echo "no PyTorch (set TORCH_PREFIX to a folder holding Torch/TorchConfig.cmake)"; return 2; }
  if [ ! -f "$gtest_prefix/lib/cmake/GTest/GTestConfig.cmake" ] && [ ! -f "$gtest_prefix/lib64/cmake/GTest/GTestConfig.cmake" ]; then
    cmake -S "$ROOT/.carry/src/googletest" -B "$BUILD/gtest" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$gtest_prefix" -DCMAKE_POSITION_INDEPENDENT_CODE=ON > "$OUT/gtest_build.log" 2>&1 &&
      cmake --build "$BUILD/gtest" -j "$JOBS" --target install >> "$OUT/gtest_build.log" 2>&1 || { tail -20 "$OUT/gtest_build.log"; return 1; }
  fi
  # No pkg-config here: what Debian's .pc files would give comes from .carry/ (found on the prefix
  # path). RPATH rather than RUNPATH, so the carried libraries' own needs are found there too. Eigen too:
  # no CMake package there, its headers from .carry/include/eigen3.
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBALERBENCH_BUILD_BENCHMARKS=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON -DCMAKE_DISABLE_FIND_PACKAGE_Eigen3=ON \
    -DCMAKE_PREFIX_PATH="$ROOT/.carry;$torch_prefix;$gtest_prefix" -DBALERBENCH_PYTHON="$(command -v "$PY")" \
    -DCMAKE_BUILD_RPATH="$ROOT/.carry/lib" -DCMAKE_EXE_LINKER_FLAGS="-Wl,--disable-new-dtags" ${CMAKE_ARGS:-} \
    > "$OUT/cmake.log" 2>&1 || { tail -30 "$OUT/cmake.log"; return 1; }
  local targets=()
  for t in $TARGETS; do targets+=(--target "$t"); done
  cmake --build "$BUILD" -j "$JOBS" "${targets[@]}" > "$OUT/build.log" 2>&1 ||
    { grep -m20 -B2 -A6 "error" "$OUT/build.log"; return 1; }
  grep -q "BALERBENCH_WITH_CUDA=1" "$BUILD/harness/CMakeFiles/balerbench_harness.dir/flags.make" &&
    echo "build: OK, CUDA enabled" || echo "build: OK, but WITHOUT CUDA (TORCH_CUDA_LIBRARIES unset)"
}

stage_test() {
  (cd "$BUILD" && ctest -L gpu --output-on-failure > "$OUT/ctest_gpu.log" 2>&1); local g=$?
  (cd "$BUILD" && ctest -j "$JOBS" -L unit --output-on-failure > "$OUT/ctest_unit.log" 2>&1); local u=$?
  (cd "$BUILD" && ctest -j 4 -L integration -E MonitoringServers --output-on-failure > "$OUT/ctest_integration.log" 2>&1); local i=$?
  for f in gpu unit integration; do echo "ctest $f: $(grep -E 'tests passed|tests failed' "$OUT/ctest_$f.log")"; done
  grep -E "Skipped|\(Failed\)" "$OUT"/ctest_*.log | head -20
  return $(( g || u || i ))
}

stage_bench() {
  local bb="$BUILD/harness/balerbench" epochs="${EPOCHS:-1000}" rows="${ROWS:-520000}"
  local data="$BUILD/cms_${rows}.npz"
  [ -f "$data" ] || "$bb" data generate --kind cms --rows "$rows" --seed 0 --out "$data" > /dev/null
  cat > "$BUILD/gpu_bench.json" <<JSON
{"input_path": "$data", "model_name": "AE", "compression_ratio": 1.6, "epochs": $epochs, "batch_size": 512,
 "device": "cuda", "progress": "lines", "progress_interval_s": 30, "early_stopping": false, "lr_scheduler": false,
 "energy": {"meters": ["nvml"], "sample_hz": 10}}
JSON
  for p in fp32 amp_fp16; do
    "$bb" train --json --config "$BUILD/gpu_bench.json" --out "$BUILD/out_$p" --precision "$p" \
      > "$OUT/train_$p.json" 2> "$OUT/train_$p.log" || { tail -5 "$OUT/train_$p.log"; return 1; }
  done
  "$PY" "$ROOT/scripts/bench_gpu_python.py" --data "$data" --epochs 3 > "$OUT/python_loop.json" 2> "$OUT/python_loop.log" ||
    { tail -5 "$OUT/python_loop.log"; return 1; }
  "$PY" - "$OUT" "$epochs" <<'PYEOF'
import json, sys
out, epochs = sys.argv[1], int(sys.argv[2])
py = json.load(open(f"{out}/python_loop.json"))
rows = []
for p in ("fp32", "amp_fp16"):
    r = json.load(open(f"{out}/train_{p}.json"))
    t = r["train_s"]
    e = ((r.get("energy") or {}).get("total") or {}).get("total_energy_j")
    py_t = py["epoch_s"][p] * epochs
    rows.append((p, t, py_t, py_t / t, e, r["cuda_graph"].get("used"), r["final_train_loss"]))
print(f"GPU: {py['gpu']}; {epochs} epochs of {py['rows']} rows, batch 512; power limit as found (gpu_state.csv)")
print("| precision | balerbench train s | Python loop s (3-epoch median x epochs) | speed-up | energy J | CUDA graph | final loss |")
print("|---|---:|---:|---:|---:|---|---:|")
for p, t, pt, s, e, g, l in rows:
    print(f"| {p} | {t:.1f} | {pt:.0f} | {s:.1f}x | {e if e is None else round(e)} | {g} | {l:.4g} |")
PYEOF
}

stage_sweep() {
  local bb="$BUILD/harness/balerbench" db="$OUT/gpu_amp_tta.sqlite" exp="${EXPERIMENT:-$ROOT/experiments/gpu_amp_tta.json}"
  rm -f "$db"
  "$bb" run "$exp" --db "$db" --progress lines --tables none > "$OUT/sweep.log" 2>&1 ||
    { tail -20 "$OUT/sweep.log"; return 1; }
  rm -rf "$OUT/reports" && mkdir -p "$OUT/reports"
  for t in precision batch_size cost trials; do
    "$bb" report --db "$db" --experiment gpu_amp_tta --table "$t" --wide > "$OUT/reports/$t.md" 2>> "$OUT/sweep.log" || return 1
  done
  "$bb" report --db "$db" --experiment gpu_amp_tta --format json > "$OUT/reports/tables.json" 2>> "$OUT/sweep.log" || return 1
  cat "$OUT/reports/precision.md"
  # The evaluation's share of each trial's epochs (issue 13: under 5% on a GPU at 520k rows).
  "$PY" "$ROOT/scripts/eval_share.py" "$db" | tee "$OUT/reports/eval_share.md"
}

# The protocol experiment with the overrides asked for in the environment (a try on the CPU:
# DEVICE=cpu ROWS=4000 EPOCHS=3).
protocol_experiment() {
  "$PY" - "$ROOT/experiments/gpu_protocol.json" "$1" <<'PYEOF'
import json, os, sys
e = json.load(open(sys.argv[1]))
if os.environ.get("ROWS"): e["dataset"]["generator"]["rows"] = int(os.environ["ROWS"])
if os.environ.get("REPEATS"): e["sweep"]["repeats"] = int(os.environ["REPEATS"])
if os.environ.get("EPOCHS"): e["sweep"]["epochs"] = [int(os.environ["EPOCHS"])]
if os.environ.get("TARGET"): e["target"]["relative_error"] = float(os.environ["TARGET"])
if os.environ.get("DEVICE"): e["training"]["device"] = os.environ["DEVICE"]
json.dump(e, open(sys.argv[2], "w"), indent=2)
PYEOF
}

stage_protocol() {  # read only on the GPU: its limits and temperature are read, never set
  local bb="$BUILD/harness/balerbench" d="$OUT/protocol" exp="$BUILD/gpu_protocol.json" t
  local db="$d/gpu_protocol.sqlite"
  local r=(--db "$db" --experiment gpu_protocol)
  mkdir -p "$d" && rm -f "$db" "$db"-wal "$db"-shm
  protocol_experiment "$exp" || { echo "protocol: cannot write $exp"; return 1; }
  "$bb" doctor > "$d/doctor.txt" 2>&1; "$bb" doctor --json > "$d/doctor.json" 2> /dev/null
  "$bb" meters > "$d/meters.txt" 2>&1
  "$bb" run "$exp" --db "$db" --progress lines --tables none > "$d/sweep.log" 2>&1 ||
    { tail -20 "$d/sweep.log"; return 1; }
  for t in precision cost convergence trials; do
    "$bb" report "${r[@]}" --table "$t" --wide > "$d/$t.md" 2>> "$d/sweep.log" || return 1
  done
  "$bb" report "${r[@]}" --table precision --wide --min-effect 2 > "$d/precision_min_effect_2pct.md" 2>> "$d/sweep.log"
  "$bb" report "${r[@]}" --format json > "$d/tables.json" 2>> "$d/sweep.log" || return 1
  {
    echo "# experiments/gpu_protocol.json on $(hostname), $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "Command: \`scripts/gpu_check.sh protocol\` (ROWS=${ROWS:-} REPEATS=${REPEATS:-} EPOCHS=${EPOCHS:-} TARGET=${TARGET:-} DEVICE=${DEVICE:-})."
    echo "The GPU as found (nvidia-smi, read only):"
    echo
    sed 's/^/    /' "$OUT/gpu_state.csv" 2> /dev/null || echo "    (no nvidia-smi here)"
    echo
    echo "Power check (balerbench doctor):"
    echo
    grep "power reading" "$d/doctor.txt" | sed 's/^ */    /'
  } > "$d/README.md"
  cat "$d/README.md" "$d/precision.md" "$d/cost.md" "$d/convergence.md"
}

stage_amp() {
  "$PY" "$ROOT/scripts/bench_gpu_amp.py" --balerbench "$BUILD/harness/balerbench" --rows "${ROWS:-520000}" \
    --epochs "${AMP_EPOCHS:-4}" --rounds "${ROUNDS:-3}" --variants "${VARIANTS:-balerbench,eager,graph,compiled}" --json "$OUT/bench_gpu_amp.json" \
    > "$OUT/bench_gpu_amp.md" 2> "$OUT/bench_gpu_amp.log" || { tail -20 "$OUT/bench_gpu_amp.log"; return 1; }
  cat "$OUT/bench_gpu_amp.md"
}

stage_kernels() {
  local bb="$BUILD/harness/balerbench" data="$BUILD/cms_51200.npz" ncu="${NCU:-ncu}"
  [ -f "$data" ] || "$bb" data generate --kind cms --rows 51200 --seed 0 --out "$data" > /dev/null
  # --clock-control none: ncu leaves the GPU's clocks as they are (by default it locks them to base).
  local common=(--clock-control none --graph-profiling node --metrics gpu__time_duration.sum --launch-count 240 --csv --page raw)
  for p in ${KERNEL_PRECISIONS:-fp32 amp_fp16_noscale amp_fp16}; do
    cat > "$BUILD/kernels.json" <<JSON
{"input_path": "$data", "model_name": "AE", "compression_ratio": 1.6, "epochs": 2, "batch_size": 512, "device": "cuda",
 "progress": "none", "early_stopping": false, "lr_scheduler": false, "apply_normalization": false}
JSON
    # 100 steps per epoch: skip the first epoch (warm-up, capture), record 240 kernels of replays.
    "$ncu" "${common[@]}" --launch-skip 7000 --log-file "$OUT/kernels_ours_$p.csv" \
      "$bb" train --json --config "$BUILD/kernels.json" --out "$BUILD/out_kernels" --precision "$p" > /dev/null 2>> "$OUT/kernels.log" ||
      echo "ncu on balerbench $p failed (kernels.log)"
    "$ncu" "${common[@]}" --launch-skip 3000 --log-file "$OUT/kernels_torch_$p.csv" \
      "$PY" "$ROOT/scripts/bench_gpu_amp.py" --rows 51200 --epochs 2 --rounds 1 --variants graph --precisions "$p" \
      > /dev/null 2>> "$OUT/kernels.log" || echo "ncu on PyTorch $p failed (kernels.log)"
  done
  "$PY" "$ROOT/scripts/kernel_summary.py" "$OUT"/kernels_*.csv | tee "$OUT/kernels_summary.md"
}

stage_state() {  # read only: nvidia-smi is queried, balerbench reads NVML
  local bb="$BUILD/harness/balerbench" d="$OUT/state"
  mkdir -p "$d"
  nvidia-smi -q > "$d/nvidia_smi_q.txt" 2>&1
  "$bb" system --json > "$d/system.json" 2> "$d/system.log"; echo "system --json: exit $?"
  "$bb" doctor --json > "$d/doctor.json" 2> "$d/doctor.log"; echo "doctor --json: exit $? (1 when it lists hazards)"
  cat > "$BUILD/state_sweep.json" <<JSON
{"schema_version": 1, "name": "gpu_state",
 "description": "Two short CUDA trials whose provenance records the GPU's state and software.",
 "dataset": {"generator": {"kind": "cms", "rows": 20000, "seed": 0}},
 "model": {"name": "AE", "compression_ratio": 1.6},
 "training": {"lr": 0.001, "device": "cuda", "progress_interval_s": 30},
 "sweep": {"batch_size": [512], "precision": ["fp32", "amp_bf16"], "power_limit_w": [null], "epochs": [2], "repeats": 1},
 "energy": {"meters": ["auto"], "sample_hz": 10, "idle_baseline_s": 0, "cooldown_s": 0},
 "cost": {"eta": [0.5]}}
JSON
  rm -f "$d/gpu_state.sqlite"
  "$bb" run "$BUILD/state_sweep.json" --db "$d/gpu_state.sqlite" --progress none --tables trials > "$d/sweep.log" 2>&1
  echo "sweep: exit $?"
  "$PY" "$ROOT/scripts/gpu_state.py" "$d" | tee "$d/comparison.md"
  tar czf "$OUT/state.tgz" -C "$OUT" state && rm -rf "$d"
}

# The CUDA toolkit's tools: on PATH, else under CUDA_HOME or /usr/local/cuda.
cuda_tool() {
  command -v "$1" 2> /dev/null || { local d="${CUDA_HOME:-/usr/local/cuda}/bin/$1"; [ -x "$d" ] && echo "$d"; }
}

stage_fused() {  # read only on the GPU: nothing here sets a limit, clock or mode
  local d="$OUT/fused" nvcc sanitizer t status=0 start=$SECONDS
  mkdir -p "$d"
  nvcc="$(cuda_tool nvcc)" || { echo "fused: no nvcc here (set CUDA_HOME)"; return 2; }
  echo "fused: nvcc $nvcc"; "$nvcc" --version | tail -1
  CMAKE_ARGS="-DBALERBENCH_CUDA_ENGINE=ON -DCMAKE_CUDA_COMPILER=$nvcc" \
    TARGETS="balerbench gpu_tests unit_tests_config_reference" stage_build || { cp "$OUT"/cmake.log "$OUT"/build.log "$d"/ 2>/dev/null; return 1; }
  grep "fused CUDA engine" "$OUT/cmake.log" | tee "$d/engine_configured.txt"
  # Registers, spills and shared memory per kernel, as built (sm_90 and sm_80; fp32 and tensor cores).
  for arch in 90 80; do
    for f in fused_cuda_kernels fused_cuda_mma; do
      "$nvcc" -std=c++17 -O3 -I"$ROOT" -gencode "arch=compute_$arch,code=sm_$arch" -Xptxas -v -c \
        "$ROOT/harness/engine/cuda/$f.cu" -o "$d/${f}_sm$arch.o" >> "$d/ptxas_sm$arch.txt" 2>&1
    done
  done
  grep -E "Compiling entry|Used" "$d/ptxas_sm90.txt" | sed 's/_ZN10balerbench10fused_cuda[^ ]*_\([a-z_]*kernel\)[^ ]*/\1/'
  # The floors the step stands on, on this GPU: launches one by one and in a graph, a grid-wide sync.
  "$nvcc" -std=c++17 -O2 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 "$ROOT/scripts/gpu_floors.cu" -o "$d/gpu_floors" > "$d/gpu_floors_build.log" 2>&1 &&
    timeout 60 "$d/gpu_floors" > "$d/floors.md" 2>&1; cat "$d/floors.md"
  (cd "$BUILD" && timeout 120 tests/unit_tests_config_reference --gtest_filter='FusedCudaEntry.*' > "$d/unit_registry.log" 2>&1) || status=1
  tail -1 "$d/unit_registry.log"
  local tests_limit=$(( ${FUSED_BUDGET_S:-570} - (SECONDS - start) - 150 ))
  [ "$tests_limit" -le 300 ] || tests_limit=300
  [ "$tests_limit" -ge 60 ] || tests_limit=60
  # fp32 (FusedCuda.*) and the tensor-core modes (FusedCudaMma.*: tf32, amp_bf16, amp_fp16_noscale, amp_fp16).
  (cd "$BUILD" && timeout "$tests_limit" tests/gpu_tests --gtest_filter='FusedCuda.*:FusedCudaMma.*' > "$d/gpu_tests.log" 2>&1) || status=1
  grep -E "^\[  (     OK|FAILED|  SKIPPED) |engine status|epoch [0-9]+:|largest|skipped before|PASSED|FAILED " "$d/gpu_tests.log" | head -80
  # compute-sanitizer, memcheck first (the most telling), then racecheck, then synccheck. Each run is
  # checked against the time left of the call (FUSED_BUDGET_S from the stage's start) and skipped,
  # with a line in the log, when less than SANITIZER_MIN_S (default 120 s: a run and a margin) is left.
  sanitizer="$(cuda_tool compute-sanitizer)" || { echo "fused: no compute-sanitizer here"; status=1; }
  if [ -n "$sanitizer" ]; then
    local padding=()
    # --padding puts unused bytes after each allocation so an overrun lands outside it (not every
    # version has the flag: asked at run time).
    "$sanitizer" --help 2> /dev/null | grep -q -- --padding && padding=(--padding 64)
    for t in memcheck racecheck synccheck; do
      local left=$(( ${FUSED_BUDGET_S:-570} - (SECONDS - start) ))
      if [ "$left" -lt "${SANITIZER_MIN_S:-120}" ]; then
        echo "compute-sanitizer $t: skipped, ${left} s left of FUSED_BUDGET_S (under ${SANITIZER_MIN_S:-120} s)" | tee "$d/sanitizer_$t.log"
        status=1; continue
      fi
      local limit=$(( left - 30 < 150 ? left - 30 : 150 )) extra=() envs=()
      if [ "$t" = memcheck ]; then
        # Without LibTorch's caching allocator every tensor is its own cudaMalloc, so an overrun past a
        # tensor is past an allocation and memcheck sees it.
        extra=("${padding[@]}"); envs=(PYTORCH_NO_CUDA_MEMORY_CACHING=1)
      fi
      echo "compute-sanitizer $t: ${extra[*]} ${envs[*]} (limit ${limit} s)" > "$d/sanitizer_$t.log"
      (cd "$BUILD" && env "${envs[@]}" timeout "$limit" "$sanitizer" --tool "$t" "${extra[@]}" --error-exitcode 3 \
         tests/gpu_tests --gtest_filter='FusedCuda.ShortRunForTheSanitizers:FusedCudaMma.ShortRunForTheSanitizers' \
         >> "$d/sanitizer_$t.log" 2>&1)
      local rc=$?
      echo "compute-sanitizer $t: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$d/sanitizer_$t.log" | tail -1)"
      [ $rc -eq 0 ] || status=1
    done
  fi
  # The benchmark, one precision at a time (about 3 minutes each: four variants, 30 s windows,
  # torch.compile), with what is left of the call's FUSED_BUDGET_S; the rest waits for a
  # `scripts/gpu_check.sh fusedbench` call, which says which precisions are left.
  local left=$(( ${FUSED_BUDGET_S:-570} - (SECONDS - start) ))
  FUSEDBENCH_BUDGET_S=$left stage_fusedbench || status=1
  return $status
}

stage_fusedbench() {  # scripts/bench_fused_cuda.py on the build of stage_fused, a precision per run
  local d="$OUT/fused" start=$SECONDS status=0 left p
  local todo=(${PRECISIONS:-fp32 tf32 amp_bf16 amp_fp16})
  todo=(${todo[@]//,/ })
  mkdir -p "$d"
  [ -x "$BUILD/harness/balerbench" ] || { echo "fusedbench: no $BUILD/harness/balerbench (run the fused stage first)"; return 2; }
  while [ ${#todo[@]} -gt 0 ]; do
    p="${todo[0]}"
    left=$(( ${FUSEDBENCH_BUDGET_S:-560} - (SECONDS - start) ))
    if [ "$left" -lt "${BENCH_PRECISION_S:-200}" ]; then
      echo "fusedbench: ${left} s left, under BENCH_PRECISION_S=${BENCH_PRECISION_S:-200}: next call: PRECISIONS='${todo[*]}' scripts/gpu_check.sh fusedbench"
      return 1
    fi
    "$PY" "$ROOT/scripts/bench_fused_cuda.py" --balerbench "$BUILD/harness/balerbench" --rows "${ROWS:-520000}" \
      --window-s "${WINDOW_S:-30}" --precisions "$p" --json "$d/bench_fused_cuda_$p.json" \
      > "$d/bench_fused_cuda_$p.md" 2> "$d/bench_fused_cuda_$p.log" || { tail -20 "$d/bench_fused_cuda_$p.log"; status=1; }
    cat "$d/bench_fused_cuda_$p.md"
    todo=("${todo[@]:1}")
  done
  return $status
}

stage_interop() {
  local bb="$BUILD/harness/balerbench" d="$OUT/interop" peer="${BALERBENCH_BALER_PEER:-$ROOT/.peers/baler}"
  mkdir -p "$d"
  copy_baler_peer
  [ -f "$peer/baler/__init__.py" ] || { echo "interop: no Baler at $peer (run scripts/gpu_carry.sh beside ../shared, carry .peers)"; return 2; }
  "$PY" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())' | tee "$d/python.txt"
  (cd "$BUILD" && BALERBENCH_BALER_PYTHON="$(command -v "$PY")" BALERBENCH_BALER_PEER="$peer" \
     ctest -R 'BalerInterop|BalerProjectCli|TorchSave' --output-on-failure > "$d/ctest_interop.log" 2>&1)
  local t=$?
  echo "ctest interop: $(grep -E 'tests passed|tests failed' "$d/ctest_interop.log")"
  grep -E "Skipped|\(Failed\)" "$d/ctest_interop.log" | head
  # A Baler project with balerbench's own key c.device = "cuda": balerbench trains and compresses on
  # the GPU, Baler (on this machine's PyTorch, its device chosen by Baler) decompresses, and back.
  local w="$d/project" data="$BUILD/cms_2000.npz" types
  [ -f "$data" ] || "$bb" data generate --kind cms --rows 2000 --seed 0 --out "$data" > /dev/null
  types="$("$PY" -c 'import numpy as n; d=n.load("'"$data"'"); print(len(d["names"]))')"
  rm -rf "$w" && mkdir -p "$w/workspaces/WS/P/config" "$w/workspaces/WS/data"
  cp "$data" "$w/workspaces/WS/data/cms.npz"
  cat > "$w/workspaces/WS/P/config/P_config.py" <<PYCFG
def set_config(c):
    c.input_path = "workspaces/WS/data/cms.npz"
    c.data_dimension = 1
    c.compression_ratio = 1.6
    c.apply_normalization = True
    c.model_name = "AE"
    c.model_type = "dense"
    c.epochs = 3
    c.lr = 0.001
    c.batch_size = 512
    c.early_stopping = False
    c.lr_scheduler = False
    c.test_size = 0
    c.extra_compression = False
    c.intermittent_model_saving = False
    c.separate_model_saving = False
    c.deterministic_algorithm = True
    c.custom_norm = False
    c.reg_param = 0.001
    c.RHO = 0.05
    c.mse_avg = False
    c.mse_sum = True
    c.emd = False
    c.l1 = True
    c.activation_extraction = False
    c.save_error_bounded_deltas = False
    c.device = "cuda"
PYCFG
  local ok=0
  (cd "$w" && for m in train compress decompress; do
     "$bb" "$m" --json --baler-project workspaces/WS/P > "$d/bb_$m.json" 2> "$d/bb_$m.log" || { echo "balerbench $m: failed"; tail -5 "$d/bb_$m.log"; exit 1; }
   done) || ok=1
  "$PY" - "$d" <<'PYEOF' | tee "$d/device.txt"
import json, sys
d = sys.argv[1]
for m in ("train", "compress", "decompress"):
    try:
        r = json.load(open(f"{d}/bb_{m}.json"))
        print(f"balerbench {m}: device {r.get('device')}, engine {r.get('engine')}")
    except Exception as e:
        print(f"balerbench {m}: no report ({e})")
PYEOF
  cp "$w/workspaces/WS/P/output/decompressed_output/decompressed.npz" "$d/bb_decompressed.npz" 2>/dev/null
  # Baler decompresses balerbench's compressed file on this PyTorch; then both decompressions agree.
  (cd "$w" && PYTHONPATH="$peer" "$PY" -m baler --mode decompress --project WS P > "$d/baler_decompress.log" 2>&1) ||
    { echo "Baler decompress failed"; tail -5 "$d/baler_decompress.log"; ok=1; }
  "$PY" - "$d/bb_decompressed.npz" "$w/workspaces/WS/P/output/decompressed_output/decompressed.npz" <<'PYEOF' | tee -a "$d/device.txt"
import sys, numpy as np, torch
a, b = (np.load(p)["data"] for p in sys.argv[1:3])
print(f"Baler's decompress of balerbench's cuda-trained files vs balerbench's: shape {a.shape}, "
      f"max abs {np.max(np.abs(a - b)):.3g}, max rel {np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)):.3g}")
PYEOF
  "$PY" "$ROOT/tests/integration/baler_interop.py" model "$w/workspaces/WS/P/output/compressed_output/model.pt" | tee -a "$d/device.txt"
  tar czf "$OUT/interop.tgz" -C "$OUT" interop && rm -rf "$d"
  return $(( t || ok ))
}

gpu_state
status=0
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build test)
for stage in "${stages[@]}"; do
  case "$stage" in
    build) stage_build || status=1 ;;
    test) stage_test || status=1 ;;
    bench) stage_bench | tee "$OUT/bench_summary.md" || status=1 ;;
    sweep) stage_sweep || status=1 ;;
    protocol) stage_protocol || status=1 ;;
    amp) stage_amp || status=1 ;;
    kernels) stage_kernels || status=1 ;;
    state) stage_state || status=1 ;;
    interop) stage_interop || status=1 ;;
    fused) stage_fused || status=1 ;;
    fusedbench) stage_fusedbench || status=1 ;;
    gputest) (cd "$BUILD" && ctest -L gpu --output-on-failure > "$OUT/ctest_gpu.log" 2>&1) || status=1
             grep -E "tests passed|tests failed|Failed|Skipped" "$OUT/ctest_gpu.log" ;;
    *) echo "gpu_check.sh: unknown stage '$stage' (build, test, gputest, bench, sweep, protocol, amp, kernels, state, interop, fused, fusedbench)" >&2; exit 2 ;;
  esac
done
exit $status
