// trial_turn.h: one trial of a run (a grid trial, sweep.cpp; a recurrence's attempt,
// recurrence_sweep.cpp), from its claim in the results database to its stored record and its
// outcome line, and the run's closing line.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "harness/store/store.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/sweep.h"
#include "harness/trial/trial.h"
#include "harness/sweep/trial_claims.h"

namespace balerbench {

// The trial's result line: its figures and target, or why it failed or was skipped.
void print_outcome(const TrialRecord& rec, std::FILE* out);
// The run's closing line: what ran, what was stored, and the database.
void print_summary(const SweepSummary& sum, const SweepOptions& o, std::FILE* out);

struct TrialTurn {
  const Experiment& ex;
  const SweepOptions& o;
  Store& store;
  const SweepClaims& claims;
  TrialContext& ctx;
  SweepSummary& sum;
  std::FILE* out;

  // Claims, runs and stores trial `t`, number i of n (n 0: the count is not known ahead, as for
  // recurrences); `ran` (when given) receives the record when this run ran and stored it. Another
  // run into the same database may have stored this trial since the run began, or be running it
  // now: it is skipped then (`ran` untouched). False when the run must stop (the database cannot be
  // written).
  bool run(const TrialSpec& t, std::size_t i, std::size_t n, std::optional<TrialRecord>* ran = nullptr);

 private:
  // Stores a finished trial, waiting for a lock held by another program; a trial that still cannot be
  // stored is kept in a side file beside the database (side_files.h), never dropped. False when the
  // run must stop.
  bool store_trial(const TrialRecord& rec, std::optional<ClaimRelease>& release, std::optional<TrialRecord>* ran);
  // `write()`, tried again while the database stays locked by another connection, for up to
  // o.db_wait_s in all (each try waits SQLite's busy timeout); the last StoreBusyError otherwise.
  template <typename F>
  auto waiting_for_lock(F write) -> decltype(write());
  // The finished trial in a side file, and the run stopped with exit code 4, saying where it is.
  bool keep_aside(const TrialRecord& rec, const StoreBusyError& e);
  void count(const TrialRecord& rec);
  bool stop_on(const StoreWriteError& e, const char* what);  // `what` as printed ("\n   not run")
  void skipped(const TrialSpec& t, const ClaimOutcome& claim, std::size_t i, std::size_t n);
  void header(const TrialSpec& t, std::size_t i, std::size_t n);
};

}  // namespace balerbench
