// fused_cuda_absent.cpp: fused_cuda_engine.h's functions in a build without the CUDA fused engine
// (BALERBENCH_CUDA_ENGINE off, or AUTO without a CUDA LibTorch and nvcc: harness/CMakeLists.txt
// compiles this file instead of fused_cuda_engine.cpp and the kernels). `engine: fused` on a CUDA
// device then says why it cannot run.
#include <stdexcept>

#include "harness/engine/cuda/fused_cuda_engine.h"

namespace balerbench {

bool fused_cuda_built() { return false; }

std::string fused_cuda_unsupported_reason(const AutoEncoder&, const PrecisionPolicy&) {
  return "built without the CUDA fused engine (BALERBENCH_CUDA_ENGINE)";
}

std::string fused_cuda_summary() {
  return "not built (BALERBENCH_CUDA_ENGINE: it needs nvcc and a LibTorch with CUDA; docs/fused_cuda.md)";
}

std::string fused_cuda_auto_skip() { return "built without the CUDA fused engine (BALERBENCH_CUDA_ENGINE)"; }

std::unique_ptr<Engine> make_fused_cuda_training(AutoEncoder&, const TrainingSetup&) {
  throw std::logic_error("fused CUDA engine: built without it (BALERBENCH_CUDA_ENGINE)");
}

}  // namespace balerbench
