#pragma once
// Typed, validated inputs. Every quantity is an SI double (seconds, bytes, bytes/s, FLOP/s).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/fabric_spec.hpp"
#include "config/ownership.hpp"
#include "core/names.hpp"

namespace ddpsim::config {

enum class DType { FLOAT64, FLOAT32, FLOAT16, BFLOAT16, INT64, INT32, INT16, INT8, UINT8, BOOL };
int dtype_size(DType t);
std::string to_string(DType t);
std::optional<DType> parse_dtype(const std::string& s);
std::vector<std::string> dtype_names();

// String settings, parsed once (sections.cpp) into these; each table gives the names a scenario
// may spell, the allowed list of the error message and to_string.
// training.compute_dtype: autocast's dtype (float32: none; tf32: float32 with TF32 tensor cores).
enum class ComputeDtype { FLOAT32, TF32, BFLOAT16, FLOAT16, FLOAT64 };
const core::Names<ComputeDtype>& compute_dtype_names();
std::string to_string(ComputeDtype d);
// float16 or bfloat16 autocast: half-precision activations and math.
bool is_half_precision(ComputeDtype d);
// ddp.comm_hook: torch.distributed.algorithms.ddp_comm_hooks (default_hooks, powerSGD_hook,
// quantization_hooks); ALLREDUCE is DDP without a hook.
// ALLREDUCE: no hook registered (the Reducer divides while copying into the bucket);
// ALLREDUCE_HOOK: default_hooks.allreduce_hook registered (it divides the bucket in place).
enum class CommHook {
  ALLREDUCE,
  ALLREDUCE_HOOK,
  FP16_COMPRESS,
  BF16_COMPRESS,
  POWERSGD,
  QUANTIZE_PER_TENSOR,
  QUANTIZE_PER_CHANNEL
};
const core::Names<CommHook>& comm_hook_names();
std::string to_string(CommHook h);
// training.wrapper: DistributedDataParallel or torch.nn.DataParallel.
enum class Wrapper { DDP, DATA_PARALLEL, FSDP };
const core::Names<Wrapper>& wrapper_names();
std::string to_string(Wrapper w);
// training.fsdp.sharding_strategy: torch.distributed.fsdp.ShardingStrategy (FSDP1 api.py; FSDP2
// expresses the same with reshard_after_forward and a 1-D or 2-D mesh).
enum class ShardingStrategy { FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD };
const core::Names<ShardingStrategy>& sharding_strategy_names();
std::string to_string(ShardingStrategy s);
// training.fsdp.wrap: which modules become FSDP units (the auto-wrap policy).
enum class FsdpWrap { BLOCK, EVERY_K_BLOCKS, ROOT };
const core::Names<FsdpWrap>& fsdp_wrap_names();
std::string to_string(FsdpWrap w);
// training.fsdp.backward_prefetch: torch.distributed.fsdp.BackwardPrefetch (FSDP1), or none.
enum class BackwardPrefetch { BACKWARD_PRE, BACKWARD_POST, NONE };
const core::Names<BackwardPrefetch>& backward_prefetch_names();
std::string to_string(BackwardPrefetch b);
// training.activation_checkpointing: which blocks recompute their forward in the backward.
enum class ActivationCheckpointing { NONE, FULL, SELECTIVE_BLOCK, SELECTIVE_OP };
const core::Names<ActivationCheckpointing>& activation_checkpointing_names();
std::string to_string(ActivationCheckpointing a);
// collective.model: NCCL's algorithm/protocol/channel model, or the plain ring closed form.
enum class CollectiveModelKind { NCCL, RING };
const core::Names<CollectiveModelKind>& collective_model_names();
std::string to_string(CollectiveModelKind m);

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::FLOAT32;
  bool requires_grad = true;
  int64_t numel = 0;
  double bytes() const { return static_cast<double>(numel) * dtype_size(dtype); }
};

struct BufferSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::FLOAT32;
  int64_t numel = 0;
};

enum class LayerType { CONV2D, LINEAR, MATMUL, BATCHNORM, LAYERNORM, EMBEDDING, ELEMENTWISE, POOL, SOFTMAX, OTHER };
std::string to_string(LayerType t);
std::vector<std::string> layer_type_names();

