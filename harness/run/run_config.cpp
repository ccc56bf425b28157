// run_config.cpp: strict parsing of RunConfig. See run_config.h.
#include "harness/run/run_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "datasets/dataset.h"
#include "common/error.h"
#include "common/paths.h"
#include "common/text.h"
#include "harness/base/strict_json.h"
#include "models/architecture.h"

namespace balerbench {
namespace {

using nlohmann::json;

const std::set<std::string> kBalerDeadKeys = {"reg_param", "RHO", "l1", "mse_avg", "mse_sum", "emd"};
const std::set<std::string> kBalerUnsupported = {"activation_extraction", "convert_to_blocks",
                                                 "save_error_bounded_deltas", "compress_to_latent_space",
                                                 "separate_model_saving"};

void require(StrictReader& r, const std::string& key) {
  if (!r.get(key))
    throw InputError(r.source() + ": missing required key /" + key,
                     "a config needs input_path, model_name and compression_ratio");
}

void reject_unknown(const json& j, const StrictReader& r) {
  for (auto it = j.begin(); it != j.end(); ++it)
    if (kBalerDeadKeys.count(it.key()))
      r.fail(it.key(), "unknown key",
             "'" + it.key() + "' is one of Baler's dead keys (never read by Baler's HEAD); remove it");
  r.reject_unknown();
}

std::string resolve_path(const std::string& p, const std::string& base_dir) {
  namespace fs = std::filesystem;
  if (p.empty() || fs::path(p).is_absolute() || base_dir.empty()) return p;
  return (fs::path(base_dir) / p).lexically_normal().string();
}

}  // namespace

RunConfig::CodecsKeys parse_codecs_keys(const json& k, const std::string& source, const std::string& path,
                                        bool enabled_by_default) {
  RunConfig::CodecsKeys c;
  c.enabled = enabled_by_default;
  StrictReader kr(k, source, path);
  kr.boolean("enabled", c.enabled);
  if (const json* u = kr.get("uses")) {
    if (!u->is_array() || u->empty()) kr.fail("uses", "expected a non-empty list of whole numbers", "e.g. [1, 10, 100]");
    c.uses.clear();
    for (const json& v : *u) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        kr.fail("uses", "entry " + v.dump() + " is too large (at most " + std::to_string(INT64_MAX) + ")",
                "e.g. [1, 10, 100]");
      if (!v.is_number_integer() || v.get<int64_t>() < 1)
        kr.fail("uses", "every entry must be a whole number of at least 1, got " + v.dump(), "e.g. [1, 10, 100]");
      if (std::find(c.uses.begin(), c.uses.end(), v.get<int64_t>()) != c.uses.end())
        kr.fail("uses", "lists " + v.dump() + " twice", "each number of compressions once, e.g. [1, 10, 100]");
      c.uses.push_back(v.get<int64_t>());
    }
  }
  read_codec_knobs(kr, c.knobs);  // each codec's own keys, by its own reader
  if (const json* w = k.contains("min_window_s") ? &k["min_window_s"] : nullptr;
      w && w->is_number() && !(w->get<double>() >= 0 && w->get<double>() <= 60))
    kr.fail("min_window_s", "must be 0 to 60 seconds, got " + w->dump(),
            "0.2 (the default) is long enough for RAPL and NVML");
  kr.number_in("min_window_s", c.min_window_s, 0, 60);
  kr.reject_unknown();
  return c;
}

