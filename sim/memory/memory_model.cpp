#include "memory/memory_model.hpp"

#include <algorithm>
#include <queue>

#include "ddp/bucketizer.hpp"
#include "gpu/kernel_model.hpp"
#include "plan/dp_builder.hpp"
#include "plan/fsdp_builder.hpp"

namespace ddpsim::memory {

double MemoryEstimate::total() const {
  return parameters + buffers + gradients + buckets + optimizer_state + optimizer_temporaries + activations +
         unsharded_params + unsharded_grads + allowance();
}

std::pair<std::string, double> MemoryEstimate::largest_term() const {
  const std::pair<const char*, double> terms[] = {{"parameters", parameters},
                                                  {"buffers", buffers},
                                                  {"gradients", gradients},
                                                  {"buckets", buckets},
                                                  {"optimizer_state", optimizer_state},
                                                  {"optimizer_temporaries", optimizer_temporaries},
                                                  {"activations", activations},
                                                  {"unsharded_params", unsharded_params},
                                                  {"unsharded_grads", unsharded_grads},
                                                  {"allowance", allowance()}};
  std::pair<std::string, double> best{"parameters", -1};
  for (const auto& [name, v] : terms)
    if (v > best.second) best = {name, v};
  return best;
}

double optimizer_state_bytes_per_element(const std::string& optimizer, bool sgd_momentum, int elem_size) {
  // torch/optim/adam.py, adamw.py: state "exp_avg", "exp_avg_sq" (zeros_like the parameter), and a
  // scalar "step" per parameter (left out); sgd.py: "momentum_buffer" only when momentum != 0.
  if (optimizer == "adam" || optimizer == "adamw") return 2.0 * elem_size;
  return sgd_momentum ? 1.0 * elem_size : 0.0;
}

std::vector<std::vector<int>> zero_partition(const config::ModelSpec& m, int world) {
  const size_t n = m.params.size();
  std::vector<int> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
  // sorted(params, key=numel, reverse=True) is stable: equal sizes keep their order.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return m.params[static_cast<size_t>(a)].numel > m.params[static_cast<size_t>(b)].numel;
  });
  const size_t ranks = std::min(n, static_cast<size_t>(std::max(world, 1)));
  std::vector<std::vector<int>> out(ranks);
  // _get_min_index: the first rank with the strictly smallest size. Empty ranks come in rank
  // order, so only min(world, n) ranks ever receive a parameter.
  using Entry = std::pair<long long, size_t>;  // (numel so far, rank): the heap's least is the pick
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (size_t r = 0; r < ranks; ++r) heap.push({0, r});
  for (int p : order) {
    auto [size, r] = heap.top();
    heap.pop();
    out[r].push_back(p);
    heap.push({size + m.params[static_cast<size_t>(p)].numel, r});
  }
  return out;
}

namespace {

// torch.nn.DataParallel (torch/nn/parallel/data_parallel.py, forward: gather(outputs,
// self.output_device)) concatenates the replicas' outputs on GPU 0, where the training loop's loss
// then runs over the whole batch. GPU 0 is the GPU at the peak (it also holds the module's
// gradients and the optimizer state; the replicas hold neither): from the end of the forward to the
// start of the backward it keeps the gathered output (G x batch x one sample's output, the bytes
// the Gather copies: plan::dp_output_bytes_per_sample) and the loss's saves for the other G - 1
// chunks (`loss_saved` is one chunk's), counted with the last layer's saves.
void add_data_parallel_gather(const config::Scenario& sc, double loss_saved, std::vector<double>& saved,
                              std::string* rule) {
  const int g = sc.cluster.gpus_per_node;
  if (sc.training.wrapper != config::Wrapper::DATA_PARALLEL || g < 2 || saved.empty()) return;
  const double gathered = plan::dp_output_bytes_per_sample(sc) * sc.training.batch_size * g;
  saved.back() += gathered + (g - 1) * loss_saved;
  if (rule)
    *rule += "; DataParallel: GPU 0 (the peak) also holds the output gathered from the " + std::to_string(g) + " GPUs" +
             (loss_saved > 0 ? std::string(" and the loss's saves over the whole batch") : std::string());
}

}  // namespace

