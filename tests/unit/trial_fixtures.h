// trial_fixtures.h: an experiment file and finished trials built in memory, with every figure the
// report tables and the results database read (times, energies, target, model and dataset
// descriptions, epochs, phases, samples), for the experiment, store and report-table tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/store/store.h"

namespace balerbench {

// A small valid experiment: grid batch_size x precision x epochs, 3 repeats, a target and cost weights.
nlohmann::json minimal_experiment();

// A finished trial of `precision` at `batch`, 10 epochs, reaching the target (val_loss <= 0.1) at
// `tta` s and `eta` J when given.
TrialRecord fixture_trial(const std::string& key, const std::string& precision, int64_t batch, int64_t repeat,
                          double time_s, double energy_j, std::optional<double> tta = std::nullopt,
                          std::optional<double> eta = std::nullopt);

// Two repeats each: fp32 (10 s, 1000 J; 12 s, 1200 J), amp_fp16 (8 s, 600 J; 8 s, 600 J),
// fp64 one repeat that missed the target (20 s, 2000 J).
std::vector<TrialRecord> fixture_trials();

// `t` trained as `model` at `compression_ratio`, as a sweep stores it: the model and ratio in its spec's
// run config (with a learning rate, as every run config has one), the latent size and parameter count
// in its result's model.
TrialRecord with_model(TrialRecord t, const std::string& model, double compression_ratio, int64_t latent,
                       int64_t parameters);

}  // namespace balerbench
