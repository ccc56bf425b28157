// cmd_doctor.cpp: `balerbench doctor [--json] [--interval S] [--power-check S]`: the hazards on this
// machine that would skew a time or energy measurement, each with its evidence and its fix, then what
// was checked and found fine (or could not be checked). Exit 0 whether or not there are hazards.
// --json prints only the list: [{"id", "what", "evidence", "fix"}, ...]. docs/doctor.md explains each
// hazard. With NVML GPUs, each one's power reading is checked against its energy counter over a short
// stretch (energy/power_check.h), under a load of matrix products where this build has CUDA.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "harness/cli/json_stdout.h"
#include "harness/energy/hazards.h"
#include "harness/energy/power_check.h"
#include "harness/engine/torch_compat.h"

namespace balerbench::cli {
namespace {

struct DoctorArgs {
  bool json = false;
  double interval_s = kCpuSampleWindowS;
  double power_check_s = 2;
};

// Matrix products on every CUDA device until destroyed: a steady load for the power check. Nothing
// runs where this build has no CUDA or sees no device; what() says which.
class GpuLoad {
 public:
  GpuLoad() {
    if (!built_with_cuda() || !torch::cuda::is_available()) return;
    running_ = true;
    thread_ = std::thread([this] { run(); });
  }
  ~GpuLoad() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  GpuLoad(const GpuLoad&) = delete;
  GpuLoad& operator=(const GpuLoad&) = delete;
  bool running() const { return running_; }
  std::string what() const {
    if (!running_) return "idle: no CUDA device this build can use";
    return failed_ ? "a load of matrix products on CUDA that failed" : "matrix products (4096 x 4096, fp32) on CUDA";
  }

 private:
  void run() {
    try {
      std::vector<at::Tensor> a;
      for (int64_t i = 0; i < static_cast<int64_t>(torch::cuda::device_count()); ++i)
        a.push_back(at::randn({4096, 4096}, at::TensorOptions().device(at::Device(at::kCUDA, i))));
      while (!stop_) {
        for (const auto& t : a) (void)t.mm(t);
        for (std::size_t i = 0; i < a.size(); ++i) torch::cuda::synchronize(static_cast<int64_t>(i));
      }
    } catch (const std::exception&) {
      failed_ = true;
    }
  }
  bool running_ = false;
  std::atomic<bool> stop_{false}, failed_{false};
  std::thread thread_;
};

// Every visible GPU's power reading against its counter, under the load; none without NVML GPUs.
std::vector<PowerCheck> power_checks(double seconds) {
  std::vector<PowerCheck> out;
  if (!(seconds > 0)) return out;
  std::string reason, note;
  const std::shared_ptr<NvmlLibrary> lib = NvmlLibrary::open(reason);
  if (!lib) return out;
  const std::vector<NvmlLibrary::Gpu> gpus = lib->visible_gpus(note);
  if (gpus.empty()) return out;
  GpuLoad load;
  // A 1 s average reading needs a whole second of the load before the stretch it is checked over.
  if (load.running()) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  for (const auto& g : gpus) out.push_back(check_power_reading(*lib, g, seconds, load.what()));
  return out;
}

int doctor(const DoctorArgs& a) {
  JsonStdout json_out(a.json);
  HazardProbeOptions o;
  o.cpu_window_s = a.interval_s;
  HazardReport r = collect_hazards(probe_hazards(o));
  for (const PowerCheck& c : power_checks(a.power_check_s)) {
    if (const auto h = power_check_hazard(c)) r.hazards.push_back(*h);
    r.notes.push_back(c.line());
  }
  if (a.json) {
    json_out.print(r.hazards_json());
    return 0;
  }
  if (r.hazards.empty()) std::printf("balerbench: no hazards found on this machine\n");
  else std::printf("%s", format_hazard_block(r.hazards).c_str());
  std::printf("checked:\n");
  for (const auto& note : r.notes) std::printf("  %s\n", note.c_str());
  return 0;
}

}  // namespace

void register_doctor(CLI::App& app, Action& action) {
  auto a = std::make_shared<DoctorArgs>();
  CLI::App* cmd = app.add_subcommand(
      "doctor", "List what on this machine would skew time and energy measurements, with the fixes");
  cmd->add_flag("--json", a->json, "print the hazards as a JSON list of {id, what, evidence, fix}");
  cmd->add_option("--interval", a->interval_s,
                  "seconds over which the CPUs' use by other processes is sampled (default 0.5)")
      ->check(in_range(0.05, 60, "SECONDS"));
  cmd->add_option("--power-check", a->power_check_s,
                  "seconds over which each NVML GPU's power reading is checked against its energy counter, under "
                  "a CUDA load where this build has one (default 2; 0 skips it)")
      ->check(in_range(0, 60, "SECONDS"));
  cmd->callback([a, &action] { action = [a] { return doctor(*a); }; });
}

}  // namespace balerbench::cli