namespace {

// Baler's required keys and the model's.
void read_model_keys(const json& j, StrictReader& r, RunConfig& c, const std::string& base_dir) {
  for (const char* key : {"input_path", "model_name", "compression_ratio"}) require(r, key);
  r.str("input_path", c.input_path);
  if (c.input_path.empty())
    r.fail("input_path", "must not be empty",
           "the .npz file to train on (its array 'data'), e.g. data.npz: balerbench data generate --out data.npz makes one");
  c.input_path = resolve_path(c.input_path, base_dir);
  r.str("model_name", c.model_name);
  r.number("compression_ratio", c.compression_ratio);
  if (!(c.compression_ratio > 0) || !std::isfinite(c.compression_ratio))
    r.fail("compression_ratio", "must be a positive number (got " + shown(j.at("compression_ratio")) + ")",
           kCompressionRatioHint);
  if (const json* v = r.get("data_dimension")) {
    if (!v->is_number_integer() || (v->get<int64_t>() != 1 && v->get<int64_t>() != 2))
      r.fail("data_dimension", "must be 1 (tables) or 2 (frames), got " + v->dump(),
             "1 or 2, without quotes, or remove it: balerbench reads it from the data's shape");
    c.data_dimension = v->get<int>();
  }
  r.choice("model_type", c.model_type, {"dense"});
}

// The learning rate and its scaling by the batch size.
void read_lr_keys(StrictReader& r, RunConfig& c) {
  r.number("lr", c.lr);
  if (!(c.lr > 0) || !std::isfinite(c.lr))
    r.fail("lr", "must be a positive number", std::string("a number above 0, e.g. 0.001; ") + kSeeConfigReference);
  r.choice("lr_scaling", c.lr_scaling, {"none", "linear", "sqrt"});
  if (r.get("lr_reference_batch_size")) {
    int64_t reference = 0;
    r.integer("lr_reference_batch_size", reference, 1);
    c.lr_reference_batch_size = reference;
  }
  if (c.lr_scaling != "none" && !c.lr_reference_batch_size)
    r.fail("lr_reference_batch_size", "is required with lr_scaling " + c.lr_scaling,
           "the batch size lr was tuned for, e.g. \"lr_reference_batch_size\": 512");
  // Written by to_json beside the rule (the learning rate trained at); derived, so read back and ignored.
  if (const json* e = r.get("effective_lr"); e && !e->is_number())
    r.fail("effective_lr", std::string("expected a number, got ") + e->type_name(), "it is derived: remove it");
  if (c.lr_scaling == "none" && c.lr_reference_batch_size)
    r.fail("lr_reference_batch_size", "applies only with lr_scaling linear or sqrt",
           "add \"lr_scaling\": \"linear\" or \"sqrt\", or remove it");
}

// Baler's training keys: epochs, batches, the split, normalization, the schedulers, saving.
void read_training_keys(StrictReader& r, RunConfig& c) {
  r.integer("epochs", c.epochs, 1);
  r.integer("batch_size", c.batch_size, 1, training_defaults::kMaxBatchSize);
  read_lr_keys(r, c);
  r.number("test_size", c.test_size);
  if (!(c.test_size >= 0 && c.test_size < 1))
    r.fail("test_size", "must be in [0, 1)",
           std::string("the share of rows held out, at least 0 and below 1, e.g. 0.2; ") + kSeeConfigReference);
  r.boolean("apply_normalization", c.apply_normalization);
  r.boolean("custom_norm", c.custom_norm);
  r.boolean("early_stopping", c.early_stopping);
  r.integer("early_stopping_patience", c.early_stopping_patience, 1);
  r.number("min_delta", c.min_delta);
  if (!(c.min_delta >= 0))
    r.fail("min_delta", "must be >= 0", std::string("a number of at least 0, e.g. 0.0001; ") + kSeeConfigReference);
  r.boolean("lr_scheduler", c.lr_scheduler);
  r.integer("lr_scheduler_patience", c.lr_scheduler_patience, 0);
  r.boolean("deterministic_algorithm", c.deterministic_algorithm);
  r.boolean("extra_compression", c.extra_compression);
  r.boolean("intermittent_model_saving", c.intermittent_model_saving);
  r.integer("intermittent_saving_patience", c.intermittent_saving_patience, 1);
}

// Baler's type_list and the Baler keys accepted only as false.
void read_baler_data_keys(StrictReader& r, RunConfig& c) {
  if (const json* v = r.get("type_list")) {
    if (!v->is_array())
      r.fail("type_list", std::string("expected an array of type names, got ") + v->type_name(),
             "one type name per column in double quotes, e.g. [\"float64\", \"int\"]");
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& t = (*v)[i];
      const std::string key = "type_list/" + std::to_string(i);
      if (!t.is_string())
        r.fail(key, std::string("expected a string, got ") + t.type_name(),
               "one of: float64, float32, int, int64, int32, in double quotes");
      const std::string s = t.get<std::string>();
      if (s != "float64" && s != "float32" && s != "int" && s != "int64" && s != "int32")
        r.fail(key, "invalid type '" + s + "'", "one of: float64, float32, int, int64, int32");
      c.type_list.push_back(s);
    }
  }
  for (const auto& k : kBalerUnsupported) {
    if (const json* v = r.get(k)) {
      if (!v->is_boolean())
        r.fail(k, std::string("expected true or false, got ") + v->type_name(),
               "write false, without quotes (true is not supported), or remove it");
      if (v->get<bool>()) r.fail(k, "is not supported by balerbench", "set it to false or remove it");
    }
  }
}

