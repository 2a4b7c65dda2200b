// The DDP/training knobs of a scenario: parsed into the spec, and every bad value refused with
// file, JSON path, value and what is allowed. The string settings parsed once into enums
// (training.compute_dtype, ddp.comm_hook, training.wrapper, collective.model) print back as the
// names they were read from.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "config/sections.hpp"
#include "support/builders.hpp"

namespace ddpsim {
namespace {

using test_support::contains_all;
using test_support::expect_config_error;
using test_support::Json;

config::Scenario load(const std::vector<std::string>& overrides) {
  Json doc = test_support::scenario_json();
  config::apply_overrides(doc, overrides);
  return test_support::source_catalog().scenario_from_json(doc, "knobs.json", DDPSIM_SOURCE_DIR);
}

TEST(ScenarioKnobs, DefaultsFollowPyTorchAndNccl) {
  auto s = load({});
  EXPECT_TRUE(s.ddp.broadcast_buffers);
  EXPECT_EQ(s.ddp.comm_hook, config::CommHook::ALLREDUCE);
  EXPECT_EQ(s.ddp.powersgd.matrix_approximation_rank, 1);
  EXPECT_EQ(s.ddp.powersgd.start_powerSGD_iter, 1000);
  EXPECT_TRUE(s.ddp.powersgd.use_error_feedback);
  EXPECT_EQ(s.training.gradient_accumulation_steps, 1);
  EXPECT_TRUE(s.contention.enabled);
  EXPECT_FALSE(s.streams.nccl_high_priority);
  EXPECT_EQ(s.streams.comm_streams, 1);
  EXPECT_EQ(s.streams.comm_workers, 1);
  EXPECT_FALSE(s.stragglers.explicit_ranks());
  EXPECT_EQ(s.simulation.ranks, config::RankMode::REPRESENTATIVE);
  EXPECT_GT(s.model.input_bytes_per_sample, 0);  // 3 x 224 x 224 float32 from the export input
  EXPECT_DOUBLE_EQ(s.model.input_bytes_per_sample, 3.0 * 224 * 224 * 4);
}

// torch.optim's implementation when the scenario names none: 1.13's optimizers run per tensor
// ("if foreach is None: foreach = False", torch/optim/sgd.py), 2.x's take foreach on CUDA; a given
// one stands whatever the release.
TEST(ScenarioKnobs, OptimizerImplementationFollowsThePyTorchRelease) {
  EXPECT_EQ(load({}).training.optimizer_impl, "foreach");
  EXPECT_EQ(load({"ddp.pytorch_version=\"2.4\""}).training.optimizer_impl, "foreach");
  EXPECT_EQ(load({"ddp.pytorch_version=\"1.13\""}).training.optimizer_impl, "for_loop");
  EXPECT_EQ(load({"ddp.pytorch_version=\"1.13\"", "training.optimizer_impl=\"foreach\""}).training.optimizer_impl,
            "foreach");
  EXPECT_EQ(load({"training.optimizer_impl=\"fused\""}).training.optimizer_impl, "fused");
  // torch 1.13 has a fused Adam (torch/optim/adam.py `fused`) and no fused SGD or AdamW.
  EXPECT_EQ(load({"ddp.pytorch_version=\"1.13\"", "training.optimizer=\"adam\"", "training.optimizer_impl=\"fused\""})
                .training.optimizer_impl,
            "fused");
  auto e = expect_config_error([&] { load({"ddp.pytorch_version=\"1.13\"", "training.optimizer_impl=\"fused\""}); });
  EXPECT_TRUE(
      contains_all(e.what(), {"knobs.json", "/training/optimizer_impl", "\"fused\"", "\"sgd\"", "fused Adam only"}))
      << e.what();
}

TEST(ScenarioKnobs, EveryKnobIsReadByItsName) {
  auto s = load({"ddp.comm_hook=powersgd",
                 "ddp.powersgd.matrix_approximation_rank=4",
                 "ddp.powersgd.batched=true",
                 "ddp.broadcast_buffers=false",
                 "training.gradient_accumulation_steps=8",
                 "training.clip_grad_norm=true",
                 "training.pin_memory=false",
                 "training.loader_samples_per_s=900",
                 "streams.TORCH_NCCL_HIGH_PRIORITY=true",
                 "streams.CUDA_DEVICE_MAX_CONNECTIONS=1",
                 "streams.comm_streams=2",
                 "streams.comm_workers=2",
                 "contention.enabled=false",
                 "contention.comm_slowdown=1.3",
                 "stragglers.jitter_cv=0.05",
                 "stragglers.steps=20",
                 "stragglers.slow_ranks=[{\"rank\":2,\"factor\":1.5}]",
                 "compute.autograd_traversal_per_param=\"1us\"",
                 "collective.NCCL_MIN_CTAS=4",
                 "collective.NCCL_MAX_CTAS=12",
                 "collective.NCCL_PROTO=\"^LL128\""});
  EXPECT_EQ(s.ddp.comm_hook, config::CommHook::POWERSGD);
  EXPECT_EQ(s.ddp.powersgd.matrix_approximation_rank, 4);
  EXPECT_TRUE(s.ddp.powersgd.batched);
  EXPECT_FALSE(s.ddp.broadcast_buffers);
  EXPECT_EQ(s.training.gradient_accumulation_steps, 8);
  EXPECT_TRUE(s.training.clip_grad_norm);
  EXPECT_FALSE(s.training.pin_memory);
  EXPECT_EQ(*s.training.loader_samples_per_s, 900);
  EXPECT_TRUE(s.streams.nccl_high_priority);
  EXPECT_EQ(s.streams.cuda_device_max_connections, 1);
  EXPECT_EQ(s.streams.comm_streams, 2);
  EXPECT_EQ(s.streams.comm_workers, 2);
  EXPECT_FALSE(s.contention.enabled);
  EXPECT_EQ(*s.contention.comm_slowdown, 1.3);
  EXPECT_EQ(s.stragglers.jitter_cv, 0.05);
  EXPECT_EQ(s.stragglers.steps, 20);
  ASSERT_EQ(s.stragglers.slow_ranks.size(), 1u);
  EXPECT_EQ(s.stragglers.slow_ranks[0].first, 2);
  EXPECT_EQ(s.stragglers.slow_ranks[0].second, 1.5);
  EXPECT_DOUBLE_EQ(s.compute.autograd_traversal_per_param, 1e-6);
  EXPECT_EQ(s.collective.nccl_min_ctas, 4);
  EXPECT_EQ(s.collective.nccl_max_ctas, 12);
  EXPECT_EQ(s.collective.nccl_proto, (std::vector<std::string>{"LL", "Simple"}));
}

struct BadCase {
  std::string set, path, value, allowed;
};

class BadKnob : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadKnob, IsRefusedWithPathValueAndWhatIsAllowed) {
  const auto& c = GetParam();
  auto e = expect_config_error([&] { load({c.set}); });
  EXPECT_TRUE(contains_all(e.what(), {"knobs.json", c.path, c.value, c.allowed})) << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    Scenario, BadKnob,
    ::testing::Values(
        BadCase{"ddp.comm_hook=gzip", "/ddp/comm_hook", "\"gzip\"", "powersgd"},
        BadCase{"ddp.powersgd.matrix_approximation_rank=0", "/ddp/powersgd/matrix_approximation_rank", "0",
                "[1, 1024]"},
        BadCase{"ddp.powersgd.rank=2", "/ddp/powersgd/rank", "unknown key", "matrix_approximation_rank"},
        BadCase{"training.gradient_accumulation_steps=0", "/training/gradient_accumulation_steps", "0", "integer"},
        BadCase{"training.loader_samples_per_s=-5", "/training/loader_samples_per_s", "-5", "> 0"},
        BadCase{"streams.CUDA_DEVICE_MAX_CONNECTIONS=0", "/streams/CUDA_DEVICE_MAX_CONNECTIONS", "0", "[1, 32]"},
        BadCase{"streams.comm_streams=\"two\"", "/streams/comm_streams", "\"two\"", "integer"},
        BadCase{"streams.comm_workers=0", "/streams/comm_workers", "0", "[1, 16]"},
        BadCase{"streams.comm_workers=17", "/streams/comm_workers", "17", "[1, 16]"},
        BadCase{"contention.comm_slowdown=0.5", "/contention/comm_slowdown", "0.5", ">= 1"},
        BadCase{"stragglers.jitter_cv=-1", "/stragglers/jitter_cv", "-1", ">= 0"},
        BadCase{"stragglers.slow_ranks=[{\"rank\":99,\"factor\":2}]", "/stragglers/slow_ranks/0/rank", "99", "0..7"},
        BadCase{"stragglers.slow_ranks=[{\"rank\":1}]", "/stragglers/slow_ranks/0/factor", "missing", "number"},
        BadCase{"stragglers.slow_ranks=5", "/stragglers/slow_ranks", "5", "array"},
        BadCase{"collective.NCCL_ALGO=\"Ring,Butterfly\"", "/collective/NCCL_ALGO", "Butterfly", "Tree"},
        BadCase{"collective.NCCL_PROTO=\"LL256\"", "/collective/NCCL_PROTO", "LL256", "Simple"},
        BadCase{"collective.NCCL_PROTO=\"^LL128;Simple\"", "/collective/NCCL_PROTO", "^LL128;Simple",
                "function prefix"},
        BadCase{"collective.NCCL_ALGO=\"allgahter:Ring\"", "/collective/NCCL_ALGO", "allgahter", "AllGather"},
        BadCase{"collective.NCCL_ALGO=\"PAT\"", "/collective/NCCL_ALGO", "PAT", "no algorithm for all-reduce"},
        BadCase{"collective.NCCL_MAX_CTAS=65", "/collective/NCCL_MAX_CTAS", "65", "[0, 64]"},
        BadCase{"collective.model=\"magic\"", "/collective/model", "\"magic\"", "nccl"},
        BadCase{"collective.host_call=\"-5us\"", "/collective/host_call", "\"-5us\"", ">= 0"},
        BadCase{"collective.host_call=95", "/collective/host_call", "95", ">= 0"},
        BadCase{"collective.host_callback=\"-1us\"", "/collective/host_callback", "\"-1us\"", ">= 0"},
        BadCase{"collective.host_callback=true", "/collective/host_callback", "true", ">= 0"},
        BadCase{"collective.measured_allreduce=[{\"bytes\":1024,\"seconds\":1e-4}]", "/collective/measured_allreduce",
                "[{", "at least 2"},
        BadCase{"collective.measured_allreduce=[{\"bytes\":1024,\"seconds\":1e-4},{\"bytes\":512,\"seconds\":2e-4}]",
                "/collective/measured_allreduce/1/bytes", "512", "more than the previous row's 1024"},
        BadCase{"collective.measured_allreduce=[{\"bytes\":1024,\"seconds\":1e-4},{\"bytes\":4096,\"seconds\":0}]",
                "/collective/measured_allreduce/1/seconds", "0", "> 0"},
        BadCase{"collective.measured_allreduce=[{\"bytes\":1024,\"seconds\":1e-4},{\"bytes\":4096,\"seconds\":2e-4}]",
                "/collective/measured_allreduce", "ring model only", "\"model\": \"ring\""}));

// The allowed list of an error message: every name, quoted.
std::vector<std::string> quoted(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back("\"" + n + "\"");
  return out;
}

// Each (name, value) of a string setting: the scenario's `path=name` loads as value, and the value
// prints back as name; the table lists exactly these names.
template <class E, class Get>
void expect_round_trip(const std::string& path, const core::Names<E>& table,
                       const std::vector<std::pair<std::string, E>>& cases, Get get) {
  ASSERT_EQ(table.all().size(), cases.size()) << path;
  for (const auto& [name, value] : cases) {
    EXPECT_EQ(get(load({path + "=" + name})), value) << path << "=" << name;
    EXPECT_EQ(config::to_string(value), name);
  }
}

TEST(SettingNames, EveryNameParsesToItsValueAndPrintsBack) {
  using config::CommHook;
  using config::ComputeDtype;
  // The scenario's dgx-a100 GPU has a peak for each of the five.
  expect_round_trip<ComputeDtype>("training.compute_dtype", config::compute_dtype_names(),
                                  {{"float32", ComputeDtype::FLOAT32},
                                   {"tf32", ComputeDtype::TF32},
                                   {"bfloat16", ComputeDtype::BFLOAT16},
                                   {"float16", ComputeDtype::FLOAT16},
                                   {"float64", ComputeDtype::FLOAT64}},
                                  [](const config::Scenario& s) { return s.training.compute_dtype; });
  expect_round_trip<CommHook>("ddp.comm_hook", config::comm_hook_names(),
                              {{"allreduce", CommHook::ALLREDUCE},
                               {"allreduce_hook", CommHook::ALLREDUCE_HOOK},
                               {"fp16_compress", CommHook::FP16_COMPRESS},
                               {"bf16_compress", CommHook::BF16_COMPRESS},
                               {"powersgd", CommHook::POWERSGD},
                               {"quantize_per_tensor", CommHook::QUANTIZE_PER_TENSOR},
                               {"quantize_per_channel", CommHook::QUANTIZE_PER_CHANNEL}},
                              [](const config::Scenario& s) { return s.ddp.comm_hook; });
  expect_round_trip<config::CollectiveModelKind>(
      "collective.model", config::collective_model_names(),
      {{"nccl", config::CollectiveModelKind::NCCL}, {"ring", config::CollectiveModelKind::RING}},
      [](const config::Scenario& s) { return s.collective.model; });
  // data_parallel needs a one-node cluster and more (tests/sim/DataParallel_test.cpp).
  EXPECT_EQ(load({"training.wrapper=ddp"}).training.wrapper, config::Wrapper::DDP);
  EXPECT_EQ(config::wrapper_names().value("data_parallel", config::Wrapper::DDP), config::Wrapper::DATA_PARALLEL);
  EXPECT_EQ(config::to_string(config::Wrapper::DATA_PARALLEL), "data_parallel");
  EXPECT_EQ(config::wrapper_names().value("fsdp", config::Wrapper::DDP), config::Wrapper::FSDP);
  EXPECT_EQ(config::wrapper_names().all().size(), 3u);
}

TEST(SettingNames, HalfPrecisionIsFloat16AndBfloat16Only) {
  // torch.autocast on CUDA casts to float16 or bfloat16; float32, tf32 and float64 keep full width.
  using config::ComputeDtype;
  EXPECT_TRUE(config::is_half_precision(ComputeDtype::FLOAT16));
  EXPECT_TRUE(config::is_half_precision(ComputeDtype::BFLOAT16));
  EXPECT_FALSE(config::is_half_precision(ComputeDtype::FLOAT32));
  EXPECT_FALSE(config::is_half_precision(ComputeDtype::TF32));
  EXPECT_FALSE(config::is_half_precision(ComputeDtype::FLOAT64));
}

struct BadName {
  std::string set, path, value;
  std::vector<std::string> allowed;
};

class BadSettingName : public ::testing::TestWithParam<BadName> {};

TEST_P(BadSettingName, IsRefusedWithFilePathValueAndEveryAllowedName) {
  const auto& c = GetParam();
  auto e = expect_config_error([&] { load({c.set}); });
  std::vector<std::string> want = {"knobs.json", c.path, c.value};
  for (const auto& a : quoted(c.allowed)) want.push_back(a);
  EXPECT_TRUE(contains_all(e.what(), want)) << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    Scenario, BadSettingName,
    ::testing::Values(
        BadName{"training.compute_dtype=fp8",
                "/training/compute_dtype",
                "\"fp8\"",
                {"float32", "tf32", "bfloat16", "float16", "float64"}},
        // Names are exact (PyTorch's spellings): no case folding.
        BadName{"training.compute_dtype=Float16",
                "/training/compute_dtype",
                "\"Float16\"",
                {"float32", "tf32", "bfloat16", "float16", "float64"}},
        BadName{"ddp.comm_hook=fp8_compress",
                "/ddp/comm_hook",
                "\"fp8_compress\"",
                {"allreduce", "allreduce_hook", "fp16_compress", "bf16_compress", "powersgd", "quantize_per_tensor",
                 "quantize_per_channel"}},
        BadName{"training.wrapper=deepspeed", "/training/wrapper", "\"deepspeed\"", {"ddp", "data_parallel", "fsdp"}},
        BadName{"collective.model=tree", "/collective/model", "\"tree\"", {"nccl", "ring"}}));

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(ScenarioKnobs, TorchReleaseMapsToItsFirstBucketRule) {
  EXPECT_EQ(config::pytorch_rule_version("1.13.1+cpu"), "1.13");
  EXPECT_EQ(config::pytorch_rule_version("2.3.0"), "2.4");
  EXPECT_EQ(config::pytorch_rule_version(""), "2.4");
}

TEST(ScenarioKnobs, AbsentSectionsKeepTheSpecDefaults) {
  core::Diagnostics d("defaults.json");
  const auto empty = core::Json::object();
  const config::DdpSettings ddp = config::parse_ddp(empty, d);
  EXPECT_EQ(ddp.bucket_cap_mb, config::DdpSettings{}.bucket_cap_mb);
  EXPECT_TRUE(ddp.bucket_cap_is_default);
  EXPECT_EQ(config::parse_training(empty, d).batch_size, config::TrainingSettings{}.batch_size);
  EXPECT_EQ(config::parse_stragglers(empty, d).steps, config::StragglerSettings{}.steps);
  EXPECT_EQ(config::parse_simulation(empty, d).ranks, config::RankMode::REPRESENTATIVE);
  EXPECT_TRUE(d.ok());
}

// bucket_cap_mb=None is PyTorch 2.x's default (distributed.py: 25 MiB, bucket_bytes_cap_default =
// True, so the rebuilt first bucket keeps dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB), unlike an
// explicit 25 (first bucket 25 MiB); PyTorch 1.13 fails on None (int(None * 1024 * 1024)).
TEST(ScenarioKnobs, NullBucketCapIsPyTorchsNoneDefault) {
  const auto none = load({"ddp.bucket_cap_mb=null"});
  EXPECT_TRUE(none.ddp.bucket_cap_is_default);
  EXPECT_EQ(none.ddp.bucket_cap_bytes(), 25.0 * 1024 * 1024);
  EXPECT_EQ(none.ddp.first_bucket_cap_bytes(), 1024.0 * 1024);
  const auto explicit25 = load({"ddp.bucket_cap_mb=25"});
  EXPECT_FALSE(explicit25.ddp.bucket_cap_is_default);
  EXPECT_EQ(explicit25.ddp.first_bucket_cap_bytes(), 25.0 * 1024 * 1024);
  const auto e = expect_config_error([&] { load({"ddp.bucket_cap_mb=null", "ddp.pytorch_version=\"1.13\""}); });
  EXPECT_TRUE(contains_all(e.what(), {"knobs.json", "/ddp/bucket_cap_mb", "null", "1.13", "TypeError"})) << e.what();
}

TEST(ScenarioKnobs, MeasuredOptimizerStepIsForAReplicatedOptimizerOnly) {
  EXPECT_EQ(*load({"training.measured_optimizer_step=\"10.5ms\""}).training.measured_optimizer_step_s, 10.5e-3);
  EXPECT_FALSE(load({}).training.measured_optimizer_step_s);
  auto e = expect_config_error([&] {
    load({"training.measured_optimizer_step=\"10ms\"", "training.zero_redundancy_optimizer=true"});
  });
  EXPECT_TRUE(contains_all(e.what(), {"knobs.json", "/training/measured_optimizer_step", "0.01", "expected it unset"}))
      << e.what();
  e = expect_config_error([&] { load({"training.measured_optimizer_step=\"-1ms\""}); });
  EXPECT_TRUE(contains_all(e.what(), {"knobs.json", "/training/measured_optimizer_step"})) << e.what();
}

}  // namespace
}  // namespace ddpsim
