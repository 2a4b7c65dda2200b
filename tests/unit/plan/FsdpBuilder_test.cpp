// plan::build_fsdp and its pieces against plans written out by hand from PyTorch's FSDP1
// (torch/distributed/fsdp/_runtime_utils.py, _limits.py, flat_param.py) and FSDP2
// (torch/distributed/_composable/fsdp/_fsdp_param_group.py, _fsdp_collectives.py): unit and
// shard sizes, the compute stream's program, the jobs on the NCCL streams, their order and
// dependencies (no SimGrid).
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <sstream>

#include "gpu/optimizer_model.hpp"
#include "plan/fsdp_builder.hpp"

namespace ddpsim::plan {
namespace {

gpu::Kernel k(double s) {
  gpu::Kernel x;
  x.seconds = s;
  x.shape.memory_s = s;
  return x;
}

// Layers: emb (e [10,10]), layers.0.a (a0 [6,10]), layers.1.a (a1 [6,10]), norm (n [10]), fp32.
// Units: root {e, n} (110 elements), layers.0 {a0} (60), layers.1 {a1} (60).
// Copies: HBM 1000 B/s, efficiency 1, no kernel overhead: a copy of B bytes takes B/1000 s.
struct Fixture {
  config::Scenario sc;
  gpu::ComputeProfile prof;
  ddp::StepPlan steps;
  Fixture(int nodes, int gpus, int version, config::ShardingStrategy strategy) {
    const std::vector<std::vector<int64_t>> shapes = {{10, 10}, {6, 10}, {6, 10}, {10}};
    const int64_t numel[4] = {100, 60, 60, 10};
    const char* names[4] = {"e", "a0", "a1", "n"};
    sc.model.params.resize(4);
    for (size_t i = 0; i < 4; ++i) {
      sc.model.params[i].name = names[i];
      sc.model.params[i].shape = shapes[i];
      sc.model.params[i].numel = numel[i];
    }
    const char* layers[4] = {"emb", "layers.0.a", "layers.1.a", "norm"};
    sc.model.layers.resize(4);
    for (size_t l = 0; l < 4; ++l) {
      sc.model.layers[l].name = layers[l];
      sc.model.layers[l].params = {static_cast<int>(l)};
    }
    sc.cluster.nodes = nodes;
    sc.cluster.gpus_per_node = gpus;
    sc.cluster.gpu.hbm_bandwidth = 1000;
    sc.compute.memory_efficiency = 1.0;
    sc.compute.kernel_overhead = 0;
    sc.training.optimizer = "sgd";
    sc.training.wrapper = config::Wrapper::FSDP;
    sc.training.fsdp.version = version;
    sc.training.fsdp.sharding_strategy = strategy;
    prof.forward = {k(1), k(2), k(3), k(4)};
    prof.backward = {k(10), k(20), k(30), k(40)};
    prof.h2d = k(0.5);
    prof.optimizer = k(6);
    prof.peak_flops = 1e12;
    steps.steps.push_back({2, 0, true, true, nullptr, nullptr, false});
    steps.report_iteration = {2};
    steps.has_iteration1 = false;
    steps.factor.assign(1, std::vector<double>(1, 1.0));
  }
};

std::string chain_text(const Task& t) {
  std::ostringstream s;
  for (const auto& o : t.chain) {
    if (o.kind == OpKind::KERNEL)
      s << " [" << o.name << " " << o.kernel.seconds << "]";
    else
      s << " " << o.name << "=" << o.bytes;
  }
  return s.str();
}

// The compute stream's program: kernels with their times, waits by the names of their jobs,
// jobs with their stream and chain, marks.
std::vector<std::string> program(const Plan& p) {
  std::vector<std::string> out;
  for (const Task& t : p.tasks) {
    std::ostringstream s;
    switch (t.kind) {
      case TaskKind::MARK:
        if (t.mark == Mark::FORWARD_BEGIN) s << "FORWARD";
        if (t.mark == Mark::BACKWARD_BEGIN) s << "BACKWARD";
        if (t.mark == Mark::OPTIMIZER_BEGIN) s << "OPTIMIZER";
        break;
      case TaskKind::KERNEL: s << t.name << " " << t.kernel.seconds; break;
      case TaskKind::COLLECTIVE:
        s << "JOB " << t.name << " on " << t.stream << ":" << chain_text(t);
        for (int a : t.after) s << " after " << p.tasks[static_cast<size_t>(a)].name;
        break;
      case TaskKind::WAIT:
        s << "WAIT";
        for (int a : t.after) s << " " << p.tasks[static_cast<size_t>(a)].name;
        break;
      case TaskKind::HOST: s << "HOST"; break;
    }
    if (!s.str().empty()) out.push_back(s.str());
  }
  return out;
}

std::vector<std::string> jobs_on(const Plan& p, int stream) {
  std::vector<std::string> out;
  for (const Task& t : p.tasks)
    if (t.kind == TaskKind::COLLECTIVE && t.stream == stream) out.push_back(t.name);
  return out;
}

TEST(FsdpBuilder, BlocksAreLayersSharingTheirFirstNumberedNameComponent) {
  config::ModelSpec m;
  for (const char* n : {"tok", "h.0.attn", "h.0.mlp", "h.1.attn", "encoder.layer.3.x", "ln_f"}) {
    config::LayerSpec l;
    l.name = n;
    m.layers.push_back(l);
  }
  const auto b = model_blocks(m);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].name, "h.0");
  EXPECT_EQ(b[0].layers, (std::vector<int>{1, 2}));
  EXPECT_EQ(b[1].name, "h.1");
  EXPECT_EQ(b[2].name, "encoder.layer.3");
}

TEST(FsdpBuilder, SelectiveBlockCheckpointsEveryKthBlockCountingFromOne) {
  config::TrainingSettings tr;
  tr.activation_checkpointing = config::ActivationCheckpointing::SELECTIVE_BLOCK;
  tr.activation_checkpointing_every = 3;
  EXPECT_EQ(checkpointed_blocks(tr, 7), (std::vector<bool>{false, false, true, false, false, true, false}));
  tr.activation_checkpointing = config::ActivationCheckpointing::FULL;
  EXPECT_EQ(checkpointed_blocks(tr, 2), (std::vector<bool>{true, true}));
  tr.activation_checkpointing = config::ActivationCheckpointing::NONE;
  EXPECT_EQ(checkpointed_blocks(tr, 2), (std::vector<bool>{false, false}));
}

