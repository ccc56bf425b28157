// recurrences_table.cpp: --table recurrences: the attempts of a job's recurrences under the
// batch-size optimiser (an experiment's batch_size_optimizer section), one row each in the order they
// ran: what the optimiser chose and why (its stage, the Thompson draws' winner, the cost bound, the
// power limit kept or profiled), and what the attempt did and cost. Read from each trial's spec
// (`recurrence`: the plan) and result (`recurrence`: the outcome).
#include <algorithm>
#include <string>
#include <vector>

#include "harness/report/table_cells.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

bool is_attempt(const TrialRecord& r) {
  return r.spec.is_object() && r.spec.contains("recurrence") && r.spec["recurrence"].is_object();
}

json at(const json& j, const char* key) { return j.is_object() && j.contains(key) ? j[key] : json(nullptr); }

}  // namespace

bool has_recurrences(const std::vector<TrialRecord>& trials) {
  return std::any_of(trials.begin(), trials.end(), is_attempt);
}

std::vector<Table> make_recurrences_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  std::vector<const TrialRecord*> attempts;
  for (const auto& r : trials)
    if (is_attempt(r)) attempts.push_back(&r);
  std::stable_sort(attempts.begin(), attempts.end(),
                   [](const TrialRecord* a, const TrialRecord* b) { return a->grid_index < b->grid_index; });
  Table t;
  t.name = "recurrences";
  t.title = "The recurrences under the batch-size optimiser" +
            (attempts.empty() ? std::string() : " on " + where_run(trials));
  t.columns = {"attempt",     "recurrence",      "try",      "stage",   "batch_size",
               "power_limit", "profiled_limits", "status",   "reached", "stopped_at_bound_epoch",
               "epochs_run",  "time_s",          "energy_j", "cost_j",  "cost_bound_j",
               "system"};
  std::string settings;
  for (const TrialRecord* r : attempts) {
    const json& plan = r->spec["recurrence"];
    const json outcome = r->result.is_object() ? at(r->result, "recurrence") : json(nullptr);
    const json limit = r->enforced_power_limit_w                  ? json(watts_label(r->enforced_power_limit_w))
                       : plan.value("profile_power_limit", false) ? json("profiled")
                                                                  : json(watts_label(r->power_limit_w));
    const json recurrence =
        plan["recurrence"].is_number_integer() ? json(plan["recurrence"].get<int64_t>() + 1) : json(nullptr);
    t.rows.push_back({r->grid_index, recurrence, at(plan, "attempt"), at(plan, "stage"), r->batch_size, limit,
                      plan.value("profile_power_limit", false), trial_status_name(r->status), at(outcome, "reached"),
                      at(outcome, "stopped_at_cost_bound"),
                      r->result.is_object() ? at(r->result, "epochs_run") : json(nullptr), at(outcome, "time_s"),
                      at(outcome, "energy_j"), at(outcome, "cost_j"), at(plan, "cost_bound_j"),
                      system_of(*r).fingerprint});
    if (settings.empty() && r->spec.contains("batch_size_optimizer")) settings = r->spec["batch_size_optimizer"].dump();
  }
  t.notes = {
      "one row per attempt, in the order the optimiser chose them; recurrences and tries numbered from 1. An "
      "attempt trains until it reaches the target, or until its cost (Zeus's: eta x energy + (1 - eta) x "
      "MaxPower x time, time and energy to the target or of the whole training) passes cost_bound_j, beta x "
      "the cheapest recurrence so far.",
      "stage: pruning (each round walks down from the start, then up; a batch size that misses the target is "
      "dropped) or thompson (Gaussian Thompson sampling over the survivors; each trial's spec holds the draws). "
      "power_limit: the limit the attempt ran at; profiled: the power-limit optimiser chose it during the "
      "attempt, and later attempts at that batch size keep it."};
  if (!settings.empty()) t.notes.push_back("settings: " + settings);
  return {t};
}

}  // namespace balerbench::report
