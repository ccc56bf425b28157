// text.h: text from users and files (names, --set values, a file's bytes) as messages and names show
// it. A message is one line: a newline inside an echoed value would start a line that reads as the
// program's own, a bidirectional control (U+202E) reorders what follows it on the terminal, and bytes
// that are not UTF-8 (a Latin-1 or UTF-16 file) print as garbage. Names (experiments, labels) refuse
// such characters outright: they end up in file names, tables and pages where they would spoof.
#pragma once

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace balerbench {

// The well-formed UTF-8 sequence at s[i]: its code point and length; length 0 when the bytes there
// are not well-formed UTF-8 (a stray continuation byte, an overlong form, a surrogate, beyond
// U+10FFFF, a sequence cut short).
struct Utf8Char {
  uint32_t code_point = 0;
  std::size_t length = 0;
};
Utf8Char utf8_at(const std::string& s, std::size_t i);

// A character that changes how the text around it is shown, or is not seen at all: the C0 and C1
// controls and DEL, the bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069), the line and paragraph separators (U+2028, U+2029), the zero-width characters
// (U+200B-U+200D, U+2060) and the byte-order mark (U+FEFF).
bool is_hidden_character(uint32_t code_point);

// Why `name` cannot be a name: "" when it can; otherwise what it holds and where, e.g. "holds a
// bidirectional control (U+202E) at byte 3", "holds a control character (U+000A) at byte 0", "is not
// valid UTF-8 (byte 0xE9 at byte 4)".
std::string hidden_character_problem(const std::string& name);

// `text` as part of a one-line message: hidden characters written as escapes (\n, \r, \t, \u202E),
// bytes that are not UTF-8 as \xE9, and everything after `max_bytes` bytes of the original replaced by
// "... (N bytes in all)". Printable text, non-ASCII letters included, is kept as it is.
std::string message_text(const std::string& text, std::size_t max_bytes = 200);

// A report of several lines (SQLite's quick_check, a tool's output) as one line: its non-empty lines
// joined by "; ", then as message_text shows it.
std::string one_line(const std::string& text, std::size_t max_bytes = 400);

// `items` with `separator` between them: "a, b, c"; with skip_empty, the empty items left out.
std::string joined(const std::vector<std::string>& items, const std::string& separator = ", ", bool skip_empty = false);

// Seconds as milliseconds to 3 significant digits: "1.23 ms".
std::string ms_text(double seconds);

// "8, 16, 32", each with `unit` after it ("250 W, 200 W"), or "none": each value as an ostream writes
// it by default (0.6, 250, 1e-05; a whole number in full).
template <typename T>
std::string list_text(const T& values, const char* unit = "") {
  std::string s;
  for (const auto& v : values) {
    std::ostringstream one;
    one << v;
    s += (s.empty() ? "" : ", ") + one.str() + unit;
  }
  return s.empty() ? "none" : s;
}

}  // namespace balerbench
