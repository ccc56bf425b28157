// test_tuning.cpp: choosing batch size and power limit across a job's recurrences (tuning/): the
// seeded draws, Zeus's batch-size optimiser (the pruning walk, Thompson sampling converging on the
// cheapest arm across seeds), the recurrences' early stop at beta x the cheapest, the trace parser's
// refusals (file, line, hint), and replay on small traces written here whose optimum is known by hand:
// the just-in-time limit is the rows' cheapest at each batch size, an attempt is cut at the bound,
// and the bandit ends on the best configuration. No LibTorch headers.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/tuning/batch_size_optimizer.h"
#include "harness/tuning/recurrence_tuner.h"
#include "harness/tuning/replay.h"
#include "harness/tuning/seeded_random.h"
#include "harness/tuning/zeus_trace.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

using nlohmann::json;

TEST(SeededRandom, SameSeedSameDrawsAndUniformIndices) {
  SeededRandom a(7), b(7), c(8);
  std::vector<double> da, db, dc;
  for (int i = 0; i < 5; ++i) {
    da.push_back(a.normal(0, 1));
    db.push_back(b.normal(0, 1));
    dc.push_back(c.normal(0, 1));
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
  EXPECT_EQ(a.draws(), 10);  // two per normal value
  EXPECT_DOUBLE_EQ(a.normal(3, 0), 3);
  EXPECT_EQ(a.draws(), 10);  // sd 0: the mean, no draw
  // below(n): every index, roughly evenly.
  std::map<uint64_t, int> counts;
  SeededRandom r(1);
  for (int i = 0; i < 6000; ++i) ++counts[r.below(3)];
  ASSERT_EQ(counts.size(), 3u);
  for (const auto& [k, n] : counts) EXPECT_NEAR(n, 2000, 150) << k;
  // Normal draws: mean and spread.
  double sum = 0, ss = 0;
  for (int i = 0; i < 20000; ++i) {
    const double x = r.normal(10, 2);
    sum += x;
    ss += x * x;
  }
  const double mean = sum / 20000, sd = std::sqrt(ss / 20000 - mean * mean);
  EXPECT_NEAR(mean, 10, 0.05);
  EXPECT_NEAR(sd, 2, 0.05);
}

// The pruning walk as Zeus's: down from the default (the default first), then up from just above
// it; a failure ends its direction; the next round starts at the round's cheapest and runs over the
// survivors; then Thompson sampling over what survived.
TEST(BatchSizeOptimizer, PruningWalksDownThenUpAndStartsTheNextRoundAtTheCheapest) {
  BatchSizeOptimizer o({8, 16, 32, 64, 128, 256}, 64);
  const std::map<int64_t, double> cost = {{8, 50}, {16, 40}, {32, 30}, {64, 35}, {128, 45}, {256, 60}};
  const std::set<int64_t> fails_round1 = {8, 256};
  std::vector<int64_t> order;
  while (o.stage() == BatchSizeOptimizer::Stage::kPruning) {
    const int64_t bs = o.predict();
    EXPECT_EQ(o.predict(), bs);  // asking again without an observation: the same
    order.push_back(bs);
    const bool reached = !(o.pruning_round() == 0 && fails_round1.count(bs));
    o.observe(bs, cost.at(bs), reached);
  }
  // Round 1: 64, 32, 16, 8 (fails: down ends), 128, 256 (fails). Survivors 16, 32, 64, 128; the
  // cheapest, 32, starts round 2: 32, 16, then up: 64, 128.
  EXPECT_EQ(order, (std::vector<int64_t>{64, 32, 16, 8, 128, 256, 32, 16, 64, 128}));
  EXPECT_EQ(o.arms(), (std::vector<int64_t>{16, 32, 64, 128}));
  EXPECT_EQ(o.to_json()["stage"], "thompson");
  // Every survivor was seen twice with the same cost: each draws its mean, and 32 is the cheapest.
  EXPECT_EQ(o.predict(), 32);
  ASSERT_EQ(o.last_draws().size(), 4u);
  for (const auto& d : o.last_draws()) EXPECT_DOUBLE_EQ(d.draw, cost.at(d.batch_size));
}

TEST(BatchSizeOptimizer, AFailureGoingDownStillWalksUpAndAnOutOfOrderResultIsRefused) {
  BatchSizeOptimizer o({16, 32, 64, 128}, 64, {1, 0, 3});  // one pruning round
  EXPECT_EQ(o.predict(), 64);
  EXPECT_THROW(o.observe(32, 1, true), TuningError);  // pruning expects 64's result
  o.observe(64, 10, true);
  EXPECT_EQ(o.predict(), 32);
  o.observe(32, 20, false);  // down ends: 16 is not tried
  EXPECT_EQ(o.predict(), 128);
  o.observe(128, 30, true);
  EXPECT_EQ(o.stage(), BatchSizeOptimizer::Stage::kThompson);
  EXPECT_EQ(o.arms(), (std::vector<int64_t>{64, 128}));
  // One pruning round sees each survivor once: an arm with fewer than two observations goes first.
  EXPECT_EQ(o.predict(), 64);
  o.observe(64, 11, true);
  EXPECT_EQ(o.predict(), 128);
}

TEST(BatchSizeOptimizer, EveryBatchSizePrunedIsATuningError) {
  BatchSizeOptimizer o({32, 64}, 64);
  o.observe(o.predict(), 10, false);  // 64 fails: down ends; nothing above 64: round 1 ends with nothing
  try {
    o.predict();
    FAIL() << "expected a TuningError";
  } catch (const TuningError& e) {
    EXPECT_NE(std::string(e.what()).find("every batch size was pruned"), std::string::npos) << e.what();
  }
  EXPECT_THROW(BatchSizeOptimizer({32, 64}, 128), TuningError);  // the default is not a candidate
  EXPECT_THROW(BatchSizeOptimizer({32, 32}, 32), TuningError);
}

// Thompson sampling on noisy costs converges on the cheapest arm within a bounded number of
// recurrences, for every seed: after pruning and 40 pulls, the last 10 pulls are all the cheapest arm.
TEST(BatchSizeOptimizer, ThompsonSamplingConvergesOnTheCheapestArmAcrossSeeds) {
  const std::map<int64_t, double> mean = {{8, 200}, {16, 150}, {32, 100}, {64, 130}, {128, 180}};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    BatchSizeOptimizer o({8, 16, 32, 64, 128}, 64, {2, 0, seed});
    SeededRandom noise(seed + 1000);
    int pulls = 0, last10_best = 0;
    const int total = 60;
    for (int i = 0; i < total; ++i) {
      const int64_t bs = o.predict();
      o.observe(bs, noise.normal(mean.at(bs), 10), true);
      if (o.stage() == BatchSizeOptimizer::Stage::kThompson) ++pulls;
      if (i >= total - 10 && bs == 32) ++last10_best;
    }
    EXPECT_GE(pulls, 40) << "seed " << seed;
    EXPECT_EQ(last10_best, 10) << "seed " << seed;
    // Recorded: the seed and the number of draws.
    EXPECT_EQ(o.to_json()["seed"], seed);
    EXPECT_GT(o.to_json()["random_draws"].get<int64_t>(), 0);
  }
}

