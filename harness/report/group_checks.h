// group_checks.h: what the tables say about the repeats behind a row beyond mean and interval: the
// robust side (median, MAD and the trials hyperfine's rule calls outliers), and whether each energy
// figure's window held enough meter updates to be trusted (result.meter_updates, written by a sweep
// trial from its windows; docs/energy.md, "Windows long enough for the meter").
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "harness/report/tables.h"
#include "harness/report/trial_groups.h"
#include "harness/store/store.h"

namespace balerbench::report {

// result.meter_updates.<figure> (figure: train, eta, compress, decompress): how many updates of the
// slowest measuring meter fell inside the figure's window; empty when not recorded (estimated energy,
// a trial from before it was recorded).
std::optional<double> meter_updates_of(const TrialRecord& r, const char* figure);
// The fewest updates the trial took a figure to need (result.meter_updates.min).
std::optional<double> min_meter_updates_of(const TrialRecord& r);
// True when the figure's window held fewer updates than that.
bool short_window(const TrialRecord& r, const char* figure);

// A group's cells: the fewest updates of the figure's window over its repeats (null when none is
// recorded), and "ok", "short (2 of 3 repeats < 60 updates)" or "-".
nlohmann::json updates_cell(const Group& g, const char* figure);
nlohmann::json window_cell(const Group& g, const char* figure);
// True when any repeat of any group has the figure's window short.
bool any_short_window(const std::vector<Group>& groups, const char* figure);
// The note under a table with short windows: which figure, how many trials, the threshold, and how
// to lengthen them. Nothing when none is short.
void short_window_note(Table& t, const std::vector<Group>& groups, const char* figure, const std::string& what);

// One trial that hyperfine's rule (base/statistics.h: |x - median| / MAD > kMadOutlierThreshold) flags
// among its group's repeats.
struct Outlier {
  const TrialRecord* trial = nullptr;
  double score = 0;  // |x - median| / MAD
};
// A figure of a trial as the groups hold it (training time, energy, ...).
using TrialFigure = std::optional<double> (*)(const TrialRecord&);
std::vector<Outlier> outliers_of(const Group& g, TrialFigure figure);
// A note per outlier under the table ("trial 12 ... is an outlier in training time: ..."), and the
// rule once; nothing when there is none.
void outlier_notes(Table& t, const std::vector<Group>& groups, TrialFigure figure, const std::string& what);

}  // namespace balerbench::report
