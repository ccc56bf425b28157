// hazards.cpp: see hazards.h.
#include "harness/energy/hazards.h"

#include "common/text.h"
#include "harness/energy/rapl_meter.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "harness/base/blas_kernel.h"
#include "harness/base/proc_fs.h"

namespace balerbench {
namespace {

std::string fixed(double v, int digits = 2) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// "CPU 3" or "CPUs 0-1,3".
std::string cpus_text(const std::vector<int>& cpus) {
  return (cpus.size() == 1 ? "CPU " : "CPUs ") + cpu_list_text(cpus);
}

// blas_hazard()'s text carries its fix after "Fix: ".
void add_blas(const HazardProbe& p, HazardReport& r) {
  if (p.blas_hazard.empty()) {
    r.notes.push_back("blas: no generic-kernel hazard");
    return;
  }
  Hazard h{"blas_generic_kernel", "OpenBLAS runs a generic kernel", p.blas_hazard,
           "see docs/doctor.md (a generic BLAS kernel)"};
  const auto at = p.blas_hazard.find("Fix: ");
  if (at != std::string::npos) {
    h.evidence = p.blas_hazard.substr(0, at);
    h.fix = p.blas_hazard.substr(at + 5);
    while (!h.evidence.empty() && (h.evidence.back() == ' ' || h.evidence.back() == '.')) h.evidence.pop_back();
  }
  r.hazards.push_back(h);
}

void add_governor(const CpuGovernors& g, HazardReport& r) {
  if (!g.exposed()) {
    r.notes.push_back("cpu governor: not exposed (no cpu*/cpufreq/scaling_governor under " + g.root +
                      ": a VM or a container, where the host decides)");
    return;
  }
  const std::string driver = g.driver.empty() ? "" : "; driver " + g.driver;
  const auto powersave = g.by_name.find("powersave");
  if (powersave == g.by_name.end()) {
    std::vector<std::string> parts;
    for (const auto& [name, cpus] : g.by_name) parts.push_back(name + " on " + cpus_text(cpus));
    r.notes.push_back("cpu governor: " + joined(parts, ", ") + driver);
    return;
  }
  r.hazards.push_back(
      {"cpu_governor_powersave", "the CPU frequency governor is powersave",
       "scaling_governor is powersave on " + cpus_text(powersave->second) + " (" +
           std::to_string(powersave->second.size()) + " of " + std::to_string(g.cpus()) + driver + ")",
       "sudo cpupower frequency-set -g performance (or write performance to " + g.root +
           "/cpu*/cpufreq/scaling_governor); on a cluster ask for it, e.g. Slurm's --cpu-freq=performance"});
}

void add_cpu_load(const CpuLoad& l, HazardReport& r) {
  if (!l.valid) {
    r.notes.push_back("cpu load: not sampled (" + l.reason + ")");
    return;
  }
  const std::string window = " over " + fixed(l.window_s) + " s";
  std::string load = fixed(l.other_cores) + " cores busy with other processes" + window + " (" +
                     std::to_string(l.cpus) + " CPUs)";
  if (l.other_cores > kOtherCpuHazardCores) {
    std::vector<std::string> top;
    for (const auto& p : l.top) top.push_back(p.name + " (pid " + std::to_string(p.pid) + ") " + fixed(p.cores));
    if (!top.empty()) load += "; top: " + joined(top, ", ");
    r.hazards.push_back({"cpu_busy", "other processes keep the CPUs busy", load,
                         "stop them or wait for them, or run on an idle machine or an exclusive allocation "
                         "(Slurm's --exclusive); times and CPU energy would include their share"});
  } else {
    r.notes.push_back("cpu load: " + load + ", below the " + fixed(kOtherCpuHazardCores) + "-core threshold");
  }
  const std::string steal = "steal " + fixed(l.steal_cores) + " cores" + window + " (/proc/stat)";
  if (l.steal_cores >= kStealHazardCores)
    r.hazards.push_back({"cpu_steal", "the hypervisor gives this VM's CPU time to other guests", steal,
                         "use a dedicated (not overcommitted) instance or bare metal; otherwise repeat trials and "
                         "report their spread"});
  else if (l.steal_cores > 0)
    r.notes.push_back("cpu steal: " + steal + ", below the " + fixed(kStealHazardCores) + "-core threshold");
}

std::string gpu_label(const NvmlLibrary::GpuState& g) {
  return "GPU " + std::to_string(g.index) + " (" + g.name + ")";
}

// NVML's throttle-reason bits, grouped as the hazards are.
struct ThrottleKind {
  unsigned long long bits;
  const char* id;
  const char* what;  // after the GPU's label
  const char* fix;
};
const ThrottleKind kThrottleKinds[] = {
    {0x20 | 0x40, "gpu_thermal_throttle", "is slowed down for heat",
     "let it cool and check the cooling (airflow, fans, hot neighbours; nvidia-smi -q -d TEMPERATURE,PERFORMANCE)"},
    {0x80, "gpu_power_brake", "has its hardware power brake engaged",
     "the power supply or the chassis is throttling the board: ask the administrators to check the node's "
     "power delivery, and measure elsewhere until it clears"},
    {0x4, "gpu_power_cap", "is held at its power limit",
     "something already draws the limit before balerbench starts: see nvidia-smi -q -d POWER,PERFORMANCE, and "
     "restore the default limit (sudo nvidia-smi -pl WATTS) unless it was lowered on purpose"},
    {0x10, "gpu_sync_boost", "has its clocks held to its sync-boost group's",
     "another GPU of the group limits the clocks: run alone on the group, or have the group removed"},
    {0x8, "gpu_hw_slowdown", "is in hardware slowdown",
     "the board slows itself (temperature or power delivery): check nvidia-smi -q -d PERFORMANCE and the "
     "node's cooling and power, and measure elsewhere until it clears"},
};

void add_throttle(const NvmlLibrary::GpuState& g, HazardReport& r) {
  if (!g.throttle_mask) return;
  unsigned long long mask = *g.throttle_mask;
  if (mask & (0x40 | 0x80)) mask &= ~0x8ULL;  // hw_slowdown is also set by the hardware thermal and power brake
  for (const auto& k : kThrottleKinds) {
    if (!(mask & k.bits)) continue;
    std::string evidence = "throttle reasons: " + joined(throttle_reason_names(mask & k.bits), ", ");
    if (g.sm_clock_mhz) evidence += "; SM clock " + std::to_string(*g.sm_clock_mhz) + " MHz";
    if (g.temperature_c) evidence += "; " + std::to_string(*g.temperature_c) + " C";
    if (g.power_limit_w) evidence += "; power limit " + fixed(*g.power_limit_w, 0) + " W";
    r.hazards.push_back({k.id, gpu_label(g) + " " + k.what, evidence, k.fix});
  }
}

void add_gpu_processes(const HazardProbe& p, const NvmlLibrary::GpuState& g, HazardReport& r) {
  if (!g.compute_processes) return;
  std::vector<std::string> others;
  for (const auto& proc : *g.compute_processes) {
    if (proc.pid == p.self_pid) continue;
    std::string s = "pid " + std::to_string(proc.pid);
    const auto name = p.process_names.find(proc.pid);
    std::vector<std::string> about;
    if (name != p.process_names.end() && !name->second.empty()) about.push_back(name->second);
    if (proc.used_memory_mib) about.push_back(fixed(*proc.used_memory_mib, 0) + " MiB");
    if (!about.empty()) s += " (" + joined(about, ", ") + ")";
    others.push_back(s);
  }
  if (others.empty()) return;
  r.hazards.push_back({"gpu_other_processes", gpu_label(g) + " is in use by other processes", joined(others, ", "),
                       "wait for them or pick another GPU (CUDA_VISIBLE_DEVICES): NVML's energy is the whole "
                       "board's, and they share its time"});
}

std::string gpu_note(const NvmlLibrary::GpuState& g) {
  std::vector<std::string> parts;
  if (g.sm_clock_mhz) parts.push_back("SM " + std::to_string(*g.sm_clock_mhz) + " MHz");
  if (g.mem_clock_mhz) parts.push_back("memory " + std::to_string(*g.mem_clock_mhz) + " MHz");
  if (g.temperature_c) parts.push_back(std::to_string(*g.temperature_c) + " C");
  if (g.power_limit_w) parts.push_back("power limit " + fixed(*g.power_limit_w, 0) + " W");
  parts.push_back("persistence " + g.persistence_mode);
  parts.push_back("compute mode " + g.compute_mode);
  parts.push_back("MIG " + g.mig_mode);
  parts.push_back("throttle reasons: " +
                  (g.throttle_reasons.empty() ? std::string("none") : joined(g.throttle_reasons, ", ")));
  if (!g.compute_processes) parts.push_back("compute processes unknown");
  return "gpu" + std::to_string(g.index) + " (" + g.name + "): " + joined(parts, ", ");
}

void add_gpus(const HazardProbe& p, HazardReport& r) {
  if (!p.nvml_available) {
    r.notes.push_back("gpus: NVML not available (" + p.nvml_note + ")");
    return;
  }
  if (p.gpus.empty()) r.notes.push_back("gpus: none visible (" + p.nvml_note + ")");
  for (const auto& g : p.gpus) {
    add_throttle(g, r);
    if (g.persistence_mode == "disabled")
      r.hazards.push_back({"gpu_persistence_off", gpu_label(g) + " is not in persistence mode",
                           "nvmlDeviceGetPersistenceMode: disabled",
                           "sudo nvidia-smi -pm 1 (or run nvidia-persistenced): without it the driver tears the GPU "
                           "down whenever no process holds it, and every run pays its start-up"});
    add_gpu_processes(p, g, r);
    r.notes.push_back(gpu_note(g));
  }
}

void add_build(const BuildInfo& b, HazardReport& r) {
  const std::string type = "CMAKE_BUILD_TYPE " + (b.build_type.empty() ? std::string("(none)") : b.build_type);
  if (b.ndebug && b.optimized) {
    r.notes.push_back("build: " + type + ", optimised, NDEBUG");
    return;
  }
  std::vector<std::string> evidence = {type};
  if (!b.ndebug) evidence.push_back("NDEBUG not defined (assertions on)");
  if (!b.optimized) evidence.push_back("compiled without optimisation (-O0)");
  r.hazards.push_back({"debug_build", "balerbench is a debug build", joined(evidence, "; "),
                       "rebuild in Release: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build "
                       "(scripts/setup.sh does)"});
}

// Neither RAPL nor NVML: every joule here is a power model's estimate.
void add_no_meter(const HazardProbe& probe, HazardReport& r) {
  if (probe.rapl_note.empty() || (probe.nvml_available && !probe.gpus.empty())) return;
  r.hazards.push_back(
      {"no_energy_meter", "no hardware energy meter: energy is estimated",
       "RAPL: " + probe.rapl_note + "; NVML: " + (probe.nvml_available ? "no GPU visible" : probe.nvml_note),
       "for measured joules make RAPL readable (root, or chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj; "
       "under a hypervisor the host must expose it), run on a GPU with NVML, or log a wattmeter "
       "(energy.wattmeter_log); otherwise set energy.cpu_tdp_w and energy.ram_power_w to this machine's "
       "figures so that the estimate's assumptions are yours (docs/energy.md)"});
}

}  // namespace

nlohmann::json Hazard::to_json() const { return {{"id", id}, {"what", what}, {"evidence", evidence}, {"fix", fix}}; }

nlohmann::json HazardReport::hazards_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& h : hazards) out.push_back(h.to_json());
  return out;
}

