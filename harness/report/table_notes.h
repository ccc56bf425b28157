// table_notes.h: the notes under the report tables: what a figure includes and how to read it,
// said once here and under every table that shows it, and the notes that count what a table
// leaves out (failed, skipped and warm-up trials) or flags (trials on a disturbed machine).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/report/tables.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {

extern const char* const kTtaIncludesNote;  // what time and energy to target include
extern const char* const kMemoryNote;       // the peak memory columns
extern const char* const kUncertaintyNote;  // energy_pm_j, eta_pm_j
extern const char* const kIntervalNote;     // *_ci95_low, *_ci95_high of a ratio
extern const char* const kVerdictWords;     // the verdict column's words

std::string energy_kind_note();  // the energy column: measured, estimated, SIMULATED
// "All rows: batch size 512, ...": the axes that do not vary; "" when every one does.
std::string constant_axes_note(const std::vector<Group>& groups, const Axes& a);
void failures_note(Table& t, const std::vector<Group>& groups);
// Warm-up trials left out, and disturbed trials kept in, the table's statistics: a note for each.
void warmup_note(Table& t, int64_t warmups);
void disturbed_note(Table& t, const std::vector<const TrialRecord*>& trials);  // other processes, steal, stalls
void thermal_note(Table& t, const std::vector<const TrialRecord*>& trials);     // a hot or throttled GPU
void run_notes(Table& t, const std::vector<Group>& groups);  // the three above, over every group

}  // namespace balerbench::report
