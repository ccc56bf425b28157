// main.cpp: argv -> subcommand -> exit code. Bad input (InputError, option
// errors) prints one line and exits 2; output that could not be written (a full
// disk, a file-size limit, stdout included) exits 4; a meter's device lost
// mid-run exits 1 with its own line; anything else unexpected exits 1.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/text.h"
#include "harness/base/blas_kernel.h"
#include "harness/base/edit_distance.h"
#include "harness/cli/commands.h"
#include "harness/cli/output_check.h"
#include "harness/energy/energy_meter.h"
#include "harness/version.h"

namespace {

constexpr int kWriteFailedExitCode = 4;

// A word from the command line as an error shows it: printable ASCII, at most 40 bytes.
std::string shown(const char* word) {
  std::string s;
  for (const char* c = word; *c && s.size() < 40; ++c) s += (*c >= 0x20 && *c < 0x7F) ? *c : '?';
  return std::strlen(word) > 40 ? s + "..." : s;
}

// The error line for `what`: always one line, whatever it echoes (a value with a newline, bytes of a
// Latin-1 file, a bidirectional control), and of a length a terminal shows.
void print_error(const char* what) {
  std::fprintf(stderr, "balerbench: error: %s\n", balerbench::message_text(what, 4000).c_str());
}

// The commands parsed, from the top level down: {balerbench}, {balerbench, report}, ...
std::vector<const CLI::App*> parsed_commands(const CLI::App& app) {
  std::vector<const CLI::App*> chain = {&app};
  for (auto parsed = app.get_subcommands(); !parsed.empty(); parsed = chain.back()->get_subcommands())
    chain.push_back(parsed.front());
  return chain;
}

// The command the parse reached, as typed: "balerbench data generate".
std::string command_path(const CLI::App& app) {
  std::string path = "balerbench";
  for (const CLI::App* sub : parsed_commands(app))
    if (sub != &app) path += " " + sub->get_name();
  return path;
}

// The kind of value an option of the command being parsed takes, as its help names it
// ("INT:POSITIVE"); "" when unknown.
std::string option_kind(const CLI::App& app, const std::string& option) {
  const CLI::Option* o = parsed_commands(app).back()->get_option_no_throw(option);
  if (!o) return "";
  std::string kind = o->get_type_name();
  const auto colon = kind.find(':');  // a range check named as its type: "INT:INT" reads "INT"
  if (colon != std::string::npos && kind.substr(0, colon) == kind.substr(colon + 1)) kind.resize(colon);
  return kind;
}

// An option of the command being parsed given before that command's name ("balerbench data --kind cms
// generate"): where it goes instead; nullopt when `option` is not one or was not given before.
std::optional<std::string> option_before_command(const CLI::App& app, const std::string& option) {
  const std::vector<const CLI::App*> chain = parsed_commands(app);
  if (chain.size() < 2 || !chain.back()->get_option_no_throw(option)) return std::nullopt;
  for (std::size_t i = 0; i + 1 < chain.size(); ++i)
    for (const std::string& word : chain[i]->remaining())
      if (word == option || word.rfind(option + "=", 0) == 0)
        return option + " is an option of " + command_path(app) + ": give it after '" + chain.back()->get_name() +
               "' (" + command_path(app) + " " + option + " ...)";
  return std::nullopt;
}

// CLI11's "The following arguments were not expected: b a" (last first, split at spaces), in
// balerbench's words: an option the command does not have, with the closest one it has; else the
// first argument it did not expect, quoted, and how many more. The command named is the deepest one
// that kept arguments (an option given before the command is the top level's); arguments after "--"
// are values, whatever they look like.
std::optional<std::string> plain_extras_error(const CLI::App& app, const std::string& what, bool separator) {
  static const std::regex kExtras(R"(^The following arguments? (?:was|were) not expected: (.*)$)");
  std::smatch m;
  if (!std::regex_match(what, m, kExtras)) return std::nullopt;
  const std::vector<const CLI::App*> chain = parsed_commands(app);
  std::size_t at = chain.size() - 1;
  std::vector<std::string> extras;
  for (std::size_t i = chain.size(); i-- > 0 && !separator;)  // after "--", the command's own values
    if (!chain[i]->remaining().empty()) {
      at = i;
      extras = chain[i]->remaining();
      break;
    }
  if (extras.empty()) {  // after "--" (kept by the top level, whatever the command): CLI11's list, in order
    std::istringstream words(m[1].str());
    for (std::string w; words >> w;) extras.insert(extras.begin(), w);
  }
  extras.erase(std::remove(extras.begin(), extras.end(), "--"), extras.end());
  if (extras.empty()) return std::nullopt;
  std::string name = "balerbench";
  for (std::size_t i = 1; i <= at; ++i) name += " " + chain[i]->get_name();
  std::set<std::string> options;
  for (const CLI::Option* o : chain[at]->get_options())
    for (const std::string& long_name : o->get_lnames()) options.insert("--" + long_name);
  for (const std::string& extra : extras) {
    const std::string option = extra.substr(0, extra.find('='));
    if (separator || option.size() < 2 || option[0] != '-' || options.count(option)) continue;
    if (std::optional<std::string> early = option_before_command(app, option)) return early;
    const auto near = balerbench::closest_name(option, options);
    return name + " has no option " + shown(option.c_str()) + (near ? "; did you mean " + *near + "?" : "");
  }
  const std::size_t more = extras.size() - 1;
  return name + " did not expect the argument '" + shown(extras.front().c_str()) + "'" +
         (more ? " (and " + std::to_string(more) + " more)" : "") +
         (separator ? " after '--' (every argument after it is a value)" : ": is it a value whose option is missing?");
}

// Whether an option of the command being parsed is a switch (a flag: no value of its own).
bool is_flag(const CLI::App& app, const std::string& option) {
  const CLI::Option* o = parsed_commands(app).back()->get_option_no_throw(option);
  return o && o->get_expected_max() == 0;
}

// A command group without its command: the word given in its place, if any, with the closest command
// ("balerbench data genrate": did you mean 'generate'?); options given before the command (they go
// after it); else the commands it has.
std::string missing_command_error(const CLI::App& app) {
  const CLI::App* group = parsed_commands(app).back();
  std::set<std::string> names;
  std::string listed;
  for (const CLI::App* sub : group->get_subcommands([](const CLI::App*) { return true; })) {
    names.insert(sub->get_name());
    listed += (listed.empty() ? "" : ", ") + sub->get_name();
  }
  std::vector<std::string> words = group->remaining();
  if (words.empty()) words = app.remaining();  // CLI11 may keep a stray word at the top level
  for (const std::string& word : words) {
    if (word.empty()) continue;
    if (word[0] == '-')
      return command_path(app) + " needs a command before its options ('" + shown(word.c_str()) +
             "' came first): " + listed;
    const auto near = balerbench::closest_name(word, names);
    return "'" + shown(word.c_str()) + "' is not a command of " + command_path(app) +
           (near ? "; did you mean '" + *near + "'?" : " (its commands: " + listed + ")");
  }
  return command_path(app) + " needs a command: " + listed;
}

// CLI11's words for these mistakes, in balerbench's: a value of the wrong kind ("Could not convert:
// --trainings = 1.5"), an option given twice ("--tables: At Most 1 required but received 2"), an
// option without its value ("--config: 1 required TEXT missing"), a command group without its
// command ("A subcommand is required"), and arguments it did not expect (above).
std::string plain_parse_error(const CLI::App& app, const std::string& what, bool separator) {
  static const std::regex kConvert(R"(^Could not convert: (-[-\w]+) = (.*)$)");
  static const std::regex kTwice(R"(^(-[-\w]+): At Most 1 required but received (\d+)$)");
  static const std::regex kNoValue(R"(^(-[-\w]+): \d+ required \S+ missing$)");
  static const std::regex kPositional(R"(^(\w+) is required$)");
  static const std::regex kRequiredOption(R"(^(-[-\w]+) is required$)");
  static const std::regex kMissingPath(R"(^([-\w]+): (File|Directory|Path) does not exist: (.*)$)");
  std::smatch m;
  if (std::regex_match(what, m, kConvert)) {
    if (is_flag(app, m[1].str()))
      return m[1].str() + " is a switch: give it alone (or =true, =false), got " + m[2].str();
    const std::string kind = option_kind(app, m[1].str());
    const std::string plain = kind.rfind("INT", 0) == 0     ? " (a whole number)"
                              : kind.rfind("FLOAT", 0) == 0 ? " (a decimal number)"
                                                            : "";
    return m[1].str() + " takes " + (kind.empty() ? std::string("another kind of value") : kind + plain) + ", got " +
           m[2].str();
  }
  if (std::regex_match(what, m, kTwice)) return m[1].str() + " given " + m[2].str() + " times: give it once";
  if (std::regex_match(what, m, kNoValue)) return m[1].str() + " needs a value after it";
  if (std::regex_match(what, m, kMissingPath)) {
    std::string name = m[1].str();
    if (name[0] != '-')
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::string kind = m[2].str();
    kind[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(kind[0])));
    return name + ": no such " + kind + ": " + m[3].str();
  }
  if (std::regex_match(what, m, kRequiredOption))
    if (std::optional<std::string> early = option_before_command(app, m[1].str())) return *early;
  if (std::regex_match(what, m, kPositional)) {
    std::string name = m[1].str();
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return command_path(app) + " needs its " + name + " argument";
  }
  if (what == "A subcommand is required") return missing_command_error(app);
  if (std::optional<std::string> extras = plain_extras_error(app, what, separator)) return *extras;
  return what;
}