// The early stop: after a recurrence that cost C, the next attempts are bounded by beta x C (the
// recurrence's cost being all its attempts').
TEST(RecurrenceTuner, TheBoundIsBetaTimesTheCheapestRecurrence) {
  TunerOptions to;
  to.eta = 0.5;
  to.beta = 2;
  to.max_power_w = 300;
  RecurrenceTuner t({32, 64}, 64, to);
  AttemptPlan p = t.next();
  EXPECT_EQ(p.batch_size, 64);
  EXPECT_FALSE(p.cost_bound_j.has_value());  // no bound before the first recurrence ends
  EXPECT_TRUE(p.profile_power_limit);        // nothing kept for 64 yet
  t.set_power_limit(64, 250);
  // 100 s at 200 W: cost = 0.5 x 20000 + 0.5 x 300 x 100 = 25000.
  AttemptResult r = t.finish(p, {true, 100, 20000, true});
  EXPECT_DOUBLE_EQ(r.cost_j, 25000);
  EXPECT_TRUE(r.recurrence_done);
  p = t.next();
  EXPECT_EQ(p.batch_size, 32);
  ASSERT_TRUE(p.cost_bound_j.has_value());
  EXPECT_DOUBLE_EQ(*p.cost_bound_j, 50000);
  // A failed attempt, then a reaching one: the recurrence costs both, and is not the cheapest.
  r = t.finish(p, {true, 50, 10000, false});
  EXPECT_FALSE(r.recurrence_done);
  p = t.next();  // pruning: 32 failed going down; up from 64: nothing; round 1 ends with {64}
  EXPECT_EQ(p.batch_size, 64);
  EXPECT_EQ(p.attempt, 2);
  EXPECT_EQ(*p.power_limit_w, 250);  // kept from the first attempt
  EXPECT_FALSE(p.profile_power_limit);
  r = t.finish(p, {true, 100, 20000, true});
  EXPECT_TRUE(r.recurrence_done);
  EXPECT_DOUBLE_EQ(*t.cheapest_recurrence_j(), 25000);  // 12500 + 25000 is dearer
  // An attempt that cannot run one epoch under the bound: nothing charged, 100 x the bound observed.
  p = t.next();
  r = t.finish(p, {false, 0, 0, false});
  EXPECT_DOUBLE_EQ(r.cost_j, 0);
  EXPECT_DOUBLE_EQ(r.observed_cost_j, 100 * 50000);
  EXPECT_EQ(t.to_json()["options"]["beta"], 2.0);
}

