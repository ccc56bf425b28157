// npz.h: NumPy .npz archives (numpy.savez / savez_compressed) through libzip.
// Members may be stored or deflated. Keys are member names without ".npy".
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "datasets/npy.h"

namespace balerbench {

using NpzMembers = std::map<std::string, NpyArray>;

// Reads every member. Errors (missing file, not a zip, truncated archive,
// corrupt member, header announcing more bytes than the member holds) throw
// InputError naming the file and member.
NpzMembers read_npz(const std::string& path);
// The same from an archive in memory (`where` names it in errors): what a fuzzer drives.
NpzMembers parse_npz(const uint8_t* bytes, std::size_t size, const std::string& where);

// Writes members in the given order; `deflate` = numpy.savez_compressed.
// Written to a temporary name and renamed, so a failure leaves nothing behind.
void write_npz(const std::string& path, const std::vector<std::pair<std::string, NpyArray>>& members,
               bool deflate = false);

}  // namespace balerbench
