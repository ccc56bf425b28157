// engine_choice.cpp: see engine_choice.h.
#include "harness/base/engine_choice.h"

#include "harness/base/name_table.h"

namespace balerbench {
namespace {

constexpr EnumName<EngineKind> kEngines[] = {{EngineKind::kAuto, "auto"}, {EngineKind::kLibtorch, "libtorch"},
                                         {EngineKind::kFused, "fused"}};

}  // namespace

const char* engine_name(EngineKind e) { return name_in(kEngines, e); }

std::optional<EngineKind> find_engine(const std::string& name) { return find_in<EngineKind>(kEngines, name); }

const std::vector<std::string>& engine_names() {
  static const std::vector<std::string> kNames = names_in(kEngines);
  return kNames;
}

std::string engine_name_list() { return join_names(engine_names()); }

}  // namespace balerbench
