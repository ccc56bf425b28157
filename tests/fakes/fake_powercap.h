// fake_powercap.h: a powercap tree in a folder, laid out as the kernel's
// (intel-rapl:S/{name, energy_uj, max_energy_range_uj}, subzones
// intel-rapl:S:N), for the real RaplMeter to read. Counters are rewritten
// through a temporary file and rename, so a reader never sees half a number.
#pragma once

#include <mutex>
#include <string>

namespace balerbench {

class FakePowercap {
 public:
  explicit FakePowercap(std::string root) : root_(std::move(root)) {}
  // Creates zone folder `dir` (e.g. "intel-rapl:0:2") with name, counter and range.
  void add_zone(const std::string& dir, const std::string& name, unsigned long long energy_uj,
                unsigned long long max_range_uj);
  void set_energy(const std::string& dir, unsigned long long energy_uj);
  std::string energy_file(const std::string& dir) const { return root_ + "/" + dir + "/energy_uj"; }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

}  // namespace balerbench
