// bench_energy.cpp: Google Benchmark for the energy meters and the sampler.
//   BM_MeterRead/<meter>: one read() of each meter: rapl on a fake powercap
//     tree (2 sockets: package, core, uncore, dram + psys; the same file reads
//     as sysfs, without the MSR access behind them), nvml through the fake
//     library (the dlopen'd call path, not a real driver), cpu_estimate
//     (machine: /proc/stat; process: this process tree), ram_estimate,
//     simulated_gpu, wattmeter following a 100,000-sample log.
//   BM_TrainUnderSampler/<hz>: 3 epochs of Baler's AE on 100,000 CMS-like
//     rows (float64, batch 512) with the auto meters plus the fake RAPL tree
//     sampled at <hz> (0 = no sampler thread). Counters: sampler_cpu_pct =
//     the sampling thread's CPU time as % of the training wall time (what it
//     takes from training on a full machine); read_ms = mean snapshot cost.
//     The wall time of /0 vs /10 vs /100 is the end-to-end comparison.
//   BM_TrainUnderExporters/<on>: the same training with the sampler at 10 Hz,
//     without (/0) and with (/1) the live exporters: LiveMetrics fed by every
//     snapshot and epoch, the Prometheus endpoint scraped once a second (the
//     default Prometheus interval is 15 s), and InfluxDB line protocol sent to
//     an HTTP server in this process (answering 204 like influxd) and to a
//     file. Counter: exporter_cpu_pct = (time inside the sampler's listeners
//     + the InfluxDB threads' CPU time + scrape rendering) as % of the
//     training wall time; points = InfluxDB points per run.
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "datasets/normalizer.h"
#include "datasets/synthetic.h"
#include "harness/energy/meter_registry.h"
#include "harness/energy/rapl_meter.h"
#include "harness/energy/sampler.h"
#include "harness/engine/runtime.h"
#include "harness/engine/trainer.h"
#include "harness/monitor/monitor.h"
#include "models/autoencoder.h"
#include "tests/fakes/fake_powercap.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

// A fake powercap tree and fake NVML config in a temp folder, made once.
const std::string& fixture_dir() {
  static const std::string dir = [] {
    const std::string d = (fs::temp_directory_path() / ("bb_bench_energy_" + std::to_string(getpid()))).string();
    FakePowercap pc(d + "/powercap");
    for (int s = 0; s < 2; ++s) {
      const std::string z = "intel-rapl:" + std::to_string(s);
      pc.add_zone(z, "package-" + std::to_string(s), 1000, 262143328850ULL);
      pc.add_zone(z + ":0", "core", 1000, 262143328850ULL);
      pc.add_zone(z + ":1", "uncore", 1000, 262143328850ULL);
      pc.add_zone(z + ":2", "dram", 1000, 65712999613ULL);
    }
    pc.add_zone("intel-rapl:2", "psys", 1000, 262143328850ULL);
    std::ofstream(d + "/nvml.json") << R"({"devices": [{"name": "Fake", "uuid": "GPU-1", "power_w": 200}]})";
    std::ofstream log(d + "/wall.csv");
    log << "timestamp_s,power_w\n" << std::fixed;
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (int i = 0; i < 100000; ++i) log << now - 1000 + 0.01 * i << ",150\n";
    std::atexit([] { fs::remove_all(fixture_dir()); });
    return d;
  }();
  return dir;
}

const char* kMeters[] = {"rapl", "nvml", "cpu_estimate", "cpu_estimate_process", "ram_estimate", "simulated_gpu",
                         "wattmeter"};

