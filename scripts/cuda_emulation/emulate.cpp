// emulate.cpp: fused_cuda_kernels.cu's kernels run on the host (shim.h; run.sh makes kernels.inc from
// the .cu) against a float64 reference of the same chain: the gradient of one batch (transpose_weights,
// tile_step, reduce_adam), the batch loss, one Adam step and the transposed copy of the new weights.
// Every buffer, shared memory included, starts as NaN, so an element no thread wrote fails. A check of
// the kernels' indexing and barriers without a GPU; not of the GPU itself (docs/fused_cuda.md).
#include "kernels.inc"

#include "chain.h"

#include <cstdio>
#include <cstring>
#include <random>

namespace {

using namespace balerbench::fused_cuda;

double weight(const LayerTable& n, const std::vector<float>& p, int l, int j, int k) {
  return p[n.weight_offset[l] + static_cast<int64_t>(j) * n.in[l] + k];
}

// Every layer's output in float64: a[0] = x, a[i + 1] = act(a[i] . W_i^T + b_i).
std::vector<Matrix> forward(const LayerTable& n, const std::vector<float>& p, const std::vector<float>& x, int rows) {
  std::vector<Matrix> a(n.layers + 1);
  a[0].assign(x.begin(), x.end());
  for (int i = 0; i < n.layers; ++i) {
    a[i + 1].assign(static_cast<size_t>(rows) * n.out[i], 0.0);
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < n.out[i]; ++j) {
        double z = p[n.bias_offset[i] + j];
        for (int k = 0; k < n.in[i]; ++k) z += a[i][static_cast<size_t>(r) * n.in[i] + k] * weight(n, p, i, j, k);
        a[i + 1][static_cast<size_t>(r) * n.out[i] + j] =
            n.act[i] == kActLeakyRelu ? (z > 0 ? z : 0.01 * z) : n.act[i] == kActRelu ? (z > 0 ? z : 0.0) : z;
      }
  }
  return a;
}

// The gradient in float64 from g = dLoss/dx_hat: dW_i = g^T a_i, db_i = column sums, g = (g W_i) act'.
std::vector<double> backward(const LayerTable& n, const std::vector<float>& p, const std::vector<Matrix>& a, Matrix g,
                             int rows) {
  std::vector<double> grad(n.params, 0.0);
  for (int i = n.layers - 1; i >= 0; --i) {
    for (int j = 0; j < n.out[i]; ++j)
      for (int r = 0; r < rows; ++r) {
        const double gj = g[static_cast<size_t>(r) * n.out[i] + j];
        grad[n.bias_offset[i] + j] += gj;
        for (int k = 0; k < n.in[i]; ++k)
          grad[n.weight_offset[i] + static_cast<int64_t>(j) * n.in[i] + k] += gj * a[i][static_cast<size_t>(r) * n.in[i] + k];
      }
    if (i == 0) break;
    Matrix below(static_cast<size_t>(rows) * n.in[i], 0.0);
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < n.in[i]; ++k) {
        double s = 0;
        for (int j = 0; j < n.out[i]; ++j) s += g[static_cast<size_t>(r) * n.out[i] + j] * weight(n, p, i, j, k);
        const bool positive = a[i][static_cast<size_t>(r) * n.in[i] + k] > 0;
        below[static_cast<size_t>(r) * n.in[i] + k] =
            positive || n.act[i - 1] == kActNone ? s : n.act[i - 1] == kActLeakyRelu ? 0.01 * s : 0.0;
      }
    g.swap(below);
  }
  return grad;
}

struct Emulated {
  std::vector<float> grads, params, weights_t;
  double loss = 0;
};

