// fake_powercap.cpp: see fake_powercap.h.
#include "tests/fakes/fake_powercap.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace balerbench {
namespace {

void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("rename " + tmp);
}

}  // namespace

void FakePowercap::add_zone(const std::string& dir, const std::string& name, unsigned long long energy_uj,
                            unsigned long long max_range_uj) {
  std::filesystem::create_directories(root_ + "/" + dir);
  write_file(root_ + "/" + dir + "/name", name + "\n");
  write_file(root_ + "/" + dir + "/max_energy_range_uj", std::to_string(max_range_uj) + "\n");
  set_energy(dir, energy_uj);
}

void FakePowercap::set_energy(const std::string& dir, unsigned long long energy_uj) {
  write_file(energy_file(dir), std::to_string(energy_uj) + "\n");
}

}  // namespace balerbench
