// The ddpsim command line as a user meets it: outputs, exit codes, messages, no partial files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "core/json_reader.hpp"
#include "sim/cli_support.hpp"
#include "support/files.hpp"

namespace ddpsim {
namespace {

namespace fs = std::filesystem;
using core::Json;

using Result = testing::CliResult;

std::string bin() { return testing::ddpsim_bin(); }

// stdout then stderr, as a user sees them (sanitizer runtime warnings taken out).
Result run(const std::string& args) { return testing::run_cli(args); }

fs::path temp_dir(const std::string& name) { return testing::temp_dir("cli-" + name); }

// `ddpsim run -q --json DIR/NAME.json ARGS` (exit 0 expected): the report and what was printed.
std::pair<Json, std::string> run_report(const fs::path& dir, const std::string& args, const std::string& name) {
  const fs::path f = dir / (name + ".json");
  auto r = run("run -q --json " + f.string() + " " + args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  return {Json::parse(testing::slurp(f)), r.out};
}

using testing::slurp;

TEST(Cli, RunDefaultPrintsStepTimeAndOverlap) {
  auto r = run("run");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("step time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("overlap ratio"), std::string::npos) << r.out;
}

TEST(Cli, TheTrustTextPrintsOneClauseALineAndABlockPerCollective) {
  // The JSON's one-line nccl_trust, clause by clause in the text summary: a default run (all-reduces
  // only) has no collective labels; its clauses are the JSON line's, split at "; " outside brackets.
  auto r = run("run");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = run("run --json - -q");
  ASSERT_EQ(j.code, 0) << j.out;
  const std::string line = Json::parse(j.out)["nccl_trust"].get<std::string>();
  std::vector<std::string> clauses(1);
  int depth = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    depth += line[i] == '[' ? 1 : line[i] == ']' ? -1 : 0;
    if (depth == 0 && line.compare(i, 2, "; ") == 0) {
      clauses.emplace_back();
      ++i;
    } else {
      clauses.back() += line[i];
    }
  }
  // ("InfiniBand: 6-11 % at 2-4 nodes, ...; issue 24, ...)" holds a "; " inside parentheses: rejoin.
  std::vector<std::string> joined;
  for (const auto& c : clauses)
    if (!joined.empty() && std::count(joined.back().begin(), joined.back().end(), '(') >
                               std::count(joined.back().begin(), joined.back().end(), ')'))
      joined.back() += "; " + c;
    else
      joined.push_back(c);
  ASSERT_EQ(joined.size(), 3u) << line;
  std::string block = "  NCCL model trust:\n";
  for (const auto& c : joined) block += "    " + c + "\n";
  EXPECT_NE(r.out.find(block), std::string::npos) << r.out;
  // FSDP on dgx-h100: all-gathers and reduce-scatters, each a block after its nccl-tests binary;
  // the all-gather's stand-in all-reduce table is named in full (no all-reduce block above it).
  auto f = run("run llama3-8b-fsdp-8x-h100");
  ASSERT_EQ(f.code, 0) << f.out;
  EXPECT_NE(f.out.find("  NCCL model trust:\n    all_gather_perf: no validated all_gather_perf table for this cluster "
                       "class (dgx-h100, h100-sxm)\n      the worst one-node all_gather_perf table's"),
            std::string::npos)
      << f.out;
  EXPECT_NE(f.out.find("\n      beside the all-reduce's: closest validated table: H100 SXM x8"), std::string::npos)
      << f.out;
  EXPECT_NE(f.out.find("\n    reduce_scatter_perf: closest validated table: H100 SXM x8, NVSwitch, Ring forced"),
            std::string::npos)
      << f.out;
  // GPT-2 over 128 superpod nodes: all-reduces and DDP's buffer broadcasts (38 % of the collective
  // time); the broadcast's stand-in all-reduce table is the block above, named, not repeated.
  auto g = run("run --model gpt2 --cluster dgx-h100-superpod --nodes 128");
  ASSERT_EQ(g.code, 0) << g.out;
  EXPECT_NE(g.out.find("  NCCL model trust:\n    all_reduce_perf: closest validated table: "), std::string::npos)
      << g.out;
  EXPECT_NE(g.out.find("\n    broadcast_perf: no validated broadcast_perf table"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("\n      beside the all-reduce's: all_reduce_perf's above\n"), std::string::npos) << g.out;
  EXPECT_EQ(g.out.find("beside the all-reduce's: closest"), std::string::npos) << g.out;
}

TEST(Cli, RunJsonHasTheDocumentedFields) {
  auto r = run("run --json - -q");
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  for (const char* k : {"world_size", "step_time_s", "forward_s", "backward_compute_s", "optimizer_s", "compute_only_s",
                        "comm_alone_s", "comm_busy_s", "exposed_comm_s", "overlap_ratio", "iteration1", "buckets"})
    EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"step_time_s", "compute_only_s", "comm_alone_s", "exposed_comm_s", "overlap_ratio"})
    EXPECT_TRUE(j["iteration1"].contains(k)) << k;
  ASSERT_FALSE(j["buckets"].empty());
  for (const char* k : {"index", "bytes", "num_tensors", "ready_s", "start_s", "end_s", "exposed_s"})
    EXPECT_TRUE(j["buckets"][0].contains(k)) << k;
  EXPECT_EQ(j["world_size"], 16);
  // dgx-a100 x2: the closest validated table is the preset's own 1-node table, at another node count.
  const std::string trust = j["nccl_trust"].get<std::string>();
  EXPECT_NE(trust.find("closest validated table: A100 SXM4 x8, NVSwitch, 1 node"), std::string::npos) << trust;
  EXPECT_NE(trust.find("[differs: 2 nodes asked]"), std::string::npos) << trust;
  // One GPU runs no collective: no trust line.
  auto one = run("run --json - -q --nodes 1 --gpus-per-node 1");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_FALSE(Json::parse(one.out).contains("nccl_trust"));
  // The default cluster (dgx-a100) sits on the single ideal switch: no placement is assumed.
  EXPECT_FALSE(j.contains("placement"));
  // The steady-state buckets hold every gradient byte exactly once.
  double total = 0;
  for (const auto& b : j["buckets"]) total += b["bytes"].get<double>();
  EXPECT_EQ(total, j["grad_bytes"].get<double>());
}

TEST(Cli, RunReportsTheEagerHostDispatchAndWhetherTheGpuWaitsForIt) {
  const std::string one_a100 = " --cluster dgx-a100 --nodes 1 --gpus-per-node 1 --set training.compute_dtype=float16";
  // BERT-base at batch 32 keeps the GPU busy: the host's 14 ms of dispatch (views and module calls
  // included) hide behind ~25 ms of kernels, and the GPU waits only for the first launches: well
  // under 1 % of the compute.
  auto bert = run("run --json - -q --model bert-base --set training.batch_size=32" + one_a100);
  ASSERT_EQ(bert.code, 0) << bert.out;
  const Json bj = Json::parse(bert.out);
  const Json& b = bj["compute_host"];
  ASSERT_TRUE(b.is_object()) << bert.out;
  EXPECT_GT(b["forward_s"].get<double>(), 1e-3);
  EXPECT_GT(b["backward_s"].get<double>(), b["forward_s"].get<double>());  // more backward kernels
  EXPECT_LT(b["gpu_wait_s"].get<double>(), 0.01 * bj["compute_only_s"].get<double>());
  // Views, view nodes and module calls (the model file's host_ops) are part of it.
  EXPECT_GT(b["no_kernel_s"].get<double>(), 0.2 * (b["forward_s"].get<double>() + b["backward_s"].get<double>()));
  EXPECT_EQ(b["kernels_forward"].get<int>() > 0 && b["kernels_backward"].get<int>() > b["kernels_forward"].get<int>(),
            true);
  // mixed-gpt (4 layers of width 256) at batch 4 is launch-bound: the GPU waits for the host about
  // half of its compute.
  auto small = run("run --json - -q --model mixed-gpt --set training.batch_size=4" + one_a100);
  ASSERT_EQ(small.code, 0) << small.out;
  const Json m = Json::parse(small.out);
  EXPECT_GT(m["compute_host"]["gpu_wait_s"].get<double>(), 0.3 * m["compute_only_s"].get<double>()) << small.out;
  // The text summary says it under the compute line.
  auto text = run("run --model mixed-gpt --set training.batch_size=32" + one_a100);
  EXPECT_NE(text.out.find("eager host dispatch"), std::string::npos) << text.out;
  // CUDA graphs remove the per-op dispatch, and a calibrated step has no per-kernel host model: null.
  for (const char* extra : {" --set training.cuda_graphs=true", " --set training.measured_single_gpu_step=30ms"}) {
    auto r = run("run --json - -q --model mixed-gpt" + one_a100 + extra);
    ASSERT_EQ(r.code, 0) << extra << r.out;
    EXPECT_TRUE(Json::parse(r.out)["compute_host"].is_null()) << extra;
  }
}

TEST(Cli, GradScalersSyncMakesTheGpuWaitForTheOptimizersDispatch) {
  // channels_last: bfloat16 and float16 then run the same kernels (in NCHW, bfloat16's batch norm
  // takes PyTorch's own slower kernels), so the two steps differ by the GradScaler alone.
  const std::string r50 =
      "run --json - -q --model resnet50 --cluster dgx-a100 --nodes 1 --gpus-per-node 1 --set ddp.pytorch_version=1.13 "
      "--set training.memory_format=channels_last";
  // torch 1.13's SGD runs per tensor (161 tensors x 3 ops, ~7 us of host each); under float16 the
  // GradScaler's found_inf.item() first waits for the GPU, so the GPU waits for those launches.
  auto fp16 = run(r50 + " --set training.compute_dtype=float16");
  ASSERT_EQ(fp16.code, 0) << fp16.out;
  const Json a = Json::parse(fp16.out);
  const Json& h = a["optimizer_host"];
  ASSERT_TRUE(h.is_object()) << fp16.out;
  EXPECT_TRUE(h["grad_scaler_sync"].get<bool>());
  EXPECT_EQ(h["impl"], "for_loop");
  // The host's launches of the step alone: 161 x 3 x (0.756 x 6.9 + 2) us (torch 1.13's share of the
  // per-kernel model's op, and the launch); unscale_ and zero_grad add little (161 x 0.130 x 6.9 us
  // of lists and one call, 161 x 0.084 x 6.9 us of setting None).
  const double loop = 161 * 3 * (0.756 * 6.9e-6 + 2e-6);
  EXPECT_GT(h["host_s"].get<double>(), loop);
  EXPECT_LT(h["host_s"].get<double>(), loop + 3e-4);
  const double wait = h["gpu_wait_s"].get<double>();
  EXPECT_GT(wait, 0.01 * a["step_time_s"].get<double>());
  EXPECT_LT(wait, h["host_s"].get<double>());
  // bfloat16 has no GradScaler: the host stays ahead of the GPU (its lead at the backward's end
  // covers the step's launches) and the step is shorter by the wait and the unscale_ pass.
  auto bf16 = run(r50 + " --set training.compute_dtype=bfloat16");
  ASSERT_EQ(bf16.code, 0) << bf16.out;
  const Json b = Json::parse(bf16.out);
  EXPECT_FALSE(b["optimizer_host"]["grad_scaler_sync"].get<bool>());
  EXPECT_EQ(b["optimizer_host"]["gpu_wait_s"].get<double>(), 0.0);
  EXPECT_GT(a["step_time_s"].get<double>() - b["step_time_s"].get<double>(), wait);
  // The text summary names it.
  auto text =
      run("run --model resnet50 --cluster dgx-a100 --nodes 1 --gpus-per-node 1 --set ddp.pytorch_version=1.13 "
          "--set training.compute_dtype=float16");
  EXPECT_NE(text.out.find("after GradScaler's found_inf .item() sync the GPU waits"), std::string::npos) << text.out;
  // Not modelled for FSDP (flat parameters) or ZeRO (a sharded step): null.
  auto fsdp =
      run("run --json - -q --model resnet50 --cluster dgx-a100 --set training.wrapper=fsdp "
          "--set training.compute_dtype=float16");
  ASSERT_EQ(fsdp.code, 0) << fsdp.out;
  EXPECT_TRUE(Json::parse(fsdp.out)["optimizer_host"].is_null());
  auto zero =
      run("run --json - -q --model resnet50 --cluster dgx-a100 --nodes 1 --set training.compute_dtype=float16 "
          "--set training.zero_redundancy_optimizer.enabled=true");
  ASSERT_EQ(zero.code, 0) << zero.out;
  EXPECT_TRUE(Json::parse(zero.out)["optimizer_host"].is_null());
}

TEST(Cli, NonVectorizedElementwiseKernelsAreReported) {
  const fs::path dir = temp_dir("per-element");
  auto report = [&](const std::string& args, const std::string& name) { return run_report(dir, args, name).first; };
  // GPT-2 in bf16 with eager attention: the score matrix's 0-dim scale and causal mask are strided,
  // the softmax's input is cast to float32: both on PyTorch's non-vectorized loops, slower on the
  // H100 than their bytes at the streaming rate.
  const std::string gpt2 =
      "--model gpt2 --cluster dgx-h100 --nodes 1 --gpus-per-node 1 --set training.compute_dtype=bfloat16 "
      "--set training.batch_size=8";
  const Json g = report(gpt2, "gpt2");
  ASSERT_TRUE(g["per_element_kernels"].is_object()) << g.dump();
  const double t = g["per_element_kernels"]["seconds"].get<double>(),
               over = g["per_element_kernels"]["over_streaming_s"].get<double>();
  EXPECT_GT(over, 0.0);
  EXPECT_LT(over, t);
  EXPECT_LT(t, g["forward_s"].get<double>() + g["backward_compute_s"].get<double>());
  auto text = run("run " + gpt2);
  EXPECT_NE(text.out.find("    non-vectorized element-wise kernels (broadcast or strided operands, casts to float32) "),
            std::string::npos)
      << text.out;
  // ResNet-50 in float32: contiguous element-wise ops only, no casts: none.
  const Json r = report("--model resnet50 --cluster dgx-a100 --nodes 1 --gpus-per-node 1", "resnet");
  EXPECT_TRUE(r["per_element_kernels"].is_null()) << r["per_element_kernels"].dump();
  // A measured profile: not estimated, none.
  EXPECT_EQ(run("run --model resnet50 --cluster dgx-a100").out.find("non-vectorized"), std::string::npos);
}

TEST(Cli, TheCrossEntropyLossRunsOnTheLogits) {
  const fs::path dir = temp_dir("loss");
  auto report = [&](const std::string& args, const std::string& name) { return run_report(dir, args, name).first; };
  // GPT-2 at batch 8 x 1024 tokens in fp16 on one A100 (2,039 GB/s at 0.9, 2 us per kernel):
  // 8,192 x 50,257 logits; per element 42 B (log_softmax 16, zeroed gradient 4, its backward 16,
  // cast back 6) and 24 B per row (nll_loss forward and backward), seven kernels; the cast of the
  // half logits to float32 runs Copy.cu's unrolled path, 0.90 SM cycles an element at 19.5e12 / 128
  // cycles per second (its 6 B at the streaming rate would be faster).
  const std::string gpt2 =
      "--model gpt2 --cluster dgx-a100 --nodes 1 --gpus-per-node 1 "
      "--set training.compute_dtype=float16 --set training.batch_size=8";
  const Json with = report(gpt2, "auto");
  const Json without = report(gpt2 + " --set training.loss=none", "none");
  EXPECT_EQ(with["loss"], "auto");
  ASSERT_TRUE(with["loss_compute"].is_object()) << with.dump();
  EXPECT_TRUE(without["loss_compute"].is_null());
  EXPECT_EQ(with["loss_compute"]["rows"], 8192);
  EXPECT_EQ(with["loss_compute"]["classes"], 50257);
  const double n = 8192.0 * 50257;
  const double loss = 7 * 2e-6 + (42 * n + 24 * 8192.0) / (2039e9 * 0.9) + n * 0.90 / (19.5e12 / 128);
  EXPECT_NEAR(with["loss_compute"]["seconds"].get<double>(), loss, 1e-12);
  // It is in the step: the GPU-bound compute grows by it (and the host's 7 more dispatches hide).
  const double waits =
      with["compute_host"]["gpu_wait_s"].get<double>() - without["compute_host"]["gpu_wait_s"].get<double>();
  EXPECT_NEAR(with["compute_only_s"].get<double>() - without["compute_only_s"].get<double>(), loss + waits, 1e-9);
  // log_softmax's float32 result stays for the backward: 4 B per logit more at the peak.
  EXPECT_NEAR(with["memory_per_gpu_bytes"].get<double>() - without["memory_per_gpu_bytes"].get<double>(), 4 * n,
              0.01 * 4 * n);
  auto text = run("run " + gpt2);
  EXPECT_NE(text.out.find("    cross-entropy loss over 8192 x 50257 logits "), std::string::npos) << text.out;
  // BERT-base ends at its pooler: "auto" takes no loss, and asking for one is an error naming why.
  EXPECT_TRUE(
      report("--model bert-base --cluster dgx-a100 --nodes 1 --gpus-per-node 1", "bert")["loss_compute"].is_null());
  auto bad =
      run("run --model bert-base --cluster dgx-a100 --nodes 1 --gpus-per-node 1 --set training.loss=cross_entropy");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("/training/loss: \"cross_entropy\": model bert-base's last layer (pooler.activation, "),
            std::string::npos)
      << bad.out;
  auto unknown = run("run --set training.loss=mse");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("/training/loss"), std::string::npos) << unknown.out;
}

