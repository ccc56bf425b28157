// energy_window.h: the energy and time of a code region, from two snapshots.
//
// Per meter and domain: energy (counter difference), average power, peak
// power (the highest average over any stretch of the sampler's series at
// least twice the meter's update period long) and, with an idle baseline,
// net energy = gross - idle power x duration. Totals add the domains marked
// in_total of every non-wall meter; wall energy (an external meter) is kept
// beside them. Flags say what not to trust: a window shorter than a meter's
// update period, one with no sampler point inside for peak power, or one in which a meter failed to
// read (a lost permission or GPU: the energy of those stretches is missing).
// Windows with the same name add up into a phase (PhaseTotals).
//
// Every measured domain's energy carries a ± (DomainEnergy::uncertainty_j) from its meter's
// EdgeModel: a counter read at an edge lags by up to one update period, so a window is off by at
// most (the higher of its peak and mean power) x update period, plus one count at each edge, plus
// the stated accuracy x energy. A window shorter than 10 update periods of a stepped counter (NVML)
// is interpolated at its edges instead: the counter plus its pending energy (polled power x time
// since the last update), with the ± of those estimates, and flagged. The ± is a measurement
// uncertainty, apart from the spread over repeats.
//
// T7 attribution: next to each CPU and GPU domain's absolute energy, the part attributable to the
// measured process tree (DomainEnergy::attributable_j), from the tree's CPU time (Snapshot::process)
// and the GPU's per-process SM samples (MeterReading::tree_use).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/energy/sampler.h"
#include "harness/energy/window_conditions.h"

namespace balerbench {

// Mean power per meter and domain over an idle stretch, measured before a run.
struct IdleBaseline {
  double duration_s = 0;
  std::vector<std::vector<double>> power_w;  // [meter][domain]
  nlohmann::json to_json(const std::vector<std::unique_ptr<EnergyMeter>>& meters) const;
};

struct DomainEnergy {
  std::string meter, domain;
  DomainCategory category = DomainCategory::kCpu;
  MeterKind kind = MeterKind::kMeasured;
  bool in_total = true;
  double energy_j = 0;
  double avg_power_w = 0;
  double peak_power_w = 0;                // NaN when the series has too few points
  std::optional<double> net_energy_j;     // with a baseline
  // The ± of energy_j from what the meter resolves (EdgeModel): the edge part, independent from one
  // window to the next (windows of a phase add it in quadrature), and the stated-accuracy part,
  // systematic (added linearly). Empty when not quantified (estimates, the simulator).
  std::optional<double> edge_uncertainty_j, accuracy_uncertainty_j;
  bool interpolated = false;  // the counter's pending energy was added at the window's edges
  // The meter failed a read inside the window (an unreadable counter, one that stepped back, a lost
  // GPU): the energy of that stretch is missing, so no ± is given, and the window is flagged.
  bool read_failed = false;
  std::optional<double> uncertainty_j() const;
  // T7: the part of energy_j attributable to the measured process tree (balerbench and its children),
  // beside the absolute figure, never instead of it. CPU domains: the tree's share of the host's busy
  // CPU time in the window (use_tree_s of use_all_s); GPU domains: its share of the SM use in NVML's
  // per-process samples (percent-samples). A window with no SM use by any process attributes none of
  // the GPU's energy; one with no CPU tick at all has a share of 0.5 ± 0.5. Empty where no share is
  // known: RAM and wall domains, a GPU whose per-process use is not sampled. Summed windows add their
  // attributable joules (each at its own share) and their use.
  std::optional<double> attributable_j, attributable_uncertainty_j;
  std::optional<double> use_tree, use_all;
  std::optional<double> attributable_share() const;  // attributable_j / energy_j
  // The highest device memory in use at any read inside the window, edges included
  // (MeterReading::memory_used_bytes): a lower bound of the true peak, as fine as the sampler's rate.
  std::optional<double> memory_peak_bytes;
  // The device's heat at the reads inside the window (window_conditions.h); empty when the meter
  // reads none (every meter but NVML).
  std::optional<WindowThermal> thermal;
};

// The energy of one category (cpu, gpu) of a window's total with the part attributable to the process
// tree: the T7 columns. `complete` is false when a domain of the category has no share.
struct Attribution {
  double energy_j = 0, attributable_j = 0;
  std::optional<double> attributable_uncertainty_j;  // empty when any domain's is
  double use_tree = 0, use_all = 0;                  // CPU seconds, or SM percent-samples
  bool complete = true;
  std::optional<double> share() const;  // attributable / energy
  nlohmann::json to_json(DomainCategory category) const;
};

// A wall meter (wattmeter) against the component meters (RAPL, NVML) over one window
// (docs/reference_tables.md T6: software meters read about 27% below an OmegaWatt wattmeter). The wall sees
// everything behind the plug; what the components do not (fans, disks, network, the rest of the
// board, the power supply's loss) is the difference. Estimates (cpu_estimate, ram_estimate) and the
// simulator are left out of the comparison: only measured domains of the total are components.
struct CrossCheck {
  double wall_j = 0;
  std::optional<double> wall_uncertainty_j;
  double components_j = 0;
  std::optional<double> components_uncertainty_j;  // empty when a component's ± is not quantified
  std::string components;                          // the meters compared, e.g. "rapl + nvml"
  std::string left_out;                            // domains of the total not compared (estimates)
  double unseen_j() const { return wall_j - components_j; }
  std::optional<double> ratio() const;             // components / wall
  std::optional<double> unseen_fraction() const;   // unseen / wall
  // Whether the difference is larger than the two ± together (empty when either is unknown).
  std::optional<bool> resolved() const;
  std::string reading() const;                     // what the difference stands for, in words
  nlohmann::json to_json() const;
};

struct WindowResult {
  std::string name;
  double duration_s = 0;
  double start_unix_s = 0, end_unix_s = 0;  // of the first and last window when summed
  long long windows = 1;
  long long samples = 0;                   // sampler points inside
  // Updates of the slowest measuring meter inside the window (summed over a phase's windows); empty
  // when no meter measures (window_conditions.h).
  std::optional<MeterUpdates> updates;
  std::vector<DomainEnergy> domains;
  std::vector<std::string> flags;

