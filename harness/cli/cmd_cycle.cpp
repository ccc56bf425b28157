// cmd_cycle.cpp: `balerbench train|compress|decompress|info --config FILE.json
// [--out DIR] [--set key=value ...]`, or `--baler-project workspaces/WS/P` instead of --config and --out.
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "harness/base/blas_kernel.h"
#include "harness/cli/baler_project_options.h"
#include "harness/cli/commands.h"
#include "harness/run/feature_quality.h"
#include "harness/cli/option_checks.h"
#include "harness/cli/output_check.h"
#include "harness/cli/json_stdout.h"
#include "harness/cli/monitoring_options.h"
#include "harness/energy/energy_session.h"
#include "harness/energy/hazards.h"
#include "harness/engine/engine_registry.h"
#include "harness/monitor/monitor.h"
#include "harness/run/cycle.h"
#include "harness/run/run_config.h"
#include "harness/report/profile_table.h"
#include "harness/report/tables.h"

#include <filesystem>

namespace balerbench::cli {
namespace {

struct Args {
  std::string config, out = "output";
  std::vector<std::string> sets;
  bool json = false;
  MonitoringArgs monitoring;
  std::string precision, engine, profile_trace;
  bool profile = false, no_profile_sync = false, no_cuda_graphs = false;
  BalerProjectArgs baler;
};

double mb(const nlohmann::json& v) { return v.is_null() ? 0.0 : v.get<double>() / 1e6; }

void print_train(const nlohmann::json& r) {
  std::printf("trained %s (%s, %lld parameters) on %s: %lld epochs%s in %.3f s (%.3f s/epoch, %.0f rows/s)\n",
              r["model"]["name"].get<std::string>().c_str(), r["model"]["dtype"].get<std::string>().c_str(),
              static_cast<long long>(r["model"]["parameters"].get<int64_t>()),
              r["device"].get<std::string>().c_str(), static_cast<long long>(r["epochs_run"].get<int64_t>()),
              r["early_stopped"].get<bool>() ? " (early stopping)" : "", r["train_s"].get<double>(),
              r["mean_epoch_duration_s"].get<double>(), r["rows_per_s"].get<double>());
  std::printf("final loss: train %.6e, validation %.6e\n", r["final_train_loss"].get<double>(),
              r["final_val_loss"].get<double>());
  // As a sweep fails such a trial (docs/sweeps.md, "Diverged training"): the model reconstructs nothing.
  if (!std::isfinite(r["final_train_loss"].get<double>()) || !std::isfinite(r["final_val_loss"].get<double>()))
    std::fprintf(stderr,
                 "balerbench: warning: training diverged: the final loss is not finite, so the model saved "
                 "reconstructs nothing (hint: lower lr, or use a precision with loss scaling)\n");
  const auto& p = r["precision"];
  std::printf("precision %s: parameters %s, data %s, compute %s%s\n", p["name"].get<std::string>().c_str(),
              p["param_dtype"].get<std::string>().c_str(), p["data_dtype"].get<std::string>().c_str(),
              p["compute_dtype"].get<std::string>().c_str(), p["autocast"].get<bool>() ? " (autocast)" : "");
  if (r.contains("engine")) {
    const auto& e = r["engine"];
    std::string line = "engine " + e["name"].get<std::string>();
    if (e.contains("workers")) line += " (" + e["workers"].dump() + " worker" + (e["workers"] == 1 ? ")" : "s)");
    if (e.contains("note")) line += "; " + e["note"].get<std::string>();
    std::printf("%s\n", line.c_str());
  }
  if (r.contains("threads") && r["threads"].is_object()) {
    const auto& t = r["threads"];
    std::string line = "threads " + t["threads"].dump() + " (" + t["source"].get<std::string>();
    if (t.contains("age_s")) line += ", " + std::to_string(static_cast<int64_t>(t["age_s"].get<double>())) + " s ago";
    if (t.contains("step_s")) {
      std::string times;
      for (auto it = t["step_s"].begin(); it != t["step_s"].end(); ++it) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s%s thread%s %.3g ms/step", times.empty() ? "" : ", ", it.key().c_str(),
                      it.key() == "1" ? "" : "s", 1e3 * it.value().get<double>());
        times += buf;
      }
      line += ": " + times;
    }
    std::printf("%s)\n", line.c_str());
  }
  if (p["grad_scaler"].is_object()) {
    const auto& g = p["grad_scaler"];
    std::printf("loss scaling: scale %g -> %g, %lld of %lld steps skipped (inf/NaN gradients), %lld growths\n",
                g["init_scale"].get<double>(), g["final_scale"].get<double>(),
                static_cast<long long>(g["skipped_steps"].get<int64_t>()),
                static_cast<long long>(g["steps"].get<int64_t>()), static_cast<long long>(g["growths"].get<int64_t>()));
  }
  if (r["cuda_graph"].value("used", false))
    std::printf("CUDA graph: %lld replays\n", static_cast<long long>(r["cuda_graph"]["replays"].get<int64_t>()));
}

