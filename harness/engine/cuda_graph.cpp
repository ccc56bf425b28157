// cuda_graph.cpp: see cuda_graph.h.
#include "harness/engine/cuda_graph.h"

#include <stdexcept>

#if BALERBENCH_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace balerbench {

#if BALERBENCH_WITH_CUDA

struct CudaGraphStep::Impl {
  explicit Impl(c10::Device d) : device(d), side(c10::cuda::getStreamFromPool(false, d.index())) {}
  c10::Device device;
  c10::cuda::CUDAStream side;
  at::cuda::CUDAGraph graph;
  bool captured = false;
};

CudaGraphStep::CudaGraphStep(c10::Device device) : impl_(std::make_unique<Impl>(device)) {
  if (!device.is_cuda()) throw std::invalid_argument("CudaGraphStep: needs a CUDA device");
}

CudaGraphStep::~CudaGraphStep() = default;

void CudaGraphStep::warmup(const std::function<void()>& step) {
  c10::cuda::CUDAGuard device_guard(impl_->device);
  c10::cuda::getCurrentCUDAStream(impl_->device.index()).synchronize();  // the batch copy is done
  {
    c10::cuda::CUDAStreamGuard guard(impl_->side);
    step();
  }
  impl_->side.synchronize();
}

void CudaGraphStep::capture(const std::function<void()>& step) {
  c10::cuda::CUDAGuard device_guard(impl_->device);
  c10::cuda::getCurrentCUDAStream(impl_->device.index()).synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(impl_->side);  // capture needs a non-default stream
    impl_->graph.capture_begin();
    step();
    impl_->graph.capture_end();
  }
  impl_->side.synchronize();
  impl_->captured = true;
}

bool CudaGraphStep::captured() const { return impl_->captured; }

void CudaGraphStep::replay() {
  if (!impl_->captured) throw std::logic_error("CudaGraphStep: replay before capture");
  impl_->graph.replay();
}

#else

struct CudaGraphStep::Impl {};

CudaGraphStep::CudaGraphStep(c10::Device) {
  throw std::runtime_error(
      "CUDA graphs need a CUDA build of balerbench (this "
      "one links a CPU-only LibTorch)");
}
CudaGraphStep::~CudaGraphStep() = default;
void CudaGraphStep::warmup(const std::function<void()>&) {}
void CudaGraphStep::capture(const std::function<void()>&) {}
bool CudaGraphStep::captured() const { return false; }
void CudaGraphStep::replay() {}

#endif

}  // namespace balerbench
