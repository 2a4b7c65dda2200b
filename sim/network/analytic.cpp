#include "network/analytic.hpp"

namespace ddpsim::network {

AnalyticNetwork::AnalyticNetwork(const config::ClusterSpec& cluster, const config::CollectiveSettings& settings)
    : ring_(collectives::build_ring(cluster)), base_latency_(settings.base_latency) {}

collectives::AllReduceTiming AnalyticNetwork::allreduce(double bytes) const {
  return collectives::ring_allreduce_time(ring_, bytes, base_latency_);
}

}  // namespace ddpsim::network
