#!/usr/bin/env bash
# setup.sh: install what balerbench needs from Debian's packages (idempotent:
# one `apt-get update`, only when something is missing), make sure LibTorch runs
# on OpenBLAS rather than the reference BLAS, install the HTML report's plotting
# library from the npm registry (npm ci, only when it is missing or its lock file
# changed), and build in Release.
#
# LibTorch: a CUDA-enabled PyTorch that python3 can import (pip or conda) is used when there is one
# (GPU nodes); otherwise Debian's CPU LibTorch (libtorch-dev). Choose explicitly with --torch:
#
#   scripts/setup.sh                       # auto: PyTorch's CUDA LibTorch if found, else Debian's
#   scripts/setup.sh --torch debian        # Debian's CPU LibTorch
#   scripts/setup.sh --torch /path/prefix  # a folder holding Torch/TorchConfig.cmake
#   scripts/setup.sh --print-torch         # only say which LibTorch auto would use, and why
#   scripts/setup.sh --sanitizers          # also clang and its runtimes (scripts/sanitize.sh, fuzz.sh)
#   scripts/setup.sh --packages-only       # install and check the packages, build nothing
#   scripts/setup.sh --browser             # also Chromium, its driver and Selenium, for the HTML report's
#                                          #   browser test (scripts/test.sh asks for them; BALERBENCH_BROWSER=1 too)
#   scripts/setup.sh --main                # only what the main job needs (scripts/run.sh): the binary and its
#                                          #   libraries; no test programs, no monitoring servers, no Python stack;
#                                          #   the HTML report's plotting library only where npm is already
#                                          #   installed (Debian's npm is some 360 packages) or with --page
#   scripts/setup.sh --page / --no-page    # install the HTML report's plotting library (with npm, from
#                                          #   Debian, where missing) or not (BALERBENCH_PAGE=1 or 0 too);
#                                          #   by default yes, but with --main only where npm is installed
#   scripts/setup.sh --verbose             # apt's and CMake's output on the terminal instead of in the log
#
# Each step prints one line; apt's, npm's and CMake's output goes to a log ($BUILD_DIR/setup.log, or
# BALERBENCH_SETUP_LOG), whose path and last lines a failed step prints.
#   BALERBENCH_TORCH=... BALERBENCH_PYTHON=/opt/conda/bin/python3 BALERBENCH_BUILD_DIR=/tmp/b scripts/setup.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BALERBENCH_BUILD_DIR:-$ROOT/build}"
TORCH="${BALERBENCH_TORCH:-auto}"
PY="${BALERBENCH_PYTHON:-python3}"
PRINT_ONLY=0
SANITIZERS=0
PACKAGES_ONLY=0
BROWSER="${BALERBENCH_BROWSER:-0}"
MAIN_ONLY=0
PAGE="${BALERBENCH_PAGE:-auto}"
VERBOSE="${BALERBENCH_SETUP_VERBOSE:-0}"
while [ $# -gt 0 ]; do
  case "$1" in
    --main) MAIN_ONLY=1; shift ;;
    --verbose) VERBOSE=1; shift ;;
    --torch) TORCH="${2:?--torch needs auto, debian or a folder}"; shift 2 ;;
    --torch=*) TORCH="${1#--torch=}"; shift ;;
    --print-torch) PRINT_ONLY=1; shift ;;
    --sanitizers) SANITIZERS=1; shift ;;
    --packages-only) PACKAGES_ONLY=1; shift ;;
    --browser) BROWSER=1; shift ;;
    --page) PAGE=1; shift ;;
    --no-page) PAGE=0; shift ;;
    *) echo "setup: error: unknown argument '$1' (hint: --torch auto|debian|PREFIX, --print-torch, --sanitizers, --packages-only, --browser, --main, --page, --no-page, --verbose)" >&2; exit 2 ;;
  esac
done

# Prints "prefix|cuda|gpus|cxx11_abi|version" for the PyTorch that $PY imports, or nothing.
pytorch_info() {
  "$PY" - 2>/dev/null <<'PYEOF' || true
import torch
cuda = torch.version.cuda or ""
gpus = torch.cuda.device_count() if cuda else 0
print(f"{torch.utils.cmake_prefix_path}|{cuda}|{gpus}|{int(torch.compiled_with_cxx11_abi())}|{torch.__version__}")
PYEOF
}

