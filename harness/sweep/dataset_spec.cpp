// dataset_spec.cpp: see dataset_spec.h.
#include "harness/sweep/dataset_spec.h"

#include <filesystem>
#include <system_error>

#include "datasets/dataset.h"
#include "datasets/synthetic.h"
#include "harness/base/strict_json.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// "rows (cms) or frames/height/width (cfd)": each generator's keys besides kind and seed.
std::string generator_keys() {
  std::string keys;
  for (const DatasetGenerator* g : dataset_generators())
    keys += (keys.empty() ? "" : " or ") + std::string(g->count_key) + (g->frames ? "/height/width" : "") + " (" +
            g->name + ")";
  return keys;
}

// /dataset/generator: the kind names the keys that follow it (its count, a frame size or not).
void parse_generator(const json& g, const std::string& source, DatasetSpec& d) {
  StrictReader gr(g, source, "/dataset/generator");
  gr.choice("kind", d.generator, dataset_generator_names());
  if (d.generator.empty()) gr.fail("kind", "is required", dataset_generator_hint());
  const DatasetGenerator& generator = dataset_generator(d.generator);
  d.rows = 0;
  gr.integer(generator.count_key, d.rows, 1, int64_t{1000000000000000});
  if (d.rows == 0) gr.fail(generator.count_key, "is required");
  if (generator.frames) {
    gr.integer("height", d.height, 2, 65536);
    gr.integer("width", d.width, 2, 65536);
  }
  gr.integer("seed", d.seed, 0);
  gr.reject_unknown("generator keys: kind, " + generator_keys() + ", seed");
}

}  // namespace

DatasetSpec parse_dataset_spec(const json& j, const std::string& source, const std::string& base_dir) {
  StrictReader r(j, source, "/dataset");
  DatasetSpec d;
  r.str("path", d.path);
  const json* g = r.object("generator");
  if (d.path.empty() == !g)
    r.fail(d.path.empty() ? "generator" : "path", "give exactly one of path and generator",
           "{\"path\": \"data.npz\"} or {\"generator\": {\"kind\": \"cms\", \"rows\": 20000, \"seed\": 0}}");
  if (!d.path.empty()) {
    // Canonical: the same file, however the experiment or its path was spelled.
    fs::path p = fs::path(d.path).is_absolute() ? fs::path(d.path) : fs::path(base_dir) / d.path;
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(fs::absolute(p, ec), ec);
    d.path = (ec ? p.lexically_normal() : canonical).string();
  } else {
    parse_generator(*g, source, d);
  }
  r.reject_unknown("dataset keys: path, generator");
  return d;
}

GeneratorParams DatasetSpec::params() const {
  GeneratorParams p;
  p.rows = rows;
  p.height = height;
  p.width = width;
  p.seed = static_cast<uint64_t>(seed);
  return p;
}

json DatasetSpec::to_json() const {
  if (!path.empty()) return {{"path", path}};
  json g = {{"kind", generator}, {"seed", seed}};
  const DatasetGenerator& entry = dataset_generator(generator);
  g[entry.count_key] = rows;
  if (entry.frames) {
    g["height"] = height;
    g["width"] = width;
  }
  return {{"generator", g}};
}

std::string DatasetSpec::label() const {
  if (!path.empty()) return fs::path(path).filename().string();
  return dataset_generator(generator).label(params());
}

std::shared_ptr<const Dataset> load_experiment_dataset(const DatasetSpec& spec) {
  if (spec.path.empty())  // the values, and the training's normalized copy of them
    check_synthetic_memory("dataset " + spec.label(), spec.generator, spec.rows, spec.height, spec.width, 2);
  if (!spec.path.empty()) return std::make_shared<Dataset>(load_dataset(spec.path));
  SyntheticData d = dataset_generator(spec.generator).generate(spec.params());
  auto ds = std::make_shared<Dataset>(
      dataset_from_array(NpyArray::from_doubles(d.shape, d.values), d.names, "generator " + spec.generator));
  ds->source_path = spec.label();
  return ds;
}

}  // namespace balerbench
