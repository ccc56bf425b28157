// nvml_meter.cpp: see nvml_meter.h.
#include "harness/energy/nvml_meter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/energy/meter_registry.h"
#include "harness/energy/process_tree.h"

namespace balerbench {

using nlohmann::json;

namespace {

// A GPU counter's timing, probed when the meter opens.
struct CounterTiming {
  double period_s = 0;
  double period_error_s = 0;  // half the spread of the intervals seen
  SteadyClock::time_point anchor;
  double anchor_error_s = 0;
  std::string note;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Polls the counter every ~1 ms for up to 0.6 s (or until 5 changes): the median interval between
// changes is the update period, and the last change's moment (± half the poll that saw it) anchors
// the phase.
CounterTiming probe_counter(const NvmlLibrary& lib, nvmlDevice_t h, TimeSource& clock) {
  CounterTiming t;
  unsigned long long mj = 0, prev = 0;
  if (lib.device_get_total_energy(h, &prev) != NVML_SUCCESS) return t;
  const auto start = clock.now();
  auto prev_before = start;  // just before the previous call: an update it missed came after this
  std::vector<SteadyClock::time_point> changes;
  std::vector<double> widths;
  while (changes.size() < 6 && clock.seconds_since(start) < 0.6) {
    clock.sleep_for(std::chrono::microseconds(1000));
    const auto before = clock.now();
    if (lib.device_get_total_energy(h, &mj) != NVML_SUCCESS) break;
    const auto after = clock.now();  // an update this call saw came before this
    if (mj != prev) {
      changes.push_back(prev_before + (after - prev_before) / 2);
      widths.push_back(seconds_between(prev_before, after));
    }
    prev = mj;
    prev_before = before;
  }
  char buf[160];
  if (changes.size() < 3) {
    std::snprintf(buf, sizeof buf, "not measured: the counter changed %zu times in %.2f s of polling", changes.size(),
                  clock.seconds_since(start));
    t.note = buf;
    return t;
  }
  std::vector<double> intervals;
  for (std::size_t i = 1; i < changes.size(); ++i) intervals.push_back(seconds_between(changes[i - 1], changes[i]));
  t.period_s = median(intervals);
  t.period_error_s = 0.5 * (*std::max_element(intervals.begin(), intervals.end()) -
                            *std::min_element(intervals.begin(), intervals.end()));
  t.anchor = changes.back();
  t.anchor_error_s = 0.5 * widths.back();
  std::snprintf(buf, sizeof buf, "measured at start-up: median of %zu intervals between counter changes, polled every %.1f ms",
                intervals.size(), 1e3 * median(widths));
  t.note = buf;
  return t;
}

}  // namespace

MeterProbe NvmlMeter::open(TimeSource& clock) {
  MeterProbe probe;
  std::shared_ptr<NvmlLibrary> lib = NvmlLibrary::open(probe.unavailable_reason);
  if (!lib) return probe;
  std::string selection;
  const std::vector<NvmlLibrary::Gpu> gpus = lib->visible_gpus(selection);
  if (gpus.empty()) {
    probe.unavailable_reason = "no GPU visible to NVML: " + selection;
    return probe;
  }
  std::vector<Device> devices;
  for (const auto& g : gpus) {
    Device d;
    d.gpu = g;
    const nvmlReturn_t counter_rc = g.lost ? NVML_ERROR_GPU_IS_LOST : lib->device_get_total_energy(g.handle, &d.start_mj);
    d.counter = counter_rc == NVML_SUCCESS;
    unsigned mw = 0;
    if (!d.counter) {
      const nvmlReturn_t rc = counter_rc == NVML_ERROR_GPU_IS_LOST ? counter_rc : lib->device_get_power_usage(g.handle, &mw);
      if (rc == NVML_ERROR_GPU_IS_LOST) {  // gone since an earlier run or trial of this process saw it
        probe.unavailable_reason =
            lost_gpu_text(g) + "; check it with nvidia-smi (the machine may need a reset by its administrator)";
        return probe;
      }
      if (rc != NVML_SUCCESS) {
        probe.unavailable_reason = "GPU " + std::to_string(g.index) + " (" + g.name +
                                   ") reports neither an energy counter nor power: " + lib->error_string(rc);
        return probe;
      }
    }
    d.last_power_w = mw * 1e-3;
    if (d.counter) {
      const CounterTiming timing = probe_counter(*lib, g.handle, clock);
      d.period_s = timing.period_s;
      d.period_error_s = timing.period_error_s;
      d.anchor = timing.anchor;
      d.anchor_error_s = timing.anchor_error_s;
      d.period_note = timing.note;
      d.last_time = clock.now();
      if (lib->device_get_total_energy(g.handle, &d.last_mj) != NVML_SUCCESS) d.last_mj = d.start_mj;
      if (d.last_mj >= d.start_mj) {
        d.counted_mj = d.last_mj - d.start_mj;
      } else {  // stepped back while probed: counting starts from the lower value
        ++d.read_errors;
        ++d.steps_back;
      }
      d.total_j = static_cast<double>(d.counted_mj) * 1e-3;
    }
    devices.push_back(d);
  }
  probe.meter.reset(new NvmlMeter(std::move(lib), std::move(devices), selection, clock));
  return probe;
}

NvmlMeter::NvmlMeter(std::shared_ptr<NvmlLibrary> lib, std::vector<Device> devices, std::string selection,
                     TimeSource& clock)
    : lib_(std::move(lib)), clock_(clock), devices_(std::move(devices)), selection_(std::move(selection)),
      last_read_(clock.now()) {
  for (const auto& d : devices_) {
    Domain dom;
    dom.name = "gpu" + std::to_string(d.gpu.index);
    dom.category = DomainCategory::kGpu;
    dom.note = d.gpu.name + (d.counter ? " (energy counter)" : " (power polling, integrated)");
    domains_.push_back(dom);
  }
}

// An update of the counter fell in (previous read, this read] when the value changed. When the
// predicted update (anchor + k periods) lies in that interval, the interval narrows the anchor; when
// it does not (the period drifted, or an update came late), the anchor moves to the interval.
void NvmlMeter::track_counter(Device& d, unsigned long long mj, SteadyClock::time_point before,
                              SteadyClock::time_point now) {
  if (mj != d.last_mj && d.period_s > 0) {
    // The update came after the previous call began and before this one returned.
    const double lo = seconds_between(d.anchor, d.last_time), hi = seconds_between(d.anchor, now);
    const double k = std::floor(hi / d.period_s);  // the last predicted update at or before `now`
    const double predicted = k * d.period_s;
    const double tolerance = d.anchor_error_s + d.period_error_s;
    if (predicted + tolerance >= lo && predicted - tolerance <= hi) {
      // Narrow [predicted - tolerance, predicted + tolerance] to its overlap with [lo, hi].
      const double a = std::max(predicted - tolerance, lo), b = std::min(predicted + tolerance, hi);
      d.anchor += std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(0.5 * (a + b)));
      // Never tighter than the start-up poll, nor than the period's own spread.
      d.anchor_error_s = std::max({0.5 * (b - a), 5e-4, d.period_error_s});
    } else {
      d.anchor = d.last_time + (now - d.last_time) / 2;  // last_time: when the previous call began
      d.anchor_error_s = 0.5 * seconds_between(d.last_time, now);
    }
  }
  d.last_mj = mj;
  d.last_time = before;
}

void NvmlMeter::attribute_to(std::shared_ptr<const ProcessTree> tree) {
  tree_ = std::move(tree);
  // Samples from before the meter is used for attribution are no one's business here.
  const unsigned long long now_us = static_cast<unsigned long long>(clock_.unix_now_s() * 1e6);
  for (auto& d : devices_) {
    d.last_seen_us = now_us;
    if (!lib_->device_get_process_utilization)
      d.use_unavailable = "this NVML has no nvmlDeviceGetProcessUtilization (a driver older than R304?)";
  }
}

void NvmlMeter::sample_process_use(Device& d) {
  if (!d.use_unavailable.empty()) return;
  unsigned n = 0;
  nvmlReturn_t rc = lib_->device_get_process_utilization(d.gpu.handle, nullptr, &n, d.last_seen_us);
  if (rc == NVML_ERROR_NOT_FOUND || (rc == NVML_SUCCESS && n == 0)) return;  // no process had a sample since
  if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) {
    d.use_unavailable = "nvmlDeviceGetProcessUtilization: " + lib_->error_string(rc);
    return;
  }
  std::vector<nvmlProcessUtilizationSample_t> buf(n + 8);  // room for processes started since
  n = static_cast<unsigned>(buf.size());
  rc = lib_->device_get_process_utilization(d.gpu.handle, buf.data(), &n, d.last_seen_us);
  if (rc == NVML_ERROR_NOT_FOUND) return;
  if (rc != NVML_SUCCESS) return;  // INSUFFICIENT_SIZE again (a burst of new processes): next read
  unsigned long long newest = d.last_seen_us;
  for (unsigned i = 0; i < n && i < buf.size(); ++i) {
    const nvmlProcessUtilizationSample_t& u = buf[i];
    if (u.timeStamp <= d.last_seen_us) continue;
    const double sm = std::min(100u, u.smUtil);
    d.all_sm_use += sm;
    if (tree_->contains(u.pid)) d.tree_sm_use += sm;
    ++d.use_samples;
    newest = std::max(newest, u.timeStamp);
  }
  d.last_seen_us = newest;
}

