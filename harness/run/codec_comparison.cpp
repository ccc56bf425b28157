// codec_comparison.cpp: see codec_comparison.h.
#include "harness/run/codec_comparison.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "common/error.h"
#include "harness/codecs/codec_registry.h"
#include "harness/codecs/float_codecs.h"
#include "harness/run/inference.h"

namespace balerbench {
namespace {

using nlohmann::json;

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json opt(const std::optional<double>& v) { return v && std::isfinite(*v) ? json(*v) : json(nullptr); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

json error_json(const ErrorMetrics& m, const Dataset& ds) {
  json cols = json::array();
  for (const auto& v : m.column_relative_rms_pct) cols.push_back(opt(v));
  json worst = nullptr;
  if (m.worst_column >= 0)
    worst = m.worst_column < static_cast<int64_t>(ds.names.size()) ? json(ds.names[m.worst_column]) : json(m.worst_column);
  return {{"rmse", num(m.rmse)},
          {"max_abs", num(m.max_abs)},
          {"finite", m.finite},
          {"psnr_db", opt(m.psnr_db)},
          {"worst_column_relative_rms_pct", opt(m.worst_column_relative_rms_pct)},
          {"worst_column", worst},
          {"relative_left_out", m.relative_left_out},
          {"column_relative_rms_pct", cols}};
}

// One direction's figures per run, and per MB of the original data.
json phase_json(const Measured& m, double mb) {
  return {{"duration_s", m.duration_s},
          {"energy_j", opt(m.energy_j)},
          {"uncertainty_j", opt(m.uncertainty_j)},
          {"repeats", m.repeats},
          {"mb_per_s", m.duration_s > 0 ? json(mb / m.duration_s) : json(nullptr)},
          {"j_per_mb", m.energy_j ? json(*m.energy_j / mb) : json(nullptr)}};
}

struct Row {
  json j;
  ErrorMetrics error;
  Measured compress, decompress;
};

// The cost per MB of one compress and one decompress: energy when both are measured, else time.
std::optional<double> cost_per_mb(const Row& r, bool energy, double mb) {
  if (energy) {
    if (!r.compress.energy_j || !r.decompress.energy_j) return std::nullopt;
    return (*r.compress.energy_j + *r.decompress.energy_j) / mb;
  }
  return (r.compress.duration_s + r.decompress.duration_s) / mb;
}

Row finish_row(json j, const ErrorMetrics& e, const Measured& c, const Measured& d, const Dataset& ds, double mb) {
  Row r{std::move(j), e, c, d};
  r.j["error"] = error_json(e, ds);
  r.j["compress"] = phase_json(c, mb);
  r.j["decompress"] = phase_json(d, mb);
  if (c.energy_j && d.energy_j) r.j["j_per_mb"] = (*c.energy_j + *d.energy_j) / mb;
  r.j["s_per_mb"] = (c.duration_s + d.duration_s) / mb;
  if (!r.j.contains("notes")) r.j["notes"] = json::array();
  return r;
}

}  // namespace

void measure_baler(EnergySession* energy, AutoEncoder& model, Engine& engine, const Dataset& ds,
                   const Normalization* norm, const RunConfig& c, at::ScalarType param_dtype, BalerCodecSide& baler) {
  at::Tensor z, y;
  baler.compress = measure_repeated(energy, "codecs:baler:compress", c.codecs.min_window_s,
                                    [&] { z = encode_table(model, engine, ds.data, norm, c, param_dtype); });
  baler.decompress = measure_repeated(energy, "codecs:baler:decompress", c.codecs.min_window_s,
                                      [&] { y = decode_table(model, engine, z, norm, c, ds.data_dimension()); });
  if (baler.reconstruction.defined()) return;  // the run's own output, kept
  baler.reconstruction = y;
  baler.latent_bytes = z.numel() * static_cast<int64_t>(z.element_size());
}

json measure_baler_and_codecs(EnergySession* energy, AutoEncoder& model, Engine& engine, const Dataset& ds,
                              const Normalization* norm, const RunConfig& c, at::ScalarType param_dtype,
                              BalerCodecSide& baler) {
  baler.engine = engine.name();
  measure_baler(energy, model, engine, ds, norm, c, param_dtype, baler);
  return compare_codecs(ds, baler, energy, c.codecs);
}

void check_codecs_data(const Dataset& ds) {
  if (ds.source_item_bytes != 4 && ds.source_item_bytes != 8)
    throw InputError(ds.source_path + ": the codecs compare float32 or float64 data, this file holds " +
                         ds.source_dtype, "convert the data to float32 or float64, or leave \"codecs\" out");
}

namespace {

// Baler's row: its ratio without and with the decoder, and its training.
Row baler_row(const BalerCodecSide& baler, const ErrorMetrics& error, int64_t original, const Dataset& ds, double mb) {
  const int64_t decoder = baler.model_bytes + baler.normalization_bytes;
  json j = {{"codec", "baler"},
            {"label", "Baler's autoencoder (" + baler.engine + ")"},
            {"lossless", false},
            {"setting", "the trained model"},
            {"compressed_bytes", baler.latent_bytes},
            {"ratio", static_cast<double>(original) / static_cast<double>(baler.latent_bytes)},
            {"decoder_bytes", decoder},
            {"model_bytes", baler.model_bytes},
            {"normalization_bytes", baler.normalization_bytes},
            {"ratio_with_decoder", static_cast<double>(original) / static_cast<double>(baler.latent_bytes + decoder)}};
  j["training"] = {{"duration_s", opt(baler.train_s)},
                   {"energy_j", opt(baler.train_energy_j)},
                   {"uncertainty_j", opt(baler.train_uncertainty_j)}};
  return finish_row(j, error, baler.compress, baler.decompress, ds, mb);
}

// Each codec of the registry on `in`, in its windows codecs:<name>:compress and ...:decompress; a
// codec with nothing to compare here leaves its reason in `notes`.
void classical_rows(const CodecInput& in, const Dataset& ds, double mb, EnergySession* energy, double min_window_s,
                    std::vector<Row>& rows, json& notes) {
  std::vector<double> out;
  for (const CodecEntry* entry : codec_registry()) {
    std::string why_not;
    const std::unique_ptr<CodecRun> codec = entry->make(in, why_not);
    if (!codec) {
      if (!why_not.empty()) notes.push_back(why_not);
      continue;
    }
    const std::string window = std::string("codecs:") + entry->name + ":";
    const Measured c = measure_repeated(energy, window + "compress", min_window_s, [&] { codec->compress(); });
    const Measured d = measure_repeated(energy, window + "decompress", min_window_s, [&] { codec->decompress(out); });
    const ErrorMetrics e = error_metrics(in.table, out.data());
    rows.push_back(finish_row(codec->row(out, e), e, c, d, ds, mb));
  }
}

// The break-even N of one codec: after how many compressions Baler's cost, its training spread
// over them, falls below the codec's. Only against codecs at least as accurate as Baler.
json break_even_of(const Row& r, const ErrorMetrics& baler_error, const std::optional<double>& train_cost,
                   const std::optional<double>& baler_cd, bool energy_basis, double mb) {
  const char* unit = energy_basis ? "J/MB" : "s/MB";
  json e = {{"codec", r.j["codec"]}, {"uses", nullptr}};
  const std::optional<double> other = cost_per_mb(r, energy_basis, mb);
  if (!r.error.finite || r.error.max_abs > baler_error.max_abs) {
    e["why"] = "less accurate than Baler (max abs " + fmt("%.3g", r.error.max_abs) + " > " +
               fmt("%.3g", baler_error.max_abs) + "): not at equal error";
  } else if (!train_cost || !baler_cd || !other) {
    e["why"] = train_cost ? "not measured" : "Baler's training cost is unknown";
  } else if (*other <= *baler_cd) {
    e["why"] = std::string("never: Baler's compress and decompress alone cost ") + fmt("%.3g", *baler_cd) + " " +
               unit + ", " + r.j["codec"].get<std::string>() + "'s " + fmt("%.3g", *other);
  } else {
    const double n = std::floor(*train_cost / (*other - *baler_cd)) + 1;
    e["uses"] = n < 9e18 ? json(static_cast<int64_t>(n)) : json(n);
    e["why"] = "after " + fmt("%.0f", n) + " compressions of data this size Baler's " + unit + " (training included) "
               "falls below " + r.j["codec"].get<std::string>() + "'s";
  }
  return e;
}

// Training spread over N compressions on Baler's row (rows.front()), and the break-even N against
// each codec. Energy when every window has it (a run with meters), else time; the training in the
// same unit. Returns whether the basis is energy.
bool amortise(std::vector<Row>& rows, const BalerCodecSide& baler, const RunConfig::CodecsKeys& keys, double mb,
              json& notes) {
  bool energy_basis = true;
  for (const Row& r : rows) energy_basis = energy_basis && r.compress.energy_j && r.decompress.energy_j;
  const std::optional<double> train_cost =
      energy_basis ? (baler.train_energy_j ? std::optional<double>(*baler.train_energy_j / mb) : std::nullopt)
                   : (baler.train_s ? std::optional<double>(*baler.train_s / mb) : std::nullopt);
  if (!train_cost)
    notes.push_back(std::string("Baler's training ") + (energy_basis ? "energy" : "time") +
                    " is unknown (no training report, or one without " +
                    (energy_basis ? "energy: trained with energy.enabled false" : "its time") +
                    "): nothing is amortised and there is no break-even");
  Row& b = rows.front();
  const std::optional<double> baler_cd = cost_per_mb(b, energy_basis, mb);
  json amortised = json::array();
  if (train_cost && baler_cd)
    for (int64_t n : keys.uses)
      amortised.push_back({{"uses", n}, {energy_basis ? "j_per_mb" : "s_per_mb", *train_cost / static_cast<double>(n) + *baler_cd}});
  b.j["amortised"] = amortised;
  json break_even = json::array();
  for (std::size_t i = 1; i < rows.size(); ++i)
    break_even.push_back(break_even_of(rows[i], b.error, train_cost, baler_cd, energy_basis, mb));
  b.j["break_even"] = break_even;
  return energy_basis;
}

}  // namespace

json compare_codecs(const Dataset& ds, const BalerCodecSide& baler, EnergySession* energy,
                    const RunConfig::CodecsKeys& keys) {
  check_codecs_data(ds);
  const at::Tensor x = ds.data.to(at::kDouble).contiguous().reshape({ds.rows(), ds.features()});
  const FloatTable table{x.data_ptr<double>(), ds.rows(), ds.features(), static_cast<int>(ds.source_item_bytes)};
  const int64_t original = table.original_bytes();
  const double mb = static_cast<double>(original) / 1e6;
  const at::Tensor y = baler.reconstruction.to(at::kDouble).contiguous().reshape({ds.rows(), ds.features()});
  const ErrorMetrics baler_error = error_metrics(table, y.data_ptr<double>());
  const double baler_ratio = static_cast<double>(original) / static_cast<double>(baler.latent_bytes);
  const double tolerance = baler_error.finite ? baler_error.max_abs : 0;
  std::vector<Row> rows = {baler_row(baler, baler_error, original, ds, mb)};
  json notes = json::array();
  const CodecInput in{table, y.data_ptr<double>(), baler_ratio, tolerance, keys.knobs, ds.source_dtype};
  classical_rows(in, ds, mb, energy, keys.min_window_s, rows, notes);
  const bool energy_basis = amortise(rows, baler, keys, mb, notes);
  json out_rows = json::array();
  for (const Row& r : rows) out_rows.push_back(r.j);
  return {{"original_bytes", original},
          {"rows", ds.rows()},
          {"features", ds.features()},
          {"dtype", ds.source_dtype},
          {"tolerance", tolerance},
          {"baler_ratio", baler_ratio},
          {"basis", energy_basis ? "energy" : "time"},
          {"uses", keys.uses},
          {"min_window_s", keys.min_window_s},
          {"codecs", out_rows},
          {"notes", notes}};
}

}  // namespace balerbench
