#include "collectives/collective_model.hpp"

#include "collectives/topology.hpp"

namespace ddpsim::collectives {

CollectiveModel::CollectiveModel(const config::ClusterSpec& cluster, const config::CollectiveSettings& settings)
    : ring_(build_ring(cluster)),
      nccl_(settings.model == config::CollectiveModelKind::NCCL),
      base_latency_(settings.base_latency),
      topo_(nccl_topology(cluster)),
      settings_(nccl_settings(settings)),
      measured_(settings.measured_allreduce) {
  if (settings.nccl_version != 0) topo_.nccl_version = settings.nccl_version;
}

AllReduceTiming CollectiveModel::ring_time(double bytes) const {
  return measured_.empty() ? ring_allreduce_time(ring_, bytes, base_latency_)
                           : ring_allreduce_time_measured(ring_, bytes, base_latency_, measured_);
}

AllReduceTiming CollectiveModel::allreduce(double bytes) const {
  if (!nccl_) return ring_time(bytes);
  AllReduceTiming t;
  if (ring_.nranks <= 1 || bytes <= 0) return t;
  const auto e = predict_allreduce(topo_, bytes, settings_);
  t.algorithm = to_string(e.algo);
  t.protocol = to_string(e.proto);
  t.channels = e.nchannels;
  t.nccl = e;
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

namespace {
// A one-phase function's NCCL estimate as a timing: latency and transfer in reduce_scatter.
AllReduceTiming one_phase(const AllReduceEstimate& e) {
  AllReduceTiming t;
  t.algorithm = to_string(e.algo);
  t.protocol = to_string(e.proto);
  t.channels = e.nchannels;
  t.nccl = e;
  t.reduce_scatter.latency = e.latency;
  t.reduce_scatter.transfer = e.time - e.latency;
  return t;
}
}  // namespace

// One half of an all-reduce of `bytes` as its own collective: NCCL's pick and time for `func`,
// or the ring's matching phase.
AllReduceTiming CollectiveModel::half(Func func, double bytes) const {
  AllReduceTiming t;
  if (ring_.nranks <= 1 || bytes <= 0) return t;
  if (nccl_) return one_phase(predict_collective(func, topo_, bytes, settings_));
  const AllReduceTiming full = ring_time(bytes);
  t.base_latency = full.base_latency;
  t.reduce_scatter = func == Func::ALL_GATHER ? full.all_gather : full.reduce_scatter;
  return t;
}

AllReduceTiming CollectiveModel::allgather(double bytes) const { return half(Func::ALL_GATHER, bytes); }

AllReduceTiming CollectiveModel::reduce_scatter(double bytes) const { return half(Func::REDUCE_SCATTER, bytes); }

AllReduceTiming CollectiveModel::broadcast(double bytes) const {
  // NCCL's broadcast (ring only; its protocol and channels, the chunk's nRanks-1 hops).
  if (nccl_ && ring_.nranks > 1 && bytes > 0)
    return one_phase(predict_collective(Func::BROADCAST, topo_, bytes, settings_));
  AllReduceTiming t;
  t.algorithm = "Ring";
  if (!measured_.empty() && !nccl_) {
    // One pass around the ring: the measured all-reduce's time at these bytes has two (its
    // reduce-scatter and all-gather), so half of it.
    const AllReduceTiming full = ring_time(bytes);
    t.reduce_scatter.latency = (full.base_latency + full.reduce_scatter.latency + full.all_gather.latency) / 2;
    t.reduce_scatter.transfer = (full.reduce_scatter.transfer + full.all_gather.transfer) / 2;
    return t;
  }
  t.reduce_scatter.latency = ring_.phase_latency;
  t.reduce_scatter.transfer = bytes / ring_.bottleneck_bw;
  return t;
}

}  // namespace ddpsim::collectives