TEST(RecurrenceTuner, TheFirstRecurrenceMustReachAndAttemptsAreBounded) {
  TunerOptions to;
  to.max_power_w = 300;
  RecurrenceTuner t({32, 64}, 64, to);
  const AttemptPlan p = t.next();
  EXPECT_THROW(t.finish(p, {true, 10, 1000, false}), TuningError);
  to.max_attempts = 1;
  RecurrenceTuner u({32, 64}, 64, to);
  AttemptPlan q = u.next();
  u.finish(q, {true, 10, 1000, true});
  q = u.next();
  EXPECT_THROW(u.finish(q, {true, 10, 1000, false}), TuningError);  // recurrence 2, attempt 1 of 1 failed
}

// ---- Traces ----

// A job whose optimum is known by hand. eta 0.5, MaxPower 300 W: epoch cost (0.5 P + 150) x T.
//   bs 16: 300 W T 10 P 250 -> 2750; 200 W T 12 P 190 -> 2940; 100 W T 18 P 100 -> 3600; 10 epochs
//   bs 32: 300 W T 6 P 280 -> 1740;  200 W T 6.5 P 195 -> 1608.75 (best); 100 W T 10 P 100 -> 2000; 6 epochs
//   bs 64: 300 W T 4 P 300 -> 1200 (best); 200 W T 5 P 200 -> 1250; 100 W T 8 P 100 -> 1600; 10 epochs
// Per recurrence at each one's cheapest limit: 16: 27500, 32: 9652.5, 64: 12000. The best in
// hindsight is 32 at 200 W; the default is 64 at 300 W (ETA 12000 J, TTA 40 s).
const char kTrain[] =
    "dataset,network,batch_size,optimizer,learning_rate,run,target_metric,target_epoch\n"
    "toy,net,16,sgd,0.1,1,0.9,10\ntoy,net,16,sgd,0.1,2,0.9,10\ntoy,net,16,sgd,0.1,3,0.9,10\n"
    "toy,net,32,sgd,0.1,1,0.9,6\ntoy,net,32,sgd,0.1,2,0.9,6\ntoy,net,32,sgd,0.1,3,0.9,6\n"
    "toy,net,64,sgd,0.1,1,0.9,10\ntoy,net,64,sgd,0.1,2,0.9,10\ntoy,net,64,sgd,0.1,3,0.9,10\n"
    "toy,net,32,sgd,0.1,1,0.95,nan\n";
const char kPower[] =
    "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
    "toy,net,16,sgd,300,10,250\ntoy,net,16,sgd,200,12,190\ntoy,net,16,sgd,100,18,100\n"
    "toy,net,32,sgd,300,6,280\ntoy,net,32,sgd,200,6.5,195\ntoy,net,32,sgd,100,10,100\n"
    "toy,net,64,sgd,300,4,300\ntoy,net,64,sgd,200,5,200\ntoy,net,64,sgd,100,8,100\n";

ReplayJob toy_job() {
  ReplayJob j;
  j.dataset = "toy";
  j.target_metric = 0.9;
  j.max_epochs = 20;
  j.default_batch_size = 64;
  return j;
}