std::string cell(const nlohmann::json& v, const char* format) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v.get<double>());
  return buf;
}

// Baler's figures per variable (run/feature_quality.h), a row each.
void print_feature_quality(const nlohmann::json& features, int64_t rows) {
  std::printf("per variable, over all %lld rows (residual = after - before, in the variable's unit; response = "
              "residual / before in %%, as Baler's plot_1D, where before != 0):\n",
              static_cast<long long>(rows));
  std::printf("  %-28s %-6s %11s %11s %11s %11s %10s %10s %9s %8s\n", "variable", "unit", "resid mean", "resid RMS",
              "resid min", "resid max", "resp mean%", "resp RMS%", "undefined", "PSNR dB");
  for (const auto& f : features) {
    const nlohmann::json& res = f["residual"];
    const nlohmann::json resp = f["response_pct"].is_object() ? f["response_pct"] : nlohmann::json::object();
    std::printf("  %-28s %-6s %11s %11s %11s %11s %10s %10s %9lld %8s\n",
                short_feature_name(f["name"].get<std::string>()).c_str(),
                f["unit"].is_string() ? (f["unit"].get<std::string>().empty() ? "-" : f["unit"].get<std::string>().c_str())
                                      : "?",
                cell(res["mean"], "%.4g").c_str(), cell(res["rms"], "%.4g").c_str(), cell(res["min"], "%.4g").c_str(),
                cell(res["max"], "%.4g").c_str(), cell(resp.value("mean", nlohmann::json()), "%.3g").c_str(),
                cell(resp.value("rms", nlohmann::json()), "%.3g").c_str(),
                static_cast<long long>(f["response_undefined"].get<int64_t>()), cell(f["psnr_db"], "%.1f").c_str());
  }
}

void print_info(const nlohmann::json& r) {
  std::printf("original      %10.3f MB\n", mb(r["original_bytes"]));
  std::printf("compressed    %10.3f MB  (%.2f %% of original)\n", mb(r["compressed_bytes"]),
              r["compressed_percent_of_original"].get<double>());
  if (!r["decompressed_bytes"].is_null()) std::printf("decompressed  %10.3f MB\n", mb(r["decompressed_bytes"]));
  std::printf("model         %10.3f MB\n", mb(r["model_bytes"]));
  std::printf("compression ratio         %.3f  (original / compressed.npz)\n", r["compression_ratio"].get<double>());
  std::printf("actual compression ratio  %.3f  (original / (compressed.npz + model + loss + normalization))\n",
              r["actual_compression_ratio"].get<double>());
  if (r.contains("reconstruction")) {
    const auto& e = r["reconstruction"];
    // The largest error names its feature and unit: the pooled figures mix the features' units.
    std::string max_where;
    if (e.contains("max_abs_error_feature") && e["max_abs_error_feature"].is_string()) {
      const std::string f = e["max_abs_error_feature"];
      const auto unit = feature_unit(f);
      max_where = (unit && !unit->empty() ? " " + *unit : std::string()) + " (" + short_feature_name(f) + ")";
    }
    std::printf("reconstruction: max |error| %.6g%s; normalized RMSE %.6g (each feature over its range; worst feature "
                "%s: %.6g); RMSE %.6g (every value pooled, the features' units mixed)\n",
                e["max_abs_error"].get<double>(), max_where.c_str(), e["normalized_rmse"].get<double>(),
                (e["worst_feature"].is_string() ? short_feature_name(e["worst_feature"].get<std::string>())
                                                : e["worst_feature"].dump())
                    .c_str(),
                e["worst_feature_normalized_rmse"].get<double>(),
                e["rmse"].get<double>());
    if (e.contains("per_feature")) print_feature_quality(e["per_feature"], e.value("rows", int64_t{0}));
  }
}

