// test_fused_cuda_mma.cpp: the fused CUDA engine's tensor-core modes (fused_cuda_mma.cu: tf32,
// amp_bf16, amp_fp16_noscale, amp_fp16) against LibTorch's autograd under the same precision on the
// same GPU, and against the libtorch engine through fit; fresh random inputs each run (the seed is
// printed; BALERBENCH_TEST_SEED replays one). Compiled into gpu_tests only in a build with the engine
// (BALERBENCH_CUDA_ENGINE; tests/CMakeLists.txt); every test skips without a CUDA GPU. The fp32 mode's
// tests are test_fused_cuda.cpp; docs/fused_cuda.md lists what a GPU run must show.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "harness/engine/cuda/fused_cuda_engine.h"
#include "harness/engine/cuda/fused_cuda_kernels.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/loss.h"
#include "harness/engine/precision.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "models/autoencoder.h"
#include "tests/gpu/fused_cuda_test_util.h"
#include "tests/unit/random_rows.h"

namespace balerbench {
namespace {

// A tensor-core mode and what it is checked with. The gradient bounds, relative to the gradient's
// largest element, are the issue's: 1e-2 in bfloat16 and float16, 1e-3 in tf32 (the host emulation,
// scripts/cuda_emulation, measured 4e-4 fp16, 3.9e-3 bf16 and 4.4e-5 tf32 against a float64 reference
// that rounds where autocast rounds). `rounding`: where the mode rounds, for kink_margin.
struct Mode {
  Precision precision;
  const char* name;  // as precision_name() writes it
  double grad_tolerance;
  ChainRounding rounding;
};

const Mode kTf32{Precision::kTf32, "tf32", 1e-3, {at::kFloat, true}};
const Mode kBf16{Precision::kAmpBf16, "amp_bf16", 1e-2, {at::kBFloat16, false}};
const Mode kFp16NoScale{Precision::kAmpFp16NoScale, "amp_fp16_noscale", 1e-2, {at::kHalf, false}};
const Mode kFp16{Precision::kAmpFp16, "amp_fp16", 1e-2, {at::kHalf, false}};

constexpr double kLr = 1e-3;
// The loss, in float32 on the output cast back, within 1e-3 relative (the bound).
constexpr double kLossTolerance = 1e-3;
// Draws with a pre-activation within 4 float32 epsilons of a ReLU/LeakyReLU kink, on the chain rounded
// where the mode rounds, are drawn again: the engine and autocast multiply the same rounded operands
// and differ by the float32 summation order. A margin of the mode's own epsilon (bfloat16's 2^-8)
// cannot be kept: about 9 x margin of all pre-activations fall within it, thousands in a 512-row batch
// (so every draw would be redrawn). What remains, a one-ulp rounding difference carried to a kink
// further down, moves one row's path; the batch bounds above absorb it.
const double kKinkMargin = 4 * std::numeric_limits<float>::epsilon();
constexpr int kMaxDraws = 50;

struct Case {
  const char* model;
  int64_t features;
  int64_t rows;
};

std::string case_name(const Mode& m, const Case& c, LossKind loss, uint64_t seed) {
  return std::string(m.name) + ", " + c.model + " " + std::to_string(c.features) + " features, " +
         std::to_string(c.rows) + " rows, " + (loss == LossKind::kBalerSum ? "baler_sum" : "mse_mean") + ", seed " +
         std::to_string(seed);
}

// The case's model with the weights `seed` makes, float32 on the GPU (both sides start from these).
std::shared_ptr<AutoEncoder> seeded_model(const Case& c, uint64_t seed) {
  torch::manual_seed(seed);
  auto model = make_model(c.model, c.features, std::max<int64_t>(1, c.features * 10 / 16));
  model->to(kGpu, at::kFloat);
  return model;
}

// cuBLAS's float32 products in TF32 for its scope (the tf32 reference), the previous setting restored.
class AllowTf32CuBlas {
 public:
  explicit AllowTf32CuBlas(bool on) : previous_(at::globalContext().allowTF32CuBLAS()) {
    at::globalContext().setAllowTF32CuBLAS(on);
  }
  ~AllowTf32CuBlas() { at::globalContext().setAllowTF32CuBLAS(previous_); }
  AllowTf32CuBlas(const AllowTf32CuBlas&) = delete;
  AllowTf32CuBlas& operator=(const AllowTf32CuBlas&) = delete;

