// test_trial_stages.cpp: the stages of a sweep trial (trial/trial_stages.h), each run in-process on
// a small synthetic experiment, without the binary: what each returns, and what build_record makes
// of a trial whose stages all ran or stopped part-way.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "common/error.h"
#include "datasets/dataset.h"
#include "harness/power/power_limit.h"
#include "harness/sweep/experiment.h"
#include "harness/run/inference.h"
#include "harness/run/training_session.h"
#include "harness/trial/trial.h"
#include "harness/trial/trial_stages.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

// 400 CMS-like rows, AE at ratio 1.6 (24 -> 15), energy off unless `energy` says otherwise.
Experiment small_experiment(const json& sweep, const json& target = nullptr, const json& energy = nullptr,
                            bool allow_limits = false) {
  json j = {{"schema_version", 1},
            {"name", "stages"},
            {"dataset", {{"generator", {{"kind", "cms"}, {"rows", 400}, {"seed", 0}}}}},
            {"model", {{"name", "AE"}, {"compression_ratio", 1.6}}},
            {"training", {{"lr", 0.001}, {"test_size", 0.25}, {"progress", "none"}, {"threads", 1}}},
            {"sweep", sweep},
            {"energy", energy.is_null() ? json{{"enabled", false}} : energy}};
  if (!target.is_null()) j["target"] = target;
  if (allow_limits) j["allow_power_limit_changes"] = true;
  return parse_experiment(j, "stages.json", ".");
}

struct Trial {
  explicit Trial(Experiment e) : ex(std::move(e)), spec(expand_grid(ex).front()), config(spec.config) {
    ctx.protocol = &ex;
    ctx.dataset_label = ex.dataset.label();
    ctx.dataset = load_experiment_dataset(ex.dataset);
    ctx.progress = "none";
    ctx.provenance = base_provenance();
    config.progress = "none";
  }
  Experiment ex;
  TrialSpec spec;
  TrialContext ctx;
  RunConfig config;
};

TEST(TrialStages, PrepareHardwareSetsTheSimulatedGpusLimit) {
  const json sim = {{"meters", {"simulated_gpu"}},
                    {"simulated_gpu",
                     {{"idle_power_w", 60}, {"max_power_w", 300}, {"min_limit_w", 100}, {"max_limit_w", 300},
                      {"power_limit_w", 300}, {"load", 0.9}}}};
  Trial t(small_experiment({{"batch_size", {64}}, {"epochs", {1}}, {"power_limit_w", {200}}}, nullptr, sim, true));
  const HardwareSetup hw = prepare_hardware(t.spec, t.ctx, t.config);
  ASSERT_TRUE(hw.enforced_power_limit_w);
  EXPECT_EQ(*hw.enforced_power_limit_w, 200);
  EXPECT_EQ(hw.max_power_w, 300);  // the simulated GPU's largest limit, as the experiment gives none
  EXPECT_EQ(hw.max_power_source, "simulated_gpu");
  ASSERT_EQ(hw.power_limits.size(), 1u);
  EXPECT_TRUE(hw.power_limits[0]["simulated"].get<bool>());
  EXPECT_EQ(t.config.energy.simulated_gpu.power_limit_w, 200);  // the trial's meter runs at the limit
  EXPECT_EQ(hw.threads, 1);
}

TEST(TrialStages, PrepareHardwareWithNoGpuToLimitIsAFailureNotASkip) {
  Trial t(small_experiment({{"batch_size", {64}}, {"epochs", {1}}, {"power_limit_w", {200}}}, nullptr, nullptr, true));
  try {
    prepare_hardware(t.spec, t.ctx, t.config);
    FAIL() << "a power limit with no GPU and no simulated GPU must throw";
  } catch (const PowerLimitError& e) {
    EXPECT_FALSE(e.permission);
    EXPECT_NE(std::string(e.what()).find("no GPU power limit to set"), std::string::npos) << e.what();
  }
}