void print_compress(nlohmann::json& r, const CycleFiles&) {
  std::printf("compressed %s rows to latent %s (%s) in %.4f s (%.0f rows/s): %s, %.3f MB\n",
              r["dataset"]["shape"].dump().c_str(), r["latent_shape"].dump().c_str(),
              r["latent_dtype"].get<std::string>().c_str(), r["encode_duration_s"].get<double>(),
              r["rows_per_s"].get<double>(), r["output"].get<std::string>().c_str(), mb(r["output_bytes"]));
}

void print_decompress(nlohmann::json& r, const CycleFiles&) {
  std::printf("decompressed to %s (%s) in %.4f s (%.0f rows/s): %s, %.3f MB\n", r["shape"].dump().c_str(),
              r["dtype"].get<std::string>().c_str(), r["decode_duration_s"].get<double>(),
              r["rows_per_s"].get<double>(), r["output"].get<std::string>().c_str(), mb(r["output_bytes"]));
}

void print_codecs(nlohmann::json& r, const CycleFiles& files) {
  const nlohmann::json& k = r["comparison"];
  std::printf("%s", render_tables({codecs_table(k, "Baler against classical codecs at matched error: " +
                                                      r["dataset"].value("path", std::string("the data")))},
                                  "md").c_str());
  std::printf("report: %s\n", (files.training.parent_path() / "codecs" / "codecs_report.json").string().c_str());
}

void print_memory(nlohmann::json& r) {
  if (!r.contains("memory") || !r["memory"].is_object()) return;
  const nlohmann::json& m = r["memory"];
  if (!m["host_peak_rss_mib"].is_number()) return;
  std::printf("peak memory: %.1f MiB resident", m["host_peak_rss_mib"].get<double>());
  if (m["cuda_peak_reserved_mib"].is_number())
    std::printf(", CUDA %.1f MiB allocated / %.1f MiB reserved", m["cuda_peak_allocated_mib"].get<double>(),
                m["cuda_peak_reserved_mib"].get<double>());
  if (m.contains("gpu_memory_used_peak_mib") && m["gpu_memory_used_peak_mib"].is_number())
    std::printf(", GPU %.1f MiB in use (NVML, every process)", m["gpu_memory_used_peak_mib"].get<double>());
  std::printf(" (%s)\n", m["host_basis"].get<std::string>().c_str());
}

// The train command's observer: the hazards block, once the input is known to be good and just
// before the training's time starts.
class HazardsBlock final : public TrainingObserver {
 public:
  HazardsBlock(std::shared_ptr<const CpuLoadSample> load_sample, bool json)
      : load_sample_(std::move(load_sample)), json_(json) {}
  void before_training() override {
    const std::vector<Hazard> list = find_hazards(load_sample_, kTrainCpuSampleWindowS);
    if (json_)
      for (const auto& h : list) found.push_back(h.to_json());
    else
      std::fputs(format_hazard_line(list).c_str(), stderr);
  }
  nlohmann::json found = nlohmann::json::array();  // with --json: the document's "hazards"

 private:
  std::shared_ptr<const CpuLoadSample> load_sample_;
  bool json_;
};


// One subcommand of the cycle: its help, what it runs and how its report is printed. A command joins
// by one row of kCycleCommands.
struct CycleCommand {
  const char* name;
  const char* help;
  // train: samples the other processes' CPU use for the hazards block, reports the hazards before
  // training (in the JSON document with --json), and takes --profile-trace.
  bool trains;
  // false for info, which reads the outputs only: no monitoring, precision, engine or profile
  // options, no system line, and Baler's side-by-side info for a Baler project.
  bool measures;
  nlohmann::json (*run)(const RunConfig& config, const CycleFiles& files, TrainingObserver* observer);
  void (*print)(nlohmann::json& report, const CycleFiles& files);
};

