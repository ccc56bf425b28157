// table_registry.cpp: see table_registry.h; also the public entry points of tables.h that pick
// tables by name (report_table_names, check_table_name, make_tables).
#include "harness/report/table_registry.h"

#include <algorithm>

#include "common/text.h"
#include "common/error.h"
#include "harness/report/table_slices.h"
#include "harness/report/trial_groups.h"

namespace balerbench {
namespace report {

// Each defined in its own file, <name>_table.cpp (the axis tables in axis_tables.cpp).
std::vector<Table> make_precision_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_phases_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_batch_size_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_power_limit_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_cost_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_complexity_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_datasets_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_crosscheck_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_attribution_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_systems_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_across_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_trials_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_codecs_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_convergence_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_recurrences_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_fidelity_tables(const std::vector<TrialRecord>&, const TableOptions&);
std::vector<Table> make_projection_tables(const std::vector<TrialRecord>&, const TableOptions&);
bool has_feature_quality(const std::vector<TrialRecord>&);
bool has_epochs_to_target(const std::vector<TrialRecord>&);
bool has_codecs(const std::vector<TrialRecord>&);
bool has_recurrences(const std::vector<TrialRecord>&);
bool batch_size_varies(const std::vector<TrialRecord>&);
bool power_limit_varies(const std::vector<TrialRecord>&);
bool has_crosscheck(const std::vector<TrialRecord>&);
bool has_attribution(const std::vector<TrialRecord>&);
bool several_systems(const std::vector<TrialRecord>&);

const std::vector<TableKind>& table_registry() {
  using S = TableScope;
  static const std::vector<TableKind> kinds = {
      {"precision", "T3: training time and energy per precision mode, against FP32", S::kPerSlice,
       make_precision_tables, nullptr},
      {"phases", "T4: energy, CO2, duration and memory per Baler mode; T5: profiled time breakdown", S::kPerSlice,
       make_phases_tables, nullptr},
      {"batch_size", "time, energy, TTA, ETA and Zeus cost per batch size", S::kPerSlice, make_batch_size_tables,
       batch_size_varies},
      {"power_limit", "time, energy, TTA, ETA and Zeus cost per GPU power limit", S::kPerSlice,
       make_power_limit_tables, power_limit_varies},
      {"cost", "the best configuration per eta (Zeus cost) and the time-energy Pareto frontier", S::kPerSlice,
       make_cost_tables, nullptr},
      {"convergence",
       "epochs to target (mean, spread, never reached) and final losses; does a precision need more epochs than FP32",
       S::kPerSlice, make_convergence_tables, has_epochs_to_target},
      {"fidelity", "reconstruction per variable: the worst and the median feature, nrmse with intervals, residual in "
       "the data's units, Baler's response", S::kPerSlice, make_fidelity_tables, has_feature_quality},
      {"projection", "a whole dataset (report --dataset-bytes or --dataset-events): time, kWh, CO2 and compressed "
       "size to compress and decompress it, training amortised, with intervals; the classical codecs beside",
       S::kPerSlice, make_projection_tables, nullptr},
      {"complexity", "T1: the model's parameters, MACs and FLOPs per layer", S::kAllTrials, make_complexity_tables,
       nullptr},
      {"datasets", "T2: the datasets with their shape, dtype and size", S::kAllTrials, make_datasets_tables, nullptr},
      {"crosscheck", "T6: a wall meter against the component meters", S::kAllTrials, make_crosscheck_tables,
       has_crosscheck},
      {"attribution", "T7: the energy attributable to the run's processes", S::kAllTrials, make_attribution_tables,
       has_attribution},
      {"systems", "the systems the trials ran on", S::kAllTrials, make_systems_tables, nullptr},
      {"across", "the same configuration on each system, against the first", S::kAllTrials, make_across_tables,
       several_systems},
      {"codecs", "Baler against ZFP, Zstandard and downcasts at matched error: ratio, error, MB/s, J/MB, training amortised",
       S::kPerSlice, make_codecs_tables, has_codecs},
      {"recurrences", "the attempts of a job's recurrences under the batch-size optimiser: choice, bound, cost",
       S::kAllTrials, make_recurrences_tables, has_recurrences},
      {"trials", "every trial stored, failed, skipped and warm-up ones included", S::kAllTrials, make_trials_tables,
       nullptr},
  };
  return kinds;
}

namespace {

void append(std::vector<Table>& out, std::vector<Table> tables) {
  for (auto& t : tables) out.push_back(std::move(t));
}

// A kind's tables from `trials`, unless --table all asked and they do not apply there.
std::vector<Table> make_kind(const TableKind& k, const std::vector<TrialRecord>& trials, const TableOptions& o,
                             bool all) {
  if (all && k.in_all && !k.in_all(trials)) return {};
  return k.make(trials, o);
}

// A comparing table: one per system and spec variant, never mixing them.
std::vector<Table> make_per_slice(const TableKind& k, const std::vector<TrialRecord>& trials,
                                  const std::vector<Slice>& slices, const TableOptions& o, bool all) {
  if (slices.size() <= 1) return make_kind(k, trials, o, all);
  const std::size_t n_systems = systems_in(trials).size();
  std::vector<Table> out;
  for (const auto& s : slices) {
    std::vector<Table> tables = make_kind(k, s.trials, o, all);
    mark_slice(tables, s, slices, n_systems);
    append(out, std::move(tables));
  }
  return out;
}

}  // namespace
}  // namespace report

const std::vector<std::string>& report_table_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& k : report::table_registry()) out.emplace_back(k.name);
    return out;
  }();
  return names;
}

void check_table_name(const std::string& table, const std::string& option) {
  const auto& names = report_table_names();
  if (table == "all" || std::find(names.begin(), names.end(), table) != names.end()) return;
  throw InputError(option + " '" + table + "': no such table", "one of: " + joined(names, ", ") + ", all");
}

std::vector<Table> make_tables(const std::vector<TrialRecord>& trials, const std::string& table,
                               const std::vector<double>& etas, double min_effect) {
  TableOptions o;
  o.etas = etas;
  o.min_effect = min_effect;
  return make_tables_with(trials, table, o);
}

std::vector<Table> make_tables_with(const std::vector<TrialRecord>& trials, const std::string& table,
                                    TableOptions o) {
  if (o.etas.empty()) o.etas = {0.0, 0.5, 1.0};
  check_table_name(table);
  const bool all = table == "all";
  const std::vector<report::Slice> slices = report::slices_of(trials);
  std::vector<Table> out;
  for (const auto& k : report::table_registry()) {
    if (!all && table != k.name) continue;
    report::append(out, k.scope == report::TableScope::kPerSlice ? report::make_per_slice(k, trials, slices, o, all)
                                                                 : report::make_kind(k, trials, o, all));
  }
  return out;
}

}  // namespace balerbench
