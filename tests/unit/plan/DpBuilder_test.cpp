// plan::build_data_parallel against plans written out by hand from torch.nn.DataParallel's
// forward/backward (data_parallel.py, replicate.py, comm.py; no SimGrid): what each host thread
// and each GPU's stream does, in order, and what each task waits for.
#include <gtest/gtest.h>

#include <sstream>
#include <tuple>

#include "plan/dp_builder.hpp"

namespace ddpsim::plan {
namespace {

// Per stream, one line per task: its kind and figures, and the tasks it follows on other streams
// as "<stream>#<position in that stream>".
std::vector<std::string> describe(const Plan& p, int stream) {
  std::vector<std::vector<int>> order(p.streams.size());
  for (size_t s = 0; s < p.streams.size(); ++s) order[s] = p.stream_tasks(static_cast<int>(s));
  auto where = [&](int task) {
    const int s = p.tasks[static_cast<size_t>(task)].stream;
    const auto& o = order[static_cast<size_t>(s)];
    return p.streams[static_cast<size_t>(s)].name + "#" +
           std::to_string(std::find(o.begin(), o.end(), task) - o.begin());
  };
  std::vector<std::string> out;
  for (int i : order[static_cast<size_t>(stream)]) {
    const Task& t = p.tasks[static_cast<size_t>(i)];
    std::ostringstream s;
    switch (t.kind) {
      case TaskKind::HOST: s << "HOST " << t.name << " " << t.seconds << " locked " << t.locked; break;
      case TaskKind::KERNEL: s << "KERNEL " << t.name << " " << t.kernel.seconds; break;
      case TaskKind::WAIT: s << "WAIT"; break;
      case TaskKind::MARK:
        s << "MARK " << (t.phase >= 0 ? p.phases[static_cast<size_t>(t.phase)] : t.name)
          << (t.mark == Mark::SPAN_BEGIN ? " begin"
              : t.mark == Mark::SPAN_END ? " end"
                                         : "");
        break;
      case TaskKind::COLLECTIVE:
        for (const auto& o : t.chain) {
          if (o.kind == OpKind::PEER_COPY) s << "PEER_COPY " << o.src << "->" << o.dst << " " << o.bytes;
          if (o.kind == OpKind::BROADCAST) s << "BROADCAST " << o.bytes;
          if (o.kind == OpKind::REDUCE) s << "REDUCE " << o.bytes;
        }
        break;
    }
    if (t.kind != TaskKind::MARK && t.phase >= 0 && p.streams[static_cast<size_t>(stream)].kind == StreamKind::COMPUTE)
      s << " (" << p.phases[static_cast<size_t>(t.phase)] << ")";
    for (int a : t.after) s << " after " << where(a);
    out.push_back(s.str());
  }
  return out;
}

struct Fixture {
  config::Scenario sc;
  gpu::ComputeProfile prof;
  DpInputs in;
  explicit Fixture(int gpus) {
    sc.cluster.nodes = 1;
    sc.cluster.gpus_per_node = gpus;
    sc.model.params.resize(1);
    sc.model.params[0].numel = 1 << 20;  // float32: 4 MiB, one coalesced chunk
    sc.model.layers.resize(1);
    sc.model.layers[0].name = "L";
    sc.model.layers[0].params = {0};
    sc.training.data_parallel.gil_share = 0.5;
    prof.forward_ops = {{1e-3, 2e-3}};
    prof.backward_ops = {{3e-3}};
    prof.host_forward_op_s = 1e-5;
    prof.host_backward_op_s = 2e-5;
    prof.optimizer.seconds = 6e-3;
    in.op_s = 1e-5;
    in.input_bytes = 6000;
    in.output_bytes = gpus > 1 ? 8000 : 0;
    in.h2d_s = 5e-4;
  }
};

// Two GPUs, NCCL available. Host costs (plan/dp_builder.hpp dp_costs, 6.9 us per quiet op): the
// device check 0.066 op x 1 tensor = 0.4554 us; replicate 2 replicas x (1.98 op x 1 module + 0.68
// op x 1 tensor) = 36.708 us; thread start + join 19.7 op x 2 = 271.86 us; each of DataParallel's
// own ATen calls one op (10 us here): Scatter, Gather and Gather's backward 2 + G calls, the
// coalesced broadcast 1 + G, the reduce 2 + G.
TEST(DpBuilder, TwoGpusScatterReplicateApplyGatherReduceStep) {
  Fixture f(2);
  const Plan p = build_data_parallel(f.sc, f.prof, f.in);
  ASSERT_EQ(p.streams.size(), 7u);
  EXPECT_EQ(p.world_size, 2);
  const std::vector<std::string> main = {
      "WAIT after GPU 0#0",
      "HOST device check 4.554e-07 locked 1",
      "HOST Scatter.apply 4e-05 locked 1",
      "MARK scatter",
      "HOST broadcast_coalesced: flatten, NCCL calls 3e-05 locked 1",
      "HOST replicate: module copies 3.6708e-05 locked 1",
      "MARK replicate",
      "HOST parallel_apply: threads start, join 0.00027186 locked 1",
      "WAIT after parallel_apply thread 0#3 after parallel_apply thread 1#3",
      "MARK forward",
      "HOST Gather.apply 4e-05 locked 1",
      "MARK gather",
      "HOST Gather.backward: Scatter 4e-05 locked 1",
      "WAIT after autograd device thread 0#2 after autograd device thread 1#2",
      "MARK backward",
      "HOST ReduceAddCoalesced 4e-05 locked 1",
      "HOST AccumulateGrad (GPU 0) 2e-05 locked 0",
      "MARK reduce",
      "MARK optimizer",
  };
  EXPECT_EQ(describe(p, dp_main_stream()), main);
  const std::vector<std::string> apply1 = {
      "MARK L (forward) begin after main thread#7",
      "HOST eager op 1e-05 locked 0.5",
      "HOST eager op 1e-05 locked 0.5",
      "MARK L (forward) end",
  };
  EXPECT_EQ(describe(p, dp_apply_stream(1)), apply1);
  const std::vector<std::string> autograd0 = {
      "MARK L (backward) begin after main thread#12",
      "HOST eager op 2e-05 locked 0",
      "MARK L (backward) end",
  };
  EXPECT_EQ(describe(p, dp_autograd_stream(0)), autograd0);
  const std::vector<std::string> gpu0 = {
      "KERNEL input.to(cuda:0) 0.0005 (scatter)",
      "PEER_COPY 0->1 3000 (scatter) after main thread#2",
      "BROADCAST 4.1943e+06 (replicate) after main thread#4",
      "KERNEL L (forward) 0.001 (forward) after parallel_apply thread 0#1",
      "KERNEL L (forward) 0.002 (forward) after parallel_apply thread 0#2",
      "PEER_COPY 1->0 4000 (gather) after main thread#10",
      "PEER_COPY 0->1 4000 (backward) after main thread#12",
      "KERNEL L (backward) 0.003 (backward) after autograd device thread 0#1",
      "REDUCE 4.1943e+06 (reduce) after main thread#15",
      "KERNEL optimizer 0.006 (optimizer) after main thread#17",
  };
  EXPECT_EQ(describe(p, dp_gpu_stream(0)), gpu0);
  const std::vector<std::string> gpu1 = {
      "PEER_COPY 0->1 3000 (scatter) after main thread#2",
      "BROADCAST 4.1943e+06 (replicate) after main thread#4",
      "KERNEL L (forward) 0.001 (forward) after parallel_apply thread 1#1",
      "KERNEL L (forward) 0.002 (forward) after parallel_apply thread 1#2",
      "PEER_COPY 1->0 4000 (gather) after main thread#10",
      "PEER_COPY 0->1 4000 (backward) after main thread#12",
      "KERNEL L (backward) 0.003 (backward) after autograd device thread 1#1",
      "REDUCE 4.1943e+06 (reduce) after main thread#15",
  };
  EXPECT_EQ(describe(p, dp_gpu_stream(1)), gpu1);
}

// Without NCCL (comm.cpp's fallback) the broadcast is peer copies from GPU 0 and the reduce peer
// copies to GPU 0, each followed by an add there; a chunk of several tensors is flattened first.
TEST(DpBuilder, WithoutNcclPeerCopiesAndAddsReplaceTheCollectives) {
  Fixture f(3);
  f.sc.training.data_parallel.nccl = false;
  f.sc.model.params.resize(2);
  f.sc.model.params[1].numel = 10;  // a second float32 tensor: the chunks hold two tensors
  f.sc.cluster.gpu.hbm_bandwidth = 1e12;
  f.sc.compute.memory_efficiency = 0.5;
  f.sc.compute.kernel_overhead = 0;
  const Plan p = build_data_parallel(f.sc, f.prof, f.in);
  std::vector<std::string> copies;
  for (const auto& line : describe(p, dp_gpu_stream(0)))
    if (line.rfind("PEER_COPY", 0) == 0 || line.rfind("KERNEL flatten", 0) == 0 || line.rfind("KERNEL add", 0) == 0)
      copies.push_back(line.substr(0, line.find(" after")));
  const double b = 4 * ((1 << 20) + 10);
  std::ostringstream flat, add, bytes;
  flat << 2 * b / 0.5e12;  // read + write at half of 1 TB/s
  add << 3 * b / 0.5e12;   // two reads + a write
  bytes << b;
  const std::vector<std::string> want = {
      "PEER_COPY 0->1 2000 (scatter)",
      "PEER_COPY 0->2 2000 (scatter)",
      "KERNEL flatten (coalesce) " + flat.str() + " (replicate)",
      "PEER_COPY 0->1 " + bytes.str() + " (replicate)",
      "PEER_COPY 0->2 " + bytes.str() + " (replicate)",
      "PEER_COPY 1->0 2666.67 (gather)",
      "PEER_COPY 2->0 2666.67 (gather)",
      "PEER_COPY 0->1 2666.67 (backward)",
      "PEER_COPY 0->2 2666.67 (backward)",
      "KERNEL flatten (coalesce) " + flat.str() + " (reduce)",
      "PEER_COPY 1->0 " + bytes.str() + " (reduce)",
      "KERNEL add (reduce on GPU 0) " + add.str() + " (reduce)",
      "PEER_COPY 2->0 " + bytes.str() + " (reduce)",
      "KERNEL add (reduce on GPU 0) " + add.str() + " (reduce)",
  };
  EXPECT_EQ(copies, want);
}

// One GPU: DataParallel calls the module directly (no replicate, no threads for the forward);
// the backward still runs on the autograd engine's device thread.
TEST(DpBuilder, OneGpuCallsTheModuleDirectly) {
  Fixture f(1);
  const Plan p = build_data_parallel(f.sc, f.prof, f.in);
  const std::vector<std::string> main = {
      "WAIT after GPU 0#0",
      "HOST device check 4.554e-07 locked 1",
      "HOST Scatter.apply 3e-05 locked 1",
      "MARK scatter",
      "MARK L (forward) begin",
      "HOST eager op 1e-05 locked 0",  // the main thread alone: no GIL wait to model
      "HOST eager op 1e-05 locked 0",
      "MARK L (forward) end",
      "MARK forward",
      "WAIT after autograd device thread 0#2",
      "MARK backward",
      "MARK optimizer",
  };
  EXPECT_EQ(describe(p, dp_main_stream()), main);
}

// The input on the CPU: Scatter copies each chunk host-to-device on its GPU.
TEST(DpBuilder, InputOnCpuCopiesEachChunkToItsGpu) {
  Fixture f(2);
  f.in.input_on_cpu = true;
  const Plan p = build_data_parallel(f.sc, f.prof, f.in);
  EXPECT_EQ(describe(p, dp_main_stream())[2], "WAIT after GPU 0#0 after GPU 1#0");
  EXPECT_EQ(describe(p, dp_gpu_stream(1))[0], "KERNEL input chunk to cuda:1 0.0005 (scatter) after main thread#1");
}

// The trace's tracks: the Python process (pid 0: the main thread, then per GPU its parallel_apply
// thread at tid 1 + 2i and autograd device thread at 2 + 2i, the phases at 1 + 2G), then a
// process per GPU (pid 1 + i); each stream points at its own.
TEST(DpBuilder, TracksListThePythonProcessThenOneProcessPerGpu) {
  Fixture f(2);
  f.sc.cluster.gpu.name = "V100";
  const Plan p = build_data_parallel(f.sc, f.prof, f.in);
  const std::string host = "python process (torch.nn.DataParallel)";
  const std::vector<std::tuple<int, int, std::string, std::string>> want = {
      {0, 0, host, "main thread"},
      {0, 1, host, "parallel_apply thread 0"},
      {0, 2, host, "autograd device thread 0"},
      {0, 3, host, "parallel_apply thread 1"},
      {0, 4, host, "autograd device thread 1"},
      {0, 5, host, "step phases"},
      {1, 0, "GPU 0 (V100)", "current stream"},
      {2, 0, "GPU 1 (V100)", "current stream"},
  };
  ASSERT_EQ(p.tracks.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(std::make_tuple(p.tracks[i].pid, p.tracks[i].tid, p.tracks[i].process, p.tracks[i].thread), want[i]);
  EXPECT_EQ(p.phase_track, 5);
  EXPECT_EQ(p.process_gpus, 2);
  const std::vector<int> stream_track = {0, 1, 2, 6, 3, 4, 7};  // main; per GPU apply, autograd, stream
  ASSERT_EQ(p.streams.size(), stream_track.size());
  for (size_t s = 0; s < p.streams.size(); ++s) EXPECT_EQ(p.streams[s].track, stream_track[s]) << s;
}

// What the report states without running: one 4 MiB float32 parameter (one coalesced chunk each
// way), no buffers; the whole input (6000 B) over GPU 0's host link, none over GPU 1's.
TEST(DpBuilder, ReportFactsCountChunksAndHostLinkBytes) {
  Fixture f(2);
  const report::DataParallelReport d = dp_report_facts(f.sc, f.in);
  EXPECT_EQ(d.param_bytes, 4194304.0);
  EXPECT_EQ(d.grad_bytes, 4194304.0);
  EXPECT_EQ(d.buffer_bytes, 0.0);
  EXPECT_EQ(d.broadcast_calls, 1);
  EXPECT_EQ(d.reduce_calls, 1);
  EXPECT_EQ(d.input_bytes, 6000.0);
  EXPECT_EQ(d.output_bytes, 8000.0);
  EXPECT_EQ(d.gil_share, 0.5);
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[0].host_link_bytes, 6000.0);
  EXPECT_EQ(d.gpus[1].host_link_bytes, 0.0);
  // With the input on the CPU each GPU's chunk crosses its own host link.
  f.in.input_on_cpu = true;
  const report::DataParallelReport c = dp_report_facts(f.sc, f.in);
  EXPECT_EQ(c.gpus[0].host_link_bytes, 3000.0);
  EXPECT_EQ(c.gpus[1].host_link_bytes, 3000.0);
}

TEST(DpBuilder, TakeTensorsChunksAsTorchDoes) {
  const double MiB = 1024.0 * 1024.0;
  // Four 4 MiB tensors, 10 MiB chunks. C++ take_tensors closes a chunk once it reaches the size:
  // 4, 8, 12 >= 10 -> {0,1,2}, {3}. Python _take_tensors closes it before a tensor would pass it:
  // 4 + 4 = 8; 8 + 4 > 10 -> {0,1}, {2,3}.
  const std::vector<double> b(4, 4 * MiB);
  const std::vector<int> t(4, 0);
  EXPECT_EQ(take_tensors_cpp(b, t, 10 * MiB), (std::vector<std::vector<int>>{{0, 1, 2}, {3}}));
  EXPECT_EQ(take_tensors_py(b, t, 10 * MiB), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
}

}  // namespace
}  // namespace ddpsim::plan
