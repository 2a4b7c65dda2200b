// Memory per GPU (sim/memory/memory_model.*): every expected value is worked out by hand from the
// inputs in the test (parameter counts from the model files' shapes, docs/facts.md §7's terms).
#include <gtest/gtest.h>

#include <cmath>

#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "config/specs.hpp"
#include "memory/memory_model.hpp"
#include "support/builders.hpp"

namespace ddpsim {
namespace {

using config::DType;
using config::LayerSpec;
using config::Scenario;
using memory::estimate_memory;
using memory::kCudaContextBytes;
using memory::kNcclCommunicatorBytes;
using test_support::Json;
using test_support::param;

// Model (export batch 2): w float32 x1000 (4000 B) and b float32 x250 (1000 B) in layer 0,
// frozen float16 x500 (1000 B) in layer 1; a float32 buffer of 100 (400 B). No kernel records:
// activations are half the forward traffic, 1e6 B and 4e5 B at batch 2. Training batch 8 (x4),
// float32, 2 GPUs, Adam foreach.
Scenario small() {
  Scenario s;
  s.model.name = "small";
  s.model.batch_size = 2;
  s.model.params = {param("w", 1000, DType::FLOAT32), param("b", 250, DType::FLOAT32),
                    param("frozen", 500, DType::FLOAT16, false)};
  config::BufferSpec buf;
  buf.name = "running";
  buf.numel = 100;
  s.model.buffers = {buf};
  LayerSpec l0;
  l0.name = "fc";
  l0.params = {0, 1};
  l0.fwd_bytes = 1e6;
  LayerSpec l1;
  l1.name = "frozen";
  l1.params = {2};
  l1.fwd_bytes = 4e5;
  s.model.layers = {l0, l1};
  s.model.grad_ready_order = {1, 0};
  s.cluster.gpu.name = "testgpu";
  s.cluster.gpu.memory_bytes = 80e9;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 2;
  s.training.batch_size = 8;
  s.training.optimizer = "adam";
  return s;
}

TEST(MemoryModel, EveryTermOfASmallModelByHand) {
  const auto e = estimate_memory(small());
  EXPECT_DOUBLE_EQ(e.parameters, 6000);  // 4000 + 1000 + 1000 (frozen parameters take memory too)
  EXPECT_DOUBLE_EQ(e.buffers, 400);
  EXPECT_DOUBLE_EQ(e.buckets, 5000);           // trainable gradients only
  EXPECT_DOUBLE_EQ(e.optimizer_state, 10000);  // exp_avg + exp_avg_sq: 2 x 4 B x 1250
  // Activations x4: 2e6 (layer 0) + 8e5 (layer 1). Backward peak before layer 1's backward: all of
  // them and no gradient yet (zero_grad set them to None; the frozen layer produces none).
  EXPECT_EQ(e.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(e.activations, 2.8e6);
  EXPECT_DOUBLE_EQ(e.gradients, 0);
  EXPECT_DOUBLE_EQ(e.optimizer_temporaries, 0);  // the step (5000 + 5000 B) is not the peak
  EXPECT_DOUBLE_EQ(e.cuda_context, kCudaContextBytes);
  EXPECT_DOUBLE_EQ(e.nccl_buffers, kNcclCommunicatorBytes);
  EXPECT_DOUBLE_EQ(e.total(), 6000 + 400 + 5000 + 10000 + 2.8e6 + kCudaContextBytes + kNcclCommunicatorBytes);
  EXPECT_TRUE(e.fits());
  EXPECT_EQ(e.largest_term().first, "allowance");
}

TEST(MemoryModel, GradientsKeptByZeroGradOrViewsOfTheBuckets) {
  auto s = small();
  s.training.zero_grad_set_to_none = false;  // every gradient stays allocated through the backward
  auto e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.gradients, 5000);
  EXPECT_DOUBLE_EQ(e.activations, 2.8e6);
  s.ddp.gradient_as_bucket_view = true;  // gradients are views of the buckets: no storage of their own
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.gradients, 0);
  EXPECT_DOUBLE_EQ(e.buckets, 5000);
  // One GPU under DDP: the Reducer still allocates its buckets and the all-reduces still create a
  // communicator (reducer.cpp initialize_buckets does not look at the world size).
  s = small();
  s.cluster.gpus_per_node = 1;
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.buckets, 5000);
  EXPECT_DOUBLE_EQ(e.nccl_buffers, kNcclCommunicatorBytes);
  // torch.nn.DataParallel: no Reducer, no buckets; its NCCL communicator only with several GPUs.
  s.training.wrapper = config::Wrapper::DATA_PARALLEL;
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.buckets, 0);
  EXPECT_DOUBLE_EQ(e.nccl_buffers, 0);
  s.cluster.gpus_per_node = 2;
  s.training.data_parallel.output_bytes_per_sample = 100;  // no kernel records: the Gather's bytes given
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.buckets, 0);
  EXPECT_DOUBLE_EQ(e.nccl_buffers, kNcclCommunicatorBytes);
  // One communicator per process group.
  s = small();
  s.streams.comm_streams = 3;
  EXPECT_DOUBLE_EQ(estimate_memory(s).nccl_buffers, 3 * kNcclCommunicatorBytes);
}

