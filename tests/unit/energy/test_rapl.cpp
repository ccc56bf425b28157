// test_rapl.cpp: RaplMeter on fake powercap trees: domains and totals,
// wraparound under a counter driven while the sampler's thread reads, MMIO de-duplication,
// unreadable counters, and no zones at all. The meters run on a fake clock (tests/fakes/fake_clock.h).
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "harness/energy/energy_window.h"
#include "harness/energy/rapl_meter.h"
#include "harness/energy/sampler.h"
#include "tests/fakes/fake_clock.h"
#include "tests/fakes/fake_powercap.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

constexpr unsigned long long kIntelRange = 262143328850ULL;

// The meter over `root`, on `clock` (its start-up probe polls on it too).
std::unique_ptr<EnergyMeter> open_or_fail(const std::string& root, TimeSource& clock) {
  MeterProbe p = RaplMeter::open(root, clock);
  EXPECT_TRUE(p.available()) << p.unavailable_reason;
  return std::move(p.meter);
}

// The meter over `root`, alone in a Sampler that reads only when asked; null when it does not open.
std::unique_ptr<Sampler> rapl_sampler(const std::string& root, TimeSource& clock) {
  auto m = open_or_fail(root, clock);
  if (!m) return nullptr;
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::move(m));
  return std::make_unique<Sampler>(std::move(meters), 0, Sampler::kMaxPoints, clock);
}

std::size_t domain_index(const EnergyMeter& m, const std::string& name) {
  for (std::size_t i = 0; i < m.domains().size(); ++i)
    if (m.domains()[i].name == name) return i;
  ADD_FAILURE() << "no domain " << name;
  return 0;
}

TEST(Rapl, DeltaHandlesWraparound) {
  EXPECT_EQ(rapl_delta_uj(100, 250, 1000), 150u);
  EXPECT_EQ(rapl_delta_uj(900, 50, 1000), 150u);  // 900 -> 1000 -> 0 -> 50
  EXPECT_EQ(rapl_delta_uj(kIntelRange - 10, 5, kIntelRange), 15u);
  // A wrap point that a double cannot hold (found by fuzz_powercap: the cast overflowed).
  const unsigned long long top = ~0ULL - 1;
  EXPECT_EQ(rapl_delta_uj(top - 2, 3, top), 5u);
}

TEST(Rapl, DomainsPerSocketAndTotalsWithoutDoubleCounting) {
  TempDir dir;
  FakePowercap pc(dir.root());
  pc.add_zone("intel-rapl:0", "package-0", 1000000, kIntelRange);
  pc.add_zone("intel-rapl:0:0", "core", 0, kIntelRange);
  pc.add_zone("intel-rapl:0:1", "uncore", 0, kIntelRange);
  pc.add_zone("intel-rapl:0:2", "dram", 0, kIntelRange);
  pc.add_zone("intel-rapl:1", "package-1", 0, kIntelRange);
  pc.add_zone("intel-rapl:2", "psys", 0, kIntelRange);
  pc.add_zone("intel-rapl-mmio:0", "package-0", 0, kIntelRange);  // duplicate of the MSR package
  FakeClock clock;
  auto m = open_or_fail(dir.root(), clock);
  ASSERT_TRUE(m);
  std::vector<std::string> names;
  for (const auto& d : m->domains()) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"core-0", "dram-0", "package-0", "package-1", "psys", "uncore-0"}));
  EXPECT_FALSE(m->domains()[domain_index(*m, "core-0")].in_total);
  EXPECT_FALSE(m->domains()[domain_index(*m, "psys")].in_total);
  EXPECT_TRUE(m->domains()[domain_index(*m, "dram-0")].in_total);
  EXPECT_EQ(m->domains()[domain_index(*m, "dram-0")].category, DomainCategory::kRam);
  EXPECT_NE(m->describe().dump().find("intel-rapl-mmio:0 skipped"), std::string::npos);

  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::move(m));
  Sampler sampler(std::move(meters), 0, Sampler::kMaxPoints, clock);
  const Snapshot a = sampler.snapshot();
  pc.set_energy("intel-rapl:0", 1000000 + 30000000);  // package-0 +30 J
  pc.set_energy("intel-rapl:0:0", 20000000);          // core-0 +20 J (inside the package)
  pc.set_energy("intel-rapl:0:2", 5000000);           // dram-0 +5 J
  pc.set_energy("intel-rapl:1", 10000000);            // package-1 +10 J
  pc.set_energy("intel-rapl:2", 60000000);            // psys +60 J (contains the rest)
  const Snapshot b = sampler.snapshot();
  const WindowResult w = make_window("w", a, b, {}, sampler.meters(), nullptr);
  EXPECT_NEAR(w.total_energy_j(), 45.0, 1e-9);  // packages + dram; core and psys not added
  EXPECT_NEAR(w.category_energy_j(DomainCategory::kRam), 5.0, 1e-9);
}

