// cmd_report.cpp: `balerbench report`: tables from the results database, or the HTML page with its
// figures.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "common/text.h"
#include "common/error.h"
#include "datasets/npy.h"
#include "common/paths.h"
#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "harness/cli/output_check.h"
#include "harness/report/plot_library.h"
#include "harness/report/report_page.h"
#include "harness/report/table_renderer.h"
#include "harness/report/table_cells.h"
#include "harness/report/tables.h"
#include "harness/report/trial_identity.h"
#include "harness/store/database_files.h"
#include "harness/store/side_files.h"
#include "harness/store/store.h"
#include "common/atomic_file.h"

namespace balerbench::cli {
namespace {

struct ReportArgs {
  std::string db = "results/balerbench.sqlite", experiment, table = "all", format = "md", out;
  bool wide = false;
  std::string latex_fit = "none";
  double min_effect = 0;  // a fraction (--min-effect takes percent)
  double dataset_bytes = 0, dataset_events = 0;  // --table projection's dataset
  int64_t trainings = 1;
  double max_nrmse = 0;  // --table fidelity's bound
};

// The cost weights stored with an experiment ({0, 0.5, 1} when it names none).
std::vector<double> stored_etas(const Store& store, const std::string& experiment) {
  std::vector<double> etas;
  const nlohmann::json spec = store.experiment_spec(experiment);
  if (!spec.is_object() || !spec.contains("cost") || !spec["cost"].is_object() || !spec["cost"].contains("eta"))
    return etas;
  const auto& e = spec["cost"]["eta"];
  for (const auto& v : e.is_array() ? e : nlohmann::json::array({e})) {
    // As the experiment parser reads /cost/eta: numbers in [0, 1].
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1)
      throw InputError("experiment '" + experiment + "': stored cost.eta holds " + v.dump() +
                           ", not a number in [0, 1]",
                       "rerun the experiment with a valid cost.eta, or report from another database");
    etas.push_back(v.get<double>());
  }
  return etas;
}

constexpr char kOutHint[] = "give --out a file (or with --format csv a folder) that can be written";

void write_text_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// A stored name (an experiment's, a table's: from a database that an older balerbench or a merge wrote)
// as part of a file name in --out: safe_file_name cut to 120 bytes, and when that changed it, '~' and a
// hash of the name, so no name leaves the folder. Two names never share a stem: a name kept as it is
// holds no '~' (safe_file_name replaces it), and every changed one ends in one.
std::string file_stem(const std::string& name) {
  constexpr std::size_t kMaxStemBytes = 120;
  const std::string safe = safe_file_name(name);
  if (safe == name && safe.size() <= kMaxStemBytes) return safe;
  return safe.substr(0, kMaxStemBytes) + "~" + short_hash(name, 8);
}

// One file of a CSV report, and the experiment it is of.
struct CsvFile {
  std::string path, text, experiment;
  bool table = true;  // a table's CSV file (announced as written), not the index
};

// CSV: one file per table, DIR/<experiment>.<table>.csv, and DIR/<experiment>.tables.json with
// each file's title, columns and notes (the CSV files carry only the header and the rows).
void add_csv_files(const std::string& dir, const report::ExperimentReport& r, std::vector<CsvFile>& files) {
  const std::string stem = file_stem(r.name);
  nlohmann::json index = nlohmann::json::array();
  for (const auto& t : r.tables) {
    const std::string file = stem + "." + file_stem(t.name) + ".csv";
    files.push_back({dir + "/" + file, render_tables({t}, "csv"), r.name});
    index.push_back({{"file", file}, {"table", t.name}, {"title", t.title}, {"columns", t.columns}, {"notes", t.notes}});
  }
  files.push_back({dir + "/" + stem + ".tables.json",
                   nlohmann::json{{"experiment", r.name}, {"tables", index}}.dump(2) + "\n", r.name, false});
}

// Every file checked before the first is written: each can be written, none is a file of the
// database, and no two share a name.
void check_csv_files(const std::vector<CsvFile>& files, const std::string& db) {
  std::map<std::string, const CsvFile*> seen;
  for (const CsvFile& f : files) {
    check_output_file(f.path, kOutHint);
    check_not_over_a_database(f.path, "--out");
    check_output_is_not_database(f.path, "--out", db);
    const auto [it, added] = seen.emplace(f.path, &f);
    if (!added)
      throw InputError("--out: experiments '" + it->second->experiment + "' and '" + f.experiment +
                           "' would both be written to " + f.path,
                       "report them one at a time, each into its own folder: --experiment NAME --out DIR");
  }
}

// Writes the files, refusing one that would replace a file written before it (two names that a
// case-insensitive file system takes for one).
void write_csv_files(const std::string& dir, const std::vector<CsvFile>& files) {
  create_output_folder(dir, kOutHint);
  std::set<std::pair<dev_t, ino_t>> written;
  for (const CsvFile& f : files) {
    struct stat st {};
    if (::stat(f.path.c_str(), &st) == 0 && written.count({st.st_dev, st.st_ino}))
      throw InputError("--out: " + f.path + " (experiment '" + f.experiment +
                           "') is a file this report wrote already under another name: the folder's file system "
                           "does not tell their names apart",
                       "report the experiments one at a time, each into its own folder: --experiment NAME --out DIR");
    write_text_atomic(f.path, f.text);
    if (::stat(f.path.c_str(), &st) == 0) written.insert({st.st_dev, st.st_ino});
    if (f.table) std::printf("wrote %s\n", f.path.c_str());
  }
}

void write_csv_dir(const ReportArgs& a, const std::vector<report::ExperimentReport>& reports) {
  std::vector<CsvFile> files;
  for (const auto& r : reports) add_csv_files(a.out, r, files);
  check_csv_files(files, a.db);
  write_csv_files(a.out, files);
}

// What the side files beside `db` hold for a reader of `db` alone ("" when there are none): trials a
// run kept aside while the database was locked, in no report until they are folded in.
std::string side_files_note(const std::string& db) {
  const std::vector<std::string> side = side_files_of(db);
  if (side.empty()) return "";
  std::string text = std::to_string(side.size()) +
                     (side.size() == 1 ? " side file beside it holds" : " side files beside it hold") +
                     " trials kept aside while it was locked, which no report shows: " + side.front();
  return side.size() == 1 ? text : text + " and " + std::to_string(side.size() - 1) + " more";
}

std::string side_files_hint(const std::string& db) {
  return "the next `balerbench run` into " + db + " folds them in; or `balerbench merge " + db + " " + db +
         kSideFileTag + "*.sqlite --out MERGED.sqlite`";
}

void print_migration_note(const Store& s) {
  if (!s.migration_note().empty()) std::fprintf(stderr, "balerbench: note: %s\n", s.migration_note().c_str());
}

// Where the report goes, checked before the database is read and the tables made; for HTML, also
// that the plotting library is there.
void check_report_output(const ReportArgs& a) {
  const bool dataset = a.dataset_bytes > 0 || a.dataset_events > 0;
  if (a.table == "projection" && !dataset)
    throw InputError("--table projection: no dataset to project to",
                     "give its size, --dataset-bytes 10TB or --dataset-events 1e9 (and --trainings N for one model "
                     "per N parts)");
  if (a.max_nrmse > 0 && a.table != "fidelity" && a.table != "all")
    throw InputError("--max-nrmse shapes --table fidelity only, not --table " + a.table, "add --table fidelity");
  if ((dataset || a.trainings != 1) && a.table != "projection" && a.table != "all")
    throw InputError("--dataset-bytes, --dataset-events and --trainings shape --table projection only, not --table " +
                         a.table,
                     "add --table projection (or --table all)");
  if (a.format == "csv" && !a.out.empty()) {
    check_output_folder(a.out, "CSV reports go to a folder (one file per table): give a folder name, e.g. --out reports/");
    check_not_over_a_database(a.out, "--out");  // a folder named DB-shm would make the database unreadable
  } else if (!a.out.empty()) {
    check_output_file(a.out, kOutHint);
    check_output_is_not_database(a.out, "--out", a.db);  // --db's own files, said as such
    check_not_over_a_database(a.out, "--out");            // any other database
  }
  if (a.format == "html") report::check_plot_library();
  if (a.latex_fit != "none" && a.format != "latex")
    throw InputError("--latex-fit " + a.latex_fit + " shapes --format latex only", "add --format latex");
}

// The experiments to report (every stored one, or --experiment), each with its trials and tables.
std::vector<report::ExperimentReport> load_reports(const Store& store, const ReportArgs& a) {
  std::vector<std::string> experiments = store.experiments();
  // An HTML page says that the database is empty; a table cannot.
  if (experiments.empty() && a.format != "html") {
    if (const std::string side = side_files_note(a.db); !side.empty())
      throw InputError(a.db + ": no trials stored in the database itself; " + side, side_files_hint(a.db));
    throw InputError(a.db + ": no trials stored yet", "balerbench run EXPERIMENT.json first");
  }
  if (!a.experiment.empty()) {
    if (std::find(experiments.begin(), experiments.end(), a.experiment) == experiments.end()) {
      std::string list;
      for (const auto& e : experiments) list += (list.empty() ? "" : ", ") + e;
      throw InputError(a.db + ": no experiment named '" + a.experiment + "'",
                       list.empty() ? "the database holds no trials yet" : "stored: " + list);
    }
    experiments = {a.experiment};
  }
  std::vector<report::ExperimentReport> reports;
  for (const auto& name : experiments) {
    report::ExperimentReport e{name, store.trials(name, true, false), {}, stored_etas(store, name)};
    fail_diverged_trials(e.trials);
    TableOptions options;
    options.etas = e.etas;
    options.min_effect = a.min_effect;
    options.dataset_bytes = a.dataset_bytes;
    options.dataset_events = a.dataset_events;
    options.trainings = a.trainings;
    options.max_nrmse = a.max_nrmse;
    e.tables = make_tables_with(e.trials, a.table, options);
    reports.push_back(std::move(e));
  }
  return reports;
}

// Every experiment's tables in one JSON document.
std::string json_report(const std::vector<report::ExperimentReport>& reports) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& r : reports) {
    nlohmann::json doc = nlohmann::json::parse(render_tables(r.tables, "json"));
    for (auto& t : doc["tables"]) {
      t["experiment"] = r.name;
      all.push_back(std::move(t));
    }
  }
  return nlohmann::json{{"tables", all}}.dump(2) + "\n";
}

