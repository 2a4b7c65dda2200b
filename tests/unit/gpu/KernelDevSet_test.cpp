// The per-kernel model against the published single-kernel timings of tests/data/kernels/
// (kernels.csv and convs.csv; sources in its README.md). `ctest -R KernelDevSet -V` prints the table. The
// bounds are the errors the model achieved when the rows were added (stated next to each bound)
// plus a margin of 5 points: a regression guard that fails if the model moves away from the
// measurements, not a fit (no constant was tuned to make these rows pass; see the README).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/catalog.hpp"
#include "config/specs.hpp"
#include "core/json_reader.hpp"
#include "gpu/kernel_model.hpp"

namespace {

struct Row {
  std::string id, gpu, kind, dtype;
  double m = 0, n = 0, k = 0, bytes = 0, measured_s = 0;
  std::string source;
};

// The data rows of tests/data/kernels/NAME (header skipped), each split at its commas; a row
// without `columns` cells fails the test.
std::vector<std::vector<std::string>> csv_rows(const std::string& name, size_t columns) {
  const auto file = std::filesystem::path(DDPSIM_SOURCE_DIR) / "tests" / "data" / "kernels" / name;
  std::ifstream in(file);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    std::vector<std::string> f;
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (f.size() != columns)
      ADD_FAILURE() << file << ": malformed row: " << line;
    else
      rows.push_back(f);
  }
  return rows;
}

std::vector<Row> load_rows() {
  std::vector<Row> rows;
  for (const auto& f : csv_rows("kernels.csv", 10)) {
    Row r;
    r.id = f[0];
    r.gpu = f[1];
    r.kind = f[2];
    r.dtype = f[3];
    r.m = std::stod(f[4]);
    r.n = std::stod(f[5]);
    r.k = std::stod(f[6]);
    r.bytes = std::stod(f[7]);
    r.measured_s = std::stod(f[8]);
    r.source = f[9];
    rows.push_back(r);
  }
  return rows;
}

