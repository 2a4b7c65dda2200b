#include "collectives/ring.hpp"

#include <algorithm>
#include <limits>

namespace ddpsim::collectives {

RingPlan build_ring(const config::ClusterSpec& c) {
  RingPlan r;
  r.nranks = c.world_size();
  if (r.nranks <= 1) return r;
  r.hops.reserve(static_cast<size_t>(r.nranks));
  r.bottleneck_bw = std::numeric_limits<double>::infinity();
  for (int i = 0; i < r.nranks; ++i) {
    Hop h;
    h.src = i;
    h.dst = (i + 1) % r.nranks;
    h.inter_node = (h.src / c.gpus_per_node) != (h.dst / c.gpus_per_node);
    if (h.inter_node) {
      h.bandwidth = c.inter_bandwidth();
      h.latency = c.inter_link ? c.inter_link->latency : 0.0;
    } else {
      h.bandwidth = c.intra_bandwidth();
      h.latency = c.intra_link.latency;
    }
    r.bottleneck_bw = std::min(r.bottleneck_bw, h.bandwidth);
    r.hops.push_back(h);
  }
  // One phase: N-1 hops of which nodes-1 cross the network.
  const double intra_lat = c.intra_link.latency;
  const double inter_lat = c.inter_link ? c.inter_link->latency : 0.0;
  r.phase_latency = (r.nranks - c.nodes) * intra_lat + (c.nodes - 1) * inter_lat;
  return r;
}

AllReduceTiming ring_allreduce_time(const RingPlan& ring, double bytes, double base_latency) {
  AllReduceTiming t;
  const int n = ring.nranks;
  if (n <= 1 || bytes <= 0) return t;
  t.base_latency = base_latency;
  const double steps = n - 1;
  PhaseTiming phase;
  phase.latency = ring.phase_latency;
  phase.transfer = steps * (bytes / n) / ring.bottleneck_bw;
  t.reduce_scatter = phase;
  t.all_gather = phase;
  return t;
}

}  // namespace ddpsim::collectives
