// figure_parts.h: what the report's figures (report_figures.h) are built of: a title that names the
// system and the energy's kind, channels with their units, a mean with its 95% interval, labels of
// configurations, and the caption's count of trials that have no figure.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "harness/base/statistics.h"
#include "harness/report/table_slices.h"
#include "harness/report/trial_groups.h"

namespace balerbench::report::figure {

// {"text", "subtitle": ["on SYSTEM", "energy: KIND ..."]}; `kinds` as Group::energy_kind() gives them
// (an empty `kinds`: no energy line).
nlohmann::json title(const std::string& text, const Slice& s, const std::string& kinds,
                     const std::string& extra_line = "");
// The energy kinds of groups, joined ("estimated"; "measured, estimated").
std::string energy_kinds(const std::vector<Group>& groups);
std::string energy_kinds(const std::vector<std::string>& kinds);

// Encoding channels. `scale`: a Vega-Lite scale object, or null for the default one.
nlohmann::json quantity(const std::string& field, const std::string& title,
                        const nlohmann::json& scale = nullptr);
nlohmann::json category(const std::string& field, const std::string& title);

// The axes' range: the points' own (`configs`' means and `trials`' single values) of `field`, with a
// margin and never below 0, so that a wide interval (two repeats: t's 12.7 times their spread) cannot
// squash every point into a corner; the bars are cut at the plot's edge instead (captions say so).
nlohmann::json points_domain(const nlohmann::json& configs, const nlohmann::json& trials, const char* field);

// A mean and its 95% confidence interval over the repeats (Student t): {prefix: mean, prefix_lo,
// prefix_hi}, the ends null with fewer than two values, the lower end cut at 0 (every figure's
// means are of times, energies or losses). Sets them into `row`.
void put_mean(nlohmann::json& row, const std::string& prefix, const Summary& s);
// A rule from `field`_lo to `field`_hi along `along` ("x" or "y") at `at` on the other axis: the
// error bars of put_mean's rows (rows without an interval are left out).
nlohmann::json interval_rule(const std::string& along, const std::string& field, const nlohmann::json& at);

// A configuration by the axes that vary among `groups` ("fp32, bs 256"); its precision always.
std::string configuration_label(const Group& g, const Axes& a);

// "2 failed and 1 skipped trials have no figures: the trials table lists them with their errors."; "" when none.
std::string not_finished_note(const Slice& s);
// A chart's common settings (fonts, a light frame) merged into `spec`, which it returns.
nlohmann::json with_config(nlohmann::json spec);

}  // namespace balerbench::report::figure
