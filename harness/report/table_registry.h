// table_registry.h: the one list of report tables: each table's name (what --table takes), a line
// saying what it shows, and the function that makes it. The CLI's help, the check of --table and
// --tables, and the error listing the valid names all read this list; make_tables walks it in order.
// A new table is one new file with its make function, and one line in table_registry.cpp.
#pragma once

#include <string>
#include <vector>

#include "harness/report/tables.h"
#include "harness/store/store.h"

namespace balerbench::report {

// `trials`: those of one system and spec variant for a comparing table (kPerSlice), else every
// trial of the experiment. `options`: the cost weights and the smallest difference that matters.
using MakeTables = std::vector<Table> (*)(const std::vector<TrialRecord>& trials, const TableOptions& options);
using TrialsTest = bool (*)(const std::vector<TrialRecord>& trials);

enum class TableScope {
  kPerSlice,   // compares configurations: made once per system and spec variant, never mixing them
  kAllTrials,  // lists or compares across every trial: made once
};

struct TableKind {
  const char* name;
  const char* description;  // one line
  TableScope scope;
  MakeTables make;
  TrialsTest in_all;  // with --table all, made only where this holds (of its trials); nullptr: always
};

const std::vector<TableKind>& table_registry();  // in the order --table all makes them

}  // namespace balerbench::report