HazardReport collect_hazards(const HazardProbe& probe) {
  HazardReport r;
  add_blas(probe, r);
  add_governor(probe.governors, r);
  add_cpu_load(probe.cpu_load, r);
  add_gpus(probe, r);
  add_no_meter(probe, r);
  add_build(probe.build, r);
  return r;
}

HazardProbe probe_hazards(const HazardProbeOptions& o) {
  HazardProbe p;
  p.self_pid = static_cast<unsigned>(getpid());
  p.blas_hazard = blas_hazard();
  p.build = build_info();
  p.governors = read_cpu_governors(o.sys_cpu_root.empty() ? default_sys_cpu_root() : o.sys_cpu_root);
  {
    const MeterProbe rapl = RaplMeter::open(o.rapl_root);
    p.rapl_note = rapl.meter ? "" : rapl.unavailable_reason.empty() ? "not readable" : rapl.unavailable_reason;
  }
  std::string reason;
  if (const std::shared_ptr<NvmlLibrary> nvml = NvmlLibrary::open(reason)) {
    p.nvml_available = true;
    for (const auto& gpu : nvml->visible_gpus(p.nvml_note)) {
      p.gpus.push_back(nvml->gpu_state(gpu));
      for (const auto& proc : p.gpus.back().compute_processes.value_or(std::vector<NvmlLibrary::GpuState::Process>{})) {
        p.process_names[proc.pid] = read_pid_comm(o.proc_root, proc.pid);
      }
    }
  } else {
    p.nvml_note = reason;
  }
  // Last, so that loading NVML is not in the window (it is this process's time, and excluded anyway).
  p.cpu_load = o.started ? o.started->finish(o.cpu_window_s, o.sleep)
                         : sample_cpu_load(o.proc_root, o.cpu_window_s, o.sleep, static_cast<int>(p.self_pid));
  return p;
}

