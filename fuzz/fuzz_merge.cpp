// fuzz_merge.cpp: the merge of a foreign results database (`balerbench merge`). The input is the
// foreign file's bytes. Opening it (and migrating an older schema) either works or is an InputError;
// merging it into a fresh database either copies its trials or is an InputError that leaves the
// fresh one as it was; and whatever was copied reads back, trial for trial. Found so far: damaged
// pages escaped as internal errors; a damaged index was merged without a word.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "common/error.h"
#include "harness/store/store.h"

namespace fs = std::filesystem;

namespace {

const fs::path& dir() {
  static const fs::path d = fs::temp_directory_path() / ("fuzz_merge." + std::to_string(::getpid()));
  return d;
}

// A fresh results database, made once and copied for each input (creating the schema costs more than
// the merge of most inputs).
const fs::path& empty_store() {
  static const fs::path p = [] {
    const fs::path t = fs::temp_directory_path() / ("fuzz_merge_empty." + std::to_string(::getpid()) + ".sqlite");
    fs::remove(t);
    { balerbench::Store s(t.string()); }  // closing checkpoints the WAL into the file
    return t;
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::error_code ec;
  fs::remove_all(dir(), ec);
  fs::create_directories(dir());
  const std::string foreign = (dir() / "shard.sqlite").string();
  const std::string merged = (dir() / "merged.sqlite").string();
  std::ofstream(foreign, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  fs::copy_file(empty_store(), merged);
  balerbench::Store dst(merged);
  try {
    const balerbench::Store src(foreign, balerbench::StoreAccess::kReadOnly);
    try {
      const auto [copied, duplicates] = dst.merge_from(src);
      // Into an empty database every trial row is copied, or counted as a duplicate of a key copied
      // before (a file whose unique index is damaged can hold two rows under one key). The rows are
      // counted from the table, not from trial_keys(): that query reads the index, the merge the table.
      std::set<std::string> keys;
      const auto rows = src.trials("", false);
      for (const auto& t : rows) keys.insert(t.key);
      if (static_cast<std::size_t>(copied) != keys.size() ||
          static_cast<std::size_t>(copied + duplicates) != rows.size())
        __builtin_trap();
      if (dst.trials("", true).size() != static_cast<std::size_t>(copied)) __builtin_trap();
    } catch (const balerbench::InputError&) {
      if (!dst.trial_keys().empty()) __builtin_trap();  // a refused merge copied something
    }
  } catch (const balerbench::InputError&) {
  }
  return 0;
}
