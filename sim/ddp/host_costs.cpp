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

HostCosts eager_host_costs(double forward_op_s, double backward_op_s, bool torch_1_13) {
  // Shares, each cost over the reference op of the same machine (bench/results/ddp-host-shares-2026-12-04):
  // - torch 1.13: scripts/measure_ddp_host.py --reps 30, three runs on this project's 2-vCPU AMD
  //   EPYC machine (1-minute load 0.1-0.5), the reference op timed once per round of the same run
  //   (4.4-4.9 us forward, 6.3-6.6 us backward); medians of the three: hook 0.848 (0.804-0.948) of
  //   a backward node, per buffer 0.525 (0.474-0.823) of a forward op, DDP.forward 24.2
  //   (23.6-28.8) forward ops, the two copies without gradient_as_bucket_view 0.303 (0.253-0.331)
  //   of a backward node together.
  // - torch 2.x: the same script (--reps 15) with torch 2.11 on the CPU of the H200 machine
  //   (bench/results/device-h200-2026-12-04/ddp_host-torch2.11.json: hook 7.07 us, per buffer
  //   5.52 us, forward 115.2 us) over measure_dispatch.py's mul chain on that CPU in another process
  //   the same hour (dispatch.txt: 7.97 us forward, 9.20 us backward): 0.768, 0.692, 14.44, the
  //   two copies 2.14 us: 0.233. The two versions' hook and buffer shares agree within their
  //   scatter; DDP.forward's Python differs.
  // The Reducer's per-bucket share: today's runs put the per-bucket slope (25-30 us) below gloo's
  // one-rank all_reduce timed alone (35 us), so it is not resolved as a share; the 2026-12-02
  // figure (3.67 us, measured_host_costs) stays.
  HostCosts c = measured_host_costs();
  c.per_gradient_hook_s = (torch_1_13 ? 0.848 : 0.768) * backward_op_s;
  c.per_buffer_s = (torch_1_13 ? 0.525 : 0.692) * forward_op_s;
  c.forward_s = (torch_1_13 ? 24.2 : 14.44) * forward_op_s;
  c.per_copy_s = (torch_1_13 ? 0.303 : 0.233) / 2 * backward_op_s;
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
