// baler_project_run.cpp: see baler_project_run.h.
#include "harness/baler/baler_project_run.h"

#include <cstdio>
#include <filesystem>
#include <vector>

#include "common/atomic_file.h"

#include "harness/baler/side_by_side.h"

namespace balerbench {

BalerProjectRun::BalerProjectRun(const std::string& project_path, const std::vector<std::string>& sets,
                                 const std::vector<ConfigOverride>& options, std::string command,
                                 double config_timeout_s)
    : project_(open_baler_project(project_path)),
      config_(load_baler_project_config(project_, sets, options, config_timeout_s)),
      files_(baler_project_files(project_.output.string())),
      command_(std::move(command)) {}

namespace {

// The config's notes (keys ignored, not done, ...) in full the first time a project's config gives
// them, then one line while they stay the same: output/.balerbench_config_notes keeps the last ones
// said (a failure to keep it only means they are said in full again).
void say_config_notes(const BalerProject& project, const std::vector<ConfigNote>& notes) {
  const std::string text = format_config_notes(project, notes);
  if (text.empty()) return;
  const std::filesystem::path said = project.output / ".balerbench_config_notes";
  std::string before;
  if (std::FILE* f = std::fopen(said.c_str(), "rb")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) before.append(buf, n);
    std::fclose(f);
  }
  if (before == text) {
    std::fprintf(stderr, "balerbench: %s: the same %zu note%s on its keys as before (balerbench info --baler-project %s "
                 "lists them)\n", project.config.filename().c_str(), notes.size(), notes.size() == 1 ? "" : "s",
                 project.dir.c_str());
    return;
  }
  std::fputs(text.c_str(), stderr);
  try {
    write_file_atomic(said.string(), std::vector<uint8_t>(text.begin(), text.end()));
  } catch (const std::exception&) {
  }
}

}  // namespace

void BalerProjectRun::begin() {
  outputs_ = std::make_unique<ProjectOutputs>(project_.output, files_written_by(command_, config_.run));
  say_config_notes(project_, config_.notes);
  for (const KeptFile& k : outputs_->keep_foreign())
    std::fprintf(stderr, "balerbench: kept the previous output/%s (not written by balerbench) as %s\n",
                 k.relative.c_str(), k.backup.string().c_str());
}

void BalerProjectRun::finish(nlohmann::json& report) {
  nlohmann::json kept = nlohmann::json::array();
  nlohmann::json notes = nlohmann::json::array();
  if (outputs_) {
    outputs_->commit();  // drops the backups of files left in place
    for (const KeptFile& k : outputs_->kept())
      if (std::filesystem::exists(k.backup)) kept.push_back(k.to_json());
  }
  for (const ConfigNote& n : config_.notes) notes.push_back(n.to_json());
  report["baler_project"] = {{"project", project_.dir.string()},
                             {"config", project_.config.string()},
                             {"config_notes", notes},
                             {"kept", kept}};
}

nlohmann::json BalerProjectRun::side_by_side(const std::vector<std::string>& logs,
                                             const std::vector<std::string>& measures) const {
  std::vector<std::filesystem::path> paths(logs.begin(), logs.end());
  nlohmann::json r = balerbench::side_by_side(project_, config_.run, paths,
                                              std::vector<std::filesystem::path>(measures.begin(), measures.end()));
  nlohmann::json notes = nlohmann::json::array();
  for (const ConfigNote& n : config_.notes) notes.push_back(n.to_json());
  r["config_notes"] = notes;
  return r;
}

}  // namespace balerbench