TEST(TrialStages, TrainToTargetKeepsEveryEpochAndTheFirstThatMetTheTarget) {
  // A relative error of 10 is met by the first epoch: TTA is that epoch's elapsed time.
  Trial t(small_experiment({{"batch_size", {64}}, {"epochs", {3}}}, {{"relative_error", 10.0}}));
  const Dataset& ds = *t.ctx.dataset;
  TrainingSession session(t.config, ds, c10::Device(c10::kCPU), nullptr, nullptr);
  const Training tr = train_to_target(session, nullptr, t.ctx);
  ASSERT_EQ(tr.epoch_rows.size(), 3u);
  for (std::size_t i = 0; i < tr.epoch_rows.size(); ++i) {
    EXPECT_EQ(tr.epoch_rows[i].epoch, static_cast<int64_t>(i));
    EXPECT_TRUE(tr.epoch_rows[i].target_met);
    EXPECT_FALSE(tr.epoch_rows[i].energy_j);  // no energy session
    if (i > 0) EXPECT_GE(tr.epoch_rows[i].elapsed_s, tr.epoch_rows[i - 1].elapsed_s);
  }
  ASSERT_TRUE(tr.target);
  EXPECT_EQ(tr.target->epochs_to_target, 1);
  EXPECT_EQ(tr.target->tta_s, tr.epoch_rows[0].elapsed_s);
  EXPECT_FALSE(tr.target->eta_j);
  EXPECT_FALSE(tr.train_energy_j);
  EXPECT_EQ(tr.result.epoch_records.size(), 3u);
  EXPECT_TRUE(tr.optimizer.is_null());

  // stop_when_reached ends training at that epoch; an unreachable target is never hit.
  Trial stop(small_experiment({{"batch_size", {64}}, {"epochs", {3}}},
                              {{"relative_error", 10.0}, {"stop_when_reached", true}}));
  TrainingSession s2(stop.config, *stop.ctx.dataset, c10::Device(c10::kCPU), nullptr, nullptr);
  EXPECT_EQ(train_to_target(s2, nullptr, stop.ctx).epoch_rows.size(), 1u);
  Trial never(small_experiment({{"batch_size", {64}}, {"epochs", {2}}}, {{"relative_error", 0.0}}));
  TrainingSession s3(never.config, *never.ctx.dataset, c10::Device(c10::kCPU), nullptr, nullptr);
  EXPECT_FALSE(train_to_target(s3, nullptr, never.ctx).target);
}

// A training whose last epoch's loss is not finite diverged: the stage after training fails the trial,
// naming the epoch the loss first went non-finite; a finite one passes. With lr 1e30 the real
// trainer's losses are NaN (the case issue 50 found stored as ok).
TEST(TrialStages, ATrainingWhoseLastLossIsNotFiniteDiverged) {
  RunConfig c;
  c.lr = 1e30;
  Training t;
  EpochRecord e;
  e.train_loss = e.val_loss = 0.5;
  t.result.epoch_records = {e, e, e};
  EXPECT_NO_THROW(check_training_finite(t, c));
  t.result.epoch_records[1].train_loss = t.result.epoch_records[2].train_loss = std::nan("");
  t.result.epoch_records[1].epoch = 1;
  expect_input_error([&] { check_training_finite(t, c); },
                     "training diverged: the training loss is NaN from epoch 2 of 3 on (learning rate 1e+30)");
  t.result.epoch_records[1].train_loss = t.result.epoch_records[2].train_loss = 0.5;
  t.result.epoch_records[2].val_loss = INFINITY;
  t.result.epoch_records[2].epoch = 2;
  expect_input_error([&] { check_training_finite(t, c); }, "the validation loss is infinite from epoch 3 of 3");

  Trial diverging(small_experiment({{"batch_size", {64}}, {"epochs", {2}}}));
  diverging.config.lr = 1e30;
  TrainingSession session(diverging.config, *diverging.ctx.dataset, c10::Device(c10::kCPU), nullptr, nullptr);
  const Training trained = train_to_target(session, nullptr, diverging.ctx);
  expect_input_error([&] { check_training_finite(trained, diverging.config); }, "training diverged");
}

