// table_cell.h: a cell of a report table by row and column name, for the report tables' tests
// (test_tables.cpp, test_report_checks.cpp, test_report_systems.cpp). A missing column fails the
// test and reads as null.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string>

#include "harness/report/tables.h"

namespace balerbench {

inline nlohmann::json cell(const Table& t, std::size_t row, const std::string& column) {
  const auto it = std::find(t.columns.begin(), t.columns.end(), column);
  if (it == t.columns.end()) {
    ADD_FAILURE() << "no column " << column << " in " << t.name << " (" << t.title << ")";
    return nullptr;
  }
  return t.rows.at(row).at(static_cast<std::size_t>(it - t.columns.begin()));
}

}  // namespace balerbench
