// bench_sweep.cpp: the harness's own cost per trial, to set against the
// training time it measures: storing one trial (one transaction: the trial
// row, 25 epoch rows, 4 phases and a 10 Hz power series of 60 s), making
// every report table from 100 stored trials, and reading them back.
// The in-trial overhead (meters, sampler, per-epoch snapshots, provenance)
// is stored per trial as result.harness_overhead_s; `balerbench report
// --table trials` lists it.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "harness/report/tables.h"
#include "harness/store/store.h"

namespace balerbench {
namespace {

TrialRecord make_trial(int i) {
  TrialRecord t;
  t.key = "key" + std::to_string(i);
  t.experiment = "bench";
  t.batch_size = 256 << (i % 3);
  t.precision = i % 2 ? "fp32" : "fp64";
  t.repeat = i / 6;
  t.epochs = 25;
  t.train_s = 10 + i % 7;
  t.train_energy_j = 300 + i;
  t.compress_s = t.decompress_s = 0.1;
  t.compress_energy_j = t.decompress_energy_j = 3;
  t.total_energy_j = 310 + i;
  t.co2_g = 0.04;
  t.max_power_w = 100;
  t.target_reached = true;
  t.tta_s = 5;
  t.eta_j = 150;
  t.energy_kind = "estimated";
  t.hardware = "CPU: bench";
  t.spec = {{"target", {{"metric", "relative_error"}, {"value", 0.1}}}};
  t.result = {{"model", {{"name", "AE"}, {"n_features", 24}, {"latent", 15}, {"layers", nlohmann::json::array()}}}};
  t.provenance = {{"host", "bench"}};
  for (int e = 0; e < 25; ++e)
    t.epoch_rows.push_back({e, 1.0 / (e + 1), 1.0 / (e + 1), 0.1, 1e-3, 0.4, 0.4 * (e + 1), 12.0 * (e + 1), e > 10});
  for (const char* p : {"train", "evaluation", "compress", "decompress"})
    t.phases.push_back({p, "energy", 1, 10, 0.001, "estimated"});
  for (int s = 0; s < 600; ++s) t.samples.push_back({0.1 * s, "train", 28.0});
  return t;
}

void BM_StoreInsertTrial(benchmark::State& state) {
  const std::string path = (std::filesystem::temp_directory_path() / "bench_store.sqlite").string();
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
  Store store(path);
  int i = 0;
  const TrialRecord base = make_trial(0);
  for (auto _ : state) {
    TrialRecord t = base;
    t.key = "k" + std::to_string(i++);
    store.insert_trial(t);
  }
  state.SetLabel("1 trial + 25 epochs + 4 phases + 600 samples per transaction");
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
}
BENCHMARK(BM_StoreInsertTrial)->Unit(benchmark::kMillisecond);

void BM_ReportAllTables(benchmark::State& state) {
  std::vector<TrialRecord> trials;
  for (int i = 0; i < 100; ++i) trials.push_back(make_trial(i));
  for (auto _ : state) {
    const std::string md = render_tables(make_tables(trials, "all", {0, 0.5, 1}), "md");
    benchmark::DoNotOptimize(md.data());
  }
  state.SetLabel("100 trials, every table, Markdown");
}
BENCHMARK(BM_ReportAllTables)->Unit(benchmark::kMillisecond);

void BM_StoreReadTrials(benchmark::State& state) {
  const std::string path = (std::filesystem::temp_directory_path() / "bench_read.sqlite").string();
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
  {
    Store store(path);
    for (int i = 0; i < 100; ++i) store.insert_trial(make_trial(i));
  }
  const Store store(path, StoreAccess::kReadOnly);
  for (auto _ : state) benchmark::DoNotOptimize(store.trials("bench").size());
  state.SetLabel("100 trials with their epochs, phases and samples");
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path + s);
}
BENCHMARK(BM_StoreReadTrials)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace balerbench

BENCHMARK_MAIN();