// The compute model's context (gpu/compute_model.cpp, kernel_model_layers): operand dtypes,
// batch and size ratios, attention backend.
static gpu::KernelContext activation_context(const config::Scenario& sc) {
  const auto& m = sc.model;
  const auto& tr = sc.training;
  gpu::KernelContext c;
  const std::string dt = config::to_string(tr.compute_dtype);
  const auto& gpu = sc.cluster.gpu;
  c.gemm = gpu::device_rates(gpu, dt, 0);
  c.conv = gpu::device_rates(gpu, (dt == "float32" && gpu.peak_flops.count("tf32")) ? "tf32" : dt, 0);
  c.batch_ratio = static_cast<double>(tr.batch_size) / m.batch_size;
  c.act_bytes_factor = config::is_half_precision(tr.compute_dtype) ? 0.5 : 1.0;
  c.bfloat16 = tr.compute_dtype == config::ComputeDtype::BFLOAT16;  // autocast's fp32 list differs
  c.attention = tr.attention;
  const std::optional<int>& want = tr.seq_len ? tr.seq_len : tr.image_size;
  if (want && m.kernel_export_size > 0) c.size_ratio = static_cast<double>(*want) / m.kernel_export_size;
  return c;
}

std::vector<double> activation_bytes_per_layer(const config::Scenario& sc, std::string* rule) {
  const auto& m = sc.model;
  const auto& tr = sc.training;
  const bool half = config::is_half_precision(tr.compute_dtype);
  const double batch_ratio = static_cast<double>(tr.batch_size) / m.batch_size;
  if (!m.has_kernels()) {
    if (rule) *rule = "half of each layer's forward traffic (read + written), x batch / export batch";
    std::vector<double> out;
    for (const auto& l : m.layers) out.push_back(0.5 * l.fwd_bytes * batch_ratio * (half ? 0.5 : 1.0));
    add_data_parallel_gather(sc, 0.0, out, rule);
    return out;
  }
  const gpu::KernelContext c = activation_context(sc);
  if (rule) {
    bool recorded = false;  // the export's `sv` (what autograd saved, each tensor once)
    for (const auto& l : m.layers)
      for (const auto& k : l.kernels) recorded = recorded || k.has_saved;
    *rule =
        std::string(recorded
                        ? "what autograd saved for each forward kernel as the export recorded it (each tensor "
                          "once; dropout a one-byte mask; under half autocast a linear/conv keeps its own half copy)"
                        : "what each forward kernel's backward needs (linear/bmm/conv inputs in the compute "
                          "dtype, memory-bound inputs or results as derivatives.yaml saves them)") +
        ", at the scenario's batch and size" + std::string(tr.attention != "eager" ? "; SDPA: no score matrix" : "");
  }
  auto saved = gpu::layer_saved_bytes(m, c);
  // The loss's log_softmax keeps its float32 result over the logits (gpu::loss_kernels).
  const auto loss = gpu::loss_kernels(m, c, tr.loss);
  if (loss.rows > 0 && !saved.empty()) {
    saved.back() += loss.saved_bytes;
    if (rule) *rule += "; the loss keeps log_softmax's float32 result (rows x classes x 4 B)";
  }
  add_data_parallel_gather(sc, loss.rows > 0 ? loss.saved_bytes : 0.0, saved, rule);
  return saved;
}

