#!/usr/bin/env bash
# gpu_carry.sh: prepares .carry/ (git-ignored), the dependencies a lent GPU
# machine lacks, to be named in the device tool's `carry` list. Run it here,
# after scripts/setup.sh: it copies from this machine's Debian packages.
#
#   .carry/include/      nlohmann/json.hpp, CLI/ (CLI11), eigen3/, httplib.h, zip.h, zipconf.h, sqlite3.h,
#                        zfp.h and zfp/, zstd.h (the codecs beside Baler's), and the Boost headers that
#                        Boost.Math's Student's t includes (about 600 files, 4 MB; the compiler lists them)
#   .carry/share/cmake/  the nlohmann_json and CLI11 CMake package configs (they point at ../../include)
#   .carry/lib/          Debian 12's libzip.so.4, libsqlite3.so, libzfp.so.1 (it needs libgomp.so.1, which GCC
#                        brings), libzstd.so.1, and libcpp-httplib.so: Debian's httplib.h
#                        is the split header (declarations only), so the library that defines it travels
#                        too, with what it needs beyond glibc and zlib (libssl/libcrypto 3, brotli).
#                        Built programs find them by RPATH (scripts/gpu_check.sh links with it).
#   .carry/src/googletest  GoogleTest's source, built on the GPU machine by gpu_check.sh
#   .peers/baler           the real Baler (../shared/peers/baler), for gpu_check.sh interop; copied
#                          when missing, git-ignored, carried beside .carry
#
# Nothing here is vendored into the repository; the GPU machine has PyTorch
# (whose LibTorch we build against), CMake, nvcc and a C++ compiler, but no
# Debian packages and no network.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
C="$ROOT/.carry"
need() { [ -e "$1" ] || { echo "gpu_carry.sh: $1 is missing (hint: run scripts/setup.sh first)" >&2; exit 2; }; }
LIB=/usr/lib/x86_64-linux-gnu
for f in /usr/include/eigen3/signature_of_eigen3_matrix_library /usr/include/nlohmann/json.hpp /usr/share/cmake/nlohmann_json /usr/include/CLI /usr/share/cmake/CLI11 \
         /usr/include/httplib.h /usr/include/zip.h /usr/include/zipconf.h /usr/src/googletest /usr/include/sqlite3.h \
         /usr/include/zfp.h /usr/include/zfp /usr/include/zstd.h "$LIB/libzfp.so.1" "$LIB/libzstd.so.1" \
         "$LIB/libcpp-httplib.so" "$LIB/libssl.so.3" "$LIB/libcrypto.so.3" "$LIB/libbrotlidec.so.1" \
         "$LIB/libbrotlienc.so.1" "$LIB/libbrotlicommon.so.1"; do need "$f"; done
ZIPLIB="$(readlink -f $LIB/libzip.so.4)"
need "$ZIPLIB"

rm -rf "$C.tmp" && mkdir -p "$C.tmp"/{include,share/cmake,lib,src}
cp -r /usr/include/nlohmann "$C.tmp/include/"
cp -r /usr/include/CLI "$C.tmp/include/"
cp -r /usr/include/eigen3 "$C.tmp/include/"  # headers only; found by signature_of_eigen3_matrix_library
cp /usr/include/httplib.h /usr/include/zip.h /usr/include/zipconf.h /usr/include/sqlite3.h "$C.tmp/include/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$C.tmp/share/cmake/"
# Boost.Math (the reports' one-sided tests): only the headers students_t.hpp pulls in, not all of Boost.
need /usr/include/boost/math/distributions/students_t.hpp
echo '#include <boost/math/distributions/students_t.hpp>' | "${CXX:-c++}" -std=c++17 -M -x c++ - |
  tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u | while read -r h; do
    mkdir -p "$C.tmp/include/$(dirname "${h#/usr/include/}")"
    cp "$h" "$C.tmp/include/${h#/usr/include/}"
  done
cp -r /usr/include/zfp.h /usr/include/zfp /usr/include/zstd.h /usr/include/zstd_errors.h "$C.tmp/include/"
for l in libzfp.so.1 libzstd.so.1; do  # under the soname (what programs load) and as libX.so (the linker's name)
  cp "$(readlink -f "$LIB/$l")" "$C.tmp/lib/$l"
  cp "$(readlink -f "$LIB/$l")" "$C.tmp/lib/${l%.1}"
done
cp "$ZIPLIB" "$C.tmp/lib/libzip.so.4"
cp "$ZIPLIB" "$C.tmp/lib/libzip.so"  # a copy, not a link: links do not travel with `carry`
SQLITELIB="$(readlink -f /usr/lib/x86_64-linux-gnu/libsqlite3.so.0)"
cp "$SQLITELIB" "$C.tmp/lib/libsqlite3.so.0"
cp "$SQLITELIB" "$C.tmp/lib/libsqlite3.so"   # FindSQLite3 looks for libsqlite3.so
# Copies, not links: links do not travel with `carry`. The library under its soname (what programs
# load) and as libcpp-httplib.so (what CMake's find_library and the linker look for).
HTTPLIB="$(readlink -f "$LIB/libcpp-httplib.so")"
cp "$HTTPLIB" "$C.tmp/lib/$(objdump -p "$HTTPLIB" | awk '/SONAME/ {print $2}')"
cp "$HTTPLIB" "$C.tmp/lib/libcpp-httplib.so"
for l in libssl.so.3 libcrypto.so.3 libbrotlidec.so.1 libbrotlienc.so.1 libbrotlicommon.so.1; do
  cp "$(readlink -f "$LIB/$l")" "$C.tmp/lib/$l"
done
cp -r /usr/src/googletest "$C.tmp/src/googletest"
rm -rf "$C" && mv "$C.tmp" "$C"
PEER_SRC="$ROOT/../shared/peers/baler"
if [ ! -f "$ROOT/.peers/baler/baler/__init__.py" ] && [ -f "$PEER_SRC/baler/__init__.py" ]; then
  mkdir -p "$ROOT/.peers" && rm -rf "$ROOT/.peers/baler" && cp -r "$PEER_SRC" "$ROOT/.peers/baler"
fi
if [ -f "$ROOT/.peers/baler/baler/__init__.py" ]; then
  echo "prepared $C ($(du -sh "$C" | cut -f1)) and .peers/baler; carry them with: carry [\".carry\", \".peers\"]"
else
  echo "prepared $C ($(du -sh "$C" | cut -f1)); carry it with: carry [\".carry\"] (no ../shared/peers/baler: interop cannot run)"
fi
