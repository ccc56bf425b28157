// nvml_meter.cpp: see nvml_meter.h.
#include "harness/energy/nvml_meter.h"

namespace balerbench {

using nlohmann::json;

MeterProbe NvmlMeter::open() {
  MeterProbe probe;
  std::shared_ptr<NvmlLibrary> lib = NvmlLibrary::open(probe.unavailable_reason);
  if (!lib) return probe;
  std::string selection;
  const std::vector<NvmlLibrary::Gpu> gpus = lib->visible_gpus(selection);
  if (gpus.empty()) {
    probe.unavailable_reason = "no GPU visible to NVML: " + selection;
    return probe;
  }
  std::vector<Device> devices;
  for (const auto& g : gpus) {
    Device d;
    d.gpu = g;
    d.counter = lib->device_get_total_energy(g.handle, &d.start_mj) == NVML_SUCCESS;
    unsigned mw = 0;
    if (!d.counter) {
      const nvmlReturn_t rc = lib->device_get_power_usage(g.handle, &mw);
      if (rc != NVML_SUCCESS) {
        probe.unavailable_reason = "GPU " + std::to_string(g.index) + " (" + g.name +
                                   ") reports neither an energy counter nor power: " + lib->error_string(rc);
        return probe;
      }
    }
    d.last_power_w = mw * 1e-3;
    devices.push_back(d);
  }
  probe.meter.reset(new NvmlMeter(std::move(lib), std::move(devices), selection));
  return probe;
}

NvmlMeter::NvmlMeter(std::shared_ptr<NvmlLibrary> lib, std::vector<Device> devices, std::string selection)
    : lib_(std::move(lib)), devices_(std::move(devices)), selection_(std::move(selection)),
      last_read_(SteadyClock::now()) {
  for (const auto& d : devices_) {
    Domain dom;
    dom.name = "gpu" + std::to_string(d.gpu.index);
    dom.category = DomainCategory::kGpu;
    dom.note = d.gpu.name + (d.counter ? " (energy counter)" : " (power polling, integrated)");
    domains_.push_back(dom);
  }
}

MeterReading NvmlMeter::read() {
  MeterReading r;
  r.time = SteadyClock::now();
  const double dt_s = std::chrono::duration<double>(r.time - last_read_).count();
  last_read_ = r.time;
  for (auto& d : devices_) {
    if (d.counter) {
      unsigned long long mj = 0;
      const nvmlReturn_t rc = lib_->device_get_total_energy(d.gpu.handle, &mj);
      if (rc == NVML_SUCCESS && mj >= d.start_mj) {
        d.total_j = static_cast<double>(mj - d.start_mj) * 1e-3;
      } else {
        ++d.read_errors;
        d.lost = d.lost || rc == NVML_ERROR_GPU_IS_LOST;
      }
    } else {
      unsigned mw = 0;
      const nvmlReturn_t rc = lib_->device_get_power_usage(d.gpu.handle, &mw);
      d.lost = d.lost || rc == NVML_ERROR_GPU_IS_LOST;
      if (rc == NVML_SUCCESS) {
        const double p_w = mw * 1e-3;
        d.total_j += 0.5 * (d.last_power_w + p_w) * dt_s;
        d.last_power_w = p_w;
      } else {
        d.total_j += d.last_power_w * dt_s;  // hold the last reading across a failed poll
        ++d.read_errors;
      }
    }
    r.energy_j.push_back(d.total_j);
    r.read_errors += d.read_errors;
    if (d.lost)
      r.lost += (r.lost.empty() ? "" : "; ") + std::string("gpu") + std::to_string(d.gpu.index) + " (" + d.gpu.name +
                ", " + d.gpu.uuid + ") is lost (NVML_ERROR_GPU_IS_LOST)";
  }
  return r;
}

double NvmlMeter::update_period_s() const {
  for (const auto& d : devices_)
    if (!d.counter) return 1.0;
  return 0.1;
}

json NvmlMeter::describe() const {
  json gpus = json::array();
  for (const auto& d : devices_) {
    const nvmlDevice_t h = d.gpu.handle;
    auto watts = [](unsigned mw) { return mw * 1e-3; };
    json g = {{"index", d.gpu.index}, {"name", d.gpu.name}, {"uuid", d.gpu.uuid},
              {"method", d.counter ? "energy counter" : "power polling"}, {"read_errors", d.read_errors}};
    unsigned a = 0, b = 0;
    unsigned long long mask = 0;
    g["power_limit_w"] = lib_->device_get_enforced_power_limit(h, &a) == NVML_SUCCESS ? json(watts(a)) : json(nullptr);
    g["default_power_limit_w"] =
        lib_->device_get_default_power_limit(h, &a) == NVML_SUCCESS ? json(watts(a)) : json(nullptr);
    if (lib_->device_get_power_limit_constraints(h, &a, &b) == NVML_SUCCESS) {
      g["min_power_limit_w"] = watts(a);
      g["max_power_limit_w"] = watts(b);
    } else {
      g["min_power_limit_w"] = g["max_power_limit_w"] = nullptr;
    }
    g["temperature_c"] =
        lib_->device_get_temperature(h, NVML_TEMPERATURE_GPU, &a) == NVML_SUCCESS ? json(a) : json(nullptr);
    g["sm_clock_mhz"] = lib_->device_get_clock_info(h, NVML_CLOCK_SM, &a) == NVML_SUCCESS ? json(a) : json(nullptr);
    g["throttle_reasons"] =
        lib_->device_get_throttle_reasons(h, &mask) == NVML_SUCCESS ? json(throttle_reason_names(mask)) : json(nullptr);
    gpus.push_back(g);
  }
  return {{"library", lib_->path()}, {"driver_version", lib_->driver_version()}, {"selection", selection_},
          {"gpus", gpus}};
}

}  // namespace balerbench
