// cmd_replay.cpp: `balerbench replay`: one recurring job replayed from Zeus's published GPU traces
// through balerbench's batch-size and power-limit optimisers (tuning/replay.h), or with --reproduce
// every workload on every GPU of the traces, Zeus's headline result beside the paper's range. The
// tables come out in the report's formats (Markdown, CSV, LaTeX, JSON).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/paths.h"
#include "common/text.h"
#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "harness/cli/output_check.h"
#include "harness/report/table_renderer.h"
#include "harness/report/tables.h"
#include "harness/tuning/replay.h"

namespace balerbench::cli {
namespace {

namespace fs = std::filesystem;

struct ReplayArgs {
  std::string traces, train, power, gpu;
  std::vector<std::string> gpus;
  std::string workload, network, optimizer;
  double target = NAN;
  int64_t max_epochs = 0, default_batch_size = 0;
  std::vector<int64_t> batch_sizes;
  std::vector<double> power_limits;
  bool interpolate = false, reproduce = false;
  double eta = 0.5;
  std::string beta = "2";
  int64_t recurrences = 0, seed = 1, seeds = 1, max_attempts = 20;
  std::string format = "md", table = "summary", out;
  std::vector<std::string> argv;  // the command line, for the reproduction's notes
};

double parse_beta(const std::string& text) {
  if (text == "inf" || text == "infinity") return INFINITY;
  try {
    std::size_t used = 0;
    const double b = std::stod(text, &used);
    if (used == text.size() && std::isfinite(b) && b > 1) return b;
  } catch (const std::exception&) {
  }
  throw InputError("--beta " + text + ": expected a number above 1, or inf",
                   "Zeus's default is 2; inf never stops early");
}

// A GPU's name is part of a file name in --traces: one that leaves the folder ("x/../../secret"), or
// hides what it is (a control or bidirectional character), is refused.
void check_gpu_name(const std::string& gpu, const char* option) {
  const bool leaves = gpu.find('/') != std::string::npos || gpu.find('\\') != std::string::npos ||
                      gpu.find("..") != std::string::npos;
  const std::string problem = leaves ? "holds '/', '\\' or '..'" : hidden_character_problem(gpu);
  if (!problem.empty())
    throw InputError(std::string(option) + " '" + message_text(gpu, 60) + "': the name " + problem +
                         ": it names TRACES/summary_power_NAME.csv, a file in the traces' folder",
                     "a GPU name such as v100, a40, rtx6000 or p100; a trace elsewhere: --power FILE");
}

std::vector<std::string> gpus_in(const std::string& dir);

std::string power_file_of(const ReplayArgs& a, const std::string& gpu) {
  if (!a.power.empty()) return a.power;
  if (a.traces.empty() || gpu.empty())
    throw InputError("no power trace",
                     "give --power FILE, or --traces DIR with --gpu NAME (DIR/summary_power_NAME.csv)");
  check_gpu_name(gpu, a.gpu.empty() ? "--gpus" : "--gpu");
  const std::string file = (fs::path(a.traces) / ("summary_power_" + gpu + ".csv")).string();
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    const std::vector<std::string> held = gpus_in(a.traces);
    throw InputError(std::string(a.gpu.empty() ? "--gpus" : "--gpu") + " " + message_text(gpu, 60) + ": no " + file,
                     held.empty() ? "the folder holds no summary_power_*.csv: is it Zeus's traces?"
                                  : "the traces hold: " + joined(held, ", "));
  }
  return file;
}

std::string train_file_of(const ReplayArgs& a) {
  if (!a.train.empty()) return a.train;
  if (a.traces.empty())
    throw InputError("no train trace", "give --train FILE, or --traces DIR (DIR/summary_train.csv)");
  return (fs::path(a.traces) / "summary_train.csv").string();
}

ReplayJob job_of(const ReplayArgs& a, const std::string& dataset) {
  ReplayJob j;
  j.dataset = dataset;
  j.network = a.network;
  j.optimizer = a.optimizer;
  if (std::isfinite(a.target)) j.target_metric = a.target;
  if (a.max_epochs > 0) j.max_epochs = a.max_epochs;
  if (a.default_batch_size > 0) j.default_batch_size = a.default_batch_size;
  j.batch_sizes = a.batch_sizes;
  j.power_limits_w = a.power_limits;
  j.interpolate = a.interpolate;
  return j;
}

ReplayOptions options_of(const ReplayArgs& a, int64_t seed) {
  ReplayOptions o;
  o.eta = a.eta;
  o.beta = parse_beta(a.beta);
  if (a.recurrences > 0) o.recurrences = a.recurrences;
  o.seed = static_cast<uint64_t>(seed);
  o.max_attempts = a.max_attempts;
  return o;
}

// replay_job, its TuningError (the recurrences cannot go on) an InputError: it follows from the job given.
ReplayResult run_one(const TrainTrace& train, const PowerTrace& power, const ReplayJob& job, const ReplayOptions& o) {
  try {
    return replay_job(train, power, job, o);
  } catch (const TuningError& e) {
    throw InputError("replay of " + job.dataset + " on " + power.file + " (seed " + std::to_string(o.seed) +
                         ") stopped: " + e.what(),
                     "choose a target the default batch size reaches (--target), another --default-batch-size, or "
                     "more --max-epochs");
  }
}

// --table: one table by name; "all"; or "summary" (the default): all but the attempts, one row per
// training run (a replay of Zeus's traces has hundreds), which a note on the first table points to.
std::vector<Table> select(std::vector<Table> tables, const std::string& table) {
  if (table == "all") return tables;
  if (table == "summary") {
    std::vector<Table> out;
    std::size_t attempts = 0;
    for (Table& t : tables)
      if (t.name == "replay_attempts")
        attempts = t.rows.size();
      else
        out.push_back(std::move(t));
    if (attempts > 0 && !out.empty())
      out.front().notes.push_back("every attempt (" + std::to_string(attempts) +
                                  " rows): --table replay_attempts, or --table all");
    return out;
  }
  std::vector<Table> out;
  std::string names;
  for (Table& t : tables) {
    names += (names.empty() ? "" : ", ") + t.name;
    if (t.name == table) out.push_back(std::move(t));
  }
  if (out.empty()) throw InputError("--table " + table + ": no such table here", "one of: " + names + ", all");
  return out;
}

std::vector<std::string> gpus_in(const std::string& dir) {
  std::set<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string prefix = "summary_power_", suffix = ".csv";
    if (name.size() > prefix.size() + suffix.size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      found.insert(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
  }
  if (ec) throw InputError("--traces " + dir + ": cannot list the folder: " + ec.message(), "check the path");
  return {found.begin(), found.end()};
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string s = "balerbench replay";
  for (const std::string& a : argv) s += " " + a;
  return s;
}

// --reproduce: every workload of Zeus's defaults that a GPU's power trace holds, on every GPU, each
// replayed with seeds SEED, SEED+1, ...
std::vector<Table> reproduce(const ReplayArgs& a) {
  if (a.traces.empty())
    throw InputError("--reproduce needs --traces DIR", "the folder with summary_train.csv and summary_power_*.csv");
  if (!a.workload.empty() || !a.batch_sizes.empty() || !a.power_limits.empty() || std::isfinite(a.target) ||
      a.default_batch_size > 0 || a.max_epochs > 0 || a.recurrences > 0 || !a.power.empty() || !a.gpu.empty())
    throw InputError("--reproduce uses the paper's defaults for every workload",
                     "leave out --workload, --target, --batch-sizes, --power-limits, --default-batch-size, "
                     "--max-epochs, --recurrences, --power and --gpu (choose GPUs with --gpus)");
  const std::vector<std::string> gpus = a.gpus.empty() ? gpus_in(a.traces) : a.gpus;
  if (gpus.empty()) throw InputError(a.traces + ": no summary_power_*.csv", "the folder of Zeus's traces");
  for (const std::string& gpu : gpus) check_gpu_name(gpu, "--gpus");  // every name checked before any file is read
  for (const std::string& gpu : gpus) (void)power_file_of(a, gpu);     // then that each trace is there
  const TrainTrace train = read_train_trace(train_file_of(a));
  Reproduction rep;
  rep.command = command_text(a.argv);
  for (const std::string& gpu : gpus) {
    const PowerTrace power = read_power_trace(power_file_of(a, gpu));
    for (const ZeusJobDefaults& d : zeus_job_defaults()) {
      bool present = false;
      for (const PowerRow& p : power.rows) present = present || (p.dataset == d.dataset && p.network == d.network);
      if (!present) continue;
      Reproduction::Row row;
      row.gpu = gpu;
      for (int64_t s = 0; s < a.seeds; ++s)
        row.runs.push_back(run_one(train, power, job_of(a, d.dataset), options_of(a, a.seed + s)));
      rep.rows.push_back(std::move(row));
    }
  }
  return reproduction_tables(rep);
}

// One job replayed with one seed.
std::vector<Table> replay_workload(const ReplayArgs& a) {
  if (a.workload.empty())
    throw InputError("--workload is required", "a dataset of the traces, e.g. --workload cifar100 (or --reproduce)");
  if (a.seeds != 1) throw InputError("--seeds applies to --reproduce", "replay one seed with --seed");
  const std::string power_file = power_file_of(a, a.gpu);  // its GPU's name checked before any file is read
  const TrainTrace train = read_train_trace(train_file_of(a));
  const PowerTrace power = read_power_trace(power_file);
  return replay_tables(run_one(train, power, job_of(a, a.workload), options_of(a, a.seed)));
}

std::string tables_text(const std::vector<Table>& tables, const std::string& format) {
  if (format != "csv" || tables.size() <= 1) return render_tables(tables, format);
  // Several tables: one CSV block each, after a '#' line naming it (as report does; pandas:
  // read_csv(comment='#') per block); --table NAME gives one plain CSV.
  std::string text;
  for (const Table& t : tables)
    text += (text.empty() ? "" : "\n") + report::one_line(std::string("# table ") + t.name + ": " + t.title) + "\n" +
            render_tables({t}, "csv");
  return text;
}

// --out is none of the traces the replay reads: the train trace, the power trace, and with --traces
// every power trace in it (a later --reproduce reads them all).
void check_out_is_no_trace(const ReplayArgs& a) {
  if (a.out.empty()) return;
  std::vector<std::string> traces;
  if (!a.train.empty() || !a.traces.empty()) traces.push_back(train_file_of(a));
  if (!a.power.empty()) traces.push_back(a.power);
  if (!a.traces.empty())
    for (const std::string& gpu : gpus_in(a.traces)) traces.push_back(power_file_of(a, gpu));
  if (!a.traces.empty() && !a.gpu.empty()) traces.push_back(power_file_of(a, a.gpu));
  for (const std::string& trace : traces) check_output_is_not_input(a.out, "--out", trace, "a trace");
}

int replay(const ReplayArgs& a) {
  if (!(a.eta >= 0 && a.eta <= 1)) throw InputError("--eta must be in [0, 1]", "0 weighs only time, 1 only energy");
  (void)parse_beta(a.beta);
  if (!a.out.empty()) check_output_file(a.out, "choose a file to write the tables to");
  check_not_over_a_database(a.out, "--out");
  check_out_is_no_trace(a);
  const std::string text = tables_text(select(a.reproduce ? reproduce(a) : replay_workload(a), a.table), a.format);
  if (a.out.empty()) {
    write_stdout(text);
  } else {
    write_file_atomic(a.out, std::vector<uint8_t>(text.begin(), text.end()));
    std::printf("wrote %s\n", a.out.c_str());
  }
  return 0;
}

void add_trace_options(CLI::App* cmd, ReplayArgs& a) {
  cmd->add_option("--traces", a.traces, "folder of Zeus's traces (summary_train.csv, summary_power_<gpu>.csv)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--train", a.train, "the train trace (default: TRACES/summary_train.csv)")->check(non_empty_path());
  cmd->add_option("--power", a.power, "the power trace (default: TRACES/summary_power_<gpu>.csv)")
      ->check(non_empty_path());
  cmd->add_option("--gpu", a.gpu, "the GPU of TRACES/summary_power_<gpu>.csv: v100, a40, rtx6000, p100");
  cmd->add_option("--gpus", a.gpus, "--reproduce: these GPUs (default: every summary_power_*.csv in TRACES)")
      ->delimiter(',');
}

void add_job_options(CLI::App* cmd, ReplayArgs& a) {
  cmd->add_option("--workload", a.workload,
                  "the job's dataset: cifar100, imagenet, squad, librispeech, movielens-1m, sentiment140 (Zeus's "
                  "defaults for each), or any dataset of the traces");
  cmd->add_option("--network", a.network, "the job's network (default: Zeus's, or the trace's only one)");
  cmd->add_option("--optimizer", a.optimizer, "the job's optimizer (default: Zeus's, or the trace's only one)");
  cmd->add_option("--target", a.target, "the target metric (default: Zeus's for the workload)")
      ->check(finite_number());  // NaN would read as "not given": the default target, silently
  cmd->add_option("--max-epochs", a.max_epochs,
                  "epochs before a recurrence's attempt stops unreached (default: Zeus's)")
      ->check(positive_count());
  cmd->add_option("--default-batch-size", a.default_batch_size,
                  "the job's default batch size (default: Zeus's, capped at the largest the GPU measured)")
      ->check(positive_count());
  cmd->add_option("--batch-sizes", a.batch_sizes,
                  "only these batch sizes, e.g. 32,64,128 (default: all both traces hold)")
      ->delimiter(',')
      ->check(positive_count());
  cmd->add_option("--power-limits", a.power_limits,
                  "only these power limits in W, e.g. 250,200,150 (default: each batch size's measured limits)")
      ->delimiter(',')
      ->check(in_range(1e-3, kMaxTraceWatts, "WATTS"));
  cmd->add_flag("--interpolate", a.interpolate,
                "interpolate a listed limit that a batch size was not measured at, linearly between the measured "
                "limits around it (labelled interpolated; never beyond them)");
}

void add_tuning_options(CLI::App* cmd, ReplayArgs& a) {
  cmd->add_option("--eta", a.eta, "the cost's weight of energy, in [0, 1] (default 0.5)")->check(in_range(0, 1, "ETA"));
  cmd->add_option("--beta", a.beta,
                  "stop an attempt once its cost passes beta x the cheapest recurrence (default 2; inf: never)");
  cmd->add_option("--recurrences", a.recurrences,
                  "recurrences of the job (default: 2 x |batch sizes| x |power limits|)")
      ->check(positive_count());
  cmd->add_option("--seed", a.seed, "seed of the batch-size optimiser and the sampled runs (default 1)")
      ->check(non_negative());
  cmd->add_option("--seeds", a.seeds, "--reproduce: replay each job with seeds SEED, SEED+1, ... (default 1)")
      ->check(positive_count());
  cmd->add_option("--max-attempts", a.max_attempts, "attempts per recurrence before the job is given up (default 20)")
      ->check(positive_count());
  cmd->add_flag("--reproduce", a.reproduce,
                "every workload on every GPU with the paper's defaults, beside the paper's range");
}

void add_output_options(CLI::App* cmd, ReplayArgs& a) {
  // The text formats: a page of replay tables alone would have none of the page's figures.
  static const std::vector<std::string> kFormats = {"md", "csv", "latex", "json"};
  cmd->add_option("--format", a.format, joined(kFormats, " | "))->check(CLI::IsMember(kFormats));
  cmd->add_option("--table", a.table,
                  "replay | replay_attempts | replay_power_limits (--reproduce: reproduction | reproduction_ranges) | "
                  "all | summary (default: all but replay_attempts)");
  cmd->add_option("--out", a.out, "write to FILE instead of stdout")->check(non_empty_path());
}

// The options given, as typed ("--gpus v100,a40"), for the reproduction's notes.
std::vector<std::string> options_given(const CLI::App& cmd) {
  std::vector<std::string> argv;
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0 || o->get_name() == "--help") continue;
    std::string arg = o->get_name();
    if (o->get_expected_max() != 0) {
      std::string joined;
      for (const std::string& r : o->results()) joined += (joined.empty() ? "" : ",") + r;
      arg += " " + joined;
    }
    argv.push_back(arg);
  }
  return argv;
}

}  // namespace

void register_replay(CLI::App& app, Action& action) {
  auto a = std::make_shared<ReplayArgs>();
  CLI::App* cmd = app.add_subcommand(
      "replay",
      "Replay a recurring training job from Zeus's published GPU traces (NSDI'23) through balerbench's batch-size "
      "and power-limit optimisers: what they chose, what it cost, the default's and the best choice's cost in "
      "hindsight; --reproduce: Zeus's headline result for every workload and GPU");
  add_trace_options(cmd, *a);
  add_job_options(cmd, *a);
  add_tuning_options(cmd, *a);
  add_output_options(cmd, *a);
  cmd->callback([a, cmd, &action] {
    a->argv = options_given(*cmd);
    action = [a] { return replay(*a); };
  });
}

}  // namespace balerbench::cli
