// Unit tests for the torch.profiler trace importer (sim/profile/trace_import.*). The fixtures in
// tests/golden/traces/ are hand-designed Kineto traces (make_fixtures.py states every timestamp);
// the expected times below are sums of the numbers written there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "profile/trace_import.hpp"

namespace fs = std::filesystem;
using ddpsim::core::ConfigError;
using ddpsim::core::Json;
using ddpsim::profile::import_trace;
using ddpsim::profile::read_trace_file;
using ddpsim::profile::TraceImportResult;

namespace {

constexpr double kUs = 1e-6;
constexpr double kTol = 1e-12;

std::string fixture(const std::string& name) {
  return (fs::path(DDPSIM_SOURCE_DIR) / "tests" / "golden" / "traces" / name).string();
}

Json load(const std::string& name) { return read_trace_file(fixture(name)); }

// The ConfigError message of `f`, or a failure when it throws nothing.
template <class F>
std::string config_error(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

bool has_warning(const TraceImportResult& r, const std::string& part) {
  for (const auto& w : r.warnings)
    if (w.find(part) != std::string::npos) return true;
  return false;
}

// Events for which `drop(event)` is true removed.
template <class P>
Json without(Json trace, P drop) {
  Json kept = Json::array();
  for (const auto& e : trace["traceEvents"])
    if (!drop(e)) kept.push_back(e);
  trace["traceEvents"] = kept;
  return trace;
}

class TraceImport : public ::testing::Test {
 protected:
  Json model_ = load("tiny3.json");
  std::string model_file_ = fixture("tiny3.json");
  TraceImportResult import(const Json& trace, const std::string& file = "trace.json") {
    return import_trace(trace, file, model_, model_file_);
  }
  static double fwd(const TraceImportResult& r, int i) { return r.model["layers"][i]["fwd_time_s"].get<double>(); }
  static double bwd(const TraceImportResult& r, int i) { return r.model["layers"][i]["bwd_time_s"].get<double>(); }
};

TEST_F(TraceImport, GpuTraceSumsKernelsOfTheLastIteration) {
  auto r = import(load("tiny3_gpu.json"));
  EXPECT_EQ(r.layers_total, 3);
  EXPECT_EQ(r.layers_timed, 3);
  // Iteration 2 (iteration 1 has every kernel twice as long). Forward: conv = fprop 12 + bias add 8;
  // relu = 5; fc = sgemm 15 + memset 2.
  EXPECT_NEAR(fwd(r, 0), (12 + 8) * kUs, kTol);
  EXPECT_NEAR(fwd(r, 1), 5 * kUs, kTol);
  EXPECT_NEAR(fwd(r, 2), (15 + 2) * kUs, kTol);
  // Backward: fc = AddmmBackward0 (20 + 18 + 4) + TBackward0 (0) + AccumulateGrad's add (1, after
  // TBackward0) + ViewBackward0 of the root's flatten (0, the next layer); relu = 6; conv = 25 + 5
  // (the NCCL kernel in its AccumulateGrad is left out).
  EXPECT_NEAR(bwd(r, 2), (20 + 18 + 4 + 1) * kUs, kTol);
  EXPECT_NEAR(bwd(r, 1), 6 * kUs, kTol);
  EXPECT_NEAR(bwd(r, 0), (25 + 5) * kUs, kTol);
  // Kernel spans: forward 2012..2093 us, backward 2159..2254 us (the loss's kernels excluded).
  EXPECT_NEAR(r.trace_forward_s, 81 * kUs, 1e-9);
  EXPECT_NEAR(r.trace_backward_s, 95 * kUs, 1e-9);
  EXPECT_EQ(r.model["measured_on"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(r.model["measured_batch_size"], 2);
  EXPECT_TRUE(has_warning(r, "2 forward passes")) << testing::PrintToString(r.warnings);
  EXPECT_TRUE(has_warning(r, "1 NCCL kernel(s) were left out"));
  EXPECT_TRUE(has_warning(r, "2 backward node(s)"));  // the loss's NllLossBackward0, LogSoftmaxBackward0
}

TEST_F(TraceImport, GpuKernelsLinkThroughExternalIdWithoutLaunchEvents) {
  auto r = import(without(load("tiny3_gpu.json"), [](const Json& e) { return e.value("cat", "") == "cuda_runtime"; }));
  EXPECT_NEAR(fwd(r, 0), 20 * kUs, kTol);
  EXPECT_NEAR(fwd(r, 2), 17 * kUs, kTol);
  EXPECT_NEAR(bwd(r, 2), 43 * kUs, kTol);
  EXPECT_NEAR(bwd(r, 0), 30 * kUs, kTol);
}

TEST_F(TraceImport, CpuTraceUsesSelfTimeOfOps) {
  const std::string file = fixture("tiny3_cpu.json");
  auto r = import(load("tiny3_cpu.json"), file);
  // Forward: conv = aten::conv2d's tree, 4..28 us; relu = 33..45; fc = aten::linear 66..94 plus the
  // root's flatten 61..64 (Net is no layer: the next layer gets it).
  EXPECT_NEAR(fwd(r, 0), 24 * kUs, kTol);
  EXPECT_NEAR(fwd(r, 1), 12 * kUs, kTol);
  EXPECT_NEAR(fwd(r, 2), (28 + 3) * kUs, kTol);
  // Backward (evaluate_function durations): fc = Addmm 29 + AccumulateGrad 5 + T 5 + AccumulateGrad 5
  // + View 4; relu = 11; conv = 44 + AccumulateGrad 4 less its 1 us gloo allreduce + AccumulateGrad 4.
  EXPECT_NEAR(bwd(r, 2), (29 + 5 + 5 + 5 + 4) * kUs, kTol);
  EXPECT_NEAR(bwd(r, 1), 11 * kUs, kTol);
  EXPECT_NEAR(bwd(r, 0), (44 + 3 + 4) * kUs, kTol);
  EXPECT_NEAR(r.trace_forward_s, 100 * kUs, 1e-9);   // Net_0's duration
  EXPECT_NEAR(r.trace_backward_s, 119 * kUs, 1e-9);  // AddmmBackward0 start .. last AccumulateGrad end
  EXPECT_EQ(r.model["measured_on"], "torch.profiler trace " + file);
}

TEST_F(TraceImport, KeepsTheModelAndOverwritesOldTimes) {
  model_["layers"][1]["fwd_time_s"] = 1.0;
  auto r = import(load("tiny3_cpu.json"));
  Json expected = model_;
  for (int i = 0; i < 3; ++i) {
    expected["layers"][i]["fwd_time_s"] = r.model["layers"][i]["fwd_time_s"];
    expected["layers"][i]["bwd_time_s"] = r.model["layers"][i]["bwd_time_s"];
  }
  expected["measured_on"] = r.model["measured_on"];
  expected["measured_batch_size"] = 2;
  EXPECT_EQ(r.model, expected);
  EXPECT_NEAR(fwd(r, 1), 12 * kUs, kTol);
}

TEST_F(TraceImport, MeasuredBatchSizeCanBeGivenAndIsCheckedAgainstInputDims) {
  auto r = import_trace(load("tiny3_gpu.json"), "t.json", model_, model_file_, 4);
  EXPECT_EQ(r.model["measured_batch_size"], 4);
  EXPECT_TRUE(has_warning(r, "batch dimension 2 but measured_batch_size is 4")) << testing::PrintToString(r.warnings);
  EXPECT_FALSE(has_warning(import(load("tiny3_gpu.json")), "batch dimension"));
  auto msg = config_error([&] { import_trace(load("tiny3_gpu.json"), "t.json", model_, model_file_, 0); });
  EXPECT_NE(msg.find("t.json: measured batch size 0 is not allowed; expected an integer >= 1"), std::string::npos);
}

TEST_F(TraceImport, DdpWrapperIsLookedThrough) {
  Json t = load("tiny3_cpu.json");
  Json& ev = t["traceEvents"];
  ev.push_back({{"ph", "X"},
                {"cat", "python_function"},
                {"name", "nn.Module: DistributedDataParallel_0"},
                {"pid", 4242},
                {"tid", 4242},
                {"ts", 999.0},
                {"dur", 101.5}});
  ev.push_back({{"ph", "X"},
                {"cat", "cpu_op"},
                {"name", "c10d::broadcast_"},
                {"pid", 4242},
                {"tid", 4242},
                {"ts", 999.2},
                {"dur", 0.6},
                {"args", {{"External id", 9999}}}});
  auto r = import(t);
  EXPECT_NEAR(fwd(r, 0), 24 * kUs, kTol);
  EXPECT_NEAR(fwd(r, 2), 31 * kUs, kTol);
  EXPECT_NEAR(bwd(r, 2), 48 * kUs, kTol);
}

TEST_F(TraceImport, WithoutBackwardOnlyForwardTimesAreSet) {
  auto r = import(without(load("tiny3_gpu.json"), [](const Json& e) { return e.contains("tid") && e["tid"] == 4301; }));
  EXPECT_NEAR(fwd(r, 0), 20 * kUs, kTol);  // still the last forward
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(r.model["layers"][i].contains("bwd_time_s"));
  EXPECT_EQ(r.trace_backward_s, 0);
  EXPECT_TRUE(has_warning(r, "no backward pass"));
}

TEST_F(TraceImport, AccumulateGradWithoutAModelNodeBeforeItIsIgnored) {
  // Without AddmmBackward0, fc's first AccumulateGrad follows the loss's LogSoftmaxBackward0.
  auto r = import(without(load("tiny3_cpu.json"), [](const Json& e) {
    std::string n = e.value("name", "");
    return n == "AddmmBackward0" || n == "autograd::engine::evaluate_function: AddmmBackward0";
  }));
  EXPECT_NEAR(bwd(r, 2), (5 + 5 + 4) * kUs, kTol);  // T, the AccumulateGrad after it, View
  EXPECT_TRUE(has_warning(r, "1 AccumulateGrad node(s) could not be tied")) << testing::PrintToString(r.warnings);
}

TEST_F(TraceImport, RefusesTheLegacyProfilerList) {
  const std::string file = fixture("legacy_autograd_profiler.json");
  auto msg = config_error([&] { import_trace(read_trace_file(file), file, model_, model_file_); });
  EXPECT_NE(msg.find(file + ": /: a JSON array of 95 events (the legacy torch.autograd.profiler"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("with_modules=True"), std::string::npos);
  EXPECT_NE(msg.find("record_shapes=True"), std::string::npos);
}

TEST_F(TraceImport, RefusesFilesThatAreNotJsonOrCompressed) {
  auto dir = fs::temp_directory_path() / ("ddpsim_trace_import_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto bad = (dir / "bad.json").string();
  std::ofstream(bad) << "{\"traceEvents\": [\n  {\"ph\": \"X\",}\n]}";
  auto msg = config_error([&] { read_trace_file(bad); });
  EXPECT_NE(msg.find(bad + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos);
  auto gz = (dir / "t.json.gz").string();
  std::ofstream(gz, std::ios::binary) << "\x1f\x8b\x08";
  msg = config_error([&] { read_trace_file(gz); });
  EXPECT_NE(msg.find(gz + ": gzip-compressed data is not allowed"), std::string::npos) << msg;
  msg = config_error([&] { read_trace_file((dir / "missing.json").string()); });
  EXPECT_NE(msg.find("cannot open file"), std::string::npos);
  fs::remove_all(dir);
}

TEST_F(TraceImport, RefusesObjectsWithoutTraceEvents) {
  auto msg = config_error([&] { import(Json{{ "schemaVersion", 1 }}, "x.json"); });
  EXPECT_NE(msg.find("x.json: /traceEvents: missing; required: the event array"), std::string::npos) << msg;
  msg = config_error([&] { import(Json{{ "traceEvents", 3 }}, "x.json"); });
  EXPECT_NE(msg.find("x.json: /traceEvents: 3 is not allowed; expected an array of trace events"), std::string::npos)
      << msg;
}

TEST_F(TraceImport, RefusesTracesWithoutModuleEvents) {
  auto t = without(load("tiny3_gpu.json"), [](const Json& e) { return e.value("cat", "") == "python_function"; });
  auto msg = config_error([&] { import(t, "x.json"); });
  EXPECT_NE(msg.find("x.json: /traceEvents: no \"nn.Module: ...\" events"), std::string::npos) << msg;
  EXPECT_NE(msg.find("with_stack=True"), std::string::npos);
}

TEST_F(TraceImport, RefusesALayerCountMismatch) {
  auto msg = config_error([&] { import(load("tiny3_extra_layer_cpu.json"), "x.json"); });
  EXPECT_NE(msg.find("x.json: /traceEvents: the trace's top-level module calls have 4 in \"nn.Module: Net_0\""),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(model_file_ + " has 3 layers"), std::string::npos);
  EXPECT_NE(msg.find("with_modules=True"), std::string::npos);
}

TEST_F(TraceImport, RefusesLayerTypesThatContradictTheModuleClasses) {
  model_["layers"][0]["type"] = "linear";
  auto msg = config_error([&] { import(load("tiny3_cpu.json"), "x.json"); });
  EXPECT_NE(msg.find("x.json: /traceEvents/"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"nn.Module: Conv2d_0\" is not allowed for layer 0 \"block.0\" (type linear); expected a "
                     "conv2d layer there"),
            std::string::npos)
      << msg;
}

TEST_F(TraceImport, ListsEveryBadEventField) {
  Json t = load("tiny3_cpu.json");
  int first = -1, second = -1;
  for (size_t i = 0; i < t["traceEvents"].size(); ++i) {
    if (t["traceEvents"][i].value("cat", "") != "cpu_op") continue;
    if (first < 0)
      first = static_cast<int>(i);
    else if (second < 0)
      second = static_cast<int>(i);
  }
  t["traceEvents"][first]["ts"] = "12";
  t["traceEvents"][second]["dur"] = -1;
  try {
    import(t, "x.json");
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.problems().size(), 2u) << e.what();
    EXPECT_EQ(e.problems()[0],
              "x.json: /traceEvents/" + std::to_string(first) +
                  "/ts: \"12\" is not allowed; expected a number of microseconds, of magnitude <= 1e+18");
    EXPECT_EQ(e.problems()[1],
              "x.json: /traceEvents/" + std::to_string(second) +
                  "/dur: -1 is not allowed; expected a number of microseconds >= 0, of magnitude <= 1e+18");
  }
}

TEST_F(TraceImport, RefusesAModelWithoutLayers) {
  Json m = model_;
  m.erase("layers");
  auto msg = config_error([&] { import_trace(load("tiny3_cpu.json"), "x.json", m, "m.json"); });
  EXPECT_NE(msg.find("m.json: /layers: missing; required: an array of layers in forward order"), std::string::npos)
      << msg;
}

}  // namespace
