#pragma once
// What a simulation produced, and its serialisations: JSON report, summary table, CSV rows and a
// Chrome trace (Perfetto). Definitions follow DESIGN.md ("Definitions the reports use").
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"

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
};

struct IterationReport {
  int iteration = 0;
  double start_s = 0;  // absolute simulated time the iteration began
  double step_time_s = 0;
  double forward_s = 0;
  double backward_compute_s = 0;  // layer backward kernels + DDP's gradient-to-bucket copies
  double ddp_copy_s = 0;          // the copy-in and copy-out kernels alone (part of compute_only)
  double finalize_wait_s = 0;     // compute stream idle at finalize_backward
  double optimizer_s = 0;
  double compute_only_s = 0;
  double comm_alone_s = 0;
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
  int micro_steps = 1;              // forward/backward passes per optimizer step (gradient accumulation)
  double micro_step_time_s = 0;     // mean per micro-step
  double comm_alone_per_sample_s = 0;
  int samples = 0;                                                          // samples per rank in this optimizer step
  std::optional<double> step_time_p50_s, step_time_p95_s, step_time_p99_s;  // explicit ranks: over the steps
  int steps_simulated = 1;
  std::vector<BucketRow> buckets;
};

struct TraceEvent {
  std::string name;
  std::string category;
  int track = 0;  // 0 compute stream, 1 NCCL stream
  double start_s = 0, duration_s = 0;
  core::Json args;
};

// torch.nn.DataParallel (training.wrapper "data_parallel", engine/data_parallel.hpp).
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

struct StepReport {
  std::string scenario;
  std::string model;
  std::string cluster;
  std::string gpu;
  int world_size = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  int batch_size = 0;
  std::string backend, fidelity;
  double bucket_cap_mb = 0;
  double grad_bytes = 0;
  int num_params = 0;
  bool rebuilt = false;
  int steady_iteration = 1;
  IterationReport iteration1;
  IterationReport steady;
  bool has_iteration1 = true;
  std::string comm_hook;
  bool explicit_ranks = false;
  bool contention = false;
  double compute_scale = 1.0;  // compute scaled to a measured single-GPU step (1 = not calibrated)
  int measured_layers = 0;
  // [compute] filled by the app from gpu::ComputeProfile (the engine does not set them)
  std::string compute_provenance;  // measured / transferred / estimated
  std::string compute_scale_per = "micro-step";
  double model_flops_per_micro_step = 0;  // forward + backward
  double mfu_peak_flops = 0;
  std::string mfu_peak_dtype;
  int seq_len = 0, image_size = 0;  // sizes the model was evaluated at (0: n/a)
  std::string attention;
  double mfu() const;  // model FLOPs / (steady step time x peak)
  std::vector<TraceEvent> trace;
  std::string ranks;             // how ranks were simulated: "representative" flow classes or "all" flows
  unsigned long long flows = 0;  // flows the backend simulated (0: closed form)
  std::optional<DataParallelReport> data_parallel;  // set only with training.wrapper "data_parallel"
};

// The full report: steady-state fields at the top level, "iteration1" with the same fields.
core::Json to_json(const StepReport& r, bool include_buckets = true);
core::Json iteration_json(const IterationReport& it, bool include_buckets);
// Fields a sweep row carries.
core::Json summary_json(const StepReport& r);
std::string to_table(const StepReport& r);
core::Json to_chrome_trace(const StepReport& r);

}  // namespace ddpsim::report
