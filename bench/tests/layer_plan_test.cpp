// Layer plans: GEMM and conv shapes recovered from parameter shapes and FLOP/byte counts.
#include "layer_plan.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "errors.hpp"
#include "model.hpp"

using namespace ddpbench;

namespace {
// The simulator's reader wants at least one parameter; a frozen one belongs to no layer.
const nlohmann::json kFrozenParam = {
    {{"name", "frozen"}, {"shape", {1}}, {"dtype", "float32"}, {"requires_grad", false}}};
}  // namespace

TEST(LayerPlan, SyntheticMlpLinearShapes) {
  const Model m = model_from_json(synthetic_model("mlp:3:256", 32), "synthetic");
  ASSERT_EQ(m.spec.layers.size(), 6u);
  PlanOptions o;
  const auto first = plan_layer(m, 0, o);
  ASSERT_EQ(first.fwd.size(), 1u);
  EXPECT_EQ(first.fwd[0].kind, OpKind::GEMM);
  EXPECT_EQ(first.fwd[0].gemm.m, 256);
  EXPECT_EQ(first.fwd[0].gemm.n, 32);  // rows = batch
  EXPECT_EQ(first.fwd[0].gemm.k, 256);
  // First layer: weight gradient only (plus the bias reduction as a streaming kernel).
  ASSERT_GE(first.bwd.size(), 1u);
  EXPECT_EQ(first.bwd[0].kind, OpKind::GEMM);
  EXPECT_EQ(first.bwd[0].gemm.k, 32);
  const auto second = plan_layer(m, 2, o);
  EXPECT_EQ(second.bwd[0].kind, OpKind::GEMM);
  EXPECT_EQ(second.bwd[1].kind, OpKind::GEMM);
  // Batch scaling doubles the rows.
  o.batch = 64;
  EXPECT_EQ(plan_layer(m, 2, o).fwd[0].gemm.n, 64);
  // The ReLU is a streaming kernel moving its bytes (float16 halves them).
  o.dtype = DType::FLOAT16;
  const auto relu = plan_layer(m, 1, o);
  ASSERT_EQ(relu.fwd.size(), 1u);
  EXPECT_EQ(relu.fwd[0].kind, OpKind::STREAM);
  EXPECT_DOUBLE_EQ(relu.fwd[0].read_bytes + relu.fwd[0].write_bytes, 8.0 * 64 * 256 / 2);
}

TEST(LayerPlan, ConvShapeRecoveredFromCounts) {
  // ResNet-50 conv1 at export batch 2: 3->64, 7x7, stride 2, pad 3, 224x224 input.
  nlohmann::json j = {{"format", "ddpsim-model/1"},
                      {"name", "conv"},
                      {"batch_size", 2},
                      {"params", {{{"name", "conv1.weight"}, {"shape", {64, 3, 7, 7}}, {"dtype", "float32"}}}},
                      {"grad_ready_order", {0}},
                      {"layers",
                       {{{"name", "conv1"},
                         {"type", "conv2d"},
                         {"params", {0}},
                         {"fwd_flops", 472055808.0},
                         {"bwd_flops", 472055808.0},
                         {"fwd_bytes", 7626752.0},
                         {"bwd_bytes", 7626752.0}}}}};
  const Model m = model_from_json(j, "conv.json");
  PlanOptions o;
  const auto p = plan_layer(m, 0, o);
  ASSERT_EQ(p.fwd.size(), 1u);
  const auto& c = p.fwd[0].conv;
  EXPECT_EQ(p.fwd[0].kind, OpKind::CONV_FWD);
  EXPECT_EQ(c.h, 224);
  EXPECT_EQ(c.stride, 2);
  EXPECT_EQ(c.pad, 3);
  EXPECT_EQ(c.out_h(), 112);
  EXPECT_DOUBLE_EQ(c.flops(), 472055808.0);
  ASSERT_EQ(p.bwd.size(), 1u);  // the image needs no gradient: filter gradient only
  EXPECT_EQ(p.bwd[0].kind, OpKind::CONV_BWD_FILTER);
  o.use_cudnn = false;
  const auto g = plan_layer(m, 0, o);
  EXPECT_EQ(g.fwd[0].kind, OpKind::GEMM);
  EXPECT_DOUBLE_EQ(g.fwd[0].gemm.flops(), 472055808.0);
}

