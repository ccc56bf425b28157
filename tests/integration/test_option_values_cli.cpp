// test_option_values_cli.cpp: values a user types or a file holds, refused before any work with exit
// code 2 on one clean line: NaN and infinity where a range is expected (doctor, meters, report,
// serve-metrics, replay), a --set with a newline or 100,000 digits, a config in Latin-1 or UTF-16;
// and the command line's own mistakes (unknown options, stray arguments, missing values).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/test_util.h"

namespace balerbench {
namespace {

class OptionValuesCli : public ::testing::Test {
 protected:
  CommandResult bb(const std::string& args) { return run_command("cd " + dir_.root() + " && " + balerbench_binary() + " " + args); }
  // The error's one line: the output is exactly "balerbench: error: ...\n", nothing after it.
  static void expect_one_error_line(const CommandResult& r, const std::string& fragment) {
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(r.out.rfind("balerbench: error: ", 0), 0u) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
    EXPECT_NE(r.out.find(fragment), std::string::npos) << r.out;
  }
  TempDir dir_;
};

// CLI::Range lets NaN through: every ranged number goes through option_checks.h's in_range.
TEST_F(OptionValuesCli, NanAndInfinityAreRefusedWhereARangeIsExpected) {
  expect_one_error_line(bb("doctor --interval nan"), "--interval: must be a number (got nan)");
  expect_one_error_line(bb("doctor --power-check nan"), "--power-check: must be a number (got nan)");
  expect_one_error_line(bb("meters --interval nan"), "--interval: must be a number (got nan)");
  expect_one_error_line(bb("report --db x.sqlite --min-effect nan"), "--min-effect: must be a number (got nan)");
  const auto abc = bb("report --db x.sqlite --min-effect abc");
  expect_one_error_line(abc, "--min-effect: 'abc' is not a number");
  EXPECT_EQ(abc.out.find("not in range"), std::string::npos) << abc.out;
  // NaN for --prometheus-linger reached the config as null, which reads as "not given" (0 s).
  expect_one_error_line(bb("serve-metrics --prometheus-linger nan"), "--prometheus-linger: must be a number (got nan)");
  // replay --target NaN read as "not given": the workload's default target, silently.
  expect_one_error_line(bb("replay --workload cifar100 --target nan"), "--target: must be a number (got nan)");
  expect_one_error_line(bb("replay --workload cifar100 --target inf"), "--target: must be at most");
  expect_one_error_line(bb("replay --workload cifar100 --power-limits 1e300"), "--power-limits: must be at most 100000");
}

// CLI11's own words for a value of the wrong kind and an option given twice, and sizes that std::stod
// would read otherwise than they are written (hexadecimal, infinity), each in balerbench's words.
TEST_F(OptionValuesCli, WrongKindsTwiceGivenOptionsAndSizesThatAreNotDecimalAreNamed) {
  expect_one_error_line(bb("report --db x.sqlite --table projection --dataset-bytes 1e9 --trainings 1.5"),
                        "--trainings takes INT:POSITIVE (a whole number), got 1.5");
  expect_one_error_line(bb("report --db x.sqlite --table projection --dataset-bytes 1e9 --trainings 99999999999999999999"),
                        "--trainings: must be at most");
  const auto twice = bb("report --db x.sqlite --table fidelity --table cost");
  expect_one_error_line(twice, "--table given 2 times: give it once");
  EXPECT_EQ(twice.out.find("At Most"), std::string::npos) << twice.out;
  EXPECT_EQ(twice.out.find("comma"), std::string::npos) << twice.out;  // --table takes one name
  for (const char* size : {"0x10", "inf", "1,5GB"})
    expect_one_error_line(bb(std::string("report --db x.sqlite --table projection --dataset-bytes ") + size),
                          std::string("'") + size + "' is not a size: a decimal number and a unit");
  expect_one_error_line(bb("report --db x.sqlite --table projection --dataset-bytes -5"), "must be a finite size above 0");
  expect_one_error_line(bb("report --db x.sqlite --table projection --dataset-bytes 1e-5"), "at least 1 byte");
  expect_one_error_line(bb("report --db x.sqlite --table projection --dataset-bytes 5e"), "'5e': a unit or an exponent?");
}

// The rest of CLI11's own words in balerbench's: an option the command lacks (with the closest one it
// has), arguments it did not expect (the first as typed, not CLI11's last-first list), an option
// without its value, a missing argument, a command group without its command (or with a misspelt
// one, or a command's option before its name), a switch given a value.
TEST_F(OptionValuesCli, UnknownOptionsStrayArgumentsAndMissingValuesAreNamed) {
  expect_one_error_line(bb("train --confg c.json"), "balerbench train has no option --confg; did you mean --config?");
  expect_one_error_line(bb("report --db x.sqlite --bogus=3"), "balerbench report has no option --bogus");
  const auto stray = bb("train extra1 extra2");
  expect_one_error_line(stray, "balerbench train did not expect the argument 'extra1' (and 1 more)");
  EXPECT_EQ(stray.out.find("The following"), std::string::npos) << stray.out;
  expect_one_error_line(bb("data generate --kind cms --rows 10 --out x.npz zzz"),
                        "balerbench data generate did not expect the argument 'zzz': is it a value whose option is missing?");
  expect_one_error_line(bb("run a.json b.json"), "balerbench run did not expect the argument 'b.json'");
  expect_one_error_line(bb("compress --config"), "--config needs a value after it (hint: balerbench compress --help)");
  expect_one_error_line(bb("run"), "balerbench run needs its EXPERIMENT argument");
  expect_one_error_line(bb("data"), "balerbench data needs a command: generate, info");
  expect_one_error_line(bb("data genrate"), "'genrate' is not a command of balerbench data; did you mean 'generate'?");
  expect_one_error_line(bb("config --format json"),
                        "balerbench config needs a command before its options ('--format' came first)");
  // A command's option given before the command's name is sent after it (was: "--kind is required").
  expect_one_error_line(bb("data --kind cms generate --rows 10 --out x.npz"),
                        "--kind is an option of balerbench data generate: give it after 'generate' "
                        "(balerbench data generate --kind ...)");
  expect_one_error_line(bb("data --rows=10 generate --kind cms --out x.npz"),
                        "--rows is an option of balerbench data generate: give it after 'generate'");
  expect_one_error_line(bb("data zzzzzzzz"), "'zzzzzzzz' is not a command of balerbench data (its commands: generate, info)");
  // A switch given a value it cannot read as true or false.
  expect_one_error_line(bb("meters --json=maybe"), "--json is a switch: give it alone (or =true, =false), got maybe");
  // After "--" every argument is a value, even one that reads as an option the command has; an
  // option before the command is the top level's; a missing input file in balerbench's words.
  expect_one_error_line(bb("train -- --config x.json"),
                        "balerbench train did not expect the argument '--config' (and 1 more) after '--'");
  expect_one_error_line(bb("run --dry-run -- a.json --db"), "balerbench run did not expect the argument '--db' after '--'");
  expect_one_error_line(bb("--bogus train"), "balerbench has no option --bogus");
  expect_one_error_line(bb("merge missing.sqlite"), "INPUTS: no such file: missing.sqlite");
  // A "--" right after an option that wants a path is not taken as the path (was: a file named "--").
  expect_one_error_line(bb("measure --json -- true"), "'--' reads as an option, not a path");
  EXPECT_FALSE(std::filesystem::exists(dir_.path("--")));
}

// An infinite or huge duration overflowed the wait and stopped at once, exit 0, printing 300 digits.
TEST_F(OptionValuesCli, ServeMetricsRefusesADurationItCannotWait) {
  for (const char* d : {"inf", "1e19", "1e300"}) {
    const auto r = bb(std::string("serve-metrics --meters cpu_estimate --duration ") + d);
    expect_one_error_line(r, std::string("--duration: must be at most 1e+09 (got ") + d + ")");
  }
  const auto r = bb("serve-metrics --meters cpu_estimate --influx-file m.lp --duration 0.2");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("for 0.2 s"), std::string::npos) << r.out;
}

// A --set with a newline stays on one line, a 100,000-digit value is cut short, and a config that is
// not UTF-8 says so, its bytes never echoed raw.
TEST_F(OptionValuesCli, ConfigValuesAndEncodingsAreEchoedOnOneShortLine) {
  write_text(dir_.path("c.json"), R"({"input_path": "x.npz", "model_name": "AE", "compression_ratio": 1.6})");
  auto r = bb("train --config c.json --out o --set \"$(printf 'ep\\nochs=3')\"");
  expect_one_error_line(r, "--set ep\\nochs=3");
  r = bb("train --config c.json --out o --set epochs=" + std::string(100000, '7'));
  expect_one_error_line(r, "(100007 bytes in all)");
  EXPECT_LT(r.out.size(), 1000u) << r.out.substr(0, 1000);
  write_text(dir_.path("latin1.json"), "{\"model_name\": \"caf\xE9\"}");
  r = bb("train --config latin1.json --out o");
  expect_one_error_line(r, "latin1.json: is not UTF-8: byte 19 is 0xE9 (a Latin-1 or Windows-1252 file?)");
  EXPECT_EQ(r.out.find('\xE9'), std::string::npos) << r.out;
  write_text(dir_.path("utf16.json"), std::string("\xFF\xFE{\0}\0", 6));
  expect_one_error_line(bb("train --config utf16.json --out o"), "utf16.json: is UTF-16 or UTF-32 text");
}

}  // namespace
}  // namespace balerbench
