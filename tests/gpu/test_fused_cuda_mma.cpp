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
// further down, moves one row's path: by about 2e-4 of the gradient's largest element at 512 rows,
// 9e-4 at 100, 3e-3 at 17 (one LeakyReLU derivative flipped in AE, float64 on the CPU), within the
// bounds above where such carried flips are likely at all (the large batches).
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
void expect_params_near(const at::Tensor& params, const at::Tensor& ref_params, const at::Tensor& ref_grads,
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
void expect_tensor_core_status(const FusedCudaEngine& engine, const Mode& m) {
  const std::string products = engine.status().products;
  EXPECT_NE(products.find(std::string("cuda ") + m.name + " "), std::string::npos)
      << "status().products should name the mode '" << m.name << "': " << products;
  EXPECT_NE(products.find("tensor cores"), std::string::npos)
      << "status().products should say 'tensor cores' for " << m.name << ": " << products;
  EXPECT_TRUE(engine.tensor_cores()) << m.name;
  EXPECT_EQ(engine.tile_rows(), fused_cuda::kMmaTileRows) << m.name << ": tile rows";
}

// tf32 only, printed without a bound: the engine's gradient and cuBLAS's TF32 gradient (the reference)
// each against float32 autograd (TF32 off). wmma rounds the products' inputs to nearest; should cuBLAS
// truncate them instead, its products shrink by about 2^-11 each and the reference itself moves by
// about 1e-3, which the second number would show beside a failure of the 1e-3 bound.
void print_tf32_against_fp32(const Case& c, LossKind loss, uint64_t seed, const at::Tensor& x, const at::Tensor& grads,
                             const at::Tensor& ref_grads) {
  auto model = seeded_model(c, seed);
  FlatAdam opt(model->parameters(), kLr);
  const ReferenceStep fp32 =
      reference_step(*model, opt, x, loss, resolve_precision(Precision::kFp32, at::kFloat, kGpu), nullptr);
  std::printf(
      "tf32, %s %lld features, %lld rows: against float32 autograd, the engine's gradient %.3g, cuBLAS TF32's "
      "%.3g of the largest element\n",
      c.model, static_cast<long long>(c.features), static_cast<long long>(c.rows),
      max_relative_difference(grads, fp32.grads), max_relative_difference(ref_grads, fp32.grads));
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
  if (m.rounding.tf32_operands) print_tf32_against_fp32(c, loss, seed, x, opt.flat_grads(), ref.grads);
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
  const std::vector<Case> cases = {{"AE", 24, 1},   {"AE", 24, 17}, {"AE", 24, 100},
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

// (a) A clean amp_fp16 step with loss scaling at 2^8, growth_interval 1: the engine's unscaled gradient
// (forward_backward) against the reference's (GradScaler.scale, autograd in float16, unscale_), the
// loss, the engine's adam_scaled step against FlatAdam's, and the scalers: one step, none skipped, the
// scale grown to 2^9 on both sides. False, with nothing compared, when the draw sits at a kink.
bool expect_scaled_clean_step(const Case& c, LossKind loss, uint64_t seed) {
  GradScalerOptions o;
  o.init_scale = 256.0;
  o.growth_interval = 1;
  const at::Tensor x = case_rows(c.rows, c.features, seed + 1);
  auto reference = seeded_model(c, seed);
  if (kink_margin(*reference, x, kFp16.rounding) < kKinkMargin) return false;
  FlatAdam ref_opt(reference->parameters(), kLr);
  GradScaler ref_scaler(kGpu, o);
  const ReferenceStep ref = reference_step(*reference, ref_opt, x, loss,
                                           resolve_precision(Precision::kAmpFp16, at::kFloat, kGpu), &ref_scaler);
  const std::string what = "scaled by 2^8: " + case_name(kFp16, c, loss, seed);
  EXPECT_FALSE(ref.skipped) << what << ": the reference's float16 gradient overflowed at scale 2^8";
  const at::Tensor ref_params = ref_opt.flat_params().clone();

  auto model = seeded_model(c, seed);
  FlatAdam opt(model->parameters(), kLr);
  GradScaler scaler(kGpu, o);
  FusedCudaEngine engine(*model, opt, loss, c.rows, 0, Precision::kAmpFp16, &scaler);
  expect_tensor_core_status(engine, kFp16);
  EXPECT_EQ(engine.launches_per_step(), 3) << what << ": mma_step, reduce_mma, adam_scaled";
  opt.flat_grads().fill_(std::numeric_limits<float>::quiet_NaN());
  const double fused_loss = engine.forward_backward(x);
  EXPECT_EQ(scaler.found_inf().item<float>(), 0.0f) << what << ": the engine's found_inf after forward_backward";
  expect_gradient_near(opt.flat_grads(), ref.grads, kFp16.grad_tolerance, what + " (both unscaled)");
  EXPECT_NEAR(fused_loss, ref.loss, kLossTolerance * std::abs(ref.loss))
      << what << ": the batch's loss (unscaled), engine vs reference (bound 1e-3 relative)";
  engine.begin_epoch();
  engine.step(x);
  EXPECT_NEAR(engine.epoch_loss_sum(), ref.loss, kLossTolerance * std::abs(ref.loss))
      << what << ": the step's loss (epoch_loss_sum) vs the reference's (bound 1e-3 relative)";
  expect_params_near(opt.flat_params(), ref_params, ref.grads, 2 * kFp16.grad_tolerance, what);
  EXPECT_EQ(opt.steps(), 1) << what << ": optimizer steps (the device's count) after one clean step";
  const GradScalerStats st = scaler.stats(), ref_st = ref_scaler.stats();
  EXPECT_EQ(st.steps, 1) << what << ": the scaler's stats().steps after one engine step";
  EXPECT_EQ(st.skipped_steps, 0) << what << ": the scaler's stats().skipped_steps after a clean step";
  EXPECT_EQ(st.scale, 512.0) << what << ": the scale after one clean step at growth_interval 1 (2^8 grown by 2)";
  EXPECT_EQ(st.scale, ref_st.scale) << what << ": the scale, the engine's scaler vs the reference GradScaler's";
  EXPECT_EQ(scaler.growth_tracker_tensor().item<int>(), ref_scaler.growth_tracker_tensor().item<int>())
      << what << ": the growth tracker, the engine's scaler vs the reference GradScaler's";
  return true;
}

// Copies of FlatAdam's parameters and moments, to compare bit for bit after a skipped step.
struct AdamState {
  at::Tensor params, exp_avg, exp_avg_sq;
};
AdamState adam_state(const FlatAdam& opt) {
  return {opt.flat_params().clone(), opt.flat_exp_avg().clone(), opt.flat_exp_avg_sq().clone()};
}
void expect_state_unchanged(const FlatAdam& opt, const AdamState& before, const std::string& what) {
  EXPECT_TRUE(at::equal(opt.flat_params(), before.params)) << what << ": the parameters moved (must stay bit for bit)";
  EXPECT_TRUE(at::equal(opt.flat_exp_avg(), before.exp_avg))
      << what << ": Adam's exp_avg moved (must stay bit for bit)";
  EXPECT_TRUE(at::equal(opt.flat_exp_avg_sq(), before.exp_avg_sq))
      << what << ": Adam's exp_avg_sq moved (must stay bit for bit)";
}

// 2^40 halved down to 2^-5 at most: far past any float16 overflow of these models' gradients.
constexpr int kMaxBackoffs = 45;

// (c)'s reference: GradScaler + FlatAdam (libtorch_engine.cpp's run) on the same batch from the same
// weights until a step is taken. Where the float16 gradient crosses 65504 the two sides may back off
// once more or less than each other (their roundings differ), so the counts agree within one; Adam's
// first step (about lr x sign(g)) hardly depends on the scale it was taken at.
void expect_backoff_as_reference(const Case& c, LossKind loss, uint64_t seed, const at::Tensor& x,
                                 const GradScalerOptions& o, int64_t skipped, const at::Tensor& params,
                                 const std::string& what) {
  auto reference = seeded_model(c, seed);
  FlatAdam ref_opt(reference->parameters(), kLr);
  GradScaler ref_scaler(kGpu, o);
  const PrecisionPolicy policy = resolve_precision(Precision::kAmpFp16, at::kFloat, kGpu);
  ReferenceStep ref;
  int64_t ref_skipped = 0;
  for (int i = 0; i < kMaxBackoffs; ++i) {
    ref = reference_step(*reference, ref_opt, x, loss, policy, &ref_scaler);
    if (!ref.skipped) break;
    ++ref_skipped;
  }
  std::printf("%s: %lld steps skipped before the first clean one (reference %lld)\n", what.c_str(),
              static_cast<long long>(skipped), static_cast<long long>(ref_skipped));
  ASSERT_FALSE(ref.skipped) << what << ": the reference took no step within " << kMaxBackoffs << " back-offs";
  EXPECT_LE(std::llabs(ref_skipped - skipped), 1)
      << what << ": steps skipped before the first clean one, engine " << skipped << " vs reference " << ref_skipped;
  EXPECT_EQ(ref_opt.steps(), 1) << what << ": the reference's optimizer steps";
  expect_params_near(params, ref_opt.flat_params(), ref.grads, 2 * kFp16.grad_tolerance,
                     what + ", after the first clean step");
}

// (b) amp_fp16 at scale 2^40: the float16 gradient overflows and the step is skipped: parameters and
// Adam's moments bit for bit unchanged, stats() one step and one skipped, the scale halved (2^39), no
// optimizer step counted. (c) The steps that follow on the same batch back off again, each leaving
// everything unchanged, until the scale lets the gradient through; that one is taken: one optimizer
// step, the scale 2^40 x 0.5^skipped, the parameters as the reference's. False at a kink.
bool expect_overflow_backs_off(const Case& c, LossKind loss, uint64_t seed) {
  const at::Tensor x = case_rows(c.rows, c.features, seed + 1);
  auto model = seeded_model(c, seed);
  if (kink_margin(*model, x, kFp16.rounding) < kKinkMargin) return false;
  GradScalerOptions o;
  o.init_scale = std::ldexp(1.0, 40);
  FlatAdam opt(model->parameters(), kLr);
  GradScaler scaler(kGpu, o);
  FusedCudaEngine engine(*model, opt, loss, c.rows, 0, Precision::kAmpFp16, &scaler);
  const std::string what = "scaled by 2^40: " + case_name(kFp16, c, loss, seed);
  const AdamState before = adam_state(opt);
  engine.begin_epoch();
  engine.step(x);
  engine.epoch_loss_sum();  // waits for the step and reads the device's count of Adam's steps
  expect_state_unchanged(opt, before, what + ", (b) the overflowing step");
  const GradScalerStats st = scaler.stats();
  EXPECT_EQ(st.steps, 1) << what << ": (b) the scaler's stats().steps";
  EXPECT_EQ(st.skipped_steps, 1) << what << ": (b) the scaler's stats().skipped_steps";
  EXPECT_EQ(st.scale, std::ldexp(1.0, 39)) << what << ": (b) the scale after the skipped step (2^40 halved)";
  EXPECT_EQ(opt.steps(), 0) << what << ": (b) optimizer steps after the skipped step";
  int64_t skipped = 1;
  while (opt.steps() == 0 && skipped < kMaxBackoffs) {
    engine.step(x);
    engine.epoch_loss_sum();
    if (opt.steps() != 0) break;
    ++skipped;
    expect_state_unchanged(opt, before, what + ", (c) skipped step " + std::to_string(skipped));
  }
  EXPECT_EQ(opt.steps(), 1) << what << ": (c) optimizer steps after the first clean step (none within " << kMaxBackoffs
                            << " back-offs if 0)";
  const GradScalerStats after = scaler.stats();
  EXPECT_EQ(after.skipped_steps, skipped) << what << ": (c) the scaler's skipped steps vs the engine's count";
  EXPECT_EQ(after.steps, skipped + 1) << what << ": (c) the scaler's steps";
  EXPECT_EQ(after.scale, std::ldexp(1.0, 40 - static_cast<int>(skipped)))
      << what << ": (c) the scale, 2^40 x 0.5^skipped";
  expect_backoff_as_reference(c, loss, seed, x, o, skipped, opt.flat_params(), what);
  return true;
}

TEST(FusedCudaMma, Fp16ScaledCleanStepMatchesGradScalerAndAdam) {
  REQUIRE_FUSED_CUDA();
  uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (const Case& c : {Case{"AE", 24, 100}, Case{"FPGA_prototype_model", 13, 33}})
    for (LossKind loss : {LossKind::kBalerSum, LossKind::kMseMean}) {
      int draws = 0;
      while (!expect_scaled_clean_step(c, loss, seed++)) {
        ASSERT_LT(++draws, kMaxDraws) << case_name(kFp16, c, loss, seed) << ": every draw lands at a kink";
      }
    }
}

TEST(FusedCudaMma, Fp16OverflowSkipsTheStepThenBacksOffToACleanOne) {
  REQUIRE_FUSED_CUDA();
  uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  for (LossKind loss : {LossKind::kBalerSum, LossKind::kMseMean}) {
    const Case c{"AE", 24, 100};
    int draws = 0;
    while (!expect_overflow_backs_off(c, loss, seed++)) {
      ASSERT_LT(++draws, kMaxDraws) << case_name(kFp16, c, loss, seed) << ": every draw lands at a kink";
    }
  }
}

// 50 epochs of fit, shuffled, 20,000 rows at batch 512 (a short last batch each epoch), fused against
// libtorch at the same precision from the same weights and permutations (FusedCuda's
// FiftyEpochTrajectoryFollowsLibtorch, per mode). amp_fp16 gets its GradScaler from fit, starting at
// 2^8 on both sides (the weights' gradients, summed over 512 rows, reach some tens): below float16's
// overflow, so that neither side skips a step the other takes (the overflow path is the test above).
// Bounds: the first epoch within 1e-2 relative; every epoch within 5%, a first guess.
void expect_trajectory_follows_libtorch(const Mode& m) {
  const uint64_t seed = fresh_seed();
  std::printf("%s: seed %llu\n", m.name, static_cast<unsigned long long>(seed));
  const at::Tensor x = random_rows(20000, 24, at::kFloat, seed).to(kGpu);
  TrainOptions ref_options = trajectory_options(EngineKind::kLibtorch, 50, 512, m.precision);
  TrainOptions fused_options = trajectory_options(EngineKind::kFused, 50, 512, m.precision);
  ref_options.grad_scaler.init_scale = fused_options.grad_scaler.init_scale = 256.0;
  TrainResult ref_result, fused_result;
  const std::vector<double> ref = train_losses(ref_options, x, seed, &ref_result);
  const std::vector<double> fused = train_losses(fused_options, x, seed, &fused_result);
  EXPECT_EQ(fused_result.engine, EngineKind::kFused) << m.name << ": the engine fit ran";
  const std::string products = fused_result.engine_status.products;
  std::printf("%s: engine status: %s\n", m.name, products.c_str());
  EXPECT_NE(products.find(m.name), std::string::npos) << "status().products should name " << m.name << ": " << products;
  EXPECT_NE(products.find("tensor cores"), std::string::npos) << m.name << ": status().products: " << products;
  if (m.precision == Precision::kAmpFp16)
    std::printf("%s: scaler: libtorch scale %g, %lld skipped; fused scale %g, %lld skipped\n", m.name,
                ref_result.scaler.scale, static_cast<long long>(ref_result.scaler.skipped_steps),
                fused_result.scaler.scale, static_cast<long long>(fused_result.scaler.skipped_steps));
  ASSERT_EQ(ref.size(), fused.size()) << m.name << ": epochs run, libtorch vs fused";
  ASSERT_FALSE(ref.empty()) << m.name;
  EXPECT_NEAR(fused[0], ref[0], 1e-2 * ref[0])
      << m.name << ": the first epoch's loss, fused vs libtorch (bound 1e-2 relative)";
  double worst = 0;
  for (std::size_t e = 0; e < ref.size(); ++e) {
    const double d = std::abs(fused[e] - ref[e]) / ref[e];
    worst = std::max(worst, d);
    EXPECT_LE(d, 0.05) << m.name << ": epoch " << e + 1 << "'s loss, fused " << fused[e] << " vs libtorch " << ref[e]
                       << " (bound 5% relative)";
    if (e % 10 == 9) std::printf("%s: epoch %zu: libtorch %.6g fused %.6g\n", m.name, e + 1, ref[e], fused[e]);
  }
  std::printf(
      "%s: largest relative difference over %zu epochs: %.3g (bound 5%%, a first guess: tighten it to about "
      "twice the largest seen after the first GPU run)\n",
      m.name, ref.size(), worst);
  EXPECT_LT(fused.back(), 0.5 * fused.front()) << m.name << ": the fused run's loss should halve in 50 epochs";
}

TEST(FusedCudaMma, FiftyEpochTrajectoryTf32FollowsLibtorch) {
  REQUIRE_FUSED_CUDA();
  expect_trajectory_follows_libtorch(kTf32);
}

TEST(FusedCudaMma, FiftyEpochTrajectoryBf16FollowsLibtorch) {
  REQUIRE_FUSED_CUDA();
  expect_trajectory_follows_libtorch(kBf16);
}

TEST(FusedCudaMma, FiftyEpochTrajectoryFp16FollowsLibtorch) {
  REQUIRE_FUSED_CUDA();
  expect_trajectory_follows_libtorch(kFp16);
}

// A short run for compute-sanitizer (memcheck, racecheck, synccheck: scripts/gpu_check.sh fused), in
// each tensor-core mode through fit: 2 epochs of 300 rows at batch 128 (two full batches and a short
// one of 44 rows, whose last tile is partial), amp_fp16 with its scaler's three kernels.
TEST(FusedCudaMma, ShortRunForTheSanitizers) {
  REQUIRE_FUSED_CUDA();
  const at::Tensor x = random_rows(300, 24, at::kFloat, 3).to(kGpu);
  for (const Mode* m : {&kTf32, &kBf16, &kFp16}) {
    TrainResult result;
    const std::vector<double> losses =
        train_losses(trajectory_options(EngineKind::kFused, 2, 128, m->precision), x, 3, &result);
    EXPECT_EQ(result.engine, EngineKind::kFused) << m->name << ": the engine fit ran";
    ASSERT_EQ(losses.size(), 2u) << m->name << ": epochs run";
    for (double l : losses) EXPECT_TRUE(std::isfinite(l)) << m->name << ": an epoch's loss is " << l;
  }
}

}  // namespace
}  // namespace balerbench
