// baler_project_run.h: one balerbench command run in a Baler project (`--baler-project
// workspaces/WS/P`): the config read from config/P_config.py (baler_config.h), the files in Baler's
// layout under output/ (datasets/cycle_files.h), Baler's files kept before balerbench replaces them
// (project_outputs.h), and the side-by-side `info` (side_by_side.h). The CLI calls it around the
// same train/compress/decompress as --config.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "datasets/baler_project.h"
#include "datasets/cycle_files.h"
#include "harness/baler/baler_config.h"
#include "harness/baler/project_outputs.h"

namespace balerbench {

class BalerProjectRun {
 public:
  // Reads the project's config, with `sets` (--set) and `options` (--precision, ...) applied;
  // InputError for a bad project or config, before anything is written.
  // `config_timeout_s` bounds reading P_config.py (read_baler_attributes).
  BalerProjectRun(const std::string& project_path, const std::vector<std::string>& sets,
                  const std::vector<ConfigOverride>& options, std::string command,
                  double config_timeout_s = kBalerConfigTimeoutS);

  const RunConfig& config() const { return config_.run; }
  const CycleFiles& files() const { return files_; }
  const BalerProject& project() const { return project_; }

  // Before the command writes: says on stderr what of the config is not read as balerbench's key (in
  // full once, then in one line while it stays the same), and keeps the files the command would
  // replace that balerbench did not write.
  void begin();
  // After it succeeded: records its files as balerbench's; adds report["baler_project"].
  void finish(nlohmann::json& report);
  // `info`: Baler's and balerbench's results side by side (`logs`: Baler's console logs; `measures`:
  // `balerbench measure --json` files of Baler's commands, baler_energy.h).
  nlohmann::json side_by_side(const std::vector<std::string>& logs, const std::vector<std::string>& measures) const;
  // What of the config is not read as balerbench's key, one line per fate (empty: nothing).
  std::string config_notes_text() const { return format_config_notes(project_, config_.notes); }

 private:
  BalerProject project_;
  BalerProjectConfig config_;
  CycleFiles files_;
  std::string command_;
  std::unique_ptr<ProjectOutputs> outputs_;
};

}  // namespace balerbench
