// The DDP/training knobs of a scenario: parsed into the spec, and every bad value refused with
// file, JSON path, value and what is allowed.
#include <gtest/gtest.h>

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
  EXPECT_EQ(s.ddp.comm_hook, "allreduce");
  EXPECT_EQ(s.ddp.powersgd.matrix_approximation_rank, 1);
  EXPECT_EQ(s.ddp.powersgd.start_powerSGD_iter, 1000);
  EXPECT_TRUE(s.ddp.powersgd.use_error_feedback);
  EXPECT_EQ(s.training.gradient_accumulation_steps, 1);
  EXPECT_TRUE(s.contention.enabled);
  EXPECT_FALSE(s.streams.nccl_high_priority);
  EXPECT_EQ(s.streams.comm_streams, 1);
  EXPECT_FALSE(s.stragglers.explicit_ranks());
  EXPECT_EQ(s.simulation.ranks, config::RankMode::REPRESENTATIVE);
  EXPECT_GT(s.model.input_bytes_per_sample, 0);  // 3 x 224 x 224 float32 from the export input
  EXPECT_DOUBLE_EQ(s.model.input_bytes_per_sample, 3.0 * 224 * 224 * 4);
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
                 "contention.enabled=false",
                 "contention.comm_slowdown=1.3",
                 "stragglers.jitter_cv=0.05",
                 "stragglers.steps=20",
                 "stragglers.slow_ranks=[{\"rank\":2,\"factor\":1.5}]",
                 "compute.autograd_traversal_per_param=\"1us\"",
                 "collective.NCCL_MIN_CTAS=4",
                 "collective.NCCL_MAX_CTAS=12",
                 "collective.NCCL_PROTO=\"^LL128\""});
  EXPECT_EQ(s.ddp.comm_hook, "powersgd");
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
        BadCase{"collective.model=\"magic\"", "/collective/model", "\"magic\"", "nccl"}));

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

}  // namespace
}  // namespace ddpsim
