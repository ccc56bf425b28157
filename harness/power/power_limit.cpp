// power_limit.cpp: see power_limit.h.
#include "harness/power/power_limit.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "harness/energy/nvml_library.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string watts(double w) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g W", w);
  return buf;
}

}  // namespace

struct NvmlPowerControl::Gpu {
  NvmlLibrary::Gpu info;
};

std::unique_ptr<NvmlPowerControl> NvmlPowerControl::open(std::string& reason) {
  auto lib = NvmlLibrary::open(reason);
  if (!lib) return nullptr;
  if (!lib->device_set_power_limit || !lib->device_get_power_limit) {
    reason = lib->path() + " lacks nvmlDeviceSet/GetPowerManagementLimit";
    return nullptr;
  }
  std::unique_ptr<NvmlPowerControl> c(new NvmlPowerControl());
  c->lib_ = lib;
  std::string note;
  for (const auto& g : lib->visible_gpus(note)) c->gpus_.push_back(std::make_shared<Gpu>(Gpu{g}));
  if (c->gpus_.empty()) {
    reason = "NVML sees no GPU this process may use (" + note + ")";
    return nullptr;
  }
  return c;
}

std::string NvmlPowerControl::name(std::size_t i) const { return gpus_.at(i)->info.name; }
std::string NvmlPowerControl::uuid(std::size_t i) const { return gpus_.at(i)->info.uuid; }

double NvmlPowerControl::limit_w(std::size_t i) const {
  unsigned mw = 0;
  const nvmlReturn_t rc = lib_->device_get_power_limit(gpus_.at(i)->info.handle, &mw);
  if (rc != NVML_SUCCESS)
    throw PowerLimitError("GPU " + uuid(i) + ": cannot read its power limit: " + lib_->error_string(rc), false);
  return mw / 1000.0;
}

double NvmlPowerControl::enforced_limit_w(std::size_t i) const {
  unsigned mw = 0;
  const nvmlReturn_t rc = lib_->device_get_enforced_power_limit(gpus_.at(i)->info.handle, &mw);
  if (rc != NVML_SUCCESS)
    throw PowerLimitError("GPU " + uuid(i) + ": cannot read its enforced power limit: " + lib_->error_string(rc),
                          false);
  return mw / 1000.0;
}

std::pair<double, double> NvmlPowerControl::constraints_w(std::size_t i) const {
  unsigned lo = 0, hi = 0;
  const nvmlReturn_t rc = lib_->device_get_power_limit_constraints(gpus_.at(i)->info.handle, &lo, &hi);
  if (rc != NVML_SUCCESS)
    throw PowerLimitError("GPU " + uuid(i) + ": cannot read its power-limit constraints: " + lib_->error_string(rc),
                          false);
  return {lo / 1000.0, hi / 1000.0};
}

void NvmlPowerControl::set_limit_w(std::size_t i, double limit_w) {
  const auto mw = static_cast<unsigned>(std::lround(limit_w * 1000.0));
  const nvmlReturn_t rc = lib_->device_set_power_limit(gpus_.at(i)->info.handle, mw);
  if (rc == NVML_ERROR_NO_PERMISSION)
    throw PowerLimitError("GPU " + uuid(i) + ": no permission to set the power limit to " + watts(limit_w) +
                              ": changing power limits needs root or CAP_SYS_ADMIN (NVML: " + lib_->error_string(rc) +
                              ")",
                          true);
  if (rc != NVML_SUCCESS)
    throw PowerLimitError(
        "GPU " + uuid(i) + ": setting the power limit to " + watts(limit_w) + " failed: " + lib_->error_string(rc),
        false);
}

json AppliedLimit::to_json() const {
  return {{"uuid", uuid},
          {"name", name},
          {"original_w", original_w},
          {"requested_w", requested_w},
          {"enforced_w", enforced_w},
          {"restored_w", restored_w >= 0 ? json(restored_w) : json(nullptr)}};
}

PowerLimitGuard::PowerLimitGuard(PowerControl& control, std::string journal_path)
    : control_(control), journal_(std::move(journal_path)) {}

PowerLimitGuard::~PowerLimitGuard() {
  try {
    restore();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "balerbench: warning: restoring GPU power limits failed: %s (the journal %s is kept)\n",
                 e.what(), journal_.c_str());
  }
}

bool PowerLimitGuard::touched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !touched_.empty();
}

void PowerLimitGuard::write_journal_locked() const {
  json gpus = json::array();
  for (const auto& [i, a] : touched_)
    gpus.push_back({{"uuid", a.uuid}, {"name", a.name}, {"original_w", a.original_w}});
  json j = writer_.to_json();
  j["gpus"] = gpus;
  const std::string text = j.dump(2) + "\n";
  const fs::path dir = fs::path(journal_).parent_path();
  if (!dir.empty()) fs::create_directories(dir);
  write_file_atomic(journal_, std::vector<uint8_t>(text.begin(), text.end()));
}

