// thread_calibration.h: the intra-op thread count by measurement, not by assumption.
//
// On small cloud machines the second vCPU is often the first one's hyperthread, or busy with a
// neighbour: the same step that runs 1.4x faster on two threads one minute runs 1.3x slower the
// next. So when a run leaves `threads` at 0 (the default) on the CPU, a short calibration times
// real training steps (the run's model, batch size, precision and engine, on its first rows) for
// one thread and for every CPU in the affinity mask, in alternating rounds, and takes the faster.
// The model's parameters, buffers and the global random state are put back afterwards, so the
// training that follows is the one that would have run without it.
//
// The choice is cached per host, BLAS kernel and setting (threads.json in $BALERBENCH_CACHE_DIR,
// else $XDG_CACHE_HOME/balerbench, else ~/.cache/balerbench) for an hour, and every report says
// where its thread count came from: the config, a calibration (with its per-step times), or the
// cache (with its age). A choice is part of the system a trial ran on, so it records when it was
// measured and the load then (other processes' CPUs, from /proc/stat over the calibration); a cached
// choice is used only while the host is as quiet or as busy as it was then (other processes below
// or above 0.25 CPUs, sampled for 0.2 s): one made on a quiet host is not trusted on a busy one.
// Within one run (one process, with CalibrationOptions::same_for_the_run) a setting keeps the first
// choice it got: the repeats of one configuration train on the same threads even when the host turns
// busy or quiet between them (source "earlier in this run", with that choice's measurement).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "harness/base/cpu_activity.h"
#include "harness/engine/trainer.h"

namespace balerbench {

inline constexpr const char* kEarlierInThisRun = "earlier in this run";

struct ThreadChoice {
  int threads = 0;
  // "config", "calibrated", "cached", "earlier in this run", "one CPU", "not calibrated on <device>"
  std::string source;
  double age_s = 0;    // cached or earlier in this run: how old the measurement is
  std::vector<std::pair<int, double>> step_s;  // calibrated or cached: median seconds per step per count
  double measured_unix_s = 0;                  // calibrated or cached: when the steps were timed
  nlohmann::json load_then, load_now;          // other processes' CPUs then ({other_cpu_cores, steal_fraction}) and now
  std::string note;                            // why a cached choice was not used, when it was not
  // {threads, source, age_s?, step_s?: {"1": s, "2": s}, measured_unix_s?, load_at_measurement?, load_now?, note?}
  nlohmann::json to_json() const;
};

struct CalibrationOptions {
  int64_t steps = 6;           // steps per candidate in the warm-up round, and at least in the others
  int rounds = 3;              // alternating rounds after the warm-up round
  // The timed rounds' steps fill at least this long at the slowest candidate's pace (at most
  // max_steps): a short step timed 6 times read a second thread as a loss on a VM whose second vCPU
  // was slow to take the pool's new thread, where its steps took 0.55-0.65x one thread's.
  double min_window_s = 0.05;
  int64_t max_steps = 200;
  double max_cache_age_s = 3600;
  std::string cache_dir;       // "" = the default folder above; "-" = no cache
  double busy_other_cores = kOtherCpuBusyCores;  // other processes above this many CPUs: the host is busy
  double load_sample_s = 0.2;      // the sample of the load now, before a cached choice is trusted
  // Where that sample may begin: a snapshot taken earlier (the run's start, TrainingSession), so that
  // the window overlaps loading the data and only what is left of load_sample_s is waited. Empty: a
  // fresh window of load_sample_s. This process's own CPU time is never counted as load.
  std::optional<CpuActivity> load_since;
  // A choice this process already made for the same key is kept (the run's repeats of a setting on
  // the same threads), whatever the load or the cache says now.
  bool same_for_the_run = false;
};

// The cache folder in force (see above).
std::string thread_cache_dir();

// Times `options`-shaped steps of `model` on the first rows of `x` for 1 and available_cpus()
// threads and returns the faster count, set with at::set_num_threads. `key` names the setting in
// the cache (host, model, batch, precision, engine); `options.engine` must be resolved.
ThreadChoice calibrate_threads(AutoEncoder& model, const at::Tensor& x, const TrainOptions& options,
                               const std::string& key, const CalibrationOptions& calibration = {});

}  // namespace balerbench