// One kernel of a layer's forward pass, from the export's `layers[].kernels` (models/README.md,
// "Kernel records"). The per-kernel compute model (gpu/kernel_model) derives the backward kernels.
struct KernelRecord {
  enum class Op { GEMM, CONV, MEM };
  Op op = Op::MEM;
  std::string name;               // aten op of a memory-bound record
  std::string dtype = "float32";  // operand dtype at export (GEMM/CONV)
  // GEMM: C[m, n] = A[m, k] B[k, n], `batch` times. CONV: input n x c x h x w, o filters of
  // (c / g) x r x s, output n x o x p x q, g groups.
  double batch = 1, m = 0, n = 0, k = 0;
  double c = 0, h = 0, w = 0, o = 0, r = 0, s = 0, p = 0, q = 0, g = 1;
  bool grad_a = false, grad_b = false, bias = false;  // input (A) / weight (B) / bias need a gradient
  bool transposed = false;  // CONV: ConvTranspose (input n x c x h x w to output n x o x p x q all the same)
  // Exponents with which each dimension grows with the batch / the input size, in the order
  // GEMM {batch, m, n, k}, CONV {n, h, w, p, q}; empty when the export has no probes.
  std::vector<int> batch_exp, size_exp;
  // Memory-bound: bytes read, written and FLOPs as c0 + c1 r + c2 r^2 of the size ratio r.
  double in[3] = {0, 0, 0}, out[3] = {0, 0, 0}, flops[3] = {0, 0, 0};
  bool backward = false;  // has a backward kernel (some floating input requires grad)
  // Memory-bound: an operand is broadcast or strided against the output (export `strided`), so
  // TensorIterator cannot take its contiguous, vectorized path (gpu/kernel_model.cpp).
  bool strided = false;
  // Bytes of the tensors autograd saves for this op's backward that no earlier op saved (export
  // `sv`: storages seen by saved_tensors_hooks, float32 at the export size, c0 + c1 r + c2 r^2 of
  // the size ratio). has_saved is false for exports without it (the byte rules estimate it).
  double saved[3] = {0, 0, 0};
  bool has_saved = false;
};

struct LayerSpec {
  std::string name;
  LayerType type = LayerType::OTHER;
  std::vector<int> params;  // indices into ModelSpec::params whose gradient is complete after this layer's backward
  // Costs for the profile's batch_size; the simulator scales them by batch / batch_size.
  double fwd_flops = 0, bwd_flops = 0;
  double fwd_bytes = 0, bwd_bytes = 0;       // activation traffic; parameter traffic is added by the simulator
  std::optional<double> fwd_time, bwd_time;  // measured seconds at batch_size, preferred when present
  std::vector<KernelRecord> kernels;         // forward kernels (empty: export without records)
  // Eager host work of the layer that launches no kernel (export `host_ops`; all 0 when the export
  // has none): forward view ops, the autograd view nodes among them (run in backward) and
  // nn.Module calls. Priced by gpu/kernel_model.cpp eager_host_cost().
  int host_views = 0, host_view_nodes = 0, host_module_calls = 0;
  // Measured: for each entry of `params`, the share of this layer's backward done when that
  // parameter's gradient is ready (its AccumulateGrad has run). Empty: every gradient at the end.
  // A module whose parameters serve stages of its backward (a multi-layer nn.LSTM on the CPU runs
  // one autograd graph per layer and time step) has some well before 1.
  std::vector<double> param_ready;
};

enum class GpuArch { VOLTA, AMPERE, ADA, HOPPER, BLACKWELL };
std::string to_string(GpuArch a);

struct GpuSpec {
  std::string name;
  std::string file;
  GpuArch arch = GpuArch::AMPERE;
  std::map<std::string, double> peak_flops;  // by compute dtype name: float32, tf32, bfloat16, float16, float64
  double hbm_bandwidth = 0;                  // bytes/s
  double memory_bytes = 0;
  int sm_count = 0;
  double host_bandwidth = 0;  // bytes/s of the GPU's PCIe link to the host (pinned copies)
  // FP32 lanes (CUDA cores) per SM: 64 on Volta and GA100, 128 on GA10x, Ada, Hopper and
  // Blackwell (the whitepapers). The FP32 peak counts all of them; cuBLAS's SIMT SGEMM kernels
  // reach a smaller share of a 128-lane SM's peak (gpu/kernel_model.cpp).
  int fp32_lanes_per_sm = 64;
  // Contention figures for this GPU (defaults: docs/facts.md §4, see gpu/contention.hpp).
  std::optional<double> hbm_bytes_per_nccl_byte, comm_slowdown;
  // Achieved fraction of peak by compute dtype and layer type ("float16" -> {"linear": 0.75}).
  std::map<std::string, std::map<std::string, double>> efficiency;
};

