// system_info.cpp: see system_info.h.
#include "harness/base/system_info.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/base/blas_kernel.h"
#include "harness/base/proc_fs.h"
#include "harness/base/proc_text.h"

namespace balerbench {
namespace {

using json = nlohmann::json;

// The /proc/cpuinfo flags that decide which kernels can run (GEMM, bf16/fp16 autocast, AMX).
const char* const kIsaFlags[] = {"sse4_2",      "avx",         "avx2",        "fma",         "f16c",
                                 "avx512f",     "avx512dq",    "avx512bw",    "avx512vl",    "avx512_vnni",
                                 "avx512_bf16", "avx512_fp16", "avx_vnni",    "amx_tile",    "amx_bf16",
                                 "amx_int8"};

json read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return nullptr;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

json read_mhz(const std::string& path) {  // cpufreq files hold kHz
  const json v = read_first_line(path);
  if (!v.is_string()) return nullptr;
  char* end = nullptr;
  const double khz = std::strtod(v.get<std::string>().c_str(), &end);
  if (end == v.get<std::string>().c_str()) return nullptr;
  return khz / 1000.0;
}

}  // namespace

json describe_cpu(const std::string& proc_root, const std::string& sys_root) {
  const CpuFeatures c = read_cpu_features(proc_root);
  json isa = json::array();
  for (const char* f : kIsaFlags)
    if (c.has(f)) isa.push_back(f);
  // Logical CPUs, sockets and threads per core from the whole of /proc/cpuinfo.
  std::istringstream in(read_proc_text(proc_root + "/cpuinfo"));
  std::string line;
  int processors = 0, siblings = 0, cores = 0;
  std::set<std::string> sockets;
  while (std::getline(in, line)) {
    std::string key, value;
    if (!split_proc_line(line, key, value)) continue;
    if (key == "processor") ++processors;
    else if (key == "physical id") sockets.insert(value);
    else if (key == "siblings" && !siblings) siblings = std::atoi(value.c_str());
    else if (key == "cpu cores" && !cores) cores = std::atoi(value.c_str());
  }
  const json smt_active = read_first_line(sys_root + "/devices/system/cpu/smt/active");
  json smt = {{"threads_per_core", siblings > 0 && cores > 0 ? json(siblings / cores) : json(nullptr)},
              {"active", smt_active.is_string() ? json(smt_active.get<std::string>() == "1") : json(nullptr)}};
  json hyper_vendor = read_first_line(sys_root + "/hypervisor/type");
  const std::string freq = sys_root + "/devices/system/cpu/cpu0/cpufreq/";
  json frequency = {{"governor", read_first_line(freq + "scaling_governor")},
                    {"driver", read_first_line(freq + "scaling_driver")},
                    {"min_mhz", read_mhz(freq + "cpuinfo_min_freq")},
                    {"max_mhz", read_mhz(freq + "cpuinfo_max_freq")},
                    {"scaling_max_mhz", read_mhz(freq + "scaling_max_freq")}};
  const json boost = read_first_line(sys_root + "/devices/system/cpu/cpufreq/boost");
  frequency["boost"] = boost.is_string() ? json(boost.get<std::string>() == "1") : json(nullptr);
  return {{"vendor", c.vendor.empty() ? json(nullptr) : json(c.vendor)},
          {"model_name", c.model_name.empty() ? json(nullptr) : json(c.model_name)},
          {"family", c.family},
          {"model", c.model},
          {"stepping", c.stepping},
          {"logical_cpus", proc_root == "/proc" ? json(sysconf(_SC_NPROCESSORS_ONLN)) : json(processors)},
          {"sockets", std::max<int>(1, static_cast<int>(sockets.size()))},
          {"isa", isa},
          {"smt", smt},
          {"hypervisor", {{"present", c.has("hypervisor")}, {"vendor", hyper_vendor}}},
          {"frequency", frequency}};
}

bool is_relevant_environment_name(const std::string& name) {
  static const char* const prefixes[] = {"OMP_", "OPENBLAS_", "MKL_", "GOMP_", "KMP_", "TORCH_"};
  static const char* const exact[] = {"CUBLAS_WORKSPACE_CONFIG", "NVIDIA_TF32_OVERRIDE", "CUDA_VISIBLE_DEVICES",
                                      "BALERBENCH_BLAS_KERNEL"};
  for (const char* p : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  for (const char* e : exact)
    if (name == e) return true;
  return false;
}

std::map<std::string, std::string> relevant_environment(char** env) {
  std::map<std::string, std::string> out;
  for (char** e = env; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = kv.substr(0, eq);
    if (is_relevant_environment_name(name)) out[name] = kv.substr(eq + 1);
  }
  return out;
}

json fingerprint_part(const json& system) {
  const json& s = system.is_object() ? system : json::object();
  const auto get = [](const json& o, const char* k) { return o.is_object() && o.contains(k) ? o[k] : json(nullptr); };
  const json cpu = get(s, "cpu");
  json part = {
      {"cpu",
       {{"vendor", get(cpu, "vendor")},
        {"model_name", get(cpu, "model_name")},
        {"family", get(cpu, "family")},
        {"model", get(cpu, "model")},
        {"logical_cpus", get(cpu, "logical_cpus")},
        {"isa", get(cpu, "isa")},
        {"threads_per_core", get(get(cpu, "smt"), "threads_per_core")},
        {"hypervisor", get(get(cpu, "hypervisor"), "present")},
        {"governor", get(get(cpu, "frequency"), "governor")}}},
      {"blas", {{"library", get(get(s, "blas"), "library")}, {"version", get(get(s, "blas"), "version")},
                {"core", get(get(s, "blas"), "core")}}},
      {"torch", {{"version", get(get(s, "torch"), "version")}, {"build", get(get(s, "torch"), "build_hash")},
                 {"onednn", get(get(s, "torch"), "onednn")}}}};
  json gpus = json::array();
  for (const auto& g : get(s, "gpus").is_array() ? get(s, "gpus") : json::array()) gpus.push_back(get(g, "name"));
  part["gpus"] = {{"names", gpus}, {"driver", get(get(s, "gpu_software"), "driver")},
                  {"cuda", get(get(s, "gpu_software"), "cuda")}, {"cudnn", get(get(s, "gpu_software"), "cudnn")}};
  // The environment less what only names things: the kernel (in "blas" already, so a kernel
  // chosen by balerbench or by OpenBLAS itself is one system), logging, and which GPUs (by name above).
  json env = json::object();
  const json e = get(s, "env");
  if (e.is_object())
    for (const auto& [k, v] : e.items())
      if (k != "OPENBLAS_CORETYPE" && k != "OPENBLAS_VERBOSE" && k != "CUDA_VISIBLE_DEVICES" &&
          k != "BALERBENCH_BLAS_KERNEL")
        env[k] = v;
  part["env"] = env;
  return part;
}

std::string text_hash(const std::string& text) {
  unsigned __int128 h = (static_cast<unsigned __int128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
  const unsigned __int128 prime = (static_cast<unsigned __int128>(1) << 88) | 0x13bULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= prime;
  }
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h >> 64),
                static_cast<unsigned long long>(h));
  return buf;
}

