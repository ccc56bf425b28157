// proc_text.h: the "key<TAB>: value" lines of /proc/cpuinfo and friends, split once for every reader
// (the other files of /proc are read by proc_fs.h).
#pragma once

#include <string>

namespace balerbench {

// Splits "model name\t: AMD EPYC" into {"model name", "AMD EPYC"}; false for a line with no colon.
inline bool split_proc_line(const std::string& line, std::string& key, std::string& value) {
  const auto colon = line.find(':');
  if (colon == std::string::npos) return false;
  key = line.substr(0, colon);
  while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
  value = colon + 1 < line.size() ? line.substr(colon + 1) : "";
  if (!value.empty() && value[0] == ' ') value.erase(0, 1);
  return true;
}

}  // namespace balerbench
