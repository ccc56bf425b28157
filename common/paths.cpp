// paths.cpp: see paths.h.
#include "common/paths.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/error.h"
#include "common/text.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

// The deepest part of `dir` (itself included) that exists; empty when none does (a relative path
// whose first part is new: the working folder is then the one written into).
fs::path deepest_existing(const fs::path& dir) {
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (fs::symlink_status(p, ec).type() != fs::file_type::not_found) return p;
    if (p == p.parent_path()) break;  // the root
  }
  return {};
}

// Why `dir` cannot be written into or created (see check_output_folder), naming the part at fault
// unless it is `dir` itself and `dir` is the message's subject; "" when it can.
std::string folder_problem(const std::string& dir, bool dir_is_subject) {
  const fs::path target = dir.empty() ? fs::path(".") : fs::path(dir);
  fs::path existing = deepest_existing(target);
  if (existing.empty()) existing = ".";
  std::error_code ec;
  const fs::file_status status = fs::status(existing, ec);
  if (ec && ec.value() != ENOENT) return "cannot look at " + existing.string() + ": " + ec.message();
  if (!fs::is_directory(status))
    return existing == target && dir_is_subject ? "is not a folder" : existing.string() + " is not a folder";
  if (::access(existing.c_str(), W_OK | X_OK) != 0)
    return "cannot write into " + existing.string() + ": " + std::strerror(errno);
  return "";
}

}  // namespace

void check_input_file(const std::string& path, const std::string& what, const std::string& hint) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) throw InputError(path + ": " + what + " not found", hint);
  if (ec) throw InputError(path + ": cannot read the " + what + ": " + ec.message(), hint);
  if (fs::is_directory(status)) throw InputError(path + ": is a folder (" + what + " expected)", hint);
}

void check_output_folder(const std::string& dir, const std::string& hint) {
  if (dir.empty()) throw InputError("an empty folder name", hint);
  if (const std::string problem = folder_problem(dir, true); !problem.empty()) throw InputError(dir + ": " + problem, hint);
}

std::string output_target(const std::string& path) {
  fs::path p(path);
  for (int hops = 0; hops <= 40; ++hops) {  // as the kernel's own limit on links followed
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) return p.string();
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  throw InputError(path + ": is a link that leads to a link more than 40 times (a loop of links?)",
                   "point the link at a file, or give another path");
}

void check_output_file(const std::string& given, const std::string& hint) {
  if (given.empty()) throw InputError("an empty file name", hint);
  const std::string path = output_target(given);
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) throw InputError(given + ": is a folder, not a file", hint);
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw InputError(given + ": is not a regular file (a device, a pipe or a socket): an output is written beside "
                         "it and renamed into place, which would replace it",
                     "give the path of a regular file; to discard an output, leave the option out");
  const std::string parent = fs::path(path).parent_path().string();
  if (const std::string problem = folder_problem(parent.empty() ? "." : parent, false); !problem.empty())
    throw InputError(path + ": " + problem, hint);
}

std::string resolved_path(const std::string& path) {
  std::string target = path;
  try {
    target = output_target(path);
  } catch (const InputError&) {  // a loop of links: the link itself
  }
  std::error_code ec;
  const fs::path absolute = fs::absolute(target, ec);
  if (ec) return fs::path(target).lexically_normal().string();
  const fs::path canonical = fs::weakly_canonical(absolute, ec);
  return (ec ? absolute.lexically_normal() : canonical).string();
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec) && !ec) return true;
  return resolved_path(a) == resolved_path(b);
}

void check_output_is_not_input(const std::string& path, const std::string& option, const std::string& input,
                               const std::string& what, const std::string& hint) {
  if (path.empty() || input.empty() || !same_file(path, input)) return;
  throw InputError(option + " " + path + ": is " + what + " (" + input + "), which this command reads",
                   (hint.empty() ? "give " + option + " another file" : hint) +
                       ": an output is never written over an input");
}

void create_output_folder(const std::string& dir, const std::string& hint) {
  if (dir.empty()) return;
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return;
  check_output_folder(dir, hint);  // the clear reasons first: a part that is a file, no permission
  fs::create_directories(dir, ec);
  if (ec) throw InputError(dir + ": cannot create the folder: " + ec.message(), hint);
}

namespace {

// The length of the well-formed UTF-8 sequence of a printable character (U+00A0 and above, none of
// text.h's hidden characters: no bidirectional control or line separator) at name[i], or 0.
std::size_t printable_utf8_at(const std::string& name, std::size_t i) {
  const Utf8Char c = utf8_at(name, i);
  if (c.length < 2 || c.code_point < 0xA0 || is_hidden_character(c.code_point)) return 0;
  return c.length;
}

}  // namespace

std::string safe_file_name(const std::string& name) {
  std::string out;
  out.reserve(name.size() + 1);
  for (std::size_t i = 0; i < name.size();) {
    const char c = name[i];
    const bool kept = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '+' || c == '-';
    if (kept) {
      out += c;
      ++i;
    } else if (const std::size_t n = printable_utf8_at(name, i)) {  // "été" stays "été"
      out.append(name, i, n);
      i += n;
    } else {
      out += '_';
      ++i;
    }
  }
  if (out.empty() || out.front() == '.') out.insert(out.begin(), '_');  // also "." and ".."
  return out;
}

bool output_reader_gone(int fd) {
  pollfd p{fd, POLLOUT, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;  // Linux: a pipe with no reader left
}

}  // namespace balerbench
