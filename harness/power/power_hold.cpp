// power_hold.cpp: see power_hold.h.
#include "harness/power/power_hold.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "harness/base/clock.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The holder a file names (the lock file, or the journal): empty when it names none or is not JSON.
std::optional<LimitHolder> holder_in(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;  // a pipe would block on its read
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const json j = json::parse(text.str(), nullptr, false);
  return j.is_discarded() ? std::nullopt : LimitHolder::from_json(j);
}

}  // namespace

LimitHolder LimitHolder::self() { return {this_process(), unix_now_s()}; }

std::optional<LimitHolder> LimitHolder::from_json(const json& j) {
  if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer()) return std::nullopt;
  LimitHolder h;
  h.process.pid = j["pid"].get<int64_t>();
  const auto text = [&](const char* key) { return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : ""; };
  h.process.host = text("host");
  h.process.boot_id = text("boot_id");
  h.process.start_ticks = text("start_ticks");
  if (j.contains("since_unix_s") && j["since_unix_s"].is_number()) h.since_unix_s = j["since_unix_s"].get<double>();
  return h;
}

json LimitHolder::to_json() const {
  return {{"pid", process.pid}, {"host", process.host}, {"boot_id", process.boot_id},
          {"start_ticks", process.start_ticks}, {"since_unix_s", since_unix_s}};
}

bool LimitHolder::alive() const {
  if (process.start_ticks.empty()) return process_start_ticks(process.pid).has_value();
  return process_alive(process);
}

std::string LimitHolder::describe() const {
  std::string s = "pid " + std::to_string(process.pid) + (process.host.empty() ? "" : " on " + process.host);
  const std::time_t t = static_cast<std::time_t>(since_unix_s);
  std::tm tm{};
  char when[32];
  if (since_unix_s > 0 && localtime_r(&t, &tm) && std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm))
    s += std::string(", holding the limits since ") + when;
  if (!process.start_ticks.empty()) s += " (process start " + process.start_ticks + " ticks after boot)";
  return s;
}

std::string power_hold_path(const std::string& journal_path) { return journal_path + ".lock"; }

std::unique_ptr<PowerLimitHold> PowerLimitHold::take(const std::string& journal_path, std::string& holder) {
  const std::string path = power_hold_path(journal_path);
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  // Never through a link (the default folder, /var/tmp, is everyone's: a link there could name any file).
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  struct stat st {};
  // Written only when it is this user's own plain file with one name: never another file through a hard link.
  const bool writable = fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
                        st.st_uid == ::geteuid();
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);  // another user's: flock works read-only
  if (fd < 0)
    throw InputError(path + ": cannot open the power-limit lock: " + std::strerror(errno),
                     "set BALERBENCH_POWER_JOURNAL to a file in a folder this user can write");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error != EWOULDBLOCK)
      throw InputError(path + ": cannot lock the power-limit lock: " + std::strerror(error),
                       "set BALERBENCH_POWER_JOURNAL to a file on a local disk");
    std::optional<LimitHolder> h = holder_in(path);
    if (!h) h = holder_in(journal_path);
    holder = h ? h->describe() : "its lock file " + path + " does not say which";
    return nullptr;
  }
  if (writable) {  // who holds it, for a run that finds it taken
    const std::string text = LimitHolder::self().to_json().dump() + "\n";
    const bool written =
        ::ftruncate(fd, 0) == 0 && ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
    (void)written;  // a full disk: the hold still holds, and a run that finds it taken only says it is
  }
  return std::unique_ptr<PowerLimitHold>(new PowerLimitHold(fd));
}

PowerLimitHold::~PowerLimitHold() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor gives the flock back
}

}  // namespace balerbench
