// project_outputs.h: in a Baler project, nothing the user had in output/ is replaced without a
// backup.
//
// balerbench records the files it wrote in output/balerbench_files.json (relative path -> bytes and
// modification time). Before a command replaces a file that is not as balerbench last wrote it
// (Baler's, or anyone's), the file is kept as output/backup/<UTC time>/<same relative path>: a hard
// link, taken before balerbench's write renames the new file over the name, so the old content
// stays whole at no cost (a copy where the file system has no links). The files one Baler run left
// gather in one folder: a command keeps its files in the newest backup folder unless that already
// holds one of them. A backup of a file the command did not replace after all (it failed, or
// stopped early) is dropped again, since the file is still in place. balerbench's own earlier
// outputs are replaced, as with --out.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "harness/run/run_config.h"

namespace balerbench {

// The files (relative to output/) `command` (train, compress, decompress) may replace.
std::vector<std::string> files_written_by(const std::string& command, const RunConfig& c);

// Whether output/`relative` is as balerbench last wrote it (per balerbench_files.json).
bool written_by_balerbench(const std::filesystem::path& output_dir, const std::string& relative);

struct KeptFile {
  std::string relative;             // e.g. compressed_output/model.pt
  std::filesystem::path backup;     // output/backup/<time>/compressed_output/model.pt
  nlohmann::json to_json() const { return {{"file", relative}, {"kept_as", backup.string()}}; }
};

// One command's guard over output/.
class ProjectOutputs {
 public:
  ProjectOutputs(std::filesystem::path output_dir, std::vector<std::string> relative);
  ~ProjectOutputs();
  ProjectOutputs(const ProjectOutputs&) = delete;
  ProjectOutputs& operator=(const ProjectOutputs&) = delete;

  // Keeps every file of `relative` that exists and is not balerbench's; returns what it kept.
  const std::vector<KeptFile>& keep_foreign();
  const std::vector<KeptFile>& kept() const { return kept_; }
  // After the command succeeded: records the files it wrote, drops backups of files left in place.
  void commit();

 private:
  void drop_unneeded_backups();
  std::filesystem::path choose_backup_dir() const;
  std::filesystem::path output_;
  std::vector<std::string> relative_;
  std::vector<KeptFile> kept_;
  std::vector<uint64_t> kept_inodes_;
  std::filesystem::path backup_dir_;
  bool committed_ = false;
};

}  // namespace balerbench
