// test_wattmeter.cpp: wattmeter logs (OmegaWatt and plain CSV): bad frames,
// malformed and out-of-order lines, gaps, sockets, clock offset, window
// integration against exact energies, and the live meter following a log (on a fake clock).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "harness/energy/wattmeter_log.h"
#include "harness/energy/wattmeter_meter.h"
#include "tests/fakes/fake_clock.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

const char* kHeader = "#timestamp,#frame_is_ok,#U1,#U2,#U3,#current1,#activepow1,#current2,#activepow2\n";

std::string ow_line(double t, double p1, double p2) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.9f,true,232.3,0.0,0.0,0.1,%.3f,0.2,%.3f\n", t, p1, p2);
  return buf;
}

// 10 ms frames from t0 over `seconds`: socket 1 at 100 W, socket 2 ramping 0 -> 200 W.
std::string omegawatt_log(double t0, double seconds) {
  std::string s = kHeader;
  const int n = static_cast<int>(std::lround(seconds / 0.01));
  for (int i = 0; i <= n; ++i) {
    const double t = t0 + 0.01 * i;
    s += ow_line(t, 100.0, 200.0 * i / n);
  }
  return s;
}

TEST(Wattmeter, OmegaWatt) {
  TempDir d;
  const double t0 = 1671527189.0;
  std::string log = omegawatt_log(t0, 10.0);
  log.insert(std::strlen(kHeader), "1671527188.990000000,false,,,,,,,\n");  // a bad frame first
  log += "garbage line\n";
  write_text(d.path("ow.csv"), log);
  const WattmeterLog all = WattmeterLog::load(d.path("ow.csv"), "auto", -1, 0);
  EXPECT_EQ(all.format(), "omegawatt");
  EXPECT_EQ(all.stats().bad_frames, 1);
  EXPECT_EQ(all.stats().malformed, 1);
  EXPECT_NEAR(all.median_interval_s(), 0.01, 1e-6);
  // Whole log: 100 W x 10 s + a ramp 0 -> 200 W over 10 s (1000 J); trapezoids are exact for linear power.
  const WattmeterEnergy e = all.energy(t0, t0 + 10.0);
  EXPECT_NEAR(e.energy_j, 2000.0, 0.005 * 2000.0);
  EXPECT_NEAR(e.energy_j, 2000.0, 1e-3);
  EXPECT_NEAR(e.peak_power_w, 300.0, 1e-9);
  // Socket 1 alone, a window between frames: 100 W x 2.345 s.
  const WattmeterLog s1 = WattmeterLog::load(d.path("ow.csv"), "omegawatt", 1, 0);
  EXPECT_NEAR(s1.energy(t0 + 1.0005, t0 + 3.3455).energy_j, 234.5, 1e-4);  // Unix-time doubles: ~0.2 us
  // Socket 2 over [2 s, 4 s]: mean of 40 W and 80 W x 2 s.
  const WattmeterLog s2 = WattmeterLog::load(d.path("ow.csv"), "omegawatt", 2, 0);
  EXPECT_NEAR(s2.energy(t0 + 2.0, t0 + 4.0).energy_j, 120.0, 1e-4);
}

TEST(Wattmeter, OutOfOrderLinesAndGaps) {
  TempDir d;
  std::string log = "timestamp_s,power_w\n";
  for (int i = 0; i <= 100; ++i) {
    if (i >= 40 && i < 60) continue;  // a 0.2 s gap in a 10 ms log
    log += std::to_string(1000.0 + 0.01 * i) + ",50\n";
  }
  log += "1000.005,50\n";  // late, out of order
  write_text(d.path("p.csv"), log);
  const WattmeterLog w = WattmeterLog::load(d.path("p.csv"), "auto", -1, 0);
  EXPECT_EQ(w.format(), "csv");
  EXPECT_EQ(w.stats().out_of_order, 1);
  const WattmeterEnergy e = w.energy(1000.0, 1001.0);
  EXPECT_NEAR(e.energy_j, 50.0, 1e-6);  // constant power: the gap is bridged linearly
  EXPECT_NEAR(e.gap_s, 0.21, 1e-6);     // from the sample at 0.39 s to the one at 0.60 s
}

