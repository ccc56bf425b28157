// crosscheck_table.cpp: --table crosscheck, docs/reference_tables.md T6: a wall meter against the
// component meters (RAPL, NVML), per trial and energy window. With --table all, made only when a
// trial has such a window.
#include <algorithm>
#include <string>
#include <vector>

#include "harness/report/table_cells.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

// A stored window's cross-check (WindowResult::to_json), when it has a usable one.
const json* crosscheck_of(const json& window) {
  if (!window.is_object() || !window.contains("crosscheck")) return nullptr;
  const json& x = window["crosscheck"];
  if (!x.is_object() || !x.contains("wall_j") || !x["wall_j"].is_number() || !x.contains("components_j") ||
      !x["components_j"].is_number())
    return nullptr;
  return &x;
}

std::vector<const json*> crosscheck_windows(const TrialRecord& r) { return windows_with(r, crosscheck_of); }

}  // namespace

bool has_crosscheck(const std::vector<TrialRecord>& trials) {
  return std::any_of(trials.begin(), trials.end(), [](const TrialRecord& r) { return !crosscheck_windows(r).empty(); });
}

// docs/reference_tables.md T6: the wall meter against the component meters, per trial and window.
std::vector<Table> make_crosscheck_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  Table t;
  t.name = "crosscheck";
  t.title = "Wall meter against component meters (T6)";
  t.columns = {"id",           "precision",       "batch_size", "power_limit", "window",     "wall_j",
               "wall_pm_j",    "components",      "components_j", "components_pm_j", "ratio", "unseen_j",
               "unseen_pct",   "reading"};
  t.decision_columns = {"id", "precision", "batch_size", "window", "wall_j", "components_j", "ratio", "unseen_pct"};
  const auto field = [](const json& x, const char* key) {
    return x.contains(key) && x[key].is_number() ? num(x[key].get<double>()) : json("-");
  };
  const auto text = [](const json& x, const char* key) {
    return x.contains(key) && x[key].is_string() ? x[key] : json("");
  };
  for (const auto& r : trials)
    for (const json* w : crosscheck_windows(r)) {
      const json& x = *crosscheck_of(*w);
      const std::string window = w->contains("phase") && (*w)["phase"].is_string() ? (*w)["phase"].get<std::string>()
                                                                                   : std::string("window");
      t.rows.push_back({r.id, r.precision, r.batch_size, watts_label(r.power_limit_w), window, field(x, "wall_j"),
                        field(x, "wall_uncertainty_j"), text(x, "components"), field(x, "components_j"),
                        field(x, "components_uncertainty_j"), field(x, "ratio"), field(x, "unseen_j"),
                        field(x, "unseen_pct"), text(x, "reading")});
    }
  if (t.rows.empty())
    t.notes.push_back("no trial has both a wall meter (energy.wattmeter_log) and a measured component meter (rapl, nvml)");
  t.notes.push_back(
      "wall_j: the wattmeter over the window; components_j: the measured domains of the total (estimates left out); "
      "ratio = components / wall; unseen = wall - components: fans, disks, network, the rest of the board and the "
      "power supply's loss. Published: AIPowerMeter's RAPL + NVML read 14,107 J against an OmegaWatt's 19,181 J "
      "(ratio 0.735; docs/reference_tables.md, T6).");
  t.notes.push_back("wall_pm_j, components_pm_j: each side's measurement ± ('-' where not quantified); a difference "
                    "within their sum is not resolved, and the reading says so.");
  return {t};
}

}  // namespace balerbench::report
