// blas_kernel.cpp: see blas_kernel.h.
#include "harness/base/blas_kernel.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "harness/base/proc_fs.h"
#include "harness/base/proc_text.h"

extern char** environ;

namespace balerbench {
namespace {

// The environment's names: what the re-executed process learns from its parent.
constexpr const char* kCoretypeVar = "OPENBLAS_CORETYPE";
constexpr const char* kRequestVar = "BALERBENCH_BLAS_KERNEL";
constexpr const char* kChoiceVar = "BALERBENCH_BLAS_CHOICE";  // "decision|from|to|reason", set by ensure_blas_kernel
// The user's own OPENBLAS_CORETYPE before a switch: "=VALUE", or "" when it was unset (user_environment()).
constexpr const char* kUserCoretypeVar = "BALERBENCH_BLAS_USER_CORETYPE";
constexpr const char* kCheckArg = "__blas-check";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const char* env_or_null(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

template <typename F>
F blas_symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

std::string isa_text(const CpuFeatures& cpu) {
  if (cpu.has("avx512_bf16")) return "AVX-512 with bf16";
  if (cpu.has("avx512f")) return "AVX-512";
  if (cpu.has("avx2")) return "AVX2";
  if (cpu.has("avx")) return "AVX";
  return "SSE";
}

// The process's own decision, once made (ensure_blas_kernel) or read back from the environment.
nlohmann::json& decided() {
  static nlohmann::json j;
  return j;
}

// "decision|from|to|reason": the reason, last, may hold bars of its own.
std::vector<std::string> split_bar(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '|' && out.size() < 3) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// Runs `exe __blas-check` with OPENBLAS_CORETYPE=core; true when it exits 0.
bool check_in_child(const std::string& exe, const std::string& core, std::string& why) {
  const pid_t pid = fork();
  if (pid < 0) {
    why = std::string("fork failed: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    setenv(kCoretypeVar, core.c_str(), 1);
    char* args[] = {const_cast<char*>(exe.c_str()), const_cast<char*>(kCheckArg), const_cast<char*>(core.c_str()),
                    nullptr};
    execv(exe.c_str(), args);
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      why = std::string("waitpid failed: ") + std::strerror(errno);
      return false;
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  why = WIFSIGNALED(status)           ? "the check was killed by signal " + std::to_string(WTERMSIG(status))
        : WEXITSTATUS(status) == 3     ? "OpenBLAS does not know a kernel named " + core
                                       : "the check exited with status " + std::to_string(WEXITSTATUS(status)) +
                                         " (a GEMM on that kernel differed from the reference)";
  return false;
}

}  // namespace

CpuFeatures read_cpu_features(const std::string& proc_root) {
  CpuFeatures c;
  std::istringstream in(read_proc_text(proc_root + "/cpuinfo"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) break;  // the first processor's entry is enough
    std::string key, value;
    if (!split_proc_line(line, key, value)) continue;
    auto as_int = [](const std::string& v) { return std::atoi(v.c_str()); };
    if (key == "vendor_id") c.vendor = value;
    else if (key == "model name") c.model_name = value;
    else if (key == "cpu family") c.family = as_int(value);
    else if (key == "model") c.model = as_int(value);
    else if (key == "stepping") c.stepping = as_int(value);
    else if (key == "flags") {
      std::istringstream words(value);
      std::string f;
      while (words >> f) c.flags.insert(f);
    }
  }
  return c;
}

nlohmann::json BlasInfo::to_json() const {
  nlohmann::json j = {{"library", library}, {"version", version.empty() ? nlohmann::json(nullptr) : nlohmann::json(version)},
                      {"core", core.empty() ? nlohmann::json("unknown") : nlohmann::json(core)},
                      {"config", config.empty() ? nlohmann::json(nullptr) : nlohmann::json(config)},
                      {"path", path.empty() ? nlohmann::json(nullptr) : nlohmann::json(path)},
                      {"threads", threads > 0 ? nlohmann::json(threads) : nlohmann::json(nullptr)}};
  return j;
}

BlasInfo query_blas() {
  BlasInfo b;
  using StrFn = char* (*)();
  using IntFn = int (*)();
  if (void* gemm = dlsym(RTLD_DEFAULT, "dgemm_")) {
    Dl_info info{};
    if (dladdr(gemm, &info) && info.dli_fname) {
      char real[PATH_MAX];
      b.path = realpath(info.dli_fname, real) ? real : info.dli_fname;
    }
  }
  const auto config = blas_symbol<StrFn>("openblas_get_config");
  const auto corename = blas_symbol<StrFn>("openblas_get_corename");
  if (!config || !corename) return b;  // another BLAS: "unknown", never guessed
  b.library = "OpenBLAS";
  if (const char* c = config()) b.config = c;
  if (const char* n = corename()) b.core = n;
  std::istringstream words(b.config);
  std::string name, version;
  if (words >> name >> version && name == "OpenBLAS") b.version = version;
  if (const auto threads = blas_symbol<IntFn>("openblas_get_num_threads")) b.threads = threads();
  return b;
}

int openblas_core_rank(const std::string& core) {
  static const std::map<std::string, int> ranks = {
      {"katmai", 1},      {"coppermine", 1}, {"northwood", 1},   {"prescott", 1},   {"banias", 1},
      {"core2", 1},       {"penryn", 1},     {"dunnington", 1},  {"nehalem", 1},    {"atom", 1},
      {"athlon", 1},      {"opteron", 1},    {"opteron_sse3", 1}, {"barcelona", 1}, {"nano", 1},
      {"bobcat", 1},      {"sandybridge", 2}, {"bulldozer", 2},  {"piledriver", 2}, {"steamroller", 2},
      {"haswell", 3},     {"zen", 3},        {"excavator", 3},   {"skylakex", 4},   {"cooperlake", 5},
      {"sapphirerapids", 5}};
  const auto it = ranks.find(lower(core));
  return it == ranks.end() ? 0 : it->second;
}

std::string best_openblas_core(const CpuFeatures& cpu) {
  const std::vector<std::string> better = openblas_core_candidates(cpu);
  if (!better.empty()) return better.front();
  return cpu.has("avx") ? "SandyBridge" : "";
}

std::vector<std::string> openblas_core_candidates(const CpuFeatures& cpu) {
  std::vector<std::string> out;
  const bool avx512 = cpu.has("avx512f") && cpu.has("avx512bw") && cpu.has("avx512vl") && cpu.has("avx512dq");
  if (avx512 && cpu.has("avx512_bf16")) out.push_back("Cooperlake");
  if (avx512) out.push_back("SkylakeX");
  if (cpu.has("avx2") && cpu.has("fma")) out.push_back("Haswell");
  return out;  // an AVX-only CPU (SandyBridge's kernels) is not switched: it counts as generic itself
}

namespace {

// The decision when the environment asks for kernel `request` by name (not auto, not keep).
BlasDecision decide_requested_kernel(BlasDecision d, const std::string& core, const std::string& request,
                                     bool generic) {
  if (core.empty()) {
    d.reason = std::string(kRequestVar) + "=" + request + " asks for an OpenBLAS kernel, but the BLAS is not OpenBLAS";
    return d;
  }
  if (lower(request) == lower(core)) {
    d.reason = "runs on " + core + ", as " + kRequestVar + " asks";
    d.generic = generic;
    return d;
  }
  d.action = BlasDecision::Action::kSwitch;
  d.to = request;
  d.candidates = {request};
  d.reason = "switched from " + core + " to " + request + ", as " + kRequestVar + " asks";
  return d;
}

}  // namespace

BlasDecision decide_blas_kernel(const std::string& core, const CpuFeatures& cpu,
                                const std::map<std::string, std::string>& env) {
  BlasDecision d;
  d.from = core;
  const auto get = [&](const char* name) {
    const auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  const std::string request = get(kRequestVar), user = get(kCoretypeVar);
  const std::string best = best_openblas_core(cpu);
  const int rank = openblas_core_rank(core), best_rank = openblas_core_rank(best);
  const bool generic = !core.empty() && rank > 0 && rank <= 2 && best_rank >= 3;
  if (lower(request) == "keep") {
    d.reason = "kept OpenBLAS's own choice" + (core.empty() ? std::string() : " (" + core + ")") + ": " + kRequestVar +
               "=keep";
    d.generic = generic;
    return d;
  }
  if (!request.empty() && lower(request) != "auto") return decide_requested_kernel(d, core, request, generic);
  if (core.empty()) {
    d.reason = "the BLAS is not OpenBLAS: its kernel is its own choice and is not known here";
    return d;
  }
  if (!user.empty()) {
    d.generic = generic;
    d.reason = std::string(kCoretypeVar) + "=" + user + " is set in the environment: kept";
    if (lower(user) != lower(core))
      d.reason += ", but OpenBLAS does not know that name and chose " + core + " itself";
    if (generic)
      d.reason += "; it is a generic kernel, and this CPU (" + isa_text(cpu) + ") runs " + best +
                  " (unset it, or set " + kRequestVar + "=" + best + ")";
    return d;
  }
  if (generic) {
    d.action = BlasDecision::Action::kSwitch;
    d.candidates = openblas_core_candidates(cpu);
    d.to = d.candidates.front();
    d.reason = "OpenBLAS " + std::string("fell back to its generic ") + core + " kernel on this CPU (" + isa_text(cpu) +
               "); switched to " + d.to + " (" + kRequestVar + "=keep opts out)";
    return d;
  }
  d.reason = rank == 0 ? "OpenBLAS chose " + core + " (a kernel not ranked here): kept"
             : rank >= best_rank ? "OpenBLAS chose " + core + ", the best kernel for this CPU"
                                 : "OpenBLAS chose " + core + " (not generic; " + best + " would use wider vectors): kept";
  return d;
}

bool blas_gemm_check(std::string& why) {
  using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
  using Dgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const double*, const double*,
                         const int*, const double*, const int*, const double*, double*, const int*);
  const auto sgemm = blas_symbol<Sgemm>("sgemm_");
  const auto dgemm = blas_symbol<Dgemm>("dgemm_");
  if (!sgemm || !dgemm) {
    why = "no sgemm_/dgemm_ in this process";
    return false;
  }
  // Shapes that reach the main kernel and its edges (odd sizes), both transposes of B.
  const int shapes[][3] = {{67, 45, 53}, {256, 200, 100}, {1, 24, 15}};
  uint64_t state = 0x9E3779B97F4A7C15ULL;
  auto next = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5;
  };
  for (const auto& s : shapes) {
    const int m = s[0], n = s[1], k = s[2];
    std::vector<double> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n);
    for (auto& v : a) v = next();
    for (auto& v : b) v = next();
    std::vector<double> ref(static_cast<size_t>(m) * n, 0.0);  // column-major C = A * B
    double scale = 0;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        long double acc = 0, mag = 0;
        for (int p = 0; p < k; ++p) {
          acc += static_cast<long double>(a[i + static_cast<size_t>(p) * m]) * b[p + static_cast<size_t>(j) * k];
          mag += std::fabs(a[i + static_cast<size_t>(p) * m] * b[p + static_cast<size_t>(j) * k]);
        }
        ref[i + static_cast<size_t>(j) * m] = static_cast<double>(acc);
        scale = std::max(scale, static_cast<double>(mag));
      }
    const double one = 1, zero = 0;
    std::vector<double> c(ref.size(), 7.0);  // beta = 0 must overwrite
    dgemm("N", "N", &m, &n, &k, &one, a.data(), &m, b.data(), &k, &zero, c.data(), &m);
    const float onef = 1, zerof = 0;
    std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), cf(ref.size(), 7.0f);
    sgemm("N", "N", &m, &n, &k, &onef, af.data(), &m, bf.data(), &k, &zerof, cf.data(), &m);
    double err64 = 0, err32 = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      err64 = std::max(err64, std::fabs(c[i] - ref[i]));
      err32 = std::max(err32, std::fabs(static_cast<double>(cf[i]) - ref[i]));
    }
    // Rounding bounds: k products summed, relative to the largest |a||b| sum, with a margin of 4.
    const double bound64 = 4.0 * k * 1.1e-16 * scale, bound32 = 4.0 * k * 6.0e-8 * scale;
    if (!(err64 <= bound64) || !(err32 <= bound32)) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "%dx%dx%d GEMM: max error %.3g (fp64, bound %.3g), %.3g (fp32, bound %.3g)", m, n,
                    k, err64, bound64, err32, bound32);
      why = buf;
      return false;
    }
  }
  return true;
}

