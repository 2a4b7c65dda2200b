#include "gpu/compute_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "gpu/kernel_model.hpp"
#include "gpu/optimizer_model.hpp"

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

double optimizer_bytes_per_element(const std::string& optimizer, int elem_size, bool sgd_momentum,
                                   const std::string& impl, bool torch_1_13) {
  return optimizer_transfers(optimizer_ops(optimizer, impl, sgd_momentum, torch_1_13)) * elem_size;
}

namespace {

// The trainable tensors among `params` (indices into the model's), as the optimizer sees them.
struct Trainable {
  std::vector<double> numels;
  std::vector<config::DType> dtypes;
};
Trainable trainable(const config::ModelSpec& m, const std::vector<int>& params) {
  Trainable t;
  for (int i : params) {
    const auto& prm = m.params[static_cast<size_t>(i)];
    if (!prm.requires_grad) continue;
    t.numels.push_back(static_cast<double>(prm.numel));
    t.dtypes.push_back(prm.dtype);
  }
  return t;
}

}  // namespace

Kernel optimizer_kernel(const config::Scenario& sc, const std::vector<int>& params, double peak_flops) {
  const auto& tr = sc.training;
  const bool torch_1_13 = !sc.ddp.recent_pytorch();
  const auto ops = optimizer_ops(tr.optimizer, tr.optimizer_impl, tr.sgd_momentum, torch_1_13);
  const double transfers = optimizer_transfers(ops);  // per element, whatever its dtype
  const auto [numels, dtypes] = trainable(sc.model, params);
  if (numels.empty()) return Kernel{};
  double opt_bytes = 0;
  for (size_t i = 0; i < numels.size(); ++i) opt_bytes += numels[i] * (transfers * config::dtype_size(dtypes[i]));
  const double kernels = optimizer_launches(ops, tr.optimizer_impl, numels, dtypes);
  Kernel k = roofline_kernel(0, opt_bytes, peak_flops, sc.cluster.gpu.hbm_bandwidth, sc.compute);
  k.shape.overhead_s = sc.compute.kernel_overhead * kernels;
  k.seconds = k.shape.memory_s + k.shape.overhead_s;
  return k;
}

std::string conv_math_mode(const config::GpuSpec& gpu, config::ComputeDtype dtype) {
  const std::string dt = config::to_string(dtype);
  return (dt == "float32" && gpu.peak_flops.count("tf32")) ? "tf32" : dt;
}

double input_bytes_per_sample(const config::Scenario& sc) {
  if (sc.training.input_bytes_per_sample) return *sc.training.input_bytes_per_sample;
  // The export's input at the scenario's size: training.image_size scales both sides of an image,
  // training.seq_len the tokens of a sequence (the kernel records' own scaling, `kernel_scaling`).
  const auto& m = sc.model;
  const auto& tr = sc.training;
  double scale = 1;
  if (m.kernel_export_size > 0) {
    const double r = 1.0 / m.kernel_export_size;
    if (m.kernel_size_kind == "image" && tr.image_size) scale = (*tr.image_size * r) * (*tr.image_size * r);
    if (m.kernel_size_kind == "seq" && tr.seq_len) scale = *tr.seq_len * r;
  }
  return m.input_bytes_per_sample * scale;
}

