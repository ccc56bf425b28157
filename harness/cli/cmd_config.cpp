// cmd_config.cpp: `balerbench config reference [--format markdown|json]`: the configuration reference,
// generated from the strict parsers themselves. The keys are those parse_run_config and
// parse_experiment ask for while they read a config with every section present (StrictReader's
// KeyRecording); the defaults are the parsed defaults; the words come from base/config_key_docs.cpp.
// docs/configuration.md is this command's Markdown (scripts/docs.sh config rewrites it), and
// tests/unit/cli/test_config_reference.cpp fails when a key and its documentation part.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <string>

#include "harness/base/strict_json.h"
#include "harness/cli/commands.h"
#include "harness/run/run_config.h"
#include "harness/sweep/experiment.h"

namespace balerbench::cli {
namespace {

using nlohmann::json;

// A run config with every section present (grad_scaler, energy with simulated_gpu, monitoring); the
// parser asks for every key whether it is present or not.
json maximal_run_config() {
  RunConfig c;
  c.input_path = "data.npz";
  c.model_name = "AE";
  c.compression_ratio = 1.6;
  json j = c.to_json();
  j["codecs"] = c.codecs.to_json();  // to_json leaves the default codecs section out
  return j;
}

// Experiments with every section, one per dataset generator (their keys differ).
std::vector<json> maximal_experiments() {
  const json common = {{"schema_version", kExperimentSchemaVersion},
                       {"name", "reference"},
                       {"description", ""},
                       {"model", {{"name", "AE"}, {"compression_ratio", 1.6}}},
                       {"training", json::object()},
                       {"sweep", json::object()},
                       {"target", {{"relative_error", 0.1}}},
                       {"energy", {{"thermal", json::object()}}},
                       {"cost", json::object()},
                       {"codecs", json::object()},
                       {"allow_power_limit_changes", false},
                       {"power_limit_optimizer", json::object()},
                       {"batch_size_optimizer", json::object()}};
  json cms = common, cfd = common;
  cms["dataset"] = {{"generator", {{"kind", "cms"}, {"rows", 10}}}};
  cfd["dataset"] = {{"generator", {{"kind", "cfd"}, {"frames", 2}}}};
  cfd["model"]["name"] = "CFD_dense_AE";
  return {cms, cfd};
}

std::set<std::string> run_config_paths() {
  KeyRecording recording;
  (void)parse_run_config(maximal_run_config(), "<reference run config>", "", "");
  return recording.paths();
}

// The experiment's own keys; its /training section is the run config's (documented there).
std::set<std::string> experiment_paths() {
  KeyRecording recording;
  for (const json& e : maximal_experiments()) (void)parse_experiment(e, "<reference experiment>", "");
  std::set<std::string> own;
  for (const std::string& p : recording.paths())
    if (p.rfind("/training/", 0) != 0) own.insert(p);
  return own;
}

json run_config_defaults() {
  json j = RunConfig{}.to_json();
  j["codecs"] = RunConfig{}.codecs.to_json();
  return j;
}

json experiment_defaults() {
  const json minimal = {{"schema_version", kExperimentSchemaVersion},
                        {"dataset", {{"generator", {{"kind", "cms"}, {"rows", 10}}}}},
                        {"model", {{"name", "AE"}, {"compression_ratio", 1.6}}},
                        {"sweep", json::object()}};
  const Experiment e = parse_experiment(minimal, "<defaults>", "");
  const DatasetSpec d;
  json precisions = json::array(), limits = json::array();
  for (Precision p : e.precisions) precisions.push_back(precision_name(p));
  for (const auto& w : e.power_limits_w) limits.push_back(w ? json(*w) : json(nullptr));
  return {{"description", e.description},
          {"dataset", {{"generator", {{"height", d.height}, {"width", d.width}, {"seed", d.seed}}}}},
          {"sweep",
           {{"batch_size", e.batch_sizes},
            {"precision", precisions},
            {"power_limit_w", limits},
            {"repeats", e.repeats},
            {"order", e.order},
            {"order_seed", e.order_seed},
            {"warmup_trials", e.warmup_trials}}},
          {"target", {{"stop_when_reached", e.target.stop_when_reached}}},
          {"energy", {{"cooldown_s", e.cooldown_s}, {"thermal", ThermalSettings{}.to_json()}}},
          {"cost", {{"eta", e.etas}}},
          {"allow_power_limit_changes", e.allow_power_limit_changes},
          {"power_limit_optimizer",
           {{"enabled", e.optimizer.enabled},
            {"eta", e.optimizer.eta},
            {"wait_steps", e.optimizer.wait_steps},
            {"warmup_steps", e.optimizer.warmup_steps},
            {"profile_steps", e.optimizer.profile_steps},
            {"pl_step_w", e.optimizer.pl_step_w}}},
          {"batch_size_optimizer",
           {{"enabled", e.batch_size_optimizer.enabled},
            {"eta", e.batch_size_optimizer.eta},
            {"beta", e.batch_size_optimizer.beta},
            {"seed", e.batch_size_optimizer.seed},
            {"max_attempts", e.batch_size_optimizer.max_attempts},
            {"pruning_rounds", e.batch_size_optimizer.pruning_rounds},
            {"window", e.batch_size_optimizer.window}}}};
}

// The default as the reference shows it: the entry's words, else the parsed value.
std::string default_text(const ConfigKeyDoc& doc, const json& defaults) {
  if (!doc.default_.empty()) return doc.default_;
  const json::json_pointer ptr(doc.path);
  if (!defaults.contains(ptr)) return "-";
  const json& v = defaults.at(ptr);
  if (v.is_null()) return "none";
  if (v.is_object()) return "-";
  if (v.is_string()) return v.get<std::string>().empty() ? "empty" : "`" + v.get<std::string>() + "`";
  return "`" + v.dump() + "`";
}

std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

// One heading per parent path, in the order the parents first appear, with every key under it.
void markdown_part(std::string& out, const std::vector<ConfigKeyDoc>& docs,
                   const std::vector<ConfigSectionDoc>& sections, const json& defaults) {
  std::vector<std::string> parents;
  for (const ConfigKeyDoc& doc : docs)
    if (std::find(parents.begin(), parents.end(), parent_of(doc.path)) == parents.end())
      parents.push_back(parent_of(doc.path));
  for (const std::string& parent : parents) {
    for (const ConfigSectionDoc& s : sections) {
      if (s.parent != parent) continue;
      out += "\n## " + s.title + "\n\n";
      if (!s.intro.empty()) out += s.intro + "\n\n";
    }
    out += "| key | default | meaning |\n|---|---|---|\n";
    for (const ConfigKeyDoc& doc : docs)
      if (parent_of(doc.path) == parent)
        out += "| `" + doc.path + "` | " + default_text(doc, defaults) + " | " + doc.meaning + " |\n";
  }
}

json json_part(const std::vector<ConfigKeyDoc>& docs, const json& defaults) {
  json rows = json::array();
  for (const ConfigKeyDoc& doc : docs) {
    const json::json_pointer ptr(doc.path);
    rows.push_back({{"path", doc.path},
                    {"default", doc.default_.empty() && defaults.contains(ptr) ? defaults.at(ptr) : json(doc.default_)},
                    {"meaning", doc.meaning}});
  }
  return rows;
}

std::set<std::string> documented(const std::vector<ConfigKeyDoc>& docs, bool with_outside_reader) {
  std::set<std::string> out;
  for (const ConfigKeyDoc& d : docs)
    if (with_outside_reader || !d.outside_reader) out.insert(d.path);
  return out;
}

void compare(const std::set<std::string>& read, const std::set<std::string>& described,
             const std::set<std::string>& stale_candidates, const std::string& what, ConfigKeyProblems& problems) {
  for (const std::string& p : read)
    if (!described.count(p)) problems.undocumented.push_back(what + p);
  for (const std::string& p : stale_candidates)
    if (!read.count(p)) problems.stale.push_back(what + p);
}

int run_reference(const std::string& format) {
  const std::string text = config_reference(format);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;  // a failed write to stdout is main's to report (exit code 4)
}

}  // namespace

ConfigKeyProblems check_config_key_docs(const std::vector<ConfigKeyDoc>& run_docs,
                                        const std::vector<ConfigKeyDoc>& experiment_docs) {
  ConfigKeyProblems problems;
  compare(run_config_paths(), documented(run_docs, true), documented(run_docs, false), "run config ", problems);
  std::set<std::string> described = documented(experiment_docs, true);
  for (const std::string& p : documented(run_docs, true))
    if (p.rfind("/energy/", 0) == 0 || p.rfind("/codecs/", 0) == 0)
      described.insert(p);  // an experiment's energy and codecs sections are the run config's
  compare(experiment_paths(), described, documented(experiment_docs, false), "experiment ", problems);
  return problems;
}

std::string config_reference(const std::string& format) {
  if (format == "json") {
    const json doc = {{"generated_by", "balerbench config reference --format json"},
                      {"run_config", json_part(run_config_key_docs(), run_config_defaults())},
                      {"experiment", json_part(experiment_key_docs(), experiment_defaults())}};
    return doc.dump(2) + "\n";
  }
  if (format != "markdown")
    throw InputError("--format '" + format + "': unknown format", "markdown or json");
  std::string out =
      "# Configuration reference\n\n"
      "<!-- Generated by `balerbench config reference` (scripts/docs.sh config); do not edit by hand. -->\n\n"
      "Every key that balerbench's strict parsers read, with its default and meaning. The list is made by the "
      "parsers themselves: `balerbench config reference` parses a config with every section present, records each "
      "key they ask for, and takes the defaults from the parsed result, so it cannot drift from the code "
      "(`balerbench config reference --format json` gives the same as JSON). Keys are JSON paths. An unknown key, "
      "a key given twice and a wrong type are errors that name the JSON path and say what to write "
      "(`c.json: /epohcs: unknown key (hint: did you mean 'epochs'? ...)`), exit code 2.\n";
  markdown_part(out, run_config_key_docs(), run_config_section_docs(), run_config_defaults());
  markdown_part(out, experiment_key_docs(), experiment_section_docs(), experiment_defaults());
  return out;
}

void register_config(CLI::App& app, Action& run) {
  CLI::App* cmd = app.add_subcommand("config", "About configuration files");
  cmd->require_subcommand(1);
  auto format = std::make_shared<std::string>("markdown");
  CLI::App* ref = cmd->add_subcommand(
      "reference", "Every config and experiment key the parsers read, with defaults and meanings");
  ref->add_option("--format", *format, "markdown (docs/configuration.md) or json")
      ->check(CLI::IsMember({"markdown", "json"}));
  ref->callback([&run, format] { run = [format] { return run_reference(*format); }; });
}

}  // namespace balerbench::cli
