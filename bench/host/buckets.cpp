#include "buckets.hpp"

#include <algorithm>
#include <map>

namespace ddpbench {

std::vector<Bucket> assign_by_size(const std::vector<BucketTensor>& tensors, const std::vector<uint64_t>& limits) {
  struct Accumulator {
    Bucket bucket;
    size_t limit_index = 0;
  };
  std::vector<Bucket> result;
  std::vector<std::string> key_order;  // dtypes in order of first appearance
  std::map<std::string, Accumulator> acc;
  for (const auto& t : tensors) {
    if (!acc.count(t.dtype)) key_order.push_back(t.dtype);
    auto& a = acc[t.dtype];
    a.bucket.dtype = t.dtype;
    a.bucket.params.push_back(t.index);
    a.bucket.bytes += t.bytes;
    const uint64_t limit = limits.empty() ? UINT64_MAX : limits[a.limit_index];
    a.bucket.size_limit = limit;
    if (a.bucket.bytes >= limit) {
      result.push_back(std::move(a.bucket));
      a.bucket = Bucket{};
      if (a.limit_index + 1 < limits.size()) ++a.limit_index;
    }
  }
  for (const auto& k : key_order) {
    auto& a = acc[k];
    if (!a.bucket.params.empty()) result.push_back(std::move(a.bucket));
  }
  return result;
}

uint64_t cap_bytes(double mb) { return static_cast<uint64_t>(mb * 1024.0 * 1024.0); }

std::vector<uint64_t> rebuild_limits(const CapSpec& cap, double first_bucket_mb) {
  const uint64_t c = cap_bytes(cap.mb);
  uint64_t first = cap.is_default ? (1ULL << 20) : c;
  if (first_bucket_mb > 0) first = cap_bytes(first_bucket_mb);
  return {first, c};
}

std::vector<Bucket> rebuilt_plan(const Model& m, const CapSpec& cap, double first_bucket_mb) {
  std::vector<BucketTensor> tensors;
  for (int idx : m.grad_ready_order) {
    const auto& p = m.params[static_cast<size_t>(idx)];
    if (!p.requires_grad) continue;
    tensors.push_back({idx, p.bytes(), p.dtype});
  }
  return assign_by_size(tensors, rebuild_limits(cap, first_bucket_mb));
}

}  // namespace ddpbench
