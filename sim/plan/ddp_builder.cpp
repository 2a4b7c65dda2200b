#include "plan/ddp_builder.hpp"

#include <algorithm>
#include <vector>

#include "collectives/nccl_model.hpp"
#include "ddp/host_costs.hpp"
#include "ddp/reducer.hpp"
#include "gpu/kernel_model.hpp"
#include "memory/memory_model.hpp"
#include "plan/fsdp_builder.hpp"
#include "plan/program_writer.hpp"

namespace ddpsim::plan {
namespace {

// One layer's backward kernel (and, with the host/GPU split, its per-kernel host walk) taken in
// pieces by the share of the layer done: the piece up to a gradient's readiness, then the next.
class BackwardPieces {
 public:
  BackwardPieces(const gpu::Kernel& k, const std::vector<double>* ops) : k_(k), ops_(ops) {
    if (ops_)
      for (double s : *ops_) ops_total_ += s;
  }
  // The part of the kernel from the share already taken up to `share` (zero seconds: none).
  gpu::Kernel kernel_to(double share) {
    share = std::clamp(share, 0.0, 1.0);
    gpu::Kernel out;
    if (share <= done_) return out;
    if (done_ == 0 && share >= 1.0) {
      done_ = 1.0;
      return k_;  // the whole kernel, untouched
    }
    out = scaled_by(k_, share - done_);  // its kernels' tiles kept, in the same shares
    done_ = share;
    return out;
  }
  // The host walk's kernels that end within `share` of the walk (all that are left at 1).
  std::vector<double> ops_to(double share) {
    std::vector<double> out;
    if (!ops_) return out;
    const double limit = share * ops_total_ * (1 + 1e-12);
    while (next_ < ops_->size() && (share >= 1.0 || ops_done_ + (*ops_)[next_] <= limit)) {
      out.push_back((*ops_)[next_]);
      ops_done_ += (*ops_)[next_++];
    }
    return out;
  }

 private:
  gpu::Kernel k_;
  const std::vector<double>* ops_;
  double ops_total_ = 0, ops_done_ = 0, done_ = 0;
  size_t next_ = 0;
};

// Writes one rank's program, micro-step by micro-step, onto the compute stream (0).
class DdpBuilder : ProgramWriter {
 public:
  DdpBuilder(const config::Scenario& sc, const gpu::ComputeProfile& profile, const ddp::StepPlan& steps, int ranks,
             const ddp::HostCosts* host_costs)
      : sc_(sc),
        profile_(profile),
        steps_(steps),
        zero_(zero_steps(sc, profile, steps)),
        recompute_(recompute_kernels(sc, profile)) {
    p_.world_size = sc.cluster.world_size();
    p_.ranks = ranks;
    ddp_ = p_.world_size > 1;
    streams_ = ddp_ ? sc.streams.comm_streams : 0;
    // The host/GPU split of the compute profile (per-kernel model, eager): without it every host
    // second of DDP is exposed (HostExposure).
    split_ = !sc.training.cuda_graphs && profile.host_backward_op_s > 0 &&
             profile.backward_ops.size() == sc.model.layers.size() &&
             profile.forward_ops.size() == sc.model.layers.size();
    // DDP's own host work (ddp/host_costs.hpp); a CUDA graph replays the step without its hooks.
    // With the per-kernel model's host, priced as shares of its eager op (the same host); else
    // (a CPU rank, a measured profile) as measured on this project's CPU.
    if (!sc.training.cuda_graphs) {
      const gpu::HostCost op = gpu::eager_host_cost();
      host_ = host_costs ? *host_costs
              : split_ ? ddp::eager_host_costs(op.forward_dispatch_s, op.backward_dispatch_s, !sc.ddp.recent_pytorch())
                       : ddp::measured_host_costs();
      if (split_) launch_s_ = op.launch_s;
    }
    // The hook's collective call runs on the backward thread at every world size (c10d's
    // ProcessGroup call and NCCL's enqueue, before the next gradient's hook): its host cost is the
    // ring model's base latency or NCCL's host launch cost (nccl_model.hpp), or collective.host_call
    // where given. At world size 1 it is all the bucket's collective costs (a one-rank group: no
    // transfer).
    if (!sc.training.cuda_graphs)
      call_host_s_ = sc.collective.host_call ? *sc.collective.host_call
                     : sc.collective.model == config::CollectiveModelKind::RING
                         ? sc.collective.base_latency
                         : sc.cluster.calibration.launch_overhead.value_or(collectives::kHostLaunchSeconds);
    // A Python hook's cost beyond the builtin call at world size 1
    // (config::CollectiveSettings::host_callback): its Python call path, and its callback's hold of
    // the GIL, which lands on the backward's next node since the one-rank all-reduce ends as soon as
    // gloo's worker has woken.
    if (!sc.training.cuda_graphs && !ddp_) callback_host_s_ = sc.collective.host_callback.value_or(0.0);
  }