// The backward of torch.nn.functional.layer_norm over an M x N tensor (normalised over N) in the
// row's dtype, through the model's own rule for a `native_layer_norm` record (kernel_model.cpp:
// the grad-input kernel reads dy and x twice and writes dx, the gamma/beta kernel reads dy and x
// once more), memory kernels at the GPU's rates as compute_model.cpp gives them.
double layer_norm_backward(const Row& r, const ddpsim::config::GpuSpec& gpu, double fixed) {
  const double elem = r.dtype == "float32" ? 4 : 2;
  ddpsim::config::KernelRecord rec;
  rec.name = "native_layer_norm";
  rec.in[0] = rec.out[0] = elem * r.m * r.n;
  rec.backward = true;
  ddpsim::config::ModelSpec m;
  m.batch_size = 1;
  ddpsim::config::LayerSpec l;
  l.name = "ln";
  l.kernels = {rec};
  m.layers = {l};
  ddpsim::gpu::KernelContext c;
  c.memory = ddpsim::gpu::device_rates(gpu, "float32", fixed);
  const auto lk = ddpsim::gpu::layer_kernels(m, c);
  double t = 0;
  for (const auto& k : lk[0].backward) t += k.seconds;
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

TEST(KernelDevSet, PublishedKernelTimings) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  const auto rows = load_rows();
  ASSERT_GE(rows.size(), 10u) << "tests/data/kernels/kernels.csv missing or short";
  const double fixed = ddpsim::config::ComputeSettings{}.kernel_overhead;
  std::vector<double> gemm_err, stream_err, ln_err;
  std::printf("%-32s %-16s %12s %12s %8s\n", "kernel", "gpu", "measured us", "model us", "error");
  for (const auto& r : rows) {
    const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, r.gpu));
    const auto d = ddpsim::gpu::device_rates(gpu, r.dtype, fixed);
    double model = 0;
    if (r.kind == "gemm")
      model = ddpsim::gpu::gemm_estimate(1, r.m, r.n, r.k, d).seconds;
    else if (r.kind == "stream")
      model = ddpsim::gpu::memory_kernel(r.bytes, d).seconds;
    else if (r.kind == "layernorm_bwd")
      model = layer_norm_backward(r, gpu, fixed);
    else
      ADD_FAILURE() << r.id << ": unknown kind " << r.kind;
    const double err = model / r.measured_s - 1;
    (r.kind == "gemm" ? gemm_err : r.kind == "stream" ? stream_err : ln_err).push_back(std::fabs(err));
    std::printf("%-32s %-16s %12.2f %12.2f %+7.1f%%\n", r.id.c_str(), r.gpu.c_str(), 1e6 * r.measured_s, 1e6 * model,
                100 * err);
  }
  ASSERT_FALSE(gemm_err.empty());
  ASSERT_FALSE(stream_err.empty());
  std::printf("gemm: median |error| %.1f %%, max %.1f %%; stream: max %.1f %%\n", 100 * median(gemm_err),
              100 * *std::max_element(gemm_err.begin(), gemm_err.end()),
              100 * *std::max_element(stream_err.begin(), stream_err.end()));
  // Achieved when added: GEMM median 9.3 %, max 38.2 % (the 1024^3 SGEMM: 64 tiles of 128x128 on
  // 108 SMs, where cuBLAS picks a smaller tile or split the model's three SIMT tiles do not
  // have); stream 1.3 %. Margin 5 points each. The fp16 cuBLAS rows (S4) added later moved the
  // GEMM median to 8.9 % (their own errors -20.7 .. +21.4 %); the bounds stayed. The H200 float32
  // rows (S7, measured here) moved it to 7.6 %: their two lm_head GEMMs gave the 128-lane SIMT
  // efficiency (kernel_model.cpp), so they are -0.9 % by construction; the four MLP GEMMs, not
  // used for it, are -10.0 .. +1.3 %.
  EXPECT_LT(median(gemm_err), 0.093 + 0.05);
  EXPECT_LT(*std::max_element(gemm_err.begin(), gemm_err.end()), 0.382 + 0.05);
  EXPECT_LT(*std::max_element(stream_err.begin(), stream_err.end()), 0.013 + 0.05);
  // ATen's layer-norm backward on a GB300 (S5): the model 20-32 % too fast with compute_gI's two
  // passes over each row counted (43-50 % with one); no constant was set from these rows.
  // Achieved when added: max 31.9 %, median 27.3 %; margin 5 points.
  ASSERT_FALSE(ln_err.empty());
  std::printf("layer-norm backward: median |error| %.1f %%, max %.1f %%\n", 100 * median(ln_err),
              100 * *std::max_element(ln_err.begin(), ln_err.end()));
  EXPECT_LT(*std::max_element(ln_err.begin(), ln_err.end()), 0.319 + 0.05);
}

// ---- Convolutions (convs.csv, source S6: DeepBench's V100 training results) ---------------------

struct ConvRow {
  std::string id, gpu, dtype, pass, fwd_algo;
  double n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0, out_h = 0, out_w = 0, measured_s = 0;
};

std::vector<ConvRow> load_conv_rows() {
  std::vector<ConvRow> rows;
  for (const auto& f : csv_rows("convs.csv", 20)) {
    ConvRow r;
    r.id = f[0];
    r.gpu = f[1];
    r.dtype = f[2];
    r.pass = f[3];
    r.n = std::stod(f[4]);
    r.c = std::stod(f[5]);
    r.h = std::stod(f[6]);
    r.w = std::stod(f[7]);
    r.k = std::stod(f[8]);
    r.r = std::stod(f[9]);
    r.s = std::stod(f[10]);
    r.out_h = std::stod(f[15]);
    r.out_w = std::stod(f[16]);
    r.fwd_algo = f[17];
    r.measured_s = std::stod(f[18]);
    rows.push_back(r);
  }
  return rows;
}

