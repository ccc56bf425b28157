// power_check.cpp: see power_check.h.
#include "harness/energy/power_check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "harness/base/clock.h"

namespace balerbench {
namespace {

using nlohmann::json;

struct Poll {
  double t_s = 0;
  unsigned long long counter_mj = 0;
  std::optional<double> usage_w, average_w, instant_w;
};

std::vector<Poll> poll_gpu(const NvmlLibrary& lib, const NvmlLibrary::Gpu& gpu, double duration_s, double poll_s,
                           TimeSource& clock, bool& counter) {
  std::vector<Poll> polls;
  const auto t0 = clock.now();
  counter = true;
  while (clock.seconds_since(t0) < duration_s) {
    Poll p;
    p.t_s = clock.seconds_since(t0);
    counter = counter && lib.device_get_total_energy(gpu.handle, &p.counter_mj) == NVML_SUCCESS;
    unsigned mw = 0;
    if (lib.device_get_power_usage(gpu.handle, &mw) == NVML_SUCCESS) p.usage_w = mw / 1e3;
    const NvmlLibrary::PowerFields f = lib.power_fields(gpu);
    p.average_w = f.average_w;
    p.instant_w = f.instant_w;
    polls.push_back(p);
    clock.sleep_s(poll_s);
  }
  return polls;
}

// Trapezoids of `value` over polls [a, b]; empty when any is missing.
template <typename Get>
std::optional<double> integrate(const std::vector<Poll>& polls, std::size_t a, std::size_t b, Get get) {
  double e = 0;
  for (std::size_t i = a; i < b; ++i) {
    const auto x = get(polls[i]), y = get(polls[i + 1]);
    if (!x || !y) return std::nullopt;
    e += 0.5 * (*x + *y) * (polls[i + 1].t_s - polls[i].t_s);
  }
  return e;
}

// Which reading nvmlDeviceGetPowerUsage gives, from the two fields polled beside it.
void tell_reading(const std::vector<Poll>& polls, PowerCheck& c) {
  double to_average = 0, to_instant = 0, apart = 0, mean = 0;
  std::size_t n = 0;
  bool has_average = false, has_instant = false;
  for (const Poll& p : polls) {
    has_average = has_average || p.average_w.has_value();
    has_instant = has_instant || p.instant_w.has_value();
    if (!p.usage_w || !p.average_w || !p.instant_w) continue;
    to_average += std::fabs(*p.usage_w - *p.average_w);
    to_instant += std::fabs(*p.usage_w - *p.instant_w);
    apart = std::max(apart, std::fabs(*p.average_w - *p.instant_w));
    mean += *p.usage_w;
    ++n;
  }
  if (!has_average && !has_instant) {
    c.reading = "not determined";
    c.reading_basis = "the driver has no nvmlDeviceGetFieldValues, or answers neither power field";
  } else if (!has_average) {
    c.reading = "instantaneous";
    c.reading_basis = "no 1 s average field (NVML_FI_DEV_POWER_AVERAGE): GA100 or older, where the reading is "
                      "instantaneous";
  } else if (n && apart > 0.01 * mean / static_cast<double>(n)) {
    c.reading = to_average <= to_instant ? "1 s average" : "instantaneous";
    c.reading_basis = std::string("nvmlDeviceGetPowerUsage followed NVML_FI_DEV_POWER_") +
                      (to_average <= to_instant ? "AVERAGE" : "INSTANT") + " while the two differed";
  } else {
    c.reading = "1 s average";
    c.reading_basis = "the GPU gives NVML_FI_DEV_POWER_AVERAGE (Ampere except GA100, and newer, where NVML documents "
                      "the reading as a 1 s average); the power was too steady here to tell the two apart";
  }
}

std::string fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

namespace {

// "+74.9%" or "" without a ratio.
std::string ratio_text(const PowerCheck& c) {
  const auto r = c.ratio();
  if (!r) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (*r - 1));
  return buf;
}

}  // namespace

std::optional<double> PowerCheck::ratio() const {
  if (!counter_j || !reading_j || !(*counter_j > 0)) return std::nullopt;
  return *reading_j / *counter_j;
}

bool PowerCheck::disagrees() const {
  const auto r = ratio();
  return r && std::fabs(*r - 1) > kPowerCheckTolerance;
}

std::string PowerCheck::line() const {
  std::string s = "gpu" + std::to_string(index) + " power reading: " + reading + " (" + reading_basis + ")";
  if (!counter) return s + "; no energy counter to check it against";
  if (!counter_j) return s + "; the counter updated too seldom in " + fixed(window_s, 1) + " s to check it";
  s += "; over " + fixed(window_s, 2) + " s (" + load + "): counter " + fixed(*counter_j, 1) + " J, power reading integrated ";
  s += reading_j ? fixed(*reading_j, 1) + " J" : std::string("-");
  if (const auto r = ratio()) s += " (ratio " + fixed(*r, 3) + ")";
  if (instant_j) s += ", instantaneous field integrated " + fixed(*instant_j, 1) + " J";
  return s;
}

json PowerCheck::to_json() const {
  const auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  return {{"index", index},         {"name", name},         {"load", load},
          {"counter", counter},     {"window_s", window_s}, {"polls", polls},
          {"counter_updates", counter_updates}, {"counter_j", opt(counter_j)}, {"reading_j", opt(reading_j)},
          {"instant_j", opt(instant_j)}, {"ratio", opt(ratio())}, {"reading", reading},
          {"reading_basis", reading_basis}};
}

PowerCheck check_power_reading(const NvmlLibrary& lib, const NvmlLibrary::Gpu& gpu, double duration_s,
                               const std::string& load, double poll_s, TimeSource& clock) {
  PowerCheck c;
  c.index = gpu.index;
  c.name = gpu.name;
  c.load = load;
  const std::vector<Poll> polls = poll_gpu(lib, gpu, duration_s, poll_s, clock, c.counter);
  c.polls = static_cast<int64_t>(polls.size());
  tell_reading(polls, c);
  if (!c.counter || polls.size() < 3) return c;
  // The counter's first and last update seen: the counter's energy between them is exact to a poll.
  std::size_t first = 0, last = 0;
  for (std::size_t i = 1; i < polls.size(); ++i)
    if (polls[i].counter_mj != polls[i - 1].counter_mj) {
      if (!first) first = i;
      last = i;
      ++c.counter_updates;
    }
  if (c.counter_updates < 2) return c;
  c.window_s = polls[last].t_s - polls[first].t_s;
  c.counter_j = static_cast<double>(polls[last].counter_mj - polls[first].counter_mj) * 1e-3;
  c.reading_j = integrate(polls, first, last, [](const Poll& p) { return p.usage_w; });
  c.instant_j = integrate(polls, first, last, [](const Poll& p) { return p.instant_w; });
  return c;
}

std::optional<Hazard> power_check_hazard(const PowerCheck& c) {
  const auto r = ratio_text(c);
  if (!c.disagrees() || r.empty()) return std::nullopt;
  Hazard h;
  h.id = "gpu_power_reading_mismatch";
  h.what = "GPU " + std::to_string(c.index) + " (" + c.name + ")'s power reading and its energy counter disagree";
  h.evidence = c.line();
  h.fix = "trust the energy counter (balerbench's nvml meter differences it on every GPU that has one); energy "
          "integrated from nvmlDeviceGetPowerUsage (nvidia-smi, tools that poll power) is off by " + r +
          " on this GPU; where only polling is possible, integrate windows of many seconds (the reading is a " +
          c.reading + ")";
  return h;
}

}  // namespace balerbench
