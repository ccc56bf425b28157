// test_progress.cpp: the progress lines: thinned, but the first, the last and learning-rate drops
// kept.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "harness/monitor/progress.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

std::string progress_output(const std::function<void(Progress&)>& f, ProgressContext ctx) {
  std::FILE* tmp = std::tmpfile();
  {
    Progress p("lines", std::move(ctx), tmp);
    f(p);
  }
  std::rewind(tmp);
  std::string out;
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += static_cast<char>(c);
  std::fclose(tmp);
  return out;
}

TEST(Progress, PlainLinesAreThinnedButKeepFirstLastAndLearningRateDrops) {
  ProgressContext ctx;
  ctx.line_interval_s = 3600;
  ctx.run_ordinal = 2;
  ctx.run_count = 6;
  ctx.power_w = [] { return 41.25; };
  const std::string out = progress_output(
      [](Progress& p) {
        for (int64_t e = 1; e <= 10; ++e) {
          EpochLine l;
          l.epoch = e;
          l.epochs = 10;
          l.lr_reduced = e == 4;
          l.final = e == 7;  // early stopping
          p.epoch(l);
          if (e == 7) break;
        }
      },
      ctx);
  EXPECT_NE(out.find("[trial 2/6] Epoch 1/10"), std::string::npos) << out;
  EXPECT_NE(out.find("Epoch 4/10"), std::string::npos) << out;
  EXPECT_NE(out.find("Epoch 7/10"), std::string::npos) << out;
  EXPECT_EQ(out.find("Epoch 2/10"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
  EXPECT_NE(out.find("41.2 W  ~"), std::string::npos) << out;  // power and time left on the first line
  EXPECT_EQ(progress_output([](Progress& p) { p.epoch({1, 2}); p.epoch({2, 2}); }, {}).find("W "), std::string::npos);
  EXPECT_EQ(format_duration(45), "45 s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7440), "2h04m");
}

}  // namespace
}  // namespace balerbench
