// plan::build_ddp against plans written out by hand from torch's DDP and ZeroRedundancyOptimizer
// (no SimGrid): the compute stream's program of one rank, the jobs on the NCCL streams and their
// dependencies.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "plan/ddp_builder.hpp"

namespace ddpsim::plan {
namespace {

const char* mark_name(Mark m) {
  switch (m) {
    case Mark::NONE: return "";
    case Mark::STEP_BEGIN: return "STEP_BEGIN";
    case Mark::FORWARD_BEGIN: return "FORWARD_BEGIN";
    case Mark::FORWARD_END: return "FORWARD_END";
    case Mark::BACKWARD_BEGIN: return "BACKWARD_BEGIN";
    case Mark::BACKWARD_END: return "BACKWARD_END";
    case Mark::OPTIMIZER_BEGIN: return "OPTIMIZER_BEGIN";
    case Mark::OPTIMIZER_END: return "OPTIMIZER_END";
    case Mark::BUCKET_READY: return "BUCKET_READY";
    case Mark::BUCKET_LAUNCH: return "BUCKET_LAUNCH";
    case Mark::STEP_END: return "STEP_END";
    case Mark::SPAN_BEGIN: return "SPAN_BEGIN";
    case Mark::SPAN_END: return "SPAN_END";
  }
  return "?";
}
const char* slot_name(Slot s) {
  switch (s) {
    case Slot::NONE: return "";
    case Slot::H2D: return " [h2d]";
    case Slot::COPY: return " [copy]";
    case Slot::TRAVERSAL: return " [traversal]";
    case Slot::BCAST_WAIT: return " [bcast_wait]";
    case Slot::FINALIZE_WAIT: return " [finalize_wait]";
    case Slot::STALL: return " [stall]";
    case Slot::PARAM_SYNC_WAIT: return " [param_sync_wait]";
    case Slot::DDP_FORWARD: return " [ddp_forward]";
    case Slot::DDP_HOOK: return " [ddp_hook]";
    case Slot::DDP_BUCKET: return " [ddp_bucket]";
    case Slot::HOOK_KERNEL: return " [hook_kernel]";
    case Slot::BUFFER_COPY: return " [buffer_copy]";
    case Slot::ALLGATHER_WAIT: return " [allgather_wait]";
    case Slot::REDUCE_WAIT: return " [reduce_wait]";
  }
  return "?";
}

// One line per task of micro-step `si`: what it is, where, and what it depends on (by the
// `name` of the jobs it waits for).
std::vector<std::string> describe(const Plan& p, int si) {
  std::vector<std::string> out;
  for (const Task& t : p.tasks) {
    if (t.micro_step != si) continue;
    std::ostringstream s;
    if (t.ranks.modulus > 0) s << "(rank%" << t.ranks.modulus << "==" << t.ranks.residue << ") ";
    switch (t.kind) {
      case TaskKind::MARK:
        s << "MARK " << mark_name(t.mark);
        if (t.bucket >= 0) s << " " << t.bucket;
        break;
      case TaskKind::KERNEL:
        s << "KERNEL " << t.name << " " << t.kernel.seconds;
        if (!t.per_rank.empty()) s << " per_rank=" << t.per_rank.size();
        if (!t.scaled) s << " unscaled";
        s << slot_name(t.slot);
        break;
      case TaskKind::HOST: s << "HOST " << t.name << " " << t.seconds << slot_name(t.slot); break;
      case TaskKind::COLLECTIVE: {
        s << "JOB " << t.name << " on " << t.stream << " record " << t.record << ":";
        for (const auto& o : t.chain) s << " " << o.name << "=" << o.bytes;
        if (t.gate.from >= 0) {
          s << " gate";
          for (const auto& g : t.gate.terms) s << " +" << g.seconds;
        }
        break;
      }
      case TaskKind::WAIT:
        s << (t.until_started ? "WAIT_STARTED" : "WAIT");
        for (int a : t.after) s << " " << p.tasks[static_cast<size_t>(a)].name;
        s << slot_name(t.slot);
        break;
    }
    out.push_back(s.str());
  }
  return out;
}

// The plans' structure without DDP's host work (tested on its own below).
const ddp::HostCosts kNoHost{};

gpu::Kernel k(double s) {
  gpu::Kernel x;
  x.seconds = s;
  x.shape.memory_s = s;
  return x;
}

// Two layers: layer 0 holds p0, layer 1 holds p1 and p2; the backward makes p2, p1, p0 ready.
// Buckets (by hand): {p2, p1} and {p0}; each bucket's hook chain a plain all-reduce.
struct Fixture {
  config::Scenario sc;
  gpu::ComputeProfile prof;
  ddp::StepPlan steps;
  Fixture(int nodes, int gpus, int micro_steps = 1, bool iteration1 = false) {
    sc.model.params.resize(3);
    const int64_t numel[3] = {100, 300, 200};
    for (int i = 0; i < 3; ++i) {
      sc.model.params[static_cast<size_t>(i)].name = "p" + std::to_string(i);
      sc.model.params[static_cast<size_t>(i)].numel = numel[i];
    }
    sc.model.layers.resize(2);
    sc.model.layers[0].name = "L0";
    sc.model.layers[0].params = {0};
    sc.model.layers[1].name = "L1";
    sc.model.layers[1].params = {1, 2};
    sc.model.grad_ready_order = {2, 1, 0};
    sc.cluster.nodes = nodes;
    sc.cluster.gpus_per_node = gpus;
    sc.training.optimizer = "sgd";
    // No host cost for the hook's collective call either (tested on its own below).
    sc.cluster.calibration.launch_overhead = 0.0;
    prof.forward = {k(1), k(2)};
    prof.backward = {k(3), k(4)};
    prof.copy_in = {k(0.1), k(0.2), k(0.3)};
    prof.copy_out = {k(0.01), k(0.02), k(0.04)};
    prof.h2d = k(0.5);
    prof.optimizer = k(6);
    prof.peak_flops = 1e12;
    auto& b = steps.buckets.steady_state;
    b.resize(2);
    b[0].param_indices = {2, 1};
    b[0].bytes = 2000;
    b[1].param_indices = {0};
    b[1].bytes = 400;
    steps.buckets.iteration1 = b;
    for (size_t i = 0; i < 2; ++i) {
      ddp::BucketComm c;
      ddp::HookOp op;
      op.name = "all-reduce " + std::to_string(i);
      op.bytes = b[i].bytes;
      c.chain = {op};
      steps.comm_steady.push_back(c);
      steps.comm_iteration1.push_back(c);
    }
    int report = 0;
    auto add = [&](int iteration, const std::vector<ddp::Bucket>& bs, const std::vector<ddp::BucketComm>& cs) {
      for (int m = 0; m < micro_steps; ++m)
        steps.steps.push_back({iteration, report, m == micro_steps - 1, m == micro_steps - 1, &bs, &cs, false});
      steps.report_iteration.push_back(iteration);
      ++report;
    };
    steps.has_iteration1 = iteration1;
    if (iteration1) add(1, steps.buckets.iteration1, steps.comm_iteration1);
    add(2, steps.buckets.steady_state, steps.comm_steady);
    steps.factor.assign(static_cast<size_t>(report), std::vector<double>(1, 1.0));
  }
};

// finalize_backward (reducer.cpp) waits for each bucket's future and copies that bucket out before
// it waits for the next: bucket 0's copy-out is queued before the wait for bucket 1.
TEST(DdpBuilder, OneSyncedStepLaunchesBucketsAsTheReducerReadiesThemThenFinalizes) {
  Fixture f(2, 2);
  const Plan p = build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost);
  ASSERT_EQ(p.streams.size(), 2u);
  EXPECT_EQ(p.streams[0].kind, StreamKind::COMPUTE);
  EXPECT_EQ(p.streams[1].kind, StreamKind::COLLECTIVE);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].size, 4);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].records, 4);  // broadcast, 2 buckets, used map
  EXPECT_EQ(p.steps[0].bucket_bytes, (std::vector<double>{2000, 400}));
  EXPECT_EQ(p.steps[0].bucket_tensors, (std::vector<int>{2, 1}));
  const std::vector<std::string> want = {
      "MARK STEP_BEGIN",
      "KERNEL input to GPU 0.5 unscaled [h2d]",
      "MARK FORWARD_BEGIN",
      "KERNEL L0 1",
      "KERNEL L1 2",
      "MARK FORWARD_END",
      "MARK BACKWARD_BEGIN",
      "KERNEL L1 4",
      "KERNEL copy grad p2 0.3 [copy]",
      "KERNEL copy grad p1 0.2 [copy]",
      "MARK BUCKET_READY 0",
      "MARK BUCKET_LAUNCH 0",
      "JOB bucket 0 on 1 record 1: all-reduce 0=2000",
      "KERNEL L0 3",
      "KERNEL copy grad p0 0.1 [copy]",
      "MARK BUCKET_READY 1",
      "MARK BUCKET_LAUNCH 1",
      "JOB bucket 1 on 1 record 2: all-reduce 1=400",
      "MARK BACKWARD_END",
      "WAIT bucket 0 [finalize_wait]",
      "KERNEL copy bucket 0 to grads 0.06 [copy]",
      "WAIT bucket 1 [finalize_wait]",
      "KERNEL copy bucket 1 to grads 0.01 [copy]",
      "MARK OPTIMIZER_BEGIN",
      "KERNEL optimizer step (sgd) 6",
      "MARK OPTIMIZER_END",
      "MARK STEP_END",
  };
  EXPECT_EQ(describe(p, 0), want);
}