std::string html_report(const ReportArgs& a, std::vector<report::ExperimentReport> reports) {
  if (reports.empty() && !side_files_note(a.db).empty())
    std::fprintf(stderr, "balerbench: note: %s: no trials stored in the database itself; the page says so\n",
                 a.db.c_str());
  else if (reports.empty())
    std::fprintf(stderr, "balerbench: note: %s: no trials stored yet; the page says so\n", a.db.c_str());
  report::ReportPageInput page{a.db, std::move(reports), report::utc_time(unix_time_s()).get<std::string>()};
  return report::report_page(page, report::load_plot_library());
}

report::LatexFit latex_fit(const std::string& name) {
  return name == "resize" ? report::LatexFit::kResize
         : name == "landscape" ? report::LatexFit::kLandscape
                               : report::LatexFit::kNone;
}

// Markdown (the terminal view on stdout, unless --wide), LaTeX (the paper view, unless --wide), or one
// CSV table.
std::string text_report(const ReportArgs& a, const std::vector<report::ExperimentReport>& reports) {
  const bool terminal = a.format == "md" && a.out.empty() && !a.wide;
  const bool paper = a.format == "latex" && !a.wide;
  std::string text;
  for (const auto& r : reports) {
    if (a.format == "md")
      text += (text.empty() ? "" : "\n") + std::string("## Experiment ") + report::markdown_text(r.name, false) +
              "\n\n";
    std::vector<Table> tables = r.tables;
    for (auto& t : tables) {
      if (terminal) t = terminal_view(t);
      if (paper) t = paper_view(t);
      if (a.format == "latex" && reports.size() > 1)  // captions that tell one experiment's tables from another's
        t.title = "Experiment " + r.name + ": " + t.title;
    }
    text += a.format == "latex" ? report::render_latex(tables, latex_fit(a.latex_fit)) : render_tables(tables, a.format);
  }
  return text;
}

