// cmd_run.cpp: `balerbench run EXPERIMENT.json [--db FILE] [--shard i/N] ...`:
// the sweep, then the experiment's tables from the database (and, with --html, its HTML page).
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "common/text.h"
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/paths.h"
#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "harness/cli/output_check.h"
#include "harness/cli/monitoring_options.h"
#include "harness/monitor/monitor.h"
#include "harness/report/plot_library.h"
#include "harness/report/report_page.h"
#include "harness/report/table_cells.h"
#include "harness/report/tables.h"
#include "harness/store/database_files.h"
#include "harness/report/trial_identity.h"
#include "harness/store/store.h"
#include "harness/sweep/experiment.h"
#include "harness/sweep/sweep.h"

namespace balerbench::cli {
namespace {

struct Args {
  std::string experiment, db = "results/balerbench.sqlite", shard, progress = "auto", tables = "precision,cost";
  std::string html;  // the experiment's HTML page, written after the sweep
  std::vector<std::string> sets;
  bool retry_failed = false, dry_run = false, allow_large_grid = false, wide = false;
  double db_wait_s = 120;
  bool shard_given = false;  // --shard '' (an unset shell variable) is an error, not the whole grid
  MonitoringArgs monitoring;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// `s` as one word for a POSIX shell, so the suggested command can be pasted: as it is when it holds
// only characters no shell treats specially, else in single quotes (a ' inside written as '\'').
std::string shell_quoted(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_-./:=@%+,") == std::string::npos;
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// No output written over an input, a file of the database or another output: --db, --html and
// --influx-file against the experiment file, its data file and its wattmeter log; --html and
// --influx-file against the database's files and each other.
void check_outputs_apart(const Args& a, const Experiment& ex, const std::string& influx_file) {
  const std::pair<std::string, const char*> inputs[] = {{a.experiment, "the experiment file"},
                                                        {ex.dataset.path, "the experiment's data file"},
                                                        {ex.base.energy.wattmeter_log, "the experiment's wattmeter log"}};
  const std::pair<std::string, const char*> outputs[] = {
      {a.db, "--db"}, {a.html, "--html"}, {influx_file, "--influx-file"}};
  for (const auto& [out, option] : outputs)
    for (const auto& [in, what] : inputs) check_output_is_not_input(out, option, in, what);
  for (const auto& [out, option] : {outputs[1], outputs[2]})
    if (!out.empty()) check_output_is_not_database(out, option, a.db);
  if (!a.html.empty() && !influx_file.empty() && same_file(a.html, influx_file))
    throw InputError("--html " + a.html + ": is also the --influx-file", "give the page and the metrics two files");
}

// Every option checked before the hazards, the database or any trial: a mistake costs nothing and
// leaves nothing behind (the experiment and its data file are checked by load_experiment).
void check_before_work(const Args& a, const Experiment& ex, const SweepOptions& o) {
  if (a.tables != "none")
    for (const auto& n : split_commas(a.tables)) {
      check_table_name(n, "--tables");
      if (n == "projection")
        throw InputError("--tables projection: a projection needs the dataset's size",
                         "after the run: balerbench report --db DB --table projection --dataset-bytes 10TB");
    }
  if (a.dry_run) return;  // runs and creates nothing; the store says when --db is not a database
  check_output_file(a.db, "give --db a file in a folder that can be written");
  if (!a.html.empty()) check_output_file(a.html, "give --html a file in a folder that can be written");
  check_outputs_apart(a, ex, o.monitoring.influx_file);  // --db's own files, said as such
  check_not_over_a_database(a.html, "--html");             // any other database
  check_not_over_a_database(o.monitoring.influx_file, "--influx-file");
  if (!a.html.empty()) report::check_plot_library();
  check_monitoring_settings(o.monitoring);
}

// The experiment's page: every table and the figures, as `report --format html --experiment` makes it.
void write_html(const Args& a, const Experiment& ex, std::vector<TrialRecord> trials) {
  report::ExperimentReport e{ex.name, std::move(trials), {}, ex.etas};
  e.tables = make_tables(e.trials, "all", e.etas);
  const report::ReportPageInput page{a.db, {std::move(e)}, report::utc_time(unix_time_s()).get<std::string>()};
  const std::string text = report::report_page(page, report::load_plot_library());
  write_file_atomic(a.html, std::vector<uint8_t>(text.begin(), text.end()));
  std::printf("\nwrote %s\n", a.html.c_str());
}

int run(const Args& a) {
  Experiment ex = load_experiment(a.experiment);
  SweepOptions o;
  o.db_path = a.db;
  o.retry_failed = a.retry_failed;
  o.dry_run = a.dry_run;
  o.allow_large_grid = a.allow_large_grid;
  o.db_wait_s = a.db_wait_s;
  o.progress = a.progress;
  if (a.shard_given)
    o.shard = parse_shard(a.shard);
  else
    o.shard = shard_from_slurm_env();
  MonitoringArgs m = a.monitoring;
  if (!m.experiment) m.experiment = ex.name;
  o.monitoring = monitoring_settings_from(m);
  check_before_work(a, ex, o);
  o.report_hazards = !a.dry_run;
  const SweepSummary s = run_sweep(ex, o, stdout);
  if (!s.store_error.empty()) {
    std::fprintf(stderr, "balerbench: error: %s\n", s.store_error.c_str());
    return s.exit_code();
  }
  if (a.dry_run || s.signal) return s.exit_code();
  const std::vector<std::string> names = split_commas(a.tables);
  const bool print_tables = !names.empty() && a.tables != "none";
  if (!print_tables && a.html.empty()) return s.exit_code();
  const Store store(a.db, StoreAccess::kReadOnly);
  auto trials = store.trials(ex.name, true, false);
  fail_diverged_trials(trials);
  if (print_tables) {
    for (const auto& n : names) {
      std::vector<Table> tables = make_tables(trials, n, ex.etas);
      if (!a.wide)
        for (auto& t : tables) t = terminal_view(t);
      std::printf("\n%s", render_tables(tables, "md").c_str());
    }
    std::printf("\n(balerbench report --db %s --experiment %s --table NAME%s: %s)\n", shell_quoted(a.db).c_str(),
                shell_quoted(ex.name).c_str(), a.wide ? "" : " [--wide]", joined(report_table_names(), ", ").c_str());
  }
  if (!a.html.empty()) write_html(a, ex, std::move(trials));
  return s.exit_code();
}

}  // namespace

void register_run(CLI::App& app, Action& action) {
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "Run an experiment sweep into the results database, then print tables");
  cmd->add_option("experiment", a->experiment, "experiment FILE.json (see experiments/)")->required();
  cmd->add_option("--db", a->db, "results database (default results/balerbench.sqlite)")->check(non_empty_path());
  CLI::Option* shard = cmd->add_option("--shard", a->shard,
                                       "run slice i of N of the grid (0 <= i < N); default: "
                                       "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT when set");
  cmd->add_option("--db-wait", a->db_wait_s,
                  "seconds to wait in all for a database locked by another program before a finished trial is kept "
                  "in a side file beside it (default 120)")
      ->check(in_range(0, 86400, "SECONDS"));
  cmd->add_flag("--retry-failed", a->retry_failed, "run again the trials stored as failed or skipped");
  cmd->add_flag("--dry-run", a->dry_run, "list the trials that would run, run nothing");
  cmd->add_flag("--allow-large-grid", a->allow_large_grid,
                "plan more than " + std::to_string(kLargeGridTrials) + " trials in one run (refused otherwise)");
  cmd->add_option("--progress", a->progress, "auto | bar | lines | none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}));
  cmd->add_option("--tables", a->tables,
                  "tables to print afterwards, comma-separated, or none (default precision,cost)");
  cmd->add_flag("--wide", a->wide, "print every column of those tables (default: the columns to decide by)");
  cmd->add_option("--html", a->html,
                  "also write the experiment's HTML page (every table and the figures, as report --format html) "
                  "to FILE")
      ->check(non_empty_path());
  add_monitoring_options(cmd, a->monitoring, true);
  cmd->callback([a, shard, &action] {
    a->shard_given = shard->count() > 0;
    action = [a] { return run(*a); };
  });
}

}  // namespace balerbench::cli