// A layer whose gradients are ready inside its backward (LayerSpec::param_ready: a multi-layer
// nn.LSTM on the CPU): the hooks fire between pieces of the layer's backward, in the gradients'
// ready order (p2, then p1), and the rest of the layer follows. L1's 4 s: p2 at 0.25 -> 1 s, p1 at
// 0.75 -> 2 s more, 1 s after; so bucket 0 {p2, p1} launches 3 s into L1 instead of after 4.
TEST(DdpBuilder, GradientsReadyInsideALayerSplitItsBackward) {
  Fixture f(2, 2);
  f.sc.model.layers[1].param_ready = {0.75, 0.25};  // params {1, 2}
  const Plan p = build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost);
  const std::vector<std::string> backward = {
      "MARK BACKWARD_BEGIN",
      "KERNEL L1 1",
      "KERNEL copy grad p2 0.3 [copy]",
      "KERNEL L1 2",
      "KERNEL copy grad p1 0.2 [copy]",
      "MARK BUCKET_READY 0",
      "MARK BUCKET_LAUNCH 0",
      "JOB bucket 0 on 1 record 1: all-reduce 0=2000",
      "KERNEL L1 1",
      "KERNEL L0 3",
      "KERNEL copy grad p0 0.1 [copy]",
      "MARK BUCKET_READY 1",
      "MARK BUCKET_LAUNCH 1",
      "JOB bucket 1 on 1 record 2: all-reduce 1=400",
      "MARK BACKWARD_END",
  };
  const auto d = describe(p, 0);
  const auto b = std::find(d.begin(), d.end(), "MARK BACKWARD_BEGIN");
  ASSERT_NE(b, d.end());
  ASSERT_GE(d.end() - b, static_cast<long>(backward.size()));
  EXPECT_EQ(std::vector<std::string>(b, b + static_cast<long>(backward.size())), backward);

  // Shares that run against the ready order (p2 later in the layer than p1, which is ready after
  // it): p2 at 0.75 takes 3 s, p1 can be no earlier (no piece), the last 1 s follows.
  f.sc.model.layers[1].param_ready = {0.25, 0.75};
  const auto d2 = describe(build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost), 0);
  const auto b2 = std::find(d2.begin(), d2.end(), "MARK BACKWARD_BEGIN");
  ASSERT_GE(d2.end() - b2, 9);
  EXPECT_EQ(std::vector<std::string>(b2, b2 + 9),
            (std::vector<std::string>{"MARK BACKWARD_BEGIN", "KERNEL L1 3", "KERNEL copy grad p2 0.3 [copy]",
                                      "KERNEL copy grad p1 0.2 [copy]", "MARK BUCKET_READY 0", "MARK BUCKET_LAUNCH 0",
                                      "JOB bucket 0 on 1 record 1: all-reduce 0=2000", "KERNEL L1 1", "KERNEL L0 3"}));
}

