#include "gpu/contention.hpp"

#include <algorithm>

namespace ddpsim::gpu {

double compute_slowdown(const KernelShape& k, const CommLoad& load, const config::GpuSpec& gpu,
                        double memory_efficiency, const ContentionParams& p) {
  if (!p.enabled) return 1.0;
  if (p.fixed_compute_slowdown) return std::max(1.0, *p.fixed_compute_slowdown);
  const double alone = std::max(k.compute_s, k.memory_s) + k.overhead_s;
  if (alone <= 0) return 1.0;
  // SMs: NCCL holds one per channel.
  double sm_factor = 1.0;
  if (gpu.sm_count > 0 && load.channels > 0) {
    const double left = static_cast<double>(gpu.sm_count - std::min(load.channels, gpu.sm_count - 1));
    sm_factor = static_cast<double>(gpu.sm_count) / left;
  }
  // HBM: what the collective's traffic leaves of the achievable bandwidth.
  double hbm_factor = 1.0;
  const double hbm = gpu.hbm_bandwidth * memory_efficiency;
  if (hbm > 0 && load.link_bytes_per_s > 0) {
    const double taken = p.hbm_bytes_per_nccl_byte * load.link_bytes_per_s;
    const double left = hbm - taken;
    hbm_factor = left > hbm / p.max_slowdown ? hbm / left : p.max_slowdown;
  }
  const double contended = std::max(k.compute_s * sm_factor, k.memory_s * hbm_factor) + k.overhead_s;
  return std::clamp(contended / alone, 1.0, p.max_slowdown);
}

double comm_slowdown(const ContentionParams& p) {
  if (!p.enabled || p.nccl_high_priority) return 1.0;
  return std::max(1.0, p.comm_slowdown);
}

}  // namespace ddpsim::gpu
