// side_files.h: trials kept beside a results database that could not take them (it stayed locked by
// another program): each in a small database of its own, `DB.unstored-KEY-PID.sqlite`, that `merge`
// reads like any other, and that the next `balerbench run` into DB folds in by itself.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness/store/store.h"

namespace balerbench {

// The experiment a kept trial belongs to, as the sweep stores it (Store::put_experiment).
struct KeptExperiment {
  std::string name, source;
  nlohmann::json spec;
};

// Writes `trial` (and its experiment) into a new side file beside `db_path`, under a temporary name
// renamed into place once whole; returns its path. StoreWriteError when it cannot be written either.
std::string keep_trial_aside(const std::string& db_path, const KeptExperiment& experiment, const TrialRecord& trial);

// The side files beside `db_path`, in name order.
std::vector<std::string> side_files_of(const std::string& db_path);

// Copies the trials of every side file beside `store`'s file into it (those it holds already are
// skipped), then removes each side file it read whole. Returns one line per side file folded in
// ("PATH: N trials folded in"). A side file that cannot be read is left in place and named in its line.
std::vector<std::string> fold_side_files(Store& store);

}  // namespace balerbench
