// Memory per GPU under FSDP and with activation checkpointing (sim/memory/memory_model.*): every
// expected value worked out by hand from the inputs below.
#include <gtest/gtest.h>

#include <string>

#include "config/specs.hpp"
#include "memory/memory_model.hpp"

namespace ddpsim {
namespace {

using config::DType;
using config::Scenario;
using memory::estimate_memory;
using memory::kCudaContextBytes;
using memory::kNcclCommunicatorBytes;

config::ParamSpec p2(const std::string& name, int64_t rows, int64_t cols) {
  config::ParamSpec p;
  p.name = name;
  p.shape = {rows, cols};
  p.numel = rows * cols;
  p.dtype = DType::FLOAT32;
  return p;
}

// Layers (export batch 2 = training batch, float32, no kernel records: activations are half the
// forward traffic): emb (e [100,10]) 5e5 B, blocks.0.fc (w0 [40,10]) 1e6, blocks.0.act 2e6,
// blocks.1.fc (w1 [40,10]) 1e6, blocks.1.act 2e6, head (h [10,10]) 2e5. 1 node x 4 GPUs, Adam
// foreach. FSDP units: root {e, h} (1100 elements), blocks.0 {w0} (400), blocks.1 {w1} (400).
Scenario model(config::Wrapper w, int version = 2) {
  Scenario s;
  s.model.name = "tiny";
  s.model.batch_size = 2;
  s.model.params = {p2("e", 100, 10), p2("w0", 40, 10), p2("w1", 40, 10), p2("h", 10, 10)};
  const char* names[6] = {"emb", "blocks.0.fc", "blocks.0.act", "blocks.1.fc", "blocks.1.act", "head"};
  const double fwd[6] = {1e6, 2e6, 4e6, 2e6, 4e6, 4e5};
  const std::vector<std::vector<int>> params = {{0}, {1}, {}, {2}, {}, {3}};
  for (size_t l = 0; l < 6; ++l) {
    config::LayerSpec L;
    L.name = names[l];
    L.fwd_bytes = fwd[l];
    L.params = params[l];
    s.model.layers.push_back(L);
  }
  s.model.grad_ready_order = {3, 2, 1, 0};
  s.cluster.gpu.memory_bytes = 80e9;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 4;
  s.training.batch_size = 2;
  s.training.optimizer = "adam";
  s.training.wrapper = w;
  s.training.fsdp.version = version;
  return s;
}

TEST(FsdpMemory, Fsdp2FullShardByHand) {
  const auto e = estimate_memory(model(config::Wrapper::FSDP));
  // Shards over 4 (dim 0 padded): e 25 rows x 10, h 3 x 10 -> root 280; blocks 10 x 10 = 100 each.
  EXPECT_EQ(e.fsdp_shards, 4);
  EXPECT_DOUBLE_EQ(e.parameters, 480 * 4);
  EXPECT_DOUBLE_EQ(e.optimizer_state, 2 * 4 * 480);
  // Unsharded at once: the root (280 x 4 ranks x 4 B) and two blocks (100 x 4 x 4 each).
  EXPECT_DOUBLE_EQ(e.unsharded_params, 4480 + 2 * 1600);
  EXPECT_EQ(e.unsharded_units, 3);
  // The largest unit's unsharded gradient (fp32) plus FSDP2's reduce-scatter input: 1120 x (4 + 4).
  EXPECT_DOUBLE_EQ(e.unsharded_grads, 8960);
  // Peak before head's backward: every activation, no sharded gradient yet.
  EXPECT_EQ(e.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(e.activations, 6.7e6);
  EXPECT_DOUBLE_EQ(e.gradients, 0);
  EXPECT_DOUBLE_EQ(e.nccl_buffers, kNcclCommunicatorBytes);
  EXPECT_DOUBLE_EQ(e.total(), 1920 + 3840 + 6.7e6 + 7680 + 8960 + kCudaContextBytes + kNcclCommunicatorBytes);
}

// FSDP2 explicit prefetching, on five blocks (three more [40,10] blocks before the head): the
// caching allocator holds, besides the root, two units with the implicit prefetch (the current one
// and the next all-gather's output); with num_to_forward_prefetch N, N + 2 in the forward (the
// current unit, its all-gather output kept until the next copy-out, N prefetched outputs); with
// num_to_backward_prefetch N, N + 1 (the backward's copy-out frees the output at once); at most
// the five blocks. Each block unsharded: 100 x 4 ranks x 4 B = 1600 B; the root 4480 B.
TEST(FsdpMemory, Fsdp2ExplicitPrefetchHoldsMoreUnitsUnsharded) {
  struct Case {
    int fwd, bwd, units;
  };
  for (const Case& c :
       {Case{0, 0, 2}, Case{1, 0, 3}, Case{2, 0, 4}, Case{0, 1, 2}, Case{0, 3, 4}, Case{2, 2, 4}, Case{4, 0, 5}}) {
    Scenario s = model(config::Wrapper::FSDP);
    for (int b = 2; b < 5; ++b) {
      const std::string n = std::to_string(b);
      s.model.params.insert(s.model.params.end() - 1, p2("w" + n, 40, 10));
      config::LayerSpec fc, act;
      fc.name = "blocks." + n + ".fc";
      fc.fwd_bytes = 2e6;
      fc.params = {b + 1};
      act.name = "blocks." + n + ".act";
      act.fwd_bytes = 4e6;
      s.model.layers.insert(s.model.layers.end() - 1, fc);
      s.model.layers.insert(s.model.layers.end() - 1, act);
    }
    s.model.layers.back().params = {5};  // the head's h, now the sixth parameter
    s.model.grad_ready_order = {5, 4, 3, 2, 1, 0};
    s.training.fsdp.num_to_forward_prefetch = c.fwd;
    s.training.fsdp.num_to_backward_prefetch = c.bwd;
    const auto e = estimate_memory(s);
    EXPECT_DOUBLE_EQ(e.unsharded_params, 4480 + c.units * 1600.0) << c.fwd << " " << c.bwd;
    EXPECT_EQ(e.unsharded_units, c.units + 1) << c.fwd << " " << c.bwd;
  }
}

// FSDP2 reshard_after_forward 2 on 1 node x 4 GPUs: each block, resharded after its forward,
// keeps half of its unsharded 400 elements (fp32: 800 B) until its backward all-gathers them over
// its pair of GPUs. At the peak before head's backward both blocks hold theirs: 1600 B more than
// Fsdp2FullShardByHand's, and one more NCCL communicator (the post-forward group's).
TEST(FsdpMemory, ReshardAfterForwardToASmallerGroupKeepsPostForwardShards) {
  auto s = model(config::Wrapper::FSDP);
  const auto base = estimate_memory(s);
  s.training.fsdp.reshard_after_forward = true;
  s.training.fsdp.reshard_after_forward_to = 2;
  const auto e = estimate_memory(s);
  EXPECT_EQ(e.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(e.unsharded_params, 4480 + 2 * 1600 + 2 * 800);
  EXPECT_DOUBLE_EQ(e.nccl_buffers, 2 * kNcclCommunicatorBytes);
  EXPECT_DOUBLE_EQ(e.total(), base.total() + 1600 + kNcclCommunicatorBytes);
  // 4 is the shard group itself: as true.
  s.training.fsdp.reshard_after_forward_to = 4;
  EXPECT_DOUBLE_EQ(estimate_memory(s).total(), base.total());
}

// Two micro-steps per optimizer step. With no_sync (the default) the first keeps every unit's
// unsharded gradient, and at the last's start all of them are there: root 1120 x 4 B + two blocks
// 400 x 4 B = 7680 B of gradients at the peak before head's backward (FSDP2 keeps them in
// reduce_dtype: fp32 here); the unit in its backward adds only FSDP2's reduce-scatter input, the
// root's 1120 x 4 = 4480 B. Without no_sync every micro-step reduce-scatters, so from the second
// on every sharded gradient (480 x 4 = 1920 B) exists from the backward's start, and the unit adds
// its unsharded gradient and the reduce-scatter input (8960 B, as without accumulation).
TEST(FsdpMemory, GradientAccumulationKeepsUnshardedGradientsUnderNoSync) {
  auto s = model(config::Wrapper::FSDP);
  s.training.gradient_accumulation_steps = 2;
  auto e = estimate_memory(s);
  EXPECT_EQ(e.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(e.activations, 6.7e6);
  EXPECT_DOUBLE_EQ(e.gradients, 7680);
  EXPECT_DOUBLE_EQ(e.unsharded_params, 7680);
  EXPECT_DOUBLE_EQ(e.unsharded_grads, 4480);
  EXPECT_DOUBLE_EQ(e.total(), 1920 + 3840 + 6.7e6 + 7680 + 7680 + 4480 + kCudaContextBytes + kNcclCommunicatorBytes);
  // Four micro-steps: the middle ones hold every unit's gradient all along; here the same peak.
  s.training.gradient_accumulation_steps = 4;
  EXPECT_DOUBLE_EQ(estimate_memory(s).total(), e.total());
  // bfloat16 parameters with no reduce_dtype: the gradients are bfloat16 (2 B): 1920 x 2 = 3840,
  // the units in flight 1920 x 2 = 3840, the root's reduce-scatter input 1120 x 2 = 2240.
  s.training.gradient_accumulation_steps = 2;
  s.training.fsdp.param_dtype = DType::BFLOAT16;
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.gradients, 3840);
  EXPECT_DOUBLE_EQ(e.unsharded_params, 3840);
  EXPECT_DOUBLE_EQ(e.unsharded_grads, 2240);
  // ... and with reduce_dtype float32, FSDP2 upcasts what it accumulates: 7680 again, and the
  // reduce-scatter input is fp32 (4480).
  s.training.fsdp.reduce_dtype = DType::FLOAT32;
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.gradients, 7680);
  EXPECT_DOUBLE_EQ(e.unsharded_grads, 4480);
  // Without no_sync.
  s = model(config::Wrapper::FSDP);
  s.training.gradient_accumulation_steps = 2;
  s.training.fsdp.no_sync = false;
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.gradients, 1920);
  EXPECT_DOUBLE_EQ(e.unsharded_grads, 8960);
  EXPECT_DOUBLE_EQ(e.total(), 1920 + 3840 + 6.7e6 + 1920 + 7680 + 8960 + kCudaContextBytes + kNcclCommunicatorBytes);
}

// Eight blocks (w0..w7 [40,10]) between e [100,10] and h [10,10], no activations (fwd_bytes 0),
// 1 node x 4 GPUs, FSDP2 FULL_SHARD, fp32, Adam foreach, two micro-steps under no_sync. Shards:
// root 25 x 10 + 3 x 10 = 280 elements (4480 B unsharded), each block 10 x 10 = 100 (1600 B
// unsharded); parameters (280 + 800) x 4 = 4320 B, Adam state 8640 B. Accumulated unsharded
// gradients: 4480 + 8 x 1600 = 17280 B; the root's reduce-scatter input 280 x 4 x 4 = 4480 B.
// Resharding after the backward (the default): the peak is the last micro-step's backward start,
// every accumulated gradient (17280) + the root and two blocks in flight (7680) + 4480 = 29440 B.
// reshard_after_backward false: at the end of the first micro-step's backward every unit is
// unsharded (17280 B) beside the blocks' accumulated gradients (12800) and the root's being
// made (4480) = 34560 B, as at the second micro-step's forward start (17280 + 17280). Three
// micro-steps: the middle one holds every unit's accumulated gradient all along: 17280 + 17280 +
// 4480 = 39040 B.
TEST(FsdpMemory, ReshardAfterBackwardFalseKeepsEveryUnitBetweenMicroSteps) {
  Scenario s;
  s.model.name = "blocks";
  s.model.batch_size = 2;
  s.model.params.push_back(p2("e", 100, 10));
  config::LayerSpec emb;
  emb.name = "emb";
  emb.params = {0};
  s.model.layers.push_back(emb);
  for (int b = 0; b < 8; ++b) {
    s.model.params.push_back(p2("w" + std::to_string(b), 40, 10));
    config::LayerSpec L;
    L.name = "blocks." + std::to_string(b) + ".fc";
    L.params = {b + 1};
    s.model.layers.push_back(L);
  }
  s.model.params.push_back(p2("h", 10, 10));
  config::LayerSpec head;
  head.name = "head";
  head.params = {9};
  s.model.layers.push_back(head);
  s.cluster.gpu.memory_bytes = 80e9;
  s.cluster.nodes = 1;
  s.cluster.gpus_per_node = 4;
  s.training.batch_size = 2;
  s.training.optimizer = "adam";
  s.training.wrapper = config::Wrapper::FSDP;
  s.training.gradient_accumulation_steps = 2;
  const double fixed = 4320 + 8640 + kCudaContextBytes + kNcclCommunicatorBytes;
  auto e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.total(), fixed + 29440);
  EXPECT_DOUBLE_EQ(e.unsharded_params, 7680);
  EXPECT_EQ(e.unsharded_units, 3);
  s.training.fsdp.reshard_after_backward = false;
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.total(), fixed + 34560);
  EXPECT_DOUBLE_EQ(e.unsharded_params, 17280);
  EXPECT_EQ(e.unsharded_units, 9);
  s.training.gradient_accumulation_steps = 3;
  EXPECT_DOUBLE_EQ(estimate_memory(s).total(), fixed + 39040);
  // One micro-step: the last reshards, so nothing is kept.
  s.training.gradient_accumulation_steps = 1;
  auto one = s;
  one.training.fsdp.reshard_after_backward = true;
  EXPECT_DOUBLE_EQ(estimate_memory(s).total(), estimate_memory(one).total());
}

