// energy_window.cpp: see energy_window.h.
#include "harness/energy/energy_window.h"

#include <algorithm>
#include <cmath>

#include "harness/base/clock.h"

namespace balerbench {
namespace {

using nlohmann::json;

json number_or_null(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// Highest mean power of (meter m, domain d) over stretches of at least min_span_s that cover the
// points end to end: a tail shorter than min_span_s joins the stretch before it (was: left out, so
// that a short burst at the end could make the window's mean read above its peak). NaN when the
// points span less than min_span_s.
double peak_power(const std::vector<Snapshot>& pts, std::size_t m, std::size_t d, double min_span_s) {
  auto power = [&](std::size_t a, std::size_t b) {
    return (pts[b].readings[m].energy_j[d] - pts[a].readings[m].energy_j[d]) /
           seconds_between(pts[a].readings[m].time, pts[b].readings[m].time);
  };
  std::vector<double> stretches;
  std::size_t a = 0, last_start = 0;
  for (std::size_t b = 1; b < pts.size(); ++b) {
    const double span = seconds_between(pts[a].readings[m].time, pts[b].readings[m].time);
    if (span < min_span_s || span <= 0) continue;
    stretches.push_back(power(a, b));
    last_start = a;
    a = b;
  }
  if (stretches.empty()) return std::nan("");
  if (a + 1 < pts.size()) stretches.back() = power(last_start, pts.size() - 1);  // the tail joins the last stretch
  return *std::max_element(stretches.begin(), stretches.end());
}

std::string fmt_s(double s, int digits = 3) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g s", digits, s);
  return buf;
}

// "a < b" with enough digits that the two do not print alike (0.009996 < 0.01, not 0.01 < 0.01).
std::string fmt_below(double a_s, double b_s) {
  int digits = 3;
  while (digits < 9 && fmt_s(a_s, digits) == fmt_s(b_s, digits)) ++digits;
  return fmt_s(a_s, digits) + " < " + fmt_s(b_s, digits);
}

// The T7 share of a domain's energy: CPU domains by the process tree's CPU time against the host's busy
// time, GPU domains by the tree's SM-use samples against every process's.
void attribute(DomainEnergy& e, const Snapshot& a, const Snapshot& b, const MeterReading& ra, const MeterReading& rb,
               std::size_t d) {
  double share = 0, share_u = 0;
  if (e.category == DomainCategory::kCpu && a.process.valid && b.process.valid) {
    const double tree = std::max(0.0, b.process.tree_cpu_s - a.process.tree_cpu_s);
    const double all = std::max(0.0, b.process.busy_cpu_s - a.process.busy_cpu_s);
    e.use_tree = tree;
    e.use_all = all;
    // Both sums move in clock ticks, and each edge can be off by one: two ticks on each side.
    const double tick = a.process.tick_s > 0 ? a.process.tick_s : 0.01;
    if (all > 0) {
      share = std::min(1.0, tree / all);
      share_u = std::min(1.0, 2 * tick * (1 + share) / all);
    } else {
      share = share_u = 0.5;  // no tick in the window: anything from none to all of it
    }
  } else if (e.category == DomainCategory::kGpu && d < ra.tree_use.size() && d < rb.tree_use.size() &&
             d < ra.all_use.size() && d < rb.all_use.size() && std::isfinite(ra.all_use[d]) &&
             std::isfinite(rb.all_use[d])) {
    const double tree = std::max(0.0, rb.tree_use[d] - ra.tree_use[d]);
    const double all = std::max(0.0, rb.all_use[d] - ra.all_use[d]);
    e.use_tree = tree;
    e.use_all = all;
    // No SM use by any process: none of the board's energy is anyone's. Else one sample of full use
    // either way at the edges.
    share = all > 0 ? std::min(1.0, tree / all) : 0;
    share_u = all > 0 ? std::min(1.0, 100 / all) : 0;
  } else {
    return;
  }
  e.attributable_j = share * e.energy_j;
  if (e.uncertainty_j()) e.attributable_uncertainty_j = share * *e.uncertainty_j() + share_u * std::fabs(e.energy_j);
}

}  // namespace

json IdleBaseline::to_json(const std::vector<std::unique_ptr<EnergyMeter>>& meters) const {
  json power = json::object();
  for (std::size_t m = 0; m < meters.size() && m < power_w.size(); ++m)
    for (std::size_t d = 0; d < meters[m]->domains().size(); ++d)
      power[meters[m]->name() + "/" + meters[m]->domains()[d].name] = power_w[m][d];
  return {{"duration_s", duration_s}, {"power_w", power}};
}

IdleBaseline idle_baseline_from(const Snapshot& a, const Snapshot& b) {
  IdleBaseline base;
  base.duration_s = seconds_between(a.time, b.time);
  for (std::size_t m = 0; m < a.readings.size(); ++m) {
    const double dt = seconds_between(a.readings[m].time, b.readings[m].time);
    std::vector<double> p;
    for (std::size_t d = 0; d < a.readings[m].energy_j.size(); ++d)
      p.push_back(dt > 0 ? (b.readings[m].energy_j[d] - a.readings[m].energy_j[d]) / dt : 0.0);
    base.power_w.push_back(p);
  }
  return base;
}

namespace {

// The window's flags for one meter read at `ra` and `rb`: failed reads inside, a window shorter than
// its update period, or edges interpolated.
void flag_meter(WindowResult& w, const EnergyMeter& meter, const MeterReading& ra, const MeterReading& rb,
                const EdgeModel& edges, bool interpolate) {
  const double period = meter.update_period_s();
  const long long failed = rb.read_errors - ra.read_errors;
  if (failed > 0)
    w.flags.push_back(std::to_string(failed) + " failed read" + (failed == 1 ? "" : "s") + " of " + meter.name() +
                      " inside: its energy counts nothing for the stretches they cover and may read low");
  if (w.duration_s < period && !interpolate)
    w.flags.push_back("shorter than " + meter.name() + "'s update period (" + fmt_below(w.duration_s, period) +
                      "): its energy may read low or zero");
  if (interpolate)
    w.flags.push_back("interpolated at the edges: shorter than 10 update periods of " + meter.name() + " (" +
                      fmt_below(w.duration_s, 10 * edges.update_period_s) +
                      "); its counter plus the energy it did not hold yet at each edge (polled power x time "
                      "since its last update)");
}

// The ± of domain `d`'s energy in `e` from a meter whose edges are quantified: its steps and the
// energy not yet counted at each edge, and its stated accuracy.
void add_uncertainty(DomainEnergy& e, const EdgeModel& edges, bool interpolate, const MeterReading& ra,
                     const MeterReading& rb, std::size_t d) {
  const double edge_power_w =
      std::max(0.0, std::isnan(e.peak_power_w) ? e.avg_power_w : std::max(e.peak_power_w, e.avg_power_w));
  e.edge_uncertainty_j =
      2 * edges.step_j + (interpolate ? std::hypot(ra.pending_uncertainty_j[d], rb.pending_uncertainty_j[d])
                                      : edge_power_w * edges.update_period_s);
  e.accuracy_uncertainty_j = edges.accuracy_fraction * std::fabs(e.energy_j);
}

}  // namespace

WindowResult make_window(const std::string& name, const Snapshot& a, const Snapshot& b,
                         const std::vector<Snapshot>& inside, const std::vector<std::unique_ptr<EnergyMeter>>& meters,
                         const IdleBaseline* baseline) {
  WindowResult w;
  w.name = name;
  w.duration_s = seconds_between(a.time, b.time);
  w.start_unix_s = a.unix_s;
  w.end_unix_s = b.unix_s;
  w.samples = static_cast<long long>(inside.size());
  w.updates = meter_updates(w.duration_s, meters);
  std::vector<Snapshot> pts;  // edges and the series between them
  pts.push_back(a);
  for (const auto& s : inside)
    if (s.time > a.time && s.time < b.time) pts.push_back(s);
  pts.push_back(b);
  for (std::size_t m = 0; m < meters.size(); ++m) {
    const EnergyMeter& meter = *meters[m];
    const double dt = seconds_between(a.readings[m].time, b.readings[m].time);
    const double period = meter.update_period_s();
    const EdgeModel edges = meter.edge_model();
    const MeterReading &ra = a.readings[m], &rb = b.readings[m];
    const bool interpolate = edges.quantified && edges.stepped && w.duration_s < 10 * edges.update_period_s &&
                             ra.pending_j.size() == meter.domains().size() &&
                             rb.pending_j.size() == meter.domains().size();
    flag_meter(w, meter, ra, rb, edges, interpolate);
    for (std::size_t d = 0; d < meter.domains().size(); ++d) {
      const Domain& dom = meter.domains()[d];
      DomainEnergy e;
      e.meter = meter.name();
      e.domain = dom.name;
      e.category = dom.category;
      e.kind = meter.kind();
      e.in_total = dom.in_total;
      e.energy_j = rb.energy_j[d] - ra.energy_j[d];
      if (interpolate) e.energy_j += rb.pending_j[d] - ra.pending_j[d];
      e.interpolated = interpolate;
      e.avg_power_w = dt > 0 ? e.energy_j / dt : 0;
      e.peak_power_w = peak_power(pts, m, d, std::max(2 * period, 1e-3));
      if (baseline && m < baseline->power_w.size()) e.net_energy_j = e.energy_j - baseline->power_w[m][d] * dt;
      e.read_failed = rb.read_errors > ra.read_errors;
      if (edges.quantified && !e.read_failed) add_uncertainty(e, edges, interpolate, ra, rb, d);
      attribute(e, a, b, ra, rb, d);
      for (const Snapshot& pt : pts)
        if (d < pt.readings[m].memory_used_bytes.size() && std::isfinite(pt.readings[m].memory_used_bytes[d]))
          e.memory_peak_bytes = std::max(e.memory_peak_bytes.value_or(0.0), pt.readings[m].memory_used_bytes[d]);
      e.thermal = thermal_between(pts, m, d);
      w.domains.push_back(e);
    }
  }
  return w;
}

std::optional<double> WindowResult::gpu_memory_peak_mib() const {
  std::optional<double> mib;
  for (const auto& d : domains)
    if (d.category == DomainCategory::kGpu && d.memory_peak_bytes)
      mib = mib.value_or(0) + *d.memory_peak_bytes / (1024.0 * 1024.0);
  return mib;
}

std::optional<double> DomainEnergy::attributable_share() const {
  if (!attributable_j || !(std::fabs(energy_j) > 0)) return std::nullopt;
  return *attributable_j / energy_j;
}

std::optional<double> Attribution::share() const {
  if (!(std::fabs(energy_j) > 0)) return std::nullopt;
  return attributable_j / energy_j;
}

json Attribution::to_json(DomainCategory category) const {
  const auto s = share();
  const bool cpu = category == DomainCategory::kCpu;
  return {{"energy_j", energy_j},
          {"attributable_j", attributable_j},
          {"attributable_uncertainty_j", attributable_uncertainty_j ? json(*attributable_uncertainty_j) : json(nullptr)},
          {"share", s ? json(*s) : json(nullptr)},
          {cpu ? "tree_cpu_s" : "tree_sm_use", use_tree},
          {cpu ? "busy_cpu_s" : "all_sm_use", use_all},
          {"complete", complete},
          {"basis", cpu ? "the process tree's share of the host's busy CPU time (/proc)"
                        : "the process tree's share of the SM use in NVML's per-process samples"}};
}

std::optional<Attribution> WindowResult::attribution(DomainCategory category) const {
  Attribution a;
  bool any = false, quantified = true;
  double u2 = 0;
  for (const auto& d : domains) {
    if (!d.in_total || d.category != category) continue;
    a.energy_j += d.energy_j;
    if (!d.attributable_j) {
      a.complete = false;
      continue;
    }
    any = true;
    a.attributable_j += *d.attributable_j;
    a.use_tree += d.use_tree.value_or(0);
    a.use_all += d.use_all.value_or(0);
    if (d.attributable_uncertainty_j) u2 += *d.attributable_uncertainty_j * *d.attributable_uncertainty_j;
    else quantified = false;
  }
  if (!any) return std::nullopt;
  // CPU domains of one window share one process share: their use is the same figures, not a sum.
  if (category == DomainCategory::kCpu)
    for (const auto& d : domains)
      if (d.in_total && d.category == category && d.use_tree) {
        a.use_tree = *d.use_tree;
        a.use_all = *d.use_all;
        break;
      }
  if (quantified) a.attributable_uncertainty_j = std::sqrt(u2);
  return a;
}

std::optional<double> DomainEnergy::uncertainty_j() const {
  if (!edge_uncertainty_j) return std::nullopt;
  return *edge_uncertainty_j + accuracy_uncertainty_j.value_or(0);
}

namespace {

// The ± of a sum of domains: their edge parts in quadrature (independent meters and domains), their
// stated-accuracy parts linearly (systematic).
struct UncertaintySum {
  double edge2 = 0, accuracy = 0;
  bool any = false, all = true;  // some, every domain added quantified
  void add(const DomainEnergy& d) {
    if (!d.edge_uncertainty_j) {
      all = false;
      return;
    }
    any = true;
    edge2 += *d.edge_uncertainty_j * *d.edge_uncertainty_j;
    accuracy += d.accuracy_uncertainty_j.value_or(0);
  }
  double value_j() const { return std::sqrt(edge2) + accuracy; }
};

}  // namespace

std::optional<double> WindowResult::total_uncertainty_j() const {
  UncertaintySum sum;
  for (const auto& d : domains)
    if (d.in_total && d.category != DomainCategory::kWall) sum.add(d);
  if (!sum.any) return std::nullopt;
  return sum.value_j();
}

std::string WindowResult::uncertainty_coverage() const {
  std::string missing, failed;  // estimates; domains whose meter failed a read inside
  bool any = false;
  for (const auto& d : domains) {
    if (!d.in_total || d.category == DomainCategory::kWall) continue;
    std::string& list = d.read_failed ? failed : missing;
    if (d.edge_uncertainty_j) {
      any = true;
    } else if (list.find(d.meter + "/") == std::string::npos) {
      list += (list.empty() ? "" : ", ") + d.meter + "/" + d.domain;
    }
  }
  if (missing.empty() && failed.empty()) return any ? "measured" : "none";
  std::string why;
  if (!missing.empty()) why = missing + " (estimates, whose model error is not known)";
  if (!failed.empty())
    why += (why.empty() ? "" : "; ") + failed + " (failed reads inside: the energy of their stretches is missing)";
  return (any ? "partial: not quantified for " : "not quantified: ") + why;
}

double WindowResult::total_energy_j() const {
  double t = 0;
  for (const auto& d : domains)
    if (d.in_total && d.category != DomainCategory::kWall) t += d.energy_j;
  return t;
}

std::optional<double> WindowResult::net_total_energy_j() const {
  std::optional<double> t;
  for (const auto& d : domains)
    if (d.in_total && d.category != DomainCategory::kWall && d.net_energy_j) t = t.value_or(0) + *d.net_energy_j;
  return t;
}

std::optional<double> WindowResult::wall_energy_j() const {
  std::optional<double> t;
  for (const auto& d : domains)
    if (d.category == DomainCategory::kWall) t = t.value_or(0) + d.energy_j;
  return t;
}

std::optional<CrossCheck> WindowResult::cross_check() const {
  CrossCheck c;
  bool wall = false, component = false;
  UncertaintySum wall_pm, components_pm;
  std::vector<std::string> meters;
  for (const auto& d : domains) {
    if (d.category == DomainCategory::kWall) {
      wall = true;
      c.wall_j += d.energy_j;
      wall_pm.add(d);
      continue;
    }
    if (!d.in_total) continue;
    if (d.kind != MeterKind::kMeasured) {
      c.left_out += (c.left_out.empty() ? "" : ", ") + d.meter + "/" + d.domain + " (" + meter_kind_name(d.kind) + ")";
      continue;
    }
    component = true;
    c.components_j += d.energy_j;
    if (std::find(meters.begin(), meters.end(), d.meter) == meters.end()) meters.push_back(d.meter);
    components_pm.add(d);
  }
  if (!wall || !component) return std::nullopt;
  for (const auto& m : meters) c.components += (c.components.empty() ? "" : " + ") + m;
  if (wall_pm.all) c.wall_uncertainty_j = wall_pm.value_j();
  if (components_pm.all) c.components_uncertainty_j = components_pm.value_j();
  return c;
}

double WindowResult::category_energy_j(DomainCategory category) const {
  double t = 0;
  for (const auto& d : domains)
    if (d.in_total && d.category == category) t += d.energy_j;
  return t;
}

std::string WindowResult::kinds() const {
  std::string out;
  for (MeterKind kind : {MeterKind::kMeasured, MeterKind::kEstimated, MeterKind::kSimulated}) {
    const bool present =
        std::any_of(domains.begin(), domains.end(), [kind](const DomainEnergy& d) { return d.kind == kind; });
    if (present) out += (out.empty() ? "" : "+") + std::string(meter_kind_name(kind));
  }
  return out.empty() ? "none" : out;
}

void WindowResult::add(const WindowResult& o) {
  duration_s += o.duration_s;
  end_unix_s = o.end_unix_s;
  windows += o.windows;
  samples += o.samples;
  if (updates && o.updates) updates->add(*o.updates);
  else if (o.updates) updates = o.updates;
  for (std::size_t i = 0; i < domains.size() && i < o.domains.size(); ++i) {
    DomainEnergy& e = domains[i];
    e.energy_j += o.domains[i].energy_j;
    e.avg_power_w = duration_s > 0 ? e.energy_j / duration_s : 0;
    const double p = o.domains[i].peak_power_w;
    if (!std::isnan(p)) e.peak_power_w = std::isnan(e.peak_power_w) ? p : std::max(e.peak_power_w, p);
    if (e.net_energy_j && o.domains[i].net_energy_j) *e.net_energy_j += *o.domains[i].net_energy_j;
    if (e.edge_uncertainty_j && o.domains[i].edge_uncertainty_j)
      e.edge_uncertainty_j = std::hypot(*e.edge_uncertainty_j, *o.domains[i].edge_uncertainty_j);
    else
      e.edge_uncertainty_j.reset();
    if (e.accuracy_uncertainty_j && o.domains[i].accuracy_uncertainty_j)
      *e.accuracy_uncertainty_j += *o.domains[i].accuracy_uncertainty_j;
    e.interpolated = e.interpolated || o.domains[i].interpolated;
    e.read_failed = e.read_failed || o.domains[i].read_failed;
    const DomainEnergy& od = o.domains[i];
    if (od.memory_peak_bytes) e.memory_peak_bytes = std::max(e.memory_peak_bytes.value_or(0.0), *od.memory_peak_bytes);
    if (od.thermal) {
      if (!e.thermal) e.thermal = WindowThermal{};
      e.thermal->add(*od.thermal);
    }
    if (e.attributable_j && od.attributable_j) {
      *e.attributable_j += *od.attributable_j;
      *e.use_tree += od.use_tree.value_or(0);
      *e.use_all += od.use_all.value_or(0);
      if (e.attributable_uncertainty_j && od.attributable_uncertainty_j)
        e.attributable_uncertainty_j = std::hypot(*e.attributable_uncertainty_j, *od.attributable_uncertainty_j);
      else
        e.attributable_uncertainty_j.reset();
    } else {
      e.attributable_j.reset();
      e.attributable_uncertainty_j.reset();
      e.use_tree.reset();
      e.use_all.reset();
    }
  }
  for (const auto& f : o.flags)
    if (std::find(flags.begin(), flags.end(), f) == flags.end()) flags.push_back(f);
}

json WindowResult::to_json() const {
  json doms = json::array();
  for (const auto& d : domains) {
    doms.push_back({{"meter", d.meter}, {"domain", d.domain}, {"category", domain_category_name(d.category)}, {"kind", meter_kind_name(d.kind)},
                    {"in_total", d.in_total}, {"energy_j", d.energy_j}, {"avg_power_w", d.avg_power_w},
                    {"peak_power_w", number_or_null(d.peak_power_w)},
                    {"net_energy_j", d.net_energy_j ? json(*d.net_energy_j) : json(nullptr)},
                    {"uncertainty_j", d.uncertainty_j() ? json(*d.uncertainty_j()) : json(nullptr)},
                    {"interpolated", d.interpolated}, {"read_failed", d.read_failed},
                    {"attributable_j", d.attributable_j ? json(*d.attributable_j) : json(nullptr)},
                    {"attributable_share", d.attributable_share() ? json(*d.attributable_share()) : json(nullptr)},
                    {"memory_peak_mib", d.memory_peak_bytes ? json(*d.memory_peak_bytes / (1024.0 * 1024.0)) : json(nullptr)}});
    if (d.thermal) doms.back()["thermal"] = d.thermal->to_json();
  }
  json attribution = json::object();
  for (DomainCategory c : {DomainCategory::kCpu, DomainCategory::kGpu})
    if (const auto at = this->attribution(c)) attribution[domain_category_name(c)] = at->to_json(c);
  const auto net = net_total_energy_j();
  const auto wall = wall_energy_j();
  const auto u = total_uncertainty_j();
  const double total = total_energy_j();
  const auto cross = cross_check();
  return {{"phase", name}, {"duration_s", duration_s}, {"windows", windows}, {"start_unix_s", start_unix_s},
          {"end_unix_s", end_unix_s}, {"samples", samples}, {"meter_updates", updates ? updates->to_json() : json(nullptr)},
          {"energy_kind", kinds()},
          {"total_energy_j", total_energy_j()}, {"net_total_energy_j", net ? json(*net) : json(nullptr)},
          {"wall_energy_j", wall ? json(*wall) : json(nullptr)},
          {"total_uncertainty_j", u ? json(*u) : json(nullptr)},
          {"total_uncertainty_pct", u && total > 0 ? json(100 * *u / total) : json(nullptr)},
          {"uncertainty", uncertainty_coverage()}, {"domains", doms}, {"flags", flags},
          {"crosscheck", cross ? cross->to_json() : json(nullptr)},
          {"attribution", attribution.empty() ? json(nullptr) : attribution},
          {"gpu_memory_peak_mib", gpu_memory_peak_mib() ? json(*gpu_memory_peak_mib()) : json(nullptr)}};
}

void PhaseTotals::add(const WindowResult& w) {
  for (auto& p : phases_)
    if (p.name == w.name) {
      p.add(w);
      return;
    }
  phases_.push_back(w);
}

void PhaseTotals::flag_short(int64_t min_updates) {
  for (auto& p : phases_) {
    const std::string flag = short_window_flag(p.updates, min_updates);
    if (!flag.empty() && std::find(p.flags.begin(), p.flags.end(), flag) == p.flags.end()) p.flags.push_back(flag);
  }
}

const WindowResult* PhaseTotals::find(const std::string& name) const {
  for (const auto& p : phases_)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace balerbench