TEST(MemoryModel, OptimizerStateByOptimizer) {
  EXPECT_DOUBLE_EQ(memory::optimizer_state_bytes_per_element("sgd", true, 4), 4);
  EXPECT_DOUBLE_EQ(memory::optimizer_state_bytes_per_element("sgd", false, 4), 0);
  EXPECT_DOUBLE_EQ(memory::optimizer_state_bytes_per_element("adam", true, 4), 8);
  EXPECT_DOUBLE_EQ(memory::optimizer_state_bytes_per_element("adamw", true, 2), 4);
  auto s = small();
  s.training.optimizer = "sgd";
  EXPECT_DOUBLE_EQ(estimate_memory(s).optimizer_state, 5000);  // one momentum buffer per trainable element
  s.training.sgd_momentum = false;
  EXPECT_DOUBLE_EQ(estimate_memory(s).optimizer_state, 0);
}

TEST(MemoryModel, AdamForeachTemporariesSetTheStepPeak) {
  // Without activations the optimizer step is the peak: every gradient (5000) and foreach Adam's
  // sqrt(exp_avg_sq) list (5000); for_loop holds one tensor's (4000) at a time; fused none.
  auto s = small();
  s.model.layers[0].fwd_bytes = 0;
  s.model.layers[1].fwd_bytes = 0;
  auto e = estimate_memory(s);
  EXPECT_EQ(e.peak_phase, "optimizer step");
  EXPECT_DOUBLE_EQ(e.gradients, 5000);
  EXPECT_DOUBLE_EQ(e.optimizer_temporaries, 5000);
  EXPECT_DOUBLE_EQ(e.activations, 0);
  s.training.optimizer_impl = "for_loop";
  EXPECT_DOUBLE_EQ(estimate_memory(s).optimizer_temporaries, 4000);
  s.training.optimizer_impl = "fused";
  EXPECT_DOUBLE_EQ(estimate_memory(s).optimizer_temporaries, 0);
}

// A linear layer's GEMM record C[m, n] = A[m, k] W[k, n], both operands' gradients taken.
config::KernelRecord linear_record(double m, double n, double k) {
  config::KernelRecord g;
  g.op = config::KernelRecord::Op::GEMM;
  g.m = m;
  g.n = n;
  g.k = k;
  g.grad_a = g.grad_b = true;
  return g;
}

TEST(MemoryModel, ActivationsFromKernelRecordsScaleWithBatchAndDtype) {
  // Export batch 1. Layer 0: a linear C[16, 32] = A[16, 8] W[8, 32] (the batch rides on m) keeps
  // A for the weight gradient; a mul reading 1000 B keeps its inputs. Layer 1: a softmax writing
  // 600 B keeps its result; an add keeps nothing; an op without backward keeps nothing.
  auto s = small();
  s.model.batch_size = 1;
  const config::KernelRecord g = linear_record(16, 32, 8);
  auto mem = [](const char* name, double in, double out, bool bwd) {
    config::KernelRecord r;
    r.op = config::KernelRecord::Op::MEM;
    r.name = name;
    r.in[0] = in;
    r.out[0] = out;
    r.backward = bwd;
    return r;
  };
  s.model.layers[0].kernels = {g, mem("mul", 1000, 500, true)};
  s.model.layers[1].kernels = {mem("_softmax", 600, 600, true), mem("add", 800, 400, true),
                               mem("pow", 700, 700, false)};
  s.cluster.gpu.peak_flops = {{"float32", 1e12}, {"bfloat16", 1e13}};
  s.training.batch_size = 2;
  auto act = memory::activation_bytes_per_layer(s);
  ASSERT_EQ(act.size(), 2u);
  EXPECT_DOUBLE_EQ(act[0], 32 * 8 * 4 + 2 * 1000);  // m doubles with the batch; float32 operands
  EXPECT_DOUBLE_EQ(act[1], 2 * 600);
  s.training.compute_dtype = config::ComputeDtype::BFLOAT16;  // autocast: half-precision activations
  act = memory::activation_bytes_per_layer(s);
  EXPECT_DOUBLE_EQ(act[0], 32 * 8 * 2 + 1000);
  EXPECT_DOUBLE_EQ(act[1], 600);
}

