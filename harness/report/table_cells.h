// table_cells.h: what the report tables read from stored trials and put in their cells and titles:
// numbers (null where not finite or not known), a trial's measurement +- and peak memory, the
// target, the system in a title, UTC times, and the energy windows that carry a cross-check or an
// attribution.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "harness/base/statistics.h"
#include "harness/store/store.h"

namespace balerbench::report {

nlohmann::json num(double v);  // null when not finite
nlohmann::json mean_or_null(const Summary& s);
nlohmann::json sd_or_null(const Summary& s);  // null below two values, as ci_or_null
nlohmann::json ci_or_null(const Summary& s);
nlohmann::json median_or_null(const Summary& s);
nlohmann::json mad_or_null(const Summary& s);  // null below two values, as sd_or_null
nlohmann::json utc_time(double unix_s);  // "2024-05-01T12:00:00Z"; null when not > 0
std::string eta_label(double eta);       // the cost column of one eta: "cost_eta_0.5"
// Distinct texts in first-seen order, joined by ", " ("-" is left out; "-" when none is left).
std::string distinct_joined(const std::vector<std::string>& texts);

// A trial's measurement +- of one figure (result.energy_uncertainty: train_j, eta_j, ...), when given.
std::optional<double> uncertainty_of(const TrialRecord& r, const char* key);
// A trial's peak memory of one phase (result.memory.<phase>.<key>: host_peak_rss_mib, ...), when given.
std::optional<double> memory_of(const TrialRecord& r, const char* phase, const char* key);
// The highest of a trial's three phases' figures.
std::optional<double> trial_memory_peak(const TrialRecord& r, const char* key);

bool has_target(const std::vector<TrialRecord>& trials);
std::string target_text(const std::vector<TrialRecord>& trials);  // "val_loss <= 0.1"; "" without a target

// The hardware of the finished trials; when none finished, that of any trial (its stored label,
// else its provenance), so a report of failures still says where they ran.
std::string hardware_of(const std::vector<TrialRecord>& trials);
// The system the trials ran on, for a title: its label and fingerprint when they share one (a
// legacy system is named by its hardware, as before system fingerprints), else their hardware.
std::string where_run(const std::vector<TrialRecord>& trials);

// The windows of a trial (its phases, then its total) in which `part` finds what a table lists.
std::vector<const nlohmann::json*> windows_with(const TrialRecord& r,
                                                const nlohmann::json* (*part)(const nlohmann::json&));

}  // namespace balerbench::report
