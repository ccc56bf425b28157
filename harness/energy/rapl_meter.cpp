// rapl_meter.cpp: see rapl_meter.h.
#include "harness/energy/rapl_meter.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>

#include "harness/energy/meter_registry.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

struct ReadResult {
  bool ok = false;
  std::string text;
  int error = 0;
};

ReadResult read_small_file(const fs::path& p) {
  ReadResult r;
  std::FILE* f = std::fopen(p.c_str(), "r");
  if (!f) {
    r.error = errno;
    return r;
  }
  char buf[128];
  const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  const bool failed = std::ferror(f);
  r.error = failed ? errno : 0;
  std::fclose(f);
  if (failed) return r;
  buf[n] = '\0';
  r.text = buf;
  while (!r.text.empty() && (r.text.back() == '\n' || r.text.back() == ' ')) r.text.pop_back();
  r.ok = true;
  return r;
}

bool parse_u64(const std::string& s, unsigned long long& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoull(s.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}

std::string unreadable_reason(const fs::path& file, int error) {
  std::string r = "cannot read " + file.string() + ": " + std::strerror(error);
  if (error == EACCES || error == EPERM)
    r += ". Since Linux 5.10 (CVE-2020-8694) energy_uj is readable by root only; fix: run as root, or "
         "`sudo chmod -R a+r /sys/class/powercap/intel-rapl*` (until reboot; a udev rule makes it permanent), or in "
         "a container mount the host's powercap folder and set BALERBENCH_POWERCAP_ROOT";
  return r;
}

struct Candidate {
  std::string dir_name;  // intel-rapl:0:1
  std::string zone_name; // from the name file: package-0, core, dram, psys
  bool mmio = false;
  int socket = -1;       // the top-level index
  bool top = true;
};

// intel-rapl:S or intel-rapl:S:N, intel-rapl-mmio:S.
bool parse_zone_dir(const std::string& d, Candidate& c) {
  std::string rest;
  if (d.rfind("intel-rapl-mmio:", 0) == 0) {
    c.mmio = true;
    rest = d.substr(16);
  } else if (d.rfind("intel-rapl:", 0) == 0) {
    rest = d.substr(11);
  } else {
    return false;
  }
  const auto colon = rest.find(':');
  c.top = colon == std::string::npos;
  try {
    c.socket = std::stoi(rest.substr(0, colon));
  } catch (const std::exception&) {
    return false;
  }
  c.dir_name = d;
  return true;
}

Domain domain_for(const Candidate& c, bool has_package) {
  Domain d;
  const std::string& z = c.zone_name;
  const std::string s = std::to_string(c.socket);
  if (z.rfind("package", 0) == 0) {
    d.name = "package-" + s;
    d.note = "cores + uncore of socket " + s;
  } else if (z == "psys") {
    d.name = "psys";
    d.in_total = !has_package;
    d.note = has_package ? "platform (SoC); contains package and dram, so not added to the total" : "platform (SoC)";
  } else if (z == "dram") {
    d.name = "dram-" + s;
    d.category = DomainCategory::kRam;
    d.note = "memory of socket " + s + " (outside the package)";
  } else {
    d.name = z + "-" + s;  // core, uncore: inside the package
    d.in_total = !has_package;
    d.note = "inside package-" + s + ", so not added to the total";
  }
  return d;
}

}  // namespace

unsigned long long rapl_delta_uj(unsigned long long previous, unsigned long long current,
                                 unsigned long long max_range_uj) {
  if (current >= previous) return current - previous;
  return max_range_uj - previous + current;  // wrapped once; at most max_range_uj, as both are
}

std::string RaplMeter::default_root() {
  const char* env = std::getenv("BALERBENCH_POWERCAP_ROOT");
  return env && *env ? env : "/sys/class/powercap";
}

namespace {

// The zones under `root` whose folder name and `name` file read.
std::vector<Candidate> find_zones(const std::string& root) {
  std::error_code ec;
  std::vector<Candidate> found;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    Candidate c;
    if (!parse_zone_dir(entry.path().filename().string(), c)) continue;
    const ReadResult name = read_small_file(entry.path() / "name");
    if (!name.ok) continue;
    c.zone_name = name.text;
    found.push_back(c);
  }
  return found;
}