ReplayResult toy_replay(uint64_t seed, const std::string& power = kPower, const ReplayJob& job = toy_job()) {
  ReplayOptions o;
  o.seed = seed;
  return replay_job(parse_train_trace(kTrain, "train.csv"), parse_power_trace(power, "power.csv"), job, o);
}

TEST(ZeusTrace, ReadsTheColumnsAndNanAsNotReached) {
  const TrainTrace t = parse_train_trace(kTrain, "train.csv");
  ASSERT_EQ(t.rows.size(), 10u);
  EXPECT_EQ(t.rows[0].line, 2);
  EXPECT_EQ(*t.rows[0].target_epoch, 10);
  EXPECT_FALSE(t.rows[9].target_epoch.has_value());
  EXPECT_DOUBLE_EQ(*t.rows[0].learning_rate, 0.1);
  const PowerTrace p = parse_power_trace(std::string(kPower) + "\r\n\n", "power.csv");  // blank lines, CRLF
  ASSERT_EQ(p.rows.size(), 9u);
  EXPECT_DOUBLE_EQ(p.rows[4].energy_per_epoch_j(), 6.5 * 195);
}

// Bad traces are refused with the file, the line and a hint.
TEST(ZeusTrace, BadTracesNameTheFileTheLineAndAHint) {
  const std::string header = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n";
  auto power = [&](const std::string& body, const std::string& fragment) {
    expect_input_error([&] { parse_power_trace(body, "p.csv"); }, fragment);
    expect_input_error([&] { parse_power_trace(body, "p.csv"); }, "(hint: ");
  };
  power("dataset,network,batch_size,optimizer,power_limit,time_per_epoch\ntoy,net,16,sgd,300,10\n",
        "p.csv:1: no column 'average_power'");
  power(header + "toy,net,16,sgd,300,10,250\ntoy,net,16,sgd,200,nan,190\n", "p.csv:3: time_per_epoch: NaN");
  power(header + "toy,net,16,sgd,300,10,NaN\n", "p.csv:2: average_power: NaN");
  power(header + "toy,net,16,sgd,300,10,inf\n", "p.csv:2: average_power: 'inf' is not a finite number");
  power(header + "toy,net,16,sgd,300,10,x7\n", "p.csv:2: average_power: 'x7' is not a number");
  power(header + "toy,net,16,sgd,300,-1,250\n", "p.csv:2: time_per_epoch: '-1' is not positive");
  power(header + "toy,net,16.5,sgd,300,10,250\n", "p.csv:2: batch_size: '16.5' is not a whole number");
  power(header + "toy,net,16,sgd,300,10\n", "p.csv:2: 6 fields where the header has 7");
  power(header + "toy,net,16,sgd,300,10,250\n\ntoy,net,16,sgd,300,11,250\n", "p.csv:4: a second line");
  power(header + "\"toy\",net,16,sgd,300,10,250\n", "p.csv:2: a quoted field");
  power(header, "p.csv: no data lines");
  power("", "p.csv: empty");
  // A train trace given as the power trace says so.
  expect_input_error([&] { parse_power_trace(kTrain, "p.csv"); }, "this looks like a train trace");
  const std::string theader = "dataset,network,batch_size,optimizer,run,target_metric,target_epoch\n";
  expect_input_error([&] { parse_train_trace(theader + "toy,net,16,sgd,1,0.9,2.5\n", "t.csv"); },
                     "t.csv:2: target_epoch: '2.5' is not a whole number");
  expect_input_error([&] { parse_train_trace(theader + "toy,net,16,sgd,1,nan,2\n", "t.csv"); },
                     "t.csv:2: target_metric: NaN");
  expect_input_error([&] { parse_train_trace("dataset,network,batch_size,optimizer,run,target_epoch\nx\n", "t.csv"); },
                     "t.csv:1: no column 'target_metric'");
}

