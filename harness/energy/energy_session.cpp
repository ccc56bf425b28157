// energy_session.cpp: see energy_session.h.
#include "harness/energy/energy_session.h"

#include "harness/base/cpu_activity.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "common/paths.h"
#include "harness/energy/emissions_csv.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

using nlohmann::json;

}  // namespace

std::string make_run_id() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<uint64_t>(SteadyClock::now().time_since_epoch().count()));
  char buf[40];
  const uint64_t a = rng(), b = rng();
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

namespace {

json meter_json(const EnergyMeter& m) {
  json doms = json::array();
  for (const auto& d : m.domains())
    doms.push_back({{"name", d.name}, {"category", domain_category_name(d.category)}, {"in_total", d.in_total},
                    {"note", d.note}});
  return {{"name", m.name()}, {"kind", meter_kind_name(m.kind())}, {"domains", doms},
          {"update_period_s", m.update_period_s()}, {"uncertainty", m.edge_model().to_json()},
          {"details", m.describe()}};
}

}  // namespace

std::string format_energy(double j) {
  char buf[48];
  if (std::fabs(j) < 5e-7) j = 0;  // no "-0.000 mJ"
  const double a = std::fabs(j);
  if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3f MJ", j / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof buf, "%.3f kJ", j / 1e3);
  else if (a >= 1) std::snprintf(buf, sizeof buf, "%.3f J", j);
  else std::snprintf(buf, sizeof buf, "%.3f mJ", j * 1e3);
  return buf;
}

std::string format_mass_g(double g) {
  char buf[48];
  if (std::fabs(g) < 5e-10) g = 0;
  const double a = std::fabs(g);
  if (a >= 1e3) std::snprintf(buf, sizeof buf, "%.3f kg", g / 1e3);
  else if (a >= 1) std::snprintf(buf, sizeof buf, "%.3f g", g);
  else if (a >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f mg", g * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3f ug", g * 1e6);
  return buf;
}

EnergySession::EnergySession(const EnergySettings& settings, std::function<void()> sync, std::string run_id,
                             TimeSource& clock)
    : settings_(settings), sync_(std::move(sync)), run_id_(run_id.empty() ? make_run_id() : std::move(run_id)) {
  carbon_ = resolve_carbon_intensity(settings_);  // a bad country code fails before anything starts
  opened_ = open_meters(settings_, clock);
  host_ = read_host_info();
  sampler_ = std::make_unique<Sampler>(std::move(opened_.meters), settings_.sample_hz, Sampler::kMaxPoints, clock);
  sampler_->attribute_to(std::make_shared<ProcessTree>());  // T7: this process and its children
  sampler_->start();
  if (settings_.idle_baseline_s > 0) {
    // An idle baseline while other processes keep the CPUs busy counts their power as idle: refused,
    // and said (no net figures then), rather than subtracted.
    const CpuActivity before = read_cpu_activity();
    const Snapshot a = mark();
    clock.sleep_s(settings_.idle_baseline_s);
    const IdleBaseline b = idle_baseline_from(a, mark());
    const json d = disturbance(before, read_cpu_activity());
    if (d.is_object() && d.value("disturbed", false))
      baseline_refused_ = "the idle baseline was taken on a busy machine (" + d.value("reason", std::string()) +
                          "): it would count other processes' power as idle, so no net figures are given";
    else
      baseline_ = b;
  }
  start_ = mark();
}

EnergySession::~EnergySession() {
  if (sampler_) sampler_->stop();
}

Snapshot EnergySession::mark() {
  if (sync_) sync_();
  Snapshot s = sampler_->snapshot();
  for (std::size_t m = 0; m < s.readings.size(); ++m)
    if (!s.readings[m].lost.empty())
      throw MeterLost("energy meter " + sampler_->meters()[m]->name() + ": " + s.readings[m].lost +
                      ": the run can no longer be measured (hint: check the GPU with nvidia-smi; the machine may "
                      "need a reset by its administrator)");
  return s;
}