// One convolution through the model's own rule for a conv2d record (kernel_model.cpp
// conv_kernels): forward, then dgrad and wgrad in the backward list. DeepBench hands cuDNN NCHW
// float32 tensors and NHWC float16 ones (conv_bench.cu, USE_TENSOR_CORES): NHWC is the model's
// channels_last (no layout transposes).
double conv_pass(const ConvRow& r, const ddpsim::config::GpuSpec& gpu, double fixed) {
  ddpsim::config::KernelRecord rec;
  rec.op = ddpsim::config::KernelRecord::Op::CONV;
  rec.dtype = r.dtype;
  rec.n = r.n;
  rec.c = r.c;
  rec.h = r.h;
  rec.w = r.w;
  rec.o = r.k;
  rec.r = r.r;
  rec.s = r.s;
  rec.p = r.out_h;
  rec.q = r.out_w;
  rec.grad_a = rec.grad_b = true;
  ddpsim::config::ModelSpec m;
  m.batch_size = static_cast<int>(r.n);
  ddpsim::config::LayerSpec l;
  l.name = "conv";
  l.kernels = {rec};
  m.layers = {l};
  ddpsim::gpu::KernelContext c;
  c.conv = ddpsim::gpu::device_rates(gpu, r.dtype, fixed);
  c.memory = ddpsim::gpu::device_rates(gpu, "float32", fixed);
  c.channels_last = r.dtype != "float32";
  const auto lk = ddpsim::gpu::layer_kernels(m, c);
  if (r.pass == "fwd") return lk[0].forward.at(0).seconds;
  return lk[0].backward.at(r.pass == "dgrad" ? 0 : 1).seconds;
}

TEST(KernelDevSet, PublishedConvolutionTimings) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  const auto rows = load_conv_rows();
  ASSERT_GE(rows.size(), 100u) << "tests/data/kernels/convs.csv missing or short";
  const double fixed = ddpsim::config::ComputeSettings{}.kernel_overhead;
  std::map<std::string, std::vector<double>> err;  // dtype / pass -> model / measured - 1
  std::printf("%-36s %-22s %12s %12s %8s\n", "convolution", "forward algorithm", "measured us", "model us", "error");
  for (const auto& r : rows) {
    const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, r.gpu));
    const double model = conv_pass(r, gpu, fixed);
    const double e = model / r.measured_s - 1;
    err[r.dtype + " " + r.pass].push_back(e);
    err[r.dtype].push_back(e);
    std::printf("%-36s %-22s %12.1f %12.1f %+7.1f%%\n", r.id.c_str(), r.fwd_algo.c_str(), 1e6 * r.measured_s,
                1e6 * model, 100 * e);
  }
  for (const auto& [key, v] : err) {
    std::vector<double> a;
    for (double e : v) a.push_back(std::fabs(e));
    std::printf("%-16s n=%3zu  median error %+6.1f %%  median |error| %5.1f %%  max |error| %6.1f %%\n", key.c_str(),
                v.size(), 100 * median(v), 100 * median(a), 100 * *std::max_element(a.begin(), a.end()));
  }
  const auto median_abs = [&](const std::string& key) {
    std::vector<double> a;
    for (double e : err[key]) a.push_back(std::fabs(e));
    return median(a);
  };
  // Achieved when added (2026-12-04), no constant set from these rows: float32 median |error|
  // 45.5 % (forward -6.8 %, dgrad +18.9 %, wgrad -21.3 % signed medians), float16 35.2 % (-27.1,
  // -34.0, -35.8 %). DeepBench's batches are 4-32: small kernels, far from a full GPU. Margin 5
  // points: a guard against the model moving away, not a target. The same day, strided dgrad
  // became one GEMM per output phase (CUTLASS's method, NVIDIA/cutlass#928; not from these
  // rows): float32 45.2 % (dgrad -18.7 %), float16 36.0 % (dgrad -39.7 %); the bounds follow.
  EXPECT_LT(median_abs("float32"), 0.452 + 0.05);
  EXPECT_LT(median_abs("float16"), 0.360 + 0.05);
}

