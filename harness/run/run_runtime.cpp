// run_runtime.cpp: see run_runtime.h.
#include "harness/run/run_runtime.h"

#include "harness/engine/runtime.h"

namespace balerbench {

void configure_run_runtime(const RunConfig& c) {
  configure_runtime(static_cast<int>(c.threads), c.flush_denormal, c.deterministic_algorithm);
}

c10::Device run_device(const RunConfig& c) { return resolve_device(c.device); }

}  // namespace balerbench
