#include "plan/fsdp_builder.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "gpu/compute_model.hpp"
#include "gpu/optimizer_model.hpp"
#include "memory/memory_model.hpp"
#include "plan/program_writer.hpp"

namespace ddpsim::plan {
namespace {

using config::ShardingStrategy;

// The name up to and including its first all-digit component ("layers.3.attention" -> "layers.3"),
// "" when none (ModuleList / Sequential children are numbered; FSDP's auto-wrap policies wrap them).
std::string block_key(const std::string& name) {
  size_t start = 0;
  while (start < name.size()) {
    const size_t dot = name.find('.', start);
    const size_t end = dot == std::string::npos ? name.size() : dot;
    bool digits = end > start;
    for (size_t i = start; i < end && digits; ++i) digits = name[i] >= '0' && name[i] <= '9';
    if (digits) return name.substr(0, end);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return "";
}

}  // namespace

std::vector<Block> model_blocks(const config::ModelSpec& m) {
  std::vector<Block> out;
  std::map<std::string, size_t> index;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const std::string key = block_key(m.layers[l].name);
    if (key.empty()) continue;
    const auto it = index.find(key);
    if (it == index.end()) {
      index[key] = out.size();
      out.push_back({key, {static_cast<int>(l)}});
    } else {
      out[it->second].layers.push_back(static_cast<int>(l));
    }
  }
  return out;
}

std::vector<bool> checkpointed_blocks(const config::TrainingSettings& tr, size_t blocks) {
  std::vector<bool> out(blocks, false);
  for (size_t b = 0; b < blocks; ++b) switch (tr.activation_checkpointing) {
      case config::ActivationCheckpointing::NONE: break;
      case config::ActivationCheckpointing::FULL:
      case config::ActivationCheckpointing::SELECTIVE_OP: out[b] = true; break;
      case config::ActivationCheckpointing::SELECTIVE_BLOCK:
        out[b] = (b + 1) % static_cast<size_t>(std::max(1, tr.activation_checkpointing_every)) == 0;
        break;
    }
  return out;
}

FsdpGroups fsdp_groups(const config::Scenario& sc) {
  FsdpGroups g;
  const int world = sc.cluster.world_size();
  const auto& f = sc.training.fsdp;
  g.shard = f.shard_group(sc.cluster.gpus_per_node, world);
  // NO_SHARD: every rank a replica; HYBRID_SHARD: inter-node replica groups of the shards.
  if (f.sharding_strategy == ShardingStrategy::NO_SHARD) g.replica = world;
  if (f.sharding_strategy == ShardingStrategy::HYBRID_SHARD) g.replica = sc.cluster.nodes;
  const int k = f.reshard_after_forward_to;
  if (f.version == 2 && k > 1 && k < g.shard && !f.keeps_params_after_forward()) g.post_forward = k;
  return g;
}

double dim0_shard_numel(const config::ParamSpec& p, int shard) {
  const double dim0 = p.shape.empty() ? 1.0 : static_cast<double>(std::max<int64_t>(1, p.shape[0]));
  return std::ceil(dim0 / shard) * (static_cast<double>(p.numel) / dim0);
}

std::vector<FsdpUnit> fsdp_units(const config::Scenario& sc) {
  const auto& m = sc.model;
  const auto& f = sc.training.fsdp;
  const int shard = fsdp_groups(sc).shard;
  std::vector<int> unit_of(m.layers.size(), 0);
  std::vector<FsdpUnit> units(1);
  units[0].name = "root";
  units[0].root = true;
  if (f.wrap != config::FsdpWrap::ROOT) {
    const auto blocks = model_blocks(m);
    const size_t per = f.wrap == config::FsdpWrap::BLOCK ? 1 : static_cast<size_t>(std::max(1, f.wrap_every));
    for (size_t b = 0; b < blocks.size(); b += per) {
      FsdpUnit u;
      const size_t last = std::min(blocks.size(), b + per) - 1;
      u.name = blocks[b].name + (last > b ? ".." + blocks[last].name : "");
      for (size_t k = b; k <= last; ++k)
        for (int l : blocks[k].layers) unit_of[static_cast<size_t>(l)] = static_cast<int>(units.size());
      units.push_back(std::move(u));
    }
  }
  std::vector<char> placed(m.params.size(), 0);
  for (size_t l = 0; l < m.layers.size(); ++l) {
    FsdpUnit& u = units[static_cast<size_t>(unit_of[l])];
    u.layers.push_back(static_cast<int>(l));
    for (int p : m.layers[l].params)
      if (!placed[static_cast<size_t>(p)]) {
        placed[static_cast<size_t>(p)] = 1;
        u.params.push_back(p);
      }
  }
  for (size_t p = 0; p < m.params.size(); ++p)
    if (!placed[p]) units[0].params.push_back(static_cast<int>(p));  // parameters no layer lists: the root's
  for (auto& u : units) {
    std::sort(u.params.begin(), u.params.end());
    const int orig = u.params.empty() ? 4 : config::dtype_size(m.params[static_cast<size_t>(u.params[0])].dtype);
    u.param_elem = f.param_dtype ? config::dtype_size(*f.param_dtype) : orig;
    // MixedPrecision / MixedPrecisionPolicy: reduce_dtype None with a param_dtype reduces in param_dtype.
    u.grad_elem = f.reduce_dtype ? config::dtype_size(*f.reduce_dtype) : u.param_elem;
    u.kept = u.root || f.keeps_params_after_forward();
    double shard_v2 = 0, grad_shard_v2 = 0;
    for (int pi : u.params) {
      const auto& p = m.params[static_cast<size_t>(pi)];
      const double n = static_cast<double>(p.numel);
      u.numel += n;
      if (p.requires_grad) u.grad_numel += n;
      const double s = dim0_shard_numel(p, shard);
      shard_v2 += s;
      if (p.requires_grad) grad_shard_v2 += s;
    }
    if (f.version == 2) {
      u.shard_numel = shard_v2;
      u.grad_shard_numel = grad_shard_v2;
    } else {
      // FSDP1 flat_param.py FlatParamHandle._get_shard: the flat parameter chunked into `shard`
      // pieces, padded to ceil(numel / shard) each; its gradient is the flat gradient.
      u.shard_numel = std::ceil(u.numel / shard);
      u.grad_shard_numel = u.grad_numel > 0 ? u.shard_numel : 0.0;
    }
  }
  return units;
}

namespace {

// The tensors the CPU optimizer steps (FSDP1: one flat shard per unit, FlatParameter; FSDP2: each
// parameter's padded dim-0 shard, a DTensor's local tensor), in elements.
std::vector<double> offloaded_tensors(const config::Scenario& sc, const std::vector<FsdpUnit>& units, int shard) {
  std::vector<double> out;
  for (const auto& u : units) {
    if (sc.training.fsdp.version == 1) {
      if (u.grad_shard_numel > 0) out.push_back(u.grad_shard_numel);
      continue;
    }
    for (int pi : u.params) {
      const auto& p = sc.model.params[static_cast<size_t>(pi)];
      if (p.requires_grad) out.push_back(dim0_shard_numel(p, shard));
    }
  }
  return out;
}

// Bytes per element of a unit's parameters as the model holds them (the optimizer's copy).
double param_elem_of(const config::Scenario& sc, const FsdpUnit& u) {
  return u.params.empty() ? 4.0 : config::dtype_size(sc.model.params[static_cast<size_t>(u.params[0])].dtype);
}

}  // namespace

bool fsdp_offloads(const config::Scenario& sc) {
  const int world = sc.cluster.world_size();
  return sc.training.fsdp.cpu_offload && world > 1 && fsdp_groups(sc).shard > 1 &&
         sc.training.fsdp.sharding_strategy != ShardingStrategy::NO_SHARD;
}

FsdpOffload fsdp_offload(const config::Scenario& sc) {
  FsdpOffload o;
  if (!fsdp_offloads(sc)) return o;
  const auto units = fsdp_units(sc);
  const auto groups = fsdp_groups(sc);
  const double bw = sc.cluster.gpu.host_bandwidth;
  const int micro = std::max(1, sc.training.gradient_accumulation_steps);
  const int forward_copies = sc.training.fsdp.keeps_params_between_micro_steps(false) ? 1 : micro;
  for (const auto& u : units) {
    if (u.shard_numel <= 0) continue;
    const double elem = param_elem_of(sc, u);
    // Per micro-step the forward's unshard (not after the first micro-step when the units stay
    // unsharded between micro-steps: FSDP2 reshard_after_backward false, FSDP1 SHARD_GRAD_OP under
    // no_sync), and the backward's unless the unit is kept or holds its post-forward shard on the
    // GPU (FSDP2 reshard_after_forward N: the backward gathers that instead). With several
    // micro-steps offload runs under no_sync only (the scenario check refuses the rest).
    const int copies = forward_copies + (!u.kept && groups.post_forward == 0 ? micro : 0);
    o.h2d_copies += copies;
    o.h2d_bytes += copies * u.shard_numel * elem;
    o.d2h_bytes += u.grad_shard_numel * elem;
    // Pinned shard and gradient (FSDP1 _init_param_attributes: _local_shard.pin_memory(), _cpu_grad
    // pinned; FSDP2 CPUOffloadPolicy pin_memory), the optimizer state beside them.
    o.host_bytes += (u.shard_numel + u.grad_shard_numel) * elem +
                    u.grad_shard_numel * memory::optimizer_state_bytes_per_element(
                                             sc.training.optimizer, sc.training.sgd_momentum, static_cast<int>(elem));
  }
  o.h2d_s = bw > 0 ? o.h2d_bytes / bw : 0.0;
  o.d2h_s = bw > 0 ? o.d2h_bytes / bw : 0.0;
  const auto tensors = offloaded_tensors(sc, units, groups.shard);
  const auto cpu = gpu::cpu_optimizer_step(sc.training, tensors);
  o.cpu_step_s = cpu.seconds;
  o.cpu_step_low_s = (1 - gpu::kCpuCoreSpread) * gpu::cpu_optimizer_step(sc.training, tensors, 0.0).seconds;
  o.cpu_step_high_s =
      (1 + gpu::kCpuCoreSpread) * gpu::cpu_optimizer_step(sc.training, tensors, gpu::kCpuPageFaultSecondsHere).seconds;
  o.cpu_step_what = cpu.what;
  return o;
}

namespace {

class FsdpBuilder : ProgramWriter {
 public:
  FsdpBuilder(const config::Scenario& sc, const gpu::ComputeProfile& profile, const ddp::StepPlan& steps, int ranks)
      : sc_(sc),
        f_(sc.training.fsdp),
        profile_(profile),
        steps_(steps),
        units_(fsdp_units(sc)),
        groups_(fsdp_groups(sc)) {
    p_.world_size = sc.cluster.world_size();
    p_.ranks = ranks;
    comm_ = p_.world_size > 1;
    // HYBRID_SHARD with one GPU per node shards nothing: it is NO_SHARD (an all-reduce over all).
    no_shard_ = f_.sharding_strategy == ShardingStrategy::NO_SHARD || groups_.shard <= 1;
    hybrid_ = f_.sharding_strategy == ShardingStrategy::HYBRID_SHARD && groups_.replica > 1 && !no_shard_;
    sharded_ = comm_ && !no_shard_ && groups_.shard > 1;
    offload_ = fsdp_offloads(sc);
    if (offload_) offload_info_ = fsdp_offload(sc);
    unit_of_.assign(sc.model.layers.size(), 0);
    for (size_t u = 0; u < units_.size(); ++u)
      for (int l : units_[u].layers) unit_of_[static_cast<size_t>(l)] = static_cast<int>(u);
    recompute_ = recompute_kernels(sc, profile);
  }