ActivationPlan activation_plan(const config::Scenario& sc, std::string* rule) {
  ActivationPlan a;
  a.full = activation_bytes_per_layer(sc, rule);
  a.kept = a.full;
  const auto& m = sc.model;
  a.block.assign(m.layers.size(), -1);
  if (sc.training.activation_checkpointing == config::ActivationCheckpointing::NONE ||
      sc.training.wrapper == config::Wrapper::DATA_PARALLEL)
    return a;
  const auto blocks = plan::model_blocks(m);
  const auto ck = plan::checkpointed_blocks(sc.training, blocks.size());
  a.checkpointed.assign(ck.begin(), ck.end());
  const bool op = sc.training.activation_checkpointing == config::ActivationCheckpointing::SELECTIVE_OP;
  // What a checkpointed block keeps: its input, which its first layer's first op reads (without
  // kernel records, that layer's saves).
  const auto input =
      m.has_kernels() ? gpu::layer_input_bytes(m, activation_context(sc)) : std::vector<double>(m.layers.size(), -1.0);
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (int l : blocks[b].layers) a.block[static_cast<size_t>(l)] = static_cast<int>(b);
    if (!ck[b]) continue;
    for (size_t i = 0; i < blocks[b].layers.size(); ++i) {
      const size_t l = static_cast<size_t>(blocks[b].layers[i]);
      const auto type = m.layers[l].type;
      const bool matmul =
          type == config::LayerType::LINEAR || type == config::LayerType::MATMUL || type == config::LayerType::CONV2D;
      // torch.utils.checkpoint keeps the block's inputs; selective_op keeps the matmul layers' saves.
      a.kept[l] = op ? (matmul ? a.full[l] : 0.0) : (i == 0 ? (input[l] >= 0 ? input[l] : a.full[l]) : 0.0);
    }
  }
  if (rule)
    *rule += "; activation checkpointing \"" + config::to_string(sc.training.activation_checkpointing) +
             "\": checkpointed blocks keep " +
             (op ? "their linear/matmul layers' saves" : "their input (what their first op reads)") +
             " and hold their full activations again while recomputed";
  return a;
}

std::vector<double> activations_before_backward(const ActivationPlan& a) {
  const size_t n = a.kept.size();
  std::vector<double> out(n, 0.0);
  double prefix = 0;
  for (size_t l = 0; l < n; ++l) {
    prefix += a.kept[l];
    out[l] = prefix;
  }
  // Within a checkpointed block, the recompute has rebuilt layers <= l of it.
  double extra = 0;
  for (size_t l = 0; l < n; ++l) {
    const int b = a.block[l];
    if (l > 0 && a.block[l - 1] != b) extra = 0;
    if (b >= 0 && static_cast<size_t>(b) < a.checkpointed.size() && a.checkpointed[static_cast<size_t>(b)]) {
      extra += std::max(0.0, a.full[l] - a.kept[l]);
      out[l] += extra;
    }
  }
  return out;
}

