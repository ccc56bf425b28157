// sweep_plan.h: what a `balerbench run` does before its first trial: the grid on this system (held
// as its axes, so that planning takes memory for the trials to run, not for the grid), its size
// checked, the trials kept aside by an earlier locked run folded in, what the database holds already,
// the data loaded and checked (before the database is created or written, so that bad or oversized
// data leaves nothing behind), and the order the rest runs in; then the plan printed.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "harness/store/store.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/sweep.h"

namespace balerbench {

struct SweepPlan {
  nlohmann::json system;
  std::string fingerprint;
  std::optional<Grid> grid;
  std::unique_ptr<Store> store;            // null for a dry run without a database
  std::vector<int64_t> todo;               // grid numbers, in run order
  std::shared_ptr<const Dataset> dataset;  // loaded when anything is to run (not for a dry run)
};

// The plan; InputError (exit code 2) for a grid beyond kLargeGridTrials without
// options.allow_large_grid, and for data that cannot be loaded or compared, before the database is
// created. Counts the grid, the shard and what is stored already into `summary`.
SweepPlan plan_sweep(const Experiment& experiment, const SweepOptions& options, SweepSummary& summary);

// The data of a run with something to do, loaded and checked with the device and the meters for
// everything every trial would refuse (a model for another shape, a test_size that leaves no training
// row, data the codecs cannot compare, a device the build lacks, a meter named in /energy/meters that
// cannot run here): once, before the database is created or written (InputError, exit code 2).
std::shared_ptr<const Dataset> load_checked_dataset(const Experiment& experiment);

// The system, the BLAS kernel, the counts; for a dry run also the order and every trial to run.
void print_plan(const Experiment& experiment, const SweepOptions& options, const SweepPlan& plan,
                const SweepSummary& summary, std::FILE* out);

}  // namespace balerbench
