// zeus_trace.cpp: see zeus_trace.h.
#include "harness/tuning/zeus_trace.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "common/error.h"
#include "common/paths.h"
#include "common/text.h"

namespace balerbench {
namespace {

constexpr char kReadme[] = "README.md beside Zeus's traces describes the columns";

// One CSV line split at commas (the traces quote nothing); the line's number for errors.
struct Line {
  int64_t number = 0;
  std::vector<std::string> fields;
};

// A field as an error shows it: quoted, on one line, cut after 40 bytes.
std::string shown_field(const std::string& s) { return "'" + message_text(s, 40) + "'"; }

// The text after a UTF-8 byte-order mark (configs take one too; a spreadsheet's "CSV UTF-8" writes
// it); UTF-16, which Windows tools write, is an error that says so.
std::size_t text_start(const std::string& text, const std::string& file) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) return 3;
  if (text.rfind("\xFF\xFE", 0) == 0 || text.rfind("\xFE\xFF", 0) == 0)
    throw InputError(file + ": is UTF-16 text, not UTF-8", "save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)");
  return 0;
}

// A decimal number as a trace writes it: [+-]digits[.digits][(e|E)[+-]digits], a digit on one side
// of the point at least. Not strtod's wider grammar: "0x10" is no 16 W, "inf" no measurement.
bool decimal_number(const std::string& s) {
  std::size_t i = 0, digits = 0;
  const auto run = [&] {
    const std::size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - from;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  digits += run();
  if (i < s.size() && s[i] == '.') {
    ++i;
    digits += run();
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (run() == 0) return false;
  }
  return i == s.size();
}

std::string json_number(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::vector<Line> split_lines(const std::string& text, const std::string& file) {
  std::vector<Line> lines;
  int64_t number = 0;
  std::size_t begin = text_start(text, file);
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    ++number;
    if (end - begin > kMaxTraceLineBytes)
      throw InputError(file + ":" + std::to_string(number) + ": a line of " + std::to_string(end - begin) +
                           " bytes, longer than a trace's lines (at most " + std::to_string(kMaxTraceLineBytes) + ")",
                       "check the file: is it a Zeus trace CSV?");
    std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) {
      if (end == text.size()) break;
      continue;
    }
    if (line.find('"') != std::string::npos)
      throw InputError(file + ":" + std::to_string(number) + ": a quoted field",
                       "Zeus's traces quote nothing; write the values plainly, separated by commas");
    if (line.find('\r') != std::string::npos)  // what is left after the line's own \r\n
      throw InputError(file + ":" + std::to_string(number) + ": a carriage return inside a line (lines ending in "
                           "\\r alone?)",
                       "end each line with \\n or \\r\\n (e.g. tr '\\r' '\\n')");
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
    // Shown in every table: nothing in it may hide or reorder what it says (U+202E, a C1 control).
    if (const std::string problem = hidden_character_problem(s); !problem.empty())
      fail(column, shown_field(s) + " " + problem, "a name of printable characters, e.g. cifar100");
    return s;
  }
  // A finite decimal number (NaN, infinity and hexadecimal refused, with the hint of a missing
  // measurement for NaN). One too small for a double (1e-320) reads as the nearest: strtod's ERANGE
  // for an underflow is no error.
  double number(const std::string& column) const {
    const std::string& s = text(column);
    if (s.empty()) fail(column, "empty", "a trace line needs every measured value; remove the line if it has none");
    if (s == "nan" || s == "NaN" || s == "NAN" || s == "-nan")
      fail(column, "NaN",
           "a measurement that is missing cannot be replayed; remove the line (only target_epoch may "
           "be nan, for a run that never reached its target)");
    const double v = std::strtod(s.c_str(), nullptr);
    if (decimal_number(s) && std::isfinite(v)) return v;
    if (decimal_number(s) || std::isinf(v))  // 1e999, inf, -Infinity
      fail(column, shown_field(s) + " is not a finite number", "check the value");
    fail(column, shown_field(s) + " is not a number", "write a decimal number, e.g. 250 or 1.5e2 (not hexadecimal)");
  }
  // A positive number of at most `max_value`, `unit` naming what it measures.
  double positive(const std::string& column, double max_value = 1e300, const char* unit = "") const {
    const double v = number(column);
    if (!(v > 0)) fail(column, shown_field(text(column)) + " is not positive", "a measured value above 0");
    if (v > max_value)
      fail(column, shown_field(text(column)) + " is more than a trace can hold (" + json_number(max_value) + unit + ")",
           "check the value: a typo, or the wrong unit?");
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
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > kMaxTraceBytes)
    throw InputError(path + ": " + std::to_string(size) + " bytes, more than a " + what + " holds (at most " +
                         std::to_string(kMaxTraceBytes >> 20) + " MiB)",
                     "check the path: Zeus's traces are some 30 KB");
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

namespace {

// What tells one kind of trace from the other: its columns, and its words for a bad file.
struct TraceKind {
  std::vector<std::string> required;
  const char* columns;       // the header, as the hint names it
  const char* other_column;  // a column of the other kind of trace: that file given here
  const char* other_trace;
  const char* one_line_hint;  // a second line for the same configuration
  const char* holds;          // no data lines
};

// A trace's data lines, each read by `read` into a row; a second line with the same `key_of` is
// refused, naming the first. `second` says which configuration it repeats.
template <typename Trace, typename Read, typename KeyOf, typename Second>
Trace parse_trace(const std::string& text, const std::string& file, const TraceKind& kind, Read read, KeyOf key_of,
                  Second second) {
  const std::vector<Line> lines = split_lines(text, file);
  check_not_empty(lines, file, kind.columns);
  const Columns c(lines[0], kind.required, file, kind.columns, kind.other_column, kind.other_trace);
  Trace t;
  t.file = file;
  std::map<decltype(key_of(t.rows.front())), int64_t> seen;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const Fields f(lines[i], c, file);
    auto r = read(f, c);
    r.line = lines[i].number;
    const auto key = key_of(r);
    if (const auto it = seen.find(key); it != seen.end())
      f.fail("", second(r, f) + " (the first is line " + std::to_string(it->second) + ")", kind.one_line_hint);
    seen[key] = r.line;
    t.rows.push_back(std::move(r));
  }
  if (t.rows.empty()) throw InputError(file + ": no data lines after the header", kind.holds);
  return t;
}

}  // namespace