TEST(DdpBuilder, NoSyncMicroStepsNeitherCopyNorCommunicateNorStep) {
  Fixture f(2, 2, 2);
  const Plan p = build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_FALSE(p.steps[0].sync);
  const std::vector<std::string> want = {
      "MARK STEP_BEGIN",     "KERNEL input to GPU 0.5 unscaled [h2d]",
      "MARK FORWARD_BEGIN",  "KERNEL L0 1",
      "KERNEL L1 2",         "MARK FORWARD_END",
      "MARK BACKWARD_BEGIN", "KERNEL L1 4",
      "KERNEL L0 3",         "MARK BACKWARD_END",
      "MARK STEP_END",
  };
  EXPECT_EQ(describe(p, 0), want);
  EXPECT_EQ(describe(p, 1).size(), 27u);  // the synced one, as above
}

TEST(DdpBuilder, OneGpuRunsTheReducerWithoutCollectives) {
  // DDP at world size 1 still hooks every gradient, copies it into its bucket and back, and calls
  // the collective on its one-rank group (reducer.cpp runs unchanged); nothing crosses processes.
  Fixture f(1, 1);
  f.sc.collective.model = config::CollectiveModelKind::RING;
  f.sc.collective.base_latency = 0.25;  // the one-rank call
  const Plan p = build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost);
  EXPECT_EQ(p.streams.size(), 1u);
  EXPECT_TRUE(p.groups.empty());
  const std::vector<std::string> want = {
      "MARK STEP_BEGIN",
      "KERNEL input to GPU 0.5 unscaled [h2d]",
      "MARK FORWARD_BEGIN",
      "KERNEL L0 1",
      "KERNEL L1 2",
      "MARK FORWARD_END",
      "MARK BACKWARD_BEGIN",
      "KERNEL L1 4",
      "KERNEL copy grad p2 0.3 [copy]",
      "KERNEL copy grad p1 0.2 [copy]",
      "HOST DDP bucket 0 (Reducer, hook call) 0.25 [ddp_bucket]",
      "KERNEL L0 3",
      "KERNEL copy grad p0 0.1 [copy]",
      "HOST DDP bucket 1 (Reducer, hook call) 0.25 [ddp_bucket]",
      "MARK BACKWARD_END",
      "KERNEL copy bucket 0 to grads 0.06 [copy]",
      "KERNEL copy bucket 1 to grads 0.01 [copy]",
      "MARK OPTIMIZER_BEGIN",
      "KERNEL optimizer step (sgd) 6",
      "MARK OPTIMIZER_END",
      "MARK STEP_END",
  };
  EXPECT_EQ(describe(p, 0), want);
  // NCCL: the host's launch of the one-rank call (collectives/nccl_model.hpp, 5 us).
  f.sc.collective.model = config::CollectiveModelKind::NCCL;
  f.sc.cluster.calibration.launch_overhead.reset();
  EXPECT_EQ(describe(build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost), 0)[10],
            "HOST DDP bucket 0 (Reducer, hook call) 5e-06 [ddp_bucket]");
}

