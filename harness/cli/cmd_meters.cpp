// cmd_meters.cpp: `balerbench meters [--interval S] [--json]`: every meter,
// available or not (with the reason), its kind, its domains and the power
// each domain draws now (two reads --interval apart), and what "auto" picks.
#include <chrono>
#include <cstdio>
#include <thread>

#include "harness/cli/commands.h"
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

json probe_all(const EnergySettings& s, double interval_s) {
  std::vector<std::pair<std::string, MeterProbe>> probes;
  for (const auto& e : meter_catalog()) probes.emplace_back(e.name, probe_meter(e.name, s));
  std::vector<MeterReading> first;
  for (auto& [name, p] : probes) first.push_back(p.available() ? p.meter->read() : MeterReading{});
  std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
  json out = json::array();
  for (std::size_t i = 0; i < probes.size(); ++i) {
    auto& [name, p] = probes[i];
    json m = {{"name", name}, {"kind", meter_kind_name(meter_catalog()[i].kind)}, {"what", meter_catalog()[i].what},
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
    m["domains"] = domains;
    m["update_period_s"] = p.meter->update_period_s();
    m["details"] = p.meter->describe();
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
        char buf[128];
        std::snprintf(buf, sizeof buf, "%s%s %.2f W%s", detail.empty() ? "" : ", ", d["name"].get<std::string>().c_str(),
                      d["power_w"].get<double>(), d["in_total"] ? "" : " (inside another)");
        detail += buf;
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
  EnergySettings s = energy_settings_from(a.energy);
  const json meters = probe_all(s, a.interval_s);
  s.meters = {"auto"};
  json auto_pick = json::array();
  for (const auto& m : open_meters(s).meters) auto_pick.push_back(m->name());
  if (a.json) {
    std::printf("%s\n", json({{"meters", meters}, {"auto", auto_pick}}).dump(2).c_str());
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
      ->check(CLI::Range(0.01, 60.0));
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->callback([a, &run] { run = [a] { return run_meters(*a); }; });
}

}  // namespace balerbench::cli