int blas_check_main(int argc, char** argv) {
  const std::string core = query_blas().core;
  if (argc > 2 && lower(argv[2]) != lower(core)) {
    std::fprintf(stderr, "balerbench: BLAS check: asked for kernel %s, OpenBLAS runs %s (it does not know that name)\n",
                 argv[2], core.c_str());
    return 3;
  }
  std::string why;
  if (blas_gemm_check(why)) return 0;
  std::fprintf(stderr, "balerbench: BLAS check failed on %s: %s\n", core.c_str(), why.c_str());
  return 1;
}

namespace {

// The choice a balerbench made before it re-executed itself (kChoiceVar): taken over while the kernel
// it chose is the one in use, or recorded as failed when OpenBLAS ignored it. False when there is
// none to adopt (and then kChoiceVar is unset).
bool adopt_inherited_choice(const BlasInfo& blas) {
  const char* inherited = env_or_null(kChoiceVar);
  if (!inherited) return false;
  // Set by this program before it re-executed itself (or by a balerbench that started this one):
  // valid only while the kernel it chose is the one in use.
  const auto parts = split_bar(inherited);
  if (parts.size() == 4 && lower(parts[2]) == lower(blas.core)) {
    decided() = {{"decision", parts[0]}, {"from", parts[1]}, {"to", blas.core}, {"reason", parts[3]}};
    return true;
  }
  unsetenv(kChoiceVar);
  if (parts.size() == 4 && env_or_null(kCoretypeVar) && lower(env_or_null(kCoretypeVar)) == lower(parts[2])) {
    // This program set OPENBLAS_CORETYPE and OpenBLAS runs another kernel all the same: never loop.
    const std::string reason = "asked OpenBLAS for " + parts[2] + " but it runs " + blas.core;
    decided() = {{"decision", "check failed"}, {"from", parts[1]}, {"to", blas.core}, {"reason", reason},
                 {"generic", openblas_core_rank(blas.core) > 0 && openblas_core_rank(blas.core) <= 2}};
    std::fprintf(stderr, "balerbench: BLAS: %s\n", reason.c_str());
    return true;
  }
  return false;
}

}  // namespace

