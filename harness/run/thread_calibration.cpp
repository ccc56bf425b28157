// thread_calibration.cpp: see thread_calibration.h.
#include "harness/run/thread_calibration.h"

#include <ATen/ATen.h>
#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "datasets/npy.h"
#include "harness/base/clock.h"
#include "harness/base/cpu_activity.h"
#include "harness/base/statistics.h"
#include "harness/engine/runtime.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_cache(const std::string& file) {
  std::ifstream in(file);
  if (!in) return json::object();
  try {
    json j = json::parse(in);
    return j.is_object() ? j : json::object();
  } catch (const std::exception&) {
    return json::object();  // a damaged cache is a cache miss, and is rewritten below
  }
}

// The model's parameters and buffers, and the global random state, as they are now.
struct ModelState {
  explicit ModelState(AutoEncoder& m) : model(m), rng(at::detail::getDefaultCPUGenerator().get_state()) {
    torch::NoGradGuard no_grad;
    for (const auto& p : m.parameters()) params.push_back(p.detach().clone());
    for (const auto& b : m.buffers()) buffers.push_back(b.detach().clone());
  }
  void restore() {
    torch::NoGradGuard no_grad;
    std::size_t i = 0;
    for (auto& p : model.parameters()) p.detach().copy_(params[i++]);
    i = 0;
    for (auto& b : model.buffers()) b.detach().copy_(buffers[i++]);
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    gen.set_state(rng);
  }
  AutoEncoder& model;
  at::Tensor rng;
  std::vector<at::Tensor> params, buffers;
};

}  // namespace

json ThreadChoice::to_json() const {
  json j = {{"threads", threads}, {"source", source}};
  if (source == "cached" || source == kEarlierInThisRun) j["age_s"] = age_s;
  if (measured_unix_s > 0) j["measured_unix_s"] = measured_unix_s;
  if (!load_then.is_null()) j["load_at_measurement"] = load_then;
  if (!load_now.is_null()) j["load_now"] = load_now;
  if (!note.empty()) j["note"] = note;
  if (!step_s.empty()) {
    json s = json::object();
    for (const auto& [n, t] : step_s) s[std::to_string(n)] = t;
    j["step_s"] = s;
  }
  return j;
}