TEST(FsdpBuilder, UnitsAndShardSizesFsdp2PadDim0Fsdp1PadTheFlatParameter) {
  Fixture f2(2, 2, 2, config::ShardingStrategy::FULL_SHARD);  // shard over 4
  auto u = fsdp_units(f2.sc);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].name, "root");
  EXPECT_TRUE(u[0].root && u[0].kept);
  EXPECT_EQ(u[0].params, (std::vector<int>{0, 3}));
  EXPECT_EQ(u[0].numel, 110);
  // e: ceil(10/4) = 3 rows of 10; n: ceil(10/4) = 3 rows of 1.
  EXPECT_EQ(u[0].shard_numel, 33);
  EXPECT_EQ(u[1].name, "layers.0");
  EXPECT_EQ(u[1].shard_numel, 20);  // ceil(6/4) = 2 rows of 10
  EXPECT_FALSE(u[1].kept);
  EXPECT_EQ(u[1].allgather_bytes(), 80);
  EXPECT_EQ(u[1].reduce_scatter_bytes(4), 320);
  Fixture f1(2, 2, 1, config::ShardingStrategy::FULL_SHARD);
  u = fsdp_units(f1.sc);
  EXPECT_EQ(u[0].shard_numel, 28);  // ceil(110/4)
  EXPECT_EQ(u[1].shard_numel, 15);  // 60/4
  // every_k_blocks with k 2: one unit of both blocks.
  f1.sc.training.fsdp.wrap = config::FsdpWrap::EVERY_K_BLOCKS;
  f1.sc.training.fsdp.wrap_every = 2;
  u = fsdp_units(f1.sc);
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[1].name, "layers.0..layers.1");
  EXPECT_EQ(u[1].numel, 120);
  f1.sc.training.fsdp.wrap = config::FsdpWrap::ROOT;
  u = fsdp_units(f1.sc);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].numel, 230);
  // Mixed precision: all-gathers in param_dtype, reductions in reduce_dtype (default: param_dtype).
  f2.sc.training.fsdp.param_dtype = config::DType::BFLOAT16;
  u = fsdp_units(f2.sc);
  EXPECT_EQ(u[1].allgather_bytes(), 40);
  EXPECT_EQ(u[1].reduce_scatter_bytes(4), 160);
  f2.sc.training.fsdp.reduce_dtype = config::DType::FLOAT32;
  EXPECT_EQ(fsdp_units(f2.sc)[1].reduce_scatter_bytes(4), 320);
}

TEST(FsdpBuilder, GroupsPerStrategy) {
  Fixture f(4, 8, 2, config::ShardingStrategy::FULL_SHARD);
  EXPECT_EQ(fsdp_groups(f.sc).shard, 32);
  EXPECT_EQ(fsdp_groups(f.sc).replica, 1);
  f.sc.training.fsdp.sharding_strategy = config::ShardingStrategy::HYBRID_SHARD;
  EXPECT_EQ(fsdp_groups(f.sc).shard, 8);
  EXPECT_EQ(fsdp_groups(f.sc).replica, 4);
  f.sc.training.fsdp.sharding_strategy = config::ShardingStrategy::NO_SHARD;
  EXPECT_EQ(fsdp_groups(f.sc).shard, 1);
}

// FSDP2 FULL_SHARD over 4 GPUs, worked out by hand: the root all-gathered first and kept; each
// block's all-gather prefetched once the previous one is copied out; in the backward the next
// block prefetched in the pre-backward hook, each block's reduce-scatter after its backward, the
// root's last; the optimizer on 73 of 230 elements.
TEST(FsdpBuilder, Fsdp2FullShardProgram) {
  Fixture f(2, 2, 2, config::ShardingStrategy::FULL_SHARD);
  const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].size, 4);
  ASSERT_EQ(p.streams.size(), 2u);
  const std::vector<std::string> want = {
      "input to GPU 0.5", "FORWARD",
      // copy-in: 33 x (4 + 4) B; copy-out: 2 x 33 x 4 ranks x 4 B. layers.0's all-gather is issued at its
      // pre-forward with no all_gather_state saved yet: it waits for nothing; layers.1's waits for the
      // root's copy-out (the state wait_for_unshard(layers.0) found).
      "JOB all-gather root on 1: [all-gather copy-in 0.264] all-gather=132",
      "JOB all-gather layers.0 on 1: [all-gather copy-in 0.16] all-gather=80", "WAIT all-gather root",
      "all-gather copy-out root 1.056", "JOB all-gather layers.1 on 1: [all-gather copy-in 0.16] all-gather=80",
      "emb 1", "WAIT all-gather layers.0", "all-gather copy-out layers.0 0.64", "layers.0.a 2",
      "WAIT all-gather layers.1", "all-gather copy-out layers.1 0.64", "layers.1.a 3", "norm 4", "BACKWARD",
      "JOB all-gather layers.1 on 1: [all-gather copy-in 0.16] all-gather=80", "norm 40", "WAIT all-gather layers.1",
      "all-gather copy-out layers.1 0.64", "JOB all-gather layers.0 on 1: [all-gather copy-in 0.16] all-gather=80",
      "layers.1.a 30",
      // post_backward: the copy-in (80 padded elements x (4 + 4) B) on the compute stream, after the
      // previous unit's reduce-scatter; reduce-scatter 80 x 4 B in; divide: 2 x 20 x 4 B
      "reduce-scatter copy-in layers.1 0.64",
      "JOB reduce-scatter layers.1 on 1: reduce-scatter=320 [post-divide, copy-out 0.16]", "WAIT all-gather layers.0",
      "all-gather copy-out layers.0 0.64", "layers.0.a 20", "WAIT reduce-scatter layers.1",
      "reduce-scatter copy-in layers.0 0.64",
      "JOB reduce-scatter layers.0 on 1: reduce-scatter=320 [post-divide, copy-out 0.16]", "emb 10",
      "WAIT reduce-scatter layers.0", "reduce-scatter copy-in root 1.056",
      "JOB reduce-scatter root on 1: reduce-scatter=528 [post-divide, copy-out 0.264]",
      "WAIT reduce-scatter layers.1 reduce-scatter layers.0 reduce-scatter root", "OPTIMIZER",
      "optimizer step on the local shard (sgd) 1.90435",  // 6 x 73 / 230
  };
  EXPECT_EQ(program(p), want);
  EXPECT_EQ(p.steps[0].records, 8);
}

