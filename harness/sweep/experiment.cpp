// experiment.cpp: see experiment.h.
#include "harness/sweep/experiment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "datasets/error.h"
#include "datasets/paths.h"
#include "datasets/synthetic.h"
#include "harness/base/strict_json.h"
#include "harness/base/system_info.h"
#include "models/architecture.h"

namespace balerbench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Keys of "training" that the experiment sets elsewhere.
const std::vector<std::pair<std::string, std::string>> kTrainingKeysElsewhere = {
    {"input_path", "set the data under /dataset"},
    {"model_name", "set the model under /model/name"},
    {"compression_ratio", "set it under /model/compression_ratio"},
    {"epochs", "epochs is a sweep axis: /sweep/epochs"},
    {"batch_size", "batch_size is a sweep axis: /sweep/batch_size"},
    {"precision", "precision is a sweep axis: /sweep/precision"},
    {"engine", "engine is a sweep axis: /sweep/engine"},
    {"energy", "energy settings go in the top-level /energy section"},
    {"monitoring", "live monitoring is set on the command line (balerbench run --prometheus-port ...)"},
    {"profile_trace", "a profiler trace per trial is not supported; use balerbench train --profile-trace"},
    {"intermittent_model_saving", "trials keep no model files"},
};

template <typename T, typename F>
std::vector<T> axis(StrictReader& r, const std::string& key, std::vector<T> fallback, F read_one) {
  const json* v = r.get(key);
  if (!v) return fallback;
  if (!v->is_array()) {
    std::vector<T> one{read_one(*v, key)};
    return one;
  }
  if (v->empty()) r.fail(key, "must list at least one value");
  std::vector<T> out;
  for (std::size_t i = 0; i < v->size(); ++i) out.push_back(read_one((*v)[i], key + "/" + std::to_string(i)));
  return out;
}

DatasetSpec parse_dataset(const json& j, const std::string& source, const std::string& base_dir) {
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
    StrictReader gr(*g, source, "/dataset/generator");
    gr.choice("kind", d.generator, {"cms", "cfd"});
    if (d.generator.empty()) gr.fail("kind", "is required", "cms (CMS-like jets) or cfd (CFD-like frames)");
    d.rows = 0;
    gr.integer(d.generator == "cms" ? "rows" : "frames", d.rows, 1);
    if (d.rows == 0) gr.fail(d.generator == "cms" ? "rows" : "frames", "is required");
    if (d.generator == "cfd") {
      gr.integer("height", d.height, 2);
      gr.integer("width", d.width, 2);
    }
    gr.integer("seed", d.seed, 0);
    gr.reject_unknown("generator keys: kind, rows (cms) or frames/height/width (cfd), seed");
  }
  r.reject_unknown("dataset keys: path, generator");
  return d;
}

std::string format_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

json DatasetSpec::to_json() const {
  if (!path.empty()) return {{"path", path}};
  json g = {{"kind", generator}, {"seed", seed}};
  if (generator == "cms")
    g["rows"] = rows;
  else {
    g["frames"] = rows;
    g["height"] = height;
    g["width"] = width;
  }
  return {{"generator", g}};
}

std::string DatasetSpec::label() const {
  if (!path.empty()) return fs::path(path).filename().string();
  if (generator == "cms")
    return "CMS-like " + std::to_string(rows) + " rows (synthetic, seed " + std::to_string(seed) + ")";
  return "CFD-like " + std::to_string(rows) + "x" + std::to_string(height) + "x" + std::to_string(width) +
         " (synthetic, seed " + std::to_string(seed) + ")";
}

json TargetSpec::to_json() const {
  if (!enabled()) return nullptr;
  return {{"metric", metric}, {"value", value}, {"stop_when_reached", stop_when_reached}};
}

json OptimizerSpec::to_json() const {
  if (!enabled) return nullptr;
  return {{"eta", eta},
          {"wait_steps", wait_steps},
          {"warmup_steps", warmup_steps},
          {"profile_steps", profile_steps},
          {"pl_step_w", pl_step_w}};
}