  Plan build() {
    p_.streams.push_back({StreamKind::COMPUTE, "compute stream", -1, 0});
    if (ddp_) p_.groups.push_back({"default", p_.world_size});
    for (int s = 0; s < streams_; ++s)
      p_.streams.push_back(
          {StreamKind::COLLECTIVE, "nccl stream " + std::to_string(s), 0, 0, -1, sc_.streams.comm_workers});
    p_.factor = steps_.factor;
    p_.report_iteration = steps_.report_iteration;
    p_.first_steady_report = steps_.has_iteration1 ? 1 : 0;
    layer_params();
    // Sized once: a plan is built per simulation, and growing it moves every task.
    size_t per_step = 16 + 2 * sc_.model.layers.size() + 2 * sc_.model.params.size() + 3 * zero_.jobs();
    for (const auto& c : steps_.comm_steady) per_step += 7 + c.at_launch.size();
    p_.tasks.reserve(steps_.steps.size() * per_step);
    for (size_t si = 0; si < steps_.steps.size(); ++si) micro_step(si);
    if (zero_.overlap) {
      // Warm-up: ZeRO waits for DDP's rebuilt buckets, saves them in the next iteration and
      // initializes at the one after, so the steady state reported is one iteration later.
      for (size_t r = static_cast<size_t>(p_.first_steady_report); r < p_.report_iteration.size(); ++r)
        ++p_.report_iteration[r];
      for (auto& st : p_.steps)
        if (st.report >= p_.first_steady_report) ++st.iteration;
    }
    return std::move(p_);
  }

 private:
  // The dispatch of one buffer's copy_ back, which a GPU run pays with its launch after the
  // broadcast (part of the measured per-buffer work; 0 without the per-kernel model's host).
  double buffer_copy_host_s() const { return split_ ? std::min(host_.per_copy_s, host_.per_buffer_s) : 0.0; }

  // torch.cat of one broadcast bucket's buffers in `launches` kernels: every byte read and written
  // once (the bytes of the buffers' copy_ kernels), each launch's fixed cost.
  gpu::Kernel buffer_pass(const ddp::Bucket& b, size_t launches) const {
    gpu::Kernel k;
    double fixed = 0;
    for (int i : b.param_indices) {
      if (static_cast<size_t>(i) >= profile_.buffer_copy.size()) continue;
      const gpu::Kernel& c = profile_.buffer_copy[static_cast<size_t>(i)];
      k.shape.memory_s += c.shape.memory_s;
      if (c.seconds > 0) fixed = c.shape.overhead_s;
    }
    k.shape.overhead_s = fixed * static_cast<double>(launches);
    k.seconds = k.shape.memory_s + k.shape.overhead_s;
    return k;
  }

