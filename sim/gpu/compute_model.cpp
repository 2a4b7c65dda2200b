#include "gpu/compute_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace ddpsim::gpu {

Kernel roofline_kernel(double flops, double bytes, double peak_flops, double hbm_bandwidth,
                       const config::ComputeSettings& s) {
  Kernel k;
  k.shape.compute_s = peak_flops > 0 ? flops / (peak_flops * s.flops_efficiency) : 0.0;
  k.shape.memory_s = hbm_bandwidth > 0 ? bytes / (hbm_bandwidth * s.memory_efficiency) : 0.0;
  k.shape.overhead_s = s.kernel_overhead;
  k.seconds = std::max(k.shape.compute_s, k.shape.memory_s) + k.shape.overhead_s;
  return k;
}

double roofline_time(double flops, double bytes, double peak_flops, double hbm_bandwidth,
                     const config::ComputeSettings& s) {
  return roofline_kernel(flops, bytes, peak_flops, hbm_bandwidth, s).seconds;
}

double optimizer_bytes_per_element(const std::string& optimizer, int elem_size) {
  // SGD with momentum reads param, grad, momentum and writes param, momentum: 5 tensors.
  // Adam/AdamW read param, grad, exp_avg, exp_avg_sq and write param, exp_avg, exp_avg_sq: 7.
  if (optimizer == "adam" || optimizer == "adamw") return 7.0 * elem_size;
  return 5.0 * elem_size;
}

double input_bytes_per_sample(const config::Scenario& sc) {
  if (sc.training.input_bytes_per_sample) return *sc.training.input_bytes_per_sample;
  return sc.model.input_bytes_per_sample;
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

bool is_gemm_like(config::LayerType t) {
  return t == config::LayerType::CONV2D || t == config::LayerType::LINEAR || t == config::LayerType::MATMUL;
}

// A measured time carries no roofline split: GEMM-like layers count as compute-bound, the rest as
// memory-bound (what the contention model needs to know).
Kernel measured_kernel(double seconds, config::LayerType t) {
  Kernel k;
  k.seconds = seconds;
  if (is_gemm_like(t))
    k.shape.compute_s = seconds;
  else
    k.shape.memory_s = seconds;
  return k;
}

}  // namespace

double flops_efficiency_for(const config::Scenario& sc, config::LayerType type) {
  const std::string t = config::to_string(type);
  const auto& cs = sc.compute;
  if (auto it = cs.flops_efficiency_by_type.find(t); it != cs.flops_efficiency_by_type.end()) return it->second;
  if (cs.flops_efficiency_set) return cs.flops_efficiency;
  const auto& eff = sc.cluster.gpu.efficiency;
  if (auto d = eff.find(sc.training.compute_dtype); d != eff.end())
    if (auto it = d->second.find(t); it != d->second.end()) return it->second;
  // Defaults: large GEMMs reach 70-90 % of peak (NVIDIA Matrix Multiplication Background User's
  // Guide); convolutions run as implicit GEMMs with extra data movement, somewhat lower (NVIDIA
  // Convolutional Layers User's Guide). The rest is memory-bound and rarely limited by FLOPs.
  switch (type) {
    case config::LayerType::LINEAR:
    case config::LayerType::MATMUL: return 0.7;
    case config::LayerType::CONV2D: return 0.55;
    default: return cs.flops_efficiency;
  }
}