// torch.nn.DataParallel: GPU 0 keeps the output gathered from every GPU and the loss over the
// whole batch. Without kernel records: 100 B per sample given, batch 8, 4 GPUs: 100 x 8 x 4 =
// 3,200 B more than DDP's per-GPU activations. With a linear last layer (export batch 1: C[4, 10]
// = A[4, 8] W[8, 10], 4 rows of 10 logits per sample), batch 2, cross-entropy: one sample's output
// is 4 x 10 x 4 B = 160 B, gathered 160 x 2 x 4 = 1,280 B; the loss keeps log_softmax's float32
// result, 8 rows x 10 x 4 B = 320 B per GPU's chunk, 3 more chunks on GPU 0: 960 B; 2,240 B in all.
TEST(MemoryModel, DataParallelGpu0HoldsTheGatheredOutputAndTheWholeBatchsLoss) {
  auto s = small();
  s.cluster.gpus_per_node = 4;
  const auto ddp = memory::activation_bytes_per_layer(s);
  s.training.wrapper = config::Wrapper::DATA_PARALLEL;
  s.training.data_parallel.output_bytes_per_sample = 100;
  std::string rule;
  auto dp = memory::activation_bytes_per_layer(s, &rule);
  EXPECT_DOUBLE_EQ(dp.back() - ddp.back(), 3200);
  EXPECT_DOUBLE_EQ(dp.front(), ddp.front());
  EXPECT_NE(rule.find("GPU 0 (the peak) also holds the output gathered from the 4 GPUs"), std::string::npos) << rule;
  EXPECT_DOUBLE_EQ(
      estimate_memory(s).activations -
          [&] {
            auto d = s;
            d.training.wrapper = config::Wrapper::DDP;
            return estimate_memory(d).activations;
          }(),
      3200);
  // One GPU: nothing is gathered.
  s.cluster.gpus_per_node = 1;
  EXPECT_DOUBLE_EQ(memory::activation_bytes_per_layer(s).back(), ddp.back());

  s = small();
  s.cluster.gpus_per_node = 4;
  s.model.batch_size = 1;
  s.training.batch_size = 2;
  s.training.loss = "cross_entropy";
  s.cluster.gpu.peak_flops = {{"float32", 1e12}};
  const config::KernelRecord g = linear_record(4, 10, 8);
  s.model.layers[1].type = config::LayerType::LINEAR;
  s.model.layers[1].kernels = {g};
  s.model.layers[0].kernels = {g};
  const auto ddp_k = memory::activation_bytes_per_layer(s);
  s.training.wrapper = config::Wrapper::DATA_PARALLEL;
  rule.clear();
  const auto dp_k = memory::activation_bytes_per_layer(s, &rule);
  EXPECT_DOUBLE_EQ(dp_k.back() - ddp_k.back(), 1280 + 960);
  EXPECT_NE(rule.find("and the loss's saves over the whole batch"), std::string::npos) << rule;
}