# Sets TORCH_PREFIX (empty: Debian's) and TORCH_WHY.
choose_torch() {
  TORCH_PREFIX=""
  case "$TORCH" in
    debian) TORCH_WHY="Debian's CPU LibTorch (--torch debian)"; return ;;
    auto) ;;
    *)
      [ -f "$TORCH/Torch/TorchConfig.cmake" ] ||
        { echo "setup: error: --torch $TORCH: no Torch/TorchConfig.cmake there (hint: python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" >&2; exit 2; }
      TORCH_PREFIX="$TORCH"; TORCH_WHY="LibTorch at $TORCH (given)"; return ;;
  esac
  local info prefix cuda gpus abi version
  info="$(pytorch_info)"
  if [ -z "$info" ]; then TORCH_WHY="Debian's CPU LibTorch ($PY imports no PyTorch)"; return; fi
  IFS='|' read -r prefix cuda gpus abi version <<< "$info"
  if [ -z "$cuda" ]; then TORCH_WHY="Debian's CPU LibTorch (PyTorch $version here is built without CUDA)"; return; fi
  if [ ! -f "$prefix/Torch/TorchConfig.cmake" ]; then
    TORCH_WHY="Debian's CPU LibTorch (PyTorch $version has CUDA $cuda but no CMake files at $prefix)"; return
  fi
  if [ "$abi" != 1 ]; then
    echo "setup: error: PyTorch $version uses the pre-C++11 string ABI; Debian's libraries use the C++11 one" >&2
    echo "setup: hint: PyTorch 2.7 or later (pip wheels switched), or --torch debian" >&2
    exit 2
  fi
  TORCH_PREFIX="$prefix"
  TORCH_WHY="PyTorch $version's LibTorch, CUDA $cuda, $gpus GPU(s) visible, at $prefix"
}

choose_torch
echo "setup: LibTorch: $TORCH_WHY"
[ "$PRINT_ONLY" = 1 ] && exit 0

mkdir -p "$BUILD_DIR"
LOG="${BALERBENCH_SETUP_LOG:-$BUILD_DIR/setup.log}"
: > "$LOG"
# step "WHAT" COMMAND...: one line for the step, its output in the log (on the terminal with
# --verbose), and on failure the log's path and last lines, then the step's exit code.
step() {
  local what="$1" began=$SECONDS rc=0
  shift
  printf 'setup: %s ...' "$what"
  if [ "$VERBOSE" = 1 ]; then
    echo; "$@" 2>&1 | tee -a "$LOG" || rc=${PIPESTATUS[0]}
  else
    { echo "== $what: $*"; } >> "$LOG"
    "$@" >> "$LOG" 2>&1 || rc=$?
  fi
  if [ "$rc" -ne 0 ]; then
    printf ' FAILED (exit %d) after %ds; the log is %s, its last lines:\n' "$rc" $((SECONDS - began)) "$LOG" >&2
    tail -n 25 "$LOG" | sed 's/^/  | /' >&2
    exit "$rc"
  fi
  printf ' done (%ds)\n' $((SECONDS - began))
}
if [ -n "$TORCH_PREFIX" ] && ! command -v nvcc > /dev/null; then
  echo "setup: warning: no nvcc on PATH; a CUDA LibTorch's CMake files look for the CUDA toolkit" >&2
  echo "setup: hint: export PATH=/usr/local/cuda/bin:\$PATH (or install the toolkit matching CUDA of PyTorch)" >&2
fi

# The main job's (the binary and its libraries), then the tests': GoogleTest and Benchmark, oneDNN's
# headers (the bfloat16 products' benchmark), the Python stack the interop tests and plot.py import,
# and the monitoring servers the integration tests start.
PACKAGES=(
  build-essential cmake pkg-config
  libopenblas0-openmp
  nlohmann-json3-dev libeigen3-dev libzip-dev libcli11-dev libboost-dev
  libcpp-httplib-dev libsqlite3-dev libzfp-dev libzstd-dev
)
if [ "$MAIN_ONLY" = 0 ]; then
  PACKAGES+=(
    libgtest-dev libbenchmark-dev libdnnl-dev
    python3 python3-numpy python3-matplotlib
    python3-tqdm python3-sklearn python3-scipy
    prometheus influxdb influxdb-client curl
  )
