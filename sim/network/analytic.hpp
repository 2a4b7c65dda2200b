#pragma once
// The analytic backend: collective durations in closed form, no flows. Fast, and exact when
// nothing else shares the links.
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
  double base_latency_;
};

}  // namespace ddpsim::network