int64_t Experiment::grid_size() const {
  return static_cast<int64_t>(batch_sizes.size() * precisions.size() * engines.size() * power_limits_w.size() *
                              epochs.size()) *
         repeats;
}

std::string TrialSpec::label() const {
  return "bs=" + std::to_string(batch_size) + " " + precision_name(precision) + " " + engine_name(engine) +
         " pl=" + (power_limit_w ? format_number(*power_limit_w) + "W" : std::string("-")) +
         " ep=" + std::to_string(epochs) + (warmup ? " warm-up" : " #" + std::to_string(repeat));
}

std::string experiment_name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxExperimentNameBytes)
    return "is longer than " + std::to_string(kMaxExperimentNameBytes) + " bytes";
  if (name.front() == '.') return "starts with '.'";
  for (const char c : name) {
    if (c == '/' || c == '\\') return std::string("holds '") + c + "'";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "holds a control character";
  }
  return "";
}

Experiment parse_experiment(const json& j, const std::string& source, const std::string& base_dir) {
  if (!j.is_object())
    throw InputError(source + ": an experiment must be a JSON object", "see experiments/quickstart.json");
  StrictReader r(j, source);
  Experiment e;
  e.source = source;
  e.raw = j;
  int64_t version = 0;
  if (!r.get("schema_version"))
    r.fail("schema_version", "is required", "add \"schema_version\": " + std::to_string(kExperimentSchemaVersion));
  r.integer("schema_version", version, 1);
  if (version != kExperimentSchemaVersion)
    r.fail("schema_version", "is " + std::to_string(version) + " but this balerbench reads version " +
                                 std::to_string(kExperimentSchemaVersion));
  e.schema_version = static_cast<int>(version);
  const bool named = r.get("name") != nullptr;
  r.str("name", e.name);
  if (!named) e.name = fs::path(source).stem().string();
  if (const std::string problem = experiment_name_problem(e.name); !problem.empty())
    r.fail("name", shown(e.name) + (named ? "" : " (the file's name, as there is no \"name\")") + " " + problem +
                       ": the name is part of the report's file names",
           "a name with no / or \\, no control character, not starting with '.', at most 120 bytes; letters, "
           "digits and - _ . + keep report file names as the name is (others become _), e.g. \"name\": "
           "\"cpu_sweep\"");
  r.str("description", e.description);

  const json* ds = r.object("dataset");
  if (!ds) r.fail("dataset", "is required", "{\"generator\": {\"kind\": \"cms\", \"rows\": 20000}} or {\"path\": ...}");
  e.dataset = parse_dataset(*ds, source, base_dir);

  const json* model = r.object("model");
  if (!model) r.fail("model", "is required", "{\"name\": \"AE\", \"compression_ratio\": 1.6}");
  std::string model_name;
  double ratio = 0;
  {
    StrictReader mr(*model, source, "/model");
    mr.str("name", model_name);
    if (model_name.empty()) mr.fail("name", "is required");
    try {
      check_model_name(model_name);
    } catch (const InputError& err) {
      mr.fail("name", err.what());
    }
    mr.number("compression_ratio", ratio);
    if (!(ratio > 0) || !std::isfinite(ratio)) mr.fail("compression_ratio", "must be a positive number");
    mr.reject_unknown("model keys: name, compression_ratio");
  }

  json training = json::object();
  if (const json* t = r.object("training")) training = *t;
  for (const auto& [key, hint] : kTrainingKeysElsewhere)
    if (training.contains(key)) throw InputError(source + ": /training/" + key + ": not allowed here", hint);
  training["input_path"] = e.dataset.path.empty() ? "synthetic:" + e.dataset.generator : e.dataset.path;
  training["model_name"] = model_name;
  training["compression_ratio"] = ratio;
  if (!e.dataset.generator.empty() && e.dataset.generator == "cms" && !training.contains("type_list"))
    training["type_list"] = cms_type_list();  // the generator's integer columns, as Baler's CMS config
  e.base = parse_run_config(training, source, base_dir, "/training");
  if (!e.dataset.path.empty()) e.base.input_path = e.dataset.path;

  const json* sweep = r.object("sweep");
  if (!sweep) r.fail("sweep", "is required", "{\"batch_size\": [512], \"precision\": [\"fp32\"], \"epochs\": [10]}");
  {
    StrictReader sr(*sweep, source, "/sweep");
    e.batch_sizes = axis<int64_t>(sr, "batch_size", {512}, [&](const json& v, const std::string& k) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) sr.fail(k, "must be a positive integer, got " + shown(v));
      return v.get<int64_t>();
    });
    e.precisions = axis<Precision>(sr, "precision", {Precision::kAuto}, [&](const json& v, const std::string& k) {
      if (!v.is_string()) sr.fail(k, "expected a precision name, got " + shown(v));
      const std::string p = v.get<std::string>();
      const std::optional<Precision> mode = find_precision(p);
      if (!mode) sr.fail(k, "invalid precision '" + p + "'", "one of: " + precision_name_list());
      return *mode;
    });
    e.engines = axis<EngineKind>(sr, "engine", {e.base.engine}, [&](const json& v, const std::string& k) {
      if (!v.is_string()) sr.fail(k, "expected an engine name, got " + shown(v));
      const std::optional<EngineKind> engine = find_engine(v.get<std::string>());
      if (!engine) sr.fail(k, "invalid engine " + shown(v), "one of: " + engine_name_list());
      return *engine;
    });
    if (const json* v = sr.get("power_limit_w"); v && !v->is_array())
      sr.fail("power_limit_w", "expected a list of watts or null, e.g. [null] or [300, 250, 200]");
    e.power_limits_w.clear();
    if (const json* v = sweep->contains("power_limit_w") ? &(*sweep)["power_limit_w"] : nullptr) {
      if (v->empty()) sr.fail("power_limit_w", "must list at least one value (null = leave the limit as it is)");
      for (std::size_t i = 0; i < v->size(); ++i) {
        const json& w = (*v)[i];
        if (w.is_null())
          e.power_limits_w.emplace_back(std::nullopt);
        else if (w.is_number() && w.get<double>() > 0 && w.get<double>() < 100000)
          e.power_limits_w.emplace_back(w.get<double>());
        else
          sr.fail("power_limit_w/" + std::to_string(i), "must be a positive number of watts or null, got " + shown(w));
      }
    } else {
      e.power_limits_w = {std::nullopt};
    }
    e.epochs = axis<int64_t>(sr, "epochs", {e.base.epochs}, [&](const json& v, const std::string& k) {
      if (!v.is_number_integer() || v.get<int64_t>() < 1) sr.fail(k, "must be a positive integer, got " + shown(v));
      return v.get<int64_t>();
    });
    sr.integer("repeats", e.repeats, 1);
    sr.choice("order", e.order, {"interleaved", "shuffled", "grid"});
    sr.integer("order_seed", e.order_seed, 0);
    sr.integer("warmup_trials", e.warmup_trials, 0);
    if (e.order != "shuffled" && sweep->contains("order_seed"))
      sr.fail("order_seed", "only applies to \"order\": \"shuffled\"", "remove it, or set \"order\": \"shuffled\"");
    sr.reject_unknown("sweep keys: batch_size, precision, engine, power_limit_w, epochs, repeats, order, order_seed, "
                      "warmup_trials");
  }

  if (const json* t = r.object("target")) {
    StrictReader tr(*t, source, "/target");
    std::optional<double> val_loss, rel;
    tr.optional_number_in("val_loss", val_loss, 0, 1e300);
    tr.optional_number_in("relative_error", rel, 0, 1e300);
    if (val_loss.has_value() == rel.has_value())
      tr.fail(val_loss ? "relative_error" : "val_loss", "give exactly one of val_loss and relative_error");
    e.target.metric = val_loss ? "val_loss" : "relative_error";
    e.target.value = val_loss ? *val_loss : *rel;
    tr.boolean("stop_when_reached", e.target.stop_when_reached);
    tr.reject_unknown("target keys: val_loss or relative_error, stop_when_reached");
  }

  if (const json* en = r.object("energy")) {
    json energy = *en;
    if (energy.contains("cooldown_s")) {
      const json& c = energy["cooldown_s"];
      if (!c.is_number() || c.get<double>() < 0 || c.get<double>() > 86400)
        throw InputError(source + ": /energy/cooldown_s: must be a number of seconds in [0, 86400], got " + shown(c));
      e.cooldown_s = c.get<double>();
      energy.erase("cooldown_s");
    }
    e.base.energy = parse_energy_settings(energy, source, "/energy", base_dir);
  }

  if (const json* c = r.object("cost")) {
    StrictReader cr(*c, source, "/cost");
    if (const json* v = cr.get("eta")) {
      const json list = v->is_array() ? *v : json::array({*v});
      if (list.empty()) cr.fail("eta", "must list at least one value in [0, 1]");
      e.etas.clear();
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_number() || list[i].get<double>() < 0 || list[i].get<double>() > 1)
          cr.fail("eta/" + std::to_string(i), "must be a number in [0, 1], got " + shown(list[i]));
        e.etas.push_back(list[i].get<double>());
      }
    }
    cr.optional_number_in("max_power_w", e.max_power_w, 1e-3, 1e6);
    cr.reject_unknown("cost keys: eta, max_power_w");
  }

  r.boolean("allow_power_limit_changes", e.allow_power_limit_changes);
  if (const json* o = r.object("power_limit_optimizer")) {
    StrictReader orr(*o, source, "/power_limit_optimizer");
    orr.boolean("enabled", e.optimizer.enabled);
    orr.number_in("eta", e.optimizer.eta, 0, 1);
    orr.integer("wait_steps", e.optimizer.wait_steps, 0);
    orr.integer("warmup_steps", e.optimizer.warmup_steps, 0);
    orr.integer("profile_steps", e.optimizer.profile_steps, 1);
    orr.number_in("pl_step_w", e.optimizer.pl_step_w, 1, 1000);
    orr.reject_unknown("power_limit_optimizer keys: enabled, eta, wait_steps, warmup_steps, profile_steps, pl_step_w");
  }
  const bool sets_limits =
      std::any_of(e.power_limits_w.begin(), e.power_limits_w.end(), [](const auto& w) { return w.has_value(); });
  if ((sets_limits || e.optimizer.enabled) && !e.allow_power_limit_changes)
    throw InputError(source + ": /allow_power_limit_changes: the experiment " +
                         (sets_limits ? std::string("lists power limits in /sweep/power_limit_w")
                                      : std::string("enables /power_limit_optimizer")) +
                         " but does not allow changing them",
                     "add \"allow_power_limit_changes\": true (the original limits are restored after every trial), "
                     "or use [null] to run at the limit in force");
  if (e.optimizer.enabled && !e.base.energy.enabled)
    throw InputError(source + ": /power_limit_optimizer: the optimiser weighs measured energy against time, "
                              "but /energy/enabled is false",
                     "remove \"enabled\": false from /energy, or disable the optimiser");
  if (e.optimizer.enabled && sets_limits)
    throw InputError(source + ": /power_limit_optimizer: the optimiser chooses the limit itself",
                     "set /sweep/power_limit_w to [null] when the optimiser is enabled");
  r.reject_unknown(
      "experiment keys: schema_version, name, description, dataset, model, training, sweep, target, energy, cost, "
      "allow_power_limit_changes, power_limit_optimizer");
  return e;
}