std::string thread_cache_dir() {
  if (const char* d = std::getenv("BALERBENCH_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return (fs::path(d) / "balerbench").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "balerbench").string();
  return "";
}

namespace {

// {other_cpu_cores, steal_fraction} of a disturbance record, or null.
json load_summary(const json& d) {
  if (!d.is_object()) return nullptr;
  return {{"other_cpu_cores", d["other_cpu_cores"]}, {"steal_fraction", d["steal_fraction"]}};
}

json sample_load(double seconds, const std::optional<CpuActivity>& since) {
  const CpuActivity a = since && since->valid ? *since : read_cpu_activity();
  const double left = seconds - (read_cpu_activity().wall_s - a.wall_s);
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
  return load_summary(disturbance(a, read_cpu_activity()));
}

}  // namespace

namespace {

// The cache's choice for `key` when it is fresh and was measured under the load there is now; else
// nothing, with `note` saying why a cached choice was measured again.
std::optional<ThreadChoice> cached_choice(const std::string& file, const std::string& key, double now, int most,
                                          const CalibrationOptions& c, std::string& note) {
  if (file.empty()) return std::nullopt;
  const json cache = read_cache(file);
  if (!cache.contains(key) || !cache[key].is_object()) return std::nullopt;
  const json& e = cache[key];
  const double age = now - e.value("unix_s", 0.0);
  const int n = e.value("threads", 0);
  if (age < 0 || age > c.max_cache_age_s || n < 1 || n > most) return std::nullopt;
  // The load then and now: a count measured on a quiet host is no answer for a busy one.
  const json then = e.value("load", json(nullptr));
  const json load_now = sample_load(c.load_sample_s, c.load_since);
  const bool busy_then = then.is_object() && then.value("other_cpu_cores", 0.0) > c.busy_other_cores;
  const bool busy_now = load_now.is_object() && load_now.value("other_cpu_cores", 0.0) > c.busy_other_cores;
  if (!then.is_object() || busy_then != busy_now) {
    note = !then.is_object() ? "the cached choice recorded no load: measured again"
           : busy_now        ? "the cached choice was measured on a quiet host and the host is busy now: measured again"
                             : "the cached choice was measured on a busy host and the host is quiet now: measured again";
    return std::nullopt;
  }
  ThreadChoice choice{n, "cached", age, {}};
  if (e.contains("step_s") && e["step_s"].is_object())
    for (auto it = e["step_s"].begin(); it != e["step_s"].end(); ++it)
      choice.step_s.emplace_back(std::stoi(it.key()), it.value().get<double>());
  choice.measured_unix_s = e.value("unix_s", 0.0);
  choice.load_then = then;
  choice.load_now = load_now;
  return choice;
}

// The training options of a calibration: one quiet epoch, nothing but steps and the loss.
TrainOptions calibration_options(const TrainOptions& options) {
  TrainOptions o = options;
  o.epochs = 1;
  o.shuffle = false;
  o.early_stopping = false;
  o.lr_scheduler = false;
  o.relative_error = false;
  o.profile = false;
  o.progress = "none";
  o.save_every_epochs = 0;  // and fit runs without an observer: no windows, no hooks
  o.adaptive_threads = false;  // each candidate's own count on every step
  return o;
}

// One candidate's fit of the first `steps` full batches of `x`: seconds per step.
double step_s(AutoEncoder& model, const at::Tensor& x, const TrainOptions& o, int threads, int64_t steps) {
  const int64_t rows = std::min<int64_t>(x.size(0), o.batch_size * steps);
  at::set_num_threads(threads);
  const TrainResult r = fit(model, x.narrow(0, 0, rows), at::Tensor(), o);
  return r.epoch_records.front().duration_s / static_cast<double>((rows + o.batch_size - 1) / o.batch_size);
}

// Seconds per step at each candidate count: full batches of the run's own rows, one epoch per
// candidate and round, the model restored after. The first round (a warm-up of c.steps steps)
// sizes the others: enough steps to fill c.min_window_s at the slowest candidate's pace.
std::map<int, std::vector<double>> time_candidates(AutoEncoder& model, const at::Tensor& x, const TrainOptions& options,
                                                   const CalibrationOptions& c, const std::vector<int>& candidates) {
  const TrainOptions o = calibration_options(options);
  std::map<int, std::vector<double>> times;
  ModelState state(model);
  double slowest_s = 0;
  for (int n : candidates) slowest_s = std::max(slowest_s, step_s(model, x, o, n, c.steps));
  const int64_t most_steps = (x.size(0) + o.batch_size - 1) / o.batch_size;
  const int64_t steps = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(c.min_window_s / std::max(slowest_s, 1e-9))),
                                            c.steps, std::max<int64_t>(c.steps, c.max_steps));
  for (int round = 1; round <= c.rounds; ++round)
    for (int n : candidates) times[n].push_back(step_s(model, x, o, n, std::min(steps, most_steps)));
  state.restore();
  return times;
}

// Writes the choice into the cache; an unwritable cache costs the next run a calibration, nothing more.
void store_choice(const std::string& dir, const std::string& file, const std::string& key, double now,
                  const ThreadChoice& choice) {
  if (file.empty()) return;
  try {
    json cache = read_cache(file);
    json s = json::object();
    for (const auto& [n, t] : choice.step_s) s[std::to_string(n)] = t;
    cache[key] = {{"threads", choice.threads}, {"unix_s", now}, {"step_s", s}, {"load", choice.load_then}};
    fs::create_directories(dir);
    const std::string text = cache.dump(1) + "\n";
    write_file_atomic(file, std::vector<uint8_t>(text.begin(), text.end()));
  } catch (const std::exception&) {
  }
}

// The choices this process made, per key (CalibrationOptions::same_for_the_run).
struct RunChoices {
  std::mutex mutex;
  std::map<std::string, ThreadChoice> by_key;
};

RunChoices& run_choices() {
  static RunChoices choices;
  return choices;
}

std::optional<ThreadChoice> earlier_choice(const std::string& key, double now) {
  RunChoices& r = run_choices();
  const std::lock_guard<std::mutex> lock(r.mutex);
  const auto it = r.by_key.find(key);
  if (it == r.by_key.end()) return std::nullopt;
  ThreadChoice choice = it->second;
  choice.source = kEarlierInThisRun;
  choice.age_s = choice.measured_unix_s > 0 ? now - choice.measured_unix_s : 0;
  choice.load_now = nullptr;
  choice.note.clear();
  return choice;
}

ThreadChoice keep_for_the_run(const std::string& key, const CalibrationOptions& c, ThreadChoice choice) {
  if (c.same_for_the_run) {
    RunChoices& r = run_choices();
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.by_key.emplace(key, choice);
  }
  return choice;
}

// The count every CPU or a cached choice gives, or nullopt: the candidates must be timed.
std::optional<ThreadChoice> known_choice(const std::string& key, const CalibrationOptions& c, const std::string& file,
                                         double now, std::string& note) {
  const int most = available_cpus();
  if (most <= 1) return ThreadChoice{1, "one CPU", 0, {}};
  if (c.same_for_the_run)
    if (std::optional<ThreadChoice> earlier = earlier_choice(key, now)) return earlier;
  return cached_choice(file, key, now, most, c, note);
}

}  // namespace

ThreadChoice calibrate_threads(AutoEncoder& model, const at::Tensor& x, const TrainOptions& options,
                               const std::string& key, const CalibrationOptions& c) {
  const int most = available_cpus();
  const std::string dir = c.cache_dir.empty() ? thread_cache_dir() : c.cache_dir;
  const std::string file = dir.empty() || dir == "-" ? "" : (fs::path(dir) / "threads.json").string();
  const double now = unix_now_s();
  std::string note;
  if (std::optional<ThreadChoice> known = known_choice(key, c, file, now, note)) {
    at::set_num_threads(known->threads);
    return known->source == kEarlierInThisRun ? *known : keep_for_the_run(key, c, *known);
  }
  const std::vector<int> candidates = {1, most};
  const CpuActivity load_begin = read_cpu_activity();
  std::map<int, std::vector<double>> times = time_candidates(model, x, options, c, candidates);
  ThreadChoice choice;
  choice.source = "calibrated";
  choice.note = note;
  choice.measured_unix_s = now;
  choice.load_then = load_summary(disturbance(load_begin, read_cpu_activity()));
  double best = 0;
  for (int n : candidates) {
    const double s = summarize(times[n]).median;
    choice.step_s.emplace_back(n, s);
    if (choice.threads == 0 || s < best) {
      choice.threads = n;
      best = s;
    }
  }
  at::set_num_threads(choice.threads);
  store_choice(dir, file, key, now, choice);
  return keep_for_the_run(key, c, choice);
}

}  // namespace balerbench
