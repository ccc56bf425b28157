// live_metrics.cpp: see live_metrics.h.
#include "harness/monitor/live_metrics.h"

#include <algorithm>
#include <cmath>

namespace balerbench {

LiveMetrics::LiveMetrics(std::string command, double power_window_s)
    : command_(std::move(command)), window_s_(power_window_s) {
  state_.command = command_;
}

void LiveMetrics::set_meters(const std::vector<std::unique_ptr<EnergyMeter>>& meters) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.power.domains.clear();
  meter_of_.clear();
  meter_window_s_.clear();
  edges_.clear();
  category_of_.clear();
  for (std::size_t m = 0; m < meters.size(); ++m) {
    meter_window_s_.push_back(std::max(window_s_, 2 * meters[m]->update_period_s()));
    edges_.push_back(meters[m]->edge_model());
    for (const Domain& d : meters[m]->domains()) {
      DomainPower p;
      p.meter = meters[m]->name();
      p.domain = d.name;
      p.kind = meter_kind_name(meters[m]->kind());
      p.category = domain_category_name(d.category);
      p.in_total = d.in_total && d.category != DomainCategory::kWall;
      state_.power.domains.push_back(p);
      meter_of_.push_back(m);
      category_of_.push_back(d.category);
    }
  }
  recent_.clear();
  first_energy_j_.clear();
}

void LiveMetrics::add_observer(LiveObserver* observer) {
  std::lock_guard<std::mutex> lock(observers_mu_);
  observers_.push_back(observer);
}

void LiveMetrics::remove_observer(LiveObserver* observer) {
  std::lock_guard<std::mutex> lock(observers_mu_);
  observers_.erase(std::remove(observers_.begin(), observers_.end(), observer), observers_.end());
}

LiveMetrics::Point LiveMetrics::flatten(const Snapshot& s) {
  Point p{s.time, {}, {}, {}, s.process};
  for (const MeterReading& r : s.readings) {
    p.energy_j.insert(p.energy_j.end(), r.energy_j.begin(), r.energy_j.end());
    const bool use = r.tree_use.size() == r.energy_j.size() && r.all_use.size() == r.energy_j.size();
    for (std::size_t d = 0; d < r.energy_j.size(); ++d) {
      p.tree_use.push_back(use ? r.tree_use[d] : kNoValue);
      p.all_use.push_back(use ? r.all_use[d] : kNoValue);
    }
  }
  return p;
}

const LiveMetrics::Point& LiveMetrics::anchor(const Point& now, double window_s) const {
  // The newest point at least a window before now, else the oldest kept.
  for (auto it = recent_.rbegin() + 1; it != recent_.rend(); ++it)
    if (std::chrono::duration<double>(now.time - it->time).count() >= window_s) return *it;
  return recent_.front();
}

double LiveMetrics::update_domain(std::size_t i, const Point& now, double since_s) {
  DomainPower& d = state_.power.domains[i];
  d.energy_j = now.energy_j[i] - first_energy_j_[i];
  const Point& from = anchor(now, meter_window_s_[meter_of_[i]]);
  const double dt = std::chrono::duration<double>(now.time - from.time).count();
  d.power_w = dt > 0 ? (now.energy_j[i] - from.energy_j[i]) / dt : kNoValue;
  // The ± of both, from the meter's resolution: a lag of one update period at each end (at the
  // higher of the current and the mean power), a count at each end, and the stated accuracy.
  const EdgeModel& em = edges_[meter_of_[i]];
  d.power_uncertainty_w = d.energy_uncertainty_j = kNoValue;
  double edge_j = 0;
  if (em.quantified) {
    const double mean_w = since_s > 0 ? d.energy_j / since_s : 0;
    const double edge_w = std::max(0.0, std::isnan(d.power_w) ? mean_w : std::max(d.power_w, mean_w));
    edge_j = 2 * em.step_j + edge_w * em.update_period_s;
    d.energy_uncertainty_j = edge_j + em.accuracy_fraction * std::fabs(d.energy_j);
    if (dt > 0 && !std::isnan(d.power_w))
      d.power_uncertainty_w = (2 * em.step_j + std::max(0.0, d.power_w) * em.update_period_s) / dt +
                              em.accuracy_fraction * std::fabs(d.power_w);
  }
  // T7 over the same trailing window.
  d.attributable_power_w = kNoValue;
  if (std::isnan(d.power_w)) return edge_j;
  if (category_of_[i] == DomainCategory::kCpu && now.process.valid && from.process.valid) {
    const double busy = now.process.busy_cpu_s - from.process.busy_cpu_s;
    if (busy > 0)
      d.attributable_power_w =
          d.power_w * std::min(1.0, std::max(0.0, now.process.tree_cpu_s - from.process.tree_cpu_s) / busy);
  } else if (category_of_[i] == DomainCategory::kGpu && std::isfinite(now.all_use[i]) &&
             std::isfinite(from.all_use[i])) {
    const double all = now.all_use[i] - from.all_use[i];
    d.attributable_power_w =
        all > 0 ? d.power_w * std::min(1.0, std::max(0.0, now.tree_use[i] - from.tree_use[i]) / all) : 0.0;
  }
  return edge_j;
}

