// table_cells.cpp: see table_cells.h.
#include "harness/report/table_cells.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>
#include <sstream>

#include "harness/report/trial_identity.h"

namespace balerbench::report {

using nlohmann::json;

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json mean_or_null(const Summary& s) { return s.n ? num(s.mean) : json(nullptr); }
json sd_or_null(const Summary& s) { return s.n > 1 ? num(s.stddev) : json(nullptr); }
json ci_or_null(const Summary& s) { return s.n > 1 ? num(s.ci95_half_width) : json(nullptr); }
json median_or_null(const Summary& s) { return s.n ? num(s.median) : json(nullptr); }
json mad_or_null(const Summary& s) { return s.n > 1 ? num(s.mad) : json(nullptr); }

json utc_time(double unix_s) {
  // Up to the last second of the year 9999: beyond it the cast overflows and gmtime_r, or the four
  // digits of the year, give nonsense ("-219246529-01-00T08:29:52Z" for 1e300).
  if (!(unix_s > 0) || !(unix_s <= 253402300799.0)) return nullptr;
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return nullptr;
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string eta_label(double eta) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "cost_eta_%g", eta);
  return buf;
}

std::string distinct_joined(const std::vector<std::string>& texts) {
  std::vector<std::string> seen;
  for (const auto& x : texts)
    if (x != "-" && std::find(seen.begin(), seen.end(), x) == seen.end()) seen.push_back(x);
  std::string s;
  for (const auto& x : seen) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "-" : s;
}

std::optional<double> uncertainty_of(const TrialRecord& r, const char* key) {
  if (!r.result.is_object() || !r.result.contains("energy_uncertainty")) return std::nullopt;
  const json& u = r.result["energy_uncertainty"];
  if (!u.is_object() || !u.contains(key) || !u[key].is_number()) return std::nullopt;
  return u[key].get<double>();
}

std::optional<double> memory_of(const TrialRecord& r, const char* phase, const char* key) {
  if (!r.result.is_object() || !r.result.contains("memory") || !r.result["memory"].is_object()) return std::nullopt;
  const json& m = r.result["memory"];
  if (!m.contains(phase) || !m[phase].is_object() || !m[phase].contains(key) || !m[phase][key].is_number())
    return std::nullopt;
  return m[phase][key].get<double>();
}

std::optional<double> trial_memory_peak(const TrialRecord& r, const char* key) {
  std::optional<double> out;
  for (const char* phase : {"train", "compress", "decompress"})
    if (const auto v = memory_of(r, phase, key)) out = std::max(out.value_or(*v), *v);
  return out;
}

bool has_target(const std::vector<TrialRecord>& trials) {
  for (const auto& t : trials)
    if (!t.spec.is_null() && t.spec.contains("target") && !t.spec["target"].is_null()) return true;
  return false;
}

std::string target_text(const std::vector<TrialRecord>& trials) {
  for (const auto& t : trials)
    if (!t.spec.is_null() && t.spec.contains("target") && !t.spec["target"].is_null()) {
      const json& j = t.spec["target"];
      std::ostringstream s;
      s << j["metric"].get<std::string>() << " <= " << j["value"].get<double>();
      return s.str();
    }
  return "";
}

std::string hardware_of(const std::vector<TrialRecord>& trials) {
  std::set<std::string> hw;
  for (const auto& t : trials)
    if (t.status == TrialStatus::kOk && !t.hardware.empty()) hw.insert(t.hardware);
  if (hw.empty())
    for (const auto& t : trials) {
      const std::string h = t.hardware.empty() ? hardware_label(t.provenance) : t.hardware;
      if (!h.empty()) hw.insert(h);
    }
  std::string s;
  for (const auto& h : hw) s += (s.empty() ? "" : " | ") + h;
  return s.empty() ? "unknown hardware" : s;
}

std::string where_run(const std::vector<TrialRecord>& trials) {
  std::set<std::string> fingerprints;
  SystemId one;
  for (const auto& t : trials) {
    one = system_of(t);
    fingerprints.insert(one.fingerprint);
  }
  if (fingerprints.size() != 1) return hardware_of(trials);
  // A simulated GPU is a meter, not part of the system: its mark stays in the title all the same.
  const std::string hardware = hardware_of(trials);
  const std::string simulated = hardware.find("SIMULATED") != std::string::npos ? " measured by " + hardware : "";
  return (one.legacy ? hardware : one.label + simulated) + " (system " + one.fingerprint + ")";
}

std::vector<const json*> windows_with(const TrialRecord& r, const json* (*part)(const json&)) {
  std::vector<const json*> out;
  if (!r.result.is_object() || !r.result.contains("energy") || !r.result["energy"].is_object()) return out;
  const json& energy = r.result["energy"];
  if (energy.contains("phases") && energy["phases"].is_array())
    for (const auto& w : energy["phases"])
      if (part(w)) out.push_back(&w);
  if (energy.contains("total") && part(energy["total"])) out.push_back(&energy["total"]);
  return out;
}

}  // namespace balerbench::report
