// option_checks.h: range checks for command-line numbers whose errors read well. CLI11's
// PositiveNumber and NonNegativeNumber print their range with the largest double written out in
// full ("not in range 0.000000 to 1797693134862315708...", 309 digits).
#pragma once

#include <CLI/CLI.hpp>

#include <sstream>
#include <string>

namespace balerbench::cli {

// A number >= min_value: "--rows: must be at least 1 (got 0)". `name` is shown in --help (INT:POSITIVE).
inline CLI::Validator at_least(double min_value, const std::string& name) {
  std::ostringstream shown;
  shown << min_value;
  return CLI::Validator(
      [min_value, bound = shown.str()](std::string& text) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(text, x)) return "'" + text + "' is not a number";
        return x >= min_value ? "" : "must be at least " + bound + " (got " + text + ")";
      },
      name);
}

// Counts: rows, features, batch sizes.
inline CLI::Validator positive_count() { return at_least(1, "POSITIVE"); }
// Durations and the like.
inline CLI::Validator non_negative() { return at_least(0, "NONNEGATIVE"); }

}  // namespace balerbench::cli
