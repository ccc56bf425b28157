// codec_commands.cpp: `balerbench compress` and `decompress` (cycle.h), each on the CodecCommand
// scaffold of cycle_command.h: only what a command reads, runs in its window and writes is here.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "datasets/cycle_files.h"
#include "datasets/dataset.h"
#include "common/error.h"
#include "datasets/npz.h"
#include "harness/run/codec_comparison.h"
#include "harness/run/cycle.h"
#include "harness/run/cycle_command.h"
#include "harness/run/inference.h"
#include "harness/run/result_sections.h"
#include "models/architecture.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

NpyArray names_array(const Dataset& ds) {
  // Baler's CFD files store names as an empty float64 array.
  if (ds.names.empty()) return NpyArray::from_doubles({0}, {});
  return NpyArray::from_strings(ds.names);
}

// The original data shape: stored by balerbench's compress; for a file
// compressed by Baler, read from the input file as Baler does.
std::vector<int64_t> original_shape_of(const NpzMembers& m, const RunConfig& c, const std::string& src, int64_t rows) {
  std::vector<int64_t> shape;
  if (auto s = m.find("original_shape"); s != m.end()) {
    for (double v : s->second.to_doubles()) shape.push_back(static_cast<int64_t>(v));
  } else {
    shape = load_dataset(c.input_path).original_shape;
  }
  if (shape.size() < 2 || shape[0] != rows)
    throw InputError(src + ": original_shape does not match the latent code's " + std::to_string(rows) + " rows");
  return shape;
}

// The config's model must be the one the file was compressed with.
void check_decompress_model(const NpzMembers& m, const RunConfig& c, const std::string& src, int64_t features,
                            int64_t latent, int dims) {
  if (auto n = m.find("model_name"); n != m.end() && n->second.to_strings() != std::vector<std::string>{c.model_name})
    throw InputError(
        src + ": compressed with model " + n->second.to_strings().at(0) + " but the config says " + c.model_name,
        "decompress with the config used to compress");
  const int64_t expected = latent_size(features, c.compression_ratio);
  if (expected != latent)
    throw InputError(src + ": the latent code has " + std::to_string(latent) + " columns but " + c.model_name +
                         " with compression_ratio " + nlohmann::json(c.compression_ratio).dump() + " gives " +
                         std::to_string(expected),
                     "decompress with the config used to compress");
  if (dims != model_data_dimension(c.model_name))
    throw InputError(src + ": the compressed data are " + std::to_string(dims) + "D but " + c.model_name + " is for " +
                     std::to_string(model_data_dimension(c.model_name)) + "D data");
}

}  // namespace

json run_compress(const RunConfig& c, const CycleFiles& L) {
  CodecCommand cmd(c, "compress", L.compressed, out_folder_hint(L));
  const Dataset ds = load_dataset(c.input_path);
  check_dimensions(c, ds);
  std::fputs(subnormal_warning(ds, c).c_str(), stderr);
  const int64_t latent = latent_size(ds.features(), c.compression_ratio);
  cmd.load_model(L, ds.features(), latent);
  const Normalization* norm = c.normalizes() ? &cmd.normalization() : nullptr;
  at::Tensor z;
  const double encode_s = cmd.measure([&] {
    z = encode_table(cmd.model(), cmd.engine(), ds.data, norm, c, cmd.policy().param_dtype, &cmd.timer());
  });
  std::vector<std::pair<std::string, NpyArray>> members;
  members.emplace_back("data", tensor_to_npy(z, {ds.rows(), latent}));
  members.emplace_back("names", names_array(ds));
  members.emplace_back("normalization_features", norm ? norm->to_npy(feature_shape(ds.original_shape))
                                                      : NpyArray::from_doubles({0}, {}));
  if (!L.baler_project) {  // Baler's compressed.npz holds the three keys above only
    members.emplace_back("original_shape",
                         NpyArray::from_int64({static_cast<int64_t>(ds.original_shape.size())}, ds.original_shape));
    members.emplace_back("model_name", NpyArray::from_strings({c.model_name}));
  }
  write_npz(L.compressed_npz(), members, c.extra_compression);
  return cmd.finish({{"command", "compress"},
                     {"dataset", dataset_json(ds)},
                     {"latent_shape", {ds.rows(), latent}},
                     {"latent_dtype", dtype_name(z.scalar_type())},
                     {"encode_duration_s", encode_s},
                     {"rows_per_s", static_cast<double>(ds.rows()) / std::max(encode_s, 1e-12)},
                     {"output", L.compressed_npz()},
                     {"output_bytes", file_bytes(L.compressed_npz())}});
}

