// test_util.h: helpers shared by the test programs.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace balerbench {

// A fresh folder under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& root() const { return root_; }
  std::string path(const std::string& name) const { return root_ + "/" + name; }

 private:
  std::string root_;
};

void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);
// The file's lines (none when it does not exist), e.g. the fake NVML's set log.
std::vector<std::string> read_lines(const std::string& path);

// Runs `f`, expects an InputError whose message contains `fragment`.
void expect_input_error(const std::function<void()>& f, const std::string& fragment);

// Polls `condition` every 10 ms until it holds or `timeout_s` passes; true when it held. For a test
// that waits on a background thread (sampler reads, exporter sends): a deadline far beyond what a
// quiet machine needs, so that the test holds on a loaded one.
bool eventually(const std::function<bool()>& condition, double timeout_s = 30.0);

// A zip with one stored member holding `bytes` verbatim (for hostile inputs).
void write_raw_member_npz(const std::string& path, const std::string& member, const std::vector<uint8_t>& bytes);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};
// Runs a shell command line; captures output and exit code.
CommandResult run_command(const std::string& command_line);

// Paths baked in at build time.
std::string balerbench_binary();
std::string source_dir();
std::string shared_data_dir();
std::string python_binary();
// True when python_binary() exists and imports the given modules.
bool python_has(const std::string& modules);

// The real Baler (../shared/peers/baler, its package folder; never copied into the project) and the
// python3 that runs it: $BALERBENCH_BALER_PYTHON, else Debian's /usr/bin/python3, as balerbench reads
// Baler's configs with (harness/baler/python_process.h).
std::string baler_peer_dir();
std::string debian_python();
// "" when debian_python() exists and imports `modules`, else why not (for GTEST_SKIP).
std::string why_python_lacks(const std::string& modules);
// "" when the real Baler can run here, else why not: no peer folder, or Debian's python3 lacks one
// of torch, numpy, tqdm, sklearn, scipy, matplotlib (scripts/setup.sh installs them).
std::string why_baler_cannot_run();

}  // namespace balerbench