// Numbers as a trace writes them: decimal only (0x10 is no 16 W), within what a GPU can draw (1e300 W
// made a saving of -1e295%), a value too small for a double read as the nearest; a UTF-8 byte-order
// mark read past as configs read it, UTF-16 named; a line too long to be a trace's refused.
TEST(ZeusTrace, NumbersAreDecimalAndPlausibleAndTheEncodingIsChecked) {
  const std::string header = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n";
  expect_input_error([&] { parse_power_trace(header + "toy,net,16,sgd,0x10,10,250\n", "p.csv"); },
                     "p.csv:2: power_limit: '0x10' is not a number (hint: write a decimal number");
  expect_input_error([&] { parse_power_trace(header + "toy,net,16,sgd,300,10,1e300\n", "p.csv"); },
                     "p.csv:2: average_power: '1e300' is more than a trace can hold (100000 W)");
  expect_input_error([&] { parse_power_trace(header + "toy,net,16,sgd,300,1e9,250\n", "p.csv"); },
                     "p.csv:2: time_per_epoch: '1e9' is more than a trace can hold (1e+07 s)");
  expect_input_error([&] { parse_power_trace(header + "toy,net,16,sgd,300,10,1e999\n", "p.csv"); },
                     "'1e999' is not a finite number");
  expect_input_error([&] { parse_power_trace(header + "toy,net,16,sgd,300,10,-Infinity\n", "p.csv"); },
                     "'-Infinity' is not a finite number");
  const PowerTrace tiny = parse_power_trace(header + "toy,net,16,sgd,300,10,1e-320\n", "p.csv");
  EXPECT_GT(tiny.rows[0].average_power_w, 0);  // a subnormal, not "not a finite number"
  expect_input_error([&] { parse_power_trace(header + "toy,net,16,sgd,300,10,1e-400\n", "p.csv"); },
                     "'1e-400' is not positive");
  const PowerTrace bom = parse_power_trace("\xEF\xBB\xBF" + std::string(kPower), "p.csv");
  EXPECT_EQ(bom.rows.size(), 9u);
  EXPECT_EQ(parse_train_trace("\xEF\xBB\xBF" + std::string(kTrain), "t.csv").rows.size(), 10u);
  expect_input_error([&] { parse_power_trace("\xFF\xFE" + header, "p.csv"); }, "p.csv: is UTF-16 text, not UTF-8");
  expect_input_error([&] { parse_power_trace("dataset,network\rtoy,net\r", "p.csv"); },
                     "p.csv:1: a carriage return inside a line");
  expect_input_error([&] { parse_power_trace(header + "toy\xE2\x80\xAE,net,16,sgd,300,10,250\n", "p.csv"); },
                     "p.csv:2: dataset: 'toy\\u202E' holds a bidirectional control (U+202E)");
  expect_input_error([&] { parse_power_trace(header + std::string(kMaxTraceLineBytes + 1, 'x'), "p.csv"); },
                     "p.csv:2: a line of 65537 bytes, longer than a trace's lines");
}

// A batch size the train trace has and the power trace lacks: left out (as Zeus's simulator joins
// the traces) and said so; asked for by name, refused at the train trace's line with a hint.
TEST(Replay, ABatchSizeWithNoPowerRowsIsLeftOutOrRefusedWhenAskedFor) {
  const std::string power_without_16 = std::string(kPower).substr(0, std::string(kPower).find("toy,net,16")) +
                                       std::string(kPower).substr(std::string(kPower).find("toy,net,32"));
  const ReplayResult r = toy_replay(1, power_without_16);
  EXPECT_EQ(r.batch_sizes, (std::vector<int64_t>{32, 64}));
  bool noted = false;
  for (const auto& n : r.notes)
    noted = noted || n.find("batch sizes 16 (in train.csv only, no power rows") != std::string::npos;
  EXPECT_TRUE(noted);
  ReplayJob j = toy_job();
  j.batch_sizes = {16, 32, 64};
  expect_input_error([&] { toy_replay(1, power_without_16, j); },
                     "train.csv:2: batch size 16 (listed) of toy/net/sgd has no power rows in power.csv (hint: ");
  j = toy_job();
  j.default_batch_size = 16;
  expect_input_error([&] { toy_replay(1, power_without_16, j); }, "train.csv:2: batch size 16 (the default)");
  j = toy_job();
  j.target_metric = 0.95;
  expect_input_error([&] { toy_replay(1, kPower, j); },
                     "batch size 16 (in both traces) of toy/net/sgd has no row at target_metric 0.95");
  j = toy_job();
  j.dataset = "imaginary";
  expect_input_error([&] { toy_replay(1, kPower, j); },
                     "train.csv: no rows for dataset 'imaginary' (hint: its datasets: toy)");
}