// balerbench's own keys at the root: the run's device, threads, output, precision and engine.
void read_run_keys(StrictReader& r, RunConfig& c) {
  std::string loss = loss_kind_name(c.loss);
  r.choice("loss", loss, {"baler_sum", "mse_mean"});
  c.loss = parse_loss_kind(loss);
  r.boolean("shuffle", c.shuffle);
  r.integer("seed", c.seed, 0);
  r.choice("latent_dtype", c.latent_dtype, {"", "float64", "float32", "float16"});
  r.boolean("truncate", c.truncate);
  r.str("device", c.device);
  if (c.device != "cpu" && c.device != "cuda" && c.device.rfind("cuda:", 0) != 0)
    r.fail("device", "invalid device '" + c.device + "'", "cpu, cuda or cuda:N");
  r.integer("threads", c.threads, 0);
  r.boolean("flush_denormal", c.flush_denormal);
  r.choice("progress", c.progress, {"auto", "bar", "lines", "none"});
  r.integer("codec_chunk_rows", c.codec_chunk_rows, 1);
  r.number_in("codec_min_window_s", c.codec_min_window_s, 0, 600);
  r.number_in("progress_interval_s", c.progress_interval_s, 0, 86400);
  std::string precision = precision_name(c.precision);
  r.choice("precision", precision, precision_names());
  c.precision = *find_precision(precision);
  std::string engine = engine_name(c.engine);
  r.choice("engine", engine, engine_names());
  c.engine = *find_engine(engine);
  read_engine_knobs(r, c.engine_knobs);  // each engine's own keys, by its own reader
}

// The sections (grad_scaler, energy, codecs, monitoring) and the profiling keys.
void read_sections(StrictReader& r, RunConfig& c, const std::string& source, const std::string& base_dir,
                   const std::string& path) {
  if (const json* g = r.object("grad_scaler")) {
    StrictReader gr(*g, source, path + "/grad_scaler");
    gr.number_in("init_scale", c.grad_scaler.init_scale, 1e-30, 1e30);
    gr.number_in("growth_factor", c.grad_scaler.growth_factor, 1.0 + 1e-9, 1e6);
    gr.number_in("backoff_factor", c.grad_scaler.backoff_factor, 1e-9, 1.0 - 1e-9);
    gr.integer("growth_interval", c.grad_scaler.growth_interval, 1);
    gr.reject_unknown();
  }
  r.boolean("cuda_graphs", c.cuda_graphs);
  r.boolean("profile", c.profile);
  r.boolean("profile_sync", c.profile_sync);
  r.str("profile_trace", c.profile_trace);
  c.profile_trace = resolve_path(c.profile_trace, base_dir);
  if (!c.profile_trace.empty() && !c.profile)
    r.fail("profile_trace", "needs profile: true", "add --profile (or \"profile\": true)");
  if (const json* e = r.object("energy")) c.energy = parse_energy_settings(*e, source, path + "/energy", base_dir);
  if (const json* k = r.object("codecs")) c.codecs = parse_codecs_keys(*k, source, path + "/codecs");
  if (const json* m = r.object("monitoring"))
    c.monitoring = parse_monitoring_settings(*m, source, path + "/monitoring", base_dir);
}

}  // namespace

RunConfig parse_run_config(const json& j, const std::string& source, const std::string& base_dir,
                           const std::string& path) {
  if (!j.is_object()) throw InputError(source + ": the config must be a JSON object", "see experiments/ for examples");
  StrictReader r(j, source, path);
  RunConfig c;
  read_model_keys(j, r, c, base_dir);
  read_training_keys(r, c);
  read_baler_data_keys(r, c);
  read_run_keys(r, c);
  read_sections(r, c, source, base_dir, path);
  reject_unknown(j, r);
  return c;
}

std::vector<ConfigKeyDoc> run_config_key_docs() {
  return run_config_key_docs_with({engine_knob_docs(), codec_knob_docs(), meter_knob_docs()},
                                  {engine_key_doc(), meters_key_doc()});
}

bool RunConfig::CodecsKeys::is_default() const { return to_json() == CodecsKeys().to_json(); }

nlohmann::json RunConfig::CodecsKeys::to_json() const {
  json j = {{"enabled", enabled}, {"uses", uses}, {"min_window_s", min_window_s}};
  j.update(knobs.to_json());  // the codecs' own keys beside the others, as configs spell them
  return j;
}

nlohmann::json RunConfig::to_json() const {
  json j = TrainSettings::to_json();
  j.update({{"input_path", input_path}, {"model_name", model_name}, {"compression_ratio", compression_ratio},
            {"model_type", model_type}, {"test_size", test_size}, {"apply_normalization", apply_normalization},
            {"custom_norm", custom_norm}, {"deterministic_algorithm", deterministic_algorithm},
            {"extra_compression", extra_compression}, {"intermittent_model_saving", intermittent_model_saving},
            {"intermittent_saving_patience", intermittent_saving_patience}, {"truncate", truncate},
            {"device", device}, {"threads", threads}, {"flush_denormal", flush_denormal},
            {"codec_chunk_rows", codec_chunk_rows}, {"precision", precision_name(precision)},
            {"engine", engine_name(engine)}});
  j["profile_trace"] = profile_trace.empty() ? json(nullptr) : json(profile_trace);
  j["data_dimension"] = data_dimension ? json(*data_dimension) : json(nullptr);
  j["type_list"] = type_list.empty() ? json(nullptr) : json(type_list);
  j["latent_dtype"] = latent_dtype.empty() ? json(nullptr) : json(latent_dtype);
  j["energy"] = energy.to_json();
  if (!codecs.is_default()) j["codecs"] = codecs.to_json();  // absent by default: older trials' keys stay
  if (codec_min_window_s > 0) j["codec_min_window_s"] = codec_min_window_s;  // likewise
  j["monitoring"] = monitoring.to_json();
  return j;
}

