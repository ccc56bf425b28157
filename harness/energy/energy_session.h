// energy_session.h: everything one command measures: its meters and sampler,
// the optional idle baseline, named windows added up into phases, carbon, and
// the outputs (energy_report.json, emissions.csv, a printed summary).
//
//   EnergySession s(settings, sync);   // opens meters, measures idle, starts sampling
//   auto a = s.mark(); ...work...; s.add_window("train", a, s.mark());
//   s.finish(); s.write_outputs(dir, "train");
//
// mark() synchronises the device first (`sync`, e.g. torch::cuda::synchronize)
// so a window holds exactly the work dispatched inside it. The meters, the sampler and the idle
// baseline's wait run on the TimeSource the session is given (the real clocks unless a test's).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "harness/energy/carbon.h"
#include "harness/energy/energy_settings.h"
#include "harness/energy/energy_window.h"
#include "harness/energy/host_info.h"
#include "harness/energy/meter_registry.h"

namespace balerbench {

// A GPU that a meter measures: from NVML (name, UUID, the power limit in force) or the simulated
// GPU's model.
struct GpuLabel {
  std::string name, uuid;
  std::optional<double> power_limit_w;
  bool simulated = false;
  std::string display() const { return simulated ? name + " (SIMULATED)" : name; }
};
// The GPUs of a list of meters as report() gives it ([{"name", "details"}, ...]). The one place that
// knows which meters measure GPUs and where their details keep the names.
std::vector<GpuLabel> gpu_labels(const nlohmann::json& meters);

class EnergySession {
 public:
  // `run_id` names the run in every output (a fresh UUID when empty); `clock` outlives the session.
  EnergySession(const EnergySettings& settings, std::function<void()> sync = nullptr, std::string run_id = "",
                TimeSource& clock = real_clock());
  ~EnergySession();

  Snapshot mark();
  // Adds the window [a, b] to phase `phase` and returns it.
  WindowResult add_window(const std::string& phase, const Snapshot& a, const Snapshot& b);
  // A window not added to any phase.
  WindowResult window(const std::string& name, const Snapshot& a, const Snapshot& b) const;
  // The same from the two snapshots' counters alone, without the sampler's
  // series (so no peak power): cheap enough for every epoch of a long run.
  WindowResult counter_window(const std::string& name, const Snapshot& a, const Snapshot& b) const;

  // Stops sampling and closes the whole-session window ("total").
  void finish();

  const PhaseTotals& phases() const { return phases_; }
  const WindowResult& total() const { return total_; }
  const CarbonIntensity& carbon() const { return carbon_; }
  const Sampler& sampler() const { return *sampler_; }
  // Every snapshot from now on also goes to `listener` (live metrics, exporters).
  int add_listener(Sampler::Listener listener) { return sampler_->add_listener(std::move(listener)); }
  void remove_listener(int id) { sampler_->remove_listener(id); }
  const std::optional<IdleBaseline>& baseline() const { return baseline_; }

  nlohmann::json report() const;
  // DIR/energy_report.json (replaced) and DIR/emissions.csv (rows appended); returns the report written.
  nlohmann::json write_outputs(const std::string& dir, const std::string& command) const;
  const std::string& run_id() const { return run_id_; }
  // The GPUs this session's meters measure, read now (power limits as in force).
  std::vector<GpuLabel> gpus() const;
  // The fewest meter updates a phase may hold before finish() flags it short (EnergySettings).
  int64_t min_meter_updates() const { return settings_.min_meter_updates; }

 private:
  EnergySettings settings_;
  std::function<void()> sync_;
  MeterSet opened_;  // meters moved into the sampler; `skipped` kept for the report
  std::unique_ptr<Sampler> sampler_;
  CarbonIntensity carbon_;
  HostInfo host_;
  std::optional<IdleBaseline> baseline_;
  std::string baseline_refused_;  // why an idle baseline taken on a busy machine was not used
  Snapshot start_;
  PhaseTotals phases_;
  WindowResult total_;
  bool finished_ = false;
  std::string run_id_;
};

// A random (version 4) UUID naming one command's run in reports, CSV rows and live metrics.
std::string make_run_id();

// One line per phase of a report(): duration, energy, mean power, CO2, kinds, flags.
void print_energy_summary(const nlohmann::json& report, std::FILE* out);
// What an estimated meter of a report's "meters" ({name, kind, details}) assumes, in one phrase ("CPU
// 8.00 W TDP (fallback for an unknown CPU ...) x the whole machine's CPU utilisation"); "" for a
// measured or simulated meter. estimate_assumptions: every estimated meter's, joined by "; ".
std::string estimate_assumption(const nlohmann::json& meter);
std::string estimate_assumptions(const nlohmann::json& meters);

// A window's T7 line from its JSON ("cpu 12.3 J ± 0.4 J of 40.1 J (31% of the busy CPU time); gpu
// ..."): the part of each category's energy attributable to the measured process tree, beside the
// absolute figure. Empty when the window has no attribution.
std::string attribution_summary(const nlohmann::json& window);

// Energy figures as people read them: "12.3 J", "4.56 kJ", "1.2 MJ".
std::string format_energy(double joules);
// Grams as "1.23 g", "456 mg", "7.8 kg".
std::string format_mass_g(double grams);

}  // namespace balerbench
