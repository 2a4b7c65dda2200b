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
  // A ring all-gather whose output is `bytes` (every rank's bytes / N): one phase, in
  // reduce_scatter. NCCL's ring all-gather is the all-gather half of its ring all-reduce of the
  // output size (N-1 steps of bytes / N; src/device/all_gather.h runRing): NCCL's Ring pick for
  // that size, half its time. The ring model: phase latency + (N-1)/N x bytes / B.
  AllReduceTiming allgather(double bytes) const;
  // A reduce-scatter whose input is `bytes` per rank: one phase, in reduce_scatter. Placeholder:
  // the ring's all-gather phase of the same size.
  AllReduceTiming reduce_scatter(double bytes) const;
  const RingPlan& ring() const { return ring_; }

 private:
  RingPlan ring_;
  bool nccl_;
  double base_latency_;
  NcclTopology topo_;
  NcclSettings settings_;
};

}  // namespace ddpsim::collectives
