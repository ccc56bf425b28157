// baler_config.cpp: see baler_config.h.
#include "harness/baler/baler_config.h"

#include <map>
#include <set>

#include "common/error.h"
#include "harness/base/strict_json.h"
#include "harness/baler/python_process.h"
#include "models/architecture.h"

namespace balerbench {
namespace {

using nlohmann::json;

// Runs the config's set_config on a stand-in for Baler's Config class (Baler passes the class
// itself, not an instance) and prints what it set as JSON on the real stdout. argv: CONFIG ROOT.
// Exit 3: the module raised (last stderr line "balerbench-config-error: ..."); 4: no set_config.
const char* kReaderScript = R"PY(
import importlib.util, json, math, os, sys, traceback
config_path, root = sys.argv[1], sys.argv[2]
sys.dont_write_bytecode = True   # no __pycache__ in the user's config folder
sys.path.append(root)            # as Baler: run from ROOT, sys.path.append(os.getcwd())
out, sys.stdout = sys.stdout, sys.stderr   # what the config prints goes to stderr
order = []
class _Recorder(type):
    def __setattr__(cls, key, value):
        if key not in order:
            order.append(key)
        type.__setattr__(cls, key, value)
class Config(metaclass=_Recorder):
    model_type = str             # Baler's Config declares `model_type = str`
def plain(v):
    if v is None or isinstance(v, (bool, str, int)):
        return v
    if isinstance(v, float) and math.isfinite(v):
        return v
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {k: plain(x) for k, x in v.items()}
    if type(v).__module__ == "numpy" and hasattr(v, "tolist"):
        return plain(v.tolist())
    raise ValueError(repr(v))
try:
    spec = importlib.util.spec_from_file_location("baler_project_config", config_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not callable(getattr(module, "set_config", None)):
        print("balerbench-config-error: defines no set_config(c)", file=sys.stderr)
        sys.exit(4)
    module.set_config(Config)
except Exception as e:
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(config_path)]
    where = f"line {frames[-1].lineno}: " if frames else ""
    print(f"balerbench-config-error: {where}{type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(3)
values, unsupported = {}, {}
for key in order:
    try:
        values[key] = plain(getattr(Config, key))
    except ValueError as e:
        unsupported[key] = str(e)
json.dump({"order": order, "values": values, "unsupported": unsupported}, out)
)PY";

const std::set<std::string> kSameKeys = {
    "input_path", "model_name", "compression_ratio", "data_dimension", "model_type", "epochs", "batch_size", "lr",
    "test_size", "apply_normalization", "custom_norm", "early_stopping", "early_stopping_patience", "min_delta",
    "lr_scheduler", "lr_scheduler_patience", "deterministic_algorithm", "extra_compression",
    "intermittent_model_saving", "intermittent_saving_patience", "type_list"};

// Keys Baler sets or declares but never applies to a dense model's cycle, and why.
const std::map<std::string, std::string>& ignored_keys() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> k;
    for (const char* key : {"l1", "reg_param", "RHO"})
      k[key] = "Baler never applies it: its fit calls the loss with validate=True, which leaves out the L1 term";
    for (const char* key : {"mse_avg", "mse_sum", "emd"}) k[key] = "Baler never reads it";
    k["early_stoppin_patience"] = "Baler's Config declares this spelling but never reads it";
    for (const char* key : {"number_of_columns", "latent_space_size"})
      k[key] = "Baler recomputes it from compression_ratio and the data";
    k["error_bounded_requirement"] = "Baler reads it only with save_error_bounded_deltas = True";
    k["compress_to_latent_space"] = "Baler reads it only for Conv_AE_3D";
    for (const char* key : {"default_reuse_factor", "default_precision", "Strategy", "Part", "ClockPeriod", "IOType",
                            "InputShape", "ProjectName", "OutputDir", "InputData", "OutputPredictions", "csim", "synth",
                            "cosim", "export"})
      k[key] = "Baler reads it only in --mode convert_with_hls4ml";
    return k;
  }();
  return m;
}

