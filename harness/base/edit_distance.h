// edit_distance.h: how far apart two short names are, for "did you mean" in errors about a misspelt
// key. Written here because none of the libraries the project links (LibTorch, nlohmann/json, CLI11)
// offers one in its public API.
#pragma once

#include <optional>
#include <set>
#include <string>

namespace balerbench {

// The optimal string alignment distance between `a` and `b`, byte by byte: the fewest insertions,
// deletions, substitutions and swaps of two neighbouring bytes that turn one into the other
// ("epoch" -> "epochs": 1, "epohcs" -> "epochs": 1, "batchsize" -> "batch_size": 1).
std::size_t edit_distance(const std::string& a, const std::string& b);

// The name in `known` that `word` is most likely a misspelling of, or nullopt when none is close: the
// same letters in another case, one a prefix of the other (the shorter at least 3 bytes), or an edit
// distance, ignoring case, of at most 1 for words under 6 bytes and at most 2 for longer ones. Among
// several, the nearest; on a tie, the first in `known`'s order. `word` itself is never suggested.
std::optional<std::string> closest_name(const std::string& word, const std::set<std::string>& known);

}  // namespace balerbench