  // Kernels a checkpointed block reruns before its backward, at the block's last layer (the first
  // whose backward runs): its forward (full, selective_block), or its forward's memory-bound layers
  // (selective_op: matmul outputs are kept, the rest recomputed).
  static std::vector<gpu::Kernel> recompute_kernels(const config::Scenario& sc, const gpu::ComputeProfile& profile) {
    std::vector<gpu::Kernel> out(sc.model.layers.size());
    const auto blocks = model_blocks(sc.model);
    const auto ck = checkpointed_blocks(sc.training, blocks.size());
    const bool op = sc.training.activation_checkpointing == config::ActivationCheckpointing::SELECTIVE_OP;
    for (size_t b = 0; b < blocks.size(); ++b) {
      if (!ck[b]) continue;
      // One sum of the block's shapes (gpu::ShapeSum), not a pairwise fold: each partial sum
      // would be interned (gpu::intern_waves) and kept for the process's life.
      gpu::Kernel k;
      gpu::ShapeSum shapes;
      for (int l : blocks[b].layers) {
        const auto type = sc.model.layers[static_cast<size_t>(l)].type;
        if (op && (type == config::LayerType::LINEAR || type == config::LayerType::MATMUL ||
                   type == config::LayerType::CONV2D))
          continue;
        const gpu::Kernel& f = profile.forward[static_cast<size_t>(l)];
        k.seconds += f.seconds;
        shapes.add(f.shape);
      }
      k.shape = shapes.shape();
      out[static_cast<size_t>(blocks[b].layers.back())] = k;
    }
    return out;
  }

