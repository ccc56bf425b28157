// projection_table.cpp: --table projection: what compressing a whole dataset would cost, from the
// stored trials. Per configuration, each finished repeat's compress and decompress (time and energy
// per byte of its own data, result.dataset.bytes) and its training are scaled to the dataset the user
// names (report --dataset-bytes or --dataset-events), the training counted --trainings times; the
// repeats give the mean and a 95% interval (Student t), widened by the meters' own ± (the phases'
// total_uncertainty_j, scaled the same way, taken as systematic: averaging does not shrink it). CO2 is
// each trial's own g per J (its carbon intensity and PUE). A second table gives the classical codecs
// the trials measured (sweep "codecs"), at their median J/MB and MB/s.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/fidelity.h"
#include "harness/report/table_cells.h"
#include "harness/report/table_notes.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report {
namespace {

using nlohmann::json;

constexpr double kJPerKwh = 3.6e6;
constexpr double kSPerHour = 3600;
constexpr double kBytesPerTb = 1e12;

std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

// The bytes of a trial's own data (what its compress read), and of its first axis's rows.
std::optional<double> data_bytes(const TrialRecord& r) {
  const auto b = number(r.result.value("dataset", json()), "bytes");
  return b && *b > 0 ? b : std::nullopt;
}

std::optional<double> bytes_per_event(const TrialRecord& r) {
  const json ds = r.result.value("dataset", json());
  const auto b = data_bytes(r);
  if (!b || !ds.is_object() || !ds.contains("shape") || !ds["shape"].is_array() || ds["shape"].empty() ||
      !ds["shape"][0].is_number() || ds["shape"][0].get<double>() <= 0)
    return std::nullopt;
  return *b / ds["shape"][0].get<double>();
}

int64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "float64" || dtype == "double" || dtype == "int64") return 8;
  if (dtype == "float16" || dtype == "half" || dtype == "bfloat16") return 2;
  return 4;
}

// A phase's meter ± from result.energy.phases (null for estimates, whose model error is not known).
std::optional<double> phase_uncertainty_j(const TrialRecord& r, const std::string& phase) {
  const json e = r.result.value("energy", json());
  if (!e.is_object() || !e.contains("phases") || !e["phases"].is_array()) return std::nullopt;
  for (const json& p : e["phases"])
    if (p.value("phase", "") == phase) return number(p, "total_uncertainty_j");
  return std::nullopt;
}

// One repeat's projection.
struct Projected {
  double compress_s = NAN, decompress_s = NAN, train_s = NAN;
  double compress_j = NAN, decompress_j = NAN, train_j = NAN, total_j = NAN, total_u_j = NAN;
  double co2_g = NAN, compressed_bytes = NAN, decoder_bytes = NAN;
};

// `r` scaled to a dataset of `bytes`, trained `trainings` times; nothing when it lacks a figure.
std::optional<Projected> project(const TrialRecord& r, double bytes, int64_t trainings) {
  const auto own = data_bytes(r);
  if (!own || !r.compress_s || !r.decompress_s || !r.train_s) return std::nullopt;
  const double scale = bytes / *own;
  Projected p;
  p.compress_s = *r.compress_s * scale;
  p.decompress_s = *r.decompress_s * scale;
  p.train_s = *r.train_s * static_cast<double>(trainings);
  if (const auto latent = latent_bytes_of(r)) p.compressed_bytes = *latent * scale;
  if (const auto params = number(r.result.value("model", json()), "parameters"))
    p.decoder_bytes = *params * (r.precision == "fp64" ? 8.0 : 4.0) * static_cast<double>(trainings);
  if (!r.compress_energy_j || !r.decompress_energy_j || !r.train_energy_j) return p;
  p.compress_j = *r.compress_energy_j * scale;
  p.decompress_j = *r.decompress_energy_j * scale;
  p.train_j = *r.train_energy_j * static_cast<double>(trainings);
  p.total_j = p.compress_j + p.decompress_j + p.train_j;
  const auto uc = phase_uncertainty_j(r, "compress"), ud = phase_uncertainty_j(r, "decompress");
  const auto ut = phase_uncertainty_j(r, "train");
  if (uc && ud && ut)
    p.total_u_j = std::sqrt(std::pow(*uc * scale, 2) + std::pow(*ud * scale, 2) +
                            std::pow(*ut * static_cast<double>(trainings), 2));
  if (r.co2_g && r.total_energy_j && *r.total_energy_j > 0) p.co2_g = p.total_j * *r.co2_g / *r.total_energy_j;
  return p;
}

std::vector<double> finite_of(const std::vector<Projected>& ps, const std::function<double(const Projected&)>& get) {
  std::vector<double> v;
  for (const Projected& p : ps)
    if (std::isfinite(get(p))) v.push_back(get(p));
  return v;
}

