// fused_cuda_test_util.h: what the fused CUDA engine's GPU tests share (test_fused_cuda.cpp, fp32;
// test_fused_cuda_mma.cpp, the tensor-core modes): the skip without the engine or a GPU, the device,
// the relative difference, the kink margin of a draw, the rows of a case and fit's losses.
#pragma once

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "harness/engine/cuda/fused_cuda_engine.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/precision.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "models/autoencoder.h"
#include "tests/unit/random_rows.h"

namespace balerbench {

#define REQUIRE_FUSED_CUDA()                                                                                 \
  do {                                                                                                       \
    if (!fused_cuda_built()) GTEST_SKIP() << "built without the CUDA fused engine (BALERBENCH_CUDA_ENGINE)"; \
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible to LibTorch";                     \
  } while (0)

inline const c10::Device kGpu(c10::kCUDA, 0);

// cuBLAS's 16-bit products summed in float32 for its scope (no reduced-precision split-K partial
// sums), then allowed again: LibTorch's default, there being no portable getter (torch_compat.h).
class FullPrecisionReductions {
 public:
  FullPrecisionReductions() { set_allow_reduced_precision_reduction(false); }
  ~FullPrecisionReductions() { set_allow_reduced_precision_reduction(true); }
  FullPrecisionReductions(const FullPrecisionReductions&) = delete;
  FullPrecisionReductions& operator=(const FullPrecisionReductions&) = delete;
};

// max |a - b| over max |b|: a difference relative to b's largest element.
inline double max_relative_difference(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a - b).abs().max().item<double>() / std::max(scale, 1e-300);
}

// How a chain rounds what it stores and what its products multiply, for kink_margin. The default
// rounds nothing (fp32 against a float64 chain); autocast's modes store in float16 or bfloat16; tf32
// stores float32 and rounds the products' inputs to tf32 (round to nearest, ties away: wmma's
// __float_to_tf32 and cvt.rna).
struct ChainRounding {
  at::ScalarType stored = at::kDouble;  // kDouble: not rounded
  bool tf32_operands = false;
};

// t (float64) as `stored` would hold it, back in float64.
inline at::Tensor stored_as(const at::Tensor& t, at::ScalarType stored) {
  return stored == at::kDouble ? t : t.to(stored).to(at::kDouble);
}

// t (float64) rounded to float32, then to tf32's 10 mantissa bits (nearest, ties away from zero: adding
// half of the dropped 13 bits' range to the magnitude's bits carries into the kept ones).
inline at::Tensor tf32_operand(const at::Tensor& t) {
  const at::Tensor bits = t.to(at::kFloat).contiguous().view(at::kInt);
  return bits.add(0x1000).bitwise_and(static_cast<int32_t>(0xFFFFE000u)).view(at::kFloat).to(at::kDouble);
}

// The smallest |z| / (|a|.|w| + |b|) over the pre-activations z of layers followed by ReLU or
// LeakyReLU, in float64 on the chain rounded as `r` says (tests/unit/engine/test_fused_engine.cpp's
// kink_margin, for these models): within a few float32 epsilons of a kink, two summation orders of
// the same operands may take different derivatives, and the draw is drawn again.
inline double kink_margin(AutoEncoder& model, const at::Tensor& x, const ChainRounding& r = {}) {
  at::NoGradGuard no_grad;
  const auto operand = [&r](const at::Tensor& t) { return r.tf32_operands ? tf32_operand(t) : t; };
  std::map<std::string, at::Tensor> params;
  for (const auto& p : model.named_parameters())
    params[p.key()] = stored_as(p.value().to(at::kCPU, at::kDouble), r.stored);
  at::Tensor a = stored_as(x.to(at::kCPU, at::kDouble), r.stored);
  double margin = std::numeric_limits<double>::infinity();
  for (const LayerSpec& l : model.architecture().layers) {
    const at::Tensor w = operand(params.at(l.name + ".weight"));
    const at::Tensor& b = params.at(l.name + ".bias");
    const at::Tensor in = operand(a);
    const at::Tensor z = at::addmm(b, in, w.t());  // the sum before autocast rounds it
    if (!l.after.empty())
      margin = std::min(margin,
                        (z.abs() / at::addmm(b.abs(), in.abs(), w.abs().t()).clamp_min(1e-300)).min().item<double>());
    const at::Tensor zs = stored_as(z, r.stored);
    a = stored_as(l.after.empty() ? zs : l.after == "relu" ? at::relu(zs) : at::leaky_relu(zs, 0.01), r.stored);
  }
  return margin;
}

// A batch of `rows` rows for a case. random_rows zeroes its first 3 rows (ReLU's kink at the input):
// under 4 rows that would be the whole batch, so draw 3 more and take the last `rows`.
inline at::Tensor case_rows(int64_t rows, int64_t features, uint64_t seed) {
  if (rows >= 4) return random_rows(rows, features, at::kFloat, seed).to(kGpu);
  return random_rows(rows + 3, features, at::kFloat, seed).narrow(0, 3, rows).contiguous().to(kGpu);
}

// fit's options for a trajectory against libtorch: shuffled, seed 5, no scheduler and no early stop
// (a plateau decision taken on one side of a threshold only would fork the runs), at `precision`.
inline TrainOptions trajectory_options(EngineKind engine, int64_t epochs, int64_t batch,
                                       Precision precision = Precision::kFp32) {
  TrainOptions o;
  o.epochs = epochs;
  o.batch_size = batch;
  o.progress = "none";
  o.seed = 5;
  o.shuffle = true;
  o.lr_scheduler = false;
  o.early_stopping = false;
  o.engine = engine;
  o.precision = resolve_precision(precision, at::kFloat, kGpu);
  return o;
}

// Each epoch's training loss of fit with `o` on x, for AE (latent 15) from the weights seed makes.
inline std::vector<double> train_losses(const TrainOptions& o, const at::Tensor& x, uint64_t seed,
                                        TrainResult* result = nullptr) {
  torch::manual_seed(seed);
  auto model = make_model("AE", x.size(1), 15);
  model->to(kGpu, at::kFloat);
  const TrainResult r = fit(*model, x, at::Tensor(), o);
  std::vector<double> losses;
  for (const EpochRecord& e : r.epoch_records) losses.push_back(e.train_loss);
  if (result) *result = r;
  return losses;
}

}  // namespace balerbench