  // Trainable parameters of each layer in the order their gradients become ready, and the share of
  // its layer's backward done when each is ready (LayerSpec::param_ready; 1 without shares).
  void layer_params() {
    const auto& m = sc_.model;
    std::vector<int> rank_in_order(m.params.size(), 0);
    for (size_t i = 0; i < m.grad_ready_order.size(); ++i) rank_in_order[m.grad_ready_order[i]] = static_cast<int>(i);
    layer_params_.resize(m.layers.size());
    ready_share_.assign(m.params.size(), 1.0);
    for (size_t l = 0; l < m.layers.size(); ++l) {
      const auto& layer = m.layers[l];
      for (size_t k = 0; k < layer.param_ready.size(); ++k)
        ready_share_[static_cast<size_t>(layer.params[k])] = layer.param_ready[k];
      for (int p : layer.params)
        if (m.params[p].requires_grad) layer_params_[l].push_back(p);
      std::sort(layer_params_[l].begin(), layer_params_[l].end(),
                [&](int a, int b) { return rank_in_order[a] < rank_in_order[b]; });
    }
  }

  // The GPU's wait for DDP's host work (0: none, nothing issued).
  void host_wait(double seconds, std::string name, Slot slot) {
    if (!(seconds > 0)) return;
    const int i = task(TaskKind::HOST, std::move(name), "ddp");
    p_.tasks[static_cast<size_t>(i)].seconds = seconds;
    p_.tasks[static_cast<size_t>(i)].slot = slot;
  }
  int wait(std::vector<int> after, Slot slot, bool until_started = false) {
    const int i = task(TaskKind::WAIT, "");
    Task& t = p_.tasks[static_cast<size_t>(i)];
    t.after = std::move(after);
    t.slot = slot;
    t.until_started = until_started;
    return i;
  }
  int job(int nccl_stream, std::string label, std::vector<CommOp> chain, JobRole role, int record, int bucket = -1) {
    const int i = task(TaskKind::COLLECTIVE, std::move(label));
    Task& t = p_.tasks[static_cast<size_t>(i)];
    t.stream = 1 + nccl_stream;
    t.issuer = 0;
    t.chain = std::move(chain);
    t.role = role;
    t.record = record;
    t.bucket = bucket;
    jobs_[static_cast<size_t>(record)] = i;
    return i;
  }
  static CommOp op(OpKind kind, std::string name, double bytes) {
    CommOp o;
    o.kind = kind;
    o.name = std::move(name);
    o.bytes = bytes;
    return o;
  }
  static std::vector<CommOp> chain_of(const std::vector<ddp::HookOp>& ops) {
    std::vector<CommOp> out;
    for (const auto& h : ops) {
      CommOp o;
      o.kind = h.kind == ddp::HookOp::Kind::KERNEL      ? OpKind::KERNEL
               : h.kind == ddp::HookOp::Kind::ALLGATHER ? OpKind::ALLGATHER
                                                        : OpKind::ALLREDUCE;
      o.name = h.name;
      o.bytes = h.bytes;
      o.kernel = h.kernel;
      out.push_back(std::move(o));
    }
    return out;
  }