TEST(Cli, MeasuredLayerTimesWithoutTheVocabularyLossAreWarnedAbout) {
  // A per-module profile never times the loss: with GPT-2's 50,257-class head that is said, and
  // the loss is not added to measured times; ResNet-50's 1,000 classes (microseconds) are not.
  const fs::path dir = temp_dir("measured-loss");
  auto measured = [&](const std::string& name) {
    Json m = Json::parse(slurp("models/" + name + ".json"));
    for (auto& l : m["layers"]) {
      l["fwd_time_s"] = 1e-4;
      l["bwd_time_s"] = 2e-4;
    }
    const fs::path f = dir / (name + "-measured.json");
    std::ofstream(f) << m.dump();
    return f.string();
  };
  const std::string one = " --cluster dgx-a100 --nodes 1 --gpus-per-node 1 -q --json -";
  const std::string gpt2 = measured("gpt2");
  auto r = run("run --model " + gpt2 + one);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("layer times are measured per module, which leaves out the loss on its 50257-class output; "
                       "training.loss \"auto\" adds it to estimated compute only"),
            std::string::npos)
      << r.out;
  auto none = run("run --model " + gpt2 + one + " --set training.loss=none");
  ASSERT_EQ(none.code, 0) << none.out;
  EXPECT_EQ(none.out.find("leaves out the loss"), std::string::npos) << none.out;
  auto resnet = run("run --model " + measured("resnet50") + one);
  ASSERT_EQ(resnet.code, 0) << resnet.out;
  EXPECT_EQ(resnet.out.find("leaves out the loss"), std::string::npos) << resnet.out;
}

TEST(Cli, DataParallelTakesTheLossOnceOnGpuZeroOverTheGatheredBatch) {
  // torch.nn.DataParallel gathers the replicas' logits to GPU 0, where the training loop's loss
  // and the start of its backward run over all 8 x 2,048 rows; the replicas run none of it.
  // GPT-2 at batch 2 x 1,024 per GPU in float32 on a V100 (900 GB/s at 0.9, 2 us per kernel):
  // log_softmax forward 8 x 16 B x 2,048 x 50,257, its backward the same, the zeroed gradient
  // 8 x 4 B per logit; nll_loss's kernels 8 x 12 B per row.
  // With a measured single-GPU step the loss is calibrated with the rest of the compute: every
  // duration times the report's compute_scale.
  const fs::path dir = temp_dir("dp-loss");
  const double n = 8 * 2048.0 * 50257, rows = 8 * 2048.0, bw = 900e9 * 0.9;
  const std::vector<double> want = {2e-6 + 16 * n / bw, 2e-6 + 12 * rows / bw, 2e-6 + 4 * n / bw, 2e-6 + 12 * rows / bw,
                                    2e-6 + 16 * n / bw};
  for (const std::string calibrated : {"", " --set training.measured_single_gpu_step=1s"}) {
    SCOPED_TRACE(calibrated);
    const fs::path trace = dir / "trace.json", rep = dir / "report.json";
    auto r =
        run("run -q --model gpt2 --cluster dgx1-v100 --nodes 1 --set training.wrapper=data_parallel "
            "--set training.batch_size=2 --trace " +
            trace.string() + " --json " + rep.string() + calibrated);
    ASSERT_EQ(r.code, 0) << r.out;
    const Json j = Json::parse(slurp(rep));
    const double scale = j["compute_scale"].get<double>();
    if (calibrated.empty()) {
      EXPECT_EQ(scale, 1.0);
      ASSERT_TRUE(j["loss_compute"].is_object());
      EXPECT_EQ(j["loss_compute"]["rows"], 2048);  // one replica's, as reported
    } else {
      EXPECT_GT(scale, 2.0);  // 1 s against about 0.2 s estimated for one GPU
    }
    std::vector<double> got;
    const Json events = Json::parse(slurp(trace))["traceEvents"];
    for (const auto& e : events) {
      if (e["ph"] != "X" || e["name"].get<std::string>().rfind("loss (", 0) != 0) continue;
      EXPECT_EQ(e["pid"], 1) << e.dump();  // GPU 0's track
      got.push_back(e["dur"].get<double>() * 1e-6);
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i] * scale, 1e-9) << i;
  }
}

TEST(Cli, ChannelsLastDropsTheConvolutionTransposesAndConvertsTheInput) {
  const fs::path dir = temp_dir("channels-last");
  auto report = [&](const std::string& args, const std::string& name) { return run_report(dir, args, name); };
  // Tensor cores (fp16 on an A100): without the NCHW<->NHWC transposes around every cuDNN call the
  // step is shorter; the report says which format it ran.
  const std::string a100 =
      "--model resnet50 --cluster dgx-a100 --nodes 1 --gpus-per-node 1 "
      "--set training.compute_dtype=float16 --set training.batch_size=64";
  const auto nchw = report(a100, "a100-nchw");
  const auto nhwc = report(a100 + " --set training.memory_format=channels_last", "a100-nhwc");
  EXPECT_EQ(nchw.first["memory_format"], "contiguous_format");
  EXPECT_EQ(nhwc.first["memory_format"], "channels_last");
  EXPECT_LT(nhwc.first["compute_only_s"].get<double>(), 0.9 * nchw.first["compute_only_s"].get<double>());
  EXPECT_EQ(nhwc.second.find("warning"), std::string::npos) << nhwc.second;
  auto text = run("run " + a100 + " --set training.memory_format=channels_last");
  EXPECT_NE(text.out.find("x 224x224 images, channels_last\n"), std::string::npos) << text.out;
  // FP32 on a V100 (SIMT convolutions: no transposes either way): VGG-16 with its max pools as
  // average pools (batch norm and max pooling run other kernels in each layout; VGG-16 has no batch
  // norm, and the model prices an average pool by its bytes in either) adds only the input's
  // conversion (`input.to(memory_format=torch.channels_last)`), one copy reading and writing the
  // batch at 0.9 x 900 GB/s plus 2 us: 32 x 3 x 224 x 224 x 4 B = 19.27 MB, twice -> 49.574 us of
  // forward; at image_size 448 the input has four times the bytes (192.297 us). A warning says that
  // the convolutions gain nothing there.
  const std::string vgg = (dir / "vgg16-avgpool.json").string();
  {
    std::string text = slurp("models/vgg16.json");
    const std::string from = "\"max_pool2d_with_indices\"", to = "\"avg_pool2d\"";
    for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
    std::ofstream(vgg) << text;
  }
  for (int side : {224, 448}) {
    const std::string v100 =
        "--model " + vgg +
        " --cluster dgx1-v100 --nodes 1 --gpus-per-node 1 --set training.image_size=" + std::to_string(side);
    const auto a = report(v100, "v100-nchw");
    const auto b = report(v100 + " --set training.memory_format=channels_last", "v100-nhwc");
    const double copy = 2e-6 + 2.0 * 32 * 3 * side * side * 4 / (900e9 * 0.9);
    EXPECT_NEAR(b.first["forward_s"].get<double>() - a.first["forward_s"].get<double>(), copy, 1e-10) << side;
    EXPECT_NE(b.second.find("warning: training.memory_format \"channels_last\" with float32 convolutions on "
                            "v100-sxm2-32gb (no tensor cores for them)"),
              std::string::npos)
        << b.second;
  }
  // The report's conv_transposes_s is what channels_last takes away: the same VGG-16 on a V100 in
  // fp16 at batch 128 (GPU-bound), compute_only(contiguous) - compute_only(channels_last) = the
  // transposes - the input's copy + the difference in the GPU's wait for the host.
  {
    const std::string v100 = "--model " + vgg +
                             " --cluster dgx1-v100 --nodes 1 --gpus-per-node 1 --set training.compute_dtype=float16 "
                             "--set training.batch_size=128";
    const auto a = report(v100, "v100-fp16-nchw").first;
    const auto b = report(v100 + " --set training.memory_format=channels_last", "v100-fp16-nhwc").first;
    ASSERT_TRUE(a["conv_transposes_s"].is_number()) << a.dump();
    EXPECT_TRUE(b["conv_transposes_s"].is_null());
    const double copy = 2e-6 + 2.0 * 128 * 3 * 224 * 224 * 4 / (900e9 * 0.9);
    const double waits = a["compute_host"]["gpu_wait_s"].get<double>() - b["compute_host"]["gpu_wait_s"].get<double>();
    EXPECT_NEAR(a["compute_only_s"].get<double>() - b["compute_only_s"].get<double>(),
                a["conv_transposes_s"].get<double>() - copy + waits, 1e-9);
    // A calibrated step keeps whatever layout ran: no estimate of its transposes.
    EXPECT_TRUE(report(v100 + " --set training.measured_single_gpu_step=300ms", "v100-cal")
                    .first["conv_transposes_s"]
                    .is_null());
    auto t = run("run " + v100);
    EXPECT_NE(t.out.find("    NCHW<->NHWC transposes around cuDNN's convolutions "), std::string::npos) << t.out;
  }
  // A model without convolutions: a warning, and the same step.
  const std::string bert = "--model bert-base --cluster dgx-a100 --nodes 1 --gpus-per-node 1";
  const auto plain = report(bert, "bert");
  const auto cl = report(bert + " --set training.memory_format=channels_last", "bert-cl");
  EXPECT_EQ(plain.first["step_time_s"], cl.first["step_time_s"]);
  EXPECT_NE(cl.second.find("has no effect on model bert-base: it has no convolutions"), std::string::npos) << cl.second;
  // Anything else is refused with its path and the allowed values.
  EXPECT_TRUE(testing::refused_with(run("run " + a100 + " --set training.memory_format=nhwc"),
                                    {"/training/memory_format", "nhwc", "contiguous_format", "channels_last"}));
}

TEST(Cli, CollectiveExplainSaysWhatTheNetPluginDidToThePick) {
  // 4 aws-p5 nodes (32 ranks), 32 MiB: the point (2^25 B, 2^5 ranks) is inside the p5 region
  // tuner's first polygon (Tree LL128: its right edge at 32 ranks is (36 MiB, 32)), so the plugin
  // forces Tree/LL128; NCCL alone (no region tuner, no reported 75 us) is named after it.
  auto r = run("collective allreduce --cluster aws-p5 --nodes 4 --explain 32M");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\nplugin: aws-ofi-nccl/p5 region tuner forced Tree/LL128 (NCCL alone would pick "),
            std::string::npos)
      << r.out;
  auto j = run("collective allreduce --cluster aws-p5 --nodes 4 --explain 32M --json -");
  ASSERT_EQ(j.code, 0) << j.out;
  const Json p = Json::parse(j.out)["plugin"];
  EXPECT_EQ(p["effect"], "region_tuner");
  EXPECT_EQ(p["pick"], "Tree/LL128");
  EXPECT_EQ(p["region_tuner"], "forced");
  EXPECT_EQ(p["reported_latency_us"], 75.0);
  // A cluster without a net plugin has no plugin line.
  auto ib = run("collective allreduce --cluster dgx-h100 --nodes 4 --explain 32M --json -");
  ASSERT_EQ(ib.code, 0) << ib.out;
  EXPECT_FALSE(Json::parse(ib.out).contains("plugin"));
}

TEST(Cli, RunStatesTheAssumedPlacementOnAFabric) {
  // aws-p5 (configs/clusters/aws-p5.json): a fat-tree with "placement": "packed" and
  // "placement_guaranteed": false (Capacity Blocks place "close together", not under one leaf).
  auto r = run("run --model resnet50 --cluster aws-p5 --nodes 2 --json - -q");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json p = Json::parse(r.out)["placement"];
  EXPECT_EQ(p["assumed"], "packed");
  EXPECT_EQ(p["guaranteed"], false);
  EXPECT_EQ(p["text"], "packed (assumed; aws-p5 does not guarantee it: compare shows the scattered range)");
  // The text summary says the same.
  auto t = run("run --model resnet50 --cluster aws-p5 --nodes 2");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("  placement: packed (assumed; aws-p5 does not guarantee it: compare shows the scattered "
                       "range)\n"),
            std::string::npos)
      << t.out;
  // An owned fabric (dgx-h100-superpod: rail-optimized, packed, placement_guaranteed by default).
  auto owned = run("run --model resnet50 --cluster dgx-h100-superpod --nodes 2 --json - -q");
  ASSERT_EQ(owned.code, 0) << owned.out;
  const Json o = Json::parse(owned.out)["placement"];
  EXPECT_EQ(o["guaranteed"], true);
  EXPECT_EQ(o["text"], "packed (the cluster file's placement, guaranteed: fabric.placement_guaranteed)");
  // One node: no placement to assume (no inter-node traffic).
  auto one = run("run --model resnet50 --cluster aws-p5 --nodes 1 --json - -q");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_FALSE(Json::parse(one.out).contains("placement"));
  // `collective --explain` states it as well, and in its JSON.
  auto e = run("collective allreduce --cluster aws-p5 --nodes 4 --explain 64M");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("\nplacement: packed (assumed; aws-p5 does not guarantee it"), std::string::npos) << e.out;
  auto ej = run("collective allreduce --cluster aws-p5 --nodes 4 --explain 64M --json -");
  ASSERT_EQ(ej.code, 0) << ej.out;
  EXPECT_EQ(Json::parse(ej.out)["placement"]["guaranteed"], false);
}

