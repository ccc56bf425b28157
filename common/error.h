// error.h: the project's exceptions for bad input and setup problems (InputError)
// and for output that could not be written (WriteError). main() prints what()
// and exits with code 2 (InputError) or 4 (WriteError); every message says what
// failed, where (file, JSON path, row, column) and, when there is one, a hint.
#pragma once

#include <stdexcept>
#include <string>

namespace balerbench {

class InputError : public std::runtime_error {
 public:
  InputError(const std::string& what, const std::string& hint = "")
      : std::runtime_error(hint.empty() ? what : what + " (hint: " + hint + ")") {}
};

// What a full disk or a file-size limit needs from the user.
constexpr char kWriteErrorHint[] = "the disk may be full or a file-size limit reached";

// Output that could not be written once its file was open: a full disk, a file-size limit (EFBIG),
// an I/O error. Not the user's input (exit code 4, as for a trial the sweep could not store).
class WriteError : public std::runtime_error {
 public:
  explicit WriteError(const std::string& what, const std::string& hint = kWriteErrorHint)
      : std::runtime_error(hint.empty() ? what : what + " (hint: " + hint + ")") {}
};

}  // namespace balerbench