  void micro_step(size_t si) {
    si_ = static_cast<int>(si);
    const ddp::MicroStep& st = steps_.steps[si];
    const auto& m = sc_.model;
    const auto& buckets = *st.buckets;
    const size_t nb = buckets.size();
    MicroStep info;
    info.iteration = st.iteration;
    info.report = st.report;
    info.sync = st.sync;
    info.last = st.last;
    for (const auto& b : buckets) {
      info.bucket_bytes.push_back(b.bytes);
      info.bucket_tensors.push_back(static_cast<int>(b.param_indices.size()));
    }
    info.records = static_cast<int>(2 + nb + zero_.jobs());
    p_.steps.push_back(info);
    jobs_.assign(static_cast<size_t>(info.records), -1);

    mark(Mark::STEP_BEGIN);
    kernel(profile_.h2d, "input to GPU", "data", Slot::H2D, false);
    // DistributedDataParallel.forward: its own work and the buffer sync, then the module's forward.
    mark(Mark::FORWARD_BEGIN);
    const bool sync_buffers = si == 0 || steps_.steps[si - 1].sync;
    const auto bbuckets =
        sync_buffers ? ddp::Reducer::forward_broadcast_buckets(m, sc_.ddp) : std::vector<ddp::Bucket>{};
    // DDP.forward's own work (_pre_forward, prepare_for_backward) in a synced micro-step; the GPU
    // waits for it at the step's start (the queue is empty there).
    ddp::HostExposure hx(split_);
    if (st.sync || sync_buffers) {
      // With broadcast_buffers, _sync_buffers' per-buffer work (world size 1 too: the broadcast is
      // then a call on a one-rank group, host_costs.hpp), where the buffers are synced.
      const double buffers =
          sync_buffers ? static_cast<double>(ddp::Reducer::forward_broadcast_buffers(m, sc_.ddp)) : 0.0;
      // On a GPU each buffer's copy_ back is dispatched with its launch, after the broadcast
      // (below): that share (an op without autograd) is taken out of the per-buffer work here.
      hx.ddp_host((st.sync ? host_.forward_s : 0.0) + (host_.per_buffer_s - buffer_copy_host_s()) * buffers);
      // On a GPU, _broadcast_coalesced (c10d comm.cpp) flattens each dtype bucket with torch.cat
      // before its broadcast: CUDA's cat copies up to CAT_ARRAY_BATCH_SIZE (128) inputs per kernel
      // (aten/src/ATen/native/cuda/Shape.cu). A CPU rank's flatten and copies are in its measured
      // per-buffer cost; without the per-kernel model's host there is no launch to price.
      std::vector<gpu::Kernel> flat;
      for (const auto& b : split_ ? bbuckets : std::vector<ddp::Bucket>{}) {
        const size_t launches = (b.param_indices.size() + 127) / 128;
        flat.push_back(buffer_pass(b, launches));
        hx.ddp_kernel(flat.back().seconds, launch_s_ * static_cast<double>(launches));
      }
      host_wait(hx.take(), st.sync ? "DDP forward (_pre_forward, prepare_for_backward)" : "DDP forward (_sync_buffers)",
                Slot::DDP_FORWARD);
      for (const auto& k : flat) kernel(k, "flatten buffers (torch.cat)", "ddp", Slot::BUFFER_COPY);
    }
    // DDP's forward broadcasts the module buffers from rank 0 (broadcast_buffers).
    // _sync_buffers runs in a forward only while require_forward_param_sync is set, which the
    // previous forward left: True after a synced one, False after one under no_sync()
    // (distributed.py forward, will_sync_module_buffers). With gradient accumulation that is the
    // first micro-step of each step. One broadcast per dtype bucket (Reducer::forward_broadcasts).
    if (ddp_ && !bbuckets.empty()) {
      std::vector<CommOp> chain;
      for (const auto& b : bbuckets) chain.push_back(op(OpKind::BROADCAST, "broadcast", b.bytes));
      const int j = job(0, "broadcast buffers", std::move(chain), JobRole::BUFFER_BROADCAST, 0);
      wait({j}, Slot::BCAST_WAIT);
    }
    // BroadcastWork::finish: a copy_ back per buffer out of the broadcast bucket (a launch each).
    if (split_ && !bbuckets.empty()) {
      gpu::Kernel all;
      for (const auto& b : bbuckets) {
        for (int i : b.param_indices) {
          if (static_cast<size_t>(i) >= profile_.buffer_copy.size()) continue;
          const gpu::Kernel& k = profile_.buffer_copy[static_cast<size_t>(i)];
          if (k.seconds <= 0) continue;
          hx.ddp_kernel(k.seconds, buffer_copy_host_s() + launch_s_);
          all.seconds += k.seconds;
          all.shape.memory_s += k.shape.memory_s;
          all.shape.overhead_s += k.shape.overhead_s;
        }
      }
      host_wait(hx.take(), "DDP forward (_sync_buffers)", Slot::DDP_FORWARD);
      kernel(all, "copy buffers back (copy_ per buffer)", "ddp", Slot::BUFFER_COPY);
    }
    for (size_t l = 0; l < m.layers.size(); ++l) {
      kernel(profile_.forward[l], m.layers[l].name, "forward");
      if (split_) {
        if (l < profile_.host_only_forward.size()) hx.model_host(profile_.host_only_forward[l]);
        for (double s : profile_.forward_ops[l]) hx.kernel(s, profile_.host_forward_op_s);
      }
    }
    mark(Mark::FORWARD_END);
    if (st.sync && sc_.ddp.find_unused_parameters) {
      // prepare_for_backward walks the autograd graph to find unused parameters (host side).
      const int t = task(TaskKind::HOST, "autograd graph traversal", "ddp");
      p_.tasks[static_cast<size_t>(t)].seconds =
          sc_.compute.autograd_traversal_per_param * static_cast<double>(m.params.size());
      p_.tasks[static_cast<size_t>(t)].slot = Slot::TRAVERSAL;
    }

    mark(Mark::BACKWARD_BEGIN);
    // DDP's Reducer runs at every world size (at 1 its collectives are one-rank calls, no jobs).
    ddp::Reducer reducer(buckets, m.params.size(),
                         {st.sync, ddp_ && st.used_map_allreduce, sc_.ddp.gradient_as_bucket_view});
    // DDP's copies (mul_out into the bucket, copy_ back out) are dispatched without autograd: their
    // measured share of a backward node, and a launch each (per-kernel model's host only).
    const double op_host = split_ ? host_.per_copy_s + launch_s_ : 0.0;
    // reducer.cpp mark_variable_ready_dense: a gradient that already is its bucket view is divided
    // in place only without a comm hook (with one, the hook divides): no kernel per gradient then.
    const bool copy_in = !(sc_.ddp.gradient_as_bucket_view && sc_.ddp.comm_hook != config::CommHook::ALLREDUCE);
    for (size_t l = m.layers.size(); l-- > 0;) {
      // Activation checkpointing: a checkpointed block reruns its forward before its backward.
      kernel(recompute_[l], "recompute up to " + m.layers[l].name + " (checkpoint)", "recompute");
      // The layer's backward up to each gradient's readiness (LayerSpec::param_ready, in the
      // gradients' ready order), the rest after the last; without shares, all of it before the first.
      BackwardPieces pieces(profile_.backward[l], split_ ? &profile_.backward_ops[l] : nullptr);
      if (split_ && l < profile_.host_only_backward.size()) hx.model_host(profile_.host_only_backward[l]);
      const auto run_to = [&](double share) {
        kernel(pieces.kernel_to(share), m.layers[l].name, "backward");
        for (double s : pieces.ops_to(share)) hx.kernel(s, profile_.host_backward_op_s);
      };
      if (!reducer.hooks_active()) {
        run_to(1.0);
        continue;
      }
      for (int p : layer_params_[l]) {
        run_to(ready_share_[static_cast<size_t>(p)]);
        // autograd_hook -> mark_variable_ready on the backward thread, then the copy it launches.
        hx.ddp_host(host_.per_gradient_hook_s);
        if (copy_in) hx.ddp_kernel(profile_.copy_in[p].seconds, profile_.copy_in[p].seconds > 0 ? op_host : 0.0);
        host_wait(hx.take(), "DDP autograd hook " + m.params[p].name, Slot::DDP_HOOK);
        if (copy_in) kernel(profile_.copy_in[p], "copy grad " + m.params[p].name, "ddp", Slot::COPY);
        const auto r = reducer.mark_ready(p);
        if (r.ready_bucket < 0) continue;
        if (ddp_) mark(Mark::BUCKET_READY, r.ready_bucket);
        for (size_t i = 0; i < r.launched.size(); ++i) {
          // mark_bucket_ready -> all_reduce_bucket: the Reducer's per-bucket work and the call.
          hx.ddp_host(host_.per_bucket_s + call_host_s_ + callback_host_s_);
          host_wait(hx.take(), "DDP bucket " + std::to_string(r.launched[i]) + " (Reducer, hook call)",
                    Slot::DDP_BUCKET);
          if (ddp_)
            launch_bucket(st, static_cast<size_t>(r.launched[i]), r.launch_used_map && i + 1 == r.launched.size());
          else  // the hook still runs its own kernels before the one-rank call
            for (const auto& h : (*st.comm)[static_cast<size_t>(r.launched[i])].at_launch)
              kernel(h.kernel, h.name, "comm hook", Slot::HOOK_KERNEL);
        }
      }
      run_to(1.0);  // what follows the layer's last gradient (nothing when it is ready at the end)
    }
    mark(Mark::BACKWARD_END);
    if (zero_.overlap && st.sync && st.last && st.report >= p_.first_steady_report) zero_hook_step(nb);

    if (reducer.hooks_active()) {
      // finalize_backward (reducer.cpp, 1.13 and 2.x alike): for each bucket in order, wait for its
      // future, then finalize_bucket_dense copies it into the gradients; so a bucket's copy-out runs
      // while later buckets are still being reduced. The used map's wait follows the loop.
      for (size_t b = 0; b < nb; ++b) {
        if (ddp_) wait({jobs_[1 + b]}, Slot::FINALIZE_WAIT);
        if (!reducer.copies_out()) continue;
        gpu::Kernel k;
        for (int p : buckets[b].param_indices) {
          k.seconds += profile_.copy_out[p].seconds;
          k.shape.memory_s += profile_.copy_out[p].shape.memory_s;
          k.shape.overhead_s += profile_.copy_out[p].shape.overhead_s;
          hx.ddp_kernel(profile_.copy_out[p].seconds, profile_.copy_out[p].seconds > 0 ? op_host : 0.0);
        }
        host_wait(hx.take(), "DDP finalize_backward launches", Slot::DDP_HOOK);
        kernel(k, "copy bucket " + std::to_string(b) + " to grads", "ddp", Slot::COPY);
      }
      if (ddp_ && reducer.finalize_waits() > nb) wait({jobs_[1 + nb]}, Slot::FINALIZE_WAIT);
    }
    if (st.last) {
      mark(Mark::OPTIMIZER_BEGIN);
      kernel(profile_.grad_unscale, "GradScaler unscale_", "optimizer");
      kernel(profile_.clip, "clip_grad_norm_", "optimizer");
      optimizer_step(nb);
      kernel(profile_.zero_grad, "zero_grad", "optimizer");
      // The GPU's wait for the host's dispatch of the four above (gpu/compute_model.hpp; none for ZeRO).
      kernel(profile_.optimizer_host_wait,
             profile_.optimizer_sync ? "optimizer host dispatch after GradScaler's found_inf sync"
                                     : "optimizer host dispatch",
             "optimizer");
      mark(Mark::OPTIMIZER_END);
    }
    mark(Mark::STEP_END);
  }

