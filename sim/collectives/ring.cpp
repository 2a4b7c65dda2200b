#include "collectives/ring.hpp"

#include <algorithm>
#include <cmath>
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

double measured_allreduce_seconds(const std::vector<std::pair<double, double>>& table, double bytes) {
  if (table.empty() || !(bytes > 0)) return 0.0;
  if (table.size() == 1 || bytes <= table.front().first) return table.front().second;
  const auto& last = table.back();
  if (bytes >= last.first) {
    const auto& prev = table[table.size() - 2];
    const double slope = (last.second - prev.second) / (last.first - prev.first);
    return slope > 0 ? last.second + (bytes - last.first) * slope : last.second * bytes / last.first;
  }
  const auto hi = std::upper_bound(table.begin(), table.end(), bytes,
                                   [](double b, const std::pair<double, double>& r) { return b < r.first; });
  const auto lo = hi - 1;
  const double f = std::log(bytes / lo->first) / std::log(hi->first / lo->first);
  return std::exp(std::log(lo->second) + f * (std::log(hi->second) - std::log(lo->second)));
}

AllReduceTiming ring_allreduce_time_measured(const RingPlan& ring, double bytes, double base_latency,
                                             const std::vector<std::pair<double, double>>& table) {
  AllReduceTiming t = ring_allreduce_time(ring, bytes, base_latency);
  if (ring.nranks <= 1 || bytes <= 0 || table.empty()) return t;
  const double total = measured_allreduce_seconds(table, bytes);
  const double latency = base_latency + 2 * ring.phase_latency;
  const double scale = latency > total && latency > 0 ? total / latency : 1.0;
  t.base_latency = base_latency * scale;
  t.reduce_scatter.latency = t.all_gather.latency = ring.phase_latency * scale;
  const double transfer = std::max(0.0, total - latency * scale);
  t.reduce_scatter.transfer = t.all_gather.transfer = transfer / 2;
  return t;
}

}  // namespace ddpsim::collectives
