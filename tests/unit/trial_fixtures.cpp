// trial_fixtures.cpp: see trial_fixtures.h.
#include "tests/unit/trial_fixtures.h"

namespace balerbench {

using nlohmann::json;

json minimal_experiment() {
  return json::parse(R"({
    "schema_version": 1, "name": "t",
    "dataset": {"generator": {"kind": "cms", "rows": 1000, "seed": 3}},
    "model": {"name": "AE", "compression_ratio": 1.6},
    "training": {"lr": 0.001, "test_size": 0.2},
    "sweep": {"batch_size": [128, 256, 512], "precision": ["fp32", "fp64"], "power_limit_w": [null],
              "epochs": [2, 4], "repeats": 3},
    "target": {"val_loss": 0.5},
    "cost": {"eta": [0, 0.5, 1], "max_power_w": 200}
  })");
}


TrialRecord fixture_trial(const std::string& key, const std::string& precision, int64_t batch, int64_t repeat,
                          double time_s, double energy_j, std::optional<double> tta, std::optional<double> eta) {
  TrialRecord t;
  t.key = key;
  t.experiment = "fixture";
  t.batch_size = batch;
  t.precision = precision;
  t.repeat = repeat;
  t.epochs = 10;
  t.train_s = time_s;
  t.train_energy_j = energy_j;
  t.compress_s = 0.5;
  t.compress_energy_j = 5;
  t.decompress_s = 0.25;
  t.decompress_energy_j = 2.5;
  t.total_energy_j = energy_j + 7.5;
  t.co2_g = (energy_j + 7.5) / 3.6e6 * 100;  // 100 g/kWh
  t.target_reached = tta.has_value();
  t.tta_s = tta;
  t.eta_j = eta;
  t.max_power_w = 100;
  t.energy_kind = "estimated";
  t.hardware = "CPU: Test CPU (2 CPUs)";
  t.spec = {{"target", {{"metric", "val_loss"}, {"value", 0.1}, {"stop_when_reached", false}}}};
  t.result = {{"model",
               {{"name", "AE"},
                {"n_features", 24},
                {"latent", 15},
                {"layers", json::array({{{"name", "en1"},
                                         {"part", "encoder"},
                                         {"in", 24},
                                         {"out", 200},
                                         {"parameters", 5000},
                                         {"macs_per_sample", 4800},
                                         {"t1_operations", 2457800}}})}}},
              {"dataset", {{"label", "CMS-like"}, {"shape", {1000, 24}}, {"dtype", "float64"}, {"bytes", 192000}}}};
  t.provenance = {{"host", "test"}};
  t.epoch_rows = {{0, 1.0, 0.9, std::nullopt, 1e-3, 1.0, 1.0, 10.0, false},
                  {1, 0.5, 0.05, std::nullopt, 1e-3, 1.0, 2.0, 20.0, true}};
  t.phases = {{"train", "energy", time_s, energy_j, 0.01, "estimated"}};
  t.samples = {{0.1, "train", 20}, {0.2, "train", 21}};
  return t;
}

std::vector<TrialRecord> fixture_trials() {
  return {fixture_trial("k1", "fp32", 512, 0, 10, 1000, 5, 500), fixture_trial("k2", "fp32", 512, 1, 12, 1200, 7, 700),
          fixture_trial("k3", "amp_fp16", 512, 0, 8, 600, 4, 300),
          fixture_trial("k4", "amp_fp16", 512, 1, 8, 600, 6, 500), fixture_trial("k5", "fp64", 512, 0, 20, 2000)};
}

TrialRecord with_model(TrialRecord t, const std::string& model, double compression_ratio, int64_t latent,
                       int64_t parameters) {
  t.spec["run_config"] = {{"model_name", model}, {"compression_ratio", compression_ratio}, {"lr", 0.001}};
  t.result["model"]["name"] = model;
  t.result["model"]["latent"] = latent;
  t.result["model"]["parameters"] = parameters;
  return t;
}

}  // namespace balerbench
