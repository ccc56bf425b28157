// carbon.cpp: see carbon.h.
#include "harness/energy/carbon.h"

#include <cctype>

#include "common/error.h"

namespace balerbench {

const std::vector<CountryIntensity>& carbon_intensity_table() {
  static const std::vector<CountryIntensity> kTable = {
      {"NOR", "Norway", 30.1},         {"CHE", "Switzerland", 34.8},   {"SWE", "Sweden", 40.7},
      {"FRA", "France", 56.0},         {"BRA", "Brazil", 98.3},        {"CAN", "Canada", 170.0},
      {"ESP", "Spain", 174.1},         {"GBR", "United Kingdom", 237.6}, {"NLD", "Netherlands", 267.6},
      {"ITA", "Italy", 330.7},         {"USA", "United States", 369.5}, {"DEU", "Germany", 381.0},
      {"KOR", "South Korea", 430.6},   {"RUS", "Russia", 441.0},       {"JPN", "Japan", 485.4},
      {"AUS", "Australia", 548.7},     {"CHN", "China", 582.3},        {"POL", "Poland", 661.9},
      {"ZAF", "South Africa", 707.7},  {"IND", "India", 713.4}};
  return kTable;
}

CarbonIntensity resolve_carbon_intensity(const EnergySettings& s) {
  CarbonIntensity c;
  c.pue = s.pue;
  if (s.carbon_intensity_g_per_kwh) {
    c.g_per_kwh = *s.carbon_intensity_g_per_kwh;
    c.source = "config: carbon_intensity_g_per_kwh";
    c.country_iso_code = s.country_iso_code;
    return c;
  }
  if (!s.country_iso_code.empty()) {
    std::string code = s.country_iso_code;
    for (auto& ch : code) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    for (const auto& row : carbon_intensity_table()) {
      if (code != row.iso_code) continue;
      c.g_per_kwh = row.g_per_kwh;
      c.country_iso_code = row.iso_code;
      c.country_name = row.name;
      c.source = std::string("country table: ") + row.iso_code + " 2023 (Ember / Our World in Data, via CodeCarbon)";
      return c;
    }
    std::string codes;
    for (const auto& row : carbon_intensity_table()) codes += (codes.empty() ? "" : ", ") + std::string(row.iso_code);
    throw InputError("energy.country_iso_code '" + s.country_iso_code + "' is not in the carbon-intensity table",
                     "one of " + codes + ", or set energy.carbon_intensity_g_per_kwh");
  }
  c.source = "world default (CodeCarbon's 475 g/kWh); set energy.country_iso_code or carbon_intensity_g_per_kwh";
  return c;
}

double emissions_g(double energy_j, const CarbonIntensity& c) {
  return energy_j / kJoulesPerKwh * c.pue * c.g_per_kwh;
}

nlohmann::json CarbonIntensity::to_json() const {
  return {{"carbon_intensity_g_per_kwh", g_per_kwh}, {"source", source},
          {"country_iso_code", country_iso_code.empty() ? nlohmann::json(nullptr) : nlohmann::json(country_iso_code)},
          {"country_name", country_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(country_name)},
          {"pue", pue}};
}

}  // namespace balerbench
