// codec_comparison.cpp: see codec_comparison.h.
#include "harness/run/codec_comparison.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include "common/error.h"
#include "harness/codecs/baler_codec.h"
#include "harness/codecs/float_codecs.h"

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
  at::Tensor z;
  baler.compress = measure_repeated(energy, "codecs:baler:compress", c.codecs.min_window_s, [&] {
    z = encode_rows(model, engine, ds.data, norm, latent_scalar_type(c.latent_dtype, param_dtype), c.codec_chunk_rows);
  });
  baler.decompress = measure_repeated(energy, "codecs:baler:decompress", c.codecs.min_window_s, [&] {
    baler.reconstruction = decode_rows(model, engine, z, norm, c.codec_chunk_rows);
    if (ds.data_dimension() == 1) cast_integer_columns(baler.reconstruction, c.type_list, c.truncate);
  });
  baler.latent_bytes = z.numel() * static_cast<int64_t>(z.element_size());
}

void check_codecs_data(const Dataset& ds) {
  if (ds.source_item_bytes != 4 && ds.source_item_bytes != 8)
    throw InputError(ds.source_path + ": the codecs compare float32 or float64 data, this file holds " +
                         ds.source_dtype, "convert the data to float32 or float64, or leave \"codecs\" out");
}

json compare_codecs(const Dataset& ds, const BalerCodecSide& baler, EnergySession* energy,
                    const RunConfig::CodecsKeys& keys) {
  check_codecs_data(ds);
  const at::Tensor x = ds.data.to(at::kDouble).contiguous().reshape({ds.rows(), ds.features()});
  const FloatTable table{x.data_ptr<double>(), ds.rows(), ds.features(), static_cast<int>(ds.source_item_bytes)};
  const int64_t original = table.original_bytes();
  const double mb = static_cast<double>(original) / 1e6;
  const at::Tensor y = baler.reconstruction.to(at::kDouble).contiguous().reshape({ds.rows(), ds.features()});
  const auto window = [&](const std::string& codec, const char* dir, const std::function<void()>& work) {
    return measure_repeated(energy, "codecs:" + codec + ":" + dir, keys.min_window_s, work);
  };
  std::vector<Row> rows;
  json notes = json::array();

  // Baler.
  const ErrorMetrics baler_error = error_metrics(table, y.data_ptr<double>());
  const double baler_ratio = static_cast<double>(original) / static_cast<double>(baler.latent_bytes);
  {
    const int64_t decoder = baler.model_bytes + baler.normalization_bytes;
    json j = {{"codec", "baler"},
              {"label", "Baler's autoencoder (" + baler.engine + ")"},
              {"lossless", false},
              {"setting", "the trained model"},
              {"compressed_bytes", baler.latent_bytes},
              {"ratio", baler_ratio},
              {"decoder_bytes", decoder},
              {"model_bytes", baler.model_bytes},
              {"normalization_bytes", baler.normalization_bytes},
              {"ratio_with_decoder", static_cast<double>(original) / static_cast<double>(baler.latent_bytes + decoder)}};
    j["training"] = {{"duration_s", opt(baler.train_s)},
                     {"energy_j", opt(baler.train_energy_j)},
                     {"uncertainty_j", opt(baler.train_uncertainty_j)}};
    rows.push_back(finish_row(j, baler_error, baler.compress, baler.decompress, ds, mb));
  }
  const double tolerance = baler_error.finite ? baler_error.max_abs : 0;

  std::vector<double> out;
  // ZFP at Baler's maximum error.
  if (tolerance > 0) {
    std::vector<uint8_t> bytes;
    const Measured c = window("zfp_accuracy", "compress", [&] { bytes = zfp_encode(table, ZfpMode::kAccuracy, tolerance); });
    const Measured d = window("zfp_accuracy", "decompress", [&] { zfp_decode(bytes, out); });
    const ErrorMetrics e = error_metrics(table, out.data());
    json j = {{"codec", "zfp_accuracy"},
              {"label", "ZFP fixed accuracy"},
              {"lossless", false},
              {"setting", "tolerance " + fmt("%.3g", tolerance) + " (Baler's max abs error)"},
              {"tolerance", tolerance},
              {"compressed_bytes", static_cast<int64_t>(bytes.size())},
              {"ratio", static_cast<double>(original) / static_cast<double>(bytes.size())},
              {"bound_held", e.finite && e.max_abs <= tolerance}};
    if (!(e.finite && e.max_abs <= tolerance))
      j["notes"] = {"ZFP's bound did not hold: max abs " + fmt("%.3g", e.max_abs) + " > " + fmt("%.3g", tolerance)};
    rows.push_back(finish_row(j, e, c, d, ds, mb));
  } else {
    notes.push_back("Baler's reconstruction is exact here (max abs error 0): ZFP's fixed accuracy has no tolerance "
                    "to match and is left out; zstd is the exact reference");
  }
  // ZFP at Baler's error, column by column.
  {
    std::vector<double> tolerances(static_cast<std::size_t>(table.cols), 0.0);
    const double* xv = table.values;
    const double* yv = y.data_ptr<double>();
    bool finite = true;
    for (int64_t r = 0; r < table.rows; ++r)
      for (int64_t c = 0; c < table.cols; ++c) {
        const double d = std::fabs(yv[r * table.cols + c] - xv[r * table.cols + c]);
        finite = finite && std::isfinite(d);
        tolerances[static_cast<std::size_t>(c)] = std::max(tolerances[static_cast<std::size_t>(c)], d);
      }
    if (finite) {
      int64_t lossless = 0;
      for (double t : tolerances) lossless += t == 0;
      std::vector<uint8_t> bytes;
      const Measured c = window("zfp_columns", "compress", [&] { bytes = zfp_encode_columns(table, tolerances); });
      const Measured d = window("zfp_columns", "decompress", [&] { zfp_decode(bytes, out); });
      const ErrorMetrics e = error_metrics(table, out.data());
      bool held = e.finite;
      for (int64_t r = 0; r < table.rows && held; ++r)
        for (int64_t cc = 0; cc < table.cols; ++cc)
          if (std::fabs(out[static_cast<std::size_t>(r * table.cols + cc)] - xv[r * table.cols + cc]) >
              tolerances[static_cast<std::size_t>(cc)]) {
            held = false;
            break;
          }
      json j = {{"codec", "zfp_columns"},
                {"label", "ZFP fixed accuracy per column"},
                {"lossless", false},
                {"setting", "each column at Baler's max abs error there" +
                                (lossless ? " (" + std::to_string(lossless) + " exact columns lossless)" : std::string())},
                {"column_tolerances", tolerances},
                {"compressed_bytes", static_cast<int64_t>(bytes.size())},
                {"ratio", static_cast<double>(original) / static_cast<double>(bytes.size())},
                {"bound_held", held}};
      if (!held) j["notes"] = {"ZFP's per-column bound did not hold on some element"};
      rows.push_back(finish_row(j, e, c, d, ds, mb));
    }
  }
  // ZFP at Baler's ratio.
  {
    const double bits = 8.0 * table.item_bytes / baler_ratio;
    std::vector<uint8_t> bytes;
    const Measured c = window("zfp_rate", "compress", [&] { bytes = zfp_encode(table, ZfpMode::kRate, bits); });
    const Measured d = window("zfp_rate", "decompress", [&] { zfp_decode(bytes, out); });
    const ErrorMetrics e = error_metrics(table, out.data());
    const double reached = static_cast<double>(original) / static_cast<double>(bytes.size());
    json rate_notes = json::array();
    if (bits >= 8.0 * table.item_bytes)
      rate_notes.push_back("Baler's ratio " + fmt("%.3g", baler_ratio) + " is not above 1 (its latent code is stored in " +
                           "a wider dtype than the data's " + ds.source_dtype + "): ZFP's fixed rate at it expands the data");
    else if (std::fabs(reached / baler_ratio - 1) > 0.05)
      rate_notes.push_back("reaches ratio " + fmt("%.3g", reached) + ", not Baler's " + fmt("%.3g", baler_ratio) +
                           ": each column's header and ZFP's word padding weigh on columns of " +
                           std::to_string(table.rows) + " values");
    json j = {{"codec", "zfp_rate"},
              {"notes", rate_notes},
              {"label", "ZFP fixed rate"},
              {"lossless", false},
              {"setting", fmt("%.3g", zfp_actual_rate(table.item_bytes, bits)) + " bits/value (Baler's ratio " +
                              fmt("%.3g", baler_ratio) + ")"},
              {"bits_per_value", zfp_actual_rate(table.item_bytes, bits)},
              {"compressed_bytes", static_cast<int64_t>(bytes.size())},
              {"ratio", static_cast<double>(original) / static_cast<double>(bytes.size())}};
    rows.push_back(finish_row(j, e, c, d, ds, mb));
  }
  // Zstandard, lossless.
  {
    ZstdResult z;
    const Measured c = window("zstd", "compress", [&] { z = zstd_encode(table, static_cast<int>(keys.zstd_level)); });
    const Measured d = window("zstd", "decompress", [&] { zstd_decode(z.bytes, out); });
    for (std::size_t i = 0; i < out.size(); ++i)
      if (std::memcmp(&out[i], table.values + i, sizeof(double)) != 0)
        throw std::runtime_error("zstd: value " + std::to_string(i) + " did not round-trip bit for bit");
    const ErrorMetrics e = error_metrics(table, out.data());
    json j = {{"codec", "zstd"},
              {"label", "Zstandard (lossless)"},
              {"lossless", true},
              {"setting", "level " + std::to_string(keys.zstd_level) + (z.shuffled ? ", byte shuffle" : ", no shuffle")},
              {"shuffled", z.shuffled},
              {"plain_bytes", z.plain_bytes},
              {"shuffled_bytes", z.shuffled_bytes},
              {"compressed_bytes", static_cast<int64_t>(z.bytes.size())},
              {"ratio", static_cast<double>(original) / static_cast<double>(z.bytes.size())}};
    rows.push_back(finish_row(j, e, c, d, ds, mb));
  }
  // Downcasts.
  for (HalfKind kind : {HalfKind::kFloat16, HalfKind::kBFloat16}) {
    const std::string name = half_kind_name(kind);
    Downcast h;
    const Measured c = window(name, "compress", [&] { h = downcast(table, kind); });
    const Measured d = window(name, "decompress", [&] { upcast(h, kind, out); });
    const ErrorMetrics e = error_metrics(table, out.data());
    const int64_t bytes = downcast_bytes(table);
    json n = json::array();
    const char* largest = kind == HalfKind::kFloat16 ? "65504" : "3.4e38";
    const char* smallest = kind == HalfKind::kFloat16 ? "6.1e-05" : "1.2e-38";
    if (h.overflow > 0)
      n.push_back(std::to_string(h.overflow) + " values overflow " + name + "'s range (|x| > " + largest +
                  ") and decode as inf: its errors are infinite");
    if (h.subnormal > 0)
      n.push_back(std::to_string(h.subnormal) + " nonzero values lie below " + name + "'s smallest normal (" + smallest +
                  ") and keep fewer bits" + (h.flushed_to_zero ? "; " + std::to_string(h.flushed_to_zero) + " became 0" : ""));
    if (table.item_bytes == 4 && kind == HalfKind::kBFloat16)
      n.push_back("bfloat16 keeps float32's range with 8 bits of mantissa instead of 24");
    json j = {{"codec", name},
              {"label", "downcast to " + name},
              {"lossless", false},
              {"setting", "round to nearest even"},
              {"overflow", h.overflow},
              {"subnormal", h.subnormal},
              {"flushed_to_zero", h.flushed_to_zero},
              {"compressed_bytes", bytes},
              {"ratio", static_cast<double>(original) / static_cast<double>(bytes)},
              {"notes", n}};
    rows.push_back(finish_row(j, e, c, d, ds, mb));
  }

  // Training spread over N compressions, and the break-even N against each codec at least as
  // accurate as Baler (max abs error no larger: at equal error or better).
  // Energy when every window has it (a run with meters), else time; the training in the same unit.
  bool energy_basis = true;
  for (const Row& r : rows) energy_basis = energy_basis && r.compress.energy_j && r.decompress.energy_j;
  const char* unit = energy_basis ? "J/MB" : "s/MB";
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
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const Row& r = rows[i];
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
    break_even.push_back(e);
  }
  b.j["break_even"] = break_even;

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
