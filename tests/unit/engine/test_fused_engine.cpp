// test_fused_engine.cpp: the fused engine against LibTorch autograd, on fresh random inputs each run
// (the seed is printed, so a failure can be replayed with BALERBENCH_TEST_SEED).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>
#include <random>

#include "harness/engine/dense_loops.h"
#include "harness/engine/dense_products.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/flat_adam.h"
#include "harness/engine/fused_engine.h"
#include "harness/engine/fused_kernels.h"
#include "harness/engine/runtime.h"
#include "harness/engine/shard_pool.h"
#include "common/error.h"
#include "harness/run/thread_calibration.h"
#include "harness/engine/torch_compat.h"
#include "harness/engine/trainer.h"
#include "models/autoencoder.h"
#include "tests/test_util.h"
#include "tests/unit/random_rows.h"

namespace balerbench {
namespace {


double max_relative_difference(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a - b).abs().max().item<double>() / std::max(scale, 1e-300);
}

// How near the batch comes to an activation's kink: the smallest |z| / (|a|.|w| + |b|) over every
// pre-activation z = a.w + b of a layer followed by ReLU or LeakyReLU, computed in float64 from the
// model's own parameters. Where this margin is a few epsilons, two summation orders (autograd's GEMM,
// the fused engine's) may put z on different sides of zero: a different derivative for that row, and
// a gradient that differs by that row's share (measured: 1.7e-3 relative in float32, CFD_dense_AE's
// de3, margin 4.9e-9). The caller's 4 epsilons are a choice, not a bound: a sum's rounding error can
// reach (terms) * eps * (|a|.|w| + |b|), so a flip beyond 4 epsilons is rare, not impossible (none in
// 300 runs with fresh seeds). Linear layers in sequence only (what the fused engine trains; the models
// below).
double kink_margin(AutoEncoder& model, const at::Tensor& x) {
  at::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> params;
  for (const auto& p : model.named_parameters()) params[p.key()] = p.value().to(at::kDouble);
  at::Tensor a = x.to(at::kDouble);
  double margin = std::numeric_limits<double>::infinity();
  for (const LayerSpec& l : model.architecture().layers) {
    EXPECT_EQ(l.kind, "linear") << l.name << ": kink_margin knows linear layers only";
    const auto act = fused_kernels::activation_of(l.after);
    EXPECT_TRUE(act.has_value()) << l.name << ": " << l.after;
    const at::Tensor& w = params.at(l.name + ".weight");
    const at::Tensor& b = params.at(l.name + ".bias");
    const at::Tensor z = at::addmm(b, a, w.t());
    const at::Tensor bound = at::addmm(b.abs(), a.abs(), w.abs().t());
    if (act && *act != Activation::kNone)
      margin = std::min(margin, (z.abs() / bound.clamp_min(1e-300)).min().item<double>());
    a = !act || *act == Activation::kNone ? z : *act == Activation::kRelu ? at::relu(z) : at::leaky_relu(z, 0.01);
  }
  return margin;
}

struct Case {
  const char* model;
  int64_t features;
  at::ScalarType dtype;
};

// Gradients and loss of one batch: autograd through the model, then the fused engine, into the
// same flat buffer. False, with nothing compared, when the draw puts a pre-activation within a few
// roundings of an activation's kink (kink_margin below 4 epsilons of the dtype): there the two
// summation orders may legitimately take different derivatives, so the caller draws again.
bool expect_gradients_match(const Case& c, LossKind loss, int workers, int64_t rows, uint64_t seed,
                            const FusedProductsChoice& products) {
  torch::manual_seed(seed);
  auto model = make_model(c.model, c.features, std::max<int64_t>(1, c.features * 10 / 16));
  model->to(c.dtype);
  FlatAdam opt(model->parameters(), 1e-3);
  const at::Tensor x = random_rows(rows, c.features, c.dtype, seed + 1);
  const double epsilon = c.dtype == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                : std::numeric_limits<float>::epsilon();
  const double margin = kink_margin(*model, x);
  if (margin < 4 * epsilon) {
    std::printf("seed %llu: %s %s, %lld rows: a pre-activation at %.2g of its sum's magnitude from the kink; "
                "drawing again\n",
                static_cast<unsigned long long>(seed), c.model, c10::toString(c.dtype), static_cast<long long>(rows),
                margin);
    return false;
  }
  opt.zero_grad();
  const at::Tensor l = batch_loss(model->forward(x), x, loss);
  l.backward();
  const at::Tensor autograd = opt.flat_grads().clone();
  const double autograd_loss = l.item<double>();

  FusedDenseEngine engine(*model, opt, loss, rows, workers, at::ScalarType::Undefined, products);
  EXPECT_EQ(engine.backend(), products.backend);
  opt.flat_grads().fill_(12345.0);  // the engine must overwrite every element
  const double fused_loss = engine.forward_backward(x);
  const double tolerance = c.dtype == at::kDouble ? 1e-12 : 1e-5;
  const std::string what = std::string(c.model) + " " + c10::toString(c.dtype) + " loss " +
                           (loss == LossKind::kBalerSum ? "baler_sum" : "mse_mean") + ", " +
                           std::to_string(workers) + " workers, " + std::to_string(rows) + " rows, " +
                           products.backend + " " + products.isa + ", seed " + std::to_string(seed);
  EXPECT_LE(max_relative_difference(opt.flat_grads(), autograd), tolerance) << what;
  EXPECT_NEAR(fused_loss, autograd_loss, tolerance * std::abs(autograd_loss)) << what;
  // Layer by layer too, so a small layer's error cannot hide behind a large one's scale.
  for (const auto& p : model->named_parameters()) {
    const at::Tensor& flat = opt.flat_grads();
    const int64_t offset = (static_cast<const char*>(p.value().data_ptr()) -
                            static_cast<const char*>(opt.flat_params().data_ptr())) /
                           static_cast<int64_t>(flat.element_size());
    const at::Tensor fused = flat.narrow(0, offset, p.value().numel());
    const at::Tensor reference = autograd.narrow(0, offset, p.value().numel());
    EXPECT_LE(max_relative_difference(fused, reference), tolerance * 10) << what << ": " << p.key();
  }
  return true;
}

// Every backend of the products, and every instruction-set level of Eigen's this CPU runs (the
// others are named as skipped).
std::vector<FusedProductsChoice> every_products_choice() {
  std::vector<FusedProductsChoice> out = {{"openblas", "auto"}};
  for (IsaLevel level : {IsaLevel::kGeneric, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (isa_supported(level))
      out.push_back({"eigen", isa_name(level)});
    else
      std::printf("this CPU cannot run the %s products: not tested here\n", isa_name(level));
  }
  return out;
}

TEST(FusedEngine, GradientsEqualAutogradForEveryFusedModel) {
  const uint64_t seed = fresh_seed();
  std::printf("seed %llu (BALERBENCH_TEST_SEED replays it)\n", static_cast<unsigned long long>(seed));
  const Case cases[] = {{"AE", 24, at::kDouble},
                        {"AE", 24, at::kFloat},
                        {"CFD_dense_AE", 50, at::kDouble},
                        {"CFD_dense_AE", 50, at::kFloat},
                        {"FPGA_prototype_model", 16, at::kDouble},
                        {"FPGA_prototype_model", 16, at::kFloat}};
  uint64_t s = seed;
  for (const FusedProductsChoice& products : every_products_choice())
    for (const Case& c : cases)
      for (LossKind loss : {LossKind::kBalerSum, LossKind::kMseMean})
        for (int workers : {1, 2, 3}) {
          // A draw at a kink is drawn again: 1,278 times in 300 runs of these 72 float32 and 72 float64
          // cases, all float32 (so twenty in a row means kink_margin or the inputs are broken).
          int draws = 0;
          while (!expect_gradients_match(c, loss, workers, 37 + static_cast<int64_t>(s % 100), s, products)) {
            ++s;
            ASSERT_LT(++draws, 20) << "every draw lands at a kink: kink_margin or the inputs are broken";
          }
          ++s;
        }
}

TEST(FusedEngine, ABatchSmallerThanTheWorkersStillGetsEveryGradient) {
  const uint64_t seed = fresh_seed();
  for (const FusedProductsChoice& products : every_products_choice()) {
    // One and three rows, all zero (random_rows zeroes the first three): the same row, whose first
    // pre-activations are the biases; in float64 a draw within 4 epsilons of a kink is not expected.
    EXPECT_TRUE(expect_gradients_match({"AE", 24, at::kDouble}, LossKind::kBalerSum, 4, 1, seed, products));
    EXPECT_TRUE(expect_gradients_match({"AE", 24, at::kDouble}, LossKind::kBalerSum, 4, 3, seed + 1, products));
  }
}

TEST(FusedEngine, EncodeAndDecodeEqualTheModel) {
  const uint64_t seed = fresh_seed();
  for (const char* name : {"AE", "FPGA_prototype_model"}) {
    torch::manual_seed(seed);
    auto model = make_model(name, 24, 8);
    FlatAdam opt(model->parameters(), 1e-3);
    FusedDenseEngine engine(*model, opt, LossKind::kBalerSum, 64, 2);
    const at::Tensor x = random_rows(301, 24, model->dtype(), seed + 2);  // several chunks, a short last one
    torch::NoGradGuard no_grad;
    const at::Tensor z = model->encode(x);
    EXPECT_LE(max_relative_difference(engine.encode(x), z), 1e-13) << name;
    EXPECT_LE(max_relative_difference(engine.decode(z), model->decode(z)), 1e-13) << name;
    EXPECT_LE(max_relative_difference(engine.forward(x), model->forward(x)), 1e-13) << name;
    EXPECT_FALSE(engine.encode(x).requires_grad());
  }
}

TrainOptions trajectory_options(EngineKind engine, int workers) {
  TrainOptions o;
  o.epochs = 20;
  o.batch_size = 64;
  o.progress = "none";
  o.seed = 5;
  o.shuffle = true;
  o.lr_scheduler = true;
  o.lr_scheduler_patience = 1;
  o.early_stopping = true;
  o.early_stopping_patience = 4;
  o.min_delta = 1e-4;
  o.relative_error = true;
  o.engine = engine;
  o.engine_workers = workers;
  o.save_every_epochs = 3;
  o.engine_knobs.set("fused_products", "eigen");  // fixed: auto may choose either by timing
  return o;
}

struct Trajectory {
  TrainResult result;
  std::vector<int64_t> checkpoints;
  at::Tensor params;
};

Trajectory train(EngineKind engine, int workers, const at::Tensor& x, const at::Tensor& val, uint64_t seed,
                 const std::string& backend = "eigen") {
  torch::manual_seed(seed);
  auto model = make_model("AE", 24, 15);
  Trajectory t;
  TrainOptions o = trajectory_options(engine, workers);
  o.engine_knobs.set("fused_products", backend);
  struct Checkpoints final : TrainingObserver {
    std::vector<int64_t>& epochs;
    explicit Checkpoints(std::vector<int64_t>& e) : epochs(e) {}
    void save_checkpoint(int64_t epoch) override { epochs.push_back(epoch); }
  } checkpoints(t.checkpoints);
  t.result = fit(*model, x, val, o, &checkpoints);
  std::vector<at::Tensor> flat;
  for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten());
  t.params = at::cat(flat);
  return t;
}

// fp64, one worker: the whole training (shuffle, validation, plateau scheduler, early stopping,
// checkpoints) follows LibTorch's within 1e-9 relative, epoch by epoch.
TEST(FusedEngine, OneWorkerTrajectoryEqualsLibtorchFor20Epochs) {
  const uint64_t seed = fresh_seed();
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  const at::Tensor x = random_rows(900, 24, at::kDouble, seed);
  const at::Tensor val = random_rows(200, 24, at::kDouble, seed + 7);
  const Trajectory a = train(EngineKind::kLibtorch, 0, x, val, seed);
  for (const char* backend : {"eigen", "openblas"}) {
  SCOPED_TRACE(backend);
  const Trajectory f = train(EngineKind::kFused, 1, x, val, seed, backend);
  EXPECT_EQ(f.result.engine, EngineKind::kFused);
  EXPECT_EQ(f.result.engine_status.workers, 1);
  ASSERT_EQ(a.result.epoch_records.size(), f.result.epoch_records.size());
  for (std::size_t e = 0; e < a.result.epoch_records.size(); ++e) {
    const EpochRecord& ra = a.result.epoch_records[e];
    const EpochRecord& rf = f.result.epoch_records[e];
    EXPECT_NEAR(rf.train_loss, ra.train_loss, 1e-9 * ra.train_loss) << "epoch " << e;
    EXPECT_NEAR(rf.val_loss, ra.val_loss, 1e-9 * ra.val_loss) << "epoch " << e;
    EXPECT_NEAR(*rf.relative_error, *ra.relative_error, 1e-9 * *ra.relative_error) << "epoch " << e;
    EXPECT_EQ(rf.lr, ra.lr) << "epoch " << e;
    EXPECT_EQ(rf.lr_reduced, ra.lr_reduced) << "epoch " << e;
    EXPECT_EQ(rf.early_stopping_counter, ra.early_stopping_counter) << "epoch " << e;
  }
  EXPECT_EQ(f.result.early_stopped, a.result.early_stopped);
  EXPECT_EQ(f.checkpoints, a.checkpoints);
  EXPECT_LE(max_relative_difference(f.params, a.params), 1e-9);
  }
}

// The shards' results, whichever thread runs them: one batch through two workers on two threads,
// then (a second engine, same start) with every step on one thread. Same bits.
TEST(FusedEngine, TheThreadsThatRunTheShardsNeverChangeTheResult) {
  const uint64_t seed = fresh_seed();
  for (const char* isa : {"generic", "auto"}) {
    torch::manual_seed(seed);
    auto model = make_model("AE", 24, 15);
    model->to(at::kFloat);
    FlatAdam opt(model->parameters(), 1e-3);
    const at::Tensor x = random_rows(256, 24, at::kFloat, seed + 1);
    FusedDenseEngine engine(*model, opt, LossKind::kBalerSum, 256, 2, at::ScalarType::Undefined, {"eigen", isa});
    ASSERT_EQ(engine.backend(), "eigen");
    std::vector<at::Tensor> grads;
    // The governor runs steps 2 to 7 alternately on 2 threads and on 1: compare steps 2 and 3.
    for (int step = 0; step < 4; ++step) {
      engine.forward_backward(x);
      grads.push_back(opt.flat_grads().clone());
    }
    EXPECT_TRUE(at::equal(grads[2], grads[3])) << isa;
    EXPECT_TRUE(at::equal(grads[0], grads[3])) << isa;
    const EngineStatus st = engine.status();
    EXPECT_NE(st.detail("products").find("eigen"), std::string::npos) << st.detail("products");
    EXPECT_NE(st.detail("threads").find("on 1"), std::string::npos) << st.detail("threads");
  }
}

// What CI once caught: a config that names no threads gets its thread count from a timing (the
// calibration), and the shards followed it, so two runs of one config could differ in their bits.
// The shards are now fixed apart from the threads: fp32, 3 epochs of fit with the intra-op threads at
// 1, then at 2, then 3, give the same weights, on the machine's default shards and on 3 given ones.
TEST(FusedEngine, TheThreadCountNeverChangesTheTrainedWeights) {
  const uint64_t seed = fresh_seed();
  const at::Tensor x = random_rows(700, 24, at::kFloat, seed);
  const int saved = at::get_num_threads();
  for (int shards : {0, 3}) {
    SCOPED_TRACE(shards);
    std::vector<at::Tensor> weights;
    for (int threads : {1, 2, 3}) {
      torch::manual_seed(seed);
      auto model = make_model("AE", 24, 15);
      model->to(at::kFloat);
      TrainOptions o = trajectory_options(EngineKind::kFused, 0);  // no workers: the intra-op threads
      o.engine_knobs.set("fused_shards", shards);
      o.epochs = 3;
      o.early_stopping = false;
      o.precision = resolve_precision(Precision::kFp32, at::kDouble, c10::Device(c10::kCPU));
      at::set_num_threads(threads);
      const TrainResult r = fit(*model, x, at::Tensor(), o);
      at::set_num_threads(saved);
      EXPECT_EQ(r.engine_status.details.value("shards", 0), shards > 0 ? shards : FusedDenseEngine::default_shards()) << threads;
      EXPECT_EQ(r.engine_status.workers, std::min(threads, r.engine_status.details.value("shards", 0))) << threads;
      std::vector<at::Tensor> flat;
      for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten());
      weights.push_back(at::cat(flat));
    }
    EXPECT_TRUE(at::equal(weights[0], weights[1]));
    EXPECT_TRUE(at::equal(weights[0], weights[2]));
  }
}

