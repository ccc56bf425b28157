// trial_conditions.h: the conditions a trial ran under that a reviewer asks about before trusting
// its energy (docs/energy.md, "A published comparison"):
//
//   - MaxPower of the Zeus cost, and where it came from: cost.max_power_w, the GPUs' maximum power
//     limit read from NVML (read only, whatever the sweep's axes), or the simulated GPU's;
//   - the thermal protocol: the wait for a cool GPU before the trial (energy.thermal), the GPUs'
//     temperature, SM clock and throttle reasons at its start and end, and the hottest, slowest and
//     every throttle reason seen in each measured window (sampled with the meter); a trial that
//     started hot, or throttled for power or temperature, is disturbed, with the reason;
//   - the meter updates inside each energy figure's window, against the threshold of a short one.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <optional>
#include <string>

#include "harness/energy/energy_session.h"
#include "harness/energy/thermal_wait.h"
#include "harness/trial/trial_spec.h"
#include "harness/trial/trial.h"

namespace balerbench {

struct HardwareSetup;

// Sets hw.max_power_w, max_power_source and max_power_gpus: cost.max_power_w; else the NVML GPUs whose
// limits the sweep may set (ctx.power); else the simulated GPU's maximum limit (a simulated_gpu
// meter); else the visible NVML GPUs' maximum limits, read only (ctx.gpus). Also hw.gpu_limits.
void choose_max_power(const TrialProtocol& ex, const TrialContext& ctx, bool simulated_gpu, HardwareSetup& hw);

// The thermal protocol's wait before a trial, on the hottest visible GPU; a stop signal ends it
// (Interrupted). Without NVML GPUs, or when a GPU's temperature cannot be read (a failed read, or a
// value no sensor gives), the result says there was no temperature to wait on, and why; a failed read
// is warned about on stderr at once.
ThermalWait wait_for_cool_gpus(const ThermalSettings& s, const TrialContext& ctx);

// result.thermal: {"wait", "start", "end", "windows"}; null when there is nothing (no NVML GPU).
// `windows`: read_energy's thermal_windows.
nlohmann::json thermal_record(const std::optional<ThermalWait>& wait, const ThermalSettings& s,
                              const nlohmann::json& start, const nlohmann::json& end, const nlohmann::json& windows);

// Per phase of the energy session's report (report()["phases"]): over its GPU domains, the hottest
// temperature, the slowest SM clock and every throttle reason seen; null when no domain read them.
nlohmann::json thermal_windows(const nlohmann::json& energy_report);

// result.disturbance.thermal: {"disturbed", "reason"} from result.thermal: the GPU still hot after
// the thermal protocol's maximum wait, no temperature to wait on (the protocol was asked for and not
// kept), a thermal throttle reason at the start, or a power or thermal
// throttle reason in a measured window (sw_power_cap not counted when the trial set a power limit
// itself: that is the experiment). Null when `thermal` is null.
nlohmann::json thermal_disturbance(const nlohmann::json& thermal, bool trial_sets_power_limit);

// result.meter_updates: {"train", "eta", "compress", "decompress", "min", "meter", "period_s"}; null
// when no figure had a measuring meter.
nlohmann::json meter_updates_record(const std::optional<MeterUpdates>& train, const std::optional<MeterUpdates>& eta,
                                    const std::optional<MeterUpdates>& compress,
                                    const std::optional<MeterUpdates>& decompress, int64_t min_updates);

}  // namespace balerbench