// A recurrence attempt (batch_size_optimizer) stops at the end of the first epoch whose Zeus cost so
// far passes its bound, without reaching the target; every epoch before it stayed within the bound.
// Its result says what it cost and why it stopped.
TEST(TrialStages, ARecurrenceAttemptStopsAtTheFirstEpochPastItsCostBound) {
  const json energy = {{"meters", {"cpu_estimate"}}, {"cpu_tdp_w", 100}, {"sample_hz", 0}, {"idle_baseline_s", 0}};
  auto run = [&](std::optional<double> bound) {
    json j = {{"schema_version", 1},
              {"name", "stages"},
              {"dataset", {{"generator", {{"kind", "cms"}, {"rows", 400}, {"seed", 0}}}}},
              {"model", {{"name", "AE"}, {"compression_ratio", 1.6}}},
              {"training", {{"lr", 0.001}, {"test_size", 0.25}, {"progress", "none"}, {"threads", 1}}},
              {"sweep", {{"batch_size", {64, 128}}, {"epochs", {6}}}},
              {"target", {{"relative_error", 0.0}}},  // never met: only the bound or the epochs end it
              {"energy", energy},
              {"cost", {{"max_power_w", 100}}},
              {"batch_size_optimizer", {{"enabled", true}, {"default_batch_size", 64}}}};
    const Experiment ex = parse_experiment(j, "stages.json", ".");
    RecurrenceAttempt a;
    a.plan.batch_size = 64;
    a.plan.stage = "pruning";
    a.plan.cost_bound_j = bound;
    a.eta = 0.5;
    a.max_power_w = 100;
    const TrialSpec spec = recurrence_trial(ex, a, 0);
    TrialContext ctx;
    ctx.protocol = &ex;
    ctx.dataset_label = ex.dataset.label();
    ctx.dataset = load_experiment_dataset(ex.dataset);
    ctx.progress = "none";
    ctx.recurrence = &*spec.recurrence;
    RunConfig c = spec.config;
    c.progress = "none";
    const std::unique_ptr<EnergySession> session_energy = open_energy_session(c.energy, c10::Device(c10::kCPU), "t");
    TrainingSession session(c, *ctx.dataset, c10::Device(c10::kCPU), session_energy.get(), nullptr);
    return train_to_target(session, session_energy.get(), ctx);
  };
  auto cost = [](const EpochRow& r) { return 0.5 * *r.energy_j + 0.5 * 100 * r.elapsed_s; };
  const Training free = run(std::nullopt);  // no bound: every epoch
  ASSERT_EQ(free.epoch_rows.size(), 6u);
  EXPECT_TRUE(free.recurrence["stopped_at_cost_bound"].is_null());
  EXPECT_FALSE(free.recurrence["reached"].get<bool>());
  EXPECT_NEAR(free.recurrence["cost_j"].get<double>(), 0.5 * *free.train_energy_j + 50 * free.train_s, 1e-9);
  // A bound that the first epoch already passes: one epoch.
  const Training tight = run(1e-9);
  ASSERT_EQ(tight.epoch_rows.size(), 1u);
  EXPECT_EQ(tight.recurrence["stopped_at_cost_bound"], 1);
  // A bound around the third epoch's cost: training stops at the first epoch past it, whichever that is.
  const double bound = cost(free.epoch_rows[2]);
  const Training cut = run(bound);
  ASSERT_GE(cut.epoch_rows.size(), 1u);
  const EpochRow& last = cut.epoch_rows.back();
  if (cut.epoch_rows.size() < 6 || cost(last) > bound) {
    EXPECT_GT(cost(last), bound);
    EXPECT_EQ(cut.recurrence["stopped_at_cost_bound"], static_cast<int64_t>(cut.epoch_rows.size()));
  }
  for (std::size_t i = 0; i + 1 < cut.epoch_rows.size(); ++i) EXPECT_LE(cost(cut.epoch_rows[i]), bound) << i;
  EXPECT_EQ(cut.recurrence["cost_bound_j"], bound);
}

TEST(TrialStages, MeasureCodecCompressesAndDecompressesTheWholeDataset) {
  Trial t(small_experiment({{"batch_size", {64}}, {"epochs", {1}}}));
  const Dataset& ds = *t.ctx.dataset;
  TrainingSession session(t.config, ds, c10::Device(c10::kCPU), nullptr, nullptr);
  const CodecMeasurement codec = measure_codec(session, *make_run_inference_engine(session, t.config), nullptr, ds, t.config, nullptr);
  EXPECT_EQ(codec.latent.sizes(), (std::vector<int64_t>{400, 15}));
  EXPECT_EQ(codec.reconstruction.sizes(), (std::vector<int64_t>{400, 24}));
  EXPECT_GE(codec.compress.duration_s, 0);
  EXPECT_FALSE(codec.compress.energy_j);
  EXPECT_LE(codec.compress_begin_unix_s, codec.compress_end_unix_s);
  EXPECT_LE(codec.compress_end_unix_s, codec.decompress_end_unix_s);
}