WindowResult EnergySession::window(const std::string& name, const Snapshot& a, const Snapshot& b) const {
  return make_window(name, a, b, sampler_->series_between(a.time, b.time), sampler_->meters(),
                     baseline_ ? &*baseline_ : nullptr);
}

WindowResult EnergySession::counter_window(const std::string& name, const Snapshot& a, const Snapshot& b) const {
  return make_window(name, a, b, {}, sampler_->meters(), baseline_ ? &*baseline_ : nullptr);
}

WindowResult EnergySession::add_window(const std::string& phase, const Snapshot& a, const Snapshot& b) {
  WindowResult w = window(phase, a, b);
  phases_.add(w);
  return w;
}

void EnergySession::finish() {
  if (finished_) return;
  const Snapshot end = mark();
  total_ = window("total", start_, end);
  // A phase is short when its windows together hold too few meter updates (one flag per phase, not
  // one per epoch's window).
  phases_.flag_short(settings_.min_meter_updates);
  const std::string flag = short_window_flag(total_.updates, settings_.min_meter_updates);
  if (!flag.empty()) total_.flags.push_back(flag);
  sampler_->stop();
  finished_ = true;
}

json EnergySession::report() const {
  json meters = json::array();
  for (const auto& m : sampler_->meters()) meters.push_back(meter_json(*m));
  json skipped = json::array();
  for (const auto& [name, reason] : opened_.skipped) skipped.push_back({{"name", name}, {"reason", reason}});
  auto with_co2 = [&](const WindowResult& w) {
    json j = w.to_json();
    j["co2_g"] = emissions_g(w.total_energy_j(), carbon_);
    const auto net = w.net_total_energy_j();
    j["net_co2_g"] = net ? json(emissions_g(*net, carbon_)) : json(nullptr);
    const auto wall = w.wall_energy_j();
    j["wall_co2_g"] = wall ? json(emissions_g(*wall, carbon_)) : json(nullptr);
    return j;
  };
  json phases = json::array();
  for (const auto& p : phases_.phases()) phases.push_back(with_co2(p));
  return {{"run_id", run_id_}, {"host", host_.to_json()}, {"meters", meters}, {"skipped_meters", skipped},
          {"carbon", carbon_.to_json()},
          {"process_tree", sampler_->process_tree_json()},
          {"idle_baseline", baseline_ ? baseline_->to_json(sampler_->meters())
                            : baseline_refused_.empty() ? json(nullptr)
                                                        : json({{"refused", baseline_refused_}})},
          {"sampler", {{"requested_hz", sampler_->requested_hz()}, {"effective_hz", sampler_->effective_hz()},
                       {"points", sampler_->series_size()}, {"overhead", sampler_->overhead().to_json()}}},
          {"phases", phases}, {"total", finished_ ? with_co2(total_) : json(nullptr)},
          {"settings", settings_.to_json()}};
}

std::string estimate_assumption(const json& meter) {
  if (meter.value("kind", std::string()) != "estimated" || !meter.contains("details")) return "";
  const json& d = meter["details"];
  const auto num = [](const json& v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g W", v.is_number() ? v.get<double>() : 0.0);
    return v.is_number() ? std::string(buf) : std::string("? W");
  };
  const std::string name = meter.value("name", std::string());
  if (name == "cpu_estimate")
    return "CPU " + num(d.value("tdp_total_w", json())) + " TDP (" + d.value("tdp_source", std::string("?")) +
           ") x the " + (d.value("mode", std::string()) == "process" ? "process tree's" : "whole machine's") +
           " CPU utilisation";
  if (name == "ram_estimate")
    return "RAM " + num(d.value("power_w", json())) + " constant (" + d.value("rule", std::string("?")) + ")";
  return name + ": " + d.value("method", std::string("a power model"));
}

