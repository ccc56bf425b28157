// group_cost.cpp: see group_cost.h.
#include "harness/report/group_cost.h"

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

}  // namespace balerbench::report