TEST(DdpBuilder, OneGpuChargesTheHooksKernelsAndTheBufferSyncAsDdpsOwn) {
  // At world size 1 allreduce_hook still divides each bucket in place (its kernel counts as DDP's:
  // slot hook_kernel, part of ddp_overhead_s) and DDP.forward still syncs the module buffers
  // (_sync_buffers on a one-rank group): forward 0.7 + 3 buffers x 0.125 = 1.075, by hand.
  Fixture f(1, 1);
  f.sc.collective.model = config::CollectiveModelKind::RING;
  f.sc.collective.base_latency = 0;
  f.sc.model.buffers.resize(3);
  ddp::HookOp div;
  div.kind = ddp::HookOp::Kind::KERNEL;
  div.name = "bucket.div_(world_size)";
  div.kernel = k(0.4);
  f.steps.comm_steady[0].at_launch = {div};
  const ddp::HostCosts c{0, 0, 0.7, 0.125};
  const auto got = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  EXPECT_EQ(got[3], "HOST DDP forward (_pre_forward, prepare_for_backward) 1.075 [ddp_forward]");
  EXPECT_NE(std::find(got.begin(), got.end(), "KERNEL bucket.div_(world_size) 0.4 [hook_kernel]"), got.end());
  // broadcast_buffers off: no buffer sync.
  f.sc.ddp.broadcast_buffers = false;
  EXPECT_EQ(describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0)[3],
            "HOST DDP forward (_pre_forward, prepare_for_backward) 0.7 [ddp_forward]");
}

// distributed.py forward: _sync_buffers only while require_forward_param_sync, which a forward
// under no_sync() clears and a synced one sets. Three micro-steps per step (two no_sync, one
// synced): micro-step 0 (after the previous step's synced one, or the first) broadcasts the
// buffers and pays their host work (3 x 0.125); micro-steps 1 and 2 do not; the synced micro-step
// 2 still pays DDP.forward's own 0.7. Two buffers of float32 and one int64: two broadcasts.
TEST(DdpBuilder, BuffersAreSyncedOnlyInTheForwardAfterASyncedOne) {
  Fixture f(2, 2, 3);
  f.sc.model.buffers.resize(3);
  f.sc.model.buffers[0].numel = 10;
  f.sc.model.buffers[1].numel = 10;
  f.sc.model.buffers[2].numel = 1;
  f.sc.model.buffers[2].dtype = config::DType::INT64;
  const ddp::HostCosts c{0, 0, 0.7, 0.125};
  const Plan p = build_ddp(f.sc, f.prof, f.steps, 1, &c);
  auto has = [](const std::vector<std::string>& v, const std::string& line) {
    return std::find(v.begin(), v.end(), line) != v.end();
  };
  const auto m0 = describe(p, 0), m1 = describe(p, 1), m2 = describe(p, 2);
  EXPECT_TRUE(has(m0, "JOB broadcast buffers on 1 record 0: broadcast=80 broadcast=8"));
  EXPECT_TRUE(has(m0, "HOST DDP forward (_sync_buffers) 0.375 [ddp_forward]"));
  for (const auto& m : {m1, m2})
    for (const auto& line : m) EXPECT_EQ(line.find("broadcast"), std::string::npos) << line;
  for (const auto& line : m1) EXPECT_EQ(line.find("HOST DDP forward"), std::string::npos) << line;
  EXPECT_TRUE(has(m2, "HOST DDP forward (_pre_forward, prepare_for_backward) 0.7 [ddp_forward]"));
  // One micro-step per step: every step syncs its buffers.
  Fixture g(2, 2, 1);
  g.sc.model.buffers = f.sc.model.buffers;
  EXPECT_TRUE(has(describe(build_ddp(g.sc, g.prof, g.steps, 1, &c), 0),
                  "HOST DDP forward (_pre_forward, prepare_for_backward) 1.075 [ddp_forward]"));
}

// The hook calls the bucket's collective on the backward thread at every world size: c10d's call
// and NCCL's enqueue (collectives/nccl_model.hpp kHostLaunchSeconds, 5 us) come before the next
// gradient's hook, on top of the Reducer's per-bucket work (0.125 here).
TEST(DdpBuilder, TheCollectiveCallIsHostWorkAtEveryWorldSize) {
  Fixture f(2, 2);
  f.sc.cluster.calibration.launch_overhead.reset();
  const ddp::HostCosts c{0, 0.125, 0, 0};
  const auto got = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  auto at = [&](const std::string& line) { return std::find(got.begin(), got.end(), line) - got.begin(); };
  const auto host = at("HOST DDP bucket 0 (Reducer, hook call) 0.125005 [ddp_bucket]");
  ASSERT_LT(host, static_cast<long>(got.size()));
  EXPECT_LT(host, at("JOB bucket 0 on 1 record 1: all-reduce 0=2000"));
  // The ring model's call: its base latency.
  f.sc.collective.model = config::CollectiveModelKind::RING;
  f.sc.collective.base_latency = 0.25;
  const auto ring = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  EXPECT_NE(std::find(ring.begin(), ring.end(), "HOST DDP bucket 1 (Reducer, hook call) 0.375 [ddp_bucket]"),
            ring.end());
  // collective.host_call, where given (a CPU run's measured call), replaces either model's figure.
  f.sc.collective.host_call = 0.5;
  const auto given = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  EXPECT_NE(std::find(given.begin(), given.end(), "HOST DDP bucket 1 (Reducer, hook call) 0.625 [ddp_bucket]"),
            given.end());
  f.sc.collective.model = config::CollectiveModelKind::NCCL;
  const auto nccl = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  EXPECT_NE(std::find(nccl.begin(), nccl.end(), "HOST DDP bucket 0 (Reducer, hook call) 0.625 [ddp_bucket]"),
            nccl.end());
}