struct ModelSpec {
  std::string name;
  std::string source;
  std::string file;
  int batch_size = 1;
  std::string measured_on;      // device the measured times come from, if any
  int measured_batch_size = 0;  // batch the measured times were taken at (0: batch_size)
  std::string measured_dtype;   // compute precision of the measured times (ddpbench layers), if given
  // Memory format the measured times were taken in (profile_model.py --channels-last writes
  // "channels_last"; absent: PyTorch's default "contiguous_format").
  std::string measured_memory_format = "contiguous_format";
  // The GPU preset the measured times were taken on: the file's `measured_gpu` (a bundled GPU name
  // or a GPU file), else the preset `measured_on` names (config::gpu_preset_for_device); empty when
  // unknown (CPU profiles, unlisted GPUs). A measured profile on another GPU than the cluster's is
  // transferred per kernel (gpu/compute_model.cpp).
  std::string measured_gpu;
  std::optional<GpuSpec> measured_gpu_spec;
  std::vector<ParamSpec> params;
  std::vector<BufferSpec> buffers;
  std::vector<LayerSpec> layers;
  std::vector<int> grad_ready_order;  // requires_grad param indices, as they became ready in backward
  double input_bytes_per_sample = 0;  // from exported_with.input_shape/input_dtype (0: unknown)
  std::vector<int64_t> input_shape;   // exported_with.input_shape, batch first (empty: unknown)
  std::optional<DType> input_dtype;   // exported_with.input_dtype
  std::vector<int> unused_params;     // trainable parameters the forward pass does not use
  // Kernel records' scaling (top-level `kernel_scaling`): "seq" or "image" and the export's size
  // (sequence length or image side); empty / 0 when the records cannot be rescaled.
  std::string kernel_size_kind;
  int kernel_export_size = 0;
  bool kernel_batch_exponents = false;
  bool has_kernels() const;
  // Some layer carries measured fwd_time and bwd_time (the compute model then uses them when
  // compute.use_measured is on).
  bool has_measured_times() const;
  bool has_layer_type(LayerType t) const;
  int64_t total_numel() const;
  double grad_bytes() const;  // bytes of all requires_grad parameters
};

enum class LinkKind { NVLINK, PCIE, INFINIBAND, ETHERNET, ROCE, EFA };
std::string to_string(LinkKind k);

struct LinkSpec {
  std::string name;
  std::string file;
  LinkKind kind = LinkKind::NVLINK;
  double bandwidth = 0;  // bytes/s, one direction, one link/port
  double latency = 0;    // seconds added per ring step crossing this link (wire + NCCL per-step cost)
};

enum class IntraFabric { NVSWITCH, NVLINK_MESH, PCIE, NONE };
std::string to_string(IntraFabric f);

