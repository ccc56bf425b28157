// result_sections.cpp: see result_sections.h.
#include "harness/run/result_sections.h"

#include <ATen/ATen.h>

#include <string>

#include "common/error.h"
#include "datasets/normalizer.h"
#include "harness/run/feature_quality.h"
#include "models/architecture.h"

namespace balerbench {

using nlohmann::json;

// The "profile" section of a report: phase times and how they were taken.
json profile_json(const RunConfig& c, c10::Device device, const PhaseTimes& phases) {
  return {{"phases", phases.to_json()},
          {"sync", c.profile_sync},
          {"timer", device.is_cuda() ? (c.profile_sync ? "host clock, device synchronised at each edge" : "CUDA events")
                                     : "host clock"},
          {"phase_sum_s", phases.sum_s()}};
}

json engine_json(const TrainResult& r) {
  json j = engine_json(EngineDecision{r.engine, r.engine_note});
  const EngineStatus& s = r.engine_status;
  if (s.workers > 0) j["workers"] = s.workers;  // an engine that split the batches
  j.update(s.details);
  return j;
}

json engine_json(const EngineDecision& decision) {
  json j = {{"name", engine_name(decision.engine)}};
  if (!decision.note.empty()) j["note"] = decision.note;
  return j;
}

json dataset_json(const Dataset& ds) {
  return {{"path", ds.source_path},
          {"shape", ds.original_shape},
          {"dtype", ds.source_dtype},
          {"features", ds.features()},
          {"data_dimension", ds.data_dimension()},
          {"subnormal_values", ds.subnormal_values}};
}

std::string subnormal_warning(const Dataset& ds, const RunConfig& c) {
  if (!c.flush_denormal) return "";
  // In float64 everywhere; in float32 when the file or the model holds the values as float32.
  bool float32 = ds.source_dtype == "float32";
  try {
    float32 = float32 || model_dtype_name(c.model_name) == "float32";
  } catch (const InputError&) {  // an unknown model is refused where the model is made
  }
  const int64_t n = ds.subnormal_values ? ds.subnormal_values : float32 ? ds.float32_subnormal_values : 0;
  if (n == 0) return "";
  const std::string range = ds.subnormal_values ? "0 < |x| < 2.2e-308" : "0 < |x| < 1.2e-38, in float32";
  return "balerbench: warning: " + ds.source_path + ": " + std::to_string(n) + " value" + (n == 1 ? " is" : "s are") +
         " subnormal (" + range + "); with flush_denormal on (the default) they read as 0 in training, "
         "Baler's compression and the error measures; Zstandard keeps them (hint: --set flush_denormal=false keeps "
         "them, at some cost in speed)\n";
}

// The policy, the dtypes actually used and, with loss scaling, the scale
// history.
json precision_json(const TrainResult& r) {
  json j = r.precision.to_json();
  j["grad_scaler"] = r.loss_scaling ? r.scaler.to_json() : json(nullptr);
  return j;
}

// Errors of y against the input. Normalized errors divide by each column's
// range for tables (columns have different units) and by the global range for
// frames (every pixel is the same quantity; a pixel that barely changes over
// time would otherwise dominate).
namespace {

// The root mean square of `t` over `dim` (all of it when dim < 0), scaled by its largest magnitude
// first, so that values near 1e200 and above do not overflow to inf (float_codecs' error_metrics does
// the same, and the two agree).
at::Tensor scaled_rms(const at::Tensor& t, int64_t dim = -1) {
  at::Tensor s = dim < 0 ? t.abs().max() : std::get<0>(t.abs().max(dim));
  s = at::where(s > 0, s, at::ones_like(s));
  return s * (dim < 0 ? (t / s).pow(2).mean() : (t / s).pow(2).mean(dim)).sqrt();
}

}  // namespace

json reconstruction_json(const Dataset& in, const at::Tensor& y) {
  const at::Tensor diff = y - in.data;
  at::Tensor scale;
  if (in.data_dimension() == 1) {
    scale = Normalization::fit(in.data).range;
  } else {
    const double range = (in.data.max() - in.data.min()).item<double>();
    scale = at::full({in.features()}, range > 0 ? range : 1.0, at::kDouble);
  }
  const at::Tensor ndiff = diff / scale;
  const at::Tensor col_rmse = scaled_rms(ndiff, 0);
  const int64_t worst = col_rmse.argmax().item<int64_t>();
  json where;
  if (in.data_dimension() == 2) {
    const int64_t w = in.original_shape[2];
    where = "pixel (" + std::to_string(worst / w) + ", " + std::to_string(worst % w) + ")";
  } else {
    where = worst < static_cast<int64_t>(in.names.size()) ? json(in.names[worst]) : json(worst);
  }
  const int64_t max_at = std::get<0>(diff.abs().max(0)).argmax().item<int64_t>();  // the column of the largest |error|
  json max_where = in.data_dimension() == 1 && max_at < static_cast<int64_t>(in.names.size())
                       ? json(in.names[max_at]) : json(nullptr);
  return {{"rmse", scaled_rms(diff).item<double>()},
          {"max_abs_error", diff.abs().max().item<double>()},
          {"max_abs_error_feature", max_where},
          {"normalized_rmse", scaled_rms(ndiff).item<double>()},
          {"normalization", in.data_dimension() == 1 ? "per-column range" : "global range"},
          {"worst_feature", where},
          {"worst_feature_normalized_rmse", col_rmse[worst].item<double>()},
          // Baler's own figures per variable, in the data's units, on every row (feature_quality.h).
          {"rows", in.data.size(0)},
          {"per_feature", feature_quality(in.data, y, in.names, in.data_dimension() == 2)}};
}

}  // namespace balerbench
