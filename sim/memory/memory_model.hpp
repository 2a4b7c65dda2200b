#pragma once
// Memory of one DDP rank at its peak (docs/facts.md §7), against the GPU's memory; SimGrid-free.
// Terms: parameters (by their dtype) and buffers; gradients; DDP's bucket buffers (absent with
// gradient_as_bucket_view, which makes the gradients views of them); optimizer state (SGD momentum
// 1 buffer, Adam/AdamW exp_avg + exp_avg_sq, in the parameter's dtype: torch.optim keeps no
// master copy and autocast keeps fp32 parameters); the optimizer's temporaries; activations saved
// for backward; an allowance for the CUDA context and NCCL's buffers.
// The peak is the larger of two moments:
// - backward: walking the layers backward, the activations of the layers not yet back-propagated
//   plus the gradients already produced (all gradients when zero_grad keeps them, none beside the
//   buckets with gradient_as_bucket_view);
// - optimizer step: every gradient, no activations, the step's temporaries.
// With training.zero_redundancy_optimizer the optimizer state (and the step's temporaries) are
// those of the rank holding the largest shard, partitioned as PyTorch does (zero_partition).
// With training.wrapper "fsdp" (estimate_fsdp_memory): parameters, gradients and optimizer state
// are the local shard's (in the parameters' dtype: the sharded parameters are the fp32 master
// copy when param_dtype is lower, so no further master copy exists); the units unsharded at once
// (in param_dtype) and the unit's unsharded gradient before its reduce-scatter come on top.
// Activation checkpointing (plan::checkpointed_blocks): a checkpointed block keeps only its input
// (taken as what its first layer saves, its input at the least) -- selective_op: what its
// linear/matmul layers save -- and holds its full activations again while it is recomputed.
#include <optional>
#include <string>
#include <vector>

#include "config/specs.hpp"

namespace ddpsim::memory {

// CUDA context with PyTorch's kernels loaded: 723 MiB after the first CUDA call
// (discuss.pytorch.org, "What is the reason for pytorch's GPU memory floor?", the poster's
// measurement, answered "The first CUDA call creates the CUDA context").
inline constexpr double kCudaContextBytes = 723.0 * 1024 * 1024;
// One NCCL communicator after an all-reduce: 688 MiB per GPU for groups of more than two GPUs
// (NVIDIA/nccl#964: 4x A100 with NVLink, PyTorch process groups, 4 MB all-reduce; NCCL's
// per-channel, per-peer buffers, docs/facts.md §7). One per process group (streams.comm_streams).
inline constexpr double kNcclCommunicatorBytes = 688.0 * 1024 * 1024;

struct MemoryEstimate {
  double parameters = 0, buffers = 0, gradients = 0, buckets = 0, optimizer_state = 0, optimizer_temporaries = 0,
         activations = 0;
  double unsharded_params = 0;  // FSDP: the units all-gathered at the peak (param_dtype)
  double unsharded_grads = 0;   // FSDP: the unsharded gradient of the unit in its backward (+ reduce-scatter input)
  int fsdp_shards = 1;          // FSDP: ranks each unit is sharded over (1: not sharded)
  int unsharded_units = 0;      // FSDP: units unsharded at the peak
  // FSDP CPU offload: the rank's pinned shards and gradients and its optimizer state, in host
  // memory (not part of total(): the GPU's).
  double host_offload = 0;
  double cuda_context = 0, nccl_buffers = 0;  // the allowance
  double allowance() const { return cuda_context + nccl_buffers; }
  double total() const;
  double gpu_memory = 0;  // the GPU's memory (0: the GPU file gives none)
  bool fits() const { return gpu_memory <= 0 || total() <= gpu_memory; }
  std::string peak_phase;        // "backward", "optimizer step" or "forward" (FSDP: units kept between micro-steps)
  std::string activation_rule;   // how the activations were counted
  double activations_saved = 0;  // what the forward keeps for the backward (alive when it begins)
  int zero_shards = 1;           // ranks the optimizer state is sharded over (1: no ZeRO)
  double optimizer_state_unsharded = 0;
  // The largest term: its name as in the report ("optimizer_state", ...) and bytes.
  std::pair<std::string, double> largest_term() const;
};

// Bytes of optimizer state per parameter element of `elem_size` bytes.
double optimizer_state_bytes_per_element(const std::string& optimizer, bool sgd_momentum, int elem_size);

// ZeroRedundancyOptimizer._partition_parameters (one parameter group): parameters sorted by numel,
// largest first (stable), each to the rank with the least numel so far (the lowest on ties).
// Returns, per rank that receives any (at most min(world, parameters)), its parameter indices in
// the order assigned, which is the order _broadcast_params_from_rank broadcasts them.
std::vector<std::vector<int>> zero_partition(const config::ModelSpec& m, int world);

// Saved activation bytes per layer (forward order) at the scenario's batch, size and dtype:
// what every forward kernel keeps for its backward (gpu::layer_saved_bytes); for models without
// kernel records half of the layer's forward traffic (read + written), scaled by batch and autocast.
std::vector<double> activation_bytes_per_layer(const config::Scenario& sc, std::string* rule = nullptr);

// Per layer, the activation bytes kept from the forward to the backward, and the bytes the layer
// holds while its block is recomputed (== kept outside checkpointed blocks).
struct ActivationPlan {
  std::vector<double> kept, full;
  std::vector<int> block;          // per layer, its block (-1: none)
  std::vector<char> checkpointed;  // per block
};
ActivationPlan activation_plan(const config::Scenario& sc, std::string* rule = nullptr);
// The activations alive just before layer l's backward: every kept byte of layers <= l plus, in a
// checkpointed block, the recomputed activations of its layers <= l beyond what they keep.
std::vector<double> activations_before_backward(const ActivationPlan& a);

MemoryEstimate estimate_memory(const config::Scenario& sc);

// What would make a run that does not fit its GPU's memory fit, each change alone with the run's
// other settings kept (each estimated as estimate_memory does): a smaller training.batch_size
// (training.gradient_accumulation_steps keeps the global batch), full activation checkpointing,
// and FSDP (FULL_SHARD, PyTorch's defaults) in place of DDP. Binary search over the batch, which
// only the activations depend on (nondecreasing in it).
struct FitOptions {
  int largest_batch = 0;                          // the largest batch below the run's that fits (0: not even 1)
  double largest_batch_bytes = 0;                 // the peak at that batch (at batch 1 when none fits)
  std::optional<double> checkpointed_bytes;       // activation_checkpointing "full" (when it lowers the peak)
  std::optional<double> fsdp_bytes;               // training.wrapper "fsdp" (DDP on more than one GPU)
  std::optional<double> fsdp_checkpointed_bytes;  // both, when neither alone fits
};
// nullopt when the run fits (or the GPU gives no memory).
std::optional<FitOptions> fit_options(const config::Scenario& sc, const MemoryEstimate& m);

}  // namespace ddpsim::memory