// Baler features that would make Baler's files other than balerbench writes: refused when on.
const std::map<std::string, std::string>& refused_when_on() {
  static const std::map<std::string, std::string> m = {
      {"separate_model_saving", "Baler would then look for encoder.pt and decoder.pt, which balerbench does not write"},
      {"save_error_bounded_deltas", "balerbench writes no error-bounded deltas (compressed_deltas.npz.gz)"},
      {"convert_to_blocks", "balerbench does not reshape the data into blocks"}};
  return m;
}

bool truthy(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string() || v.is_array() || v.is_object()) return !v.empty();
  return true;
}

// Keys whose value balerbench must read but Python gave as something else (a function, a class).
void check_supported_value(const json& attributes, const std::string& key, const std::string& source) {
  const json& unsupported = attributes.at("unsupported");
  if (unsupported.contains(key))
    throw InputError(source + ": c." + key + " = " + unsupported.at(key).get<std::string>() +
                         ": not a value balerbench reads",
                     "use a number, string, boolean, list or dict");
}

// One attribute's fate: into `out.config`, a note, or an InputError.
void translate_key(const json& attributes, const std::string& key, const std::string& source, BalerTranslation& out) {
  const json& values = attributes.at("values");
  const bool has_value = values.contains(key);
  const json value = has_value ? values.at(key) : json(nullptr);
  if (auto ig = ignored_keys().find(key); ig != ignored_keys().end()) {
    out.notes.push_back({key, "ignored", ig->second});
    return;
  }
  check_supported_value(attributes, key, source);
  if (auto r = refused_when_on().find(key); r != refused_when_on().end()) {
    if (truthy(value))
      throw InputError(source + ": c." + key + " = " + value.dump() + ": not supported by balerbench: " + r->second,
                       "set it to False, or run this project with Baler");
    return;  // off: what balerbench does anyway
  }
  if (key == "custom_loss_function") {
    if (value == "loss_function_swae")
      throw InputError(source + ": c.custom_loss_function = \"loss_function_swae\": balerbench has no SWAE loss",
                       "remove it to train with Baler's default loss");
    out.notes.push_back({key, "ignored", "Baler applies only \"loss_function_swae\""});
    return;
  }
  if (key == "activation_extraction") {
    if (truthy(value))
      out.notes.push_back({key, "not done",
                           "balerbench does not record activations: no training/activations.npy for Baler's "
                           "diagnose mode"});
    return;
  }
  if (!kSameKeys.count(key))
    out.notes.push_back({key, "balerbench", "balerbench's own key (Baler ignores it)"});
  out.config[key] = value;
}

// Python's message from the reader's stderr, or its last line.
std::string python_error(const std::string& err) {
  const std::string marker = "balerbench-config-error: ";
  const auto at = err.rfind(marker);
  if (at != std::string::npos) {
    std::string msg = err.substr(at + marker.size());
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r')) msg.pop_back();
    return msg;
  }
  std::string tail = err.substr(err.size() > 400 ? err.size() - 400 : 0);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  return tail.empty() ? "no message" : tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
}

}  // namespace

json read_baler_attributes(const BalerProject& p, double timeout_s) {
  const ProcessResult r = run_python(kReaderScript, {p.config.string(), p.root.string()}, p.root.string(), timeout_s);
  if (r.timed_out)
    throw InputError(p.config.string() + ": reading it took longer than " + json(timeout_s).dump() +
                         " s, and " + baler_python() + " was stopped",
                     "a Baler config only sets attributes on c; check it for a loop or a wait, or allow longer with "
                     "--baler-config-timeout S");
  if (r.exit_code != 0)
    throw InputError(p.config.string() + ": " +
                         (r.err.find_first_not_of(" \n\r\t") == std::string::npos
                              ? "running it ended with exit code " + std::to_string(r.exit_code) +
                                    " and no message (does it call sys.exit?)"
                              : python_error(r.err)),
                     r.exit_code == 4 ? "a Baler config defines set_config(c), as Baler's newProject writes it"
                                      : "the config must run under " + baler_python() + " as Baler would run it");
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("order") || !j.contains("values"))
    throw InputError(p.config.string() + ": reading the config gave no result: it ended the process before "
                                         "set_config(c) returned (sys.exit, os._exit?)",
                     "a Baler config only sets attributes on c; run it with " + baler_python() + " to see what it does");
  return j;
}

