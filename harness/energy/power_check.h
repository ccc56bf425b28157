// power_check.h: doctor's check of a GPU's two power signals against each other over a short
// stretch: the total-energy counter (what balerbench's NVML meter differences) and the power reading
// nvmlDeviceGetPowerUsage gives (what tools that poll power integrate: CodeCarbon's fallback,
// nvidia-smi, older meters). They need not agree: on Ampere (except GA100) and newer the reading is
// a 1 s average, on older GPUs instantaneous, and zeus#181 found them 1.7x apart over 5 s at idle on
// one GPU (187 J by the counter, 327 J integrated). The check polls both every few milliseconds,
// takes the stretch between the counter's first and last update, and integrates the reading over
// exactly that stretch (trapezoids); it also says which reading the driver gives, from
// nvmlDeviceGetFieldValues' NVML_FI_DEV_POWER_AVERAGE and NVML_FI_DEV_POWER_INSTANT polled beside it.
// Only getters are called.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>

#include "harness/base/clock.h"
#include "harness/energy/hazards.h"
#include "harness/energy/nvml_library.h"

namespace balerbench {

struct PowerCheck {
  unsigned index = 0;
  std::string name;
  std::string load;             // what ran on the GPU meanwhile ("idle", "matrix products on CUDA")
  bool counter = false;         // the GPU has an energy counter
  double window_s = 0;          // from the counter's first update seen to its last
  int64_t polls = 0, counter_updates = 0;
  std::optional<double> counter_j, reading_j, instant_j;  // over the window; instant_j: the instant field
  std::string reading;          // "1 s average", "instantaneous", "not determined"
  std::string reading_basis;    // how that was told
  std::optional<double> ratio() const;  // reading_j / counter_j
  bool disagrees() const;               // |ratio - 1| > kPowerCheckTolerance
  std::string line() const;             // one line for doctor's checked list
  nlohmann::json to_json() const;
};

// Readings integrated over the window may differ from the counter by this much before doctor calls it
// a hazard: a few polls' worth of a 1 s average's lag at the edges of a steady load.
constexpr double kPowerCheckTolerance = 0.10;

// Polls GPU `gpu` for `duration_s` (every `poll_s`, on `clock`); `load` names what runs on it meanwhile.
PowerCheck check_power_reading(const NvmlLibrary& lib, const NvmlLibrary::Gpu& gpu, double duration_s,
                               const std::string& load, double poll_s = 0.005, TimeSource& clock = real_clock());

// The hazard doctor lists when the check disagrees (gpu_power_reading_mismatch); empty when it agrees
// or could not be made.
std::optional<Hazard> power_check_hazard(const PowerCheck& c);

}  // namespace balerbench
