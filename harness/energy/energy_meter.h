// energy_meter.h: the interface every energy meter implements.
//
// A meter is a set of counters: read() returns the cumulative joules of each
// of its domains since the meter was opened, with a steady-clock timestamp.
// The energy of a window is the difference of two reads (energy_window.h).
// Meters that have no hardware counter (power polling, estimates, the
// simulator) integrate power between consecutive reads, so they are as fine
// as the Sampler's rate. Reads are not thread-safe: the Sampler serialises them.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/base/clock.h"

namespace balerbench {

class ProcessTree;

// How a meter knows its joules; every report carries it.
enum class MeterKind { kMeasured, kEstimated, kSimulated };
const char* meter_kind_name(MeterKind kind);

// What a domain's energy belongs to (CodeCarbon's cpu/gpu/ram columns; wall
// power from an external meter is reported beside them, never added to them).
enum class DomainCategory { kCpu, kGpu, kRam, kWall };
const char* domain_category_name(DomainCategory category);

struct Domain {
  std::string name;  // "gpu0", "package-0", "core-0", "dram-0", "psys", "cpu", "ram", "wall"
  DomainCategory category = DomainCategory::kCpu;
  // False when another domain already contains this one (core inside package),
  // so totals never count the same joule twice. `note` says why.
  bool in_total = true;
  std::string note;
};

struct MeterReading {
  SteadyClock::time_point time;
  std::vector<double> energy_j;  // cumulative per domain, in domains() order
  // Cumulative failed reads of the meter's counters or sensors (a lost permission, a lost GPU). A
  // failed read counts no energy for its stretch, so a window with any is flagged.
  long long read_errors = 0;
  // Non-empty when a device this meter reads is gone for good (a GPU lost from the bus): what and
  // which. EnergySession::mark() turns it into MeterLost, since no later window can be measured.
  std::string lost;
  // Stepped counters (NVML's total energy): the energy spent since the counter's last update, which
  // it does not hold yet, estimated from the polled power and the time since that update, and the
  // ± of that estimate; per domain, or empty when the meter does not estimate it. Windows shorter
  // than 10 update periods add it at their edges (energy_window.cpp).
  std::vector<double> pending_j, pending_uncertainty_j;
  // Per-process use of a device, for the energy attributable to the measured process tree (T7): per
  // domain, cumulative since the meter opened, the use sampled for processes of the tree and for every
  // process (NVML: the sum of the SM-utilisation percentages of its per-process samples). Empty when
  // the meter does not sample per-process use.
  std::vector<double> tree_use, all_use;
  long long use_samples = 0;  // per-process samples taken so far (all domains)
  // Device memory in use at this read, per domain (NVML: the GPU's framebuffer memory used by every
  // process, CUDA contexts included); NaN where a read failed, empty when the meter does not read it.
  std::vector<double> memory_used_bytes;
  // A device's heat at this read, per domain (NVML: its temperature, SM clock and throttle-reason
  // bits), NaN or -1 where the read failed; empty when the meter does not read them. A window holds
  // the hottest, the slowest clock and every reason seen at its reads (energy_window.h).
  struct DeviceThermal {
    double temperature_c = std::numeric_limits<double>::quiet_NaN();
    double sm_clock_mhz = std::numeric_limits<double>::quiet_NaN();
    long long throttle_mask = -1;
  };
  std::vector<DeviceThermal> thermal;
};

// How far a window's energy from a meter can be off, from what the meter's counters can resolve: the
// basis of every window's ± (energy_window.cpp). A counter read at a window's edge lags by up to one
// update period, so each window's edge error is at most (power at the edge) x update_period_s, plus
// one count at each edge; a stated accuracy adds `accuracy_fraction` of the energy. Estimates carry a
// model error that is not known: `quantified` is false for them, and no ± is given.
struct EdgeModel {
  bool quantified = true;
  double update_period_s = 0;      // counter or sensor refresh (a wattmeter: its sample period)
  bool period_measured = false;    // measured when the meter opened, not a datasheet value
  double step_j = 0;               // one count of the counter
  double accuracy_fraction = 0;    // stated accuracy of the instrument (0: none stated)
  bool accuracy_stated = false;
  bool stepped = false;            // reads give the value of the last update (interpolate short windows)
  std::string basis;               // one line: what the ± rests on
  nlohmann::json to_json() const;
};

// A meter's device is gone mid-run (NVML_ERROR_GPU_IS_LOST): the run in progress cannot be measured.
class MeterLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class EnergyMeter {
 public:
  virtual ~EnergyMeter() = default;
  virtual std::string name() const = 0;  // registry name: "nvml", "rapl", ...
  virtual MeterKind kind() const = 0;
  virtual const std::vector<Domain>& domains() const = 0;
  virtual MeterReading read() = 0;
  // Seconds between updates of the underlying counter or sensor; windows
  // shorter than this cannot be trusted and are flagged.
  virtual double update_period_s() const = 0;
  // Longest safe gap between reads before a counter can wrap unnoticed
  // (RAPL); infinity when the counter cannot wrap.
  virtual double max_read_interval_s() const { return std::numeric_limits<double>::infinity(); }
  // Device facts and method: names, UUIDs, limits, TDP and its source, ...
  virtual nlohmann::json describe() const { return nlohmann::json::object(); }
  // What the ± of its windows rests on. The default: measured meters lag by update_period_s() and
  // resolve the joule finely; estimated and simulated meters are not quantified.
  virtual EdgeModel edge_model() const;
  // The process tree whose share of the device's use the meter samples (MeterReading::tree_use), for
  // meters that sample per-process use; the others ignore it. Called before sampling starts; the tree
  // is read under the same lock as the meters.
  virtual void attribute_to(std::shared_ptr<const ProcessTree> tree) { (void)tree; }
};

// A meter, or why it cannot be used here (one line, with the fix where there is one).
struct MeterProbe {
  std::unique_ptr<EnergyMeter> meter;
  std::string unavailable_reason;
  bool available() const { return meter != nullptr; }
};

}  // namespace balerbench
