// report::prediction: the likely band and its basis, worked out by hand from the validation
// tables in report/prediction.cpp (docs/accuracy.md, "The prediction band").
#include "report/prediction.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "collectives/validated.hpp"
#include "report/report.hpp"

namespace ddpsim::report {
namespace {

TEST(Prediction, EstimatedComputeWidensTheBandByItsErrorsOnTheComputeTimeOnly) {
  // step 100 ms, compute only 60 ms, 8 GPUs, host dispatch a fifth of the compute. Compute:
  // truth/predicted - 1 in [-22.8 %, +33.6 %] on the 60 ms; DDP: [1/1.069 - 1 = -6.45463 %,
  // 1/(1 - 0.076) - 1 = 8.22511 %] on the 100 ms.
  const Prediction p = prediction(0.100, 0.060, "estimated (per-kernel model)", 1.0, 8, 0.2);
  EXPECT_NEAR(p.low_s, 0.100 - 0.060 * 0.228 + 0.100 * (1 / 1.069 - 1), 1e-12);   // 79.8654 ms
  EXPECT_NEAR(p.high_s, 0.100 + 0.060 * 0.336 + 0.100 * (1 / 0.924 - 1), 1e-12);  // 128.385 ms
  EXPECT_EQ(p.summary, "compute estimated, DDP simulated");
  ASSERT_EQ(p.parts.size(), 2u);
  EXPECT_EQ(p.parts[0].kind, "estimated");
  EXPECT_NE(p.parts[0].validation.find("-22.8 .. +33.6 %"), std::string::npos);
  EXPECT_NE(p.parts[0].validation.find("29.3 %"), std::string::npos);
  // Both ends in the high end's unit, whole units from 10 up, else two significant digits; the
  // low end rounded down (79.8654 -> 79) and the high end up (128.385 -> 129), so that the printed
  // band holds what it stands for.
  EXPECT_EQ(prediction_text(p), "likely 79-129 ms: compute estimated, DDP simulated");
  Prediction small = p;
  small.low_s = 0.000512;
  small.high_s = 0.0009949;
  EXPECT_EQ(prediction_text(small), "likely 512-995 us: compute estimated, DDP simulated");
  small.low_s = 0.0021;
  small.high_s = 0.00346;
  EXPECT_EQ(prediction_text(small), "likely 2.1-3.5 ms: compute estimated, DDP simulated");
  // A band whose low end is the prediction itself (2.866 s) prints it inside: 2.8, not 2.9.
  small.low_s = 2.866;
  small.high_s = 3.04;
  EXPECT_EQ(prediction_text(small), "likely 2.8-3.1 s: compute estimated, DDP simulated");
}

TEST(Prediction, AHostHeavyEstimateReachesTheHostBoundEnd) {
  // The same step with its modelled host dispatch 60 % of its compute: the compute's high end is
  // +244.8 % (one-GPU steps that waited on their host), 0.100 + 0.060 x 2.448 + 0.100 x 8.22511 %
  // = 255.105 ms; the low end as before. Half exactly counts as host-heavy.
  const Prediction p = prediction(0.100, 0.060, "estimated (per-kernel model)", 1.0, 8, 0.6);
  EXPECT_NEAR(p.high_s, 0.100 + 0.060 * 2.448 + 0.100 * (1 / 0.924 - 1), 1e-12);
  EXPECT_NEAR(p.low_s, 0.100 - 0.060 * 0.228 + 0.100 * (1 / 1.069 - 1), 1e-12);
  EXPECT_EQ(prediction_text(p), "likely 79-256 ms: compute estimated (host-heavy), DDP simulated");
  EXPECT_NE(p.parts[0].validation.find("host-heavy (modelled host dispatch 60 % of the compute)"), std::string::npos);
  EXPECT_EQ(compute_part("estimated (per-kernel model)", 1.0, 0.5).high, 2.448);
  EXPECT_EQ(compute_part("estimated (per-kernel model)", 1.0, 0.4999).high, 0.336);
  // A measured or calibrated compute ignores the host share (it is measured with its host).
  EXPECT_EQ(prediction(0.100, 0.060, "measured on this CPU", 1.0, 8, 0.9).summary, "compute measured, DDP simulated");
  EXPECT_EQ(prediction(0.100, 0.060, "estimated (per-kernel model)", 1.25, 8, 0.9).summary,
            "compute calibrated, DDP simulated");
  // host_share of a report: (forward 20 ms + backward 16 ms) of host over one of two micro-steps'
  // 30 ms of compute = 1.2.
  StepReport r;
  r.steady.step_time_s = 0.100;
  r.steady.compute_only_s = 0.060;
  r.steady.micro_steps = 2;
  r.compute_host_forward_s = 0.020;
  r.compute_host_backward_s = 0.016;
  EXPECT_NEAR(host_share(r), 1.2, 1e-12);
  // The basis keeps the label whatever stands in for the communication part.
  r.compute_provenance = "estimated (per-kernel model)";
  r.compute_scale = 1.0;
  r.world_size = 8;
  r.fsdp = "FSDP2 fully_shard FULL_SHARD";
  EXPECT_EQ(prediction(r).summary, "compute estimated (host-heavy), FSDP simulated (not validated)");
  EXPECT_NEAR(prediction(r).host_share, 1.2, 1e-12);
  r.fsdp.clear();
  r.data_parallel = DataParallelReport{};
  r.world_size = 1;
  EXPECT_EQ(prediction(r).summary, "compute estimated (host-heavy), DataParallel simulated");
  r.compute_host_forward_s = r.compute_host_backward_s = 0;
  EXPECT_EQ(host_share(r), 0.0);
}

// A 100 ms step of 60 ms of estimated compute on eight GPUs (the figures of the tests below).
StepReport estimated_step_on_8_gpus() {
  StepReport r;
  r.steady.step_time_s = 0.100;
  r.steady.compute_only_s = 0.060;
  r.compute_provenance = "estimated (per-kernel model)";
  r.compute_scale = 1.0;
  r.world_size = 8;
  return r;
}

TEST(Prediction, FsdpSaysItsCommunicationIsNotValidated) {
  // The same figures as above under FSDP: the same band (DDP's stands in), named for what it is.
  StepReport r = estimated_step_on_8_gpus();
  r.fsdp = "FSDP2 fully_shard FULL_SHARD";
  const Prediction p = prediction(r);
  EXPECT_NEAR(p.low_s, 0.100 - 0.060 * 0.228 + 0.100 * (1 / 1.069 - 1), 1e-12);
  EXPECT_NEAR(p.high_s, 0.100 + 0.060 * 0.336 + 0.100 * (1 / 0.924 - 1), 1e-12);
  EXPECT_EQ(p.summary, "compute estimated, FSDP simulated (not validated)");
  ASSERT_EQ(p.parts.size(), 2u);
  EXPECT_EQ(p.parts[1].part, "fsdp");
  EXPECT_EQ(p.parts[1].validation.rfind("no FSDP step time measured in this project", 0), 0u);
}

TEST(Prediction, DataParallelSaysItIsNotValidatedAndAtOneGpuHasNoCommunicationPart) {
  StepReport r = estimated_step_on_8_gpus();
  r.data_parallel = DataParallelReport{};
  Prediction p = prediction(r);
  // Eight GPUs: DDP's band stands in, as for FSDP.
  EXPECT_NEAR(p.low_s, 0.100 - 0.060 * 0.228 + 0.100 * (1 / 1.069 - 1), 1e-12);
  EXPECT_NEAR(p.high_s, 0.100 + 0.060 * 0.336 + 0.100 * (1 / 0.924 - 1), 1e-12);
  EXPECT_EQ(p.summary, "compute estimated, DataParallel simulated (not validated)");
  EXPECT_EQ(p.parts[1].part, "data_parallel");
  EXPECT_EQ(p.parts[1].validation.rfind("no DataParallel measurement in this project", 0), 0u);
  // One GPU: the compute part alone, 0.100 - 0.060 x 0.228 .. 0.100 + 0.060 x 0.336.
  r.world_size = 1;
  p = prediction(r);
  EXPECT_NEAR(p.low_s, 0.100 - 0.060 * 0.228, 1e-12);
  EXPECT_NEAR(p.high_s, 0.100 + 0.060 * 0.336, 1e-12);
  EXPECT_EQ(p.parts[1].low, 0.0);
  EXPECT_EQ(p.parts[1].high, 0.0);
  EXPECT_EQ(p.summary, "compute estimated, DataParallel simulated");
}

TEST(Prediction, MeasuredAndCalibratedComputeNarrowIt) {
  // Measured profile: [1/1.073 - 1, 1/0.922 - 1] = [-6.80336 %, +8.45987 %] on the compute.
  const Prediction m = prediction(0.100, 0.080, "measured on NVIDIA H100", 1.0, 2);
  EXPECT_NEAR(m.low_s, 0.100 + 0.080 * (1 / 1.073 - 1) + 0.100 * (1 / 1.069 - 1), 1e-12);
  EXPECT_NEAR(m.high_s, 0.100 + 0.080 * (1 / 0.922 - 1) + 0.100 * (1 / 0.924 - 1), 1e-12);
  // Calibrated to a measured single-GPU step: the compute adds nothing; the band is DDP's alone.
  const Prediction c = prediction(0.100, 0.080, "estimated (per-kernel model)", 1.3, 2);
  EXPECT_EQ(c.parts[0].kind, "calibrated");
  EXPECT_NEAR(c.low_s, 0.100 / 1.069, 1e-12);
  EXPECT_NEAR(c.high_s, 0.100 / 0.924, 1e-12);
}

TEST(Prediction, OneGpuUsesTheOneGpuDdpTableAndTransferredTheEstimatesOne) {
  const Prediction p = prediction(0.050, 0.050, "transferred from a100-sxm4-80gb (per-kernel scaling)", 1.0, 1);
  EXPECT_EQ(p.parts[0].kind, "transferred");
  EXPECT_NEAR(p.low_s, 0.050 * (1 - 0.228), 1e-12);
  EXPECT_NEAR(p.high_s, 0.050 * (1 + 0.336 + 0.056), 1e-12);
}

TEST(Prediction, TheJsonCarriesTheBandTheBasisAndTheResolution) {
  const Prediction p = prediction(0.100, 0.060, "estimated (per-kernel model)", 1.0, 8);
  const core::Json j = prediction_json(p);
  ASSERT_TRUE(j["band_s"].is_array());
  EXPECT_DOUBLE_EQ(j["band_s"][0].get<double>(), p.low_s);
  EXPECT_DOUBLE_EQ(j["band_s"][1].get<double>(), p.high_s);
  EXPECT_EQ(j["basis"], "compute estimated, DDP simulated");
  EXPECT_DOUBLE_EQ(j["resolution"].get<double>(), 0.034);
  EXPECT_DOUBLE_EQ(j["host_share"].get<double>(), 0.0);  // no host figures given
  EXPECT_EQ(j["parts"].size(), 2u);
}

TEST(Prediction, HeldOutCollectiveErrorsGrowWithNodesLinearInLog2) {
  // InfiniBand class: 11 % up to 4 nodes, 24 % at 8, 33 % at 128, flat beyond; at 16 nodes a
  // quarter of the way from 8 to 128 in log2: 0.24 + (4 - 3) / (7 - 3) x 0.09 = 0.2625.
  EXPECT_DOUBLE_EQ(collectives::held_out_error("", 2), 0.11);
  EXPECT_DOUBLE_EQ(collectives::held_out_error("", 4), 0.11);
  EXPECT_NEAR(collectives::held_out_error("", 16), 0.2625, 1e-12);
  EXPECT_NEAR(collectives::held_out_error("", 128), 0.33, 1e-12);
  EXPECT_DOUBLE_EQ(collectives::held_out_error("", 1024), 0.33);
  // EFA (p5): 11 / 25 / 38 / 59 / 124 % at 2 / 4 / 8 / 16 / 32 nodes; at 6 nodes
  // 0.25 + (log2 6 - 2) x 0.13 = 0.326050.
  EXPECT_DOUBLE_EQ(collectives::held_out_error("aws-ofi-nccl/p5", 2), 0.11);
  EXPECT_NEAR(collectives::held_out_error("aws-ofi-nccl/p5en", 6), 0.25 + (std::log2(6.0) - 2) * 0.13, 1e-12);
  EXPECT_DOUBLE_EQ(collectives::held_out_error("aws-ofi-nccl/p5", 32), 1.24);
  EXPECT_DOUBLE_EQ(collectives::held_out_error("aws-ofi-nccl/p5", 256), 1.24);
  // p4d (A100 over EFA): 31-37 % at 2-4 nodes, then the p5 growth.
  EXPECT_DOUBLE_EQ(collectives::held_out_error("aws-ofi-nccl/p4d", 2), 0.37);
  EXPECT_DOUBLE_EQ(collectives::held_out_error("aws-ofi-nccl/p4d", 32), 1.24);
}

TEST(Prediction, HeldOutTextQuotesEveryFigureTheBandUses) {
  // validated.cpp keeps the held-out figures twice: the Point tables held_out_error interpolates
  // and the sentence trust() prints. Every measured point's figure must appear in the sentence of
  // its class, so that a change to one side cannot leave the other stale.
  const auto quoted = [](const std::string& cluster, const std::string& plugin, int nodes) {
    const collectives::Trust t = collectives::trust(cluster, "h100-sxm", nodes, plugin);
    const std::string pct = std::to_string(std::lround(100 * collectives::held_out_error(plugin, nodes)));
    // The list in parentheses, not the "measured N % there" the figure itself fills in.
    const auto open = t.held_out.find('(');
    const std::string list = open == std::string::npos ? "" : t.held_out.substr(open);
    return list.find(" " + pct + " %") != std::string::npos || list.find(" " + pct + "/") != std::string::npos ||
           list.find("/" + pct + "/") != std::string::npos || list.find("/" + pct + " %") != std::string::npos ||
           list.find("-" + pct + " %") != std::string::npos;
  };
  for (int n : {8, 128}) EXPECT_TRUE(quoted("my-ib-cluster", "", n)) << n << " nodes";
  for (int n : {4, 8, 16, 32}) EXPECT_TRUE(quoted("my-efa-cluster", "aws-ofi-nccl/p5", n)) << n << " nodes";
  EXPECT_TRUE(quoted("my-efa-cluster", "aws-ofi-nccl/p4d", 2));
}

CommBasis comm_on(const std::string& cluster, const std::string& gpu, int nodes, const std::string& plugin = "") {
  CommBasis c;
  c.communicates = true;
  c.cluster = cluster;
  c.gpu = gpu;
  c.nodes = nodes;
  c.net_plugin = plugin;
  return c;
}

TEST(Prediction, TheCollectivesPartRestsOnTheClosestTableAndTheHeldOutGrowthBeyondIt) {
  // dgx-h100 at 2 nodes: its own validated table (7.3 %), nothing extrapolated: [-0.073 / 1.073, 0.073].
  BandPart k = collectives_part(comm_on("dgx-h100", "h100-sxm", 2));
  EXPECT_EQ(k.part, "collectives");
  EXPECT_EQ(k.kind, "modelled");
  EXPECT_NEAR(k.high, 0.073, 1e-12);
  EXPECT_NEAR(k.low, -0.073 / 1.073, 1e-12);
  // 8 nodes: beyond its largest table (4 nodes, 3.5 %): the held-out 24 %.
  k = collectives_part(comm_on("dgx-h100", "h100-sxm", 8));
  EXPECT_EQ(k.kind, "extrapolated");
  EXPECT_NEAR(k.high, 0.24, 1e-12);
  EXPECT_NE(k.validation.find("held-out tables measured 24 % there"), std::string::npos);
  // aws-p5 at 2 nodes: another preset (dgx-h100's 2-node table, 7.3 %): EFA's held-out 11 %.
  k = collectives_part(comm_on("aws-p5", "h100-sxm", 2, "aws-ofi-nccl/p5"));
  EXPECT_EQ(k.kind, "extrapolated");
  EXPECT_NEAR(k.high, 0.11, 1e-12);
  // ... at 32 nodes: 124 %, the low end -1.24 / 2.24 (a model as far too slow as that).
  k = collectives_part(comm_on("aws-p5", "h100-sxm", 32, "aws-ofi-nccl/p5"));
  EXPECT_NEAR(k.high, 1.24, 1e-12);
  EXPECT_NEAR(k.low, -1.24 / 2.24, 1e-12);
  // GB200 NVL72 at 20 racks: its own table says 171 %, more than any growth.
  k = collectives_part(comm_on("gb200-nvl72", "gb200", 20));
  EXPECT_EQ(k.kind, "modelled");
  EXPECT_NEAR(k.high, 1.71, 1e-12);
  // One node of a GPU no table has: the worst one-node table (GB200 NVL72, one rack, 13.4 %).
  k = collectives_part(comm_on("pcie-l40sx8", "l40s", 1));
  EXPECT_EQ(k.kind, "extrapolated");
  EXPECT_NEAR(k.high, 0.134, 1e-12);
  EXPECT_NE(k.validation.find("no validated all_reduce_perf table"), std::string::npos);
  // The trust line (run report, `collective` header) says the same.
  EXPECT_NE(
      collectives::trust_line("aws-p5", "h100-sxm", 32, "aws-ofi-nccl/p5").find("held-out tables measured 124 % there"),
      std::string::npos);
  EXPECT_EQ(collectives::trust_line("dgx-h100", "h100-sxm", 2).find("held-out"), std::string::npos);
  EXPECT_NE(collectives::trust_line("dgx-h100", "h100-sxm", 8).find("8 nodes: held-out tables measured 24 % there"),
            std::string::npos);
  // Calibrated: calibrate --holdout's worst, 4.8 %; the plain ring says so; measured or one GPU: none.
  CommBasis c = comm_on("dgx-a100", "a100-sxm4-80gb", 2);
  c.calibrated = true;
  EXPECT_EQ(collectives_part(c).kind, "calibrated");
  EXPECT_NEAR(collectives_part(c).high, 0.048, 1e-12);
  EXPECT_NE(collectives_part(c).validation.find("not recorded in this cluster file"), std::string::npos);
  c.calibrated_nodes = 2;  // run at the log's node count: the fit's own figure
  EXPECT_NEAR(collectives_part(c).high, 0.048, 1e-12);
  c.nodes = 16;  // beyond it: InfiniBand's held-out 26.25 % at 16 nodes
  EXPECT_EQ(collectives_part(c).kind, "calibrated, extrapolated");
  EXPECT_NEAR(collectives_part(c).high, 0.2625, 1e-12);
  c.nodes = 2;
  c.calibrated_nodes = 0;
  c.calibrated = false;
  c.ring = true;
  EXPECT_EQ(collectives_part(c).kind, "extrapolated (plain ring)");
  c.measured = true;
  EXPECT_TRUE(collectives_part(c).part.empty());
  EXPECT_TRUE(collectives_part(CommBasis{}).part.empty());
}

TEST(Prediction, TheCollectivesPartActsOnTheBusyAndExposedCommunication) {
  // 100 ms step, 60 ms estimated compute, 8 GPUs on aws-p5 x32 (x = 1.24), communication 30 ms
  // busy of which 10 ms exposed: low = 100 - 60 x 0.228 + 100 x (1/1.069 - 1) - 10 x 1.24/2.24,
  // high = 100 + 60 x 0.336 + 100 x (1/0.924 - 1) + 30 x 1.24.
  CommBasis c = comm_on("aws-p5", "h100-sxm", 32, "aws-ofi-nccl/p5");
  c.busy_s = 0.030;
  c.exposed_s = 0.010;
  const Prediction p = prediction(0.100, 0.060, "estimated (per-kernel model)", 1.0, 256, 0.0, c);
  EXPECT_NEAR(p.low_s, 0.100 - 0.060 * 0.228 + 0.100 * (1 / 1.069 - 1) - 0.010 * 1.24 / 2.24, 1e-12);
  EXPECT_NEAR(p.high_s, 0.100 + 0.060 * 0.336 + 0.100 * (1 / 0.924 - 1) + 0.030 * 1.24, 1e-12);
  EXPECT_EQ(p.summary, "compute estimated, DDP simulated, collectives extrapolated");
  ASSERT_EQ(p.parts.size(), 3u);
  const core::Json j = prediction_json(p);
  EXPECT_EQ(j["parts"][2]["part"], "collectives");
  EXPECT_DOUBLE_EQ(j["parts"][2]["reach_s"][0].get<double>(), 0.010);
  EXPECT_DOUBLE_EQ(j["parts"][2]["reach_s"][1].get<double>(), 0.030);
  // From a report: the steady state's comm_busy_s and exposed_comm_s, FSDP's label kept.
  StepReport r = estimated_step_on_8_gpus();
  r.comm_basis = comm_on("dgx-h100", "h100-sxm", 2);
  r.steady.comm_busy_s = 0.020;
  r.steady.exposed_comm_s = 0.005;
  r.fsdp = "FSDP2 fully_shard FULL_SHARD";
  const Prediction q = prediction(r);
  EXPECT_NEAR(q.high_s, 0.100 + 0.060 * 0.336 + 0.100 * (1 / 0.924 - 1) + 0.020 * 0.073, 1e-12);
  EXPECT_NEAR(q.low_s, 0.100 - 0.060 * 0.228 + 0.100 * (1 / 1.069 - 1) - 0.005 * 0.073 / 1.073, 1e-12);
  EXPECT_EQ(q.summary, "compute estimated, FSDP simulated (not validated), collectives modelled");
  EXPECT_EQ(band_text(0.466191, 0.970556), "466-971 ms");  // whole ms: the low end down, the high end up
}

TEST(Prediction, AllReducesTakeTheTablesErrorInTheirSizeClass) {
  using collectives::Func;
  const double MiB = 1024.0 * 1024.0;
  // dgx1-v100 at one node rests on its own table: 10.2 % at >= 1 MiB, 22.8 % below. With 40 % of
  // the all-reduce time below 1 MiB: x = 0.6 x 0.102 + 0.4 x 0.228 = 0.1524.
  CommBasis c = comm_on("dgx1-v100", "v100-sxm2-32gb", 1);
  c.by_function.add(Func::ALL_REDUCE, 8 * MiB, 0.006);
  c.by_function.add(Func::ALL_REDUCE, 0.5 * MiB, 0.004);
  BandPart k = collectives_part(c);
  EXPECT_NEAR(k.high, 0.1524, 1e-12);
  EXPECT_NEAR(k.low, -0.1524 / 1.1524, 1e-12);
  EXPECT_NE(k.validation.find("40 % of its all-reduce time in calls below 1 MiB, 22.8 % there"), std::string::npos)
      << k.validation;
  // Exactly 1 MiB is the tables' 1-64 MiB class (the V100 table: 10.2 % there), exactly 64 MiB
  // the >= 64 MiB one (10.0 %).
  c = comm_on("dgx1-v100", "v100-sxm2-32gb", 1);
  c.by_function.add(Func::ALL_REDUCE, MiB, 0.004);
  EXPECT_NEAR(collectives_part(c).high, 0.102, 1e-12);
  c = comm_on("dgx1-v100", "v100-sxm2-32gb", 1);
  c.by_function.add(Func::ALL_REDUCE, 64 * MiB, 0.004);
  EXPECT_NEAR(collectives_part(c).high, 0.100, 1e-12);
  // The A100 NVSwitch table: 8.8 % at >= 1 MiB, but 22.4 % at 1-64 MiB and 3.6 % above: DDP's
  // 25 MiB buckets take 22.4 %.
  c = comm_on("dgx-a100", "a100-sxm4-80gb", 1);
  c.by_function.add(Func::ALL_REDUCE, 25 * MiB, 0.003);
  c.by_function.add(Func::ALL_REDUCE, 256 * MiB, 0.001);
  k = collectives_part(c);
  EXPECT_NEAR(k.high, 0.75 * 0.224 + 0.25 * 0.036, 1e-12);
  EXPECT_NE(k.validation.find("75 % of its all-reduce time in calls at 1-64 MiB, 22.4 % there; 25 % of its "
                              "all-reduce time in calls at >= 64 MiB, 3.6 % there"),
            std::string::npos)
      << k.validation;
  // A table without rows below 1 MiB (GB200 NVL72, one rack: 13.4 %) keeps its one figure.
  c = comm_on("gb200-nvl72", "gb200", 1);
  c.by_function.add(Func::ALL_REDUCE, 0.25 * MiB, 0.001);
  EXPECT_NEAR(collectives_part(c).high, 0.134, 1e-12);
  // No table for the class: the worst one-node tables by size class, 22.8 % below 1 MiB (V100
  // cube mesh), 22.4 % at 1-64 MiB (A100 NVSwitch), 13.4 % at >= 64 MiB (GB200 NVL72, one rack,
  // whose only figure stands in for every class).
  c = comm_on("my-cluster", "my-gpu", 1);
  c.by_function.add(Func::ALL_REDUCE, 2 * MiB, 0.003);
  c.by_function.add(Func::ALL_REDUCE, 0.5 * MiB, 0.003);
  EXPECT_NEAR(collectives_part(c).high, 0.5 * 0.224 + 0.5 * 0.228, 1e-12);
  c.by_function.add(Func::ALL_REDUCE, 64 * MiB, 0.006);
  EXPECT_NEAR(collectives_part(c).high, 0.25 * 0.224 + 0.25 * 0.228 + 0.5 * 0.134, 1e-12);
  // Where the held-out growth exceeds both (dgx-h100 at 16 nodes: 26.25 %), the share changes nothing.
  c = comm_on("dgx-h100", "h100-sxm", 16);
  c.by_function.add(Func::ALL_REDUCE, 2 * MiB, 0.003);
  c.by_function.add(Func::ALL_REDUCE, 0.5 * MiB, 0.007);
  EXPECT_NEAR(collectives_part(c).high, 0.2625, 1e-12);
  // Nothing classed (no collective records): the all-reduce's >= 1 MiB figure.
  EXPECT_NEAR(collectives_part(comm_on("dgx1-v100", "v100-sxm2-32gb", 1)).high, 0.102, 1e-12);

  // From a report: the steady state's comm_by_function, which the engine fills per collective.
  StepReport r = estimated_step_on_8_gpus();
  r.comm_basis = comm_on("dgx1-v100", "v100-sxm2-32gb", 1);
  r.steady.comm_busy_s = 0.010;
  r.steady.comm_by_function.add(Func::ALL_REDUCE, 0.5 * MiB, 0.001);
  r.steady.comm_by_function.add(Func::ALL_REDUCE, 1.5 * MiB, 0.001);
  r.steady.comm_by_function.add(Func::ALL_REDUCE, 8 * MiB, 0.002);
  // 1 ms of 4 below 1 MiB: x = 0.75 x 0.102 + 0.25 x 0.228.
  EXPECT_NEAR(prediction(r).parts[2].high, 0.75 * 0.102 + 0.25 * 0.228, 1e-12);
}

// The other collectives rest on their own tables (validated.cpp): on one 8 x A100 machine
// (superbenchmark's fixture) all_gather_perf 27.2 % at >= 1 MiB / 13.3 % below, reduce_scatter_perf
// 15.9 / 12.4 %, broadcast_perf 10.7 / 12.8 %; on one H100 node reduce_scatter_perf with the ring
// forced, 2.4 % (>= 128 MiB rows only).
TEST(Prediction, OtherCollectivesTakeTheirOwnTables) {
  using collectives::Func;
  const double MiB = 1024.0 * 1024.0;
  // dgx-a100: its preset has an all-gather and a reduce-scatter table (by size class: all_gather
  // 13.3 % below 1 MiB, 87.8 % at 1-64 MiB, 10.2 % above; reduce_scatter 4.3 % at >= 64 MiB).
  // FSDP-like time: all-gathers 3 ms at 32 MiB and 1 ms at 0.5 MiB, reduce-scatters 4 ms at
  // 128 MiB: x = (3 x 0.878 + 1 x 0.133 + 4 x 0.043) / 8 = 2.939 / 8.
  CommBasis c = comm_on("dgx-a100", "a100-sxm4-80gb", 1);
  c.by_function.add(Func::ALL_GATHER, 32 * MiB, 0.003);
  c.by_function.add(Func::ALL_GATHER, 0.5 * MiB, 0.001);
  c.by_function.add(Func::REDUCE_SCATTER, 128 * MiB, 0.004);
  BandPart k = collectives_part(c);
  EXPECT_NEAR(k.high, 2.939 / 8, 1e-12);
  EXPECT_EQ(k.kind, "modelled");
  EXPECT_NE(k.validation.find("all-gather 50 % of the collective time: closest validated all_gather_perf table"),
            std::string::npos)
      << k.validation;
  EXPECT_NE(k.validation.find("reduce-scatter 50 % of the collective time: closest validated reduce_scatter_perf"),
            std::string::npos)
      << k.validation;
  EXPECT_NE(k.validation.find("weighted by time: 36.7 %"), std::string::npos) << k.validation;

  // dgx-h100 has no all_gather_perf table: per size class the larger of its all-reduce's figures
  // (2.6 % at >= 1 MiB; 10.5 % below, 4.8 % at 1-64 MiB, 1.3 % above) and the worst one-node
  // all-gather table's (27.2 %; 13.3 %, 87.8 %, 10.2 %); its reduce-scatter takes the preset's own
  // forced-ring table (2.4 %, rows at >= 128 MiB only: 2.4 % in every class).
  const collectives::Trust ag = collectives::trust("dgx-h100", "h100-sxm", 1, "", Func::ALL_GATHER);
  EXPECT_EQ(ag.table, nullptr);
  ASSERT_NE(ag.fallback, nullptr);
  EXPECT_EQ(ag.fallback->func, Func::ALL_REDUCE);
  EXPECT_EQ(ag.fallback->preset, std::string("dgx-h100"));
  ASSERT_NE(ag.worst, nullptr);
  EXPECT_NEAR(ag.error, 0.272, 1e-12);
  EXPECT_NEAR(ag.error_small, 0.133, 1e-12);
  EXPECT_NEAR(ag.error_mid, 0.878, 1e-12);
  EXPECT_NEAR(ag.error_big, 0.102, 1e-12);
  EXPECT_NEAR(ag.at(0.5 * MiB), 0.133, 1e-12);
  EXPECT_NEAR(ag.at(63.9 * MiB), 0.878, 1e-12);
  EXPECT_NEAR(ag.at(64 * MiB), 0.102, 1e-12);
  EXPECT_TRUE(ag.leaves);
  c = comm_on("dgx-h100", "h100-sxm", 1);
  c.by_function.add(Func::ALL_GATHER, 32 * MiB, 0.002);
  c.by_function.add(Func::REDUCE_SCATTER, 0.5 * MiB, 0.002);
  k = collectives_part(c);
  EXPECT_NEAR(k.high, 0.5 * 0.878 + 0.5 * 0.024, 1e-12);
  EXPECT_EQ(k.kind, "extrapolated");  // the all-gather has no table of its class
  EXPECT_NE(k.validation.find("no validated all_gather_perf table for this cluster class: 27.2 % at >= 1 MiB"),
            std::string::npos)
      << k.validation;
  const std::string line = collectives::trust_line("dgx-h100", "h100-sxm", 1, "", Func::ALL_GATHER);
  EXPECT_NE(line.find("no validated all_gather_perf table for this cluster class (dgx-h100, h100-sxm)"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("27.2 % at >= 1 MiB, 13.3 % below; beside the all-reduce's: closest validated table: H100"),
            std::string::npos)
      << line;

  // A calibrated cluster: the fit checks all-reduces (4.8 %); its all-gathers take their tables'
  // figures. A calibrated A100 file (class match by GPU, a100-sxm4-40gb: the superbenchmark
  // all_gather_perf, 10.2 % at >= 64 MiB): half the time all-reduce, half 128 MiB all-gathers:
  // x = 0.5 x 0.048 + 0.5 x 0.102.
  CommBasis cal = comm_on("my-calibrated-a100", "a100-sxm4-40gb", 1);
  cal.calibrated = true;
  cal.calibrated_nodes = 1;
  cal.by_function.add(Func::ALL_REDUCE, 32 * MiB, 0.002);
  cal.by_function.add(Func::ALL_GATHER, 128 * MiB, 0.002);
  k = collectives_part(cal);
  EXPECT_EQ(k.kind, "calibrated");
  EXPECT_NEAR(k.high, 0.5 * 0.048 + 0.5 * 0.102, 1e-12);
  EXPECT_NE(k.validation.find("50 % of the collective time is not an all-reduce (all-gather), which the fit does not "
                              "check: 10.2 % there"),
            std::string::npos)
      << k.validation;

  // A broadcast on a cluster whose all-reduce table is worse below 1 MiB than the broadcast table:
  // azure-nc12s-v3 (V100 PCIe: 4.0 % / 16.6 %) against broadcast_perf's 10.7 % / 12.8 %.
  const collectives::Trust bc = collectives::trust("azure-nc12s-v3", "v100-pcie-16gb", 1, "", Func::BROADCAST);
  EXPECT_NEAR(bc.error, 0.107, 1e-12);
  EXPECT_NEAR(bc.error_small, 0.166, 1e-12);

  // p4d at 2 nodes: no p4d all-gather table; the same GPU's (a100-sxm4-40gb) superbenchmark table,
  // then the held-out EFA p4dn figure at 2 nodes (37 %) where the run leaves it.
  const collectives::Trust p4d = collectives::trust("p4d", "a100-sxm4-40gb", 2, "aws-ofi-nccl/p4d", Func::ALL_GATHER);
  ASSERT_NE(p4d.table, nullptr);
  EXPECT_EQ(p4d.table->func, Func::ALL_GATHER);
  EXPECT_NEAR(p4d.error, 0.37, 1e-12);
}

}  // namespace
}  // namespace ddpsim::report