// The window's flags about failed reads (the fake's windows are also shorter than RAPL's 1 ms update).
std::string failed_read_flags(const WindowResult& w) {
  std::string out;
  for (const auto& f : w.flags)
    if (f.find("failed read") != std::string::npos) out += f;
  return out;
}

// The counter becomes unreadable mid-run (a permission lost, the file gone): the meter keeps its
// total, counts the failed reads, and the windows that saw them are flagged, never quietly 0 J.
TEST(Rapl, FailedReadsMidRunAreCountedAndFlagTheirWindows) {
  TempDir dir;
  FakePowercap pc(dir.root());
  pc.add_zone("intel-rapl:0", "package-0", 1000000, kIntelRange);
  FakeClock clock;
  const auto owned = rapl_sampler(dir.root(), clock);
  ASSERT_TRUE(owned);
  Sampler& sampler = *owned;
  const Snapshot a = sampler.snapshot();
  pc.set_energy("intel-rapl:0", 11000000);  // +10 J
  const Snapshot b = sampler.snapshot();
  EXPECT_EQ(failed_read_flags(make_window("clean", a, b, {}, sampler.meters(), nullptr)), "");
  std::filesystem::remove(pc.energy_file("intel-rapl:0"));  // unreadable from here on
  const Snapshot c = sampler.snapshot();
  const Snapshot d = sampler.snapshot();
  const WindowResult lost = make_window("lost", b, d, {c}, sampler.meters(), nullptr);
  EXPECT_EQ(lost.total_energy_j(), 0.0);
  EXPECT_NE(failed_read_flags(lost).find("2 failed reads of rapl inside"), std::string::npos) << failed_read_flags(lost);
  EXPECT_EQ(sampler.meters()[0]->describe()["read_errors"], 2);
  pc.set_energy("intel-rapl:0", 16000000);  // readable again: +5 J since the last good read
  const Snapshot e = sampler.snapshot();
  const WindowResult back = make_window("back", d, e, {}, sampler.meters(), nullptr);
  EXPECT_NEAR(back.total_energy_j(), 5.0, 1e-9);
  EXPECT_EQ(failed_read_flags(back), "");
  const WindowResult whole = make_window("whole", a, e, {}, sampler.meters(), nullptr);
  EXPECT_NEAR(whole.total_energy_j(), 15.0, 1e-9);  // caught up
  EXPECT_NE(failed_read_flags(whole), "");            // but the window still saw the failures
}

TEST(Rapl, PsysCountsWhenThereIsNoPackage) {
  TempDir dir;
  FakePowercap pc(dir.root());
  pc.add_zone("intel-rapl:0", "psys", 0, kIntelRange);
  FakeClock clock;
  auto m = open_or_fail(dir.root(), clock);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->domains().size(), 1u);
  EXPECT_TRUE(m->domains()[0].in_total);
}

