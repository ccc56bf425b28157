// grid.cpp: the trials of an experiment (experiment.h): the grid expanded in order, each trial's
// spec and key (the dataset named by its content, the system by its fingerprint), the order a run
// takes them in, warm-up trials, and shards of the grid for job arrays.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/paths.h"
#include "harness/base/strict_json.h"
#include "harness/base/system_info.h"
#include "harness/sweep/experiment.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A file's content hash: 64-bit words through two multiply-xorshift lanes (fast on gigabytes;
// identity, not security).
std::string file_content_hash(const std::string& path, uint64_t& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  uint64_t a = 0x9E3779B97F4A7C15ULL, b = 0xC2B2AE3D27D4EB4FULL;
  std::vector<char> buf(1 << 20);
  bytes = 0;
  auto mix = [](uint64_t h, uint64_t w) {
    h ^= w * 0xFF51AFD7ED558CCDULL;
    h = (h << 31) | (h >> 33);
    return h * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  };
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::size_t n = static_cast<std::size_t>(in.gcount());
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      uint64_t w1, w2;
      std::memcpy(&w1, buf.data() + i, 8);
      std::memcpy(&w2, buf.data() + i + 8, 8);
      a = mix(a, w1);
      b = mix(b, w2);
    }
    for (; i < n; ++i) a = mix(a, static_cast<unsigned char>(buf[i]) | (static_cast<uint64_t>(i) << 8));
    bytes += n;
  }
  b = mix(b, bytes);
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return out;
}

// One point of the grid: a value of each axis, and the repeat.
struct GridPoint {
  std::string model;
  double compression_ratio = 0;
  int64_t batch_size = 0;
  Precision precision = Precision::kAuto;
  EngineKind engine = EngineKind::kAuto;
  std::optional<double> power_limit_w;
  int64_t epochs = 0, repeat = 0;
};

// The grid's first configuration (warm-ups, and the axes the recurrences hold fixed).
GridPoint first_point(const Experiment& e) {
  return {e.models.front(),  e.compression_ratios.front(), e.batch_sizes.front(), e.precisions.front(),
          e.engines.front(), e.power_limits_w.front(),     e.epochs.front(),      0};
}

// The run config of the trial at `at`: the experiment's, with the point's values. The model and ratio
// are the run config's own keys, as they were when only /model gave them: an experiment with one of
// each keys its trials as before.
RunConfig config_at(const Experiment& e, const GridPoint& at) {
  RunConfig c = e.base;
  c.model_name = at.model;
  c.compression_ratio = at.compression_ratio;
  c.batch_size = at.batch_size;
  c.epochs = at.epochs;
  c.precision = at.precision;
  c.engine = at.engine;
  c.seed = e.base.seed + at.repeat;
  return c;
}

TrialSpec make_trial(const Experiment& e, int64_t index, const GridPoint& at, const json& dataset_id,
                     const std::string& fingerprint, const std::optional<RecurrenceAttempt>& recurrence = std::nullopt) {
  TrialSpec t;
  t.grid_index = index;
  t.repeat = at.repeat;
  t.power_limit_w = at.power_limit_w;
  t.config = config_at(e, at);
  t.labels_model = e.models.size() > 1;
  t.labels_ratio = e.compression_ratios.size() > 1;
  json run = t.config.to_json();
  run.erase("monitoring");  // live monitoring does not shape the measurement
  run.erase("progress");
  run.erase("progress_interval_s");
  t.spec = {{"experiment", e.name},
            {"dataset", e.dataset.to_json()},
            {"run_config", run},
            {"power_limit_w", at.power_limit_w ? json(*at.power_limit_w) : json(nullptr)},
            {"repeat", at.repeat},
            {"target", e.target.to_json()},
            {"cooldown_s", e.cooldown_s},
            {"power_limit_optimizer", e.optimizer.to_json()}};
  // Only with the batch-size optimiser: the keys of grid trials stay as they were.
  if (recurrence) {
    t.recurrence = recurrence;
    // What the choices depend on: the arms and the optimiser's settings, not how many recurrences
    // there are or how many attempts one may take (so a run with more recurrences resumes these).
    json settings = e.batch_size_optimizer.to_json();
    settings.erase("recurrences");
    settings.erase("max_attempts");
    settings["batch_sizes"] = e.batch_sizes;
    t.spec["batch_size_optimizer"] = settings;
    t.spec["recurrence"] = recurrence->to_json();
  }
  // Only with the thermal protocol on: every other trial's spec, and key, stays as it was.
  if (e.thermal.enabled) t.spec["thermal"] = e.thermal.to_json();
  // The key names the data by content and no path: the input path in the run config is the
  // dataset's own, so it leaves the key too.
  json keyed = t.spec;
  keyed["dataset"] = dataset_id;
  if (keyed["run_config"].contains("input_path")) keyed["run_config"].erase("input_path");
  t.spec_key = spec_hash(keyed);
  t.key = fingerprint.empty() ? t.spec_key : text_hash(t.spec_key + "@" + fingerprint);
  return t;
}

}  // namespace