// Four blocks (layers.0..3, each a [6, 10] weight) between the root's emb and norm, forward 1 s a
// layer, backward 10 s: enough units for explicit prefetching to differ from the implicit one.
void four_blocks(Fixture& f) {
  auto& m = f.sc.model;
  m.params.resize(6);
  m.layers.resize(6);
  const char* names[6] = {"e", "a0", "a1", "a2", "a3", "n"};
  const char* layers[6] = {"emb", "layers.0.a", "layers.1.a", "layers.2.a", "layers.3.a", "norm"};
  for (size_t i = 0; i < 6; ++i) {
    m.params[i].name = names[i];
    m.params[i].shape = i == 0   ? std::vector<int64_t>{10, 10}
                        : i == 5 ? std::vector<int64_t>{10}
                                 : std::vector<int64_t>{6, 10};
    m.params[i].numel = i == 0 ? 100 : i == 5 ? 10 : 60;
    m.layers[i].name = layers[i];
    m.layers[i].params = {static_cast<int>(i)};
  }
  f.prof.forward.assign(6, k(1));
  f.prof.backward.assign(6, k(10));
}

// The forward's all-gathers as the CPU issues them (it runs ahead of the GPU): where each job enters
// the compute stream's program (after which copy-out) decides what it waits for. Implicit (FSDP2
// wait_for_unshard / all_gather_state): layers.0's all-gather waits for nothing, layers.k's for the
// copy-out of the unit two before it. With num_to_forward_prefetch 2 (the FSDP2 example's
// set_modules_to_forward_prefetch; the root prefetches nothing): layers.0's pre-forward prefetches
// layers.1 and layers.2 after the root's copy-out, layers.1's prefetches layers.3 after layers.0's.
TEST(FsdpBuilder, Fsdp2ForwardAllGathersWaitForTheCopyOutTwoUnitsBack) {
  for (int n : {0, 2}) {
    Fixture f(2, 2, 2, config::ShardingStrategy::FULL_SHARD);
    four_blocks(f);
    f.sc.training.fsdp.num_to_forward_prefetch = n;
    const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
    std::vector<std::string> fwd;
    for (const auto& line : program(p)) {
      if (line == "BACKWARD") break;
      if (line.rfind("JOB", 0) == 0)
        fwd.push_back(line.substr(0, line.find(" on ")));
      else if (line.rfind("all-gather copy-out", 0) == 0)
        fwd.push_back(line.substr(0, line.rfind(' ')));
    }
    const std::vector<std::string> implicit = {"JOB all-gather root",          "JOB all-gather layers.0",
                                               "all-gather copy-out root",     "JOB all-gather layers.1",
                                               "all-gather copy-out layers.0", "JOB all-gather layers.2",
                                               "all-gather copy-out layers.1", "JOB all-gather layers.3",
                                               "all-gather copy-out layers.2", "all-gather copy-out layers.3"};
    const std::vector<std::string> two = {"JOB all-gather root",          "JOB all-gather layers.0",
                                          "all-gather copy-out root",     "JOB all-gather layers.1",
                                          "JOB all-gather layers.2",      "all-gather copy-out layers.0",
                                          "JOB all-gather layers.3",      "all-gather copy-out layers.1",
                                          "all-gather copy-out layers.2", "all-gather copy-out layers.3"};
    EXPECT_EQ(fwd, n == 0 ? implicit : two) << n;
  }
}

// The backward's jobs on the one NCCL stream, in issue order. Implicit: each unit's pre-backward
// prefetches the next unit, so every all-gather queues behind the previous unit's reduce-scatter.
// num_to_backward_prefetch 2: layers.3 prefetches layers.2 and layers.1, layers.2 prefetches
// layers.0 (the root keeps its implicit prefetch of layers.3): the all-gathers run a unit further
// ahead of the reductions.
TEST(FsdpBuilder, Fsdp2ExplicitBackwardPrefetchIssuesAllGathersAheadOfReductions) {
  for (int n : {0, 2}) {
    Fixture f(2, 2, 2, config::ShardingStrategy::FULL_SHARD);
    four_blocks(f);
    f.sc.training.fsdp.num_to_backward_prefetch = n;
    const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
    std::vector<std::string> bwd;
    bool in = false;
    for (const auto& line : program(p)) {
      in = in || line == "BACKWARD";
      if (in && line.rfind("JOB", 0) == 0) bwd.push_back(line.substr(4, line.find(" on ") - 4));
    }
    const std::vector<std::string> implicit = {
        "all-gather layers.3",     "all-gather layers.2",     "reduce-scatter layers.3",
        "all-gather layers.1",     "reduce-scatter layers.2", "all-gather layers.0",
        "reduce-scatter layers.1", "reduce-scatter layers.0", "reduce-scatter root"};
    const std::vector<std::string> two = {
        "all-gather layers.3",     "all-gather layers.2",     "all-gather layers.1",
        "reduce-scatter layers.3", "all-gather layers.0",     "reduce-scatter layers.2",
        "reduce-scatter layers.1", "reduce-scatter layers.0", "reduce-scatter root"};
    EXPECT_EQ(bwd, n == 0 ? implicit : two) << n;
  }
}

