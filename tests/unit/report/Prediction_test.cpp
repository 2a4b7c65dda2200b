// report::prediction: the likely band and its basis, worked out by hand from the validation
// tables in report/prediction.cpp (docs/accuracy.md, "The prediction band").
#include "report/prediction.hpp"

#include <gtest/gtest.h>

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
  EXPECT_EQ(p.parts[1].validation.rfind("no FSDP measurement in this project", 0), 0u);
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

}  // namespace
}  // namespace ddpsim::report
