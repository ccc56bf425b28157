#!/usr/bin/env bash
# check_carry_build.sh: the lent GPU machines' build path (no Debian packages, no pkg-config; the
# dependencies come from the folder scripts/gpu_carry.sh prepares), checked on this CPU machine so
# that it cannot break unseen again. It prepares .carry/, runs `scripts/gpu_check.sh build` against
# Debian's LibTorch for the harness library and one test program that uses every carried library
# (cpp-httplib, libzip, SQLite, nlohmann_json), checks that each dependency was found in .carry/ and
# that the program loads the carried libraries by its RPATH, and runs that program's HTTP tests.
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
  TARGETS="balerbench_harness unit_tests_energy" PYTHON=/usr/bin/python3 "$ROOT/scripts/gpu_check.sh" build ||
  fail "the carried build failed (logs in $BUILD/logs)"

cache() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
[ "$(cache CMAKE_DISABLE_FIND_PACKAGE_PkgConfig)" = "ON" ] || fail "pkg-config was not disabled"
for v in HTTPLIB_INCLUDE_DIR HTTPLIB_LIBRARY LIBZIP_INCLUDE_DIR LIBZIP_LIBRARY SQLite3_INCLUDE_DIR SQLite3_LIBRARY \
         nlohmann_json_DIR EIGEN3_INCLUDE_DIR ZFP_INCLUDE_DIR ZFP_LIBRARY ZSTD_INCLUDE_DIR ZSTD_LIBRARY; do
  case "$(cache "$v")" in
    "$CARRY"/*) echo "found in .carry: $v = $(cache "$v")" ;;
    *) fail "$v = '$(cache "$v")', not from $CARRY (hint: scripts/gpu_carry.sh carries it)" ;;
  esac
done

PROGRAM="$BUILD/tests/unit_tests_energy"
# Without LD_LIBRARY_PATH: the program's RPATH alone must lead to the carried libraries and theirs.
for lib in libcpp-httplib libzip libsqlite3 libbrotlidec; do
  where="$(env -u LD_LIBRARY_PATH ldd "$PROGRAM" | awk -v l="$lib" '$1 ~ "^"l {print $3}')"
  case "$where" in
    "$CARRY"/lib/*) echo "loads $lib from $where" ;;
    *) fail "$PROGRAM loads $lib from '${where:-nowhere}', not from $CARRY/lib" ;;
  esac
done
env -u LD_LIBRARY_PATH "$PROGRAM" --gtest_brief=1 --gtest_filter='Prometheus*:Influx*:Live*' ||
  fail "the HTTP tests failed in the carried build"
echo "check_carry_build.sh: OK: the GPU machines' build path links and runs with only .carry/"
