#!/usr/bin/env bash
# check_carry_build.sh: the lent GPU machines' build path (no Debian packages, no pkg-config; the
# dependencies come from the folder scripts/gpu_carry.sh prepares), checked on this CPU machine so
# that it cannot break unseen again. It prepares .carry/ and configures the project as
# `scripts/gpu_check.sh build` does on those machines (every test program on, so the carried
# GoogleTest too), then:
#   - checks that each dependency was found in .carry/;
#   - runs every translation unit of the project (the harness, the binary, every test program)
#     through the preprocessor with that configuration's flags: each header it names resolves
#     there. Compiling them all again would repeat the normal build's work, with the same compiler
#     and the same headers (the carried ones are Debian's copies): 10 minutes of CI's 90;
#   - builds and runs tests/carry/carry_probe.cpp, which uses each carried library once for real
#     (an HTTP request, a SQLite table, a zip member, Zstandard and ZFP round trips, JSON), without
#     LD_LIBRARY_PATH, and checks that it loads each from .carry/lib by its RPATH.
#
#   scripts/check_carry_build.sh          # build in ./build-carry (.ci/run calls this)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${BALERBENCH_CARRY_BUILD_DIR:-$ROOT/build-carry}"
CARRY="$ROOT/.carry"
fail() { echo "check_carry_build.sh: error: $*" >&2; exit 1; }

# setup.sh's choice of LibTorch, with a stand-in python3 that reports a CUDA PyTorch.
STUB="$(mktemp -d)"; trap 'rm -rf "$STUB"' EXIT
stub() { printf '#!/bin/sh\necho "%s"\n' "$1" > "$STUB/python3"; chmod +x "$STUB/python3"; }
stub "/usr/lib/x86_64-linux-gnu/cmake|12.8|1|1|2.11.0+cu128"
said="$(BALERBENCH_PYTHON="$STUB/python3" "$ROOT/scripts/setup.sh" --print-torch)"
echo "$said"
case "$said" in *"PyTorch 2.11.0+cu128's LibTorch, CUDA 12.8, 1 GPU(s) visible"*) ;; *) fail "setup.sh missed a CUDA PyTorch" ;; esac
stub "/usr/lib/x86_64-linux-gnu/cmake|12.1|1|0|2.1.0"
BALERBENCH_PYTHON="$STUB/python3" "$ROOT/scripts/setup.sh" --print-torch > /dev/null 2>&1 && fail "setup.sh took an old-ABI PyTorch"
stub "/nonexistent|||1|2.5.0"
case "$(BALERBENCH_PYTHON="$STUB/python3" "$ROOT/scripts/setup.sh" --print-torch)" in
  *"Debian's CPU LibTorch (PyTorch 2.5.0 here is built without CUDA)"*) ;; *) fail "setup.sh took a CPU PyTorch" ;;
esac

"$ROOT/scripts/gpu_carry.sh"
mkdir -p "$BUILD/logs"
TORCH_PREFIX=/usr/lib/x86_64-linux-gnu/cmake BALERBENCH_BUILD_DIR="$BUILD" OUT="$BUILD/logs" \
  CMAKE_ARGS="-DCMAKE_EXPORT_COMPILE_COMMANDS=ON" TARGETS="carry_probe" PYTHON=/usr/bin/python3 \
  "$ROOT/scripts/gpu_check.sh" build || fail "the carried build failed (logs in $BUILD/logs)"

cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
[ "$(cache CMAKE_DISABLE_FIND_PACKAGE_PkgConfig)" = "ON" ] || fail "pkg-config was not disabled"
for v in HTTPLIB_INCLUDE_DIR HTTPLIB_LIBRARY LIBZIP_INCLUDE_DIR LIBZIP_LIBRARY SQLite3_INCLUDE_DIR SQLite3_LIBRARY \
         nlohmann_json_DIR EIGEN3_INCLUDE_DIR ZFP_INCLUDE_DIR ZFP_LIBRARY ZSTD_INCLUDE_DIR ZSTD_LIBRARY; do
  case "$(cache "$v")" in
    "$CARRY"/*) echo "found in .carry: $v = $(cache "$v")" ;;
    *) fail "$v = '$(cache "$v")', not from $CARRY (hint: scripts/gpu_carry.sh carries it)" ;;
  esac
done

# Every translation unit through the preprocessor, with its flags from this configuration.
python3 - "$BUILD/compile_commands.json" "${JOBS:-$(nproc)}" <<'PY' || fail "a header is not found with the carried include paths (above)"
import concurrent.futures, json, os, shlex, subprocess, sys
entries = json.load(open(sys.argv[1]))
def preprocess(e):
    args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
    keep, skip = [], False
    for a in args:  # drop the object (-o X, -c) and the dependency file (-MD, -MT X, -MF X)
        if skip: skip = False; continue
        if a in ("-o", "-MT", "-MF", "-MQ"): skip = True; continue
        if a in ("-c", "-MD", "-MMD"): continue
        keep.append(a)
    r = subprocess.run(keep + ["-E", "-o", os.devnull], cwd=e["directory"], capture_output=True, text=True)
    return e["file"], r.returncode, r.stderr
with concurrent.futures.ThreadPoolExecutor(int(sys.argv[2])) as pool:
    results = list(pool.map(preprocess, entries))
failed = [(f, err) for f, rc, err in results if rc != 0]
for f, err in failed: print(f"{f}:\n{err.strip()[:2000]}")
print(f"preprocessed {len(results)} translation units with the carried include paths: {len(failed)} failed")
sys.exit(1 if failed or not results else 0)
PY

PROGRAM="$BUILD/tests/carry_probe"
# Without LD_LIBRARY_PATH: the program's RPATH alone must lead to the carried libraries and theirs.
for lib in libcpp-httplib libzip libsqlite3 libbrotlidec libzfp libzstd; do
  where="$(env -u LD_LIBRARY_PATH ldd "$PROGRAM" | awk -v l="$lib" '$1 ~ "^"l {print $3}')"
  case "$where" in
    "$CARRY"/lib/*) echo "loads $lib from $where" ;;
    *) fail "$PROGRAM loads $lib from '${where:-nowhere}', not from $CARRY/lib" ;;
  esac
done
env -u LD_LIBRARY_PATH "$PROGRAM" || fail "a carried library did not work in the carried build (above)"
echo "check_carry_build.sh: OK: the GPU machines' build path finds every header and links and runs with only .carry/"
