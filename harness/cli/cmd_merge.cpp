// cmd_merge.cpp: `balerbench merge A.sqlite B.sqlite ... --out ALL.sqlite`: join results databases
// (one per shard, or a side file a locked run kept) into one. OUT is written under a temporary name of
// this process's own beside it and renamed into place, so that it is always absent or whole: a kill,
// a stop signal (SIGINT, SIGTERM, SIGHUP: the merge is interrupted and its temporary removed) or a
// second merge into the same OUT never leaves half a database. Temporaries a killed merge left on this
// machine are removed by the next merge into the same OUT. A symbolic link at OUT keeps pointing at
// its file, which gets the merged database.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>

#include "common/error.h"
#include "common/paths.h"
#include "harness/base/processes.h"
#include "harness/cli/commands.h"
#include "harness/cli/option_checks.h"
#include "harness/store/database_files.h"
#include "harness/store/store.h"
#include "harness/sweep/stop_signals.h"

namespace balerbench::cli {
namespace {

namespace fs = std::filesystem;

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string out;
  bool force = false;
};

// What a temporary's name holds after "OUT.partial-": the host and pid of the merge writing it, then a
// random tag, so that a later merge can tell a dead merge's leftover (this host, no such process)
// from a live one's, here or on another machine sharing the folder.
std::string merge_temporary(const std::string& out, const std::string& host) {
  std::random_device rd;
  char tag[32];
  std::snprintf(tag, sizeof tag, "-%ld-%08x", static_cast<long>(::getpid()), rd());
  return out + kMergeTemporaryTag + host + tag;
}

void remove_database_files(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path + suffix, ec);
}

// The pid in a temporary's name "OUT.partial-HOST-PID-TAG[-wal|-shm|-journal]" written on `host`, or
// -1 when the name is not one (another host's, an older balerbench's, a file of the user's).
long temporary_pid(const std::string& name, const std::string& prefix, const std::string& host) {
  const std::string mine = prefix + host + "-";
  if (name.rfind(mine, 0) != 0) return -1;
  const std::string rest = name.substr(mine.size());  // "PID-TAG[-wal]"
  const std::size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos || rest.find_first_not_of("0123456789") != dash) return -1;
  return std::stol(rest.substr(0, dash));
}

// Removes what merges into `out` killed on this machine left behind (their process is gone).
void remove_stale_temporaries(const std::string& out, const std::string& host) {
  const fs::path target(out);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + kMergeTemporaryTag;
  std::error_code ec;
  std::vector<fs::path> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const long pid = temporary_pid(it->path().filename().string(), prefix, host);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      stale.push_back(target.has_parent_path() ? it->path() : it->path().filename());
  }
  for (const fs::path& p : stale) {
    fs::remove(p, ec);
    if (!ec) std::fprintf(stderr, "balerbench: note: removed %s, left by a merge that was killed\n", p.c_str());
  }
}

// OUT as the merge writes it: the file a link at OUT points to, checked before any input is read.
std::string checked_output(const MergeArgs& a) {
  std::error_code ec;
  const std::string out = output_target(a.out);
  const fs::file_status out_status = fs::status(out, ec);
  if (fs::is_directory(out_status))
    throw InputError("--out " + a.out + ": is a folder", "give the merged database's file name, e.g. --out merged.sqlite");
  if (fs::exists(out_status) && !a.force)
    throw InputError(a.out + ": exists", "choose another --out, or --force to replace it");
  if (fs::exists(out_status) && !fs::is_regular_file(out_status))
    throw InputError("--out " + a.out + ": is not a regular file", "give the merged database's file name");
  for (const char* suffix : {"-wal", "-journal"})  // an empty one holds nothing (a reader may leave it)
    if (fs::file_size(out + suffix, ec) > 0 && !ec)
      throw InputError(out + ": " + out + suffix + " lies beside it: a process may have it open, or it was not "
                           "closed cleanly, and a file put in its place would be read with that journal",
                       "close what uses it, or remove " + out + " and its " + suffix + " file yourself");
  for (const auto& in : a.inputs)
    if (fs::weakly_canonical(in, ec) == fs::weakly_canonical(out, ec))
      throw InputError(a.out + ": is also an input", "merge into a new file");
  for (const auto& in : a.inputs) check_output_is_not_database(a.out, "--out", in);  // its -wal, a side file
  // The temporary, beside OUT, has the longer name: SQLite must be able to open it.
  const std::size_t bytes = sqlite_path_bytes(out), temporary = merge_temporary(out, this_process().host).size() - out.size();
  if (bytes + temporary > kSqliteMaxPathBytes)
    throw InputError("--out " + a.out + ": its full path is " + std::to_string(bytes) + " bytes, and merge writes it " +
                         "first under a temporary name " + std::to_string(temporary) +
                         " bytes longer, which SQLite can open only within " + std::to_string(kSqliteMaxPathBytes) +
                         " bytes",
                     "give --out a shorter path (SQLite follows links to their end, so a link does not shorten it)");
  return out;
}