void ensure_blas_kernel(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], kCheckArg) == 0) return;
  const BlasInfo blas = query_blas();
  if (adopt_inherited_choice(blas)) return;
  std::map<std::string, std::string> env;
  for (const char* name : {kCoretypeVar, kRequestVar})
    if (const char* v = env_or_null(name)) env[name] = v;
  const BlasDecision d = decide_blas_kernel(blas.core, read_cpu_features(), env);
  const bool requested = env.count(kRequestVar) && lower(env[kRequestVar]) != "auto" && lower(env[kRequestVar]) != "keep";
  const std::string kept_decision = env.count(kRequestVar) && lower(env[kRequestVar]) == "keep" ? "opted out"
                                    : requested                                               ? "requested"
                                    : env.count(kCoretypeVar)                                  ? "set by user"
                                                                                               : "kept";
  decided() = {{"decision", kept_decision}, {"from", d.from}, {"to", d.from}, {"reason", d.reason}, {"generic", d.generic}};
  if (d.action == BlasDecision::Action::kKeep) return;
  const std::string exe = read_self_exe();
  std::string why = exe.empty() ? "cannot read /proc/self/exe" : "";
  std::string refused;  // candidates whose check failed, with why
  for (const std::string& to : d.candidates) {
    if (exe.empty()) break;
    std::string failed;
    if (!check_in_child(exe, to, failed)) {
      refused += (refused.empty() ? "" : "; ") + to + ": " + failed;
      continue;
    }
    std::string reason = d.reason;
    if (to != d.to) {  // a fallback: say which and why the better one was not taken
      const auto at = reason.find("switched to " + d.to);
      if (at != std::string::npos) reason.replace(at, 12 + d.to.size(), "switched to " + to);
      reason += " [" + refused + "]";
    }
    const std::string choice = std::string(requested ? "requested" : "switched") + "|" + d.from + "|" + to + "|" + reason;
    setenv(kUserCoretypeVar, env.count(kCoretypeVar) ? ("=" + env[kCoretypeVar]).c_str() : "", 1);
    setenv(kCoretypeVar, to.c_str(), 1);
    setenv(kChoiceVar, choice.c_str(), 1);
    execv(exe.c_str(), argv);
    why = std::string("re-executing failed: ") + std::strerror(errno);  // execv returned: go on as we are
    unsetenv(kChoiceVar);
    unsetenv(kUserCoretypeVar);
    if (env.count(kCoretypeVar)) setenv(kCoretypeVar, env[kCoretypeVar].c_str(), 1);
    else unsetenv(kCoretypeVar);
    break;
  }
  if (why.empty()) why = refused;
  const std::string reason = "stayed on " + d.from + ": switching to " + d.to + " failed (" + why + ")";
  std::fprintf(stderr, "balerbench: BLAS: %s\n", reason.c_str());
  decided() = {{"decision", "check failed"}, {"from", d.from}, {"to", d.from}, {"reason", reason},
               {"generic", openblas_core_rank(d.from) > 0 && openblas_core_rank(d.from) <= 2}};
}

