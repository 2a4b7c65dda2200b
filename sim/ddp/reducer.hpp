#pragma once
// DDP's Reducer for one backward pass, as a state machine with no clock (SimGrid-free): the
// engine tells it when each gradient has been copied into its bucket and launches what it says.
// Mirrors torch/csrc/distributed/c10d/reducer.cpp (docs/facts.md §1):
// - autograd_hook -> mark_variable_ready: the bucket's pending count drops by one per gradient;
// - buckets launch strictly in index order: a ready bucket waits for every lower index, then all
//   consecutive ready buckets launch together (Reducer::mark_bucket_ready);
// - with find_unused_parameters (not static_graph) the local-used map (int32 per parameter) is
//   all-reduced after the last bucket;
// - finalize_backward waits for every bucket (and the used map), then copies each gradient back
//   out of its bucket unless gradient_as_bucket_view;
// - under no_sync() the hooks do nothing: no copies, no launches;
// - the forward broadcasts the module's buffers from rank 0 when broadcast_buffers is set.
#include <cstddef>
#include <vector>

#include "config/specs.hpp"
#include "ddp/bucketizer.hpp"

namespace ddpsim::ddp {

class Reducer {
 public:
  struct Options {
    bool sync = true;                      // false: inside no_sync(), the hooks do nothing
    bool used_map_allreduce = false;       // find_unused_parameters without static_graph
    bool gradient_as_bucket_view = false;  // no copy back out of the buckets
  };

  // What mark_ready did: the bucket that became ready (-1: none) and the buckets launched now.
  struct Readiness {
    int ready_bucket = -1;
    std::vector<int> launched;
    bool launch_used_map = false;  // the used-map all-reduce is launched after the last bucket
  };

  Reducer(const std::vector<Bucket>& buckets, size_t num_params, const Options& options);

  // The hooks fire and copy gradients (false under no_sync()).
  bool hooks_active() const { return options_.sync; }
  // mark_variable_ready for parameter `param` (its gradient is now in its bucket).
  Readiness mark_ready(int param);
  int bucket_of(int param) const;
  size_t num_buckets() const { return buckets_.size(); }
  size_t next_to_launch() const { return next_launch_; }
  bool all_launched() const { return next_launch_ == buckets_.size(); }
  // Collectives finalize_backward waits for: the buckets, then the used map if there is one.
  size_t finalize_waits() const { return buckets_.size() + (options_.used_map_allreduce ? 1 : 0); }
  bool copies_out() const { return options_.sync && !options_.gradient_as_bucket_view; }

  // Bytes of the used-map all-reduce (one int32 per parameter).
  static double used_map_bytes(size_t num_params) { return 4.0 * static_cast<double>(num_params); }
  // The broadcasts DDP's forward sends from rank 0, in bytes (none: nothing to broadcast):
  // _sync_module_buffers -> dist._broadcast_coalesced
  // (torch/csrc/distributed/c10d/comm.cpp broadcast_coalesced) buckets the buffers with
  // compute_bucket_assignment_by_size, one bucket per dtype closed at broadcast_bucket_size
  // (distributed.py: 250 MiB), and broadcasts each bucket flattened. In dtype order of first use.
  static std::vector<double> forward_broadcasts(const config::ModelSpec& model, const config::DdpSettings& ddp);
  // The same buckets with their buffers (indices into ModelSpec::buffers; empty buckets left out).
  static std::vector<Bucket> forward_broadcast_buckets(const config::ModelSpec& model, const config::DdpSettings& ddp);
  static constexpr double kBroadcastBucketBytes = 250.0 * 1024 * 1024;
  // Module buffers DDP's forward syncs (_sync_buffers, at every world size; 0: none or switched off).
  static size_t forward_broadcast_buffers(const config::ModelSpec& model, const config::DdpSettings& ddp);

 private:
  const std::vector<Bucket>& buckets_;
  Options options_;
  std::vector<int> pending_;  // per bucket: gradients not yet ready
  std::vector<int> locator_;  // per parameter: its bucket (-1: in none)
  size_t next_launch_ = 0;
};

}  // namespace ddpsim::ddp
