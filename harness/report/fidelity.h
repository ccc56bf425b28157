// fidelity.h: what the fidelity tables share: a configuration's worst feature by nrmse over its
// repeats (fidelity_table.cpp), its latent space's bytes (projection_table.cpp), and the energy
// against fidelity table (fidelity_frontier.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/base/statistics.h"
#include "harness/report/tables.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {

// A trial's per-feature figures (run/feature_quality.h: result.reconstruction.per_feature), or null
// when it stored none (a trial from before they were kept).
const nlohmann::json* per_feature_of(const TrialRecord& r);
// A feature's name as Baler's plots show it: its last dot-separated part.
std::string baler_feature_name(const std::string& name);
// The energy of a trial's whole cycle (train, compress and decompress); none when one is missing.
std::optional<double> cycle_energy_j(const TrialRecord& r);

// The feature with the highest mean nrmse over the group's repeats, and its nrmse over them; none
// when the trials stored no per-feature figures.
struct WorstFeature {
  std::string name;
  Summary nrmse;
};
std::optional<WorstFeature> worst_feature_of(const Group& g);

// The bytes of a trial's latent space (result.latent_shape and latent_dtype), when stored.
std::optional<double> latent_bytes_of(const TrialRecord& r);

// Energy against fidelity: each configuration's energy to train, compress and decompress, its worst
// feature's nrmse and its compressed size; the Pareto front over the three, and with
// TableOptions::max_nrmse the cheapest by Zeus's cost at each eta among those that meet it.
Table fidelity_frontier_table(const std::vector<TrialRecord>& trials, const std::vector<Group>& all,
                              const std::vector<Group>& groups, const TableOptions& o);

}  // namespace balerbench::report
