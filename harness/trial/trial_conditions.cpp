// trial_conditions.cpp: see trial_conditions.h.
#include "harness/trial/trial_conditions.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>
#include <vector>

#include "harness/base/clock.h"
#include "harness/energy/gpu_watch.h"
#include "harness/energy/nvml_library.h"
#include "harness/power/power_limit.h"
#include "harness/trial/trial_stages.h"

namespace balerbench {
namespace {

using nlohmann::json;

// Throttle-reason names that mean the GPU ran slower for power or for heat.
bool is_power_reason(const std::string& name) {
  for (const auto& n : throttle_reason_names(kThrottlePowerBits))
    if (n == name) return true;
  return false;
}
bool is_thermal_reason(const std::string& name) {
  for (const auto& n : throttle_reason_names(kThrottleThermalBits))
    if (n == name) return true;
  return false;
}

// The names in `reasons` (a JSON list) that `keep` selects, joined by ", ".
template <typename Keep>
std::string selected(const json& reasons, Keep keep) {
  std::string s;
  if (!reasons.is_array()) return s;
  for (const auto& r : reasons)
    if (r.is_string() && keep(r.get<std::string>())) s += (s.empty() ? "" : ", ") + r.get<std::string>();
  return s;
}

void add_reason(std::string& all, const std::string& reason) { all += (all.empty() ? "" : "; ") + reason; }

}  // namespace

void choose_max_power(const TrialProtocol& ex, const TrialContext& ctx, bool simulated_gpu, HardwareSetup& hw) {
  if (ctx.gpus) hw.gpu_limits = ctx.gpus->limits_json();
  if (ex.max_power_w) {
    hw.max_power_w = ex.max_power_w;
    hw.max_power_source = "cost.max_power_w";
  } else if (ctx.power) {
    double max_w = 0;
    for (std::size_t i = 0; i < ctx.power->count(); ++i) max_w += ctx.power->constraints_w(i).second;
    hw.max_power_w = max_w;
    hw.max_power_source = "gpu_max_limit";
    hw.max_power_gpus = static_cast<int64_t>(ctx.power->count());
  } else if (simulated_gpu) {
    return;  // the caller sets the simulated GPU's (prepare_hardware knows its spec)
  } else if (ctx.gpus) {
    hw.max_power_w = ctx.gpus->max_power_w();
    if (hw.max_power_w) {
      hw.max_power_source = "gpu_max_limit";
      hw.max_power_gpus = static_cast<int64_t>(ctx.gpus->count());
    }
  }
}

ThermalWait wait_for_cool_gpus(const ThermalSettings& s, const TrialContext& ctx) {
  const GpuWatch* gpus = ctx.gpus;
  const auto t0 = SteadyClock::now();
  ThermalClock clock{[t0] { return seconds_since(t0); },
                     [&ctx](double seconds) {
                       const auto until = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                                   std::chrono::duration<double>(seconds));
                       while (SteadyClock::now() < until) {
                         check_stop(ctx.stop);
                         const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - SteadyClock::now());
                         std::this_thread::sleep_for(std::min(std::chrono::milliseconds(100), left));
                       }
                       check_stop(ctx.stop);
                     }};
  std::string why = gpus ? "" : "no NVML GPU";
  ThermalWait w = wait_until_cool(
      s, [gpus, &why]() { return gpus ? gpus->hottest_c(&why) : std::nullopt; }, clock);
  if (w.ended == ThermalWait::Ended::kNoTemperature) {
    w.no_temperature_why = why;
    // Said at once: a GPU whose temperature cannot be read makes every trial start unwaited, and flagged.
    if (gpus)
      std::fprintf(stderr, "balerbench: warning: thermal protocol: %s; this trial starts without the wait and is "
                   "flagged\n", w.ended_text(s).c_str());
  }
  return w;
}

json thermal_record(const std::optional<ThermalWait>& wait, const ThermalSettings& s, const json& start,
                    const json& end, const json& windows) {
  if (!wait && start.is_null() && end.is_null() && windows.is_null()) return nullptr;
  return {{"wait", wait ? wait->to_json(s) : json(nullptr)},
          {"start", start},
          {"end", end},
          {"windows", windows}};
}