ComputeProfile build_compute_profile(const config::Scenario& sc) {
  ComputeProfile p;
  const auto& m = sc.model;
  const auto& gpu = sc.cluster.gpu;
  const auto& cs = sc.compute;
  const double hbm = gpu.hbm_bandwidth;
  p.compute_dtype = sc.training.compute_dtype;
  p.peak_flops = peak_for(gpu, sc.training.compute_dtype);
  p.autocast = sc.training.compute_dtype == "float16" || sc.training.compute_dtype == "bfloat16";
  const double scale = static_cast<double>(sc.training.batch_size) / static_cast<double>(m.batch_size);
  // Measured times refer to the batch they were measured at.
  const double measured_scale = static_cast<double>(sc.training.batch_size) /
                                static_cast<double>(m.measured_batch_size > 0 ? m.measured_batch_size : m.batch_size);
  // Under autocast activations are half precision: half the activation traffic. GEMM-like layers
  // read a half copy of their fp32 weights, made in forward (read 4 + write 2 bytes per element,
  // then 2 read) and whose gradient is cast back to fp32 in backward.
  const double act_factor = p.autocast ? 0.5 : 1.0;

  p.forward.reserve(m.layers.size());
  p.backward.reserve(m.layers.size());
  for (const auto& l : m.layers) {
    double param_bytes = 0;
    for (int pi : l.params) param_bytes += m.params[pi].bytes();
    Kernel f, b;
    if (cs.use_measured && l.fwd_time && l.bwd_time) {
      // Measured at the profile's batch size; scaled linearly with the batch.
      f = measured_kernel(*l.fwd_time * measured_scale, l.type);
      b = measured_kernel(*l.bwd_time * measured_scale, l.type);
      ++p.measured_layers;
    } else {
      const bool cast = p.autocast && is_gemm_like(l.type);
      const double fwd_param = cast ? 2.0 * param_bytes : param_bytes;
      const double bwd_param = cast ? 2.5 * param_bytes : 2.0 * param_bytes;
      config::ComputeSettings ls = cs;
      ls.flops_efficiency = flops_efficiency_for(sc, l.type);
      f = roofline_kernel(l.fwd_flops * scale, l.fwd_bytes * scale * act_factor + fwd_param, p.peak_flops, hbm, ls);
      b = roofline_kernel(l.bwd_flops * scale, l.bwd_bytes * scale * act_factor + bwd_param, p.peak_flops, hbm, ls);
    }
    p.forward.push_back(f);
    p.backward.push_back(b);
    p.forward_total += f.seconds;
    p.backward_total += b.seconds;
  }

  // reducer.cpp copy_grad_to_bucket (mul_out by 1/world_size) or, for gradient views, div_ in place:
  // either reads and writes the gradient once.
  p.copy_in.assign(m.params.size(), Kernel{});
  p.copy_out.assign(m.params.size(), Kernel{});
  double opt_bytes = 0, grad_bytes = 0;
  size_t trainable = 0;
  for (size_t i = 0; i < m.params.size(); ++i) {
    const auto& prm = m.params[i];
    if (!prm.requires_grad) continue;
    ++trainable;
    grad_bytes += prm.bytes();
    p.copy_in[i] = roofline_kernel(0, 2 * prm.bytes(), p.peak_flops, hbm, cs);
    p.copy_out[i] = p.copy_in[i];
    opt_bytes += static_cast<double>(prm.numel) *
                 optimizer_bytes_per_element(sc.training.optimizer, config::dtype_size(prm.dtype));
  }
  const double kernels = optimizer_kernels(sc.training.optimizer, sc.training.optimizer_impl, trainable);
  p.optimizer = roofline_kernel(0, opt_bytes, p.peak_flops, hbm, cs);
  p.optimizer.shape.overhead_s = cs.kernel_overhead * kernels;
  p.optimizer.seconds = p.optimizer.shape.memory_s + p.optimizer.shape.overhead_s;

  // torch.cuda.amp.GradScaler.unscale_: one foreach pass reading and writing every gradient.
  if (sc.training.compute_dtype == "float16" && sc.training.grad_scaler)
    p.grad_unscale = roofline_kernel(0, 2 * grad_bytes, p.peak_flops, hbm, cs);
  // zero_grad(set_to_none=False) (the default before PyTorch 2.0) zeroes the gradients: one write.
  if (!sc.training.zero_grad_set_to_none) p.zero_grad = roofline_kernel(0, grad_bytes, p.peak_flops, hbm, cs);
  // clip_grad_norm_ (foreach): the norms read every gradient, the scaling reads and writes them.
  if (sc.training.clip_grad_norm) p.clip = roofline_kernel(0, 3 * grad_bytes, p.peak_flops, hbm, cs);

  // The input batch crosses the GPU's host link; pageable memory is staged by the driver through
  // a pinned buffer at about half the pinned rate (NVIDIA developer blog, "How to Optimize Data
  // Transfers in CUDA C/C++").
  const double in_bytes = input_bytes_per_sample(sc) * sc.training.batch_size;
  const double h2d_bw = gpu.host_bandwidth * (sc.training.pin_memory ? 1.0 : 0.5);
  if (in_bytes > 0 && h2d_bw > 0) {
    p.h2d.shape.memory_s = in_bytes / h2d_bw;
    p.h2d.shape.overhead_s = cs.kernel_overhead;
    // A synchronous copy (non_blocking=False, or any copy from pageable memory) returns to the host
    // only once it is done, so the forward's first kernel is launched after it: the GPU idles for
    // one launch latency.
    if (!sc.training.non_blocking || !sc.training.pin_memory) p.h2d.shape.overhead_s += cs.launch_latency;
    p.h2d.seconds = p.h2d.shape.memory_s + p.h2d.shape.overhead_s;
  }

  // Calibration to one number users know: the measured single-GPU step (no DDP) at this batch.
  // That step is input copy + forward + backward + (unscale, clip) + optimizer; everything but
  // the input copy is scaled by one factor so that the sum matches.
  if (sc.training.measured_single_gpu_step_s) {
    const double scalable =
        p.forward_total + p.backward_total + p.grad_unscale.seconds + p.clip.seconds + p.optimizer.seconds;
    const double target = *sc.training.measured_single_gpu_step_s - p.h2d.seconds;
    if (target <= 0 || scalable <= 0)
      throw core::ConfigError(
          sc.file + ": /training/measured_single_gpu_step: " + std::to_string(*sc.training.measured_single_gpu_step_s) +
          " s leaves no time for compute after the input copy (" + std::to_string(p.h2d.seconds) +
          " s); expected a measured step longer than that");
    {
      p.compute_scale = target / scalable;
      auto scale_kernel = [&](Kernel& k) {
        k.seconds *= p.compute_scale;
        k.shape.compute_s *= p.compute_scale;
        k.shape.memory_s *= p.compute_scale;
        k.shape.overhead_s *= p.compute_scale;
      };
      for (auto& k : p.forward) scale_kernel(k);
      for (auto& k : p.backward) scale_kernel(k);
      scale_kernel(p.grad_unscale);
      scale_kernel(p.clip);
      scale_kernel(p.optimizer);
      scale_kernel(p.zero_grad);
      p.forward_total *= p.compute_scale;
      p.backward_total *= p.compute_scale;
    }
  }
  return p;
}

}  // namespace ddpsim::gpu