// Several CSV tables on stdout: one block each, after a '#' line naming it (pandas: read_csv(comment='#')
// per block); --table NAME gives one plain CSV, --out DIR one file per table.
std::string csv_blocks(const std::vector<report::ExperimentReport>& reports) {
  std::string text;
  for (const auto& r : reports)
    for (const auto& t : r.tables)
      text += (text.empty() ? "" : "\n") +
              report::one_line(std::string("# experiment ") + r.name + ", table " + t.name + ": " + t.title) + "\n" +
              render_tables({t}, "csv");
  return text;
}

// The report's text in its format (nullopt: written as CSV files into --out already).
std::optional<std::string> report_text(const ReportArgs& a, const Store& store) {
  std::vector<report::ExperimentReport> reports = load_reports(store, a);
  std::size_t table_count = 0;
  for (const auto& r : reports) table_count += r.tables.size();
  if (a.format == "csv" && !a.out.empty()) {
    write_csv_dir(a, reports);
    return std::nullopt;
  }
  return a.format == "csv" && table_count != 1 ? csv_blocks(reports)
         : a.format == "json"                    ? json_report(reports)
         : a.format == "html"                    ? html_report(a, std::move(reports))
                                                 : text_report(a, reports);
}

int report(const ReportArgs& a) {
  check_report_output(a);
  const Store store(a.db, StoreAccess::kReadOnly);
  print_migration_note(store);
  // Trials kept aside are in no report: said beside a report (an empty table is refused, saying so).
  const std::string side = side_files_note(a.db);
  if (!side.empty() && (a.format == "html" || !store.experiments().empty()))
    std::fprintf(stderr, "balerbench: note: %s: %s (%s)\n", a.db.c_str(), side.c_str(), side_files_hint(a.db).c_str());
  std::optional<std::string> made;
  try {
    made = report_text(a, store);
  } catch (const nlohmann::json::exception& e) {
    // Stored results are input: a shape this balerbench never writes is the file's fault, said as such.
    throw InputError(a.db + ": a stored trial's results are not in the shape balerbench writes (" + e.what() + ")",
                     "the file was damaged or edited by hand; restore it, or run the trials again");
  }
  if (!made) return 0;
  const std::string& text = *made;
  if (a.out.empty()) {
    write_stdout(text);  // a report is large: a failed write is an error here, not at exit
  } else {
    write_text_atomic(a.out, text);
    std::printf("wrote %s\n", a.out.c_str());
  }
  return 0;
}

}  // namespace

