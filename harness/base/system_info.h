// system_info.h: the conditions of a measurement that the machine decides, as data: the CPU and
// the ISA features that matter to its kernels, SMT, a hypervisor, the frequency governor and its
// limits, and the environment variables that change speed or numerics. run/system_description
// adds the BLAS, LibTorch's build and the GPUs, and derives the system fingerprint: a short hash of
// the part that shapes results, so that tables never compare across systems unawares.
//
// Every reader takes its root (/proc, /sys) as a parameter so tests use fake trees.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace balerbench {

// {"vendor","model_name","family","model","stepping","logical_cpus","sockets","isa":[...],
//  "smt":{"threads_per_core","active"},"hypervisor":{"present","vendor"},
//  "frequency":{"governor","min_mhz","max_mhz","scaling_max_mhz"}}; a fact the kernel does not
// expose is null.
nlohmann::json describe_cpu(const std::string& proc_root = "/proc", const std::string& sys_root = "/sys");

// The variables that change speed or numerics (OMP_*, OPENBLAS_*, MKL_*, GOMP_*, KMP_*,
// CUBLAS_WORKSPACE_CONFIG, NVIDIA_TF32_OVERRIDE, TORCH_*, CUDA_VISIBLE_DEVICES), name -> value,
// from `env` (a process's environment as NAME=VALUE strings, null-terminated).
std::map<std::string, std::string> relevant_environment(char** env);
bool is_relevant_environment_name(const std::string& name);

// The part of a system description that shapes results (its "cpu", "blas" kernel, "torch" build,
// "gpus" models and software, and the environment less the variables that only name things), and
// its fingerprint: 12 hex digits of a hash of that part's canonical JSON. The host name, the RAM,
// clocks and temperatures, and balerbench's own revision are recorded but are not in it: two
// identical nodes of a cluster share a fingerprint.
nlohmann::json fingerprint_part(const nlohmann::json& system);
std::string system_fingerprint(const nlohmann::json& system);
// A short human label: "AMD EPYC (2 CPUs), OpenBLAS 0.3.21 Cooperlake[, GPU: ...]".
std::string system_label(const nlohmann::json& system);

// 32 hex digits of a 128-bit FNV-1a hash (the trial keys' hash).
std::string text_hash(const std::string& text);

}  // namespace balerbench
