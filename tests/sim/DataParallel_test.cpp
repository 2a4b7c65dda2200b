// torch.nn.DataParallel (training.wrapper "data_parallel", plan/dp_builder, run by the engine): hand-computed
// link bytes, chunking as comm.py/tensor_flatten.cpp do it, one GPU equal to plain training plus
// DataParallel's own host work, GIL serialization, flow = analytic, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "cli_support.hpp"
#include "collectives/collective_model.hpp"
#include "gpu/compute_model.hpp"
#include "gpu/kernel_model.hpp"
#include "plan/dp_builder.hpp"
#include "sim_builders.hpp"

namespace ddpsim::testing {
namespace {

using plan::take_tensors_cpp;
using plan::take_tensors_py;

TEST(DataParallelChunks, CppClosesAChunkOnceItReachesTheLimitPythonBeforeItWouldExceedIt) {
  const double MiB = 1048576.0;
  // Four 4 MiB float tensors, 10 MiB buffers. C++ take_tensors: 4, 8, 12 >= 10 -> {0,1,2}, {3}.
  // Python _take_tensors: 4 + 4 = 8; 8 + 4 > 10 -> {0,1}, then {2,3}.
  const std::vector<double> b(4, 4 * MiB);
  const std::vector<int> t(4, 0);
  EXPECT_EQ(take_tensors_cpp(b, t, 10 * MiB), (std::vector<std::vector<int>>{{0, 1, 2}, {3}}));
  EXPECT_EQ(take_tensors_py(b, t, 10 * MiB), (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  // A tensor above the limit is a chunk of its own in both.
  EXPECT_EQ(take_tensors_cpp({20 * MiB, 1}, {0, 0}, 10 * MiB), (std::vector<std::vector<int>>{{0}, {1}}));
  EXPECT_EQ(take_tensors_py({20 * MiB, 1}, {0, 0}, 10 * MiB), (std::vector<std::vector<int>>{{0}, {1}}));
  // Per dtype: float (0) and int64 (5) tensors never share a chunk; leftovers by dtype last.
  EXPECT_EQ(take_tensors_cpp({1, 2, 3}, {0, 5, 0}, 10 * MiB), (std::vector<std::vector<int>>{{0, 2}, {1}}));
  EXPECT_EQ(take_tensors_py({1, 2, 3}, {5, 0, 5}, 10 * MiB), (std::vector<std::vector<int>>{{0, 2}, {1}}));
}

// G GPUs on an NVSwitch of 100 GB/s per GPU; 4 layers of 1 Mi float32 parameters (4 MiB each),
// batch 8, 1000 input bytes and 4000 output bytes per sample.
Json dp_scenario(int gpus, bool nccl) {
  return {{"name", "dp"},
          {"model", synthetic_model(4, 1 << 20, 1e-3, 2e-3)},
          {"cluster", cluster(1, gpus, link("nvl", "nvlink", "100GBps", "1us"), Json())},
          {"training",
           {{"batch_size", 8},
            {"wrapper", "data_parallel"},
            {"input_bytes_per_sample", "1000B"},
            {"data_parallel", {{"nccl", nccl}, {"output_bytes_per_sample", "4000B"}}}}},
          {"simulation", {{"backend", "analytic"}}}};
}

TEST(DataParallelBytes, PeerCopyFallbackSendsTheParametersOncePerOtherGpuFromGpu0) {
  auto r = simulate_in_children({scenario(dp_scenario(4, false))});
  const Json& d = r[0]["data_parallel"];
  const double S = 4.0 * 4 * (1 << 20);  // parameter (= gradient) bytes
  const double chunk_in = 1000.0 * 8, chunk_out = 4000.0 * 8;
  EXPECT_EQ(d["broadcast_calls"].get<int>(), 2);  // {0,1,2}, {3}
  EXPECT_EQ(d["reduce_calls"].get<int>(), 2);     // {0,1}, {2,3}
  const Json& g = d["gpus"];
  // GPU 0 sends the parameters to each of the 3 others (replicate), the input chunks (scatter) and
  // the output-gradient chunks (Gather's backward); it receives the outputs and the gradients.
  EXPECT_DOUBLE_EQ(g[0]["tx_bytes"].get<double>(), 3 * S + 3 * chunk_in + 3 * chunk_out);
  EXPECT_DOUBLE_EQ(g[0]["rx_bytes"].get<double>(), 3 * S + 3 * chunk_out);
  EXPECT_DOUBLE_EQ(g[0]["host_link_bytes"].get<double>(), 4 * chunk_in);
  for (int j = 1; j < 4; ++j) {
    EXPECT_DOUBLE_EQ(g[j]["rx_bytes"].get<double>(), S + chunk_in + chunk_out) << j;
    EXPECT_DOUBLE_EQ(g[j]["tx_bytes"].get<double>(), S + chunk_out) << j;
  }
  // bandwidth use = (tx + rx) / (step x 2 x port bandwidth)
  const double step = r[0]["step_time_s"].get<double>();
  for (int j = 0; j < 4; ++j)
    EXPECT_NEAR(g[j]["bandwidth_use"].get<double>(),
                (g[j]["tx_bytes"].get<double>() + g[j]["rx_bytes"].get<double>()) / (step * 2 * 100e9), 1e-12);
}

TEST(DataParallelBytes, NcclBroadcastAndReduceCarryEachChunkOncePerRingHop) {
  auto r = simulate_in_children({scenario(dp_scenario(4, true))});
  const Json& g = r[0]["data_parallel"]["gpus"];
  const double S = 4.0 * 4 * (1 << 20);
  const double ci = 8000, co = 32000;
  // Broadcast ring 0 -> 1 -> 2 -> 3, reduce chain 1 -> 2 -> 3 -> 0.
  EXPECT_DOUBLE_EQ(g[0]["tx_bytes"].get<double>(), S + 3 * ci + 3 * co);
  EXPECT_DOUBLE_EQ(g[0]["rx_bytes"].get<double>(), S + 3 * co);
  EXPECT_DOUBLE_EQ(g[1]["tx_bytes"].get<double>(), 2 * S + co);
  EXPECT_DOUBLE_EQ(g[1]["rx_bytes"].get<double>(), S + ci + co);
  EXPECT_DOUBLE_EQ(g[2]["tx_bytes"].get<double>(), 2 * S + co);
  EXPECT_DOUBLE_EQ(g[2]["rx_bytes"].get<double>(), 2 * S + ci + co);
  EXPECT_DOUBLE_EQ(g[3]["tx_bytes"].get<double>(), S + co);
  EXPECT_DOUBLE_EQ(g[3]["rx_bytes"].get<double>(), 2 * S + ci + co);
  // Replicate alone delivers the parameters to the G-1 other GPUs: sum of broadcast receives.
  double rx = 0;
  for (int j = 0; j < 4; ++j) rx += g[j]["rx_bytes"].get<double>();
  EXPECT_DOUBLE_EQ(rx, 3 * S /*broadcast*/ + 3 * S /*reduce*/ + 3 * ci + 6 * co);
}

TEST(DataParallelTiming, HandComputedStepOfAComputeBoundModelWithoutHostDispatchCosts) {
  // The synthetic model has measured layer times: no per-op host cost, so the step is the
  // critical path of DataParallel's own work (dp_costs) and the GPU work, by hand:
  // host: device check (4 tensors) + Scatter (2 + G ops) -> the 3 input copies (each 8000 B at
  // 100 GB/s) on GPU 0; replicate: 2 chunks, each (1 + G) ops, a flatten on GPU 0 for the
  // 3-tensor chunk, an NCCL broadcast (the collective model's time for its bytes); the
  // Python replicate and the threads follow on the host while GPU 0 broadcasts.
  using namespace plan::dp_costs;
  const int G = 4;
  auto sc = scenario(dp_scenario(G, true));
  auto r = simulate_in_children({sc});
  const double op = gpu::eager_host_cost().forward_op_s();
  const double MiB4 = 4.0 * (1 << 20);
  auto copy = [&](double bytes) {
    return gpu::roofline_kernel(0, 2 * bytes, 100e12, 2000e9, sc.compute).seconds;  // flatten
  };
  // NCCL's broadcast of those bytes on this cluster (its rules by hand: NcclCollectives.BroadcastIsARingOfHops).
  const collectives::CollectiveModel model(sc.cluster, sc.collective);
  auto bcast = [&](double bytes) { return model.broadcast(bytes).total(); };
  const double ci = 8000 / 100e9, co = 32000 / 100e9;
  const auto prof = gpu::build_compute_profile(sc);
  // The whole batch's input copy to GPU 0 first; the host dispatches once it is done.
  const double h2d = prof.h2d.shape.memory_s * G + prof.h2d.shape.overhead_s;
  double host = h2d + kDeviceCheckPerTensor * 4 + op * (2 + G);
  double gpu0 = host + 3 * ci;  // the scatter copies, one after the other on GPU 0's stream
  // replicate chunk 1 ({0,1,2}): host (1+G) ops, flatten, broadcast; chunk 2 ({3}): no flatten.
  host += op * (1 + G);
  gpu0 = std::max(gpu0, host) + copy(3 * MiB4) + bcast(3 * MiB4);
  host += op * (1 + G);
  gpu0 = std::max(gpu0, host) + bcast(MiB4);
  host += G * (kReplicatePerModule * 4 + kReplicatePerTensor * 4) + kThreadStartJoin * G;
  // Forward: the kernels (4 x 1 ms at batch 8 = 8 ms each) start once the broadcast is done.
  const double fwd_end = std::max(gpu0, host) + 4 * 8e-3;
  host += op * (2 + G);                                  // Gather
  double t = std::max(fwd_end, host) + 3 * co;           // outputs j -> 0, one after the other
  host += op * (2 + G);                                  // Gather's backward
  t += 3 * co;                                           // output gradient 0 -> j
  const double bwd_end = std::max(t, host) + 4 * 16e-3;  // 4 x 2 ms x 8
  // ReduceAddCoalesced: chunks {0,1} and {2,3}: (2+G) ops each, a flatten on every GPU, a reduce.
  host += op * (2 + G);
  double red = std::max(bwd_end, host) + copy(2 * MiB4) + bcast(2 * MiB4);
  host += op * (2 + G);
  red = std::max(red, host) + copy(2 * MiB4) + bcast(2 * MiB4);
  const double step = red + prof.optimizer.seconds;
  EXPECT_NEAR(r[0]["step_time_s"].get<double>(), step, 1e-9 * step);
}

TEST(DataParallelTiming, OneGpuIsPlainTrainingPlusDataParallelsHostWork) {
  // One GPU: DataParallel calls the module directly (no replicate, threads or gather); the step
  // is the plain one-GPU step (no wrapper) plus the device check and the Scatter call, exactly (the replay of
  // the per-op host dispatch reproduces the compute model's folded layer times).
  using namespace plan::dp_costs;
  Json doc{{"name", "one"},
           {"model", "resnet50"},
           {"cluster", "dgx-a100"},
           {"gpus_per_node", 1},
           {"training", {{"batch_size", 8}}}};
  Json dp = doc;
  dp["training"]["wrapper"] = "data_parallel";
  auto a = scenario(doc), b = scenario(dp);
  auto r = simulate_in_children({a, b});
  const double op = gpu::eager_host_cost().forward_op_s();
  const double tensors = static_cast<double>(a.model.params.size() + a.model.buffers.size());
  const double delta = kDeviceCheckPerTensor * tensors + op * 3;
  EXPECT_GT(a.model.buffers.size(), 0u);
  // r[0] is DDP at one GPU: the plain step plus DDP's own work (ddp_overhead_s), taken out here.
  const double plain = r[0]["step_time_s"].get<double>() - r[0]["ddp_overhead_s"].get<double>();
  EXPECT_GT(r[0]["ddp_overhead_s"].get<double>(), 0.0);
  EXPECT_NEAR(r[1]["step_time_s"].get<double>(), plain + delta, 1e-9);
  EXPECT_DOUBLE_EQ(r[1]["data_parallel"]["gpus"][0]["tx_bytes"].get<double>(), 0.0);
}

TEST(DataParallelTiming, TheGilSerializesTheThreadsDispatch) {
  // ResNet-50 at batch 1 on H100s: kernels are shorter than their dispatch, so the forward is
  // host-bound. With the whole op cost under the GIL the G threads take turns: the forward phase
  // grows by (G - 1) x one replica's forward dispatch against threads that never wait.
  const int G = 4;
  Json doc{{"name", "gil"},
           {"model", "resnet50"},
           {"cluster", "dgx-h100"},
           {"gpus_per_node", G},
           {"training", {{"batch_size", 1}, {"wrapper", "data_parallel"}, {"data_parallel", {{"gil_share", 1.0}}}}}};
  Json free = doc;
  free["training"]["data_parallel"]["gil_share"] = 0.0;
  auto a = scenario(doc), b = scenario(free);
  auto r = simulate_in_children({a, b});
  const auto prof = gpu::build_compute_profile(a);
  const double fa = r[0]["data_parallel"]["phases"]["forward_s"].get<double>();
  const double fb = r[1]["data_parallel"]["phases"]["forward_s"].get<double>();
  EXPECT_NEAR(fa - fb, (G - 1) * prof.host_forward_s, 0.05 * (G - 1) * prof.host_forward_s);
  EXPECT_GT(r[0]["data_parallel"]["gil_wait_s"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(r[1]["data_parallel"]["gil_wait_s"].get<double>(), 0.0);
  // One process dispatches for every replica: one GPU's host queue (compute_host) is not reported.
  EXPECT_TRUE(r[0]["compute_host"].is_null());
}

TEST(DataParallelBackends, FlowEqualsAnalyticBecauseEveryCopyIsSerialized) {
  Json doc{{"name", "fa"},
           {"model", "resnet50"},
           {"cluster", "dgx1-v100"},
           {"training", {{"batch_size", 32}, {"wrapper", "data_parallel"}, {"data_parallel", {{"nccl", false}}}}},
           {"simulation", {{"backend", "flow"}}}};
  Json an = doc;
  an["simulation"]["backend"] = "analytic";
  auto r = simulate_in_children({scenario(doc), scenario(an)});
  const double a = r[0]["step_time_s"].get<double>(), b = r[1]["step_time_s"].get<double>();
  EXPECT_NEAR(a, b, 1e-9 * b);
  EXPECT_GT(r[0]["flows"].get<double>(), 0.0);
}

TEST(DataParallelValidation, RefusesMoreThanOneNodeAndBadSettings) {
  const std::string base = "run scenarios/default.json --set training.wrapper=data_parallel ";
  auto two = run_cli(base + "--set cluster=dgx-a100 --set nodes=2");
  EXPECT_EQ(two.code, 2) << two.out;
  EXPECT_NE(two.err.find("/nodes"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("single process"), std::string::npos) << two.err;
  auto bad = run_cli("run scenarios/default.json --set training.wrapper=dp");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("/training/wrapper"), std::string::npos) << bad.err;
  auto share = run_cli(base + "--set training.data_parallel.gil_share=1.5");
  EXPECT_EQ(share.code, 2);
  EXPECT_NE(share.err.find("/training/data_parallel/gil_share"), std::string::npos) << share.err;
  auto unknown = run_cli(base + "--set training.data_parallel.threads=3");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("/training/data_parallel/threads"), std::string::npos) << unknown.err;
  auto accum = run_cli(base + "--set training.gradient_accumulation_steps=2");
  EXPECT_EQ(accum.code, 2);
  EXPECT_NE(accum.err.find("/training/gradient_accumulation_steps"), std::string::npos) << accum.err;
  // ZeroRedundancyOptimizer and DDP's comm hooks have no meaning for one process (were ignored).
  auto zero = run_cli(base + "--set training.zero_redundancy_optimizer.enabled=true");
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.err.find("/training/zero_redundancy_optimizer: true with training.wrapper \"data_parallel\""),
            std::string::npos)
      << zero.err;
  auto hook = run_cli(base + "--set ddp.comm_hook=fp16_compress");
  EXPECT_EQ(hook.code, 2);
  EXPECT_NE(hook.err.find("/ddp/comm_hook: \"fp16_compress\" with training.wrapper \"data_parallel\""),
            std::string::npos)
      << hook.err;
}

// DDP's own constructor arguments mean nothing to DataParallel: the run says so on stderr and its
// step is the same to the byte as without them.
TEST(DataParallelValidation, DdpOnlyKeysAreWarnedAndChangeNothing) {
  const std::string base = "run claims/data-parallel-resnet50-1x8-v100 ";
  auto plain = run_cli(base + "--json -");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("DistributedDataParallel's"), std::string::npos) << plain.err;
  auto keyed = run_cli(base +
                       "--set ddp.bucket_cap_mb=1 --set ddp.gradient_as_bucket_view=true --set "
                       "ddp.broadcast_buffers=false --json -");
  ASSERT_EQ(keyed.code, 0) << keyed.err;
  EXPECT_NE(keyed.err.find("ddp.bucket_cap_mb, ddp.gradient_as_bucket_view, ddp.broadcast_buffers are "
                           "DistributedDataParallel's and ignored with training.wrapper \"data_parallel\""),
            std::string::npos)
      << keyed.err;
  const auto step = [](const CliResult& r) {
    return Json::parse(r.out.substr(0, r.out.size() - r.err.size()))["step_time_s"].get<double>();
  };
  EXPECT_EQ(step(plain), step(keyed));
}

}  // namespace
}  // namespace ddpsim::testing

namespace ddpsim::testing {
namespace {

// The report's memory is GPU 0's (before 2026-12-04 a DataParallel report carried none: "0 B (the
// GPU file gives no memory)", and every batch "fit"): the module's state plus the output gathered
// from the eight GPUs, against the V100's 32 GiB.
TEST(DataParallelMemory, TheReportCarriesGpu0sPeakAndSaysWhenItDoesNotFit) {
  const std::string base =
      "run scenarios/claims/data-parallel-bert-base-1x8-v100.json --set simulation.backend=analytic ";
  auto r = run_cli(base + "--json - -q");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out.substr(0, r.out.rfind('}') + 1));
  EXPECT_DOUBLE_EQ(j["gpu_memory_bytes"].get<double>(), 32.0 * (1ull << 30));
  // BERT-base: 110 M float32 parameters and AdamW's two moments; no buckets (no Reducer).
  EXPECT_GT(j["memory"]["parameters"].get<double>(), 4.3e8);
  EXPECT_DOUBLE_EQ(j["memory"]["optimizer_state"].get<double>(), 2 * j["memory"]["parameters"].get<double>());
  EXPECT_DOUBLE_EQ(j["memory"]["buckets"].get<double>(), 0.0);
  EXPECT_NE(j["memory"]["activation_rule"].get<std::string>().find("output gathered from the 8 GPUs"),
            std::string::npos);
  EXPECT_TRUE(j["fits"].get<bool>());
  auto text = run_cli(base);
  EXPECT_NE(text.out.find("memory on GPU 0"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("of 32.00 GiB: fits"), std::string::npos) << text.out;
  // 48 times the batch: the activations alone pass 32 GiB.
  auto big = run_cli(base + "--set training.batch_size=768");
  EXPECT_EQ(big.code, 0) << big.out;
  EXPECT_NE(big.out.find("of 32.00 GiB: does NOT fit"), std::string::npos) << big.out;
}

TEST(DataParallelSweep, RowsAreExplainedByTheirPhasesNotByBuckets) {
  auto r = run_cli(
      "sweep scenarios/claims/data-parallel-resnet50-1x8-v100.json --param gpus_per_node=2,4 "
      "--set simulation.backend=analytic -j 1");  // not -q: it silences the table too
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("torch.nn.DataParallel: scatter"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("overlap-bound"), std::string::npos) << r.out;
}

// --trace: every GPU's stream and every host thread on a track of its own, adding up to the
// report's own figures (accumulated where the work is simulated, not from the events).
TEST(DataParallelTrace, TracksAddUpToTheReportAndNeverOverlapOnAStream) {
  config::Catalog cat(config::Catalog::default_root());
  for (const char* file : {"scenarios/claims/data-parallel-resnet50-1x8-v100.json",
                           "scenarios/claims/data-parallel-bert-base-1x8-v100.json"}) {
    SCOPED_TRACE(file);
    const auto sc = cat.load_scenario(file, {});
    std::vector<std::function<Json()>> work;
    for (bool trace : {true, false})
      work.push_back([sc, trace] {
        engine::RunOptions opt;
        opt.collect_trace = trace;
        const auto r = engine::simulate(sc, opt);
        return Json{{"report", report::to_json(r)}, {"trace", report::to_chrome_trace(r)}};
      });
    const auto out = app::run_in_children(work, 2);
    ASSERT_EQ(out.size(), 2u);
    ASSERT_TRUE(out[0].ok && out[1].ok) << out[0].error << out[1].error;
    const Json& rep = out[0].value["report"];
    // Tracing changes nothing.
    EXPECT_EQ(rep["step_time_s"], out[1].value["report"]["step_time_s"]);
    const Json& d = rep["data_parallel"];
    const int G = rep["world_size"].get<int>();
    ASSERT_GT(G, 1);
    struct Ev {
      std::string name, cat;
      double t, dur;
    };
    std::map<std::pair<int, int>, std::vector<Ev>> tracks;
    std::set<std::pair<int, int>> named;
    std::vector<double> kernels(static_cast<size_t>(G)), transfers(static_cast<size_t>(G));
    double python = 0, gil = 0, phases = 0;
    for (const auto& e : out[0].value["trace"]["traceEvents"]) {
      const std::pair<int, int> key{e["pid"].get<int>(), e["tid"].get<int>()};
      if (e["name"] == "thread_name") named.insert(key);
      if (e["ph"] != "X") continue;
      const Ev ev{e["name"].get<std::string>(), e["cat"].get<std::string>(), e["ts"].get<double>() * 1e-6,
                  e["dur"].get<double>() * 1e-6};
      tracks[key].push_back(ev);
      if (key.first >= 1) {
        ASSERT_LE(key.first, G);
        auto g = static_cast<size_t>(key.first - 1);
        if (ev.cat == "copy" || ev.cat == "nccl")
          transfers[g] += ev.dur;
        else
          kernels[g] += ev.dur;  // kernels and the input copy (h2d), as kernel_s counts them
      } else if (ev.cat == "python") {
        python += ev.dur;
      } else if (ev.cat == "gil wait") {
        gil += ev.dur;
      } else if (ev.cat == "phase") {
        phases += ev.dur;
      }
    }
    EXPECT_EQ(out[1].value["trace"]["traceEvents"].size(), 6u);  // without --trace: metadata only
    for (int g = 0; g < G; ++g) {
      const Json& gd = d["gpus"][static_cast<size_t>(g)];
      EXPECT_NEAR(kernels[static_cast<size_t>(g)], gd["kernel_s"].get<double>(), 1e-9) << "GPU " << g;
      EXPECT_NEAR(transfers[static_cast<size_t>(g)], gd["transfer_s"].get<double>(), 1e-9) << "GPU " << g;
      EXPECT_GT(tracks[std::make_pair(1 + g, 0)].size(), 10u) << "GPU " << g;
    }
    EXPECT_NEAR(python, d["host_python_s"].get<double>(), 1e-9);
    EXPECT_NEAR(gil, d["gil_wait_s"].get<double>(), 1e-9);
    EXPECT_GT(gil, 0.0);
    EXPECT_NEAR(phases, rep["step_time_s"].get<double>(), 1e-9);
    // On one track, events are disjoint or nested (a layer's dispatch holds its GIL waits); a
    // GPU's stream runs one item at a time, so its events are disjoint.
    for (auto& [key, evs] : tracks) {
      std::sort(evs.begin(), evs.end(),
                [](const Ev& a, const Ev& b) { return a.t < b.t || (a.t == b.t && a.dur > b.dur); });
      std::vector<double> open;  // ends of the enclosing spans
      for (const auto& e : evs) {
        while (!open.empty() && open.back() <= e.t + 1e-12) open.pop_back();
        if (key.first >= 1) {
          EXPECT_TRUE(open.empty()) << e.name << " overlaps on GPU " << key.first - 1;
        }
        if (!open.empty()) {
          EXPECT_LE(e.t + e.dur, open.back() + 1e-12) << e.name << " crosses its enclosing span";
        }
        open.push_back(e.t + e.dur);
      }
    }
    // Every track is named: the Python process's threads and each GPU's stream.
    for (const auto& [key, evs] : tracks) EXPECT_TRUE(named.count(key)) << key.first << "/" << key.second;
    EXPECT_EQ(named.size(), static_cast<size_t>(2 + 2 * G + G));  // main, 2 per GPU, phases; GPU streams
  }
}

}  // namespace
}  // namespace ddpsim::testing