// collective.host_callback: a Python hook's callback holds the GIL on gloo's worker right after a
// one-rank call, and the backward's next node waits for it; charged per bucket at world size 1
// only (larger groups run the callback when the all-reduce ends). By hand: Reducer 0.125 + call
// 0.5 + callback 0.25 = 0.875 per bucket at one rank; 0.625 at two, as without the field.
TEST(DdpBuilder, APythonHooksCallbackIsChargedPerBucketAtWorldSizeOne) {
  const ddp::HostCosts c{0, 0.125, 0, 0};
  Fixture one(1, 1), two(1, 2);
  for (Fixture* f : {&one, &two}) {
    f->sc.collective.host_call = 0.5;
    f->sc.collective.host_callback = 0.25;
  }
  auto count = [](const std::vector<std::string>& v, const std::string& prefix) {
    return std::count_if(v.begin(), v.end(), [&](const std::string& l) { return l.rfind(prefix, 0) == 0; });
  };
  const auto a = describe(build_ddp(one.sc, one.prof, one.steps, 1, &c), 0);
  EXPECT_EQ(count(a, "HOST DDP bucket 0 (Reducer, hook call) 0.875 [ddp_bucket]"), 1);
  EXPECT_EQ(count(a, "HOST DDP bucket 1 (Reducer, hook call) 0.875 [ddp_bucket]"), 1);
  const auto b = describe(build_ddp(two.sc, two.prof, two.steps, 1, &c), 0);
  EXPECT_EQ(count(b, "HOST DDP bucket 0 (Reducer, hook call) 0.625 [ddp_bucket]"), 1);
  EXPECT_EQ(count(b, "HOST DDP bucket 1 (Reducer, hook call) 0.625 [ddp_bucket]"), 1);
  // Unset: nothing for the callback.
  one.sc.collective.host_callback.reset();
  const auto u = describe(build_ddp(one.sc, one.prof, one.steps, 1, &c), 0);
  EXPECT_EQ(count(u, "HOST DDP bucket 0 (Reducer, hook call) 0.625 [ddp_bucket]"), 1);
  // A CUDA graph replays the step without its hooks.
  one.sc.collective.host_callback = 0.25;
  one.sc.training.cuda_graphs = true;
  for (const auto& line : describe(build_ddp(one.sc, one.prof, one.steps, 1, &c), 0))
    EXPECT_EQ(line.find("0.875"), std::string::npos) << line;
}

TEST(DdpBuilder, HostWorkIsExposedInFullWithoutAHostGpuSplit) {
  // A profile without per-op host times (measured, or a CPU rank): the GPU waits for every second
  // of DDP's host work, where PyTorch does it. Costs by hand: forward 0.7, hook 0.05 per
  // gradient, 0.125 per bucket.
  Fixture f(2, 2);
  const ddp::HostCosts c{0.05, 0.125, 0.7, 0};
  const auto got = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  const std::vector<std::string> want = {
      "MARK STEP_BEGIN",
      "KERNEL input to GPU 0.5 unscaled [h2d]",
      "MARK FORWARD_BEGIN",
      "HOST DDP forward (_pre_forward, prepare_for_backward) 0.7 [ddp_forward]",
      "KERNEL L0 1",
      "KERNEL L1 2",
      "MARK FORWARD_END",
      "MARK BACKWARD_BEGIN",
      "KERNEL L1 4",
      "HOST DDP autograd hook p2 0.05 [ddp_hook]",
      "KERNEL copy grad p2 0.3 [copy]",
      "HOST DDP autograd hook p1 0.05 [ddp_hook]",
      "KERNEL copy grad p1 0.2 [copy]",
      "MARK BUCKET_READY 0",
      "HOST DDP bucket 0 (Reducer, hook call) 0.125 [ddp_bucket]",
      "MARK BUCKET_LAUNCH 0",
      "JOB bucket 0 on 1 record 1: all-reduce 0=2000",
      "KERNEL L0 3",
      "HOST DDP autograd hook p0 0.05 [ddp_hook]",
      "KERNEL copy grad p0 0.1 [copy]",
      "MARK BUCKET_READY 1",
      "HOST DDP bucket 1 (Reducer, hook call) 0.125 [ddp_bucket]",
      "MARK BUCKET_LAUNCH 1",
      "JOB bucket 1 on 1 record 2: all-reduce 1=400",
      "MARK BACKWARD_END",
      "WAIT bucket 0 [finalize_wait]",
      "KERNEL copy bucket 0 to grads 0.06 [copy]",
      "WAIT bucket 1 [finalize_wait]",
      "KERNEL copy bucket 1 to grads 0.01 [copy]",
      "MARK OPTIMIZER_BEGIN",
      "KERNEL optimizer step (sgd) 6",
      "MARK OPTIMIZER_END",
      "MARK STEP_END",
  };
  EXPECT_EQ(got, want);
  // Under CUDA graphs the replayed step runs no hooks: no host work at all.
  f.sc.training.cuda_graphs = true;
  for (const auto& line : describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0))
    EXPECT_EQ(line.rfind("HOST", 0), std::string::npos) << line;
}