void NvmlMeter::read_counter(Device& d, SteadyClock::time_point reading_time, std::vector<double>& pending,
                             std::vector<double>& pending_u) {
  unsigned long long mj = 0;
  const auto call_time = clock_.now();
  const nvmlReturn_t rc = lib_->device_get_total_energy(d.gpu.handle, &mj);
  const auto read_time = clock_.now();  // right after the counter: its age is measured from here
  if (rc != NVML_SUCCESS) {
    ++d.read_errors;
    d.lost = d.lost || rc == NVML_ERROR_GPU_IS_LOST;
    return;
  }
  if (mj < d.last_mj) {
    // The counter stepped back: the stretch since the previous read is not known, and counts nothing
    // (a failed read, flagged in every window that holds it); the next rise counts from here.
    ++d.read_errors;
    ++d.steps_back;
    d.last_mj = mj;
    d.last_time = call_time;
    return;
  }
  d.counted_mj += mj - d.last_mj;
  d.total_j = static_cast<double>(d.counted_mj) * 1e-3;
  track_counter(d, mj, call_time, read_time);
  // Only with the phase known to 5% of a period: else the edge-read bound is the honest one.
  if (d.period_s <= 0 || d.anchor_error_s > 0.05 * d.period_s) return;
  unsigned mw = 0;
  if (lib_->device_get_power_usage(d.gpu.handle, &mw) != NVML_SUCCESS) return;
  const double p_w = mw * 1e-3;
  // The last update before the counter was read: the anchor, whole periods on. The energy is wanted
  // at the reading's time (its windows' edges), which came a moment before the counter call: power x
  // (reading_time - that update), negative when the update fell between reading_time and the call (a
  // busy machine can put milliseconds there).
  const double age = std::fmod(std::max(0.0, seconds_between(d.anchor, read_time)), d.period_s);
  const double since = age - seconds_between(reading_time, read_time);
  pending.push_back(p_w * since);
  pending_u.push_back(p_w * (d.anchor_error_s + d.period_error_s) + std::fabs(p_w - d.last_power_read_w) * std::fabs(since));
  d.last_power_read_w = p_w;
}

