// fused_worker.cpp: see fused_worker.h. Compiled with fused_engine.cpp's flags (harness/CMakeLists.txt):
// the same arithmetic, the same bits.
#include "harness/engine/fused_worker.h"

#include <algorithm>

namespace balerbench {
using namespace fused_kernels;
using fused_worker::activate_tensor;
using fused_worker::as_matrix;
using fused_worker::rows_of;

template <typename T>
void FusedWorker::chain(const std::vector<Layer>& layers, at::Tensor a, std::size_t first, std::size_t last,
                                     const at::Tensor* out) {
  const int64_t m = a.size(0);
  if (products && a.is_contiguous() && (!out || out->is_contiguous())) {
    chain_eigen<T>(layers, a.data_ptr<T>(), m, first, last, out ? out->data_ptr<T>() : nullptr);
    return;
  }
  for (std::size_t i = first; i < last; ++i) {
    at::Tensor y = out && i + 1 == last ? *out : rows_of(acts[i], m);
    if (y.is_contiguous() && products && a.is_contiguous()) {
      // (m x out) = (m x in) . (out x in)^T
      products->of<T>().forward(a.data_ptr<T>(), layers[i].weight.data_ptr<T>(), y.data_ptr<T>(), m, layers[i].out,
                                layers[i].in);
      loops->of<T>().bias_activate(y.data_ptr<T>(), layers[i].bias.data_ptr<T>(), m, layers[i].out, layers[i].after);
    } else if (y.is_contiguous()) {
      at::mm_out(y, a, layers[i].weight.t());
      loops->of<T>().bias_activate(y.data_ptr<T>(), layers[i].bias.data_ptr<T>(), m, layers[i].out, layers[i].after);
    } else {
      at::addmm_out(y, layers[i].bias, a, layers[i].weight.t());
      activate_tensor<T>(y, layers[i].after);
    }
    a = y;
  }
}

template <typename T>
void FusedWorker::chain_eigen(const std::vector<Layer>& layers, const T* a, int64_t m, std::size_t first,
                                           std::size_t last, T* out) {
  const DenseProductKernels<T>& k = products->of<T>();
  const DenseLoopKernels<T>& e = loops->of<T>();
  for (std::size_t i = first; i < last; ++i) {
    const Layer& L = layers[i];
    T* y = out && i + 1 == last ? out : acts[i].data_ptr<T>();
    k.forward(a, L.weight.data_ptr<T>(), y, m, L.out, L.in);  // (m x out) = (m x in) . (out x in)^T
    e.bias_activate(y, L.bias.data_ptr<T>(), m, L.out, L.after);
    a = y;
  }
}

void FusedWorker::forward(const std::vector<Layer>& layers, const at::Tensor& x, std::size_t first,
                                       std::size_t last, at::Tensor& out) {
  if (x.scalar_type() == at::kDouble)
    chain<double>(layers, x, first, last, &out);
  else
    chain<float>(layers, x, first, last, &out);
}

template <typename T>
void FusedWorker::forward_layers(const std::vector<Layer>& layers, std::size_t first, std::size_t last) {
  if (products)  // part is contiguous (split_batch), acts too
    chain_eigen<T>(layers, first == 0 ? part.data_ptr<T>() : acts[first - 1].data_ptr<T>(), rows, first, last, nullptr);
  else
    chain<T>(layers, first == 0 ? part : rows_of(acts[first - 1], rows), first, last, nullptr);
}

template <typename T>
void FusedWorker::run(const std::vector<Layer>& layers, int parts, std::size_t encoder, T norm,
                                   T grad_output) {
  if (parts & kForwardEncoder) forward_layers<T>(layers, 0, encoder);
  if (parts & kForwardDecoder) forward_layers<T>(layers, encoder, layers.size());
  if (parts & kLoss) loss<T>(layers, norm, grad_output);
  if (parts & kBackward) backward<T>(layers);
}

template <typename T>
void FusedWorker::loss(const std::vector<Layer>& layers, T norm, T grad_output) {
  // The loss's gradient, with the output layer's bias gradient on the way.
  // acts.back() (max_rows x out) holds x_hat in its first `rows` rows.
  const Layer& out = layers.back();
  squared_error = loops->of<T>().loss_backward(acts.back().data_ptr<T>(), part.data_ptr<T>(), grad_a.data_ptr<T>(), rows,
                                               out.out, norm, grad_output, grads.data_ptr<T>() + out.bias_offset);
}

template <typename T>
void FusedWorker::backward(const std::vector<Layer>& layers) {
  if (products) {
    backward_eigen<T>(layers);
    return;
  }
  // Layer by layer: dW = g^T a_in; g_in = (g W) * activation'(a_in), with db fused.
  const int64_t m = rows;
  T* grads_base = grads.data_ptr<T>();
  at::Tensor g = as_matrix(grad_a, m, layers.back().out);
  at::Tensor* spare = &grad_b;
  for (std::size_t i = layers.size(); i-- > 0;) {
    const Layer& L = layers[i];
    const at::Tensor a_in = i == 0 ? part : rows_of(acts[i - 1], m);
    if (products)  // dW (out x in) = g^T (out x m) . a_in (m x in)
      products->of<T>().weight_grad(g.data_ptr<T>(), a_in.data_ptr<T>(), weight_grads[i].data_ptr<T>(), m, L.out, L.in);
    else
      at::mm_out(weight_grads[i], g.t(), a_in);
    if (i == 0) break;
    at::Tensor g_in = as_matrix(*spare, m, L.in);
    if (products)  // g_in (m x in) = g (m x out) . W (out x in)
      products->of<T>().input_grad(g.data_ptr<T>(), L.weight.data_ptr<T>(), g_in.data_ptr<T>(), m, L.out, L.in);
    else
      at::mm_out(g_in, g, L.weight);
    const Layer& below = layers[i - 1];
    loops->of<T>().activation_backward_and_bias(g_in.data_ptr<T>(), a_in.data_ptr<T>(), m, L.in, below.after,
                                                grads_base + below.bias_offset);
    spare = spare == &grad_b ? &grad_a : &grad_b;
    g = g_in;
  }
}

template <typename T>
void FusedWorker::backward_eigen(const std::vector<Layer>& layers) {
  // As backward(), on pointers: g and spare take turns in grad_a and grad_b (m x width, flat);
  // weight_grads[i] is grads + L.weight_offset.
  const int64_t m = rows;
  const DenseProductKernels<T>& k = products->of<T>();
  const DenseLoopKernels<T>& e = loops->of<T>();
  T* grads_base = grads.data_ptr<T>();
  T* g = grad_a.data_ptr<T>();
  T* spare = grad_b.data_ptr<T>();
  for (std::size_t i = layers.size(); i-- > 0;) {
    const Layer& L = layers[i];
    const T* a_in = i == 0 ? part.data_ptr<T>() : acts[i - 1].data_ptr<T>();
    k.weight_grad(g, a_in, grads_base + L.weight_offset, m, L.out, L.in);  // dW (out x in) = g^T . a_in
    if (i == 0) break;
    k.input_grad(g, L.weight.data_ptr<T>(), spare, m, L.out, L.in);  // g_in (m x in) = g (m x out) . W
    const Layer& below = layers[i - 1];
    e.activation_backward_and_bias(spare, a_in, m, L.in, below.after, grads_base + below.bias_offset);
    std::swap(g, spare);
  }
}

void FusedWorker::allocate(const std::vector<Layer>& layers, int64_t rows, int64_t widest,
                                        const at::TensorOptions& options, const Bf16Kernels* kernels,
                                        const at::Tensor& flat_grads) {
  max_rows = rows;
  bf16 = kernels;
  if (bf16) {  // zero-filled: the kernels write real rows and columns only, and the padding stays zero
    const auto sized = [](int64_t n) { return std::vector<uint16_t>(static_cast<std::size_t>(n), 0); };
    for (const Layer& L : layers) {
      act_rm.push_back(sized(bf16_rm_size(rows, L.out)));
      act_rp.push_back(sized(bf16_rp_size(rows, L.out)));
    }
    in_rm = sized(bf16_rp_size(rows, widest));  // the input of any layer (inference starts at the decoder's)
    in_rp = sized(bf16_rp_size(rows, widest));
    for (int i = 0; i < 2; ++i) {
      g_rm[i] = sized(bf16_rp_size(rows, widest));
      g_rp[i] = sized(bf16_rp_size(rows, widest));
    }
  } else {
    for (const Layer& L : layers) acts.push_back(at::empty({rows, L.out}, options));
  }
  if (flat_grads.defined()) {
    grads = flat_grads;
    if (!bf16) {
      grad_a = at::empty({rows * widest}, options);
      grad_b = at::empty({rows * widest}, options);
    }
    for (const Layer& L : layers)
      weight_grads.push_back(grads.narrow(0, L.weight_offset, L.out * L.in).view({L.out, L.in}));
  }
}

// The instantiations fused_engine.cpp uses.
template void FusedWorker::run<double>(const std::vector<Layer>&, int, std::size_t, double, double);
template void FusedWorker::run<float>(const std::vector<Layer>&, int, std::size_t, float, float);
template void FusedWorker::chain<double>(const std::vector<Layer>&, at::Tensor, std::size_t, std::size_t,
                                                      const at::Tensor*);
template void FusedWorker::chain<float>(const std::vector<Layer>&, at::Tensor, std::size_t, std::size_t,
                                                     const at::Tensor*);
template void FusedWorker::backward<double>(const std::vector<Layer>&);
template void FusedWorker::backward<float>(const std::vector<Layer>&);

}  // namespace balerbench
