// feature_quality.cpp: see feature_quality.h.
#include "harness/run/feature_quality.h"

#include <ATen/ATen.h>

#include <cmath>
#include <map>

namespace balerbench {
namespace {

using nlohmann::json;

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

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
  } else {
    q["response_pct"] = nullptr;
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
