// html_text.cpp: see html_text.h.
#include "harness/report/html_text.h"

#include <cctype>

namespace balerbench::report {

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_for_script(const nlohmann::json& j) {
  // Invalid UTF-8 in a stored text (an old database, a foreign file) is replaced, not thrown on.
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) out += c == '<' ? std::string("\\u003c") : std::string(1, c);  // '<' only occurs in strings
  return out;
}

std::string html_id(const std::string& name) {
  std::string out;
  for (unsigned char c : name) out += std::isalnum(c) || c == '-' || c == '_' ? static_cast<char>(c) : '_';
  return out;
}

}  // namespace balerbench::report
