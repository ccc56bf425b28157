// blas_kernel.h: which BLAS this process runs on, which of its kernels, and whether that kernel is
// the best the CPU can run. Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its kernel from the CPU
// it recognises at load; a CPU newer than the library falls back to the generic SSE3 "Prescott"
// kernel, 2-3x slower in fp32/fp64 while oneDNN (bf16 autocast) is not slowed, which flips an
// AMP-against-FP32 verdict (README, Comparable results).
//
// OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded, so the kernel can only be changed by
// running the process again: `ensure_blas_kernel` (first thing in main) re-executes balerbench once,
// with OPENBLAS_CORETYPE set, after a child process has checked a small GEMM on that kernel against
// a reference. A value the user set is never overridden; BALERBENCH_BLAS_KERNEL=keep opts out, and
// BALERBENCH_BLAS_KERNEL=NAME asks for a kernel by name (checked the same way).
//
// The decision is a pure function of the core name, the CPU's features and the environment
// (`decide_blas_kernel`), unit-tested with injected values.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace balerbench {

// The CPU as /proc/cpuinfo describes it (the first processor's entry).
struct CpuFeatures {
  std::string vendor;   // GenuineIntel, AuthenticAMD, ...
  std::string model_name;
  int family = 0, model = 0, stepping = 0;
  std::set<std::string> flags;  // "avx2", "avx512f", "avx512_bf16", "amx_tile", ...
  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
};
CpuFeatures read_cpu_features(const std::string& proc_root = "/proc");

// The BLAS that LibTorch's libblas.so.3 resolves to in this process. OpenBLAS answers
// openblas_get_config/openblas_get_corename (found with dlsym); another BLAS is "unknown", never guessed.
struct BlasInfo {
  std::string library = "unknown";  // "OpenBLAS" or "unknown"
  std::string version;              // "0.3.21" (OpenBLAS), empty when unknown
  std::string config;               // openblas_get_config()
  std::string core;                 // openblas_get_corename(): the kernel in use ("Prescott", "Haswell", ...)
  std::string path;                 // the shared object that provides dgemm_
  int threads = 0;                  // openblas_get_num_threads(); 0 when unknown
  nlohmann::json to_json() const;
};
BlasInfo query_blas();

// The best OpenBLAS core type this CPU can run ("Cooperlake", "SkylakeX", "Haswell", "SandyBridge"),
// or empty when none beats the generic kernels. Zen CPUs map to the same kernels as Intel's by ISA.
std::string best_openblas_core(const CpuFeatures& cpu);
// Every non-generic core type the CPU can run, best first: the candidates of a switch. OpenBLAS
// 0.3.21 cannot be forced to Cooperlake by name (its OPENBLAS_CORETYPE table lacks it: "Core not
// found", then its own detection), so a switch tries the next one when the check finds another
// kernel running.
std::vector<std::string> openblas_core_candidates(const CpuFeatures& cpu);
// Rank of an OpenBLAS core name by the widest ISA its kernels use: 1 generic SSE, 2 AVX, 3 AVX2,
// 4 AVX-512, 5 AVX-512 with bf16; 0 for a name not known here.
int openblas_core_rank(const std::string& core);

// What to do about the kernel, decided before anything runs.
struct BlasDecision {
  enum class Action { kKeep, kSwitch };
  Action action = Action::kKeep;
  std::string from, to;  // core names; `to` set when switching (the first candidate)
  std::vector<std::string> candidates;  // when switching: `to`, then the fallbacks, best first
  std::string reason;    // one sentence, for the system description and the hazard list
  bool generic = false;  // the kernel kept is a generic one while the CPU has AVX2 or AVX-512 (a hazard)
};
// `core`: the kernel OpenBLAS chose (empty when the BLAS is not OpenBLAS); `env`: the values of
// OPENBLAS_CORETYPE and BALERBENCH_BLAS_KERNEL where set.
BlasDecision decide_blas_kernel(const std::string& core, const CpuFeatures& cpu,
                                const std::map<std::string, std::string>& env);

// A small sgemm_ and dgemm_ against a reference triple loop; false (with `why`) on a mismatch or
// when the BLAS has no such symbols.
bool blas_gemm_check(std::string& why);

// First thing in main(): decides, checks the new kernel in a child process (argv[0] `__blas-check`),
// and re-executes this program with OPENBLAS_CORETYPE set when that is better. Returns normally
// when no switch is needed, or in the re-executed process. Prints nothing when it switches
// (blas_choice_line() is for the commands' own output), one line on stderr when a switch failed.
void ensure_blas_kernel(int argc, char** argv);
// `balerbench __blas-check CORE`: the child's side; returns the exit code (0: OpenBLAS runs CORE and
// the GEMMs are right; 3: it runs another kernel; 1: a GEMM differed).
int blas_check_main(int argc, char** argv);

// This process's environment as the user gave it: without the OPENBLAS_CORETYPE that a switch set (the
// user's own value, or none, back in its place) and balerbench's own markers. For the commands
// `measure` runs, which are measured as they would run without balerbench.
std::vector<std::string> user_environment();

// What was decided in this process (after ensure_blas_kernel; read from the environment the
// re-execution passed on): {"decision": "kept"|"switched"|"requested"|"check failed"|"opted out"|
// "set by user", "from", "to", "reason"}.
nlohmann::json blas_choice();
// "BLAS: switched from Prescott to Cooperlake ..." when this process changed its kernel (or was asked
// to, or failed to), else empty: the one line that `run` prints in its header and `train`,
// `compress` and `decompress` in their summaries. (A failed switch is also said on stderr at once.)
std::string blas_choice_line();
// The hazard line for a generic kernel that was kept, or empty (doctor, run, train).
std::string blas_hazard();

}  // namespace balerbench