// CPU offload over two micro-steps under no_sync: the plan's "shard to GPU" copies are those
// fsdp_offload counts (the root once a micro-step, each block twice: 10; with FSDP2
// reshard_after_backward false the second forward gathers nothing: 7), and only the last
// micro-step copies gradient shards out (3 units).
TEST(FsdpBuilder, CpuOffloadWithGradientAccumulationCopiesEveryMicroStep) {
  for (bool rab : {true, false}) {
    Fixture f(2, 2, 2, config::ShardingStrategy::FULL_SHARD);
    f.sc.training.fsdp.cpu_offload = true;
    f.sc.training.fsdp.reshard_after_backward = rab;
    f.sc.training.gradient_accumulation_steps = 2;
    f.sc.cluster.gpu.host_bandwidth = 100;
    f.steps.steps = {{2, 0, false, false, nullptr, nullptr, false}, {2, 0, true, true, nullptr, nullptr, false}};
    const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
    int h2d = 0;
    std::vector<int> d2h(2, 0);
    for (const Task& t : p.tasks)
      for (const auto& o : t.chain) {
        h2d += o.name == "shard to GPU";
        if (o.name == "gradient to host") ++d2h[static_cast<size_t>(t.micro_step)];
      }
    EXPECT_EQ(h2d, rab ? 10 : 7);
    EXPECT_EQ(h2d, fsdp_offload(f.sc).h2d_copies);
    EXPECT_EQ(d2h, (std::vector<int>{0, 3}));
  }
}

// Gradient accumulation over two micro-steps (training.gradient_accumulation_steps 2: the first
// not synced, the second synced and last). Every micro-step all-gathers its units (FULL_SHARD
// reshards after the backward: FSDP1 _should_free_in_backward, FSDP2 reshard_after_backward); with
// no_sync only the last reduce-scatters (FSDP1 no_sync(), FSDP2 set_requires_gradient_sync(False)),
// without it both do; the optimizer runs once, after the last.
TEST(FsdpBuilder, GradientAccumulationReducesOnceUnderNoSync) {
  for (int version : {1, 2})
    for (bool no_sync : {true, false}) {
      Fixture f(2, 2, version, config::ShardingStrategy::FULL_SHARD);
      f.sc.training.fsdp.no_sync = no_sync;
      f.steps.steps = {{2, 0, false, false, nullptr, nullptr, false}, {2, 0, true, true, nullptr, nullptr, false}};
      const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
      ASSERT_EQ(p.steps.size(), 2u);
      int gathers[2] = {0, 0}, reduces[2] = {0, 0}, optimizers[2] = {0, 0};
      for (const auto& t : p.tasks) {
        const size_t m = static_cast<size_t>(t.micro_step);
        if (t.kind == TaskKind::COLLECTIVE && t.role == JobRole::UNIT_ALLGATHER) ++gathers[m];
        if (t.kind == TaskKind::COLLECTIVE && t.role == JobRole::UNIT_REDUCE) ++reduces[m];
        if (t.kind == TaskKind::KERNEL && t.category == "optimizer" && t.kernel.seconds > 0) ++optimizers[m];
      }
      // Forward: root, layers.0, layers.1; backward: layers.1, layers.0 again (the root is kept).
      for (int m = 0; m < 2; ++m) EXPECT_EQ(gathers[m], 5) << version << no_sync << m;
      EXPECT_EQ(reduces[0], no_sync ? 0 : 3) << version;
      EXPECT_EQ(reduces[1], 3) << version;
      EXPECT_EQ(optimizers[0], 0);
      EXPECT_EQ(optimizers[1], 1);
      EXPECT_EQ(p.steps[0].sync, !no_sync);
      EXPECT_TRUE(p.steps[1].sync);
    }
}

// Parameters kept unsharded between the micro-steps of one optimizer step: FSDP2
// set_reshard_after_backward(is_last) (training.fsdp.reshard_after_backward false) and FSDP1
// SHARD_GRAD_OP under no_sync() (_should_free_unsharded_flat_param). Two optimizer steps of two
// micro-steps each. FSDP2 FULL_SHARD: the second micro-step's forward gathers nothing (no
// all-gather, no copy-out), its backward gathers layers.1 and layers.0 again (resharded after the
// forward): 5, 2, 5, 2. With reshard_after_forward false nothing is gathered after the first
// forward: 3, 0, 3, 0, as FSDP1 SHARD_GRAD_OP under no_sync; reducing every micro-step frees them.
TEST(FsdpBuilder, ParametersKeptBetweenMicroSteps) {
  struct Case {
    int version;
    config::ShardingStrategy strategy;
    bool reshard_after_backward, no_sync;
    std::optional<bool> reshard_after_forward;
    std::vector<int> gathers, copy_outs;
  };
  const auto FS = config::ShardingStrategy::FULL_SHARD, SGO = config::ShardingStrategy::SHARD_GRAD_OP;
  const std::vector<Case> cases = {
      {2, FS, true, true, std::nullopt, {5, 5, 5, 5}, {5, 5, 5, 5}},
      {2, FS, false, true, std::nullopt, {5, 2, 5, 2}, {5, 2, 5, 2}},
      {2, FS, false, false, std::nullopt, {5, 2, 5, 2}, {5, 2, 5, 2}},  // independent of no_sync
      {2, FS, false, true, false, {3, 0, 3, 0}, {3, 0, 3, 0}},
      {1, SGO, true, true, std::nullopt, {3, 0, 3, 0}, {0, 0, 0, 0}},
      {1, SGO, true, false, std::nullopt, {3, 3, 3, 3}, {0, 0, 0, 0}},
      {1, FS, true, true, std::nullopt, {5, 5, 5, 5}, {0, 0, 0, 0}},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& k = cases[c];
    Fixture f(2, 2, k.version, k.strategy);
    f.sc.training.fsdp.reshard_after_backward = k.reshard_after_backward;
    f.sc.training.fsdp.reshard_after_forward = k.reshard_after_forward;
    f.sc.training.fsdp.no_sync = k.no_sync;
    f.steps.steps = {{1, 0, false, false, nullptr, nullptr, false},
                     {1, 0, true, true, nullptr, nullptr, false},
                     {2, 1, false, false, nullptr, nullptr, false},
                     {2, 1, true, true, nullptr, nullptr, false}};
    const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
    ASSERT_EQ(p.steps.size(), 4u);
    std::vector<int> gathers(4, 0), copy_outs(4, 0), reduces(4, 0);
    for (const auto& t : p.tasks) {
      const size_t m = static_cast<size_t>(t.micro_step);
      if (t.kind == TaskKind::COLLECTIVE && t.role == JobRole::UNIT_ALLGATHER) ++gathers[m];
      if (t.kind == TaskKind::COLLECTIVE && t.role == JobRole::UNIT_REDUCE) ++reduces[m];
      if (t.kind == TaskKind::KERNEL && t.name.rfind("all-gather copy-out", 0) == 0) ++copy_outs[m];
    }
    EXPECT_EQ(gathers, k.gathers) << c;
    EXPECT_EQ(copy_outs, k.copy_outs) << c;
    EXPECT_EQ(reduces, (std::vector<int>{k.no_sync ? 0 : 3, 3, k.no_sync ? 0 : 3, 3})) << c;
  }
}

