// across_table.cpp: --table across: one configuration (batch size, precision, engine, power limit,
// epochs, spec variant) on each system that ran it, against the first of them (ratios and verdicts).
// With --table all, made only when the trials ran on several systems.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "harness/report/ratio_comparison.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

std::size_t rank_of(const std::vector<SystemTrials>& systems, const std::string& fingerprint) {
  for (std::size_t i = 0; i < systems.size(); ++i)
    if (systems[i].id.fingerprint == fingerprint) return i;
  return systems.size();
}

// One row: a group against the reference (the first system's group of its configuration).
std::vector<json> across_row(const Group& g, const Group& ref, const Axes& a, bool variant_column,
                             const std::string& system_label, double min_effect) {
  const bool is_ref = &g == &ref;
  const Comparison tc =
      is_ref ? Comparison{num(1), nullptr, nullptr, "reference"} : compare(g, ref, kTrainTime, min_effect);
  const Comparison ec =
      is_ref ? Comparison{num(1), nullptr, nullptr, "reference"} : compare(g, ref, kTrainEnergy, min_effect);
  const Comparison ttc = is_ref ? Comparison{num(1), nullptr, nullptr, nullptr} : compare(g, ref, kTta);
  const Comparison etc = is_ref ? Comparison{num(1), nullptr, nullptr, nullptr} : compare(g, ref, kEta);
  const Summary time = g.stat(kTrainTime.get), energy = g.stat(kTrainEnergy.get);
  const Summary tta = g.stat(kTta.get), eta = g.stat(kEta.get);
  std::vector<json> row;
  axis_cells(row, g, a);
  if (variant_column) row.push_back(g.variant);
  for (const json& v :
       {json(g.system), json(system_label), json(static_cast<int64_t>(g.ok.size())), mean_or_null(time),
        time.n ? tc.ratio : json(nullptr), time.n ? tc.verdict : json(nullptr), mean_or_null(energy),
        energy.n ? ec.ratio : json(nullptr), energy.n ? ec.verdict : json(nullptr), mean_or_null(tta),
        tta.n ? ttc.ratio : json(nullptr), mean_or_null(eta), eta.n ? etc.ratio : json(nullptr),
        json(g.energy_kind())})
    row.push_back(v);
  return row;
}

// The rows of every configuration that ran on two systems or more, each against its first system;
// returns how many configurations ran on one system only.
int64_t across_rows(Table& t, const std::vector<Group>& groups, const std::vector<SystemTrials>& systems,
                    const Axes& a, bool variant_column, double min_effect) {
  std::vector<bool> done(groups.size(), false);
  int64_t single = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (done[i]) continue;
    std::vector<const Group*> same;  // this configuration, one group per system, in system order
    for (std::size_t j = i; j < groups.size(); ++j)
      if (!done[j] && same_configuration(groups[i], groups[j])) {
        same.push_back(&groups[j]);
        done[j] = true;
      }
    if (same.size() < 2) {
      ++single;
      continue;
    }
    std::stable_sort(same.begin(), same.end(), [&](const Group* x, const Group* y) {
      return rank_of(systems, x->system) < rank_of(systems, y->system);
    });
    for (const Group* g : same)
      t.rows.push_back(across_row(*g, *same.front(), a, variant_column, systems[rank_of(systems, g->system)].id.label,
                                  min_effect));
  }
  return single;
}

void across_notes(Table& t, const std::vector<SystemTrials>& systems, int64_t single) {
  std::string order;
  for (std::size_t i = 0; i < systems.size(); ++i)
    order += (i ? ", " : "") + systems[i].id.fingerprint + " (" + systems[i].id.label + ")";
  t.notes.push_back("Systems, in the order of their first trial: " + order + ". Each configuration's rows are compared "
                    "with the first system that ran it (*_vs_first: ratio of the means; 'reference' marks that row).");
  t.notes.push_back("A configuration is the batch size, precision, engine, power limit, epochs and spec variant: "
                    "trials from different versions of the experiment file are never matched.");
  if (single)
    t.notes.push_back(std::to_string(single) + " configuration(s) ran on one system only: not listed here.");
  t.notes.push_back(std::string("time_verdict, energy_verdict: against the first system, from the 95% interval of "
                                "the ratio as in the precision table (Welch's t on the logarithms of the repeats; an "
                                "energy interval at least the meters' relative +- summed). ") +
                    kVerdictWords);
  t.notes.push_back("tta_s, eta_j: mean time and energy to the target over the repeats that reached it.");
  t.notes.push_back(energy_kind_note());
}

}  // namespace

std::vector<Table> make_across_tables(const std::vector<TrialRecord>& trials, const TableOptions& o) {
  const std::vector<SystemTrials> systems = systems_in(trials);
  Table t;
  t.name = "across";
  t.title = "The same configuration across systems";
  const std::vector<Group> all = group_trials(trials);
  const std::vector<Group> groups = finished(all);
  std::set<std::string> variants;
  for (const auto& g : groups) variants.insert(g.variant);
  const Axes a = varying(groups);
  axis_columns(t, a);
  if (variants.size() > 1) t.columns.push_back("variant");
  for (const char* c : {"system", "system_label", "n", "time_s", "time_vs_first", "time_verdict", "energy_j",
                        "energy_vs_first", "energy_verdict", "tta_s", "tta_vs_first", "eta_j", "eta_vs_first",
                        "energy"})
    t.columns.push_back(c);
  t.decision_columns = {"model", "compression_ratio", "latent", "parameters", "batch_size", "precision",     "engine",       "power_limit", "epochs",
                        "variant",    "system",        "n",            "time_s",      "time_vs_first",
                        "time_verdict", "energy_j",    "energy_vs_first", "energy_verdict", "energy"};
  if (systems.size() < 2) {
    t.notes.push_back(systems.empty() ? "No trial stored: nothing to compare."
                                      : "One system is present (" + systems[0].id.label + ", " +
                                            systems[0].id.fingerprint + "): nothing to compare across systems.");
    return {t};
  }
  const int64_t single = across_rows(t, groups, systems, a, variants.size() > 1, o.min_effect);
  if (auto n = constant_axes_note(groups, a); !n.empty()) t.notes.push_back(n);
  across_notes(t, systems, single);
  if (auto n = min_effect_note(o.min_effect); !n.empty()) t.notes.push_back(n);
  run_notes(t, all);
  return {t};
}

bool several_systems(const std::vector<TrialRecord>& trials) { return systems_in(trials).size() > 1; }

}  // namespace balerbench::report
