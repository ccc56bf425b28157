// fuzz_merge.cpp: the merge of a foreign results database (`balerbench merge`). The input is the
// foreign file's bytes. Opening it (and migrating an older schema) either works or is an InputError;
// merging it into a fresh database either copies its trials or is an InputError that leaves the
// fresh one as it was; and whatever was copied reads back, trial for trial.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "datasets/error.h"
#include "harness/store/store.h"

namespace fs = std::filesystem;

namespace {

const fs::path& dir() {
  static const fs::path d = fs::temp_directory_path() / ("fuzz_merge." + std::to_string(::getpid()));
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::error_code ec;
  fs::remove_all(dir(), ec);
  fs::create_directories(dir());
  const std::string foreign = (dir() / "shard.sqlite").string();
  const std::string merged = (dir() / "merged.sqlite").string();
  std::ofstream(foreign, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  balerbench::Store dst(merged);
  try {
    const balerbench::Store src(foreign, false);
    const std::size_t keys = src.trial_keys().size();
    try {
      const auto [copied, duplicates] = dst.merge_from(src);
      if (duplicates != 0 || static_cast<std::size_t>(copied) != keys) __builtin_trap();  // into an empty one
      if (dst.trials("", true).size() != static_cast<std::size_t>(copied)) __builtin_trap();
    } catch (const balerbench::InputError&) {
      if (!dst.trial_keys().empty()) __builtin_trap();  // a refused merge copied something
    }
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