TEST(Cli, TraceIsValidChromeTraceWithPhases) {
  auto d = temp_dir("trace");
  auto r = run("run --trace " + (d / "t.json").string() + " -q");
  ASSERT_EQ(r.code, 0) << r.out;
  Json t = Json::parse(slurp(d / "t.json"));
  ASSERT_TRUE(t["traceEvents"].is_array());
  int rs = 0, ag = 0, compute = 0, comm = 0;
  for (const auto& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    if (e["ph"] != "X") continue;
    ASSERT_TRUE(e["ts"].is_number());
    ASSERT_TRUE(e["dur"].is_number());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    if (e["name"] == "reduce-scatter") ++rs;
    if (e["name"] == "all-gather") ++ag;
    if (e["tid"] == 0) ++compute;
    if (e["tid"] == 1) ++comm;
  }
  EXPECT_GT(rs, 1);
  EXPECT_EQ(rs, ag);
  EXPECT_GT(compute, 100);
  EXPECT_GT(comm, 0);
  fs::remove_all(d);
}

TEST(Cli, ConfigErrorNamesFilePathValueAndExitsTwo) {
  auto r = run("run --set ddp.bucket_cap_mb=-3");
  EXPECT_TRUE(testing::refused_with(r, {"default.json", "/ddp/bucket_cap_mb", "-3", "> 0"}));
}

TEST(Cli, BadRankModeNamesFilePathValueAndAllowedOnes) {
  auto r = run("run --set simulation.ranks=some");
  EXPECT_TRUE(
      testing::refused_with(r, {"default.json", "/simulation/ranks: \"some\"", "\"representative\"", "\"all\""}));
}

TEST(Cli, UnknownScenarioListsBundledOnes) {
  auto r = run("run no-such-scenario");
  EXPECT_TRUE(testing::refused_with(r, {"no-such-scenario", "resnet50-2x8-a100-hdr"}));
}

TEST(Cli, BadInputWritesNoOutputFiles) {
  auto d = temp_dir("partial");
  auto r = run("run --set ddp.nope=1 --json " + (d / "r.json").string() + " --trace " + (d / "t.json").string());
  EXPECT_TRUE(testing::refused_with(r, {"/ddp/nope"}));
  EXPECT_FALSE(fs::exists(d / "r.json"));
  EXPECT_FALSE(fs::exists(d / "t.json"));
  EXPECT_TRUE(fs::is_empty(d));
  fs::remove_all(d);
}

TEST(Cli, MalformedJsonFileNamesLineAndColumn) {
  auto d = temp_dir("malformed");
  std::ofstream(d / "bad.json") << "{\n  \"model\": \"resnet50\",\n  \"cluster\": \n}\n";
  auto r = run("run " + (d / "bad.json").string());
  EXPECT_TRUE(testing::refused_with(r, {"bad.json:4:"}));
  fs::remove_all(d);
}

TEST(Cli, BucketsJsonHasBothPlans) {
  auto r = run("buckets --model resnet50 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  ASSERT_TRUE(j["iteration1"].is_array());
  ASSERT_TRUE(j["steady_state"].is_array());
  EXPECT_EQ(j["iteration1"].size(), 1u);  // no find_unused_parameters: one bucket in iteration 1
  EXPECT_GT(j["steady_state"].size(), 1u);
  std::vector<int> seen;
  for (const auto& b : j["steady_state"]) {
    EXPECT_TRUE(b["bytes"].is_number_integer());
    for (const auto& i : b["param_indices"]) seen.push_back(i);
  }
  std::sort(seen.begin(), seen.end());
  for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], static_cast<int>(i));  // a partition of all params
}

TEST(Cli, SweepMarksBestAndWritesJsonAndCsv) {
  auto d = temp_dir("sweep");
  auto r = run("sweep resnet50-2x8-a100-hdr --param ddp.bucket_cap_mb=25,5,100 --json " + (d / "s.json").string() +
               " --csv " + (d / "s.csv").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("<- best"), std::string::npos) << r.out;
  Json j = Json::parse(slurp(d / "s.json"));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][1]["params"]["ddp.bucket_cap_mb"], 5);
  double best = 1e30;
  for (const auto& row : j["rows"]) best = std::min(best, row["step_time_s"].get<double>());
  EXPECT_EQ(j["best"]["step_time_s"].get<double>(), best);
  std::string csv = slurp(d / "s.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
  fs::remove_all(d);
}

TEST(Cli, SweepRejectsBadValueBeforeRunningAnything) {
  auto r = run("sweep resnet50-2x8-a100-hdr --param ddp.bucket_cap_mb=5,-1");
  EXPECT_TRUE(testing::refused_with(r, {"/ddp/bucket_cap_mb"}));
}