namespace {

// FullyShardedDataParallel / fully_shard on one rank at its peak (plan/fsdp_builder.hpp).
MemoryEstimate estimate_fsdp_memory(const config::Scenario& sc) {
  MemoryEstimate e;
  const auto& m = sc.model;
  const auto& tr = sc.training;
  const auto& f = tr.fsdp;
  e.gpu_memory = sc.cluster.gpu.memory_bytes;
  const int world = sc.cluster.world_size();
  const auto groups = plan::fsdp_groups(sc);
  const bool no_shard = f.sharding_strategy == config::ShardingStrategy::NO_SHARD || world <= 1 || groups.shard <= 1;
  const int shard = no_shard ? 1 : groups.shard;
  e.fsdp_shards = shard;
  const auto units = plan::fsdp_units(sc);
  // CPU offload (plan::fsdp_offload): the shards, their optimizer state and the optimizer step live
  // on the host. FSDP1 keeps each reduced gradient shard on the GPU until the backward ends as well
  // (_post_backward_hook's param._saved_grad_shard, deleted by _finalize_params), FSDP2 drops it
  // once copied (foreach_reduce keeps no reference to the GPU shard).
  const bool offload = plan::fsdp_offloads(sc);
  if (offload) e.host_offload = plan::fsdp_offload(sc).host_bytes;
  std::vector<int> unit_of(m.layers.size(), 0);
  for (size_t u = 0; u < units.size(); ++u)
    for (int l : units[u].layers) unit_of[static_cast<size_t>(l)] = static_cast<int>(u);
  // The local shard, in the parameters' own dtype (the optimizer's fp32 copy).
  double local_numel = 0, local_grad_numel = 0, state = 0, largest_shard = 0;
  std::vector<double> grad_shard_bytes(units.size(), 0.0);
  for (size_t u = 0; u < units.size(); ++u) {
    const auto& un = units[u];
    const double elem = un.params.empty() ? 4.0 : config::dtype_size(m.params[static_cast<size_t>(un.params[0])].dtype);
    const double n = no_shard ? un.numel : un.shard_numel;
    const double g = no_shard ? un.grad_numel : un.grad_shard_numel;
    local_numel += n;
    local_grad_numel += g;
    if (offload) {
      grad_shard_bytes[u] = f.version == 1 ? g * elem : 0.0;
      continue;
    }
    e.parameters += n * elem;
    grad_shard_bytes[u] = g * elem;
    state += g * optimizer_state_bytes_per_element(tr.optimizer, tr.sgd_momentum, static_cast<int>(elem));
    largest_shard = std::max(largest_shard, g * elem);
  }
  for (const auto& b : m.buffers) e.buffers += static_cast<double>(b.numel) * config::dtype_size(b.dtype);
  e.optimizer_state = state;
  e.zero_shards = 1;
  {
    double st = 0;
    for (const auto& p : m.params)
      if (p.requires_grad)
        st += static_cast<double>(p.numel) *
              optimizer_state_bytes_per_element(tr.optimizer, tr.sgd_momentum, config::dtype_size(p.dtype));
    e.optimizer_state_unsharded = st;
  }
  double grad_total = 0;
  for (double g : grad_shard_bytes) grad_total += g;
  double temporaries = 0;
  if ((tr.optimizer == "adam" || tr.optimizer == "adamw") && !offload) {
    if (tr.optimizer_impl == "foreach") temporaries = grad_total;
    if (tr.optimizer_impl == "for_loop") temporaries = largest_shard;
  }

  // Units unsharded at once besides the root (kept from its forward to its backward), as the
  // caching allocator sees them (the CPU runs ahead): FSDP2's implicit prefetch holds two (the
  // current unit and the next's all-gather output); with explicit prefetching of N units, N + 2 in
  // the forward (the current unit, its all-gather output kept in comm_ctx.all_gather_state until
  // the next unit's copy-out, and N prefetched outputs) and N + 1 in the backward (the copy-out
  // frees the output at once), the larger of the two; FSDP1 with limit_all_gathers
  // allows two all-gathers in flight (BACKWARD_PRE: the current and the next unit; BACKWARD_POST
  // and none prefetch after the current unit's gradient computation: one), without it all of
  // them; SHARD_GRAD_OP / reshard_after_forward false keep every unit from the forward on.
  auto unsharded_bytes = [&](const plan::FsdpUnit& un) {
    return no_shard ? 0.0 : un.shard_numel * shard * un.param_elem;
  };
  std::vector<double> ub;
  for (size_t u = 1; u < units.size(); ++u) ub.push_back(unsharded_bytes(units[u]));
  std::sort(ub.rbegin(), ub.rend());
  const size_t explicit_depth =
      std::max(f.num_to_forward_prefetch > 0 ? static_cast<size_t>(f.num_to_forward_prefetch) + 2 : 2,
               f.num_to_backward_prefetch > 0 && !f.keeps_params_after_forward()
                   ? static_cast<size_t>(f.num_to_backward_prefetch) + 1
                   : 2);
  size_t depth = f.version == 2                                                  ? explicit_depth
                 : !f.limit_all_gathers                                          ? ub.size()
                 : f.backward_prefetch == config::BackwardPrefetch::BACKWARD_PRE ? 2
                                                                                 : 1;
  if (f.keeps_params_after_forward()) depth = ub.size();
  depth = std::min(depth, ub.size());
  double in_flight = units.empty() ? 0.0 : unsharded_bytes(units[0]);
  for (size_t i = 0; i < depth; ++i) in_flight += ub[i];
  e.unsharded_units = no_shard ? 0 : static_cast<int>(depth) + 1;
  // Gradient accumulation (training.gradient_accumulation_steps > 1). With no_sync the micro-steps
  // before the last keep each unit's unsharded gradient (FSDP1 no_sync(): _post_backward_hook
  // returns before _reduce_grad, leaving flat_param.grad unsharded in the dtype autograd made, the
  // param_dtype; FSDP2 set_requires_gradient_sync(False): FSDPParam.to_accumulated_grad_if_needed
  // upcasts it to reduce_dtype when that differs) until the last micro-step reduces it. Without
  // no_sync every micro-step reduce-scatters into the shards, so from the second on every sharded
  // gradient exists from the backward's start.
  const bool accumulates = tr.gradient_accumulation_steps > 1;
  const bool keeps_unsharded = accumulates && f.no_sync && !no_shard;
  std::vector<double> accum_bytes(units.size(), 0.0);
  double accum_total = 0;
  if (keeps_unsharded)
    for (size_t u = 0; u < units.size(); ++u) {
      accum_bytes[u] = units[u].grad_shard_numel * shard * (f.version == 2 ? units[u].grad_elem : units[u].param_elem);
      accum_total += accum_bytes[u];
    }
  // The unit in its backward: its unsharded gradient (param_dtype) and, FSDP2, the reduce-scatter
  // input it is copied into (reduce_dtype); FSDP1 reduce-scatters the padded flat gradient itself.
  // Accumulated unsharded gradients are counted in the walk below (the unit's own included): then
  // only FSDP2's reduce-scatter input comes on top.
  double unit_grad = 0;
  if (!no_shard)
    for (const auto& un : units)
      unit_grad =
          std::max(unit_grad, un.grad_shard_numel * shard *
                                  ((keeps_unsharded ? 0 : un.param_elem) + (f.version == 2 ? un.grad_elem : 0)));

  // Parameters kept unsharded between micro-steps (FSDP2 reshard_after_backward false; FSDP1
  // SHARD_GRAD_OP under no_sync()): in every micro-step but the last, a unit stays unsharded once
  // its backward is done, besides the units in flight, until the next micro-step's forward uses
  // (and, FULL_SHARD, reshards) it. Strategies that keep every unit from the forward on count them
  // all in flight already.
  const bool keeps_between = accumulates && !no_shard && !f.keeps_params_after_forward() &&
                             f.keeps_params_between_micro_steps(/*reduced=*/!f.no_sync);
  const ActivationPlan ap = activation_plan(sc, &e.activation_rule);
  for (double k : ap.kept) e.activations_saved += k;
  const auto act = activations_before_backward(ap);
  // Backward, before each layer's backward: the activations still alive, the sharded gradients of
  // the units already reduced (all of them when zero_grad keeps them) and the unit's unsharded one.
  // The units in backward order (the root first: its output layer), for the set unsharded at a
  // layer when units are kept between micro-steps.
  std::vector<int> bwd_order;
  for (size_t l = m.layers.size(); l-- > 0;)
    if (std::find(bwd_order.begin(), bwd_order.end(), unit_of[l]) == bwd_order.end()) bwd_order.push_back(unit_of[l]);
  // FSDP2 reshard_after_forward N: each unit resharded after its forward keeps 1/N of its
  // unsharded parameters (FSDPParam.to_sharded_post_forward) until its backward gathers them.
  const int post_forward_to = no_shard ? 0 : groups.post_forward;
  std::vector<double> post_forward(units.size(), 0.0);
  double post_forward_left = 0;
  if (post_forward_to > 0)
    for (size_t u = 1; u < units.size(); ++u) {
      post_forward[u] = unsharded_bytes(units[u]) / post_forward_to;
      post_forward_left += post_forward[u];
    }
  double bwd_peak = -1, bwd_act = 0, bwd_grads = 0, bwd_unsharded = in_flight;
  int bwd_units = e.unsharded_units;
  std::vector<char> reduced(units.size(), 0);
  double grads_after = 0, accum_done = 0, kept_done = 0;
  int cur = -1, kept_units = 0;
  for (size_t l = m.layers.size(); l-- > 0;) {
    const int u = unit_of[l];
    if (cur >= 0 && u != cur && !reduced[static_cast<size_t>(cur)] && cur != 0) {
      reduced[static_cast<size_t>(cur)] = 1;
      grads_after += grad_shard_bytes[static_cast<size_t>(cur)];
      accum_done += accum_bytes[static_cast<size_t>(cur)];
      if (keeps_between) {
        kept_done += unsharded_bytes(units[static_cast<size_t>(cur)]);
        ++kept_units;
      }
    }
    cur = u;
    // Post-forward shards of the units whose backward has not all-gathered them yet.
    if (post_forward_to > 0 && post_forward[static_cast<size_t>(u)] > 0) {
      post_forward_left -= post_forward[static_cast<size_t>(u)];
      post_forward[static_cast<size_t>(u)] = 0;
    }
    // Every sharded gradient exists all along when zero_grad keeps them, or when each micro-step
    // reduces into them (from the second micro-step on).
    // (Offloaded: optimizer.grad is the host copy; the GPU shards are new each backward.)
    const bool all_shards = !offload && (!tr.zero_grad_set_to_none || (accumulates && !keeps_unsharded));
    double g = all_shards ? grad_total : grads_after;
    double earlier = g;  // a micro-step before the last
    if (keeps_unsharded) {
      // The last micro-step: the units not yet reduced still hold their accumulated unsharded
      // gradient (the current one too). The first: those already through their backward hold
      // theirs. A middle one (3 or more micro-steps): every unit holds one all along.
      earlier = tr.gradient_accumulation_steps > 2 ? accum_total : accum_done;
      g += accum_total - accum_done;
    }
    // Unsharded in a micro-step before the last when units are kept between them: the root, the
    // units done, the current one and the one FSDP2 prefetches next; otherwise the bound above.
    double earlier_unsharded = in_flight;
    int earlier_units = e.unsharded_units;
    if (keeps_between) {
      earlier_unsharded = unsharded_bytes(units[0]) + kept_done;
      earlier_units = 1 + kept_units;
      auto it = std::find(bwd_order.begin(), bwd_order.end(), u);
      for (int k = 0; k < 2 && it != bwd_order.end(); ++k, ++it)
        if (*it != 0 && !reduced[static_cast<size_t>(*it)]) {
          earlier_unsharded += unsharded_bytes(units[static_cast<size_t>(*it)]);
          ++earlier_units;
        }
    }
    earlier_unsharded += post_forward_left;
    const double v_last = act[l] + g + in_flight + post_forward_left;
    const double v_earlier = act[l] + earlier + earlier_unsharded;
    const bool earlier_wins = accumulates && v_earlier > v_last;
    const double v = earlier_wins ? v_earlier : v_last;
    if (v > bwd_peak) {
      bwd_peak = v;
      bwd_act = act[l];
      bwd_grads = earlier_wins ? earlier : g;
      bwd_unsharded = earlier_wins ? earlier_unsharded : in_flight + post_forward_left;
      bwd_units = earlier_wins ? earlier_units : e.unsharded_units;
    }
  }
  if (m.layers.empty()) bwd_peak = in_flight;
  bwd_peak += unit_grad;
  // The forward's start in a micro-step after the first when units are kept between them: every
  // unit unsharded, beside every accumulated gradient (the input batch's activations aside).
  double fwd_peak = 0, fwd_grads = 0, all_unsharded = 0;
  if (keeps_between) {
    for (const auto& un : units) all_unsharded += unsharded_bytes(un);
    const bool shards = !tr.zero_grad_set_to_none || !keeps_unsharded;  // as all_shards above
    fwd_grads = (keeps_unsharded ? accum_total : 0.0) + (shards ? grad_total : 0.0);
    fwd_peak = fwd_grads + all_unsharded;
  }
  // The optimizer step holds the gradient shards and its temporaries on the GPU, unless it runs
  // on the host (offloaded: FSDP1's GPU shards are freed when the backward ends).
  if (!offload && grad_total + temporaries > std::max(bwd_peak, fwd_peak)) {
    e.peak_phase = "optimizer step";
    e.gradients = grad_total;
    e.optimizer_temporaries = temporaries;
    e.unsharded_units = 0;
  } else if (fwd_peak > bwd_peak) {
    e.peak_phase = "forward";
    e.gradients = fwd_grads;
    e.unsharded_params = all_unsharded;
    e.unsharded_units = static_cast<int>(units.size());
  } else {
    e.peak_phase = "backward";
    e.gradients = bwd_grads;
    e.activations = bwd_act;
    e.unsharded_params = bwd_unsharded;
    e.unsharded_units = bwd_units;
    e.unsharded_grads = unit_grad;
  }
  e.cuda_context = kCudaContextBytes;
  // One NCCL communicator per process group the collectives use (shard group; replica group;
  // FSDP2's post-forward group).
  if (world > 1)
    e.nccl_buffers = kNcclCommunicatorBytes *
                     ((groups.replica > 1 && groups.shard > 1 && !no_shard ? 2 : 1) + (post_forward_to > 0 ? 1 : 0));
  (void)local_numel;
  (void)local_grad_numel;
  return e;
}

}  // namespace