// The engine's step: transpose_weights, tile_step, reduce_adam (Adam's first step, lr 1e-3).
Emulated emulate(const LayerTable& n, const std::vector<float>& p, const std::vector<float>& x, int rows, int tile_rows,
                 bool mean) {
  const float nan = std::nanf("");
  const int tiles = (rows + tile_rows - 1) / tile_rows;
  const unsigned param_blocks = static_cast<unsigned>((n.params + kAdamThreads - 1) / kAdamThreads);
  Emulated e{std::vector<float>(n.params, nan), p, std::vector<float>(n.params, nan), 0.0};
  std::vector<float> partials(static_cast<size_t>(tiles) * n.params, nan), m(n.params, 0.0f), v(n.params, 0.0f);
  std::vector<double> squares(tiles, std::nan(""));
  std::fill(std::begin(g_smem), std::end(g_smem), nan);
  launch(param_blocks, kAdamThreads, [&] { transpose_weights_kernel(n, p.data(), e.weights_t.data()); });
  const double features = n.n_features;
  TileStepArgs t;
  t.x = x.data(), t.rows = rows, t.params = p.data(), t.weights_t = e.weights_t.data();
  t.partials = partials.data(), t.tile_sq_err = squares.data();
  t.norm = static_cast<float>(mean ? 2.0 / (rows * features) : 2.0);
  t.grad_output = static_cast<float>(mean ? 1.0 : 1.0 / features);
  launch(tiles, kTileThreads, [&] { tile_step_kernel(n, tile_rows, t); });
  ReduceAdamArgs r;
  r.partials = partials.data(), r.tile_sq_err = squares.data(), r.grads = e.grads.data(), r.params = e.params.data();
  r.exp_avg = m.data(), r.exp_avg_sq = v.data(), r.weights_t = e.weights_t.data(), r.loss_sum = &e.loss;
  r.batch_scale = mean ? 1.0 / (rows * features) : 1.0 / features;
  r.bias_correction2_sqrt = static_cast<float>(std::sqrt(1 - 0.999));
  r.one_minus_beta1 = static_cast<float>(1 - 0.9), r.one_minus_beta2 = static_cast<float>(1 - 0.999);
  r.neg_step = -1e-3f / static_cast<float>(1 - 0.9);
  launch(param_blocks, kAdamThreads, [&] { reduce_adam_kernel(n, tiles, r); });
  return e;
}

// One case: the gradient within 1e-5 of the largest (float32 against float64), the loss within 1e-5,
// Adam's first step p - lr g / (|g| + eps) within 1e-6, the transposed copy exact, nothing left NaN.
bool check(const LayerTable& n, int rows, int tile_rows, bool mean, unsigned seed) {
  const int features = n.n_features;
  std::vector<float> p, x;
  draw(n, rows, seed, &p, &x);
  const std::vector<Matrix> a = forward(n, p, x, rows);
  const double norm = mean ? 2.0 / (static_cast<double>(rows) * features) : 2.0, grad_output = mean ? 1.0 : 1.0 / features;
  Matrix g(a[n.layers].size());
  double squares = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = a[n.layers][i] - x[i];
    squares += d * d;
    g[i] = norm * d * grad_output;
  }
  const std::vector<double> ref = backward(n, p, a, g, rows);
  const Emulated e = emulate(n, p, x, rows, tile_rows, mean);
  double largest = 0, diff = 0, adam = 0;
  int unwritten = 0, transposed = 0;
  for (int64_t i = 0; i < n.params; ++i) {
    largest = std::max(largest, std::fabs(ref[i]));
    diff = std::max(diff, std::fabs(e.grads[i] - ref[i]));
    unwritten += !std::isfinite(e.grads[i]) || !std::isfinite(e.params[i]);
    adam = std::max(adam, std::fabs(e.params[i] - (p[i] - 1e-3 * e.grads[i] / (std::fabs(e.grads[i]) + 1e-8))));
  }
  for (int l = 0; l < n.layers; ++l)
    for (int j = 0; j < n.out[l]; ++j)
      for (int k = 0; k < n.in[l]; ++k)
        transposed += e.weights_t[n.weight_offset[l] + static_cast<int64_t>(k) * n.out[l] + j] !=
                      e.params[n.weight_offset[l] + static_cast<int64_t>(j) * n.in[l] + k];
  const double loss = squares * (mean ? 1.0 / (static_cast<double>(rows) * features) : 1.0 / features);
  const bool ok = unwritten == 0 && transposed == 0 && diff <= 1e-5 * largest && std::fabs(e.loss - loss) <= 1e-5 * loss &&
                  adam < 1e-6;
  std::printf("%s %d features, %d rows, tiles of %d, %s: gradient %.2e of the largest, loss %.7g (float64 %.7g), "
              "Adam %.1e, %d unwritten, %d transposed wrong\n", ok ? "ok  " : "FAIL", features, rows, tile_rows,
              mean ? "mse_mean" : "baler_sum", diff / largest, e.loss, loss, adam, unwritten, transposed);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--small") == 0) return check(ae(7, 4), 10, 8, false, 9) ? 0 : 1;
  int failed = 0;
  failed += !check(ae(24, 15), 17, 8, false, 1);
  failed += !check(ae(24, 15), 1, 8, true, 2);
  failed += !check(ae(7, 4), 33, 4, false, 3);
  failed += !check(ae(11, 6), 50, 6, true, 4);
  failed += !check(ae(24, 15), 70, 32, false, 5);
  failed += !check(fpga(), 45, 16, true, 6);
  std::printf("%d of 6 failed\n", failed);
  return failed ? 1 : 0;
}
