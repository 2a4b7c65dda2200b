#pragma once
// Ring all-reduce as NCCL runs it: reduce-scatter (N-1 steps) then all-gather (N-1 steps); in
// each step every rank sends S/N bytes to its ring successor. Ranks are ordered node-major, so a
// ring on a multi-node cluster crosses NVLink/PCIe inside a node and the NICs between nodes.
#include <string>
#include <utility>
#include <vector>

#include "collectives/nccl_model.hpp"
#include "config/specs.hpp"

namespace ddpsim::collectives {

struct Hop {
  int src = 0, dst = 0;
  bool inter_node = false;
  double bandwidth = 0;  // bytes/s available to this hop (parallel links / NICs aggregated)
  double latency = 0;    // seconds per ring step on this hop
};

struct RingPlan {
  int nranks = 1;
  std::vector<Hop> hops;  // hop i goes from rank i to rank (i+1) % nranks
  // Latency of one phase (N-1 steps): a chunk crosses N-1 hops, of which nNodes-1 are
  // inter-node (NCCL tuning.cc: nsteps - nInterSteps intra latencies + nInterSteps inter ones).
  double phase_latency = 0;
  double bottleneck_bw = 0;  // min hop bandwidth
};

RingPlan build_ring(const config::ClusterSpec& cluster);

struct PhaseTiming {
  double latency = 0;   // RingPlan::phase_latency
  double transfer = 0;  // (N-1)/N * S / B
  double total() const { return latency + transfer; }
};

struct AllReduceTiming {
  std::string algorithm = "Ring", protocol = "Simple";  // what carried it (NCCL names)
  int channels = 0;                                     // NCCL channels (0: not modelled)
  // NCCL model only: the estimate it came from (nccl_model_time 0 otherwise), so a report can say
  // why its time differs from NCCL's own (explain_difference).
  AllReduceEstimate nccl{};
  double base_latency = 0;  // per collective launch
  PhaseTiming reduce_scatter, all_gather;
  double total() const { return base_latency + reduce_scatter.total() + all_gather.total(); }
};

// Closed form: base + 2 * phase_latency + 2(N-1)/N * S/B; with one latency alpha on every hop this
// is base + 2(N-1)*alpha + 2(N-1)/N * S/B (docs/facts.md §5). Split by phase.
AllReduceTiming ring_allreduce_time(const RingPlan& ring, double bytes, double base_latency);

// A measured all-reduce time at `bytes` from a table of (bytes, seconds) rows, ascending in bytes
// (at least two): log-log interpolation between the rows that bracket it; below the first row its
// time (the measured floor); above the last row its time plus the extra bytes at the rate of the
// last segment (the marginal cost per byte; proportional to the last row if that is not positive).
double measured_allreduce_seconds(const std::vector<std::pair<double, double>>& table, double bytes);

// The ring's all-reduce with its total taken from a measured table (measured_allreduce_seconds):
// the ring's latency terms (base + 2 x phase latency) stay its latency part, scaled down when the
// table's time is below them, and the rest is transfer, split evenly between the two phases.
AllReduceTiming ring_allreduce_time_measured(const RingPlan& ring, double bytes, double base_latency,
                                             const std::vector<std::pair<double, double>>& table);

}  // namespace ddpsim::collectives
