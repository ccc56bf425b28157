// knobs.cpp: see knobs.h.
#include "harness/base/knobs.h"

#include <stdexcept>

namespace balerbench {

const nlohmann::json& Knobs::at(const std::string& key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) throw std::logic_error("no registered section has the knob '" + key + "'");
  return *it;
}

std::string Knobs::describe() const {
  std::string s;
  for (auto it = values_.begin(); it != values_.end(); ++it)
    s += (s.empty() ? "" : " ") + it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  return s;
}

void read_optional_number_in(StrictReader& r, Knobs& knobs, const std::string& key, double min_value,
                             double max_value) {
  std::optional<double> value = knobs.optional_number(key);
  r.optional_number_in(key, value, min_value, max_value);
  knobs.set(key, value ? nlohmann::json(*value) : nlohmann::json(nullptr));
}

}  // namespace balerbench
