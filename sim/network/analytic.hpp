#pragma once
// The analytic backend: collective durations in closed form, no flows. Fast, and exact when
// nothing else shares the links. The collective model is a setting: NCCL's (algorithm, protocol,
// channels) model, or the plain ring on the catalog's per-hop figures.
#include "collectives/nccl_model.hpp"
#include "collectives/ring.hpp"
#include "config/specs.hpp"

namespace ddpsim::network {

class AnalyticNetwork {
 public:
  AnalyticNetwork(const config::ClusterSpec& cluster, const config::CollectiveSettings& settings);
  collectives::AllReduceTiming allreduce(double bytes) const;
  const collectives::RingPlan& ring() const { return ring_; }

 private:
  collectives::RingPlan ring_;
  bool nccl_;
  double base_latency_;
  collectives::NcclTopology topo_;
  collectives::NcclSettings settings_;
};

}  // namespace ddpsim::network