// On the pool, the gradient sum and Adam run in parts on the workers' threads; profiled, they run
// whole on the caller (reduce_gradients, then FlatAdam::step). The same arithmetic: the same bits.
TEST(FusedEngine, AdamInPartsOnThePoolEqualsTheWholeStep) {
  const uint64_t seed = fresh_seed();
  const at::Tensor x = random_rows(700, 24, at::kFloat, seed);
  auto run = [&](bool profile) {
    torch::manual_seed(seed);
    auto model = make_model("AE", 24, 15);
    model->to(at::kFloat);
    TrainOptions o = trajectory_options(EngineKind::kFused, 2);
    o.epochs = 3;
    o.early_stopping = false;
    o.profile = profile;
    o.precision = resolve_precision(Precision::kFp32, at::kDouble, c10::Device(c10::kCPU));
    fit(*model, x, at::Tensor(), o);
    std::vector<at::Tensor> flat;
    for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten());
    return at::cat(flat);
  };
  EXPECT_TRUE(at::equal(run(false), run(true))) << "seed " << seed;
}

TEST(FusedEngine, ProductsChoiceIsRecordedAndBadChoicesAreClearErrors) {
  torch::manual_seed(3);
  auto model = make_model("AE", 24, 15);
  FlatAdam opt(model->parameters(), 1e-3);
  FusedDenseEngine automatic(*model, opt, LossKind::kBalerSum, 128, 1);
  const std::string note = automatic.status().detail("products");
  EXPECT_NE(note.find("auto: one shard's products"), std::string::npos) << note;
  EXPECT_NE(note.find("on Eigen"), std::string::npos) << note;
  EXPECT_NE(note.find(automatic.backend()), std::string::npos) << note;
  FusedDenseEngine generic(*model, opt, LossKind::kBalerSum, 128, 1, at::ScalarType::Undefined, {"eigen", "generic"});
  EXPECT_STREQ(generic.isa(), "generic");
  EXPECT_EQ(generic.status().detail("products"), "eigen generic (asked)");
  // Made for training, the engine sets Adam's loops to its own level too (they run whole on the
  // caller with one shard).
  {
    PhaseTimer timer;
    TrainOptions o;
    o.precision = resolve_precision(Precision::kFp64, at::kDouble, c10::Device(c10::kCPU));
    o.batch_size = 128;
    o.engine_workers = 1;
    o.engine_knobs.set("fused_products", "eigen");
    o.engine_knobs.set("fused_isa", "generic");
    o.engine_knobs.set("fused_shards", 1);
    FusedDenseEngine trained(*model, TrainingSetup{o, opt, nullptr, timer, 128, 24, c10::Device(c10::kCPU)});
    ASSERT_NE(opt.cpu_loops(), nullptr);
    EXPECT_EQ(opt.cpu_loops()->level, IsaLevel::kGeneric);
  }
  FusedDenseEngine blas(*model, opt, LossKind::kBalerSum, 128, 1, at::ScalarType::Undefined, {"openblas", "generic"});
  EXPECT_STREQ(blas.isa(), "generic");
  EXPECT_EQ(blas.status().detail("products"), "openblas (asked); loops generic");
  EXPECT_THROW(FusedDenseEngine(*model, opt, LossKind::kBalerSum, 128, 1, at::ScalarType::Undefined, {"mkl", "auto"}),
               InputError);
  EXPECT_THROW(FusedDenseEngine(*model, opt, LossKind::kBalerSum, 128, 1, at::ScalarType::Undefined, {"eigen", "sse9"}),
               InputError);
}


