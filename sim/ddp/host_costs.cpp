#include "ddp/host_costs.hpp"

#include <algorithm>

namespace ddpsim::ddp {

HostCosts measured_host_costs() {
  // scripts/measure_ddp_host.py --reps 61 --warmup 4, 2026-12-02 05:07 UTC, 1-minute load average
  // 2.8 (other builds on the 2 cores); fit residuals <= 75 us over 8 cases of 50-400 tensors and
  // 1-200 buckets. Backward with gradient_as_bucket_view: 3.97 us per tensor, 16.9 us per bucket;
  // without it 1.21 us more per tensor (the two copies' op costs, which the plan charges as the
  // copy kernels); per bucket 17.06 us of which dist.all_reduce on the one-rank group (alone) is
  // 13.39 us; forward 74.3 us per step (+0.15 us per tensor and +0.45 us per bucket, left out:
  // below the fit's residuals for any model of < 500 tensors).
  HostCosts c;
  c.per_gradient_hook_s = 3.97e-6;
  c.per_bucket_s = 17.06e-6 - 13.39e-6;
  c.forward_s = 74.3e-6;
  // scripts/measure_ddp_host.py --buffers-only --reps 30, 2026-12-02 13:55 UTC, 1-minute load
  // average 6.9 (builds on the 2 cores): ddp._sync_buffers() over 10/20/40/80 BatchNorm1d(16)
  // (30-240 buffers) 78 / 140 / 284 / 589 us; least squares 2.45 us per buffer, constant -3 us
  // (residuals <= 8 us: the constant, which holds the two one-rank broadcasts of the two dtype
  // buckets, is below what the fit resolves and is left out).
  c.per_buffer_s = 2.45e-6;
  return c;
}

double host_seconds(const HostCosts& c, size_t gradients, size_t buckets, size_t buffers) {
  return c.forward_s + c.per_gradient_hook_s * static_cast<double>(gradients) +
         c.per_bucket_s * static_cast<double>(buckets) + c.per_buffer_s * static_cast<double>(buffers);
}

void HostExposure::Queue::issue(double gpu_s, double host_s) {
  host += host_s;
  const double start = std::max(gpu, host);
  idle += start - gpu;
  gpu = start + gpu_s;
}

void HostExposure::kernel(double gpu_s, double host_s) {
  if (!split_) return;
  plain_.issue(gpu_s, host_s);
  with_.issue(gpu_s, host_s);
}

void HostExposure::model_host(double seconds) {
  if (!split_) return;
  plain_.host += seconds;
  with_.host += seconds;
}

void HostExposure::ddp_kernel(double gpu_s, double host_s) {
  if (split_) with_.issue(gpu_s, host_s);
}

void HostExposure::ddp_host(double seconds) {
  if (!split_) {
    pending_ += seconds;
    return;
  }
  with_.host += seconds;
}

double HostExposure::take() {
  if (!split_) {
    const double s = pending_;
    pending_ = 0;
    return s;
  }
  // What comes next on the GPU waits for the host's work so far: a probe of no GPU time.
  with_.issue(0.0, 0.0);
  const double extra = std::max(0.0, with_.idle - plain_.idle - taken_);
  taken_ += extra;
  return extra;
}

}  // namespace ddpsim::ddp
