// resolved_job.h: a replay's job (replay.h) resolved against Zeus's defaults and the traces: its
// workload, target and epoch limit; its batch sizes (those both traces hold, or those listed), each
// with its runs to the target and its power points (its rows, or interpolations between two); its
// default batch size; MaxPower. What the traces cannot back is an InputError naming the file, the
// line and what to do; what was left out, and every interpolation, is a note.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/tuning/replay.h"
#include "harness/tuning/zeus_trace.h"

namespace balerbench {

// One run of the train trace at the target: the epoch it first reached it (none: never) and its line.
struct RunPath {
  int64_t run = 0;
  std::optional<int64_t> target_epoch;
  int64_t line = 0;
};

// Everything replay_job works from, once the job is resolved against the traces.
struct ResolvedJob {
  std::string dataset, network, optimizer;
  double target = 0;
  int64_t max_epochs = 0, default_bs = 0;
  std::string default_rule;  // how the default batch size was found
  std::vector<int64_t> batch_sizes;
  std::map<int64_t, std::vector<PowerPoint>> power;  // per batch size, highest limit first
  std::map<int64_t, std::vector<RunPath>> runs;      // per batch size, its runs at the target
  std::set<double> limits;                           // every batch size's limits together
  double max_power_w = 0;                            // MaxPower of the cost
  std::vector<std::string> notes;
};

ResolvedJob resolve_job(const TrainTrace& train, const PowerTrace& power, const ReplayJob& job);

// The point at limit `w` (a logic_error when there is none: the caller chose `w` from the points).
const PowerPoint& point_at(const std::vector<PowerPoint>& points, double w);

}  // namespace balerbench
