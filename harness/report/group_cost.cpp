// group_cost.cpp: see group_cost.h.
#include "harness/report/group_cost.h"

#include "harness/report/table_cells.h"

namespace balerbench::report {

CostInputs cost_inputs(const Group& g, bool target) {
  CostInputs c;
  if (g.ok.empty()) {
    c.why = "no finished trial";
    return c;
  }
  const Summary mp = g.stat([](const TrialRecord& t) { return t.max_power_w; });
  if (mp.n < g.ok.size()) {
    c.why = "no MaxPower (set cost.max_power_w)";
    return c;
  }
  c.max_power_w = mp.mean;
  std::vector<std::string> sources;
  for (const auto* t : g.ok) sources.push_back(max_power_source_of(*t));
  c.max_power_source = distinct_joined(sources);
  if (target) {
    const Summary tta_s = g.stat([](const TrialRecord& t) { return t.target_reached ? t.tta_s : std::nullopt; });
    const Summary eta_j = g.stat([](const TrialRecord& t) { return t.target_reached ? t.eta_j : std::nullopt; });
    if (tta_s.n < g.ok.size() || eta_j.n < g.ok.size()) {
      c.why = "target not reached";
      return c;
    }
    c.time_s = tta_s.mean;
    c.energy_j = eta_j.mean;
  } else {
    const Summary t = g.stat([](const TrialRecord& r) { return r.train_s; });
    const Summary e = g.stat([](const TrialRecord& r) { return r.train_energy_j; });
    if (e.n < g.ok.size()) {
      c.why = "no energy measured";
      return c;
    }
    c.time_s = t.mean;
    c.energy_j = e.mean;
  }
  c.ok = true;
  return c;
}

std::string max_power_source_of(const TrialRecord& r) {
  if (!r.result.is_object() || !r.result.contains("max_power") || !r.result["max_power"].is_object()) return "-";
  const nlohmann::json& m = r.result["max_power"];
  const std::string source = m.value("source", std::string());
  if (source == "gpu_max_limit") {
    const int64_t gpus = m.value("gpus", int64_t{1});
    return "the GPU's maximum power limit (NVML" + (gpus > 1 ? ", " + std::to_string(gpus) + " GPUs summed" : "") + ")";
  }
  if (source == "cost.max_power_w") return "cost.max_power_w";
  if (source == "simulated_gpu") return "the simulated GPU's maximum limit";
  if (source == "power_limit_optimizer") return "the power-limit optimiser's highest limit";
  return source.empty() ? "-" : source;
}

std::optional<double> pareto_time_s(const TrialRecord& r, bool target) {
  return target ? (r.target_reached ? r.tta_s : std::nullopt) : r.train_s;
}

std::optional<double> pareto_energy_j(const TrialRecord& r, bool target) {
  return target ? (r.target_reached ? r.eta_j : std::nullopt) : r.train_energy_j;
}

std::vector<ParetoPoint> pareto_candidates(const std::vector<Group>& groups, bool target) {
  std::vector<ParetoPoint> points;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Summary tm = groups[i].stat([&](const TrialRecord& r) { return pareto_time_s(r, target); });
    const Summary en = groups[i].stat([&](const TrialRecord& r) { return pareto_energy_j(r, target); });
    if (tm.n == groups[i].ok.size() && en.n == groups[i].ok.size() && tm.n > 0) points.push_back({tm.mean, en.mean, i});
  }
  return points;
}

}  // namespace balerbench::report