// The strided element-wise rate (kernel_model.cpp kStridedCyclesPerElement*) is the H200 kernel
// table it was read from: GPT-2 at batch 8 and seq 1024, the 0-dim-tensor division and the causal
// mask's where on the 8 x 12 x 1024 x 1024 scores (24 calls each per step, forward and backward),
// per dtype. The model on the h200 preset, for one such kernel, against the mean of the two
// measured times; a wrong transcription or rounding of the constants fails it.
TEST(KernelDevSet, StridedElementwiseRateIsTheH200KernelTable) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, "h200"));
  const auto doc =
      ddpsim::core::read_json_file(std::string(DDPSIM_SOURCE_DIR) + "/bench/results/device-h200-2026-12-04/step.json");
  const double elements = 8.0 * 12 * 1024 * 1024;
  int checked = 0;
  for (const auto& row : doc["rows"]) {
    if (row["model"] != "gpt2") continue;
    const std::string dtype = row["dtype"];
    std::vector<double> per_call;
    for (const auto& k : row["kernels"]["rows"]) {
      const std::string name = k["name"];
      if (name.rfind("void at::native::elementwise_kernel<128", 0) != 0) continue;
      if (name.find("DivFunctor") == std::string::npos && name.find("where_kernel_impl") == std::string::npos) continue;
      ASSERT_EQ(k["calls_per_step"].get<double>(), 24.0) << name;
      per_call.push_back(k["time_s_per_step"].get<double>() / 24.0);
    }
    ASSERT_EQ(per_call.size(), 2u) << dtype;
    const double measured = (per_call[0] + per_call[1]) / 2;
    const double eb = dtype == "float32" ? 4 : 2;
    const auto d = ddpsim::gpu::device_rates(gpu, "float32", 2e-6);
    // 3 passes of the elements' bytes (two operands read, one written; the 0-dim operand is 4 B).
    const double model = ddpsim::gpu::strided_elementwise_kernel(2 * eb * elements, elements, eb, d).seconds;
    std::printf("gpt2 %-8s strided div/where: measured %.1f us, model %.1f us\n", dtype.c_str(), 1e6 * measured,
                1e6 * model);
    EXPECT_NEAR(model / measured, 1.0, 0.002) << dtype;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// The half -> float32 cast rate (kernel_model.cpp kHalfToFloatCyclesPerElement) within what the
// same H200 table allows: GPT-2 bf16's unrolled direct_copy row (171 calls a step) over the
// elements of the casts to float32 that step makes, worked out by hand from HF GPT-2 under autocast
// at batch 8, seq 1024: the softmax inputs and the gradients of the softmax outputs' casts (24 x 8 x
// 12 x 1024 x 1024), the GELU's pow inputs (12 x 8 x 1024 x 3072), the gradients of the 97 weight
// and bias casts (12 x 7,084,800 + the tied 50,257 x 768 head: 123,614,976), of the GEMM input
// casts (25 x 8 x 1024 x 768): 158 calls. The other 13 calls are not attributed: the rate lies
// between the one with them empty and the one with them as large as the pow casts.
TEST(KernelDevSet, HalfToFloatCastRateIsWithinTheH200KernelTable) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, "h200"));
  const auto d = ddpsim::gpu::device_rates(gpu, "float32", 2e-6);
  const auto doc =
      ddpsim::core::read_json_file(std::string(DDPSIM_SOURCE_DIR) + "/bench/results/device-h200-2026-12-04/step.json");
  double total = -1, calls = 0;
  for (const auto& row : doc["rows"]) {
    if (row["model"] != "gpt2" || row["dtype"] != "bfloat16") continue;
    for (const auto& k : row["kernels"]["rows"]) {
      const std::string name = k["name"];
      if (name.rfind("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda", 0) == 0) {
        total = k["time_s_per_step"];
        calls = k["calls_per_step"];
      }
    }
  }
  ASSERT_GT(total, 0);
  ASSERT_EQ(calls, 171.0);
  const double score = 8.0 * 12 * 1024 * 1024, pow_in = 8.0 * 1024 * 3072, hidden = 8.0 * 1024 * 768;
  const double attributed = 24 * score + 12 * pow_in + 123614976.0 + 25 * hidden;
  const double busy = total - calls * 2e-6;
  const double hi = busy * d.sm_cycles_per_s / attributed;
  const double lo = busy * d.sm_cycles_per_s / (attributed + 13 * pow_in);
  std::printf("gpt2 bfloat16 half->float32 casts: %.3f-%.3f SM cycles per element (model 0.90)\n", lo, hi);
  const double model = ddpsim::gpu::half_to_float_cast_kernel(2 * score, d).shape.compute_s * d.sm_cycles_per_s / score;
  EXPECT_GE(model, lo);
  EXPECT_LE(model, hi);
}

