// test_inference.cpp: compress and decompress as every run does them (run/inference.h): the
// config's latent dtype, the integer columns of 1D data, Baler's own de-normalization, and the
// decoder's files with the sizes a trial measures for them.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "datasets/npy.h"
#include "harness/run/inference.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

namespace fs = std::filesystem;

struct Inference {
  Inference() {
    at::manual_seed(0);
    model = make_model("AE", 24, 15);
    engine = make_run_inference_engine(EngineDecision{}, *model, PrecisionPolicy{}, c);
    x = at::rand({300, 24}, at::kDouble) * 40.0 + 3.0;
    norm = Normalization::fit(x);
  }
  RunConfig c;
  std::shared_ptr<AutoEncoder> model;
  std::unique_ptr<Engine> engine;
  at::Tensor x;
  Normalization norm = Normalization::identity(24);
};

TEST(Inference, EncodeTakesTheConfigsLatentDtypeAndDecodeCastsIntegerColumnsOf1dData) {
  Inference f;
  f.c.latent_dtype = "float16";
  const at::Tensor z = encode_table(*f.model, *f.engine, f.x, &f.norm, f.c, at::kDouble);
  EXPECT_EQ(z.scalar_type(), at::kHalf);
  EXPECT_EQ(z.sizes(), (std::vector<int64_t>{300, 15}));
  f.c.type_list.assign(24, "float64");
  f.c.type_list[0] = "int";
  const at::Tensor y1 = decode_table(*f.model, *f.engine, z, &f.norm, f.c, 1);
  EXPECT_TRUE(at::equal(y1.select(1, 0), y1.select(1, 0).round()));
  const at::Tensor y2 = decode_table(*f.model, *f.engine, z, &f.norm, f.c, 2);  // 2D data: nothing cast
  EXPECT_FALSE(at::equal(y2.select(1, 0), y2.select(1, 0).round()));
}

TEST(Inference, BalersDenormalizationIsInFloat64AfterTheCast) {
  Inference f;
  const at::Tensor z = encode_table(*f.model, *f.engine, f.x, &f.norm, f.c, at::kDouble);
  const at::Tensor plain = decode_table(*f.model, *f.engine, z, nullptr, f.c, 2, nullptr, Denormalize::kAsBaler);
  EXPECT_EQ(plain.scalar_type(), f.model->baler_dtype());
  const at::Tensor y = decode_table(*f.model, *f.engine, z, &f.norm, f.c, 2, nullptr, Denormalize::kAsBaler);
  EXPECT_EQ(y.scalar_type(), at::kDouble);
  EXPECT_TRUE(at::allclose(y, f.norm.invert(plain.to(at::kDouble))));
}

TEST(Inference, TheDecoderFilesAreWrittenAsTrainWritesThemAndATrialMeasuresTheirSizes) {
  Inference f;
  const fs::path dir = fs::temp_directory_path() / ("balerbench-test-inference-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model_pt = (dir / "model.pt").string(), npy = (dir / "normalization_features.npy").string();
  const DecoderBytes b = write_decoder_files(model_pt, npy, *f.model, f.norm, f.c, {300, 24});
  EXPECT_EQ(b.model_bytes, static_cast<int64_t>(fs::file_size(model_pt)));
  EXPECT_EQ(b.normalization_bytes, static_cast<int64_t>(fs::file_size(npy)));
  const DecoderBytes measured = measure_decoder_files(*f.model, f.norm, f.c, {300, 24});
  EXPECT_EQ(measured.model_bytes, b.model_bytes);
  EXPECT_EQ(measured.normalization_bytes, b.normalization_bytes);
  f.c.apply_normalization = false;  // an empty array, not counted
  const DecoderBytes none = write_decoder_files(model_pt, npy, *f.model, f.norm, f.c, {300, 24});
  EXPECT_EQ(none.normalization_bytes, 0);
  EXPECT_EQ(read_npy(npy).numel(), 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace balerbench