const CycleCommand kCycleCommands[] = {
    {"train", "Train a Baler model on config.input_path", true, true,
     [](const RunConfig& c, const CycleFiles& f, TrainingObserver* o) { return run_train(c, f, o); },
     [](nlohmann::json& r, const CycleFiles& f) {
       print_train(r);
       std::printf("wrote %s and %s (the training's folder: %s)\n", f.model().c_str(), f.norm().c_str(),
                   f.training.string().c_str());
     }},
    {"compress", "Encode config.input_path with the trained model", false, true,
     [](const RunConfig& c, const CycleFiles& f, TrainingObserver*) { return run_compress(c, f); },
     print_compress},
    {"decompress", "Decode the compressed file back to the data space", false, true,
     [](const RunConfig& c, const CycleFiles& f, TrainingObserver*) { return run_decompress(c, f); },
     print_decompress},
    {"codecs",
     "Baler (the trained model) against ZFP, Zstandard and downcasts at matched error, "
     "with ratio, error, MB/s and energy per MB (after train)",
     false, true, [](const RunConfig& c, const CycleFiles& f, TrainingObserver*) { return run_codecs(c, f); },
     print_codecs},
    {"info", "Sizes, compression ratios and reconstruction error", false, false,
     [](const RunConfig& c, const CycleFiles& f, TrainingObserver*) { return run_info(c, f); },
     [](nlohmann::json& r, const CycleFiles&) { print_info(r); }},
};

// The command-line flags that are config keys, as overrides naming the flag.
std::vector<ConfigOverride> flag_overrides(const Args& a) {
  std::vector<ConfigOverride> options = monitoring_overrides(a.monitoring);
  if (!a.precision.empty()) options.push_back({"precision=" + a.precision, "--precision"});
  if (!a.engine.empty()) options.push_back({"engine=" + a.engine, "--engine"});
  if (a.profile || !a.profile_trace.empty()) options.push_back({"profile=true", "--profile"});
  if (!a.profile_trace.empty()) options.push_back({"profile_trace=" + a.profile_trace, "--profile-trace"});
  if (a.no_profile_sync) options.push_back({"profile_sync=false", "--no-profile-sync"});
  if (a.no_cuda_graphs) options.push_back({"cuda_graphs=false", "--no-cuda-graphs"});
  return options;
}

// What every command prints after its own lines.
void print_run_footer(const CycleCommand& cmd, nlohmann::json& r) {
  print_memory(r);
  if (r.contains("system") && cmd.measures)
    std::printf("system %s: %s\n", r["system"]["fingerprint"].get<std::string>().c_str(),
                r["system"]["label"].get<std::string>().c_str());
  if (const std::string blas = blas_choice_line(); !blas.empty()) std::printf("%s\n", blas.c_str());
  if (r.contains("profile")) std::printf("\n%s\n", format_profile_table(r).c_str());
  if (r.contains("energy")) print_energy_summary(r["energy"], stdout);
  if (r.contains("monitoring")) print_monitoring_summary(r["monitoring"], stdout);
}

// No output of `cmd` written over one of its inputs (the config file, its data, its wattmeter log):
// compress's compressed.npz over the data it encodes, --profile-trace or --influx-file over the config.
void check_outputs_apart(const CycleCommand& cmd, const std::string& config, const RunConfig& c, const CycleFiles& f) {
  if (!cmd.measures) return;
  const std::string layout_hint = "give another --out folder, or keep the input elsewhere";
  std::vector<std::pair<std::string, std::string>> outputs = {{c.profile_trace, "--profile-trace"},
                                                              {c.monitoring.influx_file, "--influx-file"}};
  const std::string name = cmd.name;
  if (name == "train")
    for (const std::string& p : {f.model(), f.norm(), f.loss()}) outputs.push_back({p, "the output"});
  if (name == "compress") outputs.push_back({f.compressed_npz(), "the output"});
  if (name == "decompress") outputs.push_back({f.decompressed_npz(), "the output"});
  const std::pair<std::string, const char*> inputs[] = {{config, "the config file"},
                                                        {c.input_path, "the data file (input_path)"},
                                                        {c.energy.wattmeter_log, "the wattmeter log"}};
  for (const auto& [out, option] : outputs) {
    if (option != "the output") check_not_over_a_database(out, option);  // a trace or an export, never a database
    for (const auto& [in, what] : inputs)
      check_output_is_not_input(out, option, in, what, option == "the output" ? layout_hint : "");
  }
}

