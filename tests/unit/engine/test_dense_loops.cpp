// test_dense_loops.cpp: every instruction-set level of the fused engine's loops against the generic
// level, bit for bit, on fresh random inputs (BALERBENCH_TEST_SEED replays a seed).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "harness/engine/dense_loops.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/fused_kernels.h"
#include "tests/test_util.h"
#include "tests/unit/random_rows.h"

namespace balerbench {
namespace {

// The loops of every level this CPU runs give the generic level's bits: the element-wise loops with
// each activation, the bias gradients' column sums, the loss's ordered sum, the gradient sum and
// Adam over several steps. Odd sizes, so that every level runs its vector body and its tail.
template <typename T>
void expect_loops_equal(const DenseLoops& level, const DenseLoops& generic, uint64_t seed) {
  const at::ScalarType dtype = std::is_same<T, double>::value ? at::kDouble : at::kFloat;
  const auto bits_equal = [](const at::Tensor& a, const at::Tensor& b) {
    return a.numel() == b.numel() && std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * a.element_size()) == 0;
  };
  const std::string what = std::string(isa_name(level.level)) + " " + c10::toString(dtype) + ", seed " +
                           std::to_string(seed);
  const auto& k = level.of<T>();
  const auto& g0 = generic.of<T>();
  for (const int64_t rows : {1, 7, 33}) {
    for (const int64_t cols : {1, 15, 37, 200}) {
      const at::Tensor y = random_rows(rows, cols, dtype, seed + rows * 1000 + cols) * 2 - 1;
      const at::Tensor b = random_rows(1, cols, dtype, seed + 7).flatten() - 0.5;
      for (const Activation a : {Activation::kNone, Activation::kLeakyRelu, Activation::kRelu}) {
        at::Tensor y1 = y.clone(), y2 = y.clone();
        k.bias_activate(y1.data_ptr<T>(), b.data_ptr<T>(), rows, cols, a);
        g0.bias_activate(y2.data_ptr<T>(), b.data_ptr<T>(), rows, cols, a);
        EXPECT_TRUE(bits_equal(y1, y2)) << what << ": bias_activate " << rows << "x" << cols;
        at::Tensor g1 = y.flip({1}).contiguous(), g2 = g1.clone();
        at::Tensor db1 = at::full({cols}, 99.0, y.options()), db2 = db1.clone();
        k.activation_backward_and_bias(g1.data_ptr<T>(), y1.data_ptr<T>(), rows, cols, a, db1.data_ptr<T>());
        g0.activation_backward_and_bias(g2.data_ptr<T>(), y2.data_ptr<T>(), rows, cols, a, db2.data_ptr<T>());
        EXPECT_TRUE(bits_equal(g1, g2) && bits_equal(db1, db2)) << what << ": activation_backward " << rows << "x" << cols;
      }
      at::Tensor g1 = at::empty_like(y), g2 = at::empty_like(y);
      at::Tensor db1 = at::full({cols}, 99.0, y.options()), db2 = db1.clone();
      const at::Tensor x = y.flip({0}).contiguous();
      const double s1 = k.loss_backward(y.data_ptr<T>(), x.data_ptr<T>(), g1.data_ptr<T>(), rows, cols, T(2),
                                        T(1) / T(cols), db1.data_ptr<T>());
      const double s2 = g0.loss_backward(y.data_ptr<T>(), x.data_ptr<T>(), g2.data_ptr<T>(), rows, cols, T(2),
                                         T(1) / T(cols), db2.data_ptr<T>());
      EXPECT_TRUE(bits_equal(g1, g2) && bits_equal(db1, db2)) << what << ": loss_backward " << rows << "x" << cols;
      EXPECT_EQ(std::memcmp(&s1, &s2, sizeof s1), 0) << what << ": loss sum " << s1 << " against " << s2;
    }
  }
  const int64_t n = 1003;
  const at::Tensor g = random_rows(1, n, dtype, seed + 11).flatten() - 0.5;
  at::Tensor sum1 = random_rows(1, n, dtype, seed + 12).flatten(), sum2 = sum1.clone();
  k.add_into(sum1.data_ptr<T>(), g.data_ptr<T>(), n);
  g0.add_into(sum2.data_ptr<T>(), g.data_ptr<T>(), n);
  EXPECT_TRUE(bits_equal(sum1, sum2)) << what << ": add_into";
  at::Tensor p1 = random_rows(1, n, dtype, seed + 13).flatten(), p2 = p1.clone();
  at::Tensor m1 = at::zeros({n}, g.options()), m2 = m1.clone(), v1 = m1.clone(), v2 = m1.clone();
  for (int64_t step = 1; step <= 5; ++step) {
    const at::Tensor gs = g * static_cast<double>(step) - 0.1;
    const AdamHyper h{1e-3, 0.9, 0.999, 1e-8, step};
    k.adam(p1.data_ptr<T>(), gs.data_ptr<T>(), m1.data_ptr<T>(), v1.data_ptr<T>(), n, h);
    g0.adam(p2.data_ptr<T>(), gs.data_ptr<T>(), m2.data_ptr<T>(), v2.data_ptr<T>(), n, h);
  }
  EXPECT_TRUE(bits_equal(p1, p2) && bits_equal(m1, m2) && bits_equal(v1, v2)) << what << ": adam";
  EXPECT_FALSE(bits_equal(p1, random_rows(1, n, dtype, seed + 13).flatten())) << what << ": adam left p as it was";
}

TEST(DenseLoops, EveryLevelGivesTheGenericLevelsBits) {
  const uint64_t seed = fresh_seed();
  const DenseLoops& generic = dense_loops(IsaLevel::kGeneric);
  EXPECT_EQ(generic.level, IsaLevel::kGeneric);
  for (IsaLevel level : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (!isa_supported(level)) {
      std::printf("this CPU cannot run the %s loops: not tested here\n", isa_name(level));
      EXPECT_THROW(dense_loops(level), std::invalid_argument);
      continue;
    }
    const DenseLoops& loops = dense_loops(level);
    EXPECT_EQ(loops.level, level);
    expect_loops_equal<float>(loops, generic, seed);
    expect_loops_equal<double>(loops, generic, seed);
  }
}

}  // namespace
}  // namespace balerbench
