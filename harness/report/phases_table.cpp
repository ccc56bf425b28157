// phases_table.cpp: --table phases: docs/reference_tables.md T4's shape (energy, CO2, duration and peak
// memory per Baler mode: train, compress, decompress), and T5's (where training time goes) for
// trials profiled with synchronised phase timers.
#include <algorithm>
#include <string>
#include <vector>

#include "harness/energy/carbon.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// One Baler mode of a trial: its name (as in result.memory), and its time and energy.
struct Mode {
  const char* name;
  std::optional<double> TrialRecord::*time;
  std::optional<double> TrialRecord::*energy;
};
const Mode kModes[] = {{"train", &TrialRecord::train_s, &TrialRecord::train_energy_j},
                       {"compress", &TrialRecord::compress_s, &TrialRecord::compress_energy_j},
                       {"decompress", &TrialRecord::decompress_s, &TrialRecord::decompress_energy_j}};

std::vector<json> mode_row(const Group& g, const Axes& a, const Mode& p) {
  const Summary d = g.stat([&](const TrialRecord& r) { return r.*(p.time); });
  const Summary e = g.stat([&](const TrialRecord& r) { return r.*(p.energy); });
  const Summary co2 = g.stat([&](const TrialRecord& r) -> std::optional<double> {
    const auto en = r.*(p.energy);
    if (!en || !r.co2_g || !r.total_energy_j || *r.total_energy_j <= 0) return std::nullopt;
    return *en * *r.co2_g / *r.total_energy_j / 1000.0;  // the trial's g/J, in kg
  });
  const Summary rss = g.stat([&](const TrialRecord& r) { return memory_of(r, p.name, "host_peak_rss_mib"); });
  const Summary cuda = g.stat([&](const TrialRecord& r) { return memory_of(r, p.name, "cuda_peak_reserved_mib"); });
  const Summary gpu = g.stat([&](const TrialRecord& r) { return memory_of(r, p.name, "gpu_memory_used_peak_mib"); });
  std::vector<json> row;
  axis_cells(row, g, a);
  for (const json& v :
       {json(p.name), json(static_cast<int64_t>(d.n)), mean_or_null(e), e.n ? num(e.mean / kJoulesPerKwh) : json(nullptr),
        mean_or_null(co2), mean_or_null(d), sd_or_null(d), mean_or_null(rss), mean_or_null(cuda), mean_or_null(gpu),
        json(g.energy_kind())})
    row.push_back(v);
  return row;
}

// T4: one row per configuration and mode.
Table modes_table(const std::vector<TrialRecord>& trials, const std::vector<Group>& all) {
  const std::vector<Group> groups = finished(all);
  const Axes a = varying(groups);
  Table t;
  t.name = "phases";
  t.title = "Energy, CO2 and duration per Baler mode (T4's shape) on " + where_run(trials);
  t.columns = {};
  axis_columns(t, a);
  for (const char* c : {"mode", "n", "energy_j", "energy_kwh", "co2_kg", "duration_s", "duration_sd_s", "peak_rss_mib",
                        "cuda_peak_mib", "gpu_used_peak_mib", "energy"})
    t.columns.push_back(c);
  for (const auto& g : groups)
    for (const Mode& p : kModes) t.rows.push_back(mode_row(g, a, p));
  t.decision_columns = {"model", "compression_ratio", "latent", "parameters", "batch_size", "precision", "engine", "power_limit", "epochs", "mode", "n", "energy_j",
                        "duration_s", "energy"};
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  t.notes.push_back(
      "train = the whole training (epochs and evaluation); compress and decompress = the whole "
      "dataset through the encoder and the decoder. CO2 = energy x PUE x the trial's carbon intensity.");
  t.notes.push_back(kMemoryNote);
  t.notes.push_back(energy_kind_note());
  failures_note(t, all);
  run_notes(t, all);
  return t;
}

// The profiled frames of a group's trials, in the order of a training step.
std::vector<std::string> profiled_frames(const Group& g) {
  std::vector<std::string> names;
  for (const auto* r : g.ok)
    for (const auto& ph : r->phases)
      if (ph.source == "profile" && std::find(names.begin(), names.end(), ph.phase) == names.end())
        names.push_back(ph.phase);
  static const std::vector<std::string> kOrder = {"data", "encode", "decode", "loss", "backward", "optimizer",
                                                  "evaluation", "compress", "decompress"};
  auto rank = [](const std::string& n) { return std::find(kOrder.begin(), kOrder.end(), n) - kOrder.begin(); };
  std::stable_sort(names.begin(), names.end(), [&](const auto& x, const auto& y) { return rank(x) < rank(y); });
  return names;
}

// A profiled trial's time in the frames named `frames`, summed; none unless it has every one.
std::optional<double> frames_s(const TrialRecord& r, const std::vector<std::string>& frames) {
  double sum = 0;
  std::size_t found = 0;
  for (const auto& ph : r.phases)
    if (ph.source == "profile" && std::find(frames.begin(), frames.end(), ph.phase) != frames.end()) {
      sum += ph.duration_s;
      ++found;
    }
  return found == frames.size() ? std::optional<double>(sum) : std::nullopt;
}

std::vector<json> frame_row(const Group& g, const Axes& a, const std::string& frame, const Summary& d, json percent) {
  std::vector<json> row;
  axis_cells(row, g, a);
  for (const json& v : {json(frame), json(static_cast<int64_t>(d.n)), mean_or_null(d), percent}) row.push_back(v);
  return row;
}

// T5's rows of one group: fit, then each profiled frame as a share of it, with T5's "forward
// (encode, decode)" after decode.
void profile_rows(Table& p, const Group& g, const Axes& a) {
  const std::vector<std::string> names = profiled_frames(g);
  if (names.empty()) return;
  const Summary fit = g.stat([](const TrialRecord& r) { return r.train_s; });
  p.rows.push_back(frame_row(g, a, "fit", fit, json(100.0)));
  for (const auto& name : names) {
    const Summary d = g.stat([&](const TrialRecord& r) -> std::optional<double> {
      for (const auto& ph : r.phases)
        if (ph.source == "profile" && ph.phase == name) return ph.duration_s;
      return std::nullopt;
    });
    p.rows.push_back(frame_row(g, a, name, d, fit.mean > 0 ? num(100.0 * d.mean / fit.mean) : json(nullptr)));
    if (name != "decode") continue;
    const Summary fwd = g.stat([](const TrialRecord& r) { return frames_s(r, {"encode", "decode"}); });
    p.rows.push_back(frame_row(g, a, "forward (encode + decode)", fwd,
                               fit.mean > 0 && fwd.n ? num(100.0 * fwd.mean / fit.mean) : json(nullptr)));
  }
}

}  // namespace

std::vector<Table> make_phases_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  const std::vector<Group> all = group_trials(trials);
  std::vector<Table> out = {modes_table(trials, all)};
  const std::vector<Group> groups = finished(all);
  const Axes a = varying(groups);
  Table p;
  p.name = "phases_profile";
  p.title = "Where training time goes (T5's shape), profiled trials, on " + where_run(trials);
  axis_columns(p, a);
  for (const char* c : {"frame", "n", "duration_s", "percent_of_fit"}) p.columns.push_back(c);
  for (const auto& g : groups) profile_rows(p, g, a);
  if (!p.rows.empty()) {
    p.notes.push_back(
        "Phase timers with the device synchronised at each edge (training.profile: true); fit "
        "includes evaluation and the timers' own cost.");
    run_notes(p, all);
    out.push_back(p);
  }
  return out;
}

}  // namespace balerbench::report