json thermal_windows(const json& energy_report) {
  if (!energy_report.is_object() || !energy_report.contains("phases") || !energy_report["phases"].is_array())
    return nullptr;
  json out = json::object();
  for (const auto& w : energy_report["phases"]) {
    WindowThermal all;
    std::vector<std::string> names;  // throttle reasons seen on any GPU, first-seen order
    bool any = false;
    for (const auto& d : w.value("domains", json::array())) {
      if (!d.is_object() || !d.contains("thermal") || !d["thermal"].is_object()) continue;
      const json& th = d["thermal"];
      any = true;
      WindowThermal one;
      if (th.contains("max_temperature_c") && th["max_temperature_c"].is_number())
        one.max_temperature_c = th["max_temperature_c"].get<double>();
      if (th.contains("min_sm_clock_mhz") && th["min_sm_clock_mhz"].is_number())
        one.min_sm_clock_mhz = th["min_sm_clock_mhz"].get<double>();
      all.add(one);
      for (const auto& r : th.value("throttle_reasons", json::array()))
        if (r.is_string() && std::find(names.begin(), names.end(), r.get<std::string>()) == names.end())
          names.push_back(r.get<std::string>());
    }
    if (!any) continue;
    json entry = all.to_json();
    entry["throttle_reasons"] = names;
    out[w.value("phase", std::string("window"))] = entry;
  }
  return out.empty() ? json(nullptr) : out;
}

json thermal_disturbance(const json& thermal, bool trial_sets_power_limit) {
  if (!thermal.is_object()) return nullptr;
  std::string reason;
  const json wait = thermal.value("wait", json());
  if (wait.is_object() && wait.value("ended", std::string()) == "max_wait")
    add_reason(reason, "started hot: " + wait.value("reason", std::string("still hot after the maximum wait")));
  // The protocol was asked for and could not be kept: nothing says the GPU was cool.
  if (wait.is_object() && wait.value("ended", std::string()) == "no_temperature")
    add_reason(reason, "not waited for a cool GPU: " + wait.value("reason", std::string("no GPU temperature")));
  for (const auto& g : thermal.value("start", json::array())) {
    if (!g.is_object()) continue;
    const std::string hot = selected(g.value("throttle_reasons", json()), is_thermal_reason);
    if (!hot.empty()) add_reason(reason, "started throttled: gpu" + std::to_string(g.value("index", 0)) + " " + hot);
  }
  // The windows grouped by the reasons they saw: "throttled during train, compress: sw_power_cap".
  std::vector<std::pair<std::string, std::string>> seen_in;  // reasons, phases
  const json windows = thermal.value("windows", json::object());
  std::vector<std::string> phases;  // in the order they ran, then any other (JSON keeps keys sorted)
  for (const char* p : {"train", "evaluation", "compress", "decompress"})
    if (windows.is_object() && windows.contains(p)) phases.emplace_back(p);
  if (windows.is_object())
    for (const auto& [phase, w] : windows.items())
      if (std::find(phases.begin(), phases.end(), phase) == phases.end()) phases.push_back(phase);
  for (const std::string& phase : phases) {
    const json& w = windows[phase];
    if (!w.is_object()) continue;
    const std::string seen = selected(w.value("throttle_reasons", json()), [&](const std::string& n) {
      return is_thermal_reason(n) || (is_power_reason(n) && !(trial_sets_power_limit && n == "sw_power_cap"));
    });
    if (seen.empty()) continue;
    auto it = std::find_if(seen_in.begin(), seen_in.end(), [&](const auto& p) { return p.first == seen; });
    if (it == seen_in.end()) seen_in.push_back({seen, phase});
    else it->second += ", " + phase;
  }
  for (const auto& [seen, phases] : seen_in) add_reason(reason, "throttled during " + phases + ": " + seen);
  return {{"disturbed", !reason.empty()}, {"reason", reason.empty() ? json(nullptr) : json(reason)}};
}

json meter_updates_record(const std::optional<MeterUpdates>& train, const std::optional<MeterUpdates>& eta,
                          const std::optional<MeterUpdates>& compress, const std::optional<MeterUpdates>& decompress,
                          int64_t min_updates) {
  const std::optional<MeterUpdates>* any = nullptr;
  for (const auto* u : {&train, &eta, &compress, &decompress})
    if (u->has_value()) any = u;
  if (!any) return nullptr;
  const auto count = [](const std::optional<MeterUpdates>& u) { return u ? json(u->count) : json(nullptr); };
  return {{"train", count(train)},
          {"eta", count(eta)},
          {"compress", count(compress)},
          {"decompress", count(decompress)},
          {"min", min_updates},
          {"meter", (*any)->meter},
          {"period_s", (*any)->period_s}};
}

}  // namespace balerbench
