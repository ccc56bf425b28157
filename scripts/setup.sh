#!/usr/bin/env bash
# setup.sh: install what balerbench needs from Debian's packages (idempotent:
# one `apt-get update`, only when something is missing), make sure LibTorch runs
# on OpenBLAS rather than the reference BLAS, and build in Release.
#
#   scripts/setup.sh            # packages + build into ./build
#   BALERBENCH_BUILD_DIR=/tmp/b scripts/setup.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BALERBENCH_BUILD_DIR:-$ROOT/build}"

PACKAGES=(
  build-essential cmake pkg-config
  libtorch-dev libopenblas0-openmp
  nlohmann-json3-dev libeigen3-dev libzip-dev libcli11-dev
  libgtest-dev libbenchmark-dev
  libcpp-httplib-dev libsqlite3-dev
  python3 python3-numpy python3-torch python3-matplotlib
  prometheus influxdb influxdb-client curl
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
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

cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup: built $BUILD_DIR/harness/balerbench"
