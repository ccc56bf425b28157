// engine_choice.cpp: see engine_choice.h.
#include "harness/base/engine_choice.h"

#include "datasets/error.h"

namespace balerbench {
namespace {

struct EngineName {
  Engine engine;
  const char* name;
};
constexpr EngineName kEngines[] = {{Engine::kAuto, "auto"}, {Engine::kLibtorch, "libtorch"}, {Engine::kFused, "fused"}};

}  // namespace

const char* engine_name(Engine e) {
  for (const auto& n : kEngines)
    if (n.engine == e) return n.name;
  return "?";
}

std::optional<Engine> find_engine(const std::string& name) {
  for (const auto& n : kEngines)
    if (name == n.name) return n.engine;
  return std::nullopt;
}

const std::vector<std::string>& engine_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& n : kEngines) names.emplace_back(n.name);
    return names;
  }();
  return kNames;
}

std::string engine_name_list() {
  std::string list;
  for (const auto& n : engine_names()) list += (list.empty() ? "" : ", ") + n;
  return list;
}

Engine parse_engine(const std::string& name, const std::string& where) {
  if (auto e = find_engine(name)) return *e;
  throw InputError((where.empty() ? "" : where + ": ") + "unknown engine '" + name + "'",
                   "one of: " + engine_name_list());
}

}  // namespace balerbench
