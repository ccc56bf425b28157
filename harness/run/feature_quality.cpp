// feature_quality.cpp: see feature_quality.h.
#include "harness/run/feature_quality.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

namespace balerbench {
namespace {

using nlohmann::json;

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The value at quantile p of `sorted` (ascending, n > 0), interpolated linearly between the two
// nearest ranks: NumPy's and Matplotlib's default.
double quantile_of(const std::vector<double>& sorted, double p) {
  const double at = p * static_cast<double>(sorted.size() - 1);
  const std::size_t low = static_cast<std::size_t>(at);
  const std::size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (at - static_cast<double>(low)) * (sorted[high] - sorted[low]);
}

// Matplotlib's box without its outliers, as Baler's box plot draws each feature's residual: the
// quartiles, and whiskers at the most extreme values within 1.5 times the box's height of it.
json box_of(const at::Tensor& residual) {
  if (residual.numel() == 0) return nullptr;
  const at::Tensor sorted_t = std::get<0>(residual.sort());
  std::vector<double> sorted(sorted_t.data_ptr<double>(), sorted_t.data_ptr<double>() + sorted_t.numel());
  const double q1 = quantile_of(sorted, 0.25), q3 = quantile_of(sorted, 0.75);
  const double reach = 1.5 * (q3 - q1);
  const auto low = std::lower_bound(sorted.begin(), sorted.end(), q1 - reach);
  const auto high = std::upper_bound(sorted.begin(), sorted.end(), q3 + reach);
  return {{"q1", q1}, {"median", quantile_of(sorted, 0.5)}, {"q3", q3},
          {"whisker_low", low == sorted.end() ? q1 : std::min(*low, q1)},
          {"whisker_high", high == sorted.begin() ? q3 : std::max(*(high - 1), q3)}};
}

// Counts of `values` in `bins` equal bins over [low, high] (the last one closed), with the values
// below and above the range counted apart.
json histogram_of(const at::Tensor& values, double low, double high, int64_t bins) {
  const at::Tensor inside = values.masked_select((values >= low) & (values <= high));
  const at::Tensor counts = at::histc(inside, bins, low, high).to(at::kLong);
  return {{"low", low}, {"high", high},
          {"counts", std::vector<int64_t>(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + bins)},
          {"below", (values < low).sum().item<int64_t>()}, {"above", (values > high).sum().item<int64_t>()}};
}

// The residual's and the response's distributions: the residual's in 40 bins over +-its largest
// magnitude (Baler's plot_1D bins it over a fixed [-1, 1], whatever the feature's unit), the
// response's as Baler's plot_1D bins it, in 0.5 % over [-20 %, 20 %] (Baler: 0.1 %), the values
// beyond counted; and the residual's box.
void add_distributions(json& q, const at::Tensor& residual, const std::optional<at::Tensor>& response) {
  q["residual_box"] = box_of(residual);
  const double reach = residual.numel() ? residual.abs().max().item<double>() : 0;
  q["residual_histogram"] = reach > 0 && std::isfinite(reach) ? histogram_of(residual, -reach, reach, 40) : json(nullptr);
  q["response_histogram"] = response ? histogram_of(*response, -20, 20, 80) : json(nullptr);
}

// One variable's figures from its values before and after, both (n) float64.
json quality_of(const std::string& name, const at::Tensor& before, const at::Tensor& after) {
  const at::Tensor r = after - before;
  const int64_t n = r.numel();
  const double rms = n ? r.pow(2).mean().sqrt().item<double>() : NAN;
  const double range = n ? (before.max() - before.min()).item<double>() : NAN;
  json q = {{"name", name},
            {"unit", feature_unit(name) ? json(*feature_unit(name)) : json(nullptr)},
            {"values", n},
            {"residual",
             {{"mean", n ? number_or_null(r.mean().item<double>()) : json(nullptr)},
              {"rms", number_or_null(rms)},
              {"min", n ? number_or_null(r.min().item<double>()) : json(nullptr)},
              {"max", n ? number_or_null(r.max().item<double>()) : json(nullptr)}}},
            {"max_abs_error", n ? number_or_null(r.abs().max().item<double>()) : json(nullptr)},
            {"nrmse", range > 0 ? number_or_null(rms / range) : json(nullptr)},
            {"psnr_db", range > 0 && rms > 0 ? number_or_null(20 * std::log10(range / rms)) : json(nullptr)}};
  // Baler's response, (after - before) / before in %, where `before` is not 0.
  const at::Tensor defined = before != 0;
  const int64_t m = defined.sum().item<int64_t>();
  q["response_undefined"] = n - m;
  if (m > 0) {
    const at::Tensor resp = r.masked_select(defined) / before.masked_select(defined) * 100.0;
    q["response_pct"] = {{"mean", number_or_null(resp.mean().item<double>())},
                         {"rms", number_or_null(resp.pow(2).mean().sqrt().item<double>())}};
    add_distributions(q, r, resp);
  } else {
    q["response_pct"] = nullptr;
    add_distributions(q, r, std::nullopt);
  }
  return q;
}

}  // namespace

std::string short_feature_name(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::optional<std::string> feature_unit(const std::string& name) {
  const auto open = name.rfind('[');
  if (open != std::string::npos && name.size() > open + 2 && name.back() == ']')
    return name.substr(open + 1, name.size() - open - 2);
  // Baler's CMS jets (Baler's example data and the synthetic stand-in's column names), by the name's
  // last part, as Baler's plots name them ("recoPFJets_ak5PFJets__RECO.obj.pt_" -> "pt_").
  static const std::map<std::string, std::string> kCms = {
      {"pt_", "GeV"}, {"eta_", ""}, {"phi_", "rad"}, {"mass_", "GeV"}, {"mJetArea", ""},
      {"mChargedHadronEnergy", "GeV"}, {"mNeutralHadronEnergy", "GeV"}, {"mPhotonEnergy", "GeV"},
      {"mElectronEnergy", "GeV"}, {"mMuonEnergy", "GeV"}, {"mHFHadronEnergy", "GeV"}, {"mHFEMEnergy", "GeV"},
      {"mChargedEmEnergy", "GeV"}, {"mChargedMuEnergy", "GeV"}, {"mNeutralEmEnergy", "GeV"},
      {"mChargedHadronMultiplicity", "count"}, {"mNeutralHadronMultiplicity", "count"},
      {"mPhotonMultiplicity", "count"}, {"mElectronMultiplicity", "count"}, {"mMuonMultiplicity", "count"},
      {"mHFHadronMultiplicity", "count"}, {"mHFEMMultiplicity", "count"}, {"mChargedMultiplicity", "count"},
      {"mNeutralMultiplicity", "count"}};
  const auto it = kCms.find(short_feature_name(name));
  if (it != kCms.end()) return it->second;
  return std::nullopt;
}

json feature_quality(const at::Tensor& before_in, const at::Tensor& after_in, const std::vector<std::string>& names,
                     bool frame) {
  const at::Tensor before = before_in.to(at::kDouble).contiguous();
  const at::Tensor after = after_in.to(at::kDouble).contiguous();
  json out = json::array();
  if (frame) {
    out.push_back(quality_of("all pixels", before.flatten(), after.flatten()));
    return out;
  }
  for (int64_t c = 0; c < before.size(1); ++c) {
    const std::string name = c < static_cast<int64_t>(names.size()) ? names[c] : std::to_string(c);
    out.push_back(quality_of(name, before.select(1, c), after.select(1, c)));
  }
  return out;
}

}  // namespace balerbench
