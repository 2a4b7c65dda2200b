#pragma once
// How much a kernel slows while NCCL kernels run beside it, and how much a collective slows while
// compute runs beside it (docs/facts.md §4). Pure arithmetic; the engine realises the factors with
// SimGrid resource sharing (engine/gpu_share).
//
// Compute side: NCCL takes one SM per channel, so a compute-bound kernel keeps (SMs - channels)
// of the SMs: a tiled kernel (one CTA per SM, WaveGroup) then needs ceil(ctas / (SMs - channels))
// waves instead of ceil(ctas / SMs) (wave quantization: a 132-CTA GEMM on an H100's 132 SMs
// beside a 24-CTA all-gather takes about 2x, docs/facts.md section 4), other compute
// SMs / (SMs - channels). NCCL's traffic costs HBM bandwidth (each byte it sends or receives over
// NVLink or the NIC is read or written in HBM `hbm_bytes_per_nccl_byte` times), so a memory-bound
// kernel keeps the HBM bandwidth left over. A kernel that is partly both slows by the larger of
// the two on its roofline components. Communication side: a collective slows by `comm_slowdown`
// while compute runs beside it (its CTAs wait for SMs), unless the NCCL stream has high priority.
#include <optional>
#include <vector>

#include "config/specs.hpp"

namespace ddpsim::gpu {

struct ContentionParams {
  bool enabled = true;
  // NVIDIA/nccl#1428: NVLink traffic costs 2-3x its bytes in HBM traffic; we take the middle.
  double hbm_bytes_per_nccl_byte = 2.5;
  // NVIDIA/nccl#205: an all-reduce took 4.7 ms alone and 5.5 ms beside one GEMM.
  double comm_slowdown = 5.5 / 4.7;
  // Bound on any compute slowdown (NVIDIA/nccl#338 measured up to 4x for batch-norm backward).
  double max_slowdown = 4.0;
  bool nccl_high_priority = false;  // TORCH_NCCL_HIGH_PRIORITY: NCCL CTAs are scheduled first
  // A fixed compute slowdown while communication runs, instead of the SM/HBM model (e.g. CPU ranks
  // whose communication thread shares the compute thread's cores).
  std::optional<double> fixed_compute_slowdown;
};

// What an active collective takes from the GPU.
struct CommLoad {
  int channels = 0;             // SMs held by NCCL kernels (one CTA per channel)
  double link_bytes_per_s = 0;  // bytes per second this GPU sends plus receives
};

// Tiled kernels inside a shape's compute part (GEMMs, implicit-GEMM convolutions: gpu/kernel_model):
// `ctas` CTAs, one resident per SM, run in ceil(ctas / SMs) waves and take `share` of the shape's
// compute_s. Shares are fractions, so scaling compute_s keeps them; what no group covers is
// compute without known tiles.
struct WaveGroup {
  double ctas = 0;
  double share = 0;
  auto operator<=>(const WaveGroup&) const = default;
};

// One stored copy of each distinct list of wave groups, for the process's lifetime (equal lists
// share it; thread-safe). Shapes hold a plain pointer to it so that they stay trivially copyable:
// the engine and the plans copy a shape with every kernel, and a shared pointer's counting there
// cost the FSDP 1,024-GPU bench ~10 % (sim/gpu/NOTES.md).
const std::vector<WaveGroup>* intern_waves(std::vector<WaveGroup> groups);

// A kernel's roofline components when alone (seconds), excluding fixed overhead.
struct KernelShape {
  double compute_s = 0;
  double memory_s = 0;
  double overhead_s = 0;
  const std::vector<WaveGroup>* waves = nullptr;  // intern_waves; null: no tiles known (proportional SM share)
};

// The sum of kernel shapes, component by component, each CTA count of their wave groups kept with
// its share of the summed compute (compute without groups, e.g. KernelShape{seconds}, shrinks the
// shares: its seconds are not tiled).
class ShapeSum {
 public:
  void add(const KernelShape& k);
  KernelShape shape() const;

 private:
  KernelShape total_;               // components only
  std::vector<WaveGroup> seconds_;  // per CTA count: seconds of compute (not yet a share)
};

// `into` += `k` (ShapeSum of the two).
void add_shape(KernelShape& into, const KernelShape& k);

// Factor >= 1 by which the kernel's duration grows while `load` is active. It does not change when
// the shape's compute, memory and overhead all scale by one factor (the engine relies on that).
double compute_slowdown(const KernelShape& k, const CommLoad& load, const config::GpuSpec& gpu,
                        double memory_efficiency, const ContentionParams& p);

// Factor >= 1 by which a collective's duration grows while compute runs beside it.
double comm_slowdown(const ContentionParams& p);

}  // namespace ddpsim::gpu