void NvmlMeter::read_power_poll(Device& d, double dt_s) {
  unsigned mw = 0;
  const nvmlReturn_t rc = lib_->device_get_power_usage(d.gpu.handle, &mw);
  d.lost = d.lost || rc == NVML_ERROR_GPU_IS_LOST;
  if (rc == NVML_SUCCESS) {
    const double p_w = mw * 1e-3;
    d.total_j += 0.5 * (d.last_power_w + p_w) * dt_s;
    d.last_power_w = p_w;
  } else {
    d.total_j += d.last_power_w * dt_s;  // hold the last reading across a failed poll
    ++d.read_errors;
  }
}

void NvmlMeter::add_device_state(Device& d, MeterReading& r) {
  nvmlMemory_t mem{};
  r.memory_used_bytes.push_back(!d.lost && lib_->device_get_memory_info(d.gpu.handle, &mem) == NVML_SUCCESS
                                    ? static_cast<double>(mem.used)
                                    : std::nan(""));
  MeterReading::DeviceThermal th;
  if (!d.lost) {
    const NvmlLibrary::Thermal t = lib_->thermal(d.gpu);
    th.temperature_c = t.temperature_c.value_or(std::nan(""));
    th.sm_clock_mhz = t.sm_clock_mhz.value_or(std::nan(""));
    th.throttle_mask = t.throttle_mask ? static_cast<long long>(*t.throttle_mask) : -1;
  }
  r.thermal.push_back(th);
  if (tree_) {
    sample_process_use(d);
    const double nan = std::nan("");
    r.tree_use.push_back(d.use_unavailable.empty() ? d.tree_sm_use : nan);
    r.all_use.push_back(d.use_unavailable.empty() ? d.all_sm_use : nan);
    r.use_samples += d.use_samples;
  }
  r.read_errors += d.read_errors;
  if (d.lost) r.lost += (r.lost.empty() ? "" : "; ") + lost_gpu_text(d.gpu);
}