// FSDP2 reshard_after_forward 2 over 2 nodes x 2 GPUs (_get_post_forward_mesh_info: the shard mesh
// viewed as (-1, 2), two consecutive ranks: one node's GPUs). A block (a0 [6,10], fp32) shards to
// ceil(6 / 4) = 2 rows x 10 = 20 elements (80 B all-gathered per rank in the forward); after its
// forward each rank keeps half of the 80 unsharded elements (to_sharded_post_forward clones 40 x
// 4 = 160 B: a copy of 320 B read + written, 0.32 s at 1000 B/s), and the backward all-gathers
// 160 B per rank over the 2-GPU post-forward group after copying them in (0.32 s). The root stays
// unsharded (its own reshard_after_forward is false) and is gathered once, over all 4.
TEST(FsdpBuilder, ReshardAfterForwardToASmallerGroup) {
  Fixture f(2, 2, 2, config::ShardingStrategy::FULL_SHARD);
  f.sc.training.fsdp.reshard_after_forward = true;
  f.sc.training.fsdp.reshard_after_forward_to = 2;
  const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[1].name, "fsdp post-forward group");
  EXPECT_EQ(p.groups[1].size, 2);
  EXPECT_EQ(p.groups[1].nodes, 1);
  EXPECT_EQ(p.groups[1].per_node, 2);
  std::vector<std::string> gathers;
  int clones = 0;
  for (const auto& t : p.tasks) {
    if (t.kind == TaskKind::KERNEL && t.name.rfind("post-forward reshard", 0) == 0) {
      ++clones;
      EXPECT_DOUBLE_EQ(t.kernel.seconds, 0.32) << t.name;
    }
    if (t.kind != TaskKind::COLLECTIVE || t.role != JobRole::UNIT_ALLGATHER) continue;
    for (const auto& op : t.chain) {
      std::ostringstream o;
      if (op.kind == OpKind::KERNEL)
        o << t.name << ": " << op.name << " " << op.kernel.seconds;
      else
        o << t.name << ": " << op.name << " " << op.bytes << " B, group " << op.group;
      gathers.push_back(o.str());
    }
  }
  EXPECT_EQ(clones, 2);
  const std::vector<std::string> want = {
      // root: e [10,10] -> 3 rows x 10, n [10] -> 3: 33 elements, 132 B; copy-in 33 x (4 + 4) B.
      "all-gather root: all-gather copy-in 0.264",
      "all-gather root: all-gather 132 B, group -1",
      "all-gather layers.0: all-gather copy-in 0.16",
      "all-gather layers.0: all-gather 80 B, group -1",
      "all-gather layers.1: all-gather copy-in 0.16",
      "all-gather layers.1: all-gather 80 B, group -1",
      "all-gather layers.1: all-gather copy-in 0.32",
      "all-gather layers.1: all-gather (post-forward group) 160 B, group 1",
      "all-gather layers.0: all-gather copy-in 0.32",
      "all-gather layers.0: all-gather (post-forward group) 160 B, group 1",
  };
  EXPECT_EQ(gathers, want);
}

// FSDP1 FULL_SHARD (limit_all_gathers, BACKWARD_PRE) over 4 GPUs: with two blocks the rate limiter
// never binds, so every forward all-gather is issued at once; in the backward the pre-backward
// hooks issue layers.1's and (prefetch) layers.0's before any reduce-scatter. No copy-in/out
// kernels (flat parameters), a pre- and post-divide around each reduce-scatter.
TEST(FsdpBuilder, Fsdp1FullShardStreamOrder) {
  Fixture f(2, 2, 1, config::ShardingStrategy::FULL_SHARD);
  const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
  EXPECT_EQ(jobs_on(p, 1),
            (std::vector<std::string>{"all-gather root", "all-gather layers.0", "all-gather layers.1",
                                      "all-gather layers.1", "all-gather layers.0", "reduce-scatter layers.1",
                                      "reduce-scatter layers.0", "reduce-scatter root"}));
  const auto prog = program(p);
  EXPECT_EQ(prog[2], "JOB all-gather root on 1: all-gather=112");  // ceil(110/4) x 4 B
  // pre-divide 2 x 60 x 4 B, reduce-scatter 60 x 4 B in, post-divide 2 x 15 x 4 B
  EXPECT_NE(std::find(prog.begin(), prog.end(),
                      "JOB reduce-scatter layers.0 on 1: [pre-divide 0.48] reduce-scatter=240 [post-divide, copy-out "
                      "0.12]"),
            prog.end());
}