std::string estimate_assumptions(const json& meters) {
  std::string out;
  if (!meters.is_array()) return out;
  for (const json& m : meters)
    if (const std::string a = estimate_assumption(m); !a.empty()) out += (out.empty() ? "" : "; ") + a;
  return out;
}

void print_energy_summary(const json& r, std::FILE* out) {
  std::string measured, estimated, simulated;
  for (const auto& m : r["meters"]) {
    const std::string kind = m["kind"];
    std::string& list = kind == "measured" ? measured : kind == "estimated" ? estimated : simulated;
    list += (list.empty() ? "" : ", ") + m["name"].get<std::string>();
  }
  std::string meters;
  if (!measured.empty()) meters += "measured: " + measured;
  if (!estimated.empty()) meters += (meters.empty() ? "" : "; ") + std::string("estimated: ") + estimated;
  if (!simulated.empty()) meters += (meters.empty() ? "" : "; ") + std::string("SIMULATED: ") + simulated;
  const json& c = r["carbon"];
  const std::string source = c["source"];
  const std::string where = source.rfind("config", 0) == 0 ? "from the config"
                            : !c["country_iso_code"].is_null() ? c["country_iso_code"].get<std::string>() + ", 2023"
                                                               : "world default";
  std::fprintf(out, "energy (%s); CO2 at %.1f g/kWh (%s), PUE %.2f\n", meters.empty() ? "no meters" : meters.c_str(),
               c["carbon_intensity_g_per_kwh"].get<double>(), where.c_str(), c["pue"].get<double>());
  // Estimated joules follow a model's assumptions: say them where the joules are printed.
  if (r.contains("idle_baseline") && r["idle_baseline"].is_object() && r["idle_baseline"].contains("refused"))
    std::fprintf(out, "  ! %s\n", r["idle_baseline"]["refused"].get<std::string>().c_str());
  if (const std::string a = estimate_assumptions(r["meters"]); !a.empty())
    std::fprintf(out, "  estimated energy assumes %s (a measurement needs RAPL, NVML or a wattmeter log: docs/energy.md)\n",
                 a.c_str());
  std::vector<json> rows(r["phases"].begin(), r["phases"].end());
  if (!r["total"].is_null()) rows.push_back(r["total"]);
  int name_width = 11;  // the phase names' column, as wide as the longest (codecs:zfp_accuracy:decompress)
  for (const json& w : rows) name_width = std::max(name_width, static_cast<int>(w["phase"].get<std::string>().size()));
  for (const json& w : rows) {
    const double e = w["total_energy_j"], d = w["duration_s"];
    std::string extra;
    if (!w["total_uncertainty_j"].is_null()) extra += "  ± " + format_energy(w["total_uncertainty_j"]);
    else if (e > 0) extra += "  ± not quantified";
    if (!w["net_total_energy_j"].is_null()) extra += "  net of idle " + format_energy(w["net_total_energy_j"]);
    if (!w["wall_energy_j"].is_null()) extra += "  wall " + format_energy(w["wall_energy_j"]);
    std::fprintf(out, "  %-*s %10.3f s %12s %10.2f W  CO2 %-10s (%s)%s\n", name_width, w["phase"].get<std::string>().c_str(), d,
                 format_energy(e).c_str(), d > 0 ? e / d : 0.0, format_mass_g(w["co2_g"]).c_str(),
                 w["energy_kind"].get<std::string>().c_str(), extra.c_str());
    for (const auto& f : w["flags"]) std::fprintf(out, "    ! %s\n", f.get<std::string>().c_str());
  }
  if (!r["total"].is_null()) {
    const std::string a = attribution_summary(r["total"]);
    if (!a.empty()) std::fprintf(out, "  attributable to this process and its children: %s\n", a.c_str());
  }
}

