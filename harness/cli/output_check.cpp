// output_check.cpp: see output_check.h.
#include "harness/cli/output_check.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/error.h"
#include "common/paths.h"

namespace balerbench::cli {
namespace {

struct sigaction g_inherited_sigxfsz {};
bool g_sigxfsz_saved = false;
bool g_stdout_failure_reported = false;  // by write_stdout: close_stdout does not say it twice

// `error`: the errno of the failed write, 0 when its cause was not kept (see close_stdout). A pipe whose
// reader ended (`| head`: EPIPE, SIGPIPE ignored during a sweep) is no full disk: said as what it is.
[[noreturn]] void throw_stdout_error(int error) {
  if (error == EPIPE)
    throw WriteError("could not write the output to stdout: its reader closed the pipe (" +
                         std::string(std::strerror(EPIPE)) + ")",
                     "read the whole output, or send it to a file");
  throw WriteError(std::string("could not write the output to stdout: ") +
                   (error ? std::strerror(error) : "a write to it failed"));
}

}  // namespace

void ignore_file_size_signal() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  g_sigxfsz_saved = sigaction(SIGXFSZ, &ignore, &g_inherited_sigxfsz) == 0;
}

void restore_file_size_signal() {
  if (g_sigxfsz_saved) sigaction(SIGXFSZ, &g_inherited_sigxfsz, nullptr);
}

void write_stdout(const std::string& text) {
  errno = 0;
  bool failed = std::fwrite(text.data(), 1, text.size(), stdout) != text.size();
  if (!failed) {
    errno = 0;
    failed = std::fflush(stdout) != 0;
  }
  if (!failed) return;
  g_stdout_failure_reported = true;
  throw_stdout_error(errno);
}

void close_stdout() {
  std::cout.flush();
  const bool cout_failed = !std::cout;
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  int error = flush_failed ? errno : 0;
  // glibc keeps in the buffer what a failed write could not write, so the flush above retries it
  // and sets errno; after a failed explicit flush (std::endl) the buffer is dropped, and with it
  // the cause: the error flag is all that is left.
  const bool earlier_failure = std::ferror(stdout) != 0;
  if (!error && earlier_failure && output_reader_gone(STDOUT_FILENO)) error = EPIPE;  // before the close, its cause
  errno = 0;
  const bool close_failed = std::fclose(stdout) != 0;
  if (!error && close_failed) error = errno;
  if ((cout_failed || flush_failed || earlier_failure || close_failed) && !g_stdout_failure_reported)
    throw_stdout_error(error);
}

namespace {

// Only a regular file is opened: opening a FIFO to read would wait for a writer that never comes.
bool is_sqlite_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  return in && in.read(head, sizeof head) && std::memcmp(head, "SQLite format 3", 16) == 0;
}

}  // namespace

void check_not_over_a_database(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  const std::string hint = "choose another file name (remove the database yourself if it is no longer wanted)";
  if (is_sqlite_file(path))
    throw InputError(option + " " + path + ": is an SQLite database (a results database?): the output would replace it",
                     hint);
  for (const char* side : {"-wal", "-shm", "-journal"}) {
    const std::size_t n = std::strlen(side);
    if (path.size() > n && path.compare(path.size() - n, n, side) == 0 && is_sqlite_file(path.substr(0, path.size() - n)))
      throw InputError(option + " " + path + ": is the " + (side + 1) + " file of the SQLite database " +
                           path.substr(0, path.size() - n) + ": writing it would lose that database's latest trials",
                       hint);
  }
}

}  // namespace balerbench::cli
