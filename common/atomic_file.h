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

// The two names of an atomic write of `path`: `path` checked as an output file and its folder
// created, then `temporary` beside `target` (the file a link points to: the file is replaced, the
// link kept). The writer fills `temporary` and calls commit_atomic_write, or removes it on failure.
struct AtomicWrite {
  std::string path, target, temporary;
};
AtomicWrite begin_atomic_write(const std::string& path);
// Renames the temporary into place; on failure removes it and throws an InputError naming `path`.
void commit_atomic_write(const AtomicWrite& w);

}  // namespace balerbench
