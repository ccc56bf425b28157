// report_figures.cpp: make_figures (report_figures.h): every figure of each system and spec variant,
// in the order the page shows them.
#include "harness/report/report_figures.h"

#include <algorithm>

#include "harness/report/figure_parts.h"
#include "harness/report/table_cells.h"

namespace balerbench::report {

ReportFigures make_figures(const std::vector<TrialRecord>& trials, const std::vector<double>& etas) {
  ReportFigures out;
  for (const Slice& s : slices_of(trials)) {
    const bool any_finished = std::any_of(s.trials.begin(), s.trials.end(), [](const TrialRecord& t) {
      return t.status == TrialStatus::kOk && !is_warmup(t);
    });
    if (!any_finished) {
      out.not_drawn.push_back("No figure for the trials on " + where_run(s.trials) + ": none of them finished. " +
                              figure::not_finished_note(s));
      continue;
    }
    add_time_energy_figure(out, s);
    add_ratio_figure(out, s, etas);
    add_power_limit_figure(out, s);
    add_loss_figure(out, s);
    add_phase_energy_figure(out, s);
    add_codecs_figures(out, s, etas);
    add_fidelity_figure(out, s);
    add_feature_figures(out, s);
  }
  for (auto& f : out.figures) f.spec = figure::with_config(std::move(f.spec));
  return out;
}

}  // namespace balerbench::report
