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
  // A broadcast of `bytes` (one phase): NCCL's model (ring, its protocol pick, the hops) under the
  // NCCL collective model, else one pass around the plain ring.
  AllReduceTiming broadcast(double bytes) const;
  // An all-gather whose output is `bytes` (every rank's bytes / N gathered on every rank): one
  // phase, in reduce_scatter. NCCL model: NCCL's own AllGather pick and time
  // (predict_collective(Func::ALL_GATHER), nBytes = the output, as nccl-tests' all_gather_perf
  // size column). The ring model: phase latency + (N-1)/N x bytes / B.
  AllReduceTiming allgather(double bytes) const;
  // A reduce-scatter whose INPUT per rank is `bytes` (each rank keeps the reduced bytes / N; the
  // output size of the matching all-gather): one phase, in reduce_scatter. NCCL model: NCCL's
  // ReduceScatter pick and time (nBytes = the input, as reduce_scatter_perf's size column). The
  // ring model: phase latency + (N-1)/N x bytes / B, the reduce-scatter half of its all-reduce.
  AllReduceTiming reduce_scatter(double bytes) const;
  const RingPlan& ring() const { return ring_; }

 private:
  AllReduceTiming half(Func func, double bytes) const;
  AllReduceTiming ring_time(double bytes) const;  // the ring, or the measured table when given
  RingPlan ring_;
  bool nccl_;
  double base_latency_;
  NcclTopology topo_;
  NcclSettings settings_;
  std::vector<std::pair<double, double>> measured_;  // collective.measured_allreduce (ring model)
};

}  // namespace ddpsim::collectives
