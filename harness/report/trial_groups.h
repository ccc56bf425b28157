// trial_groups.h: the report tables' unit of comparison. Trials are grouped by configuration (model,
// compression ratio, batch size, precision, engine, power limit, epochs) within one system
// (trial_identity.h's fingerprint) and one spec variant; a group's finished repeats give its statistics, warm-ups and failures are counted
// apart. Also the axes that vary among groups, as columns, and the systems among the trials.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "harness/base/statistics.h"
#include "harness/report/tables.h"
#include "harness/report/trial_identity.h"
#include "harness/store/store.h"

namespace balerbench::report {

// A precision as the tables describe it ("normal training (FP32)"); a name this version does not
// know (a newer version's database) is described as itself and sorts last.
std::string mode_name(const std::string& p);
int precision_rank(const std::string& p);
std::string watts_label(const std::optional<double>& w);  // "250 W", or "as found" without a limit
std::string ratio_label(const std::optional<double>& r);  // "1.6", or "-" when the trial did not say

// A trial's model and compression ratio, from its spec's run config (every trial stores them there),
// else the model from its result; "" and nullopt when neither says.
std::string model_of(const TrialRecord& t);
std::optional<double> compression_ratio_of(const TrialRecord& t);

// One configuration of the grid on one system and one spec variant, and its finished repeats
// (warm-ups left out).
struct Group {
  std::string model;
  std::optional<double> compression_ratio;
  int64_t batch_size = 0, epochs = 0;
  std::string precision, engine;
  std::optional<double> power_limit_w;
  std::string system, variant;  // system fingerprint; spec variant id (trial_identity.h)
  std::vector<const TrialRecord*> ok;
  int64_t failed = 0, skipped = 0, warmups = 0;
  // Set by group_trials when the model or the ratio differs among its groups: label() names them.
  bool names_model = false;
  std::string energy_kind() const {
    std::set<std::string> k;
    for (const auto* t : ok) k.insert(t->energy_kind.empty() ? "none" : t->energy_kind);
    std::string s;
    for (const auto& x : k) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "-" : s;
  }
  std::string label() const {
    return (names_model ? model + " at ratio " + ratio_label(compression_ratio) + ", " : std::string()) + "bs " +
           std::to_string(batch_size) + ", " + precision + ", " + engine + ", PL " + watts_label(power_limit_w) + ", " +
           std::to_string(epochs) + " epochs";
  }
  // The model's latent size and parameter count as its first finished repeat recorded them
  // (result.model); nullopt when none did.
  std::optional<int64_t> latent() const;
  std::optional<int64_t> parameters() const;
  template <typename F>
  Summary stat(F get) const {
    return summarize(values(get));
  }
  template <typename F>
  std::vector<double> values(F get) const {
    std::vector<double> v;
    for (const auto* t : ok)
      if (auto x = get(*t)) v.push_back(*x);
    return v;
  }
};

std::vector<Group> group_trials(const std::vector<TrialRecord>& trials);
// A trial's configuration as a group with no trials (system and variant left empty).
Group configuration_of(const TrialRecord& t);
// Grid points with at least one finished trial: the measured tables show only these (the trials
// table lists the failures, and failures_note counts them).
std::vector<Group> finished(const std::vector<Group>& groups);
// The configuration of a group, system aside: what --table across matches between systems.
bool same_configuration(const Group& a, const Group& b);
// The same model and compression ratio: a ratio against another configuration (FP32's) is taken
// within one of these, never across them.
bool same_model(const Group& a, const Group& b);
// The order of models (the registry's, an unknown name last) and then of ratios, for sorting rows.
bool model_before(const Group& a, const Group& b);
// The comparing tables' row order: model and compression ratio, batch size, power limit and epochs,
// then precision modes in the report's order, then engine (stable: equal groups keep theirs).
void sort_for_precision(std::vector<Group>& groups);

// Axis columns that vary among `groups` (the constant ones go in a note). With the model or the ratio,
// the columns latent and parameters follow them (the size each trains).
struct Axes {
  bool model = false, ratio = false, batch = false, precision = false, engine = false, limit = false, epochs = false;
};
Axes varying(const std::vector<Group>& groups);
void axis_columns(Table& t, const Axes& a, bool with_precision = true);
void axis_cells(std::vector<nlohmann::json>& row, const Group& g, const Axes& a, bool with_precision = true);

// The systems among `trials`, in the order their first trial appears.
struct SystemTrials {
  SystemId id;
  std::vector<const TrialRecord*> trials;
};
std::vector<SystemTrials> systems_in(const std::vector<TrialRecord>& trials);

}  // namespace balerbench::report