TEST(DdpBuilder, WithAHostGpuSplitOnlyTheGpusExtraWaitIsCharged) {
  // Per-op host times (0.5 per backward op, 0.25 per forward op) and GPU times per op: the host
  // and the GPU as one queue (ddp::HostExposure). Forward: L0 one op of 1, L1 one op of 2.
  // Backward: L1 one op of 4, L0 one op of 3. Copies in 0.3/0.2/0.1, out 0.01/0.02/0.04.
  Fixture f(2, 2);
  f.prof.forward_ops = {{1}, {2}};
  f.prof.backward_ops = {{3}, {4}};
  f.prof.host_forward_op_s = 0.25;
  f.prof.host_backward_op_s = 0.5;
  // DDP's copies: 0.5 of dispatch each (per_copy_s), plus the kernel model's 2 us launch (below
  // the figures' printed digits).
  ddp::HostCosts c{0.05, 0.125, 0.7, 0, 0.5};
  const auto got = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  // By hand (host h, GPU g; "with" queue; the plain queue has the same kernels without DDP):
  // forward: DDP work h = 0.7 at the start, the GPU (free at 0) waits 0.7 -> HOST 0.7.
  //   L0: h 0.95, g starts 0.95 (plain: h 0.25, g 0.25..1.25); L1: h 1.2, g 1.95..3.95
  //   (plain: h 0.5, g 1.25..3.25). Waits so far: with 0.95, plain 0.25; taken 0.7.
  // backward L1: h 1.7, g 3.95..7.95 (plain h 1.0, g 3.25..7.25).
  //   hook p2: h 1.75; copy p2 launched at h 2.25, g 7.95..8.25; probe: h 2.25 < g: no wait.
  //   hook p1: h 2.3, copy at 2.8, g ..8.45: no wait. Bucket 0: h 2.925: no wait.
  // L0: h 3.425, g 8.45..11.45 (plain h 1.5, g 7.25..10.25); hook p0 h 3.475, copy h 3.975,
  //   g ..11.55; bucket 1 h 4.1: no wait. Copies out at h 4.6 (p2, p1: g ..11.61) and 5.1 (p0):
  //   no wait. So only the forward's 0.7 is exposed: the backward is GPU-bound.
  int host = 0;
  for (const auto& line : got)
    if (line.rfind("HOST", 0) == 0) {
      ++host;
      EXPECT_EQ(line, "HOST DDP forward (_pre_forward, prepare_for_backward) 0.7 [ddp_forward]");
    }
  EXPECT_EQ(host, 1);
  // A launch-bound backward: host 5 per backward op. With: after the forward h 1.2, g 3.95;
  // L1 op h 6.2, g 6.2..10.2 (plain: h 0.5 -> 5.5, g 5.5..9.5; waits with 0.95 + 2.25 = 3.2,
  // plain 0.25 + 2.25 = 2.5). hook p2 h 6.25, copy h 11.25 > g 10.2: waits 1.05 -> HOST 1.05
  // (with - plain - taken = 3.2 + 1.05 - 2.5 - 0.7); g 11.25..11.55. (The copy's host 5 too.)
  f.prof.host_backward_op_s = 5;
  c.per_copy_s = 5;
  const auto lb = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  ASSERT_GT(lb.size(), 9u);
  EXPECT_EQ(lb[9], "HOST DDP autograd hook p2 1.05 [ddp_hook]");
}

TEST(DdpBuilder, UnusedParametersStreamsAndOneHardwareQueue) {
  Fixture f(2, 2);
  f.sc.ddp.find_unused_parameters = true;
  f.sc.compute.autograd_traversal_per_param = 1e-3;
  f.sc.streams.comm_streams = 2;
  f.sc.streams.cuda_device_max_connections = 1;
  for (auto& s : f.steps.steps) s.used_map_allreduce = true;
  const Plan p = build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost);
  ASSERT_EQ(p.streams.size(), 3u);
  const auto got = describe(p, 0);
  const std::vector<std::string> want = {
      "MARK STEP_BEGIN",
      "KERNEL input to GPU 0.5 unscaled [h2d]",
      "MARK FORWARD_BEGIN",
      "KERNEL L0 1",
      "KERNEL L1 2",
      "MARK FORWARD_END",
      "HOST autograd graph traversal 0.003 [traversal]",  // 3 parameters x 1 ms
      "MARK BACKWARD_BEGIN",
      "KERNEL L1 4",
      "KERNEL copy grad p2 0.3 [copy]",
      "KERNEL copy grad p1 0.2 [copy]",
      "MARK BUCKET_READY 0",
      "MARK BUCKET_LAUNCH 0",
      "JOB bucket 0 on 1 record 1: all-reduce 0=2000",
      "WAIT_STARTED bucket 0 [stall]",
      "KERNEL L0 3",
      "KERNEL copy grad p0 0.1 [copy]",
      "MARK BUCKET_READY 1",
      "MARK BUCKET_LAUNCH 1",
      "JOB bucket 1 on 2 record 2: all-reduce 1=400",              // bucket 1 on the second NCCL stream
      "JOB local_used_map on 1 record 3: all-reduce used map=12",  // one int32 per parameter
      "WAIT_STARTED bucket 1 [stall]",
      "MARK BACKWARD_END",
      "WAIT bucket 0 [finalize_wait]",
      "KERNEL copy bucket 0 to grads 0.06 [copy]",
      "WAIT bucket 1 [finalize_wait]",
      "KERNEL copy bucket 1 to grads 0.01 [copy]",
      "WAIT local_used_map [finalize_wait]",
      "MARK OPTIMIZER_BEGIN",
      "KERNEL optimizer step (sgd) 6",
      "MARK OPTIMIZER_END",
      "MARK STEP_END",
  };
  EXPECT_EQ(got, want);
}