// What would make it fit (memory::fit_options). small() at batch b: activations 3.5e5 b B (half of
// the layers' forward traffic, 1.4e6 B at the export batch of 2), at the backward peak; the rest
// 21,400 B of tensors + the context + one communicator.
TEST(MemoryModel, FitOptionsFindTheLargestBatchThatFits) {
  auto s = small();
  const double rest = 6000 + 400 + 5000 + 10000 + kCudaContextBytes + kNcclCommunicatorBytes;
  const double per_sample = (1e6 + 4e5) / 2 / 2;
  EXPECT_DOUBLE_EQ(estimate_memory(s).total(), rest + 8 * per_sample);
  EXPECT_FALSE(memory::fit_options(s, estimate_memory(s)));  // it fits: nothing to propose
  // Room for five samples and a byte: batch 5 fits, 6 does not.
  s.cluster.gpu.memory_bytes = rest + 5 * per_sample + 1;
  auto f = memory::fit_options(s, estimate_memory(s));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->largest_batch, 5);
  EXPECT_DOUBLE_EQ(f->largest_batch_bytes, rest + 5 * per_sample);
  // No blocks: full checkpointing keeps what it kept, so it is not proposed.
  EXPECT_FALSE(f->checkpointed_bytes);
  // DDP on two GPUs: FSDP's peak is offered, as estimate_memory gives it under FSDP's defaults.
  ASSERT_TRUE(f->fsdp_bytes);
  auto fs = s;
  fs.training.wrapper = config::Wrapper::FSDP;
  EXPECT_DOUBLE_EQ(*f->fsdp_bytes, estimate_memory(fs).total());
  // Exactly batch 1's peak: batch 1 is the largest.
  s.cluster.gpu.memory_bytes = rest + per_sample;
  f = memory::fit_options(s, estimate_memory(s));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->largest_batch, 1);
  // Less than batch 1 needs: none fits, and batch 1's peak is given.
  s.cluster.gpu.memory_bytes = rest + per_sample - 1;
  f = memory::fit_options(s, estimate_memory(s));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->largest_batch, 0);
  EXPECT_DOUBLE_EQ(f->largest_batch_bytes, rest + per_sample);
  // One GPU: FSDP is not offered.
  s.cluster.gpus_per_node = 1;
  f = memory::fit_options(s, estimate_memory(s));
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->fsdp_bytes);
}

TEST(MemoryModel, ZeroPartitionIsPyTorchsSortedGreedy) {
  // Sizes 5, 3, 3, 2 over 2 ranks: 5 -> r0 (5, 0); 3 -> r1 (5, 3); 3 -> r1 (5, 6); 2 -> r0 (7, 6).
  config::ModelSpec m;
  m.params = {param("a", 5), param("b", 3), param("c", 3), param("d", 2)};
  auto parts = memory::zero_partition(m, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], (std::vector<int>{0, 3}));
  EXPECT_EQ(parts[1], (std::vector<int>{1, 2}));
  // Ties go to the lowest rank; more ranks than parameters: one each, the rest get none.
  m.params = {param("a", 4), param("b", 4)};
  parts = memory::zero_partition(m, 8);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0], (std::vector<int>{0}));
  EXPECT_EQ(parts[1], (std::vector<int>{1}));
}

TEST(MemoryModel, ZeroShardsTheOptimizerStateAsOneOverWorld) {
  // 8 equal float32 tensors of 1024: Adam state 8 x 1024 x 8 B = 65536 B, 65536 / W per rank.
  Scenario s = small();
  s.model = test_support::synthetic_model({param("p0", 1024), param("p1", 1024), param("p2", 1024), param("p3", 1024),
                                           param("p4", 1024), param("p5", 1024), param("p6", 1024), param("p7", 1024)});
  s.training.zero_redundancy_optimizer.enabled = true;
  for (int w : {2, 4, 8}) {
    s.cluster.gpus_per_node = w;
    const auto e = estimate_memory(s);
    EXPECT_DOUBLE_EQ(e.optimizer_state, 65536.0 / w) << w << " GPUs";
    EXPECT_DOUBLE_EQ(e.optimizer_state_unsharded, 65536.0);
    EXPECT_EQ(e.zero_shards, w);
  }
  s.training.zero_redundancy_optimizer.enabled = false;
  EXPECT_DOUBLE_EQ(estimate_memory(s).optimizer_state, 65536.0);
}

// LLaMA-7B (models/llama-7b.json): 6,738,415,616 float32 parameters, P = 4 B each, no buffers.
constexpr double kLlamaParams = 6738415616.0;

Scenario llama(const std::vector<std::string>& overrides) {
  Json doc = Json::parse(R"({"model": "llama-7b", "cluster": "dgx-h100",
      "training": {"batch_size": 1, "compute_dtype": "bfloat16", "optimizer": "adamw"}})");
  config::apply_overrides(doc, overrides);
  return test_support::source_catalog().scenario_from_json(doc, "llama.json", DDPSIM_SOURCE_DIR);
}

