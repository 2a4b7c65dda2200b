#include "ddp/comm_hooks.hpp"

#include <algorithm>
#include <cmath>

namespace ddpsim::ddp {

double BucketComm::wire_bytes() const {
  double b = 0;
  for (const auto& op : chain)
    if (op.kind == HookOp::Kind::ALLREDUCE) b += op.bytes;
  return b;
}

double BucketComm::gathered_bytes() const {
  double b = 0;
  for (const auto& op : chain)
    if (op.kind == HookOp::Kind::ALLGATHER) b += op.bytes;
  return b;
}

double BucketComm::ring_bytes_sent(int world_size) const {
  const double n = world_size;
  if (world_size <= 1) return 0;
  return wire_bytes() * 2 * (n - 1) / n + gathered_bytes() * (n - 1);
}

double quantization_channels(double elems, int channel_size) {
  return std::floor(elems / channel_size) + 1;  // pad=(0, bucket_size - len % bucket_size)
}

PowerSgdSplit powersgd_split(const Bucket& bucket, const config::ModelSpec& model, int rank, double mcr) {
  PowerSgdSplit s;
  for (int pi : bucket.param_indices) {
    const auto& p = model.params[pi];
    const double numel = static_cast<double>(p.numel);
    if (p.shape.size() <= 1 || p.shape[0] == 0) {
      s.uncompressed_elems += numel;
      continue;
    }
    const double n = static_cast<double>(p.shape[0]);
    const double m = numel / n;
    if ((n + m) * rank * mcr < n * m) {
      s.p_elems += n * rank;
      s.q_elems += m * rank;
      s.matmul_flops += 2.0 * n * m * rank;
      s.compressed_elems += numel;
    } else {
      s.uncompressed_elems += numel;
    }
  }
  return s;
}

namespace {

HookOp kernel(const std::string& name, double flops, double bytes, const HookCosts& c) {
  HookOp op;
  op.kind = HookOp::Kind::KERNEL;
  op.name = name;
  op.kernel = gpu::roofline_kernel(flops, bytes, c.peak_flops, c.hbm_bandwidth, c.compute);
  return op;
}

// `count` small kernels moving `bytes` in all (a Python loop of tensor ops): each is memory-bound
// and pays the kernel overhead.
HookOp kernels(const std::string& name, double count, double bytes, const HookCosts& c) {
  HookOp op = kernel(name, 0, bytes, c);
  op.kernel.shape.overhead_s = count * c.compute.kernel_overhead;
  op.kernel.seconds = op.kernel.shape.memory_s + op.kernel.shape.overhead_s;
  return op;
}

HookOp allgather(const std::string& name, double bytes_per_rank) {
  HookOp op;
  op.kind = HookOp::Kind::ALLGATHER;
  op.name = name;
  op.bytes = bytes_per_rank;
  return op;
}

// quantization_hooks.py, as written (PyTorch 2.x): quantization_pertensor_hook and
// quantization_perchannel_hook. Both all-gather (not all-reduce) every rank's quantized bucket and
// dequantize and sum all N copies locally. Kernels are eager PyTorch ops on `elem`-byte gradients:
//   per tensor: MinMaxObserver (aminmax + a few scalar ops), torch.FloatTensor([s, z]) (reads the
//   two CUDA scalars on the host: a sync), all_gather of [s, z] (8 bytes per rank); callback 1:
//   round(x / s) + z, clamp, to(uint8) (5 ops), N zeros_like outputs, all_gather of the codes;
//   callback 2: zeros_like, per rank to(float32), - z, * s, += (4 ops), / N.
//   per channel: pad to C x channel_size, PerChannelMinMaxObserver, stack (2 C float32), all_gather
//   of it; callback 1: zeros, a Python loop over the C channels of 4 ops (/ s[i], round, + z[i],
//   assign), clamp, to(uint8), N zeros_like, all_gather; callback 2: zeros_like, per rank
//   to(float32), zeros_like and a loop over the C channels of 3 ops (- z[i], * s[i], assign), +=;
//   flatten, slice, / N.
// bits < 8: the uint8 codes packed to `bits` each before the all-gather and unpacked per rank after
// it (one kernel each); PyTorch's hooks always send 8 bits.
// The returned float32 tensor is copied into the bucket by the Reducer (read 4, write elem).
void plan_quantization(BucketComm& out, double elems, int elem, bool per_channel, const config::DdpSettings& ddp,
                       const HookCosts& c) {
  const double n = elems;
  const double w = std::max(1, c.world_size);
  const int bits = ddp.quantization.bits;
  const double ch = per_channel ? quantization_channels(n, ddp.quantization.channel_size) : 1;
  const double np = per_channel ? ch * ddp.quantization.channel_size : n;  // elements after padding
  const double codes = std::ceil(np * bits / 8.0);                         // bytes per rank on the wire
  const double e = elem;
  if (per_channel) {
    out.at_launch.push_back(kernel("pad bucket to channels", 0, n * e + np * e, c));
    out.at_launch.push_back(kernel("per-channel min/max observer", 0, np * e + 2 * ch * 4, c));
    out.at_launch.push_back(kernels("scales and zero points, stack", 6, ch * 4 * 8, c));
    out.chain.push_back(allgather("all-gather scales and zero points", 2 * ch * 4));
    out.chain.push_back(kernels("quantize per channel (loop over channels)", 4 * ch + 1, 4 * np + np * (e + e) * 4, c));
    out.chain.push_back(kernels("clamp, to uint8", 2, np * (4 + 4) + np * (4 + 1), c));
  } else {
    out.at_launch.push_back(kernel("min/max observer", 0, n * e, c));
    out.at_launch.push_back(kernels("scale and zero point", 6, 64, c));
    // torch.FloatTensor([s, z]) turns two CUDA scalars into Python floats: the host waits.
    HookOp sync = kernels("scale, zero point to host (sync)", 0, 0, c);
    sync.kernel.shape.overhead_s = c.compute.launch_latency;
    sync.kernel.seconds = c.compute.launch_latency;
    out.at_launch.push_back(sync);
    out.chain.push_back(allgather("all-gather scale and zero point", 8));
    out.chain.push_back(kernels("quantize (div, round, add, clamp, to uint8)", 5, n * (9 * e + 1), c));
  }
  out.chain.push_back(kernels("all-gather outputs (zeros_like)", w, w * np, c));
  if (bits < 8) out.chain.push_back(kernel("pack codes to " + std::to_string(bits) + " bits", 0, np + codes, c));
  out.chain.push_back(allgather("all-gather quantized bucket", codes));
  if (bits < 8) out.chain.push_back(kernels("unpack codes", w, w * (codes + np), c));
  if (per_channel) {
    // Per rank: to(float32) r1 w4, zeros_like w4, the channel loop (- z[i], * s[i], assign: r4 w4
    // each), += r8 w4.
    out.chain.push_back(kernels("dequantize per channel and sum (loop over ranks and channels)", 1 + w * (3 + 3 * ch),
                                4 * np + w * np * (5 + 4 + 3 * 8 + 12), c));
    out.chain.push_back(kernels("flatten, slice, / world size", 2, n * 8, c));
  } else {
    // zeros_like w4; per rank: to(float32) r1 w4, - z r4 w4, * s r4 w4, += r8 w4; / N r4 w4.
    out.chain.push_back(kernels("dequantize and sum (loop over ranks)", 2 + 4 * w, 4 * n + w * n * 33 + 8 * n, c));
  }
  out.chain.push_back(kernel("copy result to bucket", 0, n * (4 + e), c));
}

HookOp allreduce(const std::string& name, double bytes) {
  HookOp op;
  op.kind = HookOp::Kind::ALLREDUCE;
  op.name = name;
  op.bytes = bytes;
  return op;
}

}  // namespace

BucketComm plan_bucket_comm(const Bucket& bucket, const config::ModelSpec& model, const config::DdpSettings& ddp,
                            bool active, const HookCosts& c) {
  BucketComm out;
  const int elem = config::dtype_size(bucket.dtype);
  const double elems = bucket.bytes / elem;
  using config::CommHook;
  const CommHook hook = ddp.comm_hook;
  if (hook == CommHook::FP16_COMPRESS || hook == CommHook::BF16_COMPRESS) {
    // buffer.to(half).div_(world_size): read 4 + write 2, then read 2 + write 2 bytes per element;
    // the callback copies the reduced half tensor back: read 2 + write 4.
    out.at_launch.push_back(
        kernel(hook == CommHook::FP16_COMPRESS ? "cast bucket to float16" : "cast bucket to bfloat16", 0,
               elems * (elem + 2 + 4), c));
    out.chain.push_back(allreduce("all-reduce (compressed)", elems * 2));
    out.chain.push_back(kernel("decompress bucket", 0, elems * (2 + elem), c));
    return out;
  }
  if (hook == CommHook::QUANTIZE_PER_TENSOR || hook == CommHook::QUANTIZE_PER_CHANNEL) {
    plan_quantization(out, elems, elem, hook == CommHook::QUANTIZE_PER_CHANNEL, ddp, c);
    return out;
  }
  if (hook == CommHook::POWERSGD && active) {
    const auto& ps = ddp.powersgd;
    const int r = ps.matrix_approximation_rank;
    const double fb = 4;  // PowerSGD's P and Q are float32
    if (ps.batched) {
      // batched_powerSGD_hook: the whole bucket as an s x s matrix, s = ceil(sqrt(numel)).
      const double s = std::ceil(std::sqrt(elems));
      if (ps.use_error_feedback) out.at_launch.push_back(kernel("error feedback (add, clone)", 0, elems * elem * 5, c));
      out.at_launch.push_back(kernel("P = M Q", 2 * s * s * r, (s * s + 2 * s * r) * fb, c));
      out.chain.push_back(allreduce("all-reduce P", s * r * fb));
      out.chain.push_back(
          kernel("orthogonalize P, Q = M^T P", 2 * s * s * r + 2 * s * r * r, (s * s + 2 * s * r) * fb, c));
      out.chain.push_back(allreduce("all-reduce Q", s * r * fb));
      out.chain.push_back(kernel("M = P Q^T, error", 2 * s * s * r, s * s * fb + elems * elem * 3, c));
      return out;
    }
    const auto split = powersgd_split(bucket, model, r, ps.min_compression_rate);
    // Error feedback adds the previous error in place and keeps a copy: read 2 + write 1, then
    // read 1 + write 1 tensors of the bucket.
    if (ps.use_error_feedback) out.at_launch.push_back(kernel("error feedback (add, clone)", 0, elems * elem * 5, c));
    out.at_launch.push_back(kernel("pack uncompressed tensors", 0, split.uncompressed_elems * elem * 2, c));
    out.at_launch.push_back(
        kernel("P = M Q", split.matmul_flops, (split.compressed_elems + split.q_elems + split.p_elems) * fb, c));
    out.chain.push_back(allreduce("all-reduce uncompressed tensors", split.uncompressed_elems * elem));
    out.chain.push_back(kernel("unpack uncompressed tensors", 0, split.uncompressed_elems * elem * 3, c));
    out.chain.push_back(allreduce("all-reduce P", split.p_elems * fb));
    // Gram-Schmidt over r columns: about 2 n r^2 FLOPs per tensor and r passes over P.
    out.chain.push_back(kernel("orthogonalize P, Q = M^T P", split.matmul_flops + 2 * split.p_elems * r,
                               (split.compressed_elems + split.p_elems * (r + 1) + split.q_elems) * fb, c));
    out.chain.push_back(allreduce("all-reduce Q", split.q_elems * fb));
    out.chain.push_back(kernel("M = P Q^T, error", split.matmul_flops,
                               (split.p_elems + split.q_elems) * fb + split.compressed_elems * elem * 4, c));
    return out;
  }
  if (hook == CommHook::ALLREDUCE_HOOK) {
    // torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py, _allreduce_fut:
    // tensor.div_(world_size) on the bucket (read + write every element) before the all-reduce;
    // the Reducer then copies gradients in without dividing (same traffic as the default).
    out.at_launch.push_back(kernel("bucket.div_(world_size)", 0, elems * elem * 2, c));
  }
  out.chain.push_back(allreduce("all-reduce", bucket.bytes));
  return out;
}

}  // namespace ddpsim::ddp
