#pragma once
// A step plan: what the streams of a data-parallel job do in the simulated steps, decided before
// any clock runs (SimGrid-free, plain data). A plan names its process groups and streams and
// lists tasks -- compute kernels, host work, collectives with their sizes, waits and marks -- in
// the order each stream runs them, with the dependencies between streams. A builder per wrapper
// (plan/ddp_builder.hpp for DDP, with or without ZeroRedundancyOptimizer; plan/dp_builder.hpp
// for torch.nn.DataParallel) writes one; an executor gives it a clock.
//
// Ranks: a plan describes one rank's program. The simulated ranks (one representative rank, or
// every rank with stragglers) all run it, each with its own compute-time factor; a task may be
// limited to some ranks (Ranks) or carry one kernel per rank (ZeRO's shards). Collective streams
// are shared by the ranks of their process group: a job on one starts once every simulated rank
// has reached it and the stream is free (rank rendezvous).
#include <string>
#include <vector>

#include "gpu/compute_model.hpp"

namespace ddpsim::plan {

// The ranks a collective stream's jobs run over (all of them for DDP's default group).
struct ProcessGroup {
  std::string name;
  int size = 1;
  // How its ranks lie on the cluster: `nodes` nodes with `per_node` of the group's GPUs each
  // (0: the whole cluster). FSDP's HYBRID_SHARD shard group is one node's GPUs (1 x G), its
  // replica group one GPU per node (N x 1): with as many nodes as GPUs per node the two have the
  // same size, so the layout cannot be told from it.
  int nodes = 0, per_node = 0;
};

enum class StreamKind {
  COMPUTE,     // a GPU's compute stream: kernels, waits for collectives, host gaps
  COLLECTIVE,  // an NCCL stream: jobs in FIFO order once every participant has reached them
  HOST,        // a host thread of the process (DataParallel's Python threads): host work only
};

// A track of the trace (Chrome trace pid/tid and the names it shows).
struct Track {
  int pid = 0, tid = 0;
  std::string process, thread;
};

struct Stream {
  StreamKind kind = StreamKind::COMPUTE;
  std::string name;
  int group = -1;  // COLLECTIVE: index into Plan::groups
  int gpu = 0;     // COMPUTE: which GPU of the process (DataParallel drives several)
  int track = -1;  // index into Plan::tracks; -1: the simulated rank's own tracks (pid = rank)
  // COLLECTIVE: jobs in flight at once, started in the stream's order by whichever worker is free
  // (streams.comm_workers; 1: one after the other, as a CUDA stream).
  int workers = 1;
};

// One operation of a collective job, run in order on the job's stream.
enum class OpKind {
  ALLREDUCE,       // bytes reduced per rank
  ALLGATHER,       // bytes each rank contributes (output: group size x bytes)
  REDUCE_SCATTER,  // bytes each rank puts in (output: bytes / group size)
  BROADCAST,       // bytes broadcast from the root
  REDUCE,          // bytes reduced to the root (one pass, as a broadcast)
  PEER_COPY,       // bytes from GPU src to GPU dst of one process
  KERNEL,          // a comm hook's callback kernel on the NCCL stream (not contended)
};

struct CommOp {
  OpKind kind = OpKind::ALLREDUCE;
  std::string name;
  double bytes = 0;
  gpu::Kernel kernel;      // KERNEL: its time alone
  int src = -1, dst = -1;  // PEER_COPY
  // A collective over another process group than its stream's (index into Plan::groups; -1: the
  // stream's): FSDP2's backward all-gather over the post-forward group, on the all-gather stream.
  int group = -1;
  bool operator==(const CommOp& o) const {
    return kind == o.kind && name == o.name && bytes == o.bytes && kernel.seconds == o.kernel.seconds && src == o.src &&
           dst == o.dst && group == o.group;
  }
};

enum class TaskKind {
  KERNEL,      // GPU work on a COMPUTE stream (time alone; times the rank's factor when `scaled`)
  HOST,        // host time: the stream issues nothing meanwhile
  COLLECTIVE,  // a job enqueued on `stream` (a COLLECTIVE stream), or run on GPU streams (`joined`)
  WAIT,        // the stream waits for `after` to be done (or started: `until_started`)
  MARK,        // a point in time the report needs (Mark)
};

// Where a task's time goes in the rank's record of the micro-step (report/timeline.hpp).
// PARAM_SYNC_WAIT: waiting for parameter broadcasts after an optimizer step (ZeroRedundancyOptimizer).
// ALLGATHER_WAIT: waiting for an FSDP unit's all-gather (`bucket`: the unit).
// REDUCE_WAIT: FSDP2's wait in the backward for the previous unit's reduce-scatter (`bucket`: that unit).
// DDP_FORWARD / DDP_HOOK / DDP_BUCKET: the GPU's wait for DDP's own host work (ddp/host_costs.hpp).
// HOOK_KERNEL: a comm hook's own kernels on the compute stream (allreduce_hook's div_, compression).
enum class Slot {
  NONE,
  H2D,
  COPY,
  TRAVERSAL,
  BCAST_WAIT,
  FINALIZE_WAIT,
  STALL,
  PARAM_SYNC_WAIT,
  DDP_FORWARD,
  DDP_HOOK,
  DDP_BUCKET,
  HOOK_KERNEL,
  BUFFER_COPY,  // DDP's buffer sync kernels on a GPU (flatten, copy_ back)
  ALLGATHER_WAIT,
  REDUCE_WAIT
};

enum class Mark {
  NONE,
  STEP_BEGIN,
  FORWARD_BEGIN,
  FORWARD_END,
  BACKWARD_BEGIN,
  BACKWARD_END,
  OPTIMIZER_BEGIN,  // the optimizer's span, its waits (PARAM_SYNC_WAIT) excluded
  OPTIMIZER_END,
  BUCKET_READY,   // bucket `bucket`'s last gradient is in it
  BUCKET_LAUNCH,  // and its collective is handed to the NCCL stream
  STEP_END,
  SPAN_BEGIN,  // a span of the trace on this stream's track (`name`, `category`) opens
  SPAN_END,    // and closes (spans nest)
};

// The ranks that run a task: all (modulus 0), else those with rank % modulus == residue.
struct Ranks {
  int modulus = 0;
  int residue = 0;
  bool has(int rank) const { return modulus <= 0 || rank % modulus == residue; }
  bool operator==(const Ranks& o) const { return modulus == o.modulus && residue == o.residue; }
};

// With a representative rank standing for the others, a job may not start before what those
// ranks would have done: t = time of task `from`; then per term t = max(t, end of `after`, when
// >= 0) + seconds x the representative's factor. Ignored when every rank is simulated.
struct GateTerm {
  int after = -1;
  double seconds = 0;
  bool operator==(const GateTerm& o) const { return after == o.after && seconds == o.seconds; }
};
struct Gate {
  int from = -1;  // -1: no gate
  std::vector<GateTerm> terms;
  bool operator==(const Gate& o) const { return from == o.from && terms == o.terms; }
};

// What a collective job is, for the report's records of a micro-step.
// PARAM_SYNC: parameters broadcast after a sharded optimizer step (ZeroRedundancyOptimizer).
// UNIT_ALLGATHER / UNIT_REDUCE / UNIT_REPLICA_ALLREDUCE: an FSDP unit's (`bucket`) all-gather,
// gradient reduction (reduce-scatter, NO_SHARD's all-reduce) and HYBRID_SHARD's all-reduce.
enum class JobRole {
  NONE,
  BUFFER_BROADCAST,
  BUCKET,
  USED_MAP,
  PARAM_SYNC,
  UNIT_ALLGATHER,
  UNIT_REDUCE,
  UNIT_REPLICA_ALLREDUCE
};

struct Task {
  TaskKind kind = TaskKind::KERNEL;
  int stream = 0;
  int micro_step = 0;
  std::string name;      // the trace's event name
  std::string category;  // the trace's category ("forward", "backward", "ddp", "optimizer", ...)
  Ranks ranks;
  // KERNEL: its time alone; with `per_rank`, rank r runs per_rank[r] (none past its end).
  gpu::Kernel kernel;
  std::vector<gpu::Kernel> per_rank;
  bool scaled = true;  // multiplied by the rank's compute factor (stragglers, jitter)
  // HOST: seconds, of which the share `locked` holds the process lock (Python's GIL).
  double seconds = 0;
  double locked = 0;
  // COLLECTIVE: its operations in order; further streams that must reach it (a peer copy's
  // destination, the other GPUs of an NCCL call inside one process); the record it fills.
  std::vector<CommOp> chain;
  std::vector<int> joined;
  int issuer = -1;  // a job on a COLLECTIVE stream: the stream whose program hands it over
  JobRole role = JobRole::NONE;
  int record = -1;  // index into the micro-step's collective records
  Gate gate;
  // WAIT: tasks (COLLECTIVE, or any on another stream) to be done; any task may list tasks it
  // must follow beside its stream's order (a job on a collective stream: jobs of other streams
  // that must be done before it starts).
  std::vector<int> after;
  bool until_started = false;
  Slot slot = Slot::NONE;
  Mark mark = Mark::NONE;
  int bucket = -1;  // BUCKET_READY / BUCKET_LAUNCH marks, bucket jobs
  int phase = -1;   // index into Plan::phases (DataParallel's step phases), -1: none
};

// A forward/backward pass of the simulated steps.
struct MicroStep {
  int iteration = 1;  // the training iteration it belongs to
  int report = 0;     // index of the optimizer step (report) it belongs to
  bool sync = true;   // gradients are reduced in it
  bool last = true;   // the optimizer runs after it
  std::vector<double> bucket_bytes;
  std::vector<int> bucket_tensors;
  int records = 0;  // collective records (JobRole jobs) of this micro-step
};

// A kernel `s` times as long, each part of its shape too (a shard of the work, a rank's factor).
inline gpu::Kernel scaled_by(gpu::Kernel k, double s) {
  k.seconds *= s;
  k.shape.compute_s *= s;
  k.shape.memory_s *= s;
  k.shape.overhead_s *= s;
  return k;
}

struct Plan {
  std::vector<ProcessGroup> groups;
  std::vector<Stream> streams;
  std::vector<Task> tasks;  // in each stream's order; `after` points backwards
  std::vector<MicroStep> steps;
  std::vector<int> report_iteration;        // training iteration per optimizer step
  int first_steady_report = 1;              // reports before it are warm-up (link statistics)
  std::vector<std::vector<double>> factor;  // [report][rank]: compute time factor
  std::vector<std::string> phases;          // names of the `phase` indices
  int world_size = 1;
  int ranks = 1;  // ranks simulated explicitly
  // A process driving several GPUs (HOST streams; DataParallel): its GPUs, the bandwidth of a
  // peer copy between two of them (the network backend gives each GPU a port of it), the trace's
  // tracks in the order they are listed (empty: one process per simulated rank) and the track of
  // the step's phases (-1: none).
  int process_gpus = 0;
  double peer_bandwidth = 0;
  std::vector<Track> tracks;
  int phase_track = -1;

  int add(Task t) {
    tasks.push_back(std::move(t));
    return static_cast<int>(tasks.size()) - 1;
  }
  // The tasks one stream runs, joins or issues, in order (its program).
  std::vector<int> stream_tasks(int stream) const;
};

}  // namespace ddpsim::plan