TEST(MemoryModel, Llama7bAdamWUnderPlainDdpDoesNotFitIn80GB) {
  const auto e = estimate_memory(llama({}));  // one DGX H100: 8 GPUs of 80 GiB
  const double p = 4 * kLlamaParams;
  EXPECT_DOUBLE_EQ(e.parameters, p);
  EXPECT_DOUBLE_EQ(e.buffers, 0);
  EXPECT_DOUBLE_EQ(e.buckets, p);
  EXPECT_DOUBLE_EQ(e.optimizer_state, 2 * p);
  // The "~108 GB" of a 6.74 B model under DDP with Adam: parameters + gradients + Adam's two states = 16 B x 6.74e9.
  EXPECT_NEAR(4 * p / 1e9, 107.8, 0.05);
  // Ours adds DDP's buckets (4 B) and the larger of the backward peak and the step (every gradient
  // 4 B + foreach's temporaries 4 B): at least 24 B per parameter, 161.7 GB, plus the allowance.
  EXPECT_GE(e.total(), 6 * p + kCudaContextBytes + kNcclCommunicatorBytes);
  EXPECT_DOUBLE_EQ(e.gpu_memory, 80.0 * 1024 * 1024 * 1024);
  EXPECT_FALSE(e.fits());
  EXPECT_EQ(e.largest_term().first, "optimizer_state");
}

TEST(MemoryModel, Llama7bAdamWFitsWithZeroOn64Gpus) {
  // 8 DGX H100 nodes, gradients as bucket views, flash attention: the state of the rank holding
  // the largest tensor (tok_embeddings or output, 32000 x 4096, larger than 6.74e9 / 64) is 8 B x
  // 131,072,000; the rest is parameters + buckets (4 B each) + activations + allowance.
  const std::vector<std::string> common = {"nodes=8", "ddp.gradient_as_bucket_view=true",
                                           "training.attention=\"sdpa_flash\""};
  auto with = common;
  with.push_back("training.zero_redundancy_optimizer=true");
  const auto z = estimate_memory(llama(with));
  EXPECT_EQ(z.zero_shards, 64);
  EXPECT_DOUBLE_EQ(z.optimizer_state, 8.0 * 32000 * 4096);
  EXPECT_DOUBLE_EQ(z.optimizer_state_unsharded, 8 * kLlamaParams);
  EXPECT_DOUBLE_EQ(z.gradients, 0);
  EXPECT_TRUE(z.fits()) << z.total() / 1e9 << " GB";
  const auto plain = estimate_memory(llama(common));
  EXPECT_FALSE(plain.fits()) << plain.total() / 1e9 << " GB";
  EXPECT_NEAR(plain.total() - z.total(),
              8 * kLlamaParams - 8.0 * 32000 * 4096 - z.optimizer_temporaries + plain.optimizer_temporaries +
                  plain.activations - z.activations,
              1.0);
}

TEST(MemoryModel, ScenarioKeysAreValidated) {
  auto err = test_support::expect_config_error([] { llama({"training.zero_redundancy_optimizer=3"}); });
  EXPECT_TRUE(test_support::contains_all(
      err.what(), {"llama.json", "/training/zero_redundancy_optimizer", "3", "true, false or an object"}));
  err = test_support::expect_config_error(
      [] { llama({"training.zero_redundancy_optimizer={\"enabled\":true,\"overlap\":1}"}); });
  EXPECT_TRUE(test_support::contains_all(err.what(), {"/training/zero_redundancy_optimizer", "overlap"}));
  err = test_support::expect_config_error([] { llama({"training.sgd_momentum=\"yes\""}); });
  EXPECT_TRUE(test_support::contains_all(err.what(), {"/training/sgd_momentum", "yes"}));
  err = test_support::expect_config_error([] {
    llama({"training.zero_redundancy_optimizer={\"overlap_with_ddp\":true}", "training.clip_grad_norm=true"});
  });
  EXPECT_TRUE(test_support::contains_all(err.what(),
                                         {"/training/zero_redundancy_optimizer/overlap_with_ddp", "clip_grad_norm"}));
  err = test_support::expect_config_error([] {
    llama({"model=\"mixed-gpt\"", "training.zero_redundancy_optimizer=true"});
  });
  EXPECT_TRUE(test_support::contains_all(
      err.what(), {"/training/zero_redundancy_optimizer", "mixes parameter dtypes", "bfloat16"}));
  const auto s =
      llama({"training.zero_redundancy_optimizer={\"overlap_with_ddp\":true,\"parameters_as_bucket_view\":true}"});
  EXPECT_TRUE(s.training.zero_redundancy_optimizer.enabled);
  EXPECT_TRUE(s.training.zero_redundancy_optimizer.overlap_with_ddp);
  EXPECT_TRUE(s.training.zero_redundancy_optimizer.parameters_as_bucket_view);
}

}  // namespace
}  // namespace ddpsim
