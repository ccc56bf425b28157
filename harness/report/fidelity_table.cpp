// fidelity_table.cpp: --table fidelity: how well each configuration reconstructs the data, per
// variable, in Baler's own terms (run/feature_quality.h, stored with every trial under
// result.reconstruction.per_feature): the worst feature and the median one by normalised RMS error,
// each with its 95% interval over the repeats, its RMS residual in the feature's unit, Baler's
// response RMS in % and its PSNR; beside them the energy to train, compress and decompress.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "harness/report/fidelity.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

double number_at(const json& f, const char* a, const char* b = nullptr) {
  const json& v = b ? (f.contains(a) && f[a].is_object() && f[a].contains(b) ? f[a][b] : json()) : f.value(a, json());
  return v.is_number() ? v.get<double>() : NAN;
}

// One feature's figures over a group's repeats.
struct FeatureRepeats {
  std::string name;
  json unit;
  std::vector<double> nrmse, residual_rms, response_rms, psnr;
};

std::vector<FeatureRepeats> features_of(const Group& g) {
  std::map<std::string, std::size_t> at;
  std::vector<FeatureRepeats> out;
  for (const TrialRecord* t : g.ok) {
    const json* features = per_feature_of(*t);
    if (!features) continue;
    for (const json& f : *features) {
      const std::string name = baler_feature_name(f.value("name", std::string("?")));
      auto [it, fresh] = at.try_emplace(name, out.size());
      if (fresh) out.push_back({name, f.value("unit", json()), {}, {}, {}, {}});
      FeatureRepeats& r = out[it->second];
      const auto add = [](std::vector<double>& v, double x) {
        if (std::isfinite(x)) v.push_back(x);
      };
      add(r.nrmse, number_at(f, "nrmse"));
      add(r.residual_rms, number_at(f, "residual", "rms"));
      add(r.response_rms, number_at(f, "response_pct", "rms"));
      add(r.psnr, number_at(f, "psnr_db"));
    }
  }
  return out;
}

double mean_of(const std::vector<double>& v) { return v.empty() ? -1 : summarize(v).mean; }

// name, unit, nrmse with its interval, residual RMS, response RMS %, PSNR: one feature's cells.
void feature_cells(std::vector<json>& row, const FeatureRepeats* f) {
  if (!f) {
    row.insert(row.end(), 8, json(nullptr));
    return;
  }
  const Summary s = summarize(f->nrmse);
  row.push_back(f->name);
  row.push_back(f->unit.is_string() ? json(f->unit.get<std::string>().empty() ? "-" : f->unit) : json(nullptr));
  row.push_back(mean_or_null(s));
  row.push_back(s.n > 1 ? num(std::max(0.0, s.mean - s.ci95_half_width)) : json(nullptr));
  row.push_back(s.n > 1 ? num(s.mean + s.ci95_half_width) : json(nullptr));
  row.push_back(mean_or_null(summarize(f->residual_rms)));
  row.push_back(mean_or_null(summarize(f->response_rms)));
  row.push_back(mean_or_null(summarize(f->psnr)));
}

std::vector<json> fidelity_row(const Group& g, const Axes& a) {
  std::vector<FeatureRepeats> features = features_of(g);
  std::sort(features.begin(), features.end(),
            [](const FeatureRepeats& x, const FeatureRepeats& y) { return mean_of(x.nrmse) > mean_of(y.nrmse); });
  const FeatureRepeats* worst = features.empty() ? nullptr : &features.front();
  const FeatureRepeats* median = features.empty() ? nullptr : &features[features.size() / 2];
  std::vector<json> row = {g.precision};
  axis_cells(row, g, a, false);
  row.push_back(static_cast<int64_t>(g.ok.size()));
  row.push_back(static_cast<int64_t>(features.size()));
  feature_cells(row, worst);
  feature_cells(row, median);
  const Summary energy = g.stat([](const TrialRecord& r) -> std::optional<double> {
    if (!r.train_energy_j || !r.compress_energy_j || !r.decompress_energy_j) return std::nullopt;
    return *r.train_energy_j + *r.compress_energy_j + *r.decompress_energy_j;
  });
  row.push_back(mean_or_null(energy));
  row.push_back(g.energy_kind());
  return row;
}

}  // namespace

