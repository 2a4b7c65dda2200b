#include "gpu/compute_model.hpp"

#include <algorithm>
#include <cmath>

namespace ddpsim::gpu {

double roofline_time(double flops, double bytes, double peak_flops, double hbm_bandwidth,
                     const config::ComputeSettings& s) {
  const double t_compute = peak_flops > 0 ? flops / (peak_flops * s.flops_efficiency) : 0.0;
  const double t_memory = hbm_bandwidth > 0 ? bytes / (hbm_bandwidth * s.memory_efficiency) : 0.0;
  return std::max(t_compute, t_memory) + s.kernel_overhead;
}

double optimizer_bytes_per_element(const std::string& optimizer, int elem_size) {
  // SGD with momentum reads param, grad, momentum and writes param, momentum: 5 tensors.
  // Adam/AdamW read param, grad, exp_avg, exp_avg_sq and write param, exp_avg, exp_avg_sq: 7.
  if (optimizer == "adam" || optimizer == "adamw") return 7.0 * elem_size;
  return 5.0 * elem_size;
}

namespace {
double peak_for(const config::GpuSpec& gpu, const std::string& dtype) {
  auto it = gpu.peak_flops.find(dtype);
  if (it != gpu.peak_flops.end()) return it->second;
  it = gpu.peak_flops.find("float32");
  return it != gpu.peak_flops.end() ? it->second : 0.0;
}

// Kernels an optimizer step launches per parameter tensor (for_loop), or per chunk of tensors
// (foreach / fused multi-tensor-apply kernels handle lists of tensors per launch).
double optimizer_kernels(const std::string& optimizer, const std::string& impl, size_t tensors) {
  const double per_tensor = (optimizer == "sgd") ? 2.0 : 5.0;
  // aten/src/ATen/native/cuda/MultiTensorApply.cuh: depth_to_max_tensors = {110, 64, 48, 36, 30};
  // SGD with momentum walks 3 lists (param, grad, momentum), Adam 4 (param, grad, exp_avg, exp_avg_sq).
  const double max_tensors = (optimizer == "sgd") ? 48.0 : 36.0;
  const double chunks = std::ceil(static_cast<double>(tensors) / max_tensors);
  if (impl == "for_loop") return per_tensor * static_cast<double>(tensors);
  if (impl == "fused") return chunks;
  return per_tensor * chunks;
}
}  // namespace

ComputeProfile build_compute_profile(const config::Scenario& sc) {
  ComputeProfile p;
  const auto& m = sc.model;
  const auto& gpu = sc.cluster.gpu;
  const auto& cs = sc.compute;
  p.compute_dtype = sc.training.compute_dtype;
  p.peak_flops = peak_for(gpu, sc.training.compute_dtype);
  const double scale = static_cast<double>(sc.training.batch_size) / static_cast<double>(m.batch_size);

  p.forward.reserve(m.layers.size());
  p.backward.reserve(m.layers.size());
  for (const auto& l : m.layers) {
    double param_bytes = 0;
    for (int pi : l.params) param_bytes += m.params[pi].bytes();
    double f, b;
    if (cs.use_measured && l.fwd_time && l.bwd_time) {
      // Measured at the profile's batch size; scaled linearly with the batch.
      f = *l.fwd_time * scale;
      b = *l.bwd_time * scale;
      ++p.measured_layers;
    } else {
      // Forward reads the weights once; backward reads them and writes their gradients.
      f = roofline_time(l.fwd_flops * scale, l.fwd_bytes * scale + param_bytes, p.peak_flops, gpu.hbm_bandwidth, cs);
      b = roofline_time(l.bwd_flops * scale, l.bwd_bytes * scale + 2 * param_bytes, p.peak_flops, gpu.hbm_bandwidth, cs);
    }
    p.forward.push_back(f);
    p.backward.push_back(b);
    p.forward_total += f;
    p.backward_total += b;
  }

  // reducer.cpp copy_grad_to_bucket (mul_out by 1/world_size) or, for gradient views, div_ in place:
  // either reads and writes the gradient once.
  p.copy_in.assign(m.params.size(), 0.0);
  p.copy_out.assign(m.params.size(), 0.0);
  double opt_bytes = 0;
  size_t trainable = 0;
  for (size_t i = 0; i < m.params.size(); ++i) {
    const auto& prm = m.params[i];
    if (!prm.requires_grad) continue;
    ++trainable;
    p.copy_in[i] = roofline_time(0, 2 * prm.bytes(), p.peak_flops, gpu.hbm_bandwidth, cs);
    p.copy_out[i] = p.copy_in[i];
    opt_bytes += static_cast<double>(prm.numel) *
                 optimizer_bytes_per_element(sc.training.optimizer, config::dtype_size(prm.dtype));
  }
  const double bw = gpu.hbm_bandwidth * cs.memory_efficiency;
  p.optimizer = (bw > 0 ? opt_bytes / bw : 0.0) +
                cs.kernel_overhead * optimizer_kernels(sc.training.optimizer, sc.training.optimizer_impl, trainable);
  return p;
}

}  // namespace ddpsim::gpu