TEST(LayerPlan, AttentionLikeMatmulUsesSeqAndHeadDim) {
  // BERT-base attention at batch 2, seq 128, 12 heads, head_dim 64: 2 bmms of 2*24*128*128*64.
  const double f = 2 * 2.0 * 24 * 128 * 128 * 64;
  nlohmann::json j = {{"format", "ddpsim-model/1"},
                      {"name", "attn"},
                      {"batch_size", 2},
                      {"exported_with", {{"input_shape", {2, 128}}, {"input_dtype", "int64"}}},
                      {"params", kFrozenParam},
                      {"grad_ready_order", nlohmann::json::array()},
                      {"layers",
                       {{{"name", "attn"},
                         {"type", "matmul"},
                         {"params", nlohmann::json::array()},
                         {"fwd_flops", f},
                         {"bwd_flops", 2 * f},
                         {"fwd_bytes", 3e7},
                         {"bwd_bytes", 5e7}}}}};
  const Model m = model_from_json(j, "attn.json");
  EXPECT_EQ(m.token_seq_len(), 128);
  const auto p = plan_layer(m, 0, PlanOptions{});
  ASSERT_GE(p.fwd.size(), 2u);
  EXPECT_EQ(p.fwd[0].gemm.batch, 24);
  EXPECT_EQ(p.fwd[0].gemm.m, 128);
  EXPECT_EQ(p.fwd[0].gemm.k, 64);
  EXPECT_EQ(p.bwd.size(), 5u);  // four bmms + streaming rest
}

TEST(LayerPlan, TiedLinearWithoutWeightSolvesShapeFromTokens) {
  // GPT-2 lm_head: 2 x 1024 tokens, 768 -> 50257, weight tied elsewhere.
  const double t = 2048, k = 768, n = 50257;
  nlohmann::json j = {{"format", "ddpsim-model/1"},
                      {"name", "lm"},
                      {"batch_size", 2},
                      {"exported_with", {{"input_shape", {2, 1024}}, {"input_dtype", "int64"}}},
                      {"params", kFrozenParam},
                      {"grad_ready_order", nlohmann::json::array()},
                      {"layers",
                       {{{"name", "lm_head"},
                         {"type", "linear"},
                         {"params", nlohmann::json::array()},
                         {"fwd_flops", 2 * t * k * n},
                         {"bwd_flops", 4 * t * k * n},
                         {"fwd_bytes", 4 * t * (k + n)},
                         {"bwd_bytes", 8 * t * (k + n)}}}}};
  const auto p = plan_layer(model_from_json(j, "lm.json"), 0, PlanOptions{});
  ASSERT_EQ(p.fwd.size(), 1u);
  EXPECT_EQ(p.fwd[0].gemm.m, 50257);
  EXPECT_EQ(p.fwd[0].gemm.n, 2048);
  EXPECT_EQ(p.fwd[0].gemm.k, 768);
}

TEST(LayerPlan, ModelErrorsNameFileAndPath) {
  // Read by the simulator's parser (config::parse_model): every problem, with file and JSON path.
  nlohmann::json j = {
      {"format", "ddpsim-model/2"},
      {"name", "bad"},
      {"batch_size", 0},
      {"params", kFrozenParam},
      {"grad_ready_order", nlohmann::json::array()},
      {"layers", {{{"name", "x"}, {"type", "linear"}, {"params", {3}}, {"fwd_flops", -1}, {"bwd_flops", 0}}}}};
  try {
    (void)model_from_json(j, "bad.json");
    FAIL();
  } catch (const ModelError& e) {
    const std::string s = e.what();
    EXPECT_NE(s.find("bad.json: /format: \"ddpsim-model/2\" is not allowed; expected one of \"ddpsim-model/1\""),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("bad.json: /batch_size: 0 is not allowed; expected an integer in [1, "), std::string::npos) << s;
    EXPECT_NE(s.find("bad.json: /layers/0/params/0: 3 is not allowed; expected a parameter index in [0, 1)"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("bad.json: /layers/0/fwd_flops: -1 is not allowed; expected a number >= 0"), std::string::npos)
        << s;
  }
}

TEST(LayerPlan, ModelFileErrorsNameTheFile) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string missing = (dir / "ddpbench_no_such_model.json").string();
  try {
    (void)load_model(missing);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot open file (it does not exist)");
  }
  const std::string broken = (dir / "ddpbench_broken_model.json").string();
  std::ofstream(broken) << "{\"format\": \"ddpsim-model/1\",\n  \"name\": }\n";
  try {
    (void)load_model(broken);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find(broken + ":2:"), std::string::npos) << e.what();
  }
  std::filesystem::remove(broken);
  // A key the format does not have (a misspelt field) is refused, not ignored.
  nlohmann::json j = synthetic_model("mlp:1:8", 4);
  j["batchsize"] = 4;
  try {
    (void)model_from_json(j, "typo.json");
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("typo.json: /batchsize: unknown key"), std::string::npos) << e.what();
  }
}

