// training.memory_format "channels_last" where it cannot do what a user expects is warned about
// (sim/app/common.cpp scenario_warnings): no convolutions, measured layer times, or convolutions
// off the tensor cores. Where it works (tensor-core convolutions estimated) nothing is said.
#include <gtest/gtest.h>

#include <string>

#include "app/commands.hpp"
#include "sim/sim_builders.hpp"

namespace ddpsim {
namespace {

using core::Json;

std::string warnings_of(const config::Scenario& s) {
  std::string all;
  for (const auto& w : app::scenario_warnings(s)) all += w + "\n";
  return all;
}

Json doc(const std::string& model, const std::string& cluster, const std::string& dtype) {
  return Json{{"model", model},
              {"cluster", cluster},
              {"training", {{"compute_dtype", dtype}, {"memory_format", "channels_last"}}}};
}

TEST(MemoryFormatWarnings, SaidWhereChannelsLastCannotChangeTheEstimate) {
  // Tensor-core convolutions (fp16 and TF32 on an A100, fp16 on a V100): nothing to warn about.
  for (const auto& [cluster, dtype] :
       {std::pair{"dgx-a100", "float16"}, std::pair{"dgx-a100", "float32"}, std::pair{"dgx1-v100", "float16"}})
    EXPECT_EQ(warnings_of(testing::scenario(doc("resnet50", cluster, dtype))), "") << cluster << " " << dtype;
  // The same scenarios in the default format: nothing either.
  Json plain = doc("resnet50", "dgx1-v100", "float32");
  plain["training"].erase("memory_format");
  EXPECT_EQ(warnings_of(testing::scenario(plain)), "");
  // FP32 on a V100: SIMT convolutions.
  EXPECT_NE(warnings_of(testing::scenario(doc("resnet50", "dgx1-v100", "float32")))
                .find("with float32 convolutions on v100-sxm2-32gb (no tensor cores for them)"),
            std::string::npos);
  // No convolutions at all.
  EXPECT_NE(warnings_of(testing::scenario(doc("bert-base", "dgx-a100", "float16")))
                .find("has no effect on model bert-base: it has no convolutions"),
            std::string::npos);
  // ... measured or not.
  auto bert = testing::scenario(doc("bert-base", "dgx-a100", "float16"));
  for (auto& l : bert.model.layers) {
    l.fwd_time = 1e-4;
    l.bwd_time = 2e-4;
  }
  EXPECT_NE(warnings_of(bert).find("has no effect on model bert-base"), std::string::npos) << warnings_of(bert);
  // Measured layer times are used as they were measured.
  auto measured = testing::scenario(doc("resnet50", "dgx-a100", "float16"));
  for (auto& l : measured.model.layers) {
    l.fwd_time = 1e-4;
    l.bwd_time = 2e-4;
  }
  EXPECT_NE(warnings_of(measured).find("model resnet50's layer times were measured in contiguous_format and are "
                                       "used as measured; training.memory_format \"channels_last\""),
            std::string::npos)
      << warnings_of(measured);
  // Measured in channels_last (profile_model.py --channels-last): consistent, nothing to say; the
  // same times under the default format are flagged the other way round.
  measured.model.measured_memory_format = "channels_last";
  EXPECT_EQ(warnings_of(measured), "");
  measured.training.memory_format = "contiguous_format";
  EXPECT_NE(warnings_of(measured).find("measured in channels_last and are used as measured; "
                                       "training.memory_format \"contiguous_format\""),
            std::string::npos)
      << warnings_of(measured);
  measured.training.memory_format = "channels_last";
  measured.model.measured_memory_format = "contiguous_format";
  measured.compute.use_measured = false;  // the estimate again
  EXPECT_EQ(warnings_of(measured), "");
  // Without kernel records the compute is the roofline per layer: nothing to change either.
  for (auto& l : measured.model.layers) l.kernels.clear();
  EXPECT_NE(warnings_of(measured).find("model resnet50 has no kernel records"), std::string::npos)
      << warnings_of(measured);
}

// An export without per-layer host_ops (before 2026-12-04) leaves views and module calls out of the
// host dispatch: said, and how to add them. The bundled models carry them; a measured profile or
// CUDA graphs have no per-op host model, so nothing is said there.
TEST(ModelWarnings, AnExportWithoutHostOpsIsToldToAddThem) {
  Json plain = doc("resnet50", "dgx-a100", "float16");
  plain["training"].erase("memory_format");
  auto s = testing::scenario(plain);
  EXPECT_EQ(warnings_of(s), "");
  for (auto& l : s.model.layers) l.host_views = l.host_view_nodes = l.host_module_calls = 0;
  EXPECT_NE(warnings_of(s).find("model resnet50 has kernel records but no host_ops"), std::string::npos);
  EXPECT_NE(warnings_of(s).find("--add-kernels"), std::string::npos);
  s.training.cuda_graphs = true;
  EXPECT_EQ(warnings_of(s), "");
}

}  // namespace
}  // namespace ddpsim