// The just-in-time power limit: the power-limit optimiser, fed the rows, picks each batch size's
// cheapest row (by hand above: 16 -> 300 W, 32 -> 200 W, 64 -> 300 W).
TEST(Replay, TheJustInTimeLimitIsTheRowsCheapestAtEachBatchSize) {
  const ReplayResult r = toy_replay(1);
  std::map<int64_t, double> chosen;
  for (const JitChoice& j : r.jit) {
    EXPECT_FALSE(chosen.count(j.batch_size)) << "profiled twice: " << j.batch_size;
    chosen[j.batch_size] = j.chosen_w;
    EXPECT_EQ(j.chosen_w, j.trace_optimum_w);
    EXPECT_EQ(j.optimizer["profiles"].size(), 3u);
  }
  EXPECT_EQ(chosen, (std::map<int64_t, double>{{16, 300}, {32, 200}, {64, 300}}));
  // The profiling epoch is the mean of the three rows: the first attempt (64, 10 epochs, profiled).
  const ReplayAttempt& first = r.attempts.front();
  EXPECT_TRUE(first.profiled);
  EXPECT_EQ(first.plan.batch_size, 64);
  EXPECT_NEAR(first.time_s, (4 + 5 + 8) / 3.0 + 9 * 4, 1e-9);
  EXPECT_NEAR(first.energy_j, (4 * 300 + 5 * 200 + 8 * 100) / 3.0 + 9 * 4 * 300, 1e-9);
  // Every later attempt at a batch size runs at its kept limit.
  for (const ReplayAttempt& a : r.attempts)
    if (!a.profiled) EXPECT_EQ(a.power_limit_w, chosen.at(a.plan.batch_size));
}

// Replay on the hand-made job: the bandit ends on the known optimum for every seed, and the summary's
// default and best-in-hindsight figures are the hand-computed ones.
TEST(Replay, EndsOnTheKnownOptimumForEverySeed) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const ReplayResult r = toy_replay(seed);
    EXPECT_EQ(r.recurrences, 2 * 3 * 3);  // the paper's 2 x |B| x |P|
    EXPECT_DOUBLE_EQ(r.max_power_w, 300);
    ASSERT_TRUE(r.final_choice.has_value());
    EXPECT_EQ(r.final_choice->batch_size, 32) << "seed " << seed;
    EXPECT_EQ(r.final_choice->power_limit_w, 200) << "seed " << seed;
    EXPECT_EQ(r.hindsight_best.batch_size, 32);
    EXPECT_EQ(r.hindsight_best.power_limit_w, 200);
    EXPECT_DOUBLE_EQ(r.hindsight_best.cost_j, 9652.5);
    EXPECT_DOUBLE_EQ(r.default_config.eta_j, 12000);
    EXPECT_DOUBLE_EQ(r.default_config.tta_s, 40);
    EXPECT_EQ(r.default_config.batch_size, 64);
    EXPECT_EQ(r.default_config.power_limit_w, 300);
    // The totals are the attempts' sums.
    double time = 0, energy = 0;
    for (const ReplayAttempt& a : r.attempts) {
      time += a.time_s;
      energy += a.energy_j;
    }
    EXPECT_DOUBLE_EQ(r.total_time_s, time);
    EXPECT_DOUBLE_EQ(r.total_energy_j, energy);
    EXPECT_EQ(r.to_json()["tuner"]["options"]["seed"], seed);
  }
  // The same seed, the same replay.
  EXPECT_EQ(toy_replay(3).to_json(), toy_replay(3).to_json());
}

