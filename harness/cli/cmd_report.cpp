// cmd_report.cpp: `balerbench report` (tables from the results database) and
// `balerbench merge` (join shard databases).
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "datasets/error.h"
#include "datasets/npy.h"
#include "harness/cli/commands.h"
#include "harness/report/tables.h"
#include "harness/store/store.h"

namespace balerbench::cli {
namespace {

struct ReportArgs {
  std::string db = "results/balerbench.sqlite", experiment, table = "all", format = "md", out;
};

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string out;
  bool force = false;
};

int report(const ReportArgs& a) {
  const Store store(a.db, false);
  std::vector<std::string> experiments = store.experiments();
  if (experiments.empty()) throw InputError(a.db + ": no trials stored yet", "balerbench run EXPERIMENT.json first");
  if (!a.experiment.empty()) {
    if (std::find(experiments.begin(), experiments.end(), a.experiment) == experiments.end()) {
      std::string list;
      for (const auto& e : experiments) list += (list.empty() ? "" : ", ") + e;
      throw InputError(a.db + ": no experiment named '" + a.experiment + "'", "stored: " + list);
    }
    experiments = {a.experiment};
  }
  std::string text;
  for (const auto& name : experiments) {
    std::vector<double> etas;
    const nlohmann::json spec = store.experiment_spec(name);
    if (spec.is_object() && spec.contains("cost") && spec["cost"].contains("eta")) {
      const auto& e = spec["cost"]["eta"];
      if (e.is_array())
        for (const auto& v : e) etas.push_back(v.get<double>());
      else if (e.is_number())
        etas.push_back(e.get<double>());
    }
    const auto tables = make_tables(store.trials(name, true, false), a.table, etas);
    if (a.format == "md") text += (text.empty() ? "" : "\n") + std::string("## Experiment ") + name + "\n\n";
    text += render_tables(tables, a.format);
  }
  if (a.out.empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    write_file_atomic(a.out, std::vector<uint8_t>(text.begin(), text.end()));
    std::printf("wrote %s\n", a.out.c_str());
  }
  return 0;
}

int merge(const MergeArgs& a) {
  namespace fs = std::filesystem;
  if (fs::exists(a.out) && !a.force)
    throw InputError(a.out + ": exists", "choose another --out, or --force to replace it");
  for (const auto& in : a.inputs)
    if (fs::weakly_canonical(in) == fs::weakly_canonical(a.out))
      throw InputError(a.out + ": is also an input", "merge into a new file");
  const std::string tmp = a.out + ".partial";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(tmp + suffix);
  int64_t copied = 0, duplicates = 0;
  try {
    Store dst(tmp);
    for (const auto& in : a.inputs) {
      const Store src(in, false);
      const auto [c, d] = dst.merge_from(src);
      std::printf("%s: %lld trials copied, %lld already present\n", in.c_str(), static_cast<long long>(c),
                  static_cast<long long>(d));
      copied += c;
      duplicates += d;
    }
  } catch (...) {
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(tmp + suffix);
    throw;
  }
  fs::rename(tmp, a.out);
  std::printf("merged %zu databases into %s: %lld trials (%lld duplicates skipped)\n", a.inputs.size(), a.out.c_str(),
              static_cast<long long>(copied), static_cast<long long>(duplicates));
  return 0;
}

}  // namespace

void register_report(CLI::App& app, Action& action) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand("report", "Tables from the results database (Markdown, CSV, LaTeX, JSON)");
  cmd->add_option("--db", a->db, "results database (default results/balerbench.sqlite)");
  cmd->add_option("--experiment", a->experiment, "only this experiment (default: every one stored)");
  cmd->add_option("--table", a->table,
                  "precision | phases | batch_size | power_limit | cost | complexity | datasets | trials | all");
  cmd->add_option("--format", a->format, "md | csv | latex | json")
      ->check(CLI::IsMember({"md", "csv", "latex", "json"}));
  cmd->add_option("--out", a->out, "write to FILE instead of stdout");
  cmd->callback([a, &action] { action = [a] { return report(*a); }; });

  auto m = std::make_shared<MergeArgs>();
  CLI::App* mc = app.add_subcommand("merge", "Join results databases (e.g. one per shard) into one");
  mc->add_option("inputs", m->inputs, "databases to merge")->required()->check(CLI::ExistingFile);
  mc->add_option("--out", m->out, "the merged database (written as OUT.partial, then renamed)")->required();
  mc->add_flag("--force", m->force, "replace --out if it exists");
  mc->callback([m, &action] { action = [m] { return merge(*m); }; });
}

}  // namespace balerbench::cli