json dataset_identity(const DatasetSpec& d) {
  if (d.path.empty()) return d.to_json();
  std::error_code ec;
  if (!fs::is_regular_file(d.path, ec)) return d.to_json();  // not a file (a device, a pipe): named by its path
  uint64_t bytes = 0;
  const std::string hash = file_content_hash(d.path, bytes);
  if (hash.empty()) return d.to_json();  // unreadable: loading it fails with its own message
  return {{"content_hash", hash}, {"bytes", bytes}};
}

Grid::Grid(const Experiment& e, std::string system_fingerprint)
    : e_(&e), fingerprint_(std::move(system_fingerprint)), dataset_id_(dataset_identity(e.dataset)), size_(e.grid_size()) {}

TrialSpec Grid::at(int64_t index) const {
  const Experiment& e = *e_;
  // Mixed radix, repeats innermost: index = (((((((m * C + c) * B + bs) * P + p) * E + en) * L + pl) * Ep + ep) * R
  // + rep); with one model and one ratio, the numbering of the grid before those axes.
  int64_t rest = index;
  auto digit = [&rest](std::size_t radix) {
    const auto d = static_cast<std::size_t>(rest % static_cast<int64_t>(radix));
    rest /= static_cast<int64_t>(radix);
    return d;
  };
  const int64_t rep = rest % e.repeats;
  rest /= e.repeats;
  const std::size_t ep = digit(e.epochs.size()), pl = digit(e.power_limits_w.size()), en = digit(e.engines.size());
  const std::size_t p = digit(e.precisions.size()), bs = digit(e.batch_sizes.size());
  const std::size_t c = digit(e.compression_ratios.size()), m = digit(e.models.size());
  const GridPoint at{e.models[m],  e.compression_ratios[c], e.batch_sizes[bs], e.precisions[p],
                     e.engines[en], e.power_limits_w[pl],    e.epochs[ep],      rep};
  return make_trial(e, index, at, dataset_id_, fingerprint_);
}

std::vector<TrialSpec> expand_grid(const Experiment& e, const std::string& system_fingerprint) {
  const Grid grid(e, system_fingerprint);
  std::vector<TrialSpec> out;
  out.reserve(static_cast<std::size_t>(grid.size()));
  for (int64_t i = 0; i < grid.size(); ++i) out.push_back(grid.at(i));
  return out;
}

TrialSpec recurrence_trial(const Experiment& e, const RecurrenceAttempt& attempt, int64_t index,
                           const std::string& system_fingerprint) {
  // Each attempt is a training run of its own, as each recurrence of a real job: repeat and seed
  // offset are its number (seed training.seed + index).
  GridPoint at = first_point(e);
  at.batch_size = attempt.plan.batch_size;
  at.power_limit_w = attempt.plan.power_limit_w;
  at.repeat = index;
  return make_trial(e, index, at, dataset_identity(e.dataset), system_fingerprint, attempt);
}

std::vector<int64_t> run_order(const Experiment& e, const std::vector<int64_t>& grid_indices) {
  std::vector<int64_t> order = grid_indices;
  if (e.order == "grid") return order;
  // Rounds: repeat 0 of every configuration, then repeat 1, ...; within a round, grid order or a
  // shuffle drawn from (order_seed, round).
  auto repeat = [&e](int64_t index) { return index % e.repeats; };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::make_pair(repeat(a), a) < std::make_pair(repeat(b), b);
  });
  if (e.order == "shuffled") {
    std::size_t begin = 0;
    while (begin < order.size()) {
      std::size_t end = begin;
      while (end < order.size() && repeat(order[end]) == repeat(order[begin])) ++end;
      std::mt19937_64 rng(static_cast<uint64_t>(e.order_seed) * 1000003ULL + static_cast<uint64_t>(repeat(order[begin])));
      for (std::size_t i = end - begin; i > 1; --i) {  // Fisher-Yates with the generator's raw draws: portable
        const std::size_t j = static_cast<std::size_t>(rng() % i);
        std::swap(order[begin + i - 1], order[begin + j]);
      }
      begin = end;
    }
  }
  return order;
}