TEST(Cli, ListShowsEveryCategory) {
  auto r = run("list");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* s : {"models", "gpus", "links", "clusters", "scenarios", "resnet50", "a100-sxm4-80gb", "ib-hdr",
                        "dgx-a100", "default"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  EXPECT_EQ(r.out.find("INVALID"), std::string::npos) << r.out;
}

TEST(Cli, UsageErrorExitsNonZero) {
  auto r = run("frobnicate");
  EXPECT_NE(r.code, 0);
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(Cli, CollectiveTableHasNcclShape) {
  auto r = run("collective allreduce --cluster dgx-a100 -b 8 -e 8G -f 2 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  const auto& rows = j["rows"];
  ASSERT_EQ(rows.size(), 31u);  // 8 B .. 8 GiB by 2
  double t_min = 1e30, t_max = 0, bus_lo = 1e30, bus_hi = 0;
  std::set<std::string> protos;
  for (const auto& row : rows) {
    const double size = row["size_bytes"], t = row["time_us"], bus = row["busbw_GBps"];
    EXPECT_NEAR(row["algbw_GBps"].get<double>(), size / (t * 1e-6) / 1e9, 1e-9 * size / t);
    EXPECT_NEAR(bus, row["algbw_GBps"].get<double>() * 2 * 7 / 8, 1e-9 * bus + 1e-12);
    if (size <= 65536) t_min = std::min(t_min, t), t_max = std::max(t_max, t);
    if (size >= 256.0 * 1048576) bus_lo = std::min(bus_lo, bus), bus_hi = std::max(bus_hi, bus);
    protos.insert(row["proto"].get<std::string>());
  }
  EXPECT_LT(t_max / t_min, 3.0) << "latency-bound region is not flat";
  EXPECT_LT(bus_hi / bus_lo, 1.15) << "no bandwidth plateau above 256 MiB";
  EXPECT_EQ(rows.front()["proto"], "LL");
  EXPECT_EQ(rows.back()["proto"], "Simple");
  EXPECT_GE(protos.size(), 2u);
}

TEST(Cli, CollectiveRestrictsAlgoAndProto) {
  auto r = run("collective allreduce --cluster dgx-a100 --nodes 2 -b 1M -e 64M --algo Tree --proto Simple --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json doc = Json::parse(r.out);  // a named document: the range-for must not outlive a temporary
  for (const auto& row : doc["rows"]) {
    EXPECT_EQ(row["algo"], "Tree");
    EXPECT_EQ(row["proto"], "Simple");
  }
  auto bad = run("collective allreduce --cluster dgx-a100 --algo Butterfly");
  EXPECT_TRUE(testing::refused_with(bad, {"Butterfly"}));
}

// NCCL settings that leave a run's collective no (algorithm, protocol) -- NVLS alone on A100s,
// which have no NVLink SHARP, for DDP's all-reduces or FSDP's all-gathers -- are an input error
// (exit 2, the file, /collective and the settings), not an abort inside the engine (it was
// SIGABRT, exit 134). Settings that leave one still run.
TEST(Cli, NcclSettingsThatLeaveACollectiveNoAlgorithmAreRefused) {
  auto r = run("run default -q --set collective.NCCL_ALGO=NVLS --set collective.NCCL_PROTO=LL128");
  EXPECT_TRUE(testing::refused_with(
      r, {"scenarios/default.json", "/collective", "no (algorithm, protocol) is enabled for all-reduce",
          "NCCL_ALGO=NVLS, NCCL_PROTO=LL128", "collective --cluster dgx-a100 --explain"}))
      << r.out;
  r =
      run("run --model resnet50 --cluster dgx-a100 --nodes 2 -q --set training.wrapper=fsdp --set "
          "collective.NCCL_ALGO=NVLS");
  EXPECT_TRUE(testing::refused_with(r, {"model resnet50 on cluster dgx-a100", "all-gather", "NCCL_ALGO=NVLS"}))
      << r.out;
  r = run("run --model resnet50 --cluster dgx-a100 --nodes 2 -q --set collective.NCCL_ALGO=Tree");
  EXPECT_EQ(r.code, 0) << r.out;
}

TEST(Cli, CalibrateWritesAUsableClusterAndReducesError) {
  auto d = temp_dir("calibrate");
  const std::string log = "tests/data/nccl-tests/azure-nc12s-v3_1x2_v100_pcie.txt";
  ASSERT_TRUE(fs::exists(log)) << "missing " << log;
  auto r = run("calibrate " + log + " --cluster azure-nc12s-v3 --holdout -o " + (d / "c.json").string() + " --json " +
               (d / "fit.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  Json fit = Json::parse(slurp(d / "fit.json"));
  EXPECT_LE(fit["median_abs_error_after"].get<double>(), fit["median_abs_error_before"].get<double>());
  EXPECT_LT(fit["median_abs_error_held_out"].get<double>(), 0.05);
  // The written cluster feeds `collective` and `run`.
  auto c = run("collective allreduce --cluster " + (d / "c.json").string() + " -b 1M -e 1M --json -");
  ASSERT_EQ(c.code, 0) << c.out;
  auto s = run("run default --set cluster=" + (d / "c.json").string() + " --set nodes=1 -q --json -");
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_EQ(Json::parse(s.out)["world_size"], 2);
  fs::remove_all(d);
}

TEST(Cli, CalibrateReadsNcclVersionAndWritesPostPickKnobs) {
  auto d = temp_dir("calibrate-p4d");
  const std::string log = "tests/data/nccl-tests/aws-p4d_2x8_a100_efa.txt";
  ASSERT_TRUE(fs::exists(log)) << "missing " << log;
  auto r = run("calibrate " + log + " --cluster p4d --nodes 2 --holdout -o " + (d / "c.json").string() + " --json " +
               (d / "fit.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("NCCL 2.8.3 (log)"), std::string::npos) << r.out;
  Json fit = Json::parse(slurp(d / "fit.json"));
  EXPECT_EQ(fit["nccl_version"], "2.8.3");
  EXPECT_LT(fit["median_abs_error_held_out"].get<double>(), 0.05);
  EXPECT_GT(fit["median_abs_error_before"].get<double>(), 0.5);  // uncalibrated p4d is far off (NOTES.md)
  Json cluster = Json::parse(slurp(d / "c.json"));
  EXPECT_EQ(cluster["nccl_version"], "2.8.3");
  EXPECT_EQ(cluster["nodes"], 2);
  EXPECT_FALSE(cluster["nccl_calibration"]["achieved"].empty());
  // The calibrated cluster reproduces a held-out size: 1 GiB measured 61556 us (out-of-place).
  auto c = run("collective allreduce --cluster " + (d / "c.json").string() + " -b 1G -e 1G --json -");
  ASSERT_EQ(c.code, 0) << c.out;
  const double t = Json::parse(c.out)["rows"][0]["time_us"].get<double>();
  EXPECT_NEAR(t, 61556, 0.05 * 61556);
  EXPECT_EQ(Json::parse(c.out)["rows"][0]["algo"], "Tree");
  fs::remove_all(d);
}

TEST(Cli, CalibrateFitsTheTimeColumnsAsked) {
  const std::string log = "tests/data/nccl-tests/azure-nc12s-v3_1x2_v100_pcie.txt";
  ASSERT_TRUE(fs::exists(log)) << "missing " << log;
  auto both = run("calibrate " + log + " --cluster azure-nc12s-v3 -g 1 --times both --json -");
  ASSERT_EQ(both.code, 0) << both.out;
  const Json rows = Json::parse(both.out)["rows"];
  int oop = 0, ip = 0;
  for (const auto& r : rows) (r["column"] == "out-of-place" ? oop : ip) += 1;
  EXPECT_EQ(oop, 58);  // two runs, 29 sizes each, every row has both times
  EXPECT_EQ(ip, 58);
  auto in_place = run("calibrate " + log + " --cluster azure-nc12s-v3 -g 1 --times in-place --json -");
  ASSERT_EQ(in_place.code, 0) << in_place.out;
  const Json ip_rows = Json::parse(in_place.out)["rows"];
  EXPECT_EQ(ip_rows.size(), 58u);
  EXPECT_EQ(ip_rows[0]["column"], "in-place");
  auto bad = run("calibrate " + log + " --cluster azure-nc12s-v3 --times sideways");
  EXPECT_EQ(bad.code, 2) << bad.out;
  // The run's NCCL environment: with NCCL_ALGO=Tree every row is fitted as Tree.
  auto tree = run("calibrate " + log + " --cluster azure-nc12s-v3 -g 1 --algo Tree --json -");
  ASSERT_EQ(tree.code, 0) << tree.out;
  const Json tree_rows = Json::parse(tree.out)["rows"];
  for (const auto& r : tree_rows) EXPECT_EQ(r["algo"], "Tree");
  auto unknown = run("calibrate " + log + " --cluster azure-nc12s-v3 --algo Butterfly");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
}

TEST(Cli, CalibrateAndCollectiveRefuseBadLaunchFacts) {
  const std::string log = "tests/data/nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt";
  ASSERT_TRUE(fs::exists(log)) << "missing " << log;
  auto three = run("calibrate " + log + " --cluster dgx-a100 -g 8,1,1");
  EXPECT_TRUE(testing::refused_with(three, {"3 values for 2 runs"}));
  auto zero = run("calibrate " + log + " --cluster dgx-a100 -g 0");
  EXPECT_TRUE(testing::refused_with(zero, {"\"0\" is not an integer from 1 to 8"}));
  auto ver = run("calibrate " + log + " --cluster dgx-a100 --nccl-version 3.1");
  EXPECT_EQ(ver.code, 2) << ver.out;
  EXPECT_NE(ver.out.find("--nccl-version: NCCL version \"3.1\" is not of the form MAJOR.MINOR.PATCH"),
            std::string::npos)
      << ver.out;
  auto many = run("collective allreduce --cluster dgx-a100 -g 9");
  EXPECT_TRUE(testing::refused_with(many, {"--gpus-per-process: \"9\" is not an integer from 1 to 8"}));
  auto frac = run("collective allreduce --cluster dgx-a100 -g 2.5");
  EXPECT_TRUE(testing::refused_with(frac, {"--gpus-per-process: \"2.5\" is not an integer from 1 to 8"}));
  auto list = run("collective allreduce --cluster dgx-a100 -g 8,1");
  EXPECT_TRUE(testing::refused_with(list, {"needs --compare LOG"}));
  auto tol = run("collective allreduce --cluster dgx-a100 --tolerance 0.1");
  EXPECT_EQ(tol.code, 2) << tol.out;
}

TEST(Cli, CollectiveLaunchModeAndNcclVersionChangeTheTable) {
  // -g 8: one host thread issues 8 launches per call (5 us each): a 40 us floor at small sizes.
  auto g8 = run("collective allreduce --cluster dgx-a100 -b 8 -e 8 -g 8 --json -");
  ASSERT_EQ(g8.code, 0) << g8.out;
  EXPECT_NEAR(Json::parse(g8.out)["rows"][0]["time_us"].get<double>(), 40.0, 1e-6);
  auto g1 = run("collective allreduce --cluster dgx-a100 -b 8 -e 8 --json -");
  ASSERT_EQ(g1.code, 0) << g1.out;
  EXPECT_LT(Json::parse(g1.out)["rows"][0]["time_us"].get<double>(), 20.0);
  // NCCL 2.4 had no LL128: no row picks it; the current release picks it at mid sizes.
  auto old = run("collective allreduce --cluster dgx-a100 -b 1K -e 1G --nccl-version 2.4.8 --json -");
  auto cur = run("collective allreduce --cluster dgx-a100 -b 1K -e 1G --json -");
  ASSERT_EQ(old.code, 0) << old.out;
  const Json old_rows = Json::parse(old.out)["rows"], cur_rows = Json::parse(cur.out)["rows"];
  int ll128_old = 0, ll128_cur = 0;
  for (const auto& row : old_rows) ll128_old += row["proto"] == "LL128";
  for (const auto& row : cur_rows) ll128_cur += row["proto"] == "LL128";
  EXPECT_EQ(ll128_old, 0);
  EXPECT_GT(ll128_cur, 0);
  EXPECT_EQ(Json::parse(old.out)["nccl_version"], "2.4.8");
}

// nccl-tests -G: a CUDA graph replays the calls, so on one node -g 8 runs at the GPU's floor; a
// log's banner "graph: N" sets it per run (and beats the flag), in collective --compare and calibrate.
TEST(Cli, CollectiveCudaGraphFromTheFlagOrTheBanner) {
  auto eager = run("collective allreduce --cluster dgx-a100 -b 8 -e 8 --json -");
  auto graph = run("collective allreduce --cluster dgx-a100 -b 8 -e 8 -g 8 --cuda-graph --json -");
  ASSERT_EQ(eager.code, 0) << eager.out;
  ASSERT_EQ(graph.code, 0) << graph.out;
  const Json g = Json::parse(graph.out);
  EXPECT_TRUE(g["cuda_graph"].get<bool>());
  EXPECT_DOUBLE_EQ(g["rows"][0]["time_us"].get<double>(), Json::parse(eager.out)["rows"][0]["time_us"].get<double>());
  auto across = run("collective allreduce --cluster dgx-a100 --nodes 2 -b 8 -e 8 -g 8 --cuda-graph --json -");
  ASSERT_EQ(across.code, 0) << across.out;
  EXPECT_NEAR(Json::parse(across.out)["rows"][0]["time_us"].get<double>(), 40.0, 1e-6);  // proxy host step stays

  auto d = temp_dir("graphlog");
  const std::string row =
      "           8             2     float     sum      -1    16.00    0.00    0.00      0    "
      "16.00    0.00    0.00      0\n";
  const std::string banner =
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 "
      "agg iters: 1 validation: 1 graph: ";
  std::ofstream(d / "g.txt") << banner << "1\n" << row << banner << "0\n" << row;
  auto cmp =
      run("collective allreduce --cluster dgx-a100 --cuda-graph --compare " + (d / "g.txt").string() + " --json -");
  ASSERT_EQ(cmp.code, 0) << cmp.out;
  const Json rows = Json::parse(cmp.out)["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0]["cuda_graph"].get<bool>());
  EXPECT_FALSE(rows[1]["cuda_graph"].get<bool>());  // "graph: 0" beats --cuda-graph
  EXPECT_LT(rows[0]["time_us"].get<double>(), 20.0);
  EXPECT_NEAR(rows[1]["time_us"].get<double>(), 40.0, 1e-6);
  // calibrate: the graph run has no host step, so only the eager -g 8 run can fit the launch cost.
  auto cal = run("calibrate " + (d / "g.txt").string() + " --cluster dgx-a100 --json -");
  ASSERT_EQ(cal.code, 0) << cal.out;
  EXPECT_TRUE(Json::parse(cal.out)["calibration"].contains("launch_overhead_s")) << cal.out;
  std::ofstream(d / "g1.txt") << banner << "1\n" << row;
  auto cal1 = run("calibrate " + (d / "g1.txt").string() + " --cluster dgx-a100 --json -");
  ASSERT_EQ(cal1.code, 0) << cal1.out;
  EXPECT_FALSE(Json::parse(cal1.out)["calibration"].contains("launch_overhead_s")) << cal1.out;
  auto text = run("calibrate " + (d / "g.txt").string() + " --cluster dgx-a100");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("; -g 8 (CUDA graph), 8\n"), std::string::npos) << text.out;
  // A graph count beyond range: exit 2 naming file, line, value and what is allowed.
  std::ofstream(d / "bad.txt") << "# nThread 1 nGpus 8 validation: 1 graph: 99999999999\n" << row;
  for (const std::string cmd : {"collective allreduce --cluster dgx-a100 --compare ", "calibrate "}) {
    auto bad = run(cmd + (d / "bad.txt").string() + (cmd[0] == 'c' && cmd[1] == 'a' ? " --cluster dgx-a100" : ""));
    EXPECT_EQ(bad.code, 2) << bad.out;
    EXPECT_NE(
        bad.out.find("bad.txt:1: cannot parse \"# nThread 1 nGpus 8 validation: 1 graph: 99999999999\": "
                     "expected 'graph: N' (nccl-tests -G, CUDA graph launches) with N an integer in [0, 1048576]"),
        std::string::npos)
        << bad.out;
  }
  fs::remove_all(d);
}

TEST(Cli, CollectiveComparesWithALogAndHoldsItToATolerance) {
  const std::string a100 = "tests/data/nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt";
  const std::string p4d = "tests/data/nccl-tests/aws-p4d_2x8_a100_efa.txt";
  ASSERT_TRUE(fs::exists(a100) && fs::exists(p4d)) << "missing tests/data/nccl-tests";
  // A100: runs -g 8 and -g 1 (from the file header); within 10 % for >= 1 MiB (8.8 %).
  auto ok = run("collective allreduce --cluster dgx-a100 -g 8,1 --compare " + a100 + " --tolerance 0.1 --json -");
  ASSERT_EQ(ok.code, 0) << ok.out;
  const Json doc = Json::parse(ok.out);
  EXPECT_EQ(doc["rows"].size(), 60u);
  EXPECT_EQ(doc["rows"][0]["gpus_per_process"], 8);
  EXPECT_EQ(doc["rows"][30]["gpus_per_process"], 1);
  EXPECT_TRUE(doc["compare"]["within_tolerance"].get<bool>());
  EXPECT_LT(doc["compare"]["median_abs_busbw_error_large"].get<double>(), 0.1);
  // The >= 1 MiB rows split at 64 MiB, as the band's size classes: the medians of the rows' own
  // errors on each side (the validated table's 22.4 % / 3.6 %, validated.cpp).
  std::vector<double> mid, big;
  for (const auto& row : doc["rows"]) {
    const double b = row["size_bytes"].get<double>();
    if (b >= 1048576.0) (b >= 64 * 1048576.0 ? big : mid).push_back(std::abs(row["busbw_error"].get<double>()));
  }
  ASSERT_EQ(mid.size(), 12u);
  ASSERT_EQ(big.size(), 14u);
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  EXPECT_DOUBLE_EQ(doc["compare"]["median_abs_busbw_error_mid"].get<double>(), median(mid));
  EXPECT_DOUBLE_EQ(doc["compare"]["median_abs_busbw_error_big"].get<double>(), median(big));
  EXPECT_NEAR(median(mid), 0.224, 0.0015);
  EXPECT_NEAR(median(big), 0.036, 0.0015);
  // Each row's error is predicted / measured busbw - 1, from the log's own time.
  const Json& r = doc["rows"][59];
  EXPECT_DOUBLE_EQ(r["measured_time_us"].get<double>(), 32285.0);
  EXPECT_NEAR(r["busbw_error"].get<double>(),
              r["busbw_GBps"].get<double>() / r["measured_busbw_GBps"].get<double>() - 1, 1e-12);
  // p4d (NCCL 2.8.3 read from the log) is far outside: exit 3, with the verdict in the output.
  auto bad = run("collective allreduce --cluster p4d --nodes 2 --compare " + p4d + " --tolerance 0.1");
  EXPECT_EQ(bad.code, 3) << bad.out;
  EXPECT_NE(bad.out.find("NCCL 2.8.3"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("beyond tolerance"), std::string::npos) << bad.out;
  // A log of another size of machine is refused (no device lines: the bandwidth columns say 8).
  auto ranks = run("collective allreduce --cluster azure-nc12s-v3 --compare " + a100);
  EXPECT_TRUE(testing::refused_with(ranks, {"the log has 8 ranks (busbw/algbw"}));
  auto cal = run("calibrate " + p4d + " --cluster p4d");  // p4d preset is one node: 8 ranks, the log 16
  EXPECT_TRUE(testing::refused_with(cal, {"the log has 16 ranks"}));
}

// nccl-tests 2.17.3+ output (tests/data/nccl-tests/formats: RUN B of the A100 log in the -I 1 -S 1,
// -J and -C 1 layouts): --compare and calibrate read each, and the per-iteration and JSON files
// give RUN B's own rows, so the same errors as RUN B of the original file.
TEST(Cli, CollectiveComparesWithEveryNcclTestsOutputLayout) {
  const std::string a100 = "tests/data/nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt";
  const fs::path f = "tests/data/nccl-tests/formats";
  // stdout alone (run_cli appends stderr: the original file has no banner, so -g 1 is warned about).
  auto json_of = [](const testing::CliResult& r) { return Json::parse(r.out.substr(0, r.out.size() - r.err.size())); };
  auto orig = run("collective allreduce --cluster dgx-a100 --compare " + a100 + " --json -");
  ASSERT_EQ(orig.code, 0) << orig.out;
  const Json orig_doc = json_of(orig);
  std::vector<double> run_b;
  for (const Json& r : orig_doc["rows"])
    if (r["run"] == 1) run_b.push_back(r["busbw_error"].get<double>());
  ASSERT_EQ(run_b.size(), 30u);
  for (const std::string name : {"a100-runb-I1-S1.txt", "a100-runb.json"}) {
    auto r = run("collective allreduce --cluster dgx-a100 --compare " + (f / name).string() + " --json -");
    ASSERT_EQ(r.code, 0) << name << ": " << r.out;
    const Json doc = json_of(r);
    ASSERT_EQ(doc["rows"].size(), 30u) << name;
    for (size_t i = 0; i < 30; ++i) EXPECT_DOUBLE_EQ(doc["rows"][i]["busbw_error"].get<double>(), run_b[i]) << name;
    EXPECT_EQ(doc["rows"][29].contains("measured_iterations"), name == "a100-runb-I1-S1.txt") << name;
    // the measurement's own spread: make_formats.py wrote i_cv% 1.5 on every row
    if (name == "a100-runb-I1-S1.txt")
      EXPECT_DOUBLE_EQ(doc["compare"]["measured_iter_cv_pct_median"].get<double>(), 1.5);
    else
      EXPECT_TRUE(doc["compare"]["measured_iter_cv_pct_median"].is_null()) << name;
  }
  // -C 1: times from algbw (to its printed 0.01 GB/s), the 12 rows below 1 GB/s left out, said once.
  auto c1 = run("collective allreduce --cluster dgx-a100 --compare " + (f / "a100-runb-C1.txt").string() + " --json -");
  ASSERT_EQ(c1.code, 0) << c1.out;
  EXPECT_NE(c1.err.find("warning: " + (f / "a100-runb-C1.txt").string() +
                        ": the time columns are the host's enqueue time per call (nccl-tests -C 1"),
            std::string::npos)
      << c1.err;
  const Json c1doc = json_of(c1);
  ASSERT_EQ(c1doc["rows"].size(), 18u);
  for (size_t i = 0; i < 18; ++i) EXPECT_NEAR(c1doc["rows"][i]["busbw_error"].get<double>(), run_b[i + 12], 0.01);
  // calibrate reads the JSON file, with the NCCL version it names.
  auto cal = run("calibrate " + (f / "a100-runb.json").string() + " --cluster dgx-a100");
  ASSERT_EQ(cal.code, 0) << cal.out;
  EXPECT_NE(cal.out.find("(1 run(s), 30 rows, 8 ranks) against dgx-a100; NCCL 2.28.7 (log)"), std::string::npos)
      << cal.out;
}

// Without --nodes, a log whose device lines name H hosts of the cluster's GPUs per node sets H
// nodes (said on stderr); --nodes still wins, and a log that fits no node count is refused with
// the count it would need.
TEST(Cli, CollectiveCompareTakesTheNodeCountFromTheLogsHosts) {
  auto d = temp_dir("hosts");
  auto write = [&](const std::string& file, int per_host_a, int per_host_b) {
    std::ofstream o(d / file);
    o << "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1\n";
    int rank = 0;
    for (const auto& [host, n] : {std::pair<std::string, int>{"pod01", per_host_a}, {"pod02", per_host_b}})
      for (int i = 0; i < n; ++i, ++rank)
        o << "#  Rank " << rank << " Group  0 Pid " << 100 + rank << " on " << host << " device " << i
          << " [0x07] NVIDIA A100-SXM4-80GB\n";
    // 1 GiB at 8000 us: algbw 134.22 GB/s, busbw x 2(16-1)/16.
    o << "1073741824 268435456 float sum -1 8000.0 134.22 251.66 0 8000.0 134.22 251.66 0\n";
  };
  write("two.txt", 8, 8);
  write("uneven.txt", 12, 4);
  auto two = run("collective allreduce --cluster dgx-a100 --compare " + (d / "two.txt").string() + " --json -");
  ASSERT_EQ(two.code, 0) << two.out;
  EXPECT_NE(two.err.find("2 nodes of \"dgx-a100\", from the log's device lines (2 hosts x 8 GPUs"), std::string::npos)
      << two.err;
  const Json doc = Json::parse(two.out.substr(0, two.out.size() - two.err.size()));
  EXPECT_EQ(doc["world_size"], 16);
  auto pinned = run("collective allreduce --cluster dgx-a100 --nodes 1 --compare " + (d / "two.txt").string());
  EXPECT_TRUE(testing::refused_with(pinned, {"the log has 16 ranks (its device lines)", "give --nodes 2"}));
  auto uneven = run("collective allreduce --cluster dgx-a100 --compare " + (d / "uneven.txt").string());
  EXPECT_TRUE(testing::refused_with(uneven, {"the log has 16 ranks", "give --nodes 2"}));
  auto cal = run("calibrate " + (d / "two.txt").string() + " --cluster dgx-a100 --json -");
  EXPECT_NE(cal.err.find("2 nodes of \"dgx-a100\""), std::string::npos) << cal.out;
  fs::remove_all(d);
}

// An EFA log that names aws-ofi-nccl's release is predicted with that release's plugin (1.9.1: no
// region tuner, NCCL's 4 MiB buffer), said in the header; without the line, the current one.
TEST(Cli, CollectiveCompareUsesThePluginReleaseTheLogNames) {
  auto d = temp_dir("ofi");
  const std::string row = "1073741824 268435456 float sum -1 8000.0 134.22 260.05 0 8000.0 134.22 260.05 0\n";
  std::ofstream(d / "v19.txt") << "ip-1:1:1 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.9.1-aws\n" << row;
  std::ofstream(d / "now.txt") << row;
  auto json_of = [](const testing::CliResult& r) { return Json::parse(r.out.substr(0, r.out.size() - r.err.size())); };
  auto v19 = run("collective allreduce --cluster aws-p5 --nodes 4 --compare " + (d / "v19.txt").string() + " --json -");
  auto now = run("collective allreduce --cluster aws-p5 --nodes 4 --compare " + (d / "now.txt").string() + " --json -");
  ASSERT_EQ(v19.code, 0) << v19.out;
  ASSERT_EQ(now.code, 0) << now.out;
  const Json a = json_of(v19), b = json_of(now);
  EXPECT_EQ(a["net_plugin_release"], "1.9.1");
  EXPECT_EQ(b["net_plugin_release"], "current");
  // 1 GiB on 4 p5 nodes: the current region tuner forces Ring/LL128; 1.9.1 leaves NCCL's pick with
  // the reported latency, NVLS tree (collective --explain 1G on aws-p5 --nodes 4 says both).
  EXPECT_EQ(b["rows"][0]["algo"], "Ring");
  EXPECT_EQ(b["rows"][0]["proto"], "LL128");
  EXPECT_EQ(a["rows"][0]["algo"], "NVLSTree");
  EXPECT_EQ(a["rows"][0]["proto"], "Simple");
  auto text = run("collective allreduce --cluster aws-p5 --nodes 4 --compare " + (d / "v19.txt").string());
  EXPECT_NE(text.out.find("; aws-ofi-nccl 1.9.1 (log))"), std::string::npos) << text.out;

  // A cluster file can name the release too (inter_node.net_plugin_version); calibrate writes the
  // log's into the cluster it fits.
  Json p5 = Json::parse(std::ifstream("configs/clusters/aws-p5.json"));
  p5["inter_node"]["net_plugin_version"] = "1.9.1";
  std::ofstream(d / "p5-19.json") << p5.dump(2);
  auto table = run("collective allreduce --cluster " + (d / "p5-19.json").string() + " --nodes 4 -b 1G -e 1G --json -");
  ASSERT_EQ(table.code, 0) << table.out;
  EXPECT_EQ(Json::parse(table.out)["rows"][0]["algo"], "NVLSTree");
  for (const auto& [value, words] : {std::pair<std::string, std::string>{
                                         "1.x", "\"1.x\" is not an aws-ofi-nccl release; allowed: MAJOR.MINOR.PATCH"},
                                     {"1.100.0", "is not an aws-ofi-nccl release"}}) {
    p5["inter_node"]["net_plugin_version"] = value;
    std::ofstream(d / "bad.json") << p5.dump(2);
    auto bad = run("collective allreduce --cluster " + (d / "bad.json").string() + " -b 1M -e 1M");
    EXPECT_TRUE(testing::refused_with(bad, {"bad.json", "/inter_node/net_plugin_version", words}));
  }
  Json a100 = Json::parse(std::ifstream("configs/clusters/dgx-a100.json"));
  a100["inter_node"]["net_plugin_version"] = "1.9.1";
  std::ofstream(d / "noplugin.json") << a100.dump(2);
  auto noplugin = run("collective allreduce --cluster " + (d / "noplugin.json").string() + " -b 1M -e 1M");
  EXPECT_TRUE(testing::refused_with(noplugin, {"/inter_node/net_plugin_version", "needs inter_node.net_plugin"}));
  auto cal =
      run("calibrate " + (d / "v19.txt").string() + " --cluster aws-p5 --nodes 4 -o " + (d / "fitted.json").string());
  ASSERT_EQ(cal.code, 0) << cal.out;
  EXPECT_EQ(Json::parse(std::ifstream(d / "fitted.json"))["inter_node"]["net_plugin_version"], "1.9.1");
  fs::remove_all(d);
}

TEST(Cli, NetPluginNamesAreCheckedAndAReleaseBeforeP6IsWarnedOf) {
  auto d = temp_dir("p6");
  Json p6 = Json::parse(std::ifstream("configs/clusters/aws-p6-b200.json"));
  // An unknown plugin: exit 2 naming the file, the path, the value and every allowed one.
  p6["inter_node"]["net_plugin"] = "aws-ofi-nccl/p7";
  std::ofstream(d / "p7.json") << p6.dump(2);
  auto bad = run("collective allreduce --cluster " + (d / "p7.json").string() + " -b 1M -e 1M");
  EXPECT_TRUE(testing::refused_with(bad, {"p7.json", "/inter_node/net_plugin", "\"aws-ofi-nccl/p7\"",
                                          "\"aws-ofi-nccl/p5en\"", "\"aws-ofi-nccl/p6\""}));
  // aws-ofi-nccl learnt p6-b200 in 1.16.0: a run naming 1.15.2 is warned that nothing of the plugin
  // is modelled; 1.16.0 is not.
  p6["inter_node"]["net_plugin"] = "aws-ofi-nccl/p6";
  p6["inter_node"]["net_plugin_version"] = "1.15.2";
  std::ofstream(d / "old.json") << p6.dump(2);
  auto old = run("run --model resnet50 --cluster " + (d / "old.json").string() + " --nodes 4 -q");
  EXPECT_EQ(old.code, 0) << old.out;
  EXPECT_NE(old.err.find("ddpsim: warning: inter_node.net_plugin_version 1.15.2 predates aws-ofi-nccl's p6-b200 "
                         "support (1.16.0): nothing of the plugin is modelled"),
            std::string::npos)
      << old.err;
  p6["inter_node"]["net_plugin_version"] = "1.16.0";
  std::ofstream(d / "new.json") << p6.dump(2);
  auto now = run("run --model resnet50 --cluster " + (d / "new.json").string() + " --nodes 4 -q");
  EXPECT_EQ(now.code, 0) << now.out;
  EXPECT_EQ(now.err.find("predates"), std::string::npos) << now.err;
  fs::remove_all(d);
}

TEST(Cli, CollectiveExplainListsNcclsCandidatesPickFirst) {
  auto r = run("collective allreduce --cluster dgx-h100 --nodes 2 --explain 64M --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json doc = Json::parse(r.out);
  const Json& c = doc["candidates"];
  ASSERT_GE(c.size(), 2u);
  EXPECT_TRUE(c[0]["picked"].get<bool>());
  for (size_t i = 1; i < c.size(); ++i) {
    EXPECT_FALSE(c[i]["picked"].get<bool>());
    // Sorted by NCCL's own estimate: the pick has the least tuner time.
    EXPECT_LE(c[i - 1]["nccl_model_time_us"].get<double>(), c[i]["nccl_model_time_us"].get<double>());
  }
  // The pick is what the table row for that size reports.
  auto row = run("collective allreduce --cluster dgx-h100 --nodes 2 -b 64M -e 64M --json -");
  const Json row_doc = Json::parse(row.out);
  const Json& rr = row_doc["rows"][0];
  EXPECT_EQ(rr["algo"], c[0]["algo"]);
  EXPECT_EQ(rr["proto"], c[0]["proto"]);
  EXPECT_DOUBLE_EQ(rr["time_us"].get<double>(), c[0]["time_us"].get<double>());
  auto both = run("collective allreduce --cluster dgx-h100 --explain 1M --compare x.txt");
  EXPECT_EQ(both.code, 2) << both.out;
}

// NCCL_ALGO / NCCL_PROTO as users export them: '^' disables the listed names, "function:list"
// entries apply to one collective; a bad token is refused with exit 2 and what is allowed.
TEST(Cli, CollectiveTakesNcclsListSyntax) {
  // One DGX A100, 8 MiB: NCCL picks Ring/LL128 by default (the A100 log's choice at that size).
  auto def = run("collective allreduce --cluster dgx-a100 -b 8M -e 8M --json -");
  ASSERT_EQ(def.code, 0) << def.out;
  ASSERT_EQ(Json::parse(def.out)["rows"][0]["proto"], "LL128");
  auto no_ll128 = run("collective allreduce --cluster dgx-a100 -b 8M -e 8M --proto ^LL128 --json -");
  ASSERT_EQ(no_ll128.code, 0) << no_ll128.out;
  EXPECT_NE(Json::parse(no_ll128.out)["rows"][0]["proto"], "LL128");
  auto only_tree =
      run("collective allreduce --cluster dgx-a100 -b 8M -e 8M --algo 'allgather:Ring;allreduce:Tree' --json -");
  ASSERT_EQ(only_tree.code, 0) << only_tree.out;
  EXPECT_EQ(Json::parse(only_tree.out)["rows"][0]["algo"], "Tree");
  auto bad = run("collective allreduce --cluster dgx-a100 --algo 'Ring;Tree'");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--algo \"Ring;Tree\": every entry after the first needs a function prefix"),
            std::string::npos)
      << bad.out;
  auto unknown = run("collective allreduce --cluster dgx-a100 --proto ^LL129");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("unknown NCCL protocol \"LL129\"; valid: LL, LL128, Simple"), std::string::npos)
      << unknown.out;
}

TEST(Cli, ClusterFileWithBadNcclFieldsIsRefusedWithPaths) {
  auto d = temp_dir("badnccl");
  std::ofstream(d / "c.json") << R"({"name": "x", "gpu": "a100-sxm4-80gb", "nodes": 1, "gpus_per_node": 8,
    "intra_node": {"fabric": "nvswitch", "link": "nvlink3", "links_per_gpu": 12},
    "nccl_version": "2.x",
    "nccl_calibration": {"achieved": [{"algo": "Butterfly", "proto": "LL", "bw_factor": -1}], "nodes": 0}})";
  auto r = run("collective allreduce --cluster " + (d / "c.json").string());
  EXPECT_TRUE(testing::refused_with(r, {"/nccl_version", "/nccl_calibration/achieved/0/algo",
                                        "/nccl_calibration/achieved/0/bw_factor", "/nccl_calibration/nodes"}));
  fs::remove_all(d);
}

TEST(Cli, LogsOfOtherCollectivesAreRefused) {
  auto d = temp_dir("rslog");
  std::ofstream(d / "rs.txt")
      << "# Collective test starting: reduce_scatter_perf\n"
         "     1048576        262144     float     sum      -1    30.49   34.40   30.10      0    "
         "30.79   34.06   29.80      0\n";
  auto r = run("calibrate " + (d / "rs.txt").string() + " --cluster dgx-a100");
  EXPECT_TRUE(testing::refused_with(r, {"the log is reduce_scatter_perf output"}));
  auto c = run("collective allreduce --cluster dgx-a100 --compare " + (d / "rs.txt").string());
  EXPECT_EQ(c.code, 2) << c.out;
  fs::remove_all(d);
}

// All-gather and reduce-scatter: nccl-tests' size column (the output / one rank's input), busbw
// = algbw x (n-1)/n, --explain, and --compare holding a log to the test that wrote it.
TEST(Cli, CollectiveAllGatherAndReduceScatterTables) {
  for (const std::string op : {"allgather", "reducescatter"}) {
    SCOPED_TRACE(op);
    auto r = run("collective " + op + " --cluster dgx-a100 -b 8 -e 8G -f 2 --json -");
    ASSERT_EQ(r.code, 0) << r.out;
    const Json doc = Json::parse(r.out);
    EXPECT_EQ(doc["collective"], op);
    const auto& rows = doc["rows"];
    // Sizes below 8 ranks x 16 B give no rank a part (nccl-tests rounds the per-rank count down
    // to 16 B): 128 B .. 8 GiB remain.
    ASSERT_EQ(rows.size(), 27u);
    EXPECT_EQ(rows.front()["size_bytes"].get<double>(), 128.0);
    for (const auto& row : rows) {
      const double size = row["size_bytes"], t = row["time_us"];
      EXPECT_NEAR(row["algbw_GBps"].get<double>(), size / (t * 1e-6) / 1e9, 1e-9 * size / t);
      EXPECT_NEAR(row["busbw_GBps"].get<double>(), row["algbw_GBps"].get<double>() * 7 / 8, 1e-9 * size / t);
    }
    EXPECT_EQ(rows.back()["algo"], "Ring");
    EXPECT_EQ(rows.back()["proto"], "Simple");
    // The same bytes as an all-reduce buffer take longer: half the ring steps here.
    auto ar = run("collective allreduce --cluster dgx-a100 -b 1G -e 1G --json -");
    ASSERT_EQ(ar.code, 0) << ar.out;
    const double t_ar = Json::parse(ar.out)["rows"][0]["time_us"];
    EXPECT_LT(rows[23]["time_us"].get<double>(), 0.6 * t_ar);  // row 23: 1 GiB
    auto ex = run("collective " + op + " --cluster dgx-a100 --explain 64M --json -");
    ASSERT_EQ(ex.code, 0) << ex.out;
    const Json e = Json::parse(ex.out);
    EXPECT_EQ(e["size_bytes"], 67108864.0);
    EXPECT_TRUE(e["candidates"][0]["picked"].get<bool>());
    for (const auto& c : e["candidates"]) EXPECT_NE(c["algo"], "Tree");  // NCCL runs no tree for them
  }
  // A range with no size every rank can hold a part of is refused, not printed empty.
  auto tiny = run("collective reducescatter --cluster dgx-a100 -b 8 -e 64");
  EXPECT_TRUE(testing::refused_with(tiny, {"below 128 B"}));
  auto bad = run("collective alltoall --cluster dgx-a100");
  EXPECT_TRUE(testing::refused_with(bad, {"allreduce, allgather, reducescatter, broadcast"}));
}

TEST(Cli, CollectiveBroadcastAgainstThePublishedA100Table) {
  // broadcast_perf on 8 x A100 (tests/data/nccl-tests/a100-sxm4-40gb_1x8_broadcast.txt: the
  // old rooted layout, -g 8 in its banner, two 0-byte rows): read as one run of broadcast_perf,
  // busbw = algbw, NCCL's Ring at every size.
  auto dir = temp_dir("bcast");
  const std::string json = (dir / "b.json").string();
  auto r =
      run("collective broadcast --cluster dgx-a100 --compare tests/data/nccl-tests/a100-sxm4-40gb_1x8_broadcast.txt "
          "--json " +
          json);
  ASSERT_EQ(r.code, 0) << r.out;
  // No '# Collective test starting' line and a rooted row without redop: said, and taken as asked.
  EXPECT_NE(r.err.find("taken as broadcast_perf"), std::string::npos) << r.err;
  const Json d = Json::parse(slurp(json));
  EXPECT_EQ(d["collective"], "broadcast");
  const auto& rows = d["rows"];
  ASSERT_EQ(rows.size(), 32u);  // 34 rows less the two of 0 bytes
  for (const auto& row : rows) {
    EXPECT_EQ(row["algo"], "Ring");
    EXPECT_EQ(row["run"], 0);
    EXPECT_EQ(row["gpus_per_process"], 8);
    EXPECT_NEAR(row["measured_busbw_GBps"].get<double>(),
                row["size_bytes"].get<double>() / row["measured_time_us"].get<double>() / 1e3, 1e-9);
  }
  // The table's own busbw at 8 GiB: 8589934592 B / 36896 us = 232.8 GB/s.
  EXPECT_NEAR(rows.back()["measured_busbw_GBps"].get<double>(), 232.81, 0.01);
  // --explain: Ring only, and its trust line names the broadcast_perf table of this preset.
  auto ex = run("collective broadcast --cluster dgx-a100 --explain 64M --json -");
  ASSERT_EQ(ex.code, 0) << ex.out;
  const Json e = Json::parse(ex.out);
  for (const auto& c : e["candidates"]) EXPECT_EQ(c["algo"], "Ring");
  EXPECT_NE(e["trust"].get<std::string>().find(
                "(nccl-tests/a100-sxm4-40gb_1x8_broadcast.txt): median |busbw error| 10.7 % at >= 1 MiB, 12.8 % below"),
            std::string::npos)
      << e["trust"];
  // At 64 MiB the broadcast table's >= 64 MiB median, 3.2 %, is what a call of that size rests on.
  EXPECT_NEAR(e["trust_at_size"].get<double>(), 0.032, 1e-12);
  // An all-reduce log is refused as the wrong test.
  auto wrong =
      run("collective broadcast --cluster dgx-a100 --compare "
          "tests/data/nccl-tests/a100-sxm4-40gb_1x8_allreduce_superbench.txt");
  EXPECT_TRUE(testing::refused_with(wrong, {"all_reduce_perf output", "give broadcast_perf output"}));
}

TEST(Cli, CollectiveCompareTakesOnlyTheMatchingTest) {
  auto d = temp_dir("aglog");
  const std::string rows =
      "#  Rank  0 Group  0 Pid 1 on n device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  1 Group  0 Pid 2 on n device  1 [0x0a] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  2 Group  0 Pid 3 on n device  2 [0x44] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  3 Group  0 Pid 4 on n device  3 [0x4a] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  4 Group  0 Pid 5 on n device  4 [0x84] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  5 Group  0 Pid 6 on n device  5 [0x8a] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  6 Group  0 Pid 7 on n device  6 [0xc0] NVIDIA A100-SXM4-80GB\n"
      "#  Rank  7 Group  0 Pid 8 on n device  7 [0xc3] NVIDIA A100-SXM4-80GB\n"
      "  1073741824     268435456     float    none      -1   5000.0  214.75  187.90      0   5000.0  214.75  187.90"
      "      0\n";
  std::ofstream(d / "ag.txt") << "# Collective test starting: all_gather_perf\n# nThread 1 nGpus 1\n" << rows;
  std::ofstream(d / "ag-nobanner.txt") << "# nThread 1 nGpus 1\n" << rows;
  auto ok = run("collective allgather --cluster dgx-a100 --compare " + (d / "ag.txt").string() + " --json -");
  ASSERT_EQ(ok.code, 0) << ok.out;
  const Json doc = Json::parse(ok.out);
  ASSERT_EQ(doc["rows"].size(), 1u);
  EXPECT_NEAR(doc["rows"][0]["measured_busbw_GBps"].get<double>(), 1073741824.0 / 5000e-6 / 1e9 * 7 / 8, 1e-6);
  // Its rows ("none", busbw/algbw = 7/8) say all_gather_perf without the banner line too.
  auto rows_only = run("collective reducescatter --cluster dgx-a100 --compare " + (d / "ag-nobanner.txt").string());
  EXPECT_TRUE(testing::refused_with(rows_only, {"the log is all_gather_perf output"}));
  auto other = run("collective reducescatter --cluster dgx-a100 --compare " + (d / "ag.txt").string());
  EXPECT_TRUE(testing::refused_with(other, {"give reduce_scatter_perf output"}));
  const std::string a100 = "tests/data/nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt";  // all_reduce_perf
  auto ar = run("collective allgather --cluster dgx-a100 --compare " + a100);
  EXPECT_TRUE(testing::refused_with(ar, {"all_reduce_perf"}));
  fs::remove_all(d);
}

TEST(Cli, CalibrateRejectsMalformedLogWithLineNumber) {
  auto d = temp_dir("badlog");
  std::ofstream(d / "bad.txt") << "# nThread 1 nGpus 2\n           8             2     float     sum    10.9  oops\n";
  auto r = run("calibrate " + (d / "bad.txt").string() + " --cluster azure-nc12s-v3");
  EXPECT_TRUE(testing::refused_with(r, {"bad.txt:2"}));
  auto m = run("calibrate " + (d / "missing.txt").string() + " --cluster azure-nc12s-v3");
  EXPECT_NE(m.code, 0) << m.out;
  fs::remove_all(d);
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(Cli, ShowListsEveryLayerWithTotals) {
  auto r = run("show resnet50 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["layers"].size(), 174u);
  // torchvision's ResNet-50: about 4.1 GMACs per 224x224 image, i.e. 8.2 GFLOP forward.
  EXPECT_NEAR(j["fwd_flops_per_sample"].get<double>() / 1e9, 8.2, 0.2);
  auto bad = run("show no-such-model");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("resnet50"), std::string::npos) << bad.out;
}

TEST(Cli, ListModelsShowsParametersSizeAndFlops) {
  auto r = run("list models");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("25.6M parameters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GFLOP/sample"), std::string::npos) << r.out;
}

TEST(Cli, CalibratedSingleGpuStepIsReproduced) {
  auto r =
      run("run default --set nodes=1 --set gpus_per_node=1 --set training.measured_single_gpu_step='\"123ms\"' --json "
          "- -q");
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  // The measured step is the model without DDP (docs/scenarios.md); DDP at one GPU adds its own
  // work (ddp_overhead_s: the gradient copies into the bucket, DDP.forward's host work).
  EXPECT_GT(j["ddp_overhead_s"].get<double>(), 0.0);
  EXPECT_NEAR(j["step_time_s"].get<double>() - j["ddp_overhead_s"].get<double>(), 0.123, 1e-12);
  EXPECT_NE(j["compute_scale"].get<double>(), 1.0);
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(Cli, ValidateComparesTheCommittedCpuRunCaseByCase) {
  auto r = run("validate bench/results/cpu-2rank-resnet18.json --tolerance 1.0 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  ASSERT_EQ(j["cases"].size(), 5u);  // the run's caps: default, 1, 5, 25, 100 (its config.caps)
  for (const auto& c : j["cases"]) {
    const double m = c["measured"]["step_time_s"], p = c["predicted"]["step_time_s"];
    EXPECT_NEAR(c["step_time_error"].get<double>(), (p - m) / m, 1e-12);
    EXPECT_FALSE(c["buckets"].empty());
  }
  // A tolerance nobody meets: exit 3, the comparison still printed.
  auto tight = run("validate bench/results/cpu-2rank-resnet18.json --tolerance 1e-9");
  EXPECT_EQ(tight.code, 3) << tight.out;
  EXPECT_NE(tight.out.find("BEYOND TOLERANCE"), std::string::npos) << tight.out;
}

TEST(Cli, ValidateGivenTheNoDdpStepLeavesDdpsOwnWorkOnTop) {
  // At one rank the step is the no-DDP step plus DDP's own work: with compute scaled to the measured
  // no-DDP step, step / (1 + predicted DDP-over-no-DDP) is that measured step again.
  auto r = run("validate bench/results/cpu-1rank-resnet18.json --given-no-ddp-step --tolerance 1.0 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const Json j = Json::parse(r.out);
  std::ifstream f("bench/results/cpu-1rank-resnet18.json");
  Json file = Json::parse(f);
  ASSERT_EQ(j["cases"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const Json& c = j["cases"][i];
    const double no_ddp = file["step"]["cases"][i]["no_ddp_step_time_s"];
    EXPECT_NEAR(c["predicted"]["step_time_s"].get<double>() / (1 + c["ddp_overhead"]["predicted"].get<double>()),
                no_ddp, 1e-8 * no_ddp);
  }
  // A case without its no-DDP steps: refused with the path.
  auto d = temp_dir("validate-no-ddp");
  file["step"]["cases"][1].erase("no_ddp_step_time_s");
  std::ofstream(d / "old.json") << file.dump();
  auto old = run("validate " + (d / "old.json").string() + " --given-no-ddp-step");
  EXPECT_TRUE(testing::refused_with(old, {"old.json: /step/cases/1/no_ddp_step_time_s: missing"}));
  fs::remove_all(d);
}

TEST(Cli, ValidateAtOneRankHasNoBucketTimesToCompare) {
  // One rank: the prediction runs no collective, so no bucket end time is compared; the column says
  // n/a (it printed 0.0, a perfect match) and the JSON holds null. Two ranks keep their figure.
  auto one = run("validate bench/results/cpu-1rank-resnet18.json --tolerance 1.0 --json -");
  ASSERT_EQ(one.code, 0) << one.out;
  const Json j = Json::parse(one.out);
  for (const auto& c : j["cases"]) {
    EXPECT_TRUE(c["bucket_end_median_abs_error"].is_null()) << c.dump();
    EXPECT_EQ(c["buckets"].size(), 0u);
  }
  auto text = run("validate bench/results/cpu-1rank-resnet18.json --tolerance 1.0");
  ASSERT_EQ(text.code, 0) << text.out;
  const size_t row = text.out.find("\n  default ");
  ASSERT_NE(row, std::string::npos) << text.out;
  const std::string line = text.out.substr(row + 1, text.out.find('\n', row + 1) - row - 1);
  EXPECT_EQ(line.substr(line.size() - 5), "  n/a") << line;  // the bucket column, last
  auto two = run("validate bench/results/cpu-2rank-resnet18.json --tolerance 1.0 --json -");
  ASSERT_EQ(two.code, 0) << two.out;
  const Json two_rank = Json::parse(two.out);  // named: a range-for over a temporary's member dangles
  for (const auto& c : two_rank["cases"]) EXPECT_GT(c["bucket_end_median_abs_error"].get<double>(), 0);
}

// Every rank's compute-only steps (rank_compute_only_times_s): the case is simulated with the
// ranks' own variation, so its median step is longer than the same file's without the field (one
// representative rank), by about sigma / sqrt(pi) of the compute for two ranks; a file without the
// field validates as before; a bad field is refused with its path.
TEST(Cli, ValidateSimulatesTheRanksOwnComputeVariation) {
  const std::string path = "bench/results/rank-jitter-2026-12-06/shufflenet_v2_x1_0-1.json";
  std::ifstream f(path);
  const Json file = Json::parse(f);
  auto d = temp_dir("validate-jitter");
  Json plain = file;
  for (auto& c : plain["step"]["cases"]) c.erase("rank_compute_only_times_s");
  std::ofstream(d / "plain.json") << plain.dump();
  auto with = run("validate " + path + " --tolerance 1.0 --json -");
  auto without = run("validate " + (d / "plain.json").string() + " --tolerance 1.0 --json -");
  ASSERT_EQ(with.code, 0) << with.out;
  ASSERT_EQ(without.code, 0) << without.out;
  const Json jw = Json::parse(with.out), jo = Json::parse(without.out);
  ASSERT_EQ(jw["cases"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const Json& cw = jw["cases"][i];
    const double cv = cw["rank_jitter_cv"].get<double>();
    EXPECT_GT(cv, 0.05) << i;  // 14-17 % on that run
    EXPECT_TRUE(jo["cases"][i]["rank_jitter_cv"].is_null());
    const double pw = cw["predicted"]["step_time_s"].get<double>();
    const double po = jo["cases"][i]["predicted"]["step_time_s"].get<double>();
    const double compute = jo["cases"][i]["predicted"]["compute_only_s"].get<double>();
    // Longer, and by no more than the two-rank expectation of the slower of two such ranks
    // (sigma / sqrt(pi) of the compute, sigma ~ cv) with room for the median of 200 draws.
    EXPECT_GT(pw, po) << i;
    EXPECT_LT(pw - po, 1.5 * cv / std::sqrt(M_PI) * compute) << i;
  }
  auto text = run("validate " + path + " --tolerance 1.0");
  EXPECT_NE(text.out.find("ranks' own compute variation: "), std::string::npos) << text.out;
  Json bad = file;
  bad["step"]["cases"][2]["rank_compute_only_times_s"][1] = Json::array({0.1, 0.1});
  std::ofstream(d / "bad.json") << bad.dump();
  auto r = run("validate " + (d / "bad.json").string());
  EXPECT_TRUE(
      testing::refused_with(r, {"bad.json: /step/cases/2/rank_compute_only_times_s/1: [0.1,0.1] is not allowed"}));
  fs::remove_all(d);
}

// The CPU run's all-reduce sweep is the collective's table now: a bad row is refused with the
// results file's own path, value and what is allowed (not the generated scenario's).
TEST(Cli, ValidateRefusesABadAllReduceSweepRowByItsPath) {
  std::ifstream f("bench/results/cpu-2rank-resnet18.json");
  const Json file = Json::parse(f);
  auto d = temp_dir("validate-sweep");
  const std::vector<std::tuple<std::string, Json, std::string>> bad = {
      {"time_s", -1, "/calibration/allreduce/3/time_s: -1 is not allowed; expected a time > 0"},
      {"size_bytes", 4096, "/calibration/allreduce/3/size_bytes: 4096 is not allowed; expected a size above"},
      {"size_bytes", "abc", "/calibration/allreduce/3/size_bytes: \"abc\" is not a number"},
      {"ranks", "x", "/calibration/allreduce/3/ranks: \"x\" is not a number"}};
  for (const auto& [key, value, want] : bad) {
    Json doc = file;
    doc["calibration"]["allreduce"][3][key] = value;
    std::ofstream(d / "bad.json") << doc.dump();
    auto r = run("validate " + (d / "bad.json").string());
    EXPECT_TRUE(testing::refused_with(r, {"bad.json: " + want}));
  }
  // The sweep or one of its rows of the wrong JSON type.
  for (const auto& [doc, want] :
       std::vector<std::pair<Json, std::string>>{{[&] {
                                                    Json j = file;
                                                    j["calibration"]["allreduce"] = 5;
                                                    return j;
                                                  }(),
                                                  "/calibration/allreduce: 5 is not allowed; expected an array"},
                                                 {[&] {
                                                    Json j = file;
                                                    j["calibration"]["allreduce"][2] = 7;
                                                    return j;
                                                  }(),
                                                  "/calibration/allreduce/2: 7 is not allowed; expected an object"}}) {
    std::ofstream(d / "bad.json") << doc.dump();
    auto r = run("validate " + (d / "bad.json").string());
    EXPECT_TRUE(testing::refused_with(r, {"bad.json: " + want}));
  }
  fs::remove_all(d);
}

// ProcessGroupGloo's worker threads (hardware.gloo_threads; 2 when a file predates it, torch's
// default): two workers overlap queued all-reduces, so the run with many buckets is predicted
// faster than with one worker and none slower; a bad count is refused with its path.
TEST(Cli, ValidateRunsTheRunsGlooWorkerThreads) {
  std::ifstream f("bench/results/cpu-2rank-resnet18.json");
  Json file = Json::parse(f);
  file["hardware"].erase("gloo_threads");  // as in files written before the bench recorded it
  auto d = temp_dir("validate-gloo");
  auto predicted = [&](const Json& threads) {
    Json doc = file;
    if (!threads.is_null()) doc["hardware"]["gloo_threads"] = threads;
    std::ofstream(d / "run.json") << doc.dump();
    auto r = run("validate " + (d / "run.json").string() + " --tolerance 1.0 --json -");
    EXPECT_EQ(r.code, 0) << r.out;
    std::vector<double> steps;
    const Json j = Json::parse(r.out);
    for (const auto& c : j["cases"]) steps.push_back(c["predicted"]["step_time_s"].get<double>());
    return steps;
  };
  const auto one = predicted(1), two = predicted(2), unset = predicted(nullptr);
  ASSERT_EQ(one.size(), 5u);
  EXPECT_EQ(two, unset);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_LE(two[i], one[i] * (1 + 1e-12)) << "case " << i;
  EXPECT_LT(two[1], one[1]);  // the 1 MiB cap: 12 buckets
  for (const Json& bad : {Json(0), Json(17), Json(1.5), Json("two")}) {
    Json doc = file;
    doc["hardware"]["gloo_threads"] = bad;
    std::ofstream(d / "bad.json") << doc.dump();
    auto r = run("validate " + (d / "bad.json").string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("bad.json: /hardware/gloo_threads: " + bad.dump() + " is not allowed; expected an integer"),
              std::string::npos)
        << r.out;
  }
  fs::remove_all(d);
}

// The run's own collective call (calibration.allreduce_call_s, timed amid compute) replaces the
// ring fit's base latency as each bucket's call on the backward thread. One rank, no contention:
// every host second is in the step, so each case moves by its bucket count x the difference, here
// 100 us over the base latency by hand. A bad value is refused with its path; null keeps the fit's.
TEST(Cli, ValidateChargesTheRunsMeasuredCollectiveCallPerBucket) {
  std::ifstream f("bench/results/cpu-1rank-resnet18.json");
  Json file = Json::parse(f);
  ASSERT_FALSE(file["calibration"].contains("allreduce_call_s"));  // written before the bench timed it
  const double base = file["calibration"]["ring_fit"]["base_latency_s"].get<double>();
  auto d = temp_dir("validate-call");
  auto cases = [&](const Json& call, bool absent = false) {
    Json doc = file;
    if (!absent) doc["calibration"]["allreduce_call_s"] = call;
    std::ofstream(d / "run.json") << doc.dump();
    auto r = run("validate " + (d / "run.json").string() + " --tolerance 1.0 --json -");
    EXPECT_EQ(r.code, 0) << r.out;
    return Json::parse(r.out)["cases"];
  };
  const Json before = cases(nullptr, true), after = cases(base + 100e-6);
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(after.size(), 3u);
  for (size_t i = 0; i < before.size(); ++i) {
    const double nb = file["step"]["cases"][i]["num_buckets"].get<double>();  // 3, 12, 2 (caps default, 1, 100)
    EXPECT_GE(nb, 2) << "case " << i;
    EXPECT_NEAR(
        after[i]["predicted"]["step_time_s"].get<double>() - before[i]["predicted"]["step_time_s"].get<double>(),
        nb * 100e-6, 1e-9)
        << "case " << i;
  }
  EXPECT_EQ(cases(nullptr), before);  // null: the fit's base latency, as without the field
  for (const Json& bad : {Json(-1e-6), Json(2.0), Json("95us")}) {
    Json doc = file;
    doc["calibration"]["allreduce_call_s"] = bad;
    std::ofstream(d / "bad.json") << doc.dump();
    auto r = run("validate " + (d / "bad.json").string());
    EXPECT_TRUE(
        testing::refused_with(r, {"bad.json: /calibration/allreduce_call_s: " + bad.dump() + " is not allowed"}))
        << r.out;
  }
  fs::remove_all(d);
}

// A one-rank run's Python hook callback (calibration.hook_callback_s, collective.host_callback):
// each case moves by exactly its bucket count x the figure; a two-rank file does not move (the
// callback runs when the all-reduce ends there); bad values exit 2 with the path.
TEST(Cli, ValidateChargesAOneRankRunsHookCallbackPerBucket) {
  auto d = temp_dir("validate-callback");
  auto cases = [&](const std::string& path, const Json* cb) {
    std::ifstream f(path);
    Json doc = Json::parse(f);
    if (cb) doc["calibration"]["hook_callback_s"] = *cb;
    std::ofstream(d / "run.json") << doc.dump();
    auto r = run("validate " + (d / "run.json").string() + " --tolerance 1.0 --json -");
    EXPECT_EQ(r.code, 0) << r.out;
    return std::make_pair(doc, Json::parse(r.out)["cases"]);
  };
  const Json v = 200e-6, null_v = nullptr;
  const auto [file, before] = cases("bench/results/cpu-1rank-resnet18.json", nullptr);
  ASSERT_FALSE(file["calibration"].contains("hook_callback_s"));  // written before the bench timed it
  const auto after = cases("bench/results/cpu-1rank-resnet18.json", &v).second;
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(after.size(), 3u);
  for (size_t i = 0; i < before.size(); ++i) {
    const double nb = file["step"]["cases"][i]["num_buckets"].get<double>();  // 3, 12, 2
    EXPECT_GE(nb, 2) << "case " << i;
    EXPECT_NEAR(
        after[i]["predicted"]["step_time_s"].get<double>() - before[i]["predicted"]["step_time_s"].get<double>(),
        nb * 200e-6, 1e-9)
        << "case " << i;
  }
  EXPECT_EQ(cases("bench/results/cpu-1rank-resnet18.json", &null_v).second, before);  // null: as absent
  const auto two = cases("bench/results/cpu-2rank-resnet18.json", nullptr).second;
  const auto two_cb = cases("bench/results/cpu-2rank-resnet18.json", &v).second;
  ASSERT_EQ(two.size(), two_cb.size());
  for (size_t i = 0; i < two.size(); ++i)
    EXPECT_EQ(two[i]["predicted"]["step_time_s"], two_cb[i]["predicted"]["step_time_s"]) << "case " << i;
  for (const Json& bad : {Json(-1e-6), Json(2.0), Json("170us")}) {
    std::ifstream f("bench/results/cpu-1rank-resnet18.json");
    Json doc = Json::parse(f);
    doc["calibration"]["hook_callback_s"] = bad;
    std::ofstream(d / "bad.json") << doc.dump();
    auto r = run("validate " + (d / "bad.json").string());
    EXPECT_TRUE(testing::refused_with(r, {"bad.json: /calibration/hook_callback_s: " + bad.dump() + " is not allowed"}))
        << r.out;
  }
  fs::remove_all(d);
}

TEST(Cli, ValidateRefusesFilesItCannotUse) {
  auto d = temp_dir("validate");
  std::ofstream(d / "other.json") << R"({"format": "something-else"})";
  auto r = run("validate " + (d / "other.json").string());
  EXPECT_TRUE(testing::refused_with(r, {"ddpbench-results/1"}));
  std::ofstream(d / "layers.json") << R"({"format": "ddpbench-results/1", "mode": "layers", "hardware": {"ngpus": 1}})";
  auto l = run("validate " + (d / "layers.json").string());
  EXPECT_TRUE(testing::refused_with(l, {"/mode"}));
  std::ofstream(d / "gpu.json") << R"({"format": "ddpbench-results/1", "mode": "step",
    "hardware": {"ngpus": 2, "gpu_name": "Imaginary GPU 9000"}, "step": {"model": {}, "cases": []}})";
  auto g = run("validate " + (d / "gpu.json").string());
  EXPECT_TRUE(testing::refused_with(g, {"Imaginary GPU 9000"}));
  fs::remove_all(d);
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(Cli, UnusedParametersNeedFindUnusedParameters) {
  auto r = run("run default --set model=skip-branch -q");
  EXPECT_TRUE(testing::refused_with(r, {"/ddp/find_unused_parameters", "branch_b.0.weight"}));
  auto ok = run("run default --set model=skip-branch --set ddp.find_unused_parameters=true -q");
  EXPECT_EQ(ok.code, 0) << ok.out;
}

TEST(Cli, CollectiveRejectsBadSizes) {
  auto r = run("collective allreduce --cluster dgx-a100 -b lots");
  EXPECT_TRUE(testing::refused_with(r, {"--min-bytes", "\"lots\""}));
  auto order = run("collective allreduce --cluster dgx-a100 -b 1M -e 1K");
  EXPECT_TRUE(testing::refused_with(order, {"--max-bytes"}));
}

TEST(Cli, ImportTraceRefusesTheLegacyProfilerFormat) {
  auto r = run("import-trace tests/golden/traces/legacy_autograd_profiler.json --model resnet50");
  EXPECT_TRUE(testing::refused_with(r, {"with_modules=True"}));
}

}  // namespace
}  // namespace ddpsim

namespace ddpsim {
namespace {

TEST(CliBench, ScalingReportsGpusFlowsWallAndPeakRssPerSize) {
  auto r = run("bench --scaling --nodes 1 --nodes 2 --repeat 1 --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  Json j = Json::parse(r.out);
  ASSERT_TRUE(j.contains("scaling")) << r.out;
  ASSERT_EQ(j["scaling"].size(), 2u);
  EXPECT_EQ(j["scaling"][0]["world_size"], 8);
  EXPECT_EQ(j["scaling"][1]["world_size"], 16);
  for (const auto& c : j["scaling"]) {
    EXPECT_GT(c["flows"].get<double>(), 0);
    EXPECT_GT(c["wall_s_per_step"].get<double>(), 0);
    EXPECT_GT(c["peak_rss_mib"].get<double>(), 1.0);  // a real process is more than 1 MiB
  }
  auto t = run("bench --scaling --nodes 1 --repeat 1");
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("GPUs       flows   wall s/step   peak RSS MiB"), std::string::npos) << t.out;
}

TEST(CliBench, PlainBenchHasAPeakRssColumn) {
  auto r = run("bench --nodes 1 --repeat 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("peak RSS MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("world_size"), std::string::npos) << r.out;
}

TEST(Cli, QuietSweepWithoutAnOutputFileWarnsThatNothingIsWritten) {
  const std::string warning = "--quiet without an output file (--json, --csv, ...): nothing is written";
  // run -q checks a scenario and shows only its warnings (CliNewcomer): no warning of its own.
  auto bare = run("run -q");
  ASSERT_EQ(bare.code, 0) << bare.out;
  EXPECT_EQ(bare.out.find(warning), std::string::npos) << bare.out;
  const fs::path dir = temp_dir("quiet-outputs");
  auto sweep = run("sweep default --param ddp.bucket_cap_mb=10 -j 1 -q");
  ASSERT_EQ(sweep.code, 0) << sweep.out;
  EXPECT_NE(sweep.out.find("ddpsim: warning: sweep " + warning), std::string::npos) << sweep.out;
  auto journal = run("sweep default --param ddp.bucket_cap_mb=10 -j 1 -q --out " + (dir / "rows.jsonl").string());
  ASSERT_EQ(journal.code, 0) << journal.out;
  EXPECT_EQ(journal.out.find(warning), std::string::npos) << journal.out;
  auto dry = run("sweep default --param ddp.bucket_cap_mb=10 --dry-run -q");  // lists the points: not silent
  ASSERT_EQ(dry.code, 0) << dry.out;
  EXPECT_EQ(dry.out.find(warning), std::string::npos) << dry.out;
  auto merge = run("merge -q " + (dir / "rows.jsonl").string());
  ASSERT_EQ(merge.code, 0) << merge.out;
  EXPECT_NE(merge.out.find("ddpsim: warning: merge " + warning), std::string::npos) << merge.out;
  auto loud = run("sweep default --param ddp.bucket_cap_mb=10 -j 1");  // without --quiet the table is
  ASSERT_EQ(loud.code, 0) << loud.out;
  EXPECT_EQ(loud.out.find(warning), std::string::npos) << loud.out;
  fs::remove_all(dir);
}

TEST(CliLog, DebugLevelNamesScenarioAndChildProcessesOnStderr) {
  auto quiet = run("run -q");
  ASSERT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("ddpsim: debug:"), std::string::npos) << quiet.out;  // default: warn
  auto dbg = run("--log-level debug run -q");
  ASSERT_EQ(dbg.code, 0) << dbg.out;
  EXPECT_NE(dbg.out.find("ddpsim: debug: scenario \"default\" is "), std::string::npos) << dbg.out;
  EXPECT_NE(dbg.out.find("ddpsim: info: scenario "), std::string::npos) << dbg.out;
  // Not --csv /dev/null: a device is refused as an output (it was replaced by a regular file before).
  const fs::path csv = temp_dir("log-sweep") / "sweep.csv";
  auto sweep = run("--log-level debug sweep default --param ddp.bucket_cap_mb=10,20 -j 1 --csv " + csv.string());
  ASSERT_EQ(sweep.code, 0) << sweep.out;
  EXPECT_NE(sweep.out.find("child process "), std::string::npos) << sweep.out;
  EXPECT_NE(sweep.out.find("started for configuration 2 of 2"), std::string::npos) << sweep.out;
  // stdout stays clean JSON: log lines are on stderr.
  const std::string json_only = bin() + " --log-level debug run -q --json - 2>/dev/null";
  FILE* p = ::popen(json_only.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  std::array<char, 4096> buf{};
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) text.append(buf.data(), n);
  ::pclose(p);
  EXPECT_NO_THROW(Json::parse(text)) << text;
  auto off = run("--log-level off run -q");
  EXPECT_EQ(off.code, 0);
  EXPECT_EQ(off.out, "");
}

TEST(CliLog, UnknownLevelIsRefusedWithTheAllowedOnes) {
  auto r = run("--log-level loud run");
  EXPECT_TRUE(testing::refused_with(r, {"loud", "debug"}));
}

}  // namespace
}  // namespace ddpsim

// ---- A newcomer's commands: a scenario from flags, show, subfolders, headers, warnings, names ----

namespace ddpsim {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// scenarios/default.json is ResNet-50 on 2 DGX A100 nodes with the training section's defaults
// written out (batch 32, float32, sgd), so the same run built from flags has the same figures.
TEST(CliNewcomer, RunFromModelAndClusterFlagsEqualsTheSameScenarioFile) {
  auto flags = run("run --model resnet50 --cluster dgx-a100 --nodes 2 --json - -q");
  auto file = run("run default --json - -q");
  ASSERT_EQ(flags.code, 0) << flags.out;
  ASSERT_EQ(file.code, 0) << file.out;
  const Json a = Json::parse(flags.out), b = Json::parse(file.out);
  EXPECT_EQ(a["world_size"], 16);
  EXPECT_EQ(a["step_time_s"], b["step_time_s"]);
  EXPECT_EQ(a["overlap_ratio"], b["overlap_ratio"]);
  EXPECT_EQ(a["scenario"], "model resnet50 on cluster dgx-a100");
  // The header names what was asked.
  auto text = run("run --model resnet50 --cluster dgx-a100 --nodes 2");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_EQ(text.out.substr(0, text.out.find('\n')), "ddpsim: model resnet50 on cluster dgx-a100");
  // Without --nodes the cluster file's own count (dgx-a100.json: 1 node of 8 GPUs).
  auto one = run("run --model resnet50 --cluster dgx-a100 --json - -q");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_EQ(Json::parse(one.out)["world_size"], 8);
  auto gpn = run("run --model resnet50 --cluster dgx-a100 --gpus-per-node 2 --json - -q");
  ASSERT_EQ(gpn.code, 0) << gpn.out;
  EXPECT_EQ(Json::parse(gpn.out)["world_size"], 2);
}

TEST(CliNewcomer, RunTakesAModelFileByPath) {
  auto d = temp_dir("model-path");
  fs::copy_file("models/resnet50.json", d / "my.json");
  auto mine = run("run --model " + (d / "my.json").string() + " --cluster dgx-a100 --nodes 2 --json - -q");
  auto bundled = run("run --model resnet50 --cluster dgx-a100 --nodes 2 --json - -q");
  ASSERT_EQ(mine.code, 0) << mine.out;
  ASSERT_EQ(bundled.code, 0) << bundled.out;
  EXPECT_EQ(Json::parse(mine.out)["step_time_s"], Json::parse(bundled.out)["step_time_s"]);
  fs::remove_all(d);
}

TEST(CliNewcomer, HeaderEchoesEveryOverride) {
  auto r =
      run("run resnet50-2x8-a100-hdr --set ddp.bucket_cap_mb=50 --set model=skip-branch "
          "--set ddp.find_unused_parameters=true");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "ddpsim: resnet50-2x8-a100-hdr, with --set ddp.bucket_cap_mb=50 --set model=skip-branch --set "
            "ddp.find_unused_parameters=true");
  EXPECT_TRUE(has(r.out, "  model skip-branch (")) << r.out;
  auto j = run("run default --set ddp.bucket_cap_mb=50 --algo Ring --json - -q");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_EQ(Json::parse(j.out)["overrides"],
            Json::parse(R"(["collective.NCCL_ALGO=\"Ring\"", "ddp.bucket_cap_mb=50"])"));
}

TEST(CliNewcomer, FlagsThatDoNotGoTogetherAreRefused) {
  auto both = run("run default --model gpt2");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_TRUE(has(both.out,
                  "scenario \"default\" and --model gpt2: give one (to change a scenario's model: --set "
                  "model=gpt2)"))
      << both.out;
  auto no_cluster = run("run --model gpt2");
  EXPECT_EQ(no_cluster.code, 2);
  EXPECT_TRUE(has(no_cluster.out, "--model gpt2 needs --cluster C")) << no_cluster.out;
  auto no_model = run("run --cluster dgx-a100");
  EXPECT_EQ(no_model.code, 2);
  EXPECT_TRUE(has(no_model.out, "--cluster dgx-a100 needs --model")) << no_model.out;
}

TEST(CliNewcomer, ScenarioSubfoldersAreListedAndCallable) {
  auto l = run("list scenarios");
  ASSERT_EQ(l.code, 0) << l.out;
  // Every file under scenarios/compare and scenarios/claims, by "folder/stem".
  for (const char* folder : {"compare", "claims"})
    for (const auto& e : fs::directory_iterator(fs::path("scenarios") / folder))
      if (e.path().extension() == ".json") {
        const std::string name = std::string(folder) + "/" + e.path().stem().string();
        EXPECT_TRUE(has(l.out, "  " + name + "  -  ") || has(l.out, "  " + name + "\n")) << name << "\n" << l.out;
      }
  auto r = run("run claims/pin-memory-resnet50-1x8-a100 --json - -q");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Json::parse(r.out)["world_size"], 8);
  const Json file = core::read_json_file("scenarios/claims/pin-memory-resnet50-1x8-a100.json");
  EXPECT_EQ(Json::parse(r.out)["scenario"], file.value("name", std::string("pin-memory-resnet50-1x8-a100")));
}

TEST(CliNewcomer, ShowsAClusterAGpuAndALink) {
  auto c = run("show dgx-a100");
  ASSERT_EQ(c.code, 0) << c.out;
  // configs/clusters/dgx-a100.json: 1 node x 8 a100-sxm4-80gb, NVSwitch with 12 nvlink3, 8 x ib-hdr.
  EXPECT_TRUE(has(c.out, "cluster dgx-a100 (")) << c.out;
  EXPECT_TRUE(has(c.out, "1 node(s) x 8 a100-sxm4-80gb = 8 GPUs")) << c.out;
  EXPECT_TRUE(has(c.out, "intra-node: nvswitch, 12 x nvlink3 (nvlink,")) << c.out;
  EXPECT_TRUE(has(c.out, "inter-node: 8 x ib-hdr (infiniband,")) << c.out;
  auto cj = run("show dgx-a100 --json -");
  ASSERT_EQ(cj.code, 0) << cj.out;
  EXPECT_EQ(Json::parse(cj.out), core::read_json_file("configs/clusters/dgx-a100.json"));
  auto g = run("show a100-sxm4-80gb");
  ASSERT_EQ(g.code, 0) << g.out;
  EXPECT_TRUE(has(g.out, "GPU a100-sxm4-80gb: ampere, 108 SMs")) << g.out;  // A100: 108 SMs (NVIDIA A100 whitepaper)
  auto k = run("show ib-hdr");
  ASSERT_EQ(k.code, 0) << k.out;
  // HDR InfiniBand: 200 Gb/s = 25 GB/s per direction.
  EXPECT_TRUE(has(k.out, "link ib-hdr (infiniband, 25.00 GB/s per direction")) << k.out;
}

TEST(CliNewcomer, DidYouMeanForMisspeltNames) {
  struct Case {
    std::string args, want;
  };
  const Case cases[] = {
      {"run --model resnet5 --cluster dgx-a100", "did you mean \"resnet50\""},
      {"run --model resnet50 --cluster dgx-a10", "did you mean \"dgx-a100\""},
      {"run defualt", "did you mean \"default\""},
      {"run compare/llama7b-16x8-h100-adamv", "did you mean \"compare/llama7b-16x8-h100-adamw\""},
      {"run --set ddp.bucket_cap=5", "/ddp/bucket_cap: unknown key; did you mean \"bucket_cap_mb\""},
      {"run --set cluster=dgx-h10", "did you mean \"dgx-h100\""},
      {"show ib-hrd", "did you mean \"ib-hdr\""},
      {"show a100-sxm4-80g", "did you mean \"a100-sxm4-80gb\""},
      {"list model", "did you mean \"models\""},
  };
  for (const auto& c : cases) {
    auto r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, c.want)) << c.args << "\nwanted: " << c.want << "\n" << r.out;
  }
  // Nothing close: no guess.
  auto far = run("run --model zzzzzzzz --cluster dgx-a100");
  EXPECT_EQ(far.code, 2);
  EXPECT_FALSE(has(far.out, "did you mean")) << far.out;
}

TEST(CliNewcomer, WarnsOfABucketCapAboveTheModelAndASequenceBeyondItsPositions) {
  // ResNet-50 has 25,557,032 parameters (torchvision), 102,228,128 bytes of float32 gradients =
  // 97.49 MiB; 26214400 is 25 MiB written in bytes.
  auto r = run("run --set ddp.bucket_cap_mb=26214400 -q");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.err,
                  "ddpsim: warning: ddp.bucket_cap_mb 26214400 MiB is larger than all of model resnet50's "
                  "gradients (97.49 MiB): DDP puts them in one bucket and nothing overlaps with the backward "
                  "pass; bucket_cap_mb is in MiB, not bytes (25 MiB is 25, not 26214400)\n"))
      << r.err;
  auto ok = run("run -q");
  EXPECT_EQ(ok.code, 0);
  EXPECT_FALSE(has(ok.err, "warning")) << ok.err;
  // GPT-2's learned position table (transformer.wpe.weight) has 1024 rows (n_positions = 1024).
  auto s = run("run --model gpt2 --cluster dgx-a100 --gpus-per-node 1 --set training.seq_len=2048 -q");
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_TRUE(has(s.err,
                  "ddpsim: warning: training.seq_len 2048 is beyond model gpt2's 1024 positions "
                  "(transformer.wpe.weight has 1024 rows)"))
      << s.err;
  auto fits = run("run --model gpt2 --cluster dgx-a100 --gpus-per-node 1 --set training.seq_len=1024 -q");
  EXPECT_EQ(fits.code, 0) << fits.out;
  EXPECT_FALSE(has(fits.err, "positions")) << fits.err;
}

TEST(CliNewcomer, WarnsWhichGpusPerProcessALogWithoutBannerIsReadWith) {
  // The p4d log is kept as published: its rows without nccl-tests' "# nThread .. nGpus .." banner.
  const std::string log = "tests/data/nccl-tests/aws-p4d_2x8_a100_efa.txt";
  ASSERT_TRUE(fs::exists(log)) << "missing " << log;
  auto r = run("collective --cluster p4d --nodes 2 --compare " + log);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.err, "ddpsim: warning: " + log +
                             ": run 1 of 1 has no '# nThread .. nGpus ..' banner; assumed -g 1 (one GPU per process); "
                             "give -g/--gpus-per-process if it ran otherwise"))
      << r.err;
  // With -g given nothing is assumed; nor with the banner nccl-tests prints (its format, from a
  // published all_reduce_perf run) put back on top.
  auto g = run("collective --cluster p4d --nodes 2 -g 1 --compare " + log);
  EXPECT_EQ(g.code, 0) << g.out;
  EXPECT_FALSE(has(g.err, "banner")) << g.err;
  auto d = temp_dir("banner");
  {
    std::ofstream out(d / "with-banner.txt");
    out << "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
           "validation: 1 graph: 0\n"
        << slurp(log);
  }
  auto b = run("collective --cluster p4d --nodes 2 --compare " + (d / "with-banner.txt").string());
  EXPECT_EQ(b.code, 0) << b.out;
  EXPECT_FALSE(has(b.err, "banner")) << b.err;
  fs::remove_all(d);
}

