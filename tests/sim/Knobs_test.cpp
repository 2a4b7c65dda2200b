// Every DDP/training knob moves the result in the direction, and by the size, that first
// principles give (issue: "the complete DDP step"). Each simulation runs in a child process.
#include <gtest/gtest.h>

#include <cmath>

#include "app/sweep.hpp"
#include "collectives/nccl_model.hpp"
#include "collectives/topology.hpp"
#include "config/catalog.hpp"
#include "config/overrides.hpp"
#include "core/error.hpp"
#include "ddp/host_costs.hpp"
#include "engine/simulation.hpp"
#include "gpu/contention.hpp"
#include "report/report.hpp"
#include "sim/sim_builders.hpp"

namespace ddpsim {
namespace {

using testing::Json;

std::vector<Json> run_all(const std::vector<config::Scenario>& scs) { return testing::simulate_in_children(scs); }

// 8 layers of 4 Mi float32 parameters (16 MiB each), 2 nodes x 4 GPUs on a 100 Gb/s NIC: the
// collectives are bandwidth-bound. Contention off unless a test turns it on.
Json base_doc() {
  return Json{{"model", testing::synthetic_model(8, 4 << 20, 1e-3, 2e-3)},
              {"cluster", testing::cluster(2, 4, testing::link("nv", "nvlink", "240GBps", "3.4us"),
                                           testing::link("ib", "infiniband", "100Gbps", "14us"), 1)},
              {"collective", {{"model", "ring"}}},
              {"ddp", {{"bucket_cap_mb", 16}}},
              {"training", {{"batch_size", 1}}},
              {"contention", {{"enabled", false}}}};
}

config::Scenario with(Json doc, const std::string& path, const Json& value) {
  config::set_path(doc, path, value, "test");
  return testing::scenario(doc);
}

config::Scenario bundled(const std::string& name, const std::vector<std::string>& overrides = {}) {
  config::Catalog cat(config::Catalog::default_root());
  return cat.load_scenario(cat.resolve(config::Kind::SCENARIO, name), overrides);
}

double get(const Json& j, const char* k) { return j[k].get<double>(); }

TEST(Knobs, Fp16AndBf16CompressionHalveTheBytesOnTheWire) {
  auto r = run_all({testing::scenario(base_doc()), with(base_doc(), "ddp.comm_hook", "fp16_compress"),
                    with(base_doc(), "ddp.comm_hook", "bf16_compress")});
  // Bandwidth-bound: half the bytes, plus a decompress kernel of 6 B/element at HBM speed (~1 %).
  const double ratio = get(r[1], "comm_alone_s") / get(r[0], "comm_alone_s");
  EXPECT_GT(ratio, 0.50);
  EXPECT_LT(ratio, 0.53);
  EXPECT_NEAR(get(r[2], "comm_alone_s"), get(r[1], "comm_alone_s"), 1e-12);
  // The cast kernels run on the compute stream: compute_only grows.
  EXPECT_GT(get(r[1], "compute_only_s"), get(r[0], "compute_only_s"));
}

TEST(Knobs, NoSyncWithFourMicroStepsCutsCommunicationPerSampleByFour) {
  auto r = run_all({testing::scenario(base_doc()), with(base_doc(), "training.gradient_accumulation_steps", 4)});
  EXPECT_EQ(r[1]["micro_steps"], 4);
  EXPECT_EQ(r[1]["samples_per_rank"].get<int>(), 4 * r[0]["samples_per_rank"].get<int>());
  EXPECT_NEAR(get(r[1], "comm_alone_per_sample_s") / get(r[0], "comm_alone_per_sample_s"), 0.25, 1e-12);
  EXPECT_NEAR(get(r[1], "comm_alone_s"), get(r[0], "comm_alone_s"), 1e-12);  // one reduction per optimizer step
  // Four forward/backward passes of compute, one optimizer step. DDP.forward's host work shows
  // once per optimizer step: in the no_sync micro-steps the host runs ahead of the GPU (the
  // previous backward still queued), so it hides.
  const double fh0 = r[0]["ddp_overhead"]["forward_host_s"].get<double>();
  const double fh1 = r[1]["ddp_overhead"]["forward_host_s"].get<double>();
  EXPECT_GT(fh0, 0.0);
  EXPECT_NEAR(fh1, fh0, 1e-12);
  EXPECT_NEAR(get(r[1], "forward_s"), 4 * (get(r[0], "forward_s") - fh0) + fh1, 1e-9);
}

TEST(Knobs, PowerSgdSendsRankRFactorsInsteadOfMatrices) {
  // 4 Mi parameters as 2048 x 2048 matrices: rank 1 sends 2 x 2048 floats per matrix.
  Json doc = base_doc();
  for (auto& p : doc["model"]["params"]) p["shape"] = {2048, 2048};
  auto plain = testing::scenario(doc);
  config::set_path(doc, "ddp.comm_hook", "powersgd", "test");
  auto psgd = testing::scenario(doc);
  config::set_path(doc, "ddp.powersgd.matrix_approximation_rank", 4, "test");
  auto psgd4 = testing::scenario(doc);
  auto r = run_all({plain, psgd, psgd4});
  EXPECT_EQ(r[1]["comm_hook"], "powersgd");
  // Three all-reduces per bucket now, latency-bound: far less than the 16 MiB ones.
  EXPECT_LT(get(r[1], "comm_alone_s"), 0.1 * get(r[0], "comm_alone_s"));
  EXPECT_GT(get(r[2], "comm_alone_s"), get(r[1], "comm_alone_s"));      // rank 4 sends 4x the factors
  EXPECT_GT(get(r[1], "compute_only_s"), get(r[0], "compute_only_s"));  // P = MQ and friends
}

TEST(Knobs, BroadcastBuffersAddsOneBroadcastPerForward) {
  Json doc = base_doc();
  doc["model"]["buffers"] = Json::array({{{"name", "bn.running_mean"}, {"shape", {1 << 20}}, {"dtype", "float32"}}});
  auto on = testing::scenario(doc);
  config::set_path(doc, "ddp.broadcast_buffers", false, "test");
  auto off = testing::scenario(doc);
  auto r = run_all({on, off});
  // A ring broadcast: one pass of 4 MiB over the 12.5 GB/s NIC plus one phase of latencies
  // (6 NVLink steps of 3.4 us and 1 network step of 14 us), waited for by the compute stream.
  const double expect = 4.0 * (1 << 20) / 12.5e9 + 6 * 3.4e-6 + 14e-6;
  EXPECT_NEAR(get(r[0], "comm_alone_s") - get(r[1], "comm_alone_s"), expect, 1e-12);
  // The step also pays DDP.forward's _sync_buffers host work for the one buffer (sim/ddp/host_costs:
  // per module buffer, the broadcast excluded), which this scenario's step waits for in full.
  EXPECT_NEAR(get(r[0], "step_time_s") - get(r[1], "step_time_s"), expect + ddp::measured_host_costs().per_buffer_s,
              1e-9);
}

TEST(Knobs, OptimizerTrafficAdamwOverSgdIsFiveHalves) {
  Json doc = base_doc();
  config::set_path(doc, "compute.kernel_overhead", "0s", "test");
  auto sgd = testing::scenario(doc);
  config::set_path(doc, "training.optimizer", "adamw", "test");
  auto adam = testing::scenario(doc);
  auto r = run_all({sgd, adam});
  // foreach in torch 2.x (sim/gpu/NOTES.md "The optimizer step, op by op"): AdamW moves 20
  // elements per parameter element, SGD with momentum 8.
  EXPECT_NEAR(get(r[1], "optimizer_s") / get(r[0], "optimizer_s"), 20.0 / 8.0, 1e-9);
  // 32 Mi float32 parameters x 8 x 4 B at 2 TB/s x 0.8.
  EXPECT_NEAR(get(r[0], "optimizer_s"), 8.0 * (4 << 20) * 32 / 1.6e12, 1e-12);
}

TEST(Knobs, OptimizerImplementationsOrderByKernelCount) {
  auto r = run_all({with(base_doc(), "training.optimizer_impl", "for_loop"),
                    with(base_doc(), "training.optimizer_impl", "foreach"),
                    with(base_doc(), "training.optimizer_impl", "fused")});
  EXPECT_GT(get(r[0], "optimizer_s"), get(r[1], "optimizer_s"));
  EXPECT_GT(get(r[1], "optimizer_s"), get(r[2], "optimizer_s"));
  // SGD momentum, 8 tensors of 4 Mi elements = 64 chunks of 65536 each, 512 in all: for_loop 3
  // kernels per tensor (24); foreach 3 ops of 2 launches each (320 blocks, then 192): 6, the same
  // 8 element transfers; fused one op of 2 launches moving 5 elements (3 fewer).
  EXPECT_NEAR(get(r[0], "optimizer_s") - get(r[1], "optimizer_s"), (24 - 6) * 2e-6, 1e-12);
  EXPECT_NEAR(get(r[0], "optimizer_s") - get(r[2], "optimizer_s"), 3.0 * 8 * (4 << 20) * 4 / 1.6e12 + (24 - 2) * 2e-6,
              1e-12);
}

TEST(Knobs, ClipGradNormReadsTwiceAndWritesOnce) {
  auto r = run_all({testing::scenario(base_doc()), with(base_doc(), "training.clip_grad_norm", true)});
  EXPECT_NEAR(get(r[1], "optimizer_s") - get(r[0], "optimizer_s"), 3.0 * 8 * (4 << 20) * 4 / 1.6e12 + 2e-6, 1e-12);
}

TEST(Knobs, ZeroGradWithoutSetToNoneWritesEveryGradient) {
  auto r = run_all({testing::scenario(base_doc()), with(base_doc(), "training.zero_grad_set_to_none", false)});
  // 8 x 16 MiB of float32 gradients written once at 2 TB/s x 0.8, plus one kernel overhead.
  EXPECT_NEAR(get(r[1], "optimizer_s") - get(r[0], "optimizer_s"), 8.0 * (4 << 20) * 4 / 1.6e12 + 2e-6, 1e-12);
}

TEST(Knobs, MixedPrecisionSpeedsComputeButNotCommunication) {
  // Roofline layers: 2 GFLOP each, forward at the float32 peak vs the bfloat16 peak.
  Json doc = base_doc();
  for (auto& l : doc["model"]["layers"]) {
    l.erase("fwd_time_s");
    l.erase("bwd_time_s");
    l["fwd_flops"] = 2e9;
    l["bwd_flops"] = 4e9;
  }
  doc["cluster"]["gpu"]["peak_flops"] = {{"float32", "20TFLOPS"}, {"bfloat16", "300TFLOPS"}};
  auto fp32 = testing::scenario(doc);
  config::set_path(doc, "training.compute_dtype", "bfloat16", "test");
  auto bf16 = testing::scenario(doc);
  auto r = run_all({fp32, bf16});
  // The kernels: DDP.forward's host work (the same under either dtype) aside.
  const double fh = r[0]["ddp_overhead"]["forward_host_s"].get<double>();
  EXPECT_NEAR(r[1]["ddp_overhead"]["forward_host_s"].get<double>(), fh, 1e-12);
  EXPECT_LT(get(r[1], "forward_s") - fh, (get(r[0], "forward_s") - fh) / 5);
  EXPECT_EQ(get(r[1], "grad_bytes"), get(r[0], "grad_bytes"));  // gradients stay float32
  EXPECT_NEAR(get(r[1], "comm_alone_s"), get(r[0], "comm_alone_s"), 1e-12);
}

TEST(Knobs, SlowDataLoaderSetsThePace) {
  auto r = run_all({testing::scenario(base_doc()), with(base_doc(), "training.loader_samples_per_s", 10)});
  // One sample per rank at 10 samples/s: 0.1 s per step, well above the GPU's step.
  ASSERT_LT(get(r[0], "step_time_s"), 0.1);
  EXPECT_NEAR(get(r[1], "step_time_s"), 0.1, 1e-12);
  EXPECT_NEAR(get(r[1], "data_wait_s"), 0.1 - get(r[0], "step_time_s"), 1e-12);
}

TEST(Knobs, PageableMemoryHalvesTheInputCopyRate) {
  Json doc = base_doc();
  config::set_path(doc, "training.input_bytes_per_sample", "1MiB", "test");
  auto pinned = testing::scenario(doc);
  config::set_path(doc, "training.pin_memory", false, "test");
  auto pageable = testing::scenario(doc);
  auto r = run_all({pinned, pageable});
  // 1 MiB over the A100-class default host link of 24 GB/s, then at half that rate; a pageable
  // copy is synchronous, so it also pays one launch latency (5 us).
  EXPECT_NEAR(get(r[0], "h2d_s"), 1.0 * (1 << 20) / 24e9 + 2e-6, 1e-12);
  EXPECT_NEAR(get(r[1], "h2d_s"), 1.0 * (1 << 20) / 12e9 + 2e-6 + 5e-6, 1e-12);
}

TEST(Knobs, BlockingInputCopyIdlesTheGpuForOneLaunch) {
  Json doc = base_doc();
  config::set_path(doc, "training.input_bytes_per_sample", "1MiB", "test");
  auto async = testing::scenario(doc);
  config::set_path(doc, "training.non_blocking", false, "test");
  auto blocking = testing::scenario(doc);
  auto r = run_all({async, blocking});
  EXPECT_NEAR(get(r[1], "h2d_s") - get(r[0], "h2d_s"), 5e-6, 1e-15);
  EXPECT_NEAR(get(r[1], "step_time_s") - get(r[0], "step_time_s"), 5e-6, 1e-12);
}

TEST(Knobs, FindUnusedParametersWalksTheGraphAndReducesTheUsedMap) {
  auto r = run_all({testing::scenario(base_doc()), with(base_doc(), "ddp.find_unused_parameters", true)});
  EXPECT_NEAR(get(r[1], "autograd_traversal_s"), 8 * 0.2e-6, 1e-15);
  EXPECT_FALSE(r[1]["buckets_rebuilt"].get<bool>());
  // One more all-reduce (8 parameters x 4 bytes, latency-bound).
  EXPECT_GT(get(r[1], "comm_alone_s"), get(r[0], "comm_alone_s"));
}

TEST(Knobs, StaticGraphRebuildsAtIterationThree) {
  auto r = run_all({testing::scenario(base_doc()), with(base_doc(), "ddp.static_graph", true)});
  EXPECT_EQ(r[0]["iteration"], 2);
  EXPECT_EQ(r[1]["iteration"], 3);
  EXPECT_EQ(r[1]["iteration1"]["num_buckets"], 1);
}

TEST(Knobs, HighPriorityNcclStreamIsNotSlowedByCompute) {
  auto doc = base_doc();
  config::set_path(doc, "contention.enabled", true, "test");
  auto normal = testing::scenario(doc);
  config::set_path(doc, "streams.TORCH_NCCL_HIGH_PRIORITY", true, "test");
  auto high = testing::scenario(doc);
  auto r = run_all({normal, high});
  EXPECT_LT(get(r[1], "comm_busy_s"), get(r[0], "comm_busy_s"));
  EXPECT_NEAR(get(r[1], "comm_busy_s"), get(r[1], "comm_alone_s"), 1e-9);  // never slowed
}

TEST(Knobs, OneDeviceConnectionSerialisesKernelsBehindQueuedCollectives) {
  // The last layer's gradient is huge (its bucket takes ~40 ms to reduce), the others small: with
  // one hardware queue the next bucket's collective waits behind it, and the backward kernels
  // launched after that collective wait too.
  auto doc = base_doc();
  for (int i = 0; i < 7; ++i) doc["model"]["params"][i]["shape"] = {1 << 18};
  doc["model"]["params"][7]["shape"] = {64 << 20};
  config::set_path(doc, "ddp.bucket_cap_mb", 1, "test");
  auto many = testing::scenario(doc);
  config::set_path(doc, "streams.CUDA_DEVICE_MAX_CONNECTIONS", 1, "test");
  auto one = testing::scenario(doc);
  auto r = run_all({many, one});
  EXPECT_GT(get(r[1], "step_time_s"), get(r[0], "step_time_s"));
  EXPECT_GT(get(r[1], "comm_exposed_s"), get(r[0], "comm_exposed_s"));
}

TEST(Knobs, SecondProcessGroupRunsCollectivesConcurrently) {
  // Latency-bound buckets (1 MiB layers): two NCCL streams overlap their latencies.
  Json doc = base_doc();
  doc["model"] = testing::synthetic_model(16, 1 << 16, 1e-5, 2e-5);
  config::set_path(doc, "ddp.bucket_cap_mb", 0.25, "test");
  auto one = testing::scenario(doc);
  config::set_path(doc, "streams.comm_streams", 2, "test");
  auto two = testing::scenario(doc);
  auto r = run_all({one, two});
  EXPECT_LT(get(r[1], "step_time_s"), get(r[0], "step_time_s"));
}

TEST(Knobs, ReportSeparatesWhereTheTimeWent) {
  Json doc = base_doc();
  config::set_path(doc, "contention.enabled", true, "test");
  config::set_path(doc, "stragglers.slow_ranks", Json::array({{{"rank", 5}, {"factor", 1.3}}}), "test");
  config::set_path(doc, "stragglers.steps", 3, "test");
  auto r = run_all({testing::scenario(doc)}).at(0);
  const double parts = get(r, "compute_only_s") + get(r, "contention_s") + get(r, "straggler_wait_s") +
                       get(r, "comm_exposed_s") + get(r, "data_wait_s");
  EXPECT_NEAR(parts, get(r, "step_time_s"), 1e-9 * get(r, "step_time_s"));
  EXPECT_GT(get(r, "contention_s"), 0);
  EXPECT_GT(get(r, "straggler_wait_s"), 0);
  EXPECT_NEAR(get(r, "comm_hidden_s"), get(r, "comm_busy_s") - get(r, "comm_exposed_s"), 1e-12);
}

TEST(Knobs, SlowRankDelaysEveryoneByItsExtraBackward) {
  auto doc = base_doc();
  config::set_path(doc, "stragglers.slow_ranks", Json::array({{{"rank", 3}, {"factor", 1.2}}}), "test");
  config::set_path(doc, "stragglers.steps", 2, "test");
  auto r = run_all({testing::scenario(base_doc()), testing::scenario(doc)});
  EXPECT_TRUE(r[1]["explicit_ranks"].get<bool>());
  // Everything rank 3 computes takes 20 % longer (its copy-out and optimizer too, which delay the
  // start of its next step); the input copy is not compute. Rank 0 waits for that difference.
  const double slow_part = 0.2 * (get(r[0], "compute_only_s") - get(r[0], "h2d_s"));
  EXPECT_NEAR(get(r[1], "straggler_wait_s") / slow_part, 1.0, 0.02);
  EXPECT_GT(get(r[1], "step_time_s"), get(r[0], "step_time_s"));
}

TEST(Knobs, JitterGivesATailAndDependsOnTheSeed) {
  auto doc = base_doc();
  config::set_path(doc, "stragglers.jitter_cv", 0.1, "test");
  config::set_path(doc, "stragglers.steps", 40, "test");
  auto a = testing::scenario(doc);
  config::set_path(doc, "simulation.seed", 7, "test");
  auto b = testing::scenario(doc);
  auto r = run_all({a, a, b});
  EXPECT_EQ(r[0].dump(), r[1].dump());  // same seed: same bytes
  EXPECT_NE(get(r[0], "step_time_s"), get(r[2], "step_time_s"));
  EXPECT_LE(get(r[0], "step_time_p50_s"), get(r[0], "step_time_p95_s"));
  EXPECT_LE(get(r[0], "step_time_p95_s"), get(r[0], "step_time_p99_s"));
  EXPECT_LT(get(r[0], "step_time_p50_s"), get(r[0], "step_time_p99_s"));
  // The synchronised step follows the slowest of 8 ranks: slower than without jitter.
  auto plain = run_all({testing::scenario(base_doc())}).at(0);
  EXPECT_GT(get(r[0], "step_time_p50_s"), get(plain, "step_time_s"));
}

TEST(Knobs, ContentionOffIsExactlyTheContentionFreeResult) {
  auto r = run_all(
      {bundled("resnet50-2x8-a100-hdr", {"contention.enabled=false"}),
       bundled("resnet50-2x8-a100-hdr", {"contention.enabled=false", "streams.TORCH_NCCL_HIGH_PRIORITY=true"})});
  EXPECT_EQ(get(r[0], "contention_s"), 0.0);
  EXPECT_EQ(r[0]["step_time_s"].dump(), r[1]["step_time_s"].dump());
}

TEST(Knobs, ContentionSlowsOverlappedComputeByTheModelFactors) {
  // One long collective (a 64 MiB bucket launched by the last layer's backward) runs beside the
  // remaining backward kernels, compute-bound GEMMs measured at 2 ms each.
  Json doc = base_doc();
  doc["model"] = testing::synthetic_model(4, 16 << 20, 1e-3, 2e-3);
  config::set_path(doc, "ddp.bucket_cap_mb", 60, "test");
  config::set_path(doc, "contention.enabled", true, "test");
  auto sc = testing::scenario(doc);
  auto off = sc;
  off.contention.enabled = false;
  auto r = run_all({sc, off});
  EXPECT_GT(get(r[0], "contention_s"), 0);
  EXPECT_GT(get(r[0], "step_time_s"), get(r[1], "step_time_s"));
  EXPECT_GT(get(r[0], "comm_busy_s"), get(r[1], "comm_busy_s"));  // the collective slowed too
  EXPECT_EQ(get(r[0], "compute_only_s"), get(r[1], "compute_only_s"));
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(Knobs, NcclVersionPicksNcclsTunerGenerationPerBucket) {
  // The default scenario (dgx-a100 class, NCCL model): the current tuner runs the 8-30 MiB buckets
  // with LL128 over NVLink; NCCL 2.4 had no LL128 (Ring Simple / LL by its thresholds).
  auto r = run_all({bundled("default"), bundled("default", {"collective.nccl_version=2.4.8"})});
  ASSERT_FALSE(r[0]["buckets"].empty());
  int ll128_now = 0, ll128_24 = 0;
  for (const auto& b : r[0]["buckets"]) ll128_now += b["protocol"] == "LL128";
  for (const auto& b : r[1]["buckets"]) {
    ll128_24 += b["protocol"] == "LL128";
    EXPECT_FALSE(b["algorithm"].get<std::string>().empty());
    EXPECT_GT(b["channels"].get<int>(), 0);
  }
  EXPECT_GT(ll128_now, 0);
  EXPECT_EQ(ll128_24, 0);
  EXPECT_NE(get(r[0], "comm_alone_s"), get(r[1], "comm_alone_s"));
}

TEST(Knobs, BadNcclVersionIsRefusedWithItsPath) {
  try {
    bundled("default", {"collective.nccl_version=2.x"});
    FAIL() << "accepted";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/collective/nccl_version"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("MAJOR.MINOR.PATCH"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

// NCCL_MAX_CTAS reaches the NCCL kernels of a DDP step: every bucket's all-reduce runs on at most
// that many channels (NVLS tree's included), so NCCL holds fewer SMs and the buckets take longer.
TEST(Knobs, NcclMaxCtasCapsTheChannelsOfEveryBucket) {
  auto r = run_all({bundled("gpt2-4x8-h100-ndr"), bundled("gpt2-4x8-h100-ndr", {"collective.NCCL_MAX_CTAS=4"})});
  int above = 0;
  for (const auto& b : r[0]["buckets"]) above += b["channels"].get<int>() > 4;
  EXPECT_GT(above, 0);
  for (const auto& b : r[1]["buckets"]) EXPECT_LE(b["channels"].get<int>(), 4);
  EXPECT_GT(get(r[1], "comm_alone_s"), get(r[0], "comm_alone_s"));
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

// Each bucket row says what NCCL itself would estimate for its all-reduce and why the engine's
// time alone differs: the same figures `collective --explain` gives for that size.
TEST(Knobs, BucketRowsCarryNcclsEstimateAndWhy) {
  const auto sc = bundled("gpt2-4x8-h100-ndr");
  auto r = run_all({sc, bundled("gpt2-4x8-h100-ndr", {"ddp.comm_hook=powersgd"})});
  const collectives::NcclTopology topo = collectives::nccl_topology(sc.cluster);
  const collectives::NcclSettings settings = collectives::nccl_settings(sc.collective);
  ASSERT_FALSE(r[0]["buckets"].empty());
  for (const auto& b : r[0]["buckets"]) {
    const auto e = collectives::predict_allreduce(topo, b["bytes"].get<double>(), settings);
    EXPECT_NEAR(b["nccl_estimate_s"].get<double>(), e.nccl_model_time, 1e-12);
    EXPECT_NEAR(b["alone_s"].get<double>(), e.time, 1e-12);
    EXPECT_EQ(b["vs_nccl_estimate"], collectives::explain_difference(e));
    EXPECT_FALSE(b["vs_nccl_estimate"].get<std::string>().empty());  // NVLS tree on 4 nodes: NICs, fill
  }
  for (const auto& b : r[1]["buckets"]) {  // PowerSGD: kernels and two all-reduces per bucket
    EXPECT_EQ(b["nccl_estimate_s"].get<double>(), 0);
    EXPECT_EQ(b["vs_nccl_estimate"], "");
  }
}

}  // namespace
}  // namespace ddpsim