fi
# Debian's LibTorch, and the PyTorch the comparisons import, only when building against them: a
# GPU node's PyTorch provides both. The real Baler (../shared/peers/baler), which the interop tests
# run with Debian's /usr/bin/python3 (tests/integration/test_baler_interop.cpp), needs that PyTorch
# too, with numpy, tqdm, scikit-learn, scipy and matplotlib; where /usr/bin/python3 has no torch (a
# GPU node's PyTorch lives elsewhere), those tests skip and say so.
if [ -z "$TORCH_PREFIX" ]; then
  PACKAGES+=(libtorch-dev)
  if [ "$MAIN_ONLY" = 0 ]; then PACKAGES+=(python3-torch); fi
fi
# libFuzzer and the sanitizer runtimes come with clang (scripts/fuzz.sh, scripts/sanitize.sh).
if [ "$SANITIZERS" = 1 ]; then PACKAGES+=(clang libclang-rt-dev); fi
# npm brings the HTML report's plotting library (below); Debian's, where the machine has none. The
# main job alone asks for it only where npm is there already: Debian's npm is some 360 packages, half
# of a fresh machine's packages (docs/getting_started.md).
# A failed npm ci is tried again when asked (--page) or by the tests, not on every main job: its
# failure leaves NPM_FAILED until an npm ci succeeds.
NPM_FAILED="$BUILD_DIR/npm-ci-failed"
PAGE_WHY=""
case "$PAGE" in
  1 | 0) ;;
  auto)
    PAGE=1
    if [ "$MAIN_ONLY" = 1 ] && ! command -v npm > /dev/null; then
      PAGE=0; PAGE_WHY="it needs npm, some 360 Debian packages"
    elif [ "$MAIN_ONLY" = 1 ] && [ -f "$NPM_FAILED" ]; then
      PAGE=0; PAGE_WHY="npm ci failed before: $(cat "$NPM_FAILED")"
    fi ;;
  *) echo "setup: error: BALERBENCH_PAGE is 1, 0 or auto, not '$PAGE'" >&2; exit 2 ;;
