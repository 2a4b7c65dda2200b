#include "ddp/reducer.hpp"

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

std::vector<Bucket> Reducer::forward_broadcast_buckets(const config::ModelSpec& model, const config::DdpSettings& ddp) {
  std::vector<Bucket> out;
  if (!ddp.broadcast_buffers) return out;
  // broadcast_coalesced buckets the buffers as the Reducer buckets gradients
  // (compute_bucket_assignment_by_size, first-assignment order), with one limit.
  std::vector<config::ParamSpec> tensors(model.buffers.size());
  std::vector<int> order(model.buffers.size());
  for (size_t i = 0; i < model.buffers.size(); ++i) {
    tensors[i].dtype = model.buffers[i].dtype;
    tensors[i].numel = model.buffers[i].numel;
    order[i] = static_cast<int>(i);
  }
  for (auto& b : assign_by_size(tensors, order, {kBroadcastBucketBytes}, true))
    if (b.bytes > 0) out.push_back(std::move(b));
  return out;
}

std::vector<double> Reducer::forward_broadcasts(const config::ModelSpec& model, const config::DdpSettings& ddp) {
  std::vector<double> out;
  for (const auto& b : forward_broadcast_buckets(model, ddp)) out.push_back(b.bytes);
  return out;
}

}  // namespace ddpsim::ddp