json run_decompress(const RunConfig& c, const CycleFiles& L) {
  CodecCommand cmd(c, "decompress", L.decompressed, out_folder_hint(L));
  const std::string src = L.compressed_npz();
  if (!fs::exists(src))
    throw InputError(src + ": no compressed file", run_first_hint(L, "compress"));
  const NpzMembers m = read_npz(src);
  auto it = m.find("data");
  if (it == m.end()) throw InputError(src + ": no 'data' array (the latent code)", "was it written by compress?");
  const NpyArray& code = it->second;
  if (code.shape.size() != 2 || code.shape[1] == 0)
    throw InputError(src + ": 'data' must be (N, latent), got " + std::to_string(code.shape.size()) + " dimensions");
  const std::vector<int64_t> shape = original_shape_of(m, c, src, code.shape[0]);
  int64_t features = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) features *= shape[i];
  const int dims = static_cast<int>(shape.size()) - 1;
  check_decompress_model(m, c, src, features, code.shape[1], dims);
  cmd.load_model(L, features, code.shape[1]);
  const Normalization* norm = c.normalizes() ? &cmd.normalization() : nullptr;
  at::Tensor x;
  const double decode_s = cmd.measure([&] {
    // A Baler project de-normalizes as Baler does, in float64 after the cast.
    x = decode_table(cmd.model(), cmd.engine(), npy_to_tensor(code), norm, c, dims, &cmd.timer(),
                     L.baler_project ? Denormalize::kAsBaler : Denormalize::kInModelDtype);
  });
  std::vector<std::pair<std::string, NpyArray>> members;
  members.emplace_back("data", tensor_to_npy(x, shape));
  members.emplace_back("names", m.count("names") ? m.at("names") : NpyArray::from_doubles({0}, {}));
  write_npz(L.decompressed_npz(), members, c.extra_compression);
  return cmd.finish({{"command", "decompress"},
                     {"shape", shape},
                     {"dtype", dtype_name(x.scalar_type())},
                     {"decode_duration_s", decode_s},
                     {"rows_per_s", static_cast<double>(shape[0]) / std::max(decode_s, 1e-12)},
                     {"output", L.decompressed_npz()},
                     {"output_bytes", file_bytes(L.decompressed_npz())}});
}

json run_codecs(const RunConfig& c, const CycleFiles& L) {
  const fs::path folder = L.training.parent_path() / "codecs";
  CodecCommand cmd(c, "codecs", folder, out_folder_hint(L));
  const Dataset ds = load_dataset(c.input_path);
  check_dimensions(c, ds);
  std::fputs(subnormal_warning(ds, c).c_str(), stderr);
  const int64_t latent = latent_size(ds.features(), c.compression_ratio);
  cmd.load_model(L, ds.features(), latent);
  // The training's time and energy, read (and a damaged report refused) before anything is measured.
  BalerCodecSide baler;
  json training = nullptr;
  const fs::path train_report = L.training / "training_report.json";
  if (fs::exists(train_report)) {
    try {
      std::ifstream in(train_report);
      const json t = json::parse(in);
      if (!t.is_object()) throw json::type_error::create(302, "not a JSON object", nullptr);
      if (t.contains("train_s") && t["train_s"].is_number()) baler.train_s = t["train_s"].get<double>();
      if (t.contains("energy") && t["energy"].is_object() && t["energy"].contains("phases"))
        for (const json& p : t["energy"]["phases"])
          if (p.value("phase", "") == "train") {
            if (p.contains("total_energy_j") && p["total_energy_j"].is_number())
              baler.train_energy_j = p["total_energy_j"].get<double>();
            if (p.contains("total_uncertainty_j") && p["total_uncertainty_j"].is_number())
              baler.train_uncertainty_j = p["total_uncertainty_j"].get<double>();
          }
      training = {{"report", train_report.string()},
                  {"epochs_run", t.value("epochs_run", json(nullptr))},
                  {"basis", "the training's own window (its phase \"train\"), not the whole train command"}};
    } catch (const json::exception& e) {
      throw InputError(train_report.string() + ": not a training report (" + e.what() + ")",
                       run_first_hint(L, "train", "again"));
    }
  }
  const Normalization* norm = c.normalizes() ? &cmd.normalization() : nullptr;
  baler.model_bytes = file_bytes(L.model());
  baler.normalization_bytes = norm ? std::max<int64_t>(file_bytes(L.norm()), 0) : 0;
  json comparison;
  cmd.track_memory([&] {
    comparison = measure_baler_and_codecs(cmd.energy(), cmd.model(), cmd.engine(), ds, norm, c,
                                          cmd.policy().param_dtype, baler);
  });
  if (training.is_null())
    comparison["notes"].push_back("no training report in " + L.training.string() +
                                  ": Baler's training cost is unknown, nothing is amortised");
  return cmd.finish({{"command", "codecs"},
                     {"dataset", dataset_json(ds)},
                     {"training", training},
                     {"comparison", comparison}});
}

}  // namespace balerbench
