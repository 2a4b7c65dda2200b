#include "buckets.hpp"

#include <cmath>

#include "config/specs.hpp"
#include "ddp/bucketizer.hpp"

namespace ddpbench {

std::vector<Bucket> assign_by_size(const std::vector<BucketTensor>& tensors, const std::vector<uint64_t>& limits) {
  // The one implementation of PyTorch's rule lives in the simulator (sim/ddp/bucketizer); the
  // benchmark must bucket exactly as the simulation it is compared with.
  std::vector<ddpsim::config::ParamSpec> params;
  std::vector<int> order;
  for (size_t i = 0; i < tensors.size(); ++i) {
    ddpsim::config::ParamSpec p;
    p.name = std::to_string(tensors[i].index);
    p.dtype = ddpsim::config::parse_dtype(tensors[i].dtype).value_or(ddpsim::config::DType::UINT8);
    const int elem = ddpsim::config::dtype_size(p.dtype);
    p.numel = static_cast<int64_t>(tensors[i].bytes / static_cast<uint64_t>(elem));
    if (static_cast<uint64_t>(p.numel) * static_cast<uint64_t>(elem) != tensors[i].bytes) {
      p.dtype = ddpsim::config::DType::UINT8;  // keep the exact byte count
      p.numel = static_cast<int64_t>(tensors[i].bytes);
    }
    p.shape = {p.numel};
    params.push_back(p);
    order.push_back(static_cast<int>(i));
  }
  std::vector<double> lim;
  for (uint64_t l : limits) lim.push_back(static_cast<double>(l));
  std::vector<Bucket> out;
  for (const auto& b : ddpsim::ddp::assign_by_size(params, order, lim, false)) {
    Bucket r;
    for (int i : b.param_indices) {
      r.params.push_back(tensors[static_cast<size_t>(i)].index);
      r.bytes += tensors[static_cast<size_t>(i)].bytes;
    }
    r.size_limit = std::isinf(b.size_limit) ? UINT64_MAX : static_cast<uint64_t>(b.size_limit);
    r.dtype = tensors[static_cast<size_t>(b.param_indices.front())].dtype;
    out.push_back(std::move(r));
  }
  return out;
}

uint64_t cap_bytes(double mb) {
  ddpsim::config::DdpSettings ddp;
  ddp.bucket_cap_mb = mb;
  return static_cast<uint64_t>(ddp.bucket_cap_bytes());
}

std::vector<uint64_t> rebuild_limits(const CapSpec& cap, double first_bucket_mb) {
  // The simulator's DdpSettings holds PyTorch's first-bucket rule (one home, docs/design.md).
  ddpsim::config::DdpSettings ddp;
  ddp.bucket_cap_mb = cap.mb;
  ddp.bucket_cap_is_default = cap.is_default;
  if (first_bucket_mb > 0) ddp.first_bucket_cap_mb = first_bucket_mb;
  return {static_cast<uint64_t>(ddp.first_bucket_cap_bytes()), static_cast<uint64_t>(ddp.bucket_cap_bytes())};
}

std::vector<Bucket> rebuilt_plan(const Model& m, const CapSpec& cap, double first_bucket_mb) {
  std::vector<BucketTensor> tensors;
  for (int idx : m.spec.grad_ready_order) {
    const auto& p = m.spec.params[static_cast<size_t>(idx)];
    if (!p.requires_grad) continue;
    tensors.push_back({idx, static_cast<uint64_t>(p.bytes()), ddpsim::config::to_string(p.dtype)});
  }
  return assign_by_size(tensors, rebuild_limits(cap, first_bucket_mb));
}

}  // namespace ddpbench