std::string attribution_summary(const json& w) {
  if (!w.contains("attribution") || !w["attribution"].is_object()) return {};
  std::string out;
  for (const char* category : {"cpu", "gpu"}) {
    if (!w["attribution"].contains(category)) continue;
    const json& a = w["attribution"][category];
    const bool cpu = std::string(category) == "cpu";
    std::string text = std::string(category) + " " + format_energy(a["attributable_j"]);
    if (!a["attributable_uncertainty_j"].is_null()) text += " ± " + format_energy(a["attributable_uncertainty_j"]);
    text += " of " + format_energy(a["energy_j"]);
    char buf[160];
    const double tree = a[cpu ? "tree_cpu_s" : "tree_sm_use"], all = a[cpu ? "busy_cpu_s" : "all_sm_use"];
    if (cpu && all > 0)
      std::snprintf(buf, sizeof buf, " (%.3g s of the host's %.3g s busy CPU time)", tree, all);
    else if (cpu)
      std::snprintf(buf, sizeof buf, " (no CPU tick in the window: share 0.5 ± 0.5)");
    else if (all > 0)
      std::snprintf(buf, sizeof buf, " (%.3g%% of the SM use sampled per process)", 100 * tree / all);
    else
      std::snprintf(buf, sizeof buf, " (no process used the SMs: none attributed)");
    text += buf;
    if (!a["complete"].get<bool>()) text += ", some domains without a share";
    out += (out.empty() ? "" : "; ") + text;
  }
  return out;
}

std::vector<GpuLabel> gpu_labels(const json& meters) {
  std::vector<GpuLabel> out;
  auto number = [](const json& d, const char* key) {
    return d.contains(key) && d[key].is_number() ? std::optional<double>(d[key].get<double>()) : std::nullopt;
  };
  for (const auto& m : meters) {
    if (!m.contains("details")) continue;
    const json& d = m["details"];
    const std::optional<MeterChoice> meter = find_meter_choice(m.value("name", std::string()));
    if (meter == MeterChoice::kNvml && d.contains("gpus")) {
      for (const auto& g : d["gpus"])
        out.push_back({g.value("name", std::string()), g.value("uuid", std::string()), number(g, "power_limit_w"), false});
    } else if (meter == MeterChoice::kSimulatedGpu) {
      out.push_back({d.value("name", std::string("simulated GPU")), "simulated", number(d, "power_limit_w"), true});
    }
  }
  return out;
}

std::vector<GpuLabel> EnergySession::gpus() const {
  json meters = json::array();
  for (const auto& m : sampler_->meters()) meters.push_back({{"name", m->name()}, {"details", m->describe()}});
  return gpu_labels(meters);
}

json EnergySession::write_outputs(const std::string& dir, const std::string& command) const {
  create_output_folder(dir);
  json r = report();
  const std::string text = r.dump(2) + "\n";
  write_file_atomic((std::filesystem::path(dir) / "energy_report.json").string(),
                    std::vector<uint8_t>(text.begin(), text.end()));
  EmissionsContext ctx;
  ctx.run_id = run_id_;
  ctx.experiment_id = command;
  ctx.timestamp = utc_timestamp_now();
  ctx.host = host_;
  ctx.carbon = carbon_;
  ctx.tracking_mode = settings_.cpu_estimate_mode;
  // GPU count and names from the report's meter details (no second round of device queries).
  for (const auto& m : r["meters"])
    for (const auto& d : m["domains"])
      if (d["category"] == domain_category_name(DomainCategory::kGpu)) ++ctx.gpu_count;
  for (const GpuLabel& g : gpu_labels(r["meters"]))
    ctx.gpu_model += (ctx.gpu_model.empty() ? "" : " + ") + (g.simulated ? g.name + " (simulated)" : g.name);
  std::vector<std::string> rows;
  for (const auto& p : phases_.phases()) rows.push_back(emissions_csv_row(p, ctx));
  if (finished_) rows.push_back(emissions_csv_row(total_, ctx));
  append_emissions_csv((std::filesystem::path(dir) / "emissions.csv").string(), rows);
  return r;
}

}  // namespace balerbench
