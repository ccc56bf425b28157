// test_thread_calibration.cpp: the measured choice of intra-op threads, its cache and what it leaves
// behind.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <vector>

#include "harness/engine/runtime.h"
#include "harness/engine/trainer.h"
#include "harness/run/thread_calibration.h"
#include "models/autoencoder.h"
#include "tests/test_util.h"
#include "tests/unit/random_rows.h"

namespace balerbench {
namespace {

// A calibration as short as it goes (the warm-up's 2 steps, one timed round), cached in `dir`, on a
// host that counts as quiet whatever runs beside the test (the load tests set their own threshold).
CalibrationOptions quick_calibration(const TempDir& dir) {
  CalibrationOptions c;
  c.cache_dir = dir.path("cache");
  c.steps = 2;
  c.rounds = 1;
  c.min_window_s = 0;
  c.busy_other_cores = 1e9;
  return c;
}

// The fused engine's steps at batch 32.
TrainOptions toy_options() {
  TrainOptions o;
  o.batch_size = 32;
  o.engine = EngineKind::kFused;
  return o;
}

// Thread calibration: a measured choice between 1 and every CPU, cached with its age, and no trace
// left on the model or the random state (the times themselves are the machine's, not checked).
TEST(ThreadCalibration, ChoosesByMeasurementCachesAndLeavesTheModelAsItWas) {
  if (available_cpus() < 2) GTEST_SKIP() << "one CPU: nothing to choose";
  TempDir dir;
  CalibrationOptions c = quick_calibration(dir);
  torch::manual_seed(3);
  auto model = make_model("AE", 24, 15);
  std::vector<at::Tensor> before;
  for (const auto& p : model->parameters()) before.push_back(p.detach().clone());
  const at::Tensor rng = at::detail::getDefaultCPUGenerator().get_state();
  const TrainOptions o = toy_options();
  const at::Tensor x = random_rows(200, 24, at::kDouble, 4);
  const ThreadChoice first = calibrate_threads(*model, x, o, "host AE fused", c);
  EXPECT_EQ(first.source, "calibrated");
  EXPECT_TRUE(first.threads == 1 || first.threads == available_cpus()) << first.threads;
  EXPECT_EQ(at::get_num_threads(), first.threads);
  ASSERT_EQ(first.step_s.size(), 2u);
  EXPECT_EQ(first.step_s[0].first, 1);
  for (const auto& [n, s] : first.step_s) EXPECT_GT(s, 0) << n;
  std::size_t i = 0;
  for (const auto& p : model->parameters()) EXPECT_TRUE(at::equal(p.detach(), before[i++]));
  EXPECT_TRUE(at::equal(at::detail::getDefaultCPUGenerator().get_state(), rng));
  const nlohmann::json j = first.to_json();
  EXPECT_EQ(j["source"], "calibrated");
  EXPECT_TRUE(j["step_s"].contains("1"));

  const ThreadChoice again = calibrate_threads(*model, x, o, "host AE fused", c);
  EXPECT_EQ(again.source, "cached");
  EXPECT_EQ(again.threads, first.threads);
  EXPECT_GE(again.age_s, 0);
  EXPECT_EQ(again.step_s, first.step_s);
  EXPECT_TRUE(again.to_json().contains("age_s"));
  // The measurement's time and load are recorded, and the load when the cache is trusted.
  EXPECT_GT(first.measured_unix_s, 0);
  EXPECT_DOUBLE_EQ(again.measured_unix_s, first.measured_unix_s);
  ASSERT_TRUE(first.load_then.is_object());
  EXPECT_GE(first.load_then["other_cpu_cores"].get<double>(), 0);
  EXPECT_EQ(again.load_then, first.load_then);
  EXPECT_TRUE(again.load_now.is_object());
  EXPECT_TRUE(again.to_json().contains("load_at_measurement"));
  // A choice measured on a busy host is not trusted on a quiet one (and one recording no load is
  // not trusted at all): the cached entries are written by hand, the threshold above any host.
  c.busy_other_cores = 64;
  nlohmann::json cache = nlohmann::json::parse(read_text(c.cache_dir + "/threads.json"));
  cache["host AE fused"]["load"] = {{"other_cpu_cores", 100.0}, {"steal_fraction", 0.0}};
  write_text(c.cache_dir + "/threads.json", cache.dump());
  const ThreadChoice busy_then = calibrate_threads(*model, x, o, "host AE fused", c);
  EXPECT_EQ(busy_then.source, "calibrated");
  EXPECT_NE(busy_then.note.find("measured on a busy host and the host is quiet now"), std::string::npos)
      << busy_then.note;
  EXPECT_EQ(calibrate_threads(*model, x, o, "host AE fused", c).source, "cached");  // quiet then and now
  cache = nlohmann::json::parse(read_text(c.cache_dir + "/threads.json"));
  cache["host AE fused"].erase("load");
  write_text(c.cache_dir + "/threads.json", cache.dump());
  EXPECT_NE(calibrate_threads(*model, x, o, "host AE fused", c).note.find("recorded no load"), std::string::npos);
  // Another setting is another key; an expired or damaged cache is measured afresh.
  EXPECT_EQ(calibrate_threads(*model, x, o, "host AE libtorch", c).source, "calibrated");
  c.max_cache_age_s = -1;
  EXPECT_EQ(calibrate_threads(*model, x, o, "host AE fused", c).source, "calibrated");
  c.max_cache_age_s = 3600;
  write_text(c.cache_dir + "/threads.json", "{not json");
  EXPECT_EQ(calibrate_threads(*model, x, o, "host AE fused", c).source, "calibrated");
  EXPECT_EQ(calibrate_threads(*model, x, o, "host AE fused", c).source, "cached");
  c.cache_dir = "-";  // no cache at all
  EXPECT_EQ(calibrate_threads(*model, x, o, "host AE fused", c).source, "calibrated");
  at::set_num_threads(available_cpus());
}

// Within one run a setting keeps the choice it first got, whatever the load or the cache says later:
// the repeats of one configuration train on the same threads.
TEST(ThreadCalibration, ASettingKeepsItsFirstChoiceForTheRun) {
  if (available_cpus() < 2) GTEST_SKIP() << "one CPU: nothing to choose";
  TempDir dir;
  CalibrationOptions c = quick_calibration(dir);
  c.same_for_the_run = true;
  auto model = make_model("AE", 24, 15);
  const TrainOptions o = toy_options();
  const at::Tensor x = random_rows(200, 24, at::kDouble, 4);
  const std::string key = "host AE fused, kept for the run " + dir.path("");
  const ThreadChoice first = calibrate_threads(*model, x, o, key, c);
  EXPECT_EQ(first.source, "calibrated");
  // The cache now says the other count, measured on a busy host; the run keeps its own choice.
  const int other = first.threads == 1 ? available_cpus() : 1;
  nlohmann::json cache = nlohmann::json::parse(read_text(c.cache_dir + "/threads.json"));
  cache[key]["threads"] = other;
  cache[key]["load"] = {{"other_cpu_cores", 100.0}, {"steal_fraction", 0.0}};
  write_text(c.cache_dir + "/threads.json", cache.dump());
  at::set_num_threads(other);
  const ThreadChoice again = calibrate_threads(*model, x, o, key, c);
  EXPECT_EQ(again.source, kEarlierInThisRun);
  EXPECT_EQ(again.threads, first.threads);
  EXPECT_EQ(at::get_num_threads(), first.threads);
  EXPECT_EQ(again.step_s, first.step_s);
  EXPECT_DOUBLE_EQ(again.measured_unix_s, first.measured_unix_s);
  EXPECT_GE(again.age_s, 0);
  EXPECT_TRUE(again.to_json().contains("age_s"));
  // Without the option, the same key follows the cache's rules again (busy then, quiet now: measured).
  c.same_for_the_run = false;
  c.busy_other_cores = 64;  // the cached 100 CPUs count as busy, this host as quiet
  EXPECT_EQ(calibrate_threads(*model, x, o, key, c).source, "calibrated");
  at::set_num_threads(available_cpus());
}

}  // namespace
}  // namespace balerbench
