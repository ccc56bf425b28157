// engine_choice.cpp: see engine_choice.h.
#include "harness/base/engine_choice.h"

#include <iterator>
#include <stdexcept>

#include "common/text.h"
#include "common/error.h"
#include "harness/base/name_table.h"

namespace balerbench {
namespace {

constexpr EnumName<EngineKind> kEngines[] = {{EngineKind::kAuto, "auto"}, {EngineKind::kLibtorch, "libtorch"},
                                         {EngineKind::kFused, "fused"}};

// The built-in engines, then the registered ones (EngineKind values past kFused, in order).
std::vector<EnumName<EngineKind>>& engines() {
  static std::vector<EnumName<EngineKind>> rows(std::begin(kEngines), std::end(kEngines));
  return rows;
}

std::vector<std::string>& names() {
  static std::vector<std::string> all = names_in(kEngines);
  return all;
}

}  // namespace

const char* engine_name(EngineKind e) { return name_in(engines(), e); }

std::optional<EngineKind> find_engine(const std::string& name) { return find_in<EngineKind>(engines(), name); }

const std::vector<std::string>& engine_names() { return names(); }

EngineKind add_engine_name(const char* name) {
  if (find_engine(name)) throw std::logic_error(std::string("engine name '") + name + "' is taken");
  const auto kind = static_cast<EngineKind>(static_cast<int>(engines().back().value) + 1);
  engines().push_back({kind, name});
  names().emplace_back(name);
  return kind;
}

void remove_engine_name(EngineKind kind) {
  auto& rows = engines();
  for (std::size_t i = std::size(kEngines); i < rows.size(); ++i)
    if (rows[i].value == kind) {
      rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(i));
      names().erase(names().begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

std::string engine_name_list() { return joined(engine_names()); }

}  // namespace balerbench