  Plan build() {
    p_.streams.push_back({StreamKind::COMPUTE, "compute stream", -1, 0});
    if (comm_) {
      const bool node_group = !no_shard_ && hybrid_;  // HYBRID_SHARD: the shard group is one node's GPUs
      p_.groups.push_back({no_shard_ ? "fsdp world" : "fsdp shard group", no_shard_ ? p_.world_size : groups_.shard,
                           node_group ? 1 : 0, node_group ? groups_.shard : 0});
      p_.streams.push_back({StreamKind::COLLECTIVE,
                            no_shard_ ? "nccl stream (all-reduce)" : "nccl stream (shard group)", 0, 0, -1,
                            sc_.streams.comm_workers});
      // FSDP2 reshard_after_forward N: the post-forward group of N consecutive ranks (one node's N
      // GPUs, or N / gpus_per_node whole nodes), which the backward all-gathers over.
      const int k = groups_.post_forward, g = sc_.cluster.gpus_per_node;
      if (!no_shard_ && k > 0) {
        pf_group_ = static_cast<int>(p_.groups.size());
        p_.groups.push_back({"fsdp post-forward group", k, k <= g ? 1 : k / g, k <= g ? k : g});
      }
      if (hybrid_) {
        p_.groups.push_back({"fsdp replica group", groups_.replica, groups_.replica, 1});
        p_.streams.push_back(
            {StreamKind::COLLECTIVE, "nccl stream (replica group)", 1, 0, -1, sc_.streams.comm_workers});
      }
    }
    p_.factor = steps_.factor;
    p_.report_iteration = steps_.report_iteration;
    p_.first_steady_report = steps_.has_iteration1 ? 1 : 0;
    p_.tasks.reserve(steps_.steps.size() * (16 + 3 * sc_.model.layers.size() + 8 * units_.size()));
    for (size_t si = 0; si < steps_.steps.size(); ++si) micro_step(si);
    return std::move(p_);
  }

