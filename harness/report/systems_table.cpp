// systems_table.cpp: --table systems: each system the trials ran on (CPU, BLAS, threads, LibTorch,
// GPUs, environment, hosts), with its trial counts and first and last trial times.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "harness/report/table_cells.h"
#include "harness/report/trial_groups.h"
#include "harness/report/trial_identity.h"

namespace balerbench::report {

using nlohmann::json;

// report --table systems: one row per system the trials ran on.
std::vector<Table> make_systems_tables(const std::vector<TrialRecord>& trials, const TableOptions&) {
  Table t;
  t.name = "systems";
  t.title = "Systems the trials ran on";
  t.columns = {"system", "label", "cpu", "blas", "threads", "libtorch", "gpus", "env", "hosts", "trials", "finished",
               "warmups", "first_trial_utc", "last_trial_utc"};
  for (const auto& s : systems_in(trials)) {
    // The description of the system's last trial (the newest record of it), threads and hosts from all.
    const SystemDescription d = describe_trial_system(*s.trials.back());
    std::vector<std::string> threads, hosts;
    int64_t finished_n = 0, warmups = 0;
    double first = INFINITY, last = 0;
    for (const auto* r : s.trials) {
      const SystemDescription e = describe_trial_system(*r);
      if (e.threads) threads.push_back(std::to_string(*e.threads));
      hosts.push_back(e.host);
      finished_n += r->status == TrialStatus::kOk && !is_warmup(*r);
      warmups += is_warmup(*r);
      if (r->started_unix_s > 0) first = std::min(first, r->started_unix_s);
      last = std::max(last, std::max(r->finished_unix_s, r->started_unix_s));
    }
    t.rows.push_back({s.id.fingerprint, s.id.label, d.cpu, d.blas, distinct_joined(threads), d.torch, d.gpus, d.env,
                      distinct_joined(hosts), static_cast<int64_t>(s.trials.size()), finished_n, warmups,
                      utc_time(first), utc_time(last)});
  }
  t.decision_columns = {"system", "label", "threads", "trials", "finished", "warmups"};
  t.notes.push_back(
      "A system is the machine with its BLAS library and kernel, the LibTorch build and the environment variables "
      "that change speed or numerics (provenance.system; its fingerprint hashes them). Trials recorded before system "
      "fingerprints are grouped by their hardware label (legacy-...: BLAS and environment not known). Every other "
      "table compares trials of one system only; --table across puts systems side by side.");
  t.notes.push_back("threads: the intra-op threads the trials trained with (each value seen); trials: every stored "
                    "trial, finished: those in the statistics (warm-ups left out).");
  return {t};
}

}  // namespace balerbench::report