namespace {

double peak_for(const config::GpuSpec& gpu, const std::string& dtype) {
  auto it = gpu.peak_flops.find(dtype);
  if (it != gpu.peak_flops.end()) return it->second;
  it = gpu.peak_flops.find("float32");
  return it != gpu.peak_flops.end() ? it->second : 0.0;
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

namespace {

// Per layer, forward [0] and backward [1] time by kernel class: compute-bound, memory-bound, fixed
// (see TransferClass).
struct LayerClasses {
  double t[2][3] = {{0, 0, 0}, {0, 0, 0}};
};

void classify(const Kernel& k, double (&c)[3]) {
  const double bound = k.seconds - k.shape.overhead_s;
  c[(k.shape.compute_s > 0 && k.shape.compute_s >= k.shape.memory_s) ? 0 : 1] += bound;
  c[2] += k.shape.overhead_s;
}

// The roofline per layer (model files without kernel records, or measured times) on `gpu`
// (peak: p.peak_flops). With `classes`, each layer's forward and backward by kernel class.
void legacy_layers(const config::Scenario& sc, const config::GpuSpec& gpu, ComputeProfile& p, double scale,
                   double measured_scale, double act_factor, bool use_measured,
                   std::vector<LayerClasses>* classes = nullptr) {
  const auto& m = sc.model;
  const auto& cs = sc.compute;
  const double hbm = gpu.hbm_bandwidth;
  for (const auto& l : m.layers) {
    double param_bytes = 0;
    for (int pi : l.params) param_bytes += m.params[pi].bytes();
    Kernel f, b;
    if (use_measured && l.fwd_time && l.bwd_time) {
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
    if (classes) {
      classes->emplace_back();
      classify(f, classes->back().t[0]);
      classify(b, classes->back().t[1]);
    }
    p.forward.push_back(f);
    p.backward.push_back(b);
    p.forward_ops.push_back({f.seconds});
    p.backward_ops.push_back({b.seconds});
    p.forward_total += f.seconds;
    p.backward_total += b.seconds;
  }

  for (const auto& l : m.layers) p.model_flops += (l.fwd_flops + l.bwd_flops) * scale;
  p.mfu_peak = p.peak_flops;
  p.mfu_peak_dtype = p.compute_dtype;
}

Kernel sum(const std::vector<Kernel>& ks) {
  Kernel t;
  ShapeSum shapes;
  for (const auto& k : ks) {
    t.seconds += k.seconds;
    shapes.add(k.shape);
  }
  t.shape = shapes.shape();
  return t;
}

// FlashAttention-2 (PyTorch's SDPA flash backend since 2.2) achieved fraction of the fp16/bf16
// tensor-core peak: A100 forward up to 73 %, backward lower (Dao, arXiv 2307.08691, abstract and
// Figures 4-6: we take 0.65 forward, 0.5 backward at head dim 64-128, seq >= 512); on H100 FA2
// reaches about 35 % (Shah et al., "FlashAttention-3", arXiv 2407.08608, §1). The memory-efficient
// backend (xFormers/CUTLASS FMHA) runs at roughly 0.55x FA2's throughput in the FA2 paper's
// A100 benchmarks (Figure 4, "xformers" bars; approximate reading).
void attention_efficiency(const config::GpuSpec& gpu, std::string& backend, bool half, double& f, double& b) {
  // PyTorch's SDPA dispatcher (sdp_utils.cpp, check_flash_attention_hardware_support /
  // check_tensor_dtype): flash needs sm80+ and fp16/bf16; else it uses the memory-efficient kernel.
  if (backend == "sdpa_flash" && (gpu.arch == config::GpuArch::VOLTA || !half)) backend = "sdpa_mem_efficient";
  const bool hopper = gpu.arch == config::GpuArch::HOPPER || gpu.arch == config::GpuArch::BLACKWELL;
  f = hopper ? 0.35 : 0.65;
  b = hopper ? 0.30 : 0.50;
  if (backend == "sdpa_mem_efficient") {
    f *= 0.55;
    b *= 0.55;
  }
}

// The per-kernel model on `gpu` (the cluster's, or a measured profile's GPU for a transfer). With
// `classes`, each layer's forward and backward by kernel class.
// `with_loss`: the training loss on the last layer's logits (loss_kernels); not for a transfer,
// whose measured layer times never include it.
void kernel_model_layers(const config::Scenario& sc, const config::GpuSpec& gpu, ComputeProfile& p,
                         std::vector<LayerClasses>* classes = nullptr, bool with_loss = true) {
  const auto& m = sc.model;
  const auto& tr = sc.training;
  KernelContext c;
  const std::string dt = config::to_string(tr.compute_dtype);
  // PyTorch defaults (docs, "TensorFloat-32 (TF32) on Ampere (and later) devices"):
  // torch.backends.cuda.matmul.allow_tf32 = False (since 1.12), torch.backends.cudnn.allow_tf32 =
  // True: in float32, convolutions use TF32 tensor cores where the GPU has them, GEMMs do not.
  const bool half = config::is_half_precision(tr.compute_dtype);
  const std::string gemm_math = dt;
  const std::string conv_math = conv_math_mode(gpu, tr.compute_dtype);
  c.gemm = device_rates(gpu, gemm_math, sc.compute.kernel_overhead);
  c.conv = device_rates(gpu, conv_math, sc.compute.kernel_overhead);
  c.memory = device_rates(gpu, "float32", sc.compute.kernel_overhead);
  c.batch_ratio = static_cast<double>(tr.batch_size) / m.batch_size;
  c.act_bytes_factor = half ? 0.5 : 1.0;
  c.fuse_bias_gelu_dropout = tr.fused_bias_gelu_dropout;
  c.channels_last = tr.memory_format == "channels_last";
  c.bfloat16 = tr.compute_dtype == config::ComputeDtype::BFLOAT16;
  c.attention = tr.attention;
  attention_efficiency(gpu, c.attention, half, c.attention_fwd_efficiency, c.attention_bwd_efficiency);
  p.attention = c.attention;
  // Sequence length / image size.
  const char* key = tr.seq_len ? "seq_len" : "image_size";
  const std::optional<int>& want = tr.seq_len ? tr.seq_len : tr.image_size;
  const std::string kind = tr.seq_len ? "seq" : "image";
  if (tr.seq_len && tr.image_size)
    throw core::ConfigError(sc.file + ": /training: seq_len and image_size both given; a model has one input size");
  if (want) {
    if (m.kernel_size_kind != kind)
      throw core::ConfigError(
          sc.file + ": /training/" + key + ": " + std::to_string(*want) + " cannot be applied to " + m.name +
          ": its kernel records " +
          (m.kernel_size_kind.empty()
               ? std::string("carry no size scaling")
               : "scale with " + m.kernel_size_kind + (m.kernel_size_kind == "seq" ? " (seq_len)" : " (image_size)")) +
          "; re-export the model at the size wanted");
    c.size_ratio = static_cast<double>(*want) / m.kernel_export_size;
  }
  if (m.kernel_size_kind == "seq") p.seq_len = want.value_or(m.kernel_export_size);
  if (m.kernel_size_kind == "image") p.image_size = want.value_or(m.kernel_export_size);

  const auto lks = layer_kernels(m, c);
  if (with_loss) {
    std::string error;
    p.loss = loss_kernels(m, c, tr.loss, &error);
    if (!error.empty())
      throw core::ConfigError(sc.file + ": /training/loss: \"" + tr.loss + "\": " + error +
                              "; allowed here: auto or none");
  }
  const LossKernels& loss = p.loss;
  // Parameter traffic the records do not carry: under autocast each weight of a GEMM-like layer is
  // cast to half in forward (read 4, write 2 bytes per element) and its half gradient cast back in
  // backward; an embedding's backward zeroes and writes its whole weight gradient.
  const HostCost host = sc.training.cuda_graphs ? HostCost{} : eager_host_cost();
  double host_t = 0, gpu_t = 0;
  // Host and GPU as one queue: kernel i is launched at host_t (the host's cumulative dispatch time)
  // and starts at max(GPU free, launch). The GPU's wait for the host is charged to the kernel that
  // waited (shape.overhead_s), so a launch-bound step's layers are as long as the host makes them.
  // This walks forward then backward once, as one eager step does; the engine sees only durations.
  auto issue = [&](Kernel k, double per_op) {
    host_t += per_op;
    const double start = std::max(gpu_t, host_t);
    const double idle = start - gpu_t;
    k.shape.overhead_s += idle;
    k.seconds += idle;
    p.gpu_idle_s += idle;
    gpu_t = start + (k.seconds - idle);
    return k;
  };
  std::vector<std::vector<Kernel>> fwd(m.layers.size()), bwd(m.layers.size());
  const bool has_conv = m.has_layer_type(config::LayerType::CONV2D);
  const double input_bytes = input_bytes_per_sample(sc) * tr.batch_size;
  for (size_t li = 0; li < m.layers.size(); ++li) {
    const auto& l = m.layers[li];
    auto f = lks[li].forward;
    auto b = lks[li].backward;
    double param_bytes = 0;
    for (int pi : l.params) param_bytes += m.params[pi].bytes();
    const bool gemm_like = l.type == config::LayerType::LINEAR || l.type == config::LayerType::CONV2D;
    if (half && gemm_like && param_bytes > 0) {
      // float32 -> half forward (vectorized); the half gradient back to float32 (Copy.cu's unrolled
      // path: half_to_float_cast_kernel).
      f.insert(f.begin(), memory_kernel(1.5 * param_bytes, c.memory));
      b.push_back(half_to_float_cast_kernel(0.5 * param_bytes, c.memory));
      p.per_element.add(b.back());
    }
    if (l.type == config::LayerType::EMBEDDING && param_bytes > 0)
      b.push_back(memory_kernel(2 * param_bytes, c.memory));
    // channels_last: the input batch is converted on the GPU before the first layer, as the
    // PyTorch tutorial "(beta) Channels Last Memory Format in PyTorch" does
    // (`input.to(memory_format=torch.channels_last)`): a copy reading and writing it once.
    if (li == 0 && c.channels_last && has_conv) f.insert(f.begin(), memory_kernel(2 * input_bytes, c.memory));
    // The loss runs after the last layer's forward; its backward is the first of the step.
    if (li + 1 == m.layers.size() && loss.rows > 0) {
      f.insert(f.end(), loss.forward.begin(), loss.forward.end());
      b.insert(b.begin(), loss.backward.begin(), loss.backward.end());
    }
    if (f.empty()) f.push_back(Kernel{});  // a layer without kernels (unused parameters) costs nothing
    fwd[li] = std::move(f);
    bwd[li] = std::move(b);
    p.model_flops += lks[li].flops_fwd + lks[li].flops_bwd;
    p.conv_transposes_s += lks[li].transposes_s;
    p.per_element.add(lks[li].per_element);
  }
  p.host_forward_op_s = host.forward_op_s();
  p.host_backward_op_s = host.backward_op_s();
  p.forward_ops.resize(m.layers.size());
  p.backward_ops.resize(m.layers.size());
  for (size_t li = 0; li < m.layers.size(); ++li) {
    for (const auto& k : fwd[li])
      if (k.seconds > 0) p.forward_ops[li].push_back(k.seconds);
    for (const auto& k : bwd[li]) p.backward_ops[li].push_back(k.seconds);
  }
  // Host work of each layer that launches no kernel (views, module calls; the export's host_ops),
  // at the layer's start: the next kernel waits for it.
  p.host_only_forward.assign(m.layers.size(), 0.0);
  p.host_only_backward.assign(m.layers.size(), 0.0);
  for (size_t li = 0; li < m.layers.size(); ++li) {
    const auto& l = m.layers[li];
    p.host_only_forward[li] = l.host_views * host.view_s + l.host_module_calls * host.module_call_s;
    p.host_only_backward[li] = l.host_view_nodes * host.view_node_s;
  }
  std::vector<LayerClasses> cls(m.layers.size());
  for (size_t li = 0; li < m.layers.size(); ++li) {
    host_t += p.host_only_forward[li];
    for (auto& k : fwd[li]) {
      // A layer without kernels (its placeholder) launches nothing: the GPU's wait for the host
      // work before it lands on the next kernel.
      if (k.seconds > 0) {
        ++p.kernels_forward;
        k = issue(k, host.forward_op_s());
      }
      classify(k, cls[li].t[0]);
    }
  }
  p.host_forward_s = host_t;
  for (size_t li = m.layers.size(); li-- > 0;) {
    host_t += p.host_only_backward[li];
    for (auto& k : bwd[li]) {
      ++p.kernels_backward;
      k = issue(k, host.backward_op_s());
      classify(k, cls[li].t[1]);
    }
  }
  if (classes) *classes = std::move(cls);
  p.host_backward_s = host_t - p.host_forward_s;
  p.host_lead_s = std::max(0.0, gpu_t - host_t);
  for (size_t li = 0; li < m.layers.size(); ++li) {
    const Kernel f = sum(fwd[li]), b = sum(bwd[li]);
    p.forward.push_back(f);
    p.backward.push_back(b);
    p.forward_total += f.seconds;
    p.backward_total += b.seconds;
  }
  // MFU against the peak of the math path most of the FLOPs take.
  double conv_flops = 0;
  for (size_t li = 0; li < m.layers.size(); ++li)
    if (m.layers[li].type == config::LayerType::CONV2D) conv_flops += lks[li].flops_fwd + lks[li].flops_bwd;
  const bool conv_major = conv_flops > 0.5 * p.model_flops;
  p.mfu_peak = conv_major ? c.conv.math_peak : c.gemm.math_peak;
  p.mfu_peak_dtype = conv_major ? conv_math : gemm_math;
  if (!c.gemm.tensor_cores && !conv_major) p.mfu_peak_dtype = "float32";
}

// "Measured there, predicted here" (docs/facts.md §8, Habitat's scheme with this model's kernels):
// a layer measured on GPU A takes, on the cluster's GPU B, its measured time x (the model's
// estimate of the layer's kernels on B) / (their estimate on A). Equivalently each kernel keeps its
// share of the measured time in proportion to its estimate on A and is scaled by its own ratio:
// compute-bound kernels by waves over B's SMs and B's math rate, memory-bound ones by B's
// bandwidth (and size-dependent achieved bandwidth), fixed costs by the launch/host model. What
// the model gets wrong about the layer on A (library kernel choice, fusion, efficiency) is carried
// over to B; both estimates are at the scenario's batch, dtype and size, and the measured time is
// scaled to the scenario's batch linearly as for an untransferred profile.
void transfer_layers(const config::Scenario& sc, ComputeProfile& p, double scale, double measured_scale,
                     double act_factor) {
  const auto& m = sc.model;
  const auto& a = *m.measured_gpu_spec;
  const auto& b = sc.cluster.gpu;
  std::vector<LayerClasses> ca, cb;
  if (m.has_kernels()) {
    ComputeProfile pa;
    kernel_model_layers(sc, a, pa, &ca, false);
    kernel_model_layers(sc, b, p, &cb, false);
  } else {
    ComputeProfile pa = p;
    pa.peak_flops = peak_for(a, config::to_string(sc.training.compute_dtype));
    legacy_layers(sc, a, pa, scale, measured_scale, act_factor, false, &ca);
    legacy_layers(sc, b, p, scale, measured_scale, act_factor, false, &cb);
  }
  double on_a[3] = {0, 0, 0}, on_b[3] = {0, 0, 0};
  p.forward_total = p.backward_total = 0;
  p.measured_layers = 0;
  for (size_t li = 0; li < m.layers.size(); ++li) {
    const auto& l = m.layers[li];
    if (l.fwd_time && l.bwd_time) {
      ++p.measured_layers;
      for (int dir = 0; dir < 2; ++dir) {
        const double measured = (dir == 0 ? *l.fwd_time : *l.bwd_time) * measured_scale;
        const auto& xa = ca[li].t[dir];
        const auto& xb = cb[li].t[dir];
        const double est_a = xa[0] + xa[1] + xa[2], est_b = xb[0] + xb[1] + xb[2];
        double t = measured;
        if (est_a > 0 && est_b > 0) {
          t = measured * est_b / est_a;
          for (int c = 0; c < 3; ++c) {
            on_a[c] += measured * xa[c] / est_a;
            on_b[c] += measured * xb[c] / est_a;
          }
        } else {
          // No kernels to scale by (the model sees nothing in this layer): kept as measured.
          on_a[2] += measured;
          on_b[2] += measured;
        }
        Kernel& k = dir == 0 ? p.forward[li] : p.backward[li];
        if (k.seconds > 0) {
          // B's estimated roofline split, at the transferred duration.
          const double f = t / k.seconds;
          k.shape.compute_s *= f;
          k.shape.memory_s *= f;
          k.shape.overhead_s *= f;
          k.seconds = t;
        } else {
          k = measured_kernel(t, l.type);
        }
      }
    }
    p.forward_total += p.forward[li].seconds;
    p.backward_total += p.backward[li].seconds;
  }
  p.transfer_from = m.measured_gpu;
  p.transfer_from_device = m.measured_on;
  p.transfer_to = b.name;
  const char* names[3] = {"compute-bound", "memory-bound", "fixed"};
  for (int c = 0; c < 3; ++c) p.transfer.push_back({names[c], on_a[c], on_b[c]});
}

// The optimizer's host work against its GPU work, as one queue (the layers' `issue` walk in
// kernel_model_layers): unscale_ and clip_grad_norm_, then GradScaler.step's found_inf `.item()`
// (torch/amp/grad_scaler.py `_maybe_opt_step`, 1.13 and 2.x: a blocking copy to the host, skipped
// for optimizers with `_step_supports_amp_scaling`, i.e. the fused ones, which take the scale and
// found_inf as tensors), then optimizer.step() and zero_grad(). Sets optimizer_host_wait. Walked
// over every parameter `all`: not for FSDP (flat parameters) or ZeRO (a sharded step per rank),
// whose optimizers see other tensors (not modelled), nor under CUDA graphs (replayed without the
// host).
void optimizer_host_walk(const config::Scenario& sc, const std::vector<int>& all, ComputeProfile& p) {
  const auto& tr = sc.training;
  if (tr.cuda_graphs || tr.wrapper == config::Wrapper::FSDP || tr.zero_redundancy_optimizer.enabled) return;
  const auto [numels, dtypes] = trainable(sc.model, all);
  if (numels.empty()) return;
  const bool torch_1_13 = !sc.ddp.recent_pytorch();
  const HostCost eager = eager_host_cost();
  const OptimizerHost oh = optimizer_host_costs(eager.forward_dispatch_s, eager.launch_s, torch_1_13);
  // The host starts `host_lead_s` ahead of the GPU (unknown: far ahead, nothing exposed before a sync).
  double host = p.host_lead_s >= 0 ? -p.host_lead_s : -1e300, gpu = 0, idle = 0, host_total = 0;
  // Each kernel takes its share of the pass's GPU time by its bytes (evenly when none carry bytes).
  auto walk = [&](const std::vector<HostLaunch>& items, const Kernel& k) {
    double bytes = 0, kernels = 0;
    for (const auto& it : items)
      if (it.kernel) {
        bytes += it.bytes;
        kernels += 1;
      }
    for (const auto& it : items) {
      host += it.host_s;
      host_total += it.host_s;
      if (!it.kernel) continue;
      const double d = bytes > 0 ? k.seconds * it.bytes / bytes : k.seconds / kernels;
      const double start = std::max(gpu, host);
      idle += start - gpu;
      gpu = start + d;
    }
  };
  if (p.grad_unscale.seconds > 0) walk(foreach_pass_launches(2, 1, numels, dtypes, oh), p.grad_unscale);
  if (p.clip.seconds > 0) {
    // clip_grad_norm_: 1.13 norms each gradient, then scales each (torch/nn/utils/clip_grad.py at
    // v1.13.0: torch.norm per gradient, then g.detach().mul_ per gradient); 2.x groups them
    // (_foreach_norm, _foreach_mul_). One read for the norms, a read and a write for the scaling.
    auto items = torch_1_13 ? per_tensor_launches(1, numels, dtypes, oh.loop_per_op, oh.launch)
                            : foreach_pass_launches(1, 1, numels, dtypes, oh);
    const auto scale = torch_1_13 ? per_tensor_launches(2, numels, dtypes, oh.loop_per_op, oh.launch)
                                  : foreach_pass_launches(2, 1, numels, dtypes, oh);
    items.insert(items.end(), scale.begin(), scale.end());
    walk(items, p.clip);
  }
  p.optimizer_sync =
      tr.compute_dtype == config::ComputeDtype::FLOAT16 && tr.grad_scaler && tr.optimizer_impl != "fused";
  // The `.item()`: the host waits for the GPU, then for the copy's round trip (one launch latency).
  if (p.optimizer_sync) host = std::max(host, gpu) + sc.compute.launch_latency;
  if (tr.measured_optimizer_step_s) {
    walk({HostLaunch{0, 0, true}}, p.optimizer);  // measured as it ran, its host work included
  } else {
    const auto ops = optimizer_ops(tr.optimizer, tr.optimizer_impl, tr.sgd_momentum, torch_1_13);
    walk(optimizer_host_launches(ops, tr.optimizer, tr.optimizer_impl, numels, dtypes, oh), p.optimizer);
    // Optimizer.zero_grad (1.13 and 2.x): a Python loop over the gradients; set_to_none drops each,
    // else each is zeroed, grouped by _foreach_zero_ only when the optimizer was given foreach or
    // fused (`self.defaults.get("foreach", False) or ...get("fused", False)`: torch's default None
    // zeroes per tensor).
    const bool grouped = tr.optimizer_impl == "fused" || (tr.optimizer_impl_set && tr.optimizer_impl == "foreach");
    if (tr.zero_grad_set_to_none)
      walk({HostLaunch{static_cast<double>(numels.size()) * oh.none_per_tensor, 0, false}}, p.zero_grad);
    else if (grouped)
      walk(foreach_pass_launches(1, 1, numels, dtypes, oh), p.zero_grad);
    else
      walk(per_tensor_launches(1, numels, dtypes, oh.zero_per_tensor, oh.launch), p.zero_grad);
  }
  p.optimizer_host_s = host_total;
  if (idle > 0) p.optimizer_host_wait.seconds = p.optimizer_host_wait.shape.overhead_s = idle;
}

}  // namespace

double flops_efficiency_for(const config::Scenario& sc, config::LayerType type) {
  const std::string t = config::to_string(type);
  const auto& cs = sc.compute;
  if (auto it = cs.flops_efficiency_by_type.find(t); it != cs.flops_efficiency_by_type.end()) return it->second;
  if (cs.flops_efficiency_set) return cs.flops_efficiency;
  const auto& eff = sc.cluster.gpu.efficiency;
  if (auto d = eff.find(config::to_string(sc.training.compute_dtype)); d != eff.end())
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

double single_gpu_step(const ComputeProfile& p) {
  return p.h2d.seconds + p.forward_total + p.backward_total + p.grad_unscale.seconds + p.clip.seconds +
         p.optimizer.seconds + p.zero_grad.seconds + p.optimizer_host_wait.seconds;
}

double mfu(const ComputeProfile& p, double step_s, int micro_steps) {
  if (step_s <= 0 || p.mfu_peak <= 0) return 0;
  return p.model_flops * micro_steps / (step_s * p.mfu_peak);
}

ComputeProfile build_compute_profile(const config::Scenario& sc) {
  ComputeProfile p;
  const auto& m = sc.model;
  const auto& gpu = sc.cluster.gpu;
  const auto& cs = sc.compute;
  const double hbm = gpu.hbm_bandwidth;
  p.compute_dtype = config::to_string(sc.training.compute_dtype);
  p.peak_flops = peak_for(gpu, p.compute_dtype);
  p.autocast = config::is_half_precision(sc.training.compute_dtype);
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
  const bool any_measured = cs.use_measured && m.has_measured_times();
  // A measured profile from another GPU than the cluster's is transferred (see transfer_layers).
  const bool transfer = any_measured && m.measured_gpu_spec && m.measured_gpu_spec->name != gpu.name;
  if (m.has_kernels() && !any_measured) {
    kernel_model_layers(sc, gpu, p);
  } else if (transfer) {
    if (sc.training.seq_len || sc.training.image_size)
      throw core::ConfigError(sc.file + ": /training/" + (sc.training.seq_len ? "seq_len" : "image_size") + ": model " +
                              m.name + " (" + m.file +
                              ") uses measured times, which are for the size they were measured at; drop the "
                              "setting or set compute.use_measured to false");
    transfer_layers(sc, p, scale, measured_scale, act_factor);
  } else {
    if (sc.training.seq_len || sc.training.image_size)
      throw core::ConfigError(sc.file + ": /training/" + (sc.training.seq_len ? "seq_len" : "image_size") + ": model " +
                              m.name + " (" + m.file +
                              ") has no kernel records to rescale (or uses measured times); re-export it with "
                              "scripts/export_model.py (kernel records are on by default) or drop the setting");
    legacy_layers(sc, gpu, p, scale, measured_scale, act_factor, cs.use_measured);
  }
  p.provenance = !p.transfer_from.empty()
                     ? "transferred from " + p.transfer_from +
                           (p.transfer_from_device.empty() ? std::string() : " (" + p.transfer_from_device + ")") +
                           " to " + p.transfer_to + " (per-kernel scaling)"
                 : p.measured_layers > 0
                     ? "measured" + (m.measured_on.empty() ? std::string() : " on " + m.measured_on)
                     : (m.has_kernels() ? "estimated (per-kernel model)" : "estimated (roofline: no kernel records)");

  // reducer.cpp copy_grad_to_bucket (mul_out by 1/world_size) or, for gradient views, div_ in place:
  // either reads and writes the gradient once.
  p.copy_in.assign(m.params.size(), Kernel{});
  p.copy_out.assign(m.params.size(), Kernel{});
  double grad_bytes = 0;
  std::vector<int> all(m.params.size());
  for (size_t i = 0; i < m.params.size(); ++i) {
    all[i] = static_cast<int>(i);
    const auto& prm = m.params[i];
    if (!prm.requires_grad) continue;
    grad_bytes += prm.bytes();
    p.copy_in[i] = roofline_kernel(0, 2 * prm.bytes(), p.peak_flops, hbm, cs);
    p.copy_out[i] = p.copy_in[i];
  }
  p.buffer_copy.assign(m.buffers.size(), Kernel{});
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const auto& b = m.buffers[i];
    const double bytes = static_cast<double>(b.numel) * static_cast<double>(config::dtype_size(b.dtype));
    if (bytes > 0) p.buffer_copy[i] = roofline_kernel(0, 2 * bytes, p.peak_flops, hbm, cs);
  }
  p.optimizer = optimizer_kernel(sc, all, p.peak_flops);

  // torch.cuda.amp.GradScaler.unscale_: one foreach pass reading and writing every gradient.
  if (sc.training.compute_dtype == config::ComputeDtype::FLOAT16 && sc.training.grad_scaler)
    p.grad_unscale = roofline_kernel(0, 2 * grad_bytes, p.peak_flops, hbm, cs);
  // zero_grad(set_to_none=False) (the default before PyTorch 2.0) zeroes the gradients: one write.
  if (!sc.training.zero_grad_set_to_none) p.zero_grad = roofline_kernel(0, grad_bytes, p.peak_flops, hbm, cs);
  // A measured optimizer.step() + zero_grad() replaces both estimates; it is a fixed cost (host-side
  // per-tensor work and memory passes as they ran) that the calibration below does not rescale.
  if (sc.training.measured_optimizer_step_s) {
    p.optimizer = Kernel{};
    p.optimizer.seconds = p.optimizer.shape.overhead_s = *sc.training.measured_optimizer_step_s;
    p.zero_grad = Kernel{};
  }
  // clip_grad_norm_ (foreach): the norms read every gradient, the scaling reads and writes them.
  if (sc.training.clip_grad_norm) p.clip = roofline_kernel(0, 3 * grad_bytes, p.peak_flops, hbm, cs);
  optimizer_host_walk(sc, all, p);

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
    const double fixed = sc.training.measured_optimizer_step_s ? p.optimizer.seconds : 0.0;
    const double scalable = p.forward_total + p.backward_total + p.grad_unscale.seconds + p.clip.seconds +
                            p.optimizer.seconds + p.zero_grad.seconds + p.optimizer_host_wait.seconds - fixed;
    const double target = *sc.training.measured_single_gpu_step_s - p.h2d.seconds - fixed;
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
      for (auto* ops : {&p.forward_ops, &p.backward_ops})
        for (auto& layer : *ops)
          for (double& t : layer) t *= p.compute_scale;
      for (auto* ks : {&p.loss.forward, &p.loss.backward})
        for (auto& k : *ks) scale_kernel(k);
      scale_kernel(p.grad_unscale);
      scale_kernel(p.clip);
      if (!sc.training.measured_optimizer_step_s) scale_kernel(p.optimizer);
      scale_kernel(p.zero_grad);
      scale_kernel(p.optimizer_host_wait);
      p.forward_total *= p.compute_scale;
      p.backward_total *= p.compute_scale;
    }
  }
  return p;
}

}  // namespace ddpsim::gpu