void LiveMetrics::update_totals(const std::vector<double>& edge_j) {
  LivePower& out = state_.power;
  out.total_power_w = 0;
  out.total_energy_j = 0;
  bool total_known = true, total_quantified = false;
  double total_edge2 = 0, total_accuracy = 0;
  for (std::size_t i = 0; i < out.domains.size(); ++i) {
    const DomainPower& d = out.domains[i];
    if (!d.in_total) continue;
    const EdgeModel& em = edges_[meter_of_[i]];
    if (em.quantified) {
      total_quantified = true;
      total_edge2 += edge_j[i] * edge_j[i];
      total_accuracy += em.accuracy_fraction * std::fabs(d.energy_j);
    }
    out.total_energy_j += d.energy_j;
    if (std::isnan(d.power_w)) total_known = false;
    else out.total_power_w += d.power_w;
  }
  if (!total_known || out.domains.empty()) out.total_power_w = kNoValue;
  out.total_energy_uncertainty_j = total_quantified ? std::sqrt(total_edge2) + total_accuracy : kNoValue;
}

void LiveMetrics::on_snapshot(const Snapshot& s) {
  LiveState copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!recent_.empty() && s.time <= recent_.back().time) return;
    Point p = flatten(s);
    if (p.energy_j.size() != state_.power.domains.size()) return;  // not the meters we were given
    if (first_energy_j_.empty()) {
      first_energy_j_ = p.energy_j;
      first_time_ = p.time;
    }
    if (trial_start_at_first_reading_) {  // begin_trial came before any reading
      trial_start_ = p.time;
      trial_start_at_first_reading_ = false;
    }
    recent_.push_back(std::move(p));
    const Point& now = recent_.back();
    const double longest_s =
        meter_window_s_.empty() ? window_s_ : *std::max_element(meter_window_s_.begin(), meter_window_s_.end());
    // Keep one point older than the longest window, drop the rest.
    while (recent_.size() > 2 && std::chrono::duration<double>(now.time - recent_[1].time).count() >= longest_s)
      recent_.pop_front();
    state_.power.unix_s = s.unix_s;
    const double since_s = std::chrono::duration<double>(now.time - first_time_).count();
    std::vector<double> edge_j(state_.power.domains.size());
    for (std::size_t i = 0; i < edge_j.size(); ++i) edge_j[i] = update_domain(i, now, since_s);
    update_totals(edge_j);
    ++state_.snapshots;
    copy = state_locked();
  }
  std::lock_guard<std::mutex> lock(observers_mu_);
  for (LiveObserver* o : observers_) o->on_power(copy);
}

void LiveMetrics::begin_trial(const TrialLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.in_trial = true;
  state_.trial = labels;
  state_.epoch = EpochProgress{};
  // The trial's energy is counted from the last meter reading before it began, so its clock starts
  // there too (the time of that reading). Before any reading, energy is counted from the first one
  // (energies are relative to it), so the clock starts there when it comes (on_snapshot); a clock
  // started now would read the mean power low by the sampler's delay.
  trial_start_at_first_reading_ = recent_.empty();
  trial_start_ = recent_.empty() ? SteadyClock::now() : recent_.back().time;
  trial_start_energy_j_ = state_.power.total_energy_j;
}

void LiveMetrics::on_epoch(const EpochProgress& epoch) {
  LiveState copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state_.epoch = epoch;
    copy = state_locked();
  }
  std::lock_guard<std::mutex> lock(observers_mu_);
  for (LiveObserver* o : observers_) o->on_epoch(copy);
}

void LiveMetrics::end_trial() {
  std::lock_guard<std::mutex> lock(mu_);
  state_.in_trial = false;
}

LiveState LiveMetrics::state_locked() const {
  LiveState s = state_;
  if (s.in_trial) {
    s.trial_energy_j = s.power.total_energy_j - trial_start_energy_j_;
    // Up to the latest reading, the one the energy is from: energy / duration is then the trial's
    // mean power, where "until now" read it low by up to one sampling period (a recording rule's
    // mean of a 150 W simulated GPU came out at 148 W).
    const SteadyClock::time_point until = recent_.empty() ? SteadyClock::now() : std::max(recent_.back().time, trial_start_);
    s.trial_duration_s =
        trial_start_at_first_reading_ ? 0.0 : std::chrono::duration<double>(until - trial_start_).count();
  }
  return s;
}

LiveState LiveMetrics::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_locked();
}

double LiveMetrics::total_power_w() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.power.total_power_w;
}

}  // namespace balerbench
