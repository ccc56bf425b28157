// result_sections.h: the sections that `balerbench train`, compress and decompress
// (run/cycle.cpp, run/codec_commands.cpp) and a sweep's trials (trial/trial_record.cpp) both write
// into their results, so that one key means one thing wherever it appears: the dataset, the
// precision, the engine, the profile and the reconstruction's errors.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include "datasets/dataset.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/phase_timer.h"
#include "harness/engine/trainer.h"
#include "harness/run/run_config.h"

namespace balerbench {

// {"path", "shape", "dtype", "features", "data_dimension", "subnormal_values"} of the input.
nlohmann::json dataset_json(const Dataset& ds);
// A warning line for stderr when the data hold subnormal values and `c` flushes them to zero
// (flush_denormal, the default): they would read as 0 without a word. Empty otherwise.
std::string subnormal_warning(const Dataset& ds, const RunConfig& c);
// The policy, the dtypes actually used and, with loss scaling, the scale history.
nlohmann::json precision_json(const TrainResult& r);
// {"name": "fused", "workers": 2, "note": "auto: fused (...)"}: the engine that trained.
nlohmann::json engine_json(const TrainResult& r);
// {"name", "note"?} of a compress or decompress.
nlohmann::json engine_json(const EngineDecision& decision);
// {"phases", "sync", "timer", "phase_sum_s"}: phase times and how they were taken.
nlohmann::json profile_json(const RunConfig& c, c10::Device device, const PhaseTimes& phases);
// Errors of the reconstruction y against the input: rmse, max_abs_error, normalized_rmse (per
// column range for tables, global range for frames) and the worst feature.
nlohmann::json reconstruction_json(const Dataset& in, const at::Tensor& y);

}  // namespace balerbench