 private:
  bool previous_;
};

// One step of the reference, as the libtorch engine takes it (libtorch_engine.cpp, forward_loss and
// run): the forward pass under autocast at the policy's compute type (TF32 products for tf32), the loss
// in float32 on x_hat cast back, autograd's gradient of the (scaled) loss into FlatAdam's flat buffer,
// then GradScaler's unscale_, the masked step and update, or a plain Adam step. `grads`: the batch's
// gradient before the step (unscaled); `skipped`: the scaler found an inf/NaN and Adam did not step.
struct ReferenceStep {
  at::Tensor grads;
  double loss = 0;
  bool skipped = false;
};
ReferenceStep reference_step(AutoEncoder& model, FlatAdam& opt, const at::Tensor& x, LossKind loss,
                             const PrecisionPolicy& policy, GradScaler* scaler) {
  const AllowTf32CuBlas tf32(policy.tf32);
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
double expect_gradient_near(const at::Tensor& grads, const at::Tensor& ref, double tolerance, const std::string& what) {
  EXPECT_TRUE(grads.isfinite().all().item<bool>())
      << what << ": the engine's gradient has inf/NaN (the buffer was NaN before: an element no kernel wrote stays NaN)";
  const double d = max_relative_difference(grads, ref);
  EXPECT_LE(d, tolerance) << what << ": the batch's gradient, engine (forward_backward) vs autograd under the same "
                          << "precision: max |difference| over the reference's largest element (bound " << tolerance << ")";
  return d;
}

// The parameters after one Adam step against the reference's. The step moves each parameter by about
// lr x sign(g), so they agree to 1e-5 of the parameters' scale where the reference's |g| is above
// `sure` of its largest (the sign then certain: `sure` is twice the gradient's bound), and to 2 lr
// everywhere.
void expect_params_near(const at::Tensor& params, const at::Tensor& ref_params, const at::Tensor& ref_grads, double sure,
                        const std::string& what) {
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
void expect_tensor_core_status(const FusedCudaEngine& engine, const Mode& m) {
  const std::string products = engine.status().products;
  EXPECT_NE(products.find(std::string("cuda ") + m.name + " "), std::string::npos)
      << "status().products should name the mode '" << m.name << "': " << products;
  EXPECT_NE(products.find("tensor cores"), std::string::npos)
      << "status().products should say 'tensor cores' for " << m.name << ": " << products;
  EXPECT_TRUE(engine.tensor_cores()) << m.name;
  EXPECT_EQ(engine.tile_rows(), fused_cuda::kMmaTileRows) << m.name << ": tile rows";
}

// One batch in mode m (no loss scaling): autograd's gradient and Adam step under the same precision,
// then the engine's gradient (FlatAdam's gradient buffer poisoned with NaN first), loss and step from
// the same weights. False, with nothing compared, when the draw sits at a kink; *worst: the largest
// gradient difference seen.
bool expect_mode_step_matches(const Mode& m, const Case& c, LossKind loss, uint64_t seed, double* worst) {
  const at::Tensor x = case_rows(c.rows, c.features, seed + 1);
  auto reference = seeded_model(c, seed);
  if (kink_margin(*reference, x, m.rounding) < kKinkMargin) return false;
  FlatAdam ref_opt(reference->parameters(), kLr);
  const ReferenceStep ref =
      reference_step(*reference, ref_opt, x, loss, resolve_precision(m.precision, at::kFloat, kGpu), nullptr);
  const at::Tensor ref_params = ref_opt.flat_params().clone();

  auto model = seeded_model(c, seed);
  FlatAdam opt(model->parameters(), kLr);
  FusedCudaEngine engine(*model, opt, loss, c.rows, 0, m.precision);
  const std::string what = case_name(m, c, loss, seed);
  expect_tensor_core_status(engine, m);
  opt.flat_grads().fill_(std::numeric_limits<float>::quiet_NaN());  // every element must be written
  const double fused_loss = engine.forward_backward(x);
  *worst = std::max(*worst, expect_gradient_near(opt.flat_grads(), ref.grads, m.grad_tolerance, what));
  EXPECT_NEAR(fused_loss, ref.loss, kLossTolerance * std::abs(ref.loss))
      << what << ": the batch's loss, engine (forward_backward) vs reference (bound 1e-3 relative)";
  engine.begin_epoch();
  engine.step(x);
  EXPECT_NEAR(engine.epoch_loss_sum(), ref.loss, kLossTolerance * std::abs(ref.loss))
      << what << ": the step's loss (epoch_loss_sum) vs the reference's (bound 1e-3 relative)";
  expect_params_near(opt.flat_params(), ref_params, ref.grads, 2 * m.grad_tolerance, what);
  EXPECT_EQ(opt.steps(), 1) << what << ": optimizer steps after one engine step";
  return true;
}

// AE at 24 features in batches of one row, of a partial 16-row tile, of several tiles with a short
// last one, and a full 512-row batch; AE at 7 features and FPGA_prototype_model's ReLU chain at 13
// (widths padded to 16); both losses.
void expect_one_step_cases(const Mode& m) {
  uint64_t seed = fresh_seed();
  std::printf("%s: seed %llu\n", m.name, static_cast<unsigned long long>(seed));
  const std::vector<Case> cases = {{"AE", 24, 1},  {"AE", 24, 17}, {"AE", 24, 100},
                                   {"AE", 24, 512}, {"AE", 7, 45},  {"FPGA_prototype_model", 13, 33}};
  double worst = 0;
  for (const Case& c : cases)
    for (LossKind loss : {LossKind::kBalerSum, LossKind::kMseMean}) {
      int draws = 0;
      while (!expect_mode_step_matches(m, c, loss, seed++, &worst)) {
        ASSERT_LT(++draws, kMaxDraws) << case_name(m, c, loss, seed) << ": every draw lands at a kink";
      }
    }
  std::printf("%s: largest gradient difference %.3g of the largest element (bound %.0e)\n", m.name, worst,
              m.grad_tolerance);
}

TEST(FusedCudaMma, OneStepTf32EqualsAutogradUnderTf32) {
  REQUIRE_FUSED_CUDA();
  expect_one_step_cases(kTf32);
}

TEST(FusedCudaMma, OneStepBf16EqualsAutogradUnderAutocast) {
  REQUIRE_FUSED_CUDA();
  expect_one_step_cases(kBf16);
}

TEST(FusedCudaMma, OneStepFp16NoScaleEqualsAutogradUnderAutocast) {
  REQUIRE_FUSED_CUDA();
  expect_one_step_cases(kFp16NoScale);
}

}  // namespace
}  // namespace balerbench
