// python_process.h: runs Debian's python3 on a script and captures what it prints.
//
// Baler's configs are Python modules, and Baler runs on Debian's python3 (/usr/bin/python3, with
// python3-numpy); another python3 first on the PATH (pyenv, conda) may lack what a config imports.
// BALERBENCH_BALER_PYTHON names another interpreter, for machines without Debian's.
#pragma once

#include <string>
#include <vector>

namespace balerbench {

struct ProcessResult {
  int exit_code = -1;  // the status, or 128 + signal
  std::string out, err;
  bool timed_out = false;  // the time limit passed: the process was killed (exit_code 128 + SIGKILL)
};

// How long reading a Baler config may take before its interpreter is stopped (a config that loops or
// waits): far above the second or so a config takes, importing NumPy included.
inline constexpr double kBalerConfigTimeoutS = 60;

// The interpreter Baler's configs are read with: $BALERBENCH_BALER_PYTHON, else /usr/bin/python3.
std::string baler_python();

// Runs `python -c script args...` in `work_dir` (no shell, stdin empty), waiting for it to end, at most
// `timeout_s` seconds (0: no limit), then killing it with every process it started (its process group).
// The interpreter never outlives balerbench: it is killed when balerbench ends by any path (an exit, a
// signal, a crash); what it started itself is its own to end then. InputError when the interpreter
// is missing or cannot be started.
ProcessResult run_python(const std::string& script, const std::vector<std::string>& args, const std::string& work_dir,
                         double timeout_s = kBalerConfigTimeoutS);

}  // namespace balerbench
