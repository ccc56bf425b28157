// option_checks.h: range checks for command-line numbers whose errors read well. CLI11's
// PositiveNumber and NonNegativeNumber print their range with the largest double written out in
// full ("not in range 0.000000 to 1797693134862315708...", 309 digits).
#pragma once

#include <CLI/CLI.hpp>

#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>

#include "common/text.h"

namespace balerbench::cli {

// The value typed, as an error echoes it: on one line, a long one cut short.
inline std::string typed(const std::string& text) { return message_text(text, 40); }

// A finite number >= min_value: "--rows: must be at least 1 (got 0)"; NaN and infinity are refused.
// `name` is shown in --help (INT:POSITIVE).
inline CLI::Validator at_least(double min_value, const std::string& name) {
  std::ostringstream shown;
  shown << min_value;
  return CLI::Validator(
      [min_value, bound = shown.str()](std::string& text) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(text, x)) return "'" + typed(text) + "' is not a number";
        if (!std::isfinite(x)) return "must be a finite number (got " + typed(text) + ")";
        return x >= min_value ? "" : "must be at least " + bound + " (got " + typed(text) + ")";
      },
      name);
}

// A number in [min_value, max_value]: "must be at least 1 (got 0)", "must be at most 65536 (got 1e6)";
// NaN is refused (CLI::Range lets it through), and so is any CLI::Range on a double: use this instead.
inline CLI::Validator in_range(double min_value, double max_value, const std::string& name) {
  std::ostringstream low, high;
  low << min_value;
  high << max_value;
  return CLI::Validator(
      [min_value, max_value, low = low.str(), high = high.str()](std::string& text) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(text, x)) return "'" + typed(text) + "' is not a number";
        if (std::isnan(x)) return "must be a number (got " + typed(text) + ")";
        if (x < min_value) return "must be at least " + low + " (got " + typed(text) + ")";
        return x <= max_value ? "" : "must be at most " + high + " (got " + typed(text) + ")";
      },
      name);
}

// A finite number (a clock offset, ...): NaN and infinities are refused.
inline CLI::Validator finite_number() { return in_range(-1.7e308, 1.7e308, "FINITE"); }

// Counts: rows, features, batch sizes.
inline CLI::Validator positive_count() { return at_least(1, "POSITIVE"); }
// Durations and the like.
inline CLI::Validator non_negative() { return at_least(0, "NONNEGATIVE"); }

// A size in bytes, written "5e12", "10TB", "2.5 PiB" or "800 GB" (decimal kB..EB, binary KiB..EiB,
// any case; B alone or nothing: bytes), rewritten to its number of bytes; refused unless finite and > 0.
// Give it with ->transform (a ->check's rewrite is not kept).
inline CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::size_t used = 0;
        double x = 0;
        const std::size_t first = text.find_first_not_of(' ');
        if (first != std::string::npos && text[first] == '-') return "must be a finite size above 0 (got " + typed(text) + ")";
        // Decimal only: std::stod would read "0x10" as 16 and "inf" as infinity.
        if (first == std::string::npos || !(std::isdigit(static_cast<unsigned char>(text[first])) || text[first] == '.') ||
            text.find_first_of("xX,") != std::string::npos)
          return "'" + typed(text) + "' is not a size: a decimal number and a unit (e.g. 5e12, 10TB, 2.5PiB)";
        try {
          x = std::stod(text, &used);
        } catch (const std::out_of_range&) {
          return "must be at most 1e24 bytes, a yottabyte (got " + typed(text) + ")";
        } catch (const std::exception&) {
          return "'" + typed(text) + "' is not a size (e.g. 5e12, 10TB, 2.5PiB)";
        }
        std::string unit;
        for (std::size_t i = used; i < text.size(); ++i)
          if (text[i] != ' ') unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
        static const char* kPrefixes = "kmgtpe";
        double factor = 1;
        // "5e": 5 EB, or 5e12 cut short? Neither is guessed.
        if (unit == "e") return "'" + typed(text) + "': a unit or an exponent? (write 5EB for exabytes, 5e18 for a number)";
        if (!unit.empty() && unit != "b") {
          const char* at = std::strchr(kPrefixes, unit[0]);
          const std::string rest = unit.substr(1);
          if (!at || !(rest == "b" || rest == "ib" || rest.empty()))
            return "'" + typed(text) + "': unknown unit '" + typed(unit) + "' (B, kB, MB, GB, TB, PB, EB, or KiB..EiB)";
          factor = std::pow(rest == "ib" ? 1024.0 : 1000.0, static_cast<double>(at - kPrefixes + 1));
        }
        if (!std::isfinite(x * factor) || x <= 0) return "must be a finite size above 0 (got " + typed(text) + ")";
        if (x * factor < 1) return "must be at least 1 byte (got " + typed(text) + ")";
        if (x * factor > 1e24) return "must be at most 1e24 bytes, a yottabyte (got " + typed(text) + ")";
        std::ostringstream bytes;
        bytes.precision(17);
        bytes << x * factor;
        text = bytes.str();
        return "";
      },
      "SIZE");
}

// A path that must not be empty: `--db ''` (an unset shell variable) would otherwise mean SQLite's
// temporary database, thrown away at exit, and `--out ''` the working folder. Nor may it start with
// '-': CLI11 takes a "--" after an option that wants a value as that value.
inline CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty()) return "an empty path (an unset shell variable?): give a file or folder name";
        // "--" or an option, taken as this option's value ("measure --json -- CMD" wrote a file named "--").
        if (text[0] == '-')
          return "'" + text + "' reads as an option, not a path: give the file name first (a name that starts with "
                 "'-' as ./" + text + ")";
        return "";
      },
      "PATH");
}

}  // namespace balerbench::cli