// Five blocks, FSDP1 with limit_all_gathers: AG(k) waits for the free of the unit two frees back
// (_FreeEventQueue of 2): b0, b1 at the start, b2 after b0's forward, b3 after b1's, b4 after b2's.
// With forward_prefetch one more is ahead: b0..b2 at the start, b3 after b0, b4 after b1.
TEST(FsdpBuilder, Fsdp1RateLimiterInTheForward) {
  for (bool prefetch : {false, true}) {
    Fixture f(1, 4, 1, config::ShardingStrategy::FULL_SHARD);
    f.sc.model.params.resize(5);
    f.sc.model.layers.resize(5);
    f.prof.forward.clear();
    f.prof.backward.clear();
    for (size_t b = 0; b < 5; ++b) {
      // append, not operator+: g++ 12 -O3 warns falsely (-Wrestrict) on "w" + std::string here.
      f.sc.model.params[b].name = std::string("w").append(std::to_string(b));
      f.sc.model.params[b].shape = {8};
      f.sc.model.params[b].numel = 8;
      f.sc.model.layers[b].name = std::string("b.").append(std::to_string(b));
      f.sc.model.layers[b].params = {static_cast<int>(b)};
      f.prof.forward.push_back(k(1));
      f.prof.backward.push_back(k(2));
    }
    f.sc.training.fsdp.forward_prefetch = prefetch;
    const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
    std::vector<std::string> fwd;
    for (const auto& line : program(p)) {
      if (line == "BACKWARD") break;
      if (line.rfind("JOB", 0) == 0 || line.rfind("b.", 0) == 0) fwd.push_back(line.substr(0, line.find(" on")));
    }
    const std::vector<std::string> want = prefetch ? std::vector<std::string>{"JOB all-gather b.0",
                                                                              "JOB all-gather b.1",
                                                                              "JOB all-gather b.2",
                                                                              "b.0 1",
                                                                              "JOB all-gather b.3",
                                                                              "b.1 1",
                                                                              "JOB all-gather b.4",
                                                                              "b.2 1",
                                                                              "b.3 1",
                                                                              "b.4 1"}
                                                   : std::vector<std::string>{"JOB all-gather b.0",
                                                                              "JOB all-gather b.1",
                                                                              "b.0 1",
                                                                              "JOB all-gather b.2",
                                                                              "b.1 1",
                                                                              "JOB all-gather b.3",
                                                                              "b.2 1",
                                                                              "JOB all-gather b.4",
                                                                              "b.3 1",
                                                                              "b.4 1"};
    EXPECT_EQ(fwd, want) << "forward_prefetch " << prefetch;
  }
}

// SHARD_GRAD_OP keeps the parameters from the forward to the backward: no backward all-gathers.
TEST(FsdpBuilder, ShardGradOpGathersOnlyInTheForward) {
  Fixture f(2, 2, 2, config::ShardingStrategy::SHARD_GRAD_OP);
  const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
  EXPECT_EQ(jobs_on(p, 1),
            (std::vector<std::string>{"all-gather root", "all-gather layers.0", "all-gather layers.1",
                                      "reduce-scatter layers.1", "reduce-scatter layers.0", "reduce-scatter root"}));
}

// NO_SHARD: one all-reduce of each unit's gradient over the world, no all-gather.
TEST(FsdpBuilder, NoShardAllReducesEachUnit) {
  Fixture f(2, 2, 1, config::ShardingStrategy::NO_SHARD);
  const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].size, 4);
  std::vector<std::string> jobs;
  for (const auto& line : program(p))
    if (line.rfind("JOB", 0) == 0) jobs.push_back(line);
  EXPECT_EQ(jobs, (std::vector<std::string>{"JOB all-reduce layers.1 on 1: all-reduce=240",
                                            "JOB all-reduce layers.0 on 1: all-reduce=240",
                                            "JOB all-reduce root on 1: all-reduce=440"}));
}

// HYBRID_SHARD on 2 nodes x 2 GPUs: shards over a node's 2 GPUs (e: 5 rows, n: 5, blocks 3 rows),
// each reduce-scatter followed by an all-reduce of the shard on the replica group's stream. FSDP2
// runs the all-reduces on their own CUDA stream (FSDPCommContext.all_reduce_stream), so the next
// reduce-scatter does not wait for the previous all-reduce (FSDP1's does: one post-backward stream;
// checked at the end).
TEST(FsdpBuilder, HybridShardAllReducesTheShardAcrossReplicas) {
  Fixture f(2, 2, 2, config::ShardingStrategy::HYBRID_SHARD);
  const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].size, 2);
  EXPECT_EQ(p.groups[1].size, 2);
  ASSERT_EQ(p.streams.size(), 3u);
  EXPECT_EQ(p.streams[2].group, 1);
  std::vector<std::string> red;
  for (const auto& line : program(p))
    if (line.rfind("JOB reduce", 0) == 0 || line.rfind("JOB all-reduce", 0) == 0) red.push_back(line);
  const std::vector<std::string> want = {
      // reduce-scatter 60 x 4 B in (its copy-in runs on the compute stream)
      "JOB reduce-scatter layers.1 on 1: reduce-scatter=240",
      // the 30-element shard, then the divide and copy-out 2 x 30 x 4 B
      "JOB all-reduce layers.1 on 2: all-reduce across replicas=120 [post-divide, copy-out 0.24] after reduce-scatter "
      "layers.1",
      "JOB reduce-scatter layers.0 on 1: reduce-scatter=240",
      "JOB all-reduce layers.0 on 2: all-reduce across replicas=120 [post-divide, copy-out 0.24] after reduce-scatter "
      "layers.0",
      // root: e 5 rows of 10 + n 5 = 55 per rank, 110 padded
      "JOB reduce-scatter root on 1: reduce-scatter=440",
      "JOB all-reduce root on 2: all-reduce across replicas=220 [post-divide, copy-out 0.44] after reduce-scatter root",
  };
  EXPECT_EQ(red, want);
  // The compute stream's copy-ins (60 x 8 B, the root's 110 x 8 B), each after a wait for the
  // previous unit's reduce-scatter (not its all-reduce: reduce_scatter_state's event is recorded
  // after the reduce-scatter).
  std::vector<std::string> copy_in;
  for (const auto& line : program(p))
    if (line.rfind("reduce-scatter copy-in", 0) == 0 ||
        (line.rfind("WAIT reduce", 0) == 0 && line.find("all-reduce") == std::string::npos))  // not the final wait
      copy_in.push_back(line);
  const std::vector<std::string> want_copy_in = {"reduce-scatter copy-in layers.1 0.48", "WAIT reduce-scatter layers.1",
                                                 "reduce-scatter copy-in layers.0 0.48", "WAIT reduce-scatter layers.0",
                                                 "reduce-scatter copy-in root 0.88"};
  EXPECT_EQ(copy_in, want_copy_in);
  Fixture f1(2, 2, 1, config::ShardingStrategy::HYBRID_SHARD);
  std::vector<std::string> rs1;
  for (const auto& line : program(build_fsdp(f1.sc, f1.prof, f1.steps, 1)))
    if (line.rfind("JOB reduce-scatter", 0) == 0 && line.find(" after") != std::string::npos)
      rs1.push_back(line.substr(line.rfind(" after") + 1));
  // layers.1's reduce-scatter first (nothing before it), then layers.0's and the root's.
  EXPECT_EQ(rs1, (std::vector<std::string>{"after all-reduce layers.1", "after all-reduce layers.0"}));
}

