// prometheus_text.cpp: see prometheus_text.h.
#include "harness/monitor/prometheus_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace balerbench {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Exposition {
 public:
  void family(const std::string& name, const char* type, const std::string& help) {
    name_ = name;
    out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void sample(const Labels& labels, double value, const std::string& suffix = "") {
    out_ += name_ + suffix;
    if (!labels.empty()) {
      out_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i)
        out_ += (i ? "," : "") + labels[i].first + "=\"" + prometheus_label_value(labels[i].second) + "\"";
      out_ += '}';
    }
    out_ += ' ' + value_text(value) + '\n';
  }
  // A family with one unlabelled sample.
  void single(const std::string& name, const char* type, const std::string& help, double value) {
    family(name, type, help);
    sample({}, value);
  }
  std::string take() { return std::move(out_); }

 private:
  static std::string value_text(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }
  std::string name_, out_;
};

Labels domain_labels(const DomainPower& d) {
  return {{"meter", d.meter}, {"domain", d.domain}, {"kind", d.kind}, {"category", d.category},
          {"in_total", d.in_total ? "true" : "false"}};
}

// Power and energy per meter and domain, with their ± and the attributable part.
void add_power(Exposition& e, const LiveState& s) {
  if (s.power.domains.empty()) return;
  e.family("balerbench_power_watts", "gauge",
           "Power per meter and domain in watts, mean over the trailing second (kind: measured, estimated or "
           "simulated).");
  for (const DomainPower& d : s.power.domains)
    if (!std::isnan(d.power_w)) e.sample(domain_labels(d), d.power_w);
  e.family("balerbench_energy_joules_total", "counter", "Energy per meter and domain in joules since the command started.");
  for (const DomainPower& d : s.power.domains) e.sample(domain_labels(d), d.energy_j);
  // The ± of both, and the attributable part: one family each, left out where no domain has a value.
  struct Optional {
    double DomainPower::*field;
    const char* name;
    const char* help;
  };
  for (const Optional& o :
       {Optional{&DomainPower::power_uncertainty_w, "balerbench_power_uncertainty_watts",
                 "Measurement uncertainty (±) of balerbench_power_watts from the meter's resolution and stated "
                 "accuracy; absent where it is not quantified (estimates)."},
        Optional{&DomainPower::energy_uncertainty_j, "balerbench_energy_uncertainty_joules",
                 "Measurement uncertainty (±) of balerbench_energy_joules_total; absent where it is not quantified."},
        Optional{&DomainPower::attributable_power_w, "balerbench_attributable_power_watts",
                 "The part of balerbench_power_watts attributable to balerbench and its child processes: CPU "
                 "domains at their share of the host's busy CPU time, GPU domains at their share of the "
                 "per-process SM samples."}}) {
    const auto known = [&](const DomainPower& d) { return !std::isnan(d.*o.field); };
    if (std::none_of(s.power.domains.begin(), s.power.domains.end(), known)) continue;
    e.family(o.name, "gauge", o.help);
    for (const DomainPower& d : s.power.domains)
      if (known(d)) e.sample(domain_labels(d), d.*o.field);
  }
}

// The trial being run and its progress, labelled by the trial.
void add_trial(Exposition& e, const LiveState& s) {
  if (!s.in_trial) return;
  const TrialLabels& t = s.trial;
  const Labels tl = {{"experiment", t.experiment}, {"trial", t.trial()}, {"batch_size", std::to_string(t.batch_size)},
                     {"precision", t.precision}, {"power_limit_w", t.power_limit_w}};
  const auto trial_metric = [&](const std::string& name, const std::string& help, double v) {
    if (std::isnan(v)) return;
    e.family(name, "gauge", help);
    e.sample(tl, v);
  };
  trial_metric("balerbench_trial_info", "The trial being run, by its labels (always 1).", 1);
  trial_metric("balerbench_trial_index", "1-based index of the trial in its sweep.", static_cast<double>(t.run_ordinal));
  trial_metric("balerbench_trial_count", "Trials in the sweep.", static_cast<double>(t.run_count));
  if (s.epoch.epoch > 0) {
    trial_metric("balerbench_trial_epoch", "Epochs completed in this trial.", static_cast<double>(s.epoch.epoch));
    trial_metric("balerbench_trial_epochs", "Epochs this trial runs at most.", static_cast<double>(s.epoch.epochs));
    trial_metric("balerbench_trial_train_loss", "Training loss of the last epoch.", s.epoch.train_loss);
    trial_metric("balerbench_trial_val_loss", "Validation loss of the last epoch.", s.epoch.val_loss);
    trial_metric("balerbench_trial_samples_per_second", "Training rows per second in the last epoch.",
                 s.epoch.samples_per_s);
  }
  trial_metric("balerbench_trial_energy_joules", "Energy of the domains counted in totals since the trial began.",
               s.trial_energy_j);
  trial_metric("balerbench_trial_duration_seconds", "Seconds the trial's energy spans: from the meter reading before it began to the latest.", s.trial_duration_s);
}

// The process metrics every Prometheus client library exports.
void add_process(Exposition& e, const ExpositionContext& c) {
  e.single("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", c.process.resident_memory_bytes);
  e.single("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", c.process.virtual_memory_bytes);
  e.single("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", c.process.cpu_s);
  e.single("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
           c.process.start_time_unix_s);
  e.single("process_threads", "gauge", "Number of OS threads in the process.", c.process.threads);
}

void add_gpu_memory(Exposition& e, const ExpositionContext& c) {
  if (c.gpus.empty()) return;
  const auto gpu_labels = [](const GpuMemory& g) -> Labels {
    return {{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}, {"name", g.name}};
  };
  e.family("balerbench_gpu_memory_used_bytes", "gauge", "GPU memory in use on the device (all processes), in bytes.");
  for (const GpuMemory& g : c.gpus) e.sample(gpu_labels(g), g.used_bytes);
  e.family("balerbench_gpu_memory_total_bytes", "gauge", "GPU memory on the device, in bytes.");
  for (const GpuMemory& g : c.gpus) e.sample(gpu_labels(g), g.total_bytes);
}

void add_influx(Exposition& e, const ExpositionContext& c) {
  if (c.influx.empty()) return;
  e.family("balerbench_influx_points_queued_total", "counter", "Points handed to the InfluxDB exporter.");
  for (const InfluxStats& i : c.influx) e.sample({{"target", i.target}}, static_cast<double>(i.points_queued));
  e.family("balerbench_influx_points_sent_total", "counter", "Points the InfluxDB destination accepted.");
  for (const InfluxStats& i : c.influx) e.sample({{"target", i.target}}, static_cast<double>(i.points_sent));
  e.family("balerbench_influx_points_dropped_total", "counter", "Points dropped because the buffer was full.");
  for (const InfluxStats& i : c.influx) e.sample({{"target", i.target}}, static_cast<double>(i.points_dropped));
}

}  // namespace

std::string prometheus_label_value(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string render_prometheus(const LiveState& s, const ExpositionContext& c) {
  Exposition e;
  e.family("balerbench_info", "gauge", "balerbench version and the command being measured (always 1).");
  e.sample({{"version", c.version}, {"command", s.command}, {"run_id", c.run_id}, {"host", c.host}}, 1);
  add_power(e, s);
  add_trial(e, s);
  add_process(e, c);
  add_gpu_memory(e, c);
  add_influx(e, c);
  return e.take();
}

}  // namespace balerbench
