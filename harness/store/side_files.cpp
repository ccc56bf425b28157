// side_files.cpp: see side_files.h.
#include "harness/store/side_files.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "harness/store/database_files.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

constexpr char kSideSuffix[] = ".sqlite";

void remove_database_files(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
}

}  // namespace

std::string keep_trial_aside(const std::string& db_path, const KeptExperiment& experiment, const TrialRecord& trial) {
  const std::string path =
      db_path + kSideFileTag + trial.key.substr(0, 12) + "-" + std::to_string(::getpid()) + kSideSuffix;
  const std::string tmp = path + ".partial";
  remove_database_files(tmp);
  try {
    {
      Store side(tmp);
      side.put_experiment(experiment.name, experiment.source, experiment.spec);
      side.insert_trial(trial);
      side.close_as_single_file();
    }
    fs::rename(tmp, path);
  } catch (const std::exception& e) {
    remove_database_files(tmp);
    throw StoreWriteError(path + ": could not keep the trial aside either: " + e.what());
  }
  return path;
}

std::vector<std::string> side_files_of(const std::string& db_path) {
  std::vector<std::string> out;
  const fs::path db(db_path);
  const fs::path dir = db.has_parent_path() ? db.parent_path() : fs::path(".");
  const std::string prefix = db.filename().string() + kSideFileTag;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > prefix.size() + std::string(kSideSuffix).size() && name.rfind(prefix, 0) == 0 &&
        name.compare(name.size() - std::string(kSideSuffix).size(), std::string::npos, kSideSuffix) == 0)
      out.push_back((db.has_parent_path() ? dir / name : fs::path(name)).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> fold_side_files(Store& store) {
  std::vector<std::string> lines;
  for (const std::string& path : side_files_of(store.path())) {
    try {
      std::pair<int64_t, int64_t> counts;
      {
        const Store side(path, StoreAccess::kReadOnly);
        counts = store.merge_from(side);
      }
      remove_database_files(path);
      lines.push_back(path + ": " + std::to_string(counts.first) + " trial" + (counts.first == 1 ? "" : "s") +
                      " kept aside when the database was locked, folded in" +
                      (counts.second ? " (" + std::to_string(counts.second) + " held already)" : ""));
    } catch (const std::exception& e) {
      lines.push_back(path + ": left in place, not folded in: " + e.what());
    }
  }
  return lines;
}

}  // namespace balerbench
