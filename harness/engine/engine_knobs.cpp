// engine_knobs.cpp: see engine_knobs.h.
#include "harness/engine/engine_knobs.h"

#include <stdexcept>

namespace balerbench {

const nlohmann::json& EngineKnobs::at(const std::string& key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) throw std::logic_error("no registered engine has the knob '" + key + "'");
  return *it;
}

std::string EngineKnobs::describe() const {
  std::string s;
  for (auto it = values_.begin(); it != values_.end(); ++it)
    s += (s.empty() ? "" : " ") + it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  return s;
}

}  // namespace balerbench
