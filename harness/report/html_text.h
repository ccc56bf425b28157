// html_text.h: text made safe for an HTML page: escaped for elements and attributes, and JSON that
// can sit inside a <script> element.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace balerbench::report {

// & < > " ' as character references: safe in element text and in quoted attribute values.
std::string html_escape(const std::string& text);
// `j` as JSON text with every '<' written \u003c, so that no "</script>" or "<!--" can end or change
// the <script> element holding it; JSON.parse reads the same value.
std::string json_for_script(const nlohmann::json& j);
// A name as an HTML id: letters, digits, '-' and '_' kept, anything else '_'.
std::string html_id(const std::string& name);

}  // namespace balerbench::report