std::vector<std::size_t> run_order(const Experiment& e, const std::vector<const TrialSpec*>& trials) {
  std::vector<int64_t> indices;
  std::map<int64_t, std::size_t> position;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    indices.push_back(trials[i]->grid_index);
    position[trials[i]->grid_index] = i;
  }
  std::vector<std::size_t> out;
  for (int64_t index : run_order(e, indices)) out.push_back(position.at(index));
  return out;
}

TrialSpec warmup_trial(const Experiment& e, int64_t n, const std::string& run_id, const std::string& system_fingerprint) {
  TrialSpec t = make_trial(e, -1 - n, first_point(e), dataset_identity(e.dataset), "");
  t.warmup = true;
  t.repeat = -1 - n;
  t.spec["warmup"] = {{"run_id", run_id}, {"number", n}};
  t.spec["repeat"] = nullptr;
  t.key = text_hash(t.spec_key + "@warmup@" + run_id + "#" + std::to_string(n) + "@" + system_fingerprint);
  return t;
}

namespace {

// A count in digits only (no sign, no space), at most 18 of them (below int64's range); nullopt otherwise.
std::optional<int64_t> digits_value(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(s);
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const std::string shown_text = shown(json(text));  // quoted, a control character escaped
  if (text.empty())
    throw InputError("--shard \"\": expected i/N with 0 <= i < N (an unset shell variable?)",
                     "e.g. --shard 0/4 ... --shard 3/4 split the grid into four slices; leave --shard out for the whole grid");
  const auto slash = text.find('/');
  const std::optional<int64_t> index = slash == std::string::npos ? std::nullopt : digits_value(text.substr(0, slash));
  const std::optional<int64_t> count = slash == std::string::npos ? std::nullopt : digits_value(text.substr(slash + 1));
  if (!index || !count)
    throw InputError("--shard " + shown_text + ": expected i/N with 0 <= i < N, each at most 18 digits, nothing else",
                     "e.g. --shard 0/4 ... --shard 3/4 split the grid into four slices");
  if (*count < 1 || *index >= *count)
    throw InputError("--shard " + shown_text + ": expected i/N with 0 <= i < N",
                     "e.g. --shard 0/4 ... --shard 3/4 split the grid into four slices");
  return Shard{*index, *count};
}

std::optional<Shard> shard_from_slurm_env() {
  const char* id = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* count = std::getenv("SLURM_ARRAY_TASK_COUNT");
  const char* min = std::getenv("SLURM_ARRAY_TASK_MIN");
  if ((!id || !*id) && (!count || !*count)) return std::nullopt;  // not a job array
  const std::string id_text = id ? id : "", count_text = count ? count : "", min_text = min ? min : "";
  const std::optional<int64_t> i = digits_value(id_text), n = digits_value(count_text);
  const std::optional<int64_t> first = min_text.empty() ? std::optional<int64_t>(0) : digits_value(min_text);
  if (!i || !n || !first)
    throw InputError("SLURM_ARRAY_TASK_ID=" + shown(json(id_text)) + ", SLURM_ARRAY_TASK_COUNT=" + shown(json(count_text)) +
                         (min_text.empty() ? std::string() : ", SLURM_ARRAY_TASK_MIN=" + shown(json(min_text))) +
                         ": not a job array's task (each must be a whole number, digits only)",
                     "run inside a job array (#SBATCH --array=0-N), unset them, or pass --shard i/N");
  const Shard s{*i - *first, *n};
  if (s.count < 1 || s.index < 0 || s.index >= s.count)
    throw InputError(
        "Slurm array task " + std::to_string(s.index) + " of " + std::to_string(s.count) + " is outside the array",
        "use a contiguous array (#SBATCH --array=0-N), or pass --shard i/N");
  return s;
}

std::string spec_hash(const json& spec) {
  return text_hash(shown(spec));  // nlohmann sorts object keys: canonical
}

}  // namespace balerbench
