// edit_distance.cpp: see edit_distance.h.
#include "harness/base/edit_distance.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <vector>

namespace balerbench {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // d[i][j]: the distance between a's first i bytes and b's first j, kept as three rows.
  const std::size_t n = b.size();
  std::vector<std::size_t> before(n + 1), last(n + 1), row(n + 1);
  for (std::size_t j = 0; j <= n; ++j) last[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= n; ++j) {
      const std::size_t substitute = last[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({last[j] + 1, row[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
    }
    before.swap(last);
    last.swap(row);
  }
  return last[n];
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// How close `word` is to `name` (both in lower case): 0 for the same, a small number for a likely
// misspelling, nullopt for unrelated.
std::optional<std::size_t> nearness(const std::string& word, const std::string& name) {
  if (word == name) return 0;
  const std::string& shorter = word.size() < name.size() ? word : name;
  const std::string& longer = word.size() < name.size() ? name : word;
  const std::size_t d = edit_distance(word, name);
  if (shorter.size() >= 3 && longer.compare(0, shorter.size(), shorter) == 0) return d;
  if (d <= (word.size() < 6 ? 1u : 2u)) return d;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> closest_name(const std::string& word, const std::set<std::string>& known) {
  const std::string w = lower(word);
  std::optional<std::string> best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const std::string& name : known) {
    if (name == word) continue;
    const std::optional<std::size_t> d = nearness(w, lower(name));
    if (d && *d < best_d) {
      best = name;
      best_d = *d;
    }
  }
  return best;
}

}  // namespace balerbench
