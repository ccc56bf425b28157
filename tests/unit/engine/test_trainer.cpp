// test_trainer.cpp: Baler's training loop semantics on the CPU.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <set>

#include "harness/codecs/baler_codec.h"
#include "harness/engine/engine_registry.h"
#include "harness/run/training_session.h"
#include "harness/engine/flat_adam.h"
#include "datasets/normalizer.h"
#include "harness/engine/trainer.h"
#include "models/autoencoder.h"
#include "tests/unit/engine/toy_training.h"

namespace balerbench {
namespace {

using testing::epoch_losses;
using testing::toy_data;

TrainOptions quiet(int64_t epochs, int64_t batch) {
  TrainOptions o;
  o.epochs = epochs;
  o.batch_size = batch;
  o.progress = "none";
  return o;
}

std::shared_ptr<AutoEncoder> seeded_ae(uint64_t seed) {
  torch::manual_seed(seed);
  return make_model("AE", 24, 15);
}

// RunConfig and TrainOptions share their defaults (training_defaults.h); train_options() is the one
// place a config's training keys reach the trainer. Every key set away from its default must arrive.
TEST(TrainOptions, EveryTrainingKeyOfTheConfigReachesTheTrainer) {
  const RunConfig defaults;
  const TrainOptions plain = train_options(defaults);
  const TrainOptions untouched;
  EXPECT_EQ(plain.epochs, untouched.epochs);
  EXPECT_EQ(plain.batch_size, untouched.batch_size);
  EXPECT_EQ(plain.lr, untouched.lr);
  EXPECT_EQ(plain.early_stopping_patience, untouched.early_stopping_patience);
  EXPECT_EQ(plain.progress, untouched.progress);

  RunConfig c;
  c.epochs = 7;
  c.batch_size = 33;
  c.lr = 0.0123;
  c.loss = LossKind::kMseMean;
  c.shuffle = !defaults.shuffle;
  c.seed = 99;
  c.early_stopping = !defaults.early_stopping;
  c.early_stopping_patience = 11;
  c.min_delta = 0.25;
  c.lr_scheduler = !defaults.lr_scheduler;
  c.lr_scheduler_patience = 13;
  c.progress = "none";
  c.progress_interval_s = 4.5;
  c.grad_scaler = {1024.0, 4.0, 0.25, 17};
  c.cuda_graphs = !defaults.cuda_graphs;
  c.profile = !defaults.profile;
  c.profile_sync = !defaults.profile_sync;
  const TrainOptions o = train_options(c);
  EXPECT_EQ(o.epochs, 7);
  EXPECT_EQ(o.batch_size, 33);
  EXPECT_DOUBLE_EQ(o.lr, 0.0123);
  EXPECT_EQ(o.loss, LossKind::kMseMean);
  EXPECT_EQ(o.shuffle, c.shuffle);
  EXPECT_EQ(o.seed, 99);
  EXPECT_EQ(o.early_stopping, c.early_stopping);
  EXPECT_EQ(o.early_stopping_patience, 11);
  EXPECT_DOUBLE_EQ(o.min_delta, 0.25);
  EXPECT_EQ(o.lr_scheduler, c.lr_scheduler);
  EXPECT_EQ(o.lr_scheduler_patience, 13);
  EXPECT_EQ(o.progress, "none");
  EXPECT_DOUBLE_EQ(o.progress_interval_s, 4.5);
  EXPECT_DOUBLE_EQ(o.grad_scaler.init_scale, 1024.0);
  EXPECT_DOUBLE_EQ(o.grad_scaler.growth_factor, 4.0);
  EXPECT_DOUBLE_EQ(o.grad_scaler.backoff_factor, 0.25);
  EXPECT_EQ(o.grad_scaler.growth_interval, 17);
  EXPECT_EQ(o.cuda_graphs, c.cuda_graphs);
  EXPECT_EQ(o.profile, c.profile);
  EXPECT_EQ(o.profile_sync, c.profile_sync);
}

TEST(Trainer, DeterministicOnCpu) {
  const at::Tensor x = toy_data(1000);
  auto a = seeded_ae(0), b = seeded_ae(0);
  EXPECT_EQ(epoch_losses(fit(*a, x, {}, quiet(3, 128))), epoch_losses(fit(*b, x, {}, quiet(3, 128))));
}

TEST(Trainer, LossDecreases) {
  const at::Tensor x = toy_data(2000);
  torch::manual_seed(0);
  auto m = make_model("AE", 24, 15);
  const auto l = epoch_losses(fit(*m, x, {}, quiet(10, 64)));
  EXPECT_LT(l.back(), 0.2 * l.front());
}

TEST(Trainer, EpochLossIsThePlainMeanOfBatchLosses) {
  // 10 rows in batches of 4: 4, 4, 2. Replay by hand with an identical model.
  const at::Tensor x = toy_data(10);
  auto m = seeded_ae(5), ref = seeded_ae(5);
  const TrainResult r = fit(*m, x, {}, quiet(1, 4));
  torch::optim::Adam opt(ref->parameters(), torch::optim::AdamOptions(1e-3));
  double sum = 0;
  for (int64_t s : {0, 4, 8}) {
    const at::Tensor xb = x.narrow(0, s, std::min<int64_t>(4, 10 - s));
    opt.zero_grad();
    const at::Tensor d = ref->forward(xb) - xb;
    const at::Tensor loss = (d * d).sum() / 24.0;  // Baler HEAD: sum / n_features
    loss.backward();
    opt.step();
    sum += loss.item<double>();
  }
  // FlatAdam rounds like torch::optim::Adam up to the last bits.
  EXPECT_NEAR(r.epoch_records[0].train_loss, sum / 3.0, 1e-12 * sum);
}

// A batch size beyond the data: the note says what fit does, and fit does it (one step on all rows).
TEST(Trainer, ABatchLargerThanTheDataIsOneStepOnAllRowsAndSaysSo) {
  EXPECT_EQ(batch_size_note(4096, 1000),
            "batch_size 4096 is larger than the 1000 training rows: every epoch is one step of 1000 rows");
  EXPECT_EQ(batch_size_note(1000, 1000), "");
  EXPECT_EQ(batch_size_note(64, 1000), "");
  const at::Tensor x = toy_data(10);
  auto m = seeded_ae(5), ref = seeded_ae(5);
  const TrainResult r = fit(*m, x, {}, quiet(2, 4096));
  torch::optim::Adam opt(ref->parameters(), torch::optim::AdamOptions(1e-3));
  for (int epoch = 0; epoch < 2; ++epoch) {
    opt.zero_grad();
    const at::Tensor d = ref->forward(x) - x;
    const at::Tensor loss = (d * d).sum() / 24.0;
    loss.backward();
    opt.step();
    EXPECT_NEAR(r.epoch_records[epoch].train_loss, loss.item<double>(), 1e-12 * loss.item<double>()) << epoch;
  }
}

TEST(Trainer, BalerSumIsBatchSizeTimesMseMean) {
  const at::Tensor a = torch::rand({8, 24}, torch::kDouble), b = torch::rand({8, 24}, torch::kDouble);
  EXPECT_NEAR(batch_loss(a, b, LossKind::kBalerSum).item<double>(),
              8 * batch_loss(a, b, LossKind::kMseMean).item<double>(), 1e-12);
}

TEST(Trainer, ValidationLossDrivesEarlyStopping) {
  const at::Tensor x = toy_data(400);
  torch::manual_seed(0);
  auto m = make_model("AE", 24, 15);
  TrainOptions o = quiet(50, 400);
  o.lr = 1e-12;  // no progress: every epoch after the first counts
  o.early_stopping_patience = 3;
  o.min_delta = 1e-3;  // tiny lr still improves a little; those count as no progress
  const TrainResult r = fit(*m, x.narrow(0, 0, 300), x.narrow(0, 300, 100), o);
  EXPECT_TRUE(r.has_validation);
  EXPECT_TRUE(r.early_stopped);
  EXPECT_EQ(r.epoch_records.size(), 4u);  // first sets best, then 3 non-improving epochs
  EXPECT_NE(r.epoch_records[0].val_loss, r.epoch_records[0].train_loss);
}

// Evaluation in chunks gives the batch-by-batch loss (mean of per-batch losses, short last batch
// counting fully) and the relative error, whatever the chunk size, in both loss kinds.
TEST(Evaluation, ChunkedEqualsBatchByBatchForEveryChunkSize) {
  const at::Tensor x = toy_data(1000);
  auto m = seeded_ae(3);
  const int64_t batch = 128;  // 7 full batches and one of 104 rows
  for (LossKind kind : {LossKind::kBalerSum, LossKind::kMseMean}) {
    double sum = 0;
    int64_t batches = 0;
    {
      torch::NoGradGuard no_grad;
      for (int64_t s = 0; s < 1000; s += batch, ++batches) {
        const at::Tensor xb = x.narrow(0, s, std::min<int64_t>(batch, 1000 - s));
        sum += batch_loss(m->forward(xb), xb, kind).item<double>();
      }
    }
    const double want_loss = sum / static_cast<double>(batches);
    const at::Tensor all = m->forward(x).detach();
    const double want_rel = ((all - x).norm() / x.norm()).item<double>();
    for (int64_t chunk : {1, 100, 128, 333, 1000, 5000}) {
      const Evaluation e = evaluate(*m, x, {batch, kind, {}, chunk});
      // Tolerance: float64 sums in another order (chunk vs batch), ~1e-15 relative per term.
      EXPECT_NEAR(e.loss, want_loss, 1e-12 * want_loss) << "chunk " << chunk;
      EXPECT_NEAR(e.relative_error, want_rel, 1e-12 * want_rel) << "chunk " << chunk;
      EXPECT_EQ(e.chunk_rows, chunk);
    }
  }
  EXPECT_TRUE(m->is_training());  // evaluate restores the mode
  EXPECT_EQ(evaluate(*m, x, {batch, LossKind::kBalerSum, {}, 0}).chunk_rows, 4096);  // CPU default
}

// The trainer evaluates the validation rows per epoch and, when asked, the relative error (on the
// training rows without a validation set), and times it.
TEST(Evaluation, FitRecordsRelativeErrorAndEvaluationTime) {
  const at::Tensor x = toy_data(600);
  auto m = seeded_ae(1);
  TrainOptions o = quiet(2, 100);
  o.relative_error = true;
  const TrainResult r = fit(*m, x, {}, o);
  ASSERT_EQ(r.epoch_records.size(), 2u);
  for (const auto& e : r.epoch_records) {
    ASSERT_TRUE(e.relative_error.has_value());
    EXPECT_GT(*e.relative_error, 0);
    EXPECT_GT(e.eval_duration_s, 0);
    EXPECT_LE(e.eval_duration_s, e.duration_s);
    EXPECT_EQ(e.val_loss, e.train_loss);  // no validation rows
  }
  EXPECT_NEAR(*r.epoch_records.back().relative_error, evaluate(*m, x, {100, LossKind::kBalerSum, {}, 0}).relative_error,
              1e-12);
  auto plain = seeded_ae(1);
  const TrainResult q = fit(*plain, x, {}, quiet(1, 100));
  EXPECT_FALSE(q.epoch_records[0].relative_error.has_value());
  EXPECT_EQ(q.epoch_records[0].eval_duration_s, 0);
}

TEST(Trainer, PlateauHalvesTheLearningRateTheOptimizerUses) {
  const at::Tensor x = toy_data(256);
  torch::manual_seed(0);
  auto m = make_model("AE", 24, 15);
  TrainOptions o = quiet(12, 64);
  o.lr = 0.5;  // far too large: the loss oscillates, so epochs stop improving
  o.lr_scheduler_patience = 0;
  o.early_stopping = false;
  const TrainResult r = fit(*m, x, {}, o);
  int reductions = 0;
  for (std::size_t e = 0; e + 1 < r.epoch_records.size(); ++e) {
    if (r.epoch_records[e].lr_reduced) {
      ++reductions;
      EXPECT_DOUBLE_EQ(r.epoch_records[e + 1].lr, 0.5 * r.epoch_records[e].lr) << "epoch " << e;
    } else {
      EXPECT_DOUBLE_EQ(r.epoch_records[e + 1].lr, r.epoch_records[e].lr) << "epoch " << e;
    }
  }
  EXPECT_GT(reductions, 0);
}

TEST(Trainer, ShuffleIsSeededAndChangesTheTrajectory) {
  const at::Tensor x = toy_data(512);
  auto run = [&](bool shuffle, uint64_t seed) {
    torch::manual_seed(0);
    auto m = make_model("AE", 24, 15);
    TrainOptions o = quiet(2, 64);
    o.shuffle = shuffle;
    o.seed = seed;
    return epoch_losses(fit(*m, x, {}, o));
  };
  EXPECT_EQ(run(true, 1), run(true, 1));
  EXPECT_NE(run(true, 1), run(false, 1));
  EXPECT_NE(run(true, 1), run(true, 2));
}

TEST(FlatAdam, MatchesTorchAdamOverManySteps) {
  for (auto dtype : {torch::kDouble, torch::kFloat}) {
    torch::manual_seed(9);
    auto a = make_model("AE", 24, 15);
    auto b = make_model("AE", 24, 15);
    a->to(dtype);
    b->to(dtype);
    {
      torch::NoGradGuard ng;
      auto pa = a->parameters(), pb = b->parameters();
      for (std::size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
    }
    const at::Tensor x = toy_data(256).to(dtype);
    const at::Tensor start = a->named_parameters()["en1.weight"].detach().clone();
    torch::optim::Adam ref(a->parameters(), torch::optim::AdamOptions(1e-3));
    FlatAdam flat(b->parameters(), 1e-3);
    EXPECT_EQ(flat.flat_params().numel(), 61839);
    for (int step = 0; step < 20; ++step) {
      ref.zero_grad();
      batch_loss(a->forward(x), x, LossKind::kBalerSum).backward();
      ref.step();
      flat.zero_grad();
      batch_loss(b->forward(x), x, LossKind::kBalerSum).backward();
      flat.step();
    }
    const double tol = dtype == torch::kDouble ? 1e-12 : 1e-5;
    auto pa = a->named_parameters(), pb = b->named_parameters();
    for (const auto& p : pa) {
      EXPECT_TRUE(torch::allclose(p.value(), pb[p.key()], tol, tol)) << p.key() << " " << dtype;
      EXPECT_TRUE(torch::allclose(p.value().grad(), pb[p.key()].grad(), tol, tol)) << p.key();
    }
    EXPECT_FALSE(torch::equal(pb["en1.weight"], start)) << "FlatAdam moved the parameters";
  }
}

TEST(FlatAdam, ParametersAreViewsIntoOneBuffer) {
  auto m = make_model("AE", 24, 15);
  FlatAdam opt(m->parameters(), 1e-3);
  opt.flat_params().fill_(0.5);
  for (const auto& p : m->parameters()) EXPECT_EQ(p.max().item<double>(), 0.5);
  const at::Tensor x = toy_data(8);
  batch_loss(m->forward(x), x, LossKind::kBalerSum).backward();
  EXPECT_GT(opt.flat_grads().abs().sum().item<double>(), 0.0) << "backward writes into the flat gradient";
  opt.zero_grad();
  for (const auto& p : m->parameters()) EXPECT_EQ(p.grad().abs().sum().item<double>(), 0.0);
}

// The trainer's path: autograd::grad's fresh gradients copied into the flat buffer equal what
// backward() accumulates into zeroed gradients, bit for bit; a parameter the loss does not reach gets
// zeros; a wrong count or size is an error.
TEST(FlatAdam, SetGradsEqualsBackwardIntoZeroedGradients) {
  torch::manual_seed(4);
  auto m = make_model("AE", 24, 15);
  FlatAdam opt(m->parameters(), 1e-3);
  EXPECT_STREQ(opt.path_name(), "cpu loop");
  EXPECT_FALSE(opt.device_kernel());  // ATen's fused kernel is for devices
  const at::Tensor x = toy_data(16);
  opt.zero_grad();
  batch_loss(m->forward(x), x, LossKind::kBalerSum).backward();
  const at::Tensor accumulated = opt.flat_grads().clone();
  opt.flat_grads().fill_(123.0);  // set_grads must overwrite every element
  const std::vector<at::Tensor> params = m->parameters();
  opt.set_grads(torch::autograd::grad({batch_loss(m->forward(x), x, LossKind::kBalerSum)}, params, {}, false, false,
                                      true));
  EXPECT_TRUE(torch::equal(opt.flat_grads(), accumulated));
  std::vector<at::Tensor> some(params.size());
  some[1] = torch::ones_like(params[1]);
  opt.set_grads(some);
  EXPECT_EQ(opt.flat_grads().sum().item<double>(), static_cast<double>(params[1].numel()));
  EXPECT_THROW(opt.set_grads({some[1]}), std::invalid_argument);
  some[0] = torch::ones({3});
  EXPECT_THROW(opt.set_grads(some), std::invalid_argument);
}

TEST(Codec, ChunkedEncodeDecodeEqualsWholeTensor) {
  torch::manual_seed(0);
  auto m = make_model("AE", 24, 15);
  const at::Tensor x = toy_data(1000);
  m->eval();
  torch::NoGradGuard ng;
  const std::unique_ptr<Engine> e = make_inference_engine(EngineKind::kLibtorch, *m, {{}, 1000, 0});
  const at::Tensor z = encode_rows(*m, *e, x, nullptr, at::kDouble, 333);
  EXPECT_TRUE(torch::allclose(z, m->encode(x), 1e-13, 1e-13));
  const at::Tensor y = decode_rows(*m, *e, z, nullptr, 77);
  EXPECT_TRUE(torch::allclose(y, m->decode(z), 1e-13, 1e-13));
  // With normalization fused into the chunks: same as normalizing the whole table first.
  const at::Tensor raw = x * 40.0 + 3.0;
  const Normalization norm = Normalization::fit(raw);
  EXPECT_TRUE(torch::allclose(encode_rows(*m, *e, raw, &norm, at::kDouble, 100), m->encode(norm.apply(raw)), 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(decode_rows(*m, *e, z, &norm, 100), norm.invert(m->decode(z)), 1e-12, 1e-12));
  const at::Tensor z16 = encode_rows(*m, *e, x, nullptr, at::kHalf, 1000);
  EXPECT_EQ(z16.scalar_type(), at::kHalf);
  EXPECT_TRUE(torch::allclose(z16.to(at::kDouble), z, 1e-2, 1e-2));
}

// Every registered engine compresses and decompresses as the model's own forward does (fp64: the
// same products, up to the summation order inside the GEMMs).
TEST(Codec, EveryEngineEncodesAndDecodesAsTheModel) {
  torch::manual_seed(0);
  auto m = make_model("AE", 24, 15);
  const at::Tensor x = toy_data(700);
  m->eval();
  torch::NoGradGuard ng;
  for (const EngineEntry* entry : engine_registry()) {
    if (!runs_on(*entry, c10::kCPU)) continue;
    SCOPED_TRACE(engine_name(entry->kind()));
    const std::unique_ptr<Engine> e = make_inference_engine(entry->kind(), *m, {{}, 256, 2});
    EXPECT_EQ(e->kind(), entry->kind());
    const at::Tensor z = encode_rows(*m, *e, x, nullptr, at::kDouble, 256);
    EXPECT_TRUE(torch::allclose(z, m->encode(x), 1e-12, 1e-12));
    EXPECT_TRUE(torch::allclose(decode_rows(*m, *e, z, nullptr, 256), m->decode(z), 1e-12, 1e-12));
  }
}

// The registry: every engine name but auto has one entry per device (fused: one for the CPU, one
// for CUDA), the reference (last) runs everything, and an inference engine refuses to train.
TEST(EngineRegistry, OneEntryPerKindAndDeviceAndTheReferenceLast) {
  for (const c10::Device device : {c10::Device(c10::kCPU), c10::Device(c10::kCUDA, 0)}) {
    std::set<EngineKind> kinds;
    for (const EngineEntry* entry : engine_registry())
      if (runs_on(*entry, device)) EXPECT_TRUE(kinds.insert(entry->kind()).second) << device;
    for (const std::string& name : engine_names())
      if (name != "auto") {
        EXPECT_EQ(kinds.count(*find_engine(name)), 1u) << name << " on " << device;
        EXPECT_TRUE(runs_on(engine_entry(*find_engine(name), device), device)) << name << " on " << device;
      }
  }
  EXPECT_NE(&engine_entry(EngineKind::kFused, c10::kCPU), &engine_entry(EngineKind::kFused, c10::Device(c10::kCUDA, 0)));
  EXPECT_EQ(engine_registry().back()->kind(), EngineKind::kLibtorch);
  EXPECT_EQ(engine_registry().back()->devices, EngineDevices::kAny);
  EXPECT_THROW(engine_entry(EngineKind::kAuto, c10::kCPU), std::logic_error);
  auto m = make_model("AE", 24, 15);
  for (const EngineEntry* entry : engine_registry()) {
    if (!runs_on(*entry, c10::kCPU)) continue;
    const std::unique_ptr<Engine> e = make_inference_engine(entry->kind(), *m, {{}, 64, 1});
    EXPECT_THROW(e->step(toy_data(8)), std::logic_error) << engine_name(entry->kind());
  }
}

}  // namespace
}  // namespace balerbench
