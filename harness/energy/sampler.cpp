// sampler.cpp: see sampler.h.
#include "harness/energy/sampler.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/base/clock.h"


namespace balerbench {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

nlohmann::json SamplerOverhead::to_json() const {
  return {{"reads", reads}, {"read_time_s", read_time_s}, {"mean_read_s", reads ? read_time_s / reads : 0.0},
          {"max_read_s", max_read_s}, {"thread_cpu_s", thread_cpu_s}, {"wall_s", wall_s},
          {"cpu_fraction_of_one_cpu", cpu_fraction()}, {"listener_time_s", listener_time_s}};
}

Sampler::Sampler(std::vector<std::unique_ptr<EnergyMeter>> meters, double hz, std::size_t max_points, TimeSource& clock)
    : meters_(std::move(meters)), clock_(clock), requested_hz_(hz), hz_(hz),
      max_points_(std::max<std::size_t>(max_points, 16)) {
  for (const auto& m : meters_) {
    const double limit_s = m->max_read_interval_s();
    if (std::isfinite(limit_s) && limit_s > 0) hz_ = std::max(hz_, 4.0 / limit_s);
  }
  started_ = clock_.now();
}

Sampler::~Sampler() { stop(); }

void Sampler::attribute_to(std::shared_ptr<ProcessTree> tree) {
  std::lock_guard<std::mutex> lock(mu_);
  tree_ = std::move(tree);
  for (auto& m : meters_) m->attribute_to(tree_);
}

nlohmann::json Sampler::process_tree_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tree_ ? tree_->describe() : nlohmann::json(nullptr);
}

void Sampler::start() {
  started_ = clock_.now();
  snapshot();  // the series starts with a point
  if (hz_ <= 0 || thread_.joinable()) return;
  std::unique_lock<std::mutex> lock(stop_mu_);
  stopping_ = false;
  thread_waiting_ = false;
  thread_ = std::thread([this] { loop(); });
  // Until the thread holds its first deadline: on a fake clock, time advanced before that would pass
  // it by unseen, and the ticks would not fall where a test expects them.
  stop_cv_.wait(lock, [this] { return thread_waiting_; });
}

void Sampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  thread_.join();
  snapshot();  // the series ends with a point
}

void Sampler::loop() {
  const auto period = std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(1.0 / hz_));
  std::unique_lock<std::mutex> lock(stop_mu_);
  auto next = clock_.now() + period;
  thread_waiting_ = true;  // start() sees it once the wait below has released stop_mu_
  stop_cv_.notify_all();
  while (!stopping_) {
    if (clock_.wait_until(lock, stop_cv_, next, [this] { return stopping_; })) break;
    lock.unlock();
    snapshot();
    thread_cpu_s_.store(thread_cpu_s());
    lock.lock();
    next += period;
    const auto now = clock_.now();
    if (next < now) next = now + period;  // fell behind (a slow meter): skip, never burst
  }
}

Snapshot Sampler::read_locked() {
  Snapshot s;
  s.unix_s = clock_.unix_now_s();
  s.readings.reserve(meters_.size());
  if (tree_) s.process = tree_->read();  // first: the meters match their per-process samples against it
  for (auto& m : meters_) s.readings.push_back(m->read());
  // The first failed read of a meter is said at once (the windows that see failures are flagged in
  // their reports too): a counter that stops counting mid-run must not go unnoticed until the end.
  warned_.resize(meters_.size(), false);
  for (std::size_t i = 0; i < meters_.size(); ++i)
    if (s.readings[i].read_errors > 0 && !warned_[i]) {
      warned_[i] = true;
      std::fprintf(stderr,
                   "balerbench: warning: %s: a reading failed; its energy counts nothing until it reads again, and "
                   "the windows that saw the failures are flagged\n",
                   meters_[i]->name().c_str());
    }
  s.time = s.readings.empty() ? clock_.now() : s.readings.front().time;
  return s;
}

void Sampler::record_locked(const Snapshot& s) {
  if (++since_kept_ < keep_every_) return;
  since_kept_ = 0;
  series_.push_back(s);
  if (series_.size() < max_points_) return;
  std::vector<Snapshot> thinned;  // keep every other point, and from now on every 2k-th
  thinned.reserve(series_.size() / 2 + 1);
  for (std::size_t i = 0; i < series_.size(); i += 2) thinned.push_back(std::move(series_[i]));
  series_ = std::move(thinned);
  keep_every_ *= 2;
}

Snapshot Sampler::snapshot() {
  Snapshot s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto t0 = SteadyClock::now();  // the reads' cost: real time on any TimeSource (overhead())
    s = read_locked();
    const double dt = std::chrono::duration<double>(SteadyClock::now() - t0).count();
    ++overhead_.reads;
    overhead_.read_time_s += dt;
    overhead_.max_read_s = std::max(overhead_.max_read_s, dt);
    record_locked(s);
  }
  std::lock_guard<std::mutex> lock(listeners_mu_);
  if (!listeners_.empty()) {
    const auto t0 = SteadyClock::now();
    for (const auto& [id, listener] : listeners_) listener(s);
    listener_time_s_ += std::chrono::duration<double>(SteadyClock::now() - t0).count();
  }
  return s;
}

int Sampler::add_listener(Listener listener) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  listeners_.emplace_back(next_listener_id_, std::move(listener));
  return next_listener_id_++;
}

void Sampler::remove_listener(int id) {
  std::lock_guard<std::mutex> lock(listeners_mu_);
  listeners_.erase(std::remove_if(listeners_.begin(), listeners_.end(), [id](const auto& l) { return l.first == id; }),
                   listeners_.end());
}

std::vector<Snapshot> Sampler::series() const {
  std::lock_guard<std::mutex> lock(mu_);
  return series_;
}

std::size_t Sampler::series_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return series_.size();
}

std::vector<Snapshot> Sampler::series_between(SteadyClock::time_point t0, SteadyClock::time_point t1) const {
  std::lock_guard<std::mutex> lock(mu_);
  // The series is in time order: find the stretch instead of scanning a long run's points per window.
  const auto by_time = [](const Snapshot& s, SteadyClock::time_point t) { return s.time < t; };
  const auto first = std::lower_bound(series_.begin(), series_.end(), t0, by_time);
  const auto last = std::upper_bound(first, series_.end(), t1,
                                     [](SteadyClock::time_point t, const Snapshot& s) { return t < s.time; });
  return std::vector<Snapshot>(first, last);
}

SamplerOverhead Sampler::overhead() const {
  std::lock_guard<std::mutex> lock(mu_);
  SamplerOverhead o = overhead_;
  o.thread_cpu_s = thread_cpu_s_.load();
  o.wall_s = clock_.seconds_since(started_);
  std::lock_guard<std::mutex> listeners_lock(listeners_mu_);
  o.listener_time_s = listener_time_s_;
  return o;
}

}  // namespace balerbench