int parse_and_run(CLI::App& app, const balerbench::cli::Action& run, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The help of the command the error is in: `balerbench run --help`, or the top level's.
    const std::string command = command_path(app);
    // A misspelt command ("trian"): name it and the closest command, rather than CLI11's "A subcommand
    // is required".
    if (command == "balerbench" && argc > 1 && argv[1][0] != '-') {
      std::set<std::string> names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) names.insert(sub->get_name());
      if (!names.count(argv[1])) {
        const auto near = balerbench::closest_name(argv[1], names);
        std::fprintf(stderr, "balerbench: error: '%s' is not a command%s (hint: balerbench --help lists them)\n",
                     shown(argv[1]).c_str(),
                     near ? ("; did you mean '" + *near + "'?").c_str() : "");
        return 2;
      }
    }
    bool separator = false;  // a "--" on the command line: what follows it is values
    for (int i = 1; i < argc; ++i) separator = separator || std::strcmp(argv[i], "--") == 0;
    print_error((plain_parse_error(app, e.what(), separator) + " (hint: " + command + " --help)").c_str());
    return 2;
  }
  try {
    return run ? run() : 0;
  } catch (const balerbench::InputError& e) {
    print_error(e.what());
    return 2;
  } catch (const balerbench::WriteError& e) {
    print_error(e.what());
    return kWriteFailedExitCode;
  } catch (const balerbench::MeterLost& e) {
    print_error(e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // Data or a model larger than this machine's memory: what was asked for, not a fault of balerbench.
    std::fprintf(stderr,
                 "balerbench: error: out of memory: the data or the model asked for more memory than this machine "
                 "gives (hint: use fewer rows or smaller dimensions, or a machine with more memory)\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "balerbench: internal error: %s\n", e.what());
    return 1;
  }
}

// A command's output that did not reach stdout is a failure, whatever the command returned.
int close_stdout_or_fail(int exit_code) {
  try {
    balerbench::cli::close_stdout();
  } catch (const balerbench::WriteError& e) {
    print_error(e.what());
    return exit_code == 0 ? kWriteFailedExitCode : exit_code;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  // The BLAS kernel first: a switch re-executes this program before anything else runs.
  if (argc > 1 && std::strcmp(argv[1], "__blas-check") == 0) return balerbench::blas_check_main(argc, argv);
  balerbench::ensure_blas_kernel(argc, argv);
  // A file-size limit then fails the write (EFBIG), which is reported, instead of killing balerbench.
  balerbench::cli::ignore_file_size_signal();
  CLI::App app{"balerbench: Baler's autoencoder compression cycle in LibTorch, measured", "balerbench"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("balerbench ") + balerbench::kVersion);
  balerbench::cli::Action run;
  balerbench::cli::register_data(app, run);
  balerbench::cli::register_model_info(app, run);
  balerbench::cli::register_cycle(app, run);
  balerbench::cli::register_meters(app, run);
  balerbench::cli::register_doctor(app, run);
  balerbench::cli::register_measure(app, run);
  balerbench::cli::register_wattmeter(app, run);
  balerbench::cli::register_serve_metrics(app, run);
  balerbench::cli::register_run(app, run);
  balerbench::cli::register_report(app, run);
  balerbench::cli::register_merge(app, run);
  balerbench::cli::register_system(app, run);
  balerbench::cli::register_config(app, run);
  balerbench::cli::register_replay(app, run);
  return close_stdout_or_fail(parse_and_run(app, run, argc, argv));
}