TEST(DdpBuilder, BufferBroadcastFromRankZeroInDdpsForward) {
  Fixture f(2, 2);
  f.sc.model.buffers.resize(1);
  f.sc.model.buffers[0].numel = 10;  // float32: 40 bytes
  const auto got = describe(build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost), 0);
  ASSERT_GE(got.size(), 5u);
  // DistributedDataParallel.forward runs _sync_buffers before the module's forward.
  EXPECT_EQ(got[2], "MARK FORWARD_BEGIN");
  EXPECT_EQ(got[3], "JOB broadcast buffers on 1 record 0: broadcast=40");
  EXPECT_EQ(got[4], "WAIT broadcast buffers [bcast_wait]");
  f.sc.ddp.broadcast_buffers = false;
  EXPECT_EQ(describe(build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost), 0)[3], "KERNEL L0 1");
}

TEST(DdpBuilder, OnAGpuTheBufferSyncFlattensEachDtypeBucketAndCopiesEachBufferBack) {
  // World size 1, the per-kernel model's host split: buffers 0 and 1 float32, 2 int64 (two dtype
  // buckets of _broadcast_coalesced). DDP.forward 0.7 + 0.1 per buffer = 1.0 of host work, then
  // each bucket's torch.cat (one launch: <= 128 inputs) and a copy_ per buffer (a launch each,
  // the kernel model's 2 us).
  Fixture f(1, 1);
  f.sc.model.buffers.resize(3);
  f.sc.model.buffers[0].numel = f.sc.model.buffers[1].numel = 10;
  f.sc.model.buffers[2].numel = 1;
  f.sc.model.buffers[2].dtype = config::DType::INT64;
  f.prof.forward_ops = {{1}, {2}};
  f.prof.backward_ops = {{3}, {4}};
  f.prof.host_forward_op_s = 0.25;
  f.prof.host_backward_op_s = 0.5;
  const auto copy = [](double memory) {
    gpu::Kernel k;
    k.shape.memory_s = memory;
    k.shape.overhead_s = 0.002;
    k.seconds = memory + 0.002;
    return k;
  };
  f.prof.buffer_copy = {copy(0.01), copy(0.02), copy(0.004)};
  const ddp::HostCosts c{0, 0, 0.7, 0.1, 0};
  const auto got = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  ASSERT_GE(got.size(), 8u);
  // The GPU (idle at the step's start) waits for the host's 1.0 and the first cat's launch:
  // 1.000002, printed to six digits.
  EXPECT_EQ(got[3], "HOST DDP forward (_pre_forward, prepare_for_backward) 1 [ddp_forward]");
  // float32 bucket: reads and writes 0.01 + 0.02 of the copies' memory time, one fixed cost.
  EXPECT_EQ(got[4], "KERNEL flatten buffers (torch.cat) 0.032 [buffer_copy]");
  EXPECT_EQ(got[5], "KERNEL flatten buffers (torch.cat) 0.006 [buffer_copy]");
  // Launched while the cats run: no wait; the three copies one after the other.
  EXPECT_EQ(got[6], "KERNEL copy buffers back (copy_ per buffer) 0.04 [buffer_copy]");
  EXPECT_EQ(got[7], "KERNEL L0 1");
  // 130 float32 buffers in one bucket: two cat launches, two fixed costs.
  f.sc.model.buffers.assign(130, config::BufferSpec{});
  for (auto& b : f.sc.model.buffers) b.numel = 10;
  f.prof.buffer_copy.assign(130, copy(0.001));
  const auto many = describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0);
  EXPECT_EQ(many[4], "KERNEL flatten buffers (torch.cat) 0.134 [buffer_copy]");
  // A CPU rank (no host split): neither the cats nor the copies (they are in its measured
  // per-buffer cost); the host work alone.
  f.prof.forward_ops.clear();
  f.prof.backward_ops.clear();
  for (const auto& line : describe(build_ddp(f.sc, f.prof, f.steps, 1, &c), 0))
    EXPECT_EQ(line.find("buffers"), std::string::npos) << line;
}

