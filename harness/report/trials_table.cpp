// trials_table.cpp: --table trials: every stored trial, one row each, failed, skipped and warm-up
// trials included, with the notes that say why a trial is flagged (a disturbed machine, energy
// windows not to trust).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "harness/report/group_checks.h"
#include "harness/report/ratio_comparison.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"
#include "harness/report/trial_identity.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// The figures (train, eta, compress, decompress) whose window held too few meter updates: "no", or
// "eta, compress", or "-" when none was recorded.
json short_windows_cell(const TrialRecord& r) {
  std::string list;
  bool recorded = false;
  for (const char* f : {"train", "eta", "compress", "decompress"}) {
    recorded = recorded || meter_updates_of(r, f).has_value();
    if (short_window(r, f)) list += (list.empty() ? "" : ", ") + std::string(f);
  }
  return !recorded ? json("-") : list.empty() ? json("no") : json(list);
}

// The GPU's state at the trial's start (the hottest GPU) and the throttle reasons seen in its
// measured windows (result.thermal; "-" without an NVML GPU or before it was recorded).
std::pair<json, json> thermal_cells(const TrialRecord& r) {
  if (!r.result.is_object() || !r.result.contains("thermal") || !r.result["thermal"].is_object()) return {"-", "-"};
  const json& th = r.result["thermal"];
  json start = nullptr;
  for (const auto& g : th.value("start", json::array()))
    if (g.is_object() && g.contains("temperature_c") && g["temperature_c"].is_number())
      start = start.is_null() ? g["temperature_c"] : json(std::max(start.get<double>(), g["temperature_c"].get<double>()));
  std::vector<std::string> reasons;
  const json windows = th.value("windows", json::object());  // items() of a temporary would dangle
  for (const auto& [name, w] : windows.items())
    if (w.is_object())
      for (const auto& reason : w.value("throttle_reasons", json::array()))
        if (reason.is_string()) reasons.push_back(reason.get<std::string>());
  const std::string seen = distinct_joined(reasons);
  return {start, seen == "-" ? json("none") : json(seen)};
}

// The threads a trial trained on, and where the count came from: "2 (calibrated)", "1 (earlier in
// this run)", "4 (config)"; "-" where not recorded.
json threads_cell(const TrialRecord& r) {
  const auto n = describe_trial_system(r).threads;
  if (!n) return "-";
  const json* choice = r.result.is_object() && r.result.contains("threads") ? &r.result["threads"] : nullptr;
  const bool sourced = choice && choice->is_object() && choice->contains("source") && (*choice)["source"].is_string();
  return std::to_string(*n) + (sourced ? " (" + (*choice)["source"].get<std::string>() + ")" : "");
}

std::vector<json> trial_row(const TrialRecord& r, bool target, const std::string& outlier) {
  const auto pm = [](const std::optional<double>& u) { return u ? num(*u) : json("-"); };
  const auto updates = [](const std::optional<double>& n) { return n ? num(*n) : json("-"); };
  const Disturbance d = disturbance_of(r);
  const auto [start_temp, throttle] = thermal_cells(r);
  const json disturbed = !d.known ? "-" : d.disturbed ? "yes" : "no";
  const json not_reached = r.status == TrialStatus::kOk && target ? "not reached" : "-";
  return {r.id, r.grid_index, r.repeat, r.batch_size, r.precision, r.engine, threads_cell(r), watts_label(r.power_limit_w),
          r.epochs,
          trial_status_name(r.status), r.train_s ? num(*r.train_s) : json(nullptr),
          r.train_energy_j ? num(*r.train_energy_j) : json(nullptr), pm(uncertainty_of(r, "train_j")),
          r.tta_s ? num(*r.tta_s) : not_reached,
          r.eta_j ? num(*r.eta_j) : not_reached,
          pm(uncertainty_of(r, "eta_j")), pm(trial_memory_peak(r, "host_peak_rss_mib")),
          pm(trial_memory_peak(r, "cuda_peak_reserved_mib")),
          pm(trial_memory_peak(r, "gpu_memory_used_peak_mib")),
          r.result.is_object() && r.result.contains("harness_overhead_s") ? r.result["harness_overhead_s"]
                                                                          : json(nullptr),
          updates(meter_updates_of(r, "train")), updates(meter_updates_of(r, "eta")), short_windows_cell(r),
          start_temp, throttle, outlier,
          is_warmup(r) ? "yes" : "no", disturbed, system_of(r).fingerprint, spec_variant_of(r),
          r.error};
}

