// profile_table.cpp: see profile_table.h.
#include "harness/report/profile_table.h"

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace balerbench {
namespace {

using nlohmann::json;

struct Row {
  std::string frame;
  double wall_s;
  bool share;  // print the share of the parent (fit or codec) time
  long long calls;
  std::string note;
};

double phase_s(const json& phases, const char* name) {
  return phases.contains(name) ? phases[name]["duration_s"].get<double>() : 0.0;
}
long long phase_calls(const json& phases, const char* name) {
  return phases.contains(name) ? phases[name]["count"].get<long long>() : 0;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

std::string format_profile_table(const json& r) {
  if (!r.contains("profile")) throw std::invalid_argument("the report has no profile section (run with --profile)");
  const json& prof = r["profile"];
  const json& ph = prof["phases"];
  const std::string command = r.value("command", "train");
  const double total_s = r.value("total_duration_s", 0.0);
  std::vector<Row> rows;
  std::string whole_note;
  if (r.contains("process_cpu_s")) whole_note = "CPU time " + fmt("%.3f s", r["process_cpu_s"].get<double>());
  rows.push_back({"whole program", total_s, false, 0, whole_note});
  double parent_s = 0;
  std::vector<std::pair<const char*, const char*>> phases;  // name in the report, frame
  if (command == "train") {
    parent_s = r["train_s"].get<double>();
    rows.push_back({"train / fit", parent_s, true, r.value("epochs_run", 0LL), "calls = epochs"});
    rows.push_back({"backward", phase_s(ph, "backward"), true, phase_calls(ph, "backward"), ""});
    const double enc = phase_s(ph, "encode"), dec = phase_s(ph, "decode");
    rows.push_back({"forward (encode, decode)", enc + dec, true, phase_calls(ph, "encode"),
                    fmt("encode %.3f", enc) + fmt(", decode %.3f", dec)});
    phases = {{"loss", "loss"},
              {"optimizer", "optimizer step"},
              {"data", "data (batch slices, shuffle)"},
              {"evaluation", "evaluation"}};
  } else if (command == "compress") {
    parent_s = r["encode_duration_s"].get<double>();
    rows.push_back({"compress (all chunks)", parent_s, true, 0, ""});
    phases = {{"compress", "encode"}, {"data", "data (normalize, copy)"}};
  } else {
    parent_s = r["decode_duration_s"].get<double>();
    rows.push_back({"decompress (all chunks)", parent_s, true, 0, ""});
    phases = {{"decompress", "decode"}, {"data", "data (copy, de-normalize)"}};
  }
  for (const auto& [name, frame] : phases)
    if (ph.contains(name)) rows.push_back({frame, phase_s(ph, name), true, phase_calls(ph, name), ""});
  const double in_phases = prof["phase_sum_s"].get<double>();
  rows.push_back({"other (outside the phases)", parent_s - in_phases, true, 0,
                  command == "train" ? "schedulers, progress, loss read-back" : "output copies"});

  std::string out = "| frame | wall s | share | calls | note |\n|---|---:|---:|---:|---|\n";
  for (const Row& row : rows) {
    const std::string share = row.share && parent_s > 0 ? fmt("%.1f %%", 100.0 * row.wall_s / parent_s) : "";
    const std::string calls = row.calls > 0 ? std::to_string(row.calls) : "";
    out +=
        "| " + row.frame + " | " + fmt("%.3f", row.wall_s) + " | " + share + " | " + calls + " | " + row.note + " |\n";
  }
  out += "\ntimer: " + prof.value("timer", std::string("?")) + "; device " + r.value("device", std::string("?"));
  if (prof.contains("trace") && prof["trace"].is_object())
    out += "; trace " + prof["trace"]["path"].get<std::string>() + " (" +
           std::to_string(prof["trace"]["events"].get<long long>()) + " events)";
  out += "\n";
  return out;
}

}  // namespace balerbench
