// The quantizing comm hooks through the engine: they run all-gathers (one phase, N x
// the contribution gathered) and kernels; collective.NCCL_BUFFSIZE / NCCL_NTHREADS reach the NCCL
// model; bad values exit 2. Each simulation runs in a child process.
#include <gtest/gtest.h>

#include <cmath>

#include "collectives/collective_model.hpp"
#include "config/overrides.hpp"
#include "ddp/step_plan.hpp"
#include "gpu/compute_model.hpp"
#include "sim/cli_support.hpp"
#include "sim/sim_builders.hpp"

namespace ddpsim {
namespace {

using testing::Json;

// 8 layers of 1 Mi float32 parameters, 2 nodes x 4 GPUs on a 100 Gb/s NIC, ring model, analytic
// backend (each collective takes exactly its model time), contention off.
Json base_doc() {
  return Json{{"model", testing::synthetic_model(8, 1 << 20, 1e-3, 2e-3)},
              {"cluster", testing::cluster(2, 4, testing::link("nv", "nvlink", "240GBps", "3.4us"),
                                           testing::link("ib", "infiniband", "100Gbps", "14us"), 1)},
              {"collective", {{"model", "ring"}}},
              {"ddp", {{"bucket_cap_mb", 8}}},
              {"training", {{"batch_size", 1}}},
              {"simulation", {{"backend", "analytic"}}},
              {"contention", {{"enabled", false}}}};
}

config::Scenario with(Json doc, const std::vector<std::pair<std::string, Json>>& sets) {
  for (const auto& [path, value] : sets) config::set_path(doc, path, value, "test");
  return testing::scenario(doc);
}

// What the steady state's communication must take alone: per bucket, the hook's NCCL-stream
// kernels plus each collective at its model time (an all-gather: of N x the contribution).
double expected_comm_alone(const config::Scenario& sc) {
  const auto profile = gpu::build_compute_profile(sc);
  ddp::HookCosts costs{profile.peak_flops, sc.cluster.gpu.hbm_bandwidth, sc.compute, sc.cluster.world_size()};
  ddp::StepPlan plan;
  ddp::plan_steps(plan, sc, costs, 1, true);
  collectives::CollectiveModel model(sc.cluster, sc.collective);
  double total = 0;
  for (const auto& bc : plan.comm_steady)
    for (const auto& op : bc.chain) {
      if (op.kind == ddp::HookOp::Kind::KERNEL) total += op.kernel.seconds;
      if (op.kind == ddp::HookOp::Kind::ALLREDUCE) total += model.allreduce(op.bytes).total();
      if (op.kind == ddp::HookOp::Kind::ALLGATHER) total += model.allgather(op.bytes * sc.cluster.world_size()).total();
    }
  return total;
}

TEST(HookAndNcclKnobs, QuantizedBucketsAreAllGatheredThroughTheEngine) {
  const auto plain = testing::scenario(base_doc());
  const auto q8 = with(base_doc(), {{"ddp.comm_hook", "quantize_per_tensor"}});
  const auto q1 = with(base_doc(), {{"ddp.comm_hook", "quantize_per_tensor"}, {"ddp.quantization.bits", 1}});
  const auto pc = with(base_doc(), {{"ddp.comm_hook", "quantize_per_channel"}});
  auto r = testing::simulate_in_children({plain, q8, q1, pc});
  EXPECT_EQ(r[1]["comm_hook"], "quantize_per_tensor");
  for (size_t i = 0; i < 4; ++i) {
    const auto& sc = i == 0 ? plain : i == 1 ? q8 : i == 2 ? q1 : pc;
    const double want = expected_comm_alone(sc);
    EXPECT_NEAR(r[i]["comm_alone_s"].get<double>(), want, 1e-9 * want) << i;
  }
  // Ring closed forms: an all-gather of 8 x b bytes is base + one phase latency + 7/8 x 8b / B; the
  // all-reduce of the float32 bucket (4b) is base + two + 2 x 7/8 x 4b / B: the same bytes on the
  // wire at 8 bits, an eighth of them at 1 bit.
  const collectives::CollectiveModel m(plain.cluster, plain.collective);
  const double b = 4 << 20;  // one layer's uint8 codes
  const auto ar = m.allreduce(4 * b), ag = m.allgather(8 * b);
  EXPECT_NEAR(ag.reduce_scatter.transfer, ar.reduce_scatter.transfer + ar.all_gather.transfer, 1e-15);
  EXPECT_NEAR(ag.reduce_scatter.latency, ar.all_gather.latency, 1e-15);
  EXPECT_EQ(ag.all_gather.total(), 0.0);
  EXPECT_NEAR(m.allgather(b).reduce_scatter.transfer * 8, ag.reduce_scatter.transfer, 1e-15);
  // 1 bit moves less than 8 bits; PyTorch's per-channel hook pays its Python loops.
  EXPECT_LT(r[2]["comm_alone_s"].get<double>(), r[1]["comm_alone_s"].get<double>());
  EXPECT_GT(r[3]["comm_alone_s"].get<double>(), r[1]["comm_alone_s"].get<double>());
}

TEST(HookAndNcclKnobs, QuantizeTraceShowsAllGathers) {
  auto sc = with(base_doc(), {{"ddp.comm_hook", "quantize_per_tensor"}});
  const auto rep = engine::simulate(sc);
  int gathers = 0;
  for (const auto& e : rep.trace)
    if (e.category == "allgather") {
      ++gathers;
      EXPECT_EQ(e.track, 1);
    }
  // Two all-gathers per bucket (scale and zero point, then the codes), in both iterations.
  EXPECT_EQ(gathers, 2 * static_cast<int>(rep.iteration1.buckets.size() + rep.steady.buckets.size()));
}

// One node of 8 A100-class GPUs on NVSwitch, NCCL's model, 8 layers of 36 Mi float32 parameters
// (144 MiB each) in buckets of up to 1200 MiB: ring all-reduces large enough for NCCL_BUFFSIZE.
Json nccl_doc() {
  Json doc = base_doc();
  doc["model"] = testing::synthetic_model(8, 36 << 20, 1e-3, 2e-3);
  doc["cluster"] = testing::cluster(1, 8, testing::link("nv", "nvlink", "240GBps", "3.4us"), Json());
  doc["collective"] = {{"model", "nccl"}, {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}};
  doc["ddp"] = {{"bucket_cap_mb", 1200}};
  return doc;
}

TEST(HookAndNcclKnobs, BuffsizeAndNthreadsReachTheNcclModel) {
  const auto def = testing::scenario(nccl_doc());
  const auto b8 = with(nccl_doc(), {{"collective.NCCL_BUFFSIZE", 8388608}});
  const auto b4 = with(nccl_doc(), {{"collective.NCCL_BUFFSIZE", 4194304}});
  const auto t256 = with(nccl_doc(), {{"collective.NCCL_NTHREADS", 256}});
  EXPECT_EQ(b8.collective.nccl_buffsize, 8388608.0);
  EXPECT_EQ(t256.collective.nccl_nthreads, 256);
  auto r = testing::simulate_in_children({def, b8, b4});
  // Larger chunks: fewer slices, each paying the hop sync: less time for these buckets.
  EXPECT_LT(r[1]["comm_alone_s"].get<double>(), r[0]["comm_alone_s"].get<double>());
  EXPECT_EQ(r[2]["comm_alone_s"], r[0]["comm_alone_s"]);  // 4 MiB is the default
  EXPECT_NEAR(r[1]["comm_alone_s"].get<double>(), expected_comm_alone(b8), 1e-9);
}

TEST(HookAndNcclKnobs, BadValuesExitTwoNamingPathAndWhatIsAllowed) {
  auto r = testing::run_cli("run --set collective.NCCL_NTHREADS=100 -q");
  EXPECT_TRUE(testing::refused_with(r, {"/collective/NCCL_NTHREADS", "multiple of 32"}));
  r = testing::run_cli("run --set collective.NCCL_BUFFSIZE=1000000 -q");
  EXPECT_TRUE(testing::refused_with(r, {"/collective/NCCL_BUFFSIZE: 1000000"}));
  r = testing::run_cli("run --set ddp.quantization.bits=3 -q");
  EXPECT_TRUE(testing::refused_with(r, {"/ddp/quantization/bits: 3"}));
  r = testing::run_cli("collective --cluster dgx-a100 --nthreads 48");
  EXPECT_TRUE(testing::refused_with(r, {"--nthreads: 48"}));
  r = testing::run_cli("collective --cluster dgx-a100 --buffsize 8M -b 4G -e 4G");
  EXPECT_EQ(r.code, 0) << r.out;
}

}  // namespace
}  // namespace ddpsim