// The temporary renamed to `out`. Without --force, never over a file that appeared meanwhile (another
// merge into the same OUT): the kernel refuses the rename then. With --force the last merge to finish
// wins, and OUT is always one whole database.
void move_into_place(const std::string& tmp, const std::string& out, const MergeArgs& a) {
  int rc = a.force ? std::rename(tmp.c_str(), out.c_str())
                   : ::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && !a.force && (errno == EINVAL || errno == ENOSYS)) {  // a file system without it: link, unlink
    rc = ::link(tmp.c_str(), out.c_str());
    if (rc == 0) ::unlink(tmp.c_str());
  }
  if (rc == 0) return;
  const int err = errno;
  remove_database_files(tmp);
  if (err == EEXIST)
    throw InputError(a.out + ": appeared while this merge ran (another merge into the same --out?); it is left as it is",
                     "choose another --out, or --force to replace it");
  throw InputError(a.out + ": cannot move the merged database into place: " + std::strerror(err),
                   "check that its folder is writable and on the same file system");
}

// A merge that could not write its database (a full disk, a file-size limit): nothing of it is left,
// and OUT is as it was. Said as such, not as a sweep's store error (whose trials are kept).
[[noreturn]] void throw_merge_not_written(const MergeArgs& a, const StoreWriteError& e) {
  throw WriteError(a.out + ": the merged database could not be written (" +
                       (e.reason().empty() ? std::string(e.what()) : e.reason()) + "); nothing was merged and " +
                       a.out + " is left as it was",
                   std::string(kWriteErrorHint) + "; make room and run the same merge again");
}

int merge(const MergeArgs& a) {
  const std::string out = checked_output(a);
  // Every input opened (and checked: a foreign, empty or newer file) before anything is written.
  std::vector<std::unique_ptr<const Store>> sources;
  for (const auto& in : a.inputs) {
    sources.push_back(std::make_unique<const Store>(in, StoreAccess::kReadOnly));
    if (!sources.back()->migration_note().empty())
      std::fprintf(stderr, "balerbench: note: %s\n", sources.back()->migration_note().c_str());
  }
  const std::string host = this_process().host;
  remove_stale_temporaries(out, host);
  const std::string tmp = merge_temporary(out, host);
  // A stop signal interrupts the database being written; a second one ends the process at once, after
  // its temporary is removed.
  std::atomic<const Store*> writing{nullptr};
  std::atomic<int> signals{0};
  StopSignals stop([&](int) {
    if (signals.fetch_add(1) > 0) remove_database_files(tmp);
    if (const Store* s = writing.load()) s->interrupt();
    for (const auto& source : sources) source->interrupt();
  });
  int64_t copied = 0, duplicates = 0;
  try {
    Store dst(tmp);
    writing = &dst;
    for (std::size_t i = 0; i < sources.size() && !stop.stop_requested(); ++i) {
      const auto [c, d] = dst.merge_from(*sources[i]);
      std::printf("%s: %lld trials copied, %lld already present\n", a.inputs[i].c_str(), static_cast<long long>(c),
                  static_cast<long long>(d));
      copied += c;
      duplicates += d;
    }
    if (!stop.stop_requested()) dst.close_as_single_file();  // whole: nothing of it left in a -wal beside it
    writing = nullptr;
  } catch (const StoreWriteError& e) {
    writing = nullptr;
    remove_database_files(tmp);
    if (!stop.stop_requested()) throw_merge_not_written(a, e);
  } catch (...) {
    writing = nullptr;
    remove_database_files(tmp);
    if (!stop.stop_requested()) throw;
  }
  if (stop.stop_requested()) {
    remove_database_files(tmp);
    std::fprintf(stderr, "balerbench: merge interrupted by signal %d: %s is left as it was\n", stop.signal(),
                 a.out.c_str());
    return 128 + stop.signal();
  }
  move_into_place(tmp, out, a);
  std::printf("merged %zu database%s into %s: %lld trials (%lld duplicates skipped)\n", a.inputs.size(),
              a.inputs.size() == 1 ? "" : "s", a.out.c_str(), static_cast<long long>(copied),
              static_cast<long long>(duplicates));
  return 0;
}

}  // namespace

void register_merge(CLI::App& app, Action& action) {
  auto m = std::make_shared<MergeArgs>();
  CLI::App* mc = app.add_subcommand("merge", "Join results databases (e.g. one per shard) into one");
  mc->add_option("inputs", m->inputs, "databases to merge")->required()->check(CLI::ExistingFile);
  mc->add_option("--out", m->out,
                 "the merged database (written under a temporary name beside it, then renamed into place; a link "
                 "at --out keeps pointing at its file)")
      ->required();
  mc->add_flag("--force", m->force, "replace --out if it exists");
  mc->callback([m, &action] { action = [m] { return merge(*m); }; });
}

}  // namespace balerbench::cli
