// json_stdout.h: `--json` keeps stdout for exactly one JSON document. While a
// command with --json runs, everything written to stdout (progress and epoch
// lines, summaries, any library's messages) goes to stderr at the file
// descriptor level; print() restores stdout and writes the document.
#pragma once

#include <nlohmann/json.hpp>

namespace balerbench::cli {

class JsonStdout {
 public:
  explicit JsonStdout(bool active);  // inactive: does nothing
  ~JsonStdout();                     // restores stdout (also when the command throws)
  JsonStdout(const JsonStdout&) = delete;
  JsonStdout& operator=(const JsonStdout&) = delete;

  void print(const nlohmann::json& document);  // restores stdout, then writes `document` and a newline

 private:
  void restore();
  int saved_fd_ = -1;
};

}  // namespace balerbench::cli