struct ClusterSpec {
  std::string name;
  std::string file;
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 1;
  IntraFabric fabric = IntraFabric::NVSWITCH;
  LinkSpec intra_link;
  int links_per_gpu = 1;  // parallel intra-node links per GPU (NVLink count); bandwidth adds up
  std::optional<LinkSpec> inter_link;
  int nics_per_node = 0;
  // inter_node.nics_per_gpu: NICs on one GPU's own PCIe path (beside it, behind its PCIe switch);
  // default nics_per_node / gpus_per_node of the cluster file (at least 1), fixed when the file is
  // read, so a scenario's gpus_per_node does not change it.
  int nics_per_gpu = 0;
  // inter_node.pcie_link: the narrowest PCIe link between a GPU and its NICs; unset = the GPU's
  // own link (gpu.host_bandwidth, NCCL's per-generation figure by default).
  std::optional<LinkSpec> pcie_link;
  int peer_links = 0;         // links between one GPU pair (NVLink meshes); 0 = links_per_gpu
  bool p2p = true;            // GPU peer-to-peer; false: NCCL stages through host memory
  std::optional<bool> nvls;   // NVLink SHARP; unset = Hopper or Blackwell on NVSwitch
  std::string cpu = "intel";  // NCCL's tuning tables differ by CPU vendor (intel, amd)
  double net_latency = 0;     // extra seconds per inter-node hop (NCCL graph latencyInter)
  bool sharp = false;         // inter_node.sharp: switches reduce in the network (SHARP, NCCL CollNet)
  // inter_node.net_plugin: the NCCL net plugin on the NICs ("" = NCCL's own transport;
  // "aws-ofi-nccl/p4d", "aws-ofi-nccl/p5", "aws-ofi-nccl/p5en", "aws-ofi-nccl/p6": sim/collectives/net_plugin.hpp).
  std::string net_plugin;
  // inter_node.net_plugin_version: its release ("1.9.1" -> 10901); 0 = the release the model reads
  // (net_plugin.hpp says what earlier ones lack). A log that names its release overrides it.
  int net_plugin_version = 0;
  // NCCL release the cluster runs ("nccl_version": "2.8.3"); 0 = current. Picks NCCL's tuner era.
  int nccl_version = 0;
  // Fitted by `ddpsim calibrate` against the user's nccl-tests output (identity by default).
  struct Calibration {
    // Before NCCL's pick (stand for different hardware; hand-set):
    double bw_scale_intra = 1.0, bw_scale_inter = 1.0, latency_scale = 1.0, latency_offset = 0.0;
    // After the pick (what the hardware achieves; what calibrate fits):
    std::optional<double> launch_overhead;  // host seconds per GPU per call
    struct Achieved {
      double bw_factor = 1.0, latency_offset = 0.0;
    };
    Achieved achieved_all;
    struct PairAchieved {
      std::string algo, proto;  // NCCL spellings: Ring/Tree/NVLS/NVLSTree, LL/LL128/Simple
      Achieved achieved;
    };
    std::vector<PairAchieved> achieved;
    std::string source;
    int nodes = 0;  // the log's node count (0: not in the file, written before it was recorded)
  } calibration;
  double price_per_gpu_hour = 0;       // optional, for cost comparisons (USD)
  std::optional<Ownership> ownership;  // optional cost of ownership (config/ownership.hpp)
  FabricSpec inter_fabric;             // the inter-node fabric (config/fabric_section); default single_switch
  std::string fabric_json;             // the cluster file's `fabric` object as written (a scenario's overrides it)
  int world_size() const { return nodes * gpus_per_node; }
  double intra_bandwidth() const { return intra_link.bandwidth * links_per_gpu; }
  double inter_bandwidth() const { return inter_link ? inter_link->bandwidth * nics_per_node : 0.0; }
};

struct DdpSettings {
  double bucket_cap_mb = 25.0;
  bool bucket_cap_is_default = true;          // PyTorch's behaviour depends on it (docs/facts.md §1)
  std::optional<double> first_bucket_cap_mb;  // explicit override of dist._DEFAULT_FIRST_BUCKET_BYTES
  bool find_unused_parameters = false;
  bool static_graph = false;
  bool gradient_as_bucket_view = false;
  std::string pytorch_version = "2.4";  // "1.13" or "2.x": where the first-bucket rule differs
  bool broadcast_buffers = true;        // buffers broadcast from rank 0 at every forward
  // allreduce, allreduce_hook, fp16_compress, bf16_compress, powersgd, quantize_per_tensor, quantize_per_channel
  CommHook comm_hook = CommHook::ALLREDUCE;
  struct PowerSgd {
    int matrix_approximation_rank = 1;
    int start_powerSGD_iter = 1000;
    bool use_error_feedback = true;
    bool batched = false;  // batched_powerSGD_hook
    double min_compression_rate = 2;
  } powersgd;
  // quantize_per_tensor / quantize_per_channel (ddp_comm_hooks/quantization_hooks.py): PyTorch's
  // hooks quantize to uint8 (bits 8); 1, 2 or 4 model the same hook with the codes packed
  // (bits per element on the wire, a pack and an unpack kernel added), which PyTorch does not ship.
  struct Quantization {
    int bits = 8;
    int channel_size = 512;  // quantization_perchannel_hook's bucket_size: elements per channel
  } quantization;
  double bucket_cap_bytes() const;
  double first_bucket_cap_bytes() const;  // applies at the rebuild (and iteration 1 with find_unused)
  bool recent_pytorch() const;
};