  void launch_bucket(const ddp::MicroStep& st, size_t b, bool then_used_map) {
    const auto& comm = (*st.comm)[b];
    // The hook's own kernels (compression) run on the compute stream before the collective.
    for (const auto& h : comm.at_launch) kernel(h.kernel, h.name, "comm hook", Slot::HOOK_KERNEL);
    mark(Mark::BUCKET_LAUNCH, static_cast<int>(b));
    const int j = job(static_cast<int>(b % static_cast<size_t>(streams_)), "bucket " + std::to_string(b),
                      chain_of(comm.chain), JobRole::BUCKET, static_cast<int>(1 + b), static_cast<int>(b));
    if (then_used_map) {
      // find_unused_parameters: the int32 local-used map of every parameter is all-reduced too.
      const size_t nb = st.buckets->size();
      job(0, "local_used_map",
          {op(OpKind::ALLREDUCE, "all-reduce used map", ddp::Reducer::used_map_bytes(sc_.model.params.size()))},
          JobRole::USED_MAP, static_cast<int>(1 + nb));
    }
    // One hardware queue: kernels start in launch order, so the compute kernels launched after
    // this collective wait until it has started.
    if (sc_.streams.cuda_device_max_connections == 1) wait({j}, Slot::STALL, true);
  }

  int zero_record(size_t nb, size_t k) const { return static_cast<int>(2 + nb + k); }

