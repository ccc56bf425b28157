// cmd_data.cpp: `balerbench data generate` and `balerbench data info`.
#include <ATen/ATen.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "datasets/dataset.h"
#include "common/error.h"
#include "datasets/generator_registry.h"
#include "datasets/npz.h"
#include "datasets/synthetic.h"
#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"

namespace balerbench::cli {
namespace {

struct GenerateArgs {
  std::string kind, out;
  GeneratorParams params;
  bool deflate = false, force = false;
};

// "cms (jets, 24 columns) or cfd (N, H, W frames)"
std::string kind_help() {
  std::string help;
  for (const DatasetGenerator* g : dataset_generators())
    help += (help.empty() ? "" : " or ") + std::string(g->name) + " (" + g->shape_help + ")";
  return help;
}

int generate(const GenerateArgs& a) {
  std::error_code ec;
  if (std::filesystem::exists(a.out, ec) && !a.force)
    throw InputError(a.out + ": already exists", "pass --force to replace it, or choose another --out");
  // The values (float64) and their copy for the file, against this machine's memory, before any is
  // taken: an allocation that cannot succeed is said as what was asked for.
  const GeneratorParams& p = a.params;
  check_synthetic_memory("data generate", a.kind, p.rows, p.height, p.width, 2);
  SyntheticData d = dataset_generator(a.kind).generate(p);
  std::vector<std::pair<std::string, NpyArray>> members;
  members.emplace_back("data", NpyArray::from_doubles(d.shape, d.values));
  members.emplace_back("names", d.names.empty() ? NpyArray::from_doubles({0}, {}) : NpyArray::from_strings(d.names));
  write_npz(a.out, members, a.deflate);
  std::string shape;
  for (auto s : d.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
  std::printf("wrote %s: data (%s) float64, %lld bytes\n", a.out.c_str(), shape.c_str(),
              static_cast<long long>(std::filesystem::file_size(a.out)));
  return 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {  // NumPy's spelling: (60, 50, 50)
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

int info(const std::string& path, const std::string& format, bool all_features) {
  const Dataset ds = load_dataset(path);
  const at::Tensor mn = std::get<0>(ds.data.min(0)), mx = std::get<0>(ds.data.max(0)), mean = ds.data.mean(0);
  const int64_t constant = (mn == mx).sum().item<int64_t>();
  nlohmann::json j = {{"path", path}, {"shape", ds.original_shape}, {"dtype", ds.source_dtype},
                      {"file_bytes", std::filesystem::file_size(path)},
                      {"data_bytes", ds.rows() * ds.features() * ds.source_item_bytes},
                      {"data_dimension", ds.data_dimension()}, {"constant_features", constant},
                      {"min", ds.data.min().item<double>()}, {"max", ds.data.max().item<double>()},
                      {"mean", ds.data.mean().item<double>()}};
  const bool per_feature = ds.data_dimension() == 1 || all_features;
  nlohmann::json cols = nlohmann::json::array();
  if (per_feature)
    for (int64_t c = 0; c < ds.features(); ++c)
      cols.push_back({{"index", c}, {"name", c < static_cast<int64_t>(ds.names.size()) ? ds.names[c] : ""},
                      {"min", mn[c].item<double>()}, {"max", mx[c].item<double>()}, {"mean", mean[c].item<double>()}});
  if (format == "json") {
    j["features"] = cols;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("file        %s\nshape       %s\ndtype       %s\nfile bytes  %s\ndata bytes  %s\n", path.c_str(),
              shape_text(ds.original_shape).c_str(), ds.source_dtype.c_str(), j["file_bytes"].dump().c_str(),
              j["data_bytes"].dump().c_str());
  std::printf("kind        %s, %lld features, %lld constant\nvalues      min %.6g  max %.6g  mean %.6g\n",
              ds.data_dimension() == 1 ? "1D table" : "2D frames", static_cast<long long>(ds.features()),
              static_cast<long long>(constant), j["min"].get<double>(), j["max"].get<double>(), j["mean"].get<double>());
  if (!per_feature) {
    std::printf("(per-pixel statistics: --all-features)\n");
    return 0;
  }
  std::printf("\n%5s  %-28s %14s %14s %14s\n", "col", "name", "min", "max", "mean");
  for (const auto& c : cols) {
    std::string name = c["name"].get<std::string>();
    name = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);  // Baler's plots do the same
    std::printf("%5lld  %-28s %14.6g %14.6g %14.6g\n", static_cast<long long>(c["index"].get<int64_t>()),
                name.c_str(), c["min"].get<double>(), c["max"].get<double>(), c["mean"].get<double>());
  }
  return 0;
}

}  // namespace

void register_data(CLI::App& app, Action& run) {
  CLI::App* data = app.add_subcommand("data", "Generate synthetic data or describe a data file");
  data->require_subcommand(1);
  auto a = std::make_shared<GenerateArgs>();
  CLI::App* gen = data->add_subcommand("generate", "Write a seeded CMS-like table or CFD-like frames as .npz");
  gen->add_option("--kind", a->kind, kind_help())->required()->check(CLI::IsMember(dataset_generator_names()));
  gen->add_option("--rows", a->params.rows, "rows (jets) or frames")->required()->check(in_range(1, 1e15, "INT"));
  gen->add_option("--out", a->out, "output .npz file")->check(non_empty_path())->required();
  gen->add_option("--seed", a->params.seed, "random seed (default 0)");
  gen->add_option("--height", a->params.height, "cfd frame height (default 50)")->check(in_range(1, 65536, "INT"));
  gen->add_option("--width", a->params.width, "cfd frame width (default 50)")->check(in_range(1, 65536, "INT"));
  gen->add_flag("--compressed", a->deflate, "deflate the members (numpy.savez_compressed)");
  gen->add_flag("--force", a->force, "replace --out if it exists");
  gen->callback([a, &run] { run = [a] { return generate(*a); }; });

  auto path = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("text");
  auto all = std::make_shared<bool>(false);
  CLI::App* inf = data->add_subcommand("info", "Shape, dtype, bytes and per-column min/max/mean of an .npz file");
  inf->add_option("file", *path, "the .npz file")->required();
  inf->add_option("--format", *format, "text or json")->check(CLI::IsMember({"text", "json"}));
  inf->add_flag("--all-features", *all, "per-pixel statistics for 2D frames too");
  inf->callback([=, &run] { run = [=] { return info(*path, *format, *all); }; });
}

}  // namespace balerbench::cli
