// test_blas_kernel_cli.cpp: the BLAS kernel chosen once, checked and recorded by `balerbench run`.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "harness/store/store.h"
#include "tests/integration/sweep_cli_fixture.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST_F(SweepCli, TheKernelIsChosenOnceCheckedAndRecorded) {
  const auto sys = bb("system --json", "BALERBENCH_BLAS_KERNEL=Prescott");
  ASSERT_EQ(sys.exit_code, 0) << sys.out;
  const json s = json::parse(sys.out);  // a switch prints nothing: --json output stays one document
  if (s["blas"]["library"] != "OpenBLAS") GTEST_SKIP() << "the BLAS is not OpenBLAS";
  EXPECT_EQ(s["blas"]["core"], "Prescott");
  EXPECT_EQ(s["blas"]["choice"]["decision"], "requested");
  EXPECT_EQ(s["fingerprint"].get<std::string>().size(), 12u);
  EXPECT_EQ(s["env"]["BALERBENCH_BLAS_KERNEL"], "Prescott");
  // The commands' own output says so in one line.
  json j = tiny_experiment();
  j["sweep"]["precision"] = {"fp32"};
  j["sweep"]["repeats"] = 1;
  write_experiment(j);
  const auto run = bb("run exp.json --db r.sqlite --dry-run", "BALERBENCH_BLAS_KERNEL=Prescott");
  const auto line = run.out.find("BLAS: ");
  if (s["blas"]["choice"]["from"] != "Prescott") {
    ASSERT_NE(line, std::string::npos) << run.out;
    EXPECT_NE(run.out.find("as BALERBENCH_BLAS_KERNEL asks", line), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("BLAS: ", line + 1), std::string::npos) << run.out;
  }
  // A name OpenBLAS does not know: one line, no loop, the run goes on.
  const auto bogus = bb("system --json", "BALERBENCH_BLAS_KERNEL=NoSuchCore");
  ASSERT_EQ(bogus.exit_code, 0) << bogus.out;
  EXPECT_NE(bogus.out.find("does not know a kernel named NoSuchCore"), std::string::npos) << bogus.out;
  EXPECT_EQ(json::parse(bogus.out.substr(bogus.out.find('{')))["blas"]["choice"]["decision"], "check failed");
  // The user's own OPENBLAS_CORETYPE is kept.
  const json user = json::parse(bb("system --json", "OPENBLAS_CORETYPE=Core2").out);
  EXPECT_EQ(user["blas"]["core"], "Core2");
  EXPECT_EQ(user["blas"]["choice"]["decision"], "set by user");
  // A command under `measure` runs in the user's environment, not on balerbench's kernel: it sees the
  // OPENBLAS_CORETYPE this test was started with (none, or one a CI machine sets), never Core2.
  const char* own_coretype = std::getenv("OPENBLAS_CORETYPE");
  const auto measured = bb("measure -- sh -c 'echo CORETYPE=[$OPENBLAS_CORETYPE] CHOICE=[$BALERBENCH_BLAS_CHOICE]'",
                           "BALERBENCH_BLAS_KERNEL=Core2");
  const std::string expected = "CORETYPE=[" + std::string(own_coretype ? own_coretype : "") + "] CHOICE=[]";
  EXPECT_NE(measured.out.find(expected), std::string::npos) << measured.out;
  const auto measured_user = bb("measure -- sh -c 'echo CORETYPE=[$OPENBLAS_CORETYPE]'",
                                "BALERBENCH_BLAS_KERNEL=Core2 OPENBLAS_CORETYPE=Nehalem");
  EXPECT_NE(measured_user.out.find("CORETYPE=[Nehalem]"), std::string::npos) << measured_user.out;
  // The text form names the kernel and the decision.
  const auto text = bb("system", "OPENBLAS_CORETYPE=Core2");
  EXPECT_NE(text.out.find("kernel Core2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("set by user: OPENBLAS_CORETYPE=Core2 is set in the environment"), std::string::npos)
      << text.out;
  // And whether this binary has the fused CUDA engine (CI's builds do not: no CUDA LibTorch).
  const bool fused_line = text.out.find("fused cuda  built for sm_80 and sm_90") != std::string::npos ||
                          text.out.find("fused cuda  not built (BALERBENCH_CUDA_ENGINE") != std::string::npos;
  EXPECT_TRUE(fused_line) << text.out;
}

}  // namespace
}  // namespace balerbench