// Full checkpointing: each block reruns its forward (2 s, 3 s) before its backward; selective_op
// reruns only the non-matmul layers (here none of the linear layers).
TEST(FsdpBuilder, CheckpointedBlocksRecomputeTheirForward) {
  Fixture f(2, 2, 2, config::ShardingStrategy::FULL_SHARD);
  f.sc.training.activation_checkpointing = config::ActivationCheckpointing::FULL;
  auto r = recompute_kernels(f.sc, f.prof);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].seconds, 0);
  EXPECT_EQ(r[1].seconds, 2);
  EXPECT_EQ(r[2].seconds, 3);
  EXPECT_EQ(r[3].seconds, 0);
  const auto prog = program(build_fsdp(f.sc, f.prof, f.steps, 1));
  const auto at = std::find(prog.begin(), prog.end(), "recompute up to layers.1.a (checkpoint) 3");
  ASSERT_NE(at, prog.end());
  EXPECT_EQ(*(at + 1), "layers.1.a 30");
  f.sc.model.layers[1].type = config::LayerType::LINEAR;
  f.sc.training.activation_checkpointing = config::ActivationCheckpointing::SELECTIVE_OP;
  r = recompute_kernels(f.sc, f.prof);
  EXPECT_EQ(r[1].seconds, 0);
  EXPECT_EQ(r[2].seconds, 3);
}

// CPU offload (training.fsdp.cpu_offload), FSDP2 FULL_SHARD on 2 nodes x 2 GPUs, host link 100 B/s:
// every all-gather starts with its shard's copy to the GPU (root 33 x 4 B: 1.32 s; a block 20 x 4 B:
// 0.8 s), the root's once (kept), the blocks' in both passes; every reduction ends with the
// gradient shard's copy to the host on the same job (so the next reduction waits for it); the
// optimizer runs on the CPU instead of the GPU's kernels.
TEST(FsdpBuilder, CpuOffloadCopiesShardsInAndGradientsOut) {
  Fixture f(2, 2, 2, config::ShardingStrategy::FULL_SHARD);
  f.sc.training.fsdp.cpu_offload = true;
  f.sc.cluster.gpu.host_bandwidth = 100;
  const Plan p = build_fsdp(f.sc, f.prof, f.steps, 1);
  std::vector<std::string> jobs;
  std::string optimizer;
  double optimizer_s = -1;
  for (const auto& line : program(p))
    if (line.rfind("JOB", 0) == 0) jobs.push_back(line);
  for (const Task& t : p.tasks)
    if (t.kind == TaskKind::HOST && t.name.rfind("optimizer", 0) == 0) {
      optimizer = t.name;
      optimizer_s = t.seconds;
    }
  const std::vector<std::string> want = {
      "JOB all-gather root on 1: [shard to GPU 1.32] [all-gather copy-in 0.264] all-gather=132",
      "JOB all-gather layers.0 on 1: [shard to GPU 0.8] [all-gather copy-in 0.16] all-gather=80",
      "JOB all-gather layers.1 on 1: [shard to GPU 0.8] [all-gather copy-in 0.16] all-gather=80",
      "JOB all-gather layers.1 on 1: [shard to GPU 0.8] [all-gather copy-in 0.16] all-gather=80",
      "JOB all-gather layers.0 on 1: [shard to GPU 0.8] [all-gather copy-in 0.16] all-gather=80",
      "JOB reduce-scatter layers.1 on 1: reduce-scatter=320 [post-divide, copy-out 0.16] [gradient to host 0.8]",
      "JOB reduce-scatter layers.0 on 1: reduce-scatter=320 [post-divide, copy-out 0.16] [gradient to host 0.8]",
      "JOB reduce-scatter root on 1: reduce-scatter=528 [post-divide, copy-out 0.264] [gradient to host 1.32]",
  };
  EXPECT_EQ(jobs, want);
  // SGD with momentum, foreach, on FSDP2's four parameter shards (e 30, a0 20, a1 20, n 3
  // elements): 4 x 3.3 us + 73 x 0.53 ns (no temporaries, no page faults), zero_grad(set_to_none)
  // 4 x 0.09 us.
  EXPECT_EQ(optimizer, "optimizer step on the CPU (sgd foreach and zero_grad over 4 tensors, 73 elements, one thread)");
  EXPECT_NEAR(optimizer_s, 4 * 3.3e-6 + 73 * 0.53e-9 + 4 * 0.09e-6, 1e-15);
  // No GPU optimizer kernel is left: after the wait for the reductions, host time alone.
  const auto prog = program(p);
  const auto at = std::find(prog.begin(), prog.end(), "OPTIMIZER");
  ASSERT_NE(at, prog.end());
  EXPECT_EQ(*(at + 1), "HOST");
  EXPECT_EQ(at + 2, prog.end());
  for (const auto& line : prog) EXPECT_EQ(line.find("local shard"), std::string::npos) << line;

  // fsdp_offload's totals are the plan's: 5 copies in (132 + 4 x 80 B), 3 out (132 + 2 x 80 B);
  // host memory: each unit's pinned shard and gradient plus SGD's momentum, 4 B each per element.
  const FsdpOffload o = fsdp_offload(f.sc);
  EXPECT_EQ(o.h2d_copies, 5);
  EXPECT_DOUBLE_EQ(o.h2d_bytes, 452);
  EXPECT_DOUBLE_EQ(o.d2h_bytes, 292);
  EXPECT_DOUBLE_EQ(o.h2d_s, 4.52);
  EXPECT_DOUBLE_EQ(o.d2h_s, 2.92);
  EXPECT_DOUBLE_EQ(o.host_bytes, 73 * 12);
  EXPECT_DOUBLE_EQ(o.cpu_step_s, optimizer_s);
  double h2d = 0, d2h = 0;
  for (const Task& t : p.tasks)
    for (const auto& op : t.chain) {
      if (op.name == "shard to GPU") h2d += op.kernel.seconds;
      if (op.name == "gradient to host") d2h += op.kernel.seconds;
    }
  EXPECT_NEAR(h2d, o.h2d_s, 1e-12);
  EXPECT_NEAR(d2h, o.d2h_s, 1e-12);

  // With param_dtype bfloat16 the offloaded shard leaves FSDP2's foreach fast path: the float32
  // copy is cast on its own (33 x (4 + 2) B), then copied in (2 x 33 x 2 B).
  f.sc.training.fsdp.param_dtype = config::DType::BFLOAT16;
  const Plan bf = build_fsdp(f.sc, f.prof, f.steps, 1);
  std::string first;
  for (const auto& line : program(bf))
    if (first.empty() && line.rfind("JOB", 0) == 0) first = line;
  EXPECT_EQ(first,
            "JOB all-gather root on 1: [shard to GPU 1.32] [cast shard to param_dtype 0.198] [all-gather copy-in "
            "0.132] all-gather=66");
}

