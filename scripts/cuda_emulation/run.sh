#!/usr/bin/env bash
# run.sh: harness/engine/cuda/fused_cuda_kernels.cu's kernels on the host, without a GPU (emulate.cpp):
# its kernels are copied into kernels.inc (build-emulation/, git-ignored) with the CUDA-only spellings
# replaced (shim.h), compiled with the host compiler and checked against a float64 reference.
#   scripts/cuda_emulation/run.sh          six cases, about a minute and a half on a busy 2-core machine
#   TSAN=1 scripts/cuda_emulation/run.sh   one small case under ThreadSanitizer (minutes): a missing
#                                          __syncthreads shows as a data race on shared memory
# It checks the kernels' indexing, bounds and barriers, not the GPU: compute-sanitizer and the gpu
# tests on a GPU still decide (docs/fused_cuda.md).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${BUILD:-$ROOT/build-emulation}"
mkdir -p "$OUT"
# The kernels up to their host-side launchers, with shared memory, __ldg and the runtime header replaced.
sed -e 's|#include <cuda_runtime.h>|#include "shim.h"|' \
    -e 's|extern __shared__ float smem\[\];|float* smem = g_smem;|' \
    -e 's|__shared__ double warp_sums|static double warp_sums|' \
    -e 's|__ldg(\([^;]*\));|*(\1);|' "$ROOT/harness/engine/cuda/fused_cuda_kernels.cu" |
  awk '/^unsigned blocks_for/ { exit } { print }' > "$OUT/kernels.inc"
echo "}  // namespace
}  // namespace fused_cuda
}  // namespace balerbench" >> "$OUT/kernels.inc"
if grep -q "__ldg\|extern __shared__\|<<<" "$OUT/kernels.inc"; then
  echo "run.sh: the kernels use a CUDA spelling shim.h does not know (hint: extend the sed above)" >&2
  exit 2
fi
flags=(-std=c++20 -I"$ROOT" -I"$HERE" -I"$OUT" -pthread)
if [ "${TSAN:-0}" = 1 ]; then
  "${CXX:-g++}" "${flags[@]}" -O1 -g -fsanitize=thread "$HERE/emulate.cpp" -o "$OUT/emulate_tsan"
  TSAN_OPTIONS="halt_on_error=1" "$OUT/emulate_tsan" --small
else
  "${CXX:-g++}" "${flags[@]}" -O2 "$HERE/emulate.cpp" -o "$OUT/emulate"
  "$OUT/emulate"
fi
