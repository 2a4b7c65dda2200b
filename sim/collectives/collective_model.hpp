#pragma once
// A collective's time alone, split into phases: what a network backend then realises (as a sleep,
// or as flows that share links). The model is a setting: NCCL's (algorithm, protocol, channels)
// model, or the plain ring on the catalog's per-hop figures.
#include "collectives/nccl_model.hpp"
#include "collectives/ring.hpp"
#include "config/specs.hpp"

namespace ddpsim::collectives {

class CollectiveModel {
 public:
  CollectiveModel(const config::ClusterSpec& cluster, const config::CollectiveSettings& settings);
  AllReduceTiming allreduce(double bytes) const;
  // A ring broadcast of `bytes`: one pass around the ring, pipelined (one phase).
  AllReduceTiming broadcast(double bytes) const;
  const RingPlan& ring() const { return ring_; }

 private:
  RingPlan ring_;
  bool nccl_;
  double base_latency_;
  NcclTopology topo_;
  NcclSettings settings_;
};

}  // namespace ddpsim::collectives
