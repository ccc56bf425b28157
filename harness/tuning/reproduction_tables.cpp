// reproduction_tables.cpp: reproduction_tables (replay.h): Zeus's headline result replayed, one row
// per (GPU, workload) with its savings against the default configuration (means over the seeds),
// then each GPU's range over its workloads beside the paper's.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <sstream>

#include "harness/tuning/replay.h"
#include "harness/tuning/replay_text.h"

namespace balerbench {
namespace {

using nlohmann::json;

std::string config_text(const Expected& e) {
  return std::to_string(e.batch_size) + " @ " + num_text(e.power_limit_w) + " W";
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / static_cast<double>(v.size());
}

// The smallest and largest of the finite values added: "15.3%-75.8%".
struct Range {
  double lo = INFINITY, hi = -INFINITY;
  int64_t n = 0;
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    ++n;
  }
  json text() const {
    if (n == 0) return nullptr;
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(1);
    s << lo << "%-" << hi << "%";
    return s.str();
  }
};

// Per GPU, in the order first met: the ranges of all-recurrence energy and time savings, of the
// final choice's energy saving, of the best in hindsight's energy saving.
struct GpuRanges {
  std::vector<std::string> gpus;
  std::map<std::string, std::array<Range, 4>> ranges;
};

// One (GPU, workload)'s savings, each a mean over its seeds, and its final choices (the most
// frequent first, with their counts when there are several seeds).
struct SeedMeans {
  double energy_all = NAN, time_all = NAN, energy_final = NAN, time_final = NAN;
  std::string finals;
};

SeedMeans means_over_seeds(const Reproduction::Row& row) {
  std::vector<double> e_all, t_all, e_final, t_final;
  std::map<std::string, int> finals;
  for (const ReplayResult& r : row.runs) {
    const double n = static_cast<double>(r.recurrences);
    const Expected& d = r.default_config;
    e_all.push_back(100 * (1 - r.total_energy_j / n / d.eta_j));
    t_all.push_back(100 * (1 - r.total_time_s / n / d.tta_s));
    if (r.final_choice) {
      e_final.push_back(100 * (1 - r.final_choice->eta_j / d.eta_j));
      t_final.push_back(100 * (1 - r.final_choice->tta_s / d.tta_s));
      ++finals[config_text(*r.final_choice)];
    }
  }
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [c, k] : finals) by_count.push_back({-k, c});
  std::sort(by_count.begin(), by_count.end());
  SeedMeans m{mean(e_all), mean(t_all), mean(e_final), mean(t_final), ""};
  for (const auto& [k, c] : by_count)
    m.finals += (m.finals.empty() ? "" : ", ") + c + (row.runs.size() > 1 ? " (" + std::to_string(-k) + "x)" : "");
  return m;
}

// The row of one (GPU, workload), its savings added to its GPU's ranges.
std::vector<json> workload_row(const Reproduction::Row& row, GpuRanges& g) {
  const ReplayResult& first = row.runs.front();
  const SeedMeans m = means_over_seeds(row);
  const Expected& d = first.default_config;
  const Expected& b = first.hindsight_best;
  if (!g.ranges.count(row.gpu)) g.gpus.push_back(row.gpu);
  auto& ranges = g.ranges[row.gpu];
  ranges[0].add(m.energy_all);
  ranges[1].add(m.time_all);
  ranges[2].add(m.energy_final);
  if (b.runs) ranges[3].add(100 * (1 - b.eta_j / d.eta_j));
  return {row.gpu,
          first.job.dataset,
          config_text(d),
          first.recurrences,
          static_cast<int64_t>(row.runs.size()),
          num(m.energy_all),
          num(m.time_all),
          m.finals,
          num(m.energy_final),
          num(m.time_final),
          b.runs ? json(config_text(b)) : json(nullptr),
          b.runs ? saving(b.eta_j, d.eta_j) : json(nullptr),
          b.runs ? saving(b.tta_s, d.tta_s) : json(nullptr)};
}

Table workloads_table(const Reproduction& rep, GpuRanges& g) {
  Table t;
  t.name = "reproduction";
  t.title =
      "Zeus's headline result replayed: energy and time saved against the default configuration (the "
      "default batch size at the highest limit)";
  t.columns = {"gpu",
               "workload",
               "default",
               "recurrences",
               "seeds",
               "energy_saving_pct",
               "time_saving_pct",
               "final_choice",
               "final_energy_saving_pct",
               "final_time_saving_pct",
               "best_in_hindsight",
               "best_energy_saving_pct",
               "best_time_saving_pct"};
  for (const Reproduction::Row& row : rep.rows)
    if (!row.runs.empty()) t.rows.push_back(workload_row(row, g));
  t.notes = {
      "made by: " + rep.command,
      "energy_saving_pct / time_saving_pct: the mean per recurrence over all recurrences (exploration, "
      "early-stopped attempts and profiling included) against the default's expected ETA / TTA; final_*: the "
      "expected ETA / TTA of the configuration of the last recurrence; best_*: the cheapest configuration in "
      "hindsight (mean over the trace's runs); means over the seeds",
      "eta 0.5, beta 2, recurrences 2 x |batch sizes| x |power limits|, default batch sizes from Zeus's "
      "example scripts (run_alibaba.py); why the figures differ from the paper's: docs/batch_size_and_power_limit.md"};
  return t;
}

Table ranges_table(const Reproduction& rep, const GpuRanges& g) {
  Table r;
  r.name = "reproduction_ranges";
  r.title = "The ranges over the workloads beside the paper's";
  r.columns = {"gpu",
               "workloads",
               "energy_saving_pct",
               "time_saving_pct",
               "final_energy_saving_pct",
               "best_energy_saving_pct",
               "paper_energy_saving_pct",
               "paper_time_saving_pct"};
  for (const std::string& gpu : g.gpus) {
    const auto& ranges = g.ranges.at(gpu);
    int64_t workloads = 0;
    for (const Reproduction::Row& row : rep.rows) workloads += row.gpu == gpu && !row.runs.empty();
    r.rows.push_back({gpu, workloads, ranges[0].text(), ranges[1].text(), ranges[2].text(), ranges[3].text(),
                      std::string(kZeusPaperEnergyRange), std::string(kZeusPaperTimeSaving)});
  }
  r.notes = {"paper (You, Chung, Chowdhury, NSDI'23): energy " + std::string(kZeusPaperEnergyRange) +
             " and training "
             "time " +
             kZeusPaperTimeSaving +
             " less across its six workloads; the ranges here are over the workloads "
             "replayed on each GPU"};
  return r;
}

}  // namespace

std::vector<Table> reproduction_tables(const Reproduction& rep) {
  GpuRanges ranges;
  Table workloads = workloads_table(rep, ranges);
  return {workloads, ranges_table(rep, ranges)};
}

}  // namespace balerbench
