// validate::compare_steps on hand-made measured and predicted cases (no simulation).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "validate/bench_results.hpp"
#include "validate/results_reader.hpp"

namespace ddpsim::validate {
namespace {

using core::Json;

Json predicted(double step, double ddp_overhead) {
  return {{"step_time_s", step}, {"exposed_comm_s", 0.0},    {"overlap_ratio", nullptr},      {"compute_only_s", step},
          {"num_buckets", 0},    {"buckets", Json::array()}, {"ddp_overhead_s", ddp_overhead}};
}

// A step plan of one case with what the file measured.
Plan one_case(int ranks, const std::string& label, const Json& measured) {
  Plan p;
  p.file = "r.json";
  p.mode = "step";
  p.ranks = ranks;
  StepCase c;
  c.label = label;
  c.measured = measured;
  p.steps.push_back(c);
  return p;
}

TEST(BenchResults, OneRankComparesDdpOverNoDdpMeasuredAndPredicted) {
  Plan p = one_case(1, "default", Json{{"step_time_s", 0.110}, {"no_ddp_step_time_s", 0.100}});
  // Measured: 110 / 100 - 1 = 10 %. Predicted: 105 ms with 5 ms of DDP's own work: 105 / 100 - 1 = 5 %.
  const auto r = compare_steps(p, {predicted(0.105, 0.005)}, 0.10);
  const Json& o = r.doc["cases"][0]["ddp_overhead"];
  EXPECT_NEAR(o["measured"].get<double>(), 0.10, 1e-12);
  EXPECT_NEAR(o["predicted"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(o["error_points"].get<double>(), -5.0, 1e-9);
  EXPECT_NEAR(r.doc["median_abs_ddp_overhead_error"].get<double>(), 0.05, 1e-12);
  EXPECT_NE(r.text.find("DDP over no DDP: measured 10.00 %, predicted 5.00 %"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("median |DDP-over-no-DDP error| 5.00 points over 1 case(s)"), std::string::npos) << r.text;
  // Step error (105 - 110) / 110 = -4.5 %: within 10 %.
  EXPECT_EQ(r.status, 0);
}

// The measured DDP cost's own interval from the run's paired steps (step k with DDP, step k
// without): ratios 110/100 112/100 108/100 111/100 109/100 120/100 - 1 = 10 12 8 11 9 20 %; six
// pairs give [min, max] = [8, 20] % at 96.875 %. The predicted 5 % lies outside, 10 % inside.
TEST(BenchResults, OneRankDdpCostHasTheIntervalOfItsPairedSteps) {
  Plan p = one_case(1, "default",
                    Json{{"step_time_s", 0.1105},
                         {"no_ddp_step_time_s", 0.100},
                         {"step_times_s", {0.110, 0.112, 0.108, 0.111, 0.109, 0.120}},
                         {"no_ddp_step_times_s", {0.1, 0.1, 0.1, 0.1, 0.1, 0.1}}});
  auto r = compare_steps(p, {predicted(0.105, 0.005)}, 0.10);
  const Json& oi = r.doc["cases"][0]["ddp_overhead"]["measured_interval"];
  EXPECT_NEAR(oi["low"].get<double>(), 0.08, 1e-12);
  EXPECT_NEAR(oi["high"].get<double>(), 0.20, 1e-12);
  EXPECT_NEAR(oi["coverage"].get<double>(), 0.96875, 1e-12);
  EXPECT_EQ(oi["pairs"].get<int>(), 6);
  EXPECT_FALSE(oi["prediction_inside"].get<bool>());
  EXPECT_NE(r.text.find("its 96.9 % interval over 6 paired steps: 8.00 .. 20.00 %; prediction outside it"),
            std::string::npos)
      << r.text;
  // 110 ms with 10 ms of DDP's work: 110 / 100 - 1 = 10 %, inside.
  r = compare_steps(p, {predicted(0.110, 0.010)}, 0.10);
  EXPECT_TRUE(r.doc["cases"][0]["ddp_overhead"]["measured_interval"]["prediction_inside"].get<bool>());
  // Unpaired (lengths differ) or without the no-DDP steps: the row, no interval.
  p.steps[0].measured["no_ddp_step_times_s"] = {0.1, 0.1};
  r = compare_steps(p, {predicted(0.105, 0.005)}, 0.10);
  EXPECT_TRUE(r.doc["cases"][0]["ddp_overhead"]["measured_interval"].is_null());
  EXPECT_EQ(r.text.find("paired steps"), std::string::npos) << r.text;
}

// The reader on a document that is no object (fuzz_validate, 2026-12-06: a bare number passed it
// without a word, and the caller then read fields from it): refused with the root path.
TEST(BenchResults, AResultsDocumentThatIsNoObjectIsRefused) {
  for (const Json& doc : {Json(6), Json::array({1}), Json("x"), Json(nullptr)}) {
    try {
      check_results(doc, "r.json");
      FAIL() << "expected core::ConfigError for " << doc.dump();
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("r.json: /: " + doc.dump() +
                                           " is not allowed; expected an object (a ddpbench-results/1 document)"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(BenchResults, WithoutNoDdpStepsOrWithSeveralRanksThereIsNoOverheadRow) {
  Plan p = one_case(1, "1", Json{{"step_time_s", 0.110}});
  auto r = compare_steps(p, {predicted(0.105, 0.005)}, 0.10);
  EXPECT_TRUE(r.doc["cases"][0]["ddp_overhead"].is_null());
  EXPECT_FALSE(r.doc.contains("median_abs_ddp_overhead_error"));
  // Two ranks: communication separates the two steps as well; no overhead row.
  p.ranks = 2;
  p.steps[0].measured["no_ddp_step_time_s"] = 0.100;
  r = compare_steps(p, {predicted(0.105, 0.005)}, 0.10);
  EXPECT_TRUE(r.doc["cases"][0]["ddp_overhead"].is_null());
}

// The slower half of the timed steps against the faster half (by hand): a GRU run that crossed a
// slow phase of the machine, steps 1086 1034 1000 703 690 699 ms: sorted halves 690 699 703 and
// 1000 1034 1086, medians 699 and 1034: 1034 / 699 = 1.4793. Fewer than four steps: 1.
TEST(BenchResults, TimedStepsInTwoSpeedsAreFlagged) {
  EXPECT_NEAR(halves_ratio({1.086, 1.034, 1.000, 0.703, 0.690, 0.699}), 1.034 / 0.699, 1e-12);
  // odd count: the middle one left out, halves {0.24, 0.25} and {0.26, 0.27}
  EXPECT_NEAR(halves_ratio({0.25, 0.26, 0.24, 0.25, 0.27}), 0.265 / 0.245, 1e-12);
  EXPECT_EQ(halves_ratio({0.3, 0.1, 0.2}), 1.0);
  Plan p = one_case(2, "default",
                    Json{{"step_time_s", 0.8517},
                         {"step_times_s", {1.086, 1.034, 1.000, 0.703, 0.690, 0.699}},
                         {"compute_only_times_s", {0.70, 0.71, 0.69, 0.70, 0.72, 0.70}}});
  auto r = compare_steps(p, {predicted(0.709, 0.0)}, 0.5);
  EXPECT_NEAR(r.doc["cases"][0]["slow_phase_ratio"].get<double>(), 1.034 / 0.699, 1e-12);
  EXPECT_NE(r.text.find("warning: the slower half of the timed steps took 1.48x the faster half"), std::string::npos)
      << r.text;
  // Steady steps (the shipped files' spread): no warning.
  p.steps[0].measured["step_times_s"] = {0.262, 0.259, 0.266, 0.258, 0.262, 0.261};
  r = compare_steps(p, {predicted(0.26, 0.0)}, 0.5);
  EXPECT_LT(r.doc["cases"][0]["slow_phase_ratio"].get<double>(), kSlowPhaseRatio);
  EXPECT_EQ(r.text.find("warning"), std::string::npos) << r.text;
}

// The measured median's interval (core::median_interval): six steps 255 258 259 261 262 266 ms
// give [min, max] = [255, 266] ms at 96.875 %; a prediction of 263 ms is inside it, one of 250 ms
// outside; the summary counts the cases inside.
TEST(BenchResults, EachCaseSaysWhetherThePredictionIsInsideTheMeasuredMediansInterval) {
  Plan p = one_case(2, "default",
                    Json{{"step_time_s", 0.2600}, {"step_times_s", {0.262, 0.259, 0.266, 0.255, 0.261, 0.258}}});
  StepCase second = p.steps[0];
  second.label = "1";
  p.steps.push_back(second);
  const auto r = compare_steps(p, {predicted(0.263, 0.0), predicted(0.250, 0.0)}, 0.5);
  const Json& a = r.doc["cases"][0]["measured_interval"];
  EXPECT_DOUBLE_EQ(a["low_s"].get<double>(), 0.255);
  EXPECT_DOUBLE_EQ(a["high_s"].get<double>(), 0.266);
  EXPECT_NEAR(a["coverage"].get<double>(), 0.96875, 1e-12);
  EXPECT_EQ(a["steps"].get<int>(), 6);
  EXPECT_TRUE(a["prediction_inside"].get<bool>());
  EXPECT_FALSE(r.doc["cases"][1]["measured_interval"]["prediction_inside"].get<bool>());
  EXPECT_EQ(r.doc["predictions_inside_measured_interval"]["inside"].get<int>(), 1);
  EXPECT_EQ(r.doc["predictions_inside_measured_interval"]["cases"].get<int>(), 2);
  // (255 / 260 - 1, 266 / 260 - 1) = (-1.9 %, +2.3 %)
  EXPECT_NE(r.text.find("measured median's 96.9 % interval over 6 steps: 255.000 ms .. 266.000 ms (-1.9 .. +2.3 %); "
                        "prediction inside it"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("prediction outside it"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("predictions inside the measured median's interval: 1 of 2 case(s)"), std::string::npos)
      << r.text;
  // -1.9 .. +2.3 % lies within the 50 % tolerance; at 2 % it does not: a warning, and the JSON says so.
  EXPECT_FALSE(a["wider_than_tolerance"].get<bool>());
  EXPECT_EQ(r.text.find("wider than"), std::string::npos) << r.text;
  const auto tight = compare_steps(p, {predicted(0.263, 0.0), predicted(0.250, 0.0)}, 0.02);
  EXPECT_TRUE(tight.doc["cases"][0]["measured_interval"]["wider_than_tolerance"].get<bool>());
  EXPECT_NE(tight.text.find("warning: the run pins its median only to that interval, wider than the 2 % tolerance: "
                            "time more steps (ddp_cpu_bench.py --iters, ddpbench -n)"),
            std::string::npos)
      << tight.text;
  // +2.3 % is within 3 %, -1.9 % too: no warning there.
  EXPECT_FALSE(compare_steps(p, {predicted(0.263, 0.0), predicted(0.250, 0.0)}, 0.03)
                   .doc["cases"][0]["measured_interval"]["wider_than_tolerance"]
                   .get<bool>());
  // Without timed steps: no interval and no summary line.
  const auto none = compare_steps(one_case(2, "default", Json{{"step_time_s", 0.26}}), {predicted(0.25, 0.0)}, 0.5);
  EXPECT_TRUE(none.doc["cases"][0]["measured_interval"].is_null());
  EXPECT_TRUE(none.doc["predictions_inside_measured_interval"].is_null());
  EXPECT_EQ(none.text.find("interval"), std::string::npos) << none.text;
}

// One DDP configuration measured twice in a run (ddp_cpu_bench.py's default cap and 25 MiB: the same
// buckets): 164 and 142 ms are 164 / 142 - 1 = 15.49 % apart, the predictions 140 and 141 ms
// 0.714 %. A third case with other buckets, and cases whose buckets differ in size, tensor count or
// limits, or that have none, are no repeat.
TEST(BenchResults, TheSameBucketsMeasuredTwiceAreTheRunsOwnRepeat) {
  const Json buckets =
      Json::array({Json{{"bytes", 1048576}, {"num_tensors", 3}}, Json{{"bytes", 15e6}, {"num_tensors", 40}}});
  const Json limits = Json::array({1048576, 26214400});
  Plan p = one_case(2, "default", Json{{"step_time_s", 0.164}, {"buckets", buckets}, {"limits_bytes", limits}});
  StepCase other = p.steps[0];
  other.label = "1";
  other.measured =
      Json{{"step_time_s", 0.150}, {"buckets", Json::array({Json{{"bytes", 1048576}, {"num_tensors", 3}}})}};
  p.steps.push_back(other);
  StepCase twin = p.steps[0];
  twin.label = "25";
  twin.measured["step_time_s"] = 0.142;
  p.steps.push_back(twin);
  const auto r = compare_steps(p, {predicted(0.140, 0.0), predicted(0.139, 0.0), predicted(0.141, 0.0)}, 0.5);
  const Json& rep = r.doc["repeated_configurations"];
  ASSERT_EQ(rep.size(), 1u) << rep.dump();
  EXPECT_EQ(rep[0]["cases"], Json::array({0, 2}));
  EXPECT_EQ(rep[0]["bucket_caps"], Json::array({"default", "25"}));
  EXPECT_NEAR(rep[0]["measured_apart"].get<double>(), 0.164 / 0.142 - 1, 1e-12);
  EXPECT_NEAR(rep[0]["predicted_apart"].get<double>(), 0.141 / 0.140 - 1, 1e-12);
  EXPECT_NE(r.text.find("the same buckets measured twice (caps default and 25): 164.000 ms and 142.000 ms, 15.5 % "
                        "apart (predicted 0.7 %)"),
            std::string::npos)
      << r.text;
  // What tells buckets apart.
  Json a = p.steps[0].measured, b = a;
  EXPECT_TRUE(same_buckets(a, b));
  b["buckets"][1]["bytes"] = 15e6 + 4;
  EXPECT_FALSE(same_buckets(a, b));
  b = a;
  b["buckets"][1]["num_tensors"] = 41;
  EXPECT_FALSE(same_buckets(a, b));
  b = a;
  b["limits_bytes"][1] = 1048576;
  EXPECT_FALSE(same_buckets(a, b));
  b = a;
  b.erase("limits_bytes");  // limits on one side only: the buckets decide
  EXPECT_TRUE(same_buckets(a, b));
  b = a;
  b["buckets"] = Json::array();
  EXPECT_FALSE(same_buckets(b, b));
  b = a;
  b["buckets"][0].erase("bytes");
  b["buckets"][1].erase("bytes");
  EXPECT_FALSE(same_buckets(b, b));
  // No pair: an empty list.
  const auto single = compare_steps(one_case(2, "default", a), {predicted(0.14, 0.0)}, 0.5);
  EXPECT_TRUE(single.doc["repeated_configurations"].empty());
  EXPECT_EQ(single.text.find("measured twice"), std::string::npos) << single.text;
}

// The step's error split along the bucket that ended last in the measured step. Measured: bucket
// 0 ready 50 ms, end 60 ms; bucket 1 (5 MB) ready 148 ms, end 158.8 ms; step 166.5 ms. Predicted:
// bucket 1 ready 147.8, end 154.3; step 160.4. Parts: ready 147.8 - 148 = -0.2 ms; ready to end
// 6.5 - 10.8 = -4.3 ms; end to step end 6.1 - 7.7 = -1.6 ms; sum -6.1 ms = 160.4 - 166.5.
TEST(BenchResults, StepErrorIsSplitAlongTheBucketThatEndedLast) {
  const Json mb =
      Json::array({Json{{"index", 0}, {"bytes", 4e6}, {"ready_s", 0.050}, {"start_s", 0.0503}, {"end_s", 0.060}},
                   Json{{"index", 1}, {"bytes", 5e6}, {"ready_s", 0.148}, {"start_s", 0.1486}, {"end_s", 0.1588}}});
  Plan p = one_case(2, "default", Json{{"step_time_s", 0.1665}, {"buckets", mb}});
  Json pred = predicted(0.1604, 0.0);
  pred["buckets"] = Json::array({Json{{"bytes", 4e6}, {"ready_s", 0.049}, {"start_s", 0.0495}, {"end_s", 0.058}},
                                 Json{{"bytes", 5e6}, {"ready_s", 0.1478}, {"start_s", 0.1486}, {"end_s", 0.1543}}});
  pred["num_buckets"] = 2;
  const auto r = compare_steps(p, {pred}, 0.5);
  const Json& last = r.doc["cases"][0]["last_bucket"];
  EXPECT_EQ(last["index"].get<int>(), 1);
  EXPECT_NEAR(last["ready_predicted_s"].get<double>() - last["ready_measured_s"].get<double>(), -0.0002, 1e-12);
  EXPECT_NEAR(last["allreduce_measured_s"].get<double>(), 0.0108, 1e-12);
  EXPECT_NEAR(last["allreduce_predicted_s"].get<double>(), 0.0065, 1e-12);
  EXPECT_NEAR(last["after_measured_s"].get<double>(), 0.0077, 1e-12);
  EXPECT_NEAR(last["after_predicted_s"].get<double>(), 0.0061, 1e-12);
  EXPECT_NE(r.text.find("error -0.2 -4.3 -1.6 = -6.1 ms"), std::string::npos) << r.text;
  // Both sides' ready and start times stand beside the end times in each bucket row.
  const Json& row = r.doc["cases"][0]["buckets"][0];
  EXPECT_EQ(row["ready_measured_s"].get<double>(), 0.050);
  EXPECT_EQ(row["ready_predicted_s"].get<double>(), 0.049);
  EXPECT_EQ(row["start_measured_s"].get<double>(), 0.0503);
  EXPECT_EQ(row["start_predicted_s"].get<double>(), 0.0495);
  // The bucket that ended last is the measured one, whatever its index: bucket 0 ending at 0.16 s.
  p.steps[0].measured["buckets"][0]["end_s"] = 0.160;
  EXPECT_EQ(compare_steps(p, {pred}, 0.5).doc["cases"][0]["last_bucket"]["index"].get<int>(), 0);
  // Other bucket plans, a missing time, or one rank: no split.
  Json other = pred;
  other["buckets"].erase(1);
  EXPECT_TRUE(compare_steps(p, {other}, 0.5).doc["cases"][0]["last_bucket"].is_null());
  p.steps[0].measured["buckets"][0].erase("ready_s");
  EXPECT_TRUE(compare_steps(p, {pred}, 0.5).doc["cases"][0]["last_bucket"].is_null());
  p.steps[0].measured["buckets"][0]["ready_s"] = 0.05;
  p.ranks = 1;
  const auto one = compare_steps(p, {pred}, 0.5);
  EXPECT_TRUE(one.doc["cases"][0]["last_bucket"].is_null());
  EXPECT_EQ(one.text.find("ended last"), std::string::npos) << one.text;
}

// With the ranks' jitter, the jittered report's median step is compared and its buckets (one random
// step's) are not: the representative rank's bucket timeline gives the split, and the ranks'
// variation (median jittered step - representative step) closes the sum. The example above with a
// jittered median of 0.1634 s over a representative 0.1604 s: -0.2 -4.3 -1.6 +3.0 = -3.1 ms.
TEST(BenchResults, WithJitterTheSplitIsTheRepresentativeRanksPlusTheRanksVariation) {
  const Json mb =
      Json::array({Json{{"index", 0}, {"bytes", 4e6}, {"ready_s", 0.050}, {"start_s", 0.0503}, {"end_s", 0.060}},
                   Json{{"index", 1}, {"bytes", 5e6}, {"ready_s", 0.148}, {"start_s", 0.1486}, {"end_s", 0.1588}}});
  Plan p = one_case(2, "default", Json{{"step_time_s", 0.1665}, {"buckets", mb}});
  p.steps[0].jitter_cv = 0.1;
  Json rep = predicted(0.1604, 0.0);
  rep["buckets"] = Json::array({Json{{"bytes", 4e6}, {"ready_s", 0.049}, {"start_s", 0.0495}, {"end_s", 0.058}},
                                Json{{"bytes", 5e6}, {"ready_s", 0.1478}, {"start_s", 0.1486}, {"end_s", 0.1543}}});
  rep["num_buckets"] = 2;
  Json jit = predicted(0.1650, 0.0);  // the mean of the jittered steps
  jit["step_time_p50_s"] = 0.1634;
  jit["compute_only_s"] = 0.150;
  jit["comm_alone_s"] = 0.020;
  jit["buckets"] = Json::array({Json{{"bytes", 4e6}, {"ready_s", 0.03}, {"start_s", 0.03}, {"end_s", 0.04}},
                                Json{{"bytes", 5e6}, {"ready_s", 0.1}, {"start_s", 0.1}, {"end_s", 0.11}}});
  const auto r = compare_steps(p, {jit}, 0.5, {rep});
  const Json& c = r.doc["cases"][0];
  EXPECT_NEAR(c["predicted"]["step_time_s"].get<double>(), 0.1634, 1e-12);
  EXPECT_NEAR(c["predicted"]["exposed_comm_s"].get<double>(), 0.0134, 1e-12);  // median step - compute only
  EXPECT_NEAR(c["predicted"]["overlap_ratio"].get<double>(), 1 - 0.0134 / 0.020, 1e-12);
  EXPECT_NEAR(c["buckets"][1]["end_predicted_s"].get<double>(), 0.1543, 1e-12);  // the representative's
  EXPECT_NEAR(c["last_bucket"]["rank_variation_s"].get<double>(), 0.0030, 1e-12);
  EXPECT_NEAR(c["last_bucket"]["after_predicted_s"].get<double>(), 0.0061, 1e-12);
  EXPECT_NE(r.text.find("error -0.2 -4.3 -1.6 +3.0 (the ranks' variation) = -3.1 ms"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("pred: one representative rank"), std::string::npos) << r.text;
}

TEST(BenchResults, ComputeOnlyStepsAreComparedPartByPart) {
  Plan p = one_case(2, "default",
                    Json{{"step_time_s", 0.3418}, {"compute_only_s", 0.3188}, {"compute_only_forward_s", 0.115}});
  Json pred = predicted(0.42, 0.005);
  pred["forward_s"] = 0.150;
  pred["compute_only_s"] = 0.40;
  pred["optimizer_s"] = 0.0044;
  const auto r = compare_steps(p, {pred}, 0.5);
  const Json& parts = r.doc["cases"][0]["compute_only_parts"];
  EXPECT_EQ(parts["forward_measured_s"].get<double>(), 0.115);
  EXPECT_EQ(parts["forward_predicted_s"].get<double>(), 0.150);
  EXPECT_EQ(parts["optimizer_predicted_s"].get<double>(), 0.0044);
  // 150 / 115 - 1 = +30.4 %; 400 / 318.8 - 1 = +25.5 %.
  EXPECT_NE(r.text.find("(+30.4 %), step"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("(+25.5 %)"), std::string::npos) << r.text;
  // Without the measured forward there is no parts row.
  p.steps[0].measured.erase("compute_only_forward_s");
  EXPECT_TRUE(compare_steps(p, {pred}, 0.5).doc["cases"][0]["compute_only_parts"].is_null());
}

TEST(BenchResults, OptimizerStepIsTheComputeOnlyStepAfterItsBackward) {
  // scripts/ddp_cpu_bench.py: a compute-only step of 108.6 ms whose backward ended at 97.5 ms:
  // optimizer.step() + zero_grad() took 108.6 - 97.5 = 11.1 ms.
  const Json c = {{"compute_only_s", 0.1086}, {"compute_only_backward_end_s", 0.0975}};
  EXPECT_NEAR(measured_optimizer_step(c, "r.json", 0), 0.0111, 1e-12);
  // The per-step median the bench writes since 2 Dec 2026 wins over the difference of medians.
  EXPECT_EQ(measured_optimizer_step(Json{{"compute_only_optimizer_s", 0.0105},
                                         {"compute_only_s", 0.1086},
                                         {"compute_only_backward_end_s", 0.0975}},
                                    "r.json", 0),
            0.0105);
  // Files without the fields (ddpbench's GPU step results) keep the estimate.
  EXPECT_EQ(measured_optimizer_step(Json{{"compute_only_s", 0.1}}, "r.json", 0), 0.0);
}

TEST(BenchResults, BackwardEndOutsideTheStepIsRefusedWithFilePathAndValue) {
  for (const Json& end : {Json(0.2), Json(0.0), Json("x")}) {
    const Json c = {{"compute_only_s", 0.1}, {"compute_only_backward_end_s", end}};
    try {
      measured_optimizer_step(c, "r.json", 2);
      FAIL() << "expected ConfigError for " << end.dump();
    } catch (const core::ConfigError& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("r.json: /step/cases/2/compute_only_backward_end_s"), std::string::npos) << w;
      EXPECT_NE(w.find(end.is_string() ? "\"x\"" : end.dump()), std::string::npos) << w;
    }
  }
  try {
    measured_optimizer_step(Json{{"compute_only_optimizer_s", -0.001}}, "r.json", 1);
    FAIL() << "expected ConfigError";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("r.json: /step/cases/1/compute_only_optimizer_s: -0.001"), std::string::npos)
        << e.what();
  }
}

// The ranks' independent compute variation, by hand: rank 0 takes e^0.2 s at step 1, rank 1 at
// step 0, both 1 s otherwise. Per step the mean log time is 0.1, 0.1, 0; the residuals +-0.1, +-0.1,
// 0: 0.04 squared, sigma^2 = 0.04 / (3 steps x (2 - 1)), cv = sqrt(e^sigma^2 - 1) = 0.11586.
TEST(BenchResults, RankJitterIsTheComputeVariationTheRanksDoNotShare) {
  const double e = std::exp(0.2);
  const Json c = {{"rank_compute_only_times_s", {{1.0, e, 1.0}, {e, 1.0, 1.0}}}};
  EXPECT_NEAR(rank_jitter_cv(c, 2, "r.json", 0), std::sqrt(std::exp(0.04 / 3) - 1), 1e-12);
  EXPECT_NEAR(rank_jitter_cv(c, 2, "r.json", 0), 0.115856, 1e-6);
  // Both ranks slowing together (the machine, not a rank): nothing for the ranks to wait on.
  EXPECT_EQ(rank_jitter_cv(Json{{"rank_compute_only_times_s", {{0.1, 0.2, 0.3}, {0.1, 0.2, 0.3}}}}, 2, "r.json", 0),
            0.0);
  // A rank that is always 10 % slower is counted too (it also delays every synchronised step): a
  // residual of +-ln(1.1)/2 at every step.
  const double off = std::log(1.1) / 2;
  EXPECT_NEAR(rank_jitter_cv(Json{{"rank_compute_only_times_s", {{1.0, 1.0, 1.0}, {1.1, 1.1, 1.1}}}}, 2, "r.json", 0),
              std::sqrt(std::exp(2 * off * off) - 1), 1e-12);
  // Nothing to estimate: no field (files before 6 Dec 2026), one rank, fewer than 3 steps.
  EXPECT_EQ(rank_jitter_cv(Json{{"compute_only_s", 0.1}}, 2, "r.json", 0), 0.0);
  EXPECT_EQ(rank_jitter_cv(Json{{"rank_compute_only_times_s", {{1.0, 2.0, 1.0}}}}, 1, "r.json", 0), 0.0);
  EXPECT_EQ(rank_jitter_cv(Json{{"rank_compute_only_times_s", {{1.0, 2.0}, {2.0, 1.0}}}}, 2, "r.json", 0), 0.0);
}

TEST(BenchResults, RankTimesThatAreNotOneArrayOfTimesPerRankAreRefused) {
  const std::vector<std::pair<Json, std::string>> bad = {
      {Json("x"), "r.json: /step/cases/3/rank_compute_only_times_s: \"x\""},
      {Json{{1.0, 1.0, 1.0}}, "r.json: /step/cases/3/rank_compute_only_times_s: "},  // one array for two ranks
      {Json{{1.0, 1.0, 1.0}, {1.0, 1.0}}, "r.json: /step/cases/3/rank_compute_only_times_s/1: "},
      {Json{{1.0, 1.0, 1.0}, {1.0, -1.0, 1.0}}, "r.json: /step/cases/3/rank_compute_only_times_s/1/1: -1.0"},
      {Json{{1.0, 1.0, 1.0}, {1.0, "x", 1.0}}, "r.json: /step/cases/3/rank_compute_only_times_s/1/1: \"x\""}};
  for (const auto& [times, want] : bad) {
    try {
      rank_jitter_cv(Json{{"rank_compute_only_times_s", times}}, 2, "r.json", 3);
      FAIL() << "expected ConfigError for " << times.dump();
    } catch (const core::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
    }
  }
}

// With the ranks' jitter the simulated steps' median is compared, and the case says so.
TEST(BenchResults, AJitteredCaseComparesTheMedianOfItsSimulatedSteps) {
  Plan p = one_case(2, "25", {{"step_time_s", 0.2}});
  p.steps[0].jitter_cv = 0.15;
  Json pred = predicted(0.25, 0.0);
  pred["step_time_p50_s"] = 0.21;
  const auto r = compare_steps(p, {pred}, 0.1);
  EXPECT_NEAR(r.doc["cases"][0]["predicted"]["step_time_s"].get<double>(), 0.21, 1e-12);
  EXPECT_NEAR(r.doc["cases"][0]["rank_jitter_cv"].get<double>(), 0.15, 1e-12);
  EXPECT_NE(r.text.find("ranks' own compute variation: 15.0 %"), std::string::npos) << r.text;
  // A run so uneven that the estimate passes stragglers.jitter_cv's limit is simulated at the limit
  // and says so.
  p.steps[0].jitter_cv = 3.0;
  EXPECT_NE(compare_steps(p, {pred}, 0.1).text.find("capped at 200 %"), std::string::npos);
  // Without jitter: the report's step, and no such line.
  p.steps[0].jitter_cv = 0;
  const auto q = compare_steps(p, {pred}, 0.1);
  EXPECT_NEAR(q.doc["cases"][0]["predicted"]["step_time_s"].get<double>(), 0.25, 1e-12);
  EXPECT_TRUE(q.doc["cases"][0]["rank_jitter_cv"].is_null());
  EXPECT_EQ(q.text.find("ranks' own compute variation"), std::string::npos) << q.text;
}

}  // namespace
}  // namespace ddpsim::validate
