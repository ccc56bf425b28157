// proc_text.h: the "key<TAB>: value" lines of /proc/cpuinfo and friends, split once for every reader.
#pragma once

#include <sstream>
#include <string>
#include <vector>

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

// The fields of a /proc/PID/stat line after the command name, which may hold spaces and
// parentheses (so they are counted from the last ')'): fields[k - 3] is field k of proc(5), e.g.
// fields[1] the parent pid (4), fields[11] and [12] utime and stime (14, 15), fields[19] starttime (22).
// Empty for a line with no ')'.
inline std::vector<std::string> proc_stat_fields(const std::string& line) {
  std::vector<std::string> out;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream in(line.substr(close + 1));
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

}  // namespace balerbench