// Batch norm's per-channel rates (kernel_model.cpp, "Batch norm") against the H200 kernel table:
// ResNet-50's rows are what the constants were fitted to (least squares over cuDNN's four kernel
// variants per direction: residuals up to 7.7 %; one row per native kernel: exact), ResNet-101's
// (step-2.json: 79 small layers where ResNet-50 has 28) were not used. Bounds: 10 % a kernel
// variant (the fit's worst residual plus a margin), 3 % the cuDNN totals of a direction.
// The layers' channels and spatial sizes: torchvision's ResNet (v1.5: the stride on the 3 x 3
// convolution, so a stage's first 1 x 1 convolution and its batch norm run at the previous
// stage's resolution), built here from the architecture, not read from the model files.
struct BnLayer {
  double c, hw;
};
std::vector<BnLayer> resnet_bn_layers(const std::vector<int>& blocks) {
  std::vector<BnLayer> out{{64, 112 * 112}};
  double res = 56, prev = 56;
  for (size_t s = 0; s < blocks.size(); ++s) {
    const double w = 64 << s;
    res = 56 >> s;
    for (int b = 0; b < blocks[s]; ++b) {
      out.push_back({w, (b == 0 ? prev : res) * (b == 0 ? prev : res)});
      out.push_back({w, res * res});
      out.push_back({4 * w, res * res});
      if (b == 0) out.push_back({4 * w, res * res});  // downsample
    }
    prev = res;
  }
  return out;
}

TEST(KernelDevSet, BatchNormPerChannelRatesAreTheH200KernelTable) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, "h200"));
  const auto d = ddpsim::gpu::device_rates(gpu, "float32", 2e-6);
  const double n = 64;
  const std::string dir = std::string(DDPSIM_SOURCE_DIR) + "/bench/results/device-h200-2026-12-04/";
  struct Case {
    std::string model, file;
    std::vector<int> blocks;
    bool fitted;
  };
  const Case cases[] = {{"resnet50", "step.json", {3, 4, 6, 3}, true},
                        {"resnet101", "step-2.json", {3, 4, 23, 3}, false}};
  for (const auto& cs : cases) {
    const auto layers = resnet_bn_layers(cs.blocks);
    ASSERT_EQ(layers.size(), cs.model == "resnet50" ? 53u : 104u);
    const auto doc = ddpsim::core::read_json_file(dir + cs.file);
    int rows = 0;
    for (const auto& row : doc["rows"]) {
      if (row["model"] != cs.model) continue;
      ++rows;
      int checked = 0;
      const bool bf16 = row["dtype"] == "bfloat16";
      const double eb = bf16 ? 2 : 4;
      double measured_total[2] = {0, 0}, model_total[2] = {0, 0};
      for (const auto& k : row["kernels"]["rows"]) {
        const std::string name = k["name"];
        const double measured = k["time_s_per_step"];
        // Which layers run this kernel, which of the call's kernels it is (forward 0/1, backward 0).
        double hw_lo = 0, hw_hi = 0;
        int bwd = -1, index = 0;
        if (name.find("cudnn::bn_") != std::string::npos) {
          bwd = name.find("bn_bw") != std::string::npos ? 1 : 0;
          if (name.find("singleread") != std::string::npos) {
            hw_lo = 49, hw_hi = 196;
          } else {
            const std::string tag = bwd ? "float2, " : "int, ";
            const int v = std::stoi(name.substr(name.find(tag) + tag.size()));
            hw_lo = hw_hi = v == 512 ? 12544 : v == 128 ? 3136 : 784;
          }
        } else if (name.find("batch_norm_collect_statistics_kernel") != std::string::npos) {
          bwd = 0, hw_lo = 0, hw_hi = 1e9;
        } else if (name.find("batch_norm_transform_input_kernel") != std::string::npos) {
          bwd = 0, index = 1, hw_lo = 0, hw_hi = 1e9;
        } else if (name.find("batch_norm_backward_kernel") != std::string::npos) {
          bwd = 1, hw_lo = 0, hw_hi = 1e9;
        } else {
          continue;
        }
        double model = 0;
        int calls = 0;
        for (const auto& l : layers) {
          if (l.hw < hw_lo || l.hw > hw_hi) continue;
          const double bytes = n * l.c * l.hw * eb;
          const auto bn = ddpsim::gpu::batch_norm_kernels(bytes, bytes, l.c, eb, bf16, false, d);
          model += (bwd ? bn.backward : bn.forward).at(index).seconds;
          ++calls;
        }
        EXPECT_EQ(static_cast<double>(calls), k["calls_per_step"].get<double>()) << name;
        std::printf("%-9s %-8s %-58.58s calls %3d measured %7.3f ms model %7.3f ms %+6.1f %%%s\n", cs.model.c_str(),
                    bf16 ? "bfloat16" : "float32", name.c_str(), calls, 1e3 * measured, 1e3 * model,
                    100 * (model / measured - 1), cs.fitted ? " (fitted)" : "");
        EXPECT_NEAR(model / measured, 1.0, 0.10) << cs.model << " " << name;
        if (!bf16) measured_total[bwd] += measured, model_total[bwd] += model;
        ++checked;
      }
      EXPECT_EQ(checked, bf16 ? 3 : 8) << cs.model;  // 3 native kernels; cuDNN's 4 variants x 2
      for (int b = 0; b < 2 && !bf16; ++b) {
        std::printf("%-9s float32  cuDNN %s total: measured %.3f ms, model %.3f ms (%+.1f %%)\n", cs.model.c_str(),
                    b ? "backward" : "forward", 1e3 * measured_total[b], 1e3 * model_total[b],
                    100 * (model_total[b] / measured_total[b] - 1));
        EXPECT_NEAR(model_total[b] / measured_total[b], 1.0, 0.03) << cs.model;
      }
    }
    EXPECT_EQ(rows, 2) << cs.model;  // float32 and bfloat16
  }
}

