// fused_worker.h: one shard's buffers and layer-by-layer numerics of the fused engine (private to
// fused_engine.cpp, fused_worker.cpp and fused_bf16.cpp): the forward chain, the loss and the
// backward pass, in T (double or float) on OpenBLAS's or Eigen's products, or in amp_bf16 on
// bfloat16 dot products (fused_bf16.cpp).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "harness/engine/bf16_kernels.h"
#include "harness/engine/dense_loops.h"
#include "harness/engine/dense_products.h"
#include "harness/engine/fused_layer.h"
#include "harness/engine/fused_kernels.h"

namespace balerbench {

// The parts of a training step, as flags: a worker runs the parts asked, in this order.
enum FusedPart { kForwardEncoder = 1, kForwardDecoder = 2, kLoss = 4, kBackward = 8 };

struct FusedWorker {
  using Layer = FusedLayer;

  int64_t max_rows = 0;
  const DenseProducts* products = nullptr;  // Eigen's kernels, or null for at::mm_out (OpenBLAS)
  const DenseLoops* loops = nullptr;        // the element-wise loops, at the products' level
  std::vector<at::Tensor> acts;  // acts[i]: layer i's output (after its activation), (max_rows, out_i)
  at::Tensor grad_a, grad_b;     // ping-pong gradient buffers, max_rows x widest, flat
  at::Tensor grads;              // worker 0: the optimizer's flat gradients; others: their own
  std::vector<at::Tensor> weight_grads;  // views into `grads`, (out, in)
  double squared_error = 0;
  int64_t rows = 0;

  at::Tensor part;  // this step's rows
  // amp_bf16 (bf16_kernels.h): the kernels, and this shard's bfloat16 tables, each in the layouts its
  // readers take: the input and every layer's output row-major (rm) and, where a weight gradient reads
  // them, in row pairs (rp); the gradient at a layer's output in both, ping-pong.
  const Bf16Kernels* bf16 = nullptr;
  std::vector<uint16_t> in_rm, in_rp, g_rm[2], g_rp[2];
  std::vector<std::vector<uint16_t>> act_rm, act_rp;
  // Layers [first, last) from `a0` (rm, `m` rows; null: the step's own, `part` cast or the layer
  // before's output), each output in act_rm (and act_rp but for the last layer).
  void forward_bf16(const std::vector<Layer>& layers, std::size_t first, std::size_t last, const uint16_t* a0 = nullptr);
  void loss_bf16(const std::vector<Layer>& layers, float norm, float grad_output);
  void backward_bf16(const std::vector<Layer>& layers);
  // Inference: layers [first, last) on x (rows of float32), the last one's output into `out` (bfloat16).
  void forward_bf16_rows(const std::vector<Layer>& layers, const at::Tensor& x, std::size_t first, std::size_t last,
                         at::Tensor& out);
  // A training step in three parts (run back to back, or phase by phase when profiled): layers
  // [first, last) forward; the loss and its gradient; the backward pass.
  template <typename T>
  void forward_layers(const std::vector<Layer>& layers, std::size_t first, std::size_t last);
  template <typename T>
  void loss(const std::vector<Layer>& layers, T norm, T grad_output);
  template <typename T>
  void backward(const std::vector<Layer>& layers);
  // The parts of a step (Part flags) in order, in T.
  template <typename T>
  void run(const std::vector<Layer>& layers, int parts, std::size_t encoder, T norm, T grad_output);
  // Layers [first, last) from input `a`: each output in acts, or the last one in `out` when given.
  template <typename T>
  void chain(const std::vector<Layer>& layers, at::Tensor a, std::size_t first, std::size_t last,
             const at::Tensor* out);
  // The same on Eigen's products, on raw pointers: a step makes no tensor (no view, no dispatch)
  // once the batch is shared out. `a`: m rows; `out`: null for acts.
  template <typename T>
  void chain_eigen(const std::vector<Layer>& layers, const T* a, int64_t m, std::size_t first, std::size_t last,
                   T* out);
  template <typename T>
  void backward_eigen(const std::vector<Layer>& layers);
  // Its buffers for `rows` rows of `layers` (widest: the widest layer or input): amp_bf16's when
  // `bf16` is set (the kernels), else the float ones; the gradient buffers when `grads` (the flat
  // gradients it writes) is defined (training).
  void allocate(const std::vector<Layer>& layers, int64_t rows, int64_t widest, const at::TensorOptions& options,
                const Bf16Kernels* bf16, const at::Tensor& grads);
  // Layers [first, last) on x, the last one's output written to `out` (same rows as x).
  void forward(const std::vector<Layer>& layers, const at::Tensor& x, std::size_t first, std::size_t last,
               at::Tensor& out);
};

namespace fused_worker {

inline at::Tensor rows_of(const at::Tensor& buffer, int64_t rows) { return buffer.narrow(0, 0, rows); }

inline at::Tensor as_matrix(const at::Tensor& flat, int64_t rows, int64_t cols) {
  return flat.narrow(0, 0, rows * cols).view({rows, cols});
}

template <typename T>
void activate_tensor(at::Tensor& t, Activation a) {
  fused_kernels::activate(t.data_ptr<T>(), t.numel(), a);
}

}  // namespace fused_worker

}  // namespace balerbench
