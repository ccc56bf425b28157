// host_info.h: facts about this machine that estimates and reports need: CPU
// model, logical CPUs, sockets, installed RAM, host name and OS. Read from
// /proc (the root is a parameter so tests can use a fake tree).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace balerbench {

struct HostInfo {
  std::string hostname;
  std::string os;           // "Linux 6.1.0-18-amd64"
  std::string cpu_model;    // /proc/cpuinfo "model name"
  int logical_cpus = 1;     // online CPUs
  int sockets = 1;          // distinct "physical id"s
  double ram_total_gb = 0;  // MemTotal, GiB (CodeCarbon's GB)
  nlohmann::json to_json() const;
};

HostInfo read_host_info(const std::string& proc_root = "/proc");

}  // namespace balerbench
