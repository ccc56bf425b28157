// python_process.cpp: see python_process.h.
#include "harness/baler/python_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace balerbench {
namespace {

// Reads both pipes until both close (poll, so that neither fills up and blocks the child), or until
// `deadline` passes (then false, with both pipes closed). No deadline when `limited` is false.
bool drain(int out_fd, int err_fd, std::string& out, std::string& err, bool limited,
           std::chrono::steady_clock::time_point deadline) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    int wait_ms = -1;
    if (limited) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        for (auto& f : fds)
          if (f.fd >= 0) close(f.fd);
        return false;
      }
      wait_ms = static_cast<int>(std::min<long long>(left.count(), 1000));
    }
    const int ready = poll(fds, 2, wait_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  return true;
}

}  // namespace

std::string baler_python() {
  const char* env = std::getenv("BALERBENCH_BALER_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

ProcessResult run_python(const std::string& script, const std::vector<std::string>& args, const std::string& work_dir,
                         double timeout_s) {
  const std::string python = baler_python();
  if (!std::filesystem::exists(python))
    throw InputError(python + ": not found; Baler's configs are Python modules, read with Debian's python3",
                     "apt-get install python3 python3-numpy (or set BALERBENCH_BALER_PYTHON to a python3)");
  std::vector<std::string> argv_s = {python, "-c", script};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw InputError(std::string("pipe failed: ") + std::strerror(errno));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw InputError(std::string("pipe failed: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Killed when balerbench ends, however it ends (SIGINT, SIGTERM, a crash): a config that loops must
    // not run on at 100% of a CPU. Checked after setting it: the parent may have ended already.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    setpgid(0, 0);  // a group of its own: the time limit ends what the config started too
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (chdir(work_dir.c_str()) != 0) _exit(126);
    execv(python.c_str(), argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw InputError(std::string("fork failed: ") + std::strerror(errno));
  }
  ProcessResult r;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  if (!drain(out_pipe[0], err_pipe[0], r.out, r.err, timeout_s > 0, deadline)) {
    r.timed_out = true;
    kill(-pid, SIGKILL);  // the interpreter's group: it and whatever the config started
    kill(pid, SIGKILL);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (r.exit_code == 126) throw InputError(work_dir + ": cannot enter the folder to run " + python);
  if (r.exit_code == 127 && r.out.empty() && r.err.empty()) throw InputError(python + ": cannot be run");
  return r;
}

}  // namespace balerbench
