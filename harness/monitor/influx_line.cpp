// influx_line.cpp: see influx_line.h.
#include "harness/monitor/influx_line.h"

#include <cmath>
#include <cstdio>

namespace balerbench {
namespace {

// Measurement names escape commas and spaces; tag keys, tag values and field keys also '='.
std::string escape(const std::string& s, bool equals) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == ',' || c == ' ' || (equals && c == '=')) out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

LinePoint::LinePoint(const std::string& measurement) : head_(escape(measurement, false)) {}

LinePoint& LinePoint::tag(const std::string& key, const std::string& value) {
  if (!value.empty()) head_ += "," + escape(key, true) + "=" + escape(value, true);
  return *this;
}

LinePoint& LinePoint::field(const std::string& key, double value) {
  if (!std::isfinite(value)) return *this;
  fields_ += (fields_.empty() ? "" : ",") + escape(key, true) + "=" + number_text(value);
  return *this;
}

LinePoint& LinePoint::field_int(const std::string& key, int64_t value) {
  fields_ += (fields_.empty() ? "" : ",") + escape(key, true) + "=" + std::to_string(value) + "i";
  return *this;
}

LinePoint& LinePoint::field_str(const std::string& key, const std::string& value) {
  std::string quoted = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  fields_ += (fields_.empty() ? "" : ",") + escape(key, true) + "=" + quoted + "\"";
  return *this;
}

std::string LinePoint::line(int64_t unix_ns) const {
  if (fields_.empty()) return "";
  return head_ + " " + fields_ + " " + std::to_string(unix_ns);
}

int64_t unix_ns_of(double unix_s) { return static_cast<int64_t>(std::llround(unix_s * 1e9)); }

namespace {

LinePoint tagged(const char* measurement, const LiveState& s, const LineTags& t) {
  LinePoint p(measurement);
  p.tag("host", t.host).tag("run_id", t.run_id).tag("command", s.command);
  if (s.in_trial) {
    p.tag("experiment", s.trial.experiment)
        .tag("trial", s.trial.trial())
        .tag("batch_size", std::to_string(s.trial.batch_size))
        .tag("precision", s.trial.precision)
        .tag("power_limit_w", s.trial.power_limit_w);
  }
  return p;
}

}  // namespace

std::vector<std::string> power_lines(const LiveState& s, const LineTags& t) {
  std::vector<std::string> out;
  const int64_t ns = unix_ns_of(s.power.unix_s);
  for (const DomainPower& d : s.power.domains) {
    LinePoint p = tagged("balerbench_power", s, t);
    p.tag("meter", d.meter).tag("domain", d.domain).tag("kind", d.kind).tag("category", d.category);
    p.field("power_w", d.power_w).field("energy_j", d.energy_j);
    p.field("power_pm_w", d.power_uncertainty_w).field("energy_pm_j", d.energy_uncertainty_j);
    p.field("attributable_power_w", d.attributable_power_w);
    out.push_back(p.line(ns));
  }
  if (!s.power.domains.empty()) {
    LinePoint p = tagged("balerbench_power_total", s, t);
    p.field("power_w", s.power.total_power_w).field("energy_j", s.power.total_energy_j);
    p.field("energy_pm_j", s.power.total_energy_uncertainty_j);
    out.push_back(p.line(ns));
  }
  return out;
}

std::vector<std::string> epoch_lines(const LiveState& s, const LineTags& t, double unix_s) {
  LinePoint p = tagged("balerbench_epoch", s, t);
  p.field_int("epoch", s.epoch.epoch)
      .field_int("epochs", s.epoch.epochs)
      .field("train_loss", s.epoch.train_loss)
      .field("val_loss", s.epoch.val_loss)
      .field("samples_per_s", s.epoch.samples_per_s)
      .field("epoch_duration_s", s.epoch.epoch_duration_s)
      .field("trial_energy_j", s.trial_energy_j)
      .field("trial_duration_s", s.trial_duration_s);
  return {p.line(unix_ns_of(unix_s))};
}

std::string process_line(const LiveState& s, const LineTags& t, const ProcessStats& process,
                         const std::vector<GpuMemory>& gpus, double unix_s) {
  LinePoint p = tagged("balerbench_process", s, t);
  p.field_int("rss_bytes", static_cast<int64_t>(process.resident_memory_bytes)).field("cpu_s", process.cpu_s);
  if (!gpus.empty()) {
    double used = 0;
    for (const GpuMemory& g : gpus) used += g.used_bytes;
    p.field_int("gpu_memory_used_bytes", static_cast<int64_t>(used));
  }
  return p.line(unix_ns_of(unix_s));
}

}  // namespace balerbench
