// hazards.h: what on this machine would make a time or energy measurement describe the machine
// rather than the method, each with its evidence and its fix (`balerbench doctor`, and the block
// `run` and `train` print before they start; docs/doctor.md explains each):
//
//   blas_generic_kernel      OpenBLAS runs a generic kernel on a CPU with AVX2/AVX-512 (blas_hazard())
//   cpu_governor_powersave   a CPU's cpufreq governor is powersave
//   cpu_busy                 other processes keep the CPUs busy (> kOtherCpuHazardCores)
//   cpu_steal                the hypervisor gives this VM's vCPUs to others (>= kStealHazardCores)
//   gpu_thermal_throttle, gpu_power_brake, gpu_power_cap, gpu_sync_boost, gpu_hw_slowdown
//                            a GPU's clocks are held down now (NVML's throttle reasons)
//   gpu_persistence_off      a GPU is not in persistence mode
//   gpu_other_processes      other processes hold a compute context on a GPU
//   no_energy_meter          neither RAPL nor a GPU under NVML: every joule is a power model's estimate
//   debug_build              balerbench was compiled without NDEBUG or without optimisation
//
// Probing (probe_hazards) reads the machine; deciding (collect_hazards) is a pure function of the
// probe, so tests give it any machine they like.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/base/build_info.h"
#include "harness/base/cpu_activity.h"
#include "harness/energy/cpu_governor.h"
#include "harness/energy/cpu_load.h"
#include "harness/energy/nvml_library.h"

namespace balerbench {

// Other processes' CPU use above this is a hazard (base/cpu_activity.h says why a quarter of a core).
constexpr double kOtherCpuHazardCores = kOtherCpuBusyCores;
// Steal time at or above this (a twentieth of a core) is a hazard; below it, a note.
constexpr double kStealHazardCores = 0.05;
// The window over which CPU use is sampled by default, seconds.
constexpr double kCpuSampleWindowS = 0.5;
// `train`'s pre-flight sample: shorter (25 ticks of each CPU at the kernel's 100 Hz, enough to see a
// neighbour busy on a tenth of a core), and begun as the command starts, so that it costs a short
// run almost nothing beyond its start-up (a 10-epoch train spent 0.5 s of its 3.3 s waiting on it).
constexpr double kTrainCpuSampleWindowS = 0.25;

struct Hazard {
  std::string id;        // stable, see the list above
  std::string what;      // "GPU 0 (NVIDIA H100) is slowed down for heat"
  std::string evidence;  // what was seen: "throttle reasons: hw_thermal_slowdown; 87 C"
  std::string fix;       // what to do about it
  nlohmann::json to_json() const;  // {"id", "what", "evidence", "fix"}
};

// What probe_hazards read (each part can be set by hand in tests).
struct HazardProbe {
  std::string blas_hazard;  // blas_hazard(): the text, or empty
  CpuGovernors governors;
  CpuLoad cpu_load;
  BuildInfo build;
  bool nvml_available = false;
  std::string rapl_note;  // why RAPL cannot be read here; empty when it can
  std::string nvml_note;                          // why NVML is not available, or how the GPUs were chosen
  std::vector<NvmlLibrary::GpuState> gpus;        // the visible GPUs
  std::map<unsigned, std::string> process_names;  // pid -> name, for the GPUs' processes
  unsigned self_pid = 0;
};

struct HazardReport {
  std::vector<Hazard> hazards;
  std::vector<std::string> notes;  // what was checked and found fine, or could not be checked
  nlohmann::json hazards_json() const;  // [{"id", "what", "evidence", "fix"}, ...]
};

HazardReport collect_hazards(const HazardProbe& probe);

struct HazardProbeOptions {
  std::string proc_root = "/proc";
  std::string sys_cpu_root;  // empty: default_sys_cpu_root()
  std::string rapl_root;     // empty: RAPL's default powercap root
  double cpu_window_s = kCpuSampleWindowS;
  Sleeper sleep;             // empty: really sleep
  // A CPU-load sample begun earlier (overlapping the command's start-up): finished here, waiting only
  // for what is left of cpu_window_s. Null: one is begun and finished here.
  std::shared_ptr<const CpuLoadSample> started;
};
// Reads this machine: BLAS, governors, CPU use over the window, NVML's visible GPUs, the build.
HazardProbe probe_hazards(const HazardProbeOptions& options = {});

// probe_hazards() then collect_hazards(): the hazards of this machine now (about kCpuSampleWindowS).
std::vector<Hazard> find_hazards(std::shared_ptr<const CpuLoadSample> started = nullptr,
                                 double cpu_window_s = kCpuSampleWindowS);

// The block `doctor` prints: a heading and a line per hazard (what, evidence, fix); empty when there
// are none.
std::string format_hazard_block(const std::vector<Hazard>& hazards);
// The one line `run` and `train` print before they measure: how many hazards and what each is, with
// `doctor` for the evidence and the fixes; empty when there are none.
std::string format_hazard_line(const std::vector<Hazard>& hazards);

}  // namespace balerbench
