#pragma once
// What a simulation produced, and its serialisations: JSON report, summary table, CSV rows and a
// Chrome trace (Perfetto). Definitions follow docs/design.md ("Definitions the reports use").
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "memory/memory_model.hpp"
#include "network/link_stats.hpp"
#include "report/prediction.hpp"

namespace ddpsim::report {

struct BucketRow {
  int index = 0;
  double bytes = 0;
  int num_tensors = 0;
  double ready_s = 0;               // last gradient of the bucket copied in (relative to the iteration start)
  double launch_s = 0;              // handed to the NCCL stream (in-order launch: after all lower buckets)
  double start_s = 0;               // all-reduce started on the NCCL stream
  double rs_end_s = 0;              // reduce-scatter phase finished
  double end_s = 0;                 // all-reduce finished
  double alone_s = 0;               // its duration with nothing else running
  double exposed_s = 0;             // part of its communication the compute stream waited for
  std::string algorithm, protocol;  // NCCL's pick for its all-reduce (first one, with comm hooks)
  int channels = 0;
  // NCCL's own estimate of its all-reduce (its tuner time) and why the modelled time alone differs
  // from it ("": it does not); 0 and "" where a comm hook adds kernels or collectives to the job.
  double nccl_estimate_s = 0;
  std::string vs_nccl{};
};

// One FSDP unit's collectives in a synced micro-step (sums over its forward and backward
// all-gathers; its reduction: the reduce-scatter, or NO_SHARD's all-reduce, plus HYBRID_SHARD's
// all-reduce across replicas).
struct UnitRow {
  int index = 0;
  std::string name{};
  double allgather_bytes = 0;  // per rank in, all its all-gathers together
  int allgathers = 0;
  double allgather_alone_s = 0;
  double allgather_exposed_s = 0;  // the compute stream's wait for them
  double reduce_bytes = 0;         // per rank in
  double reduce_alone_s = 0;
  double reduce_exposed_s = 0;  // its reduction's part after the backward and the reductions before it
};

struct IterationReport {
  int iteration = 0;
  double start_s = 0;  // absolute simulated time the iteration began
  double step_time_s = 0;
  double forward_s = 0;
  double backward_compute_s = 0;  // layer backward kernels + DDP's gradient-to-bucket copies
  double ddp_copy_s = 0;          // the copy-in and copy-out kernels alone (part of compute_only)
  double ddp_hook_kernel_s = 0;   // the comm hook's kernels on the compute stream (part of compute_only)
  double ddp_buffer_copy_s = 0;   // _sync_buffers' kernels on a GPU: flatten, copy_ back (part of compute_only)
  double finalize_wait_s = 0;     // compute stream idle at finalize_backward
  double optimizer_s = 0;
  double compute_only_s = 0;
  double comm_alone_s = 0;
  CommByFunction comm_by_function{};  // comm_alone_s's collectives by NCCL function and size (not in the JSON)
  double comm_busy_s = 0;
  double exposed_comm_s = 0;
  std::optional<double> overlap_ratio;  // undefined without communication
  // Where step_time - compute_only goes:
  double contention_s = 0;      // compute kernels slowed by NCCL kernels running beside them
  double straggler_wait_s = 0;  // waiting for slower ranks to finish their backward
  double comm_exposed_s = 0;    // waiting for communication itself (finalize, buffer broadcast, launch-order stalls)
  double data_wait_s = 0;       // waiting for the data loader
  double comm_hidden_s = 0;     // communication that ran under compute: comm_busy - comm_exposed
  double h2d_s = 0;             // input copy (part of compute_only)
  double autograd_traversal_s = 0;  // find_unused_parameters' graph walk (part of compute_only)
  // What DDP itself costs the step (docs/commands.md, "ddp_overhead_s"): its copy kernels
  // (ddp_copy_s), the comm hook's kernels (ddp_hook_kernel_s), the buffer sync's kernels (ddp_buffer_copy_s) plus the
  // compute stream's waits for its host work: DDP.forward's own work, the autograd hooks (and finalize_backward's
  // launches), the Reducer's per-bucket work (with the one-rank call at world size 1). All part of compute_only.
  double ddp_overhead_s = 0;
  double ddp_forward_host_s = 0, ddp_hook_host_s = 0, ddp_bucket_host_s = 0;
  int micro_steps = 1;           // forward/backward passes per optimizer step (gradient accumulation)
  double micro_step_time_s = 0;  // mean per micro-step
  double comm_alone_per_sample_s = 0;
  int samples = 0;                                                          // samples per rank in this optimizer step
  std::optional<double> step_time_p50_s, step_time_p95_s, step_time_p99_s;  // explicit ranks: over the steps
  int steps_simulated = 1;
  // ZeroRedundancyOptimizer: its parameter broadcasts (durations alone, summed; part of
  // comm_alone_s), how many, their bytes, and the compute stream's wait for them (part of comm_exposed_s).
  double zero_broadcast_s = 0;
  int zero_broadcasts = 0;
  double zero_broadcast_bytes = 0;
  double zero_broadcast_wait_s = 0;
  std::vector<BucketRow> buckets;
  double allgather_wait_s = 0;  // FSDP: the compute stream's waits for all-gathers (part of comm_exposed_s)
  // FSDP2: the compute stream's waits in the backward for the previous unit's reduce-scatter
  // (post_backward's reduce_scatter_state; part of comm_exposed_s and of the units' reduce_exposed_s).
  double reduce_wait_s = 0;
  std::vector<UnitRow> units{};  // FSDP: per unit
};

struct TraceEvent {
  std::string name;
  std::string category;
  int track = 0;  // 0 compute stream, 1 + s NCCL stream s (rank 0 only: a collective is one job for all ranks)
  double start_s = 0, duration_s = 0;
  core::Json args;
  int rank = 0;          // the simulated rank whose track it is on (its own process in the trace)
  bool instant = false;  // an instant event ("ph": "i", global scope): iteration markers
};

// A named track of the trace (process `pid`, thread `tid`) for an engine whose tracks are not one
// process per rank (torch.nn.DataParallel: one per GPU and the Python process's threads).
struct TraceTrack {
  int pid = 0, tid = 0;
  std::string process, thread;
};

// A simulated rank with its own tracks in the trace, and why it was chosen ("" when every rank is
// traced; else "rank 0", "slowest", "median", or several joined by ", ").
struct TracedRank {
  int rank = 0;
  std::string role;
};

// Link statistics (LinkClassTotals, LinkCounterTrack) are what the network backends measure;
// their types live with them (network/link_stats.hpp), the report reads them.
using network::LinkClassTotals;
using network::LinkCounterTrack;

// torch.nn.DataParallel (training.wrapper "data_parallel", plan/dp_builder.hpp).
struct DataParallelGpu {
  int gpu = 0;
  double tx_bytes = 0, rx_bytes = 0;  // over the GPU's intra-node port (peer copies, NCCL broadcast / reduce)
  double host_link_bytes = 0;         // host-to-device input copy (GPU 0 only)
  double port_bandwidth = 0;          // bytes/s per direction (links_per_gpu x link bandwidth)
  double bandwidth_use = 0;           // (tx + rx) / (step time x 2 x port_bandwidth)
  double kernel_s = 0;                // its stream's kernels (compute, flatten/add copies)
  double transfer_s = 0;              // its stream inside peer copies and NCCL calls
  // max(tx, rx) / (transfer_s x port_bandwidth): the share of its port the transfers used while
  // they ran (0 without transfers)
  double transfer_bandwidth_share = 0;
};

struct DataParallelReport {
  // Phases as the step's time line splits into them: each ends when its last host work and its
  // last GPU work are done (later than the previous phase's end); they sum to the step time.
  double scatter_s = 0, replicate_s = 0, forward_s = 0, gather_s = 0, backward_s = 0, reduce_s = 0, optimizer_s = 0;
  double gil_wait_s = 0;     // parallel_apply's threads waiting for the GIL (summed over threads)
  double host_python_s = 0;  // DataParallel's own Python work (device check, replicate, threads, Functions)
  double param_bytes = 0, buffer_bytes = 0, grad_bytes = 0, input_bytes = 0, output_bytes = 0;
  int broadcast_calls = 0, reduce_calls = 0;  // coalesced chunks (10 MiB buffers)
  bool nccl = true;
  double gil_share = 1;
  std::vector<DataParallelGpu> gpus;
};

// training.fsdp.cpu_offload per optimizer step of one rank (plan::fsdp_offload): the copies'
// bytes and times alone (they run beside compute and collectives), the CPU's optimizer step (the
// GPU idles through it) and the host memory the rank pins and fills.
struct FsdpOffloadReport {
  double h2d_bytes = 0, h2d_s = 0;  // host-to-device copies of the shards (alone, summed)
  int h2d_copies = 0;
  double d2h_bytes = 0, d2h_s = 0;  // device-to-host copies of the sharded gradients
  double cpu_step_s = 0;            // unscale_, clip_grad_norm_, the optimizer and zero_grad on the CPU
  std::string cpu_step_what;        // the CPU step's parts, in words
  double host_bytes = 0;            // pinned shards and gradients plus the optimizer state, in host memory
  // The CPU step's range on another host: no page faults and a core gpu::kCpuCoreSpread faster, to
  // this project's VM's faults and a core kCpuCoreSpread slower (gpu/optimizer_model.hpp).
  double cpu_step_low_s = 0, cpu_step_high_s = 0;
};

struct StepReport {
  std::string scenario;
  std::string model;
  std::string cluster;
  std::string gpu;
  // How far the all-reduce model can be trusted here (collectives::trust_line; issue 24 item 4):
  // the closest validated all_reduce_perf table; empty at one GPU (no collective).
  std::string nccl_trust;
  // The same for the text report, a block per collective (`collective`: the nccl-tests binary, or
  // "" when all-reduces are the only collective named) of one clause a line
  // (collectives::trust_parts, then where the step's calls fall among the size classes).
  struct TrustBlock {
    std::string collective;
    std::vector<std::string> lines;
  };
  std::vector<TrustBlock> nccl_trust_blocks;
  // What the prediction band's collectives part rests on (report/prediction.hpp; its busy and
  // exposed times are the steady state's, set where the band is made).
  CommBasis comm_basis;
  // The placement the run assumed on a fabric (fabric::placement_line; issue 24 item 3): empty on
  // the single switch or at one node; `placement` is the fabric's, `placement_guaranteed` its flag.
  std::string placement_text;
  std::string placement;
  bool placement_guaranteed = true;
  int world_size = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  int batch_size = 0;
  std::string backend, fidelity;
  double bucket_cap_mb = 0;
  double first_bucket_cap_bytes = 0;  // DDP: the rebuilt first bucket's cap (text only; 0 otherwise)
  double grad_bytes = 0;
  int num_params = 0;
  bool rebuilt = false;
  int steady_iteration = 1;
  IterationReport iteration1;
  IterationReport steady;
  bool has_iteration1 = true;
  // Set only when iteration 1 is faster than the steady state: which named mechanism accounts for
  // the difference (explain_iteration1()). Empty otherwise, and empty when no named mechanism
  // accounts for it (the property test in tests/sim/Iteration1_test.cpp then fails).
  std::string iteration1_faster_because;
  std::string comm_hook;
  bool explicit_ranks = false;
  bool contention = false;
  double compute_scale = 1.0;  // compute scaled to a measured single-GPU step (1 = not calibrated)
  int measured_layers = 0;
  // The per-kernel model's eager host dispatch for one micro-step's forward and backward ops and
  // the GPU time spent waiting for it (gpu::ComputeProfile host_forward_s, host_backward_s,
  // gpu_idle_s): 0 when compute is measured or calibrated, or with CUDA graphs.
  double compute_host_forward_s = 0, compute_host_backward_s = 0, compute_host_wait_s = 0;
  double compute_host_no_kernel_s = 0;  // of the two above: views, view nodes, module calls
  int compute_host_kernels_forward = 0, compute_host_kernels_backward = 0;  // launches charged
  double conv_transposes_s = 0;  // per micro-step, per-kernel estimate only (0: none or not estimated)
  // PyTorch's non-vectorized element-wise kernels per micro-step and their time beyond streaming
  // their bytes (gpu::ComputeProfile::per_element; per-kernel estimate only).
  double per_element_s = 0, per_element_over_bytes_s = 0;
  // The training loss (training.loss) as the per-kernel model estimates it, forward + backward of
  // one micro-step, over [loss_rows, loss_classes] logits (0 rows: none modelled, or not estimated).
  std::string loss;  // training.loss as set ("auto", "cross_entropy", "none")
  double loss_s = 0, loss_rows = 0, loss_classes = 0;
  // The optimizer's host dispatch (unscale_, clip, step, zero_grad) and the GPU's wait for it
  // (gpu::ComputeProfile optimizer_host_s, optimizer_host_wait); `optimizer_host` false where it is
  // not modelled (CUDA graphs, FSDP, ZeRO).
  bool optimizer_host = false, optimizer_sync = false;
  double optimizer_host_s = 0, optimizer_host_wait_s = 0;
  std::string optimizer_impl;
  // [compute] filled by the app from gpu::ComputeProfile (the engine does not set them)
  std::string compute_provenance;  // measured / transferred / estimated
  std::string compute_scale_per = "micro-step";
  // A measured profile transferred from another GPU: per kernel class (compute-bound, memory-bound,
  // fixed) the measured seconds on `transfer_from` and the seconds on the cluster's GPU, one
  // micro-step (empty: no transfer; the report's `compute_transfer` key is written only then).
  struct TransferClass {
    std::string name;
    double measured_s = 0, transferred_s = 0, factor = 1;
  };
  std::string transfer_from, transfer_from_device, transfer_to;
  std::vector<TransferClass> transfer_classes;
  double model_flops_per_micro_step = 0;  // forward + backward
  double mfu_peak_flops = 0;
  std::string mfu_peak_dtype;
  int seq_len = 0, image_size = 0;  // sizes the model was evaluated at (0: n/a)
  std::string attention;
  std::string memory_format;  // training.memory_format
  double mfu() const;         // model FLOPs / (steady step time x peak)
  std::vector<TraceEvent> trace;
  // report::Timeline's comm_streams and comm_workers: the names of the trace's collective tracks.
  int trace_comm_streams = 1;
  int trace_comm_workers = 1;
  // What the collective tracks are called: "NCCL stream" under the NCCL model, "collective stream"
  // under the plain ring model (e.g. validate's gloo runs, whose workers are gloo's threads).
  std::string trace_comm_name = "NCCL stream";
  std::vector<TracedRank> traced_ranks;   // ranks with tracks in the trace (rank 0 at least)
  std::vector<TraceTrack> trace_tracks;   // when set, the trace's tracks instead of one process per rank
  std::string ranks;                      // how ranks were simulated: "representative" flow classes or "all" flows
  unsigned long long flows = 0;           // flows the backend simulated (0: closed form)
  unsigned long long flows_reused = 0;    // flows of rounds that reused an earlier round's solution
  memory::MemoryEstimate memory;          // per GPU at its peak (memory/memory_model.hpp)
  std::optional<memory::FitOptions> fit;  // what would make it fit, when it does not
  std::string zero_redundancy_optimizer = "off";  // "off", "on" or "overlap_with_ddp"
  // training.wrapper "fsdp": its settings in words (empty otherwise) and its units' names.
  std::string fsdp{};
  std::vector<std::string> fsdp_units{};
  std::optional<FsdpOffloadReport> fsdp_offload;  // training.fsdp.cpu_offload
  std::string activation_checkpointing = "none";
  // Link statistics over the steady step(s) (`links`, `busiest_link`): per class, in the order the
  // backend lists them; empty without communication. `link_steps` steps were counted.
  std::vector<LinkClassTotals> link_classes;
  int link_steps = 0;
  std::string links_note;                           // what the figures can and cannot say (backend)
  std::vector<LinkCounterTrack> link_counters;      // --trace: utilisation per class over the run
  std::optional<DataParallelReport> data_parallel;  // set only with training.wrapper "data_parallel"
};

// The full report: steady-state fields at the top level, "iteration1" with the same fields.
core::Json to_json(const StepReport& r, bool include_buckets = true);
core::Json iteration_json(const IterationReport& it, bool include_buckets);
// Fields a sweep row carries.
core::Json summary_json(const StepReport& r);
std::string to_table(const StepReport& r);
// One line for stderr when the memory per GPU exceeds the GPU's memory ("" when it fits).
std::string memory_warning(const StepReport& r);
// What would make it fit (r.fit) in words: "would fit with training.batch_size <= 19 (78.79 GiB at
// 19), activation_checkpointing full (14.12 GiB); not with training.wrapper fsdp (129.95 GiB)", or
// "none of ... fits" ("" when it fits).
std::string fit_options_text(const StepReport& r);
// `links` and `busiest_link` of the report (null / empty without link statistics): per class,
// per step, the bytes, the busy share (the class's busiest link's busy time over the step), the
// mean utilisation (bytes over capacity x step) and its busiest link.
core::Json links_json(const StepReport& r);
core::Json busiest_link_json(const StepReport& r);
core::Json to_chrome_trace(const StepReport& r);

}  // namespace ddpsim::report
