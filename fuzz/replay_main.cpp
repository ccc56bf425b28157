// replay_main.cpp: every fuzz target's checks on its hand-written inputs, in the normal build
// (tests/CMakeLists.txt: the ctest tests FuzzCorpus.<target>), so that a parser or renderer whose
// output changes under a target's check fails the test suite, not first CI's fuzzing stage.
// Each target's source is compiled in with its LLVMFuzzerTestOneInput renamed to <target>_one.
//
//   fuzz_replay TARGET [FILE_OR_FOLDER...]   the empty input, then each file (a folder's files, sorted)
//
// A check that fails traps (the targets' own __builtin_trap), as under libFuzzer. The targets that
// write temporary files do so under a folder made here (in $TMPDIR, else /tmp), removed at the end of
// a run that passes; a trap leaves it, with the input that trapped, for a look.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;

extern "C" {
int fuzz_npy_one(const uint8_t*, size_t);
int fuzz_npz_one(const uint8_t*, size_t);
int fuzz_run_config_one(const uint8_t*, size_t);
int fuzz_experiment_one(const uint8_t*, size_t);
int fuzz_wattmeter_one(const uint8_t*, size_t);
#ifdef BALERBENCH_REPLAY_POWERCAP
int fuzz_powercap_one(const uint8_t*, size_t);  // where clang's FuzzedDataProvider.h is found
#endif
int fuzz_merge_one(const uint8_t*, size_t);
int fuzz_zeus_trace_one(const uint8_t*, size_t);
int fuzz_report_text_one(const uint8_t*, size_t);
}

namespace {

using Target = int (*)(const uint8_t*, size_t);

const std::map<std::string, Target>& targets() {
  static const std::map<std::string, Target> t = {
      {"fuzz_npy", fuzz_npy_one},           {"fuzz_npz", fuzz_npz_one},
      {"fuzz_run_config", fuzz_run_config_one}, {"fuzz_experiment", fuzz_experiment_one},
      {"fuzz_wattmeter", fuzz_wattmeter_one},
#ifdef BALERBENCH_REPLAY_POWERCAP
      {"fuzz_powercap", fuzz_powercap_one},
#endif
      {"fuzz_merge", fuzz_merge_one},       {"fuzz_zeus_trace", fuzz_zeus_trace_one},
      {"fuzz_report_text", fuzz_report_text_one}};
  return t;
}

std::vector<fs::path> inputs(const std::vector<std::string>& args) {
  std::vector<fs::path> files;
  for (const auto& a : args) {
    if (fs::is_directory(a)) {
      std::vector<fs::path> in;
      for (const auto& e : fs::directory_iterator(a))
        if (e.is_regular_file()) in.push_back(e.path());
      std::sort(in.begin(), in.end());
      files.insert(files.end(), in.begin(), in.end());
    } else if (fs::is_regular_file(a)) {
      files.emplace_back(a);
    } else {
      std::fprintf(stderr, "fuzz_replay: %s is neither a file nor a folder\n", a.c_str());
      std::exit(2);
    }
  }
  return files;
}

int replay(Target target, const std::vector<fs::path>& files) {
  target(nullptr, 0);  // libFuzzer's first input
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::printf("%s (%zu bytes)\n", f.string().c_str(), bytes.size());
    std::fflush(stdout);  // the last name printed is the input a trap stopped at
    target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("fuzz_replay: %zu input(s) and the empty one passed the checks\n", files.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto it = argc > 1 ? targets().find(argv[1]) : targets().end();
  if (it == targets().end()) {
    std::fprintf(stderr, "usage: fuzz_replay TARGET [FILE_OR_FOLDER...]; targets:");
    for (const auto& [name, fn] : targets()) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  const std::vector<fs::path> files = inputs(std::vector<std::string>(argv + 2, argv + argc));
  const char* parent = std::getenv("TMPDIR");
  std::string pattern = std::string(parent && *parent ? parent : "/tmp") + "/fuzz_replay.XXXXXX";
  const char* tmp = ::mkdtemp(pattern.data());
  if (tmp == nullptr) return 2;
  ::setenv("TMPDIR", tmp, 1);  // std::filesystem::temp_directory_path() reads it
  const int rc = replay(it->second, files);
  std::error_code ignored;
  fs::remove_all(tmp, ignored);
  return rc;
}