// Max pooling's element rates (kernel_model.cpp kMaxPool*) against the H200 kernel table: ResNet's
// one max pool (3 x 3, stride 2, 64 x 64 x 112^2 -> 56^2 at batch 64) in float32 and bfloat16, in
// the ResNet-50 run the constants are the means of and again in the ResNet-101 run (the same layer
// measured a second time). Bound 3 %: the two dtypes' spread about their mean (1.2 %) plus a margin.
TEST(KernelDevSet, MaxPoolElementRatesAreTheH200KernelTable) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, "h200"));
  const std::string dir = std::string(DDPSIM_SOURCE_DIR) + "/bench/results/device-h200-2026-12-04/";
  const double in_el = 64.0 * 64 * 112 * 112, out_el = 64.0 * 64 * 56 * 56;
  int checked = 0;
  for (const char* file : {"step.json", "step-2.json"}) {
    const auto doc = ddpsim::core::read_json_file(dir + file);
    for (const auto& row : doc["rows"]) {
      const std::string model = row["model"];
      if (model.rfind("resnet", 0) != 0) continue;
      const bool bf16 = row["dtype"] == "bfloat16";
      ddpsim::gpu::KernelContext c;
      c.gemm = c.conv = c.memory = ddpsim::gpu::device_rates(gpu, bf16 ? "bfloat16" : "float32", 2e-6);
      c.act_bytes_factor = bf16 ? 0.5 : 1.0;
      c.bfloat16 = bf16;
      ddpsim::config::KernelRecord r;
      r.name = "max_pool2d_with_indices";
      r.in[0] = 4 * in_el;
      r.out[0] = 12 * out_el;
      r.backward = true;
      ddpsim::config::ModelSpec m;
      m.batch_size = 64;
      m.layers.resize(1);
      m.layers[0].kernels = {r};
      const auto lk = ddpsim::gpu::layer_kernels(m, c);
      for (const auto& k : row["kernels"]["rows"]) {
        const std::string name = k["name"];
        const bool fwd = name.find("max_pool_forward_nchw") != std::string::npos;
        if (!fwd && name.find("max_pool_backward_nchw") == std::string::npos) continue;
        ASSERT_EQ(k["calls_per_step"].get<double>(), 1.0) << name;
        const double measured = k["time_s_per_step"];
        const double model_s = (fwd ? lk[0].forward : lk[0].backward).at(0).seconds;
        std::printf("%-9s %-8s max pool %-8s measured %.1f us, model %.1f us (%+.1f %%)\n", model.c_str(),
                    bf16 ? "bfloat16" : "float32", fwd ? "forward" : "backward", 1e6 * measured, 1e6 * model_s,
                    100 * (model_s / measured - 1));
        EXPECT_NEAR(model_s / measured, 1.0, 0.03) << model << " " << name;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 8);  // ResNet-50 and -101, float32 and bfloat16, forward and backward
}

// PyTorch's own batch-norm kernels and max pooling on a Volta GPU, from a public nvprof table the
// rates were not read from: NVIDIA/apex, apex/pyprof/README.md (commit 20dc77a4), torchvision
// ResNet-50 at batch 64 in float16 (`volta_fp16_s884cudnn` convolutions; the GPU is not named,
// taken as a V100 SXM2), the stem's kernels with their grids: batch_norm_collect_statistics_kernel
// (64 blocks, one per channel) 929,513 ns, batch_norm_transform_input_kernel (64 x 64 blocks)
// 377,539 ns, MaxPoolForward (50,176 blocks of 256: a thread per output element) 406,531 ns.
// Half weights (the model was .half()), so PyTorch's kernels, not cuDNN's. The H200's per-channel
// and per-SM-cycle rates scaled to the V100's clock: statistics within 1 %, max pool +8 %, the
// transform -16 % (bounds: 3 %, 12 %, 20 %; as a fraction of the HBM peak it was +108 %).
TEST(KernelDevSet, BatchNormAndMaxPoolOnAVoltaFromApexPyProf) {
  using ddpsim::config::Catalog;
  Catalog cat(Catalog::default_root());
  const auto gpu = cat.load_gpu(cat.resolve(ddpsim::config::Kind::GPU, "v100-sxm2-32gb"));
  const auto d = ddpsim::gpu::device_rates(gpu, "float16", 2e-6);
  const double x = 2.0 * 64 * 64 * 112 * 112;  // the stem's activation, float16
  const auto bn = ddpsim::gpu::batch_norm_kernels(x, x, 64, 2, /*PyTorch's kernels*/ true, false, d);
  const double stats = bn.forward.at(0).seconds, transform = bn.forward.at(1).seconds;
  std::printf("v100 bn statistics: measured 929.5 us, model %.1f us (%+.1f %%)\n", 1e6 * stats,
              100 * (stats / 929.513e-6 - 1));
  std::printf("v100 bn transform:  measured 377.5 us, model %.1f us (%+.1f %%)\n", 1e6 * transform,
              100 * (transform / 377.539e-6 - 1));
  EXPECT_NEAR(stats / 929.513e-6, 1.0, 0.03);
  EXPECT_NEAR(transform / 377.539e-6, 1.0, 0.20);
  // The stem's max pool, 64 x 64 x 112^2 -> 56^2: the export's float32 bytes (values and int64
  // indices out).
  ddpsim::gpu::KernelContext c;
  c.gemm = c.conv = c.memory = d;
  c.act_bytes_factor = 0.5;
  ddpsim::config::KernelRecord r;
  r.name = "max_pool2d_with_indices";
  r.in[0] = 4.0 * 64 * 64 * 112 * 112;
  r.out[0] = 12.0 * 64 * 64 * 56 * 56;
  r.backward = true;
  ddpsim::config::ModelSpec m;
  m.batch_size = 64;
  m.layers.resize(1);
  m.layers[0].kernels = {r};
  const double pool = ddpsim::gpu::layer_kernels(m, c)[0].forward.at(0).seconds;
  std::printf("v100 max pool:      measured 406.5 us, model %.1f us (%+.1f %%)\n", 1e6 * pool,
              100 * (pool / 406.531e-6 - 1));
  EXPECT_NEAR(pool / 406.531e-6, 1.0, 0.12);
}

}  // namespace