struct TrainingSettings {
  int batch_size = 32;  // per GPU
  ComputeDtype compute_dtype = ComputeDtype::FLOAT32;
  std::string optimizer = "sgd";  // sgd (momentum), adam, adamw
  bool sgd_momentum = true;       // sgd: a momentum buffer per parameter (torch.optim.SGD momentum != 0)
  // for_loop, foreach, fused. Unless given, torch's default for ddp.pytorch_version (set when the
  // scenario is read): 1.13 runs per tensor (torch/optim/sgd.py, adam.py, adamw.py: "if foreach is
  // None: ... foreach = False"); 2.x takes foreach for CUDA tensors (_default_to_fused_or_foreach).
  std::string optimizer_impl = "foreach";
  bool optimizer_impl_set = false;      // given in the scenario
  int gradient_accumulation_steps = 1;  // micro-steps per optimizer step; all but the last under no_sync()
  bool clip_grad_norm = false;          // torch.nn.utils.clip_grad_norm_ before the optimizer
  bool zero_grad_set_to_none = true;    // optimizer.zero_grad(set_to_none): False zeroes every gradient (a memset)
  bool grad_scaler = true;              // GradScaler with float16 autocast
  bool pin_memory = true;               // DataLoader pin_memory
  bool non_blocking = true;             // .to(device, non_blocking=...)
  // A measured single-GPU step (seconds, at this batch): compute is scaled to reproduce it.
  std::optional<double> measured_single_gpu_step_s;
  // A measured optimizer.step() + zero_grad() (seconds per step): replaces both estimates (the
  // optimizer's memory pass and per-tensor ops, the gradient zeroing). `ddpsim validate` sets it
  // from what scripts/ddp_cpu_bench.py measured; only for a replicated optimizer (no ZeRO, no FSDP).
  std::optional<double> measured_optimizer_step_s;
  std::optional<double> loader_samples_per_s;    // the data loader's throughput per rank (unset: never the bottleneck)
  std::optional<double> input_bytes_per_sample;  // overrides the model's
  // Per-kernel compute model settings (gpu/kernel_model; README "Compute").
  std::optional<int> seq_len;       // tokens per sample; rescales the model's kernel records
  std::optional<int> image_size;    // image side in pixels; rescales the model's kernel records
  std::string attention = "eager";  // eager, sdpa_flash, sdpa_mem_efficient
  // The tensors' memory format (torch.contiguous_format = NCHW, PyTorch's default, or
  // torch.channels_last = NHWC, model and input converted with .to(memory_format=...)).
  std::string memory_format = "contiguous_format";
  // The loss on the model's output (gpu/kernel_model.hpp loss_kernels): "auto" (cross-entropy when
  // the last layer is a linear layer with >= 2 outputs), "cross_entropy" or "none" (computed
  // elsewhere, e.g. a fused or chunked loss kernel, or already in a measured profile).
  std::string loss = "auto";
  bool cuda_graphs = false;              // the step is replayed as a CUDA graph: no per-operator host cost
  bool fused_bias_gelu_dropout = false;  // fused epilogues (one kernel for bias + GELU / dropout + add)
  // torch.distributed.optim.ZeroRedundancyOptimizer wrapping the optimizer (README "Memory and ZeRO").
  struct Zero {
    bool enabled = false;
    bool overlap_with_ddp = false;           // step + broadcasts in DDP's comm hook (ddp_zero_hook.hook_with_zero_step)
    bool parameters_as_bucket_view = false;  // one broadcast per rank's shard instead of one per parameter
  } zero_redundancy_optimizer;
  // How the model is wrapped: "ddp" (DistributedDataParallel, one process per GPU) or
  // "data_parallel" (torch.nn.DataParallel: one process, one node; plan/dp_builder.hpp, engine/host_stream.cpp).
  Wrapper wrapper = Wrapper::DDP;
  struct DataParallel {
    // Share of an eager op's host cost a Python thread holds the GIL for (parallel_apply's threads
    // cannot overlap it). 1 = all of it (an upper bound: PyTorch's bindings release the GIL
    // around the C++ dispatch); 0 = the threads never wait for each other.
    double gil_share = 1.0;
    // torch.cuda.nccl available (PyTorch's CUDA builds): broadcast_coalesced / reduce_add use NCCL
    // broadcast / reduce; false: peer copies from / to GPU 0 (torch/csrc/cuda/comm.cpp fallback).
    bool nccl = true;
    std::optional<double> output_bytes_per_sample;  // gathered to GPU 0; default: the last layer's output
    // Where the batch is when the module is called: "cuda:0" (input.to("cuda:0"), as PyTorch's
    // DataParallel tutorial does; then peer copies to the others) or "cpu" (Scatter copies each
    // chunk host-to-device on a background stream per GPU).
    std::string input_device = "cuda:0";
    std::vector<std::string> keys_given;  // the keys the scenario set (warned of under another wrapper)
  } data_parallel;
  // wrapper "fsdp": FullyShardedDataParallel (version 1, torch/distributed/fsdp/) or fully_shard
  // (version 2, torch/distributed/_composable/fsdp/). Defaults are PyTorch's (FSDP1's constructor
  // arguments; FSDP2's fully_shard(reshard_after_forward=True)).
  struct Fsdp {
    ShardingStrategy sharding_strategy = ShardingStrategy::FULL_SHARD;
    int version = 2;
    FsdpWrap wrap = FsdpWrap::BLOCK;
    int wrap_every = 2;                                                   // every_k_blocks: blocks per unit
    bool forward_prefetch = false;                                        // FSDP1
    BackwardPrefetch backward_prefetch = BackwardPrefetch::BACKWARD_PRE;  // FSDP1
    bool limit_all_gathers = true;                                        // FSDP1: at most 2 all-gathers ahead
    std::optional<bool> reshard_after_forward;                            // FSDP2 (unset: from the strategy)
    // FSDP2 reshard_after_forward given as an int N: after the forward each unit keeps 1/N of its
    // unsharded parameters (the post-forward mesh, mesh.view(-1, N): N consecutive ranks), so the
    // backward all-gathers over those N GPUs. 0: not given as an int (1 reads as false, the shard
    // group's size as true, as _get_post_forward_mesh_info does).
    int reshard_after_forward_to = 0;
    std::optional<DType> param_dtype, reduce_dtype;  // MixedPrecision (unset: the parameter's)
    // With training.gradient_accumulation_steps > 1: the micro-steps before the last skip the
    // gradient reduction (FSDP1 no_sync(), FSDP2 set_requires_gradient_sync(False)) and keep the
    // unsharded gradients; false: every micro-step reduces and accumulates into the shards.
    bool no_sync = true;
    // FSDP2 set_reshard_after_backward(is_last): false keeps every unit's parameters unsharded
    // after the backward of each micro-step but the last, so the next micro-step's forward
    // all-gathers nothing (FSDPParamGroup.unshard is a no-op while unsharded).
    bool reshard_after_backward = true;
    // FSDP1 CPUOffload(offload_params=True) / FSDP2 CPUOffloadPolicy(pin_memory=True): the sharded
    // parameters, gradients and optimizer state live in pinned host memory; each unshard copies the
    // shard to the GPU, each reduction copies the sharded gradient back, the optimizer steps on the
    // CPU (plan/fsdp_builder.hpp).
    bool cpu_offload = false;
    // FSDP2 explicit prefetching (FSDPModule.set_modules_to_forward_prefetch /
    // set_modules_to_backward_prefetch) as PyTorch's FSDP2 example (pytorch/examples
    // distributed/FSDP2/example.py) sets it: every unit but the root prefetches the next N units in
    // forward order / the N after it in backward order. 0: not set (the implicit prefetch).
    int num_to_forward_prefetch = 0, num_to_backward_prefetch = 0;
    std::vector<std::string> keys_given;  // the keys the scenario set (warned of under another wrapper)
    // Units keep their parameters unsharded from the forward to the backward.
    bool keeps_params_after_forward() const {
      return sharding_strategy == ShardingStrategy::SHARD_GRAD_OP || sharding_strategy == ShardingStrategy::NO_SHARD ||
             (reshard_after_forward && !*reshard_after_forward);
    }
    // After the backward of a micro-step that is not the last, the units stay unsharded: FSDP2
    // with reshard_after_backward false; FSDP1 under no_sync() with SHARD_GRAD_OP
    // (_should_free_unsharded_flat_param: _sync_gradients, or FULL_SHARD).
    // GPUs a unit's parameters are sharded over (plan::fsdp_groups): one node's under HYBRID_SHARD
    // (FSDP1 _init_intra_and_inter_node_groups; FSDP2's 2-D mesh), none under NO_SHARD, else all.
    int shard_group(int gpus_per_node, int world) const {
      return sharding_strategy == ShardingStrategy::HYBRID_SHARD ? gpus_per_node
             : sharding_strategy == ShardingStrategy::NO_SHARD   ? 1
                                                                 : world;
    }
    bool keeps_params_between_micro_steps(bool reduced_this_micro_step) const {
      if (sharding_strategy == ShardingStrategy::NO_SHARD) return false;
      if (version == 2) return !reshard_after_backward;
      return !reduced_this_micro_step && sharding_strategy == ShardingStrategy::SHARD_GRAD_OP;
    }
  } fsdp;
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::NONE;
  int activation_checkpointing_every = 2;  // selective_block: every k-th block
};

