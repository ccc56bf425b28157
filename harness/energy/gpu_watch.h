// gpu_watch.h: the visible NVIDIA GPUs as a sweep reads them between and around its trials, read
// only: their power-limit constraints (the Zeus cost's MaxPower, whatever the sweep's axes), and
// their temperature, SM clock and throttle reasons (the thermal protocol: the state at each trial's
// start and end, and the wait for a cool GPU before it). Only NVML's getters are called; a limit,
// clock or mode is never set here (harness/power sets limits, and only when an experiment allows it).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/energy/nvml_library.h"

namespace balerbench {

class GpuWatch {
 public:
  // nullptr with `reason` when NVML cannot be loaded or sees no GPU this process may use.
  static std::unique_ptr<GpuWatch> open(std::string& reason);

  std::size_t count() const { return gpus_.size(); }
  const std::vector<NvmlLibrary::Gpu>& gpus() const { return gpus_; }

  // Per GPU: index, uuid, name and NvmlLibrary::Limits (constraints, default, enforced).
  nlohmann::json limits_json() const;
  // The sum of the GPUs' maximum power limits (Zeus's MaxPower x GPU count); empty when a GPU's is
  // not known.
  std::optional<double> max_power_w() const;

  // Per GPU: index, uuid and NvmlLibrary::Thermal (temperature, SM clock, throttle reasons), now.
  nlohmann::json thermal_json() const;
  // The hottest GPU's temperature now; empty when a GPU's cannot be read (an NVML error, or a value no
  // sensor gives: gpu_temperature_c), with `why` saying which GPU and what, so that a wait for cool
  // GPUs never ends believing one that does not answer is cool.
  std::optional<double> hottest_c(std::string* why = nullptr) const;

 private:
  std::shared_ptr<NvmlLibrary> lib_;
  std::vector<NvmlLibrary::Gpu> gpus_;
};

}  // namespace balerbench