TEST(LayerPlan, MeasuredProfileReadsBackWithTheSimulatorsParser) {
  const Model m = model_from_json(synthetic_model("mlp:2:16", 8), "synthetic");
  const size_t n = m.spec.layers.size();
  std::vector<double> fwd(n), bwd(n);
  for (size_t i = 0; i < n; ++i) {
    fwd[i] = 1e-6 * static_cast<double>(i + 1);
    bwd[i] = 2e-6 * static_cast<double>(i + 1);
  }
  const auto profile = measured_profile(m, fwd, bwd, "NVIDIA H100", 16, "bfloat16");
  const Model back = model_from_json(profile, "profile.json");
  // Counts (and kernel records) stay at the file's batch 8; the times are at the measured 16.
  EXPECT_EQ(back.spec.batch_size, 8);
  EXPECT_DOUBLE_EQ(back.spec.layers[0].fwd_flops, m.spec.layers[0].fwd_flops);
  EXPECT_EQ(back.spec.measured_on, "NVIDIA H100");
  EXPECT_EQ(back.spec.measured_batch_size, 16);
  EXPECT_EQ(back.spec.measured_dtype, "bfloat16");
  ASSERT_TRUE(back.spec.layers[1].fwd_time.has_value());
  EXPECT_DOUBLE_EQ(*back.spec.layers[1].fwd_time, 2e-6);
  EXPECT_DOUBLE_EQ(*back.spec.layers[1].bwd_time, 4e-6);
}

TEST(LayerPlan, SyntheticSpecErrorsNameTheFlag) {
  EXPECT_THROW((void)synthetic_model("mlp:0:8", 4), ArgError);
  try {
    (void)synthetic_model("cnn:1", 4);
  } catch (const ArgError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--synthetic: 'cnn:1' is not mlp:LAYERS:HIDDEN with LAYERS >= 1 and HIDDEN >= 1, e.g. mlp:8:4096");
  }
}

TEST(LayerPlan, RepositoryModelsPlanWithoutSurprises) {
  for (const char* path : {"models/resnet50.json", "models/bert-base.json", "models/gpt2.json"}) {
    if (!std::filesystem::exists(path)) continue;
    const Model m = load_model(path);
    const auto plans = plan_model(m, PlanOptions{});
    ASSERT_EQ(plans.size(), m.spec.layers.size());
    for (const auto& p : plans) {
      for (const auto* ops : {&p.fwd, &p.bwd})
        for (const auto& op : *ops) {
          EXPECT_GE(op.a_bytes(4) + op.c_bytes(4), 0u);
          if (op.kind == OpKind::GEMM) {
            EXPECT_GE(op.gemm.m, 1) << path << " " << p.name;
            EXPECT_GE(op.gemm.n, 1) << path << " " << p.name;
            EXPECT_GE(op.gemm.k, 1) << path << " " << p.name;
          }
          if (op.kind == OpKind::CONV_FWD) {
            EXPECT_GE(op.conv.out_h(), 1) << path << " " << p.name;
          }
        }
      // The GEMM/conv FLOPs of a layer stay within 10 % of its recorded FLOPs.
      double f = 0;
      for (const auto& op : p.fwd) f += op.flops();
      if ((p.type == "linear" || p.type == "conv2d") && p.fwd_flops > 1e6) {
        EXPECT_NEAR(f / p.fwd_flops, 1.0, 0.1) << path << " " << p.name << ": " << p.note;
      }
    }
  }
}
