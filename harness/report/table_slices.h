// table_slices.h: the trials of one system and one spec variant, the unit within which every
// comparing table is made. With several slices, each gets its own tables, named and titled apart,
// with notes saying why the trials are split.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness/report/tables.h"
#include "harness/report/trial_identity.h"
#include "harness/store/store.h"

namespace balerbench::report {

struct Slice {
  SystemId system;
  std::string variant;  // spec variant id (trial_identity.h)
  std::vector<TrialRecord> trials;
};
std::vector<Slice> slices_of(const std::vector<TrialRecord>& trials);  // in the order of their first trial

// Tables of one slice among several: a name unique among the experiment's tables (one CSV file
// each), the variant in the title, and notes saying why the trials are split.
void mark_slice(std::vector<Table>& tables, const Slice& s, const std::vector<Slice>& slices, std::size_t n_systems);

}  // namespace balerbench::report
