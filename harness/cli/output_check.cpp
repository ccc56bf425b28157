// output_check.cpp: see output_check.h.
#include "harness/cli/output_check.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
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

}  // namespace balerbench::cli
