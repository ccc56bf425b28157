// atomic_file.cpp: see atomic_file.h.
#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/error.h"
#include "common/paths.h"

namespace balerbench {

namespace {

// Writes all of `bytes` to `fd`; 0, or the errno of the write that failed.
int write_all(int fd, const std::vector<uint8_t>& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

[[noreturn]] void throw_write_failure(const std::string& path, const std::string& what, int error) {
  const std::string message = path + ": " + what + ": " + std::strerror(error);
  if (error == ENOSPC || error == EFBIG || error == EDQUOT || error == EIO) throw WriteError(message);
  throw InputError(message, "check that the folder is writable");
}

AtomicWrite begin_atomic_write(const std::string& path) {
  namespace fs = std::filesystem;
  check_output_file(path);
  const fs::path target(output_target(path));  // a link's file is replaced, the link kept
  if (target.has_parent_path()) create_output_folder(target.parent_path().string(), "choose another output file");
  std::random_device rd;
  return {path, target.string(), target.string() + ".tmp" + std::to_string(::getpid()) + "_" + std::to_string(rd())};
}

void commit_atomic_write(const AtomicWrite& w) {
  std::error_code ec;
  std::filesystem::rename(w.temporary, w.target, ec);
  if (ec) {
    ::unlink(w.temporary.c_str());
    throw InputError(w.path + ": cannot rename the temporary file into place: " + ec.message(),
                     "choose another output file");
  }
}

void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  const AtomicWrite w = begin_atomic_write(path);
  const std::string& tmp = w.temporary;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) throw_write_failure(path, "cannot create a file in its folder", errno);
  const int write_error = write_all(fd, bytes);
  const int close_error = ::close(fd) == 0 ? 0 : errno;  // NFS and quotas may report only here
  if (write_error || close_error) {
    ::unlink(tmp.c_str());
    throw_write_failure(path, "write failed", write_error ? write_error : close_error);
  }
  commit_atomic_write(w);
}

}  // namespace balerbench