 private:
  int wait(std::vector<int> after, Slot slot, int unit = -1) {
    const int i = task(TaskKind::WAIT, "");
    Task& t = p_.tasks[static_cast<size_t>(i)];
    t.after = std::move(after);
    t.slot = slot;
    t.bucket = unit;
    return i;
  }
  gpu::Kernel copy(double bytes) const {
    return gpu::roofline_kernel(0, bytes, profile_.peak_flops, sc_.cluster.gpu.hbm_bandwidth, sc_.compute);
  }
  // A copy over the GPU's host link (cudaMemcpyAsync from or to pinned memory: a copy engine, no SMs).
  gpu::Kernel host_copy(double bytes) const {
    gpu::Kernel k;
    const double bw = sc_.cluster.gpu.host_bandwidth;
    k.seconds = bw > 0 ? bytes / bw : 0.0;
    return k;
  }
  static CommOp op(OpKind kind, std::string name, double bytes) {
    CommOp o;
    o.kind = kind;
    o.name = std::move(name);
    o.bytes = bytes;
    return o;
  }
  static CommOp kernel_op(std::string name, const gpu::Kernel& k) {
    CommOp o;
    o.kind = OpKind::KERNEL;
    o.name = std::move(name);
    o.kernel = k;
    return o;
  }
  int job(int stream, std::string label, std::vector<CommOp> chain, JobRole role, int unit) {
    // Kernels of zero time are left out of the chain.
    chain.erase(std::remove_if(chain.begin(), chain.end(),
                               [](const CommOp& o) { return o.kind == OpKind::KERNEL && o.kernel.seconds <= 0; }),
                chain.end());
    const int i = task(TaskKind::COLLECTIVE, std::move(label));
    Task& t = p_.tasks[static_cast<size_t>(i)];
    t.stream = stream;
    t.issuer = 0;
    t.chain = std::move(chain);
    t.role = role;
    t.record = records_++;
    t.bucket = unit;
    return i;
  }

  bool gathers(size_t u) const { return sharded_ && units_[u].shard_numel > 0; }
  // Unit u holds its post-forward shard (FSDP2 reshard_after_forward N) between its forward and
  // its backward's all-gather.
  bool post_forward(size_t u) const { return backward_ && pf_group_ >= 0 && !units_[u].kept; }
  double post_forward_numel(size_t u) const {
    return units_[u].shard_numel * groups_.shard / static_cast<double>(p_.groups[static_cast<size_t>(pf_group_)].size);
  }
  bool reduces(size_t u) const { return comm_ && units_[u].grad_shard_numel > 0; }
  double orig_elem(size_t u) const { return param_elem_of(sc_, units_[u]); }

  // Issues unit u's all-gather on the shard group's stream (FSDP1 _unshard / FSDP2 foreach_all_gather).
  void issue_allgather(size_t u) {
    if (!gathers(u) || ag_[u] >= 0 || warm_[u]) return;
    const FsdpUnit& un = units_[u];
    std::vector<CommOp> chain;
    if (post_forward(u)) {
      // FSDPParamGroup.unshard from SHARDED_POST_FORWARD: the post-forward shard (param_dtype)
      // copied in and all-gathered over the post-forward group.
      const double pf = post_forward_numel(u) * un.param_elem;
      chain.push_back(kernel_op("all-gather copy-in", copy(2.0 * pf)));
      CommOp ag = op(OpKind::ALLGATHER, "all-gather (post-forward group)", pf);
      ag.group = pf_group_;
      chain.push_back(std::move(ag));
      ag_[u] = job(1, "all-gather " + un.name, std::move(chain), JobRole::UNIT_ALLGATHER, static_cast<int>(u));
      return;
    }
    const bool cast = un.param_elem != orig_elem(u);
    // CPU offload: the shard comes from pinned host memory first (fsdp_offload above).
    if (offload_) chain.push_back(kernel_op("shard to GPU", host_copy(un.shard_numel * orig_elem(u))));
    if (f_.version == 2 && offload_ && cast) {
      // Offloaded parameters leave _get_param_all_gather_inputs' foreach fast path
      // (use_foreach_copy is false with offload_to_cpu): FSDPParam.all_gather_inputs casts each
      // copied shard on its own (_to_dtype_if_needed), then all_gather_copy_in copies the casts.
      chain.push_back(kernel_op("cast shard to param_dtype", copy(un.shard_numel * (orig_elem(u) + un.param_elem))));
      chain.push_back(kernel_op("all-gather copy-in", copy(2.0 * un.shard_numel * un.param_elem)));
    } else if (f_.version == 2)
      // foreach_all_gather_copy_in: the shards (cast to param_dtype) copied into one input buffer.
      chain.push_back(kernel_op("all-gather copy-in", copy(un.shard_numel * (orig_elem(u) + un.param_elem))));
    else if (cast)
      // FlatParamHandle._use_low_precision_shard: the shard cast to param_dtype (pre-unshard stream).
      chain.push_back(kernel_op("cast shard to param_dtype", copy(un.shard_numel * (orig_elem(u) + un.param_elem))));
    chain.push_back(op(OpKind::ALLGATHER, "all-gather", un.allgather_bytes()));
    ag_[u] = job(1, "all-gather " + un.name, std::move(chain), JobRole::UNIT_ALLGATHER, static_cast<int>(u));
  }

