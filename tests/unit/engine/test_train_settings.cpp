// test_train_settings.cpp: the training settings flow whole from a parsed run config to the trainer
// (engine/train_settings.h): every key set away from its default arrives in TrainOptions, the run
// config's JSON reads back to the same settings, and the trainer runs at the effective learning rate.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "harness/engine/train_settings.h"
#include "harness/engine/trainer.h"
#include "harness/run/run_config.h"
#include "harness/run/training_session.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

using nlohmann::json;

// Each field of TrainSettings by name, and whether a and b hold the same value in it. A new field
// joins this list (the count below checks it against to_json).
std::vector<std::pair<std::string, bool>> field_matches(const TrainSettings& a, const TrainSettings& b) {
  const GradScalerOptions& ga = a.grad_scaler;
  const GradScalerOptions& gb = b.grad_scaler;
  return {{"epochs", a.epochs == b.epochs},
          {"batch_size", a.batch_size == b.batch_size},
          {"lr", a.lr == b.lr},
          {"early_stopping", a.early_stopping == b.early_stopping},
          {"early_stopping_patience", a.early_stopping_patience == b.early_stopping_patience},
          {"min_delta", a.min_delta == b.min_delta},
          {"lr_scheduler", a.lr_scheduler == b.lr_scheduler},
          {"lr_scheduler_patience", a.lr_scheduler_patience == b.lr_scheduler_patience},
          {"lr_scaling", a.lr_scaling == b.lr_scaling},
          {"lr_reference_batch_size", a.lr_reference_batch_size == b.lr_reference_batch_size},
          {"loss", a.loss == b.loss},
          {"shuffle", a.shuffle == b.shuffle},
          {"seed", a.seed == b.seed},
          {"progress", a.progress == b.progress},
          {"progress_interval_s", a.progress_interval_s == b.progress_interval_s},
          {"grad_scaler", ga.init_scale == gb.init_scale && ga.growth_factor == gb.growth_factor &&
                              ga.backoff_factor == gb.backoff_factor && ga.growth_interval == gb.growth_interval},
          {"engine_knobs", a.engine_knobs.to_json() == b.engine_knobs.to_json()},
          {"cuda_graphs", a.cuda_graphs == b.cuda_graphs},
          {"profile", a.profile == b.profile},
          {"profile_sync", a.profile_sync == b.profile_sync}};
}

// A run config with every training key away from its default.
json every_training_key_set() {
  return {{"input_path", "/data/x.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6},
          {"epochs", 7}, {"batch_size", 33}, {"lr", 0.0123}, {"early_stopping", false},
          {"early_stopping_patience", 11}, {"min_delta", 0.25}, {"lr_scheduler", false},
          {"lr_scheduler_patience", 13}, {"lr_scaling", "sqrt"}, {"lr_reference_batch_size", 132},
          {"loss", "mse_mean"}, {"shuffle", true}, {"seed", 99}, {"progress", "none"},
          {"progress_interval_s", 4.5},
          {"grad_scaler", {{"init_scale", 1024.0}, {"growth_factor", 4.0}, {"backoff_factor", 0.25},
                           {"growth_interval", 17}}},
          {"fused_shards", 3}, {"cuda_graphs", false}, {"profile", true}, {"profile_sync", false}};
}

TEST(TrainSettings, TheFieldListCoversEveryKeyToJsonWrites) {
  const RunConfig c = parse_run_config(every_training_key_set(), "c.json", "");
  const TrainSettings& s = c;
  // to_json writes one key per field, the engines' keys in place of engine_knobs, and effective_lr
  // (with a scaling, as here): so as many keys as fields, less the engines' keys, add one, less one.
  const std::size_t keys = s.to_json().size() - s.engine_knobs.to_json().size();
  EXPECT_EQ(field_matches(s, s).size(), keys) << "a field of TrainSettings is missing from field_matches";
}

TEST(TrainSettings, EveryKeyOfAParsedConfigIsAwayFromItsDefault) {
  const RunConfig c = parse_run_config(every_training_key_set(), "c.json", "");
  for (const auto& [field, same] : field_matches(c, TrainSettings{}))
    EXPECT_FALSE(same) << field << " is at its default: the test config does not exercise it";
}

TEST(TrainSettings, TrainOptionsHoldTheConfigsSettingsWhole) {
  const RunConfig c = parse_run_config(every_training_key_set(), "c.json", "");
  const TrainOptions o = train_options(c);
  for (const auto& [field, same] : field_matches(o, c)) EXPECT_TRUE(same) << field << " did not reach the trainer";
  EXPECT_EQ(o.engine, c.engine);  // not a setting: resolved by the session (TrainingSession::options)
}

TEST(TrainSettings, TheRunConfigsJsonReadsBackToTheSameSettings) {
  const RunConfig c = parse_run_config(every_training_key_set(), "c.json", "");
  const json written = c.to_json();
  const RunConfig back = parse_run_config(written, "run_config.json", "");
  for (const auto& [field, same] : field_matches(back, c)) EXPECT_TRUE(same) << field << " changed on the way back";
  EXPECT_EQ(back.to_json(), written);
  // The names as configs spell them.
  EXPECT_EQ(written["loss"], "mse_mean");
  EXPECT_EQ(written["grad_scaler"]["growth_interval"], 17);
  EXPECT_EQ(written["fused_shards"], 3);
  EXPECT_DOUBLE_EQ(written["effective_lr"].get<double>(), 0.0123 * std::sqrt(33.0 / 132.0));
  // The settings' keys are the run config's keys for them.
  const json settings = static_cast<const TrainSettings&>(c).to_json();
  for (auto it = settings.begin(); it != settings.end(); ++it) EXPECT_EQ(written.at(it.key()), it.value()) << it.key();
}

TEST(TrainSettings, FitTrainsAtTheEffectiveLearningRate) {
  json j = every_training_key_set();
  j["lr_scaling"] = "linear";
  j["epochs"] = 1;
  j["profile"] = false;
  TrainOptions o = train_options(parse_run_config(j, "c.json", ""));
  o.engine = EngineKind::kLibtorch;
  torch::manual_seed(0);
  auto model = make_model("AE", 24, 15);
  const TrainResult r = fit(*model, torch::rand({66, 24}, torch::kDouble), {}, o);
  ASSERT_EQ(r.epoch_records.size(), 1u);
  EXPECT_DOUBLE_EQ(r.epoch_records[0].lr, 0.0123 * 33.0 / 132.0);
}

}  // namespace
}  // namespace balerbench