BalerTranslation translate_baler_attributes(const json& attributes, const std::string& source) {
  BalerTranslation out;
  out.config = json::object();
  for (const json& k : attributes.at("order")) translate_key(attributes, k.get<std::string>(), source, out);
  const json& c = out.config;
  if (!c.contains("compression_ratio") && attributes.at("values").contains("latent_space_size"))
    throw InputError(source + ": no c.compression_ratio (Baler's older configs set latent_space_size instead)",
                     "set c.compression_ratio = number_of_columns / latent_space_size; balerbench sizes the "
                     "latent space from it, as Baler's HEAD does");
  // Baler's decompress casts integer columns with astype, which truncates toward zero; balerbench
  // rounds them elsewhere (departure 3). In a Baler project it does as Baler, unless told otherwise.
  if (c.contains("type_list") && !c["type_list"].is_null() && !c.contains("truncate")) {
    out.config["truncate"] = true;
    out.notes.push_back({"type_list", "as Baler",
                         "integer columns are truncated toward zero, as Baler's astype does (set c.truncate = False "
                         "to round them to nearest, balerbench's default outside a Baler project)"});
  }
  if (c.value("apply_normalization", true) == true && c.value("custom_norm", false) == true)
    throw InputError(source + ": c.apply_normalization = True with c.custom_norm = True: Baler then trains on "
                              "unscaled data but min-max de-normalizes what it decompresses",
                     "set c.apply_normalization = False (the same training, and Baler's decompress then agrees)");
  return out;
}

BalerProjectConfig load_baler_project_config(const BalerProject& p, const std::vector<std::string>& sets,
                                             const std::vector<ConfigOverride>& options, double timeout_s) {
  BalerProjectConfig out;
  const std::string source = p.config.string();
  out.attributes = read_baler_attributes(p, timeout_s);
  BalerTranslation t = translate_baler_attributes(out.attributes, source);
  JsonOrigins origins;  // as load_run_config: an error in a command-line value names it
  for (const auto& s : sets) origins[apply_override(t.config, s)] = set_origin(s);
  for (const auto& o : options) origins[apply_override(t.config, o.assignment, o.origin)] = o.origin;
  try {
    out.run = parse_run_config(t.config, source, p.root.string());
  } catch (const JsonPathError& e) {
    rethrow_with_origin(e, origins);
  }
  out.notes = std::move(t.notes);
  RunConfig& c = out.run;
  check_model_name(c.model_name);
  const std::string baler_dtype = model_dtype_name(c.model_name);
  if (c.latent_dtype.empty()) c.latent_dtype = baler_dtype;
  if (c.latent_dtype != baler_dtype)
    throw InputError(source + ": latent_dtype " + c.latent_dtype + ": Baler's decompress feeds the latent code to " +
                         c.model_name + " as stored, which needs " + baler_dtype,
                     "leave latent_dtype unset in a Baler project");
  if (c.monitoring.experiment.empty()) c.monitoring.experiment = p.name;
  return out;
}

std::string format_config_notes(const BalerProject& p, const std::vector<ConfigNote>& notes) {
  // Keys with the same fate and reason share a line, in the config's order.
  std::vector<std::pair<std::string, std::string>> lines;  // (keys, "fate (why)")
  for (const ConfigNote& n : notes) {
    const std::string tail = n.fate + " (" + n.why + ")";
    auto it = std::find_if(lines.begin(), lines.end(), [&](const auto& l) { return l.second == tail; });
    if (it == lines.end()) lines.emplace_back(n.key, tail);
    else it->first += ", " + n.key;
  }
  std::string text;
  for (const auto& [keys, tail] : lines)
    text += "balerbench: " + p.config.filename().string() + ": " + keys + ": " + tail + "\n";
  return text;
}

}  // namespace balerbench
