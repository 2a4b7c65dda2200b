#include "gpu/contention.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>

namespace ddpsim::gpu {

double compute_slowdown(const KernelShape& k, const CommLoad& load, const config::GpuSpec& gpu,
                        double memory_efficiency, const ContentionParams& p) {
  if (!p.enabled) return 1.0;
  if (p.fixed_compute_slowdown) return std::max(1.0, *p.fixed_compute_slowdown);
  if (load.channels <= 0 && load.link_bytes_per_s <= 0) return 1.0;  // no NCCL kernel beside it
  const double alone = std::max(k.compute_s, k.memory_s) + k.overhead_s;
  if (alone <= 0) return 1.0;
  // SMs: NCCL holds one per channel. Tiled kernels lose whole waves, other compute its share.
  double sm_factor = 1.0;
  if (gpu.sm_count > 0 && load.channels > 0) {
    const double sms = static_cast<double>(gpu.sm_count);
    const double left = static_cast<double>(gpu.sm_count - std::min(load.channels, gpu.sm_count - 1));
    sm_factor = sms / left;
    if (k.waves && !k.waves->empty()) {
      double tiled = 0, factor = 0;
      for (const auto& g : *k.waves) {
        if (g.ctas <= 0 || g.share <= 0) continue;
        factor += g.share * std::ceil(g.ctas / left) / std::ceil(g.ctas / sms);
        tiled += g.share;
      }
      tiled = std::min(tiled, 1.0);
      sm_factor = factor + (1.0 - tiled) * sm_factor;
    }
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

void ShapeSum::add(const KernelShape& k) {
  total_.compute_s += k.compute_s;
  total_.memory_s += k.memory_s;
  total_.overhead_s += k.overhead_s;
  if (!k.waves) return;
  for (const auto& g : *k.waves) {
    auto same = std::find_if(seconds_.begin(), seconds_.end(), [&](const WaveGroup& x) { return x.ctas == g.ctas; });
    if (same != seconds_.end())
      same->share += g.share * k.compute_s;
    else
      seconds_.push_back({g.ctas, g.share * k.compute_s});
  }
}

KernelShape ShapeSum::shape() const {
  KernelShape s = total_;
  if (!seconds_.empty() && s.compute_s > 0) {
    std::vector<WaveGroup> groups = seconds_;
    for (auto& g : groups) g.share /= s.compute_s;
    s.waves = intern_waves(std::move(groups));
  }
  return s;
}

const std::vector<WaveGroup>* intern_waves(std::vector<WaveGroup> groups) {
  static std::mutex mutex;
  static std::set<std::vector<WaveGroup>> stored;  // set nodes do not move: pointers stay valid
  std::lock_guard lock(mutex);
  return &*stored.insert(std::move(groups)).first;
}

void add_shape(KernelShape& into, const KernelShape& k) {
  ShapeSum sum;
  sum.add(into);
  sum.add(k);
  into = sum.shape();
}

double comm_slowdown(const ContentionParams& p) {
  if (!p.enabled || p.nccl_high_priority) return 1.0;
  return std::max(1.0, p.comm_slowdown);
}

}  // namespace ddpsim::gpu
