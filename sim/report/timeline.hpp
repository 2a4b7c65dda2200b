#pragma once
// What the engine records while it simulates (SimGrid-free plain data): per simulated rank and
// micro-step the times of its compute stream, per micro-step each collective job on the NCCL
// streams, and the trace events. report/metrics turns it into the report, once.
#include <optional>
#include <string>
#include <vector>

#include "report/report.hpp"

namespace ddpsim::report {

// One rank's compute stream in one micro-step (absolute simulated seconds; durations in seconds).
struct RankStepRecord {
  double start = 0, end = 0;
  double fwd = 0, bwd = 0, opt = 0;                     // phase durations on the compute stream
  double finalize_wait = 0, bcast_wait = 0, stall = 0;  // waits for communication
  double copy = 0;                                      // DDP's copy kernels, as they took
  double hook_kernel = 0;                               // the comm hook's kernels, as they took
  double buffer_copy = 0;                               // DDP's buffer sync kernels, as they took
  double compute_only = 0;                              // every kernel at its contention-free time
  double contention = 0;                                // time lost to NCCL kernels beside compute
  double traversal = 0, h2d = 0;
  double ddp_forward = 0, ddp_hook = 0, ddp_bucket = 0;  // waits for DDP's host work (forward, hooks, buckets)
  double param_sync_wait = 0;                            // waiting for parameter broadcasts (ZeroRedundancyOptimizer)
  double allgather_wait = 0;                             // waiting for FSDP units' all-gathers
  std::vector<double> unit_allgather_wait{};             // per FSDP unit
  double reduce_wait = 0;                                // FSDP2: waiting in the backward for a reduce-scatter
  std::vector<double> unit_reduce_wait{};                // per FSDP unit (the reduction waited for)
  double backward_done = 0;                              // absolute time the backward pass ended
  std::vector<double> ready, launch;                     // per bucket, absolute
};

// One collective job (bucket chain, buffer broadcast or used-map all-reduce) in one micro-step.
struct CollectiveRecord {
  bool present = false;  // launched in this micro-step
  int bucket = -1;       // -1: buffer broadcast or used map
  double start = 0, rs_end = 0, end = 0;
  double alone = 0;  // its durations with nothing else running, summed over its chain
  std::string algorithm, protocol;
  int channels = 0;
  double nccl_estimate = 0;  // NCCL's own estimate of the first collective, and why its time differs
  std::string vs_nccl{};
  bool param_sync = false;  // parameter broadcasts after a sharded optimizer step (ZeroRedundancyOptimizer)
  int param_sync_ops = 0;
  double param_sync_bytes = 0;
  int unit = -1;  // FSDP: the unit whose collective this is
  std::string
      fsdp_op{};     // FSDP: "all-gather", "reduce" (reduce-scatter or NO_SHARD's all-reduce), "replica all-reduce"
  double bytes = 0;  // FSDP: the collective's bytes (per rank in)
  CommByFunction by_function{};  // its collectives' durations alone by NCCL function and size (not its kernels)
};

struct MicroStepInfo {
  int report = 0;  // the optimizer step it belongs to
  bool sync = true;
  std::vector<double> bucket_bytes;
  std::vector<int> bucket_tensors;
};

// A GPU's stream in a process that drives several (a plan with HOST streams: DataParallel).
struct GpuStreamRecord {
  double kernel_s = 0;                // its kernels, as they took
  double transfer_s = 0;              // inside peer copies and collectives it took part in
  double tx_bytes = 0, rx_bytes = 0;  // over its port: peer copies, ring broadcast / reduce hops
};

// Such a process's step (absolute simulated seconds, sums in the order things happened).
struct ProcessRecord {
  std::vector<double> phase_end;      // per plan phase: when its last task ended
  std::vector<GpuStreamRecord> gpus;  // per GPU
  std::vector<double> locked_s;       // per stream: host time spent holding the process lock (GIL)
  double lock_wait_s = 0;             // host threads waiting for the lock, summed
  double comm_alone_s = 0;            // peer copies and collectives, each with nothing else running
  CommByFunction by_function{};       // its NCCL broadcasts and reduces (as broadcasts) alone, by size
  double comm_busy_s = 0;             // and as they took
  double end = 0;                     // the last GPU stream's end
};

// What the network backend reports after the run (network/backend.hpp).
struct NetworkStats {
  std::string backend;
  unsigned long long flows = 0, flows_reused = 0;
  std::vector<LinkClassTotals> link_classes;
  std::string links_note;
  std::vector<LinkCounterTrack> link_counters;
};

struct Timeline {
  int world_size = 1;
  int batch_size = 0;
  std::vector<MicroStepInfo> steps;
  std::vector<int> report_iteration;  // DDP iteration number per optimizer step
  int steady_steps = 1;
  bool has_iteration1 = true;
  std::vector<std::vector<RankStepRecord>> ranks;  // [rank][micro-step]; rank 0 is reported
  std::vector<std::vector<CollectiveRecord>>
      jobs;  // [micro-step][job]: 0 broadcast, 1+b bucket b, then used map, then parameter syncs
  std::vector<TraceEvent> trace;
  double loader_samples_per_s = 0;  // 0: the data loader is never the bottleneck
  bool rebuilt = false;             // DDP rebuilt its buckets after iteration 1
  bool contention = false;          // the executor shared GPUs between compute and NCCL kernels
  std::vector<TracedRank> traced_ranks;
  // A rank's trace tracks (tid): 0 its compute stream, then collective stream s's worker w at
  // 1 + s + w * comm_streams (streams.comm_workers).
  int comm_streams = 1, comm_workers = 1;
  std::vector<TraceTrack> tracks;  // the plan's trace tracks (empty: one process per rank)
  int phase_track = -1;            // index into tracks: the step's phases
  std::vector<std::string> phases;
  // A process driving several GPUs (DataParallel): its record, and the report's facts the run
  // does not decide (plan builder); metrics adds the run's figures.
  ProcessRecord process;
  std::optional<DataParallelReport> data_parallel;
  // training.wrapper "fsdp" (plan builder): its settings in words and its units' names.
  std::string fsdp{};
  std::vector<std::string> fsdp_units{};
  std::optional<FsdpOffloadReport> fsdp_offload;
};

}  // namespace ddpsim::report
