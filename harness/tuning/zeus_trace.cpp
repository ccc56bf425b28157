// zeus_trace.cpp: see zeus_trace.h.
#include "harness/tuning/zeus_trace.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "common/paths.h"

namespace balerbench {
namespace {

constexpr char kReadme[] = "README.md beside Zeus's traces describes the columns";

// One CSV line split at commas (the traces quote nothing); the line's number for errors.
struct Line {
  int64_t number = 0;
  std::vector<std::string> fields;
};

std::string shown_field(const std::string& s) {
  std::string out = "'";
  for (char c : s.substr(0, 40)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  return out + (s.size() > 40 ? "...'" : "'");
}

std::vector<Line> split_lines(const std::string& text, const std::string& file) {
  std::vector<Line> lines;
  int64_t number = 0;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    ++number;
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      if (end == text.size()) break;
      continue;
    }
    if (line.find('"') != std::string::npos)
      throw InputError(file + ":" + std::to_string(number) + ": a quoted field",
                       "Zeus's traces quote nothing; write the values plainly, separated by commas");
    if (line.find('\0') != std::string::npos)
      throw InputError(file + ":" + std::to_string(number) + ": a NUL byte", "a trace is a text CSV file");
    Line l;
    l.number = number;
    std::size_t from = 0;
    while (true) {
      const std::size_t comma = line.find(',', from);
      std::string f = line.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      const auto a = f.find_first_not_of(" \t"), b = f.find_last_not_of(" \t");
      l.fields.push_back(a == std::string::npos ? "" : f.substr(a, b - a + 1));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    lines.push_back(std::move(l));
    if (end == text.size()) break;
  }
  return lines;
}

// The header's columns by name, each required one present.
class Columns {
 public:
  Columns(const Line& header, const std::vector<std::string>& required, const std::string& file,
          const char* all_columns, const char* other_kind_column, const char* other_kind) {
    for (std::size_t i = 0; i < header.fields.size(); ++i) {
      const std::string& name = header.fields[i];
      if (index_.count(name))
        throw InputError(file + ":" + std::to_string(header.number) + ": column " + shown_field(name) + " twice",
                         "name each column once");
      index_[name] = i;
    }
    for (const std::string& name : required)
      if (!index_.count(name)) {
        std::string hint = std::string("its columns are ") + all_columns + "; " + kReadme;
        if (index_.count(other_kind_column))
          hint = std::string("this looks like a ") + other_kind + " (it has '" + other_kind_column +
                 "'): check which file goes to which option; " + hint;
        throw InputError(file + ":" + std::to_string(header.number) + ": no column '" + name + "'", hint);
      }
    width_ = header.fields.size();
  }
  std::size_t width() const { return width_; }
  std::size_t operator[](const std::string& name) const { return index_.at(name); }
  bool has(const std::string& name) const { return index_.count(name) != 0; }

 private:
  std::map<std::string, std::size_t> index_;
  std::size_t width_ = 0;
};

// Reads the named fields of one line, each an InputError at file:line naming the column.
class Fields {
 public:
  Fields(const Line& l, const Columns& c, const std::string& file) : l_(l), c_(c), file_(file) {
    if (l.fields.size() != c.width())
      fail("", std::to_string(l.fields.size()) + " fields where the header has " + std::to_string(c.width()),
           "one value per column, separated by commas");
  }
  [[noreturn]] void fail(const std::string& column, const std::string& what, const std::string& hint) const {
    throw InputError(file_ + ":" + std::to_string(l_.number) + ": " + (column.empty() ? "" : column + ": ") + what,
                     hint);
  }
  const std::string& text(const std::string& column) const { return l_.fields[c_[column]]; }
  std::string name(const std::string& column) const {
    const std::string& s = text(column);
    if (s.empty()) fail(column, "empty", "every line names its dataset, network and optimizer");
    return s;
  }
  // A finite number (NaN and infinity refused, with the hint of a missing measurement).
  double number(const std::string& column) const {
    const std::string& s = text(column);
    if (s.empty()) fail(column, "empty", "a trace line needs every measured value; remove the line if it has none");
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0') fail(column, shown_field(s) + " is not a number", "write a decimal number");
    if (std::isnan(v))
      fail(column, "NaN",
           "a measurement that is missing cannot be replayed; remove the line (only target_epoch may "
           "be nan, for a run that never reached its target)");
    if (!std::isfinite(v) || errno == ERANGE)
      fail(column, shown_field(s) + " is not a finite number", "check the value");
    return v;
  }
  double positive(const std::string& column) const {
    const double v = number(column);
    if (!(v > 0)) fail(column, shown_field(text(column)) + " is not positive", "a measured value above 0");
    return v;
  }
  int64_t whole(const std::string& column, int64_t min) const {
    const double v = number(column);
    if (v != std::floor(v) || v < static_cast<double>(min) || v > 9.0e15)
      fail(column, shown_field(text(column)) + " is not a whole number of at least " + std::to_string(min), "e.g. 256");
    return static_cast<int64_t>(v);
  }

