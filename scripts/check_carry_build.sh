#!/usr/bin/env bash
# check_carry_build.sh: the lent GPU machines' build path (no Debian packages, no pkg-config; the
# dependencies come from the folder scripts/gpu_carry.sh prepares), checked on this CPU machine so
# that it cannot break unseen again. It prepares .carry/ and configures the project as
# `scripts/gpu_check.sh build` does on those machines (every test program on, so the carried
# GoogleTest too), then:
#   - checks that each dependency was found in .carry/;
#   - runs every translation unit of the project (the harness, the binary, every test program)
#     through the preprocessor with that configuration's flags: each header it names resolves, and
#     none comes from a Debian package the GPU machines lack (below). Compiling them all again would
#     repeat the normal build's work, with the same compiler and the same headers (the carried ones
#     are Debian's copies): 9.5 of CI's 90 minutes. What that compile also checked and this does not:
#     the harness linked against the carried libraries (carry_probe links and calls each instead), and
#     the carried GoogleTest linked into a test program (built here, linked on the GPU machines);
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

# Every translation unit through the preprocessor, with its flags from this configuration: each header
# it names must resolve, and none may come from a Debian package the GPU machines lack. /usr/include is
# always searched here, so a header missing from .carry/ would otherwise be found there unseen. Allowed
# from /usr/include: the C library's and the compiler's headers, and LibTorch's own (Debian's LibTorch
# puts ATen, c10, torch, caffe2 and its glog, gflags there; its include folder being /usr/include,
# GoogleTest's headers resolve there too, where the GPU machines take the carried GoogleTest's).
python3 - "$BUILD/compile_commands.json" "${JOBS:-$(nproc)}" <<'PY' || fail "a header is not found with the carried include paths, or comes from Debian's packages (above)"
import concurrent.futures, json, os, shlex, subprocess, sys
entries = json.load(open(sys.argv[1]))
def headers(e):
    args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
    keep, skip = [], False
    for a in args:  # drop the object (-o X, -c) and the dependency file (-MD, -MT X, -MF X)
        if skip: skip = False; continue
        if a in ("-o", "-MT", "-MF", "-MQ"): skip = True; continue
        if a in ("-c", "-MD", "-MMD"): continue
        keep.append(a)
    r = subprocess.run(keep + ["-M", "-MF", "/dev/stdout", "-E", "-o", os.devnull], cwd=e["directory"],
                       capture_output=True, text=True)
    return e["file"], r.returncode, r.stderr, r.stdout.replace("\\\n", " ").split()[1:]
with concurrent.futures.ThreadPoolExecutor(int(sys.argv[2])) as pool:
    results = list(pool.map(headers, entries))
libc = set()
for pkg in ("libc6-dev", "linux-libc-dev"):
    listed = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True).stdout.split()
    libc.update(os.path.realpath(f) for f in listed if f.startswith("/usr/include/"))
torch_family = {"ATen", "c10", "torch", "caffe2", "glog", "gflags", "gtest", "gmock"}
def from_debian(h):
    h = os.path.realpath(h)
    if not h.startswith("/usr/") or h.startswith(("/usr/lib/gcc/", "/usr/lib/llvm-", "/usr/include/c++/",
                                                  "/usr/include/x86_64-linux-gnu/c++/")):
        return False
    if not h.startswith("/usr/include/") or h in libc:
        return not h.startswith("/usr/include/")
    return h[len("/usr/include/"):].split("/")[0] not in torch_family
failed = [(f, err) for f, rc, err, _ in results if rc != 0]
debian = sorted({h for _, rc, _, hs in results if rc == 0 for h in hs if from_debian(h)})
for f, err in failed: print(f"{f}:\n{err.strip()[:2000]}")
for h in debian[:40]: print(f"from Debian's packages, not .carry/: {h} (hint: scripts/gpu_carry.sh carries it)")
print(f"preprocessed {len(results)} translation units with the carried include paths: {len(failed)} failed, "
      f"{len(debian)} header(s) from Debian's packages")
sys.exit(1 if failed or debian or not results else 0)
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