std::vector<Hazard> find_hazards(std::shared_ptr<const CpuLoadSample> started, double cpu_window_s) {
  HazardProbeOptions o;
  o.started = std::move(started);
  o.cpu_window_s = cpu_window_s;
  return collect_hazards(probe_hazards(o)).hazards;
}

std::string format_hazard_block(const std::vector<Hazard>& hazards) {
  if (hazards.empty()) return "";
  std::string out = "balerbench: " + std::to_string(hazards.size()) + " hazard" + (hazards.size() == 1 ? "" : "s") +
                    " on this machine can skew time and energy measurements (balerbench doctor; docs/doctor.md):\n";
  for (const auto& h : hazards) out += "  - " + h.what + ": " + h.evidence + ". Fix: " + h.fix + "\n";
  return out;
}

std::string format_hazard_line(const std::vector<Hazard>& hazards) {
  if (hazards.empty()) return "";
  std::string out = "balerbench: " + std::to_string(hazards.size()) + " hazard" + (hazards.size() == 1 ? "" : "s") +
                    " on this machine can skew time and energy measurements: ";
  for (std::size_t i = 0; i < hazards.size(); ++i) out += (i ? "; " : "") + hazards[i].what;
  return out + " (balerbench doctor for the evidence and the fixes)\n";
}

}  // namespace balerbench
