// system_description.h: the whole system a measurement ran on, as one JSON object, and its
// fingerprint (base/system_info.h says what the fingerprint covers). Recorded with every trial
// (provenance.system), in the train/compress/decompress reports ("system") and by `measure`.
//
//   {"fingerprint", "label", "host": {hostname, os, ram_total_gb}, "cpu": describe_cpu(),
//    "blas": {library, version, core, config, path, threads, choice: blas_choice()},
//    "torch": {version, build_hash, onednn, openmp, cpu_capability, threads, interop_threads},
//    "gpus": [{index, name, uuid}], "gpu_software": {driver, cuda, cudnn, cublas, note},
//    "env": {NAME: VALUE}, "balerbench": {version, git_revision, build_type}}
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace balerbench {

// The GPUs NVML sees and the GPU software, read in one place for describe_system and
// base_provenance.
struct GpuSoftware {
  bool nvml = false;                             // NVML opened
  nlohmann::json driver = nullptr;               // NVIDIA's driver version; null without NVML
  nlohmann::json cuda = nullptr;                 // LibTorch's CUDA runtime ("12.1", "unknown"); null on CPU builds
  nlohmann::json gpus = nlohmann::json::array(); // [{index, name, uuid}], each with "state" when asked
  std::string open_failure;                      // why NVML could not be opened
  std::string list_note;                         // NVML's note on the GPUs it lists (hidden, failed)
};
// `with_state`: each GPU's state at the start too (clocks, modes, limit, temperature, throttling).
GpuSoftware read_gpu_software(bool with_state);

// Reads everything (NVML included, when present); a few milliseconds.
nlohmann::json describe_system();
// The same, read once per process and kept (a sweep's trials share it); the BLAS thread count and
// LibTorch's threads are read afresh each call, as a trial's configuration sets them.
nlohmann::json current_system();

// Where and with what a trial ran, in short: host, CPU, GPUs, driver, CUDA and LibTorch versions,
// balerbench's version and git revision (a trial adds "system", describe_system's, beside it).
nlohmann::json base_provenance();

}  // namespace balerbench