esac
if [ "$PAGE" = 1 ] && ! command -v npm > /dev/null; then PACKAGES+=(npm); fi
# The HTML report's browser test (tests/integration/report_page_test.py) drives Debian's headless
# Chromium with Selenium: some 300 MB installed, so only when the tests ask (scripts/test.sh).
if [ "$BROWSER" = 1 ]; then PACKAGES+=(chromium chromium-driver python3-selenium); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: ${#missing[@]} Debian package(s) to install: ${missing[*]}"
  step "apt-get update" $SUDO apt-get update
  step "installing them with their dependencies (apt-get install)" \
    env DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: all Debian packages present"
fi

# Debian's LibTorch links the generic libblas.so.3 / liblapack.so.3; the
# alternatives system decides which implementation that is. The reference BLAS
# is about 10x slower, so insist on OpenBLAS (OpenMP build).
ARCH="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
for lib in libblas.so.3 liblapack.so.3; do
  alt="$lib-$ARCH"
  want="/usr/lib/$ARCH/openblas-openmp/$lib"
  current="$(update-alternatives --query "$alt" 2>/dev/null | sed -n 's/^Value: //p')"
  if [ "$current" != "$want" ]; then
    echo "setup: $alt points at '${current:-nothing}', switching to $want"
    $SUDO update-alternatives --set "$alt" "$want"
    current="$(update-alternatives --query "$alt" | sed -n 's/^Value: //p')"
  fi
  if [ "$current" != "$want" ]; then
    echo "setup: error: $alt still points at '$current' (hint: install libopenblas0-openmp)" >&2
    exit 2
  fi
  echo "setup: $alt -> $current"
done

# The HTML report's plotting library (Vega and Vega-Lite, docs/report_page.md): npm ci from the
# committed package.json and package-lock.json into harness/report/html/node_modules (git-ignored),
# where the binary looks for it. Only `report --format html` and `run --html` need it: without it
# they say so and how to install it, and everything else works.
JS_DIR="$ROOT/harness/report/html"
if [ "$PAGE" = 0 ]; then
  if [ ! -f "$JS_DIR/node_modules/.package-lock.json" ]; then
    echo "setup: the HTML report's plotting library is not installed${PAGE_WHY:+ ($PAGE_WHY)}: PAGE=1 scripts/run.sh" \
         "or scripts/setup.sh --page installs it"
  fi
elif [ ! -f "$JS_DIR/node_modules/.package-lock.json" ] || [ "$JS_DIR/package-lock.json" -nt "$JS_DIR/node_modules/.package-lock.json" ]; then
  printf "setup: installing the HTML report's plotting library (npm ci in %s) ..." "$JS_DIR"
  # One retry after 2 s and at most 60 s per request, not npm's two retries after 10 and 60 s and 5 min
  # per request: a registry that refuses the connection costs 5 s, not 73 s; one that never answers 2
  # min, not 15.
  if (cd "$JS_DIR" && npm ci --omit=dev --no-audit --no-fund --loglevel=error --fetch-retries=1 \
        --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000 --fetch-timeout=60000) >> "$LOG" 2>&1; then
    echo " done"
    rm -f "$NPM_FAILED"
  else
    echo " failed"
    said="$(grep -E '^npm (ERR!|error) (code |.*reason: )' "$LOG" | tail -2 | tr '\n' ' ')"
    code="$(grep -oE '^npm (ERR!|error) code [A-Za-z_0-9]+' "$LOG" | tail -1 | sed 's/.* code //')"
    mkdir -p "$BUILD_DIR" && echo "npm's error ${code:-unknown}" > "$NPM_FAILED"
    echo "setup: npm said: $said" >&2
    echo "setup: warning: npm ci failed (log: $LOG): the HTML report cannot be written until scripts/setup.sh runs" \
         "again with the npm registry reachable (behind a proxy that re-signs TLS: NODE_EXTRA_CA_CERTS=its-ca.pem)" >&2
  fi
else
  echo "setup: the HTML report's plotting library is installed ($JS_DIR/node_modules)"
fi

[ "$PACKAGES_ONLY" = 1 ] && exit 0

# Build against the chosen LibTorch; a build folder configured for the other one starts afresh.
TORCH_DIR="${TORCH_PREFIX:+$TORCH_PREFIX/Torch}"
TORCH_DIR="${TORCH_DIR:-/usr/lib/$ARCH/cmake/Torch}"
# The cached Torch_DIR of any type: a folder configured with an untyped -DTorch_DIR holds it as
# UNINITIALIZED, and a check of :PATH= alone configured every run afresh.
if [ -f "$BUILD_DIR/CMakeCache.txt" ] &&
   [ "$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")" != "$TORCH_DIR" ]; then
  echo "setup: $BUILD_DIR was configured for another LibTorch; configuring afresh"
  rm -rf "$BUILD_DIR/CMakeCache.txt" "$BUILD_DIR/CMakeFiles"
fi
EXTRA=()
if [ -n "$TORCH_PREFIX" ]; then EXTRA+=(-DBALERBENCH_PYTHON="$(command -v "$PY")"); fi
# The main job builds the binary alone; the tests build every program (the same build folder: a later
# scripts/test.sh adds the test programs and reuses every object).
TESTS=ON
TARGET=()
if [ "$MAIN_ONLY" = 1 ]; then
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] && grep -q "^BALERBENCH_BUILD_TESTS:BOOL=ON" "$BUILD_DIR/CMakeCache.txt"; then
    TARGET=(--target balerbench)  # a folder the tests were built in keeps them configured
  else
    TESTS=OFF
  fi
fi
step "configuring the build (cmake, $BUILD_DIR)" \
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DTorch_DIR:PATH="$TORCH_DIR" \
    -DBALERBENCH_BUILD_TESTS="$TESTS" -DBALERBENCH_BUILD_BENCHMARKS="$TESTS" "${EXTRA[@]}"
step "building $([ "$MAIN_ONLY" = 1 ] && echo "the balerbench binary" || echo "balerbench and its tests") on $(nproc) cores (the first time: minutes)" \
  cmake --build "$BUILD_DIR" -j "$(nproc)" "${TARGET[@]}"
if grep -q "BALERBENCH_WITH_CUDA=1" "$BUILD_DIR/harness/CMakeFiles/balerbench_harness.dir/flags.make"; then
  echo "setup: built $BUILD_DIR/harness/balerbench with CUDA (try: $BUILD_DIR/harness/balerbench meters)"
else
  echo "setup: built $BUILD_DIR/harness/balerbench (CPU only)"
fi