  void optimizer_step(size_t nb) {
    if (!zero_.enabled) {
      kernel(profile_.optimizer, "optimizer step (" + sc_.training.optimizer + ")", "optimizer");
      return;
    }
    if (zero_.overlap) return;  // the step runs in DDP's comm hook (zero_hook_step), or not yet (warm-up)
    // step(): the local optimizer on this rank's shard, then _sync_params' broadcasts.
    const int from = mark(Mark::NONE);
    const int k = task(TaskKind::KERNEL, "ZeRO optimizer step on rank {rank}'s shard (" + sc_.training.optimizer + ")",
                       "optimizer");
    p_.tasks[static_cast<size_t>(k)].per_rank = zero_.shard_step;
    const int j = job(0, "ZeRO broadcast", zero_.sync_params, JobRole::PARAM_SYNC, zero_record(nb, 0));
    // The representative rank stands for all: the broadcasts start once the largest shard is stepped.
    if (p_.ranks < p_.world_size) p_.tasks[static_cast<size_t>(j)].gate = {from, {{-1, zero_.max_shard_step}}};
    wait({j}, Slot::PARAM_SYNC_WAIT);
  }

  // hook_with_zero_step, in the last bucket's hook: for every bucket in order, the rank owning it
  // waits for its all-reduce and steps it; every rank then issues that bucket's broadcast; then
  // wait_for_broadcasts.
  void zero_hook_step(size_t nb) {
    const int from = mark(Mark::OPTIMIZER_BEGIN);
    const int world = p_.world_size;
    std::vector<int> broadcasts;
    for (size_t b = 0; b < zero_.bucket_step.size(); ++b) {
      const int owner = static_cast<int>(b % static_cast<size_t>(world));
      const int w = wait({jobs_[1 + b]}, Slot::PARAM_SYNC_WAIT);
      p_.tasks[static_cast<size_t>(w)].ranks = {world, owner};
      const int k = task(TaskKind::KERNEL, "ZeRO optimizer step, bucket " + std::to_string(b), "optimizer");
      p_.tasks[static_cast<size_t>(k)].kernel = zero_.bucket_step[b];
      p_.tasks[static_cast<size_t>(k)].ranks = {world, owner};
      const int j = job(0, "ZeRO broadcast",
                        {op(OpKind::BROADCAST, "bucket " + std::to_string(b) + " from rank " + std::to_string(owner),
                            zero_.bucket_bytes[b])},
                        JobRole::PARAM_SYNC, zero_record(nb, b));
      if (p_.ranks < world && owner != 0) {
        // The owner steps its buckets up to this one, each after its all-reduce.
        Gate g{from, {}};
        for (size_t k2 = static_cast<size_t>(owner); k2 <= b; k2 += static_cast<size_t>(world))
          g.terms.push_back({jobs_[1 + k2], zero_.bucket_step[k2].seconds});
        p_.tasks[static_cast<size_t>(j)].gate = g;
      }
      broadcasts.push_back(j);
    }
    wait(broadcasts, Slot::PARAM_SYNC_WAIT);
    mark(Mark::OPTIMIZER_END);
  }