 private:
  const Line& l_;
  const Columns& c_;
  const std::string& file_;
};

std::string read_file(const std::string& path, const char* what) {
  check_input_file(path, what, "give the path of a Zeus trace CSV, e.g. ../shared/data/zeus_nsdi23/summary_train.csv");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the " + std::string(what), "check its permissions");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot read the " + std::string(what), "check the file");
  return s.str();
}

void check_not_empty(const std::vector<Line>& lines, const std::string& file, const char* columns) {
  if (lines.empty()) throw InputError(file + ": empty: no header line", std::string("the header names ") + columns);
}

}  // namespace

TrainTrace parse_train_trace(const std::string& text, const std::string& file) {
  const std::vector<Line> lines = split_lines(text, file);
  check_not_empty(lines, file, kTrainTraceColumns);
  const Columns c(lines[0], {"dataset", "network", "batch_size", "optimizer", "run", "target_metric", "target_epoch"},
                  file, kTrainTraceColumns, "power_limit", "power trace");
  TrainTrace t;
  t.file = file;
  std::map<std::tuple<std::string, std::string, std::string, int64_t, int64_t, double>, int64_t> seen;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const Fields f(lines[i], c, file);
    TrainRow r;
    r.line = lines[i].number;
    r.dataset = f.name("dataset");
    r.network = f.name("network");
    r.optimizer = f.name("optimizer");
    r.batch_size = f.whole("batch_size", 1);
    r.run = f.whole("run", 0);
    r.target_metric = f.number("target_metric");
    if (c.has("learning_rate") && !f.text("learning_rate").empty()) r.learning_rate = f.positive("learning_rate");
    const std::string& epoch = f.text("target_epoch");
    if (!(epoch.empty() || epoch == "nan" || epoch == "NaN" || epoch == "NAN"))
      r.target_epoch = f.whole("target_epoch", 1);
    const auto key = std::make_tuple(r.dataset, r.network, r.optimizer, r.batch_size, r.run, r.target_metric);
    if (const auto it = seen.find(key); it != seen.end())
      f.fail("",
             "a second line for run " + std::to_string(r.run) + " of " + r.dataset + "/" + r.network + "/" +
                 r.optimizer + " at batch size " + std::to_string(r.batch_size) + " and target " +
                 f.text("target_metric") + " (the first is line " + std::to_string(it->second) + ")",
             "keep one line per run and target");
    seen[key] = r.line;
    t.rows.push_back(std::move(r));
  }
  if (t.rows.empty())
    throw InputError(file + ": no data lines after the header", "a train trace holds one line per run and target");
  return t;
}

PowerTrace parse_power_trace(const std::string& text, const std::string& file) {
  const std::vector<Line> lines = split_lines(text, file);
  check_not_empty(lines, file, kPowerTraceColumns);
  const Columns c(lines[0],
                  {"dataset", "network", "batch_size", "optimizer", "power_limit", "time_per_epoch", "average_power"},
                  file, kPowerTraceColumns, "target_epoch", "train trace");
  PowerTrace t;
  t.file = file;
  std::map<std::tuple<std::string, std::string, std::string, int64_t, double>, int64_t> seen;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const Fields f(lines[i], c, file);
    PowerRow r;
    r.line = lines[i].number;
    r.dataset = f.name("dataset");
    r.network = f.name("network");
    r.optimizer = f.name("optimizer");
    r.batch_size = f.whole("batch_size", 1);
    r.power_limit_w = f.positive("power_limit");
    r.time_per_epoch_s = f.positive("time_per_epoch");
    r.average_power_w = f.positive("average_power");
    const auto key = std::make_tuple(r.dataset, r.network, r.optimizer, r.batch_size, r.power_limit_w);
    if (const auto it = seen.find(key); it != seen.end())
      f.fail("",
             "a second line for " + r.dataset + "/" + r.network + "/" + r.optimizer + " at batch size " +
                 std::to_string(r.batch_size) + " and " + f.text("power_limit") + " W (the first is line " +
                 std::to_string(it->second) + ")",
             "a power trace measures each configuration once; keep one line");
    seen[key] = r.line;
    t.rows.push_back(std::move(r));
  }
  if (t.rows.empty())
    throw InputError(file + ": no data lines after the header",
                     "a power trace holds one line per batch size and limit");
  return t;
}

TrainTrace read_train_trace(const std::string& path) { return parse_train_trace(read_file(path, "train trace"), path); }

PowerTrace read_power_trace(const std::string& path) { return parse_power_trace(read_file(path, "power trace"), path); }

}  // namespace balerbench
