// test_util.cpp: see test_util.h.
#include "tests/test_util.h"

#include <cstdlib>

#include <zip.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <sys/wait.h>

#include "common/error.h"

namespace balerbench {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  root_ = (fs::temp_directory_path() / ("balerbench_test_" + std::to_string(rd()) + std::to_string(rd()))).string();
  fs::create_directories(root_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void expect_input_error(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an InputError containing '" << fragment << "'";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << "message: " << e.what();
  }
}

bool eventually(const std::function<bool()>& condition, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    // A real wait: what it waits on (an exporter's thread sending over HTTP, another process holding
    // a database) runs on the machine's time, which no fake clock drives.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

void write_raw_member_npz(const std::string& path, const std::string& member, const std::vector<uint8_t>& bytes) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
  const zip_int64_t idx = zip_file_add(z, member.c_str(), src, ZIP_FL_OVERWRITE);
  zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0);
  ASSERT_EQ(zip_close(z), 0);
}

CommandResult run_command(const std::string& command_line) {
  CommandResult r;
  FILE* pipe = ::popen((command_line + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string balerbench_binary() { return BALERBENCH_BIN; }
std::string source_dir() { return BALERBENCH_SOURCE_DIR; }
std::string shared_data_dir() { return BALERBENCH_SOURCE_DIR "/../shared/data"; }
std::string python_binary() { return BALERBENCH_PYTHON; }

bool python_has(const std::string& modules) {
  if (!fs::exists(python_binary())) return false;
  return run_command(python_binary() + " -c 'import " + modules + "'").exit_code == 0;
}

// BALERBENCH_BALER_PEER points elsewhere (scripts/gpu_check.sh interop, where ../shared is not beside
// the checkout).
std::string baler_peer_dir() {
  const char* env = std::getenv("BALERBENCH_BALER_PEER");
  return env && *env ? env : BALERBENCH_SOURCE_DIR "/../shared/peers/baler";
}

std::string debian_python() {
  const char* env = std::getenv("BALERBENCH_BALER_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

std::string why_python_lacks(const std::string& modules) {
  if (!fs::exists(debian_python())) return debian_python() + " not found (Debian's python3)";
  std::string missing;
  std::string list = modules + ",";
  for (std::size_t at = 0, comma; (comma = list.find(',', at)) != std::string::npos; at = comma + 1) {
    std::string m = list.substr(at, comma - at);
    m.erase(0, m.find_first_not_of(' '));
    if (!m.empty() && run_command(debian_python() + " -c 'import " + m + "' 2>/dev/null").exit_code != 0)
      missing += (missing.empty() ? "" : ", ") + m;
  }
  return missing.empty() ? "" : debian_python() + " cannot import " + missing + " (scripts/setup.sh installs them)";
}

std::string why_baler_cannot_run() {
  static const std::string why = [] {
    if (!fs::exists(baler_peer_dir() + "/baler/__init__.py"))
      return "the real Baler is not at " + baler_peer_dir() + " (../shared/peers/baler)";
    if (std::string lacks = why_python_lacks("torch, numpy, tqdm, sklearn, scipy, matplotlib"); !lacks.empty())
      return lacks;
    // Baler's utils.LRScheduler passes verbose= to ReduceLROnPlateau, which newer PyTorch no longer
    // takes (2.11 on the GPU machine: "unexpected keyword argument 'verbose'", Baler's train exits 1).
    // The tests' projects use Baler's scheduler, so Baler cannot train them there.
    const auto r = run_command(debian_python() +
                               " -c 'import inspect, torch; print(torch.__version__, \"verbose\" in "
                               "inspect.signature(torch.optim.lr_scheduler.ReduceLROnPlateau.__init__).parameters)' "
                               "2>&1");
    if (r.exit_code == 0 && r.out.find("False") != std::string::npos)
      return "the real Baler cannot train with lr_scheduler on this PyTorch (" + r.out.substr(0, r.out.find(' ')) +
             "): its LRScheduler passes verbose= to ReduceLROnPlateau, which this PyTorch no longer takes";
    return std::string();
  }();
  return why;
}

}  // namespace balerbench
