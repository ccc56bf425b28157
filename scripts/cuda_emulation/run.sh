#!/usr/bin/env bash
# run.sh: harness/engine/cuda/'s kernels on the host, without a GPU: fused_cuda_kernels.cu's (emulate.cpp)
# and fused_cuda_mma.cu's tensor-core modes (emulate_mma.cpp). They are copied into kernels.inc and
# mma.inc (build-emulation/, git-ignored) with the CUDA-only spellings replaced (shim.h), compiled with
# the host compiler and checked against float64 references.
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
# The kernels up to their host-side launchers, with shared memory, __ldg and the runtime header replaced
# (awk reads to the end: an early exit would stop sed with SIGPIPE, which pipefail turns into a failure).
sed -e 's|#include <cuda_runtime.h>|#include "shim.h"|' \
    -e 's|extern __shared__ float smem\[\];|float* smem = g_smem;|' \
    -e 's|__shared__ double warp_sums|static double warp_sums|' \
    -e 's|__ldg(\([^;]*\));|*(\1);|' "$ROOT/harness/engine/cuda/fused_cuda_kernels.cu" |
  awk '/^unsigned blocks_for/ { stop = 1 } !stop { print }' > "$OUT/kernels.inc"
echo "}  // namespace
}  // namespace fused_cuda
}  // namespace balerbench" >> "$OUT/kernels.inc"
# The tensor-core kernels (fused_cuda_mma.cu) up to their launchers, the same way.
sed -e 's|#include <cuda_runtime.h>|#include "shim.h"|' \
    -e '/#include <cuda_bf16.h>/d' -e '/#include <cuda_fp16.h>/d' -e '/#include <mma.h>/d' \
    -e 's|extern __shared__ __align__(128) unsigned char mma_smem\[\];|unsigned char* mma_smem = reinterpret_cast<unsigned char*>(g_smem);|' \
    -e 's|__shared__ double warp_sums|static double warp_sums|' \
    -e 's|__shared__ bool last|static bool last|' "$ROOT/harness/engine/cuda/fused_cuda_mma.cu" |
  awk '/^\/\/ Host side: the launchers/ { stop = 1 } !stop { print }' > "$OUT/mma.inc"
echo "}  // namespace
}  // namespace fused_cuda
}  // namespace balerbench" >> "$OUT/mma.inc"
if grep -q "__ldg\|__shared__\|<<<" "$OUT/kernels.inc" "$OUT/mma.inc"; then
  echo "run.sh: the kernels use a CUDA spelling shim.h does not know (hint: extend the sed above)" >&2
  exit 2
fi
flags=(-std=c++20 -I"$ROOT" -I"$HERE" -I"$OUT" -pthread)
if [ "${TSAN:-0}" = 1 ]; then
  "${CXX:-g++}" "${flags[@]}" -O1 -g -fsanitize=thread "$HERE/emulate.cpp" "$ROOT/models/architecture.cpp" -o "$OUT/emulate_tsan"
  "${CXX:-g++}" "${flags[@]}" -O1 -g -fsanitize=thread "$HERE/emulate_mma.cpp" "$ROOT/models/architecture.cpp" -o "$OUT/emulate_mma_tsan"
  TSAN_OPTIONS="halt_on_error=1" "$OUT/emulate_tsan" --small
  TSAN_OPTIONS="halt_on_error=1" "$OUT/emulate_mma_tsan" --small
else
  "${CXX:-g++}" "${flags[@]}" -O2 "$HERE/emulate.cpp" "$ROOT/models/architecture.cpp" -o "$OUT/emulate"
  "${CXX:-g++}" "${flags[@]}" -O2 "$HERE/emulate_mma.cpp" "$ROOT/models/architecture.cpp" -o "$OUT/emulate_mma"
  status=0
  "$OUT/emulate" || status=1
  "$OUT/emulate_mma" || status=1
  exit $status
fi
