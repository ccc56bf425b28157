// fused_cuda_mma_test_util.h: what the tensor-core modes' GPU tests share (test_fused_cuda_mma.cpp,
// test_fused_cuda_scaler.cpp): the modes and their bounds, the reference step (LibTorch's autograd
// under the same precision, as the libtorch engine steps), and the comparisons.
#pragma once

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "harness/engine/cuda/fused_cuda_engine.h"
#include "harness/engine/cuda/fused_cuda_kernels.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/loss.h"
#include "harness/engine/precision.h"
#include "harness/engine/torch_compat.h"
#include "models/autoencoder.h"
#include "tests/gpu/fused_cuda_test_util.h"

namespace balerbench {

// A tensor-core mode and what it is checked with. The gradient bounds, relative to the gradient's
// largest element: the 1e-2 in bfloat16 and float16 (the host emulation, scripts/cuda_emulation,
// measured 4e-4 fp16 and 3.9e-3 bf16 against a float64 reference that rounds where autocast rounds).
// tf32: 5e-3, not the 1e-3. The engine rounds the products' inputs to nearest
// (wmma::__float_to_tf32); cuBLAS's TF32 may truncate them instead, or take a float32 kernel for some
// shapes, and a CPU simulation of AE at 512 rows put those 2e-3 to 1.3e-2 apart (mostly through a
// derivative flipped at a kink), and the same rounding in two summation orders up to 8e-4. The tf32
// test prints both against float32 autograd; tighten after the first GPU run. `rounding`: where the
// mode rounds, for kink_margin.
struct Mode {
  Precision precision;
  const char* name;  // as precision_name() writes it
  double grad_tolerance;
  ChainRounding rounding;
};

inline const Mode kTf32{Precision::kTf32, "tf32", 5e-3, {at::kFloat, true}};
inline const Mode kBf16{Precision::kAmpBf16, "amp_bf16", 1e-2, {at::kBFloat16, false}};
inline const Mode kFp16NoScale{Precision::kAmpFp16NoScale, "amp_fp16_noscale", 1e-2, {at::kHalf, false}};
inline const Mode kFp16{Precision::kAmpFp16, "amp_fp16", 1e-2, {at::kHalf, false}};

constexpr double kLr = 1e-3;
// The loss, in float32 on the output cast back, within 1e-3 relative (the bound).
constexpr double kLossTolerance = 1e-3;
// Draws with a pre-activation within 4 float32 epsilons of a ReLU/LeakyReLU kink, on the chain rounded
// where the mode rounds, are drawn again: the engine and autocast multiply the same rounded operands
// and differ by the float32 summation order. A margin of the mode's own epsilon (bfloat16's 2^-8)
// cannot be kept: a few times the margin of all pre-activations fall within it, thousands in a 512-row
// batch (so every draw would be redrawn). What remains, a one-ulp rounding difference carried to a kink
// further down, moves one row's path: by about 2e-4 of the gradient's largest element at 512 rows,
// 9e-4 at 100, 3e-3 at 17 (one LeakyReLU derivative flipped in AE, float64 on the CPU), within the
// bounds above where such carried flips are likely at all (the large batches).
inline const double kKinkMargin = 4 * std::numeric_limits<float>::epsilon();
constexpr int kMaxDraws = 50;

struct Case {
  const char* model;
  int64_t features;
  int64_t rows;
};

inline std::string case_name(const Mode& m, const Case& c, LossKind loss, uint64_t seed) {
  return std::string(m.name) + ", " + c.model + " " + std::to_string(c.features) + " features, " +
         std::to_string(c.rows) + " rows, " + (loss == LossKind::kBalerSum ? "baler_sum" : "mse_mean") + ", seed " +
         std::to_string(seed);
}

// The case's model with the weights `seed` makes, float32 on the GPU (both sides start from these).
inline std::shared_ptr<AutoEncoder> seeded_model(const Case& c, uint64_t seed) {
  torch::manual_seed(seed);
  auto model = make_model(c.model, c.features, std::max<int64_t>(1, c.features * 10 / 16));
  model->to(kGpu, at::kFloat);
  return model;
}

// One step of the reference, as the libtorch engine takes it (libtorch_engine.cpp, forward_loss and
// run): the forward pass under autocast at the policy's compute type (TF32 products for tf32), the loss
// in float32 on x_hat cast back, autograd's gradient of the (scaled) loss into FlatAdam's flat buffer,
// then GradScaler's unscale_, the masked step and update, or a plain Adam step. cuBLAS's 16-bit
// products sum in float32 here (FullPrecisionReductions), as the engine does. `grads`: the batch's
// gradient before the step (unscaled); `skipped`: the scaler found an inf/NaN and Adam did not step.
struct ReferenceStep {
  at::Tensor grads;
  double loss = 0;
  bool skipped = false;
};
inline ReferenceStep reference_step(AutoEncoder& model, FlatAdam& opt, const at::Tensor& x, LossKind loss,
                                    const PrecisionPolicy& policy, GradScaler* scaler) {
  const Tf32Scope tf32(policy.tf32);
  const FullPrecisionReductions reductions;
  at::Tensor x_hat;
  {
    AutocastScope autocast(c10::kCUDA, policy.compute_dtype, policy.autocast);
    x_hat = model.decode(model.encode(x));
  }
  const at::Tensor l = batch_loss(x_hat.scalar_type() == x.scalar_type() ? x_hat : x_hat.to(x.scalar_type()), x, loss);
  opt.set_grads(torch::autograd::grad({scaler ? scaler->scale(l) : l}, model.parameters(), /*grad_outputs=*/{},
                                      /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true));
  ReferenceStep r;
  r.loss = l.item<double>();
  if (scaler) {
    at::Tensor grads = opt.flat_grads();
    scaler->unscale_(grads);
    r.grads = grads.clone();
    r.skipped = scaler->found_inf().item<float>() != 0.0f;
    opt.step(scaler->found_inf());
    scaler->update();
  } else {
    r.grads = opt.flat_grads().clone();
    opt.step();
  }
  return r;
}

// The engine's batch gradient against the reference's, relative to the reference's largest element.
// Returns the difference.
inline double expect_gradient_near(const at::Tensor& grads, const at::Tensor& ref, double tolerance, const std::string& what) {
  EXPECT_TRUE(grads.isfinite().all().item<bool>())
      << what
      << ": the engine's gradient has inf/NaN (the buffer was NaN before: an element no kernel wrote stays NaN)";
  const double d = max_relative_difference(grads, ref);
  EXPECT_LE(d, tolerance) << what << ": the batch's gradient, engine (forward_backward) vs autograd under the same "
                          << "precision: max |difference| over the reference's largest element (bound " << tolerance
                          << ")";
  return d;
}

// The parameters after one Adam step against the reference's. The step moves each parameter by about
// lr x sign(g), so they agree to 1e-5 of the parameters' scale where the reference's |g| is above
// `sure` of its largest (the sign then certain: `sure` is twice the gradient's bound), and to 2 lr
// everywhere.
inline void expect_params_near(const at::Tensor& params, const at::Tensor& ref_params, const at::Tensor& ref_grads,
                        double sure, const std::string& what) {
  EXPECT_TRUE(params.isfinite().all().item<bool>()) << what << ": the engine's parameters after the step have inf/NaN";
  const at::Tensor certain = ref_grads.abs() > sure * ref_grads.abs().max();
  const double scale = ref_params.abs().max().item<double>();
  const at::Tensor diff = (params - ref_params).abs();
  EXPECT_LE((diff * certain).max().item<double>(), 1e-5 * scale)
      << what << ": parameters after one Adam step, engine vs reference, where |gradient| > " << sure
      << " of its largest (bound 1e-5 x the largest parameter, " << scale << ")";
  EXPECT_LE(diff.max().item<double>(), 2.0001 * kLr)
      << what << ": parameters after one Adam step, engine vs reference, everywhere (bound 2 lr = " << 2 * kLr << ")";
}

// The engine's status names the mode and the tensor cores; its tiles are one MMA block.
inline void expect_tensor_core_status(const FusedCudaEngine& engine, const Mode& m) {
  const std::string products = engine.status().detail("products");
  EXPECT_NE(products.find(std::string("cuda ") + m.name + " "), std::string::npos)
      << "status().detail("products") should name the mode '" << m.name << "': " << products;
  EXPECT_NE(products.find("tensor cores"), std::string::npos)
      << "status().detail("products") should say 'tensor cores' for " << m.name << ": " << products;
  EXPECT_TRUE(engine.tensor_cores()) << m.name;
  EXPECT_EQ(engine.tile_rows(), fused_cuda::kMmaTileRows) << m.name << ": tile rows";
}

// Layer by layer, |engine - reference| / |reference| (L2) within 5e-2: the overall bound is relative
// to the gradient's largest element (a decoder bias), beside which the encoder's first layers are a few
// thousandths, so a wrong first layer (zero, twice, its sign flipped, transposed) would pass it; this
// catches each of those (0.5 to 2), with room over the simulated 2.5e-3 (bf16) and 2.2e-3 (fp16). On a
// failure every layer's figure is printed.
inline void expect_layers_near(AutoEncoder& model, const FlatAdam& opt, const at::Tensor& grads, const at::Tensor& ref,
                               const std::string& what) {
  std::string figures;
  bool all_near = true;
  for (const auto& p : model.named_parameters()) {
    const int64_t offset = (static_cast<const char*>(p.value().data_ptr()) -
                            static_cast<const char*>(opt.flat_params().data_ptr())) / 4;
    const at::Tensor r = ref.narrow(0, offset, p.value().numel());
    const double d = ((grads.narrow(0, offset, p.value().numel()) - r).norm() / r.norm().clamp_min(1e-30)).item<double>();
    all_near = all_near && d <= 5e-2;
    figures += " " + p.key() + " " + std::to_string(d) + ";";
  }
  EXPECT_TRUE(all_near) << what << ": a layer's gradient, engine vs reference, |difference| / |reference| (L2) over "
                        << "5e-2:" << figures;
}

// Calls try_seed(seed) on seeds from *seed on until one is taken (true; false: the draw sat at a kink),
// then moves *seed past it; fails after kMaxDraws draws, naming the last one.
template <typename F>
void draw_until_taken(uint64_t* seed, const F& try_seed, const std::string& what) {
  for (int draws = 1;; ++draws, ++*seed) {
    if (try_seed(*seed)) break;
    ASSERT_LT(draws, kMaxDraws) << what << ", seed " << *seed << ": every draw lands at a kink";
  }
  ++*seed;
}

}  // namespace balerbench