  const config::Scenario& sc_;
  const gpu::ComputeProfile& profile_;
  const ddp::StepPlan& steps_;
  ZeroSteps zero_;
  std::vector<gpu::Kernel> recompute_;  // per layer, before its backward (activation checkpointing)
  bool ddp_ = false;
  int streams_ = 0;
  ddp::HostCosts host_;         // zero under CUDA graphs
  double call_host_s_ = 0;      // the bucket's collective call on the backward thread (host)
  double callback_host_s_ = 0;  // a Python hook's cost beyond the call (world size 1)
  double launch_s_ = 0;         // cudaLaunchKernel per kernel DDP launches itself (per-kernel model's host)
  bool split_ = false;          // the profile separates host dispatch from GPU time
  std::vector<int> jobs_;       // task of each collective record of the current micro-step
  std::vector<std::vector<int>> layer_params_;
  std::vector<double> ready_share_;  // per parameter (layer_params)
};

}  // namespace

std::vector<int> Plan::stream_tasks(int stream) const {
  std::vector<int> out;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const Task& t = tasks[i];
    if (t.stream == stream || t.issuer == stream ||
        std::find(t.joined.begin(), t.joined.end(), stream) != t.joined.end())
      out.push_back(static_cast<int>(i));
  }
  return out;
}