// Reads the zone's counter and its wrap point into `z`; "" when both read, else why not.
std::string open_zone(const fs::path& dir, RaplMeter::Zone& z) {
  const ReadResult energy = read_small_file(dir / "energy_uj");
  if (!energy.ok) return unreadable_reason(dir / "energy_uj", energy.error);
  z.dir = dir.string();
  unsigned long long range = 0;
  const ReadResult max_range = read_small_file(dir / "max_energy_range_uj");
  if (!max_range.ok || !parse_u64(max_range.text, range) || range == 0 || !parse_u64(energy.text, z.last_uj) ||
      z.last_uj > range)
    return dir.string() + ": energy_uj or max_energy_range_uj is not a counter ('" + energy.text + "', '" +
           max_range.text + "'; energy_uj wraps at max_energy_range_uj)";
  z.max_range_uj = range;
  return "";
}

// `picked` sorted by domain name, one zone per domain name.
void keep_one_zone_per_domain(std::vector<std::pair<Domain, RaplMeter::Zone>>& picked, std::vector<Domain>& domains,
                              std::vector<RaplMeter::Zone>& zones, std::vector<std::string>& notes) {
  std::sort(picked.begin(), picked.end(), [](const auto& a, const auto& b) {
    return a.first.name != b.first.name ? a.first.name < b.first.name : a.second.dir < b.second.dir;
  });
  for (auto& [d, z] : picked) {
    // The kernel gives each zone its own name; a tree that does not (found by fuzz_powercap:
    // intel-rapl:0 and intel-rapl:00, or two psys zones) keeps the first, so no joule counts twice.
    if (!domains.empty() && domains.back().name == d.name) {
      notes.push_back(fs::path(z.dir).filename().string() + " skipped: a second zone that would be domain " + d.name +
                      " (" + fs::path(zones.back().dir).filename().string() + " is)");
      continue;
    }
    domains.push_back(d);
    zones.push_back(z);
  }
}

}  // namespace

MeterProbe RaplMeter::open(const std::string& root_in, TimeSource& clock) {
  const std::string root = root_in.empty() ? default_root() : root_in;
  MeterProbe probe;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    probe.unavailable_reason = "no powercap folder " + root +
                               " (not Linux, a VM without RAPL, or the intel_rapl_msr module is not loaded: "
                               "`modprobe intel_rapl_msr`)";
    return probe;
  }
  const std::vector<Candidate> found = find_zones(root);
  // MMIO zones duplicate the MSR package counters (CodeCarbon does the same de-duplication).
  std::map<std::string, bool> msr_names;
  for (const auto& c : found)
    if (!c.mmio) msr_names[c.zone_name] = true;
  bool has_package = false;
  for (const auto& c : found) has_package |= c.zone_name.rfind("package", 0) == 0;

  std::vector<std::string> notes;
  std::vector<std::pair<Domain, Zone>> picked;
  for (const auto& c : found) {
    if (c.mmio && msr_names.count(c.zone_name)) {
      notes.push_back(c.dir_name + " skipped: duplicates the MSR zone " + c.zone_name);
      continue;
    }
    Zone z;
    probe.unavailable_reason = open_zone(fs::path(root) / c.dir_name, z);
    if (!probe.unavailable_reason.empty()) return probe;
    picked.emplace_back(domain_for(c, has_package), z);
  }
  if (picked.empty()) {
    probe.unavailable_reason = "no RAPL zones under " + root + " (a VM, or a CPU whose RAPL driver is not loaded: "
                               "`modprobe intel_rapl_msr`)";
    return probe;
  }
  std::vector<Domain> domains;
  std::vector<Zone> zones;
  keep_one_zone_per_domain(picked, domains, zones, notes);
  probe.meter.reset(new RaplMeter(root, std::move(domains), std::move(zones), std::move(notes), clock));
  return probe;
}

