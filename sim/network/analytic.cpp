#include "network/analytic.hpp"

#include "collectives/topology.hpp"

namespace ddpsim::network {

AnalyticNetwork::AnalyticNetwork(const config::ClusterSpec& cluster, const config::CollectiveSettings& settings)
    : ring_(collectives::build_ring(cluster)),
      nccl_(settings.model == "nccl"),
      base_latency_(settings.base_latency),
      topo_(collectives::nccl_topology(cluster)),
      settings_(collectives::nccl_settings(settings)) {
  if (settings.nccl_version != 0) topo_.nccl_version = settings.nccl_version;
}

collectives::AllReduceTiming AnalyticNetwork::allreduce(double bytes) const {
  if (!nccl_) return collectives::ring_allreduce_time(ring_, bytes, base_latency_);
  collectives::AllReduceTiming t;
  if (ring_.nranks <= 1 || bytes <= 0) return t;
  const auto e = collectives::predict_allreduce(topo_, bytes, settings_);
  t.algorithm = collectives::to_string(e.algo);
  t.protocol = collectives::to_string(e.proto);
  t.channels = e.nchannels;
  // Both phases move the same bytes over the same number of steps: split latency and transfer
  // in proportion to NCCL's phase split.
  const double rs_share = e.time > 0 ? e.reduce_scatter_time / e.time : 0.5;
  const double transfer = e.time - e.latency;
  t.reduce_scatter.latency = e.latency * rs_share;
  t.reduce_scatter.transfer = transfer * rs_share;
  t.all_gather.latency = e.latency - t.reduce_scatter.latency;
  t.all_gather.transfer = transfer - t.reduce_scatter.transfer;
  return t;
}

}  // namespace ddpsim::network