  // Unit u's all-gather is needed: wait for it; FSDP2 copies the output out into the parameters
  // (foreach_all_gather_copy_out, on the compute stream).
  void use_allgather(size_t u) {
    if (ag_[u] < 0) return;
    wait({ag_[u]}, Slot::ALLGATHER_WAIT, static_cast<int>(u));
    const FsdpUnit& un = units_[u];
    if (f_.version == 2)
      // Slot NONE: a COPY slot is DDP's gradient copies (ddp_overhead_s); this is FSDP's own kernel.
      kernel(copy(2.0 * un.shard_numel * groups_.shard * un.param_elem), "all-gather copy-out " + un.name, "fsdp",
             Slot::NONE);
  }

  // The gradient reduction of unit u after its backward (post-backward hook).
  void issue_reduce(size_t u) {
    if (!reduces(u)) return;
    const FsdpUnit& un = units_[u];
    const int s = groups_.shard;
    if (no_shard_) {
      // FSDP1 _runtime_utils.py _reduce_grad_no_shard: all_reduce of the flat gradient.
      const int j = job(1, "all-reduce " + un.name, {op(OpKind::ALLREDUCE, "all-reduce", un.shard_grad_bytes())},
                        JobRole::UNIT_REDUCE, static_cast<int>(u));
      reduces_.push_back(j);
      return;
    }
    std::vector<CommOp> chain;
    const double padded = un.grad_shard_numel * s;
    if (f_.version == 2) {
      // FSDPParamGroup.post_backward: the compute stream first waits for the previous unit's
      // reduce-scatter (comm_ctx.reduce_scatter_state's event: its input is freed then), then
      // foreach_reduce runs foreach_reduce_scatter_copy_in -- the gradients (param_dtype) into one
      // reduce_dtype buffer -- on the compute stream, and the reduce-scatter stream waits for it
      // (torch 2.4-2.5 ran the copy-in on the reduce-scatter stream and made the compute stream
      // wait for it: the same order).
      if (last_rs_ >= 0) wait({last_rs_}, Slot::REDUCE_WAIT, last_rs_unit_);
      kernel(copy(padded * (un.param_elem + un.grad_elem)), "reduce-scatter copy-in " + un.name, "fsdp", Slot::NONE);
    } else
      chain.push_back(kernel_op("pre-divide", copy(2.0 * padded * un.grad_elem)));  // _div_if_needed
    chain.push_back(op(OpKind::REDUCE_SCATTER, "reduce-scatter", un.reduce_scatter_bytes(s)));
    // The divide (FSDP1 post-divide, FSDP2 _div_if_needed) and the copy into the sharded gradient.
    const gpu::Kernel post = copy(2.0 * un.shard_grad_bytes());
    // CPU offload: the sharded gradient, in the parameters' dtype, to its pinned host buffer on the
    // stream that reduced it (after the replica all-reduce under HYBRID_SHARD).
    const gpu::Kernel to_host = offload_ ? host_copy(un.grad_shard_numel * orig_elem(u)) : gpu::Kernel{};
    if (!hybrid_) chain.push_back(kernel_op("post-divide, copy-out", post));
    if (!hybrid_ && offload_) chain.push_back(kernel_op("gradient to host", to_host));
    const int rs = job(1, "reduce-scatter " + un.name, std::move(chain), JobRole::UNIT_REDUCE, static_cast<int>(u));
    last_rs_ = rs;
    last_rs_unit_ = static_cast<int>(u);
    // FSDP1: the reduce-scatter follows the previous unit's all-reduce on the same post-backward
    // stream. FSDP2 runs the all-reduce on its own stream (FSDPCommContext.all_reduce_stream: "Run
    // the HSDP all-reduces concurrently with all-gather/reduce-scatter"), which waits for the
    // reduce-scatter; the next reduce-scatter does not wait for it.
    if (last_allreduce_ >= 0 && f_.version == 1) p_.tasks[static_cast<size_t>(rs)].after.push_back(last_allreduce_);
    if (!hybrid_) {
      reduces_.push_back(rs);
      return;
    }
    const int ar = job(2, "all-reduce " + un.name,
                       {op(OpKind::ALLREDUCE, "all-reduce across replicas", un.shard_grad_bytes()),
                        kernel_op("post-divide, copy-out", post), kernel_op("gradient to host", to_host)},
                       JobRole::UNIT_REPLICA_ALLREDUCE, static_cast<int>(u));
    p_.tasks[static_cast<size_t>(ar)].after.push_back(rs);
    last_allreduce_ = ar;
    reduces_.push_back(rs);
    reduces_.push_back(ar);
  }

  // FSDP1's rate limiter (_limits.py _FreeEventQueue, max 2 in flight): an all-gather issued while
  // two free events are queued first synchronizes on the oldest, so it starts no earlier than that
  // unit's free. Returns the anchor (program point) the issue moves to.
  int limited_issue(std::deque<int>& queue, int& cpu) {
    if (f_.version == 1 && f_.limit_all_gathers && queue.size() >= 2) {
      cpu = std::max(cpu, queue.front());
      queue.pop_front();
    }
    return cpu;
  }

