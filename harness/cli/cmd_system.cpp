// cmd_system.cpp: `balerbench system [--json]`: the system this machine is, as every trial records it
// (run/system_description.h): the fingerprint and its label, the BLAS and its kernel (and why
// balerbench chose it), LibTorch's build, the CPU's ISA, SMT, hypervisor and frequency governor, the
// GPUs, and the environment variables that change speed or numerics; and whether this binary has the
// fused CUDA engine. The comparison scripts ask it
// which kernel to run Python on (scripts/same_blas_kernel.py).
#include <cstdio>
#include <string>

#include "harness/cli/commands.h"
#include "harness/cli/json_stdout.h"
#include "harness/engine/engine_registry.h"
#include "harness/run/system_description.h"

namespace balerbench::cli {
namespace {

using nlohmann::json;

std::string text(const json& v) {
  if (v.is_null()) return "not exposed";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

int run_system(bool as_json) {
  JsonStdout guard(as_json);
  json s = describe_system();
  // This binary's, not the machine's: trials record it in their engine status instead.
  for (const EngineBuildNote* note : engine_build_notes()) s[note->key] = note->text();
  if (as_json) {
    guard.print(s);
    return 0;
  }
  const json& cpu = s["cpu"];
  const json& blas = s["blas"];
  const json& torch = s["torch"];
  std::string isa;
  for (const auto& f : cpu["isa"]) isa += (isa.empty() ? "" : " ") + f.get<std::string>();
  std::printf("system %s: %s\n", s["fingerprint"].get<std::string>().c_str(), s["label"].get<std::string>().c_str());
  std::printf("  host        %s, %s, %.1f GiB\n", text(s["host"]["hostname"]).c_str(), text(s["host"]["os"]).c_str(),
              s["host"]["ram_total_gb"].get<double>());
  std::printf("  cpu         %s (%s family %s model %s), %s logical CPUs, %s threads per core%s\n",
              text(cpu["model_name"]).c_str(), text(cpu["vendor"]).c_str(), text(cpu["family"]).c_str(),
              text(cpu["model"]).c_str(), text(cpu["logical_cpus"]).c_str(),
              text(cpu["smt"]["threads_per_core"]).c_str(),
              cpu["hypervisor"]["present"].get<bool>() ? ", under a hypervisor" : "");
  std::printf("  isa         %s\n", isa.empty() ? "none of the listed" : isa.c_str());
  std::printf("  bfloat16    %s\n", text(s["bfloat16"]).c_str());
  std::printf("  frequency   governor %s, max %s%s\n", text(cpu["frequency"]["governor"]).c_str(),
              text(cpu["frequency"]["max_mhz"]).c_str(), cpu["frequency"]["max_mhz"].is_null() ? "" : " MHz");
  std::printf("  blas        %s %s, kernel %s, %s threads (%s)\n", text(blas["library"]).c_str(),
              text(blas["version"]).c_str(), text(blas["core"]).c_str(), text(blas["threads"]).c_str(),
              text(blas["path"]).c_str());
  std::printf("  kernel      %s: %s\n", text(blas["choice"]["decision"]).c_str(),
              text(blas["choice"]["reason"]).c_str());
  std::printf("  libtorch    %s (build %s), oneDNN %s, %s, ATen CPU capability %s, %s threads\n",
              text(torch["version"]).c_str(), text(torch["build_hash"]).c_str(), text(torch["onednn"]).c_str(),
              text(torch["openmp"]).c_str(), text(torch["cpu_capability"]).c_str(), text(torch["threads"]).c_str());
  if (s["gpus"].empty()) {
    std::printf("  gpus        none (%s)\n", text(s["gpu_software"]["note"]).c_str());
  } else {
    for (const auto& g : s["gpus"])
      std::printf("  gpu %-7s %s %s\n", text(g["index"]).c_str(), text(g["name"]).c_str(), text(g["uuid"]).c_str());
    std::printf("  gpu stack   driver %s, CUDA %s, cuDNN %s, cuBLAS %s\n", text(s["gpu_software"]["driver"]).c_str(),
                text(s["gpu_software"]["cuda"]).c_str(), text(s["gpu_software"]["cudnn"]).c_str(),
                text(s["gpu_software"]["cublas"]).c_str());
  }
  for (const EngineBuildNote* note : engine_build_notes())
    std::printf("  %-11s %s\n", note->label, text(s[note->key]).c_str());
  if (s["env"].empty()) std::printf("  env         none of OMP_*, OPENBLAS_*, MKL_*, GOMP_*, KMP_*, TORCH_*, CUDA/TF32 set\n");
  for (const auto& [k, v] : s["env"].items()) std::printf("  env         %s=%s\n", k.c_str(), v.get<std::string>().c_str());
  std::printf("  balerbench  %s (%s), build type %s%s\n", text(s["balerbench"]["version"]).c_str(),
              text(s["balerbench"]["git_revision"]).c_str(), text(s["balerbench"]["build_type"]).c_str(),
              s["balerbench"]["ndebug"].get<bool>() && s["balerbench"]["optimized"].get<bool>()
                  ? ""
                  : " (assertions on or unoptimised: timings describe the build)");
  return 0;  // a failed write to stdout is main's to report (exit code 4)
}

}  // namespace

void register_system(CLI::App& app, Action& run) {
  auto as_json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "system", "Describe this system as trials record it: fingerprint, BLAS kernel (and why), LibTorch build, CPU "
                "ISA, governor, GPUs, the environment that changes speed or numerics");
  cmd->add_flag("--json", *as_json, "print the whole description as JSON");
  cmd->callback([as_json, &run] { run = [as_json] { return run_system(*as_json); }; });
}

}  // namespace balerbench::cli
