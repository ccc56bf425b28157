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

namespace balerbench {

// Reads everything (NVML included, when present); a few milliseconds.
nlohmann::json describe_system();
// The same, read once per process and kept (a sweep's trials share it); the BLAS thread count and
// LibTorch's threads are read afresh each call, as a trial's configuration sets them.
nlohmann::json current_system();

}  // namespace balerbench