RaplMeter::RaplMeter(std::string root, std::vector<Domain> domains, std::vector<Zone> zones,
                     std::vector<std::string> notes, TimeSource& clock)
    : clock_(clock), root_(std::move(root)), domains_(std::move(domains)), zones_(std::move(zones)),
      notes_(std::move(notes)), last_read_(clock.now()) {
  // The update interval, measured once per process and counter: the first zone's counter polled
  // every 0.2 ms for up to 30 ms.
  static std::mutex mu;
  static std::map<std::string, double> measured;  // counter file -> period (0: did not change)
  const std::string file = (fs::path(zones_.front().dir) / "energy_uj").string();
  std::lock_guard<std::mutex> lock(mu);
  const auto known = measured.find(file);
  if (known != measured.end()) {
    period_measured_ = known->second > 0;
    if (period_measured_) period_s_ = known->second;
    return;
  }
  measured[file] = 0;
  unsigned long long prev = 0, now_uj = 0;
  const ReadResult first = read_small_file(file);
  if (!first.ok || !parse_u64(first.text, prev)) return;
  const auto start = clock_.now();
  std::vector<double> changes;
  while (changes.size() < 8 && clock_.seconds_since(start) < 0.03) {
    clock_.sleep_for(std::chrono::microseconds(200));
    const ReadResult r = read_small_file(file);
    if (!r.ok || !parse_u64(r.text, now_uj)) return;
    if (now_uj != prev) changes.push_back(clock_.seconds_since(start));
    prev = now_uj;
  }
  if (changes.size() < 3) return;
  std::vector<double> gaps;
  for (std::size_t i = 1; i < changes.size(); ++i) gaps.push_back(changes[i] - changes[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  period_s_ = gaps[gaps.size() / 2];
  period_measured_ = true;
  measured[file] = period_s_;
}

EdgeModel RaplMeter::edge_model() const {
  EdgeModel m;
  m.update_period_s = period_s_;
  m.period_measured = period_measured_;
  m.step_j = 1e-6;  // powercap counts microjoules (the hardware's unit, 15-61 uJ, is finer than 1 ms of power)
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "powercap counter: 1 uJ counts, updates every %.3g s (%s), wraps at max_energy_range_uj (read at "
                "least every %.3g s, late reads counted); accuracy not stated",
                period_s_, period_measured_ ? "measured at start-up" : "stated: the counter did not change while probed",
                max_read_interval_s());
  m.basis = buf;
  return m;
}

MeterReading RaplMeter::read() {
  MeterReading r;
  r.time = clock_.now();
  const double gap_s = std::chrono::duration<double>(r.time - last_read_).count();
  if (gap_s > max_read_interval_s()) ++late_reads_;
  last_read_ = r.time;
  r.energy_j.reserve(zones_.size());
  for (auto& z : zones_) {
    const ReadResult text = read_small_file(fs::path(z.dir) / "energy_uj");
    unsigned long long now_uj = 0;
    // A failed read keeps the last total and is counted: the next good read catches up (one wrap
    // at most), and until then the windows that saw it are flagged (energy_window.cpp). A value
    // above the zone's wrap point is no counter reading and counts as a failed read.
    if (text.ok && parse_u64(text.text, now_uj) && now_uj <= z.max_range_uj) {
      z.total_j += static_cast<double>(rapl_delta_uj(z.last_uj, now_uj, z.max_range_uj)) * 1e-6;
      z.last_uj = now_uj;
    } else {
      ++read_errors_;
    }
    r.energy_j.push_back(z.total_j);
  }
  r.read_errors = read_errors_;
  return r;
}

double RaplMeter::max_read_interval_s() const {
  double t = std::numeric_limits<double>::infinity();
  for (const auto& z : zones_) t = std::min(t, static_cast<double>(z.max_range_uj) * 1e-6 / kMaxDomainPowerW);
  return t;
}

nlohmann::json RaplMeter::describe() const {
  nlohmann::json zones = nlohmann::json::array();
  for (std::size_t i = 0; i < zones_.size(); ++i)
    zones.push_back({{"domain", domains_[i].name}, {"path", zones_[i].dir},
                     {"max_energy_range_j", static_cast<double>(zones_[i].max_range_uj) * 1e-6}});
  return {{"root", root_}, {"zones", zones}, {"notes", notes_}, {"max_read_interval_s", max_read_interval_s()},
          {"late_reads", late_reads_}, {"read_errors", read_errors_}};
}

// This meter in the registry (meter_registry.cpp lists it).
const MeterEntry& rapl_meter_entry() {
  static const MeterEntry entry = {"rapl", MeterKind::kMeasured, "CPU packages, cores, uncore, DRAM, platform via Linux powercap",
                                   [](const EnergySettings&, TimeSource& clock) { return RaplMeter::open("", clock); }};
  return entry;
}

}  // namespace balerbench
