// sweep.h: `balerbench run`: every trial of an experiment's grid (or of one
// shard of it) that the database does not hold yet, one after another, each
// stored in its own transaction. Power limits are restored after every
// trial, at the end, on SIGINT/SIGTERM (at once, from the signal thread) and
// on exceptions; a journal left by a killed run is recovered first.
#pragma once

#include <csignal>
#include <cstdio>
#include <optional>
#include <string>

#include "harness/monitor/monitoring_settings.h"
#include "harness/sweep/experiment.h"

namespace balerbench {

struct SweepOptions {
  std::string db_path = "results/balerbench.sqlite";
  std::optional<Shard> shard;
  bool retry_failed = false;  // rerun trials stored as failed or skipped
  bool dry_run = false;       // list the trials, run nothing
  bool allow_large_grid = false;  // plan more than kLargeGridTrials trials (experiment.h)
  bool report_hazards = false;
  // How long to wait in all for a database locked by another program before a finished trial is kept
  // in a side file beside it (--db-wait).
  double db_wait_s = 120;    // before the first trial, one line on stderr naming the hazards found
  std::string progress = "auto";
  std::string power_journal;  // empty: default_power_journal_path()
  MonitoringSettings monitoring;
};

struct SweepSummary {
  int64_t grid = 0, in_shard = 0, already_done = 0, ran = 0, ok = 0, failed = 0, skipped = 0;
  int64_t stored_by_other = 0;  // ran here, but another run into the same database stored them first
  int64_t held_by_other = 0;    // skipped: another live run into the same database had claimed them
  int signal = 0;           // the stop signal, when interrupted
  std::string store_error;  // why the sweep stopped early: a trial could not be stored
  std::string recurrences_stop;  // why the recurrences stopped early (batch_size_optimizer): a failed
                                 // attempt, an attempt another run holds, the optimiser given up
  // 0: every trial ok or skipped (a power limit refused for lack of permission); 3: some failed;
  // 4: the database could not be written, or stdout was closed mid-sweep (StopSignals' SIGPIPE: a
  // write error, as stdout's are); 128 + N: stopped by signal N. docs/exit_codes.md.
  int exit_code() const {
    if (signal == SIGPIPE) return 4;
    return signal ? 128 + signal : !store_error.empty() ? 4 : (failed || !recurrences_stop.empty()) ? 3 : 0;
  }
};

SweepSummary run_sweep(const Experiment& experiment, const SweepOptions& options, std::FILE* out);

// With the batch-size optimiser enabled (run_sweep goes here): the job's recurrences, each attempt
// a trial chosen by the optimiser from the outcomes of the attempts before it (recurrence_sweep.cpp).
// A run resumes from what the database holds: the stored attempts are fed to the optimiser again in
// order, so it reaches the same state and goes on from there. --shard is refused (the attempts
// depend on each other).
SweepSummary run_recurrences(const Experiment& experiment, const SweepOptions& options, std::FILE* out);

}  // namespace balerbench
