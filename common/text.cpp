// text.cpp: see text.h.
#include "common/text.h"

#include <cstdio>

namespace balerbench {
namespace {

std::string code_point_text(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

bool is_bidi_control(uint32_t cp) {
  return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

// The escape a message writes for a hidden character: \n, \r, \t, \u0085, \u202E.
std::string escaped(uint32_t cp) {
  if (cp == '\n') return "\\n";
  if (cp == '\r') return "\\r";
  if (cp == '\t') return "\\t";
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(cp));
  return buf;
}

}  // namespace

Utf8Char utf8_at(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {lead, 1};
  const std::size_t n = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return {};
  uint32_t cp = lead & (0xFF >> (n + 1));
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  const uint32_t min_cp = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;  // no overlong forms
  if (cp < min_cp || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return {};
  return {cp, n};
}

bool is_hidden_character(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || is_bidi_control(cp) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x200B && cp <= 0x200D) || cp == 0x2060 || cp == 0xFEFF;
}

std::string hidden_character_problem(const std::string& name) {
  for (std::size_t i = 0; i < name.size();) {
    const Utf8Char c = utf8_at(name, i);
    const std::string at = " at byte " + std::to_string(i);
    if (c.length == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(name[i])));
      return std::string("is not valid UTF-8 (byte ") + buf + at + ")";
    }
    if (is_hidden_character(c.code_point)) {
      const std::string kind = is_bidi_control(c.code_point)                       ? "a bidirectional control"
                               : c.code_point == 0x2028 || c.code_point == 0x2029 ? "a line separator"
                               : c.code_point < 0x20 || (c.code_point >= 0x7F && c.code_point <= 0x9F)
                                   ? "a control character"
                                   : "an invisible character";
      return "holds " + kind + " (" + code_point_text(c.code_point) + ")" + at;
    }
    i += c.length;
  }
  return "";
}

std::string message_text(const std::string& text, std::size_t max_bytes) {
  std::string out;
  out.reserve(text.size() < max_bytes ? text.size() : max_bytes);
  std::size_t i = 0;
  while (i < text.size() && i < max_bytes) {
    const Utf8Char c = utf8_at(text, i);
    if (c.length == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[i])));
      out += buf;
      ++i;
      continue;
    }
    if (is_hidden_character(c.code_point)) out += escaped(c.code_point);
    else out.append(text, i, c.length);
    i += c.length;
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes in all)";
  return out;
}

std::string one_line(const std::string& text, std::size_t max_bytes) {
  std::string joined;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) joined += (joined.empty() ? "" : "; ") + line;
    begin = end + 1;
  }
  return message_text(joined, max_bytes);
}

std::string joined(const std::vector<std::string>& items, const std::string& separator, bool skip_empty) {
  std::string out;
  bool first = true;
  for (const std::string& item : items) {
    if (skip_empty && item.empty()) continue;
    out += (first ? "" : separator) + item;
    first = false;
  }
  return out;
}

std::string ms_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  return buf;
}

}  // namespace balerbench
