// system_description.cpp: see system_description.h.
#include "harness/run/system_description.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <dlfcn.h>

#include <mutex>

#include "harness/base/blas_kernel.h"
#include "harness/base/build_info.h"
#include "harness/base/system_info.h"
#include "harness/energy/host_info.h"
#include "harness/energy/nvml_library.h"
#include "harness/engine/bf16_kernels.h"
#include "harness/engine/torch_compat.h"
#include "harness/version.h"

extern char** environ;

namespace balerbench {
namespace {

using json = nlohmann::json;

// "  - Intel(R) MKL-DNN v2.6.3 (Git Hash N/A)" -> "v2.6.3"; the value after "KEY: " on its line.
std::string config_line(const std::string& config, const std::string& key) {
  const auto at = config.find(key);
  if (at == std::string::npos) return "";
  const auto end = config.find('\n', at);
  std::string v = config.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
  while (!v.empty() && (v.front() == ' ' || v.front() == ':')) v.erase(0, 1);
  return v;
}

json torch_description() {
  const std::string config = at::show_config();
  const std::string build = config_line(config, "Build settings");
  std::string onednn = at::get_mkldnn_version();
  if (const auto v = onednn.find(" v"); v != std::string::npos) onednn = onednn.substr(v + 1, onednn.find(' ', v + 1) - v - 1);
  return {{"version", torch_version_string()},
          {"build_hash", text_hash(build).substr(0, 12)},
          {"onednn", onednn.empty() ? json(nullptr) : json(onednn)},
          {"openmp", at::get_openmp_version()},
          {"cpu_capability", config_line(config, "CPU capability usage")},
          {"cuda", built_with_cuda()},
          {"threads", at::get_num_threads()},
          {"interop_threads", at::get_num_interop_threads()}};
}

json gpu_software(json& gpus) {
  const GpuSoftware g = read_gpu_software(true);
  gpus = g.gpus;
  json sw = {{"driver", g.driver}, {"cuda", g.cuda}, {"cudnn", nullptr}, {"cublas", nullptr}, {"note", nullptr}};
  if (!g.nvml) sw["note"] = g.open_failure;
  else if (!g.list_note.empty()) sw["note"] = g.list_note;
  if (built_with_cuda()) {
    try {
      const long d = g.cuda == "unknown" ? 0 : at::detail::getCUDAHooks().versionCuDNN();
      if (d > 0) sw["cudnn"] = std::to_string(d);
    } catch (const std::exception&) {
      sw["cuda"] = "unknown";
    }
    // cuBLAS is loaded by LibTorch's CUDA library; asked by name, so CPU builds need no header.
    using GetVersion = int (*)(void*, int*);
    if (auto fn = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "cublasGetVersion_v2"))) {
      int v = 0;
      if (fn(nullptr, &v) == 0 && v > 0) sw["cublas"] = std::to_string(v);
    }
  }
  return sw;
}

json read_system() {
  const HostInfo h = read_host_info();
  json gpus = json::array();
  json s = {{"host", {{"hostname", h.hostname}, {"os", h.os}, {"ram_total_gb", h.ram_total_gb}}},
            {"cpu", describe_cpu()},
            {"torch", torch_description()}};
  // What amp_bf16's products run on here (the fused engine's kernels, bf16_kernels.h).
  s["bfloat16"] = bf16_dot_supported() ? "avx512_bf16: amp_bf16's products on bfloat16 dot products (VDPBF16PS)"
                                       : kBf16Emulated;
  s["gpu_software"] = gpu_software(gpus);
  s["gpus"] = gpus;
  json env = json::object();
  for (const auto& [k, v] : relevant_environment(environ)) env[k] = v;
  s["env"] = env;
  const BuildInfo b = build_info();
  s["balerbench"] = {{"version", kVersion},
                     {"git_revision", git_revision()},
                     {"build_type", b.build_type.empty() ? json(nullptr) : json(b.build_type)},
                     {"ndebug", b.ndebug},
                     {"optimized", b.optimized}};
  return s;
}

// The parts read afresh: the BLAS (its thread count follows the trial's configuration) and LibTorch's threads.
void refresh(json& s) {
  json blas = query_blas().to_json();
  blas["choice"] = blas_choice();
  s["blas"] = blas;
  s["torch"]["threads"] = at::get_num_threads();
  s["torch"]["interop_threads"] = at::get_num_interop_threads();
  s["fingerprint"] = system_fingerprint(s);
  s["label"] = system_label(s);
}

}  // namespace

GpuSoftware read_gpu_software(bool with_state) {
  GpuSoftware g;
  if (auto lib = NvmlLibrary::open(g.open_failure)) {
    g.nvml = true;
    g.driver = lib->driver_version();
    for (const auto& v : lib->visible_gpus(g.list_note)) {
      json gpu = {{"index", v.index}, {"name", v.name}, {"uuid", v.uuid}};
      // The state at the start: clocks, persistence, compute and MIG modes, the power limit in
      // force, temperature, throttle reasons (read only: nothing is ever set here).
      if (with_state) gpu["state"] = lib->gpu_state(v).to_json();
      g.gpus.push_back(gpu);
    }
  }
  if (built_with_cuda()) {
    try {
      const long v = at::detail::getCUDAHooks().versionCUDART();
      g.cuda = std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
    } catch (const std::exception&) {
      g.cuda = "unknown";
    }
  }
  return g;
}

json base_provenance() {
  const HostInfo h = read_host_info();
  const GpuSoftware g = read_gpu_software(false);
  return {{"host", h.hostname},
          {"os", h.os},
          {"cpu_model", h.cpu_model},
          {"logical_cpus", h.logical_cpus},
          {"sockets", h.sockets},
          {"ram_total_gb", h.ram_total_gb},
          {"gpus", g.gpus},
          {"gpu_note", g.nvml ? json(nullptr) : json(g.open_failure)},
          {"nvidia_driver", g.driver},
          {"cuda", g.cuda},
          {"libtorch", torch_version_string()},
          {"balerbench", kVersion},
          {"git_revision", git_revision()}};
}

json describe_system() {
  json s = read_system();
  refresh(s);
  return s;
}

json current_system() {
  static std::once_flag once;
  static json base;
  std::call_once(once, [] { base = read_system(); });
  json s = base;
  refresh(s);
  return s;
}

}  // namespace balerbench
