// dense_loops.h: the element-wise loops of the fused engine's step (the activation with the forward
// product's bias, the loss with its gradient, the activation's derivative with the bias gradient,
// the sum of the shards' gradients, and Adam), compiled once per instruction-set level as the
// products are (dense_products.h) and chosen with them at run time.
//
// Every level gives the same bits (NaNs aside: a NaN's sign and payload may differ, as the vector
// code may take an addition's operands the other way round): each loop is vectorised across
// elements or columns only (a bias gradient sums its column over the rows in row order; the loss's
// sum of squares stays one ordered scalar sum), the files are built with -ffp-contract=off (no fused multiply-add where the source
// has a multiply and an add) and sqrt and division are correctly rounded at every width.
// tests/unit/engine/test_dense_loops.cpp checks it level against level.
//
// Shapes (row-major, contiguous): y, g (rows x cols); b, db (cols); the rest flat (n).
#pragma once

#include <cstdint>

#include "harness/engine/isa_level.h"

namespace balerbench {

// What follows a Linear layer in the fused engine's chains.
enum class Activation { kNone, kLeakyRelu, kRelu };

// torch::optim::Adam's step (1.13) for one range of a flat buffer, the step count `step` >= 1.
struct AdamHyper {
  double lr, beta1, beta2, eps;
  int64_t step;
};

template <typename T>
struct DenseLoopKernels {
  // y = activation(y + b), b broadcast over the rows; the sum rounded as addmm's (product, then bias).
  void (*bias_activate)(T* y, const T* b, int64_t rows, int64_t cols, Activation a);
  // g *= activation'(y), y the activation's output (autograd's rule), and db = the new g's column sums.
  void (*activation_backward_and_bias)(T* g, const T* y, int64_t rows, int64_t cols, Activation a, T* db);
  // g = (norm * (x_hat - x)) * grad_output (mse_loss_backward's order), db = g's column sums;
  // returns the sum of squared differences, in double, in element order.
  double (*loss_backward)(const T* x_hat, const T* x, T* g, int64_t rows, int64_t cols, T norm, T grad_output, T* db);
  // sum[i] += g[i]
  void (*add_into)(T* sum, const T* g, int64_t n);
  // Adam on n elements: p, m, v updated from g.
  void (*adam)(T* p, const T* g, T* m, T* v, int64_t n, const AdamHyper& h);
};

struct DenseLoops {
  IsaLevel level = IsaLevel::kGeneric;
  DenseLoopKernels<float> f32;
  DenseLoopKernels<double> f64;
  template <typename T>
  const DenseLoopKernels<T>& of() const;
};
template <>
inline const DenseLoopKernels<float>& DenseLoops::of<float>() const { return f32; }
template <>
inline const DenseLoopKernels<double>& DenseLoops::of<double>() const { return f64; }

// The loops of `level`; std::invalid_argument when this CPU cannot run it.
const DenseLoops& dense_loops(IsaLevel level);

// Per level (dense_loops_*.cpp); call only through dense_loops().
const DenseLoops& dense_loops_generic();
const DenseLoops& dense_loops_avx2();
const DenseLoops& dense_loops_avx512();

}  // namespace balerbench