std::vector<AppliedLimit> PowerLimitGuard::apply(double limit_w) {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t i = 0; i < control_.count(); ++i) {
    const auto [lo, hi] = control_.constraints_w(i);
    if (limit_w < lo - 1e-9 || limit_w > hi + 1e-9)
      throw InputError("power limit " + watts(limit_w) + " is outside GPU " + control_.uuid(i) + " (" +
                           control_.name(i) + ")'s constraints [" + watts(lo) + ", " + watts(hi) + "]",
                       "choose limits within the range nvidia-smi -q -d POWER reports");
  }
  // Record the originals (and persist them) before the first change.
  bool new_gpu = false;
  for (std::size_t i = 0; i < control_.count(); ++i)
    if (!touched_.count(i)) {
      AppliedLimit a;
      a.uuid = control_.uuid(i);
      a.name = control_.name(i);
      a.original_w = control_.limit_w(i);
      touched_[i] = a;
      new_gpu = true;
    }
  if (new_gpu) write_journal_locked();
  std::vector<AppliedLimit> out;
  for (std::size_t i = 0; i < control_.count(); ++i) {
    control_.set_limit_w(i, limit_w);
    AppliedLimit& a = touched_[i];
    a.requested_w = limit_w;
    a.enforced_w = control_.enforced_limit_w(i);
    a.restored_w = -1;
    out.push_back(a);
  }
  return out;
}

void PowerLimitGuard::keep_journal() {
  std::lock_guard<std::mutex> lock(mu_);
  touched_.clear();
}

std::vector<AppliedLimit> PowerLimitGuard::restore() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<AppliedLimit> out;
  if (touched_.empty()) return out;
  std::string failed;
  for (auto& [i, a] : touched_) {
    try {
      if (std::fabs(control_.limit_w(i) - a.original_w) > 1e-6) control_.set_limit_w(i, a.original_w);
      a.restored_w = control_.enforced_limit_w(i);
      out.push_back(a);
    } catch (const PowerLimitError& e) {
      failed += std::string(failed.empty() ? "" : "; ") + e.what();
    }
  }
  if (!failed.empty()) throw PowerLimitError("restoring power limits: " + failed, false);
  touched_.clear();
  std::error_code ec;
  fs::remove(journal_, ec);
  return out;
}

std::string default_power_journal_path() {
  const char* env = std::getenv("BALERBENCH_POWER_JOURNAL");
  return env && *env ? env : "/var/tmp/balerbench-power-limits.json";
}

std::vector<AppliedLimit> recover_power_limits(PowerControl& control, const std::string& journal_path) {
  std::vector<AppliedLimit> out;
  if (!fs::exists(journal_path)) return out;
  const char* const hint = "check the GPUs' limits with nvidia-smi -q -d POWER, then remove the file";
  std::error_code ec;
  if (!fs::is_regular_file(journal_path, ec))  // a pipe would block the run on its read
    throw InputError(journal_path + ": the power-limit journal is not a regular file", hint);
  std::ifstream in(journal_path);
  const json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("gpus") || !j["gpus"].is_array())
    throw InputError(journal_path + ": a power-limit journal that cannot be read", hint);
  if (const auto writer = LimitHolder::from_json(j); writer && writer->alive())  // a zombie's too: not yet reaped
    throw InputError(journal_path + ": the power-limit journal of a balerbench run that still runs (" +
                         writer->describe() + "): its original limits are its own to put back",
                     "wait for that run to end; if that pid is not balerbench, check the GPUs' limits with "
                     "nvidia-smi -q -d POWER, then remove the file");
  for (const auto& g : j["gpus"]) {
    if (!g.is_object() || !g.contains("uuid") || !g["uuid"].is_string() || !g.contains("original_w") ||
        !g["original_w"].is_number())
      throw InputError(journal_path + ": a power-limit journal entry without a uuid and an original_w: " + g.dump().substr(0, 80),
                       hint);
    const std::string uuid = g["uuid"].get<std::string>();
    const double original = g["original_w"].get<double>();
    for (std::size_t i = 0; i < control.count(); ++i) {
      if (control.uuid(i) != uuid) continue;
      const auto [lo, hi] = control.constraints_w(i);
      if (!(original >= lo - 1e-9 && original <= hi + 1e-9))  // never set what no run could have found
        throw InputError(journal_path + ": names " + watts(original) + " as GPU " + uuid + "'s original limit, " +
                             "outside its constraints [" + watts(lo) + ", " + watts(hi) + "]",
                         hint);
      AppliedLimit a;
      a.uuid = uuid;
      a.name = control.name(i);
      a.original_w = original;
      a.requested_w = control.limit_w(i);
      if (std::fabs(a.requested_w - original) > 1e-6) control.set_limit_w(i, original);
      a.restored_w = control.enforced_limit_w(i);
      out.push_back(a);
    }
  }
  fs::remove(journal_path);
  return out;
}

std::optional<LimitHolder> journal_writer(const std::string& journal_path) {
  std::error_code ec;
  if (!fs::is_regular_file(journal_path, ec)) return std::nullopt;
  std::ifstream in(journal_path);
  if (!in) return std::nullopt;
  const json j = json::parse(in, nullptr, false);
  return j.is_discarded() ? std::nullopt : LimitHolder::from_json(j);
}

}  // namespace balerbench
