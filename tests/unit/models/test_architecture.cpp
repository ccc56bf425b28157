// test_architecture.cpp: parameter counts from docs/baler.md (The dense models) and the
// docs/reference_tables.md T1 operation counts, row by row.
#include <gtest/gtest.h>

#include "common/error.h"
#include "models/architecture.h"
#include "tests/test_util.h"

namespace balerbench {
namespace {

TEST(Architecture, ParameterCountsMatchTheSpec) {
  EXPECT_EQ(describe_model("AE", 24, 15).parameters(), 61839);
  EXPECT_EQ(describe_model("AE", 24, 12).parameters(), 61536);
  EXPECT_EQ(describe_model("AE_Dropout_BN", 24, 15).parameters(), 62587);
  EXPECT_EQ(describe_model("CFD_dense_AE", 2500, 25).parameters(), 1055725);
  EXPECT_EQ(describe_model("CFD_dense_AE", 2500, 250).parameters(), 1078450);
  EXPECT_EQ(describe_model("FPGA_prototype_model", 24, 15).parameters(), 1759);
}

TEST(Architecture, ReproducesReferenceTableT1RowByRow) {
  const Architecture a = describe_model("AE", 24, latent_size(24, 1.6));
  const std::vector<int64_t> expected = {2457800, 10240100, 2560050, 384015, 384050, 2560100, 10240200, 2457624};
  ASSERT_EQ(a.layers.size(), expected.size());
  int64_t total = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(a.layers[i].t1_operations(512), expected[i]) << a.layers[i].name;
    total += a.layers[i].t1_operations(512);
  }
  EXPECT_EQ(total, 31283939);
  EXPECT_EQ(a.macs_per_sample(), 61100);  // "about 61.1k multiply-adds per row"
}

TEST(Architecture, LatentSizeIsCeil) {
  EXPECT_EQ(latent_size(24, 1.6), 15);
  EXPECT_EQ(latent_size(24, 2.0), 12);
  EXPECT_EQ(latent_size(2500, 100), 25);
  EXPECT_EQ(latent_size(24, 5), 5);  // ceil(4.8)
  expect_input_error([] { latent_size(24, 0); }, "positive");
  expect_input_error([] { latent_size(24, -1); }, "positive");
  expect_input_error([] { latent_size(24, 0.5); }, "larger than the 24 input features");
  // A ratio so small that the size passes int64 is refused, not wrapped to a latent size of 1.
  for (const double ratio : {1e-18, 1e-19, 1e-300, 5e-324})
    expect_input_error([&] { latent_size(24, ratio); }, "larger than the 24 input features");
  EXPECT_EQ(latent_size(24, 1e300), 1);  // a huge ratio is the smallest latent space
}

TEST(Architecture, UnknownModelListsValidNames) {
  expect_input_error([] { describe_model("VAE", 24, 15); },
                     "valid names: AE, AE_Dropout_BN, CFD_dense_AE, FPGA_prototype_model");
  EXPECT_EQ(model_data_dimension("CFD_dense_AE"), 2);
  EXPECT_EQ(model_data_dimension("AE"), 1);
  EXPECT_EQ(model_dtype_name("CFD_dense_AE"), "float32");
  EXPECT_EQ(model_dtype_name("AE_Dropout_BN"), "float64");
}

}  // namespace
}  // namespace balerbench
