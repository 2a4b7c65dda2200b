#include "ddp/reducer.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace ddpsim::ddp {

Reducer::Reducer(const std::vector<Bucket>& buckets, size_t num_params, const Options& options)
    : buckets_(buckets), options_(options), pending_(buckets.size()), locator_(num_params, -1) {
  for (size_t b = 0; b < buckets.size(); ++b) {
    pending_[b] = static_cast<int>(buckets[b].param_indices.size());
    for (int p : buckets[b].param_indices) locator_.at(static_cast<size_t>(p)) = static_cast<int>(b);
  }
}

int Reducer::bucket_of(int param) const { return locator_.at(static_cast<size_t>(param)); }

Reducer::Readiness Reducer::mark_ready(int param) {
  Readiness r;
  if (!options_.sync) return r;
  const int b = bucket_of(param);
  if (b < 0) return r;
  if (pending_[static_cast<size_t>(b)] <= 0)
    throw core::SimulationError("Reducer: gradient of parameter " + std::to_string(param) +
                                " marked ready twice in one backward pass");
  if (--pending_[static_cast<size_t>(b)] > 0) return r;
  r.ready_bucket = b;
  // Reducer::mark_bucket_ready: launch every consecutive ready bucket from the next one on.
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0)
    r.launched.push_back(static_cast<int>(next_launch_++));
  r.launch_used_map = options_.used_map_allreduce && !r.launched.empty() && all_launched();
  return r;
}

size_t Reducer::forward_broadcast_buffers(const config::ModelSpec& model, const config::DdpSettings& ddp) {
  return ddp.broadcast_buffers ? model.buffers.size() : 0;
}

std::vector<double> Reducer::forward_broadcasts(const config::ModelSpec& model, const config::DdpSettings& ddp) {
  std::vector<double> out;
  if (!ddp.broadcast_buffers) return out;
  // compute_bucket_assignment_by_size: an open bucket per dtype; a bucket is closed (and a new one
  // opened) once its size reaches the limit; the open buckets are emitted at the end, and the
  // result is sorted by each bucket's first tensor (the order of first use here).
  std::vector<std::pair<config::DType, std::pair<size_t, double>>> open;  // dtype -> (first index, bytes)
  std::vector<std::pair<size_t, double>> done;
  for (size_t i = 0; i < model.buffers.size(); ++i) {
    const auto& b = model.buffers[i];
    const double bytes = static_cast<double>(b.numel) * config::dtype_size(b.dtype);
    auto it = std::find_if(open.begin(), open.end(), [&](const auto& o) { return o.first == b.dtype; });
    if (it == open.end()) {
      open.push_back({b.dtype, {i, 0.0}});
      it = open.end() - 1;
    }
    it->second.second += bytes;
    if (it->second.second >= kBroadcastBucketBytes) {
      done.push_back(it->second);
      open.erase(it);
    }
  }
  for (const auto& o : open) done.push_back(o.second);
  std::stable_sort(done.begin(), done.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& d : done)
    if (d.second > 0) out.push_back(d.second);
  return out;
}

double Reducer::forward_broadcast_bytes(const config::ModelSpec& model, const config::DdpSettings& ddp) {
  if (!ddp.broadcast_buffers) return 0;
  double bytes = 0;
  for (const auto& b : model.buffers) bytes += static_cast<double>(b.numel) * config::dtype_size(b.dtype);
  return bytes;
}

}  // namespace ddpsim::ddp
