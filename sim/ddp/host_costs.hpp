#pragma once
// What DistributedDataParallel itself costs on the host (CPU) per step, beside the kernels and
// collectives the plan already holds. Where each cost runs in PyTorch (torch 1.13 and 2.x, the
// same structure in both):
// - per gradient, on the backward (autograd) thread: Reducer::autograd_hook ->
//   mark_variable_ready -> mark_variable_ready_dense (torch/csrc/distributed/c10d/reducer.cpp);
//   without gradient_as_bucket_view it also launches the copy into the bucket (at::mul_out by
//   1/world_size), a kernel the plan already issues (gpu::ComputeProfile::copy_in), and
//   finalize_backward -> finalize_bucket_dense launches the copy back out (copy_out);
// - per bucket, on the same thread: mark_bucket_ready -> all_reduce_bucket (the comm hook or the
//   default allreduce: the collective call, its Work and future), the future's then() callback and
//   finalize_bucket_dense's per-bucket work;
// - per forward, in DistributedDataParallel.forward / _pre_forward
//   (torch/nn/parallel/distributed.py): prepare_for_forward, the rebuild-buckets check, logging,
//   _find_tensors over the output and reducer.prepare_for_backward (reset of the bucket counts);
// - per forward with broadcast_buffers (the default) and buffers, in DistributedDataParallel.forward:
//   _sync_buffers -> _assign_modules_buffers (a Python loop over named_buffers) ->
//   dist._broadcast_coalesced (torch/csrc/distributed/c10d/comm.cpp, BroadcastWork: per dtype
//   bucket flatten_dense_tensors, the broadcast, then unflatten_dense_tensors and one copy_ back
//   per buffer on every rank, the root included), per buffer.
// All of it runs at world size 1 as well; there the collective is a call on a one-rank group.
// A Python comm hook (register_comm_hook: PythonCommHook::runHook, e.g. default_hooks.allreduce_hook)
// makes the collective call from Python instead: measured here (scripts/measure_ddp_host.py
// --comm-hooks, bench/results/comm-hook-host-2026-12-06) it costs the backward thread ~4.6 us per
// bucket more (the c10d Python wrapper 2.3 us, then() with its callback 2.3 us), which is not
// charged: a bucket costs the same with or without a hook (its kernels aside, ddp/comm_hooks.hpp).
// In whole CPU steps at world size 1 a hooked bucket costs the backward ~75-300 us more on this
// project's VM: about half a wait for the GIL (gloo's worker runs the hook's then() callback under
// it right after the call, while the backward's next node frees tensors that hold Python objects,
// which takes the GIL), the rest the Python call path (bench/results/hook-gil-2026-12-06). That is
// config::CollectiveSettings::host_callback, measured per run by scripts/ddp_cpu_bench.py and
// charged by the plan at world size 1 only.
//
// The numbers are CPU seconds measured here on torch 1.13 (Debian python3-torch 1.13.0a0, a
// 2-vCPU "Intel(R) Xeon(R) Processor" VM) by scripts/measure_ddp_host.py, whose docstring names
// the method: DDP(gloo, world size 1) against the same nn.Linear chain without DDP, paired step
// differences, least squares over tensor and bucket counts. The machine was shared with other
// builds while they were measured (1-minute load average in the comment below), so they carry
// that noise. Another host runs them faster or slower; no scaling by CPU is modelled.
#include <cstddef>

namespace ddpsim::ddp {

struct HostCosts {
  double per_gradient_hook_s = 0;  // autograd_hook + mark_variable_ready, gradient_as_bucket_view (no copy)
  double per_bucket_s = 0;         // the Reducer's per-bucket work, the collective call itself excluded
  double forward_s = 0;            // DDP.forward's own work per synced forward (not under no_sync())
  double per_buffer_s = 0;         // _sync_buffers per module buffer (broadcast_buffers), the broadcast itself excluded
  // Dispatch of one of DDP's own copies (into the bucket, back out; no autograd recording), the
  // launch excluded: priced where the plan launches them on a GPU (the per-kernel model's host;
  // eager_host_costs). A CPU rank's copies are in its measured kernels and per-buffer cost.
  double per_copy_s = 0;
};

// torch 1.13's costs measured on this project's CPU (see above): what a CPU rank of this machine
// type pays (the CPU validation runs, measured profiles).
HostCosts measured_host_costs();

// The same costs on the host the per-kernel model assumes: each as its measured share of one eager
// op (scripts/measure_ddp_host.py's reference op, timed in the same run, so the measuring
// machine's speed cancels), times that model's dispatch cost of an op (`forward_op_s`, without the
// launch) or of a backward node (`backward_op_s`): forward-side work (DDP.forward, per buffer) in
// forward ops, backward-thread work (the hook) in backward nodes. Shares of torch 1.13 (this
// project's CPU) or 2.x (torch 2.11 on the H200 machine's CPU, `torch_1_13` false). The Reducer's
// per-bucket share stays absolute (not resolved as a share: sim/ddp/host_costs.cpp).
HostCosts eager_host_costs(double forward_op_s, double backward_op_s, bool torch_1_13);

// Host seconds DDP adds to one synced backward + forward of `gradients` gradients in `buckets`
// buckets with `buffers` module buffers broadcast, not counting the copies' kernels or the
// collectives (a closed form the tests check).
double host_seconds(const HostCosts& c, size_t gradients, size_t buckets, size_t buffers = 0);

}  // namespace ddpsim::ddp

namespace ddpsim::ddp {

// How much of DDP's host work the GPU waits for. The host and the GPU as one queue, as
// gpu/compute_model folds eager dispatch into the kernels: the host launches kernels in order,
// each starts at max(GPU free, its launch). Two copies of the queue run side by side, one with the
// model's own kernels and host costs (what the compute profile already holds) and one with DDP's
// host work and copy kernels added; the extra time the GPU waits in the second is what DDP's host
// work adds to the step. A launch-bound step pays it in full, a GPU-bound one hides it behind the
// queue. Without a host/GPU split (`split` false: a measured profile, or a CPU rank where the host
// is the device) every host second is exposed.
class HostExposure {
 public:
  explicit HostExposure(bool split) : split_(split) {}
  // A kernel of the model (both queues): `gpu_s` on the GPU, launched after `host_s` of host work.
  void kernel(double gpu_s, double host_s);
  // The model's host work that launches nothing (views, module calls: ComputeProfile::host_only_*).
  void model_host(double seconds);
  // A kernel only DDP launches (the copies into and out of the buckets).
  void ddp_kernel(double gpu_s, double host_s);
  // DDP's own host work.
  void ddp_host(double seconds);
  // The GPU's extra wait since the last take (>= 0), if the GPU's next work waits for the host's
  // work so far (DDP's host work comes before what it launches or delays).
  double take();

 private:
  struct Queue {
    double host = 0, gpu = 0, idle = 0;
    void issue(double gpu_s, double host_s);
  };
  bool split_;
  Queue plain_, with_;
  double pending_ = 0;  // without a split: host seconds not yet taken
  double taken_ = 0;    // with a split: extra wait already taken
};

}  // namespace ddpsim::ddp
