// carbon.h: emissions = energy x PUE x carbon intensity.
//
// The intensity comes from the config (carbon_intensity_g_per_kwh), else from
// the country table by ISO 3166-1 alpha-3 code (2023 values from Ember / Our
// World in Data, as in CodeCarbon's dataset), else the world default of
// 475 g/kWh (CodeCarbon's). Every result records the value and its source.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness/energy/energy_settings.h"

namespace balerbench {

struct CountryIntensity {
  const char* iso_code;
  const char* name;
  double g_per_kwh;
};
const std::vector<CountryIntensity>& carbon_intensity_table();
constexpr double kWorldCarbonIntensityGPerKwh = 475.0;

struct CarbonIntensity {
  double g_per_kwh = kWorldCarbonIntensityGPerKwh;
  std::string source;
  std::string country_iso_code;  // empty when not a country's value
  std::string country_name;
  double pue = 1.0;
  nlohmann::json to_json() const;
};

// InputError for a country code not in the table (the message lists them).
CarbonIntensity resolve_carbon_intensity(const EnergySettings& settings);

// grams of CO2eq for `energy_j` joules at the facility (x PUE).
double emissions_g(double energy_j, const CarbonIntensity& c);

constexpr double kJoulesPerKwh = 3.6e6;

}  // namespace balerbench
