// fuzz_powercap.cpp: the powercap/RAPL reader over a fake tree. The input lays out up to six zone
// folders (a folder name, and the texts of name, energy_uj and max_energy_range_uj), then gives the
// counters' texts for up to eight reads; a zone whose counter is turned into a folder cannot be read
// at all. RaplMeter opens the tree or says why not; when it opens, every read gives one finite total
// per domain, domain names are unique, and no total goes down or rises by more than one wrap of its
// counter between two reads (a counter that cannot be read is counted in read_errors instead).
#include <fuzzer/FuzzedDataProvider.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/energy/rapl_meter.h"

namespace fs = std::filesystem;

namespace {

const fs::path& root() {
  static const fs::path r = fs::temp_directory_path() / ("fuzz_powercap." + std::to_string(::getpid()));
  return r;
}

void write(const fs::path& p, const std::string& text) {
  std::error_code ec;
  if (p.native().find('\0') != std::string::npos) __builtin_trap();  // would name another folder
  if (fs::is_directory(p, ec)) fs::remove_all(p, ec);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// Mostly the texts the kernel writes, sometimes anything.
std::string pick(FuzzedDataProvider& in, const std::vector<std::string>& usual) {
  if (in.ConsumeBool()) return usual[in.ConsumeIntegralInRange<std::size_t>(0, usual.size() - 1)];
  return in.ConsumeRandomLengthString(24);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::error_code ec;
  fs::remove_all(root(), ec);
  fs::create_directories(root());
  static const std::vector<std::string> kDirs = {"intel-rapl:0",   "intel-rapl:1",      "intel-rapl:0:0",
                                                 "intel-rapl:0:1", "intel-rapl-mmio:0", "intel-rapl:1:0"};
  static const std::vector<std::string> kNames = {"package-0\n", "package-1\n", "core\n", "uncore\n", "dram\n",
                                                  "psys\n"};
  static const std::vector<std::string> kCounters = {"0\n", "1000000\n", "262143328850\n", "65532610987\n",
                                                     "18446744073709551615\n"};
  const int zones = in.ConsumeIntegralInRange<int>(0, 6);
  std::vector<fs::path> counters;
  for (int i = 0; i < zones; ++i) {
    const std::string dir = pick(in, kDirs);
    // Only a plain folder name below root(): a NUL would cut the path short in the system calls, so
    // that "..\0x" reached the parent of root() (and write() below emptied /tmp before this check).
    const bool plain = std::all_of(dir.begin(), dir.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == ':' || ch == '-' || ch == '_' || ch == '.';
    });
    if (dir.empty() || !plain || dir == "." || dir == "..") continue;
    const fs::path d = root() / dir;
    fs::create_directories(d, ec);
    if (ec) continue;
    write(d / "name", pick(in, kNames));
    write(d / "energy_uj", pick(in, kCounters));
    write(d / "max_energy_range_uj", pick(in, kCounters));
    counters.push_back(d / "energy_uj");
  }
  balerbench::MeterProbe probe = balerbench::RaplMeter::open(root().string());
  if (!probe.meter) {
    if (probe.unavailable_reason.empty()) __builtin_trap();  // closed without saying why
    return 0;
  }
  balerbench::EnergyMeter& meter = *probe.meter;
  const auto& domains = meter.domains();
  std::set<std::string> names;
  for (const auto& d : domains) names.insert(d.name);
  if (names.size() != domains.size()) __builtin_trap();  // two domains under one name
  const nlohmann::json description = meter.describe();
  std::vector<double> ranges_j;
  for (const auto& z : description.at("zones")) ranges_j.push_back(z.at("max_energy_range_j").get<double>());
  std::vector<double> last(domains.size(), 0.0);
  const int reads = in.ConsumeIntegralInRange<int>(1, 8);
  for (int r = 0; r < reads; ++r) {
    for (const auto& c : counters) {
      if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {
        fs::remove(c, ec);
        fs::create_directories(c, ec);  // unreadable: a folder where the counter was
      } else {
        write(c, pick(in, kCounters));
      }
    }
    const balerbench::MeterReading reading = meter.read();
    if (reading.energy_j.size() != domains.size()) __builtin_trap();
    for (std::size_t i = 0; i < domains.size(); ++i) {
      const double e = reading.energy_j[i];
      if (!std::isfinite(e) || e < last[i] || e - last[i] > ranges_j[i] * (1 + 1e-12)) __builtin_trap();
      last[i] = e;
    }
    if (reading.read_errors < 0) __builtin_trap();
  }
  return 0;
}