// ZeroRedundancyOptimizer._partition_parameters: parameters sorted by numel, largest first, each
// to the rank with the least numel so far: p1 (300) -> rank 0, p2 (200) -> rank 1, p0 (100) ->
// rank 2; rank 3 holds nothing. _sync_params broadcasts them rank by rank (float32: 4 B each).
TEST(DdpBuilder, ZeroStepsTheShardThenBroadcastsEveryRanksParameters) {
  Fixture f(2, 2);
  f.sc.training.zero_redundancy_optimizer.enabled = true;
  const Plan p = build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost);
  const auto got = describe(p, 0);
  const std::vector<std::string> tail = {
      "MARK OPTIMIZER_BEGIN",
      "MARK ",
      "KERNEL ZeRO optimizer step on rank {rank}'s shard (sgd) 0 per_rank=3",
      "JOB ZeRO broadcast on 1 record 4: p1=1200 p2=800 p0=400 gate +" +
          [&] {
            std::ostringstream s;
            s << zero_steps(f.sc, f.prof, f.steps).max_shard_step;
            return s.str();
          }(),
      "WAIT ZeRO broadcast [param_sync_wait]",
      "MARK OPTIMIZER_END",
      "MARK STEP_END",
  };
  ASSERT_GE(got.size(), tail.size());
  EXPECT_EQ(std::vector<std::string>(got.end() - static_cast<long>(tail.size()), got.end()), tail);
  EXPECT_EQ(p.steps[0].records, 5);
  const auto z = zero_steps(f.sc, f.prof, f.steps);
  ASSERT_EQ(z.shard_step.size(), 3u);
  EXPECT_GT(z.max_shard_step, 0);
  for (const auto& s : z.shard_step) EXPECT_LE(s.seconds, z.max_shard_step);
  // Every rank simulated: no gate standing for the others.
  const Plan all = build_ddp(f.sc, f.prof, f.steps, 4, &kNoHost);
  for (const auto& t : all.tasks) EXPECT_EQ(t.gate.from, -1);
  // parameters_as_bucket_view: one flat bucket per rank, a 1-element dummy for rank 3.
  f.sc.training.zero_redundancy_optimizer.parameters_as_bucket_view = true;
  std::vector<double> bytes;
  for (const auto& o : zero_steps(f.sc, f.prof, f.steps).sync_params) bytes.push_back(o.bytes);
  EXPECT_EQ(bytes, (std::vector<double>{1200, 800, 400, 4}));
}

// hook_with_zero_step on 2 ranks: bucket i is stepped by rank i % 2 after its all-reduce, and
// broadcast from it; the step runs only after the warm-up, which moves the reported steady
// iteration one later (iteration 1 stays).
TEST(DdpBuilder, ZeroOverlapStepsEachBucketOnItsOwnerInTheLastHook) {
  Fixture f(1, 2, 1, true);
  f.sc.training.zero_redundancy_optimizer.enabled = true;
  f.sc.training.zero_redundancy_optimizer.overlap_with_ddp = true;
  const Plan p = build_ddp(f.sc, f.prof, f.steps, 1, &kNoHost);
  EXPECT_EQ(p.report_iteration, (std::vector<int>{1, 3}));
  EXPECT_EQ(p.steps[1].iteration, 3);
  for (const auto& line : describe(p, 0)) EXPECT_EQ(line.find("ZeRO"), std::string::npos) << line;
  const auto z = zero_steps(f.sc, f.prof, f.steps);
  std::ostringstream s0, s1;
  s0 << z.bucket_step[0].seconds;
  s1 << z.bucket_step[1].seconds;
  const auto got = describe(p, 1);
  const std::vector<std::string> want = {
      "MARK BACKWARD_END",
      "MARK OPTIMIZER_BEGIN",
      "(rank%2==0) WAIT bucket 0 [param_sync_wait]",
      "(rank%2==0) KERNEL ZeRO optimizer step, bucket 0 " + s0.str(),
      "JOB ZeRO broadcast on 1 record 4: bucket 0 from rank 0=2000",
      "(rank%2==1) WAIT bucket 1 [param_sync_wait]",
      "(rank%2==1) KERNEL ZeRO optimizer step, bucket 1 " + s1.str(),
      "JOB ZeRO broadcast on 1 record 5: bucket 1 from rank 1=400 gate +" + s1.str(),
      "WAIT ZeRO broadcast ZeRO broadcast [param_sync_wait]",
      "MARK OPTIMIZER_END",
      "WAIT bucket 0 [finalize_wait]",
      "KERNEL copy bucket 0 to grads 0.06 [copy]",
      "WAIT bucket 1 [finalize_wait]",
      "KERNEL copy bucket 1 to grads 0.01 [copy]",
      "MARK OPTIMIZER_BEGIN",
      "MARK OPTIMIZER_END",  // the step ran in the hook: no optimizer kernel here
      "MARK STEP_END",
  };
  auto it = std::find(got.begin(), got.end(), "MARK BACKWARD_END");
  ASSERT_NE(it, got.end());
  EXPECT_EQ(std::vector<std::string>(it, got.end()), want);
  // The gate of bucket 1's broadcast: from the hook, after bucket 1's all-reduce.
  for (const auto& t : p.tasks)
    if (t.micro_step == 1 && t.record == 5) {
      ASSERT_EQ(t.gate.terms.size(), 1u);
      EXPECT_EQ(p.tasks[static_cast<size_t>(t.gate.terms[0].after)].name, "bucket 1");
      EXPECT_EQ(p.tasks[static_cast<size_t>(t.gate.from)].mark, Mark::OPTIMIZER_BEGIN);
    }
}

}  // namespace
}  // namespace ddpsim::plan