  double total_energy_j() const;            // in_total domains, wall excluded
  // ± of total_energy_j over its quantified domains (empty when none is); uncertainty_coverage() says
  // "measured" when every domain of the total is quantified, else which are not.
  std::optional<double> total_uncertainty_j() const;
  std::string uncertainty_coverage() const;
  std::optional<double> net_total_energy_j() const;
  std::optional<double> wall_energy_j() const;
  double category_energy_j(DomainCategory category) const;
  // With a wall meter and at least one measured component domain in the window, the two compared.
  std::optional<CrossCheck> cross_check() const;
  // The attributable part of the category's energy (in_total domains); empty when no domain of it has
  // a share.
  std::optional<Attribution> attribution(DomainCategory category) const;
  // The sum over GPU domains of their highest device memory in use (NVML), in MiB; empty without one.
  std::optional<double> gpu_memory_peak_mib() const;
  std::string kinds() const;               // "measured", "estimated", "measured+estimated", ...
  void add(const WindowResult& other);     // sums another window of the same phase
  nlohmann::json to_json() const;
};

WindowResult make_window(const std::string& name, const Snapshot& begin, const Snapshot& end,
                         const std::vector<Snapshot>& series_inside,
                         const std::vector<std::unique_ptr<EnergyMeter>>& meters, const IdleBaseline* baseline);

IdleBaseline idle_baseline_from(const Snapshot& begin, const Snapshot& end);

// Phases in first-seen order, each the sum of its windows.
class PhaseTotals {
 public:
  void add(const WindowResult& w);
  const std::vector<WindowResult>& phases() const { return phases_; }
  const WindowResult* find(const std::string& name) const;
  // Flags each phase whose windows hold fewer than `min_updates` meter updates together.
  void flag_short(int64_t min_updates);

 private:
  std::vector<WindowResult> phases_;
};

}  // namespace balerbench