TEST(CliNewcomer, SizeSuffixesReadOneWay) {
  // 8G, 8GiB and 8589934592 are the same size (2^33 bytes), so the same table.
  auto g = run("collective --cluster dgx-a100 -b 1G -e 8G --json -");
  auto gib = run("collective --cluster dgx-a100 -b 1GiB -e 8GiB --json -");
  auto bytes = run("collective --cluster dgx-a100 -b 1073741824 -e 8589934592 --json -");
  ASSERT_EQ(g.code, 0) << g.out;
  ASSERT_EQ(gib.code, 0) << gib.out;
  ASSERT_EQ(bytes.code, 0) << bytes.out;
  EXPECT_EQ(Json::parse(g.out)["rows"].back()["size_bytes"], 8589934592.0);
  EXPECT_EQ(Json::parse(g.out)["rows"], Json::parse(gib.out)["rows"]);
  EXPECT_EQ(Json::parse(g.out)["rows"], Json::parse(bytes.out)["rows"]);
  // The decimal units are refused with both readings and the accepted forms.
  auto gb = run("collective --cluster dgx-a100 -e 8GB");
  EXPECT_EQ(gb.code, 2) << gb.out;
  EXPECT_TRUE(has(gb.out,
                  "--max-bytes: \"8GB\" is ambiguous: write 8G or 8GiB for powers of 1024, or the number of "
                  "bytes for powers of 1000; accepted: bytes like 8, 64K, 256M, 8G (K, M, G: powers of 1024, as "
                  "nccl-tests reads them) or 8KiB, 8MiB, 8GiB, 1TiB"))
      << gb.out;
  for (const std::string bad : {"-b 64kB", "-b 64KB", "-e 1TB", "--explain 64MB", "--buffsize 4MB"}) {
    auto r = run("collective --cluster dgx-a100 " + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
    EXPECT_TRUE(has(r.out, "is ambiguous")) << bad << "\n" << r.out;
  }
  auto run_bad = run("run --buffsize 4MB -q");
  EXPECT_EQ(run_bad.code, 2) << run_bad.out;
  EXPECT_TRUE(has(run_bad.out, "--buffsize: \"4MB\" is ambiguous")) << run_bad.out;
}

TEST(CliNewcomer, OneSetOfNcclFlagsForEverySubcommand) {
  for (const std::string cmd : {"collective", "calibrate", "run", "sweep", "compare"}) {
    auto h = run(cmd + " --help");
    EXPECT_EQ(h.code, 0) << cmd;
    for (const char* flag : {"--algo", "--proto", "--min-channels", "--max-channels", "--min-ctas", "--max-ctas",
                             "--collnet-enable", "--buffsize", "--nthreads", "--nccl-version"})
      EXPECT_TRUE(has(h.out, flag)) << cmd << " lacks " << flag;
  }
  // calibrate takes --min-ctas / --max-ctas / --collnet-enable now (refused as unknown before).
  auto c =
      run("calibrate tests/data/nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt --cluster dgx-a100 -g 8,1 "
          "--min-ctas 2 --max-ctas 32 --collnet-enable");
  EXPECT_EQ(c.code, 0) << c.out;
  // On run the flags are the scenario's collective fields.
  auto flag = run("run --algo Ring --proto Simple --min-channels 4 --json - -q");
  auto set =
      run("run --set collective.NCCL_ALGO=Ring --set collective.NCCL_PROTO=Simple "
          "--set collective.NCCL_MIN_NCHANNELS=4 --json - -q");
  ASSERT_EQ(flag.code, 0) << flag.out;
  ASSERT_EQ(set.code, 0) << set.out;
  EXPECT_EQ(Json::parse(flag.out)["step_time_s"], Json::parse(set.out)["step_time_s"]);
  auto bad = run("run --algo Rnig -q");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_TRUE(has(bad.out, "--algo \"Rnig\"")) << bad.out;
  auto range = run("calibrate tests/data/nccl-tests/a100-sxm4-80gb_1x8_nvswitch.txt --cluster dgx-a100 --max-ctas 65");
  EXPECT_EQ(range.code, 2) << range.out;
  EXPECT_TRUE(has(range.out, "65 is not allowed; expected an integer from 0 to 64")) << range.out;
}

TEST(CliNewcomer, SweepAndCompareTakeAModelAndAClusterWithoutAScenario) {
  // scenarios/default.json is resnet50 on dgx-a100 at 2 nodes: the same points from flags give the
  // same figures, row by row.
  auto flags =
      run("sweep --model resnet50 --cluster dgx-a100 --nodes 2 --param ddp.bucket_cap_mb=10,25 -q -j 1 --json -");
  auto file = run("sweep default --param ddp.bucket_cap_mb=10,25 -q -j 1 --json -");
  ASSERT_EQ(flags.code, 0) << flags.out;
  ASSERT_EQ(file.code, 0) << file.out;
  const Json a = Json::parse(flags.out)["rows"], b = Json::parse(file.out)["rows"];
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a[i]["step_time_s"], b[i]["step_time_s"]) << i;
    EXPECT_EQ(a[i]["world_size"], 16) << i;
  }
  auto cf = run("compare --model resnet50 --cluster dgx-a100 --cluster dgx-h100 --nodes 2 -q -j 1 --json -");
  auto cs = run("compare default --cluster dgx-a100 --cluster dgx-h100 --nodes 2 -q -j 1 --json -");
  ASSERT_EQ(cf.code, 0) << cf.out;
  ASSERT_EQ(cs.code, 0) << cs.out;
  const Json ra = Json::parse(cf.out)["rows"], rb = Json::parse(cs.out)["rows"];
  ASSERT_EQ(ra.size(), 2u);
  ASSERT_EQ(rb.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(ra[i]["step_time_s"], rb[i]["step_time_s"]) << i;
  // A scenario and --model together are refused, as for run.
  auto both = run("sweep default --model resnet50 --cluster dgx-a100 --param ddp.bucket_cap_mb=10,25 -q");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_TRUE(has(both.out, "give one")) << both.out;
}

}  // namespace
}  // namespace ddpsim