struct ContentionSettings {
  bool enabled = true;
  std::optional<double> hbm_bytes_per_nccl_byte, comm_slowdown;  // override the GPU's
  std::optional<double> compute_slowdown;                        // a fixed factor instead of the SM/HBM model
  double max_slowdown = 4.0;
};

struct StreamSettings {
  bool nccl_high_priority = false;      // TORCH_NCCL_HIGH_PRIORITY
  int cuda_device_max_connections = 8;  // CUDA_DEVICE_MAX_CONNECTIONS (1: kernels start in launch order)
  int comm_streams = 1;                 // process groups (NCCL streams) the buckets are spread over
  // Collectives of one comm stream in flight at once, taken in queue order by whichever worker is
  // free: 1 for NCCL (a CUDA stream runs its kernels in order); ProcessGroupGloo runs two worker
  // threads per process group (torch/csrc/distributed/c10d/init.cpp: options->threads =
  // devices.size() * 2; each runs ProcessGroupGloo::runLoop, popping the front of the shared
  // workQueue_, torch/csrc/distributed/c10d/ProcessGroupGloo.cpp).
  int comm_workers = 1;
};

struct StragglerSettings {
  double jitter_cv = 0;  // per-rank, per-step compute time: lognormal with this coefficient of variation
  std::vector<std::pair<int, double>> slow_ranks;  // rank, compute time factor
  int steps = 50;                                  // steady-state steps simulated when ranks are explicit
  bool explicit_ranks() const { return jitter_cv > 0 || !slow_ranks.empty(); }
};