// mean, low, high of `v` scaled by `unit`, the interval widened by the systematic ± `u` (same unit as v).
void interval_cells(std::vector<json>& row, const std::vector<double>& v, double u, double unit) {
  if (v.empty()) {
    row.insert(row.end(), 3, json(nullptr));
    return;
  }
  const Summary s = summarize(v);
  const double half = std::hypot(s.n > 1 ? s.ci95_half_width : 0.0, std::isfinite(u) ? u : 0.0);
  const bool has_interval = s.n > 1 || std::isfinite(u);
  row.push_back(num(s.mean / unit));
  row.push_back(has_interval ? num(std::max(0.0, s.mean - half) / unit) : json(nullptr));
  row.push_back(has_interval ? num((s.mean + half) / unit) : json(nullptr));
}

json mean_cell(const std::vector<double>& v, double unit) { return v.empty() ? json(nullptr) : num(summarize(v).mean / unit); }

std::vector<json> projection_row(const Group& g, const Axes& a, const std::vector<Projected>& ps) {
  std::vector<json> row = {g.precision};
  axis_cells(row, g, a, false);
  row.push_back(static_cast<int64_t>(ps.size()));
  row.push_back(mean_cell(finite_of(ps, [](const Projected& p) { return p.compress_s; }), kSPerHour));
  row.push_back(mean_cell(finite_of(ps, [](const Projected& p) { return p.decompress_s; }), kSPerHour));
  row.push_back(mean_cell(finite_of(ps, [](const Projected& p) { return p.train_s; }), kSPerHour));
  row.push_back(mean_cell(finite_of(ps, [](const Projected& p) { return p.compress_j; }), kJPerKwh));
  row.push_back(mean_cell(finite_of(ps, [](const Projected& p) { return p.decompress_j; }), kJPerKwh));
  row.push_back(mean_cell(finite_of(ps, [](const Projected& p) { return p.train_j; }), kJPerKwh));
  const std::vector<double> u = finite_of(ps, [](const Projected& p) { return p.total_u_j; });
  const double u_j = u.size() == ps.size() && !u.empty() ? summarize(u).mean : NAN;
  interval_cells(row, finite_of(ps, [](const Projected& p) { return p.total_j; }), u_j, kJPerKwh);
  const std::vector<double> co2 = finite_of(ps, [](const Projected& p) { return p.co2_g; });
  const std::vector<double> total = finite_of(ps, [](const Projected& p) { return p.total_j; });
  const double g_per_j = co2.empty() || total.empty() ? NAN : summarize(co2).mean / summarize(total).mean;
  interval_cells(row, co2, std::isfinite(u_j) && std::isfinite(g_per_j) ? u_j * g_per_j : NAN, 1000.0);
  row.push_back(mean_cell(finite_of(ps, [](const Projected& p) { return p.compressed_bytes; }), kBytesPerTb));
  row.push_back(mean_cell(finite_of(ps, [](const Projected& p) { return p.decoder_bytes; }), 1e6));
  row.push_back(g.energy_kind());
  return row;
}

// The dataset's bytes: given, or its events times the bytes of one event of the trials' data (they
// must agree: a projection in events across datasets of different widths would mix them).
double dataset_bytes_of(const std::vector<Group>& groups, const TableOptions& o, std::string& described) {
  char buf[160];
  if (o.dataset_bytes > 0) {
    std::snprintf(buf, sizeof buf, "%.4g TB", o.dataset_bytes / kBytesPerTb);
    described = buf;
    return o.dataset_bytes;
  }
  std::optional<double> per_event;
  for (const Group& g : groups)
    for (const TrialRecord* t : g.ok)
      if (const auto b = bytes_per_event(*t)) {
        if (per_event && std::fabs(*per_event - *b) > 1e-9 * *b) return NAN;
        per_event = b;
      }
  if (!per_event) return NAN;
  std::snprintf(buf, sizeof buf, "%.4g events of %.6g bytes (%.4g TB)", o.dataset_events, *per_event,
                o.dataset_events * *per_event / kBytesPerTb);
  described = buf;
  return o.dataset_events * *per_event;
}