// The test drives package-0 at a fixed power through several wraps of a small counter, in 5 ms steps
// of the fake clock, while the sampler's thread reads at the rate the wrap forces; the meter's total
// must match the energy written.
TEST(Rapl, LiveWriterAcrossWraparoundMatchesWithinHalfPercent) {
  TempDir dir;
  FakePowercap pc(dir.root());
  const unsigned long long range_uj = 50000000;  // 50 J: wraps every 0.5 s at 100 W
  pc.add_zone("intel-rapl:0", "package-0", range_uj - 1000000, range_uj);
  FakeClock clock;
  auto m = open_or_fail(dir.root(), clock);
  ASSERT_TRUE(m);
  EXPECT_NEAR(m->max_read_interval_s(), 0.05, 1e-12);  // 50 J at the 1000 W bound
  std::vector<std::unique_ptr<EnergyMeter>> meters;
  meters.push_back(std::move(m));
  Sampler sampler(std::move(meters), 1, Sampler::kMaxPoints, clock);
  EXPECT_GE(sampler.effective_hz(), 80.0);  // raised to read 4x per wrap interval
  sampler.start();
  const Snapshot a = sampler.snapshot();
  unsigned long long counter = range_uj - 1000000, written_uj = 0;
  while (written_uj < 130000000ULL) {  // at least two wraps (100 J) and a bit
    clock.advance_s(0.005);  // the thread's reads due by now have been taken
    const unsigned long long step = 500000;  // 0.5 J per 5 ms = 100 W
    counter = (counter + step) % range_uj;
    written_uj += step;
    pc.set_energy("intel-rapl:0", counter);
  }
  const Snapshot b = sampler.snapshot();
  sampler.stop();
  EXPECT_GE(sampler.series_between(a.time, b.time).size(), 100u);  // 1.3 s at 80 Hz: the thread read throughout
  const double measured_j = b.readings[0].energy_j[0] - a.readings[0].energy_j[0];
  const double written_j = static_cast<double>(written_uj) * 1e-6;
  ASSERT_GT(written_j, 100.0);  // at least two wraps
  EXPECT_NEAR(measured_j, written_j, 0.005 * written_j);
  EXPECT_NEAR(measured_j, written_j, 1e-6);  // reads far inside each wrap lose nothing
}

// Issue 18's known truth for a wrap inside a short window: a 50 ms window in which the counter goes
// from 2 J below its 50 J wrap point to 3 J past zero holds exactly 5 J, inside its ±, unflagged.
TEST(Rapl, WrapInsideAShortWindowKeepsTheExactEnergyWithinItsPlusMinus) {
  TempDir dir;
  FakePowercap pc(dir.root());
  const unsigned long long range_uj = 50000000;
  pc.add_zone("intel-rapl:0", "package-0", range_uj - 2000000, range_uj);
  FakeClock clock;
  const auto owned = rapl_sampler(dir.root(), clock);
  ASSERT_TRUE(owned);
  Sampler& sampler = *owned;
  const Snapshot a = sampler.snapshot();
  pc.set_energy("intel-rapl:0", 3000000);
  clock.advance_s(0.05);
  const Snapshot b = sampler.snapshot();
  const WindowResult w = make_window("short", a, b, {}, sampler.meters(), nullptr);
  ASSERT_EQ(w.domains.size(), 1u);
  EXPECT_NEAR(w.domains[0].energy_j, 5.0, 1e-9);
  ASSERT_TRUE(w.domains[0].uncertainty_j());
  EXPECT_GE(*w.domains[0].uncertainty_j(), 2e-6);  // at least a count at each edge
  EXPECT_LE(std::fabs(w.domains[0].energy_j - 5.0), *w.domains[0].uncertainty_j());
  EXPECT_TRUE(w.flags.empty()) << w.flags.size();
}

