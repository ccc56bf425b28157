// cuda_graph.h: one training step captured as a CUDA graph and replayed.
//
// The step reads its batch from a static input buffer, so the caller copies
// each batch there before a call. Warm-up steps run eagerly on a side stream
// (as torch.cuda.graphs requires: lazy initialisation must happen outside the
// capture); capture itself runs nothing, so the caller replays right after it.
// Available only when balerbench is built against a CUDA LibTorch; elsewhere
// the constructor throws (the trainer never asks for it off CUDA).
#pragma once

#include <c10/core/Device.h>

#include <functional>
#include <memory>

namespace balerbench {

class CudaGraphStep {
 public:
  explicit CudaGraphStep(c10::Device device);
  ~CudaGraphStep();
  // Runs `step` once, eagerly, on the side stream, and waits for it.
  void warmup(const std::function<void()>& step);
  // Records `step` into the graph (nothing executes).
  void capture(const std::function<void()>& step);
  bool captured() const;
  // Launches the captured step on the current stream.
  void replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace balerbench
