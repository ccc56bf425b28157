// fuzz_wattmeter.cpp: wattmeter logs (OmegaWatt and CSV). The first byte picks the format and the
// socket, the rest is the log. Malformed lines are counted and skipped; a log that cannot be used
// is an InputError; energy over any window inside the span is finite and not negative.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "harness/energy/wattmeter_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const char* const kFormats[] = {"auto", "omegawatt", "csv"};
  const std::string format = kFormats[data[0] % 3];
  const int socket = (data[0] / 3) % 4 == 0 ? -1 : (data[0] / 3) % 4;
  try {
    balerbench::WattmeterLog log(format, socket, 0.0, "fuzz.log");
    log.append(std::string(reinterpret_cast<const char*>(data + 1), size - 1) + "\n");
    log.finish();
    const auto& s = log.samples();
    if (s.size() >= 2) {
      const double t0 = s.front().time_s, t1 = s.back().time_s;
      if (std::isfinite(t0) && std::isfinite(t1) && t1 > t0) {
        const balerbench::WattmeterEnergy e = log.energy(t0, t1);
        if (std::isnan(e.energy_j)) __builtin_trap();
      }
    }
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