Experiment load_experiment(const std::string& path) {
  check_input_file(path, "experiment file", "give an experiment FILE.json, e.g. experiments/quickstart.json");
  if (!std::ifstream(path)) throw InputError(path + ": cannot open the experiment file", "check the path");
  const json j = parse_json_file_strict(path);
  Experiment e = parse_experiment(j, path, fs::path(path).parent_path().string());
  // The data file before anything runs or is written (a dry run included): its key names its content.
  if (!e.dataset.path.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(e.dataset.path, ec))
      throw InputError(path + ": /dataset/path: no such file '" + e.dataset.path + "'",
                       "paths are relative to the experiment file's folder; make one with `balerbench data generate`");
  }
  return e;
}

namespace {

// A file's content hash: 64-bit words through two multiply-xorshift lanes (fast on gigabytes;
// identity, not security).
std::string file_content_hash(const std::string& path, uint64_t& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  uint64_t a = 0x9E3779B97F4A7C15ULL, b = 0xC2B2AE3D27D4EB4FULL;
  std::vector<char> buf(1 << 20);
  bytes = 0;
  auto mix = [](uint64_t h, uint64_t w) {
    h ^= w * 0xFF51AFD7ED558CCDULL;
    h = (h << 31) | (h >> 33);
    return h * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  };
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::size_t n = static_cast<std::size_t>(in.gcount());
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      uint64_t w1, w2;
      std::memcpy(&w1, buf.data() + i, 8);
      std::memcpy(&w2, buf.data() + i + 8, 8);
      a = mix(a, w1);
      b = mix(b, w2);
    }
    for (; i < n; ++i) a = mix(a, static_cast<unsigned char>(buf[i]) | (static_cast<uint64_t>(i) << 8));
    bytes += n;
  }
  b = mix(b, bytes);
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return out;
}