TEST(FsdpMemory, Fsdp1PadsTheFlatParameterNoShardKeepsEverything) {
  auto s = model(config::Wrapper::FSDP, 1);
  auto e = estimate_memory(s);
  // ceil(1100 / 4) = 275 + 100 + 100 elements.
  EXPECT_DOUBLE_EQ(e.parameters, 475 * 4);
  EXPECT_DOUBLE_EQ(e.unsharded_grads, 275 * 4 * 4);  // the flat gradient, reduce-scattered in place
  s.training.fsdp.sharding_strategy = config::ShardingStrategy::NO_SHARD;
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.parameters, 1900 * 4);  // 1000 + 400 + 400 + 100, unsharded
  EXPECT_DOUBLE_EQ(e.optimizer_state, 2 * 1900 * 4);
  EXPECT_DOUBLE_EQ(e.unsharded_params, 0);
  EXPECT_DOUBLE_EQ(e.unsharded_grads, 0);
}

// CPU offload (training.fsdp.cpu_offload): the shards, their gradients and Adam's state live in host
// memory (480 elements x (4 + 4 + 8) B on the rank); the GPU keeps the units in flight, the unit's
// unsharded gradient and the activations: Fsdp2FullShardByHand's peak less its 1920 B of
// parameters and 3840 B of optimizer state. FSDP1: flat shards of 275 + 100 + 100 elements.
TEST(FsdpMemory, CpuOffloadKeepsShardsAndOptimizerStateOnTheHost) {
  auto s = model(config::Wrapper::FSDP);
  s.training.fsdp.cpu_offload = true;
  auto e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.parameters, 0);
  EXPECT_DOUBLE_EQ(e.optimizer_state, 0);
  EXPECT_DOUBLE_EQ(e.optimizer_temporaries, 0);
  EXPECT_DOUBLE_EQ(e.gradients, 0);
  EXPECT_DOUBLE_EQ(e.host_offload, 480 * 16);
  EXPECT_EQ(e.peak_phase, "backward");
  EXPECT_DOUBLE_EQ(e.total(), 6.7e6 + 7680 + 8960 + kCudaContextBytes + kNcclCommunicatorBytes);
  s = model(config::Wrapper::FSDP, 1);
  s.training.fsdp.cpu_offload = true;
  e = estimate_memory(s);
  EXPECT_DOUBLE_EQ(e.parameters, 0);
  EXPECT_DOUBLE_EQ(e.optimizer_state, 0);
  EXPECT_DOUBLE_EQ(e.host_offload, 475 * 16);
  // One GPU shards nothing: no offload (the scenario check refuses it).
  s.cluster.gpus_per_node = 1;
  EXPECT_DOUBLE_EQ(estimate_memory(s).host_offload, 0);
}

