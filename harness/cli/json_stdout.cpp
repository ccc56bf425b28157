// json_stdout.cpp: see json_stdout.h.
#include "harness/cli/json_stdout.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace balerbench::cli {

JsonStdout::JsonStdout(bool active) {
  if (!active) return;
  std::fflush(stdout);
  saved_fd_ = ::dup(STDOUT_FILENO);
  if (saved_fd_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

JsonStdout::~JsonStdout() { restore(); }

void JsonStdout::restore() {
  if (saved_fd_ < 0) return;
  std::fflush(stdout);
  ::dup2(saved_fd_, STDOUT_FILENO);
  ::close(saved_fd_);
  saved_fd_ = -1;
}

void JsonStdout::print(const nlohmann::json& document) {
  restore();
  const std::string text = document.dump(2);
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

}  // namespace balerbench::cli
