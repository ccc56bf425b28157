// test_engine_registry.cpp: an engine with a knob of its own joins by its files and one
// registration, and nothing else. The engine below lives only in this file: its name, its run-config
// key ("test_gain"), the key's default, reader and reference entry are all here; a run config that
// names both is parsed by parse_run_config, carried by train_options and fit, and the gain reaches
// the engine, which reports it back through the training's result. The engine names configs accept
// are the registry's, built-in engines included: no list of names beside it.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "harness/cli/commands.h"
#include "harness/engine/engine_registry.h"
#include "harness/engine/trainer.h"
#include "harness/run/run_config.h"
#include "harness/run/training_session.h"
#include "harness/sweep/experiment.h"
#include "models/autoencoder.h"

namespace balerbench {
namespace {

using nlohmann::json;

constexpr const char* kName = "test_gain";
constexpr const char* kGain = "test_gain";

// Each step adds the gain to the epoch's loss sum: an epoch's loss is then exactly the gain.
class GainEngine final : public Engine {
 public:
  explicit GainEngine(double gain) : gain_(gain) {}
  EngineKind kind() const override { return *find_engine(kName); }
  EngineStatus status() const override {
    EngineStatus s;
    s.details["products"] = "gain " + json(gain_).dump();
    return s;
  }
  void begin_epoch() override { sum_ = 0; }
  void step(const at::Tensor&) override { sum_ += gain_; }
  double epoch_loss_sum() override { return sum_; }
  at::Tensor encode(const at::Tensor& x) override { return x * gain_; }
  at::Tensor decode(const at::Tensor& z) override { return z / gain_; }