  void micro_step(size_t si) {
    si_ = static_cast<int>(si);
    const ddp::MicroStep& st = steps_.steps[si];
    const auto& m = sc_.model;
    const size_t nu = units_.size();
    MicroStep info;
    info.iteration = st.iteration;
    info.report = st.report;
    // Reductions run in this micro-step: the last of an accumulation, or every one without no_sync.
    const bool sync = st.sync || !f_.no_sync;
    info.sync = sync;
    info.last = st.last;
    p_.steps.push_back(info);
    records_ = 0;
    ag_.assign(nu, -1);
    if (warm_.size() != nu) warm_.assign(nu, 0);
    reduces_.clear();
    last_allreduce_ = -1;
    last_rs_ = -1;  // the final callback waited for the last micro-step's reductions
    last_rs_unit_ = -1;

    backward_ = false;
    mark(Mark::STEP_BEGIN);
    kernel(profile_.h2d, "input to GPU", "data", Slot::H2D);
    mark(Mark::FORWARD_BEGIN);

    // Forward order of units: the root first (its pre-forward runs before any layer), then as
    // their first layers come.
    std::vector<size_t> fwd{0};
    for (size_t l = 0; l < m.layers.size(); ++l) {
      const size_t u = static_cast<size_t>(unit_of_[l]);
      if (std::find(fwd.begin(), fwd.end(), u) == fwd.end()) fwd.push_back(u);
    }
    // Where each forward all-gather is issued (-2: not at all). FSDP1: -1 the forward's start, i after
    // the forward of fwd[i] (its post-forward free).
    std::vector<int> fwd_anchor(nu, -2);
    size_t fwd_left = 0;  // free events still queued after the forward
    if (f_.version == 1) {
      std::deque<int> queue;
      int cpu = -1;
      std::vector<char> issued(nu, 0);
      auto issue = [&](size_t u) {
        if (!gathers(u) || warm_[u] || issued[u]) return;
        issued[u] = 1;
        fwd_anchor[u] = f_.limit_all_gathers ? limited_issue(queue, cpu) : -1;
      };
      for (size_t i = 0; i < fwd.size(); ++i) {
        issue(fwd[i]);
        if (f_.forward_prefetch && i + 1 < fwd.size()) issue(fwd[i + 1]);
        if (gathers(fwd[i]) && !units_[fwd[i]].kept) queue.push_back(static_cast<int>(i));
      }
      fwd_left = queue.size();
    }
    // FSDP2, in the CPU's order (it runs ahead of the GPU): -1 at the forward's start, p after the
    // copy-out of fwd[p]. FSDPParamGroup.pre_forward of a
    // unit unshards it (unless prefetched), then wait_for_unshard makes the all-gather streams wait
    // for the copy-out of the unit before it (comm_ctx.all_gather_state: the all-gather output
    // freed there) and saves its own; the all-gather copy-in stream does not wait for the compute
    // stream otherwise (foreach_all_gather). So an all-gather issued at unit u's pre-forward (its
    // own, or FSDPState._pre_forward's explicit prefetch of the next num_to_forward_prefetch units)
    // waits for the copy-out of the unit gathered before u: with the implicit prefetch the
    // all-gathers run up to two units ahead of the compute.
    if (f_.version == 2) {
      const int n = f_.num_to_forward_prefetch;
      int saved = -1, last_wait = -1;
      for (size_t p = 0; p < fwd.size(); ++p) {
        const size_t u = fwd[p];
        if (!gathers(u) || warm_[u]) continue;
        if (fwd_anchor[u] == -2) fwd_anchor[u] = last_wait;
        if (saved >= 0) last_wait = saved;
        saved = static_cast<int>(p);
        if (n > 0 && !units_[u].root)
          for (size_t q = p + 1; q < fwd.size() && q <= p + static_cast<size_t>(n); ++q)
            if (gathers(fwd[q]) && !warm_[fwd[q]] && fwd_anchor[fwd[q]] == -2) fwd_anchor[fwd[q]] = last_wait;
      }
    }
    auto issue_at_anchor = [&](int anchor) {
      for (size_t u : fwd)
        if (fwd_anchor[u] == anchor) issue_allgather(u);
    };
    issue_at_anchor(-1);
    std::vector<char> entered(nu, 0);
    auto enter_forward = [&](size_t u) {
      entered[u] = 1;
      issue_allgather(u);  // issued already (at its anchor), unless it gathers nothing
      use_allgather(u);
      // FSDP2: the all-gathers that waited for this copy-out.
      if (f_.version == 2) issue_at_anchor(static_cast<int>(std::find(fwd.begin(), fwd.end(), u) - fwd.begin()));
    };
    auto leave_forward = [&](size_t u) {
      if (units_[u].root) return;
      if (pf_group_ >= 0 && gathers(u) && !units_[u].kept)
        // FSDPParam.to_sharded_post_forward: its slice of the unsharded parameter cloned.
        kernel(copy(2.0 * post_forward_numel(u) * units_[u].param_elem), "post-forward reshard " + units_[u].name,
               "fsdp", Slot::NONE);
      if (f_.version == 1) issue_at_anchor(static_cast<int>(std::find(fwd.begin(), fwd.end(), u) - fwd.begin()));
    };
    enter_forward(0);
    size_t cur = 0;
    for (size_t l = 0; l < m.layers.size(); ++l) {
      const size_t u = static_cast<size_t>(unit_of_[l]);
      if (u != cur) {
        leave_forward(cur);
        if (!entered[u]) enter_forward(u);
        cur = u;
      }
      kernel(profile_.forward[l], m.layers[l].name, "forward");
    }
    leave_forward(cur);
    mark(Mark::FORWARD_END);
    // Units that were unsharded from the last micro-step have been used (and resharded after the
    // forward unless kept): the backward gathers as in any micro-step.
    warm_.assign(nu, 0);

    // Backward: the units in the order their backward runs (the root first: its output layer).
    mark(Mark::BACKWARD_BEGIN);
    backward_ = true;
    std::vector<size_t> bwd{0};
    for (size_t l = m.layers.size(); l-- > 0;) {
      const size_t u = static_cast<size_t>(unit_of_[l]);
      if (std::find(bwd.begin(), bwd.end(), u) == bwd.end()) bwd.push_back(u);
    }
    std::vector<char> need(nu, 0);  // all-gathered again for the backward
    for (size_t u = 0; u < nu; ++u) {
      need[u] = gathers(u) && !units_[u].kept;
      ag_[u] = -1;
    }
    auto next_needing = [&](size_t k) -> int {
      for (size_t j = k + 1; j < bwd.size(); ++j)
        if (need[bwd[j]]) return static_cast<int>(bwd[j]);
      return -1;
    };
    // FSDP1: each all-gather's anchor (-1 the backward's start, k after the backward of bwd[k])
    // and its place in the CPU's order (seq), through the rate limiter, whose queue still holds the
    // forward's last free events (in the past by now). The stream runs its jobs in issue order, so
    // an all-gather the CPU issues after a reduce-scatter is placed after it.
    std::vector<int> bwd_anchor(nu, -2), seq_of(nu, 0), rs_seq(bwd.size(), 1 << 30);
    if (f_.version == 1) {
      std::deque<int> queue;
      for (size_t i = 0; i < fwd_left; ++i) queue.push_back(-1);
      int cpu = -1, fifo = -1, seq = 0;
      auto issue = [&](int u) {
        if (u < 0 || bwd_anchor[static_cast<size_t>(u)] != -2 || !need[static_cast<size_t>(u)]) return;
        bwd_anchor[static_cast<size_t>(u)] = std::max(limited_issue(queue, cpu), fifo);
        seq_of[static_cast<size_t>(u)] = seq++;
      };
      for (size_t k = 0; k < bwd.size(); ++k) {
        issue(static_cast<int>(bwd[k]));  // _pre_backward_hook: _unshard
        if (f_.backward_prefetch == config::BackwardPrefetch::BACKWARD_PRE) issue(next_needing(k));
        // _post_backward_hook: _post_backward_reshard (the free event, then BACKWARD_POST's
        // prefetch), then _reduce_grad.
        if (gathers(bwd[k]) && !units_[bwd[k]].root) queue.push_back(static_cast<int>(k));
        if (f_.backward_prefetch == config::BackwardPrefetch::BACKWARD_POST) issue(next_needing(k));
        if (!units_[bwd[k]].root && reduces(bwd[k]) && sync) {
          fifo = std::max(fifo, static_cast<int>(k));
          rs_seq[k] = seq++;
        }
      }
    }
    auto bwd_issue_at = [&](int anchor, bool before_rs) {
      if (f_.version != 1) return;
      std::vector<size_t> list;
      for (size_t u = 0; u < nu; ++u)
        if (need[u] && bwd_anchor[u] == anchor &&
            (anchor < 0 || (seq_of[u] < rs_seq[static_cast<size_t>(anchor)]) == before_rs))
          list.push_back(u);
      std::sort(list.begin(), list.end(), [&](size_t a, size_t b) { return seq_of[a] < seq_of[b]; });
      for (size_t u : list) issue_allgather(u);
    };
    bwd_issue_at(-1, true);
    std::vector<char> bentered(nu, 0), left(bwd.size(), 0);
    auto enter_backward = [&](size_t k) {
      const size_t u = bwd[k];
      bentered[u] = 1;
      if (need[u]) issue_allgather(u);  // unless prefetched (FSDP1: issued at its anchor already)
      use_allgather(u);
      if (f_.version == 2 && f_.num_to_backward_prefetch > 0 && !units_[u].root) {
        // FSDPState._pre_backward with explicit targets (no implicit prefetch then): the next
        // num_to_backward_prefetch units in backward order, after this unit's copy-out (in the
        // backward, wait_for_unshard makes the all-gather streams wait for it at once).
        for (size_t j = k + 1; j < bwd.size() && j <= k + static_cast<size_t>(f_.num_to_backward_prefetch); ++j)
          if (need[bwd[j]]) issue_allgather(bwd[j]);
      } else if (f_.version == 2) {
        // FSDPParamGroup.pre_backward -> _backward_prefetch: the next unit in backward order.
        const int n = next_needing(k);
        if (n >= 0) issue_allgather(static_cast<size_t>(n));
      }
    };
    auto leave_backward = [&](size_t k) {
      left[k] = 1;
      bwd_issue_at(static_cast<int>(k), true);
      if (!units_[bwd[k]].root && sync) issue_reduce(bwd[k]);  // the root's reduction runs at the end
      bwd_issue_at(static_cast<int>(k), false);
    };
    enter_backward(0);
    size_t cur_k = 0;
    for (size_t l = m.layers.size(); l-- > 0;) {
      const size_t u = static_cast<size_t>(unit_of_[l]);
      if (u != bwd[cur_k]) {
        const size_t k = static_cast<size_t>(std::find(bwd.begin(), bwd.end(), u) - bwd.begin());
        if (!left[cur_k]) leave_backward(cur_k);
        if (!bentered[u]) enter_backward(k);
        cur_k = k;
      }
      kernel(recompute_[l], "recompute up to " + m.layers[l].name + " (checkpoint)", "recompute");
      kernel(profile_.backward[l], m.layers[l].name, "backward");
    }
    if (!left[cur_k]) leave_backward(cur_k);
    if (sync) issue_reduce(0);
    mark(Mark::BACKWARD_END);
    // Parameters left unsharded for the next micro-step of this optimizer step (FSDP2
    // reshard_after_backward false; FSDP1 SHARD_GRAD_OP under no_sync()): its forward gathers nothing.
    if (!st.last && f_.keeps_params_between_micro_steps(sync))
      for (size_t u = 0; u < nu; ++u) warm_[u] = gathers(u) ? 1 : 0;
    // FSDP1 _post_backward_final_callback / FSDP2 _root_post_backward_final_callback: the compute
    // stream waits for the reductions.
    if (!reduces_.empty()) wait(reduces_, Slot::FINALIZE_WAIT);

    if (st.last) {
      // The optimizer and its companions run over the local shard only.
      double total = 0, local = 0;
      for (const auto& un : units_) {
        total += un.numel;
        local += no_shard_ || !comm_ ? un.numel : un.shard_numel;
      }
      const double frac = total > 0 ? std::min(1.0, local / total) : 1.0;
      mark(Mark::OPTIMIZER_BEGIN);
      if (offload_) {
        // The host waited for the gradients' copies (the wait above), then steps the shards on the
        // CPU; the GPU has nothing queued until the next step's first copy of an updated shard.
        // Host time (no GPU work): the compute stream issues nothing until it ends.
        const int i =
            task(TaskKind::HOST, "optimizer step on the CPU (" + offload_info_.cpu_step_what + ")", "optimizer");
        p_.tasks[static_cast<size_t>(i)].seconds = offload_info_.cpu_step_s;
        mark(Mark::OPTIMIZER_END);
        mark(Mark::STEP_END);
        p_.steps.back().records = records_;
        return;
      }
      kernel(scaled_by(profile_.grad_unscale, frac), "GradScaler unscale_", "optimizer");
      kernel(scaled_by(profile_.clip, frac), "clip_grad_norm_", "optimizer");
      kernel(scaled_by(profile_.optimizer, frac), "optimizer step on the local shard (" + sc_.training.optimizer + ")",
             "optimizer");
      kernel(scaled_by(profile_.zero_grad, frac), "zero_grad", "optimizer");
      mark(Mark::OPTIMIZER_END);
    }
    mark(Mark::STEP_END);
    p_.steps.back().records = records_;
  }