// energy_uj never exceeds max_energy_range_uj: a zone that opens above it is refused, and a reading
// above it mid-run counts as a failed read (neither may pass as a wrap: fuzz_powercap).
TEST(Rapl, CounterAboveItsWrapPointIsNoReading) {
  TempDir dir;
  FakePowercap bad(dir.path("bad"));
  bad.add_zone("intel-rapl:0", "package-0", 2000, 1000);
  const MeterProbe p = RaplMeter::open(bad.root());
  EXPECT_FALSE(p.available());
  EXPECT_NE(p.unavailable_reason.find("energy_uj wraps at max_energy_range_uj"), std::string::npos)
      << p.unavailable_reason;
  FakePowercap pc(dir.path("ok"));
  pc.add_zone("intel-rapl:0", "package-0", 500, 1000000);
  FakeClock clock;
  auto m = open_or_fail(pc.root(), clock);
  ASSERT_TRUE(m);
  pc.set_energy("intel-rapl:0", 2000000);  // above the range
  EXPECT_EQ(m->read().energy_j.at(0), 0.0);
  pc.set_energy("intel-rapl:0", 700);  // +200 uJ since the last good reading, no wrap
  const MeterReading r = m->read();
  EXPECT_NEAR(r.energy_j.at(0), 200e-6, 1e-12);
  EXPECT_EQ(r.read_errors, 1);
}

// Two zones that would be one domain (fuzz_powercap): the first is kept and the other named in the
// notes, so the total counts each joule once.
TEST(Rapl, ZonesUnderOneDomainNameAreCountedOnce) {
  TempDir dir;
  FakePowercap pc(dir.root());
  pc.add_zone("intel-rapl:0", "package-0", 1000000, kIntelRange);
  pc.add_zone("intel-rapl:00", "package-0", 1000000, kIntelRange);
  FakeClock clock;
  auto m = open_or_fail(dir.root(), clock);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->domains().size(), 1u);
  EXPECT_EQ(m->domains()[0].name, "package-0");
  EXPECT_NE(m->describe().dump().find("intel-rapl:00 skipped: a second zone that would be domain package-0 "
                                      "(intel-rapl:0 is)"),
            std::string::npos)
      << m->describe().dump();
}

TEST(Rapl, NoZonesIsUnavailableWithReason) {
  TempDir dir;
  MeterProbe p = RaplMeter::open(dir.root());
  EXPECT_FALSE(p.available());
  EXPECT_NE(p.unavailable_reason.find("no RAPL zones"), std::string::npos) << p.unavailable_reason;
  MeterProbe missing = RaplMeter::open(dir.path("nope"));
  EXPECT_NE(missing.unavailable_reason.find("no powercap folder"), std::string::npos);
}

// energy_uj readable by root only (CVE-2020-8694). Root reads anything, so
// when the test runs as root the check runs in a child that drops to nobody.
TEST(Rapl, UnreadableCounterIsUnavailableWithTheFix) {
  TempDir dir;
  FakePowercap pc(dir.root());
  pc.add_zone("intel-rapl:0", "package-0", 0, kIntelRange);
  std::filesystem::permissions(pc.energy_file("intel-rapl:0"), std::filesystem::perms::owner_read);
  std::filesystem::permissions(dir.root(), std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                               std::filesystem::perms::group_exec |
                                               std::filesystem::perms::others_read |
                                               std::filesystem::perms::others_exec);
  auto check = [&]() -> bool {
    MeterProbe p = RaplMeter::open(dir.root());
    return !p.available() && p.unavailable_reason.find("CVE-2020-8694") != std::string::npos &&
           p.unavailable_reason.find("Permission denied") != std::string::npos;
  };
  if (geteuid() != 0) {
    std::filesystem::permissions(pc.energy_file("intel-rapl:0"), std::filesystem::perms::none);
    EXPECT_TRUE(check());
    return;
  }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(3);
    _exit(check() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) GTEST_SKIP() << "cannot drop root privileges here (no CAP_SETUID?)";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the unreadable counter did not give the CVE-2020-8694 reason with the fix";
}

}  // namespace
}  // namespace balerbench
