// cmd_meters.cpp: `balerbench meters [--interval S] [--json]`: every meter,
// available or not (with the reason), its kind, its domains and the power
// each domain draws now (two reads --interval apart), and what "auto" picks.
#include <chrono>
#include <cstdio>
#include <thread>

#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "harness/cli/json_stdout.h"
#include "harness/cli/energy_options.h"
#include "harness/energy/meter_registry.h"

namespace balerbench::cli {
namespace {

using nlohmann::json;

struct MetersArgs {
  EnergyArgs energy;
  double interval_s = 0.5;
  bool json = false;
};

// Each GPU domain ("gpu0") gets the GPU it measures, as nvidia-smi names it: index, name and
// UUID from NVML (the meter's details), or the simulated GPU's name.
void label_gpu_domains(json& domains, const json& details) {
  for (auto& d : domains) {
    if (d["category"] != domain_category_name(DomainCategory::kGpu)) continue;
    if (details.contains("gpus")) {
      for (const auto& g : details["gpus"])
        if (d["name"] == "gpu" + std::to_string(g["index"].get<int64_t>()))
          d["gpu"] = {{"index", g["index"]}, {"name", g["name"]}, {"uuid", g["uuid"]}};
    } else if (details.contains("name")) {
      d["gpu"] = {{"name", details["name"]}, {"simulated", details.value("simulated", false)}};
    }
  }
}

json probe_all(const EnergySettings& s, double interval_s) {
  std::vector<std::pair<std::string, MeterProbe>> probes;
  for (const MeterEntry* e : meter_registry()) probes.emplace_back(e->name, e->open(s, real_clock()));
  std::vector<MeterReading> first;
  for (auto& [name, p] : probes) first.push_back(p.available() ? p.meter->read() : MeterReading{});
  std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
  json out = json::array();
  for (std::size_t i = 0; i < probes.size(); ++i) {
    auto& [name, p] = probes[i];
    json m = {{"name", name}, {"kind", meter_kind_name(meter_registry()[i]->kind)}, {"what", meter_registry()[i]->what},
              {"available", p.available()}};
    if (!p.available()) {
      m["reason"] = p.unavailable_reason;
      out.push_back(m);
      continue;
    }
    const MeterReading now = p.meter->read();
    const double dt = std::chrono::duration<double>(now.time - first[i].time).count();
    json domains = json::array();
    for (std::size_t d = 0; d < p.meter->domains().size(); ++d) {
      const Domain& dom = p.meter->domains()[d];
      domains.push_back({{"name", dom.name}, {"category", domain_category_name(dom.category)},
                         {"in_total", dom.in_total}, {"note", dom.note},
                         {"power_w", dt > 0 ? (now.energy_j[d] - first[i].energy_j[d]) / dt : 0.0}});
    }
    m["details"] = p.meter->describe();
    label_gpu_domains(domains, m["details"]);
    m["domains"] = domains;
    m["update_period_s"] = p.meter->update_period_s();
    out.push_back(m);
  }
  return out;
}

void print_table(const json& meters, const json& auto_pick) {
  std::printf("%-14s %-10s %-12s %s\n", "meter", "kind", "status", "domains (power now) / reason");
  for (const auto& m : meters) {
    std::string detail;
    if (m["available"]) {
      for (const auto& d : m["domains"]) {
        std::string name = d["name"].get<std::string>();
        if (d.contains("gpu")) name += " (" + d["gpu"]["name"].get<std::string>() + ")";  // gpu0 (NVIDIA H100 ...)
        char buf[96];
        std::snprintf(buf, sizeof buf, " %.2f W%s", d["power_w"].get<double>(), d["in_total"] ? "" : " (inside another)");
        detail += (detail.empty() ? "" : ", ") + name + buf;
      }
    } else {
      detail = m["reason"];
    }
    std::printf("%-14s %-10s %-12s %s\n", m["name"].get<std::string>().c_str(), m["kind"].get<std::string>().c_str(),
                m["available"] ? "available" : "unavailable", detail.c_str());
  }
  std::string picks;
  for (const auto& n : auto_pick) picks += (picks.empty() ? "" : ", ") + n.get<std::string>();
  std::printf("auto uses: %s\n", picks.empty() ? "nothing" : picks.c_str());
}

int run_meters(const MetersArgs& a) {
  JsonStdout json_out(a.json);
  EnergySettings s = energy_settings_from(a.energy);
  const json meters = probe_all(s, a.interval_s);
  s.meters = {MeterChoice::kAuto};
  json auto_pick = json::array();
  for (const auto& m : open_meters(s).meters) auto_pick.push_back(m->name());
  if (a.json) {
    json_out.print({{"meters", meters}, {"auto", auto_pick}});
    return 0;
  }
  print_table(meters, auto_pick);
  return 0;
}

}  // namespace

void register_meters(CLI::App& app, Action& run) {
  auto a = std::make_shared<MetersArgs>();
  CLI::App* cmd = app.add_subcommand("meters", "List the energy meters: availability (with the reason), kind, "
                                               "domains and current power");
  add_energy_options(cmd, a->energy, false);
  cmd->add_option("--interval", a->interval_s, "seconds between the two reads that give the current power (0.5)")
      ->check(in_range(0.01, 60, "SECONDS"));
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->callback([a, &run] { run = [a] { return run_meters(*a); }; });
}

}  // namespace balerbench::cli