Table baler_projection(const std::vector<TrialRecord>& trials, const std::vector<Group>& all,
                       const std::vector<Group>& groups, double bytes, const std::string& described,
                       const TableOptions& o) {
  Table t;
  t.name = "projection";
  t.title = "Compressing " + described + " with Baler, training " +
            (o.trainings == 1 ? std::string("once") : std::to_string(o.trainings) + " times") + ", on " +
            where_run(trials);
  const Axes a = varying(groups);
  t.columns = {"precision"};
  axis_columns(t, a, false);
  for (const char* c : {"n", "compress_h", "decompress_h", "train_h", "compress_kwh", "decompress_kwh", "train_kwh",
                        "total_kwh", "total_kwh_ci95_low", "total_kwh_ci95_high", "co2_kg", "co2_kg_ci95_low",
                        "co2_kg_ci95_high", "compressed_tb", "decoder_mb", "energy"})
    t.columns.push_back(c);
  for (const Group& g : groups) {
    std::vector<Projected> ps;
    for (const TrialRecord* r : g.ok)
      if (auto p = project(*r, bytes, o.trainings)) ps.push_back(*p);
    if (!ps.empty()) t.rows.push_back(projection_row(g, a, ps));
  }
  t.decision_columns = {"precision", "model", "compression_ratio", "latent", "parameters",
                        "batch_size", "engine", "power_limit", "epochs", "n", "compress_h", "decompress_h",
                        "total_kwh", "total_kwh_ci95_low", "total_kwh_ci95_high", "co2_kg", "compressed_tb", "energy"};
  t.notes.push_back(
      "Each repeat's compress and decompress scaled from its own data (result.dataset.bytes) to this dataset, "
      "linearly: the time and energy per byte measured at the trial's size, which holds while the data streams "
      "through the same code (no I/O from disk is counted: reading and writing the files adds to it). train: the "
      "trial's training times the trainings. total = compress + decompress + training. Intervals: 95% over the "
      "repeats (Student t), widened by the meters' ± (added in quadrature, as systematic) where they quantify it.");
  t.notes.push_back("compressed_tb: the latent space (its shape and dtype, as stored) scaled to the dataset; "
                    "decoder_mb: what a reader needs besides, once per training: the model's parameters at 4 bytes "
                    "(8 for fp64), the normalization file not counted. co2: each trial's own g per J (its carbon "
                    "intensity and PUE).");
  failures_note(t, all);
  run_notes(t, all);
  return t;
}

// The classical codecs' rows of one group's repeats (result.codecs), at their medians.
void codec_rows(Table& t, const Group& g, double bytes) {
  std::map<std::string, std::vector<json>> rows;
  std::vector<std::string> order;
  for (const TrialRecord* r : g.ok) {
    const json c = r->result.value("codecs", json());
    if (!c.is_object() || !c.contains("codecs") || !c["codecs"].is_array()) continue;
    for (const json& row : c["codecs"]) {
      if (row.value("codec", "") == "baler") continue;  // Baler's own row is the first table's
      const std::string name = row.value("codec", "") + " " + row.value("setting", "");
      if (!rows.count(name)) order.push_back(name);
      rows[name].push_back(row);
    }
  }
  const double mb = bytes / 1e6;
  for (const std::string& name : order) {
    std::vector<double> j_per_mb, ratio, s_per_mb;
    for (const json& row : rows[name]) {
      if (const auto x = number(row, "j_per_mb")) j_per_mb.push_back(*x);
      if (const auto x = number(row, "s_per_mb")) s_per_mb.push_back(*x);
      if (const auto x = number(row, "ratio"); x && *x > 0) ratio.push_back(*x);
    }
    const auto median = [](const std::vector<double>& v) { return v.empty() ? NAN : summarize(v).median; };
    t.rows.push_back({g.label(), name, static_cast<int64_t>(rows[name].size()), num(median(ratio)),
                      num(bytes / median(ratio) / kBytesPerTb), num(median(s_per_mb) * mb / kSPerHour),
                      num(median(j_per_mb) * mb / kJPerKwh), g.energy_kind()});
  }
}

}  // namespace

std::optional<double> latent_bytes_of(const TrialRecord& r) {
  const json& latent = r.result.value("latent_shape", json());
  if (!latent.is_array() || latent.size() != 2 || !latent[0].is_number() || !latent[1].is_number()) return std::nullopt;
  return latent[0].get<double>() * latent[1].get<double>() *
         static_cast<double>(dtype_bytes(r.result.value("latent_dtype", std::string())));
}

std::vector<Table> make_projection_tables(const std::vector<TrialRecord>& trials, const TableOptions& o) {
  if (o.dataset_bytes <= 0 && o.dataset_events <= 0) return {};  // --table all without a dataset: nothing to project
  const std::vector<Group> all = group_trials(trials);
  const std::vector<Group> groups = finished(all);
  std::string described;
  const double bytes = dataset_bytes_of(groups, o, described);
  Table t;
  if (!std::isfinite(bytes)) {
    t.name = "projection";
    t.title = "Projection to " + std::to_string(o.dataset_events) + " events";
    t.notes.push_back("no projection in events: the trials hold datasets of different bytes per event (or none); "
                      "give --dataset-bytes instead");
    return {t};
  }
  std::vector<Table> out = {baler_projection(trials, all, groups, bytes, described, o)};
  Table c;
  c.name = "projection_codecs";
  c.title = "Compressing " + described + " with the classical codecs the trials measured";
  c.columns = {"configuration", "codec", "n", "ratio", "compressed_tb", "compress_and_decompress_h",
               "compress_and_decompress_kwh", "energy"};
  for (const Group& g : groups) codec_rows(c, g, bytes);
  if (!c.rows.empty()) {
    c.notes.push_back("Each codec's median over the repeats of one compress and one decompress per MB (J/MB, s/MB, "
                      "as --table codecs gives them) times the dataset's MB; no training. ratio: the data's bytes "
                      "over the codec's output.");
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace balerbench::report