nlohmann::json blas_choice() {
  if (decided().is_null()) {
    // A program that did not run ensure_blas_kernel (a test, a benchmark): describe, decide nothing.
    std::map<std::string, std::string> env;
    for (const char* name : {kCoretypeVar, kRequestVar})
      if (const char* v = env_or_null(name)) env[name] = v;
    const BlasInfo blas = query_blas();
    const BlasDecision d = decide_blas_kernel(blas.core, read_cpu_features(), env);
    return {{"decision", "not checked"}, {"from", blas.core}, {"to", blas.core},
            {"reason", d.action == BlasDecision::Action::kSwitch
                           ? "this program does not choose its kernel: " + d.reason.substr(0, d.reason.find(';'))
                           : d.reason},
            {"generic", d.generic || d.action == BlasDecision::Action::kSwitch}};
  }
  return decided();
}

std::vector<std::string> user_environment() {
  std::vector<std::string> out;
  const char* saved = std::getenv(kUserCoretypeVar);
  const bool switched = saved && std::getenv(kChoiceVar);
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    if (name == kChoiceVar || name == kUserCoretypeVar) continue;
    if (switched && name == kCoretypeVar) continue;  // balerbench's value: the user's goes back below
    out.push_back(kv);
  }
  if (switched && saved[0] == '=') out.push_back(std::string(kCoretypeVar) + saved);
  return out;
}