MemoryEstimate estimate_memory(const config::Scenario& sc) {
  if (sc.training.wrapper == config::Wrapper::FSDP) return estimate_fsdp_memory(sc);
  MemoryEstimate e;
  const auto& m = sc.model;
  const auto& tr = sc.training;
  const int world = sc.cluster.world_size();
  // DDP's Reducer allocates its buckets whatever the world size (reducer.cpp initialize_buckets),
  // and at one GPU its all-reduces still go through a communicator; torch.nn.DataParallel has
  // neither (its reduce_add_coalesced buffers are transient).
  const bool ddp = tr.wrapper == config::Wrapper::DDP;
  const auto& zero = tr.zero_redundancy_optimizer;
  e.gpu_memory = sc.cluster.gpu.memory_bytes;

  double grad_total = 0;
  std::vector<double> grad_per_layer(m.layers.size(), 0.0);
  for (const auto& p : m.params) {
    e.parameters += p.bytes();
    if (p.requires_grad) grad_total += p.bytes();
  }
  for (size_t l = 0; l < m.layers.size(); ++l)
    for (int p : m.layers[l].params)
      if (m.params[static_cast<size_t>(p)].requires_grad) grad_per_layer[l] += m.params[static_cast<size_t>(p)].bytes();
  for (const auto& b : m.buffers) e.buffers += static_cast<double>(b.numel) * config::dtype_size(b.dtype);
  // reducer.cpp initialize_buckets: one flat buffer per bucket holding every trainable gradient;
  // with gradient_as_bucket_view the gradients are views of it (no separate .grad storage).
  const bool views = ddp && sc.ddp.gradient_as_bucket_view;
  if (ddp) e.buckets = grad_total;

  // Optimizer state and the step's temporaries, on the rank holding the most.
  auto state_of = [&](const std::vector<int>& params, double& state, double& stepped, double& largest) {
    state = stepped = largest = 0;
    for (int i : params) {
      const auto& p = m.params[static_cast<size_t>(i)];
      if (!p.requires_grad) continue;
      state += static_cast<double>(p.numel) *
               optimizer_state_bytes_per_element(tr.optimizer, tr.sgd_momentum, config::dtype_size(p.dtype));
      stepped += p.bytes();
      largest = std::max(largest, p.bytes());
    }
  };
  std::vector<std::vector<int>> shards;
  if (zero.enabled && ddp && world > 1) {
    if (zero.overlap_with_ddp) {
      // ZeroRedundancyOptimizer._bucket_assignments_per_rank (shard_buckets=False): DDP bucket i
      // belongs to rank i % world.
      const auto plans = ddp::plan_buckets(m, sc.ddp);
      const auto& buckets = plans.steady_state;
      shards.resize(std::min(buckets.size(), static_cast<size_t>(world)));
      for (size_t b = 0; b < buckets.size(); ++b)
        for (int p : buckets[b].param_indices) shards[b % static_cast<size_t>(world)].push_back(p);
    } else {
      shards = zero_partition(m, world);
    }
    e.zero_shards = world;
  } else {
    std::vector<int> all(m.params.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    shards.push_back(std::move(all));
  }
  double stepped = 0, largest = 0;
  for (const auto& s : shards) {
    double st = 0, sp = 0, lg = 0;
    state_of(s, st, sp, lg);
    if (st > e.optimizer_state || (st == e.optimizer_state && sp > stepped)) {
      e.optimizer_state = st;
      stepped = sp;
      largest = lg;
    }
  }
  {
    std::vector<int> all(m.params.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    double sp = 0, lg = 0;
    state_of(all, e.optimizer_state_unsharded, sp, lg);
  }
  // Temporaries of the step: torch/optim/adam.py _multi_tensor_adam allocates
  // torch._foreach_sqrt(exp_avg_sqs), one tensor per stepped parameter; the single-tensor path one
  // at a time (the largest); the fused kernel none; SGD (no weight decay) updates in place.
  double temporaries = 0;
  if (tr.optimizer == "adam" || tr.optimizer == "adamw") {
    if (tr.optimizer_impl == "foreach") temporaries = stepped;
    if (tr.optimizer_impl == "for_loop") temporaries = largest;
  }

  // Activations alive before each layer's backward (activation_plan: checkpointing keeps less).
  const ActivationPlan ap = activation_plan(sc, &e.activation_rule);
  for (double k : ap.kept) e.activations_saved += k;
  const std::vector<double> act = activations_before_backward(ap);
  // Backward: before layer l's backward, the activations of layers 0..l are alive and the
  // gradients of layers l..L-1 exist (set_to_none: gradients are freed by zero_grad and reappear
  // as backward produces them; without it they stay allocated all along).
  const size_t layers = m.layers.size();
  double grads_after = 0;  // gradients of layers > l
  double bwd_peak = -1, bwd_act = 0, bwd_grads = 0;
  for (size_t l = layers; l-- > 0;) {
    const double g = views ? 0.0 : (tr.zero_grad_set_to_none ? grads_after + grad_per_layer[l] : grad_total);
    if (act[l] + g > bwd_peak) {
      bwd_peak = act[l] + g;
      bwd_act = act[l];
      bwd_grads = g;
    }
    grads_after += grad_per_layer[l];
  }
  if (layers == 0) bwd_peak = 0, bwd_grads = views ? 0 : grad_total;
  const double step_grads = views ? 0.0 : grad_total;
  if (step_grads + temporaries > bwd_peak) {
    e.peak_phase = "optimizer step";
    e.gradients = step_grads;
    e.optimizer_temporaries = temporaries;
  } else {
    e.peak_phase = "backward";
    e.gradients = bwd_grads;
    e.activations = bwd_act;
  }
  e.cuda_context = kCudaContextBytes;
  if (ddp || world > 1) e.nccl_buffers = kNcclCommunicatorBytes * sc.streams.comm_streams;
  return e;
}

std::optional<FitOptions> fit_options(const config::Scenario& sc, const MemoryEstimate& m) {
  if (m.fits()) return std::nullopt;
  FitOptions f;
  config::Scenario t = sc;
  const auto at_batch = [&](int b) {
    t.training.batch_size = b;
    return estimate_memory(t);
  };
  // Largest b in [1, batch - 1] that fits; fits() is monotone in b.
  int lo = 0, hi = sc.training.batch_size;  // lo fits (0: none known), hi does not
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (at_batch(mid).fits())
      lo = mid;
    else
      hi = mid;
  }
  f.largest_batch = lo;
  f.largest_batch_bytes = at_batch(std::max(lo, 1)).total();
  t = sc;
  if (sc.training.activation_checkpointing != config::ActivationCheckpointing::FULL &&
      sc.training.wrapper != config::Wrapper::DATA_PARALLEL) {
    t.training.activation_checkpointing = config::ActivationCheckpointing::FULL;
    if (const double b = estimate_memory(t).total(); b < m.total()) f.checkpointed_bytes = b;
    t = sc;
  }
  if (sc.training.wrapper == config::Wrapper::DDP && sc.cluster.world_size() > 1) {
    t.training.wrapper = config::Wrapper::FSDP;
    t.training.fsdp = config::TrainingSettings::Fsdp{};
    f.fsdp_bytes = estimate_memory(t).total();
    const auto fits = [&](const std::optional<double>& b) { return b && *b <= m.gpu_memory; };
    if (f.checkpointed_bytes && !fits(f.checkpointed_bytes) && !fits(f.fsdp_bytes)) {
      t.training.activation_checkpointing = config::ActivationCheckpointing::FULL;
      f.fsdp_checkpointed_bytes = estimate_memory(t).total();
    }
  }
  return f;
}

}  // namespace ddpsim::memory