// Per trial id: the figures (training time, energy) in which hyperfine's rule calls it an outlier
// among its configuration's repeats.
std::map<int64_t, std::string> outliers_by_trial(const std::vector<TrialRecord>& trials) {
  std::map<int64_t, std::string> out;
  const std::pair<TrialFigure, const char*> figures[] = {{kTrainTime.get, "time"}, {kTrainEnergy.get, "energy"}};
  for (const auto& g : finished(group_trials(trials)))
    for (const auto& [figure, name] : figures)
      for (const Outlier& o : outliers_of(g, figure)) {
        std::string& cell = out[o.trial->id];
        cell += (cell.empty() ? "" : ", ") + std::string(name);
      }
  return out;
}

// A flag that repeats across a phase's windows with only its measured figure changing ("shorter than
// rapl's update period (0.0072 s < 0.01 s)"), kept once with the figure's range and the count.
struct FlagGroup {
  std::string before, after;  // the text around "(A s < B s)"; `after` starts at " < "
  std::string first;          // the first flag as written
  double low_s = 0, high_s = 0;
  std::string low_text, high_text;  // the figures as written
  int count = 0;
  std::string line(const std::string& phase) const {
    if (count == 1) return phase + ": " + first;
    return phase + ": " + before + low_text + " to " + high_text + " s" + after + " (" + std::to_string(count) +
           " windows)";
  }
};

// A trial's energy flags (failed meter reads, windows shorter than a meter's update period), each
// as "phase: flag", once; the windows are its phases, then its total. The same flag from several
// windows of a phase (one per epoch's evaluation, say) is one line with the range of its figure.
std::vector<std::string> energy_flags(const TrialRecord& r) {
  std::vector<std::string> flags;
  if (!r.result.is_object() || !r.result.contains("energy") || !r.result["energy"].is_object()) return flags;
  const json& energy = r.result["energy"];
  static const std::regex figure(R"(\(([0-9.eE+-]+) s( < [^()]*\).*))");
  const auto collect = [&flags](const json& window) {
    if (!window.is_object() || !window.contains("flags") || !window["flags"].is_array()) return;
    const std::string phase = window.value("phase", std::string("window"));
    std::vector<FlagGroup> groups;
    for (const auto& f : window["flags"]) {
      if (!f.is_string()) continue;
      const std::string text = f.get<std::string>();
      std::smatch m;
      if (!std::regex_search(text, m, figure)) {
        const std::string line = phase + ": " + text;
        if (std::find(flags.begin(), flags.end(), line) == flags.end()) flags.push_back(line);
        continue;
      }
      const std::string before = m.prefix().str() + "(";
      const std::string after = m[2].str();
      const std::string figure_text = m[1].str();
      const double value_s = std::strtod(figure_text.c_str(), nullptr);
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const FlagGroup& x) { return x.before == before && x.after == after; });
      if (g == groups.end()) {
        groups.push_back({before, after, text, value_s, value_s, figure_text, figure_text, 1});
      } else {
        if (value_s < g->low_s) g->low_s = value_s, g->low_text = figure_text;
        if (value_s > g->high_s) g->high_s = value_s, g->high_text = figure_text;
        ++g->count;
      }
    }
    for (const FlagGroup& g : groups) flags.push_back(g.line(phase));
  };
  if (energy.contains("phases") && energy["phases"].is_array())
    for (const auto& w : energy["phases"]) collect(w);
  if (energy.contains("total")) collect(energy["total"]);
  return flags;
}

void column_notes(Table& t) {
  t.notes.push_back(
      "overhead_s: the trial's wall time minus its training, compress and decompress windows (and the "
      "cooldown): meters, idle baseline, set-up, per-epoch snapshots, provenance. Storing the trial "
      "comes after; bench_sweep measures it.");
  t.notes.push_back(kUncertaintyNote);
  t.notes.push_back(std::string(kMemoryNote) + " Here the highest of the trial's three phases.");
  t.notes.push_back(
      "train_updates, eta_updates: the meter updates inside the training and ETA windows (of the slowest measuring "
      "meter; '-' for estimated energy); short_windows: the figures whose window held fewer than the trial's "
      "threshold (energy.min_meter_updates). start_temp_c: the hottest GPU's temperature as the trial started; "
      "throttle: NVML's throttle reasons seen during its measured windows. outlier: the figures in which hyperfine's "
      "rule (|x - median| / MAD > 14.83) sets it apart from its configuration's repeats.");
  t.notes.push_back(
      "threads: the intra-op threads the trial trained on and where the count came from (the run config, a "
      "calibration, the cache, or an earlier trial of the same setting in the same run). "
      "warmup: a warm-up trial (run_design.warmup), listed here and left out of every statistic; disturbed: yes when "
      "other processes' CPU use or steal time during the trial passed the threshold, or its GPU started hot or "
      "throttled for power or temperature, '-' when not recorded; system: "
      "the system fingerprint (--table systems describes each); variant: the spec variant (the experiment's spec "
      "without its grid coordinates; a change in the file between runs gives a new one).");
}

