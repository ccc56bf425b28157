// run_runtime.h: the process's runtime and device for a run, from its config, set the same way by
// train, compress, decompress, codecs and every sweep trial (engine/runtime.h does the work).
#pragma once

#include <c10/core/Device.h>

#include "harness/run/run_config.h"

namespace balerbench {

// The intra-op threads (config.threads, 0: the CPUs this process may use), the flushing of
// subnormal floats and LibTorch's deterministic kernels, as the config asks.
void configure_run_runtime(const RunConfig& c);
// config.device resolved; InputError when it asks for CUDA and there is none.
c10::Device run_device(const RunConfig& c);

}  // namespace balerbench