 private:
  double gain_;
  double sum_ = 0;
};

const EngineKnobSection kGainKnobs{
    [](EngineKnobs& k) { k.set(kGain, 1.0); },
    [](StrictReader& r, EngineKnobs& k) {
      double gain = k.get<double>(kGain);
      r.number_in(kGain, gain, 0.5, 4.0);
      k.set(kGain, gain);
    },
    [] { return std::vector<ConfigKeyDoc>{{"/test_gain", "the test engine's gain (0.5 to 4)", ""}}; }};

const EngineEntry kGainEntry{
    kName,
    "adds a gain to each step's loss (a test's)",
    [](const AutoEncoder&, const PrecisionPolicy&, c10::Device) { return std::string(); },
    [](const AutoEncoder&, const PrecisionPolicy&, c10::Device) { return std::string("a test engine"); },
    [](const PrecisionPolicy&, c10::Device) { return std::string(); },
    [](AutoEncoder&, const TrainingSetup& s) -> std::unique_ptr<Engine> {
      return std::make_unique<GainEngine>(s.options.engine_knobs.get<double>(kGain));
    },
    [](AutoEncoder&, const InferenceSetup& s) -> std::unique_ptr<Engine> {
      return std::make_unique<GainEngine>(s.knobs ? s.knobs->get<double>(kGain) : 1.0);
    },
    &kGainKnobs};

json gain_config(double gain) {
  return {{"input_path", "data.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6}, {"engine", kName},
          {kGain, gain},              {"epochs", 2},        {"batch_size", 8},           {"progress", "none"}};
}

TEST(EngineRegistry, AnEngineKnobIsParsedFromARunConfigAndReachesTheEngine) {
  const EngineRegistration registration(kGainEntry);  // the one registry line
  const RunConfig c = parse_run_config(gain_config(2.5), "gain.json", "");
  EXPECT_EQ(c.engine, registration.kind());
  EXPECT_EQ(c.to_json()[kGain], 2.5);  // spelled as the config spells it
  EXPECT_EQ(c.to_json()["fused_shards"], 0);  // the built-in engines' knobs are still there

  TrainOptions o = train_options(c);
  o.precision = resolve_precision(Precision::kFp64, at::kDouble, c10::Device(c10::kCPU));
  torch::manual_seed(1);
  auto model = make_model("AE", 24, 15);
  const TrainResult r = fit(*model, torch::rand({32, 24}, torch::kDouble), at::Tensor(), o);
  EXPECT_EQ(r.engine, registration.kind());
  EXPECT_EQ(r.engine_status.detail("products"), "gain 2.5");
  ASSERT_EQ(r.epoch_records.size(), 2u);
  EXPECT_DOUBLE_EQ(r.epoch_records[0].train_loss, 2.5);  // 4 steps of 8 rows, each adding 2.5, over 4 batches

  // Compress and decompress are given the same knobs.
  const std::unique_ptr<Engine> inference =
      make_inference_engine(registration.kind(), *model, {o.precision, 16, 0, &c.engine_knobs});
  EXPECT_EQ(inference->status().detail("products"), "gain 2.5");
}

TEST(EngineRegistry, AnEngineKnobIsCheckedAndDocumentedByItsEngine) {
  const EngineRegistration registration(kGainEntry);
  EXPECT_THROW(parse_run_config(gain_config(9.0), "gain.json", ""), InputError);
  EXPECT_EQ(parse_run_config({{"input_path", "d.npz"}, {"model_name", "AE"}, {"compression_ratio", 1.6}}, "d.json", "")
                .engine_knobs.get<double>(kGain),
            1.0);  // its default
  const std::vector<ConfigKeyDoc> docs = run_config_key_docs();
  EXPECT_TRUE(std::any_of(docs.begin(), docs.end(), [](const ConfigKeyDoc& d) { return d.path == "/test_gain"; }));
  // The reference's check (tests/unit/cli/test_config_reference.cpp) holds with the engine registered.
  const cli::ConfigKeyProblems p = cli::check_config_key_docs(run_config_key_docs(), experiment_key_docs());
  EXPECT_TRUE(p.undocumented.empty());
  EXPECT_TRUE(p.stale.empty());
}

// Every name a config may give is "auto" or an entry's, each naming its entry's kind, once (fused
// has an entry for the CPU and one for CUDA); the kinds code names when it compiles are entries of
// the registry too.
TEST(EngineRegistry, TheEngineNamesAreTheRegistrys) {
  const std::vector<std::string> names = engine_names();
  std::set<std::string> entry_names;
  for (const EngineEntry* e : engine_registry()) entry_names.insert(e->name);
  ASSERT_EQ(names.size(), entry_names.size() + 1);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(names[0], "auto");
  EXPECT_EQ(names[1], engine_registry().back()->name);  // the reference, as the names always began
  EXPECT_EQ(*find_engine("auto"), EngineKind::kAuto);
  for (const EngineEntry* e : engine_registry()) {
    EXPECT_NE(std::find(names.begin(), names.end(), e->name), names.end()) << e->name;
    ASSERT_TRUE(find_engine(e->name)) << e->name;
    EXPECT_EQ(*find_engine(e->name), e->kind());
    EXPECT_STREQ(engine_name(e->kind()), e->name);
    const c10::Device device = e->devices == EngineDevices::kCuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
    EXPECT_EQ(&engine_entry(e->kind(), device), e);
  }
  for (EngineKind k : {EngineKind::kLibtorch, EngineKind::kFused})
    EXPECT_STREQ(engine_entry(k, c10::kCPU).name, engine_name(k));
  EXPECT_FALSE(find_engine("fused2"));
}

// A name with an entry per device is one choice in the `--engine` help and the reference, with each
// entry's summary: fused's CPU and CUDA words in one parenthesis, in the registry's order.
TEST(EngineRegistry, OneNamesEntriesShareOneChoiceInTheHelp) {
  const std::string help = engine_choices_help();
  const std::string cpu = engine_entry(EngineKind::kFused, c10::kCPU).summary;
  const std::string cuda = engine_entry(EngineKind::kFused, c10::Device(c10::kCUDA, 0)).summary;
  ASSERT_NE(cpu, cuda);
  EXPECT_NE(help.find("fused (" + cpu + "; " + cuda + ")"), std::string::npos) << help;
  EXPECT_EQ(help.find("fused ("), help.rfind("fused (")) << help;
  for (const EngineEntry* e : engine_registry())
    EXPECT_NE(help.find(e->summary), std::string::npos) << e->name;
}

TEST(EngineRegistry, ARegisteredEngineIsNamedAfterTheBuiltInOnesAndItsNameIsTakenOnce) {
  const std::string before = engine_name_list();
  {
    const EngineRegistration registration(kGainEntry);
    EXPECT_EQ(engine_name_list(), before + ", test_gain");
    EXPECT_STREQ(engine_name(registration.kind()), kName);
    EXPECT_THROW(EngineRegistration again(kGainEntry), std::logic_error);
    // An experiment's engine axis reads the same names.
    json ex = {{"schema_version", kExperimentSchemaVersion},
               {"dataset", {{"generator", {{"kind", "cms"}, {"rows", 10}}}}},
               {"model", {{"name", "AE"}, {"compression_ratio", 1.6}}},
               {"sweep", {{"engine", {"libtorch", kName}}}}};
    EXPECT_EQ(parse_experiment(ex, "ex.json", "").engines,
              (std::vector<EngineKind>{EngineKind::kLibtorch, registration.kind()}));
  }
  EXPECT_EQ(engine_name_list(), before);
}

TEST(EngineRegistry, AnEngineLeavesWithItsRegistration) {
  { const EngineRegistration registration(kGainEntry); }
  EXPECT_FALSE(find_engine(kName));
  EXPECT_THROW(parse_run_config(gain_config(2.5), "gain.json", ""), InputError);  // neither its name nor its key
  const std::vector<ConfigKeyDoc> docs = run_config_key_docs();
  EXPECT_TRUE(std::none_of(docs.begin(), docs.end(), [](const ConfigKeyDoc& d) { return d.path == "/test_gain"; }));
}

TEST(EngineRegistry, AnEngineIsInTheEngineHelpAndTheReferenceWhileRegistered) {
  const auto engine_words = [] {
    const std::vector<ConfigKeyDoc> docs = run_config_key_docs();
    const auto it = std::find_if(docs.begin(), docs.end(), [](const ConfigKeyDoc& d) { return d.path == "/engine"; });
    return it == docs.end() ? std::string() : it->meaning;
  };
  {
    const EngineRegistration registration(kGainEntry);
    const std::string help = engine_choices_help();
    EXPECT_NE(help.find("test_gain (adds a gain to each step's loss (a test's))"), std::string::npos) << help;
    EXPECT_LT(help.find("fused ("), help.find("test_gain ("));  // in the order auto tries them,
    EXPECT_LT(help.find("test_gain ("), help.find("libtorch ("));  // the reference last
    EXPECT_NE(engine_words().find("`test_gain` (adds a gain to each step's loss (a test's))"), std::string::npos)
        << engine_words();
  }
  EXPECT_EQ(engine_choices_help().find("test_gain"), std::string::npos);
  EXPECT_EQ(engine_words().find("test_gain"), std::string::npos);
  EXPECT_NE(engine_words().find("`libtorch` (LibTorch autograd: every model, precision and device)"),
            std::string::npos);
}

}  // namespace
}  // namespace balerbench