// Full checkpointing keeps each block's first layer's saves (1e6 each): before blocks.1.act's
// backward, emb 5e5 + blocks.0.fc 1e6 + blocks.1.fc 1e6 kept plus blocks.1.act recomputed 2e6.
TEST(FsdpMemory, FullCheckpointingKeepsBlockInputsPlusOneRecomputedBlock) {
  auto s = model(config::Wrapper::FSDP);
  s.training.activation_checkpointing = config::ActivationCheckpointing::FULL;
  EXPECT_DOUBLE_EQ(estimate_memory(s).activations, 4.5e6);
  // The same for DDP, where h's gradient (400 B) exists by then.
  auto d = model(config::Wrapper::DDP);
  d.training.activation_checkpointing = config::ActivationCheckpointing::FULL;
  const auto e = estimate_memory(d);
  EXPECT_DOUBLE_EQ(e.activations, 4.5e6);
  EXPECT_DOUBLE_EQ(e.gradients, 400);
  // selective_block every 2nd: only blocks.1 is checkpointed: 5e5 + 1e6 + 2e6 + 1e6 + 2e6 (recomputed).
  s.training.activation_checkpointing = config::ActivationCheckpointing::SELECTIVE_BLOCK;
  EXPECT_DOUBLE_EQ(estimate_memory(s).activations, 6.5e6);
}