std::string blas_choice_line() {
  const nlohmann::json c = blas_choice();
  const std::string decision = c.value("decision", "");
  if (decision != "switched" && decision != "requested" && decision != "check failed") return "";
  return "BLAS: " + c.value("reason", std::string());
}

std::string blas_hazard() {
  // From the kernel in use, however it came to be chosen (asked for, set by the user, a failed switch).
  const std::string core = query_blas().core;
  const CpuFeatures cpu = read_cpu_features();
  const std::vector<std::string> better = openblas_core_candidates(cpu);
  const int rank = openblas_core_rank(core);
  if (core.empty() || rank == 0 || rank > 2 || better.empty()) return "";
  const std::string reason = blas_choice().value("reason", std::string());
  const std::string fix = better[0] == "Cooperlake" && better.size() > 1
                              ? better[1] + " (OpenBLAS 0.3.21 does not accept Cooperlake by name)"
                              : better[0];
  return "OpenBLAS runs its generic " + core + " kernel on a CPU with " + isa_text(cpu) + " (" +
         reason.substr(0, reason.find(';')) +
         "); fp32/fp64 run 2-3x slower than they could while bf16 autocast (oneDNN) does not, so AMP-vs-FP32 "
         "verdicts are skewed. Fix: unset OPENBLAS_CORETYPE and BALERBENCH_BLAS_KERNEL (balerbench then switches by "
         "itself), or set BALERBENCH_BLAS_KERNEL=" +
         fix;
}

}  // namespace balerbench
