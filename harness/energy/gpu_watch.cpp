// gpu_watch.cpp: see gpu_watch.h.
#include "harness/energy/gpu_watch.h"

#include <algorithm>

namespace balerbench {

using nlohmann::json;

std::unique_ptr<GpuWatch> GpuWatch::open(std::string& reason) {
  std::shared_ptr<NvmlLibrary> lib = NvmlLibrary::open(reason);
  if (!lib) return nullptr;
  std::string note;
  std::vector<NvmlLibrary::Gpu> gpus = lib->visible_gpus(note);
  if (gpus.empty()) {
    reason = "NVML sees no GPU this process may use (" + note + ")";
    return nullptr;
  }
  std::unique_ptr<GpuWatch> w(new GpuWatch());
  w->lib_ = std::move(lib);
  w->gpus_ = std::move(gpus);
  return w;
}

json GpuWatch::limits_json() const {
  json out = json::array();
  for (const auto& g : gpus_) {
    json j = lib_->limits(g).to_json();
    j["index"] = g.index;
    j["uuid"] = g.uuid;
    j["name"] = g.name;
    out.push_back(std::move(j));
  }
  return out;
}

std::optional<double> GpuWatch::max_power_w() const {
  double sum = 0;
  for (const auto& g : gpus_) {
    const NvmlLibrary::Limits l = lib_->limits(g);
    if (!l.max_w) return std::nullopt;
    sum += *l.max_w;
  }
  return sum;
}

json GpuWatch::thermal_json() const {
  json out = json::array();
  for (const auto& g : gpus_) {
    json j = lib_->thermal(g).to_json();
    j["index"] = g.index;
    j["uuid"] = g.uuid;
    out.push_back(std::move(j));
  }
  return out;
}

std::optional<double> GpuWatch::hottest_c(std::string* why) const {
  std::optional<double> hottest;
  for (const auto& g : gpus_) {
    const NvmlLibrary::Thermal t = lib_->thermal(g);
    if (!t.temperature_c) {
      if (why) *why = "gpu" + std::to_string(g.index) + "'s temperature cannot be read: " + t.temperature_error;
      return std::nullopt;
    }
    hottest = std::max(hottest.value_or(*t.temperature_c), *t.temperature_c);
  }
  return hottest;
}

}  // namespace balerbench
