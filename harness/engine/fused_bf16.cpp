// fused_bf16.cpp: one worker's amp_bf16 pass of the fused engine (fused_worker.h), on the bfloat16
// dot-product kernels of bf16_kernels.h: the forward chain, the loss with its gradient, and the
// backward pass, each product with its epilogue in one kernel call, on the worker's bfloat16 tables.
// The weight gradients are written in float32, unrounded: the engine rounds them once, after the
// shards' sum (fused_engine.cpp), as autocast rounds the whole batch's.
#include <algorithm>
#include <cstring>

#include "harness/engine/fused_worker.h"

namespace balerbench {

void FusedWorker::forward_bf16(const std::vector<Layer>& layers, std::size_t first, std::size_t last,
                                            const uint16_t* a0) {
  const int64_t m = rows;
  if (!a0 && first == 0) {  // autocast casts the first product's input
    bf16->cast_input(part.data_ptr<float>(), m, layers.front().in, in_rm.data(), in_rp.data());
    a0 = in_rm.data();
  }
  const uint16_t* a = a0 ? a0 : act_rm[first - 1].data();
  for (std::size_t i = first; i < last; ++i) {
    const Layer& L = layers[i];
    uint16_t* rp = i + 1 < layers.size() ? act_rp[i].data() : nullptr;  // the output layer's feeds no weight gradient
    bf16->forward(a, L.wf.data(), L.bias_f.data(), m, L.out, L.in, L.after, act_rm[i].data(), rp);
    a = act_rm[i].data();
  }
}

void FusedWorker::loss_bf16(const std::vector<Layer>& layers, float norm, float grad_output) {
  const Layer& out = layers.back();
  squared_error = bf16->loss_backward(act_rm.back().data(), part.data_ptr<float>(), rows, out.out, norm, grad_output,
                                      g_rm[0].data(), g_rp[0].data(), grads.data_ptr<float>() + out.bias_offset);
}

void FusedWorker::backward_bf16(const std::vector<Layer>& layers) {
  // Layer by layer: dW = g^T a_in (float32, unrounded); g_in = bf16(g W) * act'(a_in), with db.
  float* grads_base = grads.data_ptr<float>();
  int cur = 0;
  for (std::size_t i = layers.size(); i-- > 0;) {
    const Layer& L = layers[i];
    const uint16_t* a_rp = i == 0 ? in_rp.data() : act_rp[i - 1].data();
    bf16->weight_grad(g_rp[cur].data(), a_rp, rows, L.out, L.in, grads_base + L.weight_offset);
    if (i == 0) break;
    const Layer& below = layers[i - 1];
    bf16->input_grad(g_rm[cur].data(), L.wb.data(), act_rm[i - 1].data(), below.after, rows, L.out, L.in,
                     g_rm[1 - cur].data(), g_rp[1 - cur].data(), grads_base + below.bias_offset);
    cur = 1 - cur;
  }
}

void FusedWorker::forward_bf16_rows(const std::vector<Layer>& layers, const at::Tensor& x,
                                                 std::size_t first, std::size_t last, at::Tensor& out) {
  const at::Tensor xf = x.to(at::kFloat).contiguous();
  rows = xf.size(0);
  bf16->cast_input(xf.data_ptr<float>(), rows, xf.size(1), in_rm.data(), in_rp.data());
  forward_bf16(layers, first, last, in_rm.data());
  // The last output's real columns, row by row (rm rows are padded to an even width).
  const int64_t cols = layers[last - 1].out, ld = bf16_rm_ld(cols);
  const uint16_t* y = act_rm[last - 1].data();
  uint16_t* dst = reinterpret_cast<uint16_t*>(out.data_ptr<at::BFloat16>());
  for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * cols, y + r * ld, static_cast<std::size_t>(cols) * 2);
  rows = 0;
}

}  // namespace balerbench