TrialSpec make_trial(const Experiment& e, int64_t index, int64_t bs, Precision p, EngineKind engine,
                     const std::optional<double>& pl, int64_t ep, int64_t rep, const json& dataset_id,
                     const std::string& fingerprint) {
  TrialSpec t;
  t.grid_index = index;
  t.repeat = rep;
  t.batch_size = bs;
  t.precision = p;
  t.engine = engine;
  t.power_limit_w = pl;
  t.epochs = ep;
  t.config = e.base;
  t.config.batch_size = bs;
  t.config.epochs = ep;
  t.config.precision = p;
  t.config.engine = engine;
  t.config.seed = e.base.seed + rep;
  t.config.progress = e.base.progress;
  json run = t.config.to_json();
  run.erase("monitoring");  // live monitoring does not shape the measurement
  run.erase("progress");
  run.erase("progress_interval_s");
  t.spec = {{"experiment", e.name},
            {"dataset", e.dataset.to_json()},
            {"run_config", run},
            {"power_limit_w", pl ? json(*pl) : json(nullptr)},
            {"repeat", rep},
            {"target", e.target.to_json()},
            {"cooldown_s", e.cooldown_s},
            {"power_limit_optimizer", e.optimizer.to_json()}};
  // The key names the data by content and no path: the input path in the run config is the
  // dataset's own, so it leaves the key too.
  json keyed = t.spec;
  keyed["dataset"] = dataset_id;
  if (keyed["run_config"].contains("input_path")) keyed["run_config"].erase("input_path");
  t.spec_key = spec_hash(keyed);
  t.key = fingerprint.empty() ? t.spec_key : text_hash(t.spec_key + "@" + fingerprint);
  return t;
}

}  // namespace