void register_report(CLI::App& app, Action& action) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Tables from the results database (Markdown, CSV, LaTeX, JSON), or one HTML page with the figures");
  cmd->add_option("--db", a->db, "results database (default results/balerbench.sqlite)")->check(non_empty_path());
  cmd->add_option("--experiment", a->experiment, "only this experiment (default: every one stored)");
  cmd->add_option("--table", a->table, joined(report_table_names(), " | ") + " | all");
  cmd->add_option("--format", a->format,
                  joined(report_format_names(), " | ") +
                      " (html: one self-contained page with every table and the figures; give --out FILE.html)")
      ->check(CLI::IsMember(report_format_names()));
  cmd->add_flag("--wide", a->wide,
                "every column of each table; Markdown on the terminal and LaTeX give only the columns to decide by "
                "(Markdown files, CSV, JSON and HTML always have them all)");
  static const std::vector<std::string> kFits = {"none", "resize", "landscape"};
  cmd->add_option("--latex-fit", a->latex_fit,
                  "--format latex: resize (each tabular scaled to \\textwidth, graphicx) or landscape (each table on "
                  "a landscape page, pdflscape); default none")
      ->check(CLI::IsMember(kFits));
  cmd->add_option_function<double>(
         "--min-effect", [a](double percent) { a->min_effect = percent / 100; },
         "the smallest difference that matters, in percent (e.g. 2): a ratio whose 95% interval lies inside "
         "1 +- P% reads \"no meaningful difference\", even where it excludes 1 (default 0: every resolved difference)")
      ->check(in_range(0, 100, "PERCENT"));
  CLI::Option* bytes = cmd->add_option("--dataset-bytes", a->dataset_bytes,
                                       "--table projection: the dataset to compress, in bytes (5e12, 10TB, 2.5PiB)")
                           ->transform(byte_size());
  cmd->add_option("--dataset-events", a->dataset_events,
                  "--table projection: the dataset to compress, in events (rows of the data's first axis, at the "
                  "trials' bytes per event)")
      ->check(in_range(1, 1e21, "EVENTS"))
      ->excludes(bytes);
  cmd->add_option("--trainings", a->trainings,
                  "--table projection: how many trainings the dataset takes (1: one model for all of it; N: one per "
                  "N parts, each trained as the trials were)")
      ->check(in_range(1, 1e9, "POSITIVE"));
  cmd->add_option("--max-nrmse", a->max_nrmse,
                  "--table fidelity: the largest normalised RMS error any feature may have (e.g. 0.02): adds Zeus's "
                  "cost at each eta among the configurations within it, and the cheapest")
      ->check(in_range(1e-12, 1e6, "NRMSE"));
  cmd->add_option("--out", a->out,
                  "write to FILE instead of stdout; with --format csv a folder: one EXPERIMENT.TABLE.csv per table "
                  "and EXPERIMENT.tables.json with their titles and notes")
      ->check(non_empty_path());
  cmd->callback([a, &action] { action = [a] { return report(*a); }; });
}

}  // namespace balerbench::cli