config::KernelRecord saves(const char* name, double in, double sv) {
  config::KernelRecord r;
  r.name = name;
  r.in[0] = in;
  r.out[0] = in;
  r.backward = true;
  r.has_saved = true;
  r.saved[0] = sv;
  return r;
}

// With the export's records, a checkpointed block keeps its input (what its first op reads), not
// its first layer's saves. Each block's first layer is an RMSNorm-like norm reading x (1e6 B) whose
// ops save x, x^2 and the normalized output (pow, mean, mul: 3e6), then an activation saving 2e6;
// emb saves 5e5, head 2e5 (export batch = training batch, float32, no loss).
TEST(FsdpMemory, FullCheckpointingKeepsTheBlockInputTheFirstOpReads) {
  auto s = model(config::Wrapper::DDP);
  s.training.loss = "none";
  const std::vector<std::vector<config::KernelRecord>> k = {
      {saves("embedding", 1e5, 5e5)}, {saves("pow", 1e6, 1e6), saves("mean", 1e6, 1e6), saves("mul", 2e6, 1e6)},
      {saves("gelu", 1e6, 2e6)},      {saves("pow", 1e6, 1e6), saves("mean", 1e6, 1e6), saves("mul", 2e6, 1e6)},
      {saves("gelu", 1e6, 2e6)},      {saves("linear", 1e6, 2e5)}};
  for (size_t l = 0; l < k.size(); ++l) s.model.layers[l].kernels = k[l];
  // Without checkpointing every save: 5e5 + 2 x (3e6 + 2e6) + 2e5.
  EXPECT_DOUBLE_EQ(estimate_memory(s).activations_saved, 10.7e6);
  s.training.activation_checkpointing = config::ActivationCheckpointing::FULL;
  const auto e = estimate_memory(s);
  // Kept: emb 5e5 + the two block inputs 1e6 each + head 2e5 (the first layer's saves would be 3e6).
  EXPECT_DOUBLE_EQ(e.activations_saved, 2.7e6);
  // Peak before blocks.1.act's backward: kept through it (2.5e6) plus blocks.1 recomputed beyond
  // what it keeps (3e6 - 1e6 + 2e6).
  EXPECT_DOUBLE_EQ(e.activations, 6.5e6);
}

}  // namespace
}  // namespace ddpsim
