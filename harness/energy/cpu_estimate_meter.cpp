// cpu_estimate_meter.cpp: see cpu_estimate_meter.h.
#include "harness/energy/cpu_estimate_meter.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "harness/energy/meter_registry.h"

namespace balerbench {

const std::vector<std::pair<std::string, double>>& cpu_tdp_table() {
  // Manufacturers' TDP per socket (W). The longest matching fragment wins.
  static const std::vector<std::pair<std::string, double>> kTable = {
      {"Xeon(R) Silver 4210", 85},    {"Xeon(R) Silver 4214", 85},    {"Xeon(R) Silver 4216", 100},
      {"Xeon(R) Gold 5218", 125},     {"Xeon(R) Gold 6130", 125},     {"Xeon(R) Gold 6148", 150},
      {"Xeon(R) Gold 6230", 125},     {"Xeon(R) Gold 6248", 150},     {"Xeon(R) Gold 6248R", 205},
      {"Xeon(R) Gold 6338", 205},     {"Xeon(R) Platinum 8168", 205}, {"Xeon(R) Platinum 8280", 205},
      {"Xeon(R) Platinum 8358", 250}, {"Xeon(R) Platinum 8380", 270}, {"Xeon(R) Platinum 8468", 350},
      {"Xeon(R) Platinum 8480", 350}, {"E5-2680 v4", 120},            {"E5-2690 v4", 135},
      {"E5-2698 v4", 135},            {"EPYC 7402", 180},             {"EPYC 7543", 225},
      {"EPYC 7713", 225},             {"EPYC 7742", 225},             {"EPYC 7763", 280},
      {"EPYC 7H12", 280},             {"EPYC 9554", 360},             {"EPYC 9654", 360},
      {"Ryzen 9 5950X", 105},         {"Ryzen 9 7950X", 170},         {"i7-12700K", 125},
      {"i9-13900K", 125}};
  return kTable;
}

CpuTdp resolve_cpu_tdp(const HostInfo& host, const std::optional<double>& configured_w) {
  CpuTdp t;
  const std::string sockets = std::to_string(host.sockets) + (host.sockets == 1 ? " socket" : " sockets");
  if (configured_w) {
    t.total_w = *configured_w * host.sockets;
    t.source = "config: cpu_tdp_w " + nlohmann::json(*configured_w).dump() + " W x " + sockets;
    return t;
  }
  const std::pair<std::string, double>* best = nullptr;
  for (const auto& row : cpu_tdp_table())
    if (host.cpu_model.find(row.first) != std::string::npos && (!best || row.first.size() > best->first.size()))
      best = &row;
  if (best) {
    t.total_w = best->second * host.sockets;
    t.source = "built-in table: " + best->first + " " + nlohmann::json(best->second).dump() + " W x " + sockets;
    return t;
  }
  t.total_w = 4.0 * host.logical_cpus;
  t.source = "fallback for an unknown CPU ('" + host.cpu_model + "'): 4 W x " + std::to_string(host.logical_cpus) +
             " logical CPUs (set energy.cpu_tdp_w for a better estimate)";
  return t;
}

MeterProbe CpuEstimateMeter::open(const EnergySettings& s, const std::string& proc_root, int pid, TimeSource& clock) {
  MeterProbe probe;
  const bool process_mode = s.cpu_estimate_mode == "process";
  if (!process_mode && read_proc_stat(proc_root).total == 0) {
    probe.unavailable_reason = "cannot read CPU times from " + proc_root + "/stat";
    return probe;
  }
  const HostInfo host = read_host_info(proc_root);
  const int root_pid = pid > 0 ? pid : static_cast<int>(getpid());
  probe.meter.reset(
      new CpuEstimateMeter(proc_root, root_pid, process_mode, host, resolve_cpu_tdp(host, s.meter_knobs.optional_number(kCpuTdpKey)), clock));
  return probe;
}

CpuEstimateMeter::CpuEstimateMeter(std::string proc_root, int pid, bool process_mode, HostInfo host, CpuTdp tdp,
                                   TimeSource& clock)
    : clock_(clock), proc_root_(std::move(proc_root)), pid_(pid), process_mode_(process_mode), host_(std::move(host)),
      tdp_(std::move(tdp)) {
  if (process_mode_) tree_.emplace(proc_root_, pid_, host_.logical_cpus);
  Domain d;
  d.name = "cpu";
  d.category = DomainCategory::kCpu;
  d.note = "TDP x utilisation (" + std::string(process_mode_ ? "process tree" : "whole machine") + ")";
  domains_.push_back(d);
  last_times_ = read_proc_stat(proc_root_);
  last_read_ = clock_.now();
}

double CpuEstimateMeter::utilisation_since_last(double dt_s) {
  if (tree_) return tree_->share(dt_s);
  const CpuTimes now = read_proc_stat(proc_root_);
  const unsigned long long total = now.total - last_times_.total;
  const double u = total > 0 && now.busy >= last_times_.busy
                       ? static_cast<double>(now.busy - last_times_.busy) / static_cast<double>(total)
                       : last_utilisation_;  // no tick yet: keep the last estimate
  last_times_ = now;
  return std::clamp(u, 0.0, 1.0);
}

MeterReading CpuEstimateMeter::read() {
  MeterReading r;
  r.time = clock_.now();
  const double dt_s = std::chrono::duration<double>(r.time - last_read_).count();
  const double u = utilisation_since_last(dt_s);
  last_read_ = r.time;
  last_utilisation_ = u;
  total_j_ += tdp_.total_w * u * dt_s;
  r.energy_j = {total_j_};
  return r;
}

nlohmann::json CpuEstimateMeter::describe() const {
  return {{"method", "TDP x utilisation"}, {"mode", process_mode_ ? "process" : "machine"},
          {"tdp_total_w", tdp_.total_w}, {"tdp_source", tdp_.source}, {"host", host_.to_json()},
          {"pid", process_mode_ ? nlohmann::json(pid_) : nlohmann::json(nullptr)}};
}

// This meter in the registry (meter_registry.cpp lists it).
namespace {

// Its own key, energy.cpu_tdp_w: absent (null) = the built-in table, else 4 W per logical CPU.
const KnobSection kCpuEstimateKnobs{
    [](Knobs& k) { k.set(kCpuTdpKey, nullptr); },
    [](StrictReader& r, Knobs& k) { read_optional_number_in(r, k, kCpuTdpKey, 0.1, 2000); },
    [] {
      return std::vector<ConfigKeyDoc>{
          {"/energy/cpu_tdp_w", "`cpu_estimate`: TDP per socket; else a built-in table, else 4 W per logical CPU",
           "table"}};
    }};

}  // namespace

const MeterEntry& cpu_estimate_meter_entry() {
  static const MeterEntry entry = {"cpu_estimate", MeterKind::kEstimated, "CPU: TDP x utilisation",
                                   [](const EnergySettings& s, TimeSource& clock) {
                                     return CpuEstimateMeter::open(s, "/proc", 0, clock);
                                   },
                                   &kCpuEstimateKnobs};
  return entry;
}

}  // namespace balerbench
