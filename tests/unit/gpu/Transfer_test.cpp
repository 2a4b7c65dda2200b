// "Measured there, predicted here" (gpu/compute_model.cpp, transfer_layers): a layer measured on
// GPU A takes on GPU B its measured time x (kernel estimate on B) / (kernel estimate on A). Every
// expected value is worked out by hand in the comment above it from the synthetic GPUs below and
// the constants in kernel_model.cpp (tile list and relative efficiencies, 0.8 tensor-core and 0.9
// stream efficiency, host cost 6.9 + 2 us per forward operator).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/catalog.hpp"
#include "config/kernel_records.hpp"
#include "core/error.hpp"
#include "gpu/compute_model.hpp"

namespace {

using ddpsim::config::GpuSpec;
using ddpsim::config::KernelRecord;
using ddpsim::config::LayerSpec;
using ddpsim::config::LayerType;
using ddpsim::config::Scenario;

constexpr double kTol = 1e-12;

// `sms` SMs at 10 TFLOPS (fp16 tensor cores) each, `hbm` bytes/s.
GpuSpec gpu(const std::string& name, int sms, double hbm) {
  GpuSpec g;
  g.name = name;
  g.sm_count = sms;
  g.peak_flops = {{"float32", sms * 1e12}, {"float16", sms * 10e12}};
  g.hbm_bandwidth = hbm;
  return g;
}

// One layer measured on A (fwd/bwd seconds), run on a cluster of B, no host dispatch (CUDA graphs)
// unless `host`.
Scenario transfer(const LayerSpec& layer, const GpuSpec& a, const GpuSpec& b, const std::string& dtype,
                  bool host = false) {
  Scenario s;
  s.file = "transfer-test";
  s.model.name = "one-layer";
  s.model.batch_size = 1;
  s.model.layers = {layer};
  s.model.measured_on = "Test " + a.name;
  s.model.measured_gpu = a.name;
  s.model.measured_gpu_spec = a;
  s.cluster.gpu = b;
  s.training.batch_size = 1;
  s.training.compute_dtype = ddpsim::config::compute_dtype_names().value(dtype, ddpsim::config::ComputeDtype::FLOAT32);
  s.training.cuda_graphs = !host;
  s.compute.kernel_overhead = 2e-6;
  return s;
}

const ddpsim::gpu::TransferClass& cls(const ddpsim::gpu::ComputeProfile& p, const std::string& name) {
  for (const auto& c : p.transfer)
    if (c.name == name) return c;
  throw std::runtime_error("no class " + name);
}

LayerSpec gemm_layer(double fwd_s, double bwd_s) {
  KernelRecord r;
  r.op = KernelRecord::Op::GEMM;
  r.m = 2560;
  r.n = 128;
  r.k = 4096;  // no gradients: one forward kernel, no backward kernels
  LayerSpec l;
  l.name = "fc";
  l.type = LayerType::LINEAR;
  l.kernels = {r};
  l.fwd_time = fwd_s;
  l.bwd_time = bwd_s;
  return l;
}

TEST(Transfer, GemmWhoseWaveCountDiffers) {
  // fp16 GEMM m 2560, n 128, k 4096. A: 10 SMs: ten 256x128 tiles = 1 wave of
  // 2*256*128*4096 / (10e12 * 0.8) = 33.554432 us (operands 22,675,456 B / 0.9e12 = 25.19 us:
  // compute-bound), + 2 us = 35.554432 us. B: 9 SMs (same per-SM rate, 90 % of A's peak): 256x128
  // needs 2 waves (67.11 us); 128x128 20 tiles, 3 waves x 17.660 = 52.98 us; 64x64 80 tiles, 9
  // waves x 5.992 = 53.93 us; best 128x64 (= 64x128): 40 tiles, 5 waves of 2*128*64*4096 /
  // (10e12 * 0.8 * 0.85) = 9.8689505 us = 49.344753 us, + 2 us. Measured on A: 50 us forward ->
  // 50 x 51.344753 / 35.554432 = 72.206 us on B (x1.444 where the peak ratio alone says x1.111).
  const auto p = ddpsim::gpu::build_compute_profile(
      transfer(gemm_layer(50e-6, 0), gpu("gpu-a", 10, 1e12), gpu("gpu-b", 9, 1e12), "float16"));
  const double tile_a = 2.0 * 256 * 128 * 4096 / (10e12 * 0.8);
  const double wave_b = 2.0 * 128 * 64 * 4096 / (10e12 * 0.8 * 0.85);
  const double est_a = tile_a + 2e-6, est_b = 5 * wave_b + 2e-6;
  EXPECT_NEAR(p.forward_total, 50e-6 * est_b / est_a, kTol);
  EXPECT_NEAR(p.forward_total, 72.2064e-6, 1e-9);
  EXPECT_EQ(p.measured_layers, 1);
  EXPECT_EQ(p.provenance, "transferred from gpu-a (Test gpu-a) to gpu-b (per-kernel scaling)");
  // Per class: the measured 50 us split as the estimate on A splits (33.55 : 2), each part scaled.
  EXPECT_NEAR(cls(p, "compute-bound").measured_s, 50e-6 * tile_a / est_a, kTol);
  EXPECT_NEAR(cls(p, "compute-bound").factor(), 5 * wave_b / tile_a, 1e-12);
  EXPECT_NEAR(cls(p, "compute-bound").factor(), 1.470588, 1e-6);
  EXPECT_NEAR(cls(p, "fixed").factor(), 1.0, 1e-12);
  EXPECT_NEAR(cls(p, "memory-bound").measured_s, 0.0, kTol);
  // The layer's backward has no kernels here: kept as measured.
  EXPECT_NEAR(p.backward_total, 0.0, kTol);
  // The transferred layer stays compute-bound for the contention model.
  EXPECT_GT(p.forward[0].shape.compute_s, p.forward[0].shape.memory_s);
}

TEST(Transfer, MemoryBoundKernelScalesByBandwidth) {
  // An element-wise kernel reading and writing 4e8 B each (fp32): A 2 TB/s: 8e8 / 1.8e12 =
  // 444.444 us + 2 us; B 3.35 TB/s: 8e8 / 3.015e12 = 265.340 us + 2 us. Its backward reads
  // in + 2 x out = 1.2e9 B: 666.667 + 2 us on A, 398.010 + 2 us on B. Measured on A 500 / 700 us.
  KernelRecord r;
  r.in[0] = r.out[0] = 4e8;
  r.backward = true;
  LayerSpec l;
  l.name = "act";
  l.type = LayerType::ELEMENTWISE;
  l.kernels = {r};
  l.fwd_time = 500e-6;
  l.bwd_time = 700e-6;
  const auto p =
      ddpsim::gpu::build_compute_profile(transfer(l, gpu("gpu-a", 10, 2e12), gpu("gpu-b", 10, 3.35e12), "float32"));
  const double fa = 8e8 / 1.8e12 + 2e-6, fb = 8e8 / (3.35e12 * 0.9) + 2e-6;
  const double ba = 1.2e9 / 1.8e12 + 2e-6, bb = 1.2e9 / (3.35e12 * 0.9) + 2e-6;
  EXPECT_NEAR(p.forward_total, 500e-6 * fb / fa, kTol);
  EXPECT_NEAR(p.backward_total, 700e-6 * bb / ba, kTol);
  EXPECT_NEAR(p.forward_total, 299.41e-6, 0.01e-6);  // 500 x 267.340 / 446.444
  // The memory-bound class scales by exactly the bandwidth ratio; the fixed 2 us do not scale.
  EXPECT_NEAR(cls(p, "memory-bound").factor(), 2.0 / 3.35, 1e-12);
  EXPECT_NEAR(cls(p, "fixed").factor(), 1.0, 1e-12);
  EXPECT_NEAR(cls(p, "compute-bound").measured_s, 0.0, kTol);
  EXPECT_GT(p.forward[0].shape.memory_s, p.forward[0].shape.compute_s);
}

TEST(Transfer, LaunchBoundLayerKeepsItsMeasuredTime) {
  // Ten zero-byte element-wise kernels behind eager dispatch (6.9 + 2 us per operator): on both
  // GPUs the forward is set by the host (10 x 8.9 + 2 = 91 us, KernelModel's launch-bound case),
  // so a 4x faster GPU B does not shorten it: 120 us measured on A stays 120 us.
  LayerSpec l;
  l.name = "act";
  l.type = LayerType::ELEMENTWISE;
  l.kernels.assign(10, KernelRecord{});
  l.fwd_time = 120e-6;
  l.bwd_time = 0;
  const auto p = ddpsim::gpu::build_compute_profile(
      transfer(l, gpu("gpu-a", 10, 1e12), gpu("gpu-b", 40, 4e12), "float32", /*host=*/true));
  EXPECT_NEAR(p.forward_total, 120e-6, kTol);
  EXPECT_NEAR(cls(p, "fixed").measured_s, 120e-6, kTol);
  EXPECT_NEAR(cls(p, "fixed").factor(), 1.0, 1e-12);
}

TEST(Transfer, SameGpuIsMeasuredNotTransferred) {
  // Profile GPU = cluster GPU: the measured times as they are, linear in the batch (x2 here).
  auto s = transfer(gemm_layer(50e-6, 30e-6), gpu("gpu-a", 10, 1e12), gpu("gpu-a", 10, 1e12), "float16");
  s.training.batch_size = 2;
  const auto p = ddpsim::gpu::build_compute_profile(s);
  EXPECT_NEAR(p.forward_total, 100e-6, kTol);
  EXPECT_NEAR(p.backward_total, 60e-6, kTol);
  EXPECT_EQ(p.provenance, "measured on Test gpu-a");
  EXPECT_TRUE(p.transfer.empty());
  // Without a known profile GPU (a CPU profile, an unlisted device) nothing is transferred either.
  s.cluster.gpu = gpu("gpu-b", 9, 1e12);
  s.model.measured_gpu_spec.reset();
  EXPECT_NEAR(ddpsim::gpu::build_compute_profile(s).forward_total, 100e-6, kTol);
}

TEST(Transfer, ProfileEqualToTheEstimateOnATransfersToTheEstimateOnB) {
  // A zoo model "measured" on A100 with exactly the kernel model's A100 estimate per layer: the
  // transfer to H100 must give the H100 estimate, layer for layer (est_B / est_A x est_A).
  using ddpsim::config::Catalog;
  using ddpsim::config::Kind;
  Catalog cat(Catalog::default_root());
  for (const char* model : {"resnet50", "bert-base"}) {
    Scenario s;
    s.file = "transfer-zoo";
    s.model = cat.load_model(cat.resolve(Kind::MODEL, model));
    s.cluster.gpu = cat.load_gpu(cat.resolve(Kind::GPU, "a100-sxm4-80gb"));
    s.training.batch_size = s.model.batch_size;
    s.training.compute_dtype = ddpsim::config::ComputeDtype::FLOAT16;
    // Per-module times never hold the training loss, and a transfer scales only the layers, so
    // the layers' estimates are compared without it.
    s.training.loss = "none";
    const auto on_a = ddpsim::gpu::build_compute_profile(s);
    s.cluster.gpu = cat.load_gpu(cat.resolve(Kind::GPU, "h100-sxm"));
    const auto on_b = ddpsim::gpu::build_compute_profile(s);
    for (size_t i = 0; i < s.model.layers.size(); ++i) {
      s.model.layers[i].fwd_time = on_a.forward[i].seconds;
      s.model.layers[i].bwd_time = on_a.backward[i].seconds;
    }
    s.model.measured_on = "NVIDIA A100-SXM4-80GB";
    s.model.measured_gpu = "a100-sxm4-80gb";
    s.model.measured_gpu_spec = cat.load_gpu(cat.resolve(Kind::GPU, "a100-sxm4-80gb"));
    const auto t = ddpsim::gpu::build_compute_profile(s);
    ASSERT_EQ(t.forward.size(), on_b.forward.size());
    for (size_t i = 0; i < t.forward.size(); ++i) {
      EXPECT_NEAR(t.forward[i].seconds, on_b.forward[i].seconds, 1e-12 + 1e-9 * on_b.forward[i].seconds) << model << i;
      EXPECT_NEAR(t.backward[i].seconds, on_b.backward[i].seconds, 1e-12 + 1e-9 * on_b.backward[i].seconds)
          << model << i;
    }
    EXPECT_EQ(t.provenance.rfind("transferred from a100-sxm4-80gb (NVIDIA A100-SXM4-80GB) to h100-sxm", 0), 0u);
    EXPECT_EQ(t.measured_layers, static_cast<int>(s.model.layers.size()));
  }
}

TEST(Transfer, DeviceNamesMapToBundledPresets) {
  using ddpsim::config::gpu_preset_for_device;
  EXPECT_EQ(gpu_preset_for_device("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(gpu_preset_for_device("cuda: NVIDIA H200"), "h200");
  EXPECT_EQ(gpu_preset_for_device("Tesla V100-SXM2-16GB"), "v100-sxm2-32gb");
  EXPECT_EQ(gpu_preset_for_device("nvidia a100-sxm4-80gb"), "a100-sxm4-80gb");
  EXPECT_EQ(gpu_preset_for_device("NVIDIA H100 NVL"), "");  // other clocks: not a bundled preset
  EXPECT_EQ(gpu_preset_for_device("cpu: Intel(R) Xeon(R) Processor, 1 threads"), "");
  EXPECT_EQ(gpu_preset_for_device("torch.profiler trace t.json"), "");
  // Every name the table can produce is a bundled GPU.
  ddpsim::config::Catalog cat(ddpsim::config::Catalog::default_root());
  const auto names = cat.names(ddpsim::config::Kind::GPU);
  for (const char* d :
       {"Tesla V100-SXM2-32GB", "Tesla V100-PCIE-16GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe",
        "NVIDIA H100 PCIe", "NVIDIA B200", "NVIDIA GeForce RTX 4090", "NVIDIA L40S"}) {
    const auto p = gpu_preset_for_device(d);
    EXPECT_NE(std::find(names.begin(), names.end(), p), names.end()) << d << " -> " << p;
  }
}

TEST(Transfer, ModelFileMeasuredGpuIsValidated) {
  namespace fs = std::filesystem;
  ddpsim::config::Catalog cat(ddpsim::config::Catalog::default_root());
  const fs::path dir = fs::temp_directory_path() / "ddpsim-transfer-test";
  fs::create_directories(dir);
  auto write = [&](const std::string& extra) {
    const fs::path f = dir / "m.json";
    std::ofstream(f) << R"({"format": "ddpsim-model/1", "name": "t", "batch_size": 1,)" << extra
                     << R"("params": [{"name": "w", "shape": [4], "dtype": "float32"}],
                            "layers": [{"name": "l", "type": "linear", "params": [0], "fwd_flops": 1,
                                        "bwd_flops": 2, "fwd_bytes": 1, "bwd_bytes": 1,
                                        "fwd_time_s": 1e-5, "bwd_time_s": 2e-5}],
                            "grad_ready_order": [0]})";
    return f;
  };
  // Inferred from measured_on.
  auto m = cat.load_model(write(R"("measured_on": "NVIDIA H100 80GB HBM3",)"));
  ASSERT_TRUE(m.measured_gpu_spec.has_value());
  EXPECT_EQ(m.measured_gpu, "h100-sxm");
  EXPECT_EQ(m.measured_gpu_spec->sm_count, 132);
  // Given explicitly (overrides measured_on).
  m = cat.load_model(write(R"("measured_on": "my box", "measured_gpu": "a100-sxm4-80gb",)"));
  EXPECT_EQ(m.measured_gpu_spec->name, "a100-sxm4-80gb");
  // Unknown device name: no GPU, no error.
  EXPECT_FALSE(cat.load_model(write(R"("measured_on": "NVIDIA Mystery",)")).measured_gpu_spec.has_value());
  // A bad measured_gpu is an error naming the file, the key and the value.
  try {
    cat.load_model(write(R"("measured_gpu": "h9000",)"));
    FAIL() << "accepted measured_gpu h9000";
  } catch (const ddpsim::core::ConfigError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("/measured_gpu"), std::string::npos) << w;
    EXPECT_NE(w.find("h9000"), std::string::npos) << w;
    EXPECT_NE(w.find("m.json"), std::string::npos) << w;
  }
  fs::remove_all(dir);
}

}  // namespace
