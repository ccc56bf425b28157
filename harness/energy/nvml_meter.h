// nvml_meter.h: GPU energy through NVML, one domain per visible GPU ("gpu0").
//
// Volta and newer: the total-energy counter (mJ since the driver loaded,
// updated about every 100 ms), its rises summed from one read to the next since open(). A read
// below the one before is no reading (the counter stepped back): it counts as a failed read, and the
// windows that hold it are flagged, as any failed read's are.
// Older GPUs, or where the counter is not supported: power polling,
// integrated with the trapezoid rule between consecutive reads, so the
// Sampler's rate sets its resolution (on Ampere and newer the reading is
// itself a 1 s average; update_period_s() is 1 s in that mode).
// describe() records name, UUID, driver, the power limit in force and its
// constraints, temperature, SM clock and throttle reasons, read when called. Every read also takes
// the temperature, SM clock and throttle reasons (MeterReading::thermal), so that each window knows
// how hot and how throttled the GPU was while it ran.
//
// The counter's update period is measured when the meter opens: the counter is
// polled every 1 ms for up to 0.6 s and the intervals between its changes give the period and the
// moment of an update (the phase). Every later read that sees the counter change refines the phase
// (an update fell between that read and the one before), and every read polls the power too, so a
// read can say how much energy the counter does not hold yet: power x time since the last update
// (MeterReading::pending_j). Short windows use it at their edges (energy_window.cpp).
//
// With a process tree to attribute to (attribute_to), every read also takes the per-process SM
// utilisation samples NVML recorded since the last read (nvmlDeviceGetProcessUtilization): the sum of
// the tree's smUtil and of every process's is MeterReading::tree_use / all_use, so a window's GPU
// energy times the tree's share of SM use is what it can be held to (AIPowerMeter's
// nvidia_attributable_power). NVML keeps one sample per process and driver period; a read rate
// slower than that period skips samples of every process alike.
//
// Time (reads, the start-up probe's polls, the Unix time of the first sample attributed) comes from
// the TimeSource open() is given.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/energy/energy_meter.h"
#include "harness/energy/nvml_library.h"

namespace balerbench {

class NvmlMeter : public EnergyMeter {
 public:
  static MeterProbe open(TimeSource& clock = real_clock());

  std::string name() const override { return "nvml"; }
  MeterKind kind() const override { return MeterKind::kMeasured; }
  const std::vector<Domain>& domains() const override { return domains_; }
  MeterReading read() override;
  double update_period_s() const override;
  nlohmann::json describe() const override;
  EdgeModel edge_model() const override;
  void attribute_to(std::shared_ptr<const ProcessTree> tree) override;

  struct Device {
    NvmlLibrary::Gpu gpu;
    bool counter = false;             // energy counter, else power polling
    unsigned long long start_mj = 0;  // counter at open()
    // The counter's rises since open(), summed read to read: a read below the one before (the counter
    // stepped back: a driver reset or a bug) adds nothing and counts as a failed read, so that no
    // window ever sums a fall as negative energy, and counting goes on from the lower value.
    unsigned long long counted_mj = 0;
    long long steps_back = 0;
    double last_power_w = 0;          // polling: the previous reading
    double total_j = 0;
    long long read_errors = 0;
    bool lost = false;  // NVML_ERROR_GPU_IS_LOST: gone until the machine is fixed
    // The counter's timing (energy counter only): measured period, and an update's moment.
    double period_s = 0;                   // 0: not measured (the counter did not change while probed)
    SteadyClock::time_point anchor;        // a moment the counter updated
    double anchor_error_s = 0;             // ± of `anchor`
    double period_error_s = 0;             // half the spread of the probed intervals
    unsigned long long last_mj = 0;        // the counter at the previous read
    SteadyClock::time_point last_time;     // when the previous read's counter call began
    double last_power_read_w = 0;          // the power polled at the previous read
    std::string period_note;               // how the period was found
    // Per-process SM use (attribution to the process tree): cumulative smUtil of the tree's samples
    // and of every sample, the newest sample's timestamp, and why it is not sampled when it is not.
    double tree_sm_use = 0, all_sm_use = 0;
    long long use_samples = 0;
    unsigned long long last_seen_us = 0;
    std::string use_unavailable;
  };

 private:
  NvmlMeter(std::shared_ptr<NvmlLibrary> lib, std::vector<Device> devices, std::string selection, TimeSource& clock);
  void sample_process_use(Device& d);
  // read()'s parts, per GPU: the energy counter (and, with its update phase known, the energy
  // pending since its last update), or the power polled and integrated; then its memory, its
  // per-process use, its errors and whether it is lost.
  void read_counter(Device& d, SteadyClock::time_point reading_time, std::vector<double>& pending,
                    std::vector<double>& pending_u);
  void read_power_poll(Device& d, double dt_s);
  void add_device_state(Device& d, MeterReading& r);
  static void track_counter(Device& d, unsigned long long mj, SteadyClock::time_point before,
                            SteadyClock::time_point now);
  std::shared_ptr<NvmlLibrary> lib_;
  TimeSource& clock_;
  std::vector<Device> devices_;
  std::vector<Domain> domains_;
  std::string selection_;
  SteadyClock::time_point last_read_;
  std::shared_ptr<const ProcessTree> tree_;
};

}  // namespace balerbench