// Warm-ups, disturbed trials and their reasons, and what not to trust in a trial's energy.
void trial_notes(Table& t, const std::vector<TrialRecord>& trials) {
  std::vector<const TrialRecord*> all;
  int64_t warmups = 0;
  for (const auto& r : trials) {
    all.push_back(&r);
    warmups += is_warmup(r);
  }
  if (warmups)
    t.notes.push_back(std::to_string(warmups) + " warm-up trial(s) here: left out of every other table's statistics.");
  disturbed_note(t, all);
  thermal_note(t, all);
  for (const auto& r : trials)
    if (const Disturbance d = disturbance_of(r); d.disturbed && !d.all_reasons().empty())
      t.notes.push_back("trial " + std::to_string(r.id) + " disturbed: " + d.all_reasons());
  for (const auto& r : trials) {
    const std::vector<std::string> flags = energy_flags(r);
    if (flags.empty()) continue;
    std::string note = "trial " + std::to_string(r.id) + " energy flags: ";
    for (std::size_t i = 0; i < flags.size(); ++i) note += (i ? "; " : "") + flags[i];
    t.notes.push_back(note);
  }
}

// The model and compression ratio of each trial, after its repeat, when they differ among the trials
// (the tables' other axes are always listed here; these came later, and a table of one model keeps its
// columns).
void model_columns(Table& t, const std::vector<TrialRecord>& trials) {
  std::set<std::string> models, ratios;
  for (const auto& r : trials) {
    models.insert(model_of(r));
    ratios.insert(ratio_label(compression_ratio_of(r)));
  }
  const auto at = [](std::size_t i) { return static_cast<std::ptrdiff_t>(i); };
  std::size_t place = 3;  // after id, grid_index, repeat
  if (models.size() > 1) {
    t.columns.insert(t.columns.begin() + at(place), "model");
    for (std::size_t i = 0; i < trials.size(); ++i) t.rows[i].insert(t.rows[i].begin() + at(place), model_of(trials[i]));
    ++place;
  }
  if (ratios.size() > 1) {
    t.columns.insert(t.columns.begin() + at(place), "compression_ratio");
    for (std::size_t i = 0; i < trials.size(); ++i) {
      const std::optional<double> ratio = compression_ratio_of(trials[i]);
      t.rows[i].insert(t.rows[i].begin() + at(place), ratio ? json(*ratio) : json(nullptr));
    }
  }
}

}  // namespace

std::vector<Table> make_trials_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  Table t;
  t.name = "trials";
  t.title = "Every trial stored";
  const bool target = has_target(trials);
  t.columns = {"id",     "grid_index", "repeat",   "batch_size", "precision", "engine", "threads", "power_limit", "epochs",
               "status", "time_s",     "energy_j", "energy_pm_j", "tta_s",   "eta_j",  "eta_pm_j", "peak_rss_mib",
               "cuda_peak_mib", "gpu_used_peak_mib", "overhead_s", "train_updates", "eta_updates", "short_windows",
               "start_temp_c", "throttle", "outlier", "warmup", "disturbed", "system", "variant", "error"};
  const std::map<int64_t, std::string> outliers = outliers_by_trial(trials);
  for (const auto& r : trials) {
    const auto o = outliers.find(r.id);
    t.rows.push_back(trial_row(r, target, o == outliers.end() ? "no" : o->second));
  }
  model_columns(t, trials);
  t.decision_columns = {"id",     "repeat", "model", "compression_ratio", "batch_size", "precision", "engine",
                        "power_limit", "epochs", "status", "time_s", "energy_j", "warmup", "disturbed", "error"};
  column_notes(t);
  trial_notes(t, trials);
  return {t};
}

}  // namespace balerbench::report