struct ComputeSettings {
  double autograd_traversal_per_param = 0.2e-6;            // find_unused_parameters' graph walk, host side
  double flops_efficiency = 0.6;                           // achieved / peak for compute-bound kernels
  bool flops_efficiency_set = false;                       // given explicitly: then it applies to every layer type
  std::map<std::string, double> flops_efficiency_by_type;  // per layer type ("linear", "conv2d", ...)
  double memory_efficiency = 0.8;                          // achieved / peak HBM bandwidth for memory-bound kernels
  bool use_measured = true;                                // prefer measured layer times when the profile has them
  double kernel_overhead = 2e-6;                           // GPU-side minimum per kernel (seconds)
  double launch_latency = 5e-6;  // host launch to kernel start, paid when the host waits for the GPU
};

struct CollectiveSettings {
  // "nccl": NCCL's algorithm/protocol/channel model (sim/collectives/nccl_model); "ring": the
  // plain ring closed form on the cluster's link figures (base + 2(N-1)alpha + 2(N-1)/N S/B).
  CollectiveModelKind model = CollectiveModelKind::NCCL;
  double base_latency = 8.4e-6;  // ring model only: per collective, NCCL tuning.cc baseLat Ring/Simple
  // The collective call's time on the calling thread (DDP's backward thread: the Reducer's or a
  // comm hook's call per bucket). Unset: base_latency for the ring model, NCCL's host launch
  // (cluster calibration.launch_overhead, else 5 us) for NCCL. `ddpsim validate` sets it for a CPU
  // run from the run's own calibration (allreduce_call_s).
  std::optional<double> host_call;
  // What a Python comm hook costs the backward thread per bucket at world size 1 beyond the
  // builtin path's call (unset: 0): its Python call path, and its future callback, which gloo's
  // worker runs under Python's GIL right after the call while the backward's next node frees saved
  // tensors that hold Python objects, which takes the GIL (bench/results/hook-gil-2026-12-06). At
  // larger world sizes the callback runs when the all-reduce ends, at no fixed point of the
  // backward: not charged. `ddpsim validate` sets it for a one-rank CPU run from the run's own
  // calibration (hook_callback_s).
  std::optional<double> host_callback;
  // NCCL environment settings, by their NCCL names.
  std::vector<std::string> nccl_algo;   // NCCL_ALGO (empty: all)
  std::vector<std::string> nccl_proto;  // NCCL_PROTO (empty: NCCL's default set)
  int nccl_min_nchannels = 0, nccl_max_nchannels = 0;
  int nccl_min_ctas = 0, nccl_max_ctas = 0;  // NCCL_MIN_CTAS / NCCL_MAX_CTAS (2.17+); 0 = NCCL's default
  int nccl_collnet_enable = 0;               // NCCL_COLLNET_ENABLE (0/1): CollNet on a cluster with inter_node.sharp
  int nccl_version = 0;                      // NCCL release ("nccl_version": "2.18.5"); 0 = the cluster's
  int nccl_cross_nic = 2;                    // NCCL_CROSS_NIC 0/1/2: rings keep their NIC (rail) between nodes unless 1
  double nccl_buffsize = 0;  // NCCL_BUFFSIZE bytes (Simple buffer per channel and peer); 0 = NCCL's 4 MiB
  int nccl_nthreads = 0;     // NCCL_NTHREADS (Ring/Tree Simple and LL threads per CTA); 0 = NCCL's default
  // Ring model only: measured all-reduce times on this world size, (bytes, seconds) ascending in
  // bytes ("measured_allreduce": [{"bytes": B, "seconds": T}, ...]). When given, an all-reduce of S
  // bytes takes the log-log interpolation of the table (the smallest row's time below it; above it
  // the largest row's time plus the extra bytes at the last segment's rate); the ring's latency
  // terms are kept as its latency part and the rest is transfer (collectives/ring.cpp).
  std::vector<std::pair<double, double>> measured_allreduce;
};