std::string system_fingerprint(const json& system) { return text_hash(fingerprint_part(system).dump()).substr(0, 12); }

std::string system_label(const json& system) {
  const json& s = system.is_object() ? system : json::object();
  std::string label;
  const json cpu = s.value("cpu", json::object());
  if (cpu.is_object() && cpu.value("model_name", json(nullptr)).is_string())
    label = cpu["model_name"].get<std::string>() + " (" + cpu.value("logical_cpus", json(0)).dump() + " CPUs)";
  const json blas = s.value("blas", json::object());
  if (blas.is_object() && blas.value("library", std::string()) == "OpenBLAS")
    label += ", OpenBLAS " + blas.value("version", json("")).get<std::string>() + " " +
             blas.value("core", json("unknown")).get<std::string>();
  else if (blas.is_object() && !blas.empty())
    label += (label.empty() ? "" : ", ") + std::string("BLAS unknown");
  std::string gpus;
  for (const auto& g : s.value("gpus", json::array()))
    if (g.is_object() && g.value("name", json(nullptr)).is_string())
      gpus += (gpus.empty() ? "" : " + ") + g["name"].get<std::string>();
  if (!gpus.empty()) label += (label.empty() ? "" : ", ") + std::string("GPU: ") + gpus;
  return label.empty() ? "unknown system" : label;
}

}  // namespace balerbench
