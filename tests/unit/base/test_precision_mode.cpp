// test_precision_mode.cpp: the precision modes' names.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/error.h"
#include "harness/base/precision_mode.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

// ---- the precision name table (base/precision_mode.h) ----

TEST(PrecisionMode, EveryModeHasOneNameThatParsesBack) {
  std::set<std::string> names;
  std::set<int> ranks;
  for (const auto& info : precision_table()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name << " is listed twice";
    EXPECT_TRUE(ranks.insert(info.report_rank).second) << info.name << " shares its report rank";
    EXPECT_EQ(parse_precision(info.name, "/precision"), info.value);
    EXPECT_STREQ(precision_name(info.value), info.name);
  }
  EXPECT_EQ(names.size(), 7u);
  EXPECT_EQ(precision_names().front(), "auto");
  EXPECT_EQ(precision_info(Precision::kFp32).report_rank, 0);  // the baseline row comes first
  EXPECT_FALSE(find_precision("FP32").has_value());            // names are exact, as in configs
  expect_input_error([] { parse_precision("fp8", "/sweep/precision/1"); },
                     "/sweep/precision/1: unknown precision 'fp8'");
  expect_input_error([] { parse_precision("fp8", ""); }, "one of: auto, fp64, fp32, tf32, amp_fp16");
}

}  // namespace
}  // namespace balerbench