json dataset_identity(const DatasetSpec& d) {
  if (d.path.empty()) return d.to_json();
  std::error_code ec;
  if (!fs::is_regular_file(d.path, ec)) return d.to_json();  // not a file (a device, a pipe): named by its path
  uint64_t bytes = 0;
  const std::string hash = file_content_hash(d.path, bytes);
  if (hash.empty()) return d.to_json();  // unreadable: loading it fails with its own message
  return {{"content_hash", hash}, {"bytes", bytes}};
}

std::vector<TrialSpec> expand_grid(const Experiment& e, const std::string& system_fingerprint) {
  std::vector<TrialSpec> out;
  const json dataset_id = dataset_identity(e.dataset);
  int64_t index = 0;
  for (int64_t bs : e.batch_sizes)
    for (const Precision p : e.precisions)
      for (const EngineKind engine : e.engines)
        for (const auto& pl : e.power_limits_w)
          for (int64_t ep : e.epochs)
            for (int64_t rep = 0; rep < e.repeats; ++rep)
              out.push_back(make_trial(e, index++, bs, p, engine, pl, ep, rep, dataset_id, system_fingerprint));
  return out;
}

std::vector<std::size_t> run_order(const Experiment& e, const std::vector<const TrialSpec*>& trials) {
  std::vector<std::size_t> order(trials.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (e.order == "grid") return order;
  // Rounds: repeat 0 of every configuration, then repeat 1, ...; within a round, grid order or a
  // shuffle drawn from (order_seed, round).
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::make_pair(trials[a]->repeat, trials[a]->grid_index) < std::make_pair(trials[b]->repeat, trials[b]->grid_index);
  });
  if (e.order == "shuffled") {
    std::size_t begin = 0;
    while (begin < order.size()) {
      std::size_t end = begin;
      while (end < order.size() && trials[order[end]]->repeat == trials[order[begin]]->repeat) ++end;
      std::mt19937_64 rng(static_cast<uint64_t>(e.order_seed) * 1000003ULL + static_cast<uint64_t>(trials[order[begin]]->repeat));
      for (std::size_t i = end - begin; i > 1; --i) {  // Fisher-Yates with the generator's raw draws: portable
        const std::size_t j = static_cast<std::size_t>(rng() % i);
        std::swap(order[begin + i - 1], order[begin + j]);
      }
      begin = end;
    }
  }
  return order;
}