// An attempt is cut at beta x the cheapest recurrence: the most whole epochs whose cost stays within
// the bound run, and one more would pass it.
TEST(Replay, TheEarlyStopCutsAnAttemptAtBetaTimesTheCheapest) {
  // The rows' epoch cost at eta 0.5 with MaxPower 300 W: (0.5 P + 150) x T.
  const std::map<std::pair<int64_t, double>, double> epoch_cost = {
      {{16, 300}, 2750}, {{32, 200}, 1608.75}, {{64, 300}, 1200}};
  ReplayOptions o;
  o.seed = 2;
  o.beta = 1.05;  // tight: batch size 16 (2750 a epoch, 10 epochs) and a second 64 cannot reach under it
  const ReplayResult r =
      replay_job(parse_train_trace(kTrain, "train.csv"), parse_power_trace(kPower, "power.csv"), toy_job(), o);
  int cut = 0, cut_unprofiled = 0;
  double cheapest = INFINITY, recurrence_cost = 0;
  for (const ReplayAttempt& a : r.attempts) {
    if (a.plan.recurrence > 0) {
      ASSERT_TRUE(a.plan.cost_bound_j.has_value());
      EXPECT_DOUBLE_EQ(*a.plan.cost_bound_j, 1.05 * cheapest);  // beta x the cheapest recurrence so far
    }
    recurrence_cost += a.result.cost_j;
    if (a.reached) {
      cheapest = std::min(cheapest, recurrence_cost);
      recurrence_cost = 0;
    }
    if (!a.ran || a.reached) continue;
    const double bound = *a.plan.cost_bound_j;
    const double epoch = epoch_cost.at({a.plan.batch_size, a.power_limit_w});
    EXPECT_EQ(a.epochs_allowed, static_cast<int64_t>(std::floor(bound / epoch)));
    EXPECT_LT(a.epochs_allowed, 10);  // the run would reach at 10 (6 for 32) without the bound
    EXPECT_EQ(a.epochs, a.epochs_allowed);
    EXPECT_GT((a.epochs + 1) * epoch, bound);  // one more epoch would pass the bound
    if (!a.profiled) {
      EXPECT_NEAR(a.result.cost_j, a.epochs * epoch, 1e-6);
      EXPECT_LE(a.result.cost_j, bound);
      ++cut_unprofiled;
    }
    ++cut;
  }
  EXPECT_GE(cut, 2);
  EXPECT_GE(cut_unprofiled, 1);  // the second 64, in pruning round 2
  EXPECT_EQ(r.final_choice->batch_size, 32);
}

TEST(Replay, ALimitNotMeasuredIsRefusedUnlessInterpolatedAndThenLabelled) {
  ReplayJob j = toy_job();
  j.power_limits_w = {300, 250, 200};
  expect_input_error([&] { toy_replay(1, kPower, j); },
                     "power.csv:2: batch size 16 of toy/net/sgd has no row at 250 W (hint: its measured limits: 300 W, "
                     "200 W, 100 W; drop 250 from --power-limits, or add --interpolate");
  j.interpolate = true;
  const ReplayResult r = toy_replay(1, kPower, j);
  EXPECT_TRUE(r.any_interpolated);
  const PowerPoint& p = r.power.at(32)[1];
  EXPECT_EQ(p.limit_w, 250);
  EXPECT_TRUE(p.interpolated);
  EXPECT_DOUBLE_EQ(p.time_per_epoch_s, 6.25);
  EXPECT_DOUBLE_EQ(p.average_power_w, 237.5);
  EXPECT_NE(p.source.find("interpolated between 200 W (line 6) and 300 W (line 5)"), std::string::npos) << p.source;
  const auto tables = replay_tables(r);
  EXPECT_NE(tables[0].rows[1].back().get<std::string>().find("some interpolated"), std::string::npos);
  // Never beyond the measured limits.
  j.power_limits_w = {350, 300};
  expect_input_error([&] { toy_replay(1, kPower, j); }, "no measured limit above it");
}

TEST(Replay, TablesInTheReportsShape) {
  const ReplayResult r = toy_replay(1);
  const std::vector<Table> t = replay_tables(r);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "replay");
  EXPECT_EQ(t[1].name, "replay_attempts");
  EXPECT_EQ(t[2].name, "replay_power_limits");
  EXPECT_EQ(t[1].rows.size(), r.attempts.size());
  EXPECT_EQ(t[2].rows.size(), 9u);  // three limits at each of three batch sizes
  const json doc = json::parse(render_tables(t, "json"));
  EXPECT_EQ(doc["tables"][0]["rows"][0]["batch_size"], 64);
  EXPECT_EQ(doc["tables"][0]["rows"][3]["configuration"], "best in hindsight");
  EXPECT_DOUBLE_EQ(doc["tables"][0]["rows"][3]["energy_saving_pct"].get<double>(), 100 * (1 - 6 * 6.5 * 195 / 12000.0));
  const std::string md = render_tables(t, "md");
  EXPECT_NE(md.find("### Replay of toy/net/sgd on power"), std::string::npos) << md;
}

}  // namespace
}  // namespace balerbench
