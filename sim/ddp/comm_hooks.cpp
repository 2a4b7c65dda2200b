#include "ddp/comm_hooks.hpp"

#include <cmath>

namespace ddpsim::ddp {

double BucketComm::wire_bytes() const {
  double b = 0;
  for (const auto& op : chain)
    if (op.kind == HookOp::Kind::ALLREDUCE) b += op.bytes;
  return b;
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
  const std::string& hook = ddp.comm_hook;
  if (hook == "fp16_compress" || hook == "bf16_compress") {
    // buffer.to(half).div_(world_size): read 4 + write 2, then read 2 + write 2 bytes per element;
    // the callback copies the reduced half tensor back: read 2 + write 4.
    out.at_launch.push_back(kernel(hook == "fp16_compress" ? "cast bucket to float16" : "cast bucket to bfloat16", 0,
                                   elems * (elem + 2 + 4), c));
    out.chain.push_back(allreduce("all-reduce (compressed)", elems * 2));
    out.chain.push_back(kernel("decompress bucket", 0, elems * (2 + elem), c));
    return out;
  }
  if (hook == "powersgd" && active) {
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
  out.chain.push_back(allreduce("all-reduce", bucket.bytes));
  return out;
}

}  // namespace ddpsim::ddp