TrialSpec warmup_trial(const Experiment& e, int64_t n, const std::string& run_id, const std::string& system_fingerprint) {
  TrialSpec t = make_trial(e, -1 - n, e.batch_sizes.front(), e.precisions.front(), e.engines.front(),
                           e.power_limits_w.front(), e.epochs.front(), 0, dataset_identity(e.dataset), "");
  t.warmup = true;
  t.repeat = -1 - n;
  t.spec["warmup"] = {{"run_id", run_id}, {"number", n}};
  t.spec["repeat"] = nullptr;
  t.key = text_hash(t.spec_key + "@warmup@" + run_id + "#" + std::to_string(n) + "@" + system_fingerprint);
  return t;
}

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  auto bad = [&] {
    throw InputError("--shard '" + text + "': expected i/N with 0 <= i < N",
                     "e.g. --shard 0/4 ... --shard 3/4 split the grid into four slices");
  };
  if (slash == std::string::npos) bad();
  Shard s;
  try {
    std::size_t n1 = 0, n2 = 0;
    s.index = std::stoll(text.substr(0, slash), &n1);
    s.count = std::stoll(text.substr(slash + 1), &n2);
    if (n1 != slash || n2 != text.size() - slash - 1) bad();
  } catch (const std::logic_error&) {
    bad();
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count) bad();
  return s;
}

std::optional<Shard> shard_from_slurm_env() {
  const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
  if (!id || !count || !*id || !*count) return std::nullopt;
  const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
  Shard s;
  try {
    s.index = std::stoll(id) - (min && *min ? std::stoll(min) : 0);
    s.count = std::stoll(count);
  } catch (const std::logic_error&) {
    throw InputError(std::string("SLURM_ARRAY_TASK_ID='") + id + "', SLURM_ARRAY_TASK_COUNT='" + count +
                     "': not integers");
  }
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw InputError(
        "Slurm array task " + std::to_string(s.index) + " of " + std::to_string(s.count) + " is outside the array",
        "use a contiguous array (#SBATCH --array=0-N), or pass --shard i/N");
  return s;
}

std::string spec_hash(const json& spec) {
  return text_hash(shown(spec));  // nlohmann sorts object keys: canonical
}

}  // namespace balerbench