// A negative, non-finite or absurd power is a malformed line, never integrated (was: -440 J from a
// -500 W line, 5e307 J from 1e308 W).
TEST(Wattmeter, ImpossiblePowerIsMalformedNotIntegrated) {
  TempDir d;
  write_text(d.path("w.csv"), "timestamp_s,power_w\n100,50\n101,-500\n102,70\n103,1e308\n104,inf\n105,nan\n106,70\n");
  const WattmeterLog w = WattmeterLog::load(d.path("w.csv"), "auto", -1, 0);
  EXPECT_EQ(w.stats().malformed, 4);
  EXPECT_EQ(w.stats().lines, 7);
  const WattmeterEnergy e = w.energy(100, 102);
  EXPECT_NEAR(e.energy_j, 120.0, 1e-9);  // 50 W to 70 W over 2 s, the -500 W line dropped
  EXPECT_GE(e.mean_power_w, 0.0);
  write_text(d.path("ow.csv"), std::string(kHeader) + ow_line(10, 100, 50) + ow_line(11, 100, -5) + ow_line(12, 100, 2e5) +
                                   ow_line(13, 100, 50));
  const WattmeterLog ow = WattmeterLog::load(d.path("ow.csv"), "auto", -1, 0);
  EXPECT_EQ(ow.stats().malformed, 2);
  EXPECT_NEAR(ow.energy(10, 13).energy_j, 450.0, 1e-9);
  // Socket 1 alone is valid on every line.
  EXPECT_EQ(WattmeterLog::load(d.path("ow.csv"), "omegawatt", 1, 0).stats().malformed, 0);
}

TEST(Wattmeter, ClockOffsetAndWindowErrors) {
  TempDir d;
  write_text(d.path("p.csv"), "10.0,100\n11.0,100\n12.0,100\n");
  const WattmeterLog w = WattmeterLog::load(d.path("p.csv"), "csv", -1, 5.0);  // meter clock 5 s behind
  EXPECT_NEAR(w.energy(15.5, 16.5).energy_j, 100.0, 1e-9);
  expect_input_error([&] { w.energy(14.0, 16.0); }, "not inside the logged span");
  expect_input_error([&] { w.energy(16.0, 15.0); }, "must come after its start");
  write_text(d.path("bad.csv"), "hello\nworld\n");
  expect_input_error([&] { WattmeterLog::load(d.path("bad.csv"), "auto", -1, 0); }, "fewer than two valid samples");
  expect_input_error([&] { WattmeterLog::load(d.path("missing.csv"), "auto", -1, 0); }, "cannot open");
}

TEST(Wattmeter, LiveMeterFollowsAGrowingLog) {
  TempDir d;
  const std::string path = d.path("live.csv");
  std::ofstream out(path);
  out << "timestamp_s,power_w\n" << std::fixed;
  FakeClock clock;
  const double start = clock.unix_now_s() - 0.5;
  for (int i = 0; i <= 50; ++i) out << start + 0.01 * i << ",80\n";
  out.flush();
  EnergySettings s;
  s.wattmeter_log = path;
  MeterProbe p = WattmeterMeter::open(s, clock);
  ASSERT_TRUE(p.available()) << p.unavailable_reason;
  const MeterReading a = p.meter->read();
  // The reader keeps appending for 0.6 s more (up to now + 0.1 s).
  for (int i = 51; i <= 110; ++i) out << start + 0.01 * i << ",80\n";
  out << start + 1.11;  // half a line: not read until complete
  out.flush();
  clock.advance_s(0.7);
  const MeterReading b = p.meter->read();
  const double opened = start + 0.5;  // when the meter opened
  const double expected = 80.0 * (start + 1.10 - opened);
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], expected, 80.0 * 0.05);
  EXPECT_NEAR(b.energy_j[0] - a.energy_j[0], 48.0, 1e-3);  // 0.6 s at 80 W, to the log's microseconds
  EXPECT_EQ(p.meter->domains()[0].category, DomainCategory::kWall);
  EXPECT_FALSE(p.meter->domains()[0].in_total);
}

}  // namespace
}  // namespace balerbench