TEST(TrialStages, BuildRecordWritesWhatTheStagesThatRanReturned) {
  Trial t(small_experiment({{"batch_size", {64}}, {"epochs", {2}}}, {{"relative_error", 10.0}}));
  const Dataset& ds = *t.ctx.dataset;
  // A trial that failed after its hardware stage keeps the limits and nothing of training.
  TrialOutcome part;
  HardwareSetup hw;
  hw.power_limits = json::array({{{"uuid", "simulated"}}});
  hw.enforced_power_limit_w = 150.0;
  hw.max_power_w = 300.0;
  hw.max_power_source = "simulated_gpu";
  hw.threads = 1;
  part.hardware = hw;
  TrialRecord failed = start_record(t.spec, t.ctx);
  build_record(part, t.config, t.ex, failed);
  EXPECT_EQ(failed.result["power_limits"].size(), 1u);
  EXPECT_EQ(failed.enforced_power_limit_w, 150.0);
  EXPECT_EQ(failed.result["max_power"]["source"], "simulated_gpu");  // MaxPower says where it came from
  EXPECT_FALSE(failed.train_s);
  EXPECT_TRUE(failed.epoch_rows.empty());
  EXPECT_FALSE(failed.result.contains("memory"));
  EXPECT_EQ(failed.energy_kind, "");

  // Every stage: the record has the training's rows and target, the codec's figures, "none" energy.
  TrainingSession session(t.config, ds, c10::Device(c10::kCPU), nullptr, nullptr);
  TrialOutcome all;
  all.hardware = prepare_hardware(t.spec, t.ctx, t.config);
  all.setup = describe_setup(session, t.ex.dataset.label(), ds, 64);
  all.training = train_to_target(session, nullptr, t.ctx);
  all.codec = measure_codec(session, *make_run_inference_engine(session, t.config), nullptr, ds, t.config, nullptr);
  all.reconstruction = {{"rmse", 0.5}};
  all.energy = read_energy(nullptr, t.config, *all.training, *all.codec);
  all.device = "cpu";
  TrialRecord rec = start_record(t.spec, t.ctx);
  build_record(all, t.config, t.ex, rec);
  EXPECT_EQ(rec.engine, engine_name(all.training->result.engine));
  EXPECT_EQ(rec.epoch_rows.size(), 2u);
  EXPECT_TRUE(rec.target_reached);
  EXPECT_EQ(rec.epochs_to_target, 1);
  EXPECT_EQ(rec.train_s, all.training->train_s);
  EXPECT_EQ(rec.compress_s, all.codec->compress.duration_s);
  EXPECT_EQ(rec.result["latent_shape"], json({400, 15}));
  EXPECT_EQ(rec.result["reconstruction"]["rmse"], 0.5);
  EXPECT_EQ(rec.result["model"]["name"], "AE");
  EXPECT_EQ(rec.result["device"], "cpu");
  EXPECT_TRUE(rec.result.contains("memory"));
  EXPECT_EQ(rec.energy_kind, "none");
  EXPECT_EQ(rec.provenance["meters"], json::array());
  EXPECT_FALSE(rec.total_energy_j);
}

// A failed trial's stored error is one line: LibTorch's stack trace and any further lines go to the
// log (stderr), not into the database, where they broke the Markdown trials table.
TEST(TrialError, IsStoredOnOneLineWithoutLibTorchsTrace) {
  const TrialSpec spec = expand_grid(small_experiment({{"batch_size", {64}}, {"precision", {"fp32"}}, {"epochs", {1}}})).front();
  try {
    TORCH_CHECK(false, "start (0) + length (-6) exceeds dimension size (4).\nsecond line");
  } catch (const c10::Error& e) {
    ASSERT_NE(std::string(e.what()).find('\n'), std::string::npos);  // what() carries the trace
    const std::string stored = stored_error(e, spec);
    EXPECT_EQ(stored.find('\n'), std::string::npos) << stored;
    EXPECT_EQ(stored.rfind("start (0) + length (-6) exceeds dimension size (4).", 0), 0u) << stored;
    EXPECT_NE(stored.find("(the rest of the message is in the run's log, on stderr)"), std::string::npos) << stored;
  }
  EXPECT_EQ(stored_error(InputError("x.npz: no such file", "check the path"), spec),
            "x.npz: no such file (hint: check the path)");
}

}  // namespace
}  // namespace balerbench
