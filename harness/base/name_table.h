// name_table.h: an enum's names in one table, looked up both ways. Each enum that configs, the
// CLI or the store spell out (precision, engine, meter) keeps one array of rows with at least
// `value` and `name`; these helpers are the only code that walks such a table.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace balerbench {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// `table` is any range of rows with `value` and `name` (EnumName, or a row with more columns).
template <typename Table, typename E>
const char* name_in(const Table& table, E value) {
  for (const auto& row : table)
    if (row.value == value) return row.name;
  return "?";
}

template <typename E, typename Table>
std::optional<E> find_in(const Table& table, const std::string& name) {
  for (const auto& row : table)
    if (name == row.name) return row.value;
  return std::nullopt;
}

template <typename Table>
std::vector<std::string> names_in(const Table& table) {
  std::vector<std::string> names;
  for (const auto& row : table) names.emplace_back(row.name);
  return names;
}

}  // namespace balerbench