int run_command(const CycleCommand& cmd, const Args& a) {
  // train's hazard block samples the other processes' CPU use (kTrainCpuSampleWindowS): begun here,
  // so that the window overlaps reading the config and the data, and the block waits only for what
  // is left.
  std::shared_ptr<const CpuLoadSample> load_sample;
  if (cmd.trains) load_sample = std::make_shared<CpuLoadSample>();
  const std::vector<ConfigOverride> options = flag_overrides(a);
  JsonStdout json_out(a.json);  // progress and epoch lines go to stderr; stdout gets the one document
  const std::unique_ptr<BalerProjectRun> baler =
      open_baler_project_run(a.config, a.baler, a.sets, options, cmd.name);
  RunConfig c = baler ? baler->config() : load_run_config(a.config, a.sets, options);
  const CycleFiles files = baler ? baler->files() : out_dir_files(a.out);
  check_outputs_apart(cmd, a.config, c, files);
  if (baler && !cmd.measures) return print_baler_info(*baler, a.baler, a.json, json_out);
  if (baler) baler->begin();  // what of P_config.py is not read, and Baler's files kept before replacing them
  if (c.monitoring.experiment.empty()) c.monitoring.experiment = std::filesystem::path(a.config).stem().string();
  // The hazards line on stderr once the input is known to be good, before training; with --json,
  // the list goes into the document instead.
  HazardsBlock hazards(load_sample, a.json);
  nlohmann::json r = cmd.run(c, files, &hazards);
  if (baler) baler->finish(r);
  if (a.json) {
    if (cmd.trains) r["hazards"] = hazards.found;
    json_out.print(r);
    return 0;
  }
  cmd.print(r, files);
  print_run_footer(cmd, r);
  return 0;
}

}  // namespace

void register_cycle(CLI::App& app, Action& run) {
  for (const CycleCommand& c : kCycleCommands) {
    auto a = std::make_shared<Args>();
    const CycleCommand* command = &c;
    CLI::App* cmd = app.add_subcommand(c.name, c.help);
    CLI::Option* config = cmd->add_option("--config", a->config, "config FILE.json (strict JSON, Baler's key names)");
    CLI::Option* out = cmd->add_option("--out", a->out, "output folder (default ./output)")->check(non_empty_path());
    add_baler_project_options(cmd, a->baler, !c.measures, config, out);
    cmd->add_option("--set", a->sets, "override a config key: key=value (repeatable)")->allow_extra_args(false);
    cmd->add_flag("--json", a->json, "print the report as JSON");
    if (c.measures) {
      add_monitoring_options(cmd, a->monitoring, true);
      cmd->add_option("--precision", a->precision,
                      "fp64 | fp32 | tf32 | amp_fp16 | amp_fp16_noscale | amp_bf16 | auto (= --set precision=...)");
      cmd->add_option("--engine", a->engine,
                      engine_choices_help() +
                          " | auto (the first of these that can run the model, precision and device and that auto may "
                          "pick; the run says which and why; = --set engine=...)");
      cmd->add_flag("--profile", a->profile, "time each phase and print the breakdown (T5's shape)");
      cmd->add_flag("--no-profile-sync", a->no_profile_sync,
                    "profile without synchronising the device at each phase edge (CUDA events)");
      cmd->add_flag("--no-cuda-graphs", a->no_cuda_graphs, "CUDA: run every step eagerly");
      if (c.trains)
        cmd->add_option("--profile-trace", a->profile_trace,
                        "with --profile: write LibTorch's profiler trace (Chrome trace JSON, for Perfetto) to FILE")->check(non_empty_path());
    }
    cmd->callback([a, command, &run] { run = [a, command] { return run_command(*command, *a); }; });
  }
}

}  // namespace balerbench::cli