std::string set_origin(const std::string& assignment) { return "--set " + message_text(assignment, 120); }

std::string apply_override(json& j, const std::string& assignment, const std::string& origin) {
  // Keys and values end up in run_config.json and the results database, which hold UTF-8 only.
  try {
    (void)json(assignment).dump();
  } catch (const json::type_error&) {
    throw InputError((origin.empty() ? "--set " : origin + " ") + message_text(assignment, 120) + ": not valid UTF-8",
                     "write keys and values in UTF-8 (a file name in another encoding: rename it)");
  }
  const std::string named = origin.empty() ? set_origin(assignment) : origin;
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(named + ": expected key=value", "for example --set epochs=10");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  static const std::set<std::string> kPathKeys = {"input_path", "energy.wattmeter_log", "monitoring.influx_file",
                                                  "profile_trace"};
  // Bare words are strings (--set model_name=AE); JSON that parses is refused as in a file (1e400, a key twice).
  json value = try_parse_json_strict(text, named).value_or(json(text));
  // A path from a command-line option is a string: a file named `null`, `true` or `1` is a file name,
  // not JSON (an option may pass its path JSON-quoted, which parses as that string).
  if (!origin.empty() && kPathKeys.count(key) && !value.is_string()) value = text;
  // --set paths are relative to the working directory; an empty one stays empty (each key says
  // whether it may be: input_path may not).
  if (kPathKeys.count(key) && value.is_string() && !value.get<std::string>().empty())
    value = std::filesystem::absolute(value.get<std::string>()).lexically_normal().string();
  json* target = &j;
  std::string leaf = key, path;
  for (auto dot = leaf.find('.'); dot != std::string::npos; dot = leaf.find('.')) {
    json& section = (*target)[leaf.substr(0, dot)];
    if (section.is_null()) section = json::object();
    if (!section.is_object()) throw InputError(named + ": '" + leaf.substr(0, dot) + "' is not a section");
    target = &section;
    path += "/" + leaf.substr(0, dot);
    leaf = leaf.substr(dot + 1);
  }
  (*target)[leaf] = value;
  return path + "/" + leaf;
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& sets,
                          const std::vector<ConfigOverride>& options) {
  namespace fs = std::filesystem;
  check_input_file(path, "config file", "see experiments/ for examples");
  json j = parse_json_file_strict(path);
  JsonOrigins origins;  // the paths set on the command line, named in their errors
  if (j.is_object()) {
    for (const auto& s : sets) origins[apply_override(j, s)] = set_origin(s);
    for (const auto& o : options) origins[apply_override(j, o.assignment, o.origin)] = o.origin;
  }
  const std::string base = fs::absolute(path).parent_path().string();
  try {
    return parse_run_config(j, path, base);
  } catch (const JsonPathError& e) {
    rethrow_with_origin(e, origins);
  }
}

void check_dimensions(const RunConfig& c, const Dataset& ds) {
  const int model_dim = model_data_dimension(c.model_name);
  const int data_dim = ds.data_dimension();
  if (c.data_dimension && *c.data_dimension != data_dim)
    throw InputError(ds.source_path + ": data_dimension is " + std::to_string(*c.data_dimension) +
                         " in the config but 'data' has shape of a " + std::to_string(data_dim) + "D file",
                     "remove data_dimension: balerbench reads it from the array's shape");
  if (model_dim != data_dim)
    throw InputError(ds.source_path + ": model " + c.model_name + " is for " +
                         (model_dim == 1 ? "1D tables" : "2D frames") + " but 'data' is " +
                         (data_dim == 1 ? "a 1D table (N, C)" : "2D frames (N, H, W)"),
                     data_dim == 2 ? "use model_name CFD_dense_AE for frames" : "use model_name AE for tables");
  if (!c.type_list.empty() && data_dim == 1 && static_cast<int64_t>(c.type_list.size()) != ds.features())
    throw InputError("type_list has " + std::to_string(c.type_list.size()) + " entries but " + ds.source_path +
                         " has " + std::to_string(ds.features()) + " columns",
                     "one type per column");
}

}  // namespace balerbench
