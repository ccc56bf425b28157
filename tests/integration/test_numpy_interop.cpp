// test_numpy_interop.cpp: files written by NumPy load here, and files written
// here load in NumPy (Debian's python3-numpy); model.pt loads in PyTorch.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "datasets/dataset.h"
#include "datasets/npz.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

std::string script() { return source_dir() + "/tests/integration/numpy_interop.py"; }

class NumpyInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!python_has("numpy")) GTEST_SKIP() << python_binary() << " with numpy not available";
  }
  TempDir dir;
};

TEST_F(NumpyInterop, WeLoadWhatNumpyWrites) {
  const auto r = run_command(python_binary() + " " + script() + " write " + dir.root());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::vector<double> expected(12);
  for (int i = 0; i < 12; ++i) expected[i] = i / 4.0;
  for (const char* f : {"stored", "deflated", "fortran", "bigendian"}) {
    const Dataset d = load_dataset(dir.path(std::string(f) + ".npz"));
    EXPECT_EQ(d.original_shape, (std::vector<int64_t>{4, 3})) << f;
    const at::Tensor flat = d.data.reshape({-1});
    EXPECT_EQ(std::vector<double>(flat.data_ptr<double>(), flat.data_ptr<double>() + 12), expected) << f;
    if (std::string(f) != "bigendian") EXPECT_EQ(d.names, (std::vector<std::string>{"pt_", "eta_", "phi_"})) << f;
  }
  EXPECT_TRUE(read_npz(dir.path("fortran.npz")).at("data").was_fortran_order);
  EXPECT_EQ(load_dataset(dir.path("int32.npz")).data[3][2].item<double>(), 11.0);
  EXPECT_EQ(load_dataset(dir.path("int32.npz")).source_dtype, "int32");
  EXPECT_EQ(load_dataset(dir.path("float32.npz")).data[1][0].item<double>(), 0.75);
  EXPECT_EQ(load_dataset(dir.path("float16.npz")).data[2][1].item<double>(), 1.75);
  EXPECT_EQ(load_dataset(dir.path("bool.npz")).data[0][1].item<double>(), 0.0);
  for (const char* f : {"frames", "frames_fortran"}) {
    const Dataset fr = load_dataset(dir.path(std::string(f) + ".npz"));
    EXPECT_EQ(fr.original_shape, (std::vector<int64_t>{2, 3, 4})) << f;
    EXPECT_EQ(fr.data[1][5].item<double>(), 17.0) << f;  // frame 1, (1, 1) -> 12 + 4 + 1
    EXPECT_TRUE(fr.names.empty());
  }
  EXPECT_EQ(read_npy(dir.path("plain.npy")).to_doubles(), expected);
}

TEST_F(NumpyInterop, NumpyLoadsWhatWeWrite) {
  std::vector<double> v(12);
  for (int i = 0; i < 12; ++i) v[i] = i * 0.5;
  const auto data = NpyArray::from_doubles({4, 3}, v);
  const auto names = NpyArray::from_strings({"pt_", "eta_", "\xce\xbc\xce\xbd"});
  write_npz(dir.path("ours_stored.npz"), {{"data", data}, {"names", names}}, false);
  write_npz(dir.path("ours_deflated.npz"), {{"data", data}, {"names", names}}, true);
  std::vector<float> f(24);
  for (int i = 0; i < 24; ++i) f[i] = static_cast<float>(i);
  write_npz(dir.path("ours_frames.npz"), {{"data", NpyArray::from_floats({2, 3, 4}, f)}});
  const std::vector<uint16_t> half = {0x3C00, 0xC000, 0x7BFF, 0x0000};
  write_npy(dir.path("ours_half.npy"), NpyArray::from_bytes(DType::kFloat16, {4}, half.data(), 8));
  write_npy(dir.path("ours_int64.npy"), NpyArray::from_int64({2}, {-5, 1LL << 40}));
  const auto r = run_command(python_binary() + " " + script() + " check " + dir.root());
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

}  // namespace
}  // namespace balerbench