void BM_MeterRead(benchmark::State& state) {
  const std::string& dir = fixture_dir();
  setenv("BALERBENCH_POWERCAP_ROOT", (dir + "/powercap").c_str(), 1);
  setenv("BALERBENCH_NVML_LIB", FAKE_NVML_LIB, 1);
  setenv("FAKE_NVML_CONFIG", (dir + "/nvml.json").c_str(), 1);
  std::string name = kMeters[state.range(0)];
  EnergySettings s;
  s.wattmeter_log = dir + "/wall.csv";
  if (name == "cpu_estimate_process") {
    s.cpu_estimate_mode = "process";
    name = "cpu_estimate";
  }
  MeterProbe p = probe_meter(*find_meter_choice(name), s);
  if (!p.available()) {
    state.SkipWithError(p.unavailable_reason.c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(p.meter->read());
  state.SetLabel(kMeters[state.range(0)]);
}
BENCHMARK(BM_MeterRead)->DenseRange(0, 6)->Unit(benchmark::kMicrosecond);

const at::Tensor& cms_rows() {
  static const at::Tensor x = [] {
    const SyntheticData d = generate_cms_like(100000, 0);
    const at::Tensor t = torch::tensor(d.values, torch::kDouble).view({100000, 24});
    return Normalization::fit(t).apply(t).contiguous();
  }();
  return x;
}

// The meters a run on this machine uses, plus the fake RAPL tree.
std::vector<std::unique_ptr<EnergyMeter>> bench_meters(const std::string& dir) {
  MeterSet set = open_meters(EnergySettings{});
  set.meters.push_back(RaplMeter::open(dir + "/powercap").meter);
  return std::move(set.meters);
}

// 3 epochs at Baler's defaults, without schedulers or output.
TrainOptions bench_train_options() {
  TrainOptions o;
  o.epochs = 3;
  o.progress = "none";
  o.early_stopping = o.lr_scheduler = false;
  return o;
}

void BM_TrainUnderSampler(benchmark::State& state) {
  const std::string& dir = fixture_dir();
  configure_cpu_runtime(0, true);
  const double hz = static_cast<double>(state.range(0));
  double sampler_cpu_s = 0, wall_s = 0, read_s = 0;
  long long reads = 0;
  for (auto _ : state) {
    Sampler sampler(bench_meters(dir), hz);
    torch::manual_seed(0);
    auto model = make_model("AE", 24, 15);
    const TrainOptions o = bench_train_options();
    const auto t0 = std::chrono::steady_clock::now();
    sampler.start();
    fit(*model, cms_rows(), at::Tensor(), o);
    sampler.stop();
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const SamplerOverhead ov = sampler.overhead();
    sampler_cpu_s += ov.thread_cpu_s;
    read_s += ov.read_time_s;
    reads += ov.reads;
  }
  state.counters["sampler_cpu_pct"] = 100 * sampler_cpu_s / wall_s;
  state.counters["read_ms"] = reads ? 1e3 * read_s / static_cast<double>(reads) : 0;
  state.counters["reads"] = static_cast<double>(reads) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_TrainUnderSampler)->Arg(0)->Arg(10)->Arg(100)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(3);

void BM_TrainUnderExporters(benchmark::State& state) {
  const std::string& dir = fixture_dir();
  configure_cpu_runtime(0, true);
  const bool exporters = state.range(0) != 0;
  // A stand-in for influxd: accepts /query and /write like InfluxDB 1.x.
  httplib::Server influx;
  influx.Post("/query", [](const httplib::Request&, httplib::Response& res) { res.set_content("{}", "application/json"); });
  influx.Post("/write", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  const int influx_port = influx.bind_to_any_port("127.0.0.1");
  std::thread influx_thread([&] { influx.listen_after_bind(); });
  double exporter_cpu_s = 0, wall_s = 0, points = 0;
  for (auto _ : state) {
    Sampler sampler(bench_meters(dir), 10);
    LiveMetrics live("train");
    std::unique_ptr<Monitor> monitor;
    MonitoringSettings m;
    if (exporters) {
      m.prometheus_port = 0;
      m.influx_url = "http://127.0.0.1:" + std::to_string(influx_port);
      m.influx_file = dir + "/bench.lp";
      monitor = std::make_unique<Monitor>(m, live, "bench");
      live.set_meters(sampler.meters());
      sampler.add_listener([&live](const Snapshot& snap) { live.on_snapshot(snap); });
      live.begin_trial({"bench", 1, 1, 512, "fp64", "none"});
    }
    std::atomic<bool> done{false};
    std::thread scraper([&] {  // Prometheus' side: GET /metrics every second
      if (!monitor) return;
      const std::string url = monitor->prometheus_url();
      const int port = std::stoi(url.substr(url.rfind(':') + 1));
      httplib::Client c("127.0.0.1", port);
      while (!done) {
        c.Get("/metrics");
        // Real time: the benchmark measures what a real scraper's requests cost the sampler and the step.
        for (int i = 0; i < 10 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    torch::manual_seed(0);
    auto model = make_model("AE", 24, 15);
    const TrainOptions o = bench_train_options();
    const auto t0 = std::chrono::steady_clock::now();
    sampler.start();
    struct Epochs final : TrainingObserver {
      std::function<void(const EpochRecord&)> fn;
      void epoch(const EpochRecord& e) override { fn(e); }
    } epochs;
    epochs.fn = [&](const EpochRecord& e) {
      if (exporters) live.on_epoch({e.epoch + 1, o.epochs, e.train_loss, kNoValue, 1e5 / e.duration_s, e.duration_s});
    };
    fit(*model, cms_rows(), at::Tensor(), o, &epochs);
    sampler.stop();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    wall_s += dt;
    done = true;
    scraper.join();
    if (monitor) {
      const nlohmann::json r = monitor->finish();
      exporter_cpu_s += sampler.overhead().listener_time_s + r["prometheus"]["render_time_s"].get<double>();
      for (const auto& i : r["influx"]) {
        exporter_cpu_s += i["thread_cpu_s"].get<double>();
        if (i["points_lost"] != 0) state.SkipWithError(("points lost: " + i.dump()).c_str());
      }
      points += r["influx"][0]["points_sent"].get<double>();
    }
  }
  influx.stop();
  influx_thread.join();
  state.counters["exporter_cpu_pct"] = 100 * exporter_cpu_s / wall_s;
  state.counters["points"] = points / static_cast<double>(state.iterations());
}
BENCHMARK(BM_TrainUnderExporters)->Arg(0)->Arg(1)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace balerbench

BENCHMARK_MAIN();