ZeroSteps zero_steps(const config::Scenario& sc, const gpu::ComputeProfile& profile, const ddp::StepPlan& steps) {
  ZeroSteps z;
  const auto& zs = sc.training.zero_redundancy_optimizer;
  const int world = sc.cluster.world_size();
  if (!zs.enabled || world <= 1) return z;
  z.enabled = true;
  z.overlap = zs.overlap_with_ddp;
  const auto& m = sc.model;
  if (!z.overlap) {
    // For every rank, its parameters (or, with parameters_as_bucket_view, its one flat bucket; a
    // rank holding nothing broadcasts a 1-element dummy) broadcast from it, on one process group.
    const auto shards = memory::zero_partition(m, world);
    for (const auto& sh : shards) {
      z.shard_step.push_back(scaled_by(gpu::optimizer_kernel(sc, sh, profile.peak_flops), profile.compute_scale));
      z.max_shard_step = std::max(z.max_shard_step, z.shard_step.back().seconds);
    }
    for (size_t r = 0; r < static_cast<size_t>(world); ++r) {
      if (zs.parameters_as_bucket_view) {
        CommOp o;
        o.kind = OpKind::BROADCAST;
        o.name = "rank " + std::to_string(r) + " bucket";
        o.bytes = 4;  // torch.zeros(1) for a rank without parameters
        if (r < shards.size()) {
          double b = 0;
          for (int p : shards[r])
            if (m.params[static_cast<size_t>(p)].requires_grad) b += m.params[static_cast<size_t>(p)].bytes();
          if (b > 0) o.bytes = b;
        }
        z.sync_params.push_back(o);
      } else if (r < shards.size()) {
        for (int p : shards[r]) {
          CommOp o;
          o.kind = OpKind::BROADCAST;
          o.name = m.params[static_cast<size_t>(p)].name;
          o.bytes = m.params[static_cast<size_t>(p)].bytes();
          z.sync_params.push_back(o);
        }
      }
    }
    return z;
  }
  // Bucket i belongs to rank i % world (shard_buckets=False): its step over the bucket's
  // parameters and one broadcast of their flattened data from that rank.
  for (const auto& b : steps.buckets.steady_state) {
    z.bucket_step.push_back(
        scaled_by(gpu::optimizer_kernel(sc, b.param_indices, profile.peak_flops), profile.compute_scale));
    z.bucket_bytes.push_back(b.bytes);
  }
  return z;
}

Plan build_ddp(const config::Scenario& scenario, const gpu::ComputeProfile& profile, const ddp::StepPlan& steps,
               int ranks, const ddp::HostCosts* host_costs) {
  return DdpBuilder(scenario, profile, steps, ranks, host_costs).build();
}

}  // namespace ddpsim::plan