MeterReading NvmlMeter::read() {
  MeterReading r;
  std::vector<double> pending, pending_u;
  r.time = clock_.now();
  const double dt_s = std::chrono::duration<double>(r.time - last_read_).count();
  last_read_ = r.time;
  for (auto& d : devices_) {
    if (d.counter)
      read_counter(d, r.time, pending, pending_u);
    else
      read_power_poll(d, dt_s);
    r.energy_j.push_back(d.total_j);
    add_device_state(d, r);
  }
  if (pending.size() == devices_.size()) {  // every domain estimated, or none
    r.pending_j = std::move(pending);
    r.pending_uncertainty_j = std::move(pending_u);
  }
  return r;
}

double NvmlMeter::update_period_s() const {
  double p = 0;
  for (const auto& d : devices_) {
    if (!d.counter) return 1.0;
    p = std::max(p, d.period_s > 0 ? d.period_s : 0.1);
  }
  return p > 0 ? p : 0.1;
}

EdgeModel NvmlMeter::edge_model() const {
  EdgeModel m;
  m.update_period_s = update_period_s();
  bool measured = !devices_.empty(), polling = false;
  std::string note;
  for (const auto& d : devices_) {
    measured = measured && d.counter && d.period_s > 0;
    polling = polling || !d.counter;
    if (note.empty()) note = d.period_note;
  }
  m.period_measured = measured;
  char buf[200];
  if (polling) {
    std::snprintf(buf, sizeof buf, "power polling: the reading is a 1 s average on recent GPUs (stated), integrated "
                  "between reads; accuracy not stated");
  } else {
    m.step_j = 1e-3;  // the counter counts millijoules
    m.stepped = true;
    std::snprintf(buf, sizeof buf, "total-energy counter: 1 mJ counts, updates every %.3g s (%s); accuracy not stated",
                  m.update_period_s, measured ? note.c_str() : ("stated; " + note).c_str());
  }
  m.basis = buf;
  return m;
}

json NvmlMeter::describe() const {
  json gpus = json::array();
  for (const auto& d : devices_) {
    const nvmlDevice_t h = d.gpu.handle;
    auto watts = [](unsigned mw) { return mw * 1e-3; };
    json g = {{"index", d.gpu.index}, {"name", d.gpu.name}, {"uuid", d.gpu.uuid},
              {"method", d.counter ? "energy counter" : "power polling"}, {"read_errors", d.read_errors},
              {"counter_steps_back", d.steps_back}};
    unsigned a = 0, b = 0;
    unsigned long long mask = 0;
    g["power_limit_w"] = lib_->device_get_enforced_power_limit(h, &a) == NVML_SUCCESS ? json(watts(a)) : json(nullptr);
    g["default_power_limit_w"] =
        lib_->device_get_default_power_limit(h, &a) == NVML_SUCCESS ? json(watts(a)) : json(nullptr);
    if (lib_->device_get_power_limit_constraints(h, &a, &b) == NVML_SUCCESS) {
      g["min_power_limit_w"] = watts(a);
      g["max_power_limit_w"] = watts(b);
    } else {
      g["min_power_limit_w"] = g["max_power_limit_w"] = nullptr;
    }
    const auto temperature_c = lib_->thermal(d.gpu).temperature_c;
    g["temperature_c"] = temperature_c ? json(static_cast<unsigned>(*temperature_c)) : json(nullptr);
    g["sm_clock_mhz"] = lib_->device_get_clock_info(h, NVML_CLOCK_SM, &a) == NVML_SUCCESS ? json(a) : json(nullptr);
    g["throttle_reasons"] =
        lib_->device_get_throttle_reasons(h, &mask) == NVML_SUCCESS ? json(throttle_reason_names(mask)) : json(nullptr);
    if (tree_)
      g["process_use"] = d.use_unavailable.empty()
                             ? json{{"sampled", true}, {"samples", d.use_samples},
                                    {"method", "nvmlDeviceGetProcessUtilization: share of smUtil over the samples"}}
                             : json{{"sampled", false}, {"reason", d.use_unavailable}};
    gpus.push_back(g);
  }
  return {{"library", lib_->path()}, {"driver_version", lib_->driver_version()}, {"selection", selection_},
          {"gpus", gpus}};
}

// This meter in the registry (meter_registry.cpp lists it).
const MeterEntry& nvml_meter_entry() {
  static const MeterEntry entry = {"nvml", MeterKind::kMeasured, "NVIDIA GPUs: energy counter (Volta+) or integrated power",
                                   [](const EnergySettings&, TimeSource& clock) { return NvmlMeter::open(clock); }};
  return entry;
}

}  // namespace balerbench
