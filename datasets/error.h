// error.h: the project's exception for bad input and setup problems.
// main() prints what() and exits with code 2; every message says what failed,
// where (file, JSON path, row, column) and, when there is one, a hint.
#pragma once

#include <stdexcept>
#include <string>

namespace balerbench {

class InputError : public std::runtime_error {
 public:
  InputError(const std::string& what, const std::string& hint = "")
      : std::runtime_error(hint.empty() ? what : what + " (hint: " + hint + ")") {}
};

}  // namespace balerbench