TrainTrace parse_train_trace(const std::string& text, const std::string& file) {
  static const TraceKind kTrain{
      {"dataset", "network", "batch_size", "optimizer", "run", "target_metric", "target_epoch"},
      kTrainTraceColumns, "power_limit", "power trace", "keep one line per run and target",
      "a train trace holds one line per run and target"};
  const auto read = [](const Fields& f, const Columns& c) {
    TrainRow r;
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
    return r;
  };
  const auto key = [](const TrainRow& r) {
    return std::make_tuple(r.dataset, r.network, r.optimizer, r.batch_size, r.run, r.target_metric);
  };
  const auto second = [](const TrainRow& r, const Fields& f) {
    return "a second line for run " + std::to_string(r.run) + " of " + r.dataset + "/" + r.network + "/" +
           r.optimizer + " at batch size " + std::to_string(r.batch_size) + " and target " + f.text("target_metric");
  };
  return parse_trace<TrainTrace>(text, file, kTrain, read, key, second);
}

PowerTrace parse_power_trace(const std::string& text, const std::string& file) {
  static const TraceKind kPower{
      {"dataset", "network", "batch_size", "optimizer", "power_limit", "time_per_epoch", "average_power"},
      kPowerTraceColumns, "target_epoch", "train trace", "a power trace measures each configuration once; keep one line",
      "a power trace holds one line per batch size and limit"};
  const auto read = [](const Fields& f, const Columns&) {
    PowerRow r;
    r.dataset = f.name("dataset");
    r.network = f.name("network");
    r.optimizer = f.name("optimizer");
    r.batch_size = f.whole("batch_size", 1);
    r.power_limit_w = f.positive("power_limit", kMaxTraceWatts, " W");
    r.time_per_epoch_s = f.positive("time_per_epoch", kMaxTraceSeconds, " s");
    r.average_power_w = f.positive("average_power", kMaxTraceWatts, " W");
    return r;
  };
  const auto key = [](const PowerRow& r) {
    return std::make_tuple(r.dataset, r.network, r.optimizer, r.batch_size, r.power_limit_w);
  };
  const auto second = [](const PowerRow& r, const Fields& f) {
    return "a second line for " + r.dataset + "/" + r.network + "/" + r.optimizer + " at batch size " +
           std::to_string(r.batch_size) + " and " + f.text("power_limit") + " W";
  };
  return parse_trace<PowerTrace>(text, file, kPower, read, key, second);
}

TrainTrace read_train_trace(const std::string& path) { return parse_train_trace(read_file(path, "train trace"), path); }

PowerTrace read_power_trace(const std::string& path) { return parse_power_trace(read_file(path, "power trace"), path); }

}  // namespace balerbench
