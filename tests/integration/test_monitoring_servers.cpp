// test_monitoring_servers.cpp: the exporters against the real servers from
// Debian's packages (prometheus, influxdb), each started here on free
// loopback ports with its state in a temp folder and stopped at the end:
//   - Prometheus scrapes `balerbench train --prometheus-port`, with the
//     recording rules of scripts/monitoring, and is queried through its HTTP
//     API for a power metric, the trial labels and a rule's result;
//   - influxd receives a training run's points and is queried back (the count
//     equals what balerbench says it sent; known field values);
//   - InfluxDB down when the run starts, and killed in the middle of a run:
//     the run finishes (exit 0) and reports the points it lost;
//   - serve-metrics and measure with the exporters; promtool lints the
//     exposition; bad monitoring options exit 2 before anything is written.
// The servers are required: scripts/setup.sh (and so .ci/run) installs them.
#include <gtest/gtest.h>

#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/test_util.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    ADD_FAILURE() << "no free port";
  close(s);
  return ntohs(a.sin_port);
}

bool wait_until(const std::function<bool()>& ok, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (Clock::now() < deadline) {
    if (ok()) return true;
    // A real wait: the Prometheus and InfluxDB servers are other processes, on the machine's time.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ok();
}

// A child process running `sh -c CMD`, output to `log`; SIGTERM (then SIGKILL) when destroyed.
class Process {
 public:
  Process(const std::string& cmd, const std::string& log) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      execl("/bin/sh", "sh", "-c", ("exec " + cmd + " > '" + log + "' 2>&1").c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Process() {
    if (pid_ <= 0 || done_) return;
    kill(pid_, SIGTERM);
    if (!wait_until([&] { return reap(false); }, 10)) {
      kill(pid_, SIGKILL);
      reap(true);
    }
  }
  void signal(int sig) { kill(pid_, sig); }
  int wait() {
    reap(true);
    return code_;
  }
  std::string log() const { return read_text(log_); }

 private:
  bool reap(bool block) {
    if (done_) return true;
    int status = 0;
    if (waitpid(pid_, &status, block ? 0 : WNOHANG) != pid_) return false;
    done_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }
  pid_t pid_ = -1;
  bool done_ = false;
  int code_ = -1;
  std::string log_;
};

std::string require_binary(const std::string& name) {
  const auto r = run_command("command -v " + name);
  if (r.exit_code != 0) ADD_FAILURE() << name << " not found (hint: scripts/setup.sh installs Debian's package)";
  std::string path = r.out;
  while (!path.empty() && std::isspace(static_cast<unsigned char>(path.back()))) path.pop_back();
  return path;
}

json get_json(int port, const std::string& path) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(10, 0);
  const auto res = c.Get(path.c_str());
  if (!res || res->status != 200) return json();
  return json::parse(res->body, nullptr, false);
}

class MonitoringServers : public ::testing::Test {
 protected:
  void SetUp() override {
    data = dir.path("cms.npz");
    const auto g = run_command(balerbench_binary() + " data generate --kind cms --rows 20000 --seed 1 --out " + data);
    ASSERT_EQ(g.exit_code, 0) << g.out;
    // A simulated GPU at a fixed 150 W (idle 50, max 250, load 0.5) gives known power values.
    const json config = {{"input_path", data}, {"model_name", "AE"}, {"compression_ratio", 1.6}, {"epochs", 10},
                         {"batch_size", 512}, {"progress", "lines"}, {"progress_interval_s", 0},
                         {"energy", {{"meters", {"simulated_gpu", "cpu_estimate"}},
                                     {"simulated_gpu", {{"idle_power_w", 50}, {"max_power_w", 250}, {"load", 0.5},
                                                        {"max_limit_w", 250}}}}}};
    write_text(dir.path("cfg.json"), config.dump());
  }
  std::string train(const std::string& args) const {
    return balerbench_binary() + " train --config " + dir.path("cfg.json") + " --out " + dir.path("out") + " " + args;
  }
  json training_report() const { return json::parse(read_text(dir.path("out/training/training_report.json"))); }

  // influxd on free ports with its state under `state`; returns the HTTP port.
  std::unique_ptr<Process> start_influxd(const std::string& state, int http_port) {
    const std::string conf = state + "/influxdb.conf";
    fs::create_directories(state);
    write_text(conf, "reporting-disabled = true\nbind-address = \"127.0.0.1:" + std::to_string(free_port()) +
                         "\"\n[meta]\n  dir = \"" + state + "/meta\"\n[data]\n  dir = \"" + state + "/data\"\n"
                         "  wal-dir = \"" + state + "/wal\"\n  query-log-enabled = false\n[http]\n  bind-address = "
                         "\"127.0.0.1:" + std::to_string(http_port) + "\"\n  log-enabled = false\n[monitor]\n"
                         "  store-enabled = false\n");
    auto p = std::make_unique<Process>(require_binary("influxd") + " -config " + conf, state + "/influxd.log");
    const bool up = wait_until([&] {
      httplib::Client c("127.0.0.1", http_port);
      const auto r = c.Get("/ping");
      return r && r->status == 204;
    }, 30);
    EXPECT_TRUE(up) << p->log();
    return p;
  }
  // One InfluxQL query; the first series' values.
  static json influx_values(int port, const std::string& db, const std::string& q) {
    const json j = get_json(port, "/query?db=" + db + "&q=" + httplib::detail::encode_query_param(q));
    if (!j.is_object() || !j["results"][0].contains("series")) return json::array();
    return j["results"][0]["series"][0]["values"];
  }
  // Points of a run, counted per measurement by a field every point of it has.
  static int64_t influx_points(int port, const std::string& db) {
    int64_t n = 0;
    for (const auto& [m, f] : std::vector<std::pair<std::string, std::string>>{
             {"balerbench_power", "energy_j"}, {"balerbench_power_total", "energy_j"}, {"balerbench_epoch", "epoch"},
             {"balerbench_process", "rss_bytes"}}) {
      const json v = influx_values(port, db, "SELECT count(\"" + f + "\") FROM \"" + m + "\"");
      if (!v.empty()) n += v[0][1].get<int64_t>();
    }
    return n;
  }
  TempDir dir;
  std::string data;
};

TEST_F(MonitoringServers, PrometheusScrapesATrainingRunAndEvaluatesTheRecordingRules) {
  const int bb_port = free_port(), prom_port = free_port();
  write_text(dir.path("prometheus.yml"),
             "global:\n  scrape_interval: 200ms\n  evaluation_interval: 200ms\nrule_files:\n  - " + source_dir() +
                 "/scripts/monitoring/balerbench_rules.yml\nscrape_configs:\n  - job_name: balerbench\n"
                 "    static_configs:\n      - targets: [\"127.0.0.1:" + std::to_string(bb_port) + "\"]\n");
  Process prom(require_binary("prometheus") + " --config.file=" + dir.path("prometheus.yml") +
                   " --storage.tsdb.path=" + dir.path("tsdb") + " --web.listen-address=127.0.0.1:" +
                   std::to_string(prom_port),
               dir.path("prometheus.log"));
  // Ready, then the target known (Prometheus applies its targets a few seconds after start).
  ASSERT_TRUE(wait_until([&] { return get_json(prom_port, "/api/v1/targets").is_object() &&
                                      !get_json(prom_port, "/api/v1/targets")["data"]["activeTargets"].empty(); }, 60))
      << prom.log();
  const auto r = run_command(train("--prometheus-port " + std::to_string(bb_port) +
                                   " --prometheus-linger 1.5 --experiment prom_test"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json report = training_report();
  EXPECT_GE(report["monitoring"]["prometheus"]["scrapes"].get<int>(), 3) << report["monitoring"].dump();
  const auto query = [&](const std::string& q) {
    return get_json(prom_port, "/api/v1/query?query=" + httplib::detail::encode_query_param(q))["data"]["result"];
  };
  const json power = query("max_over_time(balerbench_power_watts{meter=\"simulated_gpu\"}[10m])");
  ASSERT_EQ(power.size(), 1u) << power.dump() << prom.log();
  EXPECT_NEAR(std::stod(power[0]["value"][1].get<std::string>()), 150, 1.5);
  EXPECT_EQ(power[0]["metric"]["kind"], "simulated");
  const json info = query("last_over_time(balerbench_trial_info[10m])");
  ASSERT_EQ(info.size(), 1u) << info.dump();
  EXPECT_EQ(info[0]["metric"]["experiment"], "prom_test");
  EXPECT_EQ(info[0]["metric"]["batch_size"], "512");
  EXPECT_EQ(info[0]["metric"]["precision"], "fp64");
  EXPECT_EQ(info[0]["metric"]["power_limit_w"], "250");
  EXPECT_EQ(info[0]["metric"]["trial"], "1/1");
  const json epoch = query("max_over_time(balerbench_trial_epoch[10m])");
  ASSERT_EQ(epoch.size(), 1u);
  EXPECT_EQ(epoch[0]["value"][1], "10");  // the lingering endpoint served the last epoch
  // The recording rules ran on these series: mean power of the trial (150 W GPU + the CPU estimate).
  ASSERT_TRUE(wait_until([&] { return !query("balerbench:trial_power_watts:mean").empty() ||
                                      !query("max_over_time(balerbench:trial_power_watts:mean[10m])").empty(); }, 10));
  const json mean = query("max_over_time(balerbench:trial_power_watts:mean[10m])");
  ASSERT_EQ(mean.size(), 1u);
  const double mean_w = std::stod(mean[0]["value"][1].get<std::string>());
  const json& total = report["energy"]["total"];
  const double report_w = total["total_energy_j"].get<double>() / total["duration_s"].get<double>();
  EXPECT_GT(mean_w, 150);                      // the GPU's 150 W plus some CPU
  EXPECT_NEAR(mean_w, report_w, 0.1 * report_w);  // and what the energy report says of the whole command
  const json energy = query("max_over_time(balerbench:trial_energy_joules:final[10m])");
  ASSERT_EQ(energy.size(), 1u);
  // The trial holds the training: at least the GPU's 150 W over the training's time (less a sampling
  // period's lag at the end), and no more than the whole command's energy. Bounds from the run's own
  // figures, not a fixed duration (the training took 1.1 s on one machine and 0.9 s on another).
  const double final_j = std::stod(energy[0]["value"][1].get<std::string>());
  EXPECT_GT(final_j, 150 * 0.9 * report["train_s"].get<double>()) << report["train_s"];
  EXPECT_LE(final_j, 1.02 * total["total_energy_j"].get<double>());
}

TEST_F(MonitoringServers, InfluxdbReceivesEveryPointBalerbenchSaysItSent) {
  const int port = free_port();
  auto influxd = start_influxd(dir.path("influx"), port);
  const auto r = run_command(train("--influx http://127.0.0.1:" + std::to_string(port) +
                                   " --influx-db bbtest --experiment influx_test"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json m = training_report()["monitoring"]["influx"][0];
  EXPECT_EQ(m["points_lost"], 0) << m.dump();
  EXPECT_GT(m["points_sent"].get<int64_t>(), 50);
  EXPECT_EQ(m["points_sent"], m["points_queued"]);
  EXPECT_NE(r.out.find("points sent"), std::string::npos) << r.out;
  EXPECT_EQ(influx_points(port, "bbtest"), m["points_sent"].get<int64_t>());
  const json last_epoch = influx_values(port, "bbtest", "SELECT last(\"epoch\") FROM \"balerbench_epoch\" WHERE "
                                                        "\"experiment\" = 'influx_test' AND \"precision\" = 'fp64'");
  ASSERT_EQ(last_epoch.size(), 1u);
  EXPECT_EQ(last_epoch[0][1], 10);
  const json gpu = influx_values(port, "bbtest", "SELECT min(\"power_w\"), max(\"power_w\") FROM \"balerbench_power\" "
                                                 "WHERE \"meter\" = 'simulated_gpu'");
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_NEAR(gpu[0][1].get<double>(), 150, 1.5);
  EXPECT_NEAR(gpu[0][2].get<double>(), 150, 1.5);
}

TEST_F(MonitoringServers, InfluxdbDownWhenTheRunStartsLosesPointsNotTheRun) {
  const int port = free_port();  // nothing listens there
  const auto r = run_command(train("--influx http://127.0.0.1:" + std::to_string(port) +
                                   " --set monitoring.influx_timeout_s=0.5"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir.path("out/training/model.pt")));
  const json m = training_report()["monitoring"]["influx"][0];
  EXPECT_EQ(m["points_sent"], 0);
  EXPECT_GT(m["points_queued"].get<int64_t>(), 0);
  EXPECT_EQ(m["points_lost"], m["points_queued"]);
  EXPECT_FALSE(m["last_error"].is_null());
  EXPECT_NE(r.out.find("LOST"), std::string::npos) << r.out;
}

TEST_F(MonitoringServers, InfluxdbKilledMidRunLosesOnlyTheRest) {
  const int port = free_port();
  const std::string state = dir.path("influx");
  auto influxd = start_influxd(state, port);
  Process run(train("--influx http://127.0.0.1:" + std::to_string(port) +
                    " --influx-db bbkill --set monitoring.influx_flush_interval_s=0.2 --set monitoring.influx_timeout_s=0.5 "
                    "--set epochs=60"),
              dir.path("train.log"));
  int64_t first = 0;
  ASSERT_TRUE(wait_until([&] { return (first = influx_points(port, "bbkill")) > 0; }, 60)) << run.log();
  // Stored is not yet acknowledged: on a loaded machine influxd may be killed before its answer to
  // the first batch reaches balerbench. A later batch stored means the first was answered (one batch
  // is in flight at a time), so some points count as sent.
  ASSERT_TRUE(wait_until([&] { return influx_points(port, "bbkill") > first; }, 60)) << run.log();
  influxd->signal(SIGKILL);
  influxd.reset();
  ASSERT_EQ(run.wait(), 0) << run.log();
  const json m = training_report()["monitoring"]["influx"][0];
  EXPECT_GT(m["points_sent"].get<int64_t>(), 0) << m.dump();
  EXPECT_GT(m["points_lost"].get<int64_t>(), 0) << m.dump();
  EXPECT_EQ(m["points_sent"].get<int64_t>() + m["points_lost"].get<int64_t>(), m["points_queued"].get<int64_t>());
  EXPECT_NE(run.log().find("LOST"), std::string::npos) << run.log();
  // Restarted on the same data: every acknowledged point is there (a batch cut off mid-request may be too).
  influxd = start_influxd(state, port);
  const int64_t stored = influx_points(port, "bbkill");
  EXPECT_GE(stored, m["points_sent"].get<int64_t>());
  EXPECT_LE(stored, m["points_sent"].get<int64_t>() + 5000);
}

TEST_F(MonitoringServers, ServeMetricsExposesLintCleanMetricsAndStopsOnSigterm) {
  const int port = free_port();
  Process serve(balerbench_binary() + " serve-metrics --prometheus-port " + std::to_string(port) +
                    " --meters cpu_estimate,ram_estimate,simulated_gpu --sim-load 0.25 --influx-file " +
                    dir.path("machine.lp"),
                dir.path("serve.log"));
  std::string body;
  ASSERT_TRUE(wait_until([&] {
    httplib::Client c("127.0.0.1", port);
    const auto res = c.Get("/metrics");
    if (!res || res->body.find("balerbench_power_watts{meter=\"simulated_gpu\"") == std::string::npos) return false;
    body = res->body;
    return true;
  }, 30)) << serve.log();
  write_text(dir.path("scrape.txt"), body);
  const auto lint = run_command(require_binary("promtool") + " check metrics < " + dir.path("scrape.txt"));
  EXPECT_EQ(lint.exit_code, 0) << lint.out << body;
  EXPECT_EQ(body.find("balerbench_trial_info"), std::string::npos);  // no trial: watching the machine
  serve.signal(SIGTERM);
  EXPECT_EQ(serve.wait(), 0) << serve.log();
  EXPECT_NE(serve.log().find("stopped by a signal"), std::string::npos) << serve.log();
  const std::string lp = read_text(dir.path("machine.lp"));
  EXPECT_NE(lp.find("balerbench_power,host="), std::string::npos);
  EXPECT_NE(lp.find("command=serve-metrics"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir.path("machine.lp.partial")));
}

TEST_F(MonitoringServers, MeasureStreamsTheCommandsPower) {
  const auto r = run_command(balerbench_binary() + " measure --meters simulated_gpu --sim-load 1 --influx-file " +
                             dir.path("m.lp") + " -- sleep 1.2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string lp = read_text(dir.path("m.lp"));
  EXPECT_NE(lp.find("command=measure,meter=simulated_gpu"), std::string::npos) << lp;
  EXPECT_NE(r.out.find("monitoring: influx " + dir.path("m.lp")), std::string::npos) << r.out;
}

TEST_F(MonitoringServers, BadMonitoringOptionsExit2BeforeAnythingIsWritten) {
  // A port in use: held by a serve-metrics.
  const int port = free_port();
  Process holder(balerbench_binary() + " serve-metrics --meters ram_estimate --prometheus-port " + std::to_string(port),
                 dir.path("holder.log"));
  ASSERT_TRUE(wait_until([&] { return httplib::Client("127.0.0.1", port).Get("/metrics") != nullptr; }, 30));
  const auto in_use = run_command(train("--prometheus-port " + std::to_string(port)));
  EXPECT_EQ(in_use.exit_code, 2) << in_use.out;
  EXPECT_NE(in_use.out.find("port in use"), std::string::npos) << in_use.out;
  EXPECT_FALSE(fs::exists(dir.path("out/training/model.pt")));
  const auto scheme = run_command(train("--influx ftp://127.0.0.1:8086"));
  EXPECT_EQ(scheme.exit_code, 2);
  EXPECT_NE(scheme.out.find("--influx: "), std::string::npos) << scheme.out;
  const auto password = run_command("env -u BALERBENCH_INFLUX_PASSWORD " +
                                    train("--influx http://127.0.0.1:1 --set monitoring.influx_username=alice"));
  EXPECT_EQ(password.exit_code, 2);
  EXPECT_NE(password.out.find("BALERBENCH_INFLUX_PASSWORD"), std::string::npos) << password.out;
  const auto folder = run_command(train("--influx-file " + dir.path("no/such/dir/x.lp")));
  EXPECT_EQ(folder.exit_code, 2);
  // A command failing on other bad input leaves no line-protocol file either.
  const auto country = run_command(train("--influx-file " + dir.path("x.lp") + " --set energy.country_iso_code=XXX"));
  EXPECT_EQ(country.exit_code, 2) << country.out;
  EXPECT_FALSE(fs::exists(dir.path("x.lp")));
  EXPECT_FALSE(fs::exists(dir.path("x.lp.partial")));
  EXPECT_FALSE(fs::exists(dir.path("out/training/model.pt")));
}

}  // namespace
}  // namespace balerbench
