// emissions_csv.cpp: see emissions_csv.h.
#include "harness/energy/emissions_csv.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/atomic_file.h"

namespace balerbench {
namespace {

std::string num(double x) {
  std::ostringstream out;
  out.precision(10);
  out << x;
  return out.str();
}

std::string quoted(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string header_line() {
  std::string h;
  for (const auto& c : emissions_csv_columns()) h += (h.empty() ? "" : ",") + c;
  return h;
}

}  // namespace

const std::vector<std::string>& emissions_csv_columns() {
  static const std::vector<std::string> kColumns = {
      "timestamp", "project_name", "run_id", "experiment_id", "duration", "emissions", "emissions_rate",
      "cpu_power", "gpu_power", "ram_power", "cpu_energy", "gpu_energy", "ram_energy", "energy_consumed",
      "country_name", "country_iso_code", "region", "cloud_provider", "cloud_region", "os", "python_version",
      "codecarbon_version", "cpu_count", "cpu_model", "gpu_count", "gpu_model", "longitude", "latitude",
      "ram_total_size", "tracking_mode", "on_cloud", "pue",
      // balerbench's own, after CodeCarbon's
      "phase", "energy_kind", "carbon_intensity_g_per_kwh", "carbon_intensity_source", "wall_energy"};
  return kColumns;
}

std::string utc_timestamp_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string emissions_csv_row(const WindowResult& p, const EmissionsContext& c) {
  const double cpu_j = p.category_energy_j(DomainCategory::kCpu), gpu_j = p.category_energy_j(DomainCategory::kGpu);
  const double ram_j = p.category_energy_j(DomainCategory::kRam), total_j = cpu_j + gpu_j + ram_j;
  const double dur = p.duration_s > 0 ? p.duration_s : 1e-12;
  const double kg = emissions_g(total_j, c.carbon) / 1000;
  const auto wall = p.wall_energy_j();
  const std::vector<std::string> cells = {
      c.timestamp, c.project_name, c.run_id, c.experiment_id, num(p.duration_s), num(kg), num(kg / dur),
      num(cpu_j / dur), num(gpu_j / dur), num(ram_j / dur), num(cpu_j / kJoulesPerKwh), num(gpu_j / kJoulesPerKwh),
      num(ram_j / kJoulesPerKwh), num(total_j / kJoulesPerKwh), c.carbon.country_name, c.carbon.country_iso_code, "",
      "", "", c.host.os, "", "", std::to_string(c.host.logical_cpus), c.host.cpu_model, std::to_string(c.gpu_count),
      c.gpu_model, "", "", num(c.host.ram_total_gb), c.tracking_mode, "N", num(c.carbon.pue), p.name, p.kinds(),
      num(c.carbon.g_per_kwh), c.carbon.source, wall ? num(*wall / kJoulesPerKwh) : ""};
  std::string row;
  for (std::size_t i = 0; i < cells.size(); ++i) row += (i ? "," : "") + quoted(cells[i]);
  return row;
}

namespace {

void check_header(const std::string& path, const std::string& text) {
  if (text.substr(0, text.find('\n')) != header_line())
    throw InputError(path + ": exists with other columns than balerbench's emissions.csv",
                     "move it away; balerbench appends only to its own emissions.csv");
}

}  // namespace

void check_emissions_csv(const std::string& path) {
  if (!std::filesystem::exists(path)) return;
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  check_header(path, first);
}

void append_emissions_csv(const std::string& path, const std::vector<std::string>& rows) {
  std::string text;
  if (std::filesystem::exists(path)) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    check_header(path, text);
    if (!text.empty() && text.back() != '\n') text += '\n';
  } else {
    text = header_line() + "\n";
  }
  for (const auto& r : rows) text += r + "\n";
  write_file_atomic(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace balerbench