std::string baler_feature_name(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

std::optional<double> cycle_energy_j(const TrialRecord& r) {
  if (!r.train_energy_j || !r.compress_energy_j || !r.decompress_energy_j) return std::nullopt;
  return *r.train_energy_j + *r.compress_energy_j + *r.decompress_energy_j;
}

const json* per_feature_of(const TrialRecord& r) {
  if (!r.result.is_object() || !r.result.contains("reconstruction")) return nullptr;
  const json& rec = r.result["reconstruction"];
  return rec.is_object() && rec.contains("per_feature") && rec["per_feature"].is_array() ? &rec["per_feature"] : nullptr;
}

std::optional<WorstFeature> worst_feature_of(const Group& g) {
  std::vector<FeatureRepeats> features = features_of(g);
  if (features.empty()) return std::nullopt;
  const auto worst = std::max_element(features.begin(), features.end(), [](const FeatureRepeats& x, const FeatureRepeats& y) {
    return mean_of(x.nrmse) < mean_of(y.nrmse);
  });
  if (worst->nrmse.empty()) return std::nullopt;
  return WorstFeature{worst->name, summarize(worst->nrmse)};
}

bool has_feature_quality(const std::vector<TrialRecord>& trials) {
  return std::any_of(trials.begin(), trials.end(), [](const TrialRecord& t) { return per_feature_of(t) != nullptr; });
}

std::vector<Table> make_fidelity_tables(const std::vector<TrialRecord>& trials, const TableOptions& o) {
  const std::vector<Group> all = group_trials(trials);
  const std::vector<Group> groups = finished(all);
  Table t;
  t.name = "fidelity";
  t.title = "Reconstruction per variable: the worst and the median feature per configuration, on " + where_run(trials);
  const Axes a = varying(groups);
  t.columns = {"precision"};
  axis_columns(t, a, false);
  for (const char* c : {"n", "features"}) t.columns.push_back(c);
  for (const char* which : {"worst", "median"})
    for (const char* c : {"_feature", "_unit", "_nrmse", "_nrmse_ci95_low", "_nrmse_ci95_high", "_residual_rms",
                          "_response_rms_pct", "_psnr_db"})
      t.columns.push_back(std::string(which) + c);
  t.columns.push_back("energy_j");
  t.columns.push_back("energy");
  for (const Group& g : groups) t.rows.push_back(fidelity_row(g, a));
  t.decision_columns = {"precision", "model", "compression_ratio", "latent", "parameters", "batch_size", "engine", "power_limit", "epochs", "n", "worst_feature", "worst_unit",
                        "worst_nrmse", "worst_nrmse_ci95_low", "worst_nrmse_ci95_high", "worst_residual_rms",
                        "worst_response_rms_pct", "median_feature", "median_nrmse", "median_nrmse_ci95_low",
                        "median_nrmse_ci95_high", "energy_j"};
  t.notes.push_back(
      "Per variable, on every row of the compressed table (as Baler's plot_1D compares its input with the "
      "decompressed file): nrmse = RMS residual / the feature's range (before); residual = after - before, its RMS "
      "in the feature's unit (unit '-': none; empty: not known); response = residual / before in %, Baler's figure, "
      "over the values whose before is not 0 (result.reconstruction.per_feature counts the others); psnr_db = "
      "20 log10(range / RMS residual). worst: the feature with the highest mean nrmse over the repeats; median: the "
      "middle one by that order. Intervals: 95% over the repeats (Student t). energy_j: training, compression and "
      "decompression together, mean over the repeats.");
  failures_note(t, all);
  run_notes(t, all);
  return {t, fidelity_frontier_table(trials, all, groups, o)};
}

}  // namespace balerbench::report
