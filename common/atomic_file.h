// atomic_file.h: writing a file so that a reader never sees half of it: to a temporary name in
// the same folder, every write and the close checked, then renamed into place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace balerbench {

// Writes `bytes` to `path` atomically (temporary file in the same folder, then rename), creating the
// folder. Every write and the close are checked; on any failure the temporary is removed. A path that
// cannot be written (a folder, a part that is a file, no permission) is an InputError; a write that
// fails (a full disk, a file-size limit, an I/O error) a WriteError.
void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes);
// The error for `path` after `what` failed with `error` (an errno): WriteError for a full disk, a
// file-size limit or an I/O error, InputError otherwise.
[[noreturn]] void throw_write_failure(const std::string& path, const std::string& what, int error);

}  // namespace balerbench
