// feature_quality.h: reconstruction quality per variable, in the data's own units, as Baler's own
// evaluation gives it (baler/modules/plotting.py, plot_1D) and as the lossy-compression community
// reports it (Z-checker, SDRBench): for each feature of a table (for a frame, every pixel pooled),
//   residual      after - before: its mean, RMS, min and max, in the feature's unit;
//   response      (after - before) / before in %, Baler's figure: its mean and RMS over the values
//                 whose `before` is not 0, and how many are undefined (before = 0), counted;
//   psnr_db       20 log10(range / RMS residual), the range the feature's own (max - min of before);
//   max_abs_error the largest |residual|, nrmse the RMS residual / range;
//   distributions the residual's box (quartiles, whiskers as Baler's box plot draws them) and
//                 histogram, the response's histogram over Baler's [-20 %, 20 %].
// Every row of the compressed table counts, as in Baler's plot_1D (which compares the input file
// with the decompressed one); no row is cut.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace balerbench {

// The unit of a feature named `name`: a trailing "[unit]" in the name ("pt [GeV]"), else the unit
// of a column of Baler's CMS jets file (pt_, mass_ and the energies in GeV, phi_ in rad, the
// multiplicities as counts, eta_ and the jet area without one: ""), else none.
std::optional<std::string> feature_unit(const std::string& name);
// A feature's name as Baler's plots show it: its last dot-separated part.
std::string short_feature_name(const std::string& name);

// before, after: (rows, features) float64, the same shape. names: one per feature, or empty (the
// features are then "0", "1", ...); frame: pool every feature as one variable "all pixels".
// A JSON array of {"name", "unit", "values", "residual": {"mean","rms","min","max"}, "max_abs_error",
// "nrmse", "psnr_db", "response_pct": {"mean","rms"} or null, "response_undefined",
// "residual_box": {"q1","median","q3","whisker_low","whisker_high"}, "residual_histogram" and
// "response_histogram": {"low","high","counts","below","above"} or null (no spread; no response)}.
nlohmann::json feature_quality(const at::Tensor& before, const at::Tensor& after, const std::vector<std::string>& names,
                               bool frame);

}  // namespace balerbench