  const config::Scenario& sc_;
  const config::TrainingSettings::Fsdp& f_;
  const gpu::ComputeProfile& profile_;
  const ddp::StepPlan& steps_;
  std::vector<FsdpUnit> units_;
  FsdpGroups groups_;
  bool comm_ = false, no_shard_ = false, hybrid_ = false, sharded_ = false, offload_ = false;
  FsdpOffload offload_info_;  // its totals and CPU step (fsdp_offload), when offloading
  int pf_group_ = -1;         // FSDP2 reshard_after_forward N: the post-forward group (index into p_.groups)
  bool backward_ = false;     // the micro-step's backward has begun
  int records_ = 0, last_allreduce_ = -1;
  int last_rs_ = -1, last_rs_unit_ = -1;  // FSDP2: the last reduce-scatter job issued, and its unit
  std::vector<int> unit_of_, ag_, reduces_;
  std::vector<char> warm_;  // units unsharded at the forward's start (kept by the previous micro-step)
  std::vector<gpu::Kernel> recompute_;
};

}  // namespace

std::vector<gpu::Kernel> recompute_kernels(const config::Scenario& sc, const gpu::ComputeProfile& profile) {
  return FsdpBuilder::recompute_kernels(sc, profile);
}

Plan build_fsdp(const config::Scenario& scenario, const gpu::ComputeProfile& profile, const ddp::StepPlan& steps,
                int ranks) {
  return FsdpBuilder(scenario, profile, steps, ranks).build();
}

}  // namespace ddpsim::plan