// Two workers sum their gradients in a fixed order: the same bits on every run.
TEST(FusedEngine, TwoWorkersAreReproducibleRunToRun) {
  const uint64_t seed = fresh_seed();
  const at::Tensor x = random_rows(700, 24, at::kFloat, seed);
  auto run = [&] {
    torch::manual_seed(seed);
    auto model = make_model("AE", 24, 15);
    model->to(at::kFloat);
    TrainOptions o = trajectory_options(EngineKind::kFused, 2);
    o.epochs = 4;
    o.early_stopping = false;
    o.precision = resolve_precision(Precision::kFp32, at::kDouble, c10::Device(c10::kCPU));
    fit(*model, x, at::Tensor(), o);
    std::vector<at::Tensor> flat;
    for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten());
    return at::cat(flat);
  };
  const at::Tensor first = run();
  EXPECT_TRUE(at::equal(first, run()));
}

TEST(FusedEngine, WhatItCannotTrainIsAClearErrorAndAutoSaysWhy) {
  const c10::Device cpu(c10::kCPU), cuda(c10::kCUDA, 0);
  const PrecisionPolicy fp64 = resolve_precision(Precision::kFp64, at::kDouble, cpu);
  const PrecisionPolicy bf16 = resolve_precision(Precision::kAmpBf16, at::kDouble, cpu);
  auto ae = make_model("AE", 24, 15);
  auto bn = make_model("AE_Dropout_BN", 24, 15);
  EXPECT_EQ(choose_engine(EngineKind::kAuto, *ae, fp64, cpu).engine, EngineKind::kFused);
  EXPECT_EQ(choose_engine(EngineKind::kAuto, *ae, fp64, cpu).note, "auto: fused (AE, fp64, cpu)");
  EXPECT_EQ(choose_engine(EngineKind::kLibtorch, *ae, fp64, cpu).engine, EngineKind::kLibtorch);
  EXPECT_TRUE(choose_engine(EngineKind::kLibtorch, *ae, fp64, cpu).note.empty());
  const EngineDecision d = choose_engine(EngineKind::kAuto, *bn, fp64, cpu);
  EXPECT_EQ(d.engine, EngineKind::kLibtorch);
  EXPECT_NE(d.note.find("AE_Dropout_BN has dropout(0.5)"), std::string::npos) << d.note;
  expect_input_error([&] { choose_engine(EngineKind::kFused, *bn, fp64, cpu); },
                     "engine 'fused' cannot train this run: AE_Dropout_BN has dropout(0.5)");
  // amp_bf16: auto's choice depends on the CPU's bfloat16 instructions (test_fused_bf16.cpp).
  EXPECT_EQ(choose_engine(EngineKind::kFused, *ae, bf16, cpu).engine, EngineKind::kFused);
  EXPECT_EQ(fused_unsupported_reason(*ae, at::kFloat, at::kHalf, cpu), "the fused engine runs fp64, fp32 and amp_bf16");
  EXPECT_EQ(choose_engine(EngineKind::kAuto, *ae, fp64, cuda).engine, EngineKind::kLibtorch);
  expect_input_error([&] { choose_engine(EngineKind::kFused, *ae, fp64, cuda); }, "engine 'fused' cannot train this run");
  // fit refuses an unresolved engine rather than guessing.
  TrainOptions o;
  o.engine = EngineKind::kAuto;
  o.progress = "none";
  EXPECT_THROW(fit(*ae, random_rows(10, 24, at::kDouble, 1), at::Tensor(), o), std::logic_error);
}

}  // namespace
}  // namespace balerbench