// Under HYBRID_SHARD the gradient shard goes to the host after the replica all-reduce (FSDP2
// foreach_reduce: the post-reduce stream is the all-reduce's); FSDP1 takes one flat tensor per
// unit to the CPU optimizer; a unit kept from the forward (SHARD_GRAD_OP) is copied in once.
TEST(FsdpBuilder, CpuOffloadUnderHybridShardFsdp1AndShardGradOp) {
  Fixture h(2, 2, 2, config::ShardingStrategy::HYBRID_SHARD);
  h.sc.training.fsdp.cpu_offload = true;
  h.sc.cluster.gpu.host_bandwidth = 100;
  const Plan p = build_fsdp(h.sc, h.prof, h.steps, 1);
  std::vector<std::string> ar;
  for (const auto& line : program(p))
    if (line.rfind("JOB all-reduce", 0) == 0) ar.push_back(line);
  ASSERT_EQ(ar.size(), 3u);
  EXPECT_EQ(ar[0],
            "JOB all-reduce layers.1 on 2: all-reduce across replicas=120 [post-divide, copy-out 0.24] [gradient to "
            "host 1.2] after reduce-scatter layers.1");

  Fixture v1(2, 2, 1, config::ShardingStrategy::FULL_SHARD);
  v1.sc.training.fsdp.cpu_offload = true;
  v1.sc.cluster.gpu.host_bandwidth = 100;
  v1.sc.training.optimizer = "adamw";
  v1.sc.training.optimizer_impl = "for_loop";
  // Flat shards: root ceil(110 / 4) = 28, blocks 15 each: 3 tensors, 58 elements; AdamW 19.3 us a
  // tensor, 1.86 ns an element and 8 bytes an element faulted at 1.9 us a 4 KiB page.
  const FsdpOffload o = fsdp_offload(v1.sc);
  const double per_el = 1.86e-9 + 8 * 1.9e-6 / 4096;
  EXPECT_NEAR(o.cpu_step_s, 3 * 19.3e-6 + 58 * per_el + 3 * 0.09e-6, 1e-15);
  // Its range: no faults and a core 30 % faster; this VM's 11 us faults and a core 30 % slower.
  EXPECT_NEAR(o.cpu_step_low_s, 0.7 * (3 * 19.3e-6 + 58 * 1.86e-9 + 3 * 0.09e-6), 1e-15);
  EXPECT_NEAR(o.cpu_step_high_s, 1.3 * (3 * 19.3e-6 + 58 * (1.86e-9 + 8 * 11e-6 / 4096) + 3 * 0.09e-6), 1e-15);
  EXPECT_EQ(o.cpu_step_what, "adamw for_loop and zero_grad over 3 tensors, 58 elements, one thread");
  EXPECT_DOUBLE_EQ(o.host_bytes, 58 * (4 + 4 + 8));

  Fixture g(2, 2, 2, config::ShardingStrategy::SHARD_GRAD_OP);
  g.sc.training.fsdp.cpu_offload = true;
  g.sc.cluster.gpu.host_bandwidth = 100;
  EXPECT_EQ(fsdp_offload(g.sc).h2d_copies, 3);
  // Without offload, or with nothing sharded, nothing is offloaded.
  g.sc.training.fsdp.cpu_offload = false;
  EXPECT_EQ(fsdp_offload(g.sc).h2d_copies, 0);
  Fixture n(2, 2, 2, config::ShardingStrategy::NO_SHARD);
  n.sc.training.fsdp.cpu_offload = true;
  EXPECT_FALSE(fsdp_offloads(n.sc));
}

// The CPU step's parts, per tensor and per element, one thread (bench/results/cpu-optimizer-
// 2026-12-07), with the page faults of their temporaries (unscale_'s abs: 4 bytes an element,
// AdamW's two: 8): GradScaler's unscale_ under float16, clip_grad_norm_, AdamW foreach, zero_grad
// zeroing the gradients (set_to_none false).
TEST(FsdpBuilder, CpuOptimizerStepByHand) {
  config::TrainingSettings tr;
  tr.optimizer = "adamw";
  tr.optimizer_impl = "foreach";
  tr.compute_dtype = config::ComputeDtype::FLOAT16;
  tr.grad_scaler = true;
  tr.clip_grad_norm = true;
  tr.zero_grad_set_to_none = false;
  const auto c = gpu::cpu_optimizer_step(tr, {1e6, 3e6});
  const double fault = 1.9e-6 / 4096;  // a byte faulted in
  const double want = (2 * 10.4e-6 + 4e6 * (2.33e-9 + 4 * fault)) + (2 * 6.3e-6 + 4e6 * 0.28e-9) +
                      (2 * 15.8e-6 + 4e6 * (1.98e-9 + 8 * fault)) + (2 * 0.55e-6 + 4e6 * 0.08e-9);
  EXPECT_NEAR(c.seconds, want, 1e-12);
  EXPECT_NEAR(gpu::cpu_optimizer_step(tr, {1e6, 3e6}, 0.0).seconds, want - 4e6 * 12 * fault, 1e-12);
  EXPECT_EQ(c.what, "unscale_, clip_grad_norm_, adamw foreach and zero_grad over 2 tensors, 4M elements, one thread");
}

}  // namespace
}  // namespace ddpsim::plan
