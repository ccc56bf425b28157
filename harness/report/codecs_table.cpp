// codecs_table.cpp: --table codecs, and the table `balerbench codecs` prints: Baler against the
// classical codecs at matched error (run/codec_comparison.h), one row per codec. In a report, one
// table per configuration (trial_groups.h), each figure the median over the repeats that measured the
// codecs (sweeps with "codecs": {"enabled": true}).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "harness/base/statistics.h"
#include "harness/report/tables.h"
#include "harness/report/trial_groups.h"

namespace balerbench {
namespace {

using nlohmann::json;

// The value at `path` (a JSON pointer) of each comparison's row for `codec`, when a number.
std::vector<double> values_of(const std::vector<const json*>& comparisons, const std::string& codec,
                              const std::function<const json*(const json& row)>& get) {
  std::vector<double> v;
  for (const json* c : comparisons)
    for (const json& row : (*c)["codecs"])
      if (row.value("codec", "") == codec) {
        const json* x = get(row);
        if (x && x->is_number()) v.push_back(x->get<double>());
      }
  return v;
}

json median_or_null(const std::vector<double>& v) { return v.empty() ? json(nullptr) : json(summarize(v).median); }

const json* at(const json& j, const char* pointer) {
  const json::json_pointer p(pointer);
  return j.contains(p) ? &j[p] : nullptr;
}

// Baler's break-even against each codec over the repeats (null: none), and the first repeat's reason.
struct BreakEven {
  std::map<std::string, std::vector<json>> uses;
  std::map<std::string, std::string> why;
};

BreakEven break_even_of(const std::vector<const json*>& comparisons) {
  BreakEven be;
  for (const json* c : comparisons)
    for (const json& row : (*c)["codecs"])
      if (row.value("codec", "") == "baler" && row.contains("break_even"))
        for (const json& b : row["break_even"]) {
          be.uses[b.value("codec", "")].push_back(b.value("uses", json(nullptr)));
          if (!be.why.count(b.value("codec", ""))) be.why[b.value("codec", "")] = b.value("why", std::string());
        }
  return be;
}

// The cell "Baler breaks even after" of `codec`.
json break_even_cell(const std::string& codec, const BreakEven& be) {
  if (codec == "baler") return "-";
  const auto b = be.uses.find(codec);
  if (b == be.uses.end()) return nullptr;
  std::vector<double> n;
  for (const json& u : b->second)
    if (u.is_number()) n.push_back(u.get<double>());
  if (n.size() == b->second.size()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f compressions", summarize(n).median);
    return std::string(buf);
  }
  if (!n.empty()) return "in " + std::to_string(n.size()) + " of " + std::to_string(b->second.size()) + " repeats";
  const std::string& w = be.why.at(codec);
  return w.rfind("never", 0) == 0           ? "never (its compress + decompress cost less than Baler's)"
         : w.rfind("less accurate", 0) == 0 ? "- (less accurate than Baler)"
                                            : "-";
}

// The median of `codec`'s cost per MB with the training spread over `n` compressions.
json amortised_cell(const std::vector<const json*>& comparisons, const std::string& codec, int64_t n) {
  std::vector<double> v;
  for (const json* cmp : comparisons)
    for (const json& r : (*cmp)["codecs"])
      if (r.value("codec", "") == codec && r.contains("amortised"))
        for (const json& a : r["amortised"])
          if (a.value("uses", int64_t{0}) == n) {
            const json& x = a.contains("j_per_mb") ? a["j_per_mb"] : a.value("s_per_mb", json(nullptr));
            if (x.is_number()) v.push_back(x.get<double>());
          }
  return median_or_null(v);
}

// The ± of one compress and one decompress, added in quadrature (independent windows), per MB.
json uncertainty_cell(const std::vector<const json*>& comparisons, const std::string& codec, double mb) {
  const std::vector<double> c = values_of(comparisons, codec, [](const json& r) { return at(r, "/compress/uncertainty_j"); });
  const std::vector<double> d = values_of(comparisons, codec, [](const json& r) { return at(r, "/decompress/uncertainty_j"); });
  if (c.empty() || d.empty() || mb <= 0) return nullptr;
  return std::hypot(summarize(c).median, summarize(d).median) / mb;
}

// One codec's row: the medians over the repeats of each figure.
std::vector<json> codec_cells(const std::vector<const json*>& comparisons, const json& row, bool energy,
                              const std::vector<int64_t>& uses, double mb, const BreakEven& be) {
  const std::string codec = row.value("codec", "");
  const auto med = [&](const char* pointer) {
    return median_or_null(values_of(comparisons, codec, [pointer](const json& r) { return at(r, pointer); }));
  };
  std::vector<json> cells = {codec, row.value("setting", ""), med("/ratio"), med("/ratio_with_decoder"),
                             med("/error/max_abs"), med("/error/rmse"), med("/error/psnr_db"),
                             med("/error/worst_column_relative_rms_pct"), med("/compress/mb_per_s"),
                             med("/decompress/mb_per_s"), energy ? med("/j_per_mb") : med("/s_per_mb")};
  if (row.contains("error") && !row["error"].value("finite", true)) {
    cells[4] = "inf";  // an overflowing downcast: its errors are infinite, not unknown
    cells[5] = "inf";
  }
  if (energy) cells.push_back(uncertainty_cell(comparisons, codec, mb));
  for (int64_t n : uses) cells.push_back(amortised_cell(comparisons, codec, n));
  cells.push_back(break_even_cell(codec, be));
  return cells;
}

// What the table's figures are, then the first repeat's notes (they stand for all).
void add_notes(Table& t, const std::vector<const json*>& comparisons, bool energy) {
  const json& first = *comparisons.front();
  t.notes.push_back("ratio = the data array's bytes (" + std::to_string(first.value("original_bytes", int64_t{0})) +
                    ", " + first.value("dtype", std::string("?")) + ") over the codec's; Baler's ratio with decoder "
                    "also counts model.pt and the normalization file, which a reader must have.");
  t.notes.push_back("ZFP fixed accuracy runs at Baler's max abs error (" +
                    (first["tolerance"].is_number() ? json(first["tolerance"]).dump() : std::string("-")) +
                    "): ratio at equal error; ZFP fixed rate at Baler's ratio: error at equal ratio.");
  t.notes.push_back(std::string("cost = one compress and one decompress per MB of data, by ") +
                    (energy ? "the energy meters (± from their resolution)" : "time (energy not measured)") +
                    "; the break-even is against codecs at least as accurate as Baler (max abs error), "
                    "the training spread over that many compressions of data this size.");
  if (comparisons.size() > 1)
    t.notes.push_back("medians over " + std::to_string(comparisons.size()) + " repeats (the break-even: the median of "
                      "each repeat's own); the settings and the notes below are the first repeat's.");
  for (const json& n : first.value("notes", json::array())) t.notes.push_back(n.get<std::string>());
  for (const json& row : first["codecs"])
    for (const json& n : row.value("notes", json::array()))
      t.notes.push_back(row.value("codec", "") + ": " + n.get<std::string>());
}

}  // namespace

Table codecs_table(const std::vector<const json*>& comparisons, const std::string& title) {
  Table t;
  t.name = "codecs";
  t.title = title;
  if (comparisons.empty()) return t;
  const json& first = *comparisons.front();
  const bool energy = first.value("basis", "time") == "energy";
  const std::string unit = energy ? "J/MB" : "s/MB";
  std::vector<int64_t> uses;
  for (const json& u : first.value("uses", json::array())) uses.push_back(u.get<int64_t>());
  t.columns = {"codec", "setting", "ratio", "ratio with decoder", "max abs error", "RMSE", "PSNR dB",
               "worst column rel. RMS %", "compress MB/s", "decompress MB/s", unit + " (compress + decompress)"};
  if (energy) t.columns.push_back("± J/MB");
  for (int64_t n : uses) t.columns.push_back("Baler " + unit + ", training over " + std::to_string(n));
  t.columns.push_back("Baler breaks even after");
  t.decision_columns = {"codec", "ratio", "max abs error", unit + " (compress + decompress)", "Baler breaks even after"};
  const BreakEven be = break_even_of(comparisons);
  const double mb = first.value("original_bytes", 0.0) / 1e6;
  for (const json& row : first["codecs"]) t.rows.push_back(codec_cells(comparisons, row, energy, uses, mb, be));
  add_notes(t, comparisons, energy);
  return t;
}

Table codecs_table(const json& comparison, const std::string& title) {
  return codecs_table(std::vector<const json*>{&comparison}, title);
}

namespace report {

bool has_codecs(const std::vector<TrialRecord>& trials) {
  return std::any_of(trials.begin(), trials.end(),
                     [](const TrialRecord& r) { return r.status == TrialStatus::kOk && r.result.contains("codecs"); });
}

std::vector<Table> make_codecs_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  std::vector<Table> out;
  for (const Group& g : group_trials(trials)) {
    std::vector<const json*> comparisons;
    for (const TrialRecord* t : g.ok)
      if (t->result.contains("codecs")) comparisons.push_back(&t->result["codecs"]);
    if (comparisons.empty()) continue;
    Table t = codecs_table(comparisons, "Baler against classical codecs at matched error (" + g.label() + ")");
    t.name = out.empty() ? "codecs" : "codecs_" + std::to_string(out.size() + 1);
    out.push_back(std::move(t));
  }
  if (out.empty()) {
    Table t;
    t.name = "codecs";
    t.title = "Baler against classical codecs at matched error";
    t.columns = {"codec"};
    t.notes.push_back("no trial measured the codecs: add \"codecs\": {\"enabled\": true} to the experiment");
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace report
}  // namespace balerbench
