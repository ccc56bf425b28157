// loss_figure.cpp: the report's loss figure (report_figures.h): training and validation loss against
// epoch, one line per configuration, the mean over its finished repeats with their range as a band.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "harness/report/figure_parts.h"
#include "harness/report/report_figures.h"
#include "harness/report/table_cells.h"

namespace balerbench::report {
namespace {

using nlohmann::json;
namespace fig = figure;

constexpr char kTraining[] = "training loss";
constexpr char kValidation[] = "validation loss";

// One configuration's losses per epoch (0-based), over its finished repeats.
struct Losses {
  std::string configuration;
  std::map<int64_t, std::vector<double>> train, val;
};

json loss_row(const std::string& configuration, int64_t epoch, const char* which, const std::vector<double>& v) {
  const Summary s = summarize(v);
  json row = {{"configuration", configuration}, {"epoch", epoch + 1}, {"loss", which},
              {"n", static_cast<int64_t>(s.n)}, {"mean", num(s.mean)}};
  row["lo"] = s.n > 1 ? num(s.min) : json(nullptr);
  row["hi"] = s.n > 1 ? num(s.max) : json(nullptr);
  return row;
}

json loss_spec(const json& rows, bool validation) {
  json x = fig::quantity("epoch", "epoch");
  x["axis"] = {{"tickMinStep", 1}, {"format", "d"}};
  const json y = fig::quantity("mean", "loss (log scale)", {{"type", "log"}});
  json color = fig::category("configuration", "configuration");
  color["legend"] = {{"symbolType", "stroke"}, {"symbolOpacity", 1}, {"symbolStrokeWidth", 2}};
  const json band = {{"transform", json::array({{{"filter", "isValid(datum.lo) && isValid(datum.hi)"}}})},
                     {"mark", {{"type", "area"}, {"opacity", 0.18}}},  // after the lines: the legend shows theirs
                     {"encoding", {{"x", x}, {"y", {{"field", "lo"}, {"type", "quantitative"}}},
                                   {"y2", {{"field", "hi"}}}, {"color", color}}}};
  const json line = {{"mark", {{"type", "line"}, {"strokeWidth", 1.6}}},
                     {"encoding", {{"x", x}, {"y", y}, {"color", color},
                                   {"tooltip", json::array({{{"field", "configuration"}}, {{"field", "epoch"}},
                                                            {{"field", "loss"}}, {{"field", "mean"}, {"format", ".4g"}},
                                                            {{"field", "n"}, {"title", "repeats"}}})}}}};
  json sort = validation ? json::array({kTraining, kValidation}) : json::array({kTraining});
  return {{"data", {{"values", rows}}},
          {"facet", {{"column", {{"field", "loss"}, {"type", "nominal"}, {"title", nullptr}, {"sort", sort}}}}},
          {"spec", {{"width", 300}, {"height", 240}, {"layer", json::array({line, band})}}}};
}

}  // namespace

void add_loss_figure(ReportFigures& out, const Slice& s) {
  const std::vector<Group> groups = finished(group_trials(s.trials));
  const Axes a = varying(groups);
  std::vector<Losses> all;
  bool validation = false;  // without a validation split the trainer stores the training loss as both
  for (const auto& g : groups) {
    Losses l{fig::configuration_label(g, a), {}, {}};
    for (const TrialRecord* t : g.ok)
      for (const EpochRow& e : t->epoch_rows) {
        l.train[e.epoch].push_back(e.train_loss);
        l.val[e.epoch].push_back(e.val_loss);
        validation |= e.val_loss != e.train_loss;
      }
    if (!l.train.empty()) all.push_back(std::move(l));
  }
  if (all.empty()) {
    out.not_drawn.push_back("Loss against epoch, on " + where_run(s.trials) + ": no epoch stored.");
    return;
  }
  json rows = json::array();
  for (const auto& l : all) {
    for (const auto& [epoch, v] : l.train) rows.push_back(loss_row(l.configuration, epoch, kTraining, v));
    if (validation)
      for (const auto& [epoch, v] : l.val) rows.push_back(loss_row(l.configuration, epoch, kValidation, v));
  }
  ReportFigure f;
  f.kind = "loss";
  f.spec = loss_spec(rows, validation);
  f.spec["title"] = fig::title(validation ? "Training and validation loss against epoch per configuration"
                                          : "Training loss against epoch per configuration (no validation split)",
                               s, "");
  f.caption = std::string(
                  "Lines: each configuration's loss per epoch, the mean over its repeats; band: their range (lowest "
                  "to highest repeat; none with one repeat). Baler's loss (on the normalised data) sums the squared error over a batch and "
                  "divides by the columns, so it grows with the batch size: compare lines of one batch size.") +
              (validation ? "" : " The experiment has no validation split (training.test_size 0).") +
              (fig::not_finished_note(s).empty() ? "" : " " + fig::not_finished_note(s));
  f.expected_marks = {{"line", static_cast<int64_t>(all.size() * (validation ? 2 : 1))}};
  out.figures.push_back(std::move(f));
}

}  // namespace balerbench::report
