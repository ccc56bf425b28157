// attribution_table.cpp: --table attribution, docs/reference_tables.md T7: per trial and energy window,
// the CPU's and GPU's energy beside the part attributable to the run's processes. With --table all,
// made only when a trial has an attribution.
#include <algorithm>
#include <string>
#include <vector>

#include "harness/report/table_cells.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// A stored window's T7 attribution (WindowResult::to_json), when it has one.
const json* attribution_of(const json& window) {
  if (!window.is_object() || !window.contains("attribution") || !window["attribution"].is_object()) return nullptr;
  return &window["attribution"];
}

std::vector<const json*> attribution_windows(const TrialRecord& r) { return windows_with(r, attribution_of); }

}  // namespace

bool has_attribution(const std::vector<TrialRecord>& trials) {
  return std::any_of(trials.begin(), trials.end(), [](const TrialRecord& r) { return !attribution_windows(r).empty(); });
}

// docs/reference_tables.md T7: per trial and window, each category's absolute energy beside the part
// attributable to the run's process tree.
std::vector<Table> make_attribution_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  Table t;
  t.name = "attribution";
  t.title = "Energy attributable to the run's processes (T7)";
  t.columns = {"id",    "precision", "batch_size", "power_limit",       "window",    "cpu_j",
               "cpu_attributable_j", "cpu_attributable_pm_j", "cpu_share", "gpu_j", "gpu_attributable_j",
               "gpu_attributable_pm_j", "gpu_share"};
  t.decision_columns = {"id",    "precision",          "batch_size", "window",
                        "cpu_j", "cpu_attributable_j", "gpu_j",      "gpu_attributable_j"};
  const auto field = [](const json& a, const char* category, const char* key) {
    if (!a.contains(category) || !a[category].is_object()) return json("-");
    const json& c = a[category];
    return c.contains(key) && c[key].is_number() ? num(c[key].get<double>()) : json("-");
  };
  for (const auto& r : trials)
    for (const json* w : attribution_windows(r)) {
      const json& a = *attribution_of(*w);
      const std::string window = w->contains("phase") && (*w)["phase"].is_string() ? (*w)["phase"].get<std::string>()
                                                                                   : std::string("window");
      t.rows.push_back({r.id, r.precision, r.batch_size, watts_label(r.power_limit_w), window,
                        field(a, "cpu", "energy_j"), field(a, "cpu", "attributable_j"),
                        field(a, "cpu", "attributable_uncertainty_j"), field(a, "cpu", "share"),
                        field(a, "gpu", "energy_j"), field(a, "gpu", "attributable_j"),
                        field(a, "gpu", "attributable_uncertainty_j"), field(a, "gpu", "share")});
    }
  if (t.rows.empty()) t.notes.push_back("no trial has an attribution: trials measured with energy off, or before attribution was recorded, have none");
  t.notes.push_back(
      "cpu_j, gpu_j: the absolute energy of the CPU and GPU domains, as everywhere else; *_attributable_j: the part "
      "of it attributable to the run's processes (balerbench and its children). CPU: times their share of the "
      "host's busy CPU time (AIPowerMeter's per_process_cpu_power); GPU: times their share of the SM use in NVML's "
      "per-process samples (nvidia_attributable_power). A GPU that no process used in a window has none of its "
      "energy attributed. '-': no share known (no per-process samples).");
  t.notes.push_back("*_pm_j: the ± of the attributable energy: the share times the energy's ±, plus the share's own "
                    "± (two clock ticks of CPU time at each edge; one sample of full SM use) times the energy.");
  return {t};
}

}  // namespace balerbench::report