enum class Backend { ANALYTIC, FLOW };
enum class Fidelity { FUSED, STEPWISE };
// REPRESENTATIVE: homogeneous ranks on a symmetric fabric simulated as representative flow classes
// (each standing for its identical siblings); ALL: every rank's flows (docs/design.md, "Decisions").
enum class RankMode { REPRESENTATIVE, ALL };
// The names a scenario may give (simulation.backend, .fidelity, .ranks); network's registry has one
// factory per backend name (tests/unit/network/Backend_test.cpp checks that they agree).
const core::Names<Backend>& backend_names();
const core::Names<Fidelity>& fidelity_names();
const core::Names<RankMode>& rank_mode_names();
std::string to_string(Backend b);
std::string to_string(Fidelity f);
std::string to_string(RankMode m);

struct SimulationSettings {
  Backend backend = Backend::FLOW;
  Fidelity fidelity = Fidelity::FUSED;
  RankMode ranks = RankMode::REPRESENTATIVE;
  uint64_t seed = 1;
  // Every-flow rounds on an otherwise idle network reuse the first one's max-min solution, scaled
  // (network/flow.hpp); false simulates every round (the same result to rounding, slower).
  bool reuse_rounds = true;
};

// What a scenario may ask the simulator to do, checked before it starts (config/limits.hpp):
// scenario section "limits", e.g. `--set limits.max_gpus=8388608` raises one.
struct LimitSettings {
  long long max_gpus = 1 << 22;    // GPUs of the cluster (memory: ~72 B per GPU, 300 MB at the default)
  double max_seconds = 10;         // estimated wall time of simulation.ranks "all" and explicit ranks
  long long max_tensors = 200000;  // parameter tensors of the model (~31 us each)
};

struct Scenario {
  std::string name;
  std::string description;
  std::string file;
  ModelSpec model;
  ClusterSpec cluster;
  DdpSettings ddp;
  TrainingSettings training;
  ComputeSettings compute;
  CollectiveSettings collective;
  SimulationSettings simulation;
  ContentionSettings contention;
  StreamSettings streams;
  StragglerSettings stragglers;
  LimitSettings limits;
};

}  // namespace ddpsim::config
