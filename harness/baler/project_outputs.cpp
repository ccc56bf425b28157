// project_outputs.cpp: see project_outputs.h.
#include "harness/baler/project_outputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <fstream>

#include "common/error.h"
#include "datasets/npy.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kManifest = "balerbench_files.json";

struct FileStamp {
  bool exists = false;
  int64_t bytes = 0, mtime_ns = 0;
  uint64_t inode = 0;
};

FileStamp stamp_of(const fs::path& p) {
  struct stat st {};
  FileStamp s;
  if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return s;
  s.exists = true;
  s.bytes = static_cast<int64_t>(st.st_size);
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  s.inode = static_cast<uint64_t>(st.st_ino);
  return s;
}

json read_manifest(const fs::path& output) {
  std::ifstream in(output / kManifest);
  if (!in) return json::object();
  json j = json::parse(in, nullptr, false);
  // A damaged record only means that every file counts as foreign: backed up, never lost.
  if (j.is_discarded() || !j.is_object() || !j.contains("files") || !j["files"].is_object()) return json::object();
  return j["files"];
}

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

}  // namespace

// The newest backup folder when it holds none of the files this command would keep (so that one
// Baler run's files, replaced by train, compress and decompress in turn, gather in one folder),
// else a new one named after the time.
fs::path ProjectOutputs::choose_backup_dir() const {
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (fs::directory_iterator it(output_ / "backup", ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory()) dirs.push_back(it->path());
  if (!dirs.empty()) {
    const fs::path newest = *std::max_element(dirs.begin(), dirs.end());
    const bool clashes = std::any_of(relative_.begin(), relative_.end(), [&](const std::string& rel) {
      return fs::exists(newest / rel) && fs::exists(output_ / rel) && !written_by_balerbench(output_, rel);
    });
    if (!clashes) return newest;
  }
  const std::string stamp = utc_stamp();
  fs::path dir = output_ / "backup" / stamp;
  for (int n = 2; fs::exists(dir); ++n) dir = output_ / "backup" / (stamp + "-" + std::to_string(n));
  return dir;
}

std::vector<std::string> files_written_by(const std::string& command, const RunConfig& c) {
  if (command == "train") {
    std::vector<std::string> f = {"compressed_output/model.pt",     "training/loss_data.npy",
                                  "training/normalization_features.npy", "training/run_config.json",
                                  "training/training_report.json", "training/energy_report.json"};
    if (c.intermittent_model_saving)
      for (int64_t e = 0; e < c.epochs; e += c.intermittent_saving_patience)
        f.push_back("training/model_" + std::to_string(e) + ".pt");
    return f;
  }
  if (command == "compress")
    return {"compressed_output/compressed.npz", "compressed_output/compress_report.json",
            "compressed_output/energy_report.json"};
  if (command == "decompress")
    return {"decompressed_output/decompressed.npz", "decompressed_output/decompress_report.json",
            "decompressed_output/energy_report.json"};
  return {};
}

bool written_by_balerbench(const fs::path& output, const std::string& relative) {
  const json files = read_manifest(output);
  const FileStamp s = stamp_of(output / relative);
  if (!s.exists || !files.contains(relative)) return false;
  const json& r = files[relative];
  return r.value("bytes", int64_t{-1}) == s.bytes && r.value("mtime_ns", int64_t{-1}) == s.mtime_ns;
}

ProjectOutputs::ProjectOutputs(fs::path output_dir, std::vector<std::string> relative)
    : output_(std::move(output_dir)), relative_(std::move(relative)) {}

ProjectOutputs::~ProjectOutputs() {
  if (committed_) return;
  try {
    drop_unneeded_backups();
  } catch (...) {  // never throw from a destructor; a backup left behind loses nothing
  }
}

const std::vector<KeptFile>& ProjectOutputs::keep_foreign() {
  for (const std::string& rel : relative_) {
    const fs::path src = output_ / rel;
    const FileStamp s = stamp_of(src);
    if (!s.exists || written_by_balerbench(output_, rel)) continue;
    if (backup_dir_.empty()) backup_dir_ = choose_backup_dir();
    const fs::path dst = backup_dir_ / rel;
    std::error_code ec;
    fs::create_directories(dst.parent_path(), ec);
    if (ec) throw InputError(dst.parent_path().string() + ": cannot create the backup folder: " + ec.message(),
                             "check that the project's output/ folder is writable");
    fs::create_hard_link(src, dst, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(src, dst, ec);
      if (ec) throw InputError(src.string() + ": cannot keep a backup before replacing it: " + ec.message(),
                               "move the file away by hand, then run again");
    }
    kept_.push_back({rel, dst});
    kept_inodes_.push_back(s.inode);
  }
  return kept_;
}

void ProjectOutputs::drop_unneeded_backups() {
  for (std::size_t i = 0; i < kept_.size(); ++i) {
    const FileStamp now = stamp_of(output_ / kept_[i].relative);
    if (now.exists && now.inode == kept_inodes_[i] && stamp_of(kept_[i].backup).inode == now.inode) {
      std::error_code ec;
      fs::remove(kept_[i].backup, ec);  // the original is still in place: no backup needed
    }
  }
  if (backup_dir_.empty()) return;
  // Remove the folders left empty, bottom up.
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(backup_dir_, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory()) dirs.push_back(it->path());
  for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) fs::remove(*d, ec);  // fails (keeps it) when not empty
  fs::remove(backup_dir_, ec);
}

void ProjectOutputs::commit() {
  drop_unneeded_backups();
  const fs::path path = output_ / kManifest;
  json files = read_manifest(output_);
  for (const std::string& rel : relative_) {
    const FileStamp s = stamp_of(output_ / rel);
    const bool replaced = [&] {
      for (std::size_t i = 0; i < kept_.size(); ++i)
        if (kept_[i].relative == rel) return s.inode != kept_inodes_[i];
      return true;
    }();
    if (s.exists && replaced) files[rel] = {{"bytes", s.bytes}, {"mtime_ns", s.mtime_ns}};
  }
  const json doc = {{"what", "files balerbench wrote in this Baler project; others are kept in backup/ before "
                             "balerbench replaces them"},
                    {"files", files}};
  const std::string text = doc.dump(2) + "\n";
  write_file_atomic(path.string(), std::vector<uint8_t>(text.begin(), text.end()));
  committed_ = true;
}

}  // namespace balerbench
